"""Comparisons that `crosscheck mujoco` runs, each returning a Check."""
from __future__ import annotations

from tqdm import tqdm

from crosscheck.checks import Check
from mechdyn.core.sample import scaled_error, states
from mechdyn.dynamics import Dynamics

from . import NotRepresentable, build, forward, why_not

GATE = 1e-9

NOTE = ("check the convention maps in mechdyn/export/mjcf.py (free joint: qpos [r, w x y z], qvel [world v; body w]) "
        "and the fext map to xfrc_applied; if crosscheck pinocchio passes, the MJCF export or its map is at fault")


def accel_vs_generated(dyn: Dynamics, trials: int = 1000, seed: int = 0) -> Check:
    """MuJoCo's mj_forward on the exported MJCF against the generated C, on random states with fext and inputs."""
    model = dyn.model
    reason = why_not(model)
    if reason:
        raise NotRepresentable(reason)
    mm = build(model)
    worst, at = 0.0, -1
    for k, s in enumerate(tqdm(states(model, trials, seed), total=trials, desc="mujoco vs generated", unit="state",
                               leave=False, disable=None)):
        e = scaled_error(forward(mm, s.q, s.qd, s.tau, s.fext, s.act), dyn.forward(s.q, s.qd, s.tau, s.fext, s.act))
        if e > worst or at < 0:
            worst, at = e, k
    c = Check("accel_vs_generated", worst, GATE,
              f"{trials} trials (random states, mj_forward, contacts off), max scaled |qdd_mujoco - qdd_generated| "
              f"(worst at trial {at})")
    return c if c.passed else Check(c.name, c.value, c.threshold, c.detail, NOTE)
