"""Generalized-α in the contact loop (step.c, docs/implicit.md "With contact") on the M113: the settle's gates and
the slope hold at four times Verlet's accuracy step, the real-time mode, the velocity slot's order measured by
the momentum residual (second order, where Verlet without its predictor is first), and a planted first-order
impulse that the order check catches; and on models without contact, the loop's implicit step against galpha.c's
stepper on the generated derivatives."""
from pathlib import Path

import numpy as np
import pytest

import mechdyn
from mechdyn.sim import native
from mechdyn.sim.contact import AUX, ContactSim, accuracy_step
from mechdyn.sim.implicit import Implicit
from mechdyn.sim.run import initial_state, simulate
from mechdyn.sim.settle import Settle, settle
from mechdyn.sim.slope import hold

SHORT = 1.2  # s: the order runs (the ground ramp is 0.02 s, the windows the first and last 0.5)
FINE = (9.37e-5, 4.685e-5)  # s: the order runs' two steps, fine enough for the asymptotic ratio


@pytest.fixture(scope="module")
def m113():
    return mechdyn.load("m113")


@pytest.fixture(scope="module")
def large(m113) -> float:
    """Four times Verlet's accuracy step (about 22 samples per contact period)."""
    return 4 * accuracy_step(ContactSim(m113).contact).dt


@pytest.fixture(scope="module")
def settled(m113, large) -> Settle:
    return settle(m113, dt=large, scheme="galpha")


def _gates(res) -> dict:
    return {g.name: g for g in res.gates}


def test_settle_passes_every_gate_at_four_times_the_accuracy_step(m113, large, settled):
    for g in settled.gates:
        print(g.line())
    n = settled.run.newton
    print(f"galpha at {large:.4g} s: {n.per_step:.3g} corrections a step (at most {n.most}), {n.matrices} matrices "
          f"over {n.steps} steps, {settled.stepping:.3g} s stepping for {settled.run.t[-1]:.3g} s")
    assert all(g.passed for g in settled.gates)
    assert n.steps == round(settled.run.t[-1] / large) and n.matrices >= 3 and n.most <= 12
    # the control: Verlet at the same step injects more in one step than the energy gate allows
    verlet = settle(m113, dt=large)
    assert not _gates(verlet)["energy"].passed


def test_slope_hold_at_four_times_the_accuracy_step(m113, large, settled):
    q, qd = settled.state
    h = hold(m113, q, qd, dt=large, scheme="galpha")
    print(h.gates[0].line(), f"energy rise {h.rise:.3g} J (bound {h.rise_bound:.3g} J)")
    assert all(g.passed for g in h.gates) and h.rise <= h.rise_bound


def test_real_time_mode_passes_every_gate(m113, large):
    res = settle(m113, dt=large, scheme="galpha", implicit=Implicit(iterations=2))
    n = res.run.newton
    print(f"2 corrections a step: last correction at most {n.last_change:.3g} m/s, {n.matrices} matrices")
    assert all(g.passed for g in res.gates)
    assert n.most == 2 and n.iterations == 2 * n.steps


def momentum_residuals(dyn, scheme: str, sim=None) -> list[float]:
    """The settle's momentum gate (|ΔP − M·g·Δt − ΔJ| over the impulse scale) at each of FINE's steps."""
    return [_gates(settle(dyn, T=SHORT, dt=dt, scheme=scheme, sim=sim))["momentum"].value for dt in FINE]


def test_velocity_slot_is_second_order(m113):
    """The momentum residual is the velocity slot's truncation (the loop's impulse against the momentum the
    bodies gained): halving dt divides it by 4 with generalized-α, by 2 with Verlet, which runs the tracked
    models without its predictor (docs/simulation.md)."""
    ga, verlet = momentum_residuals(m113, "galpha"), momentum_residuals(m113, "verlet")
    print(f"momentum residual at dt {FINE}: galpha {ga} (ratio {ga[0] / ga[1]:.3f}), verlet {verlet} "
          f"(ratio {verlet[0] / verlet[1]:.3f})")
    assert 3.6 < ga[0] / ga[1] < 4.4
    assert 1.7 < verlet[0] / verlet[1] < 2.3
    assert ga[1] < 1e-2 * verlet[1]


