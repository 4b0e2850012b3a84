"""mechdyn sweep (mechdyn/sweep.py, docs/sweep.md): the same table on Dask as in one process, no finished point
lost to a killed worker or an interrupted sweep, a failed point recorded, bad input refused in one line."""
from __future__ import annotations

import dataclasses as dc
import os
import signal
import threading
import time

import pandas as pd
import pytest

from mechdyn import sweep
from mechdyn.cli import parser as mechdyn_main
from mechdyn.cliutil import run as cli_run
from mechdyn.sim.rig import Input

JOB = sweep.Job("quartercar", ("spring.k", "shock.c"), sweep.Rig(Input("sine", amplitude=0.01, f0=1.5), T=2.0))
POINTS = sweep.grid({"spring.k": [1.3e5, 1.7e5, 2.1e5], "shock.c": [2000.0, 4000.0]})


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """The tables equal in everything but the seconds each point took."""
    cols = [c for c in a.columns if c != "seconds"]
    pd.testing.assert_frame_equal(a[cols].reset_index(drop=True), b[cols].reset_index(drop=True))


def test_two_workers_give_the_serial_table(tmp_path):
    serial = sweep.run(JOB, POINTS, tmp_path / "serial.parquet", workers=0)
    assert (serial["status"] == "ok").all() and len(serial) == len(POINTS)
    _same(serial, sweep.run(JOB, POINTS, tmp_path / "dask.parquet", workers=2))


def test_a_killed_worker_loses_no_point(tmp_path, monkeypatch):
    """One of two workers killed (SIGKILL) once the first row is in the table, with points still to run: Dask
    reruns its points elsewhere (its nanny restarts it), and the table ends whole and equal to the serial one."""
    from dask.distributed import Client, LocalCluster

    monkeypatch.setattr(sweep, "WRITE_EVERY", 0.0)  # every row written as it arrives: the kill follows the first
    points = sweep.grid({"spring.k": [1.3e5, 1.5e5, 1.7e5, 1.9e5, 2.1e5], "shock.c": [2000.0, 3000.0, 4000.0]})
    serial = sweep.run(JOB, points, tmp_path / "serial.parquet", workers=0)
    table = tmp_path / "killed.parquet"
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with Client(cluster) as client:  # closed before the sweep's own: two clients in one process race their loops
            pids = list(client.run(os.getpid).values())
        killed: list[int] = []

        def kill_when_rows_arrive() -> None:
            deadline = time.monotonic() + 120
            while not table.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            os.kill(pids[0], signal.SIGKILL)
            killed.append(len(sweep.read(table)))

        t = threading.Thread(target=kill_when_rows_arrive)
        t.start()
        out = sweep.run(JOB, points, table, scheduler=cluster.scheduler_address)
        t.join()
    assert killed and killed[0] < len(points) and len(out) == len(points), killed
    _same(serial, out)


def test_planted_value_error_is_caught(tmp_path, monkeypatch):
    """The worker's spring rate set 1 % off the point's: the table differs from the true one, which the comparison
    of tables catches."""
    serial = sweep.run(JOB, POINTS, tmp_path / "true.parquet", workers=0)
    real = sweep._set
    monkeypatch.setattr(sweep, "_set", lambda dyn, job, p: real(dyn, job, dc.replace(p, values=(1.01 * p.values[0], *p.values[1:]))))
    planted = sweep.run(JOB, POINTS, tmp_path / "planted.parquet", workers=0)
    with pytest.raises(AssertionError):
        _same(serial, planted)


def test_an_interrupted_sweep_skips_what_its_table_has(tmp_path, monkeypatch):
    table = tmp_path / "t.parquet"
    sweep.run(JOB, POINTS[:2], table, workers=0)
    ran: list[int] = []
    real = sweep.evaluate
    monkeypatch.setattr(sweep, "evaluate", lambda job, p: ran.append(p.index) or real(job, p))
    out = sweep.run(JOB, POINTS, table, workers=0)
    assert sorted(ran) == [p.index for p in POINTS[2:]] and len(out) == len(POINTS)
    _same(out, sweep.run(JOB, POINTS, tmp_path / "whole.parquet", workers=0))


def test_a_failed_point_is_a_row_and_the_sweep_goes_on(tmp_path):
    """A spring too weak to hold the car up has no static equilibrium: its row says so, the others ran."""
    out = sweep.run(JOB, sweep.grid({"spring.k": [1e3, 1.7e5], "shock.c": [3000.0]}), tmp_path / "t.parquet",
                    workers=0)
    assert list(out["status"]) == ["failed", "ok"]
    assert "no static equilibrium" in out["error"][0] and out["error"][1] == ""


