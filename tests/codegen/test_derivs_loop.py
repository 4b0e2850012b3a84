"""The loop route of the derivatives (derivs_loop.py, tree_derivs.c) against the straight-line route (derivs.py):
two routes that share the model and the straight-line kinematics' emitters, but not the derivatives of the
inverse dynamics (forward mode along the tape there, Carpentier and Mansard's world-frame formulas here) nor the
solves (the factor of the forward pass there, LᵀL and a Schur complement over the tables here). The count the
generator reports for the loops (kernel_ops) is the C's own (TD_OPS). test_derivs.py holds both routes, and the
large models the loop route alone reaches, against differences of fwd_dyn."""
from __future__ import annotations

import pytest

import mechdyn
from mechdyn.codegen import derivs_loop
from mechdyn.codegen.build import build, build_source
from mechdyn.codegen.capi import DERIV_CDEF
from mechdyn.codegen.generate import derivatives_unit, slid
from mechdyn.core.sample import scaled_error, states
from mechdyn.dynamics import Derivatives, Dynamics

# a tree, branches, a floating base with fext, loops, drivers with loops, elements with act
MODELS = ["threelink", "bintree", "satellite", "fourbar", "quartercar", "springpend", "rrrs", "pendulums"]
ROUTES_TOL = 1e-9  # the two routes' blocks, scaled: each rounds apart; measured at most 5e-11 (quartercar)
COUNTED = ("static long td_counted;\n#define TD_OPS(k) (td_counted += (k))\n"
           "long td_count(void) { long n = td_counted; td_counted = 0; return n; }\n")


def call(dyn: Dynamics, module, x) -> Derivatives:
    """fwd_dyn_derivs of `module` (either route's) at state x, checked as Dynamics.derivatives checks it."""
    out = dyn._blocks(None)
    module.lib.fwd_dyn_derivs(*dyn._state(*x), *(module.ffi.from_buffer("double[]", a) for a in out))
    return Derivatives(*out)


def route_error(name: str, loop_module=None, n: int = 6) -> float:
    """The worst scaled difference of any block between the routes over n states."""
    dyn = mechdyn.load(name)
    m = dyn.model
    loop = loop_module or build(m, unit="derivatives-loop")[0]
    straight = build(m, unit="derivatives-straight")[0]
    worst = 0.0
    for s in states(m, n, seed=5):
        x = (s.q, s.qd, s.tau, s.fext, s.act)
        a, b = call(dyn, loop, x), call(dyn, straight, x)
        worst = max(worst, *(scaled_error(getattr(a, k), getattr(b, k)) for k in ("qdd", "dq", "dqd", "dtau", "dact",
                                                                                  "dfext") if getattr(b, k).size))
    return worst


@pytest.mark.parametrize("name", MODELS)
def test_loop_route_matches_the_straight_line_route(name):
    err = route_error(name)
    print(f"\n{name}: loop route against straight-line route, worst block {err:.1e} (bound {ROUTES_TOL:g})")
    assert err <= ROUTES_TOL


def counting_module(name: str, source: str | None = None):
    """The loop route's unit compiled with TD_OPS counting, and its model."""
    m = mechdyn.load(name).model
    text = source or derivatives_unit(m, "loop").source
    return build_source(f"td_count_{name}", DERIV_CDEF + "long td_count(void);\n", COUNTED + text)


@pytest.mark.parametrize("name", ["threelink", "satellite", "quartercar", "track_min", "chain63"])
def test_the_reported_loop_count_is_the_c_s_own(name):
    dyn = mechdyn.load(name)
    mod = counting_module(name)
    s = next(iter(states(dyn.model, 1, seed=1)))
    call(dyn, mod, (s.q, s.qd, s.tau, s.fext, s.act))
    counted, reported = mod.lib.td_count(), derivs_loop.loop_route(slid(dyn.model)[1]).kernel
    print(f"\n{name}: the loops' operations: C {counted}, generator {reported}")
    assert counted == reported


def test_planted_sign_in_the_velocity_derivative_is_caught():
    """φ = B J − Ic ζ + J ×* h with the last term's sign turned: dqd's strictly-lower entries go wrong."""
    m = mechdyn.load("elbow").model
    text = derivatives_unit(m, "loop").source
    planted = text.replace("ph[k] = BJ[k] - t[k] + Jh[k];", "ph[k] = BJ[k] - t[k] - Jh[k];")
    assert planted != text
    mod = build_source("td_planted_elbow", DERIV_CDEF, planted)
    err = route_error("elbow", mod, n=2)
    print(f"\nplanted sign: the routes differ by {err:.1e}")
    assert err > ROUTES_TOL
