"""Every model in models/ is discovered, so a new model is gated the day it lands."""
from pathlib import Path

import pytest

from crosscheck.checks import Check
from mechdyn.codegen.stepper import damped
from mechdyn.core.parse import load_model
from mechdyn.dynamics import Dynamics

# The gate history (regression/history.py): its hooks are imported here rather than
# named in `pytest_plugins`, which pytest refuses in a conftest below the rootdir
# (`pytest .` would fail). Don't define pytest_addoption / pytest_configure below
# without calling these.
from .history import pytest_addoption, pytest_configure  # noqa: F401

MODELS = sorted(p.stem for p in (Path(__file__).resolve().parents[1] / "models").glob("*.mech"))
_built: dict[str, Dynamics] = {}


def dynamics(name: str) -> Dynamics:
    """The model's compiled dynamics, built once per worker through the cache."""
    if name not in _built:
        _built[name] = Dynamics(load_model(name))
    return _built[name]


@pytest.fixture(params=MODELS)
def model_name(request) -> str:
    return request.param


def pytest_generate_tests(metafunc) -> None:
    """`loop_model_name` and `tree_model_name`: the discovered models with and without loop closures;
    `damped_model_name`: those with a damper (elsewhere the dissipated work is 0 on both routes)."""
    if "loop_model_name" in metafunc.fixturenames:
        metafunc.parametrize("loop_model_name", [m for m in MODELS if load_model(m).loops])
    if "tree_model_name" in metafunc.fixturenames:
        metafunc.parametrize("tree_model_name", [m for m in MODELS if not load_model(m).loops])
    if "damped_model_name" in metafunc.fixturenames:
        metafunc.parametrize("damped_model_name", [m for m in MODELS if damped(load_model(m))])


@pytest.fixture
def gate(request):
    """gate(model, check): print the check, attach its metric to this test's report, and assert it.

    The metric travels in the report's user_properties ("gate", {...}), so under
    pytest-xdist it reaches the controlling process, which alone writes the
    gate history (regression/history.py).
    """

    def record(model: str, check: Check) -> None:
        print(check.line())
        request.node.user_properties.append(("gate", {
            "model": model, "gate": check.name, "metric": float(check.value),
            "threshold": float(check.threshold), "passed": bool(check.passed),
        }))
        assert check.passed, check.line()

    return record
