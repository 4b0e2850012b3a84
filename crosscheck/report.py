"""`crosscheck report`: the gate history as one self-contained HTML page, read at a glance.

The history is the SQLite file the regression suite appends to (regression/history.py writes it; this module only
reads it, schema 1 or 2): `runs` (run_id, started, commit_id, machine, argv), `gates` (run_id, model, gate, metric,
threshold, passed, nodeid, unit) and `skips` (run_id, nodeid, model, gate, reason).

The page has three parts. A grid, models by gates, each cell the latest run's margin (`margins`) on one colour scale,
failures red, rows and columns worst first. What changed against the previous run on the same machine (and against
--since COMMIT): the gates whose margin moved by more than a factor, or that started or stopped failing, appeared or
went missing. And, on a click, one gate's trend, drawn in the browser by a small SVG plotter (report.js) from the
series embedded once as compressed float32 planes. No network, no other file.
"""
from __future__ import annotations

import base64
import html
import json
import math
import os
import sqlite3
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from crosscheck.gates import GATES
from mechdyn.cliutil import InputError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

HISTORY_ENV = "MECHDYN_HISTORY"
FLOOR = -6.0  # margins clip here: a metric a millionth of its threshold, or exactly 0, is as safe as can be
# the default --factor: a decade. Reruns of one commit repeat every metric bit for bit (seeded states); across the
# generator's changes 7ba15cb..976f897 31 of 387 margins moved, half by less than x1.6 (round-off reordered), 7 by
# more than x10 (hmmwv gen_vs_dense x170): a decade lists changes in what is computed, not in how it was rounded
MISSING_LISTED = 20  # more gates gone than this fold into one line: the latest run was a partial one
DEFAULT_FACTOR = 10.0
# the colour scale: (margin, colour) stops from the floor (pale, calm) to the threshold (dark orange); a failure is
# red (report.css: td.fail) whatever its margin
STOPS = ((-6.0, "#e3f1dd"), (-4.0, "#c3e3b8"), (-2.5, "#fbe38e"), (-1.0, "#f8a13f"), (0.0, "#c8500a"))
ASSETS = Path(__file__).resolve().parent


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
    gates: pd.DataFrame  # one row per (model, gate) per run, with its run's `index`, its `unit` and `margin`
    skips: pd.DataFrame  # run_id, nodeid, model, gate, reason (empty for a schema-1 history)

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
        has_unit = any(r[1] == "unit" for r in conn.execute("PRAGMA table_info(gates)"))  # schema 1 has none
        runs = pd.read_sql_query("SELECT run_id, started, commit_id, machine, argv FROM runs "
                                 "ORDER BY started, rowid", conn)
        gates = pd.read_sql_query("SELECT run_id, model, gate, metric, threshold, passed, nodeid"
                                  + (", unit" if has_unit else ", NULL AS unit") + " FROM gates ORDER BY rowid", conn)
        skips = (pd.read_sql_query("SELECT run_id, nodeid, model, gate, reason FROM skips ORDER BY rowid", conn)
                 if "skips" in tables else pd.DataFrame(columns=["run_id", "nodeid", "model", "gate", "reason"]))
    except (sqlite3.Error, pd.errors.DatabaseError) as e:  # pandas wraps the sqlite3 error in its own class
        raise InputError(f"{path}: not a gate history, or a damaged one: {e.__cause__ or e}") from None
    finally:
        conn.close()
    text = ["run_id", "started", "commit_id", "machine", "argv"]
    runs[text] = runs[text].fillna("").astype(str)  # SQLite lets any column hold any type
    gates[["run_id", "model", "gate", "nodeid"]] = gates[["run_id", "model", "gate", "nodeid"]].fillna("").astype(str)
    skips = skips.astype(object).where(skips.notna(), None)
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
    # a schema-1 row has no unit: take today's definition's
    current = gates.gate.map(lambda g: GATES[g].unit if g in GATES else "")
    gates["unit"] = gates["unit"].where(gates["unit"].notna() & (gates["unit"] != ""), current).astype(str)
    gates["margin"] = margins(gates.gate.to_numpy(), gates.metric.to_numpy(), gates.threshold.to_numpy(),
                              gates.passed.to_numpy())
    # one row per (model, gate) per run: the worse, if a run recorded a pair twice
    gates = (gates.sort_values(["index", "passed", "margin"], ascending=[True, True, False], na_position="first",
                               kind="stable")
             .drop_duplicates(["index", "model", "gate"]).reset_index(drop=True))
    return History(path, runs, gates, skips)


