"""Loop closures, numerically: constraint rows, the loop Jacobian, and assembly onto the closure manifold.

The constraint definitions are those of docs/conventions.md ("Loop closures").
Each scalar constraint is a `Row` of one of three shapes, and each shape has an
exact constraint force T (a spatial force in base coordinates about the base
origin, applied to the successor, −T to the predecessor) with φ̇ = Tᵀ(v_s − v_p).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .integrate import integrate, retract
from .kinematics import Kinematics, forward_kinematics, point_state
from .model import BASE, LOOP_ROWS, Loop, Model
from .spatial import cross


@dataclass(frozen=True)
class Row:
    kind: Literal["sep", "dirs", "dist"]  # e·d, e1·e2, (d·d − L²)/2
    phi: float
    T: np.ndarray  # (6,) the constraint force on the successor
    e: np.ndarray  # sep: the predecessor-fixed direction; dirs: e1 (predecessor); dist: d
    e2: np.ndarray | None  # dirs: the successor-fixed direction


def _rotation(kin: Kinematics, body: int) -> np.ndarray:
    return np.eye(3) if body == BASE else kin.R[body]


def loop_rows(model: Model, kin: Kinematics, lp: Loop) -> list[Row]:
    """The loop's constraint rows, in the order docs/conventions.md lists them."""
    P = point_state(model, kin, lp.pred, lp.anchor_pred)[0]
    S = point_state(model, kin, lp.succ, lp.anchor_succ)[0]
    d = S - P
    Rp, Rs = _rotation(kin, lp.pred), _rotation(kin, lp.succ)
    u, w, a = (Rp @ lp.triad).T
    us, ws, as_ = (Rs @ lp.triad).T

    def sep(e: np.ndarray) -> Row:
        return Row("sep", float(e @ d), np.concatenate([cross(S, e), e]), e, None)

    def dirs(e1: np.ndarray, e2: np.ndarray) -> Row:
        return Row("dirs", float(e1 @ e2), np.concatenate([cross(e2, e1), np.zeros(3)]), e1, e2)

    if lp.joint not in LOOP_ROWS:
        raise ValueError(f"unknown loop joint {lp.joint!r}")
    axes = {"x": Rp[:, 0], "y": Rp[:, 1], "z": Rp[:, 2], "u": u, "w": w, "as": as_, "ws": ws}
    rows = []
    for kind, *names in LOOP_ROWS[lp.joint]:
        if kind == "sep":
            rows.append(sep(axes[names[0]]))
        elif kind == "dirs":
            rows.append(dirs(axes[names[0]], axes[names[1]]))
        else:
            rows.append(Row("dist", 0.5 * float(d @ d - lp.length * lp.length), np.concatenate([cross(S, d), d]), d,
                            None))
    return rows


def body_jacobian(model: Model, kin: Kinematics, i: int) -> np.ndarray:
    """(6, nv): body i's spatial velocity in base coordinates (about the base origin) per unit qd."""
    J = np.zeros((6, model.nv))
    while i != BASE:
        b, R, p = model.bodies[i], kin.R[i], kin.p[i]
        v0 = model.vidx[i]
        px = np.array([[0.0, -p[2], p[1]], [p[2], 0.0, -p[0]], [-p[1], p[0], 0.0]])
        if b.joint == "floating":  # columns [R; p× R] for ω, [0; R] for v
            J[:3, v0 : v0 + 3] = R
            J[3:, v0 : v0 + 3] = px @ R
            J[3:, v0 + 3 : v0 + 6] = R
        elif b.joint == "revolute":
            J[:3, v0] = R @ b.axis
            J[3:, v0] = px @ J[:3, v0]
        else:
            J[3:, v0] = R @ b.axis
        i = b.parent
    return J


def closure(model: Model, q: np.ndarray, kin: Kinematics | None = None) -> tuple[np.ndarray, np.ndarray]:
    """φ (nc,) and the loop Jacobian K (nc, nv) at q, loops in file order."""
    kin = kin or forward_kinematics(model, q)
    phi, K = [], []
    for lp in model.loops:
        dJ = body_jacobian(model, kin, lp.succ) - (body_jacobian(model, kin, lp.pred) if lp.pred != BASE else 0.0)
        for r in loop_rows(model, kin, lp):
            phi.append(r.phi)
            K.append(r.T @ dJ)
    return np.array(phi), np.array(K).reshape(len(phi), model.nv)