def test_command_writes_the_table_and_pictures(tmp_path, capsys):
    out, plot = tmp_path / "qc.parquet", tmp_path / "qc"
    assert cli_run(mechdyn_main, ["sweep", "quartercar", "--param", "spring.k=1.3e5:2.1e5:3", "--param",
                                  "shock.c=2000,4000", "--rig", "--sine", "0.01", "1.5", "--time", "2", "--serial",
                                  "--out", str(out), "--plot", str(plot)]) == 0
    text = capsys.readouterr().out
    assert "6 rows (0 failed)" in text and "rms heave acceleration" in text
    assert len(pd.read_parquet(out)) == 6
    assert (tmp_path / "qc-carpet.png").stat().st_size > 10_000 and (tmp_path / "qc-figures.png").exists()


def test_monte_carlo_modes(tmp_path, capsys):
    out = tmp_path / "mc.parquet"
    assert cli_run(mechdyn_main, ["sweep", "quartercar", "--samples", "5", "--param", "sprung.mass~normal:520:20",
                                  "--modes", "2", "--serial", "--out", str(out), "--plot", str(tmp_path / "mc")]) == 0
    t = pd.read_parquet(out)
    assert len(t) == 5 and (t["status"] == "ok").all() and t["f1 [Hz]"].between(0.5, 5).all()
    assert t["sprung.mass"].nunique() == 5 and (tmp_path / "mc-histograms.png").exists()


@pytest.mark.parametrize("args, says", [
    (["--param", "spring.k=1:2:0", "--rig", "--sine", "0.01", "1"], "a range of no points"),
    (["--param", "spring.k=", "--rig", "--sine", "0.01", "1"], "expected NAME=v1,v2"),
    (["--param", "spring.k~normal:1:2", "--rig", "--sine", "0.01", "1"], "needs --samples N"),
    (["--samples", "3", "--param", "spring.k=1,2", "--rig", "--sine", "0.01", "1"], "every --param needs a dist"),
    (["--param", "sprung.cg=0,1", "--modes"], "not a cg's or an inertia's several"),
    (["--param", "sprung.axis=1", "--modes"], "the axis cannot be a parameter"),
    (["--param", "spring.k=1e5", "--modes", "--road-seeds", "3"], "--road-seeds K needs --rig with --road"),
    (["--param", "spring.k=1e5", "--modes", "--scheduler", "tcp://127.0.0.1:9"], "cannot reach the Dask scheduler"),
    (["--param", "spring.k=1e5", "--sim"], "has no ground to settle on"),
])
def test_bad_input_is_one_line(args, says, capsys, tmp_path):
    assert cli_run(mechdyn_main, ["sweep", "quartercar", *args, "--out", str(tmp_path / "t.parquet")]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1 and "Traceback" not in err, err


def test_another_sweeps_table_is_refused(tmp_path):
    table = tmp_path / "t.parquet"
    sweep.run(JOB, POINTS[:1], table, workers=0)
    with pytest.raises(ValueError, match="another sweep's"):
        sweep.run(JOB, [sweep.Point(0, POINTS[0].values, seed=7)], table, workers=0)
    with pytest.raises(ValueError, match="another sweep's"):
        sweep.run(JOB, [sweep.Point(0, (1.0, 2.0))], table, workers=0)


def test_empty_grid_is_refused():
    with pytest.raises(ValueError, match="no points"):
        sweep.grid({"spring.k": []})



def test_settle_sweep_over_the_ground(tmp_path):
    """--sim: track_min settled on two ground stiffnesses (declared contact parameters): every gate's value and
    verdict in the row, and a stiffer ground sinks less."""
    job = sweep.Job("track_min", ("ground.kn",), sweep.Settle(T=1.2))
    out = sweep.run(job, sweep.grid({"ground.kn": [2e5, 8e5]}), tmp_path / "t.parquet", workers=0)
    assert (out["status"] == "ok").all() and {"crush", "load passed", "gates passed"} <= set(out.columns)
    assert out["ground depth [m]"][0] > out["ground depth [m]"][1] > 0


def test_a_reader_never_sees_half_a_rewrite(tmp_path):
    """A table rewritten 200 times on one thread while another reads it: every read is one whole table."""
    table = tmp_path / "t.parquet"
    sizes = [3, 40]
    sweep.write([{"point": k, "x": 1.0} for k in range(sizes[0])], table)
    stop = threading.Event()

    def rewrite() -> None:
        for i in range(200):
            sweep.write([{"point": k, "x": float(i)} for k in range(sizes[i % 2])], table)
        stop.set()

    t = threading.Thread(target=rewrite)
    t.start()
    seen = set()
    while not stop.is_set():
        seen.add(len(sweep.read(table)))
    t.join()
    assert seen <= set(sizes) and seen, seen