def margins(gate: np.ndarray, metric: np.ndarray, threshold: np.ndarray, passed: np.ndarray) -> np.ndarray:
    """Each row's margin: log10(metric / threshold), clipped below at FLOOR; NaN where a failure has none.

    A metric at or below 0 (an exact count or golden match, a relative change downwards) and a pass of a threshold at
    or below 0 sit at FLOOR; a ratio gate's margin is log10 of its distance to the nearest window's centre over that
    window's half-width. A non-finite metric is at FLOOR if it passed (-inf), else NaN, as is a failure of a
    threshold at or below 0: no ratio measures how far it is over.
    """
    import numpy as np

    metric, threshold = np.asarray(metric, dtype=float), np.asarray(threshold, dtype=float)
    passed, gate = np.asarray(passed, dtype=bool), np.asarray(gate, dtype=object)
    with np.errstate(divide="ignore", invalid="ignore"):
        m = np.where(threshold > 0, np.where(metric > 0, np.log10(metric / threshold), FLOOR),
                     np.where(passed, FLOOR, np.nan))
        for name, definition in GATES.items():
            if definition.windows and (rows := gate == name).any():
                x = metric[rows, None]
                centre = np.array([(lo + hi) / 2 for lo, hi in definition.windows])
                half = np.array([(hi - lo) / 2 for lo, hi in definition.windows])
                m[rows] = np.log10(np.min(np.abs(x - centre) / half, axis=1))
    m = np.where(np.isfinite(metric), m, np.where(passed, FLOOR, np.nan))
    return np.maximum(m, FLOOR)  # maximum, not fmax: a NaN margin stays NaN


def plural(n: int, word: str) -> str:
    """'1 run', '2 runs'."""
    return f"{n} {word}" + ("" if n == 1 else "s")


def short_commit(commit_id: str) -> str:
    """abc1234, abc1234+ for a dirty tree, or ? when unknown."""
    if not commit_id or commit_id == "unknown":
        return "?"
    return commit_id[:7] + ("+" if commit_id.endswith("+dirty") else "")


def when(started: str) -> str:
    """A run's start as 'YYYY-MM-DD HH:MM' (UTC, as recorded)."""
    return started[:16].replace("T", " ")


def fmt(x: float) -> str:
    """A metric or threshold in three significant digits, trailing zeros dropped, as report.js's fmt writes it:
    1e-9, 2.5e-16, -1500, 0.042; 0, NaN and Infinity as such."""
    if not math.isfinite(x) or x == 0:
        return "NaN" if x != x else "0" if x == 0 else ("-" if x < 0 else "") + "Infinity"
    v = float(f"{x:.3g}")
    if abs(v) >= 1e5 or abs(v) < 1e-3:
        mantissa, exponent = f"{v:.2e}".split("e")
        return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
    return f"{v:.6g}"


def colour(margin: float) -> str:
    """The colour of a passing gate's margin on the one scale: STOPS, linear between them, clipped to the ends."""
    m = min(max(margin, STOPS[0][0]), STOPS[-1][0])
    for (m0, c0), (m1, c1) in zip(STOPS, STOPS[1:]):
        if m <= m1:
            t = (m - m0) / (m1 - m0)
            rgb = [round(int(c0[k:k + 2], 16) * (1 - t) + int(c1[k:k + 2], 16) * t) for k in (1, 3, 5)]
            return "#" + "".join(f"{v:02x}" for v in rgb)
    return STOPS[-1][1]


# -- the grid ---------------------------------------------------------------------
@dataclass(frozen=True)
class Grid:
    models: list[str]  # rows, worst first
    gates: list[str]  # columns, worst first
    cells: pd.DataFrame  # the latest run's rows, indexed by (model, gate)
    blanks: dict[tuple[str, str], str]  # a (model, gate) not in the latest run: why, for the hover


