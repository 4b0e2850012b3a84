"""Dense 6×6 spatial algebra (Featherstone, RBDA ch. 2), in this project's conventions.

Motion vectors are [ω; v], force vectors [n; f]. `plux(E, r)` is the Plücker
transform from frame A to frame B, where B's origin is at r (A coordinates) and
E rotates A-coordinates into B-coordinates.

rotx/roty/rotz return the ordinary right-handed *physical* rotation R (unlike
spatial_v2, which returns its transpose). A body physically rotated by R
relative to its joint frame has E = Rᵀ; that transpose is written out in
`jcalc`, the one place a joint transform is formed. With S = +axis this makes q
the physical right-handed angle and qd = dq/dt.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .model import Body

_I3 = np.eye(3)


def skew(v: np.ndarray) -> np.ndarray:
    """The 3×3 matrix v× with skew(v) @ u = v × u."""
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a × b for 3-vectors (np.cross's generality costs ten times more here)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def rotx(theta: float) -> np.ndarray:
    """Physical right-handed rotation by theta about x."""
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def roty(theta: float) -> np.ndarray:
    """Physical right-handed rotation by theta about y."""
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rotz(theta: float) -> np.ndarray:
    """Physical right-handed rotation by theta about z."""
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rot_axis(axis: int, theta: float) -> np.ndarray:
    """Physical rotation by theta about coordinate axis 0, 1 or 2 (x, y, z)."""
    return (rotx, roty, rotz)[axis](theta)


def rot_about(a: np.ndarray, theta: float) -> np.ndarray:
    """Physical right-handed rotation by theta about the unit vector a (Rodrigues: cos θ 1 + sin θ a× + (1 − cos θ) a aᵀ)."""
    c, s = np.cos(theta), np.sin(theta)
    return c * _I3 + s * skew(a) + (1.0 - c) * np.outer(a, a)


def triad(a: np.ndarray) -> np.ndarray:
    """Columns (u, w, a): the unit vector a completed to a right-handed orthonormal basis (docs/conventions.md).

    u = normalize(a × e) with e the base axis least aligned with a (the first on ties)."""
    e = _I3[int(np.argmin(np.abs(a)))]
    u = np.cross(a, e)
    u /= np.linalg.norm(u)
    return np.column_stack([u, np.cross(a, u), a])


QUARTER_SNAP = 1e-9  # rad: an angle this near a multiple of π/2 is that quarter turn exactly


def quarter_turns(theta: float) -> float:
    """theta, or the multiple of π/2 it is within QUARTER_SNAP of: a URDF's 1.57079632679 means π/2, and its
    cosine must be exactly 0 for the structural zeros of the frames it turns to survive."""
    k = round(theta / (np.pi / 2))
    return k * (np.pi / 2) if abs(theta - k * (np.pi / 2)) <= QUARTER_SNAP else theta


def exact_units(R: np.ndarray) -> np.ndarray:
    """R (a rotation or a unit vector) with its round-off zeros and ±1s made exact: cos(π/2) is 6e-17 in floating
    point, not 0, and would fill every structural zero it touched."""
    return np.where(np.abs(R) < 1e-15, 0.0, np.where(np.abs(np.abs(R) - 1.0) < 1e-15, np.sign(R), R))


def rpy_to_R(rpy: np.ndarray) -> np.ndarray:
    """URDF's roll-pitch-yaw: about the fixed axes x by roll, then y by pitch, then z by yaw, R = Rz Ry Rx; an angle
    within QUARTER_SNAP of a quarter turn is that quarter turn, exactly."""
    def turn(rot, a: float) -> np.ndarray:
        a = quarter_turns(float(a))
        return exact_units(rot(a)) if a % (np.pi / 2) == 0 else rot(a)

    return turn(rotz, rpy[2]) @ turn(roty, rpy[1]) @ turn(rotx, rpy[0])


def R_to_rpy(R: np.ndarray) -> np.ndarray:
    """rpy_to_R's inverse on rotations R (..., 3, 3): (..., 3) roll, pitch, yaw in rad with pitch in [-π/2, π/2]."""
    roll = np.arctan2(R[..., 2, 1], R[..., 2, 2])
    pitch = np.arcsin(np.clip(-R[..., 2, 0], -1.0, 1.0)) + 0.0  # + 0.0: a zero entry reads +0, not −0
    yaw = np.arctan2(R[..., 1, 0], R[..., 0, 0])
    return np.stack([roll, pitch, yaw], -1)


