"""Forward kinematics of the spanning tree: per-body transforms, poses and spatial velocities.

Shared by every consumer that needs where the bodies are (dense reference,
contact, Chrono builder); it depends on nothing but the model and the spatial
algebra.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import BASE, Model
from .spatial import cross, jcalc, xtree


def _readonly(a: np.ndarray) -> np.ndarray:
    """The array, made read-only."""
    a.flags.writeable = False
    return a


@dataclass(frozen=True)
class Kinematics:
    Xup: np.ndarray  # (nbody, 6, 6) parent coords → body coords
    X0: np.ndarray  # (nbody, 6, 6) base coords → body coords
    R: np.ndarray  # (nbody, 3, 3) body-to-base rotation (columns: body axes in base coords)
    p: np.ndarray  # (nbody, 3) body origin in base coords
    v: np.ndarray  # (nbody, 6) body spatial velocity [ω; v] in body coords


def forward_kinematics(model: Model, q: np.ndarray, qd: np.ndarray | None = None) -> Kinematics:
    """Xup, X0, R, p and v of every body at (q, qd); v is zero when qd is None."""
    q = np.asarray(q, dtype=float)
    if q.shape != (model.nq,):
        raise ValueError(f"q has shape {q.shape}, expected ({model.nq},)")
    if qd is not None:
        qd = np.asarray(qd, dtype=float)
        if qd.shape != (model.nv,):
            raise ValueError(f"qd has shape {qd.shape}, expected ({model.nv},)")
    nb = model.nbody
    Xup = np.zeros((nb, 6, 6))
    X0 = np.zeros((nb, 6, 6))
    R = np.zeros((nb, 3, 3))
    p = np.zeros((nb, 3))
    v = np.zeros((nb, 6))
    for i, b in enumerate(model.bodies):
        XJ, S = jcalc(b, q[model.qidx[i] : model.qidx[i] + b.nq])
        Xup[i] = XJ @ xtree(b)
        X0[i] = Xup[i] if b.parent == BASE else Xup[i] @ X0[b.parent]
        # X0 = plux(E, p) with E = Rᵀ: read the pose back from the composed transform
        E = X0[i, :3, :3]
        R[i] = E.T
        px = -E.T @ X0[i, 3:, :3]  # = skew(p)
        p[i] = (px[2, 1] - px[1, 2]) / 2, (px[0, 2] - px[2, 0]) / 2, (px[1, 0] - px[0, 1]) / 2
        if qd is not None:
            vJ = S @ qd[model.vidx[i] : model.vidx[i] + b.nv]
            v[i] = vJ if b.parent == BASE else Xup[i] @ v[b.parent] + vJ
    return Kinematics(*(_readonly(a) for a in (Xup, X0, R, p, v)))


def point_state(model: Model, kin: Kinematics, body: int, local_point: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Base-frame position and velocity of the point fixed to `body` (BASE allowed) at body coords local_point."""
    r = np.asarray(local_point, dtype=float)
    if body == BASE:
        return r.copy(), np.zeros(3)
    w, vo = kin.v[body, :3], kin.v[body, 3:]
    return kin.p[body] + kin.R[body] @ r, kin.R[body] @ (vo + cross(w, r))
