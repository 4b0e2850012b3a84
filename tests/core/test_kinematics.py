"""qd = dq/dt: finite differences of the forward kinematics along qd against the reported velocities.

A convention bug that flips a joint's handedness (E = R instead of Rᵀ) keeps
the dynamics self-consistent but makes q run against its own qd; here it shows
as a scaled error of exactly 2.
"""
import numpy as np
import pytest

import mechdyn.core.spatial as spatial
from mechdyn.core.integrate import integrate
from mechdyn.core.kinematics import forward_kinematics
from mechdyn.core.model import Model
from mechdyn.core.parse import load_model
from mechdyn.core.sample import random_q, scaled_error
from tests.conftest import MODELS

EPS = 1e-6


def vee(W: np.ndarray) -> np.ndarray:
    """The vector of a (near-)skew matrix."""
    return 0.5 * np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]])


def fd_velocity_error(model: Model, trials: int = 50, seed: int = 1) -> float:
    """Worst scaled gap between each body's reported velocity and central differences of its pose along qd."""
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(trials):
        q, qd = random_q(model, rng), rng.normal(size=model.nv)
        kin = forward_kinematics(model, q, qd)
        plus = forward_kinematics(model, integrate(model, q, qd, EPS))
        minus = forward_kinematics(model, integrate(model, q, qd, -EPS))
        for i in range(model.nbody):
            Rdot = (plus.R[i] - minus.R[i]) / (2 * EPS)
            pdot = (plus.p[i] - minus.p[i]) / (2 * EPS)
            fd = np.concatenate([vee(kin.R[i].T @ Rdot), kin.R[i].T @ pdot])  # body-frame [ω; v]
            worst = max(worst, scaled_error(fd, kin.v[i]))
    return worst


@pytest.mark.parametrize("name", MODELS)
def test_qd_is_dq_dt(name):
    err = fd_velocity_error(load_model(name))
    print(f"{name}: max scaled |v_fd - v| = {err:.3e}")
    assert err < 1e-7


def test_transposed_joint_rotation_is_caught(monkeypatch):
    """Plant E = R (instead of Rᵀ) in every revolute joint: the gap becomes 2·|v|, a scaled error near 2."""
    real = spatial.jcalc

    def planted(body, q):
        XJ, S = real(body, q)
        if body.joint == "revolute":
            E = XJ[:3, :3].T
            XJ = spatial.plux(E, np.zeros(3))
        return XJ, S

    monkeypatch.setattr("mechdyn.core.kinematics.jcalc", planted)
    err = fd_velocity_error(load_model("pendulums"))
    print(f"planted E = R: max scaled error = {err:.3f}")
    assert err > 1.0
