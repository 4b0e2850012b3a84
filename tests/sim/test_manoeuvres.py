"""Each vehicle gate (regression/test_vehicle_gates.py) trips on a planted bug: a copy of the tires' C with one
term wrong, or a step of half the control period (8.5 times the accuracy step)."""
from functools import cache

import numpy as np
import pytest

from mechdyn.contact import native
from mechdyn.core.parse import load_model
from mechdyn.dynamics import Dynamics
from mechdyn.sim import manoeuvres as mv
from mechdyn.sim import native as sim_native
from mechdyn.sim.vehicle import Vehicle


@cache
def dyn() -> Dynamics:
    return Dynamics(load_model("hmmwv_road"))


def planted(old: str, new: str):
    """The contact loop compiled over the tires' C with `old` replaced by `new` (exactly once)."""
    src = native.source()
    assert src.count(old) == 1, old
    return sim_native.compile(contact_text=src.replace(old, new))


def car(speed: float, module=None, dt: float | None = None) -> Vehicle:
    return Vehicle(dyn(), speed=speed, dt=dt, module=module)


def failed(gates, name: str) -> bool:
    (g,) = [g for g in gates if g.name == name]
    return not g.passed


def test_statics_trip_on_a_stiffer_spring_than_the_law_says():
    c = car(1.0, planted("double f = depth * t->d1 + depth", "double f = 1.01 * depth * t->d1 + depth"))
    assert failed(mv.statics(c).gates, "sinkage")


def test_wheel_loads_trip_on_a_contact_point_reported_10_cm_off():
    c = car(1.0, planted("rec[14 + k] = P[k];", "rec[14 + k] = P[k] + (k == 0 ? 0.1 : 0.0);"))  # P reported off
    gates = mv.statics(c).gates
    assert failed(gates, "wheel_loads") and not failed(gates, "total_load")


def test_total_load_trips_when_a_tire_loses_its_load():
    st = mv.statics(car(1.0, planted("rec[0] = 1.0, rec[2] = Fl[2]", "rec[0] = 1.0, rec[2] = 0.9 * Fl[2]")))
    assert failed(st.gates, "total_load")


def test_brake_balance_trips_on_a_wrong_spring_potential():
    c = car(1.0, planted("*U = 0.5 * t->d1 * depth * depth", "*U = 0.5 * t->d1 * depth"))
    mv.statics(c)
    assert failed(mv.straight_brake(c, speed=8.0).gates, "brake_balance")


def test_brake_passivity_trips_on_an_injecting_slip_force():
    c = car(1.0, planted("Fx = (1.0 - frblend) * F0x + frblend * Fx;", "Fx = (1.0 - frblend) * F0x - frblend * Fx;"))
    mv.statics(c)
    assert failed(mv.straight_brake(c, speed=8.0).gates, "brake_passivity")


def test_turn_trips_on_a_lateral_force_of_the_wrong_sign():
    c = car(4.0, planted("Fl[0] = Fx, Fl[1] = Fy, Fl[2] = Fn;", "Fl[0] = Fx, Fl[1] = -Fy, Fl[2] = Fn;"))
    turn = mv.constant_radius(c, speeds=(4.0, 6.0))
    assert failed(turn.gates, "turn_ay") and failed(turn.gates, "understeer")


def test_understeer_trips_on_a_cornering_stiffness_blind_to_load():
    c = car(4.0, planted("double dfy0 = tm_quad(q, c[10], c[11])", "double dfy0 = tm_quad(1.0, c[10], c[11])"))
    assert failed(mv.constant_radius(c, speeds=(4.0, 6.0, 8.0)).gates, "understeer")


def test_lane_change_trips_on_a_steering_of_the_wrong_sign():
    good = car(15.0)
    c = Vehicle(dyn(), dt=good.dt, rack_per_steer=-good.rack_per_steer)
    mv.statics(c)
    assert failed(mv.lane_change(c).gates, "lane_change")


def test_the_step_check_trips_on_a_step_of_half_the_control_period():
    dt = Vehicle(dyn()).control_dt / 2  # 8.5 times the accuracy step
    paths = []
    for step in (dt, dt / 2):
        c = car(15.0, dt=step)
        mv.statics(c)
        paths.append(mv.lane_change(c).log)
    a, b = paths
    n = min(len(a["t"]), len(b["t"]))
    from regression.test_vehicle_gates import STEP_BOUND
    assert np.hypot(a["x"][:n] - b["x"][:n], a["y"][:n] - b["y"][:n]).max() > STEP_BOUND


def test_the_implicit_stepper_settles_the_car_on_its_tires():
    """The tires run inside the implicit step too: their bristles carried step to step and restored before each of
    Newton's evaluations, as the ground's anchors are. The settle's gates pass at 2 ms, 1.65 times the explicit
    accuracy step."""
    from mechdyn.sim.implicit import Implicit
    from mechdyn.sim.settle import settle

    res = settle(dyn(), 4.0, dt=2e-3, scheme="galpha", implicit=Implicit())  # as mechdyn sim settles
    assert all(g.passed for g in res.gates), [g.line() for g in res.gates if not g.passed]
    assert res.run.newton is not None


def test_simulate_steps_a_driven_model_without_its_contact():
    """simulate has no contact, driven or not: hmmwv_road (driven, on tires) steps as the drivers' reaction
    dynamics integrated by hand (semi-implicit Euler), its tires ignored. Its contact once leaked in through the
    contact loop that steps driven models (Project Chrono's free-flight gate caught it)."""
    from mechdyn.core.integrate import integrate
    from mechdyn.sim.run import simulate

    d = dyn()
    m, dt, n = d.model, 2e-5, 200
    q, qd = m.q_design.copy(), np.zeros(m.nv)
    tr = simulate(d, q, qd, n * dt, dt, scheme="euler", stride=n)
    q, qd, act = d.driven_state(q, qd, 0.0)
    for k in range(n):
        qd = qd + dt * d.react(q, qd, np.zeros(m.nv), None, act)[0]
        q = integrate(m, q, qd, dt)
        q, qd, act = d.driven_state(q, qd, (k + 1) * dt, close=False)  # the stepping's own state, as the loop's
    assert np.abs(tr.q[-1] - q).max() < 1e-9
    # the check can fail: the same steps with the tires in (the leak) land elsewhere
    from mechdyn.sim.contact import ContactSim

    leak = ContactSim(d, ramp_ground=0.0, predictor=True).run(m.q_design, np.zeros(m.nv), n * dt, dt, "euler", n)
    assert np.abs(leak.q[-1] - q).max() > 1e-6


def test_a_drive_gives_the_steering_driver_its_own_motion_back():
    """A Vehicle steers by setting the rack driver's motion each period; after the drive the shared Dynamics has
    the driver's own motion again (a later run on it must not steer by a table left behind)."""
    own = dyn().motions["steer"]
    car(1.0).drive(0.1, steer=0.5)
    assert dyn().motions["steer"] == own
