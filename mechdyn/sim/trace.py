"""Trace files: a trajectory as CSV, with a `#` preamble carrying what plots need.

    # mechdyn trace
    # model: satellite
    # scheme: verlet
    # dt: 0.001
    # gravity: 0 0 -9.81
    # floating: bus
    t,q:bus.qw,...,qd:bus.wx,...,energy,dissipated[,closure]

Column names say which body and coordinate each is, so a plot needs nothing
but the file. `energy` is E(t); `dissipated` the work the dampers dissipated
since t = 0, integrated at every step, so energy + dissipated is the balance.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mechdyn.cliutil import atomic_write
from mechdyn.core.model import Model

FLOATING_Q = ("qw", "qx", "qy", "qz", "x", "y", "z")
FLOATING_V = ("wx", "wy", "wz", "vx", "vy", "vz")


def coordinate_names(model: Model) -> tuple[list[str], list[str]]:
    """Column names of q and qd: `q:<body>` for single-DOF joints, `q:<body>.<part>` for floating ones."""
    qn, vn = [], []
    for b in model.bodies:
        if b.joint == "floating":
            qn += [f"q:{b.name}.{c}" for c in FLOATING_Q]
            vn += [f"qd:{b.name}.{c}" for c in FLOATING_V]
        else:
            qn.append(f"q:{b.name}")
            vn.append(f"qd:{b.name}")
    return qn, vn


@dataclass(frozen=True)
class Trace:
    meta: dict[str, str]
    data: pd.DataFrame


def write_trace(path: Path, model: Model, t, Q, QD, energy, dissipated, closure, meta: dict[str, str]) -> None:
    """Write a trace atomically (readers never see half a file)."""
    qn, vn = coordinate_names(model)
    df = pd.DataFrame(np.column_stack([t, Q, QD, energy, dissipated]), columns=["t", *qn, *vn, "energy", "dissipated"])
    if closure is not None:
        df["closure"] = closure
    head = {"model": model.name, "gravity": " ".join(f"{g:g}" for g in model.gravity),
            "floating": " ".join(b.name for b in model.bodies if b.joint == "floating")} | meta
    preamble = "# mechdyn trace\n" + "".join(f"# {k}: {v}\n" for k, v in head.items())
    atomic_write(path, preamble + df.to_csv(index=False, float_format="%.17g"))


def read_trace(path: Path) -> Trace:
    """A trace file's preamble and columns."""
    meta = {}
    with open(path) as f:
        for line in f:
            if not line.startswith("#"):
                break
            if ":" in line:
                k, v = line[1:].split(":", 1)
                meta[k.strip()] = v.strip()
    if "model" not in meta:
        raise ValueError(f"{path}:1: not a mechdyn trace; expected a '# model: NAME' preamble line")
    return Trace(meta, pd.read_csv(path, comment="#"))
