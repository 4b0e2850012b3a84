"""The slope gates of the three tracked models at settings that fit CI (mechdyn/sim/slope.py): each settled 4 s on
the flat from q0, then parked on 15° with the sprockets braked, anchored (the hold) and regularized (the control,
which must slide), and let go on 45° (the release). Each gate's metric goes into the gate history as
regression/test_sim_gates.py's do."""
from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from mechdyn.sim import slope
from mechdyn.sim.contact import ContactSim, accuracy_step
from mechdyn.sim.gate import Gate

from .conftest import dynamics

TRACKED = ("m113", "track_demo", "track_min")
SETTLE = 4.0  # s
HOLD_T = {"track_min": 8.0}  # s; 4 s elsewhere: track_min rocks on its one road wheel for ~4 s after the tilt
RELEASE_DEGREES = 45.0


@cache
def settled(name: str) -> tuple[np.ndarray, np.ndarray]:
    dyn = dynamics(name)
    sim = ContactSim(dyn)
    run = slope.run_whole(sim, dyn.model.q0(), np.zeros(dyn.nv), SETTLE, accuracy_step(sim.contact).dt, 100)
    return run.q[-1], run.qd[-1]


@pytest.fixture
def record(request):
    """record(model, gate): print the Gate, attach its metric to this test's report (the gate history), assert it.
    A control gate (one that must exceed its bound) is recorded with its figure and bound as they are."""

    def rec(model: str, g: Gate) -> None:
        print(g.line())
        request.node.user_properties.append(("gate", {
            "model": model, "gate": g.name, "metric": float(g.value), "threshold": float(g.bound),
            "passed": bool(g.passed)}))
        assert g.passed, g.line()

    return rec


@pytest.mark.parametrize("name", TRACKED)
@pytest.mark.parametrize("fric", ["anchor", "reg"])
def test_hold(name, fric, record):
    q, qd = settled(name)
    h = slope.hold(dynamics(name), q, qd, 15.0, fric=fric, T=HOLD_T.get(name, 4.0))
    print(f"{name} {fric}: energy budget's worst single-step rise over {h.tail.t[-1] - h.tail.t[0]:.3g} s at "
          f"stride 1: {h.rise:.3g} J (RISE_FRACTION of the kinetic scale: {h.rise_bound:.3g} J)")
    record(name, h.gates[0])


@pytest.mark.parametrize("name", TRACKED)
def test_release(name, record):
    if name == "track_min":
        pytest.skip("track_min tips over sliding down 45°: its support is the one road wheel under the apex of its "
                    "V-shaped lower run, so the hop the tilt starts (the normal load falling to cos 45°) turns into a "
                    "tumble with every corner off the ground by 0.84 s (docs/simulation.md, Release)")
    q, qd = settled(name)
    r = slope.release(dynamics(name), q, qd, RELEASE_DEGREES)
    print(f"{name}: the raw acceleration down the slope {r.accel:.4g} m/s² against {r.expected:.4g} (the "
          f"vehicle's heave and pitch average {r.normal_accel:.3g} m/s² off the plane over the window)")
    record(name, r.gates[0])
