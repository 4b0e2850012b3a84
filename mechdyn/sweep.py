"""Parameter sweeps: one model, a grid or a Monte Carlo sample of its declared parameters, one table (docs/sweep.md).

    from mechdyn.sweep import Job, Rig, grid, run
    job = Job("quartercar", ("spring.k", "shock.c"), Rig(mechdyn.sim.rig.Input("sine", amplitude=0.01, f0=1.5)))
    table = run(job, grid({"spring.k": [2e4, 3e4], "shock.c": [1e3, 2e3]}), Path("sweep.parquet"))

Each point declares the swept numbers as parameters (docs/params.md), so the model is compiled once and every
point only sets a vector. The points run on Dask (dask.distributed): a local cluster by default, a scheduler's
address for a cluster of one's own. A worker loads the model once and keeps it for every point it is given; only
the parameter vector of a point goes out, and only its row of results comes back. The table is a Parquet file,
rewritten atomically as rows arrive (under a file lock, so two sweeps never interleave a write); a failed point
is a row with its error, and a sweep started again on the same table skips every point already there.
"""
from __future__ import annotations

import dataclasses as dc
import itertools
import math
import os
import time
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from mechdyn.core import params as P
from mechdyn.core.model import Model

STATUS_OK, STATUS_FAILED = "ok", "failed"


@dc.dataclass(frozen=True)
class Rig:
    """A shaker-rig run from the static equilibrium (mechdyn/sim/rig.py): its input, duration and step. Its row
    holds the ride figures."""
    input: object  # mechdyn.sim.rig.Input
    T: float = 10.0
    dt: float = 1e-3


@dc.dataclass(frozen=True)
class Modes:
    """The modes about the static equilibrium (mechdyn/linear): the first `count` frequencies and damping
    ratios, the coordinates `held` fixed."""
    count: int = 6
    held: tuple[str, ...] = ()


@dc.dataclass(frozen=True)
class Settle:
    """A model with a ground settled from its design pose at rest (mechdyn/sim/settle.py) for T s at dt (None:
    the step its contact's accuracy chooses). Its row holds every gate's value and verdict, the ground depth and
    the root body's height change at the end."""
    T: float = 4.0
    dt: float | None = None


@dc.dataclass(frozen=True)
class Job:
    """What every point runs: the model (a name in models/ or a path every worker can read, with its import
    options), the swept parameters' names, and the analysis."""
    spec: str
    names: tuple[str, ...]
    analysis: Rig | Modes | Settle
    floating: bool = False
    mimic: str = "refuse"


@dc.dataclass(frozen=True)
class Point:
    """One point: its number in the sweep, the swept parameters' values (in Job.names' order), and the road's
    seed (a rig's road input; 0 otherwise)."""
    index: int
    values: tuple[float, ...]
    seed: int = 0


def grid(axes: dict[str, Sequence[float]], seeds: Sequence[int] = (0,)) -> list[Point]:
    """Every combination of the axes' values (the last axis fastest), each with every seed; ValueError for an
    empty grid."""
    if not axes or any(len(v) == 0 for v in axes.values()) or not len(seeds):
        raise ValueError("the sweep's grid has no points: give every --param at least one value")
    combos = itertools.product(*(list(map(float, v)) for v in axes.values()), [int(s) for s in seeds])
    return [Point(i, tuple(c[:-1]), c[-1]) for i, c in enumerate(combos)]


def sample(dists: dict[str, tuple[str, float, float]], n: int, seed: int, road_seeds: bool = False) -> list[Point]:
    """n Monte Carlo points: each parameter drawn from ("normal", mean, sd) or ("uniform", lo, hi) by a generator
    seeded with `seed`; with `road_seeds`, each point also gets its own road seed."""
    if n < 1 or not dists:
        raise ValueError("the sweep's sample has no points: give --samples N >= 1 and at least one --param")
    rng = np.random.default_rng(seed)
    cols = []
    for name, (kind, a, b) in dists.items():
        cols.append(rng.normal(a, b, n) if kind == "normal" else rng.uniform(a, b, n))
    seeds = rng.integers(0, 2**31 - 1, n) if road_seeds else np.zeros(n, dtype=int)
    return [Point(i, tuple(float(c[i]) for c in cols), int(seeds[i])) for i in range(n)]


