"""The gate history: a distributed run records every gate once, from the controller alone.

Each session here is a real pytest in a subprocess, over a small test file that
uses the real `gate` fixture, writing to a history under tmp_path (never the
user's store).
"""
import os
import re
import socket
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from crosscheck.report import history_path

from regression.history import SCHEMA_VERSION, GateRow, Run, SkipRow, commit_id, model_of, write_run

REPO = Path(__file__).resolve().parents[2]

CONFTEST = '''
import os
import sqlite3
from pathlib import Path

from regression.conftest import gate  # noqa: F401  the suite's own fixture (the plugin comes with -p)


def pytest_configure(config):
    """In a worker, any sqlite3.connect leaves a marker: workers must never open the history."""
    if hasattr(config, "workerinput"):
        real, marker = sqlite3.connect, Path(os.environ["HISTORY_WORKER_MARKER"])

        def connect(*args, **kwargs):
            marker.write_text(f"{config.workerinput['workerid']} opened {args[:1]}")
            return real(*args, **kwargs)

        sqlite3.connect = connect
'''

TESTS = '''
import pytest

from crosscheck.checks import Check


@pytest.mark.parametrize("model", ["a", "b", "c", "d", "e"])
def test_one_gate(model, gate):
    gate(model, Check("gen_vs_dense", 1e-12, 1e-9, "synthetic"))


def test_two_gates(gate):
    gate("f", Check("gen_vs_dense", 0.5, 1.0, "synthetic"))
    gate("f", Check("closure_drift", 0.25, 1.0, "synthetic"))


def test_failing_gate(gate):
    gate("g", Check("gen_vs_dense", 2.0, 1.0, "synthetic, over its gate"))


def test_no_gate():
    pass


@pytest.mark.parametrize("model", ["hmmwv", "nomodel"])
def test_skipped_in_call(model, gate):
    pytest.skip(f"no peer for {model}")


def test_named_skip(gate):
    gate.skip("f", ["sim_ratio", "hht_ratio"], "no chrono here")
'''
# a module-level skipif mark: its tests skip in the setup phase
SETUP_SKIPPED = '''
import pytest

pytestmark = pytest.mark.skipif(True, reason="pychrono is not installed")


@pytest.mark.parametrize("model", ["threelink"])
def test_chrono(model, gate):
    pass
'''
GATES, FAILED, NODEIDS = 8, 1, 7  # rows per run; failed rows; tests with a gate (test_two_gates has two)
SKIPS = [  # nodeid, model, gate, reason
    ("test_setup_skipped.py::test_chrono[threelink]", "threelink", None, "pychrono is not installed"),
    ("test_synthetic.py::test_named_skip", "f", "hht_ratio", "no chrono here"),
    ("test_synthetic.py::test_named_skip", "f", "sim_ratio", "no chrono here"),
    ("test_synthetic.py::test_skipped_in_call[hmmwv]", "hmmwv", None, "no peer for hmmwv"),
    ("test_synthetic.py::test_skipped_in_call[nomodel]", None, None, "no peer for nomodel"),
]


def session(where: Path, *args: str) -> subprocess.CompletedProcess:
    """pytest in a subprocess, in `where`, with the repository importable and no outer pytest state.

    The synthetic project loads the history as a plugin module (`-p regression.history`), as
    any project could; the suite itself registers it in regression/conftest.py."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MECHDYN_HISTORY"))}
    env |= {"PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])),
            "HISTORY_WORKER_MARKER": str(where / "worker-opened-db")}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=where, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture
def project(tmp_path) -> Path:
    (tmp_path / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (tmp_path / "test_synthetic.py").write_text(textwrap.dedent(TESTS))
    (tmp_path / "test_setup_skipped.py").write_text(textwrap.dedent(SETUP_SKIPPED))
    return tmp_path


def rows(db: Path, sql: str, *params) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def heads() -> set[str]:
    """HEAD as git reports it now (empty outside git)."""
    r = subprocess.run(["git", "--no-optional-locks", "-C", str(REPO), "rev-parse", "HEAD"],
                       capture_output=True, text=True, check=False)
    return {r.stdout.strip()} if r.returncode == 0 else set()


def check_run(db: Path, run_id: str, out: str) -> None:
    """One run's rows: every gate once with its unit, its verdict, the skips (of the setup phase too, gates
    named by gate.skip, models read from the parameters), and the run's commit, machine and argv."""
    gates = rows(db, "SELECT model, gate, metric, threshold, passed, nodeid, unit FROM gates WHERE run_id = ?", run_id)
    assert len(gates) == GATES, out
    assert len({g[5] for g in gates}) == NODEIDS
    assert sorted(g[:5] for g in gates if not g[4]) == [("g", "gen_vs_dense", 2.0, 1.0, 0)]
    assert ("f", "closure_drift", 0.25, 1.0, 1, "test_synthetic.py::test_two_gates", "m or rad") in gates
    assert {g[6] for g in gates if g[1] == "gen_vs_dense"} == {"scaled error"}
    assert rows(db, "SELECT nodeid, model, gate, reason FROM skips WHERE run_id = ? ORDER BY nodeid, gate",
                run_id) == SKIPS
    started, commit, machine, argv = rows(db, "SELECT started, commit_id, machine, argv FROM runs WHERE run_id = ?",
                                          run_id)[0]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", started)
    assert re.fullmatch(r"[0-9a-f]{40}(\+dirty)?|unknown", commit)
    assert commit.split("+")[0] in heads() or (commit == "unknown" and not heads())
    assert machine.startswith(socket.gethostname() + ": ") and re.search(r", \d+ cores$", machine), machine
    assert "--history" in argv


