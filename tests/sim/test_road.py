"""The rig inputs (mechdyn/sim/road.py): the ISO 8608 road's spectrum against the standard's table (and a planted
wrong class value caught), seeds, the rear posts following the front ones, the bump, and Chrono's rig data file
read and interpolated as ChSuspensionTestRigDataDriver and ChCubicSpline do."""
from __future__ import annotations

import re

import numpy as np
import pytest
from scipy.interpolate import CubicSpline
from scipy.signal import welch

from crosscheck.chrono.vehicle import data_dir
from mechdyn.sim import road

# ISO 8608:2016's geometric means of Gd(n0) (m³), typed in here so that the check does not read the module's table
ISO_GD_N0 = {"A": 16e-6, "C": 256e-6, "H": 262144e-6}
N_MIN, N_MAX = 0.011, 2.83
# The spectrum check's road: 2^16 m sampled every 0.125 m (Nyquist 4 cycles/m, above n_max), cut into Welch
# segments of 2^15 samples (4096 m, bins of 1/4096 cycles/m) overlapping by half: 31 segments. The lowest octave
# [0.011, 0.022] then holds 45 bins. Even for a Gaussian road (random amplitudes, the noisier case: the
# generator's amplitudes are fixed and only its phases are random) the band's integral would average 45 bins × 31
# segments of squared components, about half of them independent (the Hann window correlates neighbouring bins
# and overlapping segments): a relative standard error near 1/sqrt(700) ≈ 4 %, so the 20 % tolerance is five of
# those, and still far inside the factor 4 between neighbouring classes. The window's leakage at n_min (about two
# bins) moves at most 2 × (1/4096)/0.011 = 4.4 % of the lowest octave's integral; higher octaves hold more bins.
LENGTH, DX, NPERSEG = 2.0**16, 0.125, 2**15
TOL = 0.2
ST_INPUTS = data_dir() / "hmmwv" / "suspensionTest" / "ST_inputs.dat"


def octaves() -> list[tuple[float, float]]:
    """The octave bands [n, 2n] from n_min that lie inside [n_min, n_max]."""
    lows = N_MIN * 2.0 ** np.arange(12)
    return [(lo, 2 * lo) for lo in lows if 2 * lo <= N_MAX]


def band_errors(z: np.ndarray, dx: float, gd0: float) -> np.ndarray:
    """Per octave band, Welch's PSD of z (sampled every dx m) integrated over the band, relative to the integral of
    Gd(n) = gd0 (n/0.1)^-2 over it, less 1."""
    n, psd = welch(z, fs=1 / dx, nperseg=NPERSEG)
    dn = n[1] - n[0]
    return np.array([psd[(n >= lo) & (n < hi)].sum() * dn / (gd0 * 0.1**2 * (1 / lo - 1 / hi)) - 1
                     for lo, hi in octaves()])


@pytest.mark.parametrize("road_class, seed", [("A", 1), ("c", 2), ("H", 3)])
def test_profile_spectrum_is_the_class(road_class, seed):
    x, z = road.iso8608_profile(road_class, LENGTH, DX, seed)
    assert np.allclose(np.diff(x), DX) and x[0] == 0 and x[-1] >= LENGTH
    assert abs(z.mean()) < 1e-15
    err = band_errors(z, DX, ISO_GD_N0[road_class.upper()])
    assert len(err) == 8 and np.all(np.abs(err) < TOL), f"class {road_class}: band errors {np.round(err, 3)}"


def test_planted_class_value_fails_the_spectrum_check(monkeypatch):
    # class B's Gd(n0) generated for class C: every band reads about 1/4 of what class C must have
    monkeypatch.setitem(road.GD_N0, "C", road.GD_N0["B"])
    _, z = road.iso8608_profile("C", LENGTH, DX, 2)
    err = band_errors(z, DX, ISO_GD_N0["C"])
    assert np.all(np.abs(err) > TOL), f"the planted class value passed: band errors {np.round(err, 3)}"


def test_posts_carry_the_class_at_speed():
    # a drive over the same length of road: the rear post in time is the road at x = speed t
    speed, dt = 20.0, DX / 20.0
    rl = road.road_posts("C", speed, LENGTH / speed, 3.378, 7, dt).rear_left
    err = band_errors(rl, speed * dt, ISO_GD_N0["C"])
    assert np.all(np.abs(err) < TOL), f"band errors {np.round(err, 3)}"


