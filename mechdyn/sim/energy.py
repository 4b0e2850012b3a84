"""Mechanical energy along a trajectory, by a route independent of the stepper.

Kinetic ½ Σ vᵢᵀ Iᵢ vᵢ from the numeric forward kinematics, gravitational
−Σ mᵢ g·cᵢ, and the elements' springs ½k(l − l0)² and ½k(q − q0)²; plus the
power the elements' dampers dissipate, c l̇² and c q̇², so that a damped model's
balance E + ∫P_diss can be checked too. The stepper integrates that power in C
at every step (Trajectory.dissipated); integrated here over the recorded rows
alone, it is right only when every step is recorded.
"""
from __future__ import annotations

import numpy as np
from tqdm import tqdm

from mechdyn.core.kinematics import forward_kinematics, point_state
from mechdyn.core.model import Model
from mechdyn.core.spatial import mcI


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

    W is `dissipated` (the stepper's, integrated at every step) when given, else ∫₀ᵗ P_diss by the
    trapezoidal rule over the rows themselves. `progress`: a bar over the rows on a terminal.
    """
    rows = tqdm(zip(Q, QD), total=len(Q), desc=f"energy {model.name}", unit="row", leave=False,
                disable=None if progress else True)
    terms = np.array([energy_terms(model, q, qd) for q, qd in rows])
    E = terms[:, 0] + terms[:, 1]
    if dissipated is not None:
        return E, E + dissipated
    P = terms[:, 2]
    W = np.concatenate([[0.0], np.cumsum(0.5 * (P[1:] + P[:-1]) * np.diff(t))])
    return E, E + W
