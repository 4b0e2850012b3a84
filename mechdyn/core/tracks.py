"""Track bands: the belt path around a band's rollers, and a `track` block expanded into ordinary bodies.

A band of N shoes becomes a floating anchor shoe parented to the base and a chain of N − 1 revolute-y pins,
each shoe's frame at its own pin with the next pin at +linkLen on x, closed by one point-on-line loop from the
last shoe's trailing pin to the anchor's leading pin (docs/mech-format.md, "Track bands"). The path is the
convex hull of every roller circle in the root body's xz-plane, walked clockwise (x forward, z up) from the
hull's top point; linkLen = perimeter / N, and the pins step round it by chords of exactly linkLen (lay_pins).
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import NoReturn

import numpy as np

from .errors import MechError, MechWarning, capped
from .kinematics import Kinematics, forward_kinematics
from .model import BASE, Body, Loop, Model, Track, _frozen
from .spatial import R_to_quat, roty

_TIE = 1e-9  # rad: candidates turning this close to the least turn are collinear with it (equal road wheels)
END_PITCH_RATIO = 1.0  # warn when an end roller's radius is under this many link lengths (diameter < 2 pitch)
PITCH_TOLERANCE = 0.05  # relative: the sprocket's tooth pitch and the declared pitch against linkLen
FLIP = np.diag([1.0, -1.0, -1.0])  # a half turn about x


def _cw(h: np.ndarray, t: np.ndarray) -> float:
    """The clockwise turn (x right, z up) from direction h to direction t, in [0, 2π)."""
    a = math.atan2(-(h[0] * t[1] - h[1] * t[0]), h[0] * t[0] + h[1] * t[1]) % (2 * math.pi)
    return 0.0 if a > 2 * math.pi - _TIE else a  # a round-off short of a full turn is no turn


@dataclass(frozen=True)
class Arc:
    """A wrap on roller `roller`: from the outward normal at angle `start` (atan2 z, x), clockwise by `sweep`."""

    roller: int
    centre: np.ndarray  # (2,) x, z
    radius: float
    start: float
    sweep: float

    @property
    def length(self) -> float:
        return self.radius * self.sweep

    def point(self, s: float) -> np.ndarray:
        phi = self.start - s / self.radius
        return self.centre + self.radius * np.array([math.cos(phi), math.sin(phi)])


@dataclass(frozen=True)
class Run:
    """A straight tangent run from a to b."""

    a: np.ndarray
    b: np.ndarray

    @property
    def length(self) -> float:
        return float(np.linalg.norm(self.b - self.a))

    def point(self, s: float) -> np.ndarray:
        return self.a + (self.b - self.a) * (s / self.length)


@dataclass(frozen=True)
class Belt:
    """The closed path: segments in walk order, starting and ending at the top point of the first arc's roller."""

    segments: tuple[Arc | Run, ...]

    @property
    def perimeter(self) -> float:
        return math.fsum(seg.length for seg in self.segments)

    @property
    def wrapped(self) -> tuple[int, ...]:
        """The rollers the path wraps (those with an arc of positive sweep), in walk order, without repeats."""
        out: list[int] = []
        for seg in self.segments:
            if isinstance(seg, Arc) and seg.sweep > 0 and seg.roller not in out:
                out.append(seg.roller)
        return tuple(out)

    def locate(self, s: float) -> tuple[Arc | Run, float]:
        """The segment holding arc length s (mod the perimeter) from the start, and s measured along it."""
        s %= self.perimeter
        for seg in self.segments:
            if s <= seg.length:
                return seg, s
            s -= seg.length
        return self.segments[-1], self.segments[-1].length  # s a round-off past the end

    def point(self, s: float) -> np.ndarray:
        """The path point at arc length s (mod the perimeter) from the start."""
        seg, t = self.locate(s)
        return seg.point(t)


class BeltError(ValueError):
    """The rollers do not define a belt path."""


def _tangent(ci: np.ndarray, ri: float, cj: np.ndarray, rj: float) -> np.ndarray | None:
    """The outward normal of the outer tangent leaving circle i for circle j with both on its right (clockwise
    walk), or None when one circle lies inside the other."""
    D = cj - ci
    d = math.hypot(*D)
    if d <= abs(ri - rj) * (1 + 1e-12):
        return None
    beta = math.atan2(D[1], D[0]) + math.acos((ri - rj) / d)
    return np.array([math.cos(beta), math.sin(beta)])


def _better(turn: float, reach: float, best_turn: float, best_reach: float) -> bool:
    """Whether a tangent (its clockwise turn, its length) beats the best so far: the least turn, and of tangents
    tied on it the farthest."""
    return turn < best_turn - _TIE or (abs(turn - best_turn) <= _TIE and reach > best_reach)


