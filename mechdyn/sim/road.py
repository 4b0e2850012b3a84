"""Input signals for a four-post shaker rig, as plain NumPy arrays (docs/simulation.md, "Rig inputs").

    iso8608_profile          a random road of an ISO 8608 class, elevation against distance
    road_posts               that road under the four wheels of a vehicle driving over it at a constant speed
    bump_posts               a half-cosine bump under the four wheels
    read_chrono_rig_inputs   Project Chrono's suspension-test-rig data file, with Chrono's interpolation

Positions x are in m, spatial frequencies n in cycles/m, times in s, elevations and post displacements in m
(positive up). The drivers that make a rig follow these signals are not built here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.fft import irfft, next_fast_len
from scipy.interpolate import PPoly
from scipy.linalg import solve_banded

N0 = 0.1  # cycles/m: the reference spatial frequency of ISO 8608's displacement PSD
# ISO 8608:2016, Table (displacement PSD, waviness w = 2): the geometric mean of each class's Gd(n0) in m³,
# 16e-6 for class A and four times the class before for each next class, Gd(n0) = 4^k × 16e-6 with k = 0..7.
GD_N0 = {c: 4.0**k * 16e-6 for k, c in enumerate("ABCDEFGH")}


def iso8608_profile(road_class: str, length: float, dx: float, seed: int, n_min: float = 0.011,
                    n_max: float = 2.83) -> tuple[np.ndarray, np.ndarray]:
    """A random road of ISO 8608 class A..H (any case): positions x = 0, dx, ... up to at least `length`, and the
    elevations z(x) about their mean.

    z is the sum of cosines z(x) = Σ_k sqrt(2 Gd(n_k) Δn) cos(2π n_k x + φ_k) over the spatial frequencies
    n_k = k Δn in [n_min, n_max] (ISO 8608's band is 0.011 to 2.83 cycles/m), with phases φ_k drawn uniformly in
    [0, 2π) by numpy's Generator from `seed`, so the same seed gives the same road. Δn = 1/P, where the period P
    is longer than the road and at least 1/n_min, so the road does not repeat and the band's lowest frequencies
    are present however short the road is; the sum is evaluated by an inverse real FFT. dx must be below
    1/(2 n_max) for the grid to carry the band's highest frequency.
    """
    spectrum, _, nfft, npts = _road_spectrum(road_class, length, dx, seed, n_min, n_max)
    z = irfft(spectrum, nfft)[:npts]
    return dx * np.arange(npts), z - z.mean()


@dataclass(frozen=True)
class RoadInput:
    """The four posts' displacements (m, positive up) at times t (s); unpacks as (t, fl, fr, rl, rr)."""

    t: np.ndarray
    front_left: np.ndarray
    front_right: np.ndarray
    rear_left: np.ndarray
    rear_right: np.ndarray

    def __post_init__(self) -> None:
        # frozen all the way down: one array may stand for several posts (both sides on one road, a flat side)
        for a in (self.t, self.front_left, self.front_right, self.rear_left, self.rear_right):
            a.flags.writeable = False

    def __iter__(self):
        return iter((self.t, self.front_left, self.front_right, self.rear_left, self.rear_right))


def road_posts(road_class: str, speed: float, duration: float, wheelbase: float, track_seed: int, dt: float,
               lanes: int = 2) -> RoadInput:
    """The posts under a vehicle driving at `speed` over an ISO 8608 road, sampled every dt from 0 to duration.

    The rear axle is at x = speed·t and the front axle a wheelbase ahead, so each rear post repeats its side's
    front post wheelbase/speed later. Each side's road is iso8608_profile(road_class, speed·t_end + wheelbase,
    speed·dt, seed) with the seed derived from track_seed (numpy SeedSequence.spawn): the rear posts are its
    samples, the front posts the same sum of cosines evaluated exactly a wheelbase further on (its phases
    advanced by 2π n_k·wheelbase), both about the mean of the road driven over. With lanes=2 the left and right
    roads are independent; with lanes=1 both sides run on the left road (heave and pitch only, no roll).
    """
    _require(("speed", speed, speed > 0, "> 0 m/s"), ("duration", duration, duration > 0, "> 0 s"),
             ("wheelbase", wheelbase, wheelbase >= 0, ">= 0 m"), ("dt", dt, dt > 0, "> 0 s"))
    if lanes not in (1, 2):
        raise ValueError(f"lanes {lanes} is not allowed: expected 1 (one road under both sides) or 2 (independent)")
    npost = _count(duration, dt)
    dx = speed * dt
    span = dx * (npost - 1) + wheelbase
    seeds = [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(track_seed).spawn(2)]
    sides = []
    for seed in seeds[:lanes]:
        spectrum, n, nfft, npts = _road_spectrum(road_class, span, dx, seed)
        road = irfft(spectrum, nfft)[:npts]
        ahead = irfft(spectrum * np.exp(2j * np.pi * n * wheelbase), nfft)[:npost]
        mean = road.mean()
        sides.append((ahead - mean, road[:npost] - mean))
    (fl, rl), (fr, rr) = sides[0], sides[-1]
    return RoadInput(dt * np.arange(npost), fl, fr, rl, rr)


def bump_posts(height: float, length: float, speed: float, t_start: float, duration: float, wheelbase: float,
               dt: float, sides: tuple[str, ...] = ("left", "right")) -> RoadInput:
    """The posts driving over a bump z(s) = height (1 − cos(2π s/length))/2, 0 <= s <= length, at `speed`,
    sampled every dt from 0 to duration.

    The front posts of the given sides meet the bump at t_start and leave it length/speed later; the rear posts
    follow wheelbase/speed later. Posts on a side not in `sides` stay at 0.
    """
    _require(("height", height, True, "in m"), ("length", length, length > 0, "> 0 m"),
             ("speed", speed, speed > 0, "> 0 m/s"), ("t_start", t_start, t_start >= 0, ">= 0 s"),
             ("duration", duration, duration > 0, "> 0 s"), ("wheelbase", wheelbase, wheelbase >= 0, ">= 0 m"),
             ("dt", dt, dt > 0, "> 0 s"))
    if not sides or not set(sides) <= {"left", "right"}:
        raise ValueError(f"sides {sides!r} is not allowed: expected one or both of 'left', 'right'")
    t = dt * np.arange(_count(duration, dt))

    def bump(t_hit: float) -> np.ndarray:
        s = speed * (t - t_hit)
        return np.where((s >= 0) & (s <= length), 0.5 * height * (1 - np.cos(2 * np.pi * s / length)), 0.0)

    front, rear, flat = bump(t_start), bump(t_start + wheelbase / speed), np.zeros_like(t)
    left, right = "left" in sides, "right" in sides
    return RoadInput(t, front if left else flat, front if right else flat, rear if left else flat,
                     rear if right else flat)


@dataclass(frozen=True)
class RigInputs:
    """A Chrono suspension-test-rig data file: its rows' times (s), steering, and left and right post inputs
    (shape (naxles, rows)), all as written (normalized, nominally in [-1, 1])."""

    path: Path
    time: np.ndarray
    steering: np.ndarray
    left: np.ndarray
    right: np.ndarray

    @property
    def naxles(self) -> int:
        return self.left.shape[0]

    def evaluate(self, t: np.ndarray | float, displacement_limit: float, delay: float = 0.0,
                 rate: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What Chrono's rig takes from this file at times t: the steering input, and the left and right post
        displacements (m, positive up, shape (naxles, len(t))) = displacement_limit × the interpolated input;
        with rate=True their time derivatives instead.

        As ChSuspensionTestRigDataDriver::Synchronize (ChSuspensionTestRigDataDriver.cpp:134-164): all zero
        (rates too) before `delay`; then at s = t − delay the cubic spline through the rows, with an extra knot
        of zeros one second before the first row (:99-104), evaluated as ChCubicSpline does (its first cubic
        continued below that knot); after the last row the last row's values, with zero rates (:148-156).
        Nothing is clamped: the data driver writes the spline's values directly (:159-162), not through the
        clamping setters (ChSuspensionTestRigDriver.cpp:46-56), so the spline's overshoot reaches the posts.
        The rig scales the posts by its "Displacement Limit" (ChSuspensionTestRig.cpp:353-356) and passes the
        steering on unscaled (:365), for the steering mechanism to turn into an angle (the Pitman arm: its
        maximum angle × steering, ChPitmanArm.cpp:178-181). It sets delay to 0.5 s when the rig JSON has an
        "Initial Ride Height", else 0 (ChSuspensionTestRig.cpp:267-273, 285), and adds the ride-height offset it
        ramps to meanwhile (:335-340, 353-354), which depends on the vehicle and is not included here. The rig
        reads the driver before synchronizing it (:347-351, 369), so its actuators run one step behind these
        values.
        """
        s = np.atleast_1d(np.asarray(t, dtype=float)) - delay
        rows = np.vstack([self.steering, self.left, self.right])
        spline = _chrono_spline(np.concatenate([[self.time[0] - 1], self.time]), np.pad(rows, ((0, 0), (1, 0))))
        inside = spline(s, nu=int(rate))
        held = np.broadcast_to(0.0 if rate else rows[:, -1], inside.shape)
        values = np.where((s < 0)[:, None], 0.0, np.where((s > self.time[-1])[:, None], held, inside))
        steering, posts = values[:, 0], displacement_limit * values[:, 1:].T
        return steering, posts[:self.naxles], posts[self.naxles:]


def read_chrono_rig_inputs(path: str | Path) -> RigInputs:
    """Project Chrono's suspension-test-rig driver file (ChSuspensionTestRigDataDriver): one row per time,
    `time steering left_0 right_0 [left_1 right_1 ...]`, the number of axles taken from the first row.

    Chrono reads the columns in this order (ChSuspensionTestRigDataDriver.cpp:76-87; the comment at the top of
    that file, :15-17, lists them otherwise). Chrono takes the axle count from the rig and ignores further
    columns (the one-axle HMMWV rigs read only the first pair of ST_inputs.dat's two), stops at the first line it
    cannot read (:84-85) and sorts the rows (:91). This reader refuses instead what Chrono would drop or reorder
    silently: a row whose count differs from the first row's, a value that is not a finite number, times that
    do not increase strictly (Chrono assumes unique times: equal ones would divide by zero in its spline).
    """
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file: expected Chrono's suspension test rig data file") from None
    lines = text.splitlines()
    while lines and not lines[-1].strip():  # trailing blank lines: Chrono stops at the first, after the data
        lines.pop()
    if not lines:
        raise ValueError(f"{path}: no rows: expected rows of time, steering, and left and right post per axle")
    rows: list[list[float]] = []
    ncol = len(lines[0].split())
    if ncol < 4 or ncol % 2:
        raise ValueError(f"{path}:1: expected time, steering and a left and right post per axle (4, 6, ... "
                         f"numbers), got {ncol}")
    naxles = (ncol - 2) // 2
    for lineno, line in enumerate(lines, 1):
        words = line.split()
        if len(words) != ncol:
            raise ValueError(f"{path}:{lineno}: expected {ncol} numbers (time, steering, left and right post for "
                             f"{naxles} axle{'s' if naxles > 1 else ''}), got {len(words)}")
        try:
            row = [float(w) for w in words]
        except ValueError:
            raise ValueError(f"{path}:{lineno}: expected {ncol} numbers, got {line.strip()!r}") from None
        if not all(map(math.isfinite, row)):
            raise ValueError(f"{path}:{lineno}: expected finite numbers, got {line.strip()!r}")
        if rows and row[0] <= rows[-1][0]:
            raise ValueError(f"{path}:{lineno}: time {row[0]:g} is not after the previous row's {rows[-1][0]:g}: "
                             "expected strictly increasing times")
        rows.append(row)
    data = np.array(rows)
    return RigInputs(path, data[:, 0], data[:, 1], data[:, 2::2].T.copy(), data[:, 3::2].T.copy())


def _road_spectrum(road_class: str, span: float, dx: float, seed: int, n_min: float = 0.011,
                   n_max: float = 2.83) -> tuple[np.ndarray, np.ndarray, int, int]:
    """The half spectrum X of iso8608_profile's road, its spatial frequencies n, the period N in samples, and the
    number of samples that cover [0, span]: irfft(X, N)[j] is the sum of cosines at x = j dx."""
    gd0 = GD_N0[_road_class(road_class)]
    _require(("length", span, span > 0, "> 0 m"), ("dx", dx, dx > 0, "> 0 m"),
             ("n_min", n_min, n_min > 0, "> 0 cycles/m"),
             ("n_max", n_max, n_max > n_min, f"> n_min = {n_min:g} cycles/m"))
    if dx >= 0.5 / n_max:
        raise ValueError(f"a road sampled every {dx:g} m cannot carry n_max = {n_max:g} cycles/m: expected a step "
                         f"below 1/(2 n_max) = {0.5 / n_max:.4g} m")
    npts = _count(span, dx, up=True)
    # one period longer than the road (it must not repeat) and than 1/n_min (Δn <= n_min)
    nfft = next_fast_len(max(npts + 1, math.ceil(1 / (n_min * dx))), real=True)
    n = np.arange(nfft // 2 + 1) / (nfft * dx)
    band = (n >= n_min) & (n <= n_max)
    phase = np.random.default_rng(seed).uniform(0, 2 * np.pi, band.sum())
    spectrum = np.zeros(n.size, complex)
    # irfft(X, N)[j] = Σ_k (2/N) Re(X_k e^{2πi kj/N}) for 0 < k < N/2: X_k = (N/2) A_k e^{iφ_k} gives A_k cos(...)
    spectrum[band] = 0.5 * nfft * np.sqrt(2 * gd0 * (n[band] / N0) ** -2 / (nfft * dx)) * np.exp(1j * phase)
    return spectrum, n, nfft, npts


def _require(*checks: tuple[str, float, bool, str]) -> None:
    """The error for the first (name, value, ok, expected) whose value is not finite or not ok."""
    for name, value, ok, expected in checks:
        if not (math.isfinite(value) and ok):
            raise ValueError(f"{name} {value} is not allowed: expected a finite {name} {expected}")


def _road_class(road_class: str) -> str:
    """The class letter in upper case, or the error naming the classes."""
    c = road_class.upper() if isinstance(road_class, str) else road_class
    if c not in GD_N0:
        raise ValueError(f"road class {road_class!r} does not exist: expected one of A..H")
    return c


def _count(span: float, step: float, up: bool = False) -> int:
    """How many samples 0, step, 2 step, ... reach span: the last at or below it, or with up at or beyond it
    (span/step a whole number within rounding counts as whole)."""
    steps = span / step
    whole = round(steps)
    if abs(steps - whole) <= 1e-9 * max(1.0, steps):
        return whole + 1
    return math.ceil(steps) + 1 if up else math.floor(steps) + 1


def _chrono_spline(t: np.ndarray, y: np.ndarray) -> PPoly:
    """ChCubicSpline with its default end conditions (ChCubicSpline.cpp:57-156) through y[i] (one row per curve)
    at knots t: the second derivative is constant over the first and over the last interval (ypp_0 = ypp_1,
    ypp_{n-2} = ypp_{n-1}); with two knots it is the straight line. Continued beyond the knots by its end
    cubics, as ChCubicSpline::Evaluate's bracketing does."""
    h, dy = np.diff(t), np.diff(y, axis=1)
    ypp = np.zeros_like(y)
    if t.size > 2:
        ab = np.zeros((3, t.size))  # solve_banded's rows: super-, main and sub-diagonal
        ab[1, 0], ab[0, 1], ab[2, -2], ab[1, -1] = 1, -1, -1, 1
        ab[0, 2:], ab[1, 1:-1], ab[2, :-2] = h[1:] / 6, (h[:-1] + h[1:]) / 3, h[:-1] / 6
        rhs = np.zeros_like(y)
        rhs[:, 1:-1] = np.diff(dy / h, axis=1)
        ypp = solve_banded((1, 1), ab, rhs.T).T
    # per interval, in powers of (t - t_i): the cubic with these end values and second derivatives
    c = np.stack([np.diff(ypp, axis=1) / (6 * h), ypp[:, :-1] / 2, dy / h - h * (2 * ypp[:, :-1] + ypp[:, 1:]) / 6,
                  y[:, :-1]])
    return PPoly(c.transpose(0, 2, 1), t, extrapolate=True)
