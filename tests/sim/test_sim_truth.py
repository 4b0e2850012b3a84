"""`mechdyn sim` tells the truth: divergence stops the run at the step it happened, the dampers' work is integrated
in C at every step (so the energy drift does not depend on the stride), and the wall times cover the whole command."""
import dataclasses
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import mechdyn
from crosscheck.trajectory import dissipation_gate
from mechdyn.cli import parser as mechdyn_main
from mechdyn.cliutil import run
from mechdyn.codegen import generate
from mechdyn.sim.energy import energy_balance
from mechdyn.sim.run import SimulationDiverged, initial_state, simulate


def first_nonfinite_step(d, q, qd, dt: float, nsteps: int) -> int:
    """The 1-based Verlet step whose state is first non-finite, stepped from Python one call at a time."""
    qdd = d.forward(q, qd, np.zeros(d.nv))
    with np.errstate(all="ignore"):
        for k in range(1, nsteps + 1):
            q = d.drift(q, qd, 0.5 * dt)
            qdd = d.forward(q, qd + 0.5 * dt * qdd, np.zeros(d.nv))
            qd = qd + qdd * dt
            q = d.drift(q, qd, 0.5 * dt)
            if not (np.isfinite(q).all() and np.isfinite(qd).all()):
                return k
    return -1


@pytest.mark.parametrize("stride", [1, 3])
def test_divergence_raises_at_the_first_nonfinite_step(stride):
    """elbow at dt 0.5 blows up: simulate names the step and time, and hands back only finite rows."""
    d = mechdyn.load("elbow")
    q0, qd0 = d.model.q0(), np.zeros(d.nv)
    want = first_nonfinite_step(d, q0, qd0, 0.5, 20)
    assert want > 1
    with pytest.raises(SimulationDiverged, match=rf"diverged at step {want} \(t = {want * 0.5:g} s\)") as e:
        simulate(d, q0, qd0, 10.0, 0.5, stride=stride, progress=stride == 3)
    assert e.value.step == want and e.value.t == pytest.approx(want * 0.5)
    tr = e.value.trajectory
    assert len(tr.t) == 1 + (want - 1) // stride and np.isfinite(tr.q).all() and np.isfinite(tr.qd).all()
    assert np.isfinite(tr.dissipated).all() and tr.t[-1] < e.value.t


def test_sim_command_exits_1_naming_the_step_and_writes_no_trace(tmp_path, capsys):
    trace = tmp_path / "e.csv"
    assert run(mechdyn_main, ["sim", "elbow", "--dt", "0.5", "--time", "10", "--trace", str(trace)]) == 1
    out, err = capsys.readouterr()
    print(err)
    assert err.count("\n") == 1 and "diverged at step 10 (t = 5 s)" in err
    assert "energy drift" not in out and not trace.exists()


def test_nonfinite_energy_exits_1_naming_the_step(tmp_path, capsys, monkeypatch):
    """A finite run whose energy is not finite (planted: NaN from the 4th recorded row on) is no drift of nan J."""
    from mechdyn.sim import energy

    real = energy.energy_balance

    def nan_from_row_3(*args, **kw):
        E, B = real(*args, **kw)
        B[3:] = np.nan
        return E, B

    monkeypatch.setattr(energy, "energy_balance", nan_from_row_3)
    trace = tmp_path / "q.csv"
    assert run(mechdyn_main, ["sim", "quartercar", "--time", "0.02", "--stride", "2", "--trace", str(trace)]) == 1
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "energy is not finite at step 6 (t = 0.006 s)" in err, err
    assert "energy drift" not in out and not trace.exists()


def test_mass_1e308_model_is_refused_before_any_stepping(tmp_path, capsys):
    """elbow with a 1e308 kg waist used to run and report a drift of nan J; the format's bounds now refuse it as
    bad input (exit 2, one line naming the line and the bound), so nothing is stepped or reported."""
    src = Path(mechdyn.__file__).parent.parent / "models" / "elbow.mech"
    big = tmp_path / "bigmass.mech"
    big.write_text(src.read_text().replace("mass 13.0", "mass 1e308", 1))
    code = run(mechdyn_main, ["sim", str(big)])
    out, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "'mass' in body 'waist' is 1e308, out of bounds" in err, (out, err)
    assert "energy drift" not in out


def test_c_dissipation_is_the_numpy_trapezoid_over_every_step():
    """Recording every step, the work integrated in C is energy.py's c l̇² + c q̇² by the trapezoidal rule, to
    round-off (springpend has a TSDA and an RSDA damper; quartercar a shock on a loop model)."""
    for name in ("springpend", "quartercar"):
        chk = dissipation_gate(mechdyn.load(name))
        print(chk.line())
        assert chk.passed