def test_distributed_runs_append_from_the_controller(project):
    """Two runs, over three execnet gateways and then -n 2: each gate once per run, from several workers,
    in WAL mode, and no worker ever called sqlite3.connect (the conftest leaves a marker if one does)."""
    db = project / "h.sqlite"
    marker = project / "worker-opened-db"
    for n, dist in enumerate([("-p", "xdist", "--tx", "3*popen", "--dist", "load"), ("-n", "2")], 1):
        r = session(project, "-p", "regression.history", *dist, "-v", f"--history={db}")
        assert r.returncode == 1, r.stdout + r.stderr  # the planted failing gate, nothing else
        assert "1 failed, 7 passed, 4 skipped" in r.stdout, r.stdout
        assert len(set(re.findall(r"\[(gw\d)\]", r.stdout))) >= 2, r.stdout  # rows really came from workers
        assert f"gate history: {GATES} gates ({FAILED} failed), 4 skipped tests" in r.stdout
        assert not marker.exists(), marker.read_text()
        runs = rows(db, "SELECT run_id FROM runs ORDER BY started, rowid")
        assert len(runs) == n
        check_run(db, runs[-1][0], r.stdout)
    assert rows(db, "SELECT count(*), sum(passed) FROM gates") == [(2 * GATES, 2 * (GATES - FAILED))]
    assert rows(db, "PRAGMA journal_mode") == [("wal",)]


def test_suite_conftest_records_real_gates(tmp_path):
    """The real registration (regression/conftest.py) on real gates, --history given as two words."""
    db = tmp_path / "h.sqlite"
    r = session(REPO, "regression/test_sim_gates.py", "-k", "reversibility and (springpend or threelink)",
                "--history", str(db))
    assert r.returncode == 0, r.stdout + r.stderr
    got = rows(db, "SELECT model, gate, passed, unit FROM gates ORDER BY model")
    assert got == [("springpend", "reversibility", 1, "m or rad"), ("threelink", "reversibility", 1, "m or rad")]