def test_profile_reproducible_from_seed():
    _, z1 = road.iso8608_profile("D", 200, 0.05, 11)
    _, z2 = road.iso8608_profile("d", 200, 0.05, 11)
    _, z3 = road.iso8608_profile("D", 200, 0.05, 12)
    assert np.array_equal(z1, z2)
    assert abs(np.corrcoef(z1, z3)[0, 1]) < 0.5 and not np.allclose(z1, z3, atol=0.1 * z1.std())
    a, b = road.road_posts("D", 10, 3, 3.378, 5, 1e-3), road.road_posts("D", 10, 3, 3.378, 5, 1e-3)
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
    c = road.road_posts("D", 10, 3, 3.378, 6, 1e-3)
    assert not np.allclose(a.front_left, c.front_left)


def test_lanes():
    two = road.road_posts("E", 10, 3, 3.378, 5, 1e-3)
    one = road.road_posts("E", 10, 3, 3.378, 5, 1e-3, lanes=1)
    assert not np.allclose(two.front_left, two.front_right, atol=0.1 * two.front_left.std())
    assert np.array_equal(one.front_left, one.front_right) and np.array_equal(one.rear_left, one.rear_right)
    assert np.array_equal(one.front_left, two.front_left)  # the left road does not depend on the right one


def test_rear_is_front_delayed_on_the_grid():
    # wheelbase/(speed dt) = 340 steps: the rear post at step j + 340 is the front post at step j
    speed, dt, wheelbase = 10.0, 1e-3, 3.4
    t, fl, fr, rl, rr = road.road_posts("D", speed, 4.0, wheelbase, 9, dt)
    s = 340
    assert len(t) == 4001 and t[-1] == pytest.approx(4.0)
    assert np.max(np.abs(rl[s:] - fl[:-s])) < 1e-12 and np.max(np.abs(rr[s:] - fr[:-s])) < 1e-12
    assert np.max(np.abs(rl[s + 1:] - fl[:-s - 1])) > 1e-5  # one step off is not the same


def test_rear_is_front_delayed_between_samples():
    # HMMWV's 3.378 m at 10 m/s is 337.8 steps: the rear post interpolated at t + wheelbase/speed is the front
    # post at t, to the cubic interpolation's error on a road whose shortest wave (0.35 m) spans 35 samples
    speed, dt, wheelbase = 10.0, 1e-3, 3.378
    t, fl, _, rl, _ = road.road_posts("D", speed, 4.0, wheelbase, 9, dt)
    late = t + wheelbase / speed <= t[-1]
    gap = np.max(np.abs(CubicSpline(t, rl)(t[late] + wheelbase / speed) - fl[late]))
    assert gap < 1e-6 * np.max(np.abs(fl)), gap
    # the same with the wheelbase rounded to the grid (338 steps) is off by far more
    assert np.max(np.abs(CubicSpline(t, rl)(t[late] + 0.3380) - fl[late])) > 100 * gap


def test_bump_posts():
    height, length, speed, t_start, wheelbase, dt = 0.05, 0.5, 5.0, 0.2, 3.4, 1e-3
    t, fl, fr, rl, rr = road.bump_posts(height, length, speed, t_start, 1.5, wheelbase, dt)
    on = length / speed  # 0.1 s on the bump
    assert np.max(fl) == pytest.approx(height, abs=1e-12) and t[np.argmax(fl)] == pytest.approx(t_start + on / 2)
    inside = t[fl > 1e-12 * height]
    assert inside[0] >= t_start and inside[-1] <= t_start + on
    # the area under a (1 − cos)/2 bump is half its height times its time on the post
    assert np.trapezoid(fl, t) == pytest.approx(height * on / 2, rel=1e-9)
    s = round(wheelbase / speed / dt)  # 680 steps
    assert np.max(np.abs(rl[s:] - fl[:-s])) < 1e-12 and np.max(rl[:s]) == 0
    assert np.array_equal(fl, fr) and np.array_equal(rl, rr)
    _, fl1, fr1, rl1, rr1 = road.bump_posts(height, length, speed, t_start, 1.5, wheelbase, dt, sides=("right",))
    assert not fl1.any() and not rl1.any() and np.array_equal(fr1, fl) and np.array_equal(rr1, rl)


