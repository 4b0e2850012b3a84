"""A rig run as PNG files (docs/rig.md): its time histories, the power spectrum of the chassis's acceleration, and
for a sweep the measured transmissibility beside the linear H(jω) with the modes marked; and a Bode picture of
the linear frequency response alone (`mechdyn modes --frf`)."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy.signal import welch  # noqa: E402

from .plot import _save  # noqa: E402
from .rig import RigRun  # noqa: E402


def _columns(rr: RigRun, prefix: str) -> list[str]:
    return [c for c in rr.records.columns if c.startswith(prefix)]


def plot_histories(rr: RigRun, out: Path) -> Path:
    """Four panels against time: the chassis's heave, pitch and roll accelerations; each wheel's travel; every
    spring and shock force; every post's force (and the other drivers' reactions)."""
    r, t = rr.records, rr.records["t"]
    fig, ax = plt.subplots(4, 1, figsize=(9, 10), sharex=True)
    ax[0].plot(t, r["heave_acc"], label="heave (m/s²)")
    ax[0].plot(t, r["pitch_acc"], label="pitch (rad/s²)")
    ax[0].plot(t, r["roll_acc"], label="roll (rad/s²)")
    ax[0].set_ylabel("chassis acceleration")
    for c in _columns(rr, "travel_"):
        ax[1].plot(t, 1e3 * r[c], label=c[len("travel_"):])
    ax[1].set_ylabel("wheel travel (mm)")
    for c in _columns(rr, "force_"):
        ax[2].plot(t, 1e-3 * r[c], label=c[len("force_"):])
    ax[2].set_ylabel("element force (kN, compression +)")
    for c in [*_columns(rr, "post_"), *_columns(rr, "driver_")]:
        ax[3].plot(t, 1e-3 * r[c], label=c.split("_", 1)[1])
    ax[3].set_ylabel("driver reaction (kN or kN m)")
    ax[3].set_xlabel("t (s)")
    for a in ax:
        a.grid(True, alpha=0.3)
        a.legend(fontsize=7, ncol=4, loc="upper right")
    fig.suptitle(f"{rr.trajectory.scheme} rig run: time histories")
    return _save(fig, out)


def plot_spectrum(rr: RigRun, out: Path) -> Path:
    """Welch's power spectral density of the chassis's heave, pitch and roll accelerations."""
    r = rr.records
    t = r["t"].to_numpy()
    fs = 1.0 / float(np.median(np.diff(t)))
    nper = min(len(t), int(4 * fs))  # 4 s segments: 0.25 Hz bins
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for c, unit in (("heave_acc", "(m/s²)²/Hz"), ("pitch_acc", "(rad/s²)²/Hz"), ("roll_acc", "(rad/s²)²/Hz")):
        f, p = welch(r[c].to_numpy(), fs, nperseg=nper)
        if np.any(p[1:] > 0):
            ax.loglog(f[1:], p[1:], label=f"{c.split('_')[0]} {unit}")
    ax.set_xlabel("frequency (Hz)")
    ax.set_ylabel("PSD of chassis acceleration")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, out)


def plot_transmissibility(freq: np.ndarray, measured: np.ndarray, linear: np.ndarray, columns: list[str],
                          modes: np.ndarray, out: Path) -> Path:
    """|H| of each column against frequency: the sweep's measurement (dots) and the linear H(jω) (line), the
    modes' frequencies marked."""
    fig, ax = plt.subplots(len(columns), 1, figsize=(8, 3 * len(columns)), sharex=True, squeeze=False)
    for k, c in enumerate(columns):
        a = ax[k, 0]
        a.loglog(freq, np.abs(linear[:, k]), "-", label="linear H(jω)")
        a.loglog(freq, np.abs(measured[:, k]), "o", ms=3, label="sweep (simulated)")
        for f in modes:
            a.axvline(f, color="grey", ls=":", lw=1)
        a.set_ylabel(f"|{c}| per m of post")
        a.grid(True, which="both", alpha=0.3)
        a.legend(fontsize=8)
    ax[-1, 0].set_xlabel("frequency (Hz); dotted: the modes")
    return _save(fig, out)


def plot_bode(freq: np.ndarray, H: np.ndarray, columns: list[str], modes: np.ndarray, out: Path) -> Path:
    """Magnitude and phase of each column's response per unit input, the modes' frequencies marked."""
    fig, ax = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    for k, c in enumerate(columns):
        ax[0].loglog(freq, np.abs(H[:, k]), label=c)
        ax[1].semilogx(freq, np.degrees(np.unwrap(np.angle(H[:, k]))), label=c)
    for a in ax:
        for f in modes:
            a.axvline(f, color="grey", ls=":", lw=1)
        a.grid(True, which="both", alpha=0.3)
    ax[0].set_ylabel("|H| per unit input")
    ax[1].set_ylabel("phase (deg)")
    ax[1].set_xlabel("frequency (Hz); dotted: the modes")
    ax[0].legend(fontsize=7, ncol=2)
    return _save(fig, out)
