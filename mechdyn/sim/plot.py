"""A trace as PNG files. A tree run's: joint coordinates, floating-body motion, energy, closure. A contact run's:
its time histories (hull, ground load, penetrations, energy) and a side view of the vehicle at chosen times."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.patches import Circle  # noqa: E402

from .contact import STORED  # noqa: E402
from .trace import Trace, TraceBand, meta_floats, trace_bands  # noqa: E402

ROLLERS = {"drive": ("tab:red", "drive pulley"), "end": ("tab:blue", "end pulley"),
           "face": ("tab:green", "road wheel (on the faces)")}  # colour, legend


class PlotRequestError(ValueError):
    """What was asked of the plot does not fit the trace (a band it lacks, a time outside it): not a bad trace."""


def _save(fig, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
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


def _require(tr: Trace, columns: list[str]) -> None:
    """ValueError naming the first of columns the trace lacks (and how many more)."""
    missing = [c for c in columns if c not in tr.data.columns]
    if missing:
        raise ValueError(f"the trace has no column {missing[0]!r}" + (f" (and {len(missing) - 1} more)"
                                                                     if len(missing) > 1 else ""))


def plot_trace(tr: Trace, outdir: Path, at: list[float] | None = None, band: str | None = None) -> list[Path]:
    """Draw the trace into outdir; returns the files written. A contact trace (tr.kind) goes to
    plot_contact_trace with `at` and `band`; a tree trace takes neither. ValueError, before anything is drawn,
    if a column it needs is missing."""
    if tr.kind == "contact":
        return plot_contact_trace(tr, outdir, at, band)
    if at is not None or band is not None:
        raise PlotRequestError("--at and --band draw a contact run's side view; this trace is of a run without "
                               "contact (no '# kind: contact' line)")
    _require(tr, needed_columns(tr))
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


def _band(tr: Trace, name: str | None) -> TraceBand:
    bands = trace_bands(tr)
    if not bands:
        raise ValueError("the contact trace's preamble names no band ('# bands: NAME ...'): no side view to draw")
    if name is None:
        return bands[0]
    for b in bands:
        if b.name == name:
            return b
    raise PlotRequestError(f"the trace has no band {name!r}; expected one of {', '.join(b.name for b in bands)}")


def contact_columns(tr: Trace, band: TraceBand) -> list[str]:
    """The columns plot_contact_trace reads: the histories', and the world positions of the band's shoes and
    rollers."""
    if "hull" not in tr.meta:
        raise ValueError("the contact trace's preamble has no 'hull' line (the vehicle's root body)")
    return ["t", f"z:{tr.meta['hull']}", "pitch", "fz", "pin_depth", "pins", "face_depth", "faces",
            "ground_depth", "corners", "crush", "kinetic", "potential", *STORED,
            "energy", "work", *(f"{c}:{n}" for n in (*band.shoes, *(r.name for r in band.rollers)) for c in "xyz")]


def rows_at(t: np.ndarray, at: list[float] | None) -> list[int]:
    """The recorded row nearest each time of `at` (default: the first and the last row); PlotRequestError for a
    time outside the trace by more than a row's spacing (a run's end falls between recorded rows)."""
    if not at:
        return [0, len(t) - 1]
    row = (t[-1] - t[0]) / max(1, len(t) - 1)
    out = []
    for x in at:
        if not (t[0] - row <= x <= t[-1] + row):
            raise PlotRequestError(f"--at {x:g} is outside the trace's times {t[0]:g} .. {t[-1]:g} s")
        out.append(int(np.argmin(np.abs(t - x))))
    return out


def _terrain_line(tr: Trace, band: TraceBand, x: np.ndarray, y: float) -> np.ndarray | None:
    """Terrain heights at x along the band's plane y: the plane's trace, or the sampled profile."""
    kind = tr.meta.get("terrain", "none")
    if kind == "plane":
        nx, ny, nz, d = meta_floats(tr.meta, "terrain.params", 4)
        return (d - nx * x - ny * y) / nz
    if band.profile is not None:
        return np.interp(x, *band.profile)
    return None


def _pads(b: TraceBand, loop: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each shoe's pad as a segment (x, z with NaN breaks): lx long, centred mid-chord, pad z along the shoe's own z
    (its chord to the next pin, the shoe's x, crossed with the pin axis)."""
    chord = np.diff(loop, axis=0)
    length = np.linalg.norm(chord, axis=1, keepdims=True)
    ux = chord / np.where(length > 0, length, 1.0)
    # shoe z = x × y, x = (a, 0, c) the chord's direction, y the pin axis: its x-z part is y_y·(−c, a)
    normal = b.pin_axis[1] * np.column_stack([-ux[:, 1], ux[:, 0]])
    z, lx, _ = b.pad
    centre = loop[:-1] + 0.5 * b.link_len * ux + z * normal
    ends = np.stack([centre - 0.5 * lx * ux, centre + 0.5 * lx * ux, np.full_like(centre, np.nan)], axis=1)
    return ends[:, :, 0].ravel(), ends[:, :, 1].ravel()


