"""The shaker rig: the rigs' layouts, the drivers' work over a road run of every rig, the linear H(jω) against
the nonlinear response (fixed sines and a slow swept sine), the step's accuracy shown by halving it, and the
rig's refusals."""
from __future__ import annotations

import numpy as np
import pytest

import mechdyn
from mechdyn.core import motion as M
from mechdyn.linear.frf import base_excitation, frequency_response
from mechdyn.sim import rig
from mechdyn.sim.energy import mechanics
from mechdyn.sim.run import simulate

RIGS = ("quartercar", "halfcar", "hmmwv", "hmmwv_pitman")


@pytest.fixture(scope="module")
def dyns():
    return {}


def loaded(dyns, name):
    """The compiled rig, its drivers back on their files' motions (a test before may have set others)."""
    if name not in dyns:
        dyns[name] = mechdyn.load(name)
    for d in dyns[name].model.drivers:
        dyns[name].set_motion(d.name, d.motion)
    return dyns[name]


def test_layouts(dyns):
    """The posts, axles, sides and steering rig.layout reads off each rig's drivers and design positions."""
    want = {"quartercar": (("post",), (), None), "halfcar": (("post_L", "post_R"), (), None),
            "hmmwv": (("post_FL", "post_FR"), ("post_RL", "post_RR"), "steer"),
            "hmmwv_pitman": (("post_FL", "post_FR"), ("post_RL", "post_RR"), None)}
    for name, (front, rear, steer) in want.items():
        lay = rig.layout(loaded(dyns, name).model)
        assert (lay.front, lay.rear, lay.steer) == (front, rear, steer), name
        assert dyns[name].model.bodies[lay.chassis].name in ("sprung", "chassis_roll", "chassis")
    assert abs(rig.layout(dyns["hmmwv"].model).wheelbase - 3.30193) < 1e-5


def test_a_model_without_posts_is_refused():
    with pytest.raises(rig.RigError, match="has no driver"):
        rig.layout(mechdyn.load("elbow").model)


@pytest.mark.parametrize("name", RIGS)
def test_drivers_work_balances_a_road_run(dyns, name):
    """Over 3 s of an ISO class C road at 20 m/s from the design pose, the posts' work ∫ r·ḟ dt (the stepper's
    integral, Trajectory.work_driver) equals the rise in mechanical energy plus the dampers' work, to Verlet's
    error at 0.25 ms; a reaction of the wrong sign misses it by twice the work, far past the gate."""
    dyn = loaded(dyns, name)
    lay = rig.layout(dyn.model)
    for k, m in rig.motions_for(lay, rig.Input("road", road_class="C", speed=20.0, seed=3), 3.0).items():
        dyn.set_motion(k, m)
    tr = simulate(dyn, dyn.model.q0(), np.zeros(dyn.nv), 3.0, 2.5e-4, "verlet", stride=40)
    mech = mechanics(dyn.model, tr.q, tr.qd)
    E = mech.kinetic + mech.potential
    W = tr.work_driver[-1]
    gap = W - (E[-1] - E[0] + tr.dissipated[-1])
    scale = max(abs(W), tr.dissipated[-1])
    print(f"\n{name}: drivers' work {W:.2f} J, dissipated {tr.dissipated[-1]:.2f} J, energy change "
          f"{E[-1] - E[0]:.2f} J; gap {gap:.2e} J ({abs(gap) / scale:.1e} of the work)")
    assert abs(gap) <= 1e-3 * scale
    planted = -W - (E[-1] - E[0] + tr.dissipated[-1])
    assert abs(planted) > 100 * 1e-3 * scale


@pytest.fixture(scope="module")
def quarter_linear(dyns):
    dyn = loaded(dyns, "quartercar")
    lay = rig.layout(dyn.model)
    q = rig.start_state(dyn)
    return dyn, lay, q, base_excitation(dyn, q, rig.signs(lay, "heave")), rig.Ride(dyn, lay)


def sine_response(dyn, lay, q, A: float, f: float, dt: float, cols: list[str]) -> np.ndarray:
    """The steady response per m of post motion of each column to a sine at f Hz, by a least-squares fit of
    a sin + b cos + c over the last 4 s of 12."""
    rr = rig.run(dyn, rig.analytic_motions(lay, M.sine(A, f, 0.0, blend=1.0)), 12.0, dt, q0=q)
    t = rr.records["t"].to_numpy()
    w = t > 8.0
    X = np.column_stack([np.sin(2 * np.pi * f * t[w]), np.cos(2 * np.pi * f * t[w]), np.ones(w.sum())])
    return np.array([complex(*np.linalg.lstsq(X, rr.records[c].to_numpy()[w], rcond=None)[0][:2]) / A for c in cols])


def test_linear_response_is_the_simulated_one_at_fixed_sines(quarter_linear):
    """The linear H(jω) (generated derivatives) against the simulated steady response to a 1 mm sine: the
    difference is Verlet's, second order in the step (a quarter of it at half the step)."""
    dyn, lay, q, be, ride = quarter_linear
    cols = ["heave", "travel_post", "force_shock", "post_post"]
    for f in (1.0, 8.0):
        H = frequency_response(dyn, be, ride, np.array([f]))[0][[ride.names.index(c) for c in cols]]
        e1, e2 = (np.abs(sine_response(dyn, lay, q, 1e-3, f, dt, cols) - H) / np.abs(H) for dt in (1e-3, 5e-4))
        print(f"\n{f} Hz: relative error at 1 ms {e1.max():.2e}, at 0.5 ms {e2.max():.2e} (ratio {e1.max() / e2.max():.2f})")
        assert e1.max() < 5e-3 and 3.0 < e1.max() / e2.max() < 5.0


