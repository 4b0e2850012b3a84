"""The three Chrono checks, each reported as `Check`s.

- `qd_consistency`: qd = dq/dt, a kinematic assertion with no dynamics and no
  Chrono solver. The velocity mapping (q, qd) → body velocities is compared
  with finite differences of the position mapping along q(t), the integration
  rule applied to qd, both read back in joint coordinates through the same
  (linear, round-trip-tested) inverse velocity map. A joint whose angle runs
  backwards relative to its qd shows as exactly 2 in its slot, so the scaled
  error of a sign inversion is 2.0.
- `accel_vs_dense`, `accel_vs_generated`: qdd from Chrono's exact KKT solve
  (kkt.py) against the dense reference and the generated code, on staged then
  random states (near-manifold, closed and velocity-consistent for loop models:
  comparing at torn states would compare stabilization schemes).
- `sim_gap_dt`, `sim_gap_dt2`, `sim_ratio`: the side-by-side trajectories of
  sim.py at dt and dt/2.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from tqdm import tqdm

from crosscheck.checks import Check
from crosscheck.dense import forward as dense_forward
from mechdyn.core.integrate import integrate
from mechdyn.core.model import Model
from mechdyn.core.sample import State, scaled_error, states
from mechdyn.dynamics import Dynamics

from . import kkt
from .build import ChronoModel, build
from .mapping import BodyStates, Mapping
from .sim import SimRun

GATE_QD = 1e-8  # finite differences of O(1) poses at h = 1e-4, fourth order: ~1e-11 noise; a sign flip is 2
GATE_ACCEL = 1e-8  # two exact solves: tree models ~1e-14; loop models up to 3.4e-10 (slidercrank), the dense and
# generated routes' Baumgarte terms on the sampled states' ~1e-12 closure residual (3e-14 with them switched off)
GATE_SIM_GAP = 1e-2  # position (m) or attitude (rad): first-order truncation over 0.25 s is ~1e-5
RATIO_FIRST = (1.8, 2.2)  # gap(dt)/gap(dt/2) of two first-order schemes
RATIO_SECOND = (3.6, 4.4)  # ... of two first-order schemes whose O(dt) terms coincide
GAP_ROUNDOFF = 1e-10  # both gaps below this: the two discretizations coincide, there is no truncation to halve
STAGES = ("gravity only (qd, tau, fext, act zero)", "+ qd", "+ tau", "+ fext", "+ act")
FD_STEP = 1e-4


def stage(k: int, s: State) -> State:
    """Trial k's state with the inputs not yet staged zeroed: trials 0-4 turn on qd, tau, fext, act in turn.

    qd = 0 is closure-consistent, so staging never tears a loop.
    """
    if k >= len(STAGES) - 1:
        return s
    off = ("qd", "tau", "fext", "act")[k:]
    return replace(s, **{name: np.zeros_like(getattr(s, name)) for name in off})


def draw(model: Model, trials: int, seed: int) -> list[State]:
    """Seeded states: random for a tree; closed, velocity-consistent near-manifold states for a loop model (tear 0:
    comparing at torn states would compare stabilization schemes)."""
    return list(tqdm(states(model, trials, seed, tear=0.0), total=trials, desc=f"states for {model.name}",
                     unit="state", leave=False, disable=None))


# -- qd = dq/dt ---------------------------------------------------------------
def _vee(W: np.ndarray) -> np.ndarray:
    return 0.5 * np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]])


def fd_velocities(mapping: Mapping, q: np.ndarray, qd: np.ndarray, h: float = FD_STEP) -> BodyStates:
    """Body states at q whose velocities are central differences (fourth order) of the position mapping
    along q(t) = integrate(q, qd, t)."""
    model = mapping.model
    at = {t: mapping.to_chrono(integrate(model, q, qd, t)) for t in (-2 * h, -h, h, 2 * h)}
    bs = mapping.to_chrono(q)

    def d(f):
        return (f(at[-2 * h]) - 8 * f(at[-h]) + 8 * f(at[h]) - f(at[2 * h])) / (12 * h)

    vcom = d(lambda s: s.com)
    Rdot = d(lambda s: s.R)
    w = np.array([_vee(R.T @ Rd) for R, Rd in zip(bs.R, Rdot)]).reshape(-1, 3)
    return BodyStates(bs.R, bs.com, vcom, w)


def qd_consistency(model: Model, trials: int = 200, seed: int = 0, mapping: Mapping | None = None,
                   drawn: list[State] | None = None) -> Check:
    """The velocity mapping against finite differences of the position mapping, in joint coordinates."""
    mapping = mapping or Mapping(model)
    worst, at = 0.0, -1
    for k, s in enumerate(tqdm(drawn or draw(model, trials, seed), desc="qd = dq/dt", unit="state",
                               leave=False, disable=None)):
        _, qd_map = mapping.from_chrono(mapping.to_chrono(s.q, s.qd), s.q)
        _, qd_fd = mapping.from_chrono(fd_velocities(mapping, s.q, s.qd), s.q)
        e = scaled_error(qd_fd, qd_map)
        if e > worst or at < 0:
            worst, at = e, k
    return Check("qd_consistency", worst, GATE_QD,
                 f"{trials} states, max scaled |qd_velocity_map - qd_fd_of_position_map| (worst at trial {at})",
                 "" if worst <= GATE_QD else "a joint's q runs against its qd (a sign inversion shows as 2.0): "
                 "check E = R^T and S = +a in the joint transform, or the mapping to Chrono")


# -- accelerations --------------------------------------------------------------
def accelerations(cm: ChronoModel, dyn: Dynamics, trials: int = 200, seed: int = 0,
                  drawn: list[State] | None = None) -> tuple[Check, Check]:
    """qdd from Chrono's KKT solve against the dense reference and against the generated code."""
    model = cm.model
    worst = {"dense": (0.0, -1), "generated": (0.0, -1)}
    for k, s in enumerate(tqdm(drawn or draw(model, trials, seed), desc="chrono accelerations", unit="state",
                               leave=False, disable=None)):
        s = stage(k, s)
        a = kkt.forward(cm, s.q, s.qd, s.tau, s.fext, s.act)
        for name, b in (("dense", dense_forward(model, s.q, s.qd, s.tau, s.fext, s.act)),
                        ("generated", dyn.forward(s.q, s.qd, s.tau, s.fext, s.act))):
            e = scaled_error(a, b)
            if e > worst[name][0] or worst[name][1] < 0:
                worst[name] = (e, k)
    staged = f"{min(trials, len(STAGES))} staged"  # gravity only, then + qd, + tau, + fext, + act
    note = ("trials 0-4 turn on gravity, qd, tau, fext, act in turn: the first failing one names the input at fault"
            if max(w[0] for w in worst.values()) > GATE_ACCEL else "")
    return tuple(
        Check(f"accel_vs_{name}", worst[name][0], GATE_ACCEL,
              f"{trials} trials ({staged}), max scaled |qdd_chrono - qdd_{name}| (worst at trial {worst[name][1]})",
              note)
        for name in ("dense", "generated"))


