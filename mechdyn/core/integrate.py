"""The integration rule of docs/conventions.md: how q moves along qd."""
from __future__ import annotations

import numpy as np

from .model import Model
from .spatial import quat_to_R


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product a ⊗ b of scalar-first quaternions."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array([
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ])


def quat_exp(w: np.ndarray, t: float) -> np.ndarray:
    """exp(½ w t): the unit quaternion of a rotation by |w| t about w."""
    angle = np.linalg.norm(w) * t
    if angle == 0.0:
        return np.array([1.0, 0.0, 0.0, 0.0])
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * w / np.linalg.norm(w)])


def integrate(model: Model, q: np.ndarray, qd: np.ndarray, dt: float) -> np.ndarray:
    """q advanced by dt at constant qd: q + qd dt, and the exact exponential map for floating bodies."""
    out = np.array(q, dtype=float)
    for b, iq, iv in zip(model.bodies, model.qidx, model.vidx):
        if b.joint != "floating":
            out[iq] += qd[iv] * dt
            continue
        Q, w, v = q[iq : iq + 4], qd[iv : iv + 3], qd[iv + 3 : iv + 6]
        # midpoint attitude makes the position half self-adjoint (r(t) then r(-t) returns)
        Qmid = quat_mul(Q, quat_exp(w, dt / 2))
        out[iq : iq + 4] = quat_mul(Q, quat_exp(w, dt))
        out[iq + 4 : iq + 7] = q[iq + 4 : iq + 7] + quat_to_R(Qmid) @ v * dt
    return out
