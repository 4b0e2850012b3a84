"""The command-line contract: output, --json keys, and exit codes 0 / 1 / 2 with no traceback on bad input."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from crosscheck.cli import parser as crosscheck_main
from mechdyn.cli import parser as mechdyn_main
from mechdyn.cliutil import run


def cli(tool: str, *args: str) -> subprocess.CompletedProcess:
    """Run a console script as a user would: the one installed beside this interpreter."""
    script = Path(sys.executable).parent / tool
    return subprocess.run([str(script) if script.exists() else tool, *args], capture_output=True, text=True, check=False)


def test_misspelt_key_exits_2_with_file_line(tmp_path):
    bad = tmp_path / "bad.mech"
    bad.write_text("body a\n  parent base\n  joint revolute z\n  mas 1\n  inertia 1 1 1 0 0 0\nend\n")
    for tool in (("crosscheck", "dense"), ("mechdyn", "info"), ("mechdyn", "gen"), ("mechdyn", "bench")):
        r = cli(*tool, str(bad))
        assert r.returncode == 2, (tool, r.stderr)
        assert r.stderr.startswith(f"{bad}:4: unknown key 'mas'"), r.stderr
        assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1


def test_unknown_model_exits_2():
    r = cli("crosscheck", "dense", "no_such_model")
    assert r.returncode == 2 and "elbow" in r.stderr and "Traceback" not in r.stderr


def test_dense_json_keys(capsys):
    assert run(crosscheck_main, ["dense", "springpend", "--trials", "50", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("crba_vs_aba", "gen_vs_dense", "observe_vs_dense", "find_roundtrip"):
        assert key in out
    assert out["passed"] is True and out["gen_vs_dense"] <= 1e-9


def test_failed_check_exits_1(monkeypatch, capsys):
    """A check over its gate makes the command fail (exit 1), not crash."""
    from crosscheck.checks import Check
    from crosscheck import dense_compare as compare
    monkeypatch.setattr(compare, "crba_vs_aba", lambda m, t, s: Check("crba_vs_aba", 1.0, 1e-12, "planted"))
    assert run(crosscheck_main, ["dense", "threelink", "--trials", "5"]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_info_reports_sizes(capsys):
    assert run(mechdyn_main, ["info", "satellite"]) == 0
    out = capsys.readouterr().out
    assert "nq 10  nv 9" in out and "floating" in out and "panel_left" in out
    solve = re.fullmatch(r"solve: CRBA \+ sparse LᵀDL, (\d+) operations \(the articulated-body algorithm: (\d+)\)",
                         out.splitlines()[-1])
    assert solve and int(solve[1]) == 507 < int(solve[2]), out.splitlines()[-1]  # 507: satellite's flop golden
    assert run(mechdyn_main, ["info", "satellite", "--no-route"]) == 0
    assert "solve:" not in capsys.readouterr().out


def test_gen_writes_c(tmp_path, capsys):
    out = tmp_path / "elbow.c"
    assert run(mechdyn_main, ["gen", "elbow", "-o", str(out)]) == 0
    assert "void fwd_dyn(" in out.read_text()
    assert "solve: CRBA + sparse LᵀDL, 742 operations" in capsys.readouterr().out


def test_bench_json(capsys):
    """`mechdyn bench` times the generated code alone; `crosscheck bench` adds the dense reference."""
    assert run(mechdyn_main, ["bench", "gantry", "--repeats", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["flops"] > 0 and out["ns_per_call"] > 0 and out["batch_ns_per_state"] > 0
    assert "dense_ns_per_call" not in out
    assert run(crosscheck_main, ["bench", "gantry", "--repeats", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["flops"] > 0 and out["ns_per_call"] > 0 and out["dense_ns_per_call"] > out["ns_per_call"]
    assert out["speedup"] == out["dense_ns_per_call"] / out["ns_per_call"]


@pytest.mark.parametrize("old, name, new", [
    (["bench", "elbow", "--peers"], "bench --peers", "crosscheck bench --peers elbow"),
    (["bench", "elbow", "--peers", "--repeats", "3", "--json"], "bench --peers",
     "crosscheck bench --peers elbow --repeats 3 --json"),
    (["selftest"], "selftest", "crosscheck selftest"),
    (["report", "-o", "r.html"], "report", "crosscheck report -o r.html"),
    (["golden", "--update", "elbow"], "golden", "crosscheck golden --update elbow"),
    (["golden", "--help"], "golden", "crosscheck golden --help"),
])
def test_harness_commands_that_left_mechdyn_name_their_new_command(capsys, old, name, new):
    """The harness's commands moved to `crosscheck` (issue 17); the old names exit 2 with one line naming the new
    command, arguments included, before any work."""
    assert run(mechdyn_main, old) == 2
    assert capsys.readouterr().err == f"'mechdyn {name}' moved to the verification harness: run '{new}'\n"


@pytest.mark.parametrize("tool", ["mechdyn", "crosscheck"])
def test_help(tool):
    r = cli(tool, "--help")
    assert r.returncode == 0 and "Exit status: 0" in " ".join(r.stdout.split())


def test_bad_trials_is_an_input_error():
    r = cli("crosscheck", "dense", "elbow", "--trials", "0")
    assert r.returncode == 2 and "positive integer" in r.stderr



def test_sim_trace_and_plot(tmp_path, capsys):
    trace = tmp_path / "s.csv"
    assert run(mechdyn_main, ["sim", "satellite", "--time", "0.2", "--dt", "1e-3", "--seed", "1", "--trace", str(trace)]) == 0
    out = capsys.readouterr().out
    assert "200 verlet steps" in out and "real-time factor" in out and "energy drift" in out
    head = trace.read_text().splitlines()
    assert head[0] == "# mechdyn trace" and "# model: satellite" in head
    assert run(mechdyn_main, ["plot", str(trace), "-o", str(tmp_path / "png")]) == 0
    pngs = sorted(p.name for p in (tmp_path / "png").glob("*.png"))
    assert pngs == ["satellite_bus.png", "satellite_energy.png", "satellite_joints.png"]
    assert all((tmp_path / "png" / p).stat().st_size > 10_000 for p in pngs)


def test_sim_loop_model_reports_closure(tmp_path, capsys):
    trace = tmp_path / "q.csv"
    assert run(mechdyn_main, ["sim", "quartercar", "--time", "0.05", "--dt", "5e-4", "--trace", str(trace)]) == 0
    assert "max closure error" in capsys.readouterr().out
    assert trace.read_text().splitlines()[-1].count(",") > 20 and "closure" in trace.read_text()


def test_plot_rejects_a_non_trace(tmp_path):
    bad = tmp_path / "x.csv"
    bad.write_text("a,b\n1,2\n")
    r = cli("mechdyn", "plot", str(bad))
    assert r.returncode == 2 and "not a mechdyn trace" in r.stderr and "Traceback" not in r.stderr