# -- trajectories ---------------------------------------------------------------
@dataclass(frozen=True)
class RatioCheck(Check):
    """gap(dt)/gap(dt/2): passes inside one of its `windows`: by default 2.0 ± 0.2 (first order) or 4.0 ± 0.4
    (the two schemes share their O(dt) term, so the gap is second order); two second-order schemes have only the
    second. Both gaps at round-off pass too (the schemes coincide). A real discrepancy does not shrink with the
    step: its ratio is near 1."""

    regime: str = ""
    roundoff: bool = False
    windows: tuple[tuple[float, float], ...] = (RATIO_FIRST, RATIO_SECOND)

    @property
    def passed(self) -> bool:
        return bool(self.roundoff or any(lo <= self.value <= hi for lo, hi in self.windows))

    def line(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        gate = " or ".join(f"{(lo + hi) / 2:.1f} ± {(hi - lo) / 2:.1f}" for lo, hi in self.windows)
        line = f"{self.name}: {self.detail} = {self.value:.3f} (gate {gate}; {self.regime}) {verdict}"
        return f"{line}\n  {self.note}" if self.note else line


def _regime(ratio: float, roundoff: bool) -> str:
    if roundoff:
        return "both gaps at round-off: the two discretizations coincide on this model"
    if RATIO_FIRST[0] <= ratio <= RATIO_FIRST[1]:
        return "first order: the gap is integrator truncation"
    if RATIO_SECOND[0] <= ratio <= RATIO_SECOND[1]:
        return "second order: the two first-order schemes share their O(dt) term on this model"
    return "does not shrink as a truncation error would"


def sim_checks(model: Model, run_dt: SimRun, run_dt2: SimRun, T: float, scheme: str = "euler") -> list[Check]:
    """sim_gap_dt, sim_gap_dt2 and sim_ratio from the two side-by-side runs; with the "hht" pair (both second
    order) hht_gap_dt, hht_gap_dt2 and hht_ratio, which must be RATIO_SECOND's."""
    out, pre = [], "hht" if scheme == "hht" else "sim"
    for key, r in ((f"{pre}_gap_dt", run_dt), (f"{pre}_gap_dt2", run_dt2)):
        g, k, b = r.worst
        out.append(Check(key, g, GATE_SIM_GAP,
                         f"T={T:g} dt={r.dt:g}, max gap generated vs Chrono, position (m) or attitude (rad) "
                         f"(worst {model.bodies[b].name} at t={r.t[k]:.4f})"))
    g1, g2 = run_dt.worst[0], run_dt2.worst[0]
    ratio = g1 / g2 if g2 > 0 else float("inf")
    roundoff = max(g1, g2) <= GAP_ROUNDOFF
    regime = _regime(ratio, roundoff)
    if scheme == "hht":
        ok = roundoff or RATIO_SECOND[0] <= ratio <= RATIO_SECOND[1]
        regime = regime if roundoff or not ok else "second order: both schemes are"
        out.append(RatioCheck("hht_ratio", ratio, RATIO_SECOND[1], "gap(dt) / gap(dt/2), two second-order schemes",
                              "" if ok else "two second-order schemes whose gap does not fall by 4 per halving",
                              regime=regime, roundoff=roundoff, windows=(RATIO_SECOND,)))
        return out
    ok = roundoff or any(lo <= ratio <= hi for lo, hi in (RATIO_FIRST, RATIO_SECOND))
    out.append(RatioCheck("sim_ratio", ratio, RATIO_FIRST[1], "gap(dt) / gap(dt/2)",
                          "" if ok else "a gap that does not halve with the step is a real discrepancy, not truncation",
                          regime=regime, roundoff=roundoff))
    return out


def run_all(model: Model, dyn: Dynamics, trials: int = 200, seed: int = 0, T: float | None = None,
            dt: float | None = None, progress: bool = False) -> list[Check]:
    """The three checks: qd_consistency, accel_vs_dense, accel_vs_generated, then the sim gates when T and dt are given."""
    from .sim import compare

    drawn = draw(model, trials, seed)
    cm = build(model)
    checks = [qd_consistency(model, trials, seed, cm.mapping, drawn), *accelerations(cm, dyn, trials, seed, drawn)]
    if T is not None and dt is not None:
        checks += sim_checks(model, *compare(model, dyn, T, dt, seed, progress=progress), T)
    return checks
