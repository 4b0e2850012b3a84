"""The stepping loop with contact (mechdyn/sim/step.c) against other routes to the same numbers: the generated
stepper fwd_dyn_sim, the model's own RSDA for a brake, the producers called from Python, and the order of the
scheme it runs on contact models."""

import numpy as np
import pytest

import mechdyn
from mechdyn.codegen.stepper import SCHEMES
from mechdyn.contact.producers import Contact
from mechdyn.core.parse import parse
from mechdyn.sim.contact import AUX, Brake, ContactSim, accuracy_step, sprocket_brakes
from mechdyn.sim.run import initial_state, simulate


@pytest.mark.parametrize("name", ["springpend", "satellite", "quartercar", "fourbar"])
@pytest.mark.parametrize("scheme", ["euler", "verlet"])
def test_without_contact_it_is_fwd_dyn_sim(name, scheme):
    """On a model without band or ground, and with Verlet's predictor on, the loop takes the generated stepper's
    steps bit for bit: state and dissipated work. (Two writings of one scheme; the loop adds only contact.)"""
    dyn = mechdyn.load(name)
    q0, qd0 = initial_state(dyn, seed=3)
    ref = simulate(dyn, q0, qd0, 0.05, 1e-3, scheme, stride=10)
    got = ContactSim(dyn, predictor=True, ramp_ground=0.0).run(q0, qd0, 0.05, 1e-3, scheme, stride=10)
    assert np.array_equal(ref.q, got.q) and np.array_equal(ref.qd, got.qd)
    assert np.array_equal(ref.dissipated, got.dissipated)
    assert not got.aux[:, AUX.index("wx"):AUX.index("jz") + 1].any()  # no ground: no wrench, no impulse


def test_without_the_predictor_it_is_not_fwd_dyn_sim():
    """The control: the predictor is what the bitwise test above exercises (off, the steps differ)."""
    dyn = mechdyn.load("springpend")
    q0, qd0 = initial_state(dyn, seed=3)
    ref = simulate(dyn, q0, qd0, 0.05, 1e-3, "verlet", stride=10)
    got = ContactSim(dyn, predictor=False).run(q0, qd0, 0.05, 1e-3, "verlet", stride=10)
    assert not np.array_equal(ref.q, got.q)


def _end_error(dyn, q0, qd0, T, dt, ref, predictor):
    r = ContactSim(dyn, predictor=predictor).run(q0, qd0, T, dt, "verlet", stride=int(round(T / dt)))
    return float(np.abs(np.concatenate([r.q[-1] - ref.q[-1], r.qd[-1] - ref.qd[-1]])).max())


def test_order_without_the_predictor():
    """The stated order: Verlet without the predictor is first order in the velocity slot once a force depends on
    velocity (springpend's dampers), and second order with it. The global error at T from a fine reference
    falls 2x per halving of dt without, 4x with."""
    dyn = mechdyn.load("springpend")
    q0, qd0 = initial_state(dyn, seed=1)
    T, dt = 0.5, 2e-3
    ref = ContactSim(dyn, predictor=True).run(q0, qd0, T, dt / 64, "verlet", stride=int(round(64 * T / dt)))
    ratio = {}
    for predictor in (False, True):
        e1, e2 = (_end_error(dyn, q0, qd0, T, h, ref, predictor) for h in (dt, dt / 2))
        ratio[predictor] = e1 / e2
        print(f"springpend, predictor {'on' if predictor else 'off'}: end error {e1:.3e} at dt {dt:g}, {e2:.3e} "
              f"at dt/2: ratio {e1 / e2:.3f}")
    assert 1.8 < ratio[False] < 2.3
    assert 3.6 < ratio[True] < 4.4


@pytest.fixture(scope="module")
def track_min():
    return mechdyn.load("track_min")