def pair_skips(hist: History) -> dict[tuple[str, str], str]:
    """The latest run's skip reasons by (model, gate): as gate.skip named them, else the gates the skipped test
    recorded in earlier runs (on the model its parameters name, when they name one)."""
    skips = hist.skips[hist.skips.run_id == hist.latest.run_id]
    recorded = hist.gates[hist.gates.nodeid.isin(skips.nodeid)].groupby("nodeid")
    out: dict[tuple[str, str], str] = {}
    for s in skips.itertuples():
        if s.gate is not None:
            out[(s.model, s.gate)] = s.reason
        elif s.nodeid in recorded.groups:
            for model, gate in recorded.get_group(s.nodeid)[["model", "gate"]].drop_duplicates().itertuples(False):
                if s.model is None or s.model == model:
                    out[(model, gate)] = s.reason
    return out


def grid(hist: History) -> Grid:
    """Models by gates: the latest run's cells, every pair ever recorded or skipped by name; rows and columns
    ordered worst first (a failure, then the largest margin), those without a cell in the latest run last."""
    import numpy as np

    latest = hist.gates[hist.gates["index"] == hist.latest["index"]]
    skipped = pair_skips(hist)
    pairs = set(zip(hist.gates.model, hist.gates.gate)) | set(skipped)
    score = dict(zip(zip(latest.model, latest.gate), np.where(latest.passed, latest.margin.fillna(np.inf), np.inf)))

    def order(names: set[str], axis: int) -> list[str]:
        worst = {n: max((v for k, v in score.items() if k[axis] == n), default=-np.inf) for n in names}
        return sorted(names, key=lambda n: (-worst[n], n))

    last = hist.gates.drop_duplicates(["model", "gate"], keep="last").set_index(["model", "gate"])
    runs = hist.runs.set_index("index")
    blanks = {}
    for pair in pairs - set(score):
        if pair in skipped:
            blanks[pair] = f"skipped in the latest run: {skipped[pair]}"
        elif pair in last.index:
            run = runs.loc[last.loc[pair, "index"]]
            blanks[pair] = (f"not in the latest run and no skip recorded: not collected (see its command); last "
                            f"recorded {when(run.started)} at {short_commit(run.commit_id)} on {run.machine}")
    return Grid(order({m for m, _ in pairs}, 0), order({g for _, g in pairs}, 1),
                latest.set_index(["model", "gate"]), blanks)


# -- what changed -------------------------------------------------------------------
KINDS = ("started failing", "worse", "went missing", "appeared", "stopped failing", "better")  # listed in this order


@dataclass(frozen=True)
class Comparison:
    title: str  # what the latest run is compared against, for the page
    base: int  # that run's index
    changes: pd.DataFrame  # `changes`' rows


def previous_on_machine(hist: History) -> int | None:
    """The index of the last run before the latest on the latest's machine, or None."""
    earlier = hist.runs[(hist.runs.machine == hist.latest.machine) & (hist.runs["index"] < hist.latest["index"])]
    return None if earlier.empty else int(earlier["index"].iloc[-1])


def run_at_commit(hist: History, prefix: str) -> int:
    """The index of the last run before the latest at the commit whose id starts with prefix, on the latest's
    machine if one is; InputError if no earlier run or more than one commit matches."""
    runs = hist.runs[hist.runs.commit_id.str.lower().str.startswith(prefix.lower())]
    earlier = runs[runs["index"] < hist.latest["index"]]
    if earlier.empty:
        newest = list(dict.fromkeys(short_commit(c) for c in hist.runs.commit_id[::-1]))[:5]
        raise InputError(f"--since {prefix}: " + ("that is the latest run's commit and no earlier run has it"
                                                   if len(runs) else "no run in the history at a commit starting "
                                                   f"so (the newest recorded: {', '.join(newest)})"))
    commits = sorted({c.removesuffix("+dirty") for c in earlier.commit_id})
    if len(commits) > 1:
        raise InputError(f"--since {prefix}: names {len(commits)} commits ({', '.join(c[:12] for c in commits)}); "
                         "give more of the id")
    here = earlier[earlier.machine == hist.latest.machine]
    return int((here if len(here) else earlier)["index"].iloc[-1])


