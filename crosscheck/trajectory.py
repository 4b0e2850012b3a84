"""Checks that only a trajectory can make: integration order, reversibility, loop closure drift, the dampers' work.

Each returns a `Check` (crosscheck/checks.py), like every other gate. Gates judge the product, so they live in
the harness; the seeded starting state they run from is the product's (mechdyn.sim.run.initial_state), shared
with `mechdyn sim --seed`.
"""
from __future__ import annotations

import numpy as np

from crosscheck.checks import Check
from mechdyn.core.loops import closure
from mechdyn.core.sample import states
from mechdyn.dynamics import Dynamics
from mechdyn.sim.energy import energy_balance, mechanics
from mechdyn.sim.run import Trajectory, initial_state, simulate

ORDER = {"euler": (2.0, 0.05), "verlet": (4.0, 0.1)}  # expected drift ratio dt → dt/2, and its band
NOISE = 1e-11  # drift below this fraction of the kinetic-energy scale is round-off, not truncation
T_ORDER, DT_ORDER = 0.5, 2e-4  # horizon and step of the order gate
CLOSURE_GATE = 1e-5  # m or rad: a loop held this closed over a run is closed for any engineering purpose
# relative: the C and NumPy routes sum the same powers in different orders, ~1e-15 apart per step
DISSIPATION_GATE = 1e-9


def energy_drift(dyn: Dynamics, q0, qd0, scheme: str, dt: float, T: float = T_ORDER) -> tuple[float, float]:
    """max |B(t) − B(0)| over the run, with B = E + ∫P_diss, at every step; and the KE scale.

    Every step is recorded so that the dissipated work's quadrature error shrinks
    with dt like the scheme's own (on a fixed coarser grid it would not).
    """
    tr = simulate(dyn, q0, qd0, T, dt, scheme)
    _, B = energy_balance(dyn.model, tr.t, tr.q, tr.qd)
    ke = float(np.max(mechanics(dyn.model, tr.q, tr.qd).kinetic))  # all rows at once, not row by row in Python
    return float(np.max(np.abs(B - B[0]))), ke


def order_gate(dyn: Dynamics, scheme: str, dt: float = DT_ORDER, seed: int = 0) -> Check:
    """Energy drift at dt over that at dt/2: 2 for a first-order scheme, 4 for a second-order one."""
    q0, qd0 = initial_state(dyn, seed)
    d1, ke = energy_drift(dyn, q0, qd0, scheme, dt)
    d2, _ = energy_drift(dyn, q0, qd0, scheme, dt / 2)
    want, band = ORDER[scheme]
    floor = NOISE * max(ke, 1e-300)
    name = f"order_{scheme}"
    if d1 <= floor:  # exact to round-off (constant H and forces, as in a gantry): nothing to measure
        return Check(name, 0.0, band, f"energy drift {d1:.2e} J at dt {dt:g} is below the noise floor "
                     f"{floor:.1e} J (exact to round-off); |ratio - {want:g}|")
    ratio = d1 / d2
    return Check(name, abs(ratio - want), band,
                 f"energy drift {d1:.3e} J at dt {dt:g}, {d2:.3e} J at dt/2, ratio {ratio:.3f}; |ratio - {want:g}|")


def reversibility(dyn: Dynamics, tau: float = 0.1, trials: int = 20, seed: int = 0) -> Check:
    """The drift is self-adjoint: by +tau then −tau it returns to the start."""
    worst = 0.0
    for s in states(dyn.model, trials, seed, tear=0.0):
        back = dyn.drift(dyn.drift(s.q, s.qd, tau), s.qd, -tau)
        worst = max(worst, float(np.max(np.abs(back - s.q))))
    return Check("reversibility", worst, 1e-10, f"{trials} states, drift +{tau:g} s then -{tau:g} s, max |q - q0|")


def closure_drift(dyn: Dynamics, traj: Trajectory) -> float:
    """The largest loop-closure error |φ|∞ along a trajectory."""
    return max((float(np.max(np.abs(closure(dyn.model, q)[0]))) for q in traj.q), default=0.0)


def closure_gate(dyn: Dynamics, T: float = 1.0, dt: float = 1e-4, seed: int = 0) -> Check:
    """Loop models: Baumgarte keeps the closure error bounded over a run from a closed state."""
    q0, qd0 = initial_state(dyn, seed)
    tr = simulate(dyn, q0, qd0, T, dt, "verlet", stride=10)
    worst = closure_drift(dyn, tr)
    return Check("closure_drift", worst, CLOSURE_GATE, f"{T:g} s at dt {dt:g} (Verlet) from a closed state, max |phi|")


def dissipation_gate(dyn: Dynamics, T: float = 0.2, dt: float = 1e-3, stride: int = 20, seed: int = 0) -> Check:
    """The dampers' work integrated in C (Trajectory.dissipated) against the NumPy route's trapezoid over every
    step (energy.py), and recorded every `stride` steps against every step: the stride must not change it."""
    q0, qd0 = initial_state(dyn, seed)
    every = simulate(dyn, q0, qd0, T, dt, "verlet")
    strided = simulate(dyn, q0, qd0, T, dt, "verlet", stride=stride)
    E, B = energy_balance(dyn.model, every.t, every.q, every.qd)
    w_numpy = B - E
    total = float(np.max(np.abs(w_numpy)))
    scale = max(total, 1e-300)  # an undamped model: both routes must give exactly 0
    off_numpy = float(np.max(np.abs(every.dissipated - w_numpy)))
    off_stride = float(np.max(np.abs(strided.dissipated - every.dissipated[::stride])))
    return Check("dissipation", max(off_numpy, off_stride) / scale, DISSIPATION_GATE,
                 f"{T:g} s at dt {dt:g}, {total:.3e} J dissipated: C vs NumPy {off_numpy:.1e} J, stride {stride} vs 1 "
                 f"{off_stride:.1e} J; relative")
