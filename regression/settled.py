"""The settle of each model, run once per process and shared by the settle gates (test_settle_gates.py) and the
slope gates (test_hold_gates.py), which continue from its state: one settle per model in CI, not one per file."""
from __future__ import annotations

from functools import cache

from mechdyn.sim.settle import Settle, settle

from .conftest import dynamics


@cache
def settled(name: str) -> Settle:
    """mechdyn.sim.settle.settle's default run on the model, what `mechdyn sim MODEL` runs: its gates and state."""
    return settle(dynamics(name))
