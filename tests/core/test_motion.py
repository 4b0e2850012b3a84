"""Driver motions: the NumPy evaluation against the C one (motion.c), against differences of itself and against
closed forms; the degree-7 blend's continuity and jerk bound; and the motions a driver refuses."""
from __future__ import annotations

import math

import numpy as np
import pytest

from mechdyn.core import motion as M
from mechdyn.sim import native


def c_eval(m: M.Motion, t: np.ndarray) -> np.ndarray:
    """(len(t), 3): motion.c's f, f', f'' at each t."""
    mod = native.module()
    ffi, lib = mod.ffi, mod.lib
    packed = np.ascontiguousarray(M.pack(m))
    out = np.zeros(3)
    rows = []
    for x in t:
        lib.md_motion_eval(ffi.from_buffer("double[]", packed), float(x), ffi.from_buffer("double[]", out))
        rows.append(out.copy())
    return np.array(rows)


MOTIONS = {
    "constant": M.constant(0.03, start=0.2, blend=0.5),
    "ramp": M.ramp(0.1, blend=0.3),
    "sine": M.sine(0.02, 1.5, 0.4, start=0.1, blend=0.5),
    "sweep": M.sweep(0.01, 0.5, 20.0, 4.0, blend=0.5),
    "log sweep": M.sweep(0.01, 0.5, 20.0, 4.0, log=True, blend=0.5),
    "table": M.table([0.0, 0.4, 1.0, 1.3, 2.0], [0.0, 0.02, -0.01, 0.015, 0.0], start=0.25),
    "table blended": M.table([0.0, 0.5, 1.0], [0.01, 0.02, -0.01], blend=0.4),
}
T = np.linspace(-0.5, 5.0, 2201)


@pytest.mark.parametrize("name", MOTIONS)
def test_c_equals_numpy(name):
    """motion.c and motion.py, the same formulas written twice, agree to round-off at every time."""
    m = MOTIONS[name]
    py = np.stack(M.evaluate(m, T), axis=1)
    c = c_eval(m, T)
    scale = np.abs(py).max(axis=0) + 1e-300
    err = float((np.abs(py - c) / scale).max())
    print(f"\n{name}: C vs NumPy, max scaled difference {err:.2e}")
    assert err < 1e-12


@pytest.mark.parametrize("name", MOTIONS)
def test_rate_and_acceleration_are_the_derivatives(name):
    """ḟ and f̈ equal central differences of f and ḟ (h = 1e-5 s, error O(h²)), away from the kinks a difference
    cannot straddle: a sweep's acceleration jumps at its end (θ'' drops to 0), a table's jerk at its ends."""
    m, h = MOTIONS[name], 1e-5
    kinks = ([m.start + m.params[3]] if m.kind == "sweep" else
             [m.start + m.breaks[0], m.start + m.breaks[-1]] if m.kind == "table" else [])
    t = T[(T > 0.01) & (T < 4.9)]
    t = t[np.all([np.abs(t - k) > 3 * h for k in kinks], axis=0)] if kinks else t
    f = lambda x: np.stack(M.evaluate(m, x))  # noqa: E731
    d1 = (f(t + h)[0] - f(t - h)[0]) / (2 * h)
    d2 = (f(t + h)[1] - f(t - h)[1]) / (2 * h)
    got = f(t)
    e1 = np.abs(d1 - got[1]).max() / (np.abs(got[1]).max() + 1e-300)
    e2 = np.abs(d2 - got[2]).max() / (np.abs(got[2]).max() + 1e-300)
    print(f"\n{name}: rate {e1:.1e}, acceleration {e2:.1e} (scaled, against differences)")
    assert e1 < 1e-6 and e2 < 1e-5


@pytest.mark.parametrize("name", MOTIONS)
def test_continuous_at_both_ends(name):
    """Value, rate and acceleration are continuous at the start and at the blend's end (and, for a table, at its
    ends): the one-sided values an ε apart differ by O(ε)."""
    m, eps = MOTIONS[name], 1e-9
    marks = [m.start, m.start + m.blend] + ([m.start + m.breaks[0], m.start + m.breaks[-1]] if m.kind == "table" else [])
    for t in marks:
        lo, hi = np.stack(M.evaluate(m, t - eps)), np.stack(M.evaluate(m, t + eps))
        scale = np.abs(np.stack(M.evaluate(m, np.linspace(0, 5, 501)))).max(axis=1) + 1e-300
        jump = np.abs(hi - lo) / scale
        assert (jump < 1e-6).all(), f"{name}: jump {jump} at t = {t}"


