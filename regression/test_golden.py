"""Golden gates: the generated code's qdd and observe at 20 stored states of every model, to 1e-12.

The dense reference would share a physics change made on both routes; the
golden, recorded by `crosscheck golden --update`, does not. Tests only read
regression/golden/; a missing golden is a failing gate that names the command
that creates it.
"""
from dataclasses import replace

from crosscheck import golden

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
