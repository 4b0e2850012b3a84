"""The four-lane batch (mechdyn/codegen/simd.py): fwd_dyn_batch equals fwd_dyn lane by lane, and a planted lane
mix-up shows."""
import numpy as np
import pytest

import mechdyn
from crosscheck.dense_compare import qdd_gate
from crosscheck.golden import models as golden_models
from mechdyn.codegen import schedule, simd
from mechdyn.codegen.generate import generate
from mechdyn.core.sample import scaled_error
from mechdyn.core.sample import states as sample_states


@pytest.mark.parametrize("name", golden_models())
def test_simd_batch_is_the_scalar_function_lane_by_lane(name):
    """fwd_dyn_batch's four-lane pass (simd.py) against fwd_dyn state by state, with a remainder: the same
    arithmetic, so equal up to where gcc fuses a product into an FMA in one build and not the other (1 ulp),
    as the result carries it: to 1e-15 where the dense routes agree to 1e-12, and where a long chain's
    conditioning lets them differ by more (qdd_gate), to a thousandth of that (twobands: 2.8e-14 at the state
    by its design pose, the two builds exact to each other at -O0)."""
    d = mechdyn.load(name)
    tol = 1e-15 if qdd_gate(d.model) <= 1e-12 else 1e-3 * qdd_gate(d.model)
    states = list(sample_states(d.model, 11, seed=2, tear=1e-4))  # two passes of four and a remainder of three
    Q, QD, TAU = (np.array([getattr(s, f) for s in states]) for f in ("q", "qd", "tau"))
    F, A = np.array([s.fext for s in states]), np.array([s.act for s in states]).reshape(len(states), d.nact)
    single = np.array([d.forward(s.q, s.qd, s.tau, s.fext, s.act if d.nact else None) for s in states])
    batch = d.forward_batch(Q, QD, TAU, F, A if d.nact else None)
    assert max(scaled_error(x, y) for x, y in zip(batch, single)) <= tol
    bare = np.array([d.forward(s.q, s.qd, s.tau) for s in states])  # fext and act left out: zeros in every lane
    assert max(scaled_error(x, y) for x, y in zip(d.forward_batch(Q, QD, TAU), bare)) <= tol


@pytest.mark.parametrize("split", [None, 40])
def test_batch_goes_through_the_four_lane_pass(split, monkeypatch):
    """fwd_dyn_batch calls fwd_dyn_batch4, in one function and, past schedule.SPLIT statements (m113's and
    twobands' size, here lowered to 40 on threelink), as stage functions: the lane-by-lane test above cannot tell
    either from a scalar loop. generate.batch_functions emits it for every model, so one small model in both
    shapes stands for all (regenerating m113's source here would cost 20 s)."""
    if split is not None:
        monkeypatch.setattr(schedule, "SPLIT", split)
    source = generate(mechdyn.load("threelink").model).source
    assert "fwd_dyn_batch4(" in source and ("fwd_dyn_batch4_stage" in source) == (split is not None)


def test_planted_lane_mixup_is_caught(fresh_cache, monkeypatch):
    """Gathering an input's lanes with the wrong stride must show up as a batch/scalar mismatch."""
    real = simd.strides
    monkeypatch.setattr(simd, "strides", lambda model: {**real(model), "qd": real(model)["qd"] + 1})
    d = mechdyn.load("threelink")
    states = list(sample_states(d.model, 8, seed=2, tear=0.0))
    Q, QD, TAU = (np.array([getattr(s, f) for s in states]) for f in ("q", "qd", "tau"))
    single = np.array([d.forward(s.q, s.qd, s.tau) for s in states])
    assert not np.allclose(d.forward_batch(Q, QD, TAU), single)