def test_energy_drift_does_not_depend_on_the_stride():
    """quartercar (the shock dissipates ~640 J in 0.5 s): the balance E + W at the rows that strides 5, 25 and 100
    share with stride 1 is the same to 1e-9 J (the states and W are the same bits; E is the same NumPy sum), so
    each stride's drift is the stride-1 balance's largest change over its own rows. The old route, W by the
    trapezoid over the recorded rows only, is off by far more at stride 100."""
    d = mechdyn.load("quartercar")
    q0, qd0 = initial_state(d, 0)
    T, dt = 0.5, 1e-3
    one = simulate(d, q0, qd0, T, dt)
    _, B1 = energy_balance(d.model, one.t, one.q, one.qd, one.dissipated)
    drifts = {}
    for s in (5, 25, 100):
        tr = simulate(d, q0, qd0, T, dt, stride=s)
        assert np.array_equal(tr.q, one.q[::s]) and np.array_equal(tr.dissipated, one.dissipated[::s])
        _, B = energy_balance(d.model, tr.t, tr.q, tr.qd, tr.dissipated)
        np.testing.assert_allclose(B, B1[::s], rtol=0, atol=1e-9)
        drifts[s] = float(np.max(np.abs(B - B[0])))
        assert drifts[s] == pytest.approx(float(np.max(np.abs(B1[::s] - B1[0]))), rel=1e-9)
        if s == 100:
            _, old = energy_balance(d.model, tr.t, tr.q, tr.qd)
            old_drift = float(np.max(np.abs(old - old[0])))
    print(f"quartercar drift at strides 5/25/100: {drifts}; old route at stride 100: {old_drift:.3e} J")
    assert max(drifts.values()) <= float(np.max(np.abs(B1 - B1[0])))
    assert old_drift > 100 * drifts[100]


def test_planted_dissipation_at_recorded_steps_only_is_caught(tmp_path, monkeypatch):
    """The work accumulated only at the recorded steps (a trapezoid stride·dt wide) fails the dissipation gate."""
    monkeypatch.setenv("MECHDYN_CACHE", str(tmp_path))
    real = generate.sim_function

    def recorded_only(model, power):
        src = real(model, power)
        step = "            fwd_dyn_power(q, qd, &p1);\n            const double w1 = w + 0.5 * dt * (p0 + p1);\n"
        assert step in src
        return src.replace(step, "            double w1 = w;\n            p1 = p0;\n"
                           "            if (stride > 0 && (k + 1) % stride == 0) {\n"
                           "                fwd_dyn_power(q, qd, &p1); w1 += 0.5 * dt * stride * (p0 + p1);\n"
                           "            }\n")

    monkeypatch.setattr(generate, "sim_function", recorded_only)
    chk = dissipation_gate(mechdyn.load("springpend"))
    print(f"planted recorded-steps-only dissipation: {chk.line()}")
    assert not chk.passed and chk.value > 1e-6


def test_planted_dropped_damper_is_caught(tmp_path, monkeypatch):
    """The RSDA's damper left out of the power integrated in C fails the dissipation gate."""
    monkeypatch.setenv("MECHDYN_CACHE", str(tmp_path))
    real = generate.power_body
    monkeypatch.setattr(generate, "power_body", lambda model: real(dataclasses.replace(model, rsdas=())))
    chk = dissipation_gate(mechdyn.load("springpend"))
    print(f"planted dropped RSDA damper: {chk.line()}")
    assert not chk.passed and chk.value > 1e-6


SECONDS = r"(\d[\d.e+-]*) s"


def test_sim_report_covers_the_whole_command(tmp_path):
    """The printed wall time is the whole process's: within the measured wall time of the subprocess (which also
    holds process creation and teardown) and more than half of it; the parts add up to it; stepping is a part."""
    trace = tmp_path / "q.csv"
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", "from mechdyn.cli import main; main()", "sim", "quartercar",
                        "--time", "0.2", "--trace", str(trace)], capture_output=True, text=True, check=False)
    measured = time.perf_counter() - t0
    print(r.stdout, f"measured {measured:.3f} s")
    assert r.returncode == 0, r.stderr
    line = r.stdout.splitlines()[-1]
    m = re.search(rf"stepping {SECONDS} .*real-time factor ([\d.e+-]+)\); {SECONDS} wall in all: start-up {SECONDS}, "
                  rf"load/compile {SECONDS}, stepping {SECONDS}, post-processing \(energy, closure, trace\) {SECONDS}$",
                  line)
    assert m, line
    stepping, rtf, total, startup, load, stepping2, post = map(float, m.groups())
    assert stepping == stepping2 and rtf == pytest.approx(0.2 / stepping, rel=0.02)
    assert stepping <= total and startup > 0 and load > 0 and post > 0
    assert startup + load + stepping + post == pytest.approx(total, rel=0.02)  # each printed to 3 figures
    assert 0.5 * measured < total <= measured + 0.02  # + 0.02: the process start time is read in 10 ms ticks
    assert Path(trace).read_text().splitlines()[-1].count(",") > 20


def test_a_run_too_long_to_count_is_a_value_error():
    """simulate(T=1e300, dt=1e-300) raised OverflowError from round(inf); the step bound is one ValueError."""
    from mechdyn.sim.run import MAX_STEPS

    d = mechdyn.load("elbow")
    with pytest.raises(ValueError, match=re.escape(f"would take inf steps; at most {MAX_STEPS:.0e}")):
        simulate(d, np.zeros(d.nv), np.zeros(d.nv), 1e300, 1e-300)
