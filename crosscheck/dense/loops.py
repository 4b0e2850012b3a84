"""Closed loops in the dense reference: RBDA §8.5 method 2 with explicit constraint forces.

Each constraint row is a spatial force T on the successor (−T on the
predecessor), so K = Tᵀ (J_s − J_p) with the bodies' base-coordinate Jacobians,
and the acceleration-level right-hand side is derived from d/dt[Tᵀ Δv] = 0:

    k = −Tᵀ Δa_c − Ṫᵀ Δv − 2α K qd − β² φ

with Δv, Δa_c the successor-minus-predecessor spatial velocity and
velocity-product acceleration (qdd = 0, no gravity) in base coordinates, and
Ṫ written out for each row shape. This is a different derivation from the
generator's, which differentiates φ twice along point and direction motions.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg

from mechdyn.core.kinematics import Kinematics, forward_kinematics, point_state
from mechdyn.core.loops import Row, body_jacobian, loop_rows
from mechdyn.core.model import BASE, Model
from mechdyn.core.spatial import crm, cross

from .aba import aba_factor, aba_solve, forward_aba
from .common import joint_transforms, require_expanded
from .crba import mass_matrix
from .fd import forward_crba


def _in_base(kin: Kinematics, i: int, per_body: np.ndarray) -> np.ndarray:
    """Body i's row of a per-body motion array, in base coordinates (zero for the base)."""
    return np.zeros(6) if i == BASE else np.linalg.solve(kin.X0[i], per_body[i])


def velocity_product_accels(model: Model, q: np.ndarray, qd: np.ndarray, kin: Kinematics) -> np.ndarray:
    """(nbody, 6) each body's spatial acceleration at qdd = 0 without gravity, body coordinates."""
    Xup, S = joint_transforms(model, q)
    c = np.zeros((model.nbody, 6))
    for i, b in enumerate(model.bodies):
        vJ = S[i] @ qd[model.vidx[i] : model.vidx[i] + b.nv]
        c[i] = (0.0 if b.parent == BASE else Xup[i] @ c[b.parent]) + crm(kin.v[i]) @ vJ
    return c


def _T_dot(row: Row, w_p: np.ndarray, w_s: np.ndarray, S: np.ndarray, Sdot: np.ndarray, Pdot: np.ndarray) -> np.ndarray:
    """The rate of the row's constraint force, from the definitions of T in docs/conventions.md."""
    if row.kind == "sep":  # T = [S × e; e], e fixed in the predecessor
        edot = cross(w_p, row.e)
        return np.concatenate([cross(Sdot, row.e) + cross(S, edot), edot])
    if row.kind == "dirs":  # T = [e2 × e1; 0]
        e1dot, e2dot = cross(w_p, row.e), cross(w_s, row.e2)
        return np.concatenate([cross(e2dot, row.e) + cross(row.e2, e1dot), np.zeros(3)])
    ddot = Sdot - Pdot  # T = [S × d; d]
    return np.concatenate([cross(Sdot, row.e) + cross(S, ddot), ddot])


def loop_system(model: Model, q: np.ndarray, qd: np.ndarray,
                kin: Kinematics | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """K (nc, nv), k (nc,) with Baumgarte terms, and φ (nc,) at (q, qd); kin is forward_kinematics(model, q, qd),
    computed here unless the caller already has it."""
    kin = forward_kinematics(model, q, qd) if kin is None else kin
    c = velocity_product_accels(model, q, qd, kin)
    alpha = beta = 1.0 / model.stab
    K, k, phi = [], [], []
    for lp in model.loops:
        Jd = body_jacobian(model, kin, lp.succ) - (0.0 if lp.pred == BASE else body_jacobian(model, kin, lp.pred))
        dv = _in_base(kin, lp.succ, kin.v) - _in_base(kin, lp.pred, kin.v)
        da = _in_base(kin, lp.succ, c) - _in_base(kin, lp.pred, c)
        w_p = np.zeros(3) if lp.pred == BASE else kin.R[lp.pred] @ kin.v[lp.pred, :3]
        w_s = kin.R[lp.succ] @ kin.v[lp.succ, :3]
        S, Sdot = point_state(model, kin, lp.succ, lp.anchor_succ)
        Pdot = point_state(model, kin, lp.pred, lp.anchor_pred)[1]
        for r in loop_rows(model, kin, lp):
            Krow = r.T @ Jd
            K.append(Krow)
            phi.append(r.phi)
            k.append(-r.T @ da - _T_dot(r, w_p, w_s, S, Sdot, Pdot) @ dv - 2 * alpha * (Krow @ qd) - beta**2 * r.phi)
    nc = len(phi)
    return np.array(K).reshape(nc, model.nv), np.array(k), np.array(phi)


def forward(model: Model, q, qd, tau, fext=None, act=None, route: str = "crba") -> np.ndarray:
    """qdd of the model, loops closed by method 2: qdd = qdd0 + H⁻¹Kᵀλ with (K H⁻¹ Kᵀ) λ = k − K qdd0.

    route "crba" solves with the dense mass matrix, "aba" with the articulated-body
    factorization (one configuration-only factor serves every right-hand side).
    """
    require_expanded(model)
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    # the kinematics and H (or the ABA factor) are formed once here: the tree solve and the loop solve both use them
    kin = forward_kinematics(model, q, qd)
    if route == "crba":
        H = mass_matrix(model, q)
        qdd0 = forward_crba(model, q, qd, tau, fext, act, H=H, kin=kin)
    else:
        fac = aba_factor(model, q)
        qdd0 = forward_aba(model, q, qd, tau, fext, act, fac=fac, kin=kin)
    if not model.loops:
        return qdd0
    K, k, _ = loop_system(model, q, qd, kin)
    if route == "crba":
        Y = scipy.linalg.solve(H, K.T, assume_a="sym")
    else:
        Y = aba_solve(model, fac, K.T)  # H⁻¹ Kᵀ, every column in one pair of passes
    lam = scipy.linalg.solve(K @ Y, k - K @ qdd0, assume_a="sym")
    return qdd0 + Y @ lam
