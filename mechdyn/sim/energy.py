"""Mechanical energy along a trajectory, by a route independent of the stepper.

Kinetic ½ Σ vᵢᵀ Iᵢ vᵢ from the numeric forward kinematics, gravitational
−Σ mᵢ g·cᵢ, and the elements' springs ½k(l − l0)² and ½k(q − q0)²; plus the
power the elements' dampers dissipate, c l̇² and c q̇², so that a damped model's
balance E + ∫P_diss can be checked too. The stepper integrates that power in C
at every step (Trajectory.dissipated); integrated here over the recorded rows
alone, it is right only when every step is recorded.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from mechdyn.core.kinematics import forward_kinematics, point_state
from mechdyn.core.model import BASE, Model
from mechdyn.core.spatial import mcI


def total_mass(model: Model) -> float:
    """The model's mass, kg: every body's."""
    return float(sum(b.mass for b in model.bodies))


def energy_terms(model: Model, q: np.ndarray, qd: np.ndarray) -> tuple[float, float, float]:
    """(kinetic, potential, dissipated power) at one state; potential = gravity + springs."""
    kin = forward_kinematics(model, q, qd)
    T = sum(0.5 * v @ mcI(b.mass, b.cg, b.inertia) @ v for b, v in zip(model.bodies, kin.v))
    V = -sum(b.mass * model.gravity @ (kin.p[i] + kin.R[i] @ b.cg) for i, b in enumerate(model.bodies))
    P = 0.0
    for e in model.tsdas:
        (pa, va), (pb, vb) = (point_state(model, kin, model.pois[k].body, model.pois[k].pos) for k in (e.poi_a, e.poi_b))
        l = np.linalg.norm(pb - pa)
        ldot = (pb - pa) @ (vb - va) / l
        V += 0.5 * e.k * (l - e.l0) ** 2
        P += e.c * ldot**2
    for e in model.rsdas:
        x, xd = q[model.qidx[e.body]], qd[model.vidx[e.body]]
        V += 0.5 * e.k * (x - e.q0) ** 2
        P += e.c * xd**2
    return float(T), float(V), float(P)


def energy_balance(model: Model, t: np.ndarray, Q: np.ndarray, QD: np.ndarray,
                   dissipated: np.ndarray | None = None, progress: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Total mechanical energy E(t), and E(t) + W(t), which an exact solution keeps at E(0).

    E from `mechanics` (all rows at once). W is `dissipated` (the stepper's, integrated at every step) when
    given, else ∫₀ᵗ P_diss by the trapezoidal rule over the rows themselves (energy_terms' power, row by row:
    `progress` shows a bar over them on a terminal).
    """
    mech = mechanics(model, Q, QD)
    E = mech.kinetic + mech.potential
    if dissipated is not None:
        return E, E + dissipated
    if not any(e.c != 0.0 for e in (*model.tsdas, *model.rsdas)):
        return E, E.copy()
    rows = tqdm(zip(Q, QD), total=len(Q), desc=f"energy {model.name}", unit="row", leave=False,
                disable=None if progress else True)
    P = np.array([energy_terms(model, q, qd)[2] for q, qd in rows])
    W = np.concatenate([[0.0], np.cumsum(0.5 * (P[1:] + P[:-1]) * np.diff(t))])
    return E, E + W


@dataclass(frozen=True)
class Mechanics:
    """Per recorded row: kinetic and potential (gravity + springs) energy, J, and linear momentum Σ m·v_cg, N·s."""
    kinetic: np.ndarray  # (n,)
    potential: np.ndarray  # (n,)
    momentum: np.ndarray  # (n, 3)


def _axis_rotations(a: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """(n, 3, 3) physical rotations by theta about the unit vector a: cos θ 1 + sin θ a× + (1 − cos θ) a aᵀ."""
    c, s = np.cos(theta)[:, None, None], np.sin(theta)[:, None, None]
    ax = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    return c * np.eye(3) + s * ax + (1.0 - c) * np.outer(a, a)


def _quat_rotations(Q: np.ndarray) -> np.ndarray:
    """(n, 3, 3) rotations of the unit quaternions Q (n, 4) = [w, x, y, z]."""
    w, x, y, z = Q.T
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
                     np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
                     np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], -2)


