"""The drive gates (mechdyn/sim/drive.py): the sprockets' forward sense, the tractive force against T/R on 15°, the
coasting track speed against ω·R on the flat; each passes, and each trips on a planted bug once. track_demo is the
fast model (track_min's one road wheel under the apex of its V-shaped lower run holds it in a well a pitch wide,
docs/simulation.md), though it coasts; the coast and the one-sided torque also run on m113."""
from __future__ import annotations

import numpy as np
import pytest

from mechdyn.sim import drive

from .test_slope import planted, settled

# the ground's friction cone cut to a fiftieth: the tracks spin on the patch
GRIP_CUT = ("double cone = g->mu * load;", "double cone = 0.02 * g->mu * load;")


def test_sprockets_of_m113():
    dyn, _, _ = settled("m113")
    gears = drive.sprockets(drive.Contact(dyn.model))
    names = sorted(dyn.model.bodies[s.body].name for s in gears)
    assert names == ["sprocket_L", "sprocket_R"]
    assert all(s.sign == 1.0 and s.radius == 0.245 for s in gears)
    tau = drive.drive_tau(dyn, gears, 100.0)
    assert np.count_nonzero(tau) == 2 and tau.sum() == 200.0


def test_climb_track_demo():
    dyn, q, qd = settled("track_demo")
    c = drive.climb(dyn, q, qd)
    for g in c.gates:
        print(g.line())
    assert [g.name for g in c.gates] == ["drive_hold", "drive_signs", "drive_patch"]
    assert all(g.passed for g in c.gates)
    gears = drive.sprockets(drive.Contact(c.tilted.model))
    want = len(gears) * c.torque / gears[0].radius
    print(f"the ground's force up the slope at T0 {c.tractive:.5g} N against n·T0/R {want:.5g} N")
    assert abs(c.tractive - want) < 0.02 * want  # reported, not a gate: Newton's law at a holding state


def test_climb_m113():
    """m113's climb at ±50 % of T0: outside its band's resistance to rolling (about 20 % of M g sin θ), so it
    climbs above T0 and rolls back below it."""
    dyn, q, qd = settled("m113")
    c = drive.climb(dyn, q, qd)
    for g in c.gates:
        print(g.line())
    assert all(g.passed for g in c.gates)


def test_climb_planted_reversed_torque(monkeypatch):
    product = drive.drive_tau
    monkeypatch.setattr(drive, "drive_tau", lambda dyn, gears, torque: -product(dyn, gears, torque))
    dyn, q, qd = settled("track_demo")
    c = drive.climb(dyn, q, qd, T=1.0)
    for g in c.gates:
        print("planted (the torque reversed):", g.line())
    # the patch still holds: the vehicle rolls back on it
    assert not any(g.passed for g in c.gates if g.name != "drive_patch")


def test_climb_m113_planted_one_sprocket_backwards(monkeypatch):
    """Torque on one sprocket only, with the wrong sign: the vehicle rolls back and yaws."""
    product = drive.drive_tau

    def one_sided(dyn, gears, torque):
        return -product(dyn, gears[:1], torque)

    monkeypatch.setattr(drive, "drive_tau", one_sided)
    dyn, q, qd = settled("m113")
    c = drive.climb(dyn, q, qd, T=1.0, factors=(1.0,))
    for g in c.gates:
        print("planted (one sprocket, backwards):", g.line())
    assert not any(g.passed for g in c.gates if g.name != "drive_patch")
    run = c.runs[1.0]
    yaw = dyn.bodies(run.q[-1], run.qd[-1])[0, 12:15] @ c.tilted.normal
    print(f"hull yaw rate {yaw:.3g} rad/s")
    assert abs(yaw) > 1e-2


@pytest.mark.parametrize("name, least", [("track_min", 0.05), ("track_demo", 0.3), ("m113", 0.3)])
def test_coast(name, least):
    """least: the coasting speed it must reach (track_min's well holds it to a sixth of the others')."""
    dyn, q, qd = settled(name)
    c = drive.coast(dyn, q, qd)
    print(c.gates[0].line())
    assert c.gates[0].passed and c.speed > least


def test_coast_planted_grip_cut():
    dyn, q, qd = settled("track_demo")
    c = drive.coast(dyn, q, qd, module=planted(*GRIP_CUT))
    print("planted (the ground's cone cut to 1/50):", c.gates[0].line())
    assert not c.gates[0].passed
