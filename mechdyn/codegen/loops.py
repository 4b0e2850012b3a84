"""Pass 6a: the loop-closure rows K and k, symbolically (kkt.py solves with them).

Each constraint row (docs/conventions.md, "Loop closures") is differentiated
directly: with every point's and direction's position, rate, and
acceleration at qdd = 0, φ̈|_{qdd=0} follows from the product rule, and

    k = −φ̈|_{qdd=0} − 2α φ̇ − β² φ,   α = β = 1/stab.

A row is a scalar, so its vectors may be written in any one frame. In the
predecessor's, say, its anchor and directions are constants and its motion
is the recursion's body-frame velocity and acceleration, so only the
successor's side is rotated. The accelerations are either the Newton–Euler
pass's (rnea.py), shared with it, which include gravity as the base's
fictitious acceleration (the difference of two points' accelerations cancels
it and a direction's never sees it), or a pass of their own without it. Each
loop takes whichever frame (a body on either root path, or the base) and
whichever accelerations cost the fewest new operations, by trial emission.

A point joint's three rows x_p·d, y_p·d, z_p·d are premultiplied by the
rotation between the two bodies' axes: the same system, but the new rows run
along the successor's axes, so their constraint forces are constants in its
frame, and a floating successor's columns and its whole elimination fold to
constants in the KKT solve.

K's rows come from the same path walk as a TSDA's: only joints on exactly one
of the loop's two root paths get entries.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from mechdyn.core.model import BASE, Loop, Model
from mechdyn.core.spatial import cross as cross3  # numeric, at generation time

from .elements import path_row
from .frames import triads
from .expr import Builder, Sym, Val
from .kinematics import TreeKinematics
from .rnea import origin_accelerations, quadratic
from .sspatial import Vec3, Vec6, cross, mtv, scale, vadd, vsub, xf_force

Acc = dict[int, tuple[Vec3, Vec3]]


def _f(x) -> Vec3:
    return [float(v) for v in x]


def baumgarte(b: Builder, phi: Val, phid: Val, alpha: float, beta: float) -> Val:
    """kstab = −2α φ̇ − β² φ: pulls a torn loop back to φ = 0 with critical damping when α = β."""
    return b.neg(b.add(b.mul(2 * alpha, phid), b.mul(beta * beta, phi)))


def distance_accel(b: Builder, d: Vec3, dd: Vec3, dA: Vec3) -> Val:
    """φ̈ at qdd = 0 of the distance row (d·d − L²)/2: ḋ·ḋ + d·d̈."""
    return b.add(b.dot(dd, dd), b.dot(d, dA))


def point_g(b: Builder, d: Vec3, dd: Vec3, dA: Vec3, w: Vec3, al: Vec3, alpha: float, beta: float) -> Vec3:
    """G with k = e·G for every row e·d along a direction e fixed in the predecessor (ω, α its angular velocity
    and acceleration): G = −(d × α + ω × (ω × d) + 2 ḋ × ω + d̈) − 2α (d × ω + ḋ) − β² d, from
    ė·x = e·(x × ω) and ë·d = e·(d × α + ω × (ω × d))."""
    wd = cross(b, w, d)
    accel = vadd(b, vadd(b, dA, cross(b, d, al)), vadd(b, cross(b, w, wd), scale(b, 2.0, cross(b, dd, w))))
    return vsub(b, vsub(b, scale(b, 2 * alpha, wd), accel), vadd(b, scale(b, 2 * alpha, dd), scale(b, beta * beta, d)))


def motion(kin: TreeKinematics, acc: Acc, body: int) -> tuple[Vec3, Vec3]:
    """(ω, α) of a body (or the base) in its own coordinates at qdd = 0."""
    return ([0.0] * 3 if body == BASE else kin.v[body][:3]), acc[body][0]


def point_in(b: Builder, kin: TreeKinematics, acc: Acc, F: int, body: int, local: Vec3) -> tuple[Vec3, Vec3, Vec3]:
    """A body-fixed point's position from F's origin, its velocity (kin.point) and its acceleration at qdd = 0,
    Eᵀ (a_O + α × p + ω × (ω × p)) with E from X_{body←F}, all in F's coordinates."""
    E = kin.relative(body, F).E
    w, al = motion(kin, acc, body)
    aO = acc[body][1]
    p = [float(x) for x in local]
    ww_p = quadratic(b, lambda u: cross3(u, cross3(u, p)), w, lambda u: cross(b, u, cross(b, u, p)))
    return (*kin.point(body, p, F), mtv(b, E, vadd(b, aO, vadd(b, cross(b, al, p), ww_p))))