def test_planted_first_order_impulse_is_caught(m113):
    """The impulse the loop reports, planted as h times the step's end wrench instead of the scheme's own
    pseudo-wrench recurrence: first order, and the ratio falls to 2."""
    text = (Path(native.__file__).parent / "step.c").read_text()
    planted = text.replace("J[i] += h * ((1.0 - o->gamma) * G->wrench[6 + i] + o->gamma * bar);", "J[i] += h * W[i];")
    assert planted != text
    bad = momentum_residuals(m113, "galpha", ContactSim(m113, module=native.compile(step_text=planted)))
    print(f"planted: momentum residual {bad}, ratio {bad[0] / bad[1]:.3f}")
    assert bad[0] / bad[1] < 2.4


def implicit_without_contact(dyn, scheme: str, module=None, adaptive: bool = False):
    """Both implicit routes on a model without band or ground from a seeded state, 0.05 s at 1e-3 s (adaptive:
    0.1 s of outputs 1e-2 s apart at rtol 1e-5): galpha.c with its matrix from the generated derivatives at every
    correction (simulate), and the contact loop with its matrix by differences kept across steps."""
    q0, qd0 = initial_state(dyn, seed=3)
    opts = Implicit(tol=1e-12, adaptive=adaptive, rtol=1e-5)
    T, dt, stride = (0.1, 1e-2, 1) if adaptive else (0.05, 1e-3, 10)
    ref = simulate(dyn, q0, qd0, T, dt, scheme, stride=stride, implicit=opts)
    got = ContactSim(dyn, ramp_ground=0.0, module=module).run(q0, qd0, T, dt, scheme, stride=stride, implicit=opts)
    return ref, got


@pytest.mark.parametrize("name", ["springpend", "satellite", "quartercar", "fourbar"])
@pytest.mark.parametrize("scheme, adaptive", [("galpha", False), ("hht", False), ("galpha", True)])
def test_without_contact_it_is_the_derivatives_stepper(name, scheme, adaptive):
    """Two routes to one scheme: the same states and dissipated work to Newton's tolerance, though the matrices
    differ (exact at every correction, by differences and kept), since Newton converges to the same root; the
    adaptive controller takes the same steps and rejects the same ones."""
    ref, got = implicit_without_contact(mechdyn.load(name), scheme, adaptive=adaptive)
    gaps = [float(np.abs(a - b).max()) for a, b in ((ref.q, got.q), (ref.qd, got.qd), (ref.dissipated, got.dissipated))]
    r, g = ref.newton, got.newton
    print(f"{name} {scheme}{' adaptive' if adaptive else ''}: q {gaps[0]:.2g}, qd {gaps[1]:.2g}, work {gaps[2]:.2g}; "
          f"corrections a step {r.per_step:.3g} and {g.per_step:.3g}, {g.matrices} matrices by differences; steps "
          f"{r.steps} and {g.steps}, rejected {r.rejected} and {g.rejected}")
    assert max(gaps) < (1e-8 if adaptive else 1e-11)
    assert (r.steps, r.rejected) == (g.steps, g.rejected)


def test_planted_pseudo_acceleration_is_caught():
    """The contact loop's step started from the true acceleration where the scheme carries its pseudo-acceleration
    (α_m, α_f dropped from the recurrence): the routes part."""
    text = (Path(native.__file__).parent / "step.c").read_text()
    planted = text.replace("ga_save(&G->plant, &gw, q, qd, qdd_prev, G->acc);",
                           "ga_save(&G->plant, &gw, q, qd, qdd_prev, qdd_prev);")
    assert planted != text
    ref, got = implicit_without_contact(mechdyn.load("springpend"), "galpha", native.compile(step_text=planted))
    print(f"planted: qd apart by {np.abs(ref.qd - got.qd).max():.3g}")
    assert np.abs(ref.qd - got.qd).max() > 1e-6


