"""The simulator: the C stepper against the Python integration rule, inputs, planted drift bugs."""
import numpy as np
import pytest

import mechdyn
from mechdyn.codegen import stepper
from mechdyn.core.integrate import integrate
from mechdyn.core.sample import random_q
from crosscheck.trajectory import order_gate, reversibility
from mechdyn.sim.run import simulate

# Q ← normalize(Q + ½ Q ⊗ (0, ω) τ), r ← r + R(Q) v τ: first order, and not self-adjoint
TRUNCATED_DRIFT = r"""
static void drift_floating(double *q, const double *qd, double tau)
{
    double w[4] = {0.0, qd[0], qd[1], qd[2]}, dQ[4], dr[3];
    quat_mul(q, w, dQ);
    quat_rotate(q, qd + 3, dr);
    double n = 0.0;
    for (int i = 0; i < 4; ++i) { q[i] += 0.5 * tau * dQ[i]; n += q[i] * q[i]; }
    n = sqrt(n);
    for (int i = 0; i < 4; ++i) q[i] /= n;
    q[4] += dr[0] * tau; q[5] += dr[1] * tau; q[6] += dr[2] * tau;
}
"""


@pytest.mark.parametrize("name", ["satellite", "threelink", "quartercar"])
def test_c_drift_is_the_documented_rule(name):
    """fwd_dyn_drift (C) and mechdyn.core.integrate (Python) are two writings of one rule."""
    d = mechdyn.load(name)
    rng = np.random.default_rng(0)
    for _ in range(20):
        q, qd = random_q(d.model, rng), rng.normal(size=d.nv)
        assert np.allclose(d.drift(q, qd, 0.05), integrate(d.model, q, qd, 0.05), rtol=0, atol=1e-14)


def test_euler_step_by_hand():
    """One semi-implicit Euler step equals qd += f dt, then the drift."""
    d = mechdyn.load("elbow")
    rng = np.random.default_rng(1)
    q, qd, dt = random_q(d.model, rng), rng.normal(size=d.nv), 1e-3
    tr = simulate(d, q, qd, dt, dt, "euler")
    qd1 = qd + d.forward(q, qd, np.zeros(d.nv)) * dt
    assert np.allclose(tr.qd[-1], qd1, atol=1e-15) and np.allclose(tr.q[-1], d.drift(q, qd1, dt), atol=1e-15)


def test_scheduled_input_is_held_between_samples():
    """A torque schedule stepped in C matches holding each sample by hand."""
    d = mechdyn.load("threelink")
    q, qd, dt = np.zeros(3), np.zeros(3), 1e-3
    sched = np.array([[1.0, 0, 0], [0, -2.0, 0], [0, 0, 3.0]])
    tr = simulate(d, q, qd, 0.03, dt, "euler", tau=sched, dt_sched=0.01)
    for k in range(30):
        qdd = d.forward(q, qd, sched[min(int(k * dt / 0.01 + 1e-9), 2)])
        qd = qd + qdd * dt
        q = d.drift(q, qd, dt)
    assert np.allclose(tr.q[-1], q, atol=1e-12)


def test_chunked_progress_run_equals_one_call():
    d = mechdyn.load("satellite")
    q, qd = d.model.q0(), np.linspace(-1, 1, d.nv)
    a = simulate(d, q, qd, 0.2, 1e-3, "verlet", stride=5)
    b = simulate(d, q, qd, 0.2, 1e-3, "verlet", stride=5, progress=True)
    assert np.array_equal(a.q, b.q) and len(a.t) == 41


def test_bad_inputs():
    d = mechdyn.load("threelink")
    with pytest.raises(ValueError, match="unknown scheme"):
        simulate(d, np.zeros(3), np.zeros(3), 1, 1e-3, "rk4")
    with pytest.raises(ValueError, match="tau has shape"):
        simulate(d, np.zeros(3), np.zeros(3), 1, 1e-3, tau=np.zeros(4))


def test_planted_truncated_quaternion_update_is_caught(tmp_path, monkeypatch):
    """A first-order quaternion drift fails reversibility and drops Verlet's order on the satellite."""
    monkeypatch.setenv("MECHDYN_CACHE", str(tmp_path))
    monkeypatch.setattr(stepper, "DRIFT_FLOATING", TRUNCATED_DRIFT)
    d = mechdyn.load("satellite")
    rev, order = reversibility(d), order_gate(d, "verlet")
    print(f"planted truncated drift: {rev.line()}\n{order.line()}")
    assert not rev.passed and rev.value > 1e-6
    assert not order.passed
