"""The generated dynamics and Chrono, stepped side by side from one initial state.

Two pairs of schemes (`scheme`): "euler", described first below, and "hht": the project's generalized-α at
α_m = 0, α_f = −α (mechdyn.sim.implicit, the equations at the step's end, Arnold and Brüls' form) against
Chrono's ChTimestepperHHT at the same α (forces averaged between the step's ends, positions additive, the
constraints at position level with Newton to tight tolerances). Both are second order, so the gap is O(dt²)
and falls by 4 per halving; their O(dt²) terms differ, which is what the gap measures.

The project side is `mechdyn.sim.run.simulate` with the documented rule in its
first-order form, semi-implicit Euler (kick with f(q, qd), then drift by the
integration rule of docs/conventions.md), in C. Chrono steps the same system
with its Euler implicit linearized stepper, which is semi-implicit Euler in
maximal coordinates: a velocity update with the forces at the start of the
step and the constraints imposed on the new velocities, then a position update.
Both are first order, so where the bodies end up differs by O(dt); the run is
repeated at dt/2, and a gap that halves (ratio 2) is truncation, while a real
discrepancy does not shrink with the step.

Inputs are held at zero on both sides (tau, fext and act), so both integrate
the same autonomous system but for the drivers: a driven model's drivers are
driven by the same motions on both sides (`sim_motions`, unless given: each
a sine of SIM_AMPLITUDE at SIM_HZ, blended in over SIM_BLEND, the drivers a
quarter period apart), the generated side's by `Dynamics.set_motion` (its
steppers put each driven coordinate on its schedule at every stage), Chrono's
by its motors' functions (imposed at velocity level, from C and Ct = −f'). The
start is the sampled state put on the schedule at t = 0 (`Dynamics.
driven_state`), and both sides record the drivers' reactions: the generated
code's at each recorded state, Chrono's motors' from the step that reached
it (the start's from the exact KKT solve on both sides), whose gap is
truncation too. Chrono re-evaluates its TSDAs every step on its
own; an RSDA is a torque written into an accumulator, so it is recomputed
before every step from the joint state read back out of Chrono (the angle
unwrapped against the previous step). A torque written once and left would
integrate a different system.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from crosscheck.dense.elements import rsda_torque
from mechdyn.core.kinematics import forward_kinematics
from mechdyn.core import motion
from mechdyn.core.model import Model
from mechdyn.core.motion import Motion
from mechdyn.core.sample import states
from mechdyn.dynamics import Dynamics
from mechdyn.sim.implicit import Implicit
from mechdyn.sim.run import simulate

from . import require_pychrono
from .build import ChronoModel, build, read, set_loads
from .kkt import scatter_accelerations, set_state
from .mapping import body_gap

RECORDS = 50  # samples over the run at which the two sides are compared
SIM_AMPLITUDE, SIM_HZ, SIM_BLEND = 0.01, 2.0, 0.5  # each driver's sine (m or rad, Hz, s of blend)


@dataclass(frozen=True)
class SimRun:
    """Both sides' body poses at the record times, and their gap."""

    dt: float
    t: np.ndarray  # (n,)
    p_gen: np.ndarray  # (n, nbody, 3) body origins, generated dynamics
    p_chrono: np.ndarray  # (n, nbody, 3) body origins, Chrono
    gap: np.ndarray  # (n, nbody) worse of position (m) and attitude (rad) per body
    seconds_chrono: float
    seconds_gen: float
    r_gen: np.ndarray | None = None  # (n, ndriver) the drivers' reactions, generated dynamics (None: undriven)
    r_chrono: np.ndarray | None = None  # (n, ndriver) the motors' reactions, Chrono

    @property
    def worst(self) -> tuple[float, int, int]:
        """The largest gap, and the record and body where it occurred."""
        k, b = np.unravel_index(int(np.argmax(self.gap)), self.gap.shape)
        return float(self.gap[k, b]), int(k), int(b)

    @property
    def react_gap(self) -> np.ndarray:
        """(n, ndriver) |reaction_generated − reaction_chrono| / max(1, the largest generated reaction of the run)."""
        return np.abs(self.r_gen - self.r_chrono) / max(1.0, float(np.max(np.abs(self.r_gen))))

    @property
    def react_worst(self) -> tuple[float, int, int]:
        """The largest scaled reaction gap, and the record and driver where it occurred."""
        g = self.react_gap
        k, d = np.unravel_index(int(np.argmax(g)), g.shape)
        return float(g[k, d]), int(k), int(d)