@pytest.mark.parametrize("name", ["quartercar", "hmmwv"])
def test_swept_sine_transmissibility_is_the_linear_one(dyns, name):
    """A 1 mm log sweep from 0.2 to 30 Hz over 240 s: the transmissibility the rig measures (a tracking filter,
    rig.sweep_transmissibility) is the linear H(jω) within 2 % from 0.5 to 20 Hz, heave, a wheel's travel and its
    post's force; a sweep four times faster lags its modes by more than that."""
    dyn = loaded(dyns, name)
    lay = rig.layout(dyn.model)
    q = rig.start_state(dyn)
    be = base_excitation(dyn, q, rig.signs(lay, "heave"))
    ride = rig.Ride(dyn, lay)
    p = lay.posts[0].driver
    cols = ["heave", f"travel_{p}", f"post_{p}"]
    freq = np.geomspace(0.5, 20.0, 25)
    H = frequency_response(dyn, be, ride, freq)[:, [ride.names.index(c) for c in cols]]
    errs = {}
    for D in (240.0, 60.0):
        m = M.sweep(1e-3, 0.2, 30.0, D, log=True, blend=1.0)
        rr = rig.run(dyn, rig.analytic_motions(lay, m), D, 1e-3, q0=q, stride=2)
        errs[D] = np.abs(rig.sweep_transmissibility(rr, m, cols, freq) - H) / np.abs(H)
    print(f"\n{name}: largest relative difference, 240 s sweep: "
          + ", ".join(f"{c} {e:.2%}" for c, e in zip(cols, errs[240.0].max(axis=0)))
          + f"; 60 s sweep: {errs[60.0].max():.2%}")
    for D in (240.0, 60.0):
        for f, e in zip(freq, errs[D].max(axis=1)):
            print(f"  {D:g} s sweep, {f:6.3f} Hz: {e:.3%}")
    assert errs[240.0].max() <= 0.02
    assert errs[60.0].max() > 0.02  # the check can fail: a sweep too fast for the modes


BENCH_DT = 5e-4  # s: the road benchmark's step (docs/performance.md, "The shaker rig")


def test_the_step_halved(dyns):
    """The road benchmark's step: hmmwv on a class C road at 20 m/s for 2 s, at BENCH_DT, half and a quarter of
    it. At BENCH_DT the records are within 1 % of the finest run's range (heave, a wheel's travel, a post's force),
    and the errors fall as Verlet's second order says (about 4 times at half the step)."""
    dyn = loaded(dyns, "hmmwv")
    lay = rig.layout(dyn.model)
    q = rig.start_state(dyn)
    motions = rig.motions_for(lay, rig.Input("road", road_class="C", speed=20.0, seed=1), 2.0)
    cols = ["heave", "travel_post_FL", "post_post_FL"]
    steps = (BENCH_DT, BENCH_DT / 2, BENCH_DT / 4)
    runs = {dt: rig.run(dyn, motions, 2.0, dt, q0=q, stride=int(round(BENCH_DT / dt))).records[cols].to_numpy()
            for dt in steps}
    ref = runs[steps[2]]
    span = np.ptp(ref, axis=0)
    e1, e2 = (np.abs(runs[dt] - ref).max(axis=0) / span for dt in steps[:2])
    print(f"\nhmmwv, road C at 20 m/s: error at {1e3 * steps[0]:g} ms "
          + ", ".join(f"{c} {e:.2e}" for c, e in zip(cols, e1))
          + f"; at {1e3 * steps[1]:g} ms " + ", ".join(f"{e:.2e}" for e in e2))
    assert e1.max() < 0.01
    assert (e1 / e2 > 2.5).all()


def test_rig_inputs_are_refused_with_their_reason(dyns):
    lay = rig.layout(loaded(dyns, "quartercar").model)
    with pytest.raises(rig.RigError, match="road class 'J'"):
        rig.motions_for(lay, rig.Input("road", road_class="J", speed=20.0), 5.0)
    with pytest.raises(rig.RigError, match="speed"):
        rig.motions_for(lay, rig.Input("road", road_class="C", speed=0.0), 5.0)
    with pytest.raises(rig.RigError, match="blend"):
        rig.motions_for(lay, rig.Input("road", road_class="C", speed=10.0, blend=0.0), 5.0)


@pytest.mark.parametrize("args, phrase", [
    (("elbow", "--sine", "0.1", "1"), "cannot be put on the rig: it has no driver"),
    (("hmmwv", "--road", "J", "--speed", "20"), "road class 'J' does not exist"),
    (("quartercar", "--road", "C", "--speed", "0"), "needs --speed V > 0"),
    (("quartercar", "--sine", "0.02", "1", "--blend", "0"), "blend"),
    (("quartercar",), "expected exactly one input"),
])
def test_cli_refuses_with_one_line(args, phrase):
    from tests.test_cli import cli

    r = cli("mechdyn", "rig", *args)
    assert r.returncode == 2 and phrase in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_cli_runs_a_rig(tmp_path):
    """mechdyn rig prints the ride figures and writes its pictures and records."""
    from tests.test_cli import cli

    r = cli("mechdyn", "rig", "quartercar", "--sine", "0.02", "1.5", "--time", "2", "--plot", str(tmp_path / "qc"),
            "--out", str(tmp_path / "qc.csv"))
    assert r.returncode == 0, r.stderr
    assert "rms heave acceleration" in r.stdout and "peak dynamic load post" in r.stdout
    assert (tmp_path / "qc-histories.png").stat().st_size > 10_000 and (tmp_path / "qc-psd.png").is_file()
    assert len((tmp_path / "qc.csv").read_text().splitlines()) == 2001 + 1
