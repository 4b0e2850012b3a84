"""Bad input at the command line: exit status 2 and one line on stderr that names the problem, never a traceback.

Each case runs the console script in a subprocess, as a user would, and checks
the whole of stderr: exactly one line, no "Traceback", no numpy warning.
"""
import importlib
import io
import os
import re
import sqlite3
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from regression.history import GateRow, Run, write_run
from tests.conftest import in_pty

MODELS = Path(__file__).resolve().parents[1] / "models"
MAX_MESSAGE = 300  # mechdyn.cliutil.MAX_MESSAGE, written out so that this file runs against older trees too
# what an unknown key in a body block is told to be one of (the package's `parse` shadows the submodule)
BODY_KEYS = ", ".join(importlib.import_module("mechdyn.core.parse")._BODY)


def cli(tool: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run a console script as a user would: the one installed beside this interpreter."""
    script = Path(sys.executable).parent / tool
    return subprocess.run([str(script) if script.exists() else tool, *args], capture_output=True, text=True,
                          timeout=120, check=False, env=os.environ | (env or {}))


def assert_input_error(r: subprocess.CompletedProcess, *needles: str) -> str:
    """Exit 2, stderr exactly one line (no traceback, no warning) containing every needle; returns the line."""
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert r.stderr.count("\n") == 1 and r.stderr.endswith("\n"), r.stderr[-2000:]
    assert "Traceback" not in r.stderr and "Warning" not in r.stderr, r.stderr
    for needle in needles:
        assert needle in r.stderr, (needle, r.stderr)
    return r.stderr.rstrip("\n")


# -- an unreadable model file ---------------------------------------------------------------------

@pytest.mark.parametrize("tool", [("mechdyn", "info"), ("crosscheck", "dense")])
def test_model_file_that_cannot_be_read(tool):
    """/proc/self/mem is a regular file that every read fails on (EIO), for root as well."""
    assert_input_error(cli(*tool, "/proc/self/mem"), "/proc/self/mem: cannot read the model file")


@pytest.mark.parametrize("tool", [("mechdyn", "info"), ("crosscheck", "dense")])
def test_model_file_without_read_permission(tool, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("running as root, which reads a mode-000 file anyway; the /proc/self/mem case covers the path")
    f = tmp_path / "locked.mech"
    f.write_text((MODELS / "elbow.mech").read_text())
    f.chmod(0)
    assert_input_error(cli(*tool, str(f)), f"{f}: cannot read the model file: Permission denied")


# -- --trials and --seed --------------------------------------------------------------------------

@pytest.mark.parametrize("args, needles", [
    (["--trials", str(10**12)], ["argument --trials", "up to 1,000,000", str(10**12)]),
    (["--trials", str(10**30)], ["argument --trials", "up to 1,000,000"]),
    (["--trials", "many"], ["argument --trials", "'many'"]),
    (["--seed", "-1"], ["argument --seed", "from 0 to 4,294,967,295", "-1"]),
    (["--seed", str(2**64)], ["argument --seed"]),
])
def test_trials_and_seed_out_of_range(args, needles):
    assert_input_error(cli("crosscheck", "dense", "elbow", *args), *needles)


def test_mechdyn_sim_seed_out_of_range():
    assert_input_error(cli("mechdyn", "sim", "elbow", "--seed", "-1"), "argument --seed")


# -- sim and bench numbers ------------------------------------------------------------------------

@pytest.mark.parametrize("args, needles", [
    (["--dt", "nan"], ["argument --dt", "finite number > 0", "nan"]),
    (["--time", "nan"], ["argument --time", "finite number > 0"]),
    (["--time", "inf"], ["argument --time", "finite number > 0", "inf"]),
    (["--time", "-1"], ["argument --time"]),
    (["--dt", "1e-300"], ["--time 1 at --dt 1e-300 would take 1e+300 steps", "at most 1e+09"]),
    (["--time", "1e300"], ["--time 1e+300 at --dt 0.001", "steps"]),
    (["--dt", "2", "--time", "1"], ["expected --dt <= --time"]),
    (["--stride", "-5"], ["argument --stride", "positive integer", "-5"]),
    (["--stride", "0"], ["argument --stride"]),
    (["--stride", "1001"], ["--stride 1001 is more than the run's 1000 steps"]),
])
def test_sim_numbers(args, needles):
    assert_input_error(cli("mechdyn", "sim", "elbow", *args), *needles)


@pytest.mark.parametrize("args, needles", [
    (["--repeats", "0"], ["argument --repeats", "positive integer", "0"]),
    (["--repeats", "-1"], ["argument --repeats", "-1"]),
    (["--sim", "0"], ["argument --sim", "finite number > 0", "0"]),
    (["--sim", "nan"], ["argument --sim", "nan"]),
    (["--sim", "-0.5"], ["argument --sim", "finite number > 0", "-0.5"]),
    # --sim's DT is optional (a contact model's accuracy step), so argparse reads "-inf" as an option, not as DT
    (["--sim", "-inf"], ["unrecognized arguments: -inf"]),
])
def test_bench_numbers(args, needles):
    assert_input_error(cli("mechdyn", "bench", "elbow", *args), *needles)


# -- output paths, checked before the work --------------------------------------------------------

@pytest.mark.parametrize("make", ["missing", "directory", "under_a_file"])
@pytest.mark.parametrize("cmd, flag", [
    (["mechdyn", "sim", "elbow", "--time", "20"], "--trace"),
    (["mechdyn", "gen", "elbow"], "-o"),
    (["mechdyn", "export", "elbow"], "--urdf"),
    (["mechdyn", "export", "elbow"], "--mjcf"),
    (["crosscheck", "report"], "-o"),
])
def test_output_path_checked_before_the_work(tmp_path, cmd, flag, make):
    target = {"missing": tmp_path / "no_such_dir" / "out.txt", "directory": tmp_path,
              "under_a_file": tmp_path / "file.txt" / "out.txt"}[make]
    (tmp_path / "file.txt").write_text("x")
    cache = tmp_path / "cache"  # a private compile cache: a sim that ran would have compiled elbow into it
    r = cli(*cmd, flag, str(target), env={"MECHDYN_CACHE": str(cache)})
    why = {"missing": "does not exist", "directory": "is a directory", "under_a_file": "is not a directory"}[make]
    assert_input_error(r, f"argument {flag}", str(target), why)
    assert r.stdout == "" and not cache.exists(), "the command did its work before refusing the path"


def test_plot_output_directory_under_a_file(tmp_path):
    (tmp_path / "file.txt").write_text("x")
    trace = tmp_path / "t.csv"
    trace.write_text("# mechdyn trace\n# model: elbow\nt,energy\n0,1\n")
    assert_input_error(cli("mechdyn", "plot", str(trace), "-o", str(tmp_path / "file.txt" / "png")),
                       "argument -o/--output", "is not a directory")


TRACE = ("# mechdyn trace\n# model: springpend\nt,q:pend1,q:pend2,energy\n"
         "0,0,0,35.08\n0.001,-1.4e-05,8.8e-06,35.08\n0.002,-5.6e-05,3.5e-05,35.08\n")


@pytest.mark.parametrize("edit, needles", [
    (lambda t: t.replace("0.001,-1.4e-05", "0.001,abc"), ["column q:pend1 holds 'abc'"]),
    (lambda t: t.split("0,0,0")[0], ["no rows"]),
    (lambda t: t.replace("0.002,-5.6e-05", "0.002,1,2"), ["not a mechdyn trace", "Expected 4 fields"]),
])
def test_plot_bad_trace(tmp_path, edit, needles):
    trace = tmp_path / "t.csv"
    trace.write_text(edit(TRACE))
    assert_input_error(cli("mechdyn", "plot", str(trace), "-o", str(tmp_path / "png")), f"{trace}: ", *needles)
    assert not (tmp_path / "png").exists() or not any((tmp_path / "png").iterdir())


# -- crosscheck report on a bad history --------------------------------------------------------------

def write_history(db: Path, nruns: int = 3, ngates: int = 40) -> None:
    """A real history (regression/history.py's writer): nruns runs of ngates gates each."""
    for k in range(nruns):
        write_run(db, Run(f"run{k}", f"2026-03-0{k + 1}T12:00:00+00:00", "1234567" + "a" * 33, "ci: cpu, 2 cores",
                          "-n 2"), [GateRow("elbow", f"gate{i}", 1e-16 * (i + 1), 1e-9, True, f"test_x[{i}]")
                                    for i in range(ngates)])


def test_report_history_with_wrong_columns(tmp_path):
    db = tmp_path / "h.sqlite"
    with sqlite3.connect(db) as conn:
        conn.executescript("CREATE TABLE runs (run_id, started); CREATE TABLE gates (run_id, model, value);")
    conn.close()
    assert_input_error(cli("crosscheck", "report", "--history", str(db), "-o", str(tmp_path / "r.html")),
                       f"{db}: not a gate history", "no such column")
    assert not (tmp_path / "r.html").exists()


def test_report_history_with_corrupted_pages(tmp_path):
    db = tmp_path / "h.sqlite"
    write_history(db)
    data = bytearray(db.read_bytes())
    assert len(data) >= 3 * 4096, "the history should span several pages"
    rng = np.random.default_rng(0)
    data[4096:] = rng.integers(0, 256, len(data) - 4096, dtype=np.uint8).tobytes()  # page 1 (the schema) survives
    db.write_bytes(bytes(data))
    assert_input_error(cli("crosscheck", "report", "--history", str(db), "-o", str(tmp_path / "r.html")),
                       f"{db}: not a gate history, or a damaged one", "malformed")


@pytest.mark.parametrize("column, value, expected", [
    ("metric", "'tiny'", "a number or NULL"),
    ("threshold", "'1e-9ish'", "a number"),
    ("passed", "'yes'", "0 or 1"),
    ("passed", "7", "0 or 1"),
])
def test_report_history_with_text_in_numeric_columns(tmp_path, column, value, expected):
    db = tmp_path / "h.sqlite"
    write_history(db)
    with sqlite3.connect(db) as conn:
        conn.execute(f"UPDATE gates SET {column} = {value} WHERE run_id = 'run1' AND gate = 'gate3'")
    conn.close()
    line = assert_input_error(cli("crosscheck", "report", "--history", str(db), "-o", str(tmp_path / "r.html")),
                              f"{db}: not a gate history: gates.{column} holds", f"where {expected} belongs",
                              "run run1", "gate gate3")
    assert value.strip("'") in line


def test_report_good_history_still_renders(tmp_path):
    """The checks above refuse only bad histories: a NULL metric (a NaN) is allowed."""
    db = tmp_path / "h.sqlite"
    write_history(db, ngates=3)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE gates SET metric = NULL, passed = 0 WHERE run_id = 'run2' AND gate = 'gate1'")
    conn.close()
    r = cli("crosscheck", "report", "--history", str(db), "-o", str(tmp_path / "r.html"))
    assert r.returncode == 0 and "1 failed" in r.stdout, r.stderr


# -- models the parser used to accept and that failed later (issue 33) ----------------------------

PIN_LOOP = "\nloop pin\n  joint distance\n  pred base\n  succ crank\n  anchor_pred 0 0 0\n  anchor_succ 0 0.05 0\nend\n"
REDUNDANT = "constrains nothing the tree's joints and earlier loops leave free"
BAD_MODELS = {  # name: (model, text replaced, replacement, text appended, line, message)
    # was `ZeroDivisionError: generated code would divide by a structural zero` (mechdyn info)
    "tsda points coincide": (
        "springpend", "poi hook base 0.4 0 1.0", "poi hook base 0 0 0.6", "", 57,
        "tsda 'spring' joins poi 'hook' and poi 'eye', which coincide at the design pose (at 0 0 0.6); expected them "
        "more than 1e-09 m apart there: a spring of zero length has no direction"),
    # was the same ZeroDivisionError, from the articulated-body route's A = K H⁻¹ Kᵀ
    "point-on-line axis across the band": (
        "band63", "  axis y\n", "  axis -1 0 0\n", "", 658,
        f"loop 'band' (point-on-line) is redundant at the design pose: its row 2 of 2 (w·d) {REDUNDANT} (rank(K) 1 "
        "< nc 2); expected independent rows (check its axis, anchor_pred and anchor_succ)"),
    # was `structural zero pivot at constraint row 1: ...` without a file or line
    "distance loop along a joint axis": (
        "slidercrank", "", "", PIN_LOOP, 71,
        f"loop 'pin' (distance) is redundant at the design pose: its row 1 of 1 ((d·d − L²)/2) {REDUNDANT} (rank(K) "
        "1 < nc 2); expected independent rows (its length must change as the joints move: check anchor_pred and "
        "anchor_succ)"),
}


@pytest.mark.parametrize("tool", [("mechdyn", "info"), ("crosscheck", "dense")])
@pytest.mark.parametrize("case", BAD_MODELS)
def test_model_bad_at_its_design_pose_is_one_located_line(tmp_path, case, tool):
    name, old, new, extra, line, msg = BAD_MODELS[case]
    text = (MODELS / f"{name}.mech").read_text()
    assert old in text
    bad = tmp_path / f"{name}.mech"
    bad.write_text(text.replace(old, new) + extra)
    cache = tmp_path / "cache"
    r = cli(*tool, str(bad), *(["--trials", "5"] if tool[0] == "crosscheck" else []), env={"MECHDYN_CACHE": str(cache)})
    assert assert_input_error(r) == f"{bad}:{line}: {msg}"
    assert r.stdout == "" and not cache.exists()  # refused at the load, before any work


# -- warnings and long messages -------------------------------------------------------------------

def test_no_numpy_warning_before_an_input_error(tmp_path):
    """A body placed 1e308 m away overflows the loop closure (RuntimeWarnings) and then fails; only the line is shown."""
    text = (MODELS / "fourbar.mech").read_text()
    assert "xtree 0.247810175601 0 0.130346142515" in text
    bad = tmp_path / "far.mech"
    bad.write_text(text.replace("xtree 0.247810175601 0 0.130346142515", "xtree 1e308 0 0"))
    assert_input_error(cli("mechdyn", "info", str(bad)))


def _parser(warn: bool, fail: bool):
    from mechdyn.cliutil import InputError, Parser

    def work(args) -> int:
        if warn:
            warnings.warn("overflow encountered in a planted multiply", RuntimeWarning)
        if fail:
            raise InputError("planted bad input")
        print("done")
        return 0
    p = Parser(prog="planted")
    p.set_defaults(func=work)
    return p


def test_warnings_are_held_back_not_lost(capsys):
    """An input error replaces the warnings before it; a command that succeeds still shows its warnings."""
    from mechdyn.cliutil import run

    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        assert run(lambda: _parser(warn=True, fail=True), []) == 2
        assert capsys.readouterr().err == "planted bad input\n" and shown == []
        assert run(lambda: _parser(warn=True, fail=False), []) == 0
        assert capsys.readouterr().out == "done\n"
        assert [str(w.message) for w in shown] == ["overflow encountered in a planted multiply"]


@pytest.mark.parametrize("tool", [("mechdyn", "info"), ("crosscheck", "dense")])
def test_huge_token_in_a_model_is_cut(tmp_path, tool):
    """A 200 kB key in a model file: the message names the file and line, shows the key's start and end and how
    much of it is left out, keeps what was expected, and fits MAX_MESSAGE characters."""
    bad = tmp_path / "big.mech"
    bad.write_text("body a\n  parent base\n  joint revolute z\n  " + "m" * 200_000 + " 1\nend\n")
    line = assert_input_error(cli(*tool, str(bad)), f"{bad}:4: ")
    assert len(line) - len(f"{bad}:4: ") <= MAX_MESSAGE, len(line)  # the cap is on the message after path:line
    assert re.fullmatch(re.escape(f"{bad}:4: unknown key '") + r"m+…\[199,9\d\d more\]…m+" + re.escape(
        f"' in body 'a'; expected one of {BODY_KEYS}"), line), line


def test_long_path_does_not_cut_the_message(tmp_path):
    """The cap is on the message after `path:line: `: a deep directory does not cut off what was expected."""
    deep = tmp_path.joinpath(*["a_rather_long_directory_name"] * 4)
    deep.mkdir(parents=True)
    bad = deep / "bad.mech"
    bad.write_text("body a\n  parent base\n  joint revolute z\n  mas 1\nend\n")
    line = assert_input_error(cli("mechdyn", "info", str(bad)))
    assert line == f"{bad}:4: unknown key 'mas' in body 'a'; expected one of {BODY_KEYS} (did you mean 'mass'?)"
    assert len(line) > MAX_MESSAGE


def test_huge_argument_is_cut():
    """100 kB: a single argument may not exceed 128 kB (MAX_ARG_STRLEN)."""
    line = assert_input_error(cli("crosscheck", "dense", "elbow", "--trials", "9" * 100_000), "argument --trials")
    assert len(line) <= MAX_MESSAGE


def test_usage_error_is_one_line():
    """argparse's own errors (unknown option, missing command) print a usage block first; ours say where help is."""
    assert_input_error(cli("mechdyn", "sim", "elbow", "--frobnicate"), "unrecognized arguments: --frobnicate",
                       "mechdyn --help")
    assert_input_error(cli("mechdyn", "sim"), "the following arguments are required: model", "mechdyn sim --help")
    assert_input_error(cli("crosscheck"), "required", "crosscheck --help")


def test_message_keeps_what_fits():
    """one_line joins lines and cuts with an ellipsis, leaving short messages alone."""
    from mechdyn.cliutil import MAX_MESSAGE as cut, one_line
    assert cut == MAX_MESSAGE
    assert one_line("a\n  b\nc") == "a b c"
    assert one_line("x" * 1000) == "x" * (MAX_MESSAGE - 1) + "…"
    assert re.fullmatch(r"short", one_line("short"))


# -- progress bars: on a terminal only ------------------------------------------------------------

class FakeTerminal(io.StringIO):
    """A stderr that says it is a terminal of 100 columns, so that tqdm(disable=None) draws into it."""

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        raise io.UnsupportedOperation("no descriptor; tqdm falls back to its default width")


def test_golden_update_all_shows_a_bar_on_a_terminal(monkeypatch, capsys):
    """`golden --all --update` (minutes: a compile and a callgrind count per model) draws a bar; its lines stay clean."""
    from crosscheck import golden
    from crosscheck.cli import parser
    from mechdyn.cliutil import run

    names = golden.models()
    fake = golden.stored(names[0])
    assert fake is not None
    monkeypatch.setattr(golden, "update", lambda name: fake)  # the work itself is not under test
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert run(parser, ["golden", "--all", "--update"]) == 0
    bar = terminal.getvalue()
    assert "golden --update" in bar and f"/{len(names)}" in bar and "\r" in bar, bar[:500]
    out = capsys.readouterr().out
    assert out.count("\n") == len(names) and "\r" not in out and "golden --update" not in out


def test_selftest_bar_counts_the_clean_copy(monkeypatch):
    """The clean copy runs every gate before any planted bug: the bar's first step, not a silent minute."""
    from crosscheck import selftest

    seen: list[str] = []
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(selftest, "scratch_copy", lambda dest: dest.mkdir())
    monkeypatch.setattr(selftest, "apply_mutation", lambda dest, m: None)

    def gates(dest: Path, names: tuple[str, ...]) -> list[list]:
        seen.append(terminal.getvalue())  # what the bar showed while this step ran
        return [["planted", 0.0, 1.0, dest.name == "clean"]]

    monkeypatch.setattr(selftest, "run_gates", gates)
    outcomes, control = selftest.selftest()
    assert len(outcomes) == len(selftest.MUTATIONS) and all(o.caught for o in outcomes)
    assert "selftest: clean copy" in seen[0], seen[0][:300]
    total = 1 + len(selftest.MUTATIONS)
    assert f"0/{total}" in seen[0] and f"1/{total}" in seen[1] and selftest.MUTATIONS[0].name in seen[1]


def test_crosscheck_bars_on_a_terminal_and_not_in_a_pipe():
    """The trial loops draw bars on a terminal; captured (piped) output has none and no carriage return."""
    script = Path(sys.executable).parent / "crosscheck"
    argv = [str(script) if script.exists() else "crosscheck", "dense", "springpend", "--trials", "3000"]
    rc, shown = in_pty(argv)
    assert rc == 0 and "states for springpend" in shown and "generated vs dense" in shown and "\r" in shown, shown
    r = cli("crosscheck", "dense", "springpend", "--trials", "3000")
    assert r.returncode == 0 and r.stderr == "" and "\r" not in r.stdout and "springpend: PASS" in r.stdout


def test_bench_bar_covers_every_phase(monkeypatch):
    """`mechdyn bench`, `bench --sim` and `crosscheck bench` name each phase on the bar, the dense reference and
    the Python loop included."""
    from crosscheck.bench import bench_dense
    from mechdyn import bench
    from mechdyn.dynamics import load

    dyn = load("gantry")
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    bench_dense(dyn, repeats=2, seconds=0.01, dense_calls=5)
    shown = terminal.getvalue()
    for phase in ("bench gantry: fwd_dyn", "bench gantry: dense reference", "bench gantry: fwd_dyn_batch"):
        assert phase in shown, (phase, shown[-800:])
    bench.bench_sim(dyn, 1e-3, seconds=0.01, repeats=2)
    shown = terminal.getvalue()
    assert "bench gantry: stepping in C" in shown and "bench gantry: Python step loop" in shown


def _raising(e: BaseException):
    from mechdyn.cliutil import Parser

    def work(args) -> int:
        raise e
    p = Parser(prog="planted")
    p.set_defaults(func=work)
    return p


@pytest.mark.parametrize("error, line", [
    (MemoryError(), "out of memory; ask for less work (fewer trials, a larger step)"),
    (PermissionError(13, "Permission denied", "/data/model.mech"), "/data/model.mech: Permission denied"),
    (sqlite3.DatabaseError("database disk image is malformed"), "database disk image is malformed"),
    (ValueError("q has shape (3,), expected (6,)\n  (the model's nq)"), "q has shape (3,), expected (6,) (the model's nq)"),
])
def test_expected_errors_are_one_line(capsys, error, line):
    from mechdyn.cliutil import run

    assert run(lambda: _raising(error), []) == 2
    assert capsys.readouterr().err == line + "\n"


def test_a_bug_keeps_its_traceback():
    """Only expected errors become exit 2: anything else propagates, so a bug is not dressed up as bad input."""
    from mechdyn.cliutil import run

    with pytest.raises(ZeroDivisionError):
        run(lambda: _raising(ZeroDivisionError("planted bug")), [])


def test_output_paths_keep_links_and_devices(tmp_path):
    """A symlinked output replaces its target and keeps the link; a pipe or device is written into, never swapped
    for a regular file (as root, `--trace /dev/null` used to replace /dev/null itself)."""
    import threading

    from mechdyn.cliutil import atomic_write, output_file

    target, link = tmp_path / "target.c", tmp_path / "link.c"
    target.write_text("old")
    link.symlink_to(target.name)
    assert output_file(str(link)) == str(link)
    atomic_write(link, "new")
    assert link.is_symlink() and target.read_text() == "new"

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    assert output_file(str(fifo)) == str(fifo)
    atomic_write(fifo, "through the pipe")
    reader.join(timeout=10)
    assert got == ["through the pipe"] and stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_atomic_write_takes_bytes_and_a_mode(tmp_path):
    """The one atomic writer serves the goldens too: bytes, a fixed mode, no temporary left behind."""
    from mechdyn.cliutil import atomic_write

    path = tmp_path / "g.npz"
    atomic_write(path, b"\x00\x01 golden", mode=0o644)
    assert path.read_bytes() == b"\x00\x01 golden" and stat.S_IMODE(path.stat().st_mode) == 0o644
    atomic_write(path, "text again")
    assert path.read_text() == "text again" and [p.name for p in tmp_path.iterdir()] == ["g.npz"]


def test_bench_sim_that_diverges_is_one_line_and_exit_1():
    """`bench --sim` at a step that blows up said so with a SimulationDiverged traceback."""
    r = cli("mechdyn", "bench", "elbow", "--sim", "0.5")
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert "diverged at step 10 (t = 5 s)" in r.stderr


def test_plot_of_a_trace_without_the_columns_it_needs(tmp_path):
    """A trace without a joint's qd column (or without energy) was a KeyError traceback out of matplotlib code."""
    f = tmp_path / "x.csv"
    f.write_text("# model: elbow\nt,q:waist\n0,1\n")
    assert_input_error(cli("mechdyn", "plot", str(f), "-o", str(tmp_path)), "no column 'qd:waist'")
    assert not list(tmp_path.glob("*.png"))
