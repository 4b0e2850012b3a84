"""The settle of the tracked models (mechdyn/sim/settle.py), each gate's figure recorded in the gate history: the
whole 4 s settle at the accuracy step, whose stepping takes about a second on m113 (docs/simulation.md "The
settle"), so CI runs what `mechdyn sim MODEL` runs."""
import pytest

from crosscheck.checks import Check

from .conftest import MODELS
from .settled import settled

TRACKED = [m for m in MODELS if m in ("m113", "track_demo", "track_min")]
GATES = ("crush", "load", "momentum", "energy", "energy_net", "passivity", "balance", "period2")


@pytest.mark.parametrize("name", TRACKED)
@pytest.mark.parametrize("which", GATES)
def test_settle(name, which, gate):
    (g,) = [g for g in settled(name).gates if g.name == which]
    # a Gate passes strictly below its bound, a Check at or below its threshold: the same verdict but at equality
    gate(name, Check(f"settle_{g.name}", g.value, g.bound, f"{g.detail} [{g.unit}]"))
