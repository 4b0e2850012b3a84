"""Drivers in every stepper: the driven coordinate follows its schedule exactly (q, qd at every recorded step, qdd
from the solve), the drivers' work balances the mechanical energy and the dampers' work, and the refusals."""
from __future__ import annotations

import numpy as np
import pytest

from mechdyn.core import motion as M
from mechdyn.core.errors import MechError
from mechdyn.core.parse import parse
from mechdyn.dynamics import Dynamics
from mechdyn.sim.contact import ContactSim
from mechdyn.sim.energy import mechanics
from mechdyn.sim.run import simulate
from tests.drivers import undriven_text, with_drivers

POST = "\ndriver post_drive\n  joint post\n  sine 0.02 1.5 0\n  blend 0.5\nend\n"


def driven(name: str, extra: str):
    """models/NAME.mech with its own drivers replaced by `extra`, parsed where the file is (so errors name it)."""
    return with_drivers(name, extra)


@pytest.fixture(scope="module")
def quarter():
    return Dynamics(driven("quartercar", POST))


def schedule_error(dyn: Dynamics, tr) -> tuple[float, float]:
    """Max |q_d − q_design − f(t)| and |qd_d − ḟ(t)| over the recorded rows, every driver."""
    m, q0 = dyn.model, dyn.model.q0()
    eq = ev = 0.0
    for t, q, qd in zip(tr.t, tr.q, tr.qd):
        f, fd, _ = dyn.drive(t)
        for d, x, xd in zip(m.drivers, f, fd):
            eq = max(eq, abs(q[m.qidx[d.body]] - q0[m.qidx[d.body]] - x))
            ev = max(ev, abs(qd[m.vidx[d.body]] - xd))
    return eq, ev


@pytest.mark.parametrize("scheme", ["euler", "verlet", "galpha", "hht"])
def test_driven_coordinate_follows_its_schedule(quarter, scheme):
    """Every stepper puts the driven coordinate and its rate exactly where the schedule says, at every step."""
    tr = simulate(quarter, quarter.model.q0(), np.zeros(quarter.nv), 1.5, 1e-3, scheme)
    eq, ev = schedule_error(quarter, tr)
    print(f"\n{scheme}: |q - f| {eq:.1e} m, |qd - f'| {ev:.1e} m/s over {len(tr.t)} steps")
    assert eq <= 1e-15 and ev <= 1e-15
    assert np.isfinite(tr.reactions).all() and tr.reactions.shape == (len(tr.t), 1)


def test_acceleration_is_the_schedules(quarter):
    """fwd_dyn returns the act slot as the driven coordinate's acceleration, bit for bit, at any state."""
    rng = np.random.default_rng(3)
    for t in rng.uniform(0, 3, 5):
        q, qd, act = quarter.driven_state(quarter.model.q0(), rng.normal(0, 0.1, quarter.nv), t)
        qdd, r = quarter.react(q, qd, np.zeros(quarter.nv), None, act)
        d = quarter.model.drivers[0]
        assert qdd[quarter.model.vidx[d.body]] == act[d.act] == quarter.drive(t)[2][0]
        assert np.array_equal(qdd, quarter.forward(q, qd, np.zeros(quarter.nv), None, act))


def work_balance(dyn: Dynamics, tr, sign: float = 1.0) -> tuple[float, float]:
    """(the drivers' work ∫ r·ḟ dt, that minus the change in mechanical energy and the dampers' work), from the
    recorded rows (every step recorded): the trapezoid of the recorded reactions times the schedules' rates."""
    mech = mechanics(dyn.model, tr.q, tr.qd)
    E = mech.kinetic + mech.potential
    rates = np.array([dyn.drive(t)[1] for t in tr.t])
    P = sign * np.sum(tr.reactions * rates, axis=1)
    W = float(np.sum(0.5 * (P[1:] + P[:-1]) * np.diff(tr.t)))
    return W, W - (E[-1] - E[0] + tr.dissipated[-1])


def test_drivers_work_balances_the_energy(quarter):
    """The post's work on the quarter car equals the rise in its mechanical energy plus what the shock
    dissipated; the stepper's own integral of r·ḟ (Trajectory.work_driver) says the same. A reaction of the
    wrong sign breaks the balance by twice the work."""
    tr = simulate(quarter, quarter.model.q0(), np.zeros(quarter.nv), 3.0, 2e-4, "verlet")
    W, gap = work_balance(quarter, tr)
    print(f"\nquartercar: drivers' work {W:.4f} J, dissipated {tr.dissipated[-1]:.4f} J, balance gap {gap:.2e} J")
    assert abs(gap) <= 1e-3 * abs(W)
    assert abs(tr.work_driver[-1] - W) <= 1e-3 * abs(W)
    _, planted = work_balance(quarter, tr, sign=-1.0)
    assert abs(planted) > 1.0 * abs(W)


def test_contact_loop_drives_a_sprocket():
    """The contact loop (track and ground) steps a driver too: track_min's sprocket turned by a ramp, exactly."""
    extra = "\ndriver spin\n  joint sprocket\n  ramp -2.0\n  blend 0.2\nend\n"
    dyn = Dynamics(driven("track_min", extra))
    sim = ContactSim(dyn)
    run = sim.run(dyn.model.q0(), np.zeros(dyn.nv), 0.3, 2e-5, "verlet", stride=100)
    eq, ev = schedule_error(dyn, run)
    print(f"\ntrack_min: |q - f| {eq:.1e} rad, |qd - f'| {ev:.1e} rad/s; sprocket torque {run.reactions[-1, 0]:.1f} N m")
    # to round-off of the step times (C forms t0 + k dt, the record k·stride·dt) at rates of 2 rad/s
    assert eq <= 1e-14 and ev <= 1e-13
    assert np.isfinite(run.reactions).all()


