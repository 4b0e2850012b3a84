"""Accuracy gates against the dense reference, on every model."""
from crosscheck import dense_compare as compare
from mechdyn.core.parse import load_model

from .conftest import dynamics

TRIALS = 1000


def test_crba_vs_aba(model_name, gate):
    gate(model_name, compare.crba_vs_aba(load_model(model_name), TRIALS))


def test_gen_vs_dense(model_name, gate):
    gate(model_name, compare.gen_vs_dense(dynamics(model_name), TRIALS))


def test_observe_vs_dense(model_name, gate):
    gate(model_name, compare.observe_vs_dense(dynamics(model_name), TRIALS))


def test_find_roundtrip(model_name, gate):
    gate(model_name, compare.find_roundtrip(dynamics(model_name)))


def test_rank_K(loop_model_name, gate):
    gate(loop_model_name, compare.rank_K(load_model(loop_model_name), TRIALS))
