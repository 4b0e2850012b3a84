"""A driven model's drivers as the C steppers run them (motion.c's md_drivers), and what a run records of them."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from mechdyn.core import motion
from mechdyn.dynamics import Dynamics

MOTION_C = Path(__file__).parent / "motion.c"


def motion_source() -> str:
    """motion.c's text: compiled ahead of galpha.c (and step.c) in each stepper's translation unit."""
    return MOTION_C.read_text()


class DriverSet:
    """dyn's drivers with their current motions (Dynamics.motions) in one stepper module's md_drivers, and the
    buffers C fills: the reactions of the last evaluation, the drivers' work, and a run's reactions per
    recorded state (`record`)."""

    def __init__(self, dyn: Dynamics, ffi) -> None:
        m = dyn.model
        self.dyn, self.n = dyn, dyn.ndriver
        self.packed = [np.ascontiguousarray(motion.pack(x)) for x in dyn.motions.values()]
        q0 = m.q0()
        self._c = ffi.new("md_driver[]", self.n)
        for c, d, p in zip(self._c, m.drivers, self.packed):
            c.iq, c.iv, c.act, c.q0 = m.qidx[d.body], m.vidx[d.body], d.act, q0[m.qidx[d.body]]
            c.motion = ffi.from_buffer("double[]", p)
        self.act, self.r, self.work = np.zeros(max(1, dyn.nact)), np.zeros(self.n), np.zeros(1)
        self.struct = ffi.new("md_drivers *")
        s = self.struct
        s.d, s.n = self._c, self.n
        s.react = ffi.cast("md_react_fn", dyn.address("fwd_dyn_react"))
        s.act, s.r, s.work = (ffi.from_buffer("double[]", x) for x in (self.act, self.r, self.work))
        s.traj_r = ffi.NULL
        self._ffi, self._traj = ffi, None

    def record(self, rows: np.ndarray | None) -> None:
        """The (nrec, ndriver + 1) array C writes each recorded state's reactions and the drivers' work so far
        into (None: none recorded)."""
        self._traj = rows  # kept alive while C holds a pointer into it
        self.struct.traj_r = self._ffi.NULL if rows is None else self._ffi.from_buffer("double[]", rows)