# -- one point --------------------------------------------------------------------------------------------------

_LOADED: dict[Job, object] = {}  # per process: each job's Dynamics (and rig layout), loaded by its first point


def _model(job: Job) -> Model:
    from mechdyn.imports import load_model

    return P.declare(load_model(job.spec, job.floating, job.mimic), job.names)


def _dynamics(job: Job):
    """The job's Dynamics, loaded (and compiled if the cache lacks it) once per process."""
    if job not in _LOADED:
        from mechdyn.dynamics import Dynamics

        _LOADED[job] = Dynamics(_model(job))
    return _LOADED[job]


def _set(dyn, job: Job, point: Point) -> None:
    x = dyn.params.values
    for name, v in zip(job.names, point.values):
        p = next(p for p in dyn.model.params if p.name == name)
        x[p.offset] = v
    dyn.params.values = x  # refuses a value out of its kind's bounds, naming it


def _rig(dyn, job: Job, point: Point) -> dict[str, float]:
    from mechdyn.sim import rig

    a: Rig = job.analysis
    inp = dc.replace(a.input, seed=point.seed) if a.input.kind == "road" else a.input
    lay = rig.layout(dyn.model)
    for name, m in rig.motions_for(lay, inp, a.T).items():
        dyn.set_motion(name, m)
    rr = rig.run(dyn, {}, a.T, a.dt, q0=rig.start_state(dyn))
    return rr.figures()


def _modes(dyn, job: Job, point: Point) -> dict[str, float]:
    from mechdyn.linear import equilibrium, held_slots, linearize, modes

    a: Modes = job.analysis
    held = held_slots(dyn.model, a.held)
    q = equilibrium(dyn, dyn.model.q0(), held=held)
    md = modes(linearize(dyn, q, np.zeros(dyn.nv), held=held))
    f, z = md.frequency[~md.rigid], md.damping[~md.rigid]
    out = {}
    for k in range(a.count):
        out[f"f{k + 1} [Hz]"] = float(f[k]) if k < len(f) else math.nan
        out[f"zeta{k + 1}"] = float(z[k]) if k < len(z) else math.nan
    return out


def _settle(dyn, job: Job, point: Point) -> dict[str, float]:
    from mechdyn.sim.settle import settle

    a: Settle = job.analysis
    s = settle(dyn, T=a.T, dt=a.dt)
    out: dict[str, float] = {}
    for g in s.gates:
        out[g.name], out[f"{g.name} passed"] = float(g.value), float(g.passed)
    out["gates passed"] = float(sum(g.passed for g in s.gates))
    out["ground depth [m]"] = float(s.run.col("ground_depth")[-1])
    root = dyn.model.bodies[0]
    if root.joint == "floating":
        z = s.run.q[:, dyn.model.qidx[0] + 6]
        out[f"{root.name} height change [m]"] = float(z[-1] - z[0])
    return out


ANALYSES = {Rig: _rig, Modes: _modes, Settle: _settle}


def evaluate(job: Job, point: Point) -> dict:
    """The point's row: its number, values and seed, "ok" and the analysis' figures, or "failed" and the error;
    the seconds it took. Runs on a worker (or in process, serially); never raises for the point's own failure."""
    start = time.perf_counter()
    row: dict = {"point": point.index, **dict(zip(job.names, point.values)), "seed": point.seed}
    try:
        dyn = _dynamics(job)
        _set(dyn, job, point)
        figures = ANALYSES[type(job.analysis)](dyn, job, point)
        row.update(status=STATUS_OK, error="", **figures)
    except Exception as e:  # a point's failure is its row, and the sweep goes on
        row.update(status=STATUS_FAILED, error=f"{type(e).__name__}: {e}".strip()[:2000])
        if not str(e):
            row["error"] = traceback.format_exc(limit=3)[-2000:]
    row["seconds"] = time.perf_counter() - start
    return row


