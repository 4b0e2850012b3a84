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


def retract(model: Model, q: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """q ∘ exp(δ) for a tangent vector δ (nv): q + δ for single-DOF joints; for a floating body, δ = [δφ; δp] in its
    own axes, Q ⊗ exp(δφ/2) and r + R(Q) δp. The directions of the derivatives' dq (docs/derivatives.md)."""
    out = np.array(q, dtype=float)
    for b, iq, iv in zip(model.bodies, model.qidx, model.vidx):
        if b.joint != "floating":
            out[iq] += delta[iv]
            continue
        Q = q[iq : iq + 4]
        out[iq : iq + 4] = quat_mul(Q, quat_exp(delta[iv : iv + 3], 1.0))
        out[iq + 4 : iq + 7] = q[iq + 4 : iq + 7] + quat_to_R(Q) @ delta[iv + 3 : iv + 6]
    return out


def difference(model: Model, q1: np.ndarray, q0: np.ndarray) -> np.ndarray:
    """δ with retract(model, q0, δ) = q1: the inverse of retract (a floating body's rotation by its logarithm)."""
    out = np.zeros(model.nv)
    for b, iq, iv in zip(model.bodies, model.qidx, model.vidx):
        if b.joint != "floating":
            out[iv] = q1[iq] - q0[iq]
            continue
        Q0 = q0[iq : iq + 4]
        dQ = quat_mul(Q0 * np.array([1.0, -1.0, -1.0, -1.0]), q1[iq : iq + 4])
        dQ = dQ if dQ[0] >= 0 else -dQ  # the shorter way round
        s = np.linalg.norm(dQ[1:])
        out[iv : iv + 3] = 2.0 * np.arctan2(s, dQ[0]) * dQ[1:] / s if s > 0 else 2.0 * dQ[1:]
        out[iv + 3 : iv + 6] = quat_to_R(Q0).T @ (q1[iq + 4 : iq + 7] - q0[iq + 4 : iq + 7])
    return out
