"""Golden gates: the generated code's qdd and observe at 20 stored states of every model, to 1e-12; its derivatives
(fwd_dyn_derivs) at the first 5 of them, to 1e-12, and their flop count, on every model they accept.

The dense reference would share a physics change made on both routes; the
golden, recorded by `crosscheck golden --update`, does not. Tests only read
regression/golden/; a missing golden is a failing gate that names the command
that creates it.
"""
from dataclasses import replace

import pytest

from crosscheck import golden
from mechdyn.core.parse import load_model
from mechdyn.dynamics import Dynamics

from .conftest import dynamics


def test_golden_qdd(model_name, gate):
    dyn = dynamics(model_name)
    g = golden.load_for(dyn)
    gate(model_name, golden.qdd_check(dyn, g) if g else golden.missing(model_name, "golden_qdd", golden.OUTPUT_TOL))


def test_golden_observe(model_name, gate):
    dyn = dynamics(model_name)
    g = golden.load_for(dyn)
    gate(model_name, golden.observe_check(dyn, g) if g else golden.missing(model_name, "golden_observe",
                                                                            golden.OUTPUT_TOL))


def test_missing_golden_fails_and_names_the_command(monkeypatch, tmp_path):
    monkeypatch.setattr(golden, "GOLDEN_DIR", tmp_path)
    dyn = dynamics("elbow")
    assert golden.load_for(dyn) is None
    check = golden.missing("elbow", "golden_qdd", golden.OUTPUT_TOL)
    assert not check.passed and "`crosscheck golden --update elbow`" in check.line()


def test_changed_physics_fails():
    """A golden whose qdd is off by 1e-9 (as a changed physics term would leave it) fails the gate."""
    dyn = dynamics("fourbar")
    g = golden.load_for(dyn)
    assert g is not None, "no fourbar golden: crosscheck golden --update fourbar"
    assert golden.qdd_check(dyn, g).passed
    bumped = replace(g, qdd=g.qdd + 1e-9 * (1 + abs(g.qdd)))
    check = golden.qdd_check(dyn, bumped)
    assert not check.passed and "crosscheck golden --update fourbar" in check.note


# -- the derivatives' golden (fwd_dyn_derivs) ------------------------------------------------------------------------
def deriv_golden(name: str):
    """The model's compiled dynamics and stored derivatives golden; skipped (saying why) for a model whose
    derivatives take too long to build for the suite."""
    if (why := golden.long_build_skip(name)) is not None:
        pytest.skip(why)
    dyn = dynamics(name)
    return dyn, golden.load_derivatives(name, dyn.nbody)


def test_golden_derivatives(model_name, gate):
    dyn, g = deriv_golden(model_name)
    gate(model_name, golden.derivatives_check(dyn, g) if g else golden.missing(
        model_name, "golden_derivatives", golden.OUTPUT_TOL, derivatives=True))


def test_derivatives_flops(model_name, gate):
    dyn, g = deriv_golden(model_name)
    gate(model_name, golden.flops_check(model_name, dyn.derivatives_flops, g) if g else golden.missing(
        model_name, "derivatives_flops", golden.FLOPS_SLACK, derivatives=True))


def test_changed_derivatives_fail():
    """A derivatives golden off by 1e-9 in one block, or recorded with 5 % fewer flops, fails its gate."""
    dyn = dynamics("fourbar")
    g = golden.load_derivatives("fourbar", dyn.nbody)
    assert g is not None, "no fourbar derivatives golden: crosscheck golden --derivatives --update fourbar"
    assert golden.derivatives_check(dyn, g).passed and golden.flops_check("fourbar", dyn.derivatives_flops, g).passed
    bumped = replace(g, blocks={**g.blocks, "dqd": g.blocks["dqd"] + 1e-9 * (1 + abs(g.blocks["dqd"]))})
    check = golden.derivatives_check(dyn, bumped)
    assert not check.passed and "dqd" in check.detail and "--derivatives --update fourbar" in check.note
    check = golden.flops_check("fourbar", dyn.derivatives_flops, replace(g, flops=int(g.flops / 1.05)))
    assert not check.passed and check.name == "derivatives_flops" and "--derivatives --update fourbar" in check.note


def test_planted_generator_changes_trip_the_derivative_gates(tmp_path, monkeypatch):
    """Generated afresh with a planted bug: the product rule without its x y' term changes the values; a
    redundant (x + q[0]) − q[0] on every dq, dqd and dtau entry adds flops but changes the values only by
    rounding, so only the flop gate trips."""
    from mechdyn.codegen import generate as gen
    from mechdyn.codegen import tangent
    from mechdyn.codegen.expr import Builder, Sym

    g = golden.load_derivatives("elbow", load_model("elbow").nbody)
    assert g is not None, "no elbow derivatives golden: crosscheck golden --derivatives --update elbow"
    real = gen.derivatives_builder

    def padded(model, budget=None):
        b, blocks = real(model, budget)
        q0 = Sym("q[0]")
        for k in ("dq", "dqd", "dtau"):
            blocks[k] = [[x if x == 0.0 else b.sub(b.add(x, q0), q0) for x in row] for row in blocks[k]]
        return b, blocks

    monkeypatch.setenv("MECHDYN_CACHE", str(tmp_path / "padded"))  # planted builds never meet the real cache
    monkeypatch.setattr(gen, "derivatives_builder", padded)
    dyn = Dynamics(load_model("elbow"))
    flops, values = golden.flops_check("elbow", dyn.derivatives_flops, g), golden.derivatives_check(dyn, g)
    print(f"planted redundant arithmetic: {flops.line()}\n  {values.line()}")
    assert not flops.passed and values.passed
    monkeypatch.undo()
    monkeypatch.setenv("MECHDYN_CACHE", str(tmp_path / "product"))
    current: dict[str, str] = {}
    real_tape, real_combine = Builder.tape, tangent.combine

    def tape(self, roots):
        for name, op, args in real_tape(self, roots):
            current["op"] = op
            yield name, op, args

    monkeypatch.setattr(Builder, "tape", tape)
    monkeypatch.setattr(tangent, "combine", lambda b, terms: real_combine(b, terms[:1] if current.get("op") == "*"
                                                                           else terms))
    values = golden.derivatives_check(Dynamics(load_model("elbow")), g)
    print(f"planted product rule: {values.line()}")
    assert not values.passed


def test_golden_command_shows_and_misses_derivatives_goldens(monkeypatch, tmp_path, capsys):
    """`crosscheck golden --derivatives` prints what is stored, and exits 1 naming the command where nothing is."""
    from crosscheck.cli import parser
    from mechdyn.cliutil import run

    assert run(parser, ["golden", "--derivatives", "fourbar"]) == 0
    assert "derivatives golden fourbar: 5 states" in capsys.readouterr().out
    monkeypatch.setattr(golden, "DERIV_DIR", tmp_path)
    assert run(parser, ["golden", "--derivatives", "fourbar"]) == 1
    assert "create it with `crosscheck golden --derivatives --update fourbar`" in capsys.readouterr().out