def initial_state(model: Model, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The shared initial state: the sampler's first state, closed and velocity-consistent for a loop model."""
    s = next(states(model, 1, seed, tear=0.0))
    return s.q, s.qd


def sim_motions(model: Model) -> list[Motion]:
    """The drivers' motions of the side-by-side runs: driver k a sine of SIM_AMPLITUDE (m or rad) at SIM_HZ,
    phase k π/2 (a rig's posts a quarter period apart: heave, pitch and roll all move), blended in over
    SIM_BLEND s."""
    return [motion.sine(SIM_AMPLITUDE, SIM_HZ, (k * np.pi / 2) % (2 * np.pi), blend=SIM_BLEND)
            for k in range(len(model.drivers))]


class driving:
    """`with driving(dyn, motions):` dyn's drivers on these motions inside, back on their own after."""

    def __init__(self, dyn: Dynamics, motions: list[Motion]) -> None:
        self.dyn, self.motions = dyn, motions

    def __enter__(self) -> Dynamics:
        self.saved = dict(self.dyn.motions)
        for d, m in zip(self.dyn.model.drivers, self.motions):
            self.dyn.set_motion(d.name, m)
        return self.dyn

    def __exit__(self, *exc) -> None:
        for name, m in self.saved.items():
            self.dyn.set_motion(name, m)


def _steps(T: float, dt: float, records: int) -> tuple[int, int]:
    """(nsteps, stride): nsteps = T/dt rounded, stride its largest divisor giving at least `records` records,
    so the last record falls at T."""
    nsteps = max(1, int(round(T / dt)))
    return nsteps, max(d for d in range(1, max(1, nsteps // records) + 1) if nsteps % d == 0)


def run_chrono(cm: ChronoModel, q0: np.ndarray, qd0: np.ndarray, nsteps: int, stride: int, dt: float,
               progress: bool = False, refresh_rsda: bool = True, accelerations: bool = False,
               reactions: list | None = None) -> list:
    """Step Chrono nsteps of dt from (q0, qd0), inputs zero, returning the body states every stride steps (start included).
    A driven model's motors follow their functions from t = 0; `reactions` (a list) receives the motors' reactions
    at each record (the start's from the exact KKT solve, then each recording step's).

    refresh_rsda=False leaves the RSDA torques as written at the start: the frozen-torque mistake, kept so a test
    can show that the trajectory check catches it. `accelerations`: hand Chrono the start's accelerations and
    reactions from the exact KKT solve, which HHT reads as its a_0 and λ_0: left at zero, its first step's
    velocity is off by O(dt) and the run is first order (DoAssembly's are differenced, and it moves the
    velocities by 2e-5 on threelink).
    """
    model, system = cm.model, cm.system
    set_state(cm, q0, qd0)  # RSDA torques at the start from the project's own q0, qd0
    if accelerations or cm.motors:
        scatter_accelerations(cm)
    system.SetChTime(0.0)
    out = [read(cm)]
    if reactions is not None:
        reactions.append(cm.reactions())
    q_hint = np.array(q0, dtype=float)
    joints = sorted({e.body for e in model.rsdas})
    touched = sorted({i for j in joints for i in (j, model.bodies[j].parent) if i >= 0})
    slots = [model.qidx[j] for j in joints]
    with tqdm(total=nsteps, desc=f"chrono {model.name} dt={dt:g}", unit="step", unit_scale=True, leave=False,
              disable=None if progress else True) as bar:
        for n in range(1, nsteps + 1):
            if joints and n > 1 and refresh_rsda:
                bs = read(cm, touched)
                q, qd = cm.mapping.from_chrono(bs, q_hint, joints)
                q_hint[slots] = q[slots]  # unwrap the next step against this one
                set_loads(cm, bs, rsda_torque(model, q, qd, None), None, None, touched)
                system.ForceUpdate()  # DoStepDynamics re-reads the accumulators only after an update
            system.DoStepDynamics(dt)
            if n % stride == 0:
                out.append(read(cm))
                if reactions is not None:
                    reactions.append(cm.reactions())
            if n % 256 == 0:
                bar.update(256)
        bar.update(nsteps % 256)
    return out


HHT_ALPHA = -0.1  # the default α of the "hht" pair (Chrono's range [−1/3, 0])


def use_hht(cm: ChronoModel, alpha: float) -> None:
    """Switch the Chrono system to its HHT stepper at `alpha`: no step control (the comparison's step is fixed),
    full Newton (the Jacobian at every iteration) to tolerances far below the gap."""
    ch = require_pychrono()
    cm.system.SetTimestepperType(ch.ChTimestepper.Type_HHT)
    ts = ch.CastToChTimestepperHHT(cm.system.GetTimestepper())
    ts.SetAlpha(alpha)
    ts.SetStepControl(False)
    ts.SetMaxIters(50)
    ts.SetRelTolerance(1e-12)
    ts.SetAbsTolerances(1e-12, 1e-10)
    ts.SetJacobianUpdateMethod(ch.ChTimestepperImplicit.JacobianUpdate_EVERY_ITERATION)


def run(model: Model, dyn: Dynamics, q0: np.ndarray, qd0: np.ndarray, nsteps: int, stride: int, dt: float,
        progress: bool = False, refresh_rsda: bool = True, scheme: str = "euler", alpha: float = HHT_ALPHA,
        motions: list[Motion] | None = None) -> SimRun:
    """One side-by-side run of nsteps at step dt, compared every stride steps (refresh_rsda: see `run_chrono`),
    with the pair of schemes `scheme` ("euler" or "hht" at `alpha`); a driven model's drivers on `motions`
    (default `sim_motions`), (q0, qd0) on their schedule at t = 0."""
    motions = sim_motions(model) if motions is None else motions
    t0 = time.perf_counter()
    with driving(dyn, motions):
        if model.drivers:
            q0, qd0, _ = dyn.driven_state(q0, qd0, 0.0)
        if scheme == "hht":
            traj = simulate(dyn, q0, qd0, nsteps * dt, dt, scheme="hht", stride=stride,
                            implicit=Implicit(alpha=alpha, tol=1e-13))
        else:
            traj = simulate(dyn, q0, qd0, nsteps * dt, dt, scheme="euler", stride=stride)
    t1 = time.perf_counter()
    cm = build(model, motions=motions)
    if scheme == "hht":
        use_hht(cm, alpha)
    reactions = [] if model.drivers else None
    chrono_states = run_chrono(cm, q0, qd0, nsteps, stride, dt, progress, refresh_rsda, scheme == "hht", reactions)
    t2 = time.perf_counter()
    n = min(len(traj.t), len(chrono_states))
    p_gen, p_ch, gap = [], [], []
    for k in range(n):
        kin = forward_kinematics(model, traj.q[k])
        bs = chrono_states[k]
        po = bs.origin(model)
        p_gen.append(kin.p)
        p_ch.append(po)
        gap.append(body_gap(model, kin.R, kin.p, bs.R, po))
    driven = bool(model.drivers)
    return SimRun(dt, traj.t[:n], np.array(p_gen), np.array(p_ch), np.array(gap), t2 - t1, t1 - t0,
                  traj.reactions[:n] if driven else None, np.array(reactions[:n]) if driven else None)


def compare(model: Model, dyn: Dynamics, T: float, dt: float, seed: int = 0, records: int = RECORDS,
            progress: bool = False, refresh_rsda: bool = True, scheme: str = "euler",
            alpha: float = HHT_ALPHA, motions: list[Motion] | None = None) -> tuple[SimRun, SimRun]:
    """The side-by-side run at dt and again at dt/2, from the same initial state, compared at the same times (a
    driven model's drivers on `motions`, default `sim_motions`)."""
    q0, qd0 = initial_state(model, seed)
    nsteps, stride = _steps(T, dt, records)
    return (run(model, dyn, q0, qd0, nsteps, stride, dt, progress, refresh_rsda, scheme, alpha, motions),
            run(model, dyn, q0, qd0, 2 * nsteps, 2 * stride, dt / 2, progress, refresh_rsda, scheme, alpha, motions))


def default_body(model: Model, r: SimRun) -> int:
    """The body whose origin travels farthest on the generated side: the most telling one to tabulate."""
    return int(np.argmax(np.linalg.norm(np.diff(r.p_gen, axis=0), axis=2).sum(axis=0)))


def react_table(model: Model, r: SimRun, rows: int = 8) -> list[str]:
    """Lines of t and, for the driver with the largest reaction gap at that time, both sides' reactions."""
    picks = sorted({int(round(x)) for x in np.linspace(0, len(r.t) - 1, rows + 1)[1:]})
    g = r.react_gap
    lines = [f"  {'t':>7}  {'driver':>10}  {'generated':>14}  {'chrono':>14}  {'scaled gap':>10}"]
    for k in picks:
        d = int(np.argmax(g[k]))
        lines.append(f"  {r.t[k]:7.4f}  {model.drivers[d].name:>10}  {r.r_gen[k, d]:14.6f}  {r.r_chrono[k, d]:14.6f}"
                     f"  {g[k, d]:10.2e}")
    return lines


def table(model: Model, r: SimRun, body: int, rows: int = 8) -> list[str]:
    """Lines of t, both sides' origin of `body`, and the largest gap over all bodies at that time."""
    name = model.bodies[body].name
    picks = sorted({int(round(x)) for x in np.linspace(0, len(r.t) - 1, rows + 1)[1:]})
    lines = [f"  {'t':>7}  {'generated ' + name:^31}  {'chrono ' + name:^31}  {'max gap':>9}  at body"]
    for k in picks:
        g, c = r.p_gen[k, body], r.p_chrono[k, body]
        b = int(np.argmax(r.gap[k]))
        lines.append(f"  {r.t[k]:7.4f}  ({g[0]:9.5f} {g[1]:9.5f} {g[2]:9.5f})  ({c[0]:9.5f} {c[1]:9.5f} {c[2]:9.5f})"
                     f"  {r.gap[k, b]:9.2e}  {model.bodies[b].name}")
    return lines
