"""The Project Chrono cross-check: the same mechanism rebuilt in maximal coordinates.

Chrono shares none of this project's conventions (joint coordinates, E = Rᵀ,
spatial algebra, loop rows, Baumgarte terms), so agreement with it checks the
physics of the `.mech` conventions themselves, not only the code generator.

    build.py    model → ChSystem: bodies, tree joints and loop closures as links, TSDAs
    mapping.py  (q, qd) ↔ Chrono body states, and Chrono body accelerations → qdd
    kkt.py      exact acceleration-level KKT solve from Chrono's M, Cq, F and Qc
    sim.py      generated dynamics and Chrono stepped side by side
    checks.py   the three checks, as `Check`s

pychrono is optional and imported lazily: every module here imports without it,
and `require_pychrono()` raises `PychronoMissing` (an input error: exit code 2)
with the one line that says how to get it.
"""
from __future__ import annotations

import importlib
from types import ModuleType

from mechdyn.cliutil import InputError

MISSING = "pychrono is not installed: conda env create -f environment.yml (see README)"


class PychronoMissing(InputError):
    """pychrono cannot be imported; the message says how to get it."""


def require_pychrono() -> ModuleType:
    """The `pychrono` module, or PychronoMissing with the one-line remedy."""
    try:
        return importlib.import_module("pychrono")
    except ImportError as e:  # also sys.modules["pychrono"] = None
        raise PychronoMissing(MISSING) from e


def have_pychrono() -> bool:
    """Whether pychrono can be imported here."""
    try:
        require_pychrono()
    except PychronoMissing:
        return False
    return True