def test_set_motion_changes_the_run_without_regenerating(quarter):
    """Replacing a motion at run time changes what the stepper drives; the compiled library is the same file."""
    lib = quarter.library
    quarter.set_motion("post_drive", M.sweep(0.01, 0.5, 5.0, 2.0, blend=0.3))
    try:
        tr = simulate(quarter, quarter.model.q0(), np.zeros(quarter.nv), 1.0, 1e-3, "verlet")
        assert schedule_error(quarter, tr)[0] <= 1e-15 and quarter.library == lib
        with pytest.raises(ValueError, match="no driver 'nope'"):
            quarter.set_motion("nope", M.constant(0.0))
    finally:
        quarter.set_motion("post_drive", quarter.model.drivers[0].motion)


def test_set_motion_refuses_what_the_loops_cannot_follow():
    """With the sprung mass held too, a post stroke of ±0.6 m takes the wheel past the suspension's travel."""
    dyn = Dynamics(driven("quartercar", "\ndriver hold\n  joint sprung\nend\n" + POST))
    with pytest.raises(ValueError, match="out of its joint's reach"):
        dyn.set_motion("post_drive", M.sine(0.6, 1.0, 0.0, blend=0.5))
    dyn.set_motion("post_drive", M.sine(0.05, 1.0, 0.0, blend=0.5))


def test_fwd_dyn_sim_refuses_a_driven_model(quarter):
    with pytest.raises(ValueError, match="is driven"):
        quarter.step(0, 1, 0.0, 1e-3, quarter.model.q0(), np.zeros(quarter.nv), np.zeros(quarter.nv),
                     np.zeros((1, quarter.nv)), None, None, 1.0, 1, np.zeros((1, quarter.nq)),
                     np.zeros((1, quarter.nv)), np.zeros(1), np.zeros(1))


@pytest.mark.parametrize("extra, line, phrase", [
    ("driver w\n joint wheel\nend\n", 2, "drives floating body 'wheel'"),
    ("driver a\n joint post\nend\ndriver b\n joint post\nend\n", 5, "already driven by driver 'a' (line"),
    ("driver a\n joint post\n sine 0.02 1 0\n ramp 0.1\nend\n", 4, "has two motions"),
    ("driver a\n joint post\n sine 0.02 1 0\nend\n", 3, "starts with a jump"),
    ("driver a\n joint post\n blend 0\nend\n", 3, "expected a number > 0"),
    ("driver a\n joint post\n table missing.txt\nend\n", 3, "does not exist"),
    ("driver a\n joint sprung\nend\ndriver b\n joint post\nend\ndriver c\n joint uca\nend\n", 7,
     "over-constrains the loops"),
    ("driver a\n joint sprung\nend\ndriver b\n joint post\n sine 0.6 1 0\n blend 1\nend\n", 4,
     "out of its joint's reach"),
])
def test_bad_drivers(extra, line, phrase):
    """Each bad driver is one error at its line (counted from the appended block's first line, 1)."""
    text = undriven_text("quartercar")
    first = (text + "\n").count("\n") + 1
    with pytest.raises(MechError) as info:
        parse(text + "\n" + extra, path="models/quartercar.mech")
    assert phrase in info.value.msg, str(info.value)
    assert info.value.line == first + line - 1, str(info.value)


@pytest.mark.parametrize("rows, line, phrase", [
    ("0 0\n1 0.01\n1 0.02\n", 3, "does not come after"),
    ("0 0\n1 nan\n", 2, "expected two numbers"),
    ("0 0\n1 2 3\n", 2, "expected two numbers"),
    ("0 0\n", None, "has 1 row(s)"),
])
def test_bad_tables(tmp_path, rows, line, phrase):
    """A table file's bad row is an error at that row of the table file; a short file at the driver."""
    (tmp_path / "road.txt").write_text(rows)
    mech = tmp_path / "q.mech"
    mech.write_text(undriven_text("quartercar") + "\ndriver a\n joint post\n table road.txt\nend\n")
    from mechdyn.core.parse import load_model
    with pytest.raises(MechError) as info:
        load_model(mech)
    assert phrase in info.value.msg, str(info.value)
    if line is not None:
        assert info.value.path.endswith("road.txt") and info.value.line == line


def test_planted_stepper_that_lets_the_driven_coordinate_drift_is_caught(quarter):
    """step.c planted without its end-of-step reset of the driven coordinates (they then drift with their rate,
    set only at each force evaluation): the schedule check fails by far more than round-off."""
    from mechdyn.sim import native

    line = "        if (m->drv) md_drive(m->drv->d, m->drv->n, m->nact, t0 + (k + 1) * dt, NULL, m->drv->act, q, qd);\n"
    text = native.step_source()
    assert line in text
    planted = native.compile(step_text=text.replace(line, ""))
    sim = ContactSim(quarter, ramp_ground=0.0, ramp_band=0.0, predictor=True, module=planted)
    run = sim.run(quarter.model.q0(), np.zeros(quarter.nv), 1.5, 1e-3, "verlet")
    eq, ev = schedule_error(quarter, run)
    print(f"\nplanted: |q - f| {eq:.1e} m, |qd - f'| {ev:.1e} m/s")
    assert eq > 1e-9 or ev > 1e-9
