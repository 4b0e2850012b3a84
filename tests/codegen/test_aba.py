"""The articulated-body route (mechdyn/codegen/aba.py): forced on the models of models/, it matches both dense
routes (CRBA and ABA, which share no code with it or with each other); the route is chosen by operation count;
and a planted bug in each of its passes trips gen_vs_dense."""
from pathlib import Path

import numpy as np
import pytest

import mechdyn
from crosscheck import dense_compare as compare
from crosscheck.dense import forward
from mechdyn.codegen import aba
from mechdyn.codegen import generate as gen
from mechdyn.core.parse import load_model
from mechdyn.core.sample import scaled_error, states
from tests.drivers import undriven

TRIALS = 200
JOINTMIX = Path(__file__).parents[1] / "data" / "jointmix.mech"  # every joint under every parent
LOOPZOO = Path(__file__).parents[1] / "data" / "loopzoo.mech"  # every loop joint type


@pytest.fixture
def forced_aba(fresh_cache, monkeypatch):
    """Every model built by the articulated-body route, whatever it costs (in a private cache)."""
    real = gen.choose_route

    def forced(model):
        route, _ = real(model)
        return gen.Route("aba", route.flops), gen.route_builder(model, "aba")

    monkeypatch.setattr(gen, "choose_route", forced)


@pytest.mark.parametrize("spec", ["threelink", "bintree", "satellite", "stanford", "springpend", "elbow", JOINTMIX,
                                  "fourbar", "slidercrank", "rrrs",
                                  pytest.param(undriven("quartercar"), id="quartercar, post free"), LOOPZOO])
def test_forced_aba_matches_both_dense_routes(forced_aba, spec):
    """Trees and loop models (near-manifold states) by the generated ABA against the dense CRBA and ABA."""
    dyn = mechdyn.load(spec)
    worst = {"crba": 0.0, "aba": 0.0}
    for s in states(dyn.model, TRIALS, seed=0):
        qdd = dyn.forward(s.q, s.qd, s.tau, s.fext, s.act)
        for route in worst:
            worst[route] = max(worst[route], scaled_error(qdd, forward(dyn.model, s.q, s.qd, s.tau, s.fext, s.act,
                                                                       route=route)))
    print(f"{dyn.model.name}: generated ABA vs dense CRBA {worst['crba']:.2e}, vs dense ABA {worst['aba']:.2e}")
    assert max(worst.values()) < compare.gen_gate(dyn.model)


def test_route_is_the_one_with_fewer_operations():
    """Every model of models/ keeps the CRBA route (fewer operations there); a long chain takes the ABA."""
    for name in ("threelink", "fourbar", "satellite"):
        route, b = gen.choose_route(load_model(name))
        assert route.name == "crba" and route.flops["crba"] < route.flops["aba"], route
    route, _ = gen.choose_route(load_model("chain63"))
    assert route.name == "aba" and route.flops["aba"] < route.flops["crba"] / 2, route


def test_header_names_the_route_and_both_counts():
    g = gen.generate(load_model("fourbar"))
    line = next(ln for ln in g.source.splitlines() if "Solve:" in ln)
    assert "CRBA + sparse LDLᵀ of the KKT system" in line
    assert f"{g.route.flops['crba']} operations (the articulated-body algorithm + method 2 (1 + nc solves): " \
        f"{g.route.flops['aba']})" in line
    assert g.flops == g.route.flops["crba"]


# -- planted bugs: validation must catch each ---------------------------------
def _forced_error(spec) -> float:
    err = compare.gen_vs_dense(mechdyn.load(spec), TRIALS).value
    print(f"{spec}: gen_vs_dense = {err:.3e}")
    return err


def test_planted_dropped_articulated_inertia_term(forced_aba, monkeypatch):
    """Ia handed to the parent without − U D⁻¹ Uᵀ (the rigid IA instead of the articulated one)."""
    monkeypatch.setattr(aba, "handed_on", lambda b, IA, U, Dinv, c: IA)
    assert _forced_error("threelink") > 1e-3


def test_planted_backward_pass_sign(forced_aba, monkeypatch):
    """pA − U D⁻¹ u instead of pA + U D⁻¹ u in the per-right-hand-side backward pass."""
    real = aba.bias_to_parent
    monkeypatch.setattr(aba, "bias_to_parent", lambda b, kin, i, pA, U, ud: real(b, kin, i, pA, U, b.neg(ud)))
    assert _forced_error("threelink") > 1e-3


def test_planted_omitted_right_hand_side(forced_aba, monkeypatch):
    """One of the 1 + nc right-hand sides of method 2 left out of the solution: the last row's column of Kᵀ
    solved and in A, but its λ never applied."""
    real = aba.corrected
    monkeypatch.setattr(aba, "corrected", lambda b, u0, uK, lam: real(b, u0, uK[:-1], lam[:-1]))
    assert _forced_error("fourbar") > 1e-3


def test_rigid_matrix_convention():
    """rbi_matrix(I) · [ω; v] equals sspatial.rbi_apply (the CRBA's product) on numbers."""
    from mechdyn.codegen.crba import body_inertia
    from mechdyn.codegen.expr import Builder
    from mechdyn.codegen.sspatial import rbi_apply
    I = body_inertia(Builder(), load_model("stanford"), 2)
    m = [0.3, -1.1, 0.7, 2.0, 0.5, -0.4]
    M = np.array(aba.rbi_matrix(I), dtype=float)
    assert np.allclose(M, M.T)
    assert np.allclose(M @ m, np.array(rbi_apply(Builder(), I, m), dtype=float), rtol=1e-14, atol=1e-14)
