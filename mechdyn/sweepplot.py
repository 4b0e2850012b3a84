"""A sweep's pictures (mechdyn sweep --plot): its figures against the parameters.

One swept parameter: each figure against it. Two: a carpet plot, the two leading figures against each other
with a line for each value of either parameter, and each figure against the first parameter, a line per value of
the second. A Monte Carlo sample: each figure's histogram, and each figure against each parameter as a scatter.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

_NOT_FIGURES = ("point", "seed", "status", "error", "seconds")


def figures_of(table, names: tuple[str, ...]) -> list[str]:
    """The table's figure columns: all but the parameters and the bookkeeping, those with a finite value."""
    ok = table[table["status"] == "ok"]
    return [c for c in ok.columns if c not in (*names, *_NOT_FIGURES) and np.isfinite(ok[c].astype(float)).any()]


def plot(table, names: tuple[str, ...], prefix: Path, sampled: bool = False) -> list[Path]:
    """The pictures of the table's points that ran (a grid's, or with `sampled` a Monte Carlo sample's), as
    PREFIX-*.png; the paths written."""
    import matplotlib

    matplotlib.use("Agg")
    ok = table[table["status"] == "ok"]
    figs = figures_of(table, names)
    if ok.empty or not figs:
        return []
    written = []
    if sampled:
        written.append(_histograms(ok, figs, prefix.with_name(prefix.name + "-histograms.png")))
        written.append(_scatter(ok, names, figs, prefix.with_name(prefix.name + "-scatter.png")))
    elif len(names) == 2:
        written.append(_carpet(ok, names, figs[:2], prefix.with_name(prefix.name + "-carpet.png")))
        written.append(_lines(ok, names, figs, prefix.with_name(prefix.name + "-figures.png")))
    else:
        written.append(_lines(ok, names, figs, prefix.with_name(prefix.name + "-figures.png")))
    return written


def _grid_of(n: int) -> tuple[int, int]:
    cols = min(3, n)
    return (n + cols - 1) // cols, cols


def _save(fig, out: Path) -> Path:
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return out


def _lines(ok, names: tuple[str, ...], figs: list[str], out: Path) -> Path:
    """Each figure against the first parameter; with a second, a line per value of it (others averaged over)."""
    import matplotlib.pyplot as plt

    rows, cols = _grid_of(len(figs))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    x = names[0]
    groups = [(None, ok)] if len(names) == 1 else list(ok.groupby(names[1]))
    for ax, f in zip(axes.flat, figs):
        for key, g in groups:
            mean = g.groupby(x)[f].mean()
            ax.plot(mean.index, mean.values, "o-", ms=3, label=None if key is None else f"{names[1]} = {key:.4g}")
        ax.set_xlabel(x)
        ax.set_ylabel(f)
        ax.grid(alpha=0.3)
    if len(names) > 1:
        axes.flat[0].legend(fontsize=7)
    for ax in list(axes.flat)[len(figs):]:
        ax.set_visible(False)
    fig.suptitle(f"{len(ok)} points" + (" (other parameters averaged over)" if len(names) > 2 else ""))
    return _save(fig, out)


def _carpet(ok, names: tuple[str, ...], figs: list[str], out: Path) -> Path:
    """The carpet plot: figure 2 against figure 1, a line for each value of each of the two parameters."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 5))
    if len(figs) < 2:
        figs = [figs[0], figs[0]]
    fx, fy = figs
    mean = ok.groupby(list(names))[[fx, fy]].mean().reset_index()
    for k, (n, other, style) in enumerate(((names[0], names[1], "-"), (names[1], names[0], "--"))):
        for v, g in mean.groupby(n):
            g = g.sort_values(other)
            ax.plot(g[fx], g[fy], style, color=f"C{k}", lw=1.2)
            ax.annotate(f"{n} = {v:.4g}", (g[fx].iloc[-1], g[fy].iloc[-1]), fontsize=7, color=f"C{k}")
    ax.set_xlabel(fx)
    ax.set_ylabel(fy)
    ax.set_title(f"carpet: solid lines {names[0]} constant, dashed {names[1]} constant")
    ax.grid(alpha=0.3)
    return _save(fig, out)


def _histograms(ok, figs: list[str], out: Path) -> Path:
    import matplotlib.pyplot as plt

    rows, cols = _grid_of(len(figs))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, f in zip(axes.flat, figs):
        v = ok[f].astype(float)
        ax.hist(v[np.isfinite(v)], bins=max(5, int(np.sqrt(len(v)))))
        ax.set_xlabel(f)
        ax.set_ylabel("points")
    for ax in list(axes.flat)[len(figs):]:
        ax.set_visible(False)
    fig.suptitle(f"{len(ok)} sampled points")
    return _save(fig, out)


def _scatter(ok, names: tuple[str, ...], figs: list[str], out: Path) -> Path:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(figs), len(names), figsize=(3.6 * len(names), 2.8 * len(figs)), squeeze=False)
    for i, f in enumerate(figs):
        for j, n in enumerate(names):
            ax = axes[i, j]
            ax.plot(ok[n], ok[f], ".", ms=3)
            ax.set_xlabel(n if i == len(figs) - 1 else "")
            ax.set_ylabel(f if j == 0 else "")
            ax.grid(alpha=0.3)
    return _save(fig, out)
