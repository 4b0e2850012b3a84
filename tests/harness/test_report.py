"""`crosscheck report`: margins, the grid's order and what changed computed from a history with known margins; the
page driven in headless Chromium (Playwright); and the page's size and time on 200 runs of today's ~430 gates."""
from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from crosscheck.cli import parser as crosscheck_parser
from crosscheck.gates import FIRST_ORDER, GATES, SECOND_ORDER
from crosscheck.report import (FLOOR, MISSING_LISTED, changes, compare, fmt, grid, load_history, margins, render,
                               run_at_commit)
from mechdyn.cliutil import InputError, run

from regression.history import GateRow, Run, SkipRow, write_run

REPO = Path(__file__).resolve().parents[2]
NAN = math.nan
A, B = "ci-a: Test CPU, 2 cores", "ci-b: Other CPU, 8 cores"
# (commit, machine) per run, oldest first; the latest is on A, so "the previous run on this machine" is run 2
RUNS = [("aaaa1111" + "a" * 32, A), ("bbbb2222" + "b" * 32, B), ("cccc3333" + "c" * 32, A),
        ("dddd4444" + "d" * 32 + "+dirty", B), ("eeee5555" + "e" * 32, A)]
# (model, gate) -> metric per run (None: not recorded then), threshold
SERIES = {
    ("alpha", "gen_vs_dense"): ([3e-16, 5e-16, 4e-16, 6e-16, 5e-16], 1e-9),  # at the floor throughout
    ("alpha", "reversibility"): ([1e-16, 2e-9, 1e-16, 2e-16, 1e-16], 1e-10),  # failed on B in run 1 only
    ("alpha", "find_roundtrip"): ([0.0] * 5, 0.0),  # threshold 0, metric 0: a pass at the floor
    ("beta", "gen_vs_dense"): ([2e-15, 1e-15, 3e-15, 4e-15, 4e-8], 1e-9),  # the planted failure, latest run
    ("beta", "closure_drift"): ([2e-8, 3e-8, 2e-8, 2e-8, 3e-6], 1e-5),  # worse by 2.2 decades, still passing
    ("beta", "rank_K"): ([None, None, None, None, 0.0], 0.0),  # appears in the latest run
    ("gamma", "hold_slip"): ([1e-4, 1e-4, 1e-4, 1e-4, None], 5e-4),  # missing: gate.skip named it
    ("gamma", "settle_energy_net"): ([-2000.0, -2100.0, -2156.0, -1000.0, -1500.0], 0.0),  # a loss: the floor
    ("gamma", "settle_passivity"): ([-1e-3, -5e-5, -1e-3, -1e-3, -1e-3], 5e-11),  # metric < 0: the floor
    ("gamma", "flops"): ([0.0, 0.0, -0.0098, -0.0098, -0.0098], 0.02),  # fewer flops: the floor
    ("gamma", "sim_ratio"): ([2.01, 2.0, 2.01, 2.0, 2.002], 2.2),  # 0.002 from 2 in a window ±0.2: margin −2
    ("gamma", "golden_qdd"): ([0.0, NAN, 0.0, 0.0, 0.0], 1e-12),  # NaN (no golden) on B in run 1
    ("delta", "order_euler"): ([0.01, 0.01, 0.04, 0.01, None], 0.05),  # missing: an unnamed skip of its test
    ("delta", "crba_vs_aba"): ([1e-11, 1e-11, 1e-11, 1e-11, 1e-13], 1e-12),  # stopped failing
    ("delta", "observe_vs_dense"): ([1e-13, 1e-13, 1e-13, 1e-13, 1e-16], 1e-12),  # better by 3 decades
}
SKIP_NAMED = "gamma has no ground to park on"
SKIP_UNNAMED = "delta: a chain 70 coordinates deep; the Euler order gate's fixed step does not resolve it"
ROWS = ["beta", "delta", "gamma", "alpha"]  # worst first: a failure, then margins -1, -2, the floor
COLS = ["gen_vs_dense", "closure_drift", "crba_vs_aba", "sim_ratio", "observe_vs_dense",  # failure, -0.5 .. -4
        "find_roundtrip", "flops", "golden_qdd", "rank_K", "reversibility", "settle_energy_net",  # the floor
        "settle_passivity", "hold_slip", "order_euler"]  # not in the latest run
