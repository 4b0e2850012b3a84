"""Trajectory gates: integration order on tree models, reversibility everywhere, the dampers' work on damped
models, closure drift on loop models."""
import pytest

from crosscheck import trajectory as checks

from .conftest import dynamics


@pytest.mark.parametrize("scheme", ["euler", "verlet"])
def test_order(tree_model_name, scheme, gate):
    gate(tree_model_name, checks.order_gate(dynamics(tree_model_name), scheme))


def test_reversibility(model_name, gate):
    gate(model_name, checks.reversibility(dynamics(model_name)))


def test_closure_drift(loop_model_name, gate):
    gate(loop_model_name, checks.closure_gate(dynamics(loop_model_name)))


def test_dissipation(damped_model_name, gate):
    gate(damped_model_name, checks.dissipation_gate(dynamics(damped_model_name)))