def changes(hist: History, base: int, factor: float) -> pd.DataFrame:
    """The latest run against run `base`: each (model, gate) that started or stopped failing, appeared, went missing,
    or whose margin moved by more than `factor` (worse or better), in KINDS order, worst first within a kind.

    Columns: model, gate, kind, metric, margin, passed (latest), metric_base, margin_base, passed_base, threshold,
    unit, delta (the margin's move in decades)."""
    import numpy as np

    cols = ["model", "gate", "metric", "margin", "passed", "threshold", "unit"]
    g = hist.gates
    both = g.loc[g["index"] == hist.latest["index"], cols].merge(
        g.loc[g["index"] == base, cols], on=["model", "gate"], how="outer", suffixes=("", "_base"), indicator=True)
    now, then = both._merge != "right_only", both._merge != "left_only"
    fails_now = now & ~both.passed.fillna(True).astype(bool)
    failed_then = then & ~both.passed_base.fillna(True).astype(bool)
    delta = (both.margin - both.margin_base).to_numpy(dtype=float)
    step = math.log10(factor)
    kind = np.select([fails_now & ~failed_then, now & then & (delta > step), then & ~now, now & ~then,
                      failed_then & now & ~fails_now, now & then & (delta < -step)], KINDS, default="")
    # within a kind, worst first: the move itself for worse/better, else the margin that counts (a NaN is worst)
    key = np.select([np.isin(kind, ("worse", "better")), kind == "went missing"],
                    [delta, both.margin_base.to_numpy(dtype=float)], both.margin.to_numpy(dtype=float))
    both = both.assign(kind=kind, delta=delta, rank=[KINDS.index(k) if k else -1 for k in kind],
                       key=np.nan_to_num(key, nan=np.inf),
                       threshold=both.threshold.fillna(both.threshold_base), unit=both.unit.fillna(both.unit_base))
    both = both[both["rank"] >= 0].sort_values(["rank", "key", "model", "gate"], ascending=[True, False, True, True])
    return both[["model", "gate", "kind", "metric", "margin", "passed", "metric_base", "margin_base", "passed_base",
                 "threshold", "unit", "delta"]].reset_index(drop=True)


def compare(hist: History, since: str | None = None, factor: float = DEFAULT_FACTOR) -> list[Comparison]:
    """The latest run's comparisons: against the previous run on its machine (if any), and against --since."""
    out = []
    if (prev := previous_on_machine(hist)) is not None:
        out.append(Comparison("the previous run on this machine", prev, changes(hist, prev, factor)))
    if since:
        base = run_at_commit(hist, since)
        out.append(Comparison(f"commit {short_commit(hist.runs.commit_id[base])} (--since {since})", base,
                              changes(hist, base, factor)))
    return out


# -- the embedded series ------------------------------------------------------------
def _planes(a: np.ndarray) -> bytes:
    """a's little-endian bytes with byte k of every element together: a float32 series' sign and exponent bytes
    repeat, so they compress, where interleaved with the mantissas they would not."""
    b = a.astype(a.dtype.newbyteorder("<")).view("u1").reshape(len(a), a.dtype.itemsize)
    return b.T.tobytes()


def _f32(x: np.ndarray) -> np.ndarray:
    """x as float32 rounded to 15 mantissa bits (4.8 significant digits; the page shows 3): every value's low byte
    is then 0, so that plane compresses away."""
    import numpy as np

    f = np.asarray(x, dtype="<f4").copy()
    bits, finite = f.view("<u4"), np.isfinite(f)
    bits[finite] = (bits[finite] + 0x80) & 0xFFFFFF00
    return f