def mechanics(model: Model, Q: np.ndarray, QD: np.ndarray) -> Mechanics:
    """energy_terms' kinetic and potential energy, and the linear momentum, at every row of (Q, QD) at once.

    The same numeric kinematics (independent of the generated code), recursed down the tree in world
    coordinates over all rows together: one pass per body instead of one per body and row, which is what makes
    a stride-1 energy window affordable on m113 (153 bodies)."""
    Q, QD = np.atleast_2d(np.asarray(Q, dtype=float)), np.atleast_2d(np.asarray(QD, dtype=float))
    n, g = len(Q), np.asarray(model.gravity, dtype=float)
    R, p, w, v = [], [], [], []  # per body (n, 3, 3) world rotation, origin, angular and origin velocity (world)
    T, V, P = np.zeros(n), np.zeros(n), np.zeros((n, 3))
    for i, b in enumerate(model.bodies):
        q, qd = Q[:, model.qidx[i]:model.qidx[i] + b.nq], QD[:, model.vidx[i]:model.vidx[i] + b.nv]
        if b.parent == BASE:
            Rp, pp, wp, vp = np.broadcast_to(np.eye(3), (n, 3, 3)), np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((n, 3))
        else:
            Rp, pp, wp, vp = R[b.parent], p[b.parent], w[b.parent], v[b.parent]
        if b.joint == "floating":  # q: attitude quaternion, origin in parent coords; qd: [ω; v] in body coords
            Rrel, r, wj, vj = _quat_rotations(q[:, :4]), q[:, 4:7], qd[:, :3], qd[:, 3:6]
        elif b.joint == "revolute":  # the joint frame turned by rot, then by q about the axis
            Rrel, r = b.rot @ _axis_rotations(b.axis, q[:, 0]), np.broadcast_to(b.xtree, (n, 3))
            wj, vj = np.outer(qd[:, 0], b.axis), np.zeros((n, 3))
        elif b.joint == "prismatic":
            Rrel, r = np.broadcast_to(b.rot, (n, 3, 3)), b.xtree + np.outer(q[:, 0], b.rot @ b.axis)
            wj, vj = np.zeros((n, 3)), np.outer(qd[:, 0], b.axis)
        else:
            raise ValueError(f"body {b.name!r}: unsupported tree joint {b.joint!r}")
        Ri = Rp @ Rrel
        pi = pp + np.einsum("nij,nj->ni", Rp, r)
        wi = wp + np.einsum("nij,nj->ni", Ri, wj)
        vi = vp + np.cross(wp, pi - pp) + np.einsum("nij,nj->ni", Ri, vj)
        R.append(Ri), p.append(pi), w.append(wi), v.append(vi)
        c = np.einsum("nij,j->ni", Ri, b.cg)
        vc = vi + np.cross(wi, c)
        wb = np.einsum("nji,nj->ni", Ri, wi)  # ω in body coords
        T += 0.5 * b.mass * np.einsum("ni,ni->n", vc, vc) + 0.5 * np.einsum("ni,ij,nj->n", wb, b.inertia, wb)
        V -= b.mass * ((pi + c) @ g)
        P += b.mass * vc
    for e in model.tsdas:
        ends = []
        for k in (e.poi_a, e.poi_b):
            poi = model.pois[k]
            ends.append(np.broadcast_to(poi.pos, (n, 3)) if poi.body == BASE
                        else p[poi.body] + np.einsum("nij,j->ni", R[poi.body], poi.pos))
        V += 0.5 * e.k * (np.linalg.norm(ends[1] - ends[0], axis=1) - e.l0) ** 2
    for e in model.rsdas:
        V += 0.5 * e.k * (Q[:, model.qidx[e.body]] - e.q0) ** 2
    return Mechanics(T, V, P)