# -- the table --------------------------------------------------------------------------------------------------

def read(table: Path):
    """The table's rows so far (an empty DataFrame when there is no table). Read from one open file: by its path,
    Arrow opens the file more than once, and a writer's rename between the opens pairs one table's footer with
    the other's pages."""
    import pandas as pd

    try:
        with open(table, "rb") as f:
            return pd.read_parquet(f)
    except FileNotFoundError:
        return pd.DataFrame()


def write(rows: list[dict], table: Path) -> None:
    """All rows, ordered by point, to the Parquet table: written to a temporary file beside it and renamed over
    it, under the table's lock, so a reader sees the old table or the new one and two writers take turns."""
    import pandas as pd
    from filelock import FileLock

    df = pd.DataFrame(rows).sort_values("point", kind="stable").reset_index(drop=True)
    with FileLock(str(table) + ".lock"):
        tmp = table.with_name(f".{table.name}.{os.getpid()}.tmp")
        df.to_parquet(tmp, index=False)
        os.replace(tmp, table)


def pending(job: Job, points: list[Point], table: Path) -> tuple[list[dict], list[Point]]:
    """The rows already in the table, and the points it lacks (matched by number; a table whose values or seed
    for a number differ from this sweep's is refused: it is another sweep's)."""
    done = read(table)
    if done.empty:
        return [], points
    rows = done.to_dict("records")
    have = {int(r["point"]): r for r in rows}
    for p in points:
        r = have.get(p.index)
        there = None if r is None else (tuple(float(r.get(n, math.nan)) for n in job.names), int(r.get("seed", 0)))
        if there is not None and there != (p.values, p.seed):
            raise ValueError(f"{table}: point {p.index} is {there} there (values of {', '.join(job.names)}, seed), "
                             f"{(p.values, p.seed)} in this sweep: the table is another sweep's; give another --out")
    return rows, [p for p in points if p.index not in have]


# -- the sweep --------------------------------------------------------------------------------------------------

WRITE_EVERY = 1.0  # s: the table is rewritten at most this often while rows arrive (and once at the end)


def run(job: Job, points: list[Point], table: Path, workers: int | None = None, scheduler: str | None = None,
        progress: bool = False):
    """Every point of the sweep not already in `table`, its row written there, on Dask: a local cluster of
    `workers` processes (default: every core), or the scheduler at `scheduler` (ConnectionError if it cannot be
    reached); `workers=0` runs them in this process, one after another. Returns the whole table as a DataFrame."""
    from tqdm import tqdm

    rows, todo = pending(job, points, table)
    with _rows(job, todo, workers, scheduler) as arriving:
        bar = tqdm(total=len(points), initial=len(points) - len(todo), desc=f"sweep {job.spec}", unit="point",
                   disable=None if progress else True)
        last = time.monotonic()
        try:
            for row in arriving:
                rows.append(row)
                bar.update(1)
                if time.monotonic() - last >= WRITE_EVERY:
                    write(rows, table)
                    last = time.monotonic()
        finally:
            if rows:
                write(rows, table)
            bar.close()
    return read(table)


@contextmanager
def _rows(job: Job, todo: list[Point], workers: int | None, scheduler: str | None) -> Iterator[Iterator[dict]]:
    """The rows of `todo` as they are finished: in this process (workers 0), or by Dask's workers, the cluster
    connected (or started) before the first is asked for and closed after the last."""
    if workers == 0:
        yield (evaluate(job, p) for p in todo)
        return
    from dask.distributed import Client, LocalCluster, as_completed

    cluster = None
    if scheduler:
        try:
            client = Client(scheduler, timeout="5s")
        except OSError as e:
            raise ConnectionError(f"cannot reach the Dask scheduler at {scheduler}: {e}") from None
    else:
        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    try:
        yield (f.result() for f in as_completed([client.submit(evaluate, job, p, pure=False) for p in todo]))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