def series(hist: History, pairs: pd.DataFrame) -> tuple[str, list[int]]:
    """Every pair's points as one zlib stream of byte planes, base64: run index (u32, as steps from the pair's
    previous point), metric and threshold (f32, `_f32`), passed (u8), pair by pair in `pairs` order; and each
    pair's count."""
    import numpy as np

    g = hist.gates.merge(pairs[["model", "gate", "p"]], on=["model", "gate"]).sort_values(["p", "index"])
    run, p = g["index"].to_numpy(np.int64), g["p"].to_numpy()
    step = np.diff(run, prepend=0)
    first = np.r_[True, p[1:] != p[:-1]]
    step[first] = run[first]
    raw = b"".join(_planes(a) for a in (step.astype("u4"), _f32(g.metric), _f32(g.threshold), g.passed.to_numpy("u1")))
    counts = np.bincount(p, minlength=len(pairs)).tolist()
    return base64.b64encode(zlib.compress(raw, 6)).decode("ascii"), counts


# -- the page -----------------------------------------------------------------------
def _margin_text(margin: float) -> str:
    """A margin for a reader: '−3.2', 'floor' at FLOOR, '—' when there is none."""
    if margin != margin:
        return "—"
    return "floor" if margin <= FLOOR else f"{margin:+.1f}".replace("-", "−")


def _cell(model: str, gate: str, row: pd.Series | None, blank: str | None, p: int | None) -> str:
    """One grid cell: coloured by margin, red with a cross when failed, blank (with why) when not in the latest run."""
    esc = html.escape
    click = "" if p is None else f' data-p="{p}"'
    if row is None:
        return f'<td class="gone"{click} title="{esc(f"{model} · {gate}: {blank}")}"></td>' if blank else "<td></td>"
    verdict = "PASS" if row.passed else "FAIL"
    title = (f"{model} · {gate}\n{fmt(row.metric)} {row.unit} (threshold {fmt(row.threshold)})\n"
             f"margin {_margin_text(row.margin)} · {verdict} · click for its trend")
    if not row.passed:
        return f'<td class="fail"{click} title="{esc(title)}">✗</td>'
    return f'<td{click} style="background:{colour(row.margin)}" title="{esc(title)}"></td>'


def _grid_html(g: Grid, index: dict[tuple[str, str], int]) -> str:
    """The grid as an HTML table, gate names vertical, each naming its definition on hover."""
    esc = html.escape
    head = "".join(f'<th class="gate" title="{esc(GATES[n].definition if n in GATES else "")}">'
                   f"<span>{esc(n)}</span></th>" for n in g.gates)
    rows = []
    for m in g.models:
        cells = "".join(_cell(m, n, g.cells.loc[(m, n)] if (m, n) in g.cells.index else None,
                              g.blanks.get((m, n)), index.get((m, n))) for n in g.gates)
        rows.append(f'<tr><th class="model">{esc(m)}</th>{cells}</tr>')
    return f'<table class="grid"><thead><tr><th></th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _legend_html() -> str:
    """The colour bar: the margin scale's gradient with its ticks, then the failed and blank swatches."""
    span = -FLOOR
    stops = ", ".join(f"{c} {100 * (m - FLOOR) / span:.0f}%" for m, c in STOPS)
    ticks = "".join(f'<span style="left:{100 * (m - FLOOR) / span:.0f}%">{m:g}</span>'.replace("-", "−")
                    for m in range(int(FLOOR), 1))
    floor = f"{FLOOR:g}".replace("-", "−")
    return (f'<div class="legend"><div class="bar"><div class="ramp" style="background:linear-gradient(to right, '
            f'{stops})"></div><div class="ticks">{ticks}</div><div class="cap">margin log10(metric / threshold): '
            f'0 at the threshold, −1 a tenth of it, {floor} the floor</div></div>'
            '<span class="swatch fail">✗</span> failed <span class="swatch gone"></span> not in the latest run '
            '(hover: why) <span class="swatch"></span> not gated on this model</div>')


