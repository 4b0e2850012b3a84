"""The settle's gates (mechdyn/sim/settle.py) on track_min: they pass on the product, and each trips on a bug
planted for it, in the contact C, in the stepping loop's C, or in the model."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mechdyn.contact import native as contact_native
from mechdyn.core.kinematics import forward_kinematics
from mechdyn.core.parse import load_model
from mechdyn.core.sample import states
from mechdyn.dynamics import Dynamics
from mechdyn.sim import native
from mechdyn.sim.contact import ContactSim
from mechdyn.sim.energy import energy_terms, mechanics
from mechdyn.sim.run import step_count
from mechdyn.sim.settle import Settle, alternation, settle

SHORT = 1.2  # s: a planted bug's run (the ground ramp is 0.02 s, the windows the first and last 0.5)


def loop(contact: tuple[str, str] | None = None, step: tuple[str, str] | None = None):
    """The stepping loop's module with (old, new) replaced once in the contact C and/or in step.c."""
    texts = []
    for text, plant in ((contact_native.source(), contact), (native.step_source(), step)):
        if plant:
            assert text.count(plant[0]) == 1, f"the planted bug's anchor is not unique: {plant[0]!r}"
            text = text.replace(*plant)
        texts.append(text)
    return native.compile(*texts)


def gate(res: Settle, name: str):
    (g,) = [g for g in res.gates if g.name == name]
    print(g.line())
    return g


@pytest.fixture(scope="module")
def dyn() -> Dynamics:
    return Dynamics(load_model("track_min"))


@pytest.fixture(scope="module")
def full(dyn) -> Settle:
    return settle(dyn)


@pytest.fixture(scope="module")
def short(dyn) -> Settle:
    return settle(dyn, T=SHORT)


@pytest.fixture(scope="module")
def loaded_pad(dyn, short) -> tuple[int, int]:
    """The pad carrying the most vertical ground force at the short settle's end, and a roller body (a read fext
    slot that is not a pad's)."""
    con = short.sim.contact
    fext = np.asarray(con.ground_fext(dyn.bodies(*short.state))).reshape(dyn.nbody, 6)
    pads = np.asarray(con.ground.pad_body)
    pad = int(np.argmax(fext[pads, 5]))
    assert fext[pads[pad], 5] > 0.1 * short.run.col("fz")[-1], "the chosen pad carries little of the load"
    return pad, con.bands[0].rollers[-1].body


def test_mechanics_is_energy_terms(dyn):
    """The vectorized energy and momentum equal energy_terms and Σ m·v_cg of forward_kinematics, state by state."""
    for model in (dyn.model, load_model("slidercrank")):
        S = list(states(model, 5, 3, tear=0.0))
        mech = mechanics(model, np.array([s.q for s in S]), np.array([s.qd for s in S]))
        for k, s in enumerate(S):
            T, V, _ = energy_terms(model, s.q, s.qd)
            kin = forward_kinematics(model, s.q, s.qd)
            P = sum(b.mass * kin.R[i] @ (kin.v[i, 3:] + np.cross(kin.v[i, :3], b.cg)) for i, b in enumerate(model.bodies))
            assert mech.kinetic[k] == pytest.approx(T, rel=1e-12, abs=1e-12)
            assert mech.potential[k] == pytest.approx(V, rel=1e-12, abs=1e-9)
            np.testing.assert_allclose(mech.momentum[k], P, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(P).max()))


def test_the_settle_passes(full):
    for g in full.gates:
        print(g.line())
    for n in full.notes:
        print(n)
    assert [g.name for g in full.gates] == ["crush", "load", "momentum", "energy", "energy_net", "passivity", "balance", "period2"]
    assert all(g.passed for g in full.gates)
    assert full.run.t[-1] == pytest.approx(4.0, abs=full.step.dt)
    # the windows are every step: their rows are dt apart, and the parts continue each other's work and impulse
    assert np.allclose(np.diff(full.run.t[full.last_window_row:]), full.step.dt)
    assert np.allclose(np.diff(full.run.t[:step_count(0.5, full.step.dt) + 1]), full.step.dt)
    assert np.all(np.diff(full.run.col("work")) >= 0)
    assert np.all(np.diff(full.run.col("jz")) >= 0) and np.all(np.diff(full.run.col("jz")[full.last_window_row:]) > 0)


def test_crush_trips_on_a_soft_band(dyn, short):
    """kn / 100 on the band: the road wheel sinks through the shoes' thickness."""
    soft = dataclasses.replace(dyn.model, tracks=tuple(dataclasses.replace(t, kn=t.kn / 100) for t in dyn.model.tracks))
    assert gate(short, "crush").passed
    assert not gate(settle(dyn, T=SHORT, dt=short.step.dt, sim=ContactSim(dyn, model=soft)), "crush").passed


