"""The code generator: folding, sparsity, planted bugs, the cache, and the Python API."""
import multiprocessing as mp
import re
from pathlib import Path

import numpy as np
import pytest

import mechdyn
import mechdyn.codegen.build as build
from crosscheck import dense_compare as compare
from crosscheck.golden import models as golden_models
from mechdyn.codegen import crba as gcrba
from mechdyn.codegen import kinematics as gkin
from mechdyn.codegen import rnea as grnea
from mechdyn.codegen import simd, sspatial
from mechdyn.codegen.crba import mass_matrix
from mechdyn.codegen.expr import Builder, Sym
from mechdyn.codegen.generate import generate
from mechdyn.codegen.ltdl import check_sparsity, expanded_parents
from mechdyn.core.parse import load_model, parse
from mechdyn.core.sample import scaled_error
from mechdyn.core.sample import states as sample_states

TRIALS = 200
JOINTMIX = Path(__file__).parent / "data" / "jointmix.mech"  # every joint under every parent


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """A private, empty module cache, so planted generators never meet the real one."""
    monkeypatch.setenv("MECHDYN_CACHE", str(tmp_path))
    return tmp_path


# -- the expression builder ----------------------------------------------------
def test_folding_and_sharing():
    b = Builder()
    x, y = Sym("x[0]"), Sym("x[1]")
    assert b.mul(0.0, x) == 0.0 and b.mul(1.0, x) == x and b.add(x, 0.0) == x
    assert b.mul(-1.0, x) == -x
    assert b.sub(x, y) == -b.sub(y, x)  # a-b and b-a share one temporary
    assert b.add(x, y) is b.add(y, x)
    assert b.mul(b.mul(x, 0.5), 2.0) == x  # constant chains fold
    b.store("out[0]", b.add(b.mul(x, y), b.mul(y, x)))
    lines, ops = b.finish()
    assert ops["*"] == 1 and ops["+"] == 1, lines  # x*y emitted once; dead temporaries dropped


def test_nothing_is_emitted_that_the_model_did_not_ask_for():
    elbow = generate(load_model("elbow")).source
    assert "fext[" not in elbow and "act[" not in elbow and "obs[" not in elbow
    spring = generate(load_model("springpend")).source
    slots = {int(k) for k in re.findall(r"fext\[(\d+)\]", spring.split("void fwd_dyn_batch")[0])}
    assert slots and max(slots) < 6, slots  # only pend1 (body 0) declares fext 1
    assert "act[1]" in spring


def test_lam_reproduces_H_sparsity():
    model = load_model("bintree")
    b = Builder()
    H = mass_matrix(b, gkin.TreeKinematics(b, model))
    lam = expanded_parents(model)
    check_sparsity(H, lam)
    lam[3] = 2  # claim a different tree: the generator must refuse
    with pytest.raises(AssertionError, match="lam disagrees"):
        check_sparsity(H, lam)


def test_pendulums_H_is_diagonal_by_branch_sparsity():
    src = generate(load_model("pendulums")).source
    gantry = generate(load_model("gantry"))
    assert gantry.flops < 10, gantry.flops  # constant H: no trigonometry, almost no arithmetic
    assert "md_sincos4" not in gantry.source and "md_sincos4(" in src


def test_every_joint_type_under_every_kind_of_parent():
    """A slider on a spinning arm, hinges on sliders, a probe on a floating drone: generated = dense."""
    assert compare.gen_vs_dense(mechdyn.load(JOINTMIX), 1000).value < 1e-12


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


# -- planted bugs: validation must catch each ---------------------------------
def _gen_error(model_name: str) -> float:
    return compare.gen_vs_dense(mechdyn.load(model_name), TRIALS).value


def test_planted_R_instead_of_RT(fresh_cache, monkeypatch):
    real = gkin.joint_rotation_T
    monkeypatch.setattr(gkin, "joint_rotation_T", lambda b, axis, q: sspatial.transpose(real(b, axis, q)))
    err = _gen_error("elbow")
    print(f"planted E = R: gen_vs_dense = {err:.3e}")
    assert err > 1e-3