# against run 2 (the previous run on A), factor 10
CHANGED = [("started failing", "beta", "gen_vs_dense"), ("worse", "beta", "closure_drift"),
           ("went missing", "delta", "order_euler"), ("went missing", "gamma", "hold_slip"),
           ("appeared", "beta", "rank_K"), ("stopped failing", "delta", "crba_vs_aba"),
           ("better", "delta", "observe_vs_dense")]


def nodeid(model: str, gate: str) -> str:
    return f"regression/test_x.py::test_{gate}[{model}]"


def write_history(db: Path) -> Path:
    """SERIES as five runs on two machines, written through regression/history.py, with the latest run's skips."""
    for k, (commit, machine) in enumerate(RUNS):
        rows = [GateRow(m, g, v[k], thr, bool(v[k] <= thr), nodeid(m, g), GATES[g].unit)
                for (m, g), (v, thr) in SERIES.items() if v[k] is not None]
        skips = [SkipRow(nodeid("gamma", "hold_slip"), "gamma", "hold_slip", SKIP_NAMED),
                 SkipRow(nodeid("delta", "order_euler"), None, None, SKIP_UNNAMED)] if k == len(RUNS) - 1 else []
        write_run(db, Run(f"run{k}", f"2026-03-0{k + 1}T12:00:00+00:00", commit, machine, "-n auto"), rows, skips)
    return db


@pytest.fixture
def history(tmp_path) -> Path:
    return write_history(tmp_path / "history.sqlite")


def test_margins():
    """log10(metric / threshold), the floor for metric <= 0 and for passes of a threshold <= 0, the ratio gates'
    distance to their window, NaN for a failure with no ratio to measure."""
    cases = [  # gate, metric, threshold, passed, margin
        ("gen_vs_dense", 4e-8, 1e-9, False, math.log10(40)),
        ("gen_vs_dense", 1e-11, 1e-9, True, -2.0),
        ("gen_vs_dense", 1e-20, 1e-9, True, FLOOR),  # below the floor: clipped
        ("golden_qdd", 0.0, 1e-12, True, FLOOR),  # an exact match
        ("flops", -0.0098, 0.02, True, FLOOR),  # fewer flops than the golden
        ("settle_passivity", -1e-3, 5e-11, True, FLOOR),
        ("settle_energy_net", -2156.0, 0.0, True, FLOOR),  # threshold 0, passed
        ("find_roundtrip", 0.0, 0.0, True, FLOOR),
        ("find_roundtrip", 2.0, 0.0, False, NAN),  # threshold 0, failed: red, no margin
        ("golden_qdd", NAN, 1e-12, False, NAN),
        ("hold_control", math.inf, 1.0, False, NAN),
        ("sim_ratio", 2.002, 2.2, True, -2.0),  # 0.002 from 2.0, half-width 0.2
        ("sim_ratio", 3.96, 2.2, True, -1.0),  # the second-order window 4 ± 0.4
        ("hht_ratio", 3.9, 4.4, True, math.log10(0.1 / 0.4)),
        ("hht_ratio", 4.0, 4.4, True, FLOOR),  # dead centre
    ]
    gate, metric, threshold, passed, want = (np.array(c, dtype=object if k == 0 else float)
                                             for k, c in enumerate(zip(*cases)))
    got = margins(gate, metric, threshold, passed.astype(bool))
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)


def test_fmt():
    """Three significant digits as report.js's fmt writes them (the page shows both)."""
    assert [fmt(x) for x in (1e-9, 3.3232e-16, -1500.0, -2156.57, 2.0001, 0.042, 1234567.0, 5e-4, 0.0, NAN,
                             -math.inf)] == ["1e-9", "3.32e-16", "-1500", "-2160", "2", "0.042", "1.23e6", "5e-4",
                                             "0", "NaN", "-Infinity"]


def test_ratio_windows_match_chrono():
    from crosscheck.chrono.checks import RATIO_FIRST, RATIO_SECOND

    assert (FIRST_ORDER, SECOND_ORDER) == (RATIO_FIRST, RATIO_SECOND)