def test_load_trips_on_a_pad_force_on_the_wrong_body(dyn, short, loaded_pad):
    """One loaded pad's force lands on a roller's fext row: it is applied, but not counted as the ground's."""
    pad, roller = loaded_pad
    mod = loop(contact=("double *row = fext + 6 * g->pad_body[i], *anchor",
                        f"double *row = fext + 6 * (i == {pad} ? {roller} : g->pad_body[i]), *anchor"))
    assert gate(short, "load").passed
    assert not gate(settle(dyn, T=SHORT, sim=ContactSim(dyn, module=mod)), "load").passed


def test_momentum_trips_on_a_dropped_reaction(dyn, short, loaded_pad):
    """The loop applies one loaded pad's ground wrench but leaves it out of the impulse it reports."""
    pad, _ = loaded_pad
    mod = loop(step=("row[k] *= sg, W[k] += row[k];", f"row[k] *= sg, W[k] += i == {pad} ? 0.0 : row[k];"))
    good, bad = gate(short, "momentum"), gate(settle(dyn, T=SHORT, sim=ContactSim(dyn, module=mod)), "momentum")
    assert good.passed and not bad.passed
    assert bad.value > 1e3 * good.value


def test_momentum_residual_is_truncation(dyn, short):
    """Halving dt twice shrinks the residual (first order: the velocity slot is, without the predictor)."""
    runs = [short] + [settle(dyn, T=SHORT, dt=short.step.dt / k) for k in (2, 4)]
    res = [gate(r, "momentum").value for r in runs]
    print("momentum residual at dt, dt/2, dt/4:", res)
    assert res[0] > 1.6 * res[1] > 1.6 ** 2 * res[2]


def test_energy_trips_on_an_anti_damper(dyn, short):
    """The ground's normal damper with its sign flipped pumps energy in."""
    mod = loop(contact=("double f = g->kn * gap + g->cg *", "double f = g->kn * gap - g->cg *"))
    bad = settle(dyn, T=SHORT, sim=ContactSim(dyn, module=mod))
    assert gate(short, "energy").passed and gate(short, "energy_net").passed
    assert not gate(bad, "energy").passed and not gate(bad, "energy_net").passed


def test_passivity_trips_on_the_face_friction_sign(dyn, short):
    """Seed 000's anti-damper: the road wheels' face friction with its sign flipped does positive work, so the
    contact's dissipated work falls over a step."""
    mod = loop(contact=("double fric[3] = {k * slip[0], k * slip[1], 0.0};",
                        "double fric[3] = {-k * slip[0], -k * slip[1], 0.0};"))
    bad = settle(dyn, T=SHORT, sim=ContactSim(dyn, module=mod))
    assert gate(short, "passivity").passed
    assert not gate(bad, "passivity").passed


def test_balance_trips_on_a_scheme_that_injects(dyn, short):
    """Verlet's velocity predictor reaching 8x too far (qd + qdd_prev·4dt) forces the dampers: the scheme injects,
    which the complete budget sees step by step over the settled window."""
    plain = settle(dyn, T=SHORT, sim=ContactSim(dyn, predictor=True))
    mod = loop(step=("qdm[i] = qd[i] + qdd_prev[i] * 0.5 * dt;", "qdm[i] = qd[i] + qdd_prev[i] * 4.0 * dt;"))
    bad = settle(dyn, T=SHORT, sim=ContactSim(dyn, module=mod, predictor=True))
    assert gate(short, "balance").passed and gate(plain, "balance").passed
    assert not gate(bad, "balance").passed


def test_period2_trips_on_a_damper_past_its_explicit_limit(dyn, short):
    """The ground's normal damper 100x too strong: c·dt/m = 3.8 on a pad corner, past the explicit limit of 2, so
    each step's damping reverses the corner's normal velocity and the force alternates from step to step, bounded
    by the clamp at zero. At 30x (c·dt/m = 1.1, inside the limit) it is heavy damping, not alternation."""
    con = short.sim.contact
    assert con.ground.cg * short.step.dt / con.ground.corner_mass.min() == pytest.approx(0.038, abs=0.001)

    def damper(x: float) -> Settle:
        mod = loop(contact=("double f = g->kn * gap + g->cg *", f"double f = g->kn * gap + {x} * g->cg *"))
        return settle(dyn, T=SHORT, sim=ContactSim(dyn, module=mod))

    assert gate(short, "period2").passed and gate(damper(30.0), "period2").passed
    assert not gate(damper(100.0), "period2").passed


