"""Session setup for every test directory (tests/, regression/): loaded first, before any test module imports numpy."""
import os
from pathlib import Path

import pytest

# One BLAS thread per process. `pytest -n auto` already runs a worker on each core, and OpenBLAS's own threads on
# top of that oversubscribe them, which slows the dense reference's many small solves several times over. It also
# makes the figures reproducible: a threaded LAPACK solve rounds differently with the thread count (m113's dense
# qdd, nv 168, moves at 1e-11 scaled between one and two threads). Set before numpy loads its OpenBLAS (xdist
# workers inherit this environment); a value already set in the environment wins.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


MODELS = frozenset(p.stem for p in (Path(__file__).parent / "models").glob("*.mech"))


def model_of(item: pytest.Item) -> str | None:
    """The model in models/ a collected test runs on: the first of its parameters that names one."""
    params = getattr(item, "callspec", None)
    return next((v for v in params.params.values() if isinstance(v, str) and v in MODELS), None) if params else None


def pytest_collection_modifyitems(config, items) -> None:
    """One xdist group per model, across tests/ and regression/.

    Under `--dist loadgroup` (pyproject.toml's addopts) a model's tests share one worker, so its modules are built,
    its validation states drawn and its dense reference solved once per run, and no worker waits on another's
    build lock with its core idle (a cold m113 compiles for most of a minute). xdist starts the largest groups
    first. A test that names its own group (the Pinocchio timing program's) keeps it.
    """
    for item in items:
        if (m := model_of(item)) is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(m))
