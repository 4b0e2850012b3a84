"""The quarter car's suspension geometry against Chrono::Vehicle's own HMMWV double wishbone (issue 33).

The mechdyn half runs everywhere; the comparison needs pychrono with Chrono::Vehicle and skips, saying why,
without it.
"""
from __future__ import annotations

import numpy as np
import pytest

from crosscheck.suspension import FIELDS, GATES, differences, mechdyn_sweep, old_axes
from mechdyn.core.kinematics import forward_kinematics
from mechdyn.core.loops import closure
from mechdyn.core.parse import load_model

TRAVEL = np.linspace(-0.1, 0.1, 21)


@pytest.fixture(scope="module")
def quartercar():
    return load_model("quartercar")


@pytest.fixture(scope="module")
def ours(quartercar):
    return mechdyn_sweep(quartercar, TRAVEL)


def test_the_design_pose_is_the_sweeps_zero(ours, quartercar):
    """At zero travel the wheel stands as designed: no camber or toe (its frame is the vehicle's there), the wheel
    centre at the spindle's COM, the spring and shock at their design lengths (the model's comments)."""
    k = int(np.argmin(np.abs(TRAVEL)))
    assert abs(ours.camber[k]) < 1e-12 and abs(ours.toe[k]) < 1e-12
    assert abs(ours.x[k] - 1.648965) < 1e-12 and abs(ours.y[k] - 0.91) < 1e-12
    assert abs(ours.spring[k] - 0.2463) < 1e-4 and abs(ours.shock[k] - 0.3728) < 1e-4


def test_bump_gains_negative_camber(ours):
    """A short upper arm over a long lower one pulls the wheel's top in as it rises: camber falls through bump,
    monotonically, by degrees at full bump, and the spring shortens all the way."""
    bump = TRAVEL >= 0
    assert np.all(np.diff(ours.camber[bump]) < 0) and ours.camber[bump][0] - ours.camber[-1] > 2.0
    assert np.all(np.diff(ours.spring) < 0)


def test_the_upper_arm_axis_moves_camber_and_toe_past_the_gate(ours, quartercar):
    """The old approximation (the upper arm on x) against the real axis, both in mechdyn: the gate's scale sees
    it by three orders of magnitude."""
    d = differences(ours, mechdyn_sweep(old_axes(quartercar), TRAVEL))
    print(f"\nupper arms on x against their real axis: {d}")
    assert d["camber"] > 1000 * GATES["camber"] and d["toe"] > 1000 * GATES["toe"]


def test_the_sweep_closes_its_loops(quartercar, monkeypatch):
    """Each solved pose is on the closure manifold: the sweep's last state closes to 1e-12."""
    from crosscheck import suspension

    seen = []
    real = suspension.integrate
    monkeypatch.setattr(suspension, "integrate", lambda *a: seen.append(real(*a)) or seen[-1])
    mechdyn_sweep(quartercar, np.array([0.07]))
    phi, _ = closure(quartercar, seen[-1], forward_kinematics(quartercar, seen[-1]))
    assert np.abs(phi).max() < 1e-12


@pytest.fixture(scope="module")
def chrono():
    from crosscheck.chrono import PychronoMissing
    from crosscheck.chrono.vehicle import chrono_sweep, require_vehicle

    try:
        require_vehicle()
    except PychronoMissing as e:
        pytest.skip(f"Chrono::Vehicle comparison: {e}")
    return chrono_sweep(TRAVEL)


def test_the_quarter_car_matches_chrono_vehicles_double_wishbone(ours, chrono):
    d = differences(ours, chrono)
    print(f"\nmechdyn against Chrono::Vehicle over +-0.1 m: {d}")
    for f in FIELDS:
        assert d[f] <= GATES[f], (f, d[f])


def test_planted_old_axes_fail_against_chrono(quartercar, chrono):
    d = differences(mechdyn_sweep(old_axes(quartercar), TRAVEL), chrono)
    print(f"\nupper arms on x against Chrono::Vehicle: {d}")
    assert d["camber"] > GATES["camber"] and d["toe"] > GATES["toe"]
