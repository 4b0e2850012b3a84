"""Driver motions (docs/mech-format.md, `driver`): a joint coordinate's offset from the design pose as f(t).

Every motion is written in its own time s = t − start and is at rest, f = ḟ = f̈ = 0, before its start. With a
blend time T > 0 it enters as w(s/T) f(s) over [0, T], where

    w(τ) = τ⁴ (35 − 84 τ + 70 τ² − 20 τ³)

is the degree-7 polynomial with w(0) = 0, w(1) = 1 and its first three derivatives zero at both ends, so value,
rate and acceleration (and the jerk) are continuous at both ends of the blend (seed 001, theory 5.2). Without a
blend a motion must itself start from rest in value and rate, or the driver would jump.

The kinds, each f(s):

    constant v                 v
    ramp r                     r s
    sine A f φ                 A sin(2π f s + φ)
    sweep A f0 f1 D [linear]   A sin(2π (f0 s + (f1 − f0) s² / 2D)), at f1 past D (the phase and rate continuous;
                               the acceleration steps there by A θ̈ cos θ as the frequency stops rising)
    sweep A f0 f1 D log        A sin(2π f0 D (k^(s/D) − 1) / ln k), k = f1/f0, at f1 past D (likewise)
    table (s_i, v_i)           the quintic spline through the samples with zero rate and acceleration at both
                               ends, held at its end values outside them (continuous in value, rate and
                               acceleration everywhere)

`evaluate` is the NumPy evaluation, `pack` the flat array the C steppers evaluate (mechdyn/sim/motion.c), which
is the same formulas written once more in C: tests/core/test_motion.py compares the two.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

KINDS = ("constant", "ramp", "sine", "sweep", "table")
CODES = {"constant": 0, "ramp": 1, "sine": 2, "sweep": 3, "sweep_log": 4, "table": 5}
HEADER = 8  # doubles before a table's breakpoints in pack(): code, start, blend, five parameters
START_TOL = 1e-12  # |f(0)| and |ḟ(0)| below this (scaled by the motion's amplitude) count as at rest


class MotionError(ValueError):
    """A motion that cannot be driven: its parameters, or a jump at its start without a blend."""


@dataclass(frozen=True)
class Motion:
    """One driver's schedule: `kind` with `params` (the module docstring), from `start`, blended over `blend`.
    A table keeps its quintic pieces: `breaks` (the sample times) and `coef` (6 × pieces, highest power first,
    in s − breaks[i])."""
    kind: str
    params: tuple[float, ...] = ()
    start: float = 0.0
    blend: float = 0.0
    log: bool = False  # a sweep's frequency rises geometrically
    breaks: np.ndarray | None = field(default=None, compare=False)
    coef: np.ndarray | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        check(self)

    def describe(self) -> str:
        """The motion as the format writes it, e.g. "sine 0.02 1.5 0, start 1, blend 0.5"."""
        what = (f"table of {len(self.breaks)} samples" if self.kind == "table" else
                " ".join([self.kind, *(f"{p:g}" for p in self.params)] + (["log"] if self.log else [])))
        return what + (f", start {self.start:g}" if self.start else "") + (f", blend {self.blend:g}" if self.blend
                                                                            else "")


def constant(value: float, **kw) -> Motion:
    return Motion("constant", (float(value),), **kw)


def ramp(rate: float, **kw) -> Motion:
    return Motion("ramp", (float(rate),), **kw)


def sine(amplitude: float, frequency: float, phase: float = 0.0, **kw) -> Motion:
    return Motion("sine", (float(amplitude), float(frequency), float(phase)), **kw)


def sweep(amplitude: float, f0: float, f1: float, duration: float, log: bool = False, **kw) -> Motion:
    return Motion("sweep", (float(amplitude), float(f0), float(f1), float(duration)), log=log, **kw)


def table(s, values, **kw) -> Motion:
    """The quintic spline through (s_i, v_i), s strictly increasing and every number finite (MotionError)."""
    from scipy.interpolate import PPoly, make_interp_spline

    s, v = np.asarray(s, dtype=float), np.asarray(values, dtype=float)
    if s.ndim != 1 or s.shape != v.shape or len(s) < 2:
        raise MotionError(f"a table needs two equally long columns of at least 2 samples; got {s.shape} and "
                          f"{v.shape}")
    if not (np.isfinite(s).all() and np.isfinite(v).all()):
        raise MotionError(f"a table's sample {int(np.argmin(np.isfinite(s) & np.isfinite(v))) + 1} is not finite")
    if (bad := np.flatnonzero(np.diff(s) <= 0)).size:
        raise MotionError(f"a table's times must increase strictly: sample {bad[0] + 2} (t = {s[bad[0] + 1]:g}) "
                          f"does not come after sample {bad[0] + 1} (t = {s[bad[0]]:g})")
    rest = [(1, 0.0), (2, 0.0)]
    pp = PPoly.from_spline(make_interp_spline(s, v, k=5, bc_type=(rest, rest)))
    keep = np.diff(pp.x) > 0  # from_spline repeats the end knots: zero-width pieces
    return Motion("table", (), breaks=s, coef=pp.c[:, keep], **kw)


def check(m: Motion) -> None:
    """MotionError unless `m` can be driven: its kind and parameters, and a start from rest unless blended."""
    if m.kind not in KINDS:
        raise MotionError(f"unknown motion '{m.kind}'; expected one of {', '.join(KINDS)}")
    if not (math.isfinite(m.start) and math.isfinite(m.blend)) or m.start < 0:
        raise MotionError(f"start {m.start:g} and blend {m.blend:g} must be finite, the start not negative")
    if m.blend < 0:
        raise MotionError(f"blend {m.blend:g}: expected a blend time > 0, or none")
    want = {"constant": 1, "ramp": 1, "sine": 3, "sweep": 4, "table": 0}[m.kind]
    if len(m.params) != want or not all(math.isfinite(p) for p in m.params):
        raise MotionError(f"{m.kind} takes {want} finite parameters; got {m.params}")
    if m.kind == "sine" and m.params[1] < 0:
        raise MotionError(f"sine frequency {m.params[1]:g} Hz; expected it ≥ 0")
    if m.kind == "sweep":
        _, f0, f1, d = m.params
        if not (f0 > 0 and f1 > 0 and d > 0):
            raise MotionError(f"sweep from {f0:g} to {f1:g} Hz over {d:g} s; expected both frequencies and the "
                              "duration > 0")
        if m.log and f0 == f1:
            raise MotionError("a log sweep needs f1 ≠ f0; for one frequency use sine")
    if m.kind == "table":  # motion.c reads n pieces off the packed array: their shapes must agree
        b, c = m.breaks, m.coef
        if (b is None or c is None or b.ndim != 1 or len(b) < 2 or c.shape != (6, len(b) - 1)
                or not (np.isfinite(b).all() and np.isfinite(c).all()) or not (np.diff(b) > 0).all()):
            raise MotionError("a table motion is made by motion.table(s, values)")
    if m.blend == 0:
        f = raw(m, np.zeros(1))
        scale = max(1.0, amplitude(m))
        if abs(f[0][0]) > START_TOL * scale or abs(f[1][0]) > START_TOL * scale:
            raise MotionError(f"{m.describe()} starts with a jump (f(0) = {f[0][0]:g}, f'(0) = {f[1][0]:g}); "
                              "expected a motion at rest at its start, or a 'blend' time")


def amplitude(m: Motion) -> float:
    """A scale of the motion's values, for tolerances."""
    if m.kind == "table":
        return float(np.abs(m.coef[-1]).max())
    return abs(m.params[0])


