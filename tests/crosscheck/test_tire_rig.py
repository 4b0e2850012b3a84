"""Chrono's own TMeasy and Fiala tires sampled on its wheel test rig (crosscheck/chrono/tire_rig.py, issue 37): the
samples are sane, and the recorded wheel rows are the state Chrono's forces came from (the contact frame and the
slips recomputed from them with a few lines of NumPy match what the tire reported).

The `samples` fixture (one tire's quick sweep, cached) is where mechdyn's TMeasy and Fiala laws will be checked,
`compare(samples, law)` with `law(rows, axis) -> (F_local, M_local)`, once those laws exist.

Needs pychrono with Chrono::Vehicle, and skips, saying why, without it.
"""
from __future__ import annotations

import numpy as np
import pytest

from crosscheck.chrono import PychronoMissing


def _vehicle_reason() -> str | None:
    from crosscheck.chrono.vehicle import vehicle_modules

    try:
        vehicle_modules()
    except PychronoMissing as e:
        return f"Chrono's tire rig: {e}"
    return None


REASON = _vehicle_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")

UNLOADED = {"tmeasy": 0.4699, "fiala": 0.47}  # m: the disc's radius, "Unloaded Radius" of the tires' JSON files
VNUM = 0.01  # m/s: TMeasy's m_vnum, added to its slip's denominator


@pytest.fixture(scope="module", params=["tmeasy", "fiala"])
def samples(request):
    from crosscheck.chrono.tire_rig import cached_sweep, quick_sweep

    return cached_sweep(request.param, quick_sweep())


def _quaternion(M: np.ndarray) -> np.ndarray:
    """ChMatrix33::GetQuaternion's trace branch, kept as Chrono does it for a matrix that is not a rotation."""
    tr = np.trace(M)
    assert tr >= 0, "the rig's wheel heads along +x within 15 deg: the trace branch"
    s = np.sqrt(tr + 1)
    return np.array([0.5 * s, M[2, 1] - M[1, 2], M[0, 2] - M[2, 0], M[1, 0] - M[0, 1]]) * np.array([1, *[0.5 / s] * 3])


def _rotate(q: np.ndarray) -> np.ndarray:
    """The matrix of ChQuaternion::Rotate (its '− 1' on the diagonal assumes |q| = 1; Chrono applies it as is)."""
    e0, e1, e2, e3 = q
    return 2 * np.array([[e0 * e0 + e1 * e1, e1 * e2 - e0 * e3, e1 * e3 + e0 * e2],
                         [e1 * e2 + e0 * e3, e0 * e0 + e2 * e2, e2 * e3 - e0 * e1],
                         [e1 * e3 - e0 * e2, e2 * e3 + e0 * e1, e0 * e0 + e3 * e3]]) - np.eye(3)


def _contact_1pt(row: np.ndarray, axis: np.ndarray, r: float, z0: float):
    """ChTire::DiscTerrainCollision1pt on a flat terrain at height z0: (frame origin, frame map, depth)."""
    R, C = row[:9].reshape(3, 3), row[9:12]
    ez = np.array([0.0, 0.0, 1.0])
    dn = R @ axis
    df = np.cross(dn, ez)
    B = C + r * np.cross(dn, df / np.linalg.norm(df))  # the disc's lowest point
    P = np.array([B[0], B[1], z0])  # the terrain below it
    n = ez - (ez @ dn) * dn  # the terrain's normal in the disc's plane, of length cos(camber)
    AB = r * np.linalg.norm(n)  # Chrono takes B = C − r·n before normalising n: under camber, r·cos(camber)
    n /= np.linalg.norm(n)
    Pp = C - ((C - P) @ n) * n  # the centre projected on the terrain plane, along that normal
    fwd = np.cross(dn, ez)  # unnormalised, as Chrono has it
    M = np.column_stack([fwd, np.cross(ez, fwd), ez])
    return np.array([Pp[0], Pp[1], z0]), _rotate(_quaternion(M)), AB - np.linalg.norm(C - Pp)


def test_contact_frame_is_the_recorded_state(samples):
    """Chrono's single-point contact frame and depth, rebuilt from the recorded rows, are the ones it reported: the
    rows are the state its forces were computed from (a step's drift is ~5 mm in x, far above these tolerances)."""
    one = ~samples.case_four_point.astype(bool)
    assert one.any()
    for i in np.flatnonzero(one):
        p, M, depth = _contact_1pt(samples.rows[i], samples.axis[i], UNLOADED[samples.tire], samples.terrain_z[i])
        assert np.abs(p - samples.frame_p[i]).max() < 1e-10, (i, p, samples.frame_p[i])
        assert np.abs(M - samples.frame_R[i]).max() < 1e-12
        assert abs(depth - samples.deflection[i]) < 1e-12
    assert np.all(np.abs(samples.frame_p[:, 2] - samples.terrain_z) < 1e-12)


def test_slips_are_those_of_the_recorded_state(samples):
    """ChTire::CalculateKinematics from the rows and the reported frame gives the tire's slip, slip angle and
    camber, with the radius the tire used (TMeasy's R_eff of the step before)."""
    R = samples.rows[:, :9].reshape(-1, 3, 3)
    V = np.einsum("nji,nj->ni", samples.frame_R, samples.rows[:, 15:18])  # RotateBack: the map's transpose
    omega = np.einsum("nji,nj->ni", R, samples.rows[:, 12:15])[:, 1]
    vx = np.abs(V[:, 0])
    n = np.einsum("nji,nj->ni", samples.frame_R, np.einsum("nij,nj->ni", R, samples.axis))
    assert np.abs(-(V[:, 0] - omega * samples.radius_slip) / vx - samples.slip).max() < 1e-12
    assert np.abs(np.arctan(V[:, 1] / vx) - samples.alpha).max() < 1e-12
    assert np.abs(np.arctan2(n[:, 2], n[:, 1]) - samples.camber).max() < 1e-12
    if samples.tire == "tmeasy":  # R_eff = (2 r0 + (r0 − depth)) / 3, of this step
        assert np.abs(samples.radius - (UNLOADED["tmeasy"] - samples.deflection / 3)).max() < 1e-12


