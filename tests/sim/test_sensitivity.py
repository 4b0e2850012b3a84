"""Trajectory sensitivities to the declared parameters and their identification (mechdyn/sim/sensitivity.py):
against central differences of whole runs, and estimates within the Cramér–Rao bound computed from them."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chi2

import mechdyn
from mechdyn.sim import rig
from mechdyn.sim import sensitivity as S
from mechdyn.sim.rig import Input

from ..codegen.test_params import scales

GATE = 1e-6  # relative: central differences of whole runs at 1e-4 of each scale


def quartercar(names: list[str], T: float):
    """quartercar on its post, swept from 0.5 to 8 Hz, from the static equilibrium: loops, a driver and a floating
    wheel; the run's function."""
    dyn = mechdyn.load("quartercar", params=names)
    lay = rig.layout(dyn.model)
    for name, m in rig.motions_for(lay, Input("sweep", amplitude=0.01, f0=0.5, f1=8, sweep_time=T, blend=0.2),
                                   T).items():
        dyn.set_motion(name, m)
    q0 = rig.start_state(dyn)
    return dyn, lambda: S.simulate(dyn, q0, np.zeros(dyn.nv), T, 1e-3)


KP, KD = np.array([800, 800, 300, 5, 5, 2.0]), np.array([40, 40, 15, 0.2, 0.2, 0.05])
W, A = 2 * np.pi * np.array([0.4, 0.55, 0.7, 0.9, 1.1, 1.3]), np.array([0.8, 0.5, 0.7, 1.0, 0.8, 1.0])


def tracking(t: float, q: np.ndarray, v: np.ndarray):
    """A PD law tracking a sine on each joint of elbow, with its derivatives."""
    return KP * (A * np.sin(W * t) - q) + KD * (A * W * np.cos(W * t) - v), -np.diag(KP), -np.diag(KD)


def elbow(names: list[str], T: float):
    dyn = mechdyn.load("elbow", params=names)
    return dyn, lambda: S.simulate(dyn, np.zeros(6), np.zeros(6), T, 1e-3, feedback=tracking)


def difference_error(dyn, run) -> float:
    """The largest difference, over the final state (its tangent, its velocities) and each parameter, between the
    sensitivities and central differences of whole runs (read through the tangent chart at the nominal final
    state), each column times its parameter's scale (tests/codegen/test_params.py), relative to the largest such
    entry: the state's change per typical change of a parameter."""
    r, x0, scale = run(), dyn.params.values, scales(dyn.model)
    errs, sizes = [], []
    for k in range(x0.size):
        h = 1e-4 * scale[k]  # rounding ~ ε |q| / h, truncation ~ h²: both far below the gate here
        ends = []
        for sg in (1.0, -1.0):
            x = x0.copy()
            x[k] += sg * h
            dyn.params.values = x
            ends.append(run())
        dyn.params.values = x0
        fd_q = (S.local(dyn, r.q[-1], ends[0].q[-1]) - S.local(dyn, r.q[-1], ends[1].q[-1])) / (2 * h)
        fd_v = (ends[0].qd[-1] - ends[1].qd[-1]) / (2 * h)
        for fd, got in ((fd_q, r.Sq[-1][:, k]), (fd_v, r.Sv[-1][:, k])):
            errs.append(float(np.max(np.abs(fd - got))) * scale[k])
            sizes.append(float(np.max(np.abs(fd))) * scale[k])
    return max(errs) / max(sizes)


