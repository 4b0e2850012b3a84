"""Drivers: the generated partitioned solve (mechdyn/codegen/driven.py) against two routes that share no formulation.

1. The dense reference's rheonomic rows (crosscheck/dense/driven.py): qdd and the reactions R at random states,
   on loop models (quartercar, halfcar, hmmwv) and trees (elbow, satellite with its floating base free).
2. Inverse dynamics as the special case where every joint is driven: R is then the joint torque that produces the
   prescribed motion, Pinocchio's RNEA on the exported URDF (crosscheck/pinocchio's model and coordinate maps).
   With a free floating base RNEA is taken at the base acceleration the generated solve found: its base rows then
   vanish and its joint rows are the reactions.

Each gate has a planted bug it must catch. The drivers' motions are sines with a blend, so driven_state gives
nonzero prescribed accelerations; the generated code reads only act, so random act values serve as well.
"""
from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from crosscheck.dense import forward_driven
from crosscheck.pinocchio import kinematics, local_fext, to_pin
from crosscheck.pinocchio.compare import pin_model
from mechdyn.core.integrate import integrate
from mechdyn.core.model import Model
from mechdyn.core.parse import parse
from mechdyn.core.sample import random_fext, random_q, scaled_error, states
from mechdyn.dynamics import Dynamics
from mechdyn.export import urdf
from tests.conftest import MODELS_DIR
from tests.drivers import with_drivers

GATE = 1e-9  # the generated C against a dense or a peer route, as crosscheck's gen_vs_dense and accel gates
N_STATES = 20


def sine(joint: str, amplitude: float) -> str:
    return f"driver drv_{joint}\n  joint {joint}\n  sine {amplitude} 1.3 0.4\n  blend 0.2\nend\n"


# joint -> sine amplitude (m or rad): the rigs' posts and hmmwv's rack within their loops' reach
DRIVEN = {
    "quartercar": {"post": 0.02},
    "halfcar": {"post_L": 0.02, "post_R": 0.015},
    "hmmwv": {"post_FL": 0.02, "post_FR": 0.015, "post_RL": 0.01, "post_RR": 0.025, "rack": 0.01},
    "elbow": {"upper_arm": 0.5, "wrist_pitch": 0.7},
    "satellite": {"panel_left": 0.5, "antenna": 0.8},
}


@cache
def driven_dyn(name: str) -> Dynamics:
    return Dynamics(with_drivers(name, "".join(sine(j, a) for j, a in DRIVEN[name].items())))


def driven_states(dyn: Dynamics, n: int, seed: int):
    """(q, qd, tau, fext, act): n validation states as drawn (a loop model's torn by 1e-4, so the Baumgarte terms
    act; random act at the drivers' slots), then n at driven_state at a random time (a loop model's from q0
    perturbed by ~0.02 in each velocity direction, closed with the driven coordinates held on their schedules:
    from ~0.05 driven_state's undamped Gauss-Newton diverges on about 2% of hmmwv's starts)."""
    model, rng = dyn.model, np.random.default_rng(seed)
    drawn = list(states(model, n, seed))
    for s in drawn:
        yield s.q, s.qd, s.tau, s.fext, s.act
    for s in drawn:
        q = integrate(model, model.q0(), rng.normal(0.0, 0.02, model.nv), 1.0) if model.loops else s.q
        q, qd, act = dyn.driven_state(q, s.qd, rng.uniform(0.05, 1.0), s.act)
        yield q, qd, s.tau, s.fext, act


def gen_vs_dense(dyn: Dynamics, n: int = N_STATES, seed: int = 0) -> tuple[float, float]:
    """Max scaled |qdd_gen − qdd_dense| and |R_gen − R_dense| over driven_states; asserts both are ≤ GATE."""
    e_qdd = e_r = 0.0
    for q, qd, tau, fext, act in driven_states(dyn, n, seed):
        qdd, r = dyn.react(q, qd, tau, fext, act)
        qdd_d, r_d = forward_driven(dyn.model, q, qd, tau, fext, act)
        e_qdd, e_r = max(e_qdd, scaled_error(qdd, qdd_d)), max(e_r, scaled_error(r, r_d))
    assert e_qdd <= GATE and e_r <= GATE, f"{dyn.model.name}: qdd {e_qdd:.2e}, R {e_r:.2e} (gate {GATE:.0e})"
    return e_qdd, e_r


@pytest.mark.parametrize("name", list(DRIVEN))
def test_generated_vs_dense(name):
    dyn = driven_dyn(name)
    e_qdd, e_r = gen_vs_dense(dyn)
    print(f"\n{name}: drivers {[d.name for d in dyn.model.drivers]}, nv {dyn.model.nv}, nc {dyn.model.nc}, "
          f"{2 * N_STATES} states: generated vs dense, qdd {e_qdd:.1e}, R {e_r:.1e}")