def test_at_rest_before_the_start():
    for m in MOTIONS.values():
        assert np.all(np.stack(M.evaluate(m, np.linspace(-1, m.start, 50))) == 0.0)


SEPTIC = np.polynomial.Polynomial([0, 0, 0, 0, 35, -84, 70, -20])  # w(τ) = τ⁴(35 − 84τ + 70τ² − 20τ³)


def blend_error(weight) -> float:
    """The largest difference of `weight`'s value and three derivatives (blend_weight's form) from the degree-7
    polynomial's on [0, 1], and from the ends' conditions (0 and 1, flat through the jerk)."""
    tau = np.linspace(0, 1, 1001)
    w = weight(tau)
    err = max(float(np.abs(w[k] - SEPTIC.deriv(k)(tau)).max()) for k in range(4))
    ends = [w[0][0], w[0][-1] - 1.0, *(w[k][0] for k in range(1, 4)), *(w[k][-1] for k in range(1, 4))]
    return max(err, float(np.abs(ends).max()))


def test_blend_closed_form():
    """w(τ) = τ⁴(35 − 84τ + 70τ² − 20τ³): its values and derivatives against the polynomial's, flat through the
    jerk at both ends; its peaks are the closed forms BLEND_PEAKS."""
    assert blend_error(M.blend_weight) < 1e-12
    assert M.blend_weight(np.array([0.5]))[0][0] == 0.5
    fine = np.linspace(0, 1, 200001)
    for k, peak in enumerate(M.BLEND_PEAKS, 1):
        assert abs(np.abs(SEPTIC.deriv(k)(fine)).max() - peak) < 1e-6 * peak


def test_planted_blend_of_degree_five_is_caught():
    """The degree-5 smoothstep 10τ³ − 15τ⁴ + 6τ⁵ (value, rate and acceleration continuous, its jerk jumping
    at both ends) planted as the blend fails the closed-form check."""
    p5 = np.polynomial.Polynomial([0, 0, 0, 10, -15, 6])

    def quintic(tau):
        t = np.clip(tau, 0.0, 1.0)
        return tuple(p5.deriv(k)(t) for k in range(4))

    assert blend_error(quintic) > 1.0


def test_blend_jerk_bound():
    """The blended motion's jerk, by differences of f̈, stays within the closed form's bound:
    |g'''| ≤ max|w'''| max|f|/T³ + 3 max|w''| max|ḟ|/T² + 3 max|w'| max|f̈|/T + max|f'''| over the blend."""
    A, fr, T_b = 0.02, 1.5, 0.5
    m = M.sine(A, fr, 0.4, blend=T_b)
    om = 2 * math.pi * fr
    w1, w2, w3 = M.BLEND_PEAKS
    bound = w3 * A / T_b**3 + 3 * w2 * A * om / T_b**2 + 3 * w1 * A * om**2 / T_b + A * om**3
    h = 1e-5
    t = np.linspace(h, T_b - h, 4001)
    jerk = (M.evaluate(m, t + h)[2] - M.evaluate(m, t - h)[2]) / (2 * h)
    print(f"\nblend jerk: max {np.abs(jerk).max():.4g}, bound {bound:.4g}")
    assert np.abs(jerk).max() <= bound
    assert np.abs(jerk).max() > 0.1 * bound  # the bound is not vacuous


def test_sweep_reaches_its_frequencies():
    """The sweep's instantaneous frequency θ'/2π is f0 at the start, f1 at the duration and after."""
    for log in (False, True):
        th = M.sweep_phase(0.5, 20.0, 4.0, log, np.array([0.0, 4.0, 6.0]))
        assert np.allclose(th[1] / (2 * math.pi), [0.5, 20.0, 20.0])


@pytest.mark.parametrize("bad, why", [
    (lambda: M.sine(0.02, 1.5, 0.0), "starts with a jump"),
    (lambda: M.ramp(0.1), "starts with a jump"),
    (lambda: M.constant(0.1), "starts with a jump"),
    (lambda: M.sine(0.02, 1.5, 0.0, blend=-1.0), "blend"),
    (lambda: M.sweep(0.01, 0.0, 20.0, 4.0, blend=0.5), "both frequencies"),
    (lambda: M.table([0.0, 1.0, 1.0], [0.0, 1.0, 2.0]), "increase strictly"),
    (lambda: M.table([0.0, 1.0], [0.0, float("nan")]), "not finite"),
    (lambda: M.Motion("table", (), breaks=np.array([0.0, 1.0, 2.0]), coef=np.zeros((6, 1))), "motion.table"),
])
def test_refused(bad, why):
    with pytest.raises(M.MotionError, match=why):
        bad()