def chrono_spline(tk: np.ndarray, yk: np.ndarray, tq: np.ndarray) -> np.ndarray:
    """ChCubicSpline::Process and ::Evaluate with the default end conditions (ChCubicSpline.cpp:57-156),
    transcribed line by line: the reference the module's banded solve and PPoly are held to."""
    n = len(tk)
    a_, ypp = np.zeros((3, n)), np.zeros(n)
    a_[1, 0], a_[0, 1] = 1, -1
    for i in range(1, n - 1):
        dtp, dtm = tk[i + 1] - tk[i], tk[i] - tk[i - 1]
        ypp[i] = (yk[i + 1] - yk[i]) / dtp - (yk[i] - yk[i - 1]) / dtm
        a_[0, i + 1], a_[1, i], a_[2, i - 1] = dtp / 6, (dtp + dtm) / 3, dtm / 6
    a_[2, n - 2], a_[1, n - 1] = -1, 1
    for i in range(1, n):
        mult = a_[2, i - 1] / a_[1, i - 1]
        a_[1, i] -= mult * a_[0, i]
        ypp[i] -= mult * ypp[i - 1]
    ypp[n - 1] /= a_[1, n - 1]
    for i in range(n - 2, -1, -1):
        ypp[i] = (ypp[i] - a_[0, i + 1] * ypp[i + 1]) / a_[1, i]
    out = []
    for t in tq:
        left = 0
        for i in range(1, n):
            if t > tk[i]:
                left += 1
            else:
                break
        dt = tk[left + 1] - tk[left]
        tau = (t - tk[left]) / dt
        a = dt * dt * (ypp[left + 1] - ypp[left]) / 6
        b = dt * dt * ypp[left] / 2
        c = (yk[left + 1] - yk[left]) - a - b
        out.append(a * tau**3 + b * tau**2 + c * tau + yk[left])
    return np.array(out)


@pytest.fixture(scope="module")
def st_inputs() -> road.RigInputs:
    if not ST_INPUTS.is_file():
        pytest.skip(f"no {ST_INPUTS}: Chrono's vehicle data is not beside the repository; set MECHDYN_CHRONO_DATA to "
                    "its vehicle data directory")
    return road.read_chrono_rig_inputs(ST_INPUTS)


def test_chrono_file_read(st_inputs):
    r = st_inputs
    assert r.time.size == 42 and r.naxles == 2 and r.left.shape == r.right.shape == (2, 42)
    assert (r.time[0], r.time[-1]) == (0.0, 7.0)
    raw = np.loadtxt(ST_INPUTS)
    assert np.array_equal(r.steering, raw[:, 1]) and np.array_equal(r.left, raw[:, [2, 4]].T)
    assert np.array_equal(r.right, raw[:, [3, 5]].T)


def test_chrono_file_at_its_own_times(st_inputs):
    r, limit = st_inputs, 0.15  # the HMMWV rig JSONs' "Displacement Limit"
    steering, left, right = r.evaluate(r.time, limit)
    assert np.max(np.abs(steering - r.steering)) < 1e-12
    assert np.max(np.abs(left - limit * r.left)) < 1e-12 and np.max(np.abs(right - limit * r.right)) < 1e-12
    # after a delay the same values the delay later; before it, and after the last row, what Chrono sets
    _, left_d, _ = r.evaluate(r.time + 0.5, limit, delay=0.5)
    assert np.max(np.abs(left_d - limit * r.left)) < 1e-12
    _, before, _ = r.evaluate([0.0, 0.49], limit, delay=0.5)
    assert not before.any()
    _, after, after_r = r.evaluate([7.5, 100.0], limit)
    assert np.array_equal(after, limit * r.left[:, [-1, -1]]) and np.array_equal(after_r, limit * r.right[:, [-1, -1]])
    _, rate_after, _ = r.evaluate([7.5], limit, rate=True)
    assert not rate_after.any()


def test_chrono_interpolation_is_its_spline(st_inputs):
    r, limit = st_inputs, 0.15
    tq = np.linspace(0, 7, 701)
    _, left, right = r.evaluate(tq, limit)
    knots = np.concatenate([[r.time[0] - 1], r.time])  # Chrono's extra knot of zeros a second before the first row
    for axle in range(2):
        assert np.max(np.abs(left[axle] - limit * chrono_spline(knots, np.r_[0, r.left[axle]], tq))) < 1e-12
        assert np.max(np.abs(right[axle] - limit * chrono_spline(knots, np.r_[0, r.right[axle]], tq))) < 1e-12
    # not linear interpolation, and not clamped to the rows' range: the spline overshoots between the two
    # 0.993181 rows and rings where the file holds 0
    assert left[0, 200] > limit * 0.9999 and np.max(np.abs(left[0, (tq > 3) & (tq < 4)])) > limit * 0.01
    # the rate is the spline's derivative
    _, rate, _ = r.evaluate(tq, limit, rate=True)
    h = 1e-6
    fd = (r.evaluate(tq + h, limit)[1] - r.evaluate(tq - h, limit)[1]) / (2 * h)
    assert np.max(np.abs(rate - fd)[:, 1:-1]) < 1e-6