def direction_in(b: Builder, kin: TreeKinematics, acc: Acc, F: int, body: int, local: Vec3) -> tuple[Vec3, Vec3, Vec3]:
    """A body-fixed direction, its rate and its acceleration at qdd = 0, in F's coordinates."""
    E = kin.relative(body, F).E
    w, al = motion(kin, acc, body)
    wl = cross(b, w, local)
    return mtv(b, E, local), mtv(b, E, wl), mtv(b, E, vadd(b, cross(b, al, local), cross(b, w, wl)))


NEAR = 3  # a loop's rows are tried in frames this many bodies deep from either end of its root paths


def candidate_frames(model: Model, lp: Loop) -> list[int]:
    """The frames a loop's rows are tried in: each end and its NEAR − 1 nearest ancestors, the first body the
    two root paths share, and the base (BASE last). A frame deep inside a long path saves nothing that an end
    does not (none wins on models/), and trying every one would make the search quadratic in the length."""
    sp, ss = model.support(lp.pred), model.support(lp.succ)
    shared = [i for i in sp if i in set(ss)]  # from the first common ancestor up
    keep = {*sp[:NEAR], *ss[:NEAR], *shared[:1], BASE}
    return [F for F in dict.fromkeys((*sp, *ss, BASE)) if F in keep]


Row = tuple[dict[int, Val], Val]  # (K row as {v slot: value}, k entry)


class Wrench(NamedTuple):
    """A row as the constraint force it stands for: T on the successor, −T on the predecessor, each in its own
    coordinates (on the base, none), and the row's k."""
    succ: int
    T_succ: Vec6
    pred: int
    T_pred: Vec6 | None
    k: Val


Form = Callable[[Builder, TreeKinematics, Loop, list[tuple[list[Val], int, Val]]], list]


def as_K(b: Builder, kin: TreeKinematics, lp: Loop, rows: list[tuple[list[Val], int, Val]]) -> list[Row]:
    """Each row's K over the joints of the loop's paths (kkt.py's form)."""
    return [(path_row(b, kin, lp.pred, lp.succ, T, G), k) for T, G, k in rows]


def as_wrenches(b: Builder, kin: TreeKinematics, lp: Loop, rows: list[tuple[list[Val], int, Val]]) -> list[Wrench]:
    """Each row's T in the successor's and the predecessor's coordinates (aba.py's form): Kᵀ λ is λ T applied to
    the successor and −λ T to the predecessor, so no K entry along the paths need be formed."""
    def moved(body: int, T: list[Val], G: int) -> Vec6 | None:
        return None if body == BASE else list(T) if body == G else xf_force(b, kin.relative(body, G), T)
    return [Wrench(lp.succ, moved(lp.succ, T, G), lp.pred, moved(lp.pred, T, G), k) for T, G, k in rows]


def loop_rows(b: Builder, kin: TreeKinematics, lp: Loop, form: Form = as_K) -> list:
    """One loop's rows in the documented order (a point joint's three premultiplied by Q), in `form`: K rows
    [(K row as {v slot: value}, k entry)] or wrenches; written in whichever frame and with whichever
    accelerations cost the fewest new operations in that form, each tried in a fork of the builder."""
    ways = [(F, gravity) for F in candidate_frames(kin.model, lp) for gravity in (True, False)]

    def values(rows: list) -> list[Val]:
        out: list[Val] = []
        for row in rows:
            for x in row:
                if isinstance(x, dict):
                    out += x.values()
                elif isinstance(x, list):
                    out += x
                elif isinstance(x, Sym):
                    out.append(x)
        return out

    def cost(way: tuple[int, bool]) -> int:
        trial = b.fork()
        tk = kin.on(trial)
        return trial.cost(values(form(trial, tk, lp, rows_in(trial, tk, lp, *way))), len(b))

    return form(b, kin, lp, rows_in(b, kin, lp, *min(ways, key=cost)))


