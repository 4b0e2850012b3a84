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
  comparing at torn states would compare stabilization schemes). On a driven
  model each state is put on a schedule (`on_schedule`): every driver gets a
  motion whose value and rate at the state's time t are the sampled state's own
  (so a loop model's state stays closed), its act slot f''(t), and Chrono's
  motors that motion at t; `react_vs_dense`, `react_vs_generated` compare the
  drivers' reactions too (Chrono's motors' `GetMotorForce` / `GetMotorTorque`
  from the KKT solve's multipliers).
- `sim_gap_dt`, `sim_gap_dt2`, `sim_ratio`: the side-by-side trajectories of
  sim.py at dt and dt/2; on a driven model, driven by sim.py's `SIM_MOTIONS`,
  also `react_gap_dt`, `react_gap_dt2` and `react_ratio`: the drivers'
  reactions along both trajectories.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from tqdm import tqdm

from crosscheck.checks import Check
from crosscheck.dense import forward_driven, forward_model
from mechdyn.core import motion
from mechdyn.core.integrate import integrate
from mechdyn.core.model import Model
from mechdyn.core.motion import Motion
from mechdyn.core.sample import State, scaled_error, states
from mechdyn.dynamics import Dynamics

from . import kkt
from .build import ChronoModel, build
from .mapping import BodyStates, Mapping
from .sim import SimRun

GATE_QD = 1e-8  # finite differences of O(1) poses at h = 1e-4, fourth order: ~1e-11 noise; a sign flip is 2
GATE_ACCEL = 1e-8  # two exact solves: tree models ~1e-14; loop models up to 3.4e-10 (slidercrank), the dense and
# generated routes' Baumgarte terms on the sampled states' ~1e-12 closure residual (3e-14 with them switched off)
GATE_REACT = 1e-8  # the same solves' multipliers, scaled by the largest reaction (N, N m; max(1, ...))
GATE_SIM_GAP = 1e-2  # position (m) or attitude (rad): first-order truncation over 0.25 s is ~1e-5
RATIO_FIRST = (1.8, 2.2)  # gap(dt)/gap(dt/2) of two first-order schemes
RATIO_SECOND = (3.6, 4.4)  # ... of two first-order schemes whose O(dt) terms coincide
GAP_ROUNDOFF = 1e-10  # both gaps below this: the two discretizations coincide, there is no truncation to halve
STAGES = ("gravity only (qd, tau, fext, act zero)", "+ qd", "+ tau", "+ fext", "+ act")
FD_STEP = 1e-4
SCHEDULE_T = (0.6, 3.0)  # a driven state's time is drawn in here, past its motion's blend
SCHEDULE_BLEND = 0.5
SCHEDULE_HZ = (0.5, 4.0)  # the frequency of each driver's sine is drawn in here


def stage(k: int, s: State) -> State:
    """Trial k's state with the inputs not yet staged zeroed: trials 0-4 turn on qd, tau, fext, act in turn.

    qd = 0 is closure-consistent, so staging never tears a loop.
    """
    if k >= len(STAGES) - 1:
        return s
    off = ("qd", "tau", "fext", "act")[k:]
    return replace(s, **{name: np.zeros_like(getattr(s, name)) for name in off})


def on_schedule(model: Model, s: State, rng: np.random.Generator) -> tuple[State, float, list[Motion]]:
    """The state s put on a schedule: (s with each driver's act slot set, time t, each driver's motion).

    Each driver's motion is a sine, blended in over SCHEDULE_BLEND s, whose value and rate at the drawn time t
    (past the blend) are the state's own: f(t) = q − q_design and f'(t) = qd at its coordinate, so the state is
    unchanged (a loop model's stays closed); its act slot is f''(t). With qd zero (the gravity-only stage) the
    motion is a constant, f'' = 0. A model without drivers: (s, 0, []).
    """
    if not model.drivers:
        return s, 0.0, []
    q0, act = model.q0(), s.act.copy()
    t = float(rng.uniform(*SCHEDULE_T))
    out = []
    for d in model.drivers:
        x, v = float(s.q[model.qidx[d.body]] - q0[model.qidx[d.body]]), float(s.qd[model.vidx[d.body]])
        om = 2 * np.pi * float(rng.uniform(*SCHEDULE_HZ))
        if not s.qd.any():
            m = motion.constant(x, blend=SCHEDULE_BLEND)
        else:  # A sin(ω t + φ) = x, A ω cos(ω t + φ) = v
            m = motion.sine(float(np.hypot(x, v / om)), om / (2 * np.pi),
                            float((np.arctan2(x, v / om) - om * t) % (2 * np.pi)), blend=SCHEDULE_BLEND)
        act[d.act] = float(motion.evaluate(m, t)[2])
        out.append(m)
    return replace(s, act=act), t, out


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
                  drawn: list[State] | None = None) -> tuple[Check, ...]:
    """qdd from Chrono's KKT solve against the dense reference and against the generated code; on a driven model
    (each state on a schedule, `on_schedule`) the drivers' reactions too, the motors' against the dense rows' and
    the generated ones."""
    model = cm.model
    driven = bool(model.drivers)
    names = ("dense", "generated")
    keys = [f"accel_vs_{n}" for n in names] + ([f"react_vs_{n}" for n in names] if driven else [])
    worst = {k: (0.0, -1) for k in keys}
    rng = np.random.default_rng([seed, 0xC4])  # the schedules' draws, apart from the states'
    for k, s in enumerate(tqdm(drawn or draw(model, trials, seed), desc="chrono accelerations", unit="state",
                               leave=False, disable=None)):
        s, t, motions = on_schedule(model, stage(k, s), rng)
        if driven:
            cm.set_motions(motions)
            a, r = kkt.react(cm, s.q, s.qd, s.tau, s.fext, s.act, t)
            theirs = {"dense": forward_driven(model, s.q, s.qd, s.tau, s.fext, s.act),
                      "generated": dyn.react(s.q, s.qd, s.tau, s.fext, s.act)}
        else:
            a, r = kkt.forward(cm, s.q, s.qd, s.tau, s.fext, s.act), None
            theirs = {"dense": (forward_model(model, s.q, s.qd, s.tau, s.fext, s.act), None),
                      "generated": (dyn.forward(s.q, s.qd, s.tau, s.fext, s.act), None)}
        for name, (b, rb) in theirs.items():
            for key, e in ((f"accel_vs_{name}", scaled_error(a, b)),
                           *(((f"react_vs_{name}", scaled_error(r, rb)),) if driven else ())):
                if e > worst[key][0] or worst[key][1] < 0:
                    worst[key] = (e, k)
    staged = f"{min(trials, len(STAGES))} staged"  # gravity only, then + qd, + tau, + fext, + act
    note = ("trials 0-4 turn on gravity, qd, tau, fext, act in turn: the first failing one names the input at fault"
            + ("; a driver's f'' enters with qd" if driven else "")
            if max(w[0] for w in worst.values()) > GATE_ACCEL else "")
    sched = ", each driver on a sine through the state's coordinate and rate at a drawn time" if driven else ""
    out = []
    for key in keys:
        what, name = key.split("_vs_")
        gate = GATE_ACCEL if what == "accel" else GATE_REACT
        value, at = worst[key]
        quantity = "qdd" if what == "accel" else "reaction"
        out.append(Check(key, value, gate, f"{trials} trials ({staged}{sched}), max scaled "
                         f"|{quantity}_chrono - {quantity}_{name}| (worst at trial {at})",
                         note if what == "accel" else ("" if value <= gate else
                                                        "the motors' reactions (GetMotorForce / GetMotorTorque) "
                                                        "against the drivers' reactions: check their sign and the "
                                                        "motor's frames")))
    return tuple(out)


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