def test_history_path(monkeypatch, tmp_path):
    monkeypatch.delenv("MECHDYN_HISTORY", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert history_path() == tmp_path / "xdg" / "mechdyn" / "history.sqlite"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/ignored")  # the XDG spec: relative paths are invalid
    assert history_path() == Path.home() / ".local" / "share" / "mechdyn" / "history.sqlite"
    monkeypatch.setenv("MECHDYN_HISTORY", str(tmp_path / "env.sqlite"))
    assert history_path() == tmp_path / "env.sqlite"
    assert history_path(tmp_path / "opt.sqlite") == tmp_path / "opt.sqlite"


def test_commit_id(tmp_path):
    assert commit_id(tmp_path) == "unknown"
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    try:
        subprocess.run([*git, "init", "-q"], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("git is not available")
    (tmp_path / "f").write_text("1")
    subprocess.run([*git, "add", "f"], check=True, capture_output=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], check=True, capture_output=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    (tmp_path / "untracked").write_text("")
    assert commit_id(tmp_path) == head  # untracked files do not make the tree dirty
    (tmp_path / "f").write_text("2")
    assert commit_id(tmp_path) == head + "+dirty"


def test_write_run_is_one_transaction(tmp_path):
    """A row that cannot be written leaves no half-written run behind; a NaN metric is stored as NULL."""
    db = tmp_path / "h.sqlite"
    run = Run("r1", "2026-01-01T00:00:00+00:00", "unknown", "m", "")
    write_run(db, run, [GateRow("a", "g", float("nan"), 1.0, False, "t")])
    assert rows(db, "SELECT metric, passed FROM gates") == [(None, 0)]
    bad = [GateRow("b", "g", 1.0, 1.0, True, "t"), GateRow(None, "g", 1.0, 1.0, True, "t")]  # model NOT NULL
    with pytest.raises(sqlite3.IntegrityError):
        write_run(db, Run("r2", "2026-01-02T00:00:00+00:00", "unknown", "m", ""), bad)
    assert rows(db, "SELECT count(*) FROM runs") == [(1,)]
    assert rows(db, "SELECT count(*) FROM gates") == [(1,)]


UNDEFINED = '''
from crosscheck.checks import Check


def test_undefined(gate):
    gate("a", Check("no_such_gate", 0.0, 1.0, "a gate nobody documented"))


def test_undefined_skip(gate):
    gate.skip("a", "nor_this_one", "skipped")


def test_defined(gate):
    gate("a", Check("rank_K", 0.0, 0.0, "documented"))
'''


def test_undefined_gate_fails(project):
    """A gate (or gate.skip) with no definition in crosscheck/gates.py fails its test and records nothing."""
    (project / "test_synthetic.py").write_text(textwrap.dedent(UNDEFINED))
    (project / "test_setup_skipped.py").unlink()
    db = project / "h.sqlite"
    r = session(project, "-p", "regression.history", f"--history={db}")
    assert r.returncode == 1 and "2 failed, 1 passed" in r.stdout, r.stdout + r.stderr
    for name in ("no_such_gate", "nor_this_one"):
        assert f"gate {name!r} has no definition in crosscheck/gates.py (GATES)" in r.stdout, r.stdout
    assert rows(db, "SELECT model, gate FROM gates") == [("a", "rank_K")]


V1 = """
CREATE TABLE runs (run_id TEXT PRIMARY KEY, started TEXT NOT NULL, commit_id TEXT NOT NULL, machine TEXT NOT NULL,
                   argv TEXT NOT NULL);
CREATE TABLE gates (run_id TEXT NOT NULL REFERENCES runs(run_id), model TEXT NOT NULL, gate TEXT NOT NULL, metric REAL,
                    threshold REAL NOT NULL, passed INTEGER NOT NULL, nodeid TEXT NOT NULL);
CREATE INDEX gates_by_gate ON gates(model, gate);
CREATE INDEX gates_by_run ON gates(run_id);
INSERT INTO runs VALUES ('old', '2026-01-01T00:00:00+00:00', 'abcdef0', 'm', '');
INSERT INTO gates VALUES ('old', 'a', 'closure_drift', 1e-8, 1e-5, 1, 't');
PRAGMA user_version = 1;
"""


def test_schema_1_is_migrated(tmp_path):
    """A version-1 history gains gates.unit (NULL in its old rows) and skips in place and keeps its rows (the
    report reads the old rows' units from crosscheck/gates.py); a newer schema is refused, untouched."""
    db = tmp_path / "h.sqlite"
    conn = sqlite3.connect(db)
    conn.executescript(V1)
    conn.close()
    write_run(db, Run("new", "2026-01-02T00:00:00+00:00", "unknown", "m", ""),
              [GateRow("a", "closure_drift", 2e-8, 1e-5, True, "t", "m or rad")], [SkipRow("t2", "a", None, "why")])
    assert rows(db, "PRAGMA user_version") == [(SCHEMA_VERSION,)] == [(2,)]
    assert rows(db, "SELECT run_id, metric, unit FROM gates ORDER BY rowid") == [("old", 1e-8, None),
                                                                               ("new", 2e-8, "m or rad")]
    assert rows(db, "SELECT run_id, nodeid, model, gate, reason FROM skips") == [("new", "t2", "a", None, "why")]
    write_run(db, Run("again", "2026-01-03T00:00:00+00:00", "unknown", "m", ""), [])  # migrated once only
    assert len(rows(db, "SELECT * FROM runs")) == 3

    newer = tmp_path / "newer.sqlite"
    conn = sqlite3.connect(newer)
    conn.execute("PRAGMA user_version = 3")
    conn.close()
    with pytest.raises(sqlite3.DatabaseError, match="schema 3, newer than this mechdyn's 2"):
        write_run(newer, Run("r", "2026-01-01T00:00:00+00:00", "unknown", "m", ""), [])
    assert rows(newer, "SELECT name FROM sqlite_master") == []


def test_model_of():
    assert model_of("regression/test_sim_gates.py::test_order[threelink-euler]") == "threelink"
    assert model_of("regression/test_peer_gates.py::test_mujoco_vs_generated[hmmwv_pitman]") == "hmmwv_pitman"
    assert model_of("regression/test_hold_gates.py::test_hold[reg-track_min]") == "track_min"
    assert model_of("regression/test_x.py::test_y[nomodel]") is None
    assert model_of("regression/test_x.py::test_y") is None
