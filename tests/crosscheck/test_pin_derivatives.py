"""The derivatives' Pinocchio gate (crosscheck/pinocchio/derivatives.py): it passes clean, and planted bugs in
the generated blocks or in the maps to Pinocchio's coordinates trip it."""
import numpy as np
import pytest

import mechdyn
from crosscheck.bench import spanning_tree
from crosscheck.pinocchio import derivatives as pd
from crosscheck.randmodel import Spec, random_mech
from mechdyn.core.model import Model
from mechdyn.core.parse import load_model, parse
from mechdyn.dynamics import Derivatives, Dynamics

from .test_peers import PINOCCHIO_TIMING

TRIALS = 10


class Planted:
    """A Dynamics whose derivatives come out of `plant` (the generated blocks changed as a bug would)."""

    def __init__(self, dyn: Dynamics, plant) -> None:
        self.model, self.nact, self._dyn, self._plant = dyn.model, dyn.nact, dyn, plant

    def derivatives(self, *args) -> Derivatives:
        return self._plant(self._dyn.derivatives(*args))


def flipped_dqd_entry(d: Derivatives) -> Derivatives:
    dqd = d.dqd.copy()
    k = np.unravel_index(np.argmax(np.abs(dqd)), dqd.shape)  # the largest entry: a sign no tolerance hides
    dqd[k] = -dqd[k]
    return d._replace(dqd=dqd)


def pinocchio_tangent(d: Derivatives) -> Derivatives:
    """satellite's floating body (slots 0-5): its dq columns in Pinocchio's [δp; δφ] order instead of [δφ; δp]."""
    dq = d.dq.copy()
    dq[:, [0, 1, 2, 3, 4, 5]] = d.dq[:, [3, 4, 5, 0, 1, 2]]
    return d._replace(dq=dq)


def fext_halves_swapped(d: Derivatives) -> Derivatives:
    """dfext's columns read as [force; moment] rather than [moment; force]."""
    return d._replace(dfext=d.dfext[:, :, [3, 4, 5, 0, 1, 2]])


def test_clean_models_pass_and_print_every_block():
    for name in ("satellite", "springpend"):
        check, worst = pd.derivs_vs_generated(mechdyn.load(name), TRIALS)
        assert check.passed, check.line()
        assert set(worst) == {"qdd", "dq", "dqd", "dtau", "dfext"} | ({"dact"} if name == "springpend" else set())
        assert all(f"{k} " in check.detail for k in worst)


@pytest.mark.parametrize("name, plant, block", [("elbow", flipped_dqd_entry, "dqd"),
                                                 ("satellite", pinocchio_tangent, "dq"),
                                                 ("satellite", fext_halves_swapped, "dfext")])
def test_planted_bug_in_the_generated_blocks_fails(name, plant, block):
    """One sign flipped in dqd (its largest entry); the floating body's tangent taken in Pinocchio's order;
    dfext's moment and force columns swapped."""
    check, worst = pd.derivs_vs_generated(Planted(mechdyn.load(name), plant), TRIALS)
    assert not check.passed and check.value > 1e-4 and "tangent.py" in check.note
    assert worst[block] > 1e-4 and max(v for k, v in worst.items() if k != block) < pd.GATE


def test_base_fixed_fext_needs_the_turning_term(monkeypatch):
    """Pinocchio holds fext fixed in the joint's frame; without the term that turns a base-fixed force with the
    frame, satellite's dq disagrees (the term is in use, and right: with it the gate passes)."""
    real = pd.fext_terms
    def without_turning(*a):
        turning, local = real(*a)
        return np.zeros_like(turning), local

    monkeypatch.setattr(pd, "fext_terms", without_turning)
    check, worst = pd.derivs_vs_generated(mechdyn.load("satellite"), TRIALS)
    assert not check.passed and worst["dq"] > 1e-6 and worst["dfext"] < pd.GATE


def test_element_forces_derivatives_are_in_the_reference(monkeypatch):
    """Without the elements' differenced derivatives the reference misses springpend's spring and torsion
    stiffness and damping, and their inputs."""
    monkeypatch.setattr(pd, "_difference", lambda f, x, move: np.zeros((len(f(x)), move.dim)))
    _, worst = pd.derivs_vs_generated(mechdyn.load("springpend"), TRIALS)
    assert min(worst["dq"], worst["dqd"], worst["dact"]) > 1e-3


