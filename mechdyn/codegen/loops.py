"""Pass 6a: the loop-closure rows K and k, symbolically (kkt.py solves with them).

Each constraint row (docs/conventions.md, "Loop closures") is differentiated
directly: with every point's and direction's world position, rate, and
acceleration at qdd = 0, φ̈|_{qdd=0} follows from the product rule, and

    k = −φ̈|_{qdd=0} − 2α φ̇ − β² φ,   α = β = 1/stab.

K's rows come from the same path walk as a TSDA's: only joints on exactly one
of the loop's two root paths get entries.
"""
from __future__ import annotations

from mechdyn.core.model import Loop

from .elements import path_row
from .expr import Builder, Val
from .kinematics import TreeKinematics
from .sspatial import Vec3, cross, vsub


def _f(x) -> Vec3:
    return [float(v) for v in x]


def baumgarte(b: Builder, phi: Val, phid: Val, alpha: float, beta: float) -> Val:
    """kstab = −2α φ̇ − β² φ: pulls a torn loop back to φ = 0 with critical damping when α = β."""
    return b.neg(b.add(b.mul(2 * alpha, phid), b.mul(beta * beta, phi)))


def distance_accel(b: Builder, d: Vec3, dd: Vec3, dA: Vec3) -> Val:
    """φ̈ at qdd = 0 of the distance row (d·d − L²)/2: ḋ·ḋ + d·d̈."""
    return b.add(b.dot(dd, dd), b.dot(d, dA))


def loop_rows(b: Builder, kin: TreeKinematics, lp: Loop) -> list[tuple[dict[int, Val], Val]]:
    """[(K row as {v slot: value}, k entry)] for one loop, rows in the documented order."""
    model = kin.model
    P, Pd = kin.point(lp.pred, _f(lp.anchor_pred))
    S, Sd = kin.point(lp.succ, _f(lp.anchor_succ))
    Pa, Sa = kin.point_accel(lp.pred, _f(lp.anchor_pred)), kin.point_accel(lp.succ, _f(lp.anchor_succ))
    d, dd, dA = vsub(b, S, P), vsub(b, Sd, Pd), vsub(b, Sa, Pa)
    alpha = beta = 1.0 / model.stab
    tri = [_f(col) for col in lp.triad.T]  # u0, w0, a0 in body coordinates
    axes = [_f(col) for col in ((1, 0, 0), (0, 1, 0), (0, 0, 1))]
    rows: list[tuple[dict[int, Val], Val]] = []

    def emit(T: list[Val], phi: Val, phid: Val, phidd0: Val) -> None:
        rows.append((path_row(b, kin, lp.pred, lp.succ, T), b.add(b.neg(phidd0), baumgarte(b, phi, phid, alpha, beta))))

    def sep(local: Vec3) -> None:  # e·d, e fixed in the predecessor: T = [S × e; e]
        e, ed, edd = kin.direction(lp.pred, local)
        emit(cross(b, S, e) + e, b.dot(e, d), b.add(b.dot(ed, d), b.dot(e, dd)),
             b.sum(b.dot(edd, d), b.mul(2.0, b.dot(ed, dd)), b.dot(e, dA)))

    def dirs(l1: Vec3, l2: Vec3) -> None:  # e1·e2, e1 on the predecessor, e2 on the successor: T = [e2 × e1; 0]
        e1, e1d, e1dd = kin.direction(lp.pred, l1)
        e2, e2d, e2dd = kin.direction(lp.succ, l2)
        emit(cross(b, e2, e1) + [0.0, 0.0, 0.0], b.dot(e1, e2), b.add(b.dot(e1d, e2), b.dot(e1, e2d)),
             b.sum(b.dot(e1dd, e2), b.mul(2.0, b.dot(e1d, e2d)), b.dot(e1, e2dd)))

    u, w, a = tri
    match lp.joint:
        case "spherical":
            for e in axes:
                sep(e)
        case "revolute":
            for e in axes:
                sep(e)
            dirs(u, a), dirs(w, a)
        case "prismatic":
            sep(u), sep(w), dirs(u, a), dirs(w, a), dirs(u, w)
        case "cylindrical":
            sep(u), sep(w), dirs(u, a), dirs(w, a)
        case "point-on-line":
            sep(u), sep(w)
        case "distance":  # (d·d − L²)/2: T = [S × d; d]
            emit(cross(b, S, d) + d, b.mul(0.5, b.sub(b.dot(d, d), float(lp.length) ** 2)), b.dot(d, dd),
                 distance_accel(b, d, dd, dA))
    return rows