def test_grid_order_and_blanks(history):
    """Rows and columns worst first; the failure has no margin to beat; missing cells say why."""
    hist = load_history(history)
    g = grid(hist)
    assert (g.models, g.gates) == (ROWS, COLS)
    assert not g.cells.loc[("beta", "gen_vs_dense")].passed
    assert g.cells.loc[("gamma", "sim_ratio")].margin == pytest.approx(-2.0)
    assert g.blanks[("gamma", "hold_slip")] == f"skipped in the latest run: {SKIP_NAMED}"
    assert g.blanks[("delta", "order_euler")] == f"skipped in the latest run: {SKIP_UNNAMED}"  # via its nodeid
    assert ("alpha", "hold_slip") not in g.blanks  # never gated: nothing to say
    assert hist.gates.unit[hist.gates.gate == "closure_drift"].eq("m or rad").all()


def test_what_changed(history):
    """Against the previous run on the latest's machine, and --since a commit on the other machine."""
    hist = load_history(history)
    (prev,) = compare(hist)
    assert prev.base == 2 and prev.title == "the previous run on this machine"
    assert list(prev.changes[["kind", "model", "gate"]].itertuples(False, None)) == CHANGED
    worse = prev.changes.iloc[1]
    assert worse.delta == pytest.approx(math.log10(3e-6 / 2e-8))

    assert run_at_commit(hist, "BBBB") == 1  # a prefix, any case
    since = changes(hist, 1, 10.0)
    kinds = {(k, m, g) for k, m, g in since[["kind", "model", "gate"]].itertuples(False, None)}
    assert ("stopped failing", "alpha", "reversibility") in kinds  # failed on B in run 1
    assert ("stopped failing", "gamma", "golden_qdd") in kinds  # NaN then
    assert since.iloc[0][["kind", "model", "gate"]].tolist() == ["started failing", "beta", "gen_vs_dense"]

    # a larger factor lists fewer moves; the started/stopped failing, appeared and missing stay
    assert [k for k in changes(hist, 2, 1e4).kind] == [k for k, *_ in CHANGED if k not in ("worse", "better")]
    with pytest.raises(InputError, match=r"--since 0123: no run in the history at a commit starting so"):
        run_at_commit(hist, "0123")
    with pytest.raises(InputError, match="that is the latest run's commit"):
        run_at_commit(hist, "eeee")


def test_a_partial_run_folds_what_went_missing(tmp_path):
    """A run of a few tests (`-k`) after a full one leaves most gates out: they fold into one collapsed line, so
    the gates that did run and changed stay on screen; below MISSING_LISTED they stay in the table."""
    db = tmp_path / "history.sqlite"
    full = [GateRow(f"m{i:02d}", "gen_vs_dense", 1e-15, 1e-9, True, nodeid(f"m{i:02d}", "gen_vs_dense"),
                    GATES["gen_vs_dense"].unit) for i in range(MISSING_LISTED + 5)]
    write_run(db, Run("full", "2026-03-01T12:00:00+00:00", "a" * 40, A, "-n auto"), full, [])
    partial = [GateRow("m00", "gen_vs_dense", 4e-8, 1e-9, False, full[0].nodeid, full[0].unit)]
    write_run(db, Run("part", "2026-03-02T12:00:00+00:00", "b" * 40, A, "-n auto -k m00"), partial, [])
    hist = load_history(db)
    text = render(hist, compare(hist))
    shown, fold, folded = text.partition(f"{MISSING_LISTED + 4} gates went missing: not in the latest run")
    assert fold and "-k m00" in folded[:100] and folded.count("<td>went missing</td>") == MISSING_LISTED + 4
    assert "<td>started failing</td>" in shown and "<td>went missing</td>" not in shown


def test_schema_1_history_loads(tmp_path):
    """A version-1 file (no unit, no skips) reads as is, its units from crosscheck/gates.py, and after the
    recorder migrated it."""
    import sqlite3

    db = tmp_path / "v1.sqlite"
    conn = sqlite3.connect(db)
    conn.executescript("""
        CREATE TABLE runs (run_id TEXT PRIMARY KEY, started TEXT NOT NULL, commit_id TEXT NOT NULL,
                           machine TEXT NOT NULL, argv TEXT NOT NULL);
        CREATE TABLE gates (run_id TEXT NOT NULL, model TEXT NOT NULL, gate TEXT NOT NULL, metric REAL,
                            threshold REAL NOT NULL, passed INTEGER NOT NULL, nodeid TEXT NOT NULL);
        INSERT INTO runs VALUES ('r1', '2026-01-01T00:00:00+00:00', 'abcdef0', 'm', '');
        INSERT INTO gates VALUES ('r1', 'alpha', 'closure_drift', 1e-8, 1e-5, 1, 't');
        PRAGMA user_version = 1;""")
    conn.close()
    hist = load_history(db)
    assert hist.gates.unit.tolist() == ["m or rad"] and hist.skips.empty
    assert compare(hist) == []
    write_run(db, Run("r2", "2026-01-02T00:00:00+00:00", "abcdef1", "m", ""),  # migrated to schema 2 in place
              [GateRow("alpha", "closure_drift", 1e-6, 1e-5, True, "t", "m or rad")])
    hist = load_history(db)
    assert hist.gates.unit.tolist() == ["m or rad"] * 2
    assert list(compare(hist)[0].changes[["kind", "gate"]].itertuples(False, None)) == [("worse", "closure_drift")]


