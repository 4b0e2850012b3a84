"""Time histories of a trace as PNG files: joint coordinates, floating-body motion, energy, closure."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .trace import Trace  # noqa: E402


def _save(fig, out: Path) -> Path:
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def needed_columns(tr: Trace) -> list[str]:
    """The columns plot_trace reads: t, each joint's qd beside its q, each floating body's position and
    velocities, and the energy."""
    joints = [c[2:] for c in tr.data.columns if c.startswith("q:") and "." not in c]
    floating = [f"{k}:{body}.{c}" for body in tr.meta.get("floating", "").split()
                for k, part in (("q", ""), ("qd", "w"), ("qd", "v")) for c in (part + a for a in "xyz")]
    return ["t", *(f"qd:{j}" for j in joints), *floating, "energy"]


def plot_trace(tr: Trace, outdir: Path) -> list[Path]:
    """Draw the trace's histories into outdir; returns the files written. ValueError, before anything is
    drawn, if a column it needs is missing."""
    missing = [c for c in needed_columns(tr) if c not in tr.data.columns]
    if missing:
        raise ValueError(f"the trace has no column {missing[0]!r}" + (f" (and {len(missing) - 1} more)"
                                                                     if len(missing) > 1 else ""))
    outdir.mkdir(parents=True, exist_ok=True)
    df, name, t = tr.data, tr.meta["model"], tr.data["t"].to_numpy()
    title = f"{name} ({tr.meta.get('scheme', '?')}, dt {tr.meta.get('dt', '?')} s)"
    files = []
    joints = [c for c in df.columns if c.startswith("q:") and "." not in c]
    if joints:
        fig, (a, b) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
        for c in joints:
            a.plot(t, df[c], label=c[2:])
            b.plot(t, df["qd:" + c[2:]], label=c[2:])
        a.set_ylabel("q (rad or m)")
        b.set_ylabel("qd (rad/s or m/s)")
        b.set_xlabel("t (s)")
        a.legend(fontsize=7, ncol=3)
        a.set_title(f"{title}: joint coordinates")
        files.append(_save(fig, outdir / f"{name}_joints.png"))
    for body in tr.meta.get("floating", "").split():
        fig, axes = plt.subplots(2, 2, figsize=(10, 7))
        pos = df[[f"q:{body}.{c}" for c in "xyz"]].to_numpy()
        for k, c in enumerate("xyz"):
            axes[0, 0].plot(t, pos[:, k], label=c)
            axes[0, 1].plot(t, df[f"qd:{body}.w{c}"], label=f"ω{c}")
            axes[1, 1].plot(t, df[f"qd:{body}.v{c}"], label=f"v{c}")
        axes[0, 0].set_title(f"{body}: position (m)")
        axes[0, 1].set_title(f"{body}: angular velocity, body frame (rad/s)")
        axes[1, 1].set_title(f"{body}: velocity, body frame (m/s)")
        axes[1, 0].plot(pos[:, 0], pos[:, 1])
        axes[1, 0].plot(pos[:1, 0], pos[:1, 1], "o", label="start")
        axes[1, 0].set_title(f"{body}: path seen from above (x, y)")
        axes[1, 0].axis("equal")
        for ax in axes.flat:
            ax.legend(fontsize=7)
        fig.suptitle(title)
        files.append(_save(fig, outdir / f"{name}_{body}.png"))
    fig, axes = plt.subplots(2 if "closure" in df else 1, 1, figsize=(9, 6 if "closure" in df else 3.5), squeeze=False)
    E = df["energy"].to_numpy()
    axes[0, 0].plot(t, E - E[0], label="E(t) − E(0)")
    if "dissipated" in df:  # traces written before the column existed have only E
        axes[0, 0].plot(t, E + df["dissipated"].to_numpy() - E[0], label="E(t) + dissipated − E(0)")
        axes[0, 0].legend(fontsize=7)
    axes[0, 0].set_ylabel("energy change (J)")
    axes[0, 0].set_title(f"{title}: total mechanical energy change")
    if "closure" in df:
        axes[1, 0].semilogy(t, np.maximum(df["closure"].to_numpy(), 1e-18))
        axes[1, 0].set_ylabel("max |φ| (m or rad)")
        axes[1, 0].set_title("loop closure error")
    axes[-1, 0].set_xlabel("t (s)")
    files.append(_save(fig, outdir / f"{name}_energy.png"))
    return files
