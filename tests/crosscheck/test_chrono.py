"""The Project Chrono cross-check: state mapping both ways, force-element signs, the exact KKT terms, and that
the checks catch what they exist to catch (a planted convention bug, a frozen RSDA torque).

Tests that drive Chrono skip without pychrono; the mapping is plain numpy and the
missing-pychrono contract (one line, exit 2) is tested everywhere.
"""
import subprocess
import sys

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
@pytest.mark.parametrize("name", ["quartercar", "fourbar", "looptypes"])
def test_qc_is_the_derivative_of_chronos_jacobian(name):
    """Qc (lock links' own, the distance links' written here) = −(d/dt Cq)·v, Cq differentiated along the motion."""
    from scipy.spatial.transform import Rotation

    from crosscheck.chrono.build import apply, build, update
    from crosscheck.chrono.kkt import assemble
    from crosscheck.chrono.mapping import BodyStates

    model = loops_model() if name == "looptypes" else load_model(name)
    cm = build(model)
    h = 1e-4
    for s in states(model, 3, 8, tear=0.0):
        bs = cm.mapping.to_chrono(s.q, s.qd)
        apply(cm, bs)
        update(cm)
        k = assemble(cm)
        v = np.zeros(k.M.shape[0])
        for i, cb in enumerate(cm.bodies):
            v[cb.GetOffset_w() : cb.GetOffset_w() + 6] = np.concatenate([bs.vcom[i], bs.w[i]])

        def Cq(t):
            R = np.array([Ri @ Rotation.from_rotvec(t * wi).as_matrix() for Ri, wi in zip(bs.R, bs.w)])
            apply(cm, BodyStates(R, bs.com + t * bs.vcom, bs.vcom, bs.w))
            update(cm)
            return assemble(cm).Cq

        Cq_dot = (Cq(-2 * h) - 8 * Cq(-h) + 8 * Cq(h) - Cq(2 * h)) / (12 * h)
        assert np.max(np.abs(k.Qc + Cq_dot @ v)) < 1e-7 * max(1.0, np.max(np.abs(k.Qc)))
        assert k.Qc.size == model.nc + 5 * sum(b.joint != "floating" for b in model.bodies)


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
    assert abs(checks[-1].value - 4.0) < 0.1


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
    """The HHT pair on a model with rsda elements (first-order torques on Chrono's side) or past the derivatives'
    size is one line and exit 2; without pychrono it is the missing-pychrono line."""
    from crosscheck.cli import parser
    from mechdyn.cliutil import run

    for argv, words in [(["springpend", "--sim", "0.1", "1e-3", "--scheme", "hht"], "rsda elements"),
                        (["elbow", "--scheme", "hht"], "add --sim T DT"),
                        (["elbow", "--sim", "0.1", "1e-3", "--alpha", "-0.1"], "add --scheme hht")]:
        assert run(parser, ["chrono", *argv]) == 2
        err = capsys.readouterr().err
        assert (words if have_pychrono() else "pychrono") in err and len(err.strip().splitlines()) == 1
