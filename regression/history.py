"""Gate history: every regression run's gate metrics, kept in SQLite by the controlling pytest process.

The `gate` fixture (conftest.py) attaches each gate's result to its test report
as user_properties ("gate", {model, gate, metric, threshold, passed}). Under
pytest-xdist the reports, user_properties included, travel from the workers to
the controller (over execnet, so this works for `--tx ssh=...` gateways on other
hosts as well); the controller collects them in `pytest_runtest_logreport` and
writes the whole run in one transaction at `pytest_sessionfinish`. Workers never
open the database.

Where: `--history=PATH`, else `$MECHDYN_HISTORY`, else
`$XDG_DATA_HOME/mechdyn/history.sqlite` (default `~/.local/share/mechdyn/`);
see `crosscheck.report.history_path`. A run that records no gate (e.g. `pytest
tests/`) writes nothing. `crosscheck report` draws the history as an HTML page.

Schema (WAL mode, busy timeout 30 s; `PRAGMA user_version` = SCHEMA_VERSION):

    runs(run_id, started, commit_id, machine, argv)
    gates(run_id, model, gate, metric, threshold, passed, nodeid)

`commit_id` rather than `commit` because COMMIT is an SQL keyword and would need
quoting in every query.
"""
from __future__ import annotations

import shlex
import socket
import sqlite3
import subprocess
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from crosscheck.report import history_path

REPO = Path(__file__).resolve().parents[1]
SCHEMA_VERSION = 1
BUSY_TIMEOUT_S = 30.0
PLUGIN_NAME = "mechdyn-gate-history"

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id    TEXT PRIMARY KEY,  -- uuid4, hex
    started   TEXT NOT NULL,     -- when the session started, UTC ISO 8601
    commit_id TEXT NOT NULL,     -- git rev-parse HEAD, '+dirty' if tracked files changed; 'unknown' outside git
    machine   TEXT NOT NULL,     -- 'hostname: CPU model, N cores'
    argv      TEXT NOT NULL      -- the pytest arguments, shell-quoted
);
CREATE TABLE IF NOT EXISTS gates (
    run_id    TEXT NOT NULL REFERENCES runs(run_id),
    model     TEXT NOT NULL,
    gate      TEXT NOT NULL,     -- the Check's name, e.g. gen_vs_dense
    metric    REAL,              -- the measured figure (NULL if it was NaN)
    threshold REAL NOT NULL,
    passed    INTEGER NOT NULL,  -- 1 pass, 0 fail (metric <= threshold)
    nodeid    TEXT NOT NULL      -- the pytest test that ran the gate
);
CREATE INDEX IF NOT EXISTS gates_by_gate ON gates(model, gate);
CREATE INDEX IF NOT EXISTS gates_by_run ON gates(run_id);
"""


@dataclass(frozen=True)
class Run:
    run_id: str
    started: str
    commit_id: str
    machine: str
    argv: str

    @classmethod
    def now(cls, argv: Iterable[str] = ()) -> Run:
        """This process's run: a fresh id, the UTC start time, the repository's commit and this machine."""
        return cls(uuid.uuid4().hex, datetime.now(timezone.utc).isoformat(timespec="seconds"),
                   commit_id(REPO), machine(), shlex.join(argv))


@dataclass(frozen=True)
class GateRow:
    model: str
    gate: str
    metric: float
    threshold: float
    passed: bool
    nodeid: str


def commit_id(repo: Path) -> str:
    """`git rev-parse HEAD` of repo, with '+dirty' when tracked files differ from it; 'unknown' outside git.

    Untracked files do not count (as with `git describe --dirty`), and no index
    refresh is written (`--no-optional-locks`), so a test run never touches .git.
    """
    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "--no-optional-locks", "-C", str(repo), *args],
                              capture_output=True, text=True, timeout=30, check=False)

    try:
        head = git("rev-parse", "--verify", "HEAD")
        if head.returncode != 0:
            return "unknown"
        status = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    dirty = status.returncode != 0 or bool(status.stdout.strip())
    return head.stdout.strip() + ("+dirty" if dirty else "")


def machine() -> str:
    """'hostname: CPU model, N cores' (the CPU part as in `mechdyn bench`)."""
    from mechdyn.bench import machine as cpu

    return f"{socket.gethostname()}: {cpu()}"


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating if need be) the history at path: WAL mode, a busy timeout, the schema in place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)  # transactions are explicit
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.executescript(SCHEMA)
        if conn.execute("PRAGMA user_version").fetchone()[0] == 0:
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException:
        conn.close()
        raise
    return conn


def write_run(path: Path, run: Run, gates: Iterable[GateRow]) -> None:
    """Append one run and its gate rows to the history at path, in one transaction."""
    rows = [(run.run_id, g.model, g.gate, float(g.metric), float(g.threshold), int(bool(g.passed)), g.nodeid)
            for g in gates]
    conn = connect(path)
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("INSERT INTO runs (run_id, started, commit_id, machine, argv) VALUES (?, ?, ?, ?, ?)",
                         (run.run_id, run.started, run.commit_id, run.machine, run.argv))
            conn.executemany("INSERT INTO gates (run_id, model, gate, metric, threshold, passed, nodeid) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    finally:
        conn.close()


class Recorder:
    """The controller's side: gather gate rows from the reports, write them when the session ends."""

    def __init__(self, config) -> None:
        self.path = history_path(config.getoption("history", None))
        self.run = Run.now(config.invocation_params.args)
        self.rows: list[GateRow] = []
        self.outcome: str | None = None

    def pytest_runtest_logreport(self, report) -> None:
        if report.when != "call":  # setup and teardown reports carry the same user_properties
            return
        for name, value in report.user_properties:
            if name == "gate":
                self.rows.append(GateRow(str(value["model"]), str(value["gate"]), float(value["metric"]),
                                         float(value["threshold"]), bool(value["passed"]), report.nodeid))

    def pytest_sessionfinish(self, session) -> None:
        if not self.rows:
            return
        failed = sum(not r.passed for r in self.rows)
        try:
            write_run(self.path, self.run, self.rows)
        except (sqlite3.Error, OSError) as e:  # the gates' verdicts stand; only the record is lost
            self.outcome = f"gate history: NOT recorded to {self.path}: {e}"
            return
        commit = self.run.commit_id[:12] + ("+dirty" if self.run.commit_id.endswith("+dirty") else "")
        self.outcome = (f"gate history: {len(self.rows)} gates ({failed} failed) at {commit} "
                        f"recorded to {self.path}; 'crosscheck report' draws it")

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.outcome:
            terminalreporter.write_line(self.outcome, yellow="NOT" in self.outcome)


def pytest_addoption(parser) -> None:
    parser.addoption("--history", metavar="PATH", default=None,
                     help="SQLite file the gate history is appended to (default: $MECHDYN_HISTORY, else "
                     "$XDG_DATA_HOME/mechdyn/history.sqlite, else ~/.local/share/mechdyn/history.sqlite)")


def pytest_configure(config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: its reports carry the metrics to the controller
        return
    if not config.pluginmanager.has_plugin(PLUGIN_NAME):
        config.pluginmanager.register(Recorder(config), PLUGIN_NAME)