def _runs_between(hist: History, base: int) -> str:
    """The runs between base and the latest: short commit, date, and machine where it is not the latest's."""
    esc = html.escape
    rows = hist.runs[(hist.runs["index"] > base) & (hist.runs["index"] < hist.latest["index"])]
    if rows.empty:
        return '<p class="meta">No run in between.</p>'
    items = [f"{esc(short_commit(r.commit_id))} ({esc(when(r.started))}"
             + ("" if r.machine == hist.latest.machine else f", {esc(r.machine)}") + ")" for r in rows.itertuples()]
    return (f'<details><summary>{plural(len(items), "run")} in between</summary>'
            f'<p class="meta">{", ".join(items)}</p></details>')


def _changes_html(hist: History, c: Comparison, factor: float, index: dict[tuple[str, str], int]) -> str:
    """One comparison: what the latest run is compared with, the runs between, and the changes' table."""
    esc = html.escape
    base = hist.runs.iloc[c.base]
    head = (f'<h3>Since {esc(c.title)}: {esc(short_commit(base.commit_id))} at {esc(when(base.started))} on '
            f'{esc(base.machine)}</h3><p class="meta">That run: <code>pytest {esc(base.argv)}</code></p>'
            + _runs_between(hist, c.base))
    if c.changes.empty:
        return head + f'<p class="meta">Nothing changed: no gate moved by more than ×{factor:g}.</p>'
    def row(r) -> str:
        was = "—" if r.kind == "appeared" else f"{fmt(r.metric_base)} ({_margin_text(r.margin_base)})"
        now = "—" if r.kind == "went missing" else f"{fmt(r.metric)} ({_margin_text(r.margin)})"
        moved = "" if r.delta != r.delta else f"{r.delta:+.1f}".replace("-", "−")
        cls = ' class="fail"' if r.kind == "started failing" else ""
        return (f'<tr data-p="{index[(r.model, r.gate)]}"{cls}><td>{esc(r.kind)}</td><td>{esc(r.model)}</td>'
                f'<td>{esc(r.gate)}</td><td class="num">{was}</td><td class="num">{now}</td>'
                f'<td class="num">{moved}</td><td>{esc(r.unit)}</td><td class="num">{fmt(r.threshold)}</td></tr>')

    def table(rs) -> str:
        return ('<div class="scroll"><table class="changes"><thead><tr><th>change</th><th>model</th><th>gate</th>'
                '<th>then (margin)</th><th>now (margin)</th><th>moved (decades)</th><th>unit</th><th>threshold</th>'
                f'</tr></thead><tbody>{"".join(row(r) for r in rs)}</tbody></table></div>')

    rows = list(c.changes.itertuples())
    gone = [r for r in rows if r.kind == "went missing"]
    if len(gone) <= MISSING_LISTED:
        return head + table(rows)
    # a partial run (-k, one file) leaves most gates out: their list folds away so the real changes stay on screen
    return (head + table([r for r in rows if r.kind != "went missing"])
            + f'<details><summary>{plural(len(gone), "gate")} went missing: not in the latest run '
            f'(<code>pytest {esc(hist.latest.argv)}</code>)</summary>{table(gone)}</details>')


def _skips_html(hist: History) -> str:
    """The latest run's skipped tests and their reasons, folded."""
    esc = html.escape
    skips = hist.skips[hist.skips.run_id == hist.latest.run_id].drop_duplicates("nodeid")
    if skips.empty:
        return ""
    rows = "".join(f"<tr><td><code>{esc(s.nodeid)}</code></td><td>{esc(s.reason)}</td></tr>"
                   for s in skips.itertuples())
    return (f'<details><summary>{plural(len(skips), "test")} skipped in the latest run</summary>'
            f'<table class="changes"><tbody>{rows}</tbody></table></details>')


def _definitions_html(names: set[str]) -> str:
    """The definitions of the gates on the page (a gate crosscheck/gates.py no longer defines says so)."""
    esc = html.escape
    rows = "".join(f"<tr><td>{esc(n)}</td><td>{esc(GATES[n].unit) if n in GATES else ''}</td>"
                   f"<td>{esc(GATES[n].definition) if n in GATES else 'no longer defined in crosscheck/gates.py'}</td>"
                   "</tr>" for n in sorted(names))
    return ('<table class="defs"><thead><tr><th>gate</th><th>unit</th><th>definition</th></tr></thead>'
            f"<tbody>{rows}</tbody></table>")


