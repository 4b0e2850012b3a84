"""The contact benchmark (mechdyn/contact/bench.py) runs, checks that its loop computes the producers, and reports
what it timed; `mechdyn bench --contact` prints it beside fwd_dyn."""
from __future__ import annotations

import numpy as np

from mechdyn.contact.bench import POOL, bench_contact, pool

from .conftest import contact


def test_bench_contact_reports_both_producers():
    con = contact("track_min")
    r = bench_contact(con, repeats=1, seconds=0.01)
    assert r.band_ns > 0 and r.ground_ns > 0
    assert r.band_pairs == 3 * 16 and r.corners == con.ncorner == 64
    assert 0 < r.corners_loaded <= r.corners and 0 < r.band_loaded <= r.band_pairs
    X = pool(con)
    assert X.shape == (POOL, con.model.nbody, 18) and np.isfinite(X).all()


def test_cli_bench_contact():
    from tests.test_cli import cli
    out = cli("mechdyn", "bench", "track_min", "--contact", "--repeats", "1")
    assert out.returncode == 0, out.stderr
    assert "bench: band" in out.stdout and "bench: ground" in out.stdout and "generated dynamics" in out.stdout


def test_cli_bench_contact_refuses_sim():
    from tests.test_cli import cli
    out = cli("mechdyn", "bench", "track_min", "--contact", "--sim", "1e-4")
    assert out.returncode == 2 and "does not combine with --sim" in out.stderr and "Traceback" not in out.stderr


def test_bench_contact_sim_splits_the_step():
    """The contact stepping loop's benchmark on a short settle: every stage timed and the fractions of the
    unrecorded step they add up to; the recording at the stride it chose; the real-time factor from the steps."""
    from mechdyn.bench import bench_contact_sim
    from mechdyn.core.parse import load_model
    from mechdyn.dynamics import Dynamics
    from mechdyn.sim.contact import STAGES, ContactSim, accuracy_step

    dyn = Dynamics(load_model("track_min"))
    r = bench_contact_sim(dyn, simulated=0.05, lead_in=0.03, repeats=2)
    dt = accuracy_step(ContactSim(dyn).contact).dt
    assert r.dt == dt and "samples per contact period" in r.step
    assert r.steps == round(0.05 / dt) and r.stride == round(1 / (500 * dt)) and r.rows == r.steps // r.stride
    assert r.realtime_factor == r.steps * dt / r.cpu and r.us_per_step == 1e6 * r.cpu / r.steps
    assert 0 < r.bare_cpu and 0 < r.wall and set(r.stages) == set(STAGES)
    split = r.split()
    print(f"track_min, 0.05 s: split {split}, recording {r.recording:.3f}, clock reads {r.clock_overhead:.3f}")
    assert list(split) == list(STAGES) and all(s > 0 for k, s in r.stages.items() if k != "tires")  # no tire here
    assert r.stages["tires"] == 0
    # each stage less its clock reads: only the overhead's noise can take a stage below 0
    assert all(f > -abs(r.clock_overhead) for f in split.values()) and abs(sum(split.values()) - 1) < 1e-12
    text = "\n".join(r.lines())
    for name in (*STAGES, "real-time factor", "recording", "by stage"):
        assert name in text
    assert set(r.as_dict()) >= {"us_per_step", "realtime_factor", "split", "recording", "clock_overhead", "load",
                                 "wall_realtime_factor"}


def test_bench_contact_sim_takes_a_given_step():
    from mechdyn.bench import bench_contact_sim
    from mechdyn.core.parse import load_model
    from mechdyn.dynamics import Dynamics

    r = bench_contact_sim(Dynamics(load_model("track_min")), 5e-5, simulated=0.01, lead_in=0.0, repeats=1)
    assert r.dt == 5e-5 and r.steps == 200 and "given" in r.step


def test_cli_bench_sim_of_a_contact_model_times_the_contact_loop():
    import json

    from tests.test_cli import cli
    out = cli("mechdyn", "bench", "track_min", "--sim", "--repeats", "1", "--json")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["model"] == "track_min" and got["realtime_factor"] > 0 and set(got["split"]) == {
        "kinematics", "band", "ground", "dynamics", "integration", "tires"}


def test_cli_bench_sim_without_dt_needs_contact():
    from tests.test_cli import cli
    out = cli("mechdyn", "bench", "gantry", "--sim")
    assert out.returncode == 2 and "give --sim DT" in out.stderr and "Traceback" not in out.stderr
