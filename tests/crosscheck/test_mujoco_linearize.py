"""MuJoCo's finite-difference linearization (mjd_transitionFD) against mechdyn's generated derivatives.

The gates are crosscheck.mujoco.linearize's (centered differences of step 1e-6: rounding, scaled by H's condition
number); planted bugs in the derivatives, in the coordinate maps and in MuJoCo's setup each push a figure past them.
"""
from __future__ import annotations

import mujoco
import numpy as np
import pytest

import mechdyn
from crosscheck.mujoco import NotRepresentable
from crosscheck.mujoco import linearize as lin
from mechdyn.core.parse import load_model

TREES = lin.tree_models()


def report(a: lin.Agreement) -> None:
    print(f"\n{a.model}: A {a.A:.1e}, B {a.B:.1e}, position rows {a.pos:.1e} ({a.pos_share:.2g} of its gate), "
          f"velocity rows / h {a.vel:.1e} ({a.vel_share:.2g} of its gate)")


def test_the_covered_models_are_every_tree_the_exporter_takes():
    """Every model without loops, with fext or inputs among them, a floating body and the 63-link chain (its
    derivatives by the loop route)."""
    assert {"satellite", "springpend", "elbow", "threelink", "chain63"} <= set(TREES)
    assert "loop closures" in lin.covered(load_model("fourbar"))
    with pytest.raises(NotRepresentable, match="loop closures"):
        lin.compare(mechdyn.load("fourbar"), 1)


@pytest.mark.parametrize("name", TREES)
def test_transition_matches_mujoco(name):
    a = lin.compare(mechdyn.load(name), trials=10, seed=1)
    report(a)
    assert a.passed


def test_the_remainder_is_the_finite_differences_rounding():
    """Rounding error falls as 1/eps: ten times the step, about a tenth of the disagreement (a bias would stay)."""
    dyn = mechdyn.load("stanford")
    fine, coarse = (lin.compare(dyn, trials=5, seed=0, eps=e).vel for e in (1e-6, 1e-5))
    print(f"\nstanford velocity rows / h: eps 1e-6 {fine:.1e}, eps 1e-5 {coarse:.1e}")
    assert coarse < fine / 5


def test_transition_model_is_explicit_euler_with_a_motor_per_dof():
    mm = lin.transition_model(load_model("satellite"))
    assert mm.mj.opt.integrator == mujoco.mjtIntegrator.mjINT_EULER and mm.mj.opt.timestep == lin.H
    assert mm.mj.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_EULERDAMP
    assert mm.mj.nu == mm.model.nact + mm.model.nv


def test_planted_dof_motors_out_of_order_are_refused(monkeypatch):
    """B's qfrc columns assume motor nact + j drives MuJoCo's dof j: motors written in another order are refused."""
    real = lin.transition_xml

    def reversed_motors(model, h=lin.H):
        lines = real(model, h).split("\n")
        at = [i for i, line in enumerate(lines) if 'name="dof:' in line]
        for i, line in zip(at, [lines[i] for i in reversed(at)]):
            lines[i] = line
        return "\n".join(lines)

    monkeypatch.setattr(lin, "transition_xml", reversed_motors)
    with pytest.raises(RuntimeError, match="one to one"):
        lin.transition_model(load_model("threelink"))


@pytest.mark.parametrize("name", ["threelink", "satellite"])
def test_planted_dqd_sign_fails(name, monkeypatch):
    real = mechdyn.dynamics.Dynamics.derivatives
    monkeypatch.setattr(mechdyn.dynamics.Dynamics, "derivatives", lambda self, *a: real(self, *a)._replace(
        dqd=-real(self, *a).dqd))
    a = lin.compare(mechdyn.load(name), trials=3)
    report(a)
    assert not a.passed and a.vel > 1e-2


def test_planted_transposed_dq_fails(monkeypatch):
    real = mechdyn.dynamics.Dynamics.derivatives
    monkeypatch.setattr(mechdyn.dynamics.Dynamics, "derivatives", lambda self, *a: real(self, *a)._replace(
        dq=real(self, *a).dq.T.copy()))
    a = lin.compare(mechdyn.load("elbow"), trials=3)
    report(a)
    assert not a.passed and a.vel > 1e-2


def test_planted_dact_sign_fails(monkeypatch):
    real = mechdyn.dynamics.Dynamics.derivatives
    monkeypatch.setattr(mechdyn.dynamics.Dynamics, "derivatives", lambda self, *a: real(self, *a)._replace(
        dact=-real(self, *a).dact))
    a = lin.compare(mechdyn.load("springpend"), trials=3)
    report(a)
    assert not a.passed and a.vel > 1e-2


def test_planted_free_joint_rotation_update_fails(monkeypatch):
    """The position update's exp(h ω⁺)ᵀ on a free joint's local rotation tangent left out."""
    monkeypatch.setattr(lin, "so3_exp", lambda phi: np.eye(3))
    a = lin.compare(mechdyn.load("satellite"), trials=3)
    report(a)
    assert not a.passed and a.pos > 1e-4


def test_planted_tau_held_in_body_axes_fails(monkeypatch):
    """MuJoCo holds qfrc_applied's free-joint force in world axes: treating it as mechdyn's body-axes tau is seen."""
    monkeypatch.setattr(lin, "held_force", lambda f: np.zeros((3, 3)))
    a = lin.compare(mechdyn.load("satellite"), trials=3)
    report(a)
    assert not a.passed and a.vel > 1e-4


def test_planted_fext_held_about_the_base_origin_fails(monkeypatch):
    """MuJoCo holds xfrc_applied's moment about the centre of mass: dropping how fext's base-origin moment moves
    with the centre of mass (its velocity from fwd_dyn_bodies, here zeroed) is seen."""
    dyn = mechdyn.load("satellite")
    real = dyn.body_states
    monkeypatch.setattr(dyn, "body_states", lambda q, qd: real(q, 0.0 * np.asarray(qd)))
    a = lin.compare(dyn, trials=3)
    report(a)
    assert not a.passed and a.vel > 1e-4


def test_planted_implicit_damping_left_on_fails(monkeypatch):
    """MuJoCo's Euler with its implicit joint and tendon damping solves (M + h D), not the explicit step."""
    real = lin.transition_xml
    monkeypatch.setattr(lin, "transition_xml",
                        lambda model, h=lin.H: real(model, h).replace(' eulerdamp="disable"', ""))
    a = lin.compare(mechdyn.load("springpend"), trials=3)
    report(a)
    assert not a.passed and a.vel > 1e-4


def test_main_prints_the_table_and_refuses_loops(capsys):
    assert lin.main(["threelink", "--trials", "2"]) == 0
    out = capsys.readouterr().out
    assert lin.TABLE_HEADER in out and "| threelink | 2 |" in out
    assert lin.main(["fourbar"]) == 2
    assert "loop closures" in capsys.readouterr().err
