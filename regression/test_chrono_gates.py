"""Project Chrono gates on every model: qd = dq/dt, accelerations against the dense reference and the generated
code, and trajectories at dt and dt/2 — the same checks and settings as `crosscheck chrono <model>`. A driven
model adds its drivers' reactions against Chrono's motors: react_vs_dense, react_vs_generated on the states,
react_gap_dt, react_gap_dt2, react_ratio along the trajectories (hht_react_gap_dt, hht_react_gap_dt2 with HHT).

Skipped, saying why, where pychrono is not installed (conda env create -f environment.yml).
Each test records all of its gates before it fails, so the history has every metric of a failing run too.
"""
import pytest

from crosscheck.chrono import MISSING, have_pychrono

from .conftest import dynamics

pytestmark = pytest.mark.skipif(not have_pychrono(), reason=MISSING)

TRIALS = 200
SIM_T, SIM_DT = 0.25, 2e-5  # the CLI's defaults, so the history and docs/verification.md's table read the same figures


def _gate_all(gate, model: str, checks) -> None:
    """Record every check's gate, then fail with all the failures."""
    failed = []
    for c in checks:
        try:
            gate(model, c)
        except AssertionError as e:
            failed.append(str(e))
    assert not failed, "\n".join(failed)


def test_chrono_states(model_name, gate):
    """qd_consistency, accel_vs_dense and accel_vs_generated on one draw of states (a loop model's manifold walk
    costs more than the checks)."""
    from crosscheck.chrono.build import build
    from crosscheck.chrono.checks import accelerations, draw, qd_consistency

    dyn = dynamics(model_name)
    drawn = draw(dyn.model, TRIALS, 0)
    cm = build(dyn.model)
    _gate_all(gate, model_name, [qd_consistency(dyn.model, TRIALS, 0, cm.mapping, drawn),
                                 *accelerations(cm, dyn, TRIALS, 0, drawn)])


def test_chrono_sim(model_name, gate):
    """sim_gap_dt, sim_gap_dt2 and sim_ratio."""
    from crosscheck.chrono.checks import sim_checks
    from crosscheck.chrono.sim import compare

    dyn = dynamics(model_name)
    _gate_all(gate, model_name, sim_checks(dyn.model, *compare(dyn.model, dyn, SIM_T, SIM_DT), SIM_T))


HHT_T, HHT_DT = 0.25, 1e-3  # crosscheck chrono MODEL --sim 0.25 1e-3 --scheme hht


def test_chrono_hht(model_name, gate):
    """hht_gap_dt, hht_gap_dt2 and hht_ratio: the generalized-α stepper at HHT's setting against Chrono's HHT,
    both second order (the ratio 4.0 ± 0.4)."""
    from crosscheck.chrono.checks import sim_checks
    from crosscheck.chrono.sim import compare
    from crosscheck.golden import long_build_skip

    dyn = dynamics(model_name)
    if dyn.model.rsdas:
        pytest.skip(f"{model_name}'s rsda torques are held over Chrono's step (first order): the euler pair covers it")
    if (why := long_build_skip(model_name)) is not None:
        pytest.skip(why)
    _gate_all(gate, model_name, sim_checks(dyn.model, *compare(dyn.model, dyn, HHT_T, HHT_DT, scheme="hht"), HHT_T,
                                           "hht"))


@pytest.mark.parametrize("tire", ["tmeasy", "fiala"])
def test_chrono_tire_rig(tire, gate):
    """mechdyn's tire laws against Chrono's own on Chrono's wheel test rig, the full sweep (slip, slip angle,
    camber, load, four-point contact): tire_vs_chrono where the equations are the same; the single-point camber
    cases, whose Chrono contact frame is not a rotation, are left out (crosscheck/chrono/tire_rig.py)."""
    import numpy as np

    from crosscheck.checks import Check
    from crosscheck.chrono import PychronoMissing
    from crosscheck.chrono.tire_rig import PLAIN_BOUND, cached_sweep, camber_single_point, full_sweep, law_errors

    try:
        samples = cached_sweep(tire, full_sweep())
    except PychronoMissing as e:
        pytest.skip(str(e))
    e = law_errors(samples)
    odd = camber_single_point(samples)
    n = int((~odd).sum())
    _gate_all(gate, "hmmwv_road", [
        Check(f"tire_vs_chrono_{tire}", float(e[~odd].max()), PLAIN_BOUND,
              f"{n} rig samples, worst of Fx, Fy, Fz, Mx, My, Mz scaled by the load; the {int(odd.sum())} "
              f"single-point camber samples, not gated, to {e[odd].max():.2g} [relative]")])
    assert np.isfinite(e).all()


def test_chrono_drive(gate):
    """hmmwv_road against Chrono::Vehicle's HMMWV on the turn, the braking and the lane change
    (crosscheck/chrono/drive_compare.py): drive_yaw_rate_vs_chrono, drive_ay_vs_chrono, drive_stop_vs_chrono,
    drive_roll_vs_chrono."""
    from crosscheck.chrono import PychronoMissing
    from crosscheck.chrono.drive_compare import compare
    from crosscheck.chrono.vehicle import require_vehicle

    try:
        require_vehicle()
    except PychronoMissing as e:
        pytest.skip(str(e))
    checks, *_ = compare(dynamics("hmmwv_road"))
    _gate_all(gate, "hmmwv_road", checks)
