"""The settle (docs/simulation.md "The settle"): a tracked vehicle from its design pose at rest, the ground's gains
ramped in, T seconds on its own ground, and the gates only a trajectory can give.

    res = settle(dyn)                  # 4 s at the accuracy step
    for g in res.gates: print(g.line())
    q, qd = res.state                  # the settled state, for a run that continues from it (the slope hold)

The run is stepped in three calls of one ContactSim: the first `window` seconds at stride 1, the middle on a coarse
stride, the last `window` seconds at stride 1 again, since the energy gate's single-step rises (through the start's
transient and at the end) and the period-2 content need every step. The sim carries the ground impulse (and the
anchors) from one call to the next, so the three are one run.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from mechdyn.dynamics import Dynamics, integer, real_scalar

from .contact import AUX, STORED, ContactRun, ContactSim, Step, accuracy_step
from .energy import mechanics, total_mass
from .gate import Gate, below
from .implicit import Implicit
from .run import step_count

ROWS = 2000  # recorded rows of the coarse part, whatever dt is
WINDOW = 0.5  # s at stride 1 at the start and at the end: the energy's single steps, the load, the period-2 content
MOMENTUM_BOUND = 1e-3  # of the impulse scale: truncation is ~1e-5 of it and first order in dt; one m113 corner's
# share of the weight (1/104), unreported, is ~5e-3 of it (docs/simulation.md "The settle")
ENERGY_STEP_BOUND = 1e-4  # of the run's largest kinetic energy: the most one step may add
LOAD_BOUND = 0.01  # relative error of the settled ground load against the weight
PERIOD2_BOUND = 1e-3  # of the weight


@dataclass(frozen=True)
class Settle:
    """A settle: the run (stride-1 rows over the first window, coarse rows, stride-1 rows over the last), the
    step, the gates and the figures reported beside them, and the sim that ran it (it carries the anchors and the
    impulse on to a run that continues from `state`)."""
    run: ContactRun
    last_window_row: int  # the row index where the last every-step window begins
    step: Step
    gates: list[Gate]
    notes: list[str]  # reported, not gated
    sim: ContactSim

    @property
    def state(self) -> tuple[np.ndarray, np.ndarray]:
        """The settled (q, qd): the last row."""
        return self.run.q[-1].copy(), self.run.qd[-1].copy()

    def every(self, stride: int) -> ContactRun:
        """The run's rows about `stride` steps apart (the first at or after each multiple of it, and the last):
        the windows' every-step rows thinned to the middle's spacing, e.g. for a trace."""
        t, stride = self.run.t, integer("stride", stride, 1)
        keep = np.unique(np.append(np.searchsorted(t, np.arange(0.0, t[-1], stride * self.run.dt) - 1e-9 * self.run.dt),
                                   len(t) - 1))
        r = self.run
        return dataclasses.replace(r, t=t[keep], q=r.q[keep], qd=r.qd[keep], dissipated=r.dissipated[keep],
                                   aux=r.aux[keep])

    @property
    def stepping(self) -> float:
        """Wall seconds of the stepping calls."""
        return self.run.seconds


def _joined(a: ContactRun, b: ContactRun) -> ContactRun:
    """Run b (which starts at a's last state) after a: its first row dropped, its work counted from a's."""
    aux = b.aux[1:].copy()
    aux[:, AUX.index("work")] += a.aux[-1, AUX.index("work")]
    return ContactRun(np.concatenate([a.t, b.t[1:]]), np.concatenate([a.q, b.q[1:]]),
                      np.concatenate([a.qd, b.qd[1:]]), a.dt, a.scheme, np.concatenate([a.dissipated, aux[:, 0]]),
                      a.newton + b.newton if a.newton and b.newton else b.newton, aux=np.concatenate([a.aux, aux]),
                      seconds=a.seconds + b.seconds,
                      stages={k: a.stages.get(k, 0.0) + b.stages.get(k, 0.0) for k in a.stages | b.stages})


def settle(dyn: Dynamics, T: float = 4.0, dt: float | None = None, samples: int = 90, anchored: bool = False,
           stride: int | None = None, progress: bool = False, window: float = WINDOW, scheme: str = "verlet",
           sim: ContactSim | None = None, implicit: Implicit | None = None) -> Settle:
    """Settle the model from its design pose at rest for T s at dt (None: accuracy_step's at `samples` per
    contact period) and gate the run: crush, load, momentum, energy (its net change and its single steps),
    period2. The first and the last `window` s are recorded at every step (the energy's single steps, through
    the start's transient and at the end; the end's load and period-2 content), the rest at `stride` (None:
    about ROWS rows).
    `anchored`: the ground's anchored friction. `scheme`: verlet, euler, galpha or hht, `implicit` the last two's
    settings. `sim`: the ContactSim to step (a test's planted module or softened model; a new one on dyn by
    default)."""
    T, window = real_scalar("T", T), real_scalar("window", window)
    if dyn.model.ground is None:
        raise ValueError(f"model '{dyn.model.name}' has no ground block: nothing to settle on")
    sim = sim or ContactSim(dyn, anchored=anchored)
    step = accuracy_step(sim.contact, samples)
    if dt is not None:
        dt = real_scalar("dt", dt)
        step = Step(dt, step.period, round(step.period / dt), f"given; {step.what}")
    total, nwin = step_count(T, step.dt), step_count(window, step.dt)
    if not (nwin > 0 and 2 * nwin < total):
        raise ValueError(f"the settle records its first and last {window:g} s at every step; T must exceed "
                         f"{2 * window:g} s, got {T:g}")
    stride = integer("stride", stride, 1) if stride is not None else max(1, (total - 2 * nwin) // ROWS)
    if stride > total - 2 * nwin:
        raise ValueError(f"a stride of {stride} is more than the {total - 2 * nwin} steps between the windows")
    nmid = (total - 2 * nwin) // stride * stride  # whole strides, so the coarse part ends on a recorded row
    q, qd = dyn.model.q0(), np.zeros(dyn.nv)
    run, starts = None, []
    for n, every in ((nwin, 1), (nmid, stride), (total - nwin - nmid, 1)):
        if n == 0:
            continue
        part = sim.run(q, qd, n * step.dt, step.dt, scheme, stride=every, t0=0.0 if run is None else run.t[-1],
                       progress=progress, dissipation=every == 1, implicit=implicit)
        starts.append(0 if run is None else len(run.t) - 1)
        run = part if run is None else _joined(run, part)
        q, qd = run.q[-1], run.qd[-1]
    gates, notes = _gates(dyn, sim, run, starts[-1])
    return Settle(run, starts[-1], step, gates, notes, sim)


def alternation(F: np.ndarray) -> np.ndarray:
    """mean((-1)^k F_k) over the rows of F (n, ...), on an even number of them (the first dropped when n is odd):
    over an odd count a constant leaks in as its value over n (the weight over 2675 steps: 42 N on m113)."""
    F = np.asarray(F, dtype=float)[len(F) % 2:]
    return ((-1.0) ** np.arange(len(F))) @ F / len(F)


def _gates(dyn: Dynamics, sim: ContactSim, run: ContactRun, w0: int) -> tuple[list[Gate], list[str]]:
    model, con = dyn.model, sim.contact
    mass = total_mass(model)
    g = np.asarray(model.gravity, dtype=float)
    weight = mass * float(np.linalg.norm(g))
    mech = mechanics(model, run.q, run.qd)
    ramp = int(np.searchsorted(run.t, sim.ramp_ground - 1e-12))  # the first row at or after the ramp's end
    col = run.col
    t_win = run.t[-1] - run.t[w0]
    gates, notes = [], []

    # crush: the band's worst penetration as a fraction of its roller's crush depth (md_band_depth)
    crush = col("crush")
    k = int(np.argmax(crush))
    gates += [] if not con.bands else [below(
        "crush", crush[k], 1.0, "of the crush depth",
        f"worst at t = {run.t[k]:.3g} s; pins {col('pin_depth')[0]:.4g} -> {col('pin_depth')[-1]:.4g} m (deepest "
        f"{col('pin_depth').max():.4g} m), faces {col('face_depth')[0]:.4g} -> {col('face_depth')[-1]:.4g} m "
        f"(deepest {col('face_depth').max():.4g} m), start -> end")]

    # load: the mean vertical ground force over the window, the exact average of every step's, against the weight
    load = (col("jz")[-1] - col("jz")[w0]) / t_win
    gates.append(below("load", abs(load - weight) / weight, LOAD_BOUND, "relative",
                       f"mean vertical ground force {load:.6g} N over the last {t_win:.3g} s against the weight "
                       f"{weight:.6g} N"))

    # momentum: ΔP (numeric kinematics) against M·g·Δt + ΔJ (the impulse the loop reports applying), after the ramp
    dt_m = run.t[-1] - run.t[ramp]
    jf = np.stack([col("jx"), col("jy"), col("jz")], 1)
    dP, gdt, dJ = mech.momentum[-1] - mech.momentum[ramp], mass * g * dt_m, jf[-1] - jf[ramp]
    scale = float(np.linalg.norm(gdt) + np.linalg.norm(dJ))
    resid = float(np.linalg.norm(dP - gdt - dJ))
    gates.append(below("momentum", resid / scale, MOMENTUM_BOUND, "of the impulse scale",
                       f"|ΔP − M·g·Δt − ΔJ| {resid:.4g} N·s against |M·g·Δt| + |ΔJ| {scale:.4g} N·s, "
                       f"t {run.t[ramp]:.3g} -> {run.t[-1]:.3g} s"))

    # energy: the whole budget plus the work the model's dampers and the brakes dissipated: a loss after the ramp
    # (the contact dissipates), and no single step adding much
    E = mech.kinetic + mech.potential + sum(col(c) for c in STORED) + col("work")
    ke_scale = float(mech.kinetic.max())
    # single steps: consecutive rows one step apart (the stride-1 parts), from the ramp's end on
    one = np.flatnonzero((np.diff(run.t) < 1.5 * run.dt) & (run.t[:-1] >= run.t[ramp]))
    rise = E[one + 1] - E[one]
    j = int(np.argmax(rise))
    gates.append(below("energy", rise[j] / ke_scale, ENERGY_STEP_BOUND, "of the KE scale",
                       f"largest single-step rise {rise[j]:.4g} J at t = {run.t[one[j] + 1]:.4g} s over "
                       f"{len(one)} steps (the windows at stride 1, after the ramp) against the run's "
                       f"largest kinetic energy {ke_scale:.4g} J"))
    net = float(E[-1] - E[ramp])
    gates.append(below("energy_net", net, 0.0, "J", f"E + dissipated work, t {run.t[ramp]:.3g} -> "
                       f"{run.t[-1]:.3g} s: {E[ramp]:.8g} -> {E[-1]:.8g} J (must be a loss)"))

    # the contact's own dissipated work (step.c, integrated at every step of the windows): it never falls over a
    # step (every law passive), and with it the budget is complete, so over the settled window no step may add
    # more than truncation: an injection smaller than the contact's losses, which the budget above would hide
    wc = col("work_contact")
    drop = float(np.min(wc[one + 1] - wc[one]))
    gates.append(below("passivity", -drop, 1e-12 * ke_scale, "J",
                       f"the contact's dissipated work over a step, its least of {len(one)} steps: {drop:.4g} J "
                       f"(a force law that injects makes it negative)"))
    last = one[one >= w0]
    complete = E + wc
    ke_last = float(mech.kinetic[w0:].max())
    rise_c = complete[last + 1] - complete[last]
    k = int(np.argmax(rise_c))
    gates.append(below("balance", rise_c[k] / ke_last, ENERGY_STEP_BOUND, "of the window's KE",
                       f"the complete budget (the contact's dissipation included): largest single-step rise "
                       f"{rise_c[k]:.4g} J at t = {run.t[last[k] + 1]:.4g} s over the last {len(last)} steps against "
                       f"their largest kinetic energy {ke_last:.4g} J; net {complete[-1] - complete[w0]:.4g} J "
                       f"against the contact's {wc[-1] - wc[w0]:.4g} J of losses there"))
    # period2: the ground force's alternation from step to step, over the window's steps
    F = np.stack([col("fx"), col("fy"), col("fz")], 1)[w0 + 1:]
    alt = alternation(F)
    gates.append(below("period2", np.linalg.norm(alt) / weight, PERIOD2_BOUND, "of the weight",
                       f"|mean((-1)^k F_k)| {np.linalg.norm(alt):.4g} N (vertical {abs(alt[2]):.4g} N) over "
                       f"{len(F) // 2 * 2} steps against the weight {weight:.6g} N"))

    X = dyn.bodies(run.q[-1], run.qd[-1])
    if con.ncorner:
        notes.append(f"ground: ζ {con.ground_zeta(X):.3g} realized at the end ({con.loaded_corners(X)} loaded "
                     f"corners sharing the {mass:.6g} kg; the damper was sized for ζ {con.law.zeta_ground:g} on "
                     f"a quarter of the corners), ground depth {col('ground_depth')[-1]:.4g} m")
    if model.bodies[0].joint == "floating":
        z = run.q[:, model.qidx[0] + 6]
        notes.append(f"{model.bodies[0].name}: height {z[0]:.4g} -> {z[-1]:.4g} m, final speed "
                     f"{float(np.linalg.norm(run.qd[-1, model.vidx[0] + 3:model.vidx[0] + 6])):.3g} m/s")
    return gates, notes