def test_settle_refuses_windows_longer_than_the_run(dyn):
    with pytest.raises(ValueError, match="T must exceed 1 s"):
        settle(dyn, T=0.9)


def sim_cli(capsys, *argv: str) -> tuple[int, str]:
    """mechdyn sim's exit code and output; the settle alone (--slope 0) unless argv asks for a hold."""
    from mechdyn.cli import main

    with pytest.raises(SystemExit) as e:
        main(["sim", *argv, *(() if "--slope" in argv else ("--slope", "0"))])
    out = capsys.readouterr()
    return e.value.code, out.out + out.err


def test_mechdyn_sim_settles_a_tracked_model(dyn, capsys):
    code, out = sim_cli(capsys, "track_min", "--time", "1.2")
    print(out)
    assert code == 0
    assert "90 samples per contact period" in out and "the accuracy step" in out
    for name in ("crush", "load", "momentum", "energy", "energy_net", "passivity", "balance", "period2"):
        assert f"PASS {name}:" in out
    assert "real-time factor" in out and "wall in all (real-time factor" in out


def test_mechdyn_sim_exits_1_when_a_gate_fails(dyn, capsys):
    """At 6 samples per contact period a step of the start's transient adds energy (1.6 J at t = 0.14 s)."""
    code, out = sim_cli(capsys, "track_min", "--time", "1.2", "--samples", "6")
    print(out)
    assert code == 1 and "FAIL energy:" in out and "not all 8 gates passed" in out


@pytest.mark.parametrize("argv, needle", [(("--seed", "1"), "--seed is not available"),
                                          (("--time", "0.9"), "T must exceed 1 s, got 0.9"),
                                          (("--stride", "100000"), "stride of 100000"),
                                          (("--slope", "15", "--hold-time", "2"), "--hold-time must exceed 2")])
def test_mechdyn_sim_contact_refuses(dyn, capsys, argv, needle):
    code, out = sim_cli(capsys, "track_min", *argv)
    assert code == 2 and needle in out, out


def test_mechdyn_sim_holds_after_the_settle(dyn, capsys, tmp_path):
    """After the settle, --slope parks the settled vehicle and prints the hold's gate (and writes its trace)."""
    from mechdyn.sim.trace import read_trace

    path = tmp_path / "tm.csv"
    code, out = sim_cli(capsys, "track_min", "--time", "1.2", "--slope", "15", "--fric", "reg", "--hold-time",
                        "2.5", "--trace", str(path))
    print(out)
    assert code == 0 and "PASS hold_control:" in out and "hold_slip" not in out
    hold, flat = read_trace(tmp_path / "tm_hold.csv"), read_trace(path)
    # the hold starts from the settled state turned by 15° (track_min rests pitched on its V-shaped lower run)
    assert hold.meta["run"] == "hold on 15 deg, reg friction"
    assert abs(hold.data["pitch"].iloc[0] - flat.data["pitch"].iloc[-1] - 15.0) < 1e-6


def test_alternation_sees_only_the_alternating_part():
    """A constant, a ramp and a slow sine carry no period-2 content whatever the count; ±a about them is a. Over an
    odd count the constant alone would read as its value over the count (the mean leaking in)."""
    for n in (2675, 2676):
        k = np.arange(n)
        smooth = np.stack([1.1e5 + 0 * k, 3.0 * k / n, 50 * np.sin(2 * np.pi * k / 900)], 1)
        assert np.abs(alternation(smooth)).max() < 0.2
        assert np.abs(alternation(smooth + 7.0 * ((-1.0) ** k)[:, None])) == pytest.approx([7.0] * 3, abs=0.2)
        if n % 2:
            assert abs(((-1.0) ** k) @ smooth[:, 0] / n) > 40  # what the even count avoids


def test_mechdyn_sim_traces_the_settle(dyn, capsys, tmp_path):
    """--trace writes the contact trace of the settle: trace_stride's rows, evenly spaced over the whole run."""
    from mechdyn.sim.trace import read_trace, trace_stride

    path = tmp_path / "tm.csv"
    code, out = sim_cli(capsys, "track_min", "--time", "1.2", "--trace", str(path))
    assert code == 0 and f"trace {path}" in out
    tr = read_trace(path)
    t = tr.data["t"].to_numpy()
    nsteps = step_count(1.2, float(tr.meta["dt"]))
    assert tr.meta["kind"] == "contact" and t[0] == 0.0
    assert abs(len(t) - nsteps / trace_stride(nsteps)) <= 2
    gaps = np.diff(t)
    assert t[-1] == pytest.approx(1.2, abs=2e-4) and gaps.max() < 1.5 * np.median(gaps)

