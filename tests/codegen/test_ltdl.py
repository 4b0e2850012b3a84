"""The sparse LᵀDL factorization (mechdyn/codegen/ltdl.py): its sparsity, the eager path, the pivot order, and
planted bugs in each that gen_vs_dense must catch."""
from pathlib import Path

import pytest

import mechdyn
from crosscheck import dense_compare as compare
from mechdyn.codegen import kinematics as gkin
from mechdyn.codegen.crba import mass_matrix
from mechdyn.codegen.expr import Builder
from mechdyn.codegen.ltdl import check_sparsity, expanded_parents
from mechdyn.core.parse import load_model

JOINTMIX = Path(__file__).parents[1] / "data" / "jointmix.mech"  # every joint under every parent


def test_lam_reproduces_H_sparsity():
    model = load_model("bintree")
    b = Builder()
    H = mass_matrix(b, gkin.TreeKinematics(b, model))
    lam = expanded_parents(model)
    check_sparsity(H, lam)
    lam[3] = 2  # claim a different tree: the generator must refuse
    with pytest.raises(AssertionError, match="lam disagrees"):
        check_sparsity(H, lam)


def test_large_tree_factors_eagerly_and_matches_dense(monkeypatch):
    """A tree past schedule.WHOLE statements (hmmwv_pitman without its loops, 3,800) keeps the emitted order, so
    its LᵀDL subtracts each update as it comes (ltdl.py, `eager`); the generated code still equals the dense
    reference. No model in models/ is such a tree; `crosscheck bench --peers` times these spanning trees."""
    from crosscheck.bench import spanning_tree
    from mechdyn.codegen import generate as gen
    model = spanning_tree(load_model("hmmwv_pitman"))
    forward, eager = gen.ltdl_forward, []

    def spy(b, H, lam, rhs, blocks, eager_arg=False):
        eager.append(eager_arg)
        return forward(b, H, lam, rhs, blocks, eager_arg)

    monkeypatch.setattr(gen, "ltdl_forward", spy)
    gen.dynamics_body(model)
    assert eager == [False, True]
    monkeypatch.undo()
    assert compare.gen_vs_dense(mechdyn.load(model), 50).value < 1e-9


def test_floating_pivots_taken_ready_first_shorten_the_chain(monkeypatch):
    """Satellite's bus block eliminated pivot by pivot, the one ready first next (ltdl.pivot_order): its longest
    chain is 116 cycles after the sincos batch; planted back in the written order, 141."""
    from mechdyn.codegen import ltdl
    from tests.conftest import critical_path

    assert critical_path("satellite") == 116
    monkeypatch.setattr(ltdl, "pivot_order", lambda b, H, lam, blocks, eager=False: list(range(len(lam))))
    assert critical_path("satellite") == 141


def test_planted_unpermuted_floating_block_is_caught(fresh_cache, monkeypatch):
    """H factored in the written order while the right-hand side and the result are permuted: gen_vs_dense
    fails on satellite (and on jointmix's floating drone)."""
    from mechdyn.codegen import ltdl
    monkeypatch.setattr(ltdl, "permute", lambda H, perm: H)
    for spec in ("satellite", JOINTMIX):
        err = compare.gen_vs_dense(mechdyn.load(spec), 50).value
        print(f"planted unpermuted H: gen_vs_dense = {err:.3e}")
        assert err > 1e-3


def test_planted_eager_update_sign_is_caught(fresh_cache, monkeypatch):
    """The eager LᵀDL path (trees past schedule.WHOLE statements; no model in models/ is one) gets its own planted
    bug: an update added instead of subtracted there fails gen_vs_dense on hmmwv_pitman's spanning tree."""
    from crosscheck.bench import spanning_tree
    from mechdyn.codegen import ltdl
    real = ltdl.update_entry
    monkeypatch.setattr(ltdl, "update_entry", lambda b, entry, update, eager:
                        real(b, entry, b.neg(update) if eager else update, eager))
    err = compare.gen_vs_dense(mechdyn.load(spanning_tree(load_model("hmmwv_pitman"))), 50).value
    print(f"planted eager update sign: gen_vs_dense = {err:.3e}")
    assert err > 1e-3