CASES = {"quartercar": (quartercar, ["spring.k", "shock.c", "sprung.mass", "wheel.inertia"], 0.6),
         "elbow": (elbow, ["upper_arm.mass", "forearm.cg", "wrist_pitch.inertia"], 0.6)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_sensitivities_against_whole_runs(name):
    """quartercar (loops, a driven post, a floating wheel) and elbow under a tracking law (its feedback
    differentiated with the rest)."""
    make, names, T = CASES[name]
    err = difference_error(*make(names, T))
    print(f"\n{name} {names}: {err:.2e}")
    assert err <= GATE


def test_planted_drift_coupling_is_caught(monkeypatch):
    """The floating body's position drift without the rotation's coupling term (−h Rhᵀ [v]× Rhᵀ δφ): quartercar's
    wheel carries it, and the differences catch it."""
    real = S.drift_jacobians

    def uncoupled(dyn, v, h):
        Jq, Jv = real(dyn, v, h)
        for b, i in zip(dyn.model.bodies, dyn.model.vidx):
            if b.joint == "floating":
                Jq[i + 3:i + 6, i:i + 3] = 0.0
        return Jq, Jv

    monkeypatch.setattr(S, "drift_jacobians", uncoupled)
    err = difference_error(*quartercar(["spring.k", "sprung.mass"], 0.6))
    print(f"\nplanted: the drift's coupling dropped: {err:.2e}")
    assert err > 1e3 * GATE


def fit(dyn, run, measure_q: list[int], sigma: float, start: np.ndarray, seed: int) -> tuple[S.Fit, np.ndarray]:
    """The fit from `start` to the run at dyn's present (true) values, its measured coordinates with Gaussian
    noise of sd sigma (seeded); and the true values."""
    true = dyn.params.values
    truth = run()
    rng = np.random.default_rng(seed)
    qs = [dyn.model.qidx[[i for i, v in enumerate(dyn.model.vidx) if v == m][0]] for m in measure_q]
    data = truth.q[:, qs] + sigma * rng.normal(size=(truth.q.shape[0], len(qs)))
    dyn.params.values = start
    return S.identify(dyn, run, measure_q, data, sigma), true


def within_bound(f: S.Fit, true: np.ndarray) -> tuple[float, float]:
    """The largest error in Cramér–Rao standard deviations, and the error's Mahalanobis distance squared."""
    d = f.p - true
    return float(np.max(np.abs(d) / f.sigma)), float(d @ np.linalg.solve(f.covariance, d))


def test_quartercar_rate_and_damping_from_a_rig_run():
    """The spring rate and damping from 4 s of a swept-sine rig run, the sprung mass's height measured to 0.1 mm,
    started 30 % off: within the Cramér–Rao bound (every error under 4 sd; the Mahalanobis distance under χ²'s
    0.999 quantile)."""
    dyn, run = quartercar(["spring.k", "shock.c"], 4.0)
    f, true = fit(dyn, run, [0], 1e-4, dyn.params.values * np.array([1.3, 0.7]), 7)
    worst, maha = within_bound(f, true)
    print(f"\nquartercar: {dict(zip(dyn.params.labels, f.p))} (true {true}), sd {f.sigma}, worst {worst:.2f} sd, "
          f"Mahalanobis² {maha:.2f}, {f.iterations} iterations")
    assert worst < 4 and maha < chi2.ppf(0.999, true.size) and f.costs[-1] < f.costs[0]


ROBOT = ["upper_arm.mass", "forearm.mass", "wrist_roll.mass", "forearm.inertia"]


def test_elbow_masses_and_inertia_from_a_tracking_run():
    """Three link masses and the forearm's inertia (6 numbers) from 3 s of a tracking run, every joint angle
    measured to 1e-4 rad, started up to 20 % off: within the Cramér–Rao bound."""
    dyn, run = elbow(ROBOT, 3.0)
    rng = np.random.default_rng(3)
    start = dyn.params.values * np.r_[1 + 0.2 * rng.uniform(-1, 1, 3), np.full(6, rng.uniform(0.8, 1.2))]
    f, true = fit(dyn, run, list(range(6)), 1e-4, start, 5)
    worst, maha = within_bound(f, true)
    print(f"\nelbow: worst {worst:.2f} sd, Mahalanobis² {maha:.2f}, {f.iterations} iterations; sd/true "
          f"{np.round(f.sigma / np.maximum(np.abs(true), 1e-300), 5)}")
    assert worst < 4 and maha < chi2.ppf(0.999, true.size)


def test_planted_sensitivity_sign_leaves_the_start(monkeypatch):
    """∂qdd/∂p negated in the stepper's sensitivities: Gauss–Newton walks the wrong way, no step lowers the
    cost, and the estimate stays at the start, far outside the bound."""
    real = mechdyn.Dynamics.param_derivatives
    monkeypatch.setattr(mechdyn.Dynamics, "param_derivatives", lambda self, *a: (lambda r: (r[0], -r[1]))(
        real(self, *a)))
    dyn, run = quartercar(["spring.k", "shock.c"], 2.0)
    f, true = fit(dyn, run, [0], 1e-4, dyn.params.values * np.array([1.3, 0.7]), 7)
    worst, _ = within_bound(f, true)
    print(f"\nplanted: dparam negated: worst {worst:.3g} sd")
    assert worst > 100


def test_unidentifiable_parameters_are_refused():
    """Both arms' inertias of elbow: a change of upper_arm's Ixx + Izz against forearm's moves no joint (their
    relative axis is parallel to the shoulder's), so the fit refuses, naming that direction."""
    names = ["upper_arm.inertia", "forearm.inertia"]
    dyn, run = elbow(names, 1.0)
    with pytest.raises(ValueError, match="not identifiable .* upper_arm.inertia\\[Ixx\\]"):
        fit(dyn, run, list(range(6)), 1e-4, dyn.params.values, 1)
