"""Force elements: TSDAs as explicit equal-and-opposite spatial forces, RSDAs as joint torques."""
from __future__ import annotations

import numpy as np

from mechdyn.core.kinematics import Kinematics, point_state
from mechdyn.core.model import BASE, Model
from mechdyn.core.spatial import cross

from .common import check_vector


def _anchors(model: Model, kin: Kinematics, t) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Base-frame positions and velocities of a TSDA's two anchor POIs."""
    A, B = model.pois[t.poi_a], model.pois[t.poi_b]
    pA, vA = point_state(model, kin, A.body, A.pos)
    pB, vB = point_state(model, kin, B.body, B.pos)
    return pA, vA, pB, vB


def tsda_state(model: Model, kin: Kinematics) -> tuple[np.ndarray, np.ndarray]:
    """Length l = |p_B − p_A| and rate l̇ = u·(ṗ_B − ṗ_A) of every TSDA."""
    l, ldot = np.zeros(len(model.tsdas)), np.zeros(len(model.tsdas))
    for k, t in enumerate(model.tsdas):
        pA, vA, pB, vB = _anchors(model, kin, t)
        d = pB - pA
        l[k] = np.linalg.norm(d)
        ldot[k] = d @ (vB - vA) / l[k]
    return l, ldot


def tsda_forces(model: Model, kin: Kinematics, act: np.ndarray | None) -> np.ndarray:
    """(nbody, 6) TSDA spatial forces in base coords [p × F; F]: +f u at p_A on A's body, −f u at p_B on B's body."""
    act = check_vector("act", act, (model.nact,))
    fs = np.zeros((model.nbody, 6))
    l, ldot = tsda_state(model, kin)
    for k, t in enumerate(model.tsdas):
        pA, _, pB, _ = _anchors(model, kin, t)
        u = (pB - pA) / l[k]
        f = t.k * (l[k] - t.l0) + t.c * ldot[k] + (act[t.act] if t.act >= 0 else 0.0)
        for body, p, F in ((model.pois[t.poi_a].body, pA, f * u), (model.pois[t.poi_b].body, pB, -f * u)):
            if body != BASE:
                fs[body] += np.concatenate([cross(p, F), F])
    return fs


def rsda_torque(model: Model, q: np.ndarray, qd: np.ndarray, act: np.ndarray | None) -> np.ndarray:
    """(nv,) RSDA generalized forces τ_j = −k (q_j − q0) − c qd_j + act[slot] on each element's joint."""
    act = check_vector("act", act, (model.nact,))
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    tau = np.zeros(model.nv)
    for r in model.rsdas:
        b = model.bodies[r.body]
        if b.nv != 1:
            raise ValueError(f"rsda {r.name!r}: body {b.name!r} has a {b.joint} joint, not a single-DOF one")
        iq, iv = model.qidx[r.body], model.vidx[r.body]
        tau[iv] += -r.k * (q[iq] - r.q0) - r.c * qd[iv] + (act[r.act] if r.act >= 0 else 0.0)
    return tau