def belt_path(circles: list[tuple[float, float, float]]) -> Belt:
    """The convex hull of the circles (x, z, r), gift-wrapped clockwise by outer tangents from its top point.

    At each roller the walk takes the tangent of least clockwise turn; among tangents tied on the turn (collinear
    rollers of equal radius) it takes the farthest, so it runs past the rollers in between instead of stopping
    at each."""
    c = [np.array([x, z]) for x, z, _ in circles]
    r = [rad for _, _, rad in circles]
    top = max(z + rad for _, z, rad in circles)
    # the rearmost of the rollers reaching the top: a level top run then starts at its rear end
    start = min((i for i in range(len(c)) if c[i][1] + r[i] >= top - 1e-12 * max(1.0, abs(top))),
                key=lambda i: c[i][0])
    cur, n_in, h = start, np.array([0.0, 1.0]), np.array([1.0, 0.0])
    segments: list[Arc | Run] = []
    east = np.array([1.0, 0.0])
    for step in range(2 * len(c)):  # a hull of n circles has at most 2n − 1 arcs
        best: tuple[float, float, int, np.ndarray] | None = None
        for j in range(len(c)):
            if j == cur:
                continue
            n = _tangent(c[cur], r[cur], c[j], r[j])
            if n is None:
                continue
            t = np.array([n[1], -n[0]])
            turn = _cw(h, t)
            reach = math.sqrt(max(float((c[j] - c[cur]) @ (c[j] - c[cur])) - (r[cur] - r[j]) ** 2, 0.0))
            if best is None or _better(turn, reach, best[0], best[1]):
                best = (turn, reach, j, n)
        if best is None:
            raise BeltError("every roller circle lies inside one of them; expected at least two rollers on the belt")
        turn, _, j, n = best
        # back on the start roller, the walk ends at the top point unless the hull leaves the roller first (a
        # roller of unequal radius can be on the hull twice)
        if step and cur == start and _cw(h, east) <= turn + _TIE:
            segments.append(Arc(cur, c[cur], r[cur], math.atan2(n_in[1], n_in[0]), _cw(h, east)))
            return Belt(tuple(segments))
        segments.append(Arc(cur, c[cur], r[cur], math.atan2(n_in[1], n_in[0]), turn))
        segments.append(Run(c[cur] + r[cur] * n, c[j] + r[j] * n))
        cur, n_in, h = j, n, np.array([n[1], -n[0]])
    raise BeltError("the belt walk did not return to its start; expected rollers whose circles form a convex hull")


def _root(f: Callable[[float], float], lo: float, hi: float) -> float:
    """f's root in [lo, hi] (a sign change there) to round-off, by Brent's method."""
    from scipy.optimize import brentq  # here: only a band's layout needs it, and scipy is a large import

    return brentq(f, lo, hi, xtol=1e-15, rtol=1e-15)


def _step(belt: Belt, s: float, link: float) -> float:
    """The arc length past s at which the path is `link` away from its point at s, in a straight line.

    A chord is never longer than its arc, so the answer is at least s + link; on a convex path the chord grows
    with the arc until it spans half the perimeter, which bounds the search."""
    p = belt.point(s)
    gap = lambda u: math.dist(belt.point(u), p) - link  # noqa: E731
    lo, hi = s + link, s + belt.perimeter / 2
    if gap(lo) >= 0:  # along a run the chord is the arc: exact up to round-off
        return lo
    if not gap(hi) > 0:
        raise BeltError(f"a link of {link:.6g} m spans more than half the belt; expected more shoes")
    return _root(gap, lo, hi)


def lay_pins(circles: list[tuple[float, float, float]], n: int) -> tuple[list[np.ndarray], float, float]:
    """n pins closing into a polygon of equal sides linkLen = perimeter / n around the belt of `circles`.

    Pins laid at equal arc spacing would be joined by chords shorter than the spacing wherever the belt
    wraps, so links of the spacing's length could not close. Instead the pins step along the belt by chords
    of exactly linkLen, and the belt is inflated by the clearance e (each roller's radius plus e) that makes
    the n-th step land back on the first pin: the pins sit e outside every roller they wrap (δ = −e) and e
    off every run. Returns the pins (x, z), linkLen and e."""
    link = belt_path(circles).perimeter / n

    def overshoot(e: float) -> tuple[float, list[float]]:
        belt = belt_path([(x, z, r + e) for x, z, r in circles])
        s = [0.0]
        for _ in range(n):
            s.append(_step(belt, s[-1], link))
        return s[-1] - belt.perimeter, s

    # at e = 0 every wrap's chords fall short of their arcs, so n links overshoot the start; inflating the belt
    # lengthens it by 2π e and shortens the overshoot, until they meet
    hi = link
    while overshoot(hi)[0] > 0:
        hi *= 2
    e = 0.0 if overshoot(0.0)[0] <= 0 else _root(lambda x: overshoot(x)[0], 0.0, hi)
    belt = belt_path([(x, z, r + e) for x, z, r in circles])
    return [belt.point(u) for u in overshoot(e)[1][:n]], link, e


