"""Gate history: every regression run's gate metrics, kept in SQLite by the controlling pytest process.

The `gate` fixture (conftest.py) attaches each gate's result to its test report
as user_properties ("gate", {model, gate, metric, threshold, passed, unit}), and
`gate.skip` the gates a skipped test names ("skip", {model, gate}). Under
pytest-xdist the reports, user_properties included, travel from the workers to
the controller (over execnet, so this works for `--tx ssh=...` gateways on other
hosts as well); the controller collects them in `pytest_runtest_logreport` (with every skip, of
the setup phase too: a module's skipif mark skips there) and writes the whole run
in one transaction at `pytest_sessionfinish`. Workers never open the database.

Where: `--history=PATH`, else `$MECHDYN_HISTORY`, else
`$XDG_DATA_HOME/mechdyn/history.sqlite` (default `~/.local/share/mechdyn/`);
see `crosscheck.report.history_path`. A run that records no gate (e.g. `pytest
tests/`) writes nothing. `crosscheck report` draws the history as an HTML page.

Schema (WAL mode, busy timeout 30 s; `PRAGMA user_version` = SCHEMA_VERSION):

    runs(run_id, started, commit_id, machine, argv)
    gates(run_id, model, gate, metric, threshold, passed, nodeid, unit)
    skips(run_id, nodeid, model, gate, reason)

`commit_id` rather than `commit` because COMMIT is an SQL keyword and would need
quoting in every query. Version 1 had neither `gates.unit` nor `skips`; `connect`
migrates such a file in place (ALTER TABLE, in one transaction), and its old
rows keep a NULL unit, for which the report reads crosscheck/gates.py.
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
SCHEMA_VERSION = 2
BUSY_TIMEOUT_S = 30.0
PLUGIN_NAME = "mechdyn-gate-history"
MODELS = frozenset(p.stem for p in (REPO / "models").glob("*.mech"))

# one statement each: they run inside connect's transaction, which executescript would commit
SCHEMA = [
    """CREATE TABLE IF NOT EXISTS runs (
    run_id    TEXT PRIMARY KEY,  -- uuid4, hex
    started   TEXT NOT NULL,     -- when the session started, UTC ISO 8601
    commit_id TEXT NOT NULL,     -- git rev-parse HEAD, '+dirty' if tracked files changed; 'unknown' outside git
    machine   TEXT NOT NULL,     -- 'hostname: CPU model, N cores'
    argv      TEXT NOT NULL      -- the pytest arguments, shell-quoted
)""",
    """CREATE TABLE IF NOT EXISTS gates (
    run_id    TEXT NOT NULL REFERENCES runs(run_id),
    model     TEXT NOT NULL,
    gate      TEXT NOT NULL,     -- the Check's name, e.g. gen_vs_dense
    metric    REAL,              -- the measured figure (NULL if it was NaN)
    threshold REAL NOT NULL,
    passed    INTEGER NOT NULL,  -- 1 pass, 0 fail (metric <= threshold)
    nodeid    TEXT NOT NULL,     -- the pytest test that ran the gate
    unit      TEXT               -- the metric's unit (crosscheck/gates.py); NULL in rows of schema 1
)""",
    """CREATE TABLE IF NOT EXISTS skips (
    run_id    TEXT NOT NULL REFERENCES runs(run_id),
    nodeid    TEXT NOT NULL,     -- the skipped pytest test
    model     TEXT,              -- named by gate.skip, else read from the test's parameters; NULL if neither
    gate      TEXT,              -- named by gate.skip; NULL: the report takes the gates this test recorded before
    reason    TEXT NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS gates_by_gate ON gates(model, gate)",
    "CREATE INDEX IF NOT EXISTS gates_by_run ON gates(run_id)",
    "CREATE INDEX IF NOT EXISTS skips_by_run ON skips(run_id)",
]
# schema 1 → 2, in place: old rows get a NULL unit, and no skips
MIGRATE_1 = ["ALTER TABLE gates ADD COLUMN unit TEXT"]


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
    unit: str | None = None


