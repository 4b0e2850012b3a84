"""Trajectories: many steps per C call, strided records, inputs held or scheduled, the dampers' work beside."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from tqdm import tqdm

from mechdyn.codegen.stepper import SCHEMES
from mechdyn.core.sample import states
from mechdyn.dynamics import Dynamics, integer, real_array, real_scalar

from . import implicit as imp
from .drivers import DriverSet
from .limits import MAX_STEPS, step_count  # noqa: F401  (MAX_STEPS: re-exported beside step_count)

IMPLICIT = ("galpha", "hht")  # the implicit schemes (implicit.py); SCHEMES holds the explicit ones



@dataclass(frozen=True)
class Trajectory:
    t: np.ndarray  # (n,)
    q: np.ndarray  # (n, nq)
    qd: np.ndarray  # (n, nv)
    dt: float
    scheme: str
    dissipated: np.ndarray  # (n,) J the dampers dissipated since t[0], integrated in C at every step
    newton: imp.NewtonStats | None = None  # the implicit schemes' Newton corrections and steps
    reactions: np.ndarray | None = None  # (n, ndriver) a driven model's drivers' reactions (N or N m)
    work_driver: np.ndarray | None = None  # (n,) J the drivers did since t[0], ∫ r·ḟ dt integrated in C


class SimulationDiverged(RuntimeError):
    """The state went non-finite: `step` (1-based) is the first step that produced a NaN or inf, `t` the time
    it would have reached, and `trajectory` the states recorded before it (all finite)."""

    def __init__(self, model: str, step: int, t: float, trajectory: Trajectory) -> None:
        super().__init__(f"{model}: diverged at step {step} (t = {t:.6g} s): the state went non-finite")
        self.step, self.t, self.trajectory = step, t, trajectory


def _schedule(x, n_inner: tuple[int, ...], name: str) -> np.ndarray | None:
    """An input as a (nsched, ...) schedule: one held value or a sampled series."""
    if x is None:
        return None
    a = real_array(name, x)
    if a.shape == n_inner:
        return a[None]
    if a.ndim == len(n_inner) + 1 and a.shape[1:] == n_inner and len(a) >= 1:
        return a
    raise ValueError(f"{name} has shape {a.shape}, expected {n_inner} (held) or (nsched, *{n_inner}) with "
                     f"nsched >= 1 (scheduled)")


def _schedules(dyn: Dynamics, tau, fext, act) -> tuple[int, list[np.ndarray | None]]:
    """nsched and the three inputs as schedules of that many samples: a held input is repeated beside a scheduled
    one; scheduled inputs must have the same number of samples."""
    named = {"tau": _schedule(np.zeros(dyn.nv) if tau is None else tau, (dyn.nv,), "tau"),
             "fext": _schedule(fext, (dyn.nbody, 6), "fext"), "act": _schedule(act, (dyn.nact,), "act")}
    lengths = {k: len(s) for k, s in named.items() if s is not None and len(s) > 1}
    if len(set(lengths.values())) > 1:
        raise ValueError("scheduled inputs must have the same number of samples: "
                         + ", ".join(f"{k} has {n}" for k, n in lengths.items()))
    nsched = max(lengths.values(), default=1)
    return nsched, [None if s is None else np.ascontiguousarray(np.broadcast_to(s, (nsched, *s.shape[1:])))
                    for s in named.values()]


def simulate(dyn: Dynamics, q0, qd0, T: float, dt: float, scheme: str = "verlet", stride: int = 1,
             tau=None, fext=None, act=None, dt_sched: float | None = None, progress: bool = False,
             implicit: imp.Implicit | None = None) -> Trajectory:
    """Step the model from (q0, qd0) for T seconds, recording the start and every stride-th step.

    tau (nv,), fext (nbody, 6) and act (nact,) are held constant; give a leading
    axis of samples, dt_sched apart, to schedule them instead (zero-order hold;
    the last sample holds past the schedule's end). Any mix of held and scheduled
    inputs is accepted; scheduled inputs must have the same number of samples, and
    dt_sched must then be finite and > 0. Arguments are checked as in Dynamics.
    If a step makes the state non-finite, raises SimulationDiverged, which carries
    the finite part of the run; a Trajectory returned is finite throughout.

    The implicit schemes "galpha" and "hht" take their settings from `implicit`
    (default Implicit()); with `implicit.adaptive`, dt is the output interval.
    A Newton failure raises implicit.NewtonFailed with the run's finite part.
    """
    if scheme not in SCHEMES and scheme not in IMPLICIT:
        raise ValueError(f"unknown scheme {scheme!r}; expected one of {', '.join([*SCHEMES, *IMPLICIT])}")
    if implicit is not None and scheme not in IMPLICIT:
        raise ValueError(f"implicit settings were given for the explicit scheme {scheme!r}")
    T, dt = real_scalar("T", T), real_scalar("dt", dt)
    stride = integer("stride", stride, 1)
    if dt <= 0 or T < 0:
        raise ValueError(f"expected dt > 0 and T >= 0; got dt {dt}, T {T}")
    nsteps = step_count(T, dt)
    nsched, (tau_s, fext_s, act_s) = _schedules(dyn, tau, fext, act)
    if nsched > 1:
        if dt_sched is None:
            raise ValueError(f"a scheduled input ({nsched} samples) needs dt_sched")
        if not real_scalar("dt_sched", dt_sched) > 0:
            raise ValueError(f"dt_sched is {dt_sched}, expected > 0")
    q, qd = np.array(real_array("q0", q0, (dyn.nq,))), np.array(real_array("qd0", qd0, (dyn.nv,)))
    if dyn.ndriver and scheme in SCHEMES:  # the drivers are stepped by the contact loop, with no contact
        if fext is not None:
            raise ValueError(f"model '{dyn.model.name}' is driven: its explicit steppers take tau and act, not fext")
        from .contact import ContactSim  # here: contact.py builds on this module

        # Verlet with the velocity predictor, as fwd_dyn_sim steps it: second order with dampers. The loop reads
        # the model without its ground, bands and tires: simulate has no contact, driven or not
        bare = replace(dyn.model, ground=None, tracks=(), tires=())
        return ContactSim(dyn, model=bare, ramp_ground=0.0, ramp_band=0.0, predictor=True).run(
            q, qd, T, dt, scheme, stride, tau=tau, act=act, dt_sched=dt_sched, progress=progress)
    if scheme in IMPLICIT:
        if implicit is not None and implicit.refresh is not None:
            raise ValueError("refresh is the contact loop's setting (its matrix is built by differences): this "
                             "stepper builds its matrix from the generated derivatives at every correction")
        return _implicit(dyn, scheme, (implicit or imp.Implicit()).checked(), q, qd, nsteps, dt, stride,
                         (tau_s, fext_s, act_s), dt_sched if nsched > 1 else 1.0, progress)
    Q, QD, W = _records(dyn, q, qd, nsteps // stride)
    work = np.zeros(1)
    qdd_prev = dyn.forward(q, qd, tau_s[0], _first(fext_s), _first(act_s))  # Verlet's first predictor
    rec = 1

    def advance(done: int, n: int) -> int:
        nonlocal rec
        got, ok = dyn.step(SCHEMES[scheme], n, done * dt, dt, q, qd, qdd_prev, tau_s, fext_s, act_s,
                           dt_sched if nsched > 1 else 1.0, stride, Q[rec:], QD[rec:], work, W[rec:])
        rec += got
        return ok

    done = _chunked(dyn, nsteps, stride, progress, advance)
    if done < nsteps:
        partial = _trajectory(rec, stride, dt, scheme, Q, QD, W)
        raise SimulationDiverged(dyn.model.name, done + 1, (done + 1) * dt, partial)
    return _trajectory(rec, stride, dt, scheme, Q, QD, W)


def _first(schedule: np.ndarray | None) -> np.ndarray | None:
    """A schedule's first sample (None for an omitted input)."""
    return None if schedule is None else schedule[0]


def _records(dyn: Dynamics, q: np.ndarray, qd: np.ndarray, nrec: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The run's record buffers Q, QD and the dissipated work W: the start's row, then nrec rows for C to fill."""
    Q, QD, W = np.empty((nrec + 1, dyn.nq)), np.empty((nrec + 1, dyn.nv)), np.zeros(nrec + 1)
    Q[0], QD[0] = q, qd
    return Q, QD, W


def _chunked(dyn: Dynamics, nsteps: int, stride: int, progress: bool, advance: Callable[[int, int], int]) -> int:
    """advance(done, n) on chunks of whole strides (so a progress bar can follow a long run) until nsteps are done
    or a chunk completes fewer than its n; the steps completed."""
    chunk = max(stride, (nsteps // 100) // stride * stride) if progress else max(nsteps, 1)
    done = 0
    with tqdm(total=nsteps, desc=f"sim {dyn.model.name}", unit="step", unit_scale=True, leave=False,
              disable=None if progress else True) as bar:
        while done < nsteps:
            n = min(chunk, nsteps - done)
            ok = advance(done, n)
            done += ok
            bar.update(ok)
            if ok < n:
                break
    return done


def _trajectory(rec: int, stride: int, dt: float, scheme: str, Q: np.ndarray, QD: np.ndarray, W: np.ndarray,
                newton: imp.NewtonStats | None = None, R: np.ndarray | None = None) -> Trajectory:
    """The first rec rows recorded (R: the drivers' records, driver_records)."""
    return Trajectory(np.arange(rec) * stride * dt, Q[:rec], QD[:rec], dt, scheme, W[:rec], newton,
                      None if R is None else R[:rec, :-1], None if R is None else R[:rec, -1])


def _implicit(dyn: Dynamics, scheme: str, opts: imp.Implicit, q: np.ndarray, qd: np.ndarray, nsteps: int,
              dt: float, stride: int, sched: tuple, dt_sched: float, progress: bool) -> Trajectory:
    """simulate's run with an implicit scheme: galpha.c in chunks of whole strides, as the explicit loop."""
    n, dt_sched, tau_c, fext_c, act_c = dyn.check_schedule(*sched, dt_sched)
    st = imp.Stepper(dyn)
    ffi, lib = st.mod.ffi, st.mod.lib
    o = st.options(scheme, opts)
    buf = lambda a: ffi.NULL if a is None else ffi.from_buffer("double[]", a)  # noqa: E731
    drv, act0 = None, _first(act_c)
    if dyn.ndriver:
        q[:], qd[:], act0 = dyn.driven_state(q, qd, 0.0, act0)
        drv = DriverSet(dyn, ffi)
        st.plant.drv = drv.struct
    qdd, acc = imp.start(dyn, q, qd, tau_c[0], _first(fext_c), act0)
    Q, QD, W = _records(dyn, q, qd, nsteps // stride)
    R = driver_records(dyn, drv, q, qd, tau_c[0], _first(fext_c), act0, nsteps // stride)
    raw, work = np.zeros(imp.STATS), np.zeros(1)
    conv, status = np.zeros(o.max_iter), ffi.new("int *")
    rec = 1

    def advance(done: int, k: int) -> int:
        nonlocal rec
        if drv:
            drv.record(R[rec:])
        dyn.bind()  # the generated functions it calls by address read this thread's parameter values
        ok = lib.md_ga_sim(st.plant, o, k, done * dt, dt, *map(buf, (q, qd, qdd, acc)), n, dt_sched,
                           *map(buf, (tau_c, fext_c, act_c)), stride, *map(buf, (Q[rec:], QD[rec:], W[rec:])),
                           buf(work), buf(raw), buf(conv), status)
        rec += ok // stride
        return ok

    done = _chunked(dyn, nsteps, stride, progress, advance)
    if status[0]:
        partial = _trajectory(rec, stride, dt, scheme, Q, QD, W, imp.stats(raw), R)
        if status[0] == 1:
            raise SimulationDiverged(dyn.model.name, done + 1, (done + 1) * dt, partial)
        raise imp.NewtonFailed(dyn.model.name, done * dt, imp.WHY[status[0]], partial)
    return _trajectory(rec, stride, dt, scheme, Q, QD, W, imp.stats(raw), R)


def driver_records(dyn: Dynamics, drv: DriverSet | None, q, qd, tau, fext, act, nrec: int) -> np.ndarray | None:
    """A driven run's (nrec + 1, ndriver + 1) records of the drivers' reactions and work, row 0 at the start
    (q, qd with act's driver slots set): what DriverSet.record hands C (None when nothing is driven)."""
    if drv is None:
        return None
    R = np.zeros((nrec + 1, drv.n + 1))
    R[0, :-1] = dyn.react(q, qd, tau, fext, act)[1]
    return R


def initial_state(dyn: Dynamics, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A seeded starting state: random for a tree, closed and velocity-consistent for a loop model."""
    s = next(states(dyn.model, 1, seed, tear=0.0))
    return s.q, s.qd