def _along(v: np.ndarray) -> str:
    return "(" + " ".join(f"{x:+.4f}" for x in v) + ")"


def _frame(kin: Kinematics, body: int) -> tuple[np.ndarray, np.ndarray]:
    return kin.R[body], kin.p[body]


def _belt(model: Model, kin: Kinematics, t: Track) -> tuple[Belt, list[tuple[float, float, float]], float]:
    """The band's belt in its root's xz-plane with the rollers where `kin` puts them, its circles (x, z, r), and
    the plane's y there."""
    def fail(line: int, msg: str) -> NoReturn:
        raise MechError(model.path, line, msg)

    Rr, pr = _frame(kin, t.root)
    seen: dict[int, int] = {}
    centres = []
    for ro in t.rollers:
        name = model.bodies[ro.body].name
        if ro.body in seen:
            fail(ro.line, f"roller '{name}' in track '{t.name}' is listed twice (first at line {seen[ro.body]}); "
                          "expected each roller body once")
        seen[ro.body] = ro.line
        R, p = _frame(kin, ro.body)
        pin = Rr[:, 1]  # the band's pin axis in the base frame: its root's y
        body = model.bodies[ro.body]
        if body.joint == "revolute":
            turns = (kin.R[body.parent] if body.parent != BASE else np.eye(3)) @ body.rot @ body.axis
            if abs(pin @ turns) < 1 - 1e-9:
                fail(ro.line, f"roller '{name}' in track '{t.name}' turns about {_along(turns)} in the base frame at "
                              f"the design pose, not the band's pin axis {_along(pin)} (the y axis of root "
                              f"'{model.bodies[t.root].name}'); expected a roller turning about the pin axis")
        if abs(pin @ R[:, 1]) < 1 - 1e-9:
            fail(ro.line, f"roller '{name}' in track '{t.name}' has its frame's y along {_along(R[:, 1])} in the "
                          f"base frame at the design pose, not the band's pin axis {_along(pin)}; expected its y "
                          "along the pin axis (the band contact reads a roller's pins in its frame's x-z plane: "
                          "turn the frame with rpy or quat)")
        centres.append(Rr.T @ (p - pr))  # the axle at the roller body's origin, in the root frame
    circles = [(float(cx), float(cz), ro.radius) for (cx, _, cz), ro in zip(centres, t.rollers)]
    try:
        belt = belt_path(circles)
    except BeltError as e:
        fail(t.line, f"track '{t.name}': {e}")
    return belt, circles, float(np.mean([cy for _, cy, _ in centres]))  # the plane through the rollers' mean y


def band_belt(model: Model, t: Track, q: np.ndarray | None = None) -> Belt:
    """Track t's belt path in its root's xz-plane, the rollers at q (the design pose by default); roller i of
    the track is circle i of the path."""
    return _belt(model, forward_kinematics(model, model.q0() if q is None else q), t)[0]


def pin_clearance(model: Model, t: Track) -> float:
    """The clearance e of an expanded band's design pose: how far its pins sit outside the rollers they wrap."""
    return lay_pins(_belt(model, forward_kinematics(model, model.q0()), t)[1], t.shoes)[2]


def expand_tracks(model: Model, q: np.ndarray) -> tuple[Model, np.ndarray]:
    """The model with every track band expanded into shoe bodies and a closure loop, and q (the written bodies'
    design pose) extended by each band's design pose. Rollers are located by the kinematics at q."""
    if not model.tracks:
        return model, q
    kin = forward_kinematics(model, q)
    bodies, loops, tracks, qs = list(model.bodies), list(model.loops), [], [np.asarray(q, dtype=float)]
    declared = {b.name: b.line for b in model.bodies}
    for t in model.tracks:
        band, qband, expanded = _expand(model, kin, t, len(bodies), declared)
        bodies += band
        loops.append(expanded[1])
        tracks.append(expanded[0])
        qs.append(qband)
    return replace(model, bodies=tuple(bodies), loops=tuple(loops), tracks=tuple(tracks)), np.concatenate(qs)