def test_generated_vs_dense_catches_a_reaction_sign(monkeypatch):
    """The generated reactions negated (the force on the driver rather than the driver's on its coordinate):
    qdd is untouched, so only the R comparison can catch it, and does."""
    dyn = driven_dyn("quartercar")
    react = Dynamics.react
    monkeypatch.setattr(Dynamics, "react", lambda self, *a: (lambda qdd, r: (qdd, -r))(*react(self, *a)))
    with pytest.raises(AssertionError, match=r"R \d") as caught:
        gen_vs_dense(dyn, n=2)
    print(f"\nplanted reaction sign: {caught.value}")


# ---------------------------------------------------------------- inverse dynamics: every joint driven

def every_joint_driven(name: str) -> Model:
    """models/NAME.mech with a driver on every joint but a floating one, declared in reverse body order so that
    the drivers' order (R's) is not the coordinates' order."""
    path = MODELS_DIR / f"{name}.mech"
    joints = [b.name for b in parse(path.read_text(), path=str(path)).bodies if b.joint != "floating"]
    return with_drivers(name, "".join(f"driver drv_{j}\n  joint {j}\nend\n" for j in reversed(joints)))


@cache
def inverse_dyn(name: str) -> Dynamics:
    return Dynamics(every_joint_driven(name))


def trajectory(model: Model, rng: np.random.Generator, n: int, T: float = 2.0):
    """(q, qd, act) at n times along a random smooth trajectory: each driven coordinate a sum of three sines
    (q, q̇, q̈ in closed form, q̈ into its driver's act slot); a floating base at a random pose and velocity at
    each sample, its acceleration left to the solve."""
    nd = len(model.drivers)
    A, w, phi = rng.uniform(0.2, 1.0, (nd, 3)), rng.uniform(0.5, 3.0, (nd, 3)), rng.uniform(0.0, 2 * np.pi, (nd, 3))
    for t in np.linspace(0.0, T, n):
        q, qd, act = random_q(model, rng), rng.normal(0.0, 1.0, model.nv), np.zeros(model.nact)
        s, c = np.sin(w * t + phi), np.cos(w * t + phi)
        for k, d in enumerate(model.drivers):
            q[model.qidx[d.body]] = A[k] @ s[k]
            qd[model.vidx[d.body]] = (A[k] * w[k]) @ c[k]
            act[d.act] = -(A[k] * w[k] ** 2) @ s[k]
        yield q, qd, act


def rnea_residual(dyn: Dynamics, n: int = N_STATES, seed: int = 0) -> float:
    """Max scaled |G − g| over the trajectory, where G is Pinocchio's rnea(q, v, a, fext) − tau (mechdyn's order,
    a = the generated qdd: the prescribed one on the joints, the solved one on a floating base) and g holds each
    driver's reaction in its slot, zero on a free base's rows. Asserts it is ≤ GATE."""
    model, pm, rng = dyn.model, pin_model(dyn.model), np.random.default_rng(seed)
    worst = 0.0
    for q, qd, act in trajectory(model, rng, n):
        tau, fext = rng.normal(0.0, 5.0, model.nv), random_fext(model, rng)
        qdd, r = dyn.react(q, qd, tau, fext, act)
        qp, vp, tp = to_pin(pm, q, qd, tau)
        ap = to_pin(pm, q, qd, qdd)[2]  # an acceleration maps as a velocity ([ω; v] → [v; ω])
        kinematics(pm, qp, vp)  # local_fext reads the joint placements
        G = urdf.from_pinocchio_v(model, pm.layout, pin.rnea(pm.pmodel, pm.data, qp, vp, ap, local_fext(pm, fext)) - tp)
        g = np.zeros(model.nv)
        g[list(model.driven)] = r
        worst = max(worst, scaled_error(g, G))
    assert worst <= GATE, f"{model.name}: reactions vs RNEA {worst:.2e} (gate {GATE:.0e})"
    return worst


@pytest.mark.parametrize("name", ["elbow", "stanford", "satellite"])
def test_reactions_are_inverse_dynamics(name):
    dyn = inverse_dyn(name)
    model = dyn.model
    assert not (model.tsdas or model.rsdas)  # Q is fext's alone: the RNEA above takes fext and no element
    err = rnea_residual(dyn)
    print(f"\n{name}: every joint driven ({len(model.drivers)}), {N_STATES} samples of a random trajectory: "
          f"reactions vs Pinocchio's RNEA {err:.1e}")


def test_rnea_gate_catches_reactions_in_coordinate_order(monkeypatch):
    """The reactions returned in the coordinates' order instead of the drivers' (declared in reverse here)."""
    dyn = inverse_dyn("elbow")
    react, order = Dynamics.react, np.argsort(dyn.model.driven)
    monkeypatch.setattr(Dynamics, "react", lambda self, *a: (lambda qdd, r: (qdd, r[order]))(*react(self, *a)))
    with pytest.raises(AssertionError, match="reactions vs RNEA") as caught:
        rnea_residual(dyn, n=3)
    print(f"\nplanted reactions in coordinate order: {caught.value}")