def _lstsq(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The minimum-norm least-squares x of A x = b, singular values below 1e-12 of the largest dropped (LAPACK's
    gelsd, as scipy.linalg.lstsq calls it; numpy's, so loading a loop model never imports scipy)."""
    return np.linalg.lstsq(A, b, rcond=1e-12)[0]


class AssemblyError(ValueError):
    """The loops cannot be closed from the given configuration."""


def project_q(model: Model, q: np.ndarray, tol: float = 1e-12, maxit: int = 50) -> np.ndarray:
    """q moved onto φ(q) = 0 by Gauss–Newton with minimum-norm steps taken in velocity space (the design pose's
    assembly; close_loops holds slots and halves its steps)."""
    q = np.array(q, dtype=float)
    for _ in range(maxit):
        phi, K = closure(model, q)
        if not phi.size or np.max(np.abs(phi)) <= tol:
            return q
        bad = ~(np.isfinite(phi) & np.isfinite(K).all(axis=1))
        if bad.any():  # lstsq would raise a bare ValueError
            lp = loop_of_row(model, int(np.argmax(bad)))
            raise AssemblyError(f"loop '{lp.name}' (line {lp.line}) does not close: the Gauss-Newton iteration "
                                "diverged to non-finite residuals")
        dv = _lstsq(K, -phi)
        q = integrate(model, q, dv, 1.0)  # the quaternion tangent map, via the integration rule
    phi, _ = closure(model, q)
    worst = int(np.argmax(np.abs(phi)))
    raise AssemblyError(f"loop '{loop_of_row(model, worst).name}' (line {loop_of_row(model, worst).line}) "
                        f"does not close: residual {abs(phi[worst]):.3e} after {maxit} Gauss-Newton steps")


def close_loops(model: Model, q: np.ndarray, held: Sequence[int] = (), tol: float = 1e-12,
                maxit: int = 50) -> np.ndarray:
    """q moved onto φ(q) = 0 by Gauss–Newton with minimum-norm tangent steps (retract) that leave the held slots
    alone (a driver's, a held post's), each halved until the residual falls: a full step far from the manifold
    can overshoot onto another branch and diverge; near it the full step is taken and converges quadratically.
    AssemblyError when it does not converge in maxit steps."""
    q = np.array(q, dtype=float)
    if not model.loops:
        return q
    free = np.setdiff1d(np.arange(model.nv), held)
    for _ in range(maxit):
        phi, K = closure(model, q)
        if np.max(np.abs(phi)) <= tol:
            return q
        if not (np.isfinite(phi).all() and np.isfinite(K).all()):
            break
        step = np.zeros(model.nv)
        step[free] = _lstsq(K[:, free], -phi)
        for _ in range(20):
            trial = retract(model, q, step)
            if np.max(np.abs(closure(model, trial)[0])) < np.max(np.abs(phi)):
                break
            step *= 0.5
        q = trial
    phi, _ = closure(model, q)
    worst = int(np.nanargmax(np.abs(phi)))
    lp = loop_of_row(model, worst)
    raise AssemblyError(f"loop '{lp.name}' (line {lp.line}) does not close with slots {list(held)} held: residual "
                        f"{abs(phi[worst]):.3e} after {maxit} Gauss-Newton steps")


def project_qd(model: Model, q: np.ndarray, qd: np.ndarray, held: Sequence[int] = ()) -> np.ndarray:
    """The qd nearest to the given one (Euclidean) with K qd = 0, its `held` entries (a driver's rates) kept."""
    _, K = closure(model, q)
    qd = np.array(qd, dtype=float)
    if not K.size:
        return qd
    free = np.setdiff1d(np.arange(model.nv), held)
    Kf = K[:, free]
    qd[free] -= Kf.T @ _lstsq(Kf @ Kf.T, K @ qd)
    return qd


def loop_of_row(model: Model, row: int) -> Loop:
    for lp in model.loops:
        if row < lp.nc:
            return lp
        row -= lp.nc
    raise IndexError(row)


def rank_deficiency(model: Model, K: np.ndarray) -> str | None:
    """None when rank(K) = nc, else a message naming the loop that loses rank and how to fix it."""
    nc = K.shape[0]
    if nc == 0 or np.linalg.matrix_rank(K, tol=1e-9 * max(1.0, np.abs(K).max())) == nc:
        return None
    row = 0
    for lp in model.loops:  # the first loop whose rows add less rank than their count
        upto = row + lp.nc
        if np.linalg.matrix_rank(K[:upto], tol=1e-9 * max(1.0, np.abs(K).max())) < upto:
            return (f"{model.path}:{lp.line}: loop '{lp.name}' ({lp.joint}) over-constrains the mechanism: "
                    f"rank(K) < nc = {nc}; a planar loop closed by a revolute has only 2 independent "
                    f"constraints, so close planar loops with point-on-line, not revolute")
        row = upto
    return f"{model.path}: rank(K) < nc = {nc}"


RANK_TOL = 1e-9  # a row is redundant when what it adds to the rows before it is below this share of its terms' size


def redundant_rows(model: Model, q: np.ndarray) -> tuple[list[int], int]:
    """The rows of K at q that add nothing to the rows before them, in order, and rank(K).

    Row k is redundant when its part orthogonal to rows 0..k−1 (Gram–Schmidt, reorthogonalized) is within
    RANK_TOL of the size of the terms its entries sum, Σ |T|·|dJ|: the scale of their round-off, so the test
    does not depend on the model's units or size. A row the tree's joints cannot move (a point-on-line axis
    along the only direction the loop leaves free, a distance the joints cannot change) is zero and so
    redundant; so is one that repeats the rows before it (a planar loop closed by a revolute)."""
    kin = forward_kinematics(model, q)
    basis: list[np.ndarray] = []
    redundant: list[int] = []
    k = 0
    for lp in model.loops:
        dJ = body_jacobian(model, kin, lp.succ) - (body_jacobian(model, kin, lp.pred) if lp.pred != BASE else 0.0)
        for r in loop_rows(model, kin, lp):
            row, size = r.T @ dJ, float(np.linalg.norm(np.abs(r.T) @ np.abs(dJ)))
            for _ in range(2):  # twice is enough (Kahan's rule), once loses orthogonality on near-parallel rows
                for e in basis:
                    row = row - (e @ row) * e
            norm = float(np.linalg.norm(row))
            if norm <= RANK_TOL * size or not np.isfinite(norm):
                redundant.append(k)
            else:
                basis.append(row / norm)
            k += 1
    return redundant, len(basis)


def reach_fault(model: Model, q: np.ndarray, held: Sequence[int], iq: int, offsets: Sequence[float]) -> str | None:
    """None if the loops close with q[iq] moved by each of `offsets` and the velocity coordinates `held` (the
    drivers') kept, else why not: the AssemblyError's message at the first offset that fails."""
    for f in offsets:
        qf = np.array(q, dtype=float)
        qf[iq] += f
        try:
            close_loops(model, qf, held)
        except AssemblyError as e:
            return f"at {f:+.6g} from the design pose the loops cannot close ({e})"
    return None
