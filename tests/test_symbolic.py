"""Third route: Kane's equations from sympy.physics.mechanics against the dense 6x6 reference.

The symbolic route (tests/symbolic_eom.py) shares no code with mechdyn or the
dense reference: only the Model it reads and the random-state sampler.
"""
from __future__ import annotations

import functools
import time

import numpy as np
import pytest

from crosscheck.dense import forward_crba
from mechdyn.core.parse import load_model, parse
from mechdyn.core.sample import random_state, scaled_error

from tests.symbolic_eom import symbolic_forward

TOL = 1e-10
TRIALS = 20
SEED = 20240611

# A floating body with an offset CG and a full inertia, and a revolute child on a 3D offset.
FLOATING_TEXT = """\
gravity 0 0 -9.81

body hull
  parent base
  joint floating
  xtree 0.1 -0.2 1.0
  mass 3.0
  cg 0.12 -0.05 0.2
  inertia 0.30 0.25 0.20 0.02 -0.01 0.015
end

body arm
  parent hull
  joint revolute y
  xtree 0.3 0.2 -0.1
  mass 1.2
  cg 0.05 0.1 -0.3
  inertia 0.04 0.05 0.03 0.003 -0.002 0.004
end
"""


@functools.cache
def model(name: str):
    return parse(FLOATING_TEXT, name="floating") if name == "floating" else load_model(name)


@functools.cache
def derived(name: str, revolute_sign: float = 1.0):
    """The lambdified Kane equations of a model, derived once per module."""
    t0 = time.perf_counter()
    f = symbolic_forward(model(name), revolute_sign=revolute_sign)
    print(f"\n[symbolic] {name}{' (planted bug: orient by -q)' if revolute_sign < 0 else ''}: "
          f"derived in {time.perf_counter() - t0:.2f} s", end="")
    return f


def worst_error(name: str, f) -> tuple[float, int]:
    """Max scaled |qdd_sym - qdd_dense| over TRIALS seeded random states (tau only, no fext/act)."""
    m = model(name)
    rng = np.random.default_rng(SEED)
    worst, at = 0.0, -1
    for k in range(TRIALS):
        s = random_state(m, rng)
        ref = forward_crba(m, s.q, s.qd, s.tau)
        e = scaled_error(f(s.q, s.qd, s.tau), ref)
        if e > worst or at < 0:
            worst, at = e, k
    return worst, at


@pytest.mark.parametrize("name", ["threelink", "fourlink", "floating"])
def test_symbolic_matches_dense(name):
    f = derived(name)
    worst, at = worst_error(name, f)
    print(f"\n[symbolic] {name}: nv={model(name).nv}, {TRIALS} states, "
          f"max scaled |qdd_sym - qdd_dense| = {worst:.3e} (trial {at}), gate {TOL:g}")
    assert worst <= TOL


def test_planted_bug_is_caught():
    """Orienting every revolute child by -q instead of +q must break agreement."""
    f = derived("threelink", -1.0)
    worst, at = worst_error("threelink", f)
    print(f"\n[symbolic] threelink with planted bug: max scaled error = {worst:.3e} (trial {at})")
    assert worst > 1e6 * TOL


def test_symbolic_power_balance():
    """Self-check of the symbolic route alone: along an RK4 trajectory, dE/dt = tau . qd."""
    m, f = model("floating"), derived("floating")
    s = random_state(m, np.random.default_rng(SEED))
    nq, h, steps = m.nq, 1e-3, 200

    def rhs(x):
        return np.concatenate([f.qdot(x[:nq], x[nq:]), f(x[:nq], x[nq:], s.tau)])

    def rk4(x, h):
        k1 = rhs(x)
        k2 = rhs(x + h / 2 * k1)
        k3 = rhs(x + h / 2 * k2)
        return x + h / 6 * (k1 + 2 * k2 + 2 * k3 + rhs(x + h * k3))

    x = np.concatenate([s.q, s.qd])
    e0, work = f.energy(s.q, s.qd), 0.0
    for _ in range(steps):
        xm, x1 = rk4(x, h / 2), rk4(x, h)
        work += h / 6 * (s.tau @ x[nq:] + 4 * s.tau @ xm[nq:] + s.tau @ x1[nq:])  # Simpson
        x = x1
    de = f.energy(x[:nq], x[nq:]) - e0
    print(f"\n[symbolic] floating power balance over {steps * h:g} s: dE = {de:.6f}, "
          f"work = {work:.6f}, mismatch = {abs(de - work):.2e}")
    assert abs(de - work) <= 1e-6 * max(1.0, abs(work))
