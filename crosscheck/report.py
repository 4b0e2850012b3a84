"""`crosscheck report`: the gate history as one self-contained HTML page.

The history is the SQLite file the regression suite appends to
(regression/history.py writes it; this module only reads it): a `runs` table
(run_id, started, commit_id, machine, argv) and a `gates` table (run_id, model,
gate, metric, threshold, passed, nodeid). The page has the latest run's gates,
failures first, and one trend plot per (model, gate): the metric over the runs,
the threshold, failures as red crosses. Plots are embedded as base64 PNG data
URIs, so the page needs no network and no other file.
"""
from __future__ import annotations

import base64
import html
import io
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mechdyn.cliutil import InputError

if TYPE_CHECKING:
    import pandas as pd

HISTORY_ENV = "MECHDYN_HISTORY"
DECADES_FOR_LOG = 2  # a positive metric spanning this many decades gets a log axis


def history_path(explicit: str | os.PathLike | None = None) -> Path:
    """The gate history file: explicit, else $MECHDYN_HISTORY, else $XDG_DATA_HOME/mechdyn/history.sqlite
    (XDG_DATA_HOME defaults to ~/.local/share)."""
    if explicit:
        return Path(explicit).expanduser()
    if os.environ.get(HISTORY_ENV):
        return Path(os.environ[HISTORY_ENV]).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"
    return base / "mechdyn" / "history.sqlite"


@dataclass(frozen=True)
class History:
    path: Path
    runs: pd.DataFrame  # one row per run (that recorded gates), oldest first; `index` is the position
    gates: pd.DataFrame  # one row per gate per run, with its run's `index`

    @property
    def latest(self) -> pd.Series:
        return self.runs.iloc[-1]


def load_history(path: Path) -> History:
    """Read the history at path; InputError (one line) if it is missing, empty or not a history."""
    import pandas as pd

    path = Path(path)
    hint = "run the regression suite (pytest -n auto regression/) to record one, or name it with --history"
    if not path.is_file():
        raise InputError(f"{path}: no gate history here; {hint}")
    try:
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, timeout=30)
    except sqlite3.Error as e:
        raise InputError(f"{path}: cannot open the gate history: {e}") from None
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not {"runs", "gates"} <= tables:
            if tables:
                raise InputError(f"{path}: not a gate history (no runs and gates tables)")
            raise InputError(f"{path}: the gate history is empty; {hint}")
        runs = pd.read_sql_query("SELECT run_id, started, commit_id, machine, argv FROM runs "
                                 "ORDER BY started, rowid", conn)
        gates = pd.read_sql_query("SELECT run_id, model, gate, metric, threshold, passed, nodeid FROM gates "
                                  "ORDER BY rowid", conn)
    except (sqlite3.Error, pd.errors.DatabaseError) as e:  # pandas wraps the sqlite3 error in its own class
        raise InputError(f"{path}: not a gate history, or a damaged one: {e.__cause__ or e}") from None
    finally:
        conn.close()
    text = ["run_id", "started", "commit_id", "machine", "argv"]
    runs[text] = runs[text].fillna("").astype(str)  # SQLite lets any column hold any type
    gates[["run_id", "model", "gate", "nodeid"]] = gates[["run_id", "model", "gate", "nodeid"]].fillna("").astype(str)
    metric, threshold, passed = (pd.to_numeric(gates[c], errors="coerce") for c in ("metric", "threshold", "passed"))
    for column, bad, expected in (("metric", metric.isna() & gates.metric.notna(), "a number or NULL"),
                                  ("threshold", threshold.isna(), "a number"),
                                  ("passed", ~passed.isin([0, 1]), "0 or 1")):
        if bad.any():
            row = gates[bad].iloc[0]
            raise InputError(f"{path}: not a gate history: gates.{column} holds {row[column]!r} where {expected} "
                             f"belongs (run {row.run_id}, model {row.model}, gate {row.gate})")
    gates["metric"], gates["threshold"], gates["passed"] = metric, threshold, passed
    runs = runs[runs.run_id.isin(gates.run_id)].reset_index(drop=True)
    if runs.empty:
        raise InputError(f"{path}: the gate history is empty; {hint}")
    runs["index"] = range(len(runs))
    gates = gates.merge(runs[["run_id", "index"]], on="run_id")
    gates["metric"] = gates["metric"].astype(float)  # NULL (a NaN metric) reads back as None
    gates["threshold"] = gates["threshold"].astype(float)
    gates["passed"] = gates["passed"].astype(bool)
    return History(path, runs, gates)


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def short_commit(commit_id: str) -> str:
    """abc1234, abc1234+ for a dirty tree, or ? when unknown."""
    if not commit_id or commit_id == "unknown":
        return "?"
    return commit_id[:7] + ("+" if commit_id.endswith("+dirty") else "")