def test_the_difference_settles_near_a_collapsed_spring(monkeypatch):
    """springpend's trial 22 has its spring 2 cm long: the first step's stencil reaches past it and is wrong;
    halving finds the derivative the generated code has."""
    from mechdyn.core.sample import states

    dyn = mechdyn.load("springpend")
    s = list(states(dyn.model, 23, 0))[22]
    assert dyn.observe(s.q, s.qd)[6 * len(dyn.model.pois)] < 0.025  # the spring's length, after the POIs
    pm = pd.pin_model(dyn.model)
    gen = dyn.derivatives(s.q, s.qd, s.tau, s.fext, s.act)
    assert pd.block_errors(gen, pd.pinocchio_derivatives(pm, s))["dq"] < pd.GATE
    monkeypatch.setattr(pd, "_difference", lambda f, x, move: pd._stencil(f, x, move, pd.STEP))
    assert pd.block_errors(gen, pd.pinocchio_derivatives(pm, s))["dq"] > 0.1


def test_loop_models_say_why_not():
    assert "loop closures" in pd.why_not(load_model("fourbar"))
    assert pd.why_not(load_model("chain63")) is None
    with pytest.raises(ValueError, match="loop closures"):
        pd.derivs_vs_generated(Dynamics(load_model("fourbar")))


@PINOCCHIO_TIMING
def test_bench_derivatives_side_by_side(capsys):
    """`crosscheck bench --peers --derivatives` on a small tree: both timed loops pass their checksums (or the
    command fails) and every figure is produced. Not a timing test: the figures are only checked to exist."""
    import json
    import shutil

    from crosscheck.bench import DERIVS_TABLE_HEADER, bench_derivatives
    from crosscheck.cli import parser as crosscheck_main
    from mechdyn.cliutil import run

    assert run(crosscheck_main, ["bench", "threelink", "--peers", "--derivatives", "--repeats", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for k in ("derivs_ns_per_call", "ns_per_call", "pinocchio_ns_per_call", "pinocchio_aba_ns_per_call"):
        assert 0 < out[k] < 1e6, k
    assert out["derivs_flops"] > out["flops"] > 0 and out["accuracy"] <= pd.GATE
    assert out["pinocchio_ratio"] == out["pinocchio_ns_per_call"] / out["derivs_ns_per_call"]
    if shutil.which("valgrind"):
        assert 100 < out["instructions"] < out["derivs_instructions"] < out["pinocchio_instructions"]
    res = bench_derivatives(mechdyn.load("threelink"), repeats=1, seconds=0.002, count=False)
    assert res.table_row().count("|") == DERIVS_TABLE_HEADER.splitlines()[0].count("|")


def test_bench_derivatives_checksums_catch_a_loop_that_computes_something_else(monkeypatch):
    """Pinocchio's expected terms taken at other states (the pool reversed, as a pool written in another order
    would give); the generated checksum's terms without dqd: either timed loop is then caught not computing what
    its bindings give."""
    from crosscheck import bench
    from crosscheck.pinocchio import timing as pint

    dyn = mechdyn.load("threelink")
    real = pint.expected_derivatives

    with monkeypatch.context() as m:
        m.setattr(pint, "expected_derivatives", lambda pm, pool: real(pm, pool[::-1]))
        with pytest.raises(RuntimeError, match=r"computeABADerivatives\)'s timing program .* is not computing"):
            bench.bench_derivatives(dyn, repeats=1, seconds=0.002, count=False)
    terms = bench.derivative_terms
    monkeypatch.setattr(bench, "derivative_terms", lambda D: terms(D._replace(dqd=0 * D.dqd)))
    with pytest.raises(RuntimeError, match=r"fwd_dyn_derivs's timing program .* is not computing"):
        bench.bench_derivatives(dyn, repeats=1, seconds=0.002, count=False)


@pytest.mark.parametrize("args, says", [(["bench", "elbow", "--derivatives"], "add --peers")])
def test_bench_derivatives_refuses_what_it_cannot_time(args, says, capsys):
    from crosscheck.cli import parser as crosscheck_main
    from mechdyn.cliutil import run

    assert run(crosscheck_main, args) == 2
    assert says in capsys.readouterr().err


def long_models() -> dict[str, Model]:
    """The large trees of issue 38: chain63, the M113's spanning tree, and a hidden chain of 60 bodies on a floating
    root with turned frames, oblique axes, four springs between neighbours and fext on every body (randmodel)."""
    hidden = parse(random_mech(38, Spec(bodies=60, chain=True, springs=4)), "hidden_chain60.mech")
    return {"chain63": load_model("chain63"), "m113_tree": spanning_tree(load_model("m113")), "hidden_chain60": hidden}


@pytest.mark.parametrize("name", ["chain63", "m113_tree", "hidden_chain60"])
def test_large_trees_against_pinocchio(name):
    """The loop route (derivs_loop.py) where the straight-line one cannot go, against computeABADerivatives."""
    dyn = Dynamics(long_models()[name])
    assert dyn.derivatives_lib.fwd_dyn_derivs_loops == 1
    check, worst = pd.derivs_vs_generated(dyn, trials=4)
    print(f"\n{name} (nv {dyn.nv}): {check.line()}")
    assert check.passed, check.line()
