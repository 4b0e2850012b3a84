"""The state mapping between this project's (q, qd) and Chrono's maximal coordinates, both ways.

Chrono keeps one rigid body per model body. Its state is the body's centre of
mass and attitude, the centre of mass's velocity in base (absolute)
coordinates, and the angular velocity in the body's own axes; its
acceleration variables are the derivatives of those two velocities. The body
is built as a `ChBodyAuxRef` whose reference frame is the project's body frame
and whose COM frame sits at `cg` with the same axes, so the body axes, the
COM frame's axes and the project's body-frame coordinates are one and the same.

This module is plain numpy (no pychrono): the forward map runs through the
project's own kinematics, and the inverse map reads each tree joint's
coordinate back from the relative pose of the body and its joint frame (the
parent's frame turned by the joint's constant rotation) — exact, because the
body differs from its joint frame by a pure rotation about (or translation
along) the axis.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mechdyn.core.kinematics import Kinematics, forward_kinematics
from mechdyn.core.model import BASE, Model
from mechdyn.core.spatial import quat_to_R, triad


@dataclass(frozen=True)
class BodyStates:
    """Chrono's per-body state, in numpy: what `build.apply` writes and `build.read` returns."""

    R: np.ndarray  # (nbody, 3, 3) body-to-base attitude (COM frame = body axes)
    com: np.ndarray  # (nbody, 3) centre of mass, base coordinates
    vcom: np.ndarray  # (nbody, 3) velocity of the centre of mass, base coordinates
    w: np.ndarray  # (nbody, 3) angular velocity, body coordinates (Chrono's "local")

    def origin(self, model: Model) -> np.ndarray:
        """(nbody, 3) the project's body origins, base coordinates."""
        return self.com - np.einsum("bij,bj->bi", self.R, cgs(model))

    def origin_velocity(self, model: Model) -> np.ndarray:
        """(nbody, 3) base-coordinate velocity of each body origin."""
        s = np.einsum("bij,bj->bi", self.R, cgs(model))
        return self.vcom - np.cross(np.einsum("bij,bj->bi", self.R, self.w), s)


def cgs(model: Model) -> np.ndarray:
    return np.array([b.cg for b in model.bodies]).reshape(-1, 3)