def signed_permutation(R: np.ndarray, tol: float = QUARTER_SNAP) -> np.ndarray:
    """R, or the signed permutation matrix (a rotation by quarter turns) it is within tol of, entry by entry."""
    P = np.round(R)
    ok = np.all(np.abs(R - P) <= tol) and np.all(np.abs(P).sum(axis=0) == 1) and np.all(np.abs(P).sum(axis=1) == 1)
    return P + 0.0 if ok and np.linalg.det(P) > 0 else R


def quat_to_R(Q: np.ndarray) -> np.ndarray:
    """Rotation matrix of the unit quaternion Q = [w, x, y, z] (scalar first); not renormalized."""
    w, x, y, z = Q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def plux(E: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Plücker motion transform A→B: [[E, 0], [-E r×, E]], B's origin at r (A coords)."""
    X = np.zeros((6, 6))
    X[:3, :3] = E
    X[3:, 3:] = E
    X[3:, :3] = -E @ skew(r)
    return X


def dual(X: np.ndarray) -> np.ndarray:
    """Force transform X* = X⁻ᵀ of a Plücker motion transform X: [[E, B], [0, E]] for X = [[E, 0], [B, E]]."""
    Xf = np.zeros((6, 6))
    Xf[:3, :3] = X[:3, :3]
    Xf[3:, 3:] = X[3:, 3:]
    Xf[:3, 3:] = X[3:, :3]
    return Xf


def crm(v: np.ndarray) -> np.ndarray:
    """Motion cross-product matrix v× = [[ω×, 0], [v×, ω×]] for v = [ω; v]."""
    X = np.zeros((6, 6))
    wx = skew(v[:3])
    X[:3, :3] = wx
    X[3:, 3:] = wx
    X[3:, :3] = skew(v[3:])
    return X


def crf(v: np.ndarray) -> np.ndarray:
    """Force cross-product matrix v×* = −(v×)ᵀ."""
    return -crm(v).T


def mcI(m: float, c: np.ndarray, Ic: np.ndarray) -> np.ndarray:
    """Spatial inertia about the body origin of mass m, CoM c and inertia Ic about the CoM."""
    cx = skew(c)
    I = np.zeros((6, 6))
    I[:3, :3] = Ic + m * cx @ cx.T
    I[:3, 3:] = m * cx
    I[3:, :3] = m * cx.T
    I[3:, 3:] = m * _I3
    return I


def jcalc(body: Body, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Joint transform XJ (joint frame → body frame) and motion subspace S (6×nv) for the body's q slots."""
    q = np.atleast_1d(np.asarray(q, dtype=float))
    if body.joint == "revolute":
        XJ = np.zeros((6, 6))  # plux(E, 0): a rotation about the joint frame's origin
        XJ[:3, :3] = XJ[3:, 3:] = rot_about(body.axis, q[0]).T  # E = Rᵀ: the explicit transpose
        S = np.concatenate([body.axis, np.zeros(3)])[:, None]
    elif body.joint == "prismatic":
        XJ = plux(_I3, body.axis * q[0])
        S = np.concatenate([np.zeros(3), body.axis])[:, None]
    elif body.joint == "floating":
        XJ = plux(quat_to_R(q[0:4]).T, q[4:7])  # E = R(Q)ᵀ, Q the body-to-base attitude
        S = np.eye(6)
    else:
        raise ValueError(f"body {body.name!r}: unsupported tree joint {body.joint!r}")
    return XJ, S


def xtree(body: Body) -> np.ndarray:
    """Tree transform XT (parent frame → joint frame): plux(rotᵀ, xtree), the identity for a floating body; the
    body's own, formed once (Body.XT), read-only."""
    return body.XT


def R_to_quat(R: np.ndarray) -> np.ndarray:
    """The unit quaternion [w, x, y, z] (w >= 0) of rotation matrix R, the inverse of quat_to_R.

    Shepperd's choice: solve for the largest of |w|, |x|, |y|, |z| first, so no division is by a small number."""
    t = np.trace(R)
    k = int(np.argmax([t, R[0, 0], R[1, 1], R[2, 2]]))
    if k == 0:
        w = np.sqrt(1.0 + t) / 2
        Q = np.array([w, (R[2, 1] - R[1, 2]) / (4 * w), (R[0, 2] - R[2, 0]) / (4 * w), (R[1, 0] - R[0, 1]) / (4 * w)])
    else:
        i, j, m = k - 1, k % 3, (k + 1) % 3
        v = np.zeros(3)
        v[i] = np.sqrt(1.0 + 2 * R[i, i] - t) / 2
        v[j] = (R[j, i] + R[i, j]) / (4 * v[i])
        v[m] = (R[m, i] + R[i, m]) / (4 * v[i])
        Q = np.array([(R[m, j] - R[j, m]) / (4 * v[i]), *v])
    Q /= np.linalg.norm(Q)
    return Q if Q[0] >= 0 else -Q