def test_adaptive_step_with_contact():
    """The adaptive step in the contact loop on track_min's settle: every gate at outputs four accuracy steps
    apart, the step following the local error estimate (rejections, a range of steps), more steps for a tighter
    tolerance. atol 1e-6 m: the default 1e-9 asks the contact for nanometres (docs/implicit.md)."""
    dyn = mechdyn.load("track_min")
    every = 4 * accuracy_step(ContactSim(dyn).contact).dt
    runs = {rtol: settle(dyn, T=SHORT, dt=every, scheme="galpha", implicit=Implicit(adaptive=True, rtol=rtol,
                                                                                     atol=1e-6))
            for rtol in (1e-2, 1e-3)}
    for rtol, res in runs.items():
        n = res.run.newton
        print(f"rtol {rtol:g}: {n.steps} steps from {n.h_min:.3g} to {n.h_max:.3g} s, {n.rejected} rejected, "
              f"{n.matrices} matrices; gates {'pass' if all(g.passed for g in res.gates) else 'FAIL'}")
        assert all(g.passed for g in res.gates)
        assert n.rejected > 0 and n.h_max > 2 * n.h_min and n.h_max <= every * (1 + 1e-9)
    assert runs[1e-3].run.newton.steps > runs[1e-2].run.newton.steps


def test_anchored_friction_without_a_ground():
    """Anchors asked for on a model with no ground to anchor to: the implicit loop steps it as without them."""
    dyn = mechdyn.load("springpend")
    q0, qd0 = initial_state(dyn, seed=3)
    plain, anchored = (ContactSim(dyn, anchored=a).run(q0, qd0, 0.02, 1e-3, "galpha", stride=20) for a in (False, True))
    assert np.array_equal(plain.q, anchored.q) and np.array_equal(plain.qd, anchored.qd)


def test_contact_work_only_where_integrated():
    """Runs that continue one another with the contact's dissipation integrated, not, and again (as the settle's
    three parts do): the middle one adds nothing to the contact's work, and the third starts from its own power."""
    dyn = mechdyn.load("track_min")
    sim, col = ContactSim(dyn), AUX.index("work_contact")
    q, qd, t = dyn.model.q0(), np.zeros(dyn.nv), 0.0
    works = []
    for dissipation in (True, False, True):
        r = sim.run(q, qd, 0.01, 2e-4, "galpha", stride=1, t0=t, dissipation=dissipation)
        works.append(r.aux[-1, col] - r.aux[0, col])
        q, qd, t = r.q[-1], r.qd[-1], r.t[-1]
    whole = ContactSim(dyn).run(dyn.model.q0(), np.zeros(dyn.nv), 0.03, 2e-4, "galpha", stride=1, dissipation=True)
    print(f"contact work over 0.01 s: {works} (integrated throughout: {whole.aux[50, col]:.4g}, ...)")
    assert works[1] == 0.0 and works[0] > 0 and works[2] > 0
    third = whole.aux[-1, col] - whole.aux[100, col]
    assert abs(works[2] - third) < 1e-6 * abs(third)


@pytest.mark.parametrize("kw, words", [
    (dict(implicit=Implicit(iterations=2, refresh=0)), "refresh > 0"),
    (dict(scheme="verlet", implicit=Implicit()), "explicit scheme"),
])
def test_contact_run_refuses(m113, kw, words):
    sim, q0 = ContactSim(m113), m113.model.q0()
    kw = {"scheme": "galpha", **kw}
    with pytest.raises(ValueError, match=words):
        sim.run(q0, np.zeros(m113.nv), 1e-3, 1e-3, **kw)


def test_refresh_is_the_contact_loops_setting():
    dyn = mechdyn.load("elbow")
    with pytest.raises(ValueError, match="contact loop's setting"):
        simulate(dyn, dyn.model.q0(), np.zeros(dyn.nv), 0.01, 1e-3, "galpha", implicit=Implicit(refresh=10))