def summary(hist: History) -> pd.DataFrame:
    """The latest run's gates, failures first, then by model and gate."""
    g = hist.gates[hist.gates.run_id == hist.latest.run_id]
    g = g.sort_values(["passed", "model", "gate"], kind="stable")
    return g[["model", "gate", "metric", "threshold", "passed"]].reset_index(drop=True)


def _fmt(x: float, spec: str) -> str:
    return "nan" if x != x else format(x, spec)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)


def anchor(model: str, gate: str) -> str:
    """The id of a (model, gate)'s plot, which the summary table links to."""
    return f"plot-{_slug(model)}-{_slug(gate)}"


def _table_html(df: pd.DataFrame) -> str:
    """The summary as an HTML table (pandas), each model linked to its gate's plot, verdict cells marked."""
    esc = html.escape
    shown = df.assign(
        model=[f'<a href="#{anchor(m, g)}">{esc(m)}</a>' for m, g in zip(df.model, df.gate)],
        gate=[esc(g) for g in df.gate],
        metric=[_fmt(v, ".3e") for v in df.metric],
        threshold=[_fmt(v, ".3g") for v in df.threshold],
        verdict=["PASS" if p else "FAIL" for p in df.passed],
    ).drop(columns="passed")
    table = shown.to_html(index=False, escape=False, border=0, classes="summary")
    return table.replace("<td>FAIL</td>", '<td class="fail">FAIL</td>').replace(
        "<td>PASS</td>", '<td class="pass">PASS</td>')


