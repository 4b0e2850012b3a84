"""The external engines from the command line, and planted convention bugs they must catch."""
import json
from pathlib import Path

import numpy as np
import pytest

from crosscheck.cli import parser as crosscheck_main
from mechdyn.cliutil import run
from mechdyn.export import mjcf, urdf


@pytest.mark.parametrize("name", ["satellite", "springpend", "fourbar", "quartercar"])
def test_crosscheck_pinocchio_passes(name, capsys):
    """Floating base with fext, force elements with inputs, a planar loop, and a vehicle corner."""
    assert run(crosscheck_main, ["pinocchio", name, "--trials", "40", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["passed"] is True
    gate = 1e-8 if name in ("fourbar", "quartercar") else 1e-9
    assert out["accel_vs_generated"] <= gate and out["accel_vs_dense"] <= gate
    assert [c["name"] for c in out["checks"]] == ["accel_vs_generated", "accel_vs_dense"]


@pytest.mark.parametrize("name", ["satellite", "springpend"])
def test_crosscheck_mujoco_passes(name, capsys):
    assert run(crosscheck_main, ["mujoco", name, "--trials", "40", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["passed"] is True and out["accel_vs_generated"] <= 1e-9


def test_crosscheck_mujoco_refuses_loop_models(capsys):
    assert run(crosscheck_main, ["mujoco", "fourbar"]) == 2
    err = capsys.readouterr().err
    assert "fourbar has loop closures" in err and "crosscheck pinocchio" in err and err.count("\n") == 1


def test_planted_quaternion_order_swap_fails_the_pinocchio_gate(monkeypatch, capsys):
    """The exporter's state map writing Pinocchio's quaternion as [w x y z] instead of [x y z w]."""
    monkeypatch.setattr(urdf, "PIN_QUAT", (0, 1, 2, 3))
    assert run(crosscheck_main, ["pinocchio", "satellite", "--trials", "20", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["accel_vs_generated"] > 1e-3 and out["accel_vs_dense"] > 1e-3
    assert "quaternion order" in out["checks"][0]["note"]


def test_planted_quaternion_order_swap_fails_the_mujoco_gate(monkeypatch, capsys):
    monkeypatch.setattr(mjcf, "MJ_QUAT", (1, 2, 3, 0))
    assert run(crosscheck_main, ["mujoco", "satellite", "--trials", "20", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["accel_vs_generated"] > 1e-3


def test_planted_fext_in_base_coordinates_fails_the_pinocchio_gate(monkeypatch, capsys):
    """Handing Pinocchio the base-coordinate fext row as if it were already in the joint's local frame."""
    import pinocchio as pin

    from crosscheck import pinocchio as cpin

    def unmapped(pm, fext):
        return [pin.Force.Zero()] + [pin.Force(np.asarray(fext[i][3:], dtype=float), np.asarray(fext[i][:3], dtype=float))
                                     if b.fext else pin.Force.Zero() for i, b in enumerate(pm.model.bodies)]

    monkeypatch.setattr(cpin, "local_fext", unmapped)
    assert run(crosscheck_main, ["pinocchio", "satellite", "--trials", "20", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["accel_vs_generated"] > 1e-3


# One xdist group for the tests that compile Pinocchio's timing program (two minutes of g++ from a cold cache): on
# one worker the first compiles it and the rest find it cached, where on two the second would wait on the build lock
# with its core idle.
PINOCCHIO_TIMING = pytest.mark.xdist_group("pinocchio_timing")


@PINOCCHIO_TIMING
def test_bench_peers_times_all_three_on_the_same_pool():
    """The side-by-side benchmark compiles its three timing programs and reports every figure."""
    import shutil

    import mechdyn
    from crosscheck.bench import TABLE_HEADER, bench_peers

    res = bench_peers(mechdyn.load("threelink"), repeats=1, seconds=0.01)
    for x in (res.ns_per_call, res.pinocchio_ns_per_call, res.mujoco_ns_per_call):
        assert 0 < x < 1e6
    if shutil.which("valgrind"):
        assert 100 < res.instructions < res.pinocchio_instructions and 100 < res.mujoco_instructions
    assert res.table_rows()[0].count("|") == TABLE_HEADER.splitlines()[0].count("|")
    assert res.as_dict()["pinocchio_ratio"] == res.pinocchio_ns_per_call / res.ns_per_call


@PINOCCHIO_TIMING
def test_bench_peers_closes_a_loop_models_loops_in_pinocchio_too(tmp_path, monkeypatch):
    """A loop model's Pinocchio figures include a closed-loop run (every loop type, and fext here), checked
    against the cross-check's KKT solve; a planted expectation of the spanning tree's ABA fails it."""
    from crosscheck.pinocchio import timing as pint
    from crosscheck.bench import CLOSED_TABLE_HEADER, bench_peers
    from mechdyn.core.parse import load_model
    from mechdyn.dynamics import Dynamics

    path = tmp_path / "loopzoo_fext.mech"
    zoo = (Path(__file__).parents[1] / "data" / "loopzoo.mech").read_text()
    path.write_text(zoo.replace("body door\n", "body door\n  fext 1\n", 1))
    dyn = Dynamics(load_model(path))
    assert {lp.joint for lp in dyn.model.loops} == set(pint.LOOPS) and any(b.fext for b in dyn.model.bodies)
    res = bench_peers(dyn, repeats=1, seconds=0.005, count=False)
    assert res.closed_rows == dyn.model.nc and 0 < res.pinocchio_closed_ns_per_call < 1e6
    assert res.closed_table_row().count("|") == CLOSED_TABLE_HEADER.splitlines()[0].count("|")
    expected = pint.expected
    monkeypatch.setattr(pint, "expected", lambda pm, pool, closed: expected(pm, pool, False))
    with pytest.raises(RuntimeError, match=r"Pinocchio \(loops closed\)'s timing program .* is not computing"):
        bench_peers(dyn, repeats=1, seconds=0.005, count=False)


@PINOCCHIO_TIMING
def test_bench_peers_on_an_imported_urdf_checks_the_engines_agree():
    """A real robot (example-robot-data's UR5, one row of `crosscheck bench --peers --robots`): each timing
    program's checksum is verified, and the peers' qdd agree with the generated code's on the pool; on a fixed
    arm the three engines share the coordinates, so the three checksums agree too."""
    from crosscheck.bench import ROBOTS, ROBOTS_HEADER, robot_row, robots_dir
    from mechdyn.dynamics import Dynamics
    from mechdyn.imports import import_model

    try:
        root = robots_dir()
    except FileNotFoundError:
        pytest.skip("the PyPI package example-robot-data is not installed")
    label, path, floating, mimic = ROBOTS[1]
    from crosscheck.bench import bench_peers

    res = bench_peers(Dynamics(import_model(root / path, floating=floating, mimic=mimic)), repeats=1,
                      seconds=0.005, count=False)
    assert res.pinocchio_agreement < 1e-9 and res.mujoco_agreement < 1e-6
    gen, pin, mj = res.checksums
    assert abs(pin - gen) < 1e-9 * abs(gen) and abs(mj - gen) < 1e-6 * abs(gen)
    assert robot_row(label, res).count("|") == ROBOTS_HEADER.splitlines()[0].count("|")


def test_bench_robots_takes_no_model(capsys):
    from crosscheck.cli import main

    with pytest.raises(SystemExit) as e:
        main(["bench", "--peers", "--robots", "elbow"])
    assert e.value.code == 2 and "no model" in capsys.readouterr().err