def test_chrono_no_clamp_and_one_axle(tmp_path):
    # 4 columns: one axle; an input of 1.5 reaches the post as 1.5 × the limit (the data driver does not clamp);
    # past the last row its values stay
    p = tmp_path / "one.dat"
    p.write_text("0 0 0 0\n1 0.2 1.5 -0.5\n2 0.1 0.3 0.4\n\n")
    r = road.read_chrono_rig_inputs(p)
    assert r.naxles == 1 and r.time.size == 3
    steering, left, right = r.evaluate([1.0, 5.0], 0.1)
    assert np.allclose(steering, [0.2, 0.1]) and np.allclose(left, [[0.15, 0.03]])
    assert np.allclose(right, [[-0.05, 0.04]])
    # one row: Chrono's two knots make a straight line from 0 a second earlier
    p.write_text("2 0.5 1 -1\n")
    steering, left, right = road.read_chrono_rig_inputs(p).evaluate([1.25, 1.5], 0.1)
    assert np.allclose(steering, [0.125, 0.25]) and np.allclose(left, [[0.025, 0.05]])


@pytest.mark.parametrize("text, line, message", [
    ("0 0 0 0 0 0\n1 0 0 0 0 0\n2 0 0 0 0 0\n3 0 0 0 0 0\n4 0 0 0 0 0\n5 0 0 0 0 0\n6 0 0 0 0\n", 7,
     "expected 6 numbers (time, steering, left and right post for 2 axles), got 5"),
    ("0 0 0 0\n1 0 0 0 0 0\n", 2, "expected 4 numbers (time, steering, left and right post for 1 axle), got 6"),
    ("0 0 0 0 0\n", 1, "expected time, steering and a left and right post per axle (4, 6, ... numbers), got 5"),
    ("0 0 0 0\n1 0 nan 0\n", 2, "expected finite numbers, got '1 0 nan 0'"),
    ("0 0 0 0\n1 0 inf 0\n", 2, "expected finite numbers, got '1 0 inf 0'"),
    ("0 0 0 0\n1 0 x 0\n", 2, "expected 4 numbers, got '1 0 x 0'"),
    ("0 0 0 0\n1 0 0 0\n1 0 0 0\n", 3, "time 1 is not after the previous row's 1: expected strictly increasing times"),
    ("0 0 0 0\n2 0 0 0\n1 0 0 0\n", 3, "time 1 is not after the previous row's 2: expected strictly increasing times"),
    ("0 0 0 0\n\n1 0 0 0\n", 2, "expected 4 numbers (time, steering, left and right post for 1 axle), got 0"),
])
def test_chrono_bad_files(tmp_path, text, line, message):
    p = tmp_path / "ST_inputs.dat"
    p.write_text(text)
    with pytest.raises(ValueError, match=re.escape(f"{p}:{line}: {message}")):
        road.read_chrono_rig_inputs(p)


def test_chrono_missing_and_empty(tmp_path):
    with pytest.raises(ValueError, match=re.escape(f"{tmp_path / 'none.dat'}: no such file")):
        road.read_chrono_rig_inputs(tmp_path / "none.dat")
    (tmp_path / "empty.dat").write_text("\n")
    with pytest.raises(ValueError, match="empty.dat: no rows"):
        road.read_chrono_rig_inputs(tmp_path / "empty.dat")


@pytest.mark.parametrize("call, message", [
    (lambda: road.iso8608_profile("J", 100, 0.1, 0), "road class 'J' does not exist: expected one of A..H"),
    (lambda: road.iso8608_profile("", 100, 0.1, 0), "road class '' does not exist: expected one of A..H"),
    (lambda: road.iso8608_profile("C", 100, 0.2, 0), "a road sampled every 0.2 m cannot carry n_max = 2.83"),
    (lambda: road.iso8608_profile("C", 0, 0.1, 0), "length 0 is not allowed: expected a finite length > 0 m"),
    (lambda: road.road_posts("Z", 10, 1, 3, 0, 1e-3), "road class 'Z' does not exist"),
    (lambda: road.road_posts("C", 0, 1, 3, 0, 1e-3), "speed 0 is not allowed: expected a finite speed > 0 m/s"),
    (lambda: road.road_posts("C", -5, 1, 3, 0, 1e-3), "speed -5 is not allowed: expected a finite speed > 0 m/s"),
    (lambda: road.road_posts("C", 10, 0, 3, 0, 1e-3), "duration 0 is not allowed"),
    (lambda: road.road_posts("C", 10, 1, -1, 0, 1e-3), "wheelbase -1 is not allowed: expected a finite wheelbase >= 0"),
    (lambda: road.road_posts("C", 10, 1, 3, 0, 0), "dt 0 is not allowed"),
    (lambda: road.road_posts("C", 10, 1, 3, 0, 1e-3, lanes=3), "lanes 3 is not allowed"),
    (lambda: road.bump_posts(0.05, 0.5, 0, 0.2, 1, 3, 1e-3), "speed 0 is not allowed"),
    (lambda: road.bump_posts(0.05, 0.5, 5, 0.2, 1, 3, 1e-3, sides=("front",)), "sides ('front',) is not allowed"),
])
def test_bad_arguments(call, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call()
