"""The Project Chrono cross-check: state mapping both ways, force-element signs, the exact KKT terms, and that
the checks catch what they exist to catch (a planted convention bug, a frozen RSDA torque, a driver's motor run
backwards or its reaction read with the wrong sign).

Tests that drive Chrono skip without pychrono; the mapping is plain numpy and the
missing-pychrono contract (one line, exit 2) is tested everywhere.
"""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from crosscheck.chrono import MISSING, have_pychrono
from crosscheck.chrono.mapping import Mapping, R_to_quat
from mechdyn.core.integrate import integrate
from mechdyn.core.kinematics import forward_kinematics
from mechdyn.core.parse import load_model, parse
from mechdyn.core.sample import scaled_error, states
from mechdyn.core.spatial import quat_to_R

needs_chrono = pytest.mark.skipif(not have_pychrono(), reason=MISSING)

MODELS = ["threelink", "springpend", "satellite", "fourbar", "slidercrank", "quartercar", "hmmwv"]

# One floating body per loop type the shipped models do not use (revolute, prismatic, cylindrical), each closed
# onto a swinging arm about an oblique axis with offset anchors, so both sides of every triad convention are hit.
LOOPS = """
gravity 0 0 -9.81
body arm
  parent base
  joint revolute y
  mass 2
  cg 0.3 0 0
  inertia 0.01 0.06 0.06 0 0 0
end
body door
  parent base
  joint floating
  xtree 0.6 0 -0.2
  mass 1.5
  cg 0.1 0.05 -0.1
  inertia 0.03 0.02 0.025 0.001 0 0.002
end
body slider
  parent base
  joint floating
  xtree 0.3 0.4 0.1
  mass 0.8
  cg 0.02 0 0.05
  inertia 0.004 0.005 0.006 0 0.0005 0
end
body sleeve
  parent base
  joint floating
  xtree 0.5 -0.4 0.2
  mass 1.1
  cg -0.05 0.02 0
  inertia 0.006 0.004 0.005 0 0 0.0003
end
loop hinge
  joint revolute
  pred arm
  succ door
  anchor_pred 0.6 0 0
  anchor_succ 0 0 0.2
  axis 1 1 0
end
loop rail
  joint prismatic
  pred arm
  succ slider
  anchor_pred 0.3 0.2 0
  anchor_succ 0 -0.2 -0.1
  axis 0 1 1
end
loop shaft
  joint cylindrical
  pred arm
  succ sleeve
  anchor_pred 0.5 -0.2 0.1
  anchor_succ 0 0.2 -0.1
  axis 1 0 1
end
"""


def loops_model():
    return parse(LOOPS, name="looptypes")


def with_drivers(text: str, joints: list[str], name: str):
    """The model of `text` with a driver (held at its design value) on each of these bodies' joints."""
    return parse(text + "".join(f"\ndriver drive_{j}\n  joint {j}\nend\n" for j in joints), name=name)


def driven_arm():
    """stanford with its shoulder (revolute y on a column turning about z), boom (prismatic x on the shoulder) and
    wrist pitch driven: the rotation motor and the linear one on moving, turning parents, out of plane."""
    text = (Path(__file__).resolve().parents[2] / "models" / "stanford.mech").read_text()
    return with_drivers(text, ["shoulder", "boom", "wrist_pitch"], "drivenarm")


def driven_crank():
    """slidercrank with its crank driven: a rotation motor inside a loop."""
    text = (Path(__file__).resolve().parents[2] / "models" / "slidercrank.mech").read_text()
    return with_drivers(text, ["crank"], "drivencrank")


DRIVEN = {"drivenarm": driven_arm, "drivencrank": driven_crank}


def named(name: str):
    return loops_model() if name == "looptypes" else DRIVEN[name]() if name in DRIVEN else load_model(name)