def test_planted_inertia_lower_left_sign(fresh_cache, monkeypatch):
    def planted(b, I, m):  # [Ī ω + h × v; m v + h × ω]: the lower-left block's sign flipped
        w, v = m[:3], m[3:]
        return sspatial.vadd(b, sspatial.mv(b, sspatial.sym3(I.I), w), sspatial.cross(b, I.h, v)) + \
            sspatial.vadd(b, sspatial.scale(b, I.m, v), sspatial.cross(b, I.h, w))

    monkeypatch.setattr(gcrba, "rbi_apply", planted)  # the CRBA's composite-inertia products
    err = _gen_error("threelink")
    print(f"planted inertia sign: gen_vs_dense = {err:.3e}")
    assert err > 1e-3


def test_planted_dropped_rnea_term(fresh_cache, monkeypatch):
    real = grnea.body_force  # drop the velocity products ω × (ω × c) and ω × Ic ω of the body force
    monkeypatch.setattr(grnea, "body_force", lambda b, bd, al, aO, w: real(b, bd, al, aO, [0.0, 0.0, 0.0]))
    err = _gen_error("satellite")
    print(f"planted dropped velocity products: gen_vs_dense = {err:.3e}")
    assert err > 1e-3


def test_planted_dropped_prismatic_coriolis(fresh_cache, monkeypatch):
    monkeypatch.setattr(grnea, "mtv", lambda b, E, x: [0.0, 0.0, 0.0])  # the slide rate: 2 ω × ṙ lost
    err = _gen_error(str(JOINTMIX))
    print(f"planted dropped prismatic Coriolis term: gen_vs_dense = {err:.3e}")
    assert err > 1e-3


def test_planted_tsda_sign(fresh_cache, monkeypatch):
    import mechdyn.codegen.elements as gel
    real = gel.path_row
    monkeypatch.setattr(gel, "path_row", lambda *a: {k: -x for k, x in real(*a).items()})
    err = _gen_error("springpend")
    print(f"planted tsda sign: gen_vs_dense = {err:.3e}")
    assert err > 1e-3


# -- the build cache -----------------------------------------------------------
def test_second_load_does_not_recompile(fresh_cache, monkeypatch):
    mechdyn.load("threelink")
    calls = []
    monkeypatch.setattr(build, "compile_module", lambda *a: calls.append(a))
    mechdyn.load("threelink")
    assert not calls


def _load_in_child(name: str) -> list[float]:
    d = mechdyn.load(name)
    return d.forward(np.full(d.nq, 0.3), np.ones(d.nv), np.zeros(d.nv)).tolist()


def test_concurrent_builders_share_one_cache(fresh_cache):
    ctx = mp.get_context("spawn")  # children inherit MECHDYN_CACHE through the environment
    with ctx.Pool(4) as pool:
        results = pool.map(_load_in_child, ["stanford"] * 8)
    assert all(r == results[0] for r in results)
    assert len(list(fresh_cache.glob("_mechdyn_stanford_*.so"))) == 1  # and its checksum file beside it
    assert not [p for p in fresh_cache.glob(".*") if not p.name.endswith(".lock")]  # no temporary left behind


def test_compile_error_shows_the_compiler_message(fresh_cache, monkeypatch):
    import mechdyn.codegen.generate as gen
    real = gen.generate
    monkeypatch.setattr(build, "generate", lambda m: gen.Generated(m, real(m).source + "\nthis is not C;\n", real(m).ops, 0))
    with pytest.raises(build.BuildError, match="error"):
        mechdyn.load("gantry")


def test_cache_key_covers_model_text():
    a = load_model("threelink")
    b = parse(a.source.replace("9.81", "9.80"), path=a.path, name=a.name)
    assert build.cache_key(a) != build.cache_key(b)