@dataclass(frozen=True)
class SkipRow:
    nodeid: str
    model: str | None
    gate: str | None
    reason: str


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
    """Open (creating if need be) the history at path: WAL mode, a busy timeout, the schema in place and at
    SCHEMA_VERSION (a version-1 file migrated in place); sqlite3.DatabaseError for a newer schema."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)  # transactions are explicit
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("BEGIN IMMEDIATE")  # two sessions migrating at once: the second sees the first's result
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise sqlite3.DatabaseError(f"{path} has schema {version}, newer than this mechdyn's "
                                            f"{SCHEMA_VERSION}: record with the newer mechdyn")
            for statement in (MIGRATE_1 if version == 1 else []) + SCHEMA:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    except BaseException:
        conn.close()
        raise
    return conn


def write_run(path: Path, run: Run, gates: Iterable[GateRow], skips: Iterable[SkipRow] = ()) -> None:
    """Append one run, its gate rows and its skips to the history at path, in one transaction."""
    rows = [(run.run_id, g.model, g.gate, float(g.metric), float(g.threshold), int(bool(g.passed)), g.nodeid, g.unit)
            for g in gates]
    skipped = [(run.run_id, s.nodeid, s.model, s.gate, s.reason) for s in skips]
    conn = connect(path)
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("INSERT INTO runs (run_id, started, commit_id, machine, argv) VALUES (?, ?, ?, ?, ?)",
                         (run.run_id, run.started, run.commit_id, run.machine, run.argv))
            conn.executemany("INSERT INTO gates (run_id, model, gate, metric, threshold, passed, nodeid, unit) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
            conn.executemany("INSERT INTO skips (run_id, nodeid, model, gate, reason) VALUES (?, ?, ?, ?, ?)",
                             skipped)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    finally:
        conn.close()


def model_of(nodeid: str) -> str | None:
    """The model a test ran on, read from its parameter id (test_x[hmmwv-euler] → hmmwv): the whole id or its
    first '-'-separated part that names a model in models/; None if none does."""
    if not nodeid.endswith("]") or "[" not in nodeid:
        return None
    params = nodeid[nodeid.index("[") + 1:-1]
    return next((p for p in (params, *params.split("-")) if p in MODELS), None)


def skip_reason(report) -> str:
    """A skipped test report's reason, without pytest's 'Skipped: ' prefix."""
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr or "")
    return text.removeprefix("Skipped: ")


class Recorder:
    """The controller's side: gather gate rows and skips from the reports, write them when the session ends."""

    def __init__(self, config) -> None:
        self.path = history_path(config.getoption("history", None))
        self.run = Run.now(config.invocation_params.args)
        self.rows: list[GateRow] = []
        self.skips: list[SkipRow] = []
        self.outcome: str | None = None

    def pytest_runtest_logreport(self, report) -> None:
        if report.skipped and report.when in ("setup", "call") and not hasattr(report, "wasxfail"):
            self.skips += self.skipped(report)
        if report.when != "call":  # setup and teardown reports carry the same user_properties
            return
        for name, value in report.user_properties:
            if name == "gate":
                self.rows.append(GateRow(str(value["model"]), str(value["gate"]), float(value["metric"]),
                                         float(value["threshold"]), bool(value["passed"]), report.nodeid,
                                         value.get("unit")))

    @staticmethod
    def skipped(report) -> list[SkipRow]:
        """A skipped test's rows: one per gate that gate.skip named, else one with the model its parameters name."""
        reason = skip_reason(report)
        named = [v for name, v in report.user_properties if name == "skip"] if report.when == "call" else []
        if named:
            return [SkipRow(report.nodeid, str(v["model"]), str(v["gate"]), reason) for v in named]
        return [SkipRow(report.nodeid, model_of(report.nodeid), None, reason)]

    def pytest_sessionfinish(self, session) -> None:
        if not self.rows:
            return
        failed = sum(not r.passed for r in self.rows)
        try:
            write_run(self.path, self.run, self.rows, self.skips)
        except (sqlite3.Error, OSError) as e:  # the gates' verdicts stand; only the record is lost
            self.outcome = f"gate history: NOT recorded to {self.path}: {e}"
            return
        commit = self.run.commit_id[:12] + ("+dirty" if self.run.commit_id.endswith("+dirty") else "")
        skipped = len({s.nodeid for s in self.skips})
        self.outcome = (f"gate history: {len(self.rows)} gates ({failed} failed), {skipped} skipped tests at {commit} "
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
