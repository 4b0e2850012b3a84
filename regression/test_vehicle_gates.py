"""hmmwv_road on its tires (mechdyn/sim/manoeuvres.py, docs/manoeuvres.md): the statics, the braking run's energy
budget and passivity, the constant-radius turn and the double lane change, each gate's figure recorded in the gate
history. Each manoeuvre runs at the step its own accuracy allows (the lane change's is checked here against half
that step)."""
from functools import cache

import numpy as np
import pytest

from crosscheck.checks import Check
from mechdyn.sim import manoeuvres as mv
from mechdyn.sim.gate import Gate, below
from mechdyn.sim.vehicle import Vehicle

from .conftest import dynamics

MODEL = "hmmwv_road"
STEP_BOUND = 0.01  # m: the lane change's path at its step against half the step
LANE_SPEED = 15.0  # m/s: the lane change's (mechdyn sim --manoeuvre lane's default)


def car(speed: float, dt: float | None = None) -> Vehicle:
    """hmmwv_road settled on its tires, its step the accuracy step for `speed` (the lowest it rolls at)."""
    dyn = dynamics(MODEL)
    return Vehicle(dyn, speed=speed, dt=dt)


@cache
def results() -> dict[str, Gate]:
    out = {}
    c = car(1.0)  # braking to rest passes through the slip law's slowest speed
    out |= {g.name: g for g in mv.statics(c).gates}
    out |= {g.name: g for g in mv.straight_brake(c).gates}
    c = car(4.0)
    out |= {g.name: g for g in mv.constant_radius(c).gates}
    dt = car(LANE_SPEED).dt
    runs = []
    for step in (dt, dt / 2):
        c = car(LANE_SPEED, step)
        mv.statics(c)
        runs.append(mv.lane_change(c))
    out |= {g.name: g for g in runs[0].gates}
    a, b = runs
    n = min(len(a.log["t"]), len(b.log["t"]))
    diff = float(np.hypot(a.log["x"][:n] - b.log["x"][:n], a.log["y"][:n] - b.log["y"][:n]).max())
    out["lane_change_step"] = below("lane_change_step", diff, STEP_BOUND, "m",
                                       f"the lane change's cg path at dt {dt:.3g} s against dt/2, largest distance "
                                       f"over {n} control periods")
    return out


GATES = ("wheel_loads", "total_load", "sinkage", "brake_balance", "brake_passivity", "turn_ay", "understeer",
         "lane_change", "lane_change_step")


@pytest.mark.parametrize("which", GATES)
def test_vehicle(which, gate):
    g = results()[which]
    gate(MODEL, Check(f"vehicle_{g.name}", g.value, g.bound, f"{g.detail} [{g.unit}]"))