def test_brake_is_an_rsda(track_min):
    """A brake in the loop (k, c on the sprocket's joint) steps exactly as the same model with an rsda of that k
    and c declared on that joint: the torque −k(q − q0) − c·qd and the dampers' work, by the generated code's
    own element against the loop's."""
    dyn = track_min
    con = Contact(dyn.model)
    step = accuracy_step(con)
    q0 = dyn.model.q0()
    (brake,) = sprocket_brakes(con, q0, step.period)
    sprocket = dyn.model.bodies[brake.body].name
    text = open(dyn.model.path).read() + (f"\nrsda brake_test\n  joint {sprocket}\n  k {brake.k!r}\n  c {brake.c!r}\n"
                                          f"  q0 {brake.q0!r}\nend\n")
    ref_model = parse(text, dyn.model.path)
    ref_dyn = mechdyn.Dynamics(ref_model)
    braked = ContactSim(dyn)
    braked.set_brakes((brake,))
    qd0 = np.zeros(dyn.nv)
    qd0[dyn.model.vidx[brake.body]] = 2.0  # a spinning sprocket, so the damper works
    a = braked.run(q0, qd0, 0.05, step.dt, stride=50)
    b = ContactSim(ref_dyn).run(q0, qd0, 0.05, step.dt, stride=50)
    assert np.allclose(a.q, b.q, rtol=0, atol=1e-12) and np.allclose(a.qd, b.qd, rtol=0, atol=1e-9)
    assert np.allclose(a.dissipated, b.dissipated, rtol=1e-12, atol=1e-12)
    assert a.col("u_brake")[-1] == pytest.approx(0.5 * brake.k * (a.q[-1][dyn.model.qidx[brake.body]] - brake.q0) ** 2)


def test_wrench_and_impulse_are_the_producers(track_min):
    """Step by step inside the ground's ramp, the ground wrench the loop reports is the sum of
    Contact.ground_fext's rows at the state the step evaluates (Euler: the step's start; Verlet: after the first
    half drift, at the unpredicted velocity) times t/ramp at the step's force time, and the impulse sums them
    times dt."""
    dyn = track_min
    q0, qd0 = dyn.model.q0(), np.zeros(dyn.nv)
    qd0[dyn.model.vidx[0] + 5] = -0.3  # the hull sinking, so the damper loads too
    qd0[dyn.model.vidx[0] + 3] = 0.2  # and sliding, so the friction does
    dt, ramp, n = 1e-4, 0.02, 40
    con = Contact(dyn.model)
    for scheme, shift in (("euler", 0.0), ("verlet", 0.5)):
        sim = ContactSim(dyn, ramp_ground=ramp)
        r = sim.run(q0, qd0, n * dt, dt, scheme)
        J = np.zeros(6)
        for k in range(n):
            q, qd = r.q[k], r.qd[k]
            if scheme == "verlet":
                q = dyn.drift(q, qd, 0.5 * dt)
            want = con.ground_fext(dyn.bodies(q, qd), dt).sum(axis=0) * min(1.0, (k + shift) * dt / ramp)
            J += want * dt
            assert np.allclose(r.aux[k + 1, 1:7], want, rtol=1e-12, atol=1e-9), (scheme, k)
            assert np.allclose(r.aux[k + 1, 7:13], J, rtol=1e-12, atol=1e-12), (scheme, k)
        assert np.abs(r.aux[-1, 1:7]).max() > 1.0  # the check above is not of zeros
        assert np.array_equal(sim.impulse, r.aux[-1, 7:13])
        assert not r.col("work_contact").any()  # not asked for


def test_verlet_on_contact_models_has_no_predictor_by_default(track_min):
    """ContactSim's default is the scheme stated for contact models (docs/simulation.md)."""
    assert ContactSim(track_min).predictor is False
    assert SCHEMES["verlet"] == 1


def test_run_refuses_bad_input(track_min):
    sim = ContactSim(track_min)
    q0, qd0 = track_min.model.q0(), np.zeros(track_min.nv)
    with pytest.raises(ValueError, match="q0 has shape"):
        sim.run(q0[:-1], qd0, 0.01, 1e-4)
    with pytest.raises(ValueError, match="expected dt > 0"):
        sim.run(q0, qd0, 0.01, -1e-4)
    bad = q0.copy()
    bad[:4] *= 2
    with pytest.raises(ValueError, match="unit quaternion"):
        sim.run(bad, qd0, 0.01, 1e-4)
    with pytest.raises(ValueError, match="revolute or prismatic"):
        sim.set_brakes((Brake(0, 0.0, 1.0, 1.0),))
    with pytest.raises(ValueError, match="same model|bodies"):
        ContactSim(track_min, model=mechdyn.load("elbow").model)
    # what the C writes or reads by index is not the caller's to replace: read-only, and copies
    for name in ("brakes", "impulse", "anchors"):
        with pytest.raises(AttributeError):
            setattr(sim, name, None)
    sim.impulse[:] = 1.0
    assert not sim.impulse.any()