def rows_in(b: Builder, kin: TreeKinematics, lp: Loop, F: int, gravity: bool = True) -> list[tuple[list[Val], int, Val]]:
    """One loop's rows as [(T, the frame T is in, k)], with every vector in frame F's coordinates (F a body or
    BASE), and the accelerations either the Newton–Euler pass's, gravity included, or a pass of their own without
    it."""
    model = kin.model
    acc = dict(origin_accelerations(b, kin, gravity))
    P, Pd, Pa = point_in(b, kin, acc, F, lp.pred, _f(lp.anchor_pred))
    S, Sd, Sa = point_in(b, kin, acc, F, lp.succ, _f(lp.anchor_succ))
    d, dd, dA = vsub(b, S, P), vsub(b, Sd, Pd), vsub(b, Sa, Pa)
    alpha = beta = 1.0 / model.stab
    pred_tri, succ_tri = triads(lp)  # u0, w0, a0 in each body's coordinates
    axes = [_f(col) for col in ((1, 0, 0), (0, 1, 0), (0, 0, 1))]
    rows: list[tuple[list[Val], int, Val]] = []  # (T, the frame T is in, k)

    def emit(T: list[Val], phi: Val, phid: Val, phidd0: Val) -> None:
        rows.append((T, F, b.add(b.neg(phidd0), baumgarte(b, phi, phid, alpha, beta))))

    def sep(local: Vec3) -> None:  # e·d, e fixed in the predecessor: T = [S × e; e]
        e, ed, edd = direction_in(b, kin, acc, F, lp.pred, local)
        emit(cross(b, S, e) + e, b.dot(e, d), b.add(b.dot(ed, d), b.dot(e, dd)),
             b.sum(b.dot(edd, d), b.mul(2.0, b.dot(ed, dd)), b.dot(e, dA)))

    def dirs(l1: Vec3, l2: Vec3) -> None:  # e1·e2, e1 on the predecessor, e2 on the successor: T = [e2 × e1; 0]
        e1, e1d, e1dd = direction_in(b, kin, acc, F, lp.pred, l1)
        e2, e2d, e2dd = direction_in(b, kin, acc, F, lp.succ, l2)
        emit(cross(b, e2, e1) + [0.0, 0.0, 0.0], b.dot(e1, e2), b.add(b.dot(e1d, e2), b.dot(e1, e2d)),
             b.sum(b.dot(e1dd, e2), b.mul(2.0, b.dot(e1d, e2d)), b.dot(e1, e2dd)))

    def point_block() -> None:
        """x_p·d, y_p·d, z_p·d premultiplied by Q, q_kj = x_s,k · x_p,j: the same system, with rows along the
        successor's axes, so that their T are constants in its frame; their k are x_s,k · G (point_g)."""
        Ep = kin.relative(lp.pred, F).E
        wb, alb = motion(kin, acc, lp.pred)
        G = point_g(b, d, dd, dA, mtv(b, Ep, wb), mtv(b, Ep, alb), alpha, beta)
        Ss = _f(lp.anchor_succ)
        for e in axes:
            rows.append((cross(b, Ss, e) + e, lp.succ, b.dot(direction_in(b, kin, acc, F, lp.succ, e)[0], G)))

    u, w, a = (_f(col) for col in pred_tri.T)
    _, ws, as_ = (_f(col) for col in succ_tri.T)
    match lp.joint:
        case "spherical":
            point_block()
        case "revolute":
            point_block()
            dirs(u, as_), dirs(w, as_)
        case "prismatic":
            sep(u), sep(w), dirs(u, as_), dirs(w, as_), dirs(u, ws)
        case "cylindrical":
            sep(u), sep(w), dirs(u, as_), dirs(w, as_)
        case "point-on-line":
            sep(u), sep(w)
        case "distance":  # (d·d − L²)/2: T = [S × d; d]
            emit(cross(b, S, d) + d, b.mul(0.5, b.sub(b.dot(d, d), float(lp.length) * float(lp.length))), b.dot(d, dd),
                 distance_accel(b, d, dd, dA))
    return rows
