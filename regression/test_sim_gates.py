"""Trajectory gates: integration order on tree models, reversibility everywhere, closure drift on loop models."""
import pytest

from mechdyn.sim import checks

from .conftest import dynamics


@pytest.mark.parametrize("scheme", ["euler", "verlet"])
def test_order(tree_model_name, scheme):
    check = checks.order_gate(dynamics(tree_model_name), scheme)
    print(check.line())
    assert check.passed, check.line()


def test_reversibility(model_name):
    check = checks.reversibility(dynamics(model_name))
    print(check.line())
    assert check.passed, check.line()


def test_closure_drift(loop_model_name):
    check = checks.closure_gate(dynamics(loop_model_name))
    print(check.line())
    assert check.passed, check.line()