def crosscheck(*args: str) -> subprocess.CompletedProcess:
    """The crosscheck command from this checkout (its console script may be installed from another)."""
    return subprocess.run([sys.executable, "-c", "from crosscheck.cli import main; main()", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300, check=False)


def test_report_command(history, tmp_path):
    out = tmp_path / "report.html"
    r = crosscheck("report", "--history", str(history), "-o", str(out), "--since", "bbbb2222")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"{out}: 5 runs from {history}; latest 2026-03-05T12:00:00+00:00 at eeee555 on "
                               f"{A}: 13 gates, 1 failed; 7 changes since the previous run on this machine; ")
    assert "changes since commit bbbb222 (--since bbbb2222)" in r.stdout and r.stdout.count("\n") == 1
    text = out.read_text()
    assert not re.search(r"https?:", text)  # self-contained: no URL at all
    assert not re.findall(r'\b(?:src|href)="', text)
    assert "Since the previous run on this machine: cccc333 at 2026-03-03 12:00" in text  # the baseline, named
    assert "Since commit bbbb222 (--since bbbb2222): bbbb222 at 2026-03-02 12:00 on ci-b" in text


def test_report_input_errors(tmp_path, capsys):
    """A missing, empty or damaged history, or a bad --since or --factor: one line, exit 2, no page."""
    missing = tmp_path / "none.sqlite"
    assert run(crosscheck_parser, ["report", "--history", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{missing}: no gate history here") and err.count("\n") == 1
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    assert run(crosscheck_parser, ["report", "--history", str(empty)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{empty}: the gate history is empty") and err.count("\n") == 1
    junk = tmp_path / "junk.sqlite"
    junk.write_text("not sqlite\n" * 100)
    assert run(crosscheck_parser, ["report", "--history", str(junk)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{junk}: not a gate history") and err.count("\n") == 1
    db = write_history(tmp_path / "h.sqlite")
    out = tmp_path / "report.html"
    for args, message in ((["--since", "fedcba98"], "--since fedcba98: no run in the history at a commit starting"),
                          (["--since", "zz"], "expected the start of a commit id"),
                          (["--factor", "1"], "expected a factor > 1")):
        assert run(crosscheck_parser, ["report", "--history", str(db), "-o", str(out), *args]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert not out.exists()


def test_report_from_environment(history, tmp_path, monkeypatch, capsys):
    """Without --history the file comes from $MECHDYN_HISTORY."""
    monkeypatch.setenv("MECHDYN_HISTORY", str(history))
    out = tmp_path / "r.html"
    assert run(crosscheck_parser, ["report", "-o", str(out)]) == 0
    assert f"from {history}" in capsys.readouterr().out
    assert out.read_text().count('<td class="fail"') == 1


# -- in the browser -------------------------------------------------------------------
def browser():
    """Playwright's Chromium on the system's chromium (no browser download); skips, saying why, without either."""
    if shutil.which("chromium") is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    return sync_api.sync_playwright()


def test_report_in_chromium(history, tmp_path):
    """The grid's rows and columns, the planted failure red and first under what changed, its trend on a click
    (one point per run, coloured by machine), the missing gates' reasons on hover, and no console error."""
    out = tmp_path / "report.html"
    assert run(crosscheck_parser, ["report", "--history", str(history), "-o", str(out)]) == 0
    with browser() as p:
        chromium = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        page = chromium.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(out.as_uri())

        assert page.locator("table.grid th.model").all_text_contents() == ROWS
        assert page.locator("table.grid th.gate").all_text_contents() == COLS
        cell = page.locator("table.grid tbody tr").nth(ROWS.index("beta")).locator("td").nth(COLS.index("gen_vs_dense"))
        assert cell.evaluate("td => getComputedStyle(td).backgroundColor") == "rgb(215, 25, 28)"
        assert cell.text_content() == "✗"
        assert cell.get_attribute("title") == ("beta · gen_vs_dense\n4e-8 scaled error (threshold 1e-9)\n"
                                              "margin +1.6 · FAIL · click for its trend")
        assert page.locator("td.fail").count() == 1
        row = page.locator("table.grid tbody tr")
        hold = row.nth(ROWS.index("gamma")).locator("td").nth(COLS.index("hold_slip"))
        assert SKIP_NAMED in hold.get_attribute("title") and hold.text_content() == ""
        assert SKIP_UNNAMED in row.nth(ROWS.index("delta")).locator("td").nth(COLS.index("order_euler")).get_attribute(
            "title")
        first = page.locator("table.changes tbody tr").first.locator("td").all_text_contents()
        assert first[:3] == ["started failing", "beta", "gen_vs_dense"]

        assert page.locator("#trend").is_hidden()
        cell.click()
        points = page.locator("#trend circle.pt")
        points.first.wait_for()
        assert points.count() == 5  # one per run
        fills = [points.nth(k).get_attribute("fill") for k in range(5)]
        assert fills[0] == fills[2] == fills[4] != fills[1] == fills[3]  # runs 0, 2, 4 on A; 1, 3 on B
        assert page.locator("#trend circle.pt.fail").count() == 1
        assert page.locator("#trend circle.pt.fail title").text_content() == (
            f"eeee555 · 2026-03-05 12:00 UTC · {A}\nmetric 4e-8 scaled error · threshold 1e-9 · FAIL")
        assert page.locator("#trend-title").text_content() == "beta · gen_vs_dense [scaled error]"
        assert A in page.locator("#trend .keys").text_content() and B in page.locator("#trend .keys").text_content()
        page.keyboard.press("Escape")
        assert page.locator("#trend").is_hidden()

        page.locator("table.changes tbody tr", has_text="rank_K").click()  # a row of what changed: its trend too
        page.locator("#trend-title", has_text="rank_K").wait_for()
        assert page.locator("#trend circle.pt").count() == 1
        page.locator("table.changes tbody tr", has_text="closure_drift").click()
        page.locator("#trend-title", has_text="closure_drift").wait_for()
        assert "log axis" in page.locator("#trend-def").text_content()  # 2e-8 .. 1e-5: three decades
        chromium.close()
    assert errors == []


# -- size and time --------------------------------------------------------------------------
def big_history(db: Path, runs: int = 200, seed: int = 0) -> int:
    """`runs` runs of ~430 (model, gate) pairs, today's count, on two machines: metrics that jitter in every run
    (the worst case for compression; real reruns repeat them exactly), a few failing and missing; the pair count."""
    rng = np.random.default_rng(seed)
    models = [f"model{k:02d}" for k in range(23)]
    names = list(GATES)
    every = [(m, g) for m in models for g in names]
    pairs = [every[i] for i in sorted(rng.choice(len(every), 430, replace=False))]
    level = {p: 10 ** rng.uniform(-8, -0.3) for p in pairs}  # margins from beyond the floor to near the threshold
    for k in range(runs):
        rows = []
        for m, g in pairs:
            if rng.random() < 0.01:
                continue  # missing now and then
            metric = level[(m, g)] * 10 ** rng.normal(0, 0.2)
            rows.append(GateRow(m, g, metric, 1.0, metric <= 1.0, nodeid(m, g), GATES[g].unit))
        started = (datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(hours=k)).isoformat()
        write_run(db, Run(f"r{k}", started, f"{k:07x}" + "0" * 33, (A, B)[k % 3 == 0], "-n auto"), rows)
    return len(pairs)


def test_report_size_and_time(tmp_path, capsys):
    """200 runs × ~430 pairs: the page at most 500 kB, written within 5 s (measured: about 1 s here)."""
    db = tmp_path / "big.sqlite"
    npairs = big_history(db)
    out = tmp_path / "report.html"
    t0 = time.perf_counter()
    assert run(crosscheck_parser, ["report", "--history", str(db), "-o", str(out)]) == 0
    seconds = time.perf_counter() - t0
    size = out.stat().st_size
    print(f"200 runs x {npairs} pairs: {size / 1000:.0f} kB in {seconds:.2f} s")
    assert size <= 500_000, size
    assert seconds <= 5.0, seconds
