"""Accuracy gates against the dense reference, on every model."""
from crosscheck.dense import compare
from mechdyn.core.parse import load_model

from .conftest import dynamics

TRIALS = 1000


def test_crba_vs_aba(model_name):
    check = compare.crba_vs_aba(load_model(model_name), TRIALS)
    print(check.line())
    assert check.passed, check.line()


def test_gen_vs_dense(model_name):
    check = compare.gen_vs_dense(dynamics(model_name), TRIALS)
    print(check.line())
    assert check.passed, check.line()


def test_observe_vs_dense(model_name):
    check = compare.observe_vs_dense(dynamics(model_name), TRIALS)
    print(check.line())
    assert check.passed, check.line()


def test_find_roundtrip(model_name):
    check = compare.find_roundtrip(dynamics(model_name))
    print(check.line())
    assert check.passed, check.line()


def test_rank_K(loop_model_name):
    check = compare.rank_K(load_model(loop_model_name), TRIALS)
    print(check.line())
    assert check.passed, check.line()