def side_view(tr: Trace, outdir: Path, at: list[float] | None = None, band: str | None = None) -> Path:
    """The vehicle seen along y at the rows nearest `at` (default: the first and the last), one panel each, in the
    x-z plane of `band` (default the first): each shoe a segment from its pin to the next shoe's, round the
    loop; each roller a circle of its radius at its centre; the terrain under the band. Equal aspect, the same
    limits in every panel."""
    b = _band(tr, band)
    _require(tr, contact_columns(tr, b))
    df, t = tr.data, tr.data["t"].to_numpy()
    rows = rows_at(t, at)
    names = [*b.shoes, *(r.name for r in b.rollers)]
    xs, zs = df[[f"x:{n}" for n in names]].to_numpy()[rows], df[[f"z:{n}" for n in names]].to_numpy()[rows]
    radii = np.array([0.0] * len(b.shoes) + [r.radius for r in b.rollers])
    pad = 0.04 * (float((xs + radii).max() - (xs - radii).min()))
    x0, x1 = float((xs - radii).min()) - pad, float((xs + radii).max()) + pad
    z0, z1 = float((zs - radii).min()) - pad, float((zs + radii).max()) + pad
    grid = np.linspace(x0, x1, 200)
    ground = [_terrain_line(tr, b, grid, float(df[[f"y:{s}" for s in b.shoes]].to_numpy()[i].mean())) for i in rows]
    if ground[0] is not None:  # the terrain in view, and a strip of it below its lowest point
        z0 = min(z0, min(float(g.min()) for g in ground) - pad)
        z1 = max(z1, max(float(g.max()) for g in ground) + pad)
    width = 10.0
    height = width * (z1 - z0) / (x1 - x0)
    fig, axes = plt.subplots(len(rows), 1, figsize=(width, len(rows) * (height + 0.5) + 0.5), squeeze=False)
    for ax, i, g in zip(axes[:, 0], rows, ground):
        pins = np.array([[df[f"x:{s}"].iloc[i], df[f"z:{s}"].iloc[i]] for s in b.shoes])
        loop = np.vstack([pins, pins[:1]])  # the last shoe's segment ends at the first shoe's pin
        if g is not None:
            ax.fill_between(grid, g, z0, color="tan", alpha=0.5, lw=0)
            ax.plot(grid, g, color="saddlebrown", lw=1.0, label="terrain")
        ax.plot(loop[:, 0], loop[:, 1], "-", color="0.25", lw=1.0, marker="o", ms=1.5, label="shoes, pin to pin")
        if all(np.isfinite(b.pad)):
            ax.plot(*_pads(b, loop), color="0.1", lw=2.0, solid_capstyle="butt", label="pads' ground faces")
        for r in b.rollers:
            ax.add_patch(Circle((df[f"x:{r.name}"].iloc[i], df[f"z:{r.name}"].iloc[i]), r.radius, fill=False,
                                color=ROLLERS[r.kind][0], lw=1.2, label=ROLLERS[r.kind][1]))
        ax.set_xlim(x0, x1)
        ax.set_ylim(z0, z1)
        ax.set_aspect("equal")
        ax.set_ylabel("z (m)")
        ax.set_title(f"t = {t[i]:.3f} s", fontsize=9, loc="left")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    axes[0, 0].legend(unique.values(), unique.keys(), fontsize=7, ncol=len(unique), loc="upper center")
    axes[-1, 0].set_xlabel("x (m)")
    fig.suptitle(f"{tr.meta['model']}: band {b.name} seen from the side (world x-z)", fontsize=10)
    return _save(fig, outdir / f"{tr.meta['model']}_side_{b.name}.png")