def test_world_force_is_the_local_one_moved_to_the_wheel_centre(samples):
    F = np.einsum("nij,nj->ni", samples.frame_R, samples.F_local)
    M = np.einsum("nij,nj->ni", samples.frame_R, samples.M_local)
    M += np.cross(samples.frame_p - samples.rows[:, 9:12], F)
    scale = samples.F_local[:, 2:3]
    assert np.abs(F - samples.F_world).max() / scale.min() < 1e-12
    assert np.abs(M - samples.M_world).max() / scale.min() < 1e-12


def test_normal_load_is_the_rigs_weight(samples):
    """Settled, the tire carries the rig's ballast: its world vertical force is what the rig's free bodies weigh,
    which is the imposed load plus the wheel's weight (the rig's quirk, see the module)."""
    from crosscheck.chrono.tire_rig import GRAVITY

    assert np.abs(samples.F_world[:, 2] / samples.weight - 1).max() < 1e-3
    assert np.abs(samples.weight - samples.case_load - 18.8 * GRAVITY).max() < 1e-9
    assert np.all(np.abs(samples.mu - np.float32(0.8)) == 0)


def test_forces_follow_the_slips_the_laws_use(samples):
    """Fx has the sign of the law's own longitudinal slip (Fiala's on r0 − depth, TMeasy's on R_eff), Fy the
    opposite sign of the slip angle, and the rolling resistance brakes the forward-rolling wheel."""
    R = samples.rows[:, :9].reshape(-1, 3, 3)
    V = np.einsum("nji,nj->ni", samples.frame_R, samples.rows[:, 15:18])
    omega = np.einsum("nji,nj->ni", R, samples.rows[:, 12:15])[:, 1]
    if samples.tire == "fiala":
        s = -(V[:, 0] - omega * (samples.radius - samples.deflection)) / np.abs(V[:, 0])
    else:
        s = -(V[:, 0] - omega * samples.radius) / (samples.radius * np.abs(omega) + VNUM)
    clear = np.abs(s) > 1e-3
    assert clear.sum() >= len(s) // 2
    assert np.all(np.sign(samples.F_local[clear, 0]) == np.sign(s[clear])), (s, samples.F_local[:, 0])
    turning = np.abs(samples.alpha) > 1e-3
    assert turning.any()
    assert np.all(np.sign(samples.F_local[turning, 1]) == -np.sign(samples.alpha[turning]))
    assert np.all(samples.M_local[:, 1] < 0)


def test_compare_save_and_plot(samples, tmp_path):
    """compare() scores Chrono's own outputs at 0 and a 1 % error in Fy at 0.01 of the load at most; the samples
    survive an .npz round trip; the picture is drawn with a law's markers."""
    from crosscheck.chrono.tire_rig import RigSamples, compare, plot

    def itself(rows, axis):
        return samples.F_local, samples.M_local

    assert all(v == 0 for v in compare(samples, itself).worst.values())
    off = compare(samples, lambda rows, axis: (samples.F_local * [1, 1.01, 1], samples.M_local))
    assert 0 < off.worst["Fy"] <= 0.01 and off.worst["Fx"] == 0
    samples.save(tmp_path / "s.npz")
    back = RigSamples.load(tmp_path / "s.npz")
    assert back.tire == samples.tire and back.case(0) == samples.case(0)
    assert np.array_equal(back.rows, samples.rows) and np.array_equal(back.frame_q, samples.frame_q)
    assert plot(samples, tmp_path / "fig.png", law=itself).stat().st_size > 0


# ---- mechdyn's laws against Chrono's at the rig's states


def test_mechdyn_law_matches_chrono_at_the_rig_states(samples):
    from crosscheck.chrono.tire_rig import PLAIN_BOUND, camber_single_point, law_errors

    e = law_errors(samples)
    odd = camber_single_point(samples)  # reported, not gated: Chrono's frame there is not a rotation
    print(f"{samples.tire}: worst Fx..Mz {e[~odd].max(axis=0)}; camber, one point {e[odd].max(axis=0)}")
    assert e[~odd].max() < PLAIN_BOUND


def test_a_planted_bug_in_the_law_trips_the_rig_check(samples):
    from crosscheck.chrono.tire_rig import PLAIN_BOUND, camber_single_point, law_errors
    from mechdyn.contact import native

    old = "double sm = muscale * hypot(sxm * ca, sym * sa)" if samples.tire == "tmeasy" else \
        "double H = 1.0 - t->calpha * fabs(tan(alpha))"
    new = "double sm = 1.001 * muscale * hypot(sxm * ca, sym * sa)" if samples.tire == "tmeasy" else \
        "double H = 1.0 - 1.001 * t->calpha * fabs(tan(alpha))"
    src = native.source()
    assert src.count(old) == 1
    e = law_errors(samples, native.compile(src.replace(old, new)))
    assert e[~camber_single_point(samples)].max() > PLAIN_BOUND
