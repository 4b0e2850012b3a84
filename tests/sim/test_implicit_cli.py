"""`mechdyn sim --scheme galpha|hht` and `mechdyn bench --sim DT --scheme`: the Newton summary, the real-time and
adaptive modes, and one line (exit 2) for every setting that cannot run."""
import pytest

from mechdyn.cli import parser as mechdyn_main
from mechdyn.cliutil import run


def test_sim_galpha_reports_newton(capsys):
    assert run(mechdyn_main, ["sim", "satellite", "--time", "0.1", "--seed", "1", "--scheme", "galpha",
                              "--rho-inf", "0.6"]) == 0
    out = capsys.readouterr().out
    assert "100 galpha steps" in out and "sim: Newton:" in out and "a step, at most" in out


def test_sim_hht_real_time_mode(capsys):
    assert run(mechdyn_main, ["sim", "elbow", "--time", "0.05", "--seed", "2", "--scheme", "hht", "--alpha", "-0.2",
                              "--newton", "3"]) == 0
    assert "150 corrections, exactly 3 a step (the real-time mode)" in capsys.readouterr().out


def test_sim_galpha_settles_a_tracked_model(capsys):
    assert run(mechdyn_main, ["sim", "track_min", "--scheme", "galpha", "--time", "1.2", "--slope", "0"]) == 0
    out = capsys.readouterr().out
    assert "galpha steps at the accuracy step" in out and "all 8 gates passed" in out
    assert "iteration matrices built by differences (the settle)" in out


def test_sim_adaptive_with_contact(capsys):
    assert run(mechdyn_main, ["sim", "track_min", "--scheme", "galpha", "--adaptive", "--rtol", "1e-2", "--atol",
                              "1e-6", "--dt", "6e-4", "--time", "1.2", "--slope", "0"]) == 0
    out = capsys.readouterr().out
    assert "all 8 gates passed" in out and "rejected" in out


def test_sim_adaptive(capsys):
    assert run(mechdyn_main, ["sim", "satellite", "--time", "0.1", "--dt", "0.01", "--seed", "1", "--scheme",
                              "galpha", "--adaptive", "--rtol", "1e-7"]) == 0
    out = capsys.readouterr().out
    assert "galpha adaptive steps, 10 outputs every 0.01 s" in out and "rejected" in out


@pytest.mark.parametrize("argv, words", [
    (["sim", "elbow", "--rho-inf", "0.5"], "belong to the implicit schemes"),
    (["sim", "elbow", "--scheme", "galpha", "--alpha", "-0.1"], "not a setting of --scheme galpha"),
    (["sim", "elbow", "--scheme", "hht", "--rho-inf", "0.5"], "not a setting of --scheme hht"),
    (["sim", "elbow", "--scheme", "galpha", "--newton", "2", "--adaptive"], "--adaptive needs Newton"),
    (["sim", "elbow", "--scheme", "galpha", "--rtol", "1e-6"], "add --adaptive"),
    (["sim", "elbow", "--scheme", "galpha", "--atol", "1e-6"], "--atol is the adaptive step's tolerance"),
    (["sim", "elbow", "--scheme", "galpha", "--rho-inf", "1.5"], "spectral radius from 0 to 1"),
    (["sim", "track_min", "--scheme", "galpha", "--drive"], "--drive steps with verlet or euler"),
    (["bench", "elbow", "--scheme", "galpha"], "give --sim DT"),
    (["bench", "elbow", "--sim", "1e-3", "--newton", "2"], "add --scheme galpha"),
    (["bench", "elbow", "--sim", "1e-3", "--scheme", "galpha", "--verlet-dt", "1e-3"], "--verlet-dt sets Verlet's"),
    (["bench", "track_min", "--sim", "--scheme", "galpha"], "give --sim DT"),
    (["sim", "elbow", "--refresh", "2"], "belong to the implicit schemes"),
    (["sim", "elbow", "--scheme", "galpha", "--refresh", "2"], "refresh is the contact loop's setting"),
    (["sim", "m113", "--scheme", "galpha", "--refresh", "0"], "--refresh"),
    (["bench", "elbow", "--sim", "1e-3", "--scheme", "galpha", "--refresh", "2"], "--refresh K sets how often"),
    (["bench", "track_min", "--sim", "3e-4", "--refresh", "2"], "--refresh K sets how often"),
])
def test_bad_settings_exit_2_with_one_line(capsys, argv, words):
    assert run(mechdyn_main, argv) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_bench_implicit(capsys):
    assert run(mechdyn_main, ["bench", "elbow", "--sim", "1e-3", "--scheme", "galpha", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "Newton corrections a step" in out and "Verlet at the same dt" in out


def test_bench_implicit_with_contact(capsys):
    assert run(mechdyn_main, ["bench", "track_min", "--sim", "3e-4", "--scheme", "galpha", "--newton", "3",
                              "--verlet-dt", "1.6e-4", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "verlet  dt 0.00016 s (given)" in out and "3 corrections a step" in out
    assert "mechdyn sim track_min --scheme galpha --dt 0.0003 --newton 3" in out


def test_refresh_one_builds_a_matrix_every_step(capsys):
    """--refresh 1: the contact loop's implicit step builds its matrix fresh every step (the figure docs/performance.md
    "What the implicit M113 can reach" rests on)."""
    assert run(mechdyn_main, ["bench", "track_min", "--sim", "3e-4", "--scheme", "galpha", "--newton", "2",
                              "--refresh", "1", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert f"{round(1 / 3e-4)} matrices" in out, out  # the timed second's steps, each its own matrix
    assert "mechdyn sim track_min --scheme galpha --dt 0.0003 --newton 2 --refresh 1" in out