MARGIN_TEXT = ("Each cell is the latest run's margin, log10(metric / threshold): 0 at the threshold, −1 a tenth of it, "
               f"clipped at the floor {FLOOR:g}. A metric at or below 0 (an exact match, a count of 0, a relative "
               "change downwards) and a pass of a threshold at or below 0 sit at the floor. The ratio gates "
               "(sim_ratio, hht_ratio, react_ratio), which pass inside a window, take log10 of the distance to the "
               "nearest window's centre over its half-width. A failed gate is red with a cross, whatever its margin "
               "(a NaN metric has none). Rows and columns: worst first (a failure, then the largest margin).")


def render(hist: History, comparisons: list[Comparison], factor: float = DEFAULT_FACTOR) -> str:
    """The whole page."""
    esc = html.escape
    run, first = hist.latest, hist.runs.iloc[0]
    g = grid(hist)
    pairs = hist.gates[["model", "gate"]].drop_duplicates().sort_values(["model", "gate"]).reset_index(drop=True)
    pairs["p"] = range(len(pairs))
    index = dict(zip(zip(pairs.model, pairs.gate), pairs.p))
    blob, counts = series(hist, pairs)
    units = hist.gates.drop_duplicates(["model", "gate"], keep="last").set_index(["model", "gate"]).unit
    machines = list(dict.fromkeys(hist.runs.machine))
    data = {"runs": [[short_commit(r.commit_id), when(r.started), machines.index(r.machine)]
                     for r in hist.runs.itertuples()],
            "machines": machines,
            "pairs": [[m, n, c, units[(m, n)]] for m, n, c in zip(pairs.model, pairs.gate, counts)],
            "defs": {n: GATES[n].definition for n in g.gates if n in GATES},
            "blob": blob}
    payload = json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")  # nothing ends the script early
    latest = g.cells
    nfail = int((~latest.passed).sum())
    nskip = hist.skips[hist.skips.run_id == run.run_id].nodeid.nunique()
    verdict = (f'<p class="verdict fail">{nfail} of {plural(len(latest), "gate")} FAILED in the latest run</p>' if nfail
               else f'<p class="verdict pass">all {plural(len(latest), "gate")} passed in the latest run</p>')
    if comparisons:
        changed = "".join(_changes_html(hist, c, factor, index) for c in comparisons)
    else:
        changed = (f'<p class="meta">No earlier run on this machine ({esc(run.machine)}) to compare with; name a '
                   "commit with --since.</p>")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>mechdyn gate report: {esc(short_commit(run.commit_id))} {esc(when(run.started))}</title>",
        f"<style>{(ASSETS / 'report.css').read_text()}</style></head><body>",
        "<h1>mechdyn gate report</h1>",
        verdict,
        f'<p class="meta">Latest run: commit <code>{esc(run.commit_id)}</code>, {esc(when(run.started))} UTC, on '
        f'{esc(run.machine)}; <code>pytest {esc(run.argv)}</code>; {plural(nskip, "test")} skipped.</p>',
        f'<p class="meta">History: {plural(len(hist.runs), "run")} from {esc(when(first.started))} to '
        f'{esc(when(run.started))} in <code>{esc(str(hist.path))}</code>.</p>',
        "<h2>The suite now</h2>",
        _legend_html(),
        _grid_html(g, index),
        f'<p class="meta note">{esc(MARGIN_TEXT)} Hover over a cell for its figures, click it for its trend.</p>',
        '<h2>What changed</h2><p class="meta">Gates that started or stopped failing, appeared, went missing, or '
        f"whose margin moved by more than ×{factor:g} (--factor), worst first. Click a row for its trend.</p>",
        changed,
        _skips_html(hist),
        "<h2>What each number is</h2>",
        _definitions_html(set(g.gates)),
        '<div id="trend" hidden><button id="close" title="close (Esc)">×</button><h3 id="trend-title"></h3>'
        '<p id="trend-def" class="meta"></p><div id="plot"></div></div>',
        f'<script type="application/json" id="data">{payload}</script>',
        f"<script>{(ASSETS / 'report.js').read_text()}</script>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"