def history(tr: Trace, outdir: Path) -> Path:
    """A contact run's time histories: hull height and pitch; the vertical ground force against the weight; the
    band's and the ground's penetrations with their loaded counts; the energy terms."""
    df, t = tr.data, tr.data["t"].to_numpy()
    hull, (weight,) = tr.meta["hull"], meta_floats(tr.meta, "weight", 1)
    fig, axes = plt.subplots(4, 1, figsize=(9, 10), sharex=True)
    a = axes[0]
    a.plot(t, df[f"z:{hull}"], color="tab:blue")
    a.set_ylabel(f"{hull} z (m)", color="tab:blue")
    tw = a.twinx()
    tw.plot(t, df["pitch"], color="tab:orange")
    tw.set_ylabel("pitch (deg)", color="tab:orange")
    a.set_title("hull height and pitch", fontsize=9)
    a = axes[1]
    a.plot(t, df["fz"], label="ground force, vertical (fz)")
    a.axhline(weight, color="k", ls="--", lw=0.8, label=f"weight {weight:.6g} N")
    a.set_ylabel("N")
    a.legend(fontsize=7)
    a.set_title(f"ground load: last row {df['fz'].iloc[-1] / weight:.4f} of the weight", fontsize=9)
    a = axes[2]
    tw = a.twinx()
    for depth, count, colour, what in (("pin_depth", "pins", "tab:red", "pins on rollers"),
                                       ("face_depth", "faces", "tab:green", "faces under wheels"),
                                       ("ground_depth", "corners", "saddlebrown", "pad corners in the ground")):
        a.plot(t, 1e3 * df[depth].to_numpy(), color=colour, label=f"{what}: worst depth")
        tw.plot(t, df[count], color=colour, lw=0.6, ls=":", label=f"{count} loaded")
    a.set_ylabel("worst penetration (mm)")
    tw.set_ylabel("loaded (count, dotted)")
    a.legend(fontsize=7, loc="upper right")
    crush = df["crush"].to_numpy()
    a.set_title(f"penetrations and their loaded counts; the band at worst {crush.max():.3g} of its crush depth "
                f"(t = {t[int(np.argmax(crush))]:.3g} s; 1: crushed onto its pins)", fontsize=9)
    a = axes[3]
    E, V = df["energy"].to_numpy(), df["potential"].to_numpy()
    contact = sum(df[c].to_numpy() for c in STORED)
    a.plot(t, E - E[0], label="E − E(0): kinetic + potential + contact springs")
    a.plot(t, df["kinetic"], label="kinetic")
    a.plot(t, V - V[0], label="gravity + model springs − at t0")
    a.plot(t, contact, label="contact springs, anchors, brakes")
    a.plot(t, E + df["work"].to_numpy() - E[0], label="E + work of model dampers and brakes − E(0)")
    a.set_ylabel("J")
    a.set_xlabel("t (s)")
    a.legend(fontsize=7)
    a.set_title("energy (the contact dampers' loss is not counted in work)", fontsize=9)
    fig.suptitle(f"{tr.meta['model']} ({tr.meta.get('scheme', '?')}, dt {float(tr.meta.get('dt', 'nan')):.4g} s, "
                 f"{tr.meta.get('samples', '?')} samples per contact period)", fontsize=10)
    return _save(fig, outdir / f"{tr.meta['model']}_history.png")


def plot_contact_trace(tr: Trace, outdir: Path, at: list[float] | None = None, band: str | None = None) -> list[Path]:
    """A contact trace's time histories and its side view (side_view's `at`, `band`); ValueError, before
    anything is drawn, if a column they read is missing."""
    b = _band(tr, band)
    _require(tr, contact_columns(tr, b))
    rows_at(tr.data["t"].to_numpy(), at)
    meta_floats(tr.meta, "weight", 1)
    if tr.meta.get("terrain") == "plane":
        meta_floats(tr.meta, "terrain.params", 4)
    return [history(tr, outdir), side_view(tr, outdir, at, b.name)]