def R_to_quat(R: np.ndarray) -> np.ndarray:
    """The unit quaternion [w, x, y, z] of a rotation matrix, w ≥ 0 (Shepperd's method: no small divisor)."""
    t = np.trace(R)
    k = int(np.argmax([t, R[0, 0], R[1, 1], R[2, 2]]))
    if k == 0:
        s = 2.0 * np.sqrt(1.0 + t)
        Q = np.array([s / 4, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s])
    elif k == 1:
        s = 2.0 * np.sqrt(1.0 + 2 * R[0, 0] - t)
        Q = np.array([(R[2, 1] - R[1, 2]) / s, s / 4, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s])
    elif k == 2:
        s = 2.0 * np.sqrt(1.0 + 2 * R[1, 1] - t)
        Q = np.array([(R[0, 2] - R[2, 0]) / s, (R[0, 1] + R[1, 0]) / s, s / 4, (R[1, 2] + R[2, 1]) / s])
    else:
        s = 2.0 * np.sqrt(1.0 + 2 * R[2, 2] - t)
        Q = np.array([(R[1, 0] - R[0, 1]) / s, (R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, s / 4])
    Q /= np.linalg.norm(Q)
    return Q if Q[0] >= 0 else -Q


def rotation_angle(R: np.ndarray) -> float:
    """The angle of a rotation matrix, in [0, π], accurate near 0 (atan2 of |vee(R − Rᵀ)|/2 and (tr R − 1)/2)."""
    s = 0.5 * np.linalg.norm([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    return float(np.arctan2(s, 0.5 * (np.trace(R) - 1.0)))


# the two axes completing axis k to a right-handed cycle (k, i, j)


def _unwrap(angle: float, hint: float) -> float:
    """angle + 2πn, the branch nearest hint."""
    return angle + 2 * np.pi * np.round((hint - angle) / (2 * np.pi))


class Mapping:
    """(q, qd) ↔ `BodyStates` for one model, and Chrono accelerations → qdd.

    `kinematics` is the single place the forward map reads the project's
    kinematics, so a test can plant a convention bug there.
    """

    def __init__(self, model: Model) -> None:
        self.model = model
        self.cg = cgs(model)

    # -- forward: project → Chrono ----------------------------------------
    def kinematics(self, q: np.ndarray, qd: np.ndarray | None) -> Kinematics:
        return forward_kinematics(self.model, q, qd)

    def to_chrono(self, q: np.ndarray, qd: np.ndarray | None = None) -> BodyStates:
        """Each body at the pose the project's kinematics gives, moving with the velocity it gives (zero when qd is None)."""
        kin = self.kinematics(q, qd)
        R = np.array(kin.R)
        com = kin.p + np.einsum("bij,bj->bi", R, self.cg)
        w, vo = kin.v[:, :3], kin.v[:, 3:]  # body frame; vo is the origin's velocity
        vcom = np.einsum("bij,bj->bi", R, vo + np.cross(w, self.cg))
        return BodyStates(R, com, vcom, np.array(w))

    # -- inverse: Chrono → project ----------------------------------------
    def _parent(self, bs: BodyStates, po: np.ndarray, vo: np.ndarray, i: int):
        """Parent pose and motion of body i: R, origin, origin velocity, ω (base coords); the base is at rest."""
        par = self.model.bodies[i].parent
        if par == BASE:
            return np.eye(3), np.zeros(3), np.zeros(3), np.zeros(3)
        return bs.R[par], po[par], vo[par], bs.R[par] @ bs.w[par]

    def from_chrono(self, bs: BodyStates, q_hint: np.ndarray | None = None,
                    joints: list[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(q, qd) read back from Chrono body states.

        A revolute angle is known from the pose only modulo 2π: it takes the
        branch nearest q_hint (the principal one without a hint); a quaternion
        takes the sign nearest q_hint's (w ≥ 0 without one). `joints` limits the
        work to those bodies' joints (the other slots stay zero): a joint reads
        only its body and its parent.
        """
        m = self.model
        q, qd = np.zeros(m.nq), np.zeros(m.nv)
        po, vo = bs.origin(m), bs.origin_velocity(m)
        for i in range(m.nbody) if joints is None else joints:
            b = m.bodies[i]
            iq, iv = m.qidx[i], m.vidx[i]
            Rp, pp, vp, wp = self._parent(bs, po, vo, i)
            if b.joint == "floating":
                Q = R_to_quat(bs.R[i])
                if q_hint is not None and Q @ q_hint[iq : iq + 4] < 0:
                    Q = -Q
                q[iq : iq + 4], q[iq + 4 : iq + 7] = Q, po[i]
                qd[iv : iv + 3], qd[iv + 3 : iv + 6] = bs.w[i], bs.R[i].T @ vo[i]
                continue
            J = Rp @ b.rot  # the joint frame, base coordinates
            a = J @ b.axis
            if b.joint == "revolute":  # R_rel u = cos q u + sin q (a × u) for u ⟂ a, all in the joint frame
                u, w, _ = triad(b.axis).T
                turned = J.T @ bs.R[i] @ u
                angle = float(np.arctan2(w @ turned, u @ turned))
                q[iq] = angle if q_hint is None else _unwrap(angle, q_hint[iq])
                qd[iv] = a @ (bs.R[i] @ bs.w[i] - wp)
            else:  # prismatic: the origin's offset from the joint frame origin, along the axis
                r = po[i] - pp
                q[iq] = b.axis @ (b.rot.T @ (Rp.T @ r - b.xtree))
                qd[iv] = a @ (vo[i] - vp - np.cross(wp, r))
        return q, qd

    def qdd_from_chrono(self, bs: BodyStates, acc: np.ndarray) -> np.ndarray:
        """qdd from Chrono's accelerations acc (nbody, 6) = [COM acceleration, base coords; dω/dt, body coords].

        Exact at any state (no assumption that the velocities are consistent):
        each line is the time derivative of the matching line of `from_chrono`.
        """
        m = self.model
        qdd = np.zeros(m.nv)
        po, vo = bs.origin(m), bs.origin_velocity(m)
        W = np.einsum("bij,bj->bi", bs.R, bs.w)  # ω, base coords
        A = np.einsum("bij,bj->bi", bs.R, acc[:, 3:])  # dω/dt, base coords (the same vector as R · d(ω_local)/dt)
        s = np.einsum("bij,bj->bi", bs.R, self.cg)
        ao = acc[:, :3] - np.cross(A, s) - np.cross(W, np.cross(W, s))  # origin accelerations
        for i, b in enumerate(m.bodies):
            iv = m.vidx[i]
            par = b.parent
            if par == BASE:
                Rp, pp, vp, wp, ap, alp = np.eye(3), np.zeros(3), np.zeros(3), np.zeros(3), np.zeros(3), np.zeros(3)
            else:
                Rp, pp, vp, wp, ap, alp = bs.R[par], po[par], vo[par], W[par], ao[par], A[par]
            if b.joint == "floating":
                vb = bs.R[i].T @ vo[i]
                qdd[iv : iv + 3] = acc[i, 3:]
                qdd[iv + 3 : iv + 6] = bs.R[i].T @ ao[i] - np.cross(bs.w[i], vb)
                continue
            a = Rp @ b.rot @ b.axis
            if b.joint == "revolute":  # d/dt [a · (ω_i − ω_p)], a turning with the parent
                qdd[iv] = np.cross(wp, a) @ (W[i] - wp) + a @ (A[i] - alp)
            else:  # d/dt [a · (ṙ − ω_p × r)], r = p_i − p_p
                r, rd, rdd = po[i] - pp, vo[i] - vp, ao[i] - ap
                qdd[iv] = np.cross(wp, a) @ (rd - np.cross(wp, r)) + a @ (rdd - np.cross(alp, r) - np.cross(wp, rd))
        return qdd


def body_gap(model: Model, R_a: np.ndarray, p_a: np.ndarray, R_b: np.ndarray, p_b: np.ndarray) -> np.ndarray:
    """(nbody,) per body the worse of the origin distance (m) and the relative attitude angle (rad)."""
    pos = np.linalg.norm(p_a - p_b, axis=1)
    att = np.array([rotation_angle(Ra.T @ Rb) for Ra, Rb in zip(R_a, R_b)])
    return np.maximum(pos, att)


__all__ = ["BodyStates", "Mapping", "R_to_quat", "body_gap", "quat_to_R", "rotation_angle"]
