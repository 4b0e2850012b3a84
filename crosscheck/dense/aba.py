"""Articulated-body algorithm (RBDA §7.3), split into a configuration factor and a per-right-hand-side solve."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mechdyn.core.kinematics import Kinematics, forward_kinematics
from mechdyn.core.model import BASE, Model
from mechdyn.core.spatial import crf, crm

from .common import applied_forces, body_inertias, gravity_accel, joint_transforms, require_expanded
from .elements import rsda_torque, tsda_forces


@dataclass(frozen=True)
class AbaFactor:
    Xup: np.ndarray  # (nbody, 6, 6) parent coords → body coords
    S: tuple[np.ndarray, ...]  # per body (6, nv_i)
    IA: np.ndarray  # (nbody, 6, 6) articulated-body inertias
    U: tuple[np.ndarray, ...]  # per body IA S, (6, nv_i)
    Dinv: tuple[np.ndarray, ...]  # per body (Sᵀ IA S)⁻¹, (nv_i, nv_i)
    Ia: np.ndarray  # (nbody, 6, 6) IA − U D⁻¹ Uᵀ, the inertia passed to the parent


def aba_factor(model: Model, q: np.ndarray) -> AbaFactor:
    """The configuration-only ABA pass: Xup, S, articulated inertias IA, U and D⁻¹."""
    require_expanded(model)
    nb = model.nbody
    Xup, S = joint_transforms(model, q)
    IA = body_inertias(model)
    U, Dinv, Ia = [None] * nb, [None] * nb, np.zeros((nb, 6, 6))
    for i in reversed(range(nb)):
        U[i] = IA[i] @ S[i]
        Dinv[i] = np.linalg.inv(S[i].T @ U[i])
        Ia[i] = IA[i] - U[i] @ Dinv[i] @ U[i].T
        p = model.bodies[i].parent
        if p != BASE:
            IA[p] += Xup[i].T @ Ia[i] @ Xup[i]
    return AbaFactor(Xup, tuple(S), IA, tuple(U), tuple(Dinv), Ia)


def aba_solve(model: Model, fac: AbaFactor, tau: np.ndarray, c: np.ndarray | None = None,
              pA: np.ndarray | None = None, a0: np.ndarray | None = None) -> np.ndarray:
    """qdd from the two remaining ABA passes given tau, per-body c_i and pA_i (nbody, 6) and base acceleration a0;
    H⁻¹ tau when all are None. tau may be (nv, k): k right-hand sides at once (c, pA and a0 then carry the k too)."""
    tau = np.asarray(tau, dtype=float)
    nb, k = model.nbody, tau.shape[1:]

    def given(x: np.ndarray | None, shape: tuple[int, ...], copy: bool = False) -> np.ndarray:
        if x is None:
            return np.zeros(shape + k)
        x = np.array(x, dtype=float) if copy else np.asarray(x, dtype=float)
        if x.shape != shape + k:  # broadcasting would silently mix the right-hand sides
            raise ValueError(f"shape {x.shape}, expected {shape + k}")
        return x
    c, pA, a0 = given(c, (nb, 6)), given(pA, (nb, 6), copy=True), given(a0, (6,))  # pA accumulates in place
    u = [None] * nb
    for i in reversed(range(nb)):
        b = model.bodies[i]
        u[i] = tau[model.vidx[i] : model.vidx[i] + b.nv] - fac.S[i].T @ pA[i]
        if b.parent != BASE:
            pa = pA[i] + fac.Ia[i] @ c[i] + fac.U[i] @ fac.Dinv[i] @ u[i]
            pA[b.parent] += fac.Xup[i].T @ pa
    qdd = np.zeros((model.nv,) + k)
    a = np.zeros((nb, 6) + k)
    for i, b in enumerate(model.bodies):
        ap = a0 if b.parent == BASE else a[b.parent]
        a_ = fac.Xup[i] @ ap + c[i]
        qddi = fac.Dinv[i] @ (u[i] - fac.U[i].T @ a_)
        qdd[model.vidx[i] : model.vidx[i] + b.nv] = qddi
        a[i] = a_ + fac.S[i] @ qddi
    return qdd


def forward_aba(model: Model, q: np.ndarray, qd: np.ndarray, tau: np.ndarray,
                fext: np.ndarray | None = None, act: np.ndarray | None = None,
                fac: AbaFactor | None = None, kin: Kinematics | None = None) -> np.ndarray:
    """Forward dynamics qdd by ABA, with gravity, external forces and force elements; fac is aba_factor(model, q)
    and kin forward_kinematics(model, q, qd), formed here unless the caller (loops.forward, which uses them
    again) passes them."""
    require_expanded(model)
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    kin = forward_kinematics(model, q, qd) if kin is None else kin
    fac = aba_factor(model, q) if fac is None else fac
    I = body_inertias(model)
    fx = applied_forces(model, kin, fext, tsda_forces(model, kin, act))
    nb = model.nbody
    c, pA = np.zeros((nb, 6)), np.zeros((nb, 6))
    for i, b in enumerate(model.bodies):
        v = kin.v[i]
        vJ = fac.S[i] @ qd[model.vidx[i] : model.vidx[i] + b.nv]
        c[i] = crm(v) @ vJ
        pA[i] = crf(v) @ I[i] @ v - fx[i]
    tau = np.asarray(tau, dtype=float) + rsda_torque(model, q, qd, act)
    return aba_solve(model, fac, tau, c, pA, gravity_accel(model))