def _expand(model: Model, kin: Kinematics, t: Track, first: int,
            declared: dict[str, int]) -> tuple[list[Body], np.ndarray, tuple[Track, Loop]]:
    def fail(line: int, msg: str) -> NoReturn:
        raise MechError(model.path, line, msg)

    Rr, pr = _frame(kin, t.root)
    belt, circles, y = _belt(model, kin, t)
    n = t.shoes
    perimeter = belt.perimeter
    try:
        pins, ds, _ = lay_pins(circles, n)
    except BeltError as e:
        fail(t.line, f"track '{t.name}' with {n} shoes: {e}")
    chords = [pins[(k + 1) % n] - pins[k] for k in range(n)]
    theta = np.array([math.atan2(-cz, cx) for cx, cz in chords])  # roty(θ) turns x onto (cos θ, −sin θ)
    width = max(2, len(str(n - 1)))
    names = [f"{t.name}.s{k:0{width}d}" for k in range(n)]
    for nm in names:
        if nm in declared:
            fail(t.line, f"track '{t.name}' expands into a shoe named '{nm}', but a body of that name is declared "
                         f"at line {declared[nm]}; expected shoe names {names[0]}..{names[-1]} to be free")
    loop_lines = {lp.name: lp.line for lp in model.loops}
    if f"{t.name}.closure" in loop_lines:
        fail(t.line, f"track '{t.name}' expands into a loop named '{t.name}.closure', but a loop of that name is "
                     f"declared at line {loop_lines[t.name + '.closure']}; expected the name to be free")
    # a shoe's z points into the band, toward the rollers (its pad is at −z, its running face at +z): the chord
    # frame turned half round its x, so its y is the root's −y and each pin's turn is −Δθ
    anchor_R = Rr @ roty(theta[0]) @ FLIP
    anchor_p = pr + Rr @ np.array([pins[0][0], y, pins[0][1]])
    shoe = dict(mass=t.mass, cg=t.cg, inertia=t.inertia, fext=t.fext, line=t.line)
    link = _frozen([ds, 0.0, 0.0])
    bodies = [Body(name=names[0], parent=BASE, joint="floating", axis=_frozen(np.zeros(3)), xtree=_frozen(anchor_p),
                   **shoe)]
    bodies += [Body(name=names[k], parent=first + k - 1, joint="revolute", axis=_frozen([0.0, 1.0, 0.0]), xtree=link,
                    **shoe)
               for k in range(1, n)]
    turns = -((np.diff(theta) + math.pi) % (2 * math.pi) - math.pi)  # each pin's turn, in (−π, π]
    qband = np.concatenate([R_to_quat(anchor_R), anchor_p, turns])
    closure = Loop(name=f"{t.name}.closure", joint="point-on-line", pred=first, succ=first + n - 1,
                   anchor_pred=_frozen(np.zeros(3)), anchor_succ=link, axis=_frozen([0.0, 1.0, 0.0]), length=None,
                   line=t.line)
    _warn(model, t, ds)
    return bodies, qband, (replace(t, first_shoe=first, link_len=ds, perimeter=perimeter), closure)


def _warn(model: Model, t: Track, link: float) -> None:
    """The three load warnings of docs/mech-format.md ("Track bands"), each at the line it concerns."""
    def warn(line: int, msg: str) -> None:
        warnings.warn_explicit(capped(f"track '{t.name}': {msg}"), MechWarning, model.path, line)

    for ro in t.rollers:
        name = model.bodies[ro.body].name
        if ro.end and ro.radius < END_PITCH_RATIO * link:
            warn(ro.line, f"end roller '{name}' has diameter {2 * ro.radius:.6g} m against linkLen {link:.6g} m "
                          f"(declared pitch {t.pitch:g} m); below twice the pitch too few pins share its wrap, and "
                          "at a pitch of one diameter a pin passes between two pins and can never carry load")
        if ro.drive and ro.teeth:
            tooth = 2 * math.pi * ro.radius / ro.teeth
            if abs(tooth - link) > PITCH_TOLERANCE * link:
                warn(ro.line, f"drive sprocket '{name}' has tooth pitch 2 pi R/teeth = {tooth:.6g} m, "
                              f"{100 * (tooth / link - 1):+.1f}% off linkLen {link:.6g} m "
                              f"(more than {100 * PITCH_TOLERANCE:g}%)")
    if abs(link - t.pitch) > PITCH_TOLERANCE * t.pitch:
        warn(t.pitch_line or t.line, f"perimeter / shoes = linkLen {link:.6g} m is {100 * (link / t.pitch - 1):+.1f}% "
                                     f"off the declared pitch {t.pitch:g} m (more than {100 * PITCH_TOLERANCE:g}%): "
                                     "the shoe count and the roller layout disagree about the track's length")