def trend_png(hist: History, model: str, gate: str) -> bytes:
    """One (model, gate)'s metric over the runs as a PNG: threshold dashed, failures as red crosses."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
    from PIL import Image

    g = hist.gates[(hist.gates.model == model) & (hist.gates.gate == gate)].sort_values("index")
    x = g["index"].to_numpy()
    y = g["metric"].to_numpy(dtype=float)
    thr = g["threshold"].to_numpy(dtype=float)
    ok = g["passed"].to_numpy(dtype=bool)
    finite = np.isfinite(y)

    fig = Figure(figsize=(4.0, 2.5), dpi=100)
    ax = fig.add_subplot()
    ax.plot(x[finite], y[finite], "-", color="tab:blue", lw=1, zorder=2)
    ax.plot(x[ok & finite], y[ok & finite], "o", color="tab:blue", ms=3.5, label="metric", zorder=3)
    if len(set(thr)) == 1:
        ax.axhline(thr[0], color="0.35", ls="--", lw=1, label=f"threshold {thr[0]:.3g}", zorder=1)
    else:  # the gate moved: show each run's threshold
        ax.step(x, thr, where="mid", color="0.35", ls="--", lw=1, label="threshold", zorder=1)
    values = np.concatenate([y[finite], thr])
    positive = values[values > 0]
    if positive.size == values.size and positive.size and np.log10(positive.max() / positive.min()) >= DECADES_FOR_LOG:
        ax.set_yscale("log")  # decades only, labelled as plain text: mathtext and minor ticks triple the time
        ax.yaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.0e}"))
    if (~ok).any():
        ax.plot(x[~ok & finite], y[~ok & finite], "x", color="red", ms=8, mew=2, label="FAIL", zorder=4, clip_on=False)
        if (~ok & ~finite).any():  # an infinite or NaN metric: a cross at the top edge
            ax.plot(x[~ok & ~finite], np.full((~ok & ~finite).sum(), 1.0), "x", color="red", ms=8, mew=2,
                    transform=ax.get_xaxis_transform(), clip_on=False, zorder=4)
    nruns = len(hist.runs)
    ax.set_xlim(-0.5, nruns - 0.5)
    step = max(1, int(np.ceil(nruns / 8)))
    ticks = list(range(nruns - 1, -1, -step))[::-1]  # always label the latest run
    labels = [short_commit(c) for c in hist.runs.commit_id]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: labels[int(round(v))] if 0 <= round(v) < nruns else ""))
    ax.tick_params(axis="x", labelrotation=35, labelsize=7)
    for label in ax.get_xticklabels():
        label.set(ha="right", rotation_mode="anchor")
    ax.tick_params(axis="y", labelsize=7)
    ax.set_xlabel("run (commit)", fontsize=7)
    ax.set_title(f"{model}: {gate}", fontsize=9)
    ax.grid(True, alpha=0.3, lw=0.5)
    ax.legend(fontsize=6, loc="best", framealpha=0.8)
    fig.subplots_adjust(left=0.15, right=0.97, top=0.9, bottom=0.27)  # fixed: tight_layout would triple the time
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    # a 64-colour palette: a third of the bytes of matplotlib's RGBA PNG, no visible change
    img = Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba()).convert("RGB")
    buf = io.BytesIO()
    img.quantize(colors=64, method=Image.Quantize.FASTOCTREE).save(buf, format="PNG")
    return buf.getvalue()


CSS = """
body { font-family: system-ui, sans-serif; margin: 1em; color: #222; }
h1 { margin-bottom: 0.2em; }
.meta { color: #444; margin: 0.2em 0; }
.meta code { background: #f3f3f3; padding: 0 0.25em; }
.verdict { font-weight: bold; font-size: 1.1em; }
.verdict.fail, td.fail { color: #b00; }
.verdict.pass, td.pass { color: #070; }
table.summary { border-collapse: collapse; font-size: 0.9em; }
table.summary th, table.summary td { padding: 0.15em 0.8em; border-bottom: 1px solid #ddd; text-align: left; }
table.summary td:nth-child(3), table.summary td:nth-child(4) { font-family: monospace; text-align: right; }
.grid { display: flex; flex-wrap: wrap; gap: 0.5em; }
figure { margin: 0; border: 1px solid #ddd; }
figure.fail { border: 2px solid #b00; }
figcaption { font-size: 0.75em; color: #555; padding: 0 0.4em 0.3em; }
"""


def render(hist: History) -> str:
    """The whole page."""
    esc = html.escape
    run, first = hist.latest, hist.runs.iloc[0]
    table = summary(hist)
    nfail = int((~table.passed).sum())
    latest_fail = set(zip(table.model[~table.passed], table.gate[~table.passed]))
    verdict = (f'<p class="verdict fail">{nfail} of {plural(len(table), "gate")} FAILED in the latest run</p>'
               if nfail else f'<p class="verdict pass">all {plural(len(table), "gate")} passed in the latest run</p>')
    pairs = hist.gates[["model", "gate"]].drop_duplicates().sort_values(["model", "gate"])
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>mechdyn gate report: {esc(short_commit(run.commit_id))} {esc(run.started)}</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>mechdyn gate report</h1>",
        f'<p class="meta">Latest run <code>{esc(run.run_id[:12])}</code> started {esc(run.started)} '
        f"at commit <code>{esc(run.commit_id)}</code> on {esc(run.machine)}</p>",
        f'<p class="meta">Command: <code>pytest {esc(run.argv)}</code></p>',
        verdict,
        f'<p class="meta">History: {plural(len(hist.runs), "run")} from {esc(first.started)} to '
        f"{esc(run.started)} in <code>{esc(str(hist.path))}</code></p>",
        '<p class="meta">Trends by model: ' + " ".join(
            f'<a href="#model-{_slug(m)}">{esc(m)}</a>' for m in pairs.model.unique()) + "</p>",
        "<h2>Latest run</h2>",
        _table_html(table),
        "<h2>Trends</h2>",
        '<p class="meta">Each plot is one gate on one model over every recorded run (x: runs, oldest first, '
        "labelled by short commit, + for a tree with uncommitted changes); dashed: the threshold; red crosses: "
        "failed runs. A positive metric spanning two decades or more is drawn on a log axis.</p>",
    ]
    for model, group in pairs.groupby("model", sort=True):
        parts.append(f'<section id="model-{_slug(model)}"><h3>{esc(model)}</h3><div class="grid">')
        for gate in group.gate:
            g = hist.gates[(hist.gates.model == model) & (hist.gates.gate == gate)]
            png = base64.b64encode(trend_png(hist, model, gate)).decode("ascii")
            alt = f"{model} {gate}: metric over {plural(len(g), 'run')}, {int((~g.passed).sum())} failed"
            cls = ' class="fail"' if (model, gate) in latest_fail else ""
            parts.append(
                f'<figure id="{anchor(model, gate)}"{cls}><img alt="{esc(alt)}" width="400" height="250" '
                f'src="data:image/png;base64,{png}"><figcaption>{esc(alt)}</figcaption></figure>')
        parts.append("</div></section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
