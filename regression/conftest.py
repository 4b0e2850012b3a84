"""Every model in models/ is discovered, so a new model is gated the day it lands."""
from collections.abc import Iterable
from pathlib import Path
from typing import NoReturn

import pytest

from crosscheck import dense_compare, gates, golden
from crosscheck.checks import Check
from mechdyn.codegen import flags
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
    """The model's compiled dynamics, built once per worker through the cache.

    Compiled with the instruction gates' fixed-target flags wherever this CPU runs them: the same module they
    count, so each model compiles once per run, not twice, and no gate's figure depends on the host's
    -march=native (the generated C is the same; tests/ exercises the production flags).
    """
    if name not in _built:
        cflags = None if golden.counting_cpu_gap() else flags.counting()
        _built[name] = Dynamics(load_model(name), cflags=cflags)
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


@pytest.fixture(scope="package", autouse=True)
def _dense_references_shared():
    """A model's gates share its dense solutions (dense_compare.shared_references). Package scope: the sharing
    ends when a worker leaves regression/, so the unit tests' planted bugs in the dense routes are never served a
    clean solution kept here."""
    with dense_compare.shared_references():
        yield


class GateRecorder:
    """The `gate` fixture: gate(model, check) records and asserts a check; gate.skip(model, names, reason) skips
    the test, naming the gates it would have run (the report shows the reason in their cells)."""

    def __init__(self, node: pytest.Item) -> None:
        self.node = node

    def __call__(self, model: str, check: Check) -> None:
        """Print the check, attach its metric and unit to this test's report, and assert it."""
        unit = self._unit(check.name)
        print(check.line())
        self.node.user_properties.append(("gate", {
            "model": model, "gate": check.name, "metric": float(check.value),
            "threshold": float(check.threshold), "passed": bool(check.passed), "unit": unit,
        }))
        assert check.passed, check.line()

    def skip(self, model: str, names: str | Iterable[str], reason: str) -> NoReturn:
        """Skip this test with reason, recording it against model's gates `names` (one name or several)."""
        names = [names] if isinstance(names, str) else list(names)
        for name in names:
            self._unit(name)
            self.node.user_properties.append(("skip", {"model": model, "gate": name}))
        pytest.skip(reason)

    @staticmethod
    def _unit(name: str) -> str:
        """The gate's unit from crosscheck/gates.py; fails the test if the gate has no definition there."""
        try:
            return gates.unit(name)
        except KeyError as e:
            pytest.fail(e.args[0], pytrace=False)


@pytest.fixture
def gate(request) -> GateRecorder:
    """gate(model, check): print the check, attach its metric to this test's report, and assert it; a gate
    named nowhere in crosscheck/gates.py fails. gate.skip(model, names, reason): skip, naming the gates.

    The metric travels in the report's user_properties ("gate", {...}), so under
    pytest-xdist it reaches the controlling process, which alone writes the
    gate history (regression/history.py).
    """
    return GateRecorder(request.node)