def _ratio_check(name: str, g1: float, g2: float, scheme: str, what: str) -> RatioCheck:
    """gap(dt)/gap(dt/2) as a RatioCheck: first or second order for the "euler" pair, second for "hht"."""
    ratio = g1 / g2 if g2 > 0 else float("inf")
    roundoff = max(g1, g2) <= GAP_ROUNDOFF
    regime = _regime(ratio, roundoff)
    if scheme == "hht":
        ok = roundoff or RATIO_SECOND[0] <= ratio <= RATIO_SECOND[1]
        regime = regime if roundoff or not ok else "second order: both schemes are"
        return RatioCheck(name, ratio, RATIO_SECOND[1], f"{what}(dt) / {what}(dt/2), two second-order schemes",
                          "" if ok else "two second-order schemes whose gap does not fall by 4 per halving",
                          regime=regime, roundoff=roundoff, windows=(RATIO_SECOND,))
    ok = roundoff or any(lo <= ratio <= hi for lo, hi in (RATIO_FIRST, RATIO_SECOND))
    return RatioCheck(name, ratio, RATIO_FIRST[1], f"{what}(dt) / {what}(dt/2)",
                      "" if ok else "a gap that does not halve with the step is a real discrepancy, not truncation",
                      regime=regime, roundoff=roundoff)


def sim_checks(model: Model, run_dt: SimRun, run_dt2: SimRun, T: float, scheme: str = "euler") -> list[Check]:
    """sim_gap_dt, sim_gap_dt2 and sim_ratio from the two side-by-side runs; with the "hht" pair (both second
    order) hht_gap_dt, hht_gap_dt2 and hht_ratio, which must be RATIO_SECOND's. A driven model adds the drivers'
    reactions' react_gap_dt, react_gap_dt2 and react_ratio; with the "hht" pair hht_react_gap_dt and
    hht_react_gap_dt2 alone: Chrono's HHT reports the multipliers of its α-weighted equation, whose start
    transient (quartercar: 0.042, 0.016, 0.0021 N at dt 1e-3, 5e-4, 2.5e-4, all at the first record) follows no
    order, so their ratio is not gated."""
    out, pre = [], "hht" if scheme == "hht" else "sim"
    for key, r in ((f"{pre}_gap_dt", run_dt), (f"{pre}_gap_dt2", run_dt2)):
        g, k, b = r.worst
        out.append(Check(key, g, GATE_SIM_GAP,
                         f"T={T:g} dt={r.dt:g}, max gap generated vs Chrono, position (m) or attitude (rad) "
                         f"(worst {model.bodies[b].name} at t={r.t[k]:.4f})"))
    out.append(_ratio_check(f"{pre}_ratio", run_dt.worst[0], run_dt2.worst[0], scheme, "gap"))
    if run_dt.r_gen is None:
        return out
    rpre = "hht_react" if scheme == "hht" else "react"
    for key, r in ((f"{rpre}_gap_dt", run_dt), (f"{rpre}_gap_dt2", run_dt2)):
        g, k, d = r.react_worst
        out.append(Check(key, g, GATE_SIM_GAP,
                         f"T={T:g} dt={r.dt:g}, max |reaction generated - Chrono's motor| / max(1, max |reaction|) "
                         f"(worst {model.drivers[d].name} at t={r.t[k]:.4f})"))
    if scheme != "hht":  # HHT's multipliers are its α-weighted equation's, with a start transient: no order to gate
        out.append(_ratio_check(f"{rpre}_ratio", run_dt.react_worst[0], run_dt2.react_worst[0], scheme,
                                "reaction gap"))
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