# -- the Python API ------------------------------------------------------------
def test_api_shapes_and_batch():
    d = mechdyn.load("springpend")
    rng = np.random.default_rng(0)
    n = 5
    Q, QD, TAU = rng.normal(size=(n, d.nq)), rng.normal(size=(n, d.nv)), rng.normal(size=(n, d.nv))
    F, A = rng.normal(size=(n, d.nbody, 6)), rng.normal(size=(n, d.nact))
    F[:, [i for i, b in enumerate(d.model.bodies) if not b.fext]] = 0.0  # loads there are refused
    batch = d.forward_batch(Q, QD, TAU, F, A)
    single = np.array([d.forward(Q[k], QD[k], TAU[k], F[k], A[k]) for k in range(n)])
    assert np.array_equal(batch, single)
    assert np.array_equal(d.forward(Q[0], QD[0], TAU[0]), d.forward(Q[0], QD[0], TAU[0], np.zeros((d.nbody, 6)), np.zeros(d.nact)))
    with pytest.raises(ValueError, match=r"q has shape \(3,\), expected \(2,\)"):
        d.forward(np.zeros(3), QD[0], TAU[0])
    with pytest.raises(ValueError, match="fext has shape"):
        d.forward(Q[0], QD[0], TAU[0], fext=np.zeros(6))
    assert d.forward(Q[0].astype(np.float32), QD[0].tolist(), TAU[0]).dtype == np.float64  # converted, not rejected
    assert d.find("poi", "tip2") == 2 and d.find("act", "torsion") == 1 and d.find("rsda", "nope") == -1
    assert d.observe(Q[0], QD[0]).shape == (d.observe_len,)


@pytest.mark.parametrize("name", golden_models())
def test_simd_batch_is_the_scalar_function_lane_by_lane(name):
    """fwd_dyn_batch's four-lane pass (simd.py) against fwd_dyn state by state, with a remainder: the same
    arithmetic, so equal up to where gcc fuses a product into an FMA in one build and not the other (1 ulp)."""
    d = mechdyn.load(name)
    states = list(sample_states(d.model, 11, seed=2, tear=1e-4))  # two passes of four and a remainder of three
    Q, QD, TAU = (np.array([getattr(s, f) for s in states]) for f in ("q", "qd", "tau"))
    F, A = np.array([s.fext for s in states]), np.array([s.act for s in states]).reshape(len(states), d.nact)
    single = np.array([d.forward(s.q, s.qd, s.tau, s.fext, s.act if d.nact else None) for s in states])
    batch = d.forward_batch(Q, QD, TAU, F, A if d.nact else None)
    assert max(scaled_error(x, y) for x, y in zip(batch, single)) <= 1e-15
    bare = np.array([d.forward(s.q, s.qd, s.tau) for s in states])  # fext and act left out: zeros in every lane
    assert max(scaled_error(x, y) for x, y in zip(d.forward_batch(Q, QD, TAU), bare)) <= 1e-15
    assert "fwd_dyn_batch4(" in generate(d.model).source


def test_planted_lane_mixup_is_caught(fresh_cache, monkeypatch):
    """Gathering an input's lanes with the wrong stride must show up as a batch/scalar mismatch."""
    real = simd.strides
    monkeypatch.setattr(simd, "strides", lambda model: {**real(model), "qd": real(model)["qd"] + 1})
    d = mechdyn.load("threelink")
    states = list(sample_states(d.model, 8, seed=2, tear=0.0))
    Q, QD, TAU = (np.array([getattr(s, f) for s in states]) for f in ("q", "qd", "tau"))
    single = np.array([d.forward(s.q, s.qd, s.tau) for s in states])
    assert not np.allclose(d.forward_batch(Q, QD, TAU), single)


def test_planted_polarization_slip_is_caught(fresh_cache, monkeypatch):
    """The ω_i ω_j coefficients with the cross terms halved (½ of polarization): the monomial path must fail."""
    real = grnea.quadratic_coefficients

    def halved(g):
        G = real(g).copy()
        G[:, 3:] *= 0.5
        return G

    monkeypatch.setattr(grnea, "quadratic_coefficients", halved)
    err = _gen_error("elbow")
    print(f"planted polarization slip: gen_vs_dense = {err:.3e}")
    assert err > 1e-6  # the gate is 1e-9; the slip only touches the small velocity-squared terms
