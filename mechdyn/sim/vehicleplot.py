"""Pictures of the vehicle manoeuvres (docs/manoeuvres.md): a top view of the path and the time histories of
speed, yaw rate, lateral acceleration, roll, wheel loads and slips; the understeer curve of the turn."""
from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .vehicle import Log, Path2D  # noqa: E402


def manoeuvre_figure(log: Log, title: str, path: Path, names: list[str], ref: Path2D | None = None,
                     cones: list[tuple[float, float, float]] | None = None) -> Path:
    """One figure: the top view (the reference path dashed, the cones' lane edges) and seven time histories."""
    fig, ax = plt.subplots(2, 4, figsize=(17, 7.5), constrained_layout=True)
    a = ax[0, 0]
    if ref is not None:
        a.plot(ref.xy[:, 0], ref.xy[:, 1], "k--", lw=0.8, label="path")
    for x0, x1, yc, half in cones or []:
        for s in (-1, 1):
            a.plot([x0, x1], [yc + s * half] * 2, "ro-", lw=1.5, ms=3)
    a.plot(log["x"], log["y"], lw=1.4, label="cg")
    a.set(xlabel="x, m", ylabel="y, m", title="top view")
    if not cones:  # a lane change's few metres across would vanish at equal scales
        a.set_aspect("equal", adjustable="datalim")
    a.legend(fontsize=8)
    t = log["t"] - log["t"][0]
    panels = [("speed", "speed, m/s", 1.0), ("yaw_rate", "yaw rate, deg/s", 180 / math.pi),
              ("ay", "lateral acceleration, m/s²", 1.0), ("roll", "roll, deg", 180 / math.pi)]
    for a, (key, label, k) in zip([ax[0, 1], ax[0, 2], ax[0, 3], ax[1, 0]], panels):
        a.plot(t, k * log[key])
        a.set(xlabel="t, s", ylabel=label)
    for a, (col, label) in zip(ax[1, 1:], [("Fz", "wheel load Fz, N"), ("slip", "longitudinal slip sx"),
                                           ("slip_lat", "lateral slip sy")]):
        v = log.tire(col)
        for k, n in enumerate(names):
            a.plot(t, v[:, k], lw=1, label=n)
        a.set(xlabel="t, s", ylabel=label)
    ax[1, 1].legend(fontsize=8)
    fig.suptitle(title)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def understeer_figure(turn, path: Path) -> Path:
    """Net axle steer against lateral acceleration at each speed, the bicycle model's line through the first
    point, and v/r against the path's radius."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    ay = np.array([p.ay for p in turn.points])
    d = np.degrees([p.delta for p in turn.points])
    a.plot(ay / 9.81, d, "o-", label="hmmwv_road (front less rear road-wheel steer)")
    x = np.linspace(0, ay.max(), 20)
    base = d[0] - math.degrees(turn.predicted) * ay[0]  # through the first point: the slopes are what compare
    a.plot(x / 9.81, base + math.degrees(turn.predicted) * x, "k--",
           label=f"bicycle model's slope K {math.degrees(turn.predicted) * 9.81:.3g} deg/g, through the first point")
    a.axhline(math.degrees(turn.wheelbase / turn.radius), color="grey", lw=0.8, ls=":",
              label=f"L/R, L {turn.wheelbase:.4g} m")
    a.set(xlabel="lateral acceleration, g", ylabel="steer, deg", title=f"understeer curve, R {turn.radius:g} m")
    a.legend(fontsize=8)
    b.plot(ay / 9.81, np.degrees([p.roll for p in turn.points]), "o-")
    b.set(xlabel="lateral acceleration, g", ylabel="roll, deg", title="steady roll")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
