"""`crosscheck pinocchio --derivatives` and `crosscheck mujoco --linearize`: the derivatives' external checks from
the command line. Their figures and gates are tested in test_pin_derivatives.py and test_mujoco_linearize.py;
here, what the commands print, their exit codes, and that a planted bug turns them to exit 1."""
import json

import pytest

import mechdyn
from crosscheck.cli import parser as crosscheck_main
from mechdyn.cliutil import run


def test_pinocchio_derivatives_prints_the_check_and_every_block(capsys):
    """springpend: force elements with inputs (the dact block); 50 states unless --trials says otherwise."""
    assert run(crosscheck_main, ["pinocchio", "springpend", "--derivatives"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[-1] == "springpend: PASS"
    assert lines[0].startswith("springpend: derivs_vs_pinocchio: 50 random states") and "(gate 1e-09) PASS" in lines[0]
    assert all(f"{k} " in lines[0] for k in ("qdd", "dq", "dqd", "dtau", "dact", "dfext"))


def test_pinocchio_derivatives_json(capsys):
    assert run(crosscheck_main, ["pinocchio", "satellite", "--derivatives", "--trials", "5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["passed"] is True and out["derivs_vs_pinocchio"] <= 1e-9
    assert set(out["blocks"]) == {"qdd", "dq", "dqd", "dtau", "dfext"}
    assert max(out["blocks"].values()) == out["derivs_vs_pinocchio"]
    assert [c["name"] for c in out["checks"]] == ["derivs_vs_pinocchio"]
    assert "5 random states" in out["checks"][0]["detail"]


def test_mujoco_linearize_prints_both_row_blocks(capsys):
    """satellite: a free joint and fext; 20 states unless --trials says otherwise."""
    assert run(crosscheck_main, ["mujoco", "satellite", "--linearize"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(": ")[1] for line in lines[:2]] == ["linearize_pos", "linearize_vel"]
    assert all("20 random states" in line and "eps=1e-06" in line and line.endswith("(gate 1e+00) PASS")
               for line in lines[:2])
    assert lines[2:] == ["satellite: PASS"]


def test_mujoco_linearize_json_carries_eps(capsys):
    assert run(crosscheck_main, ["mujoco", "threelink", "--linearize", "--trials", "3", "--eps", "1e-5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["passed"] is True and out["eps"] == 1e-5 and out["h"] == 1e-3
    assert 0 < out["linearize_pos"] <= 1 and 0 < out["linearize_vel"] <= 1
    assert {"A", "B", "pos", "vel"} <= set(out)
    assert [c["name"] for c in out["checks"]] == ["linearize_pos", "linearize_vel"]


@pytest.mark.parametrize("args, says", [
    (["pinocchio", "fourbar", "--derivatives"], "fourbar has loop closures: Pinocchio's computeABADerivatives"),
    (["mujoco", "fourbar", "--linearize"], "fourbar has loop closures"),
    (["mujoco", "elbow", "--eps", "1e-5"], "add --linearize"),
])
def test_uncovered_models_exit_2_with_one_line_before_compiling(args, says, capsys, monkeypatch):
    def no_compile(*a, **kw):
        raise AssertionError("compiled a model the check refuses")

    monkeypatch.setattr(mechdyn.dynamics.Dynamics, "__init__", no_compile)
    assert run(crosscheck_main, args) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err.count("\n") == 1
    assert cap.err.startswith(f"crosscheck {args[0]} {args[2]}: ") and says in cap.err


@pytest.mark.parametrize("args", [["pinocchio", "elbow", "--derivatives", "--trials", "3"],
                                  ["mujoco", "elbow", "--linearize", "--trials", "3"]])
def test_planted_dqd_sign_fails_both_commands(args, capsys, monkeypatch):
    """The generated dqd block negated: both commands exit 1 and print what to suspect."""
    real = mechdyn.dynamics.Dynamics.derivatives
    monkeypatch.setattr(mechdyn.dynamics.Dynamics, "derivatives",
                        lambda self, *a: real(self, *a)._replace(dqd=-real(self, *a).dqd))
    assert run(crosscheck_main, args) == 1
    out = capsys.readouterr().out
    assert out.endswith("elbow: FAIL\n") and " FAIL\n  a failure here alone" in out


@pytest.mark.parametrize("cmd, example", [("pinocchio", "  crosscheck pinocchio springpend --derivatives\n"),
                                          ("mujoco", "  crosscheck mujoco satellite --linearize\n")])
def test_help_shows_the_flags_and_examples_one_a_line(cmd, example, capsys):
    with pytest.raises(SystemExit) as e:
        crosscheck_main().parse_args([cmd, "--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0 and "\nexamples:\n" in out and example in out
    assert ("--derivatives" if cmd == "pinocchio" else "--linearize") in out


@pytest.mark.parametrize("cmd", ["pinocchio", "mujoco"])
def test_without_the_flag_the_default_stays_1000_states(cmd, capsys):
    """--trials' default now depends on the flag: the qdd comparisons keep theirs."""
    assert run(crosscheck_main, [cmd, "threelink"]) == 0
    assert "accel_vs_generated: 1000 trials" in capsys.readouterr().out