# -- without pychrono ---------------------------------------------------------------
def test_missing_pychrono_prints_one_line_and_exits_2():
    """With pychrono unimportable, `crosscheck chrono threelink` says how to get it, in one line, and exits 2."""
    code = ("import sys; sys.modules['pychrono'] = None\n"
            "from crosscheck.cli import main\n"
            "main(['chrono', 'threelink'])\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert r.returncode == 2, r.stderr
    assert r.stderr == MISSING + "\n" and r.stdout == ""
    assert "conda env create -f environment.yml" in r.stderr


def test_package_imports_without_pychrono():
    code = ("import sys; sys.modules['pychrono'] = None\n"
            "import crosscheck.chrono.build, crosscheck.chrono.kkt, crosscheck.chrono.sim, crosscheck.chrono.checks\n"
            "import crosscheck.cli\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("name", [*MODELS, "looptypes"])
def test_mapping_round_trip(name):
    """(q, qd) → Chrono body states → (q, qd), exactly; and body states → (q, qd) → the same body states."""
    model = loops_model() if name == "looptypes" else load_model(name)
    mp = Mapping(model)
    for s in states(model, 20, 1, tear=0.0):
        bs = mp.to_chrono(s.q, s.qd)
        q, qd = mp.from_chrono(bs, s.q)
        assert np.max(np.abs(q - s.q)) < 1e-12 and np.max(np.abs(qd - s.qd)) < 1e-12
        back = mp.to_chrono(*mp.from_chrono(bs))  # no hint: principal angles, w >= 0 quaternions
        for a, b in ((back.R, bs.R), (back.com, bs.com), (back.vcom, bs.vcom), (back.w, bs.w)):
            assert np.max(np.abs(a - b)) < 1e-12


def test_revolute_angle_takes_the_branch_nearest_the_hint():
    model = load_model("threelink")
    mp = Mapping(model)
    q = np.array([3.0, -3.1, 7.0])
    q_back, _ = mp.from_chrono(mp.to_chrono(q, np.zeros(3)), q + 0.4)
    assert np.allclose(q_back, q, atol=1e-12)
    q_principal, _ = mp.from_chrono(mp.to_chrono(q, np.zeros(3)))
    assert np.allclose(q_principal[2], 7.0 - 2 * np.pi, atol=1e-12)


def test_quaternion_from_rotation_is_exact_at_every_attitude():
    """Including the half-turns, where a trace-based formula divides by zero."""
    rng = np.random.default_rng(3)
    for Q in [np.array([1.0, 0, 0, 0]), np.array([0.0, 1, 0, 0]), np.array([0.0, 0, 0, 1]), *rng.normal(size=(50, 4))]:
        Q = Q / np.linalg.norm(Q)
        P = R_to_quat(quat_to_R(Q))
        assert abs(abs(P @ Q) - 1.0) < 1e-14 and P[0] >= 0


@pytest.mark.parametrize("name", ["threelink", "gantry", "satellite", "quartercar", "looptypes"])
def test_acceleration_map_is_the_derivative_of_the_velocity_map(name):
    """qdd_from_chrono inverts d/dt of the Chrono velocities along q(t) = drift by qd, qd(t) = qd + t qdd."""
    model = loops_model() if name == "looptypes" else load_model(name)
    mp = Mapping(model)
    rng = np.random.default_rng(5)
    h = 1e-4
    for s in states(model, 10, 2, tear=0.0):
        qdd = rng.normal(0.0, 3.0, model.nv)
        at = {t: mp.to_chrono(integrate(model, s.q, s.qd, t), s.qd + t * qdd) for t in (-2 * h, -h, h, 2 * h)}

        def d(f):
            return (f(at[-2 * h]) - 8 * f(at[-h]) + 8 * f(at[h]) - f(at[2 * h])) / (12 * h)

        acc = np.hstack([d(lambda b: b.vcom), d(lambda b: b.w)])
        assert scaled_error(mp.qdd_from_chrono(mp.to_chrono(s.q, s.qd), acc), qdd) < 1e-8


def test_qd_check_needs_no_chrono():
    """qd = dq/dt is kinematics only: it passes on the floating and loop models without touching Chrono."""
    from crosscheck.chrono.checks import qd_consistency

    for model in (load_model("satellite"), loops_model()):
        c = qd_consistency(model, 30)
        assert c.passed, c.line()


class Negated(Mapping):
    """The planted convention bug: one body's joint angle negated in the mapping to Chrono."""

    def __init__(self, model, body):
        super().__init__(model)
        self.slot = model.qidx[body]

    def kinematics(self, q, qd):
        q = np.array(q, dtype=float)
        q[self.slot] = -q[self.slot]
        return forward_kinematics(self.model, q, qd)


@pytest.mark.parametrize("name, body", [("threelink", 1), ("elbow", 3)])
def test_planted_sign_bug_fails_qd_at_two(name, body):
    from crosscheck.chrono.checks import qd_consistency

    model = load_model(name)
    c = qd_consistency(model, 200, mapping=Negated(model, body))
    assert not c.passed and abs(c.value - 2.0) < 1e-6, c.line()


# -- with pychrono --------------------------------------------------------------------
@needs_chrono
def test_round_trip_through_chrono_bodies():
    """Through the real ChBodyAuxRef setters and getters, and back from a state Chrono reached by stepping."""
    from crosscheck.chrono.build import apply, build, read, update

    model = load_model("quartercar")
    cm = build(model)
    for s in states(model, 5, 4, tear=0.0):
        apply(cm, cm.mapping.to_chrono(s.q, s.qd))
        update(cm)
        q, qd = cm.mapping.from_chrono(read(cm), s.q)
        assert np.max(np.abs(q - s.q)) < 1e-12 and np.max(np.abs(qd - s.qd)) < 1e-12
    for _ in range(200):
        cm.system.DoStepDynamics(1e-4)
    # a pose made by Chrono, not by the forward map, comes back to Chrono's constraint tolerance. (Its velocities
    # satisfy the joints at the previous step's positions, Cq(x_n) v_n+1 = -C/h, so they are not in the map's
    # image to better than O(h) and are not compared.)
    bs = read(cm)
    back = cm.mapping.to_chrono(*cm.mapping.from_chrono(bs, q))
    assert np.max(np.abs(back.com - bs.com)) < 1e-8 and np.max(np.abs(back.R - bs.R)) < 1e-8


@needs_chrono
def test_tsda_actuator_sign():
    """Chrono's TSDA force pushes its anchors apart, the project's tension pulls them together: act goes in negated."""
    from crosscheck.chrono import kkt
    from crosscheck.chrono.build import build
    from crosscheck.dense import forward, tsda_state

    model = load_model("springpend")
    cm = build(model)
    t = model.tsdas[0]
    for s in states(model, 5, 6):
        act = np.array([7.5, 0.0])
        qdd = kkt.forward(cm, s.q, s.qd, np.zeros(model.nv), None, act)
        l, ldot = tsda_state(model, forward_kinematics(model, s.q, s.qd))
        tension = t.k * (l[0] - t.l0) + t.c * ldot[0] + act[0]
        assert np.isclose(cm.tsdas[0].GetForce(), -tension, rtol=1e-12, atol=1e-12)
        assert scaled_error(qdd, forward(model, s.q, s.qd, np.zeros(model.nv), None, act)) < 1e-12
    # the sign written the other way round is caught
    s = next(states(model, 1, 7))
    act = np.array([7.5, 0.0])
    good = kkt.forward(cm, s.q, s.qd, np.zeros(model.nv), None, act)
    bad = kkt.forward(cm, s.q, s.qd, np.zeros(model.nv), None, -act)
    assert scaled_error(bad, good) > 1e-3


@needs_chrono
@pytest.mark.parametrize("name", ["quartercar", "fourbar", "looptypes", "drivenarm", "drivencrank"])
def test_qc_is_the_derivative_of_chronos_jacobian(name):
    """Qc (lock links' own, the distance links' and the motors' written here) = −(d/dt Cq)·v − Ctt, Cq
    differentiated along the motion: the bodies move by their velocities and the time with them (a rotation motor's
    rows turn with its angle θ(t)); Ctt = −f'' on a linear motor's z row, −½ f'' on a rotation motor's rz row, the
    states on a schedule whose f'' is not zero."""
    from scipy.spatial.transform import Rotation

    from crosscheck.chrono.build import apply, build, update
    from crosscheck.chrono.checks import on_schedule
    from crosscheck.chrono.kkt import assemble, motor_sign
    from crosscheck.chrono.mapping import BodyStates

    model = named(name)
    cm = build(model)
    h = 1e-4
    rng = np.random.default_rng(8)
    for s in states(model, 3, 8, tear=0.0):
        s, t0, motions = on_schedule(model, s, rng)
        cm.set_motions(motions)
        bs = cm.mapping.to_chrono(s.q, s.qd)
        apply(cm, bs)
        cm.system.SetChTime(t0)
        update(cm)
        k = assemble(cm)
        v = np.zeros(k.M.shape[0])
        for i, cb in enumerate(cm.bodies):
            v[cb.GetOffset_w() : cb.GetOffset_w() + 6] = np.concatenate([bs.vcom[i], bs.w[i]])

        def Cq(t):
            R = np.array([Ri @ Rotation.from_rotvec(t * wi).as_matrix() for Ri, wi in zip(bs.R, bs.w)])
            apply(cm, BodyStates(R, bs.com + t * bs.vcom, bs.vcom, bs.w))
            cm.system.SetChTime(t0 + t)
            update(cm)
            return assemble(cm).Cq

        Cq_dot = (Cq(-2 * h) - 8 * Cq(-h) + 8 * Cq(h) - Cq(2 * h)) / (12 * h)
        Ctt = np.zeros_like(k.Qc)
        for j, (d, link) in enumerate(zip(model.drivers, cm.motors)):
            fdd = s.act[d.act]
            assert fdd != 0.0 or not s.qd.any()
            if model.bodies[d.body].joint == "revolute":  # C = vec(q_s): its ½ carries q_s's sign (motor_sign)
                Ctt[link.GetOffset_L() + 5] = -0.5 * motor_sign(cm, j, t0) * fdd
            else:
                Ctt[link.GetOffset_L() + 2] = -fdd
        assert np.max(np.abs(k.Qc + Cq_dot @ v + Ctt)) < 1e-7 * max(1.0, np.max(np.abs(k.Qc)))
        assert k.Qc.size == model.nc + 5 * sum(b.joint != "floating" for b in model.bodies) + len(model.drivers)


@needs_chrono
def test_planted_sign_bug_fails_accelerations():
    from crosscheck.chrono.build import build
    from crosscheck.chrono.checks import accelerations
    from mechdyn.dynamics import Dynamics

    model = load_model("threelink")
    dense, gen = accelerations(build(model, Negated(model, 1)), Dynamics(model), 50)
    assert not dense.passed and not gen.passed and dense.value > 1e-2
    good = accelerations(build(model), Dynamics(model), 50)
    assert all(c.passed and c.value < 1e-12 for c in good)


@needs_chrono
def test_loop_types_agree_with_chrono():
    """Revolute, prismatic and cylindrical loops (unused by the shipped models) agree with Chrono's links."""
    from crosscheck.chrono.build import build
    from crosscheck.chrono.checks import accelerations, qd_consistency, sim_checks
    from crosscheck.chrono.sim import compare
    from mechdyn.dynamics import Dynamics

    model = loops_model()
    dyn = Dynamics(model)
    cm = build(model)
    checks = [qd_consistency(model, 50), *accelerations(cm, dyn, 50)]
    checks += sim_checks(model, *compare(model, dyn, 0.05, 1e-4), 0.05)
    for c in checks:
        assert c.passed, c.line()


@needs_chrono
def test_frozen_rsda_torque_is_caught():
    """An RSDA torque written once and never refreshed integrates a different system: the gap does not halve."""
    from crosscheck.chrono import sim
    from crosscheck.chrono.checks import sim_checks
    from mechdyn.dynamics import Dynamics

    model = load_model("springpend")
    dyn = Dynamics(model)
    gap, gap2, ratio = sim_checks(model, *sim.compare(model, dyn, 0.05, 1e-4, refresh_rsda=False), 0.05)
    assert not ratio.passed and abs(ratio.value - 1.0) < 0.05, ratio.line()
    assert gap.value > 1e-3
    for c in sim_checks(model, *sim.compare(model, dyn, 0.05, 1e-4), 0.05):  # refreshed every step, as it runs
        assert c.passed, c.line()


@needs_chrono
def test_cli_json_keys_and_sim_table(capsys):
    import json

    from crosscheck.cli import parser
    from mechdyn.cliutil import run

    assert run(parser, ["chrono", "threelink", "--trials", "20", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("qd_consistency", "accel_vs_dense", "accel_vs_generated", "sim_gap_dt", "sim_gap_dt2", "sim_ratio"):
        assert key in out, key
    assert out["passed"] and out["accel_vs_dense"] <= 1e-8 and abs(out["sim_ratio"] - 2.0) <= 0.2

    assert run(parser, ["chrono", "threelink", "--sim", "0.05", "1e-4", "--body", "link2"]) == 0
    text = capsys.readouterr().out
    assert "generated link2" in text and "chrono link2" in text and "sim_ratio" in text
    assert "qd_consistency" not in text  # --sim runs only the trajectory comparison

    assert run(parser, ["chrono", "threelink", "--sim", "0.05", "1e-4", "--body", "nope"]) == 2


@needs_chrono
@pytest.mark.parametrize("name", ["elbow", "satellite", "slidercrank", "quartercar"])
def test_hht_pair_is_second_order(name):
    """The generalized-α stepper at HHT's setting and Chrono's ChTimestepperHHT at the same α: the gap falls by
    4 per halving of the step (issue 23's check against Chrono)."""
    from crosscheck.chrono import sim
    from crosscheck.chrono.checks import sim_checks
    from mechdyn.dynamics import Dynamics

    model = load_model(name)
    checks = sim_checks(model, *sim.compare(model, Dynamics(model), 0.1, 1e-3, scheme="hht", alpha=-0.2), 0.1, "hht")
    for c in checks:
        assert c.passed, c.line()
    assert abs({c.name: c for c in checks}["hht_ratio"].value - 4.0) < 0.1


@needs_chrono
def test_hht_from_zero_accelerations_is_caught(monkeypatch):
    """Chrono's HHT started from zero accelerations and reactions (its own default here) is first order: the
    pair's ratio is 2, and the second-order gate fails."""
    from crosscheck.chrono import sim
    from crosscheck.chrono.checks import sim_checks
    from mechdyn.dynamics import Dynamics

    model = load_model("threelink")
    monkeypatch.setattr(sim, "scatter_accelerations", lambda cm: None)
    ratio = sim_checks(model, *sim.compare(model, Dynamics(model), 0.1, 1e-3, scheme="hht"), 0.1, "hht")[-1]
    assert not ratio.passed and abs(ratio.value - 2.0) < 0.1, ratio.line()


def test_hht_pair_refuses_rsda_models(capsys):
    """The HHT pair on a model with rsda elements (first-order torques on Chrono's side) is one line and exit 2;
    without pychrono it is the missing-pychrono line."""
    from crosscheck.cli import parser
    from mechdyn.cliutil import run

    for argv, words in [(["springpend", "--sim", "0.1", "1e-3", "--scheme", "hht"], "rsda elements"),
                        (["elbow", "--scheme", "hht"], "add --sim T DT"),
                        (["elbow", "--sim", "0.1", "1e-3", "--alpha", "-0.1"], "add --scheme hht")]:
        assert run(parser, ["chrono", *argv]) == 2
        err = capsys.readouterr().err
        assert (words if have_pychrono() else "pychrono") in err and len(err.strip().splitlines()) == 1


# -- drivers: Chrono's motors ---------------------------------------------------------------
@needs_chrono
def test_motion_function_is_the_motion():
    """The motors' ChFunction gives the driver's motion, its rate and acceleration, through Chrono's own calls."""
    from crosscheck.chrono.build import motion_function
    from mechdyn.core import motion

    for m in (motion.sine(0.02, 1.5, 0.3, blend=0.5, start=0.2), motion.sweep(0.01, 1, 6, 2.0, log=True, blend=0.3),
              motion.table([0, 0.5, 1.2, 2.0], [0, 0.03, -0.01, 0.0]), motion.constant(0.0)):
        fn = motion_function(m)
        for t in (0.0, 0.1, 0.35, 0.9, 1.7, 2.5):
            f = [float(x) for x in motion.evaluate(m, t)]
            assert [fn.GetVal(t), fn.GetDer(t), fn.GetDer2(t)] == f


def violation(link) -> np.ndarray:
    v = link.GetConstraintViolation()
    return np.array(v.GetVectorData(v.Size()))


@needs_chrono
@pytest.mark.parametrize("name", ["quartercar", "hmmwv", "drivenarm", "drivencrank"])
def test_motors_hold_the_driven_coordinates(name):
    """At a state on its schedule every motor's constraint holds (its offset, frames and function agree with the
    driven coordinate), and a motor run backwards does not: its displacement row is off by 2 f."""
    from crosscheck.chrono.build import build
    from crosscheck.chrono.checks import on_schedule
    from crosscheck.chrono.kkt import set_state

    model = named(name)
    cm = build(model)
    rng = np.random.default_rng(3)
    for s in states(model, 5, 3, tear=0.0):
        s, t, motions = on_schedule(model, s, rng)
        cm.set_motions(motions)
        set_state(cm, s.q, s.qd, t=t)
        for link in cm.motors:
            assert np.max(np.abs(violation(link))) < 1e-12
        q0 = model.q0()
        for d, link in zip(model.drivers, cm.motors):
            if model.bodies[d.body].joint == "prismatic":
                assert abs(link.GetMotorPos() - s.q[model.qidx[d.body]]) < 1e-12
        backwards = [type(m)(m.kind, tuple(-p if i == 0 else p for i, p in enumerate(m.params)), m.start, m.blend)
                     for m in motions]  # the amplitude (constant: the value) negated
        cm.set_motions(backwards)
        set_state(cm, s.q, s.qd, t=t)
        moved = [abs(s.q[model.qidx[d.body]] - q0[model.qidx[d.body]]) for d in model.drivers]
        if max(moved) > 1e-3:
            assert max(np.max(np.abs(violation(link))) for link in cm.motors) > 1e-4


def _driven_sim(model, dyn, T=0.3, dt=1e-4):
    """The side-by-side runs of a driven model, its drivers on a sine blended in over 0.1 s (quicker than the
    CLI's 0.5 s: the test's runs are short)."""
    from crosscheck.chrono import sim
    from crosscheck.chrono.checks import sim_checks
    from mechdyn.core import motion

    motions = [motion.sine(0.01, 2.0, k * np.pi / 2, blend=0.1) for k in range(len(model.drivers))]
    return sim_checks(model, *sim.compare(model, dyn, T, dt, motions=motions), T)


@needs_chrono
@pytest.mark.parametrize("name", ["quartercar", "drivenarm", "drivencrank"])
def test_drivers_agree_with_chrono(name):
    """Driven revolute and prismatic joints, on moving parents and in a loop: accelerations and reactions at states
    on a schedule, and trajectories with their reactions, against Chrono's motors."""
    from crosscheck.chrono.build import build
    from crosscheck.chrono.checks import accelerations
    from mechdyn.dynamics import Dynamics

    model = named(name)
    dyn = Dynamics(model)
    checks = [*accelerations(build(model), dyn, 50), *_driven_sim(model, dyn)]
    assert {c.name for c in checks} >= {"react_vs_dense", "react_vs_generated", "react_gap_dt", "react_ratio"}
    for c in checks:
        assert c.passed, c.line()
    for c in checks[:4]:  # well inside the gate: slidercrank's loop, undriven, reaches 3.4e-10 against Chrono
        assert c.value < 1e-9, c.line()


@needs_chrono
def test_motor_run_backwards_is_caught(monkeypatch):
    """The planted bug: the motors' function negated (the motor's sign convention taken the wrong way round).
    The states' accelerations and reactions fail (f'' enters Chrono's Qc negated), and so do the trajectories (the
    posts shaken the other way: a gap that does not shrink)."""
    from crosscheck.chrono import build as chrono_build
    from crosscheck.chrono.build import build
    from crosscheck.chrono.checks import accelerations
    from mechdyn.core import motion
    from mechdyn.dynamics import Dynamics

    monkeypatch.setattr(chrono_build, "evaluate", lambda m, t: tuple(-x for x in motion.evaluate(m, t)))
    model = driven_arm()
    checks = {c.name: c for c in accelerations(build(model), Dynamics(model), 20)}
    for key in ("accel_vs_dense", "accel_vs_generated", "react_vs_dense", "react_vs_generated"):
        assert not checks[key].passed and checks[key].value > 1e-3, checks[key].line()
    model = load_model("quartercar")
    sims = {c.name: c for c in _driven_sim(model, Dynamics(model))}
    assert not sims["sim_ratio"].passed and abs(sims["sim_ratio"].value - 1.0) < 0.1, sims["sim_ratio"].line()
    assert not sims["react_ratio"].passed, sims["react_ratio"].line()


@needs_chrono
def test_reaction_sign_is_caught(monkeypatch):
    """The planted bug: the motors' reactions read with the wrong sign (as the force on body 2, the parent). The
    reaction checks fail at 2 (twice the largest reaction) on the states and along the trajectories, whose gap
    then does not shrink; the accelerations and positions still pass."""
    from crosscheck.chrono.build import ChronoModel, build
    from crosscheck.chrono.checks import accelerations
    from mechdyn.dynamics import Dynamics

    right = ChronoModel.reactions
    monkeypatch.setattr(ChronoModel, "reactions", lambda self: -right(self))
    model = load_model("quartercar")
    dyn = Dynamics(model)
    checks = {c.name: c for c in [*accelerations(build(model), dyn, 20), *_driven_sim(model, dyn)]}
    for key in ("react_vs_dense", "react_vs_generated"):
        assert not checks[key].passed and abs(checks[key].value - 2.0) < 1e-6, checks[key].line()
    for key in ("react_gap_dt", "react_gap_dt2"):
        assert not checks[key].passed and checks[key].value > 1.0, checks[key].line()
    assert not checks["react_ratio"].passed and abs(checks["react_ratio"].value - 1.0) < 0.05
    for key in ("accel_vs_dense", "accel_vs_generated", "sim_gap_dt", "sim_ratio"):
        assert checks[key].passed, checks[key].line()


@needs_chrono
def test_cli_driven_model_json_keys(capsys):
    import json

    from crosscheck.cli import parser
    from mechdyn.cliutil import run

    assert run(parser, ["chrono", "quartercar", "--trials", "20", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("accel_vs_generated", "react_vs_dense", "react_vs_generated", "sim_ratio", "react_gap_dt",
                "react_gap_dt2", "react_ratio"):
        assert key in out, key
    assert out["passed"] and out["react_vs_generated"] <= 1e-8 and abs(out["react_ratio"] - 2.0) <= 0.2
    assert run(parser, ["chrono", "quartercar", "--sim", "0.05", "1e-4"]) == 0
    text = capsys.readouterr().out
    assert "the drivers' reactions" in text and "react_ratio" in text