def reach(m: Motion) -> tuple[float, ...]:
    """The extremes of the motion's offset that a reach check tries: its range over the whole schedule (a sine
    or sweep: ±A; a table: its spline sampled finely; a ramp has none, it grows without bound)."""
    if m.kind == "constant":
        return (m.params[0],)
    if m.kind in ("sine", "sweep"):
        return (-abs(m.params[0]), abs(m.params[0]))
    if m.kind == "table":
        f = _table(m, np.linspace(m.breaks[0], m.breaks[-1], 64 * len(m.breaks)))[0]
        return (float(f.min()), float(f.max()))
    return ()


def raw(m: Motion, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """f, ḟ, f̈ of the motion itself (no start, no blend) at local times s ≥ 0."""
    z = np.zeros_like(s)
    if m.kind == "constant":
        return z + m.params[0], z, z
    if m.kind == "ramp":
        return m.params[0] * s, z + m.params[0], z
    if m.kind == "table":
        return _table(m, s)
    if m.kind == "sine":
        a, f, phi = m.params
        th, thd, thdd = 2 * math.pi * f * s + phi, z + 2 * math.pi * f, z
    else:
        a, f0, f1, d = m.params
        th, thd, thdd = sweep_phase(f0, f1, d, m.log, s)
    sn, cs = np.sin(th), np.cos(th)
    return a * sn, a * cs * thd, a * (cs * thdd - sn * thd * thd)


def sweep_phase(f0: float, f1: float, d: float, log: bool, s: np.ndarray) -> tuple[np.ndarray, ...]:
    """The sweep's phase θ and its first two derivatives: the chirp over [0, d], then f1 with θ continuous."""
    u = np.minimum(s, d)
    if log:
        k = f1 / f0
        g = np.exp(np.log(k) * u / d)
        th, thd, thdd = 2 * math.pi * f0 * d * (g - 1) / math.log(k), 2 * math.pi * f0 * g, \
            2 * math.pi * f0 * g * math.log(k) / d
    else:
        th, thd, thdd = 2 * math.pi * (f0 * u + (f1 - f0) * u * u / (2 * d)), 2 * math.pi * (f0 + (f1 - f0) * u / d), \
            np.full_like(u, 2 * math.pi * (f1 - f0) / d)
    past = s > d
    th = np.where(past, th + 2 * math.pi * f1 * (s - d), th)
    return th, np.where(past, 2 * math.pi * f1, thd), np.where(past, 0.0, thdd)


def _table(m: Motion, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The quintic pieces at s, each end value held outside the samples (rate and acceleration zero there)."""
    x = m.breaks
    sc = np.clip(s, x[0], x[-1])
    i = np.clip(np.searchsorted(x, sc, side="right") - 1, 0, len(x) - 2)
    h = sc - x[i]
    c = m.coef[:, i]  # highest power first
    f = fd = fdd = np.zeros_like(sc)
    n = c.shape[0] - 1
    for k in range(n + 1):  # Horner on the value and its two derivatives together
        fdd = fdd * h + 2 * fd
        fd = fd * h + f
        f = f * h + c[k]
    return f, fd, fdd


def blend_weight(tau: np.ndarray) -> tuple[np.ndarray, ...]:
    """w(τ) and its first three derivatives in τ, w held at 0 before 0 and at 1 past 1."""
    t = np.clip(tau, 0.0, 1.0)
    w = t ** 4 * (35 - 84 * t + 70 * t * t - 20 * t ** 3)
    w1 = 140 * t ** 3 * (1 - t) ** 3
    w2 = 420 * t * t * (1 - t) ** 2 * (1 - 2 * t)
    w3 = 840 * t * (1 - t) * (1 - 5 * t + 5 * t * t)
    return w, w1, w2, w3


def _blend_peaks() -> tuple[float, float, float]:
    """max |w'|, |w''|, |w'''| on [0, 1], in closed form: w' peaks at τ = ½ (140/64); w'' where w''' = 0,
    τ = (5 − √5)/10; w''' where w'''' = 840 (1 − 12τ + 30τ² − 20τ³) = 0, τ = ½ and ½ ± √15/10."""
    t2 = (5 - math.sqrt(5)) / 10
    w1 = 140 / 64
    w2 = 420 * t2 * t2 * (1 - t2) ** 2 * (1 - 2 * t2)
    roots = np.roots([-20.0, 30.0, -12.0, 1.0])
    crit = [r.real for r in roots if abs(r.imag) < 1e-12 and 0 <= r.real <= 1]
    w3 = max(abs(840 * t * (1 - t) * (1 - 5 * t + 5 * t * t)) for t in crit)
    return w1, w2, w3


BLEND_PEAKS = _blend_peaks()


def evaluate(m: Motion, t) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The driver's offset from the design pose and its rate and acceleration at times t (array or scalar)."""
    t = np.asarray(t, dtype=float)
    s = t - m.start
    on = s >= 0
    f, fd, fdd = raw(m, np.where(on, s, 0.0))
    if m.blend > 0:
        T = m.blend
        w, w1, w2, _ = blend_weight(s / T)
        f, fd, fdd = w * f, w1 / T * f + w * fd, w2 / (T * T) * f + 2 * w1 / T * fd + w * fdd
    return tuple(np.where(on, x, 0.0) for x in (f, fd, fdd))


def pack(m: Motion) -> np.ndarray:
    """The motion as motion.c reads it: code, start, blend, five parameters (zeros past the kind's own), then for
    a table the piece count n, its n + 1 breakpoints and 6 n coefficients (piece by piece, highest power first)."""
    code = CODES["sweep_log" if m.kind == "sweep" and m.log else m.kind]
    head = np.zeros(HEADER)
    head[:3] = code, m.start, m.blend
    head[3:3 + len(m.params)] = m.params
    if m.kind != "table":
        return head
    n = m.coef.shape[1]
    return np.concatenate([head, [n], m.breaks, m.coef.T.ravel()])
