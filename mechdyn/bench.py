"""Benchmark of the generated code alone: fwd_dyn timed in a C loop, fwd_dyn_batch, and Verlet stepping in C;
and of a tracked model's contact stepping loop (bench_contact_sim: step.c, stage by stage).

Timing is the minimum over repeats of a C loop that cycles through a pool of
256 random states with a running checksum (so the compiler cannot drop calls),
checked against the same states through Dynamics.forward_batch; the flop count
is exact, counted when the code was generated. The timing loops are the
benchmark's own C (TIMING_C, compiled once through the module cache), calling
the model's exported fwd_dyn and fwd_dyn_batch by address: the model's module
carries no benchmark code. The comparisons
with the dense reference and with Pinocchio and MuJoCo are the harness's
(crosscheck/bench.py, `crosscheck bench [--peers]`).
"""
from __future__ import annotations

import os
import platform
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from functools import cache
from types import ModuleType

import numpy as np
from tqdm import tqdm

from mechdyn.codegen.build import build_source
from mechdyn.codegen.capi import FUNCTION
from mechdyn.core.sample import State, random_state
from mechdyn.dynamics import Dynamics, integer

POOL = 256

# the timing loops, also compiled into crosscheck's callgrind driver (crosscheck/bench.py GEN_DRIVER)
def _pointer_type(name: str, function: str) -> str:
    """A typedef of a pointer to the generated `function`, from the API table (codegen/capi.py)."""
    f = FUNCTION[function]
    return f"typedef {f.returns} (*{name})({', '.join(f.params)});\n"


TIMING_C = "\n#include <time.h>\n\n" + _pointer_type("md_fwd_dyn_fn", "fwd_dyn") + _pointer_type(
    "md_fwd_dyn_batch_fn", "fwd_dyn_batch") + r"""
/* Seconds per call of f (a model's fwd_dyn) over `ncalls` calls cycling through a pool of npool states, rows of
 * nq, nv, nv, nf and na doubles; out has nv. The running checksum (output c mod nv of call c) goes to *checksum
 * so the calls cannot be optimized away. */
double md_time_calls(md_fwd_dyn_fn f, int nq, int nv, int nf, int na, long ncalls, int npool, const double *q,
                     const double *qd, const double *tau, const double *fext, const double *act, double *out,
                     double *checksum)
{
    double sum = 0.0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long c = 0; c < ncalls; ++c) {
        int k = (int)(c % npool);
        f(q + (long)k * nq, qd + (long)k * nv, tau + (long)k * nv, fext + (long)k * nf,
          na ? act + (long)k * na : 0, out);
        sum += out[c % nv];
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *checksum = sum;
    return ((t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec)) / (double)ncalls;
}

/* Seconds per state of f (a model's fwd_dyn_batch) over `nrounds` passes through the whole pool, into
 * out[npool * nv]; the sum of the last pass's outputs goes to *checksum. */
double md_time_batch(md_fwd_dyn_batch_fn f, int nv, long nrounds, int npool, const double *q, const double *qd,
                     const double *tau, const double *fext, const double *act, double *out, double *checksum)
{
    double sum = 0.0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long r = 0; r < nrounds; ++r)
        f(npool, q, qd, tau, fext, act, out);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    for (long i = 0; i < (long)npool * nv; ++i) sum += out[i];
    *checksum = sum;
    return ((t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec)) / ((double)nrounds * npool);
}
"""

# cffi's declarations, read from TIMING_C itself (its typedefs and function headers): the loops declared once
TIMING_CDEF = "".join(m[1] + ";\n" for m in re.finditer(r"^((?:typedef|double) [^;{]*?)\s*(?:;|\n\{)", TIMING_C, re.M))


@cache
def timing_loops() -> ModuleType:
    """TIMING_C compiled as a cffi module (once; then from the module cache)."""
    return build_source("timing", TIMING_CDEF, TIMING_C)


def _pool(dyn: Dynamics, Q, QD, TAU, FEXT, ACT) -> tuple[int, list[np.ndarray]]:
    """The pool's states checked as forward_batch checks them, FEXT and ACT required (the loops index them)."""
    arrays = dyn.check_states(Q, QD, TAU, FEXT, ACT, required=True)
    if arrays[0].shape[0] < 1:
        raise ValueError("Q has no states: the pool needs at least one")
    return arrays[0].shape[0], arrays


def time_per_call(dyn: Dynamics, Q, QD, TAU, FEXT, ACT, ncalls: int) -> tuple[float, float]:
    """Seconds per fwd_dyn call timed inside C over a pool of n >= 1 states, and the checksum (the sum of output
    c mod nv of call c)."""
    ncalls = integer("ncalls", ncalls, 1)
    n, arrays = _pool(dyn, Q, QD, TAU, FEXT, ACT)
    m = timing_loops()
    ffi, out, chk = m.ffi, np.empty(dyn.nv), m.ffi.new("double *")
    c = [ffi.from_buffer("double[]", a) for a in (*arrays, out)]
    t = m.lib.md_time_calls(ffi.cast("md_fwd_dyn_fn", dyn.address("fwd_dyn")), dyn.nq, dyn.nv, 6 * dyn.nbody,
                            dyn.nact, ncalls, n, *c, chk)
    return t, chk[0]


def time_per_state_batched(dyn: Dynamics, Q, QD, TAU, FEXT, ACT, nrounds: int) -> tuple[float, float]:
    """Seconds per state of fwd_dyn_batch (four states per SIMD pass) over `nrounds` passes through a pool of
    n >= 1 states, timed inside C, and the sum of the last pass's outputs."""
    nrounds = integer("nrounds", nrounds, 1)
    n, arrays = _pool(dyn, Q, QD, TAU, FEXT, ACT)
    m = timing_loops()
    ffi, out, chk = m.ffi, np.empty((n, dyn.nv)), m.ffi.new("double *")
    c = [ffi.from_buffer("double[]", a) for a in (*arrays, out)]
    t = m.lib.md_time_batch(ffi.cast("md_fwd_dyn_batch_fn", dyn.address("fwd_dyn_batch")), dyn.nv, nrounds, n,
                            *c, chk)
    return t, chk[0]


def calls_checksum(qdd: np.ndarray, ncalls: int) -> float:
    """What md_time_calls's checksum is over `ncalls` calls cycling through a pool whose outputs are qdd (n, nv)."""
    c = np.arange(ncalls)
    return float(qdd[c % qdd.shape[0], c % qdd.shape[1]].sum())


def check_checksums(dyn: Dynamics, pool: list[np.ndarray]) -> None:
    """Both timing loops' checksums against forward_batch on the same pool: the timed loops compute the model."""
    qdd = dyn.forward_batch(*pool)
    want = {"fwd_dyn": calls_checksum(qdd, 2 * len(qdd)), "fwd_dyn_batch": float(qdd.sum())}
    got = {"fwd_dyn": time_per_call(dyn, *pool, 2 * len(qdd))[1], "fwd_dyn_batch": time_per_state_batched(dyn, *pool, 1)[1]}
    for name, w in want.items():
        if abs(got[name] - w) > 1e-9 * max(1.0, float(np.abs(qdd).sum()) * 2):
            raise RuntimeError(f"the timing loop of {name} on {dyn.model.name} computed checksum {got[name]!r} where "
                               f"forward_batch gives {w!r}: the timed loop is not computing the model")


@dataclass(frozen=True)
class BenchResult:
    model: str
    nq: int
    nv: int
    flops: int
    ns_per_call: float
    checksum: float
    batch_ns_per_state: float  # fwd_dyn_batch, four states per SIMD pass

    @property
    def gflops(self) -> float:
        return self.flops / self.ns_per_call

    def as_dict(self) -> dict:
        return asdict(self) | {"gflops": self.gflops, "machine": machine()}

    def lines(self) -> list[str]:
        return [f"bench: {self.model} (nq {self.nq}, nv {self.nv}) on {machine()}",
                f"bench: generated  {self.ns_per_call:10.1f} ns/call  {self.flops} flops  {self.gflops:.2f} GFLOP/s",
                f"bench: batched    {self.batch_ns_per_state:10.1f} ns/state  (fwd_dyn_batch, four states per SIMD pass: "
                f"{self.ns_per_call / self.batch_ns_per_state:.1f}x the throughput)"]


def machine() -> str:
    """CPU model and core count, for benchmark tables."""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        cpu = platform.processor() or platform.machine()
    return f"{cpu}, {os.cpu_count()} cores"


def bench(dyn: Dynamics, repeats: int = 7, seconds: float = 0.2, seed: int = 0) -> BenchResult:
    """ns/call of the generated fwd_dyn (min over repeats) and ns/state of fwd_dyn_batch, on one pool of states."""
    _, pool = state_pool(dyn, seed)
    check_checksums(dyn, pool)
    per_call, _ = time_per_call(dyn, *pool, 1000)  # calibrate the loop length
    ncalls = max(1000, int(seconds / max(per_call, 1e-9)))
    best, checksum = np.inf, 0.0
    with tqdm(total=2 * repeats, desc=f"bench {dyn.model.name}: fwd_dyn", unit="pass", leave=False,
              disable=None) as bar:
        for _ in range(repeats):
            t, checksum = time_per_call(dyn, *pool, ncalls)
            best = min(best, t)
            bar.update()
        bar.set_description(f"bench {dyn.model.name}: fwd_dyn_batch")
        batched = batch_ns(dyn, pool, seconds, repeats, bar.update)
    return BenchResult(dyn.model.name, dyn.nq, dyn.nv, dyn.flops, best * 1e9, checksum, batched)


def state_pool(dyn: Dynamics, seed: int = 0) -> tuple[list[State], list[np.ndarray]]:
    """POOL seeded random states, and the same as the arrays (q, qd, tau, fext, act) the timing loops take."""
    rng = np.random.default_rng(seed)
    states = [random_state(dyn.model, rng) for _ in range(POOL)]
    pool = [np.array([getattr(s, f) for s in states]) for f in ("q", "qd", "tau", "fext", "act")]
    pool[4] = pool[4].reshape(POOL, dyn.nact)
    return states, pool


def batch_ns(dyn: Dynamics, pool: list[np.ndarray], seconds: float, repeats: int,
             tick: Callable[[], object] = lambda: None) -> float:
    """Best ns per state of fwd_dyn_batch over passes through the pool, loops of about `seconds`; tick() after each."""
    per_state, _ = time_per_state_batched(dyn, *pool, 1)
    rounds = max(1, int(seconds / max(per_state * len(pool[0]), 1e-9)))
    best = np.inf
    for _ in range(repeats):
        best = min(best, time_per_state_batched(dyn, *pool, rounds)[0])
        tick()
    return best * 1e9


@dataclass(frozen=True)
class SimBenchResult:
    model: str
    dt: float
    c_steps_per_s: float
    python_steps_per_s: float

    @property
    def realtime_factor(self) -> float:
        return self.c_steps_per_s * self.dt

    @property
    def speedup(self) -> float:
        return self.c_steps_per_s / self.python_steps_per_s

    def as_dict(self) -> dict:
        return asdict(self) | {"realtime_factor": self.realtime_factor, "speedup": self.speedup, "machine": machine()}

    def lines(self) -> list[str]:
        return [f"bench: {self.model} Verlet at dt {self.dt:g} s on {machine()}",
                f"bench: stepped in C      {self.c_steps_per_s:12.4g} steps/s  (real-time factor {self.realtime_factor:.3g})",
                f"bench: Python step loop  {self.python_steps_per_s:12.4g} steps/s",
                f"bench: speedup           {self.speedup:12.1f}x"]


@dataclass(frozen=True)
class ImplicitBenchResult:
    """The implicit stepper beside Verlet, stepped in C at the same dt in one run (best of the repeats)."""
    model: str
    scheme: str
    dt: float
    mode: str  # "to tolerance" or "N corrections a step"
    us_per_step: float
    corrections_per_step: float
    most_corrections: int
    verlet_us_per_step: float

    @property
    def realtime_factor(self) -> float:
        return self.dt / (1e-6 * self.us_per_step)

    @property
    def cost_ratio(self) -> float:
        return self.us_per_step / self.verlet_us_per_step

    def as_dict(self) -> dict:
        return asdict(self) | {"realtime_factor": self.realtime_factor, "cost_ratio": self.cost_ratio,
                               "machine": machine()}

    def lines(self) -> list[str]:
        return [f"bench: {self.model} {self.scheme} ({self.mode}) at dt {self.dt:g} s on {machine()}",
                f"bench: {self.us_per_step:10.3f} us per step, {self.corrections_per_step:.3g} Newton corrections a "
                f"step (at most {self.most_corrections}), real-time factor {self.realtime_factor:.4g}",
                f"bench: Verlet at the same dt {self.verlet_us_per_step:10.3f} us per step: the implicit step costs "
                f"{self.cost_ratio:.3g}x"]


def bench_implicit(dyn: Dynamics, dt: float, scheme: str = "galpha", implicit=None, seconds: float = 0.3,
                   repeats: int = 5) -> ImplicitBenchResult:
    """The implicit stepper's µs per step and Newton corrections per step from a seeded state, beside Verlet's
    µs per step at the same dt, interleaved in one run."""
    from mechdyn.sim.implicit import Implicit
    from mechdyn.sim.run import initial_state, simulate

    opts = implicit or Implicit()
    q0, qd0 = initial_state(dyn)
    dyn.derivatives_lib  # built before anything is timed
    best, best_v, n, stats = np.inf, np.inf, 200, None
    with tqdm(total=repeats, desc=f"bench {dyn.model.name}: {scheme} and verlet", unit="pass", leave=False,
              disable=None) as bar:
        for _ in range(repeats):
            t0 = time.perf_counter()
            tr = simulate(dyn, q0, qd0, n * dt, dt, scheme, stride=n, implicit=opts)
            t1 = time.perf_counter()
            simulate(dyn, q0, qd0, n * dt, dt, "verlet", stride=n)
            t2 = time.perf_counter()
            if (t1 - t0) / n < best:
                best, stats = (t1 - t0) / n, tr.newton
            best_v = min(best_v, (t2 - t1) / n)
            n = max(n, int(seconds / max((t1 - t0) / n, 1e-9)))
            bar.update()
    mode = f"{opts.iterations} corrections a step" if opts.iterations else f"to tolerance {opts.tol:g}"
    return ImplicitBenchResult(dyn.model.name, scheme, dt, mode, 1e6 * best, stats.per_step, stats.most,
                               1e6 * best_v)


def bench_sim(dyn: Dynamics, dt: float, seconds: float = 0.3, repeats: int = 5) -> SimBenchResult:
    """Verlet steps per second stepped in C (fwd_dyn_sim), and the same loop driven from Python.

    The Python loop is the generous version: one forward() and two C drifts per step.
    """
    from mechdyn.sim.run import initial_state
    from mechdyn.sim.run import simulate

    q0, qd0 = initial_state(dyn)
    best = np.inf
    n = 1000
    with tqdm(total=repeats + 1, desc=f"bench {dyn.model.name}: stepping in C", unit="pass", leave=False,
              disable=None) as bar:
        for _ in range(repeats):
            t0 = time.perf_counter()
            simulate(dyn, q0, qd0, n * dt, dt, "verlet", stride=n)
            el = time.perf_counter() - t0
            best = min(best, el / n)
            n = max(n, int(seconds / max(el / n, 1e-9)))
            bar.update()
        c_rate = 1.0 / best
        bar.set_description(f"bench {dyn.model.name}: Python step loop")
        q, qd, tau = q0.copy(), qd0.copy(), np.zeros(dyn.nv)
        qdd = dyn.forward(q, qd, tau)
        m = max(200, int(seconds * c_rate / 100))
        t0 = time.perf_counter()
        for _ in range(m):
            q = dyn.drift(q, qd, 0.5 * dt)
            qdd = dyn.forward(q, qd + 0.5 * dt * qdd, tau)
            qd = qd + qdd * dt
            q = dyn.drift(q, qd, 0.5 * dt)
        py_rate = m / (time.perf_counter() - t0)
        bar.update()
    return SimBenchResult(dyn.model.name, dt, c_rate, py_rate)


@dataclass(frozen=True)
class ContactSimBench:
    """The contact stepping loop (ContactSim.run) timed on a settle from q0 at rest. Each figure is the minimum
    over repeats; the CPU seconds are the calling thread's, less a run of no steps (so time the process spent
    preempted on a shared machine is not counted), the wall seconds are the stepping calls' own (ContactRun)."""
    model: str
    dt: float
    step: str  # how dt was chosen
    lead_in: float  # s simulated, untimed, before each timed span (past the ground's gain ramp)
    simulated: float  # s simulated per timed repeat
    steps: int
    stride: int
    rows: int
    cpu: float  # CPU s, recording every stride-th row: what `mechdyn sim` pays
    bare_cpu: float  # CPU s, recording only the last row
    timed_cpu: float  # CPU s with timed=True: the clock read around every stage
    wall: float  # wall s of the recorded run's stepping calls
    stages: dict[str, float]  # wall s per stage (ContactSim STAGES) over the span: per chunk the minimum over repeats
    chunk: int  # steps per timed call of the stages' pass
    clock_reads: int  # per step, with timed=True
    repeats: int
    load: tuple[float, float]  # the 1-minute load average before and after

    @property
    def us_per_step(self) -> float:
        return 1e6 * self.cpu / self.steps

    @property
    def realtime_factor(self) -> float:
        """Simulated over CPU seconds: the stepping loop alone on one core."""
        return self.simulated / self.cpu

    @property
    def wall_realtime_factor(self) -> float:
        return self.simulated / self.wall

    @property
    def recording(self) -> float:
        """The recording's share of the recorded step."""
        return (self.cpu - self.bare_cpu) / self.cpu

    @property
    def clock_overhead(self) -> float:
        """What timing every stage adds, as a fraction of the untimed, unrecorded step."""
        return (self.timed_cpu - self.bare_cpu) / self.bare_cpu

    def split(self) -> dict[str, float]:
        """Each stage as a fraction of the untimed, unrecorded step: its share of the timed step less its share of
        the clock reads' overhead (spread evenly over the reads, each charged to the stage its lap ends). The
        fractions add up to 1 by construction."""
        total, o = sum(self.stages.values()), self.clock_overhead
        ran = [k for k, s in self.stages.items() if k != "integration" and s > 0]  # a stage never timed: no lap
        laps = {k: 1 for k in ran} | {"integration": self.clock_reads - len(ran)}  # the drifts: one or two a step
        return {k: s / total * (1 + o) - o * laps.get(k, 0) / self.clock_reads for k, s in self.stages.items()}

    def as_dict(self) -> dict:
        return asdict(self) | {"us_per_step": self.us_per_step, "realtime_factor": self.realtime_factor,
                               "wall_realtime_factor": self.wall_realtime_factor, "recording": self.recording,
                               "clock_overhead": self.clock_overhead, "split": self.split(), "machine": machine()}

    def lines(self) -> list[str]:
        bare = 1e6 * self.bare_cpu / self.steps
        return [f"bench: {self.model} settling from q0 at rest with contact, Verlet, {self.step} on {machine()}",
                f"bench: {self.simulated:g} s simulated after a {self.lead_in:g} s lead-in, {self.steps} steps, "
                f"minimum of {self.repeats} repeats (load average {self.load[0]:.2f} before, {self.load[1]:.2f} after)",
                f"bench: stepping loop {self.us_per_step:9.2f} us/step  real-time factor {self.realtime_factor:.2f} "
                f"(CPU time; {self.wall_realtime_factor:.2f} on the wall clock)",
                f"bench: recording {100 * self.recording:13.1f} %  of it ({self.rows} rows, stride {self.stride}); "
                f"timing every stage adds {100 * self.clock_overhead:.1f} %",
                f"bench: the unrecorded step {bare:.2f} us (on the wall clock, timed, in calls of {self.chunk} "
                f"steps: {1e6 * sum(self.stages.values()) / self.steps:.2f} us), by stage:",
                *(f"bench:   {k:<12} {f * bare:9.2f} us  {100 * f:5.1f} %" for k, f in self.split().items())]


def bench_contact_sim(dyn: Dynamics, dt: float | None = None, simulated: float = 1.0, lead_in: float = 0.1,
                      repeats: int = 7, rows_per_s: float = 500.0, chunk_s: float = 0.01) -> ContactSimBench:
    """Time ContactSim.run (Verlet, no predictor) over `simulated` s of the settle from q0 at rest, each repeat
    from the state reached after an untimed `lead_in` s: recording rows_per_s rows a simulated second, recording
    one, and timed by stage, interleaved; CPU time. The stages' proportions are read on the wall clock (step.c's
    timers), so they are taken in calls of chunk_s simulated s through the same span, each chunk's stage the
    minimum over repeats: short calls, of which some run unpreempted on a shared machine. dt: the accuracy step
    (accuracy_step) when None."""
    from mechdyn.sim.contact import STAGES, ContactSim, accuracy_step
    from mechdyn.sim.run import step_count

    sim = ContactSim(dyn)
    if dt is None:
        chosen = accuracy_step(sim.contact)
        dt, how = chosen.dt, chosen.describe()
    else:
        how = f"dt {dt:.4g} s (given)"
    load0 = os.getloadavg()[0]
    lead = sim.run(dyn.model.q0(), np.zeros(dyn.nv), lead_in, dt, stride=max(1, step_count(lead_in, dt)))
    q1, qd1, t1 = lead.q[-1], lead.qd[-1], lead.t[-1]
    steps = step_count(simulated, dt)
    stride = max(1, round(1.0 / (rows_per_s * dt)))
    chunk = max(1, min(steps, round(chunk_s / dt)))
    marks = sim.run(q1, qd1, simulated, dt, stride=chunk, t0=t1)  # the state at every chunk's start
    lengths = [min(chunk, steps - k * chunk) for k in range(-(-steps // chunk))]
    best = dict.fromkeys(("none", "rec", "bare", "timed", "wall"), np.inf)
    laps = np.full((len(lengths), len(STAGES)), np.inf)
    with tqdm(total=repeats, desc=f"bench {dyn.model.name}: stepping with contact", unit="pass", leave=False,
              disable=None) as bar:
        for _ in range(repeats):
            for kind, T, s, timed in (("none", 0.0, 1, False), ("rec", simulated, stride, False),
                                      ("bare", simulated, steps, False), ("timed", simulated, steps, True)):
                c0 = time.thread_time()
                r = sim.run(q1, qd1, T, dt, stride=s, t0=t1, timed=timed)
                best[kind] = min(best[kind], time.thread_time() - c0)
                if kind == "rec":
                    best["wall"] = min(best["wall"], r.seconds)
            for k, n in enumerate(lengths):
                r = sim.run(marks.q[k], marks.qd[k], n * dt, dt, stride=n, t0=marks.t[k], timed=True)
                laps[k] = np.minimum(laps[k], [r.stages[name] for name in STAGES])
            bar.update()
    return ContactSimBench(dyn.model.name, dt, how, lead_in, steps * dt, steps, stride, steps // stride,
                           best["rec"] - best["none"], best["bare"] - best["none"], best["timed"] - best["none"],
                           best["wall"], dict(zip(STAGES, laps.sum(axis=0).tolist())), chunk, 6 + bool(sim.contact.ntire), repeats,
                           (load0, os.getloadavg()[0]))


@dataclass(frozen=True)
class ContactSchemeBench:
    """One scheme's stepping with contact in ContactImplicitBench."""
    scheme: str
    dt: float
    step: str  # how dt was chosen
    steps: int
    cpu: float  # CPU s of the timed span, the minimum over repeats
    corrections_per_step: float = 0.0  # the implicit scheme's Newton corrections (0: explicit)
    matrices: int = 0  # its iteration matrices built by differences over the span

    @property
    def us_per_step(self) -> float:
        return 1e6 * self.cpu / self.steps

    @property
    def realtime_factor(self) -> float:
        return self.steps * self.dt / self.cpu


@dataclass(frozen=True)
class ContactImplicitBench:
    """A tracked model's settle stepped by Verlet (at its accuracy step, or a given one) and by an implicit scheme
    at its own step, timed over the same simulated span in one run (CPU time of the calling thread)."""
    model: str
    lead_in: float
    simulated: float
    mode: str
    repeats: int
    verlet: ContactSchemeBench
    implicit: ContactSchemeBench
    command: str  # the `mechdyn sim` that runs the implicit scheme's settle and hold with their gates

    def as_dict(self) -> dict:
        return asdict(self) | {k: {"us_per_step": b.us_per_step, "realtime_factor": b.realtime_factor}
                               for k, b in (("verlet_figures", self.verlet), ("implicit_figures", self.implicit))} | {
            "machine": machine()}

    def lines(self) -> list[str]:
        def line(b: ContactSchemeBench) -> str:
            newton = (f", {b.corrections_per_step:.3g} corrections a step, {b.matrices} matrices"
                      if b.corrections_per_step else "")
            return (f"bench:   {b.scheme:<7} {b.step}: {b.us_per_step:9.2f} us/step{newton}, "
                    f"real-time factor {b.realtime_factor:.3g}")
        v, i = self.verlet, self.implicit
        return [f"bench: {self.model} settling from q0 at rest with contact, {self.simulated:g} s simulated after a "
                f"{self.lead_in:g} s lead-in, CPU time, minimum of {self.repeats} repeats, on {machine()}",
                line(v), line(i),
                f"bench: {i.scheme} ({self.mode}) runs at {i.realtime_factor / v.realtime_factor:.3g}x Verlet's "
                f"real-time factor with {i.dt / v.dt:.3g}x its step (the gates at each step: {self.command} and "
                f"mechdyn sim {self.model} --dt {v.dt:g})"]


def bench_contact_implicit(dyn: Dynamics, dt: float, scheme: str = "galpha", implicit=None,
                           verlet_dt: float | None = None, simulated: float = 1.0, lead_in: float = 0.1,
                           repeats: int = 3) -> ContactImplicitBench:
    """The settle from q0 at rest stepped by Verlet at verlet_dt (None: the accuracy step) and by `scheme` at dt,
    each from the state its own untimed `lead_in` s reached (past the ground's gain ramp), `simulated` s timed,
    recording only the last row; interleaved repeats, the minimum CPU time of each."""
    from mechdyn.sim.contact import ContactSim, accuracy_step
    from mechdyn.sim.implicit import Implicit
    from mechdyn.sim.run import step_count

    opts, chosen = implicit or Implicit(), accuracy_step(ContactSim(dyn).contact)
    verlet = (chosen.dt, chosen.describe()) if verlet_dt is None else (verlet_dt, f"dt {verlet_dt:.4g} s (given)")
    schemes = (("verlet", *verlet, {}), (scheme, dt, f"dt {dt:.4g} s (given)", {"implicit": opts}))
    sims, leads = [ContactSim(dyn) for _ in schemes], []
    for sim, (name, sim_dt, _, kw) in zip(sims, schemes):
        leads.append(sim.run(dyn.model.q0(), np.zeros(dyn.nv), lead_in, sim_dt, name,
                             stride=max(1, step_count(lead_in, sim_dt)), **kw))
    best = [(np.inf, None)] * len(schemes)
    with tqdm(total=repeats, desc=f"bench {dyn.model.name}: {scheme} and verlet with contact", unit="pass",
              leave=False, disable=None) as bar:
        for _ in range(repeats):
            for k, (sim, lead, (name, sim_dt, _, kw)) in enumerate(zip(sims, leads, schemes)):
                steps = step_count(simulated, sim_dt)
                sim.restart()  # every repeat starts alike, not the first from the lead-in's carried state
                c0 = time.thread_time()
                r = sim.run(lead.q[-1], lead.qd[-1], steps * sim_dt, sim_dt, name, stride=steps, t0=lead.t[-1], **kw)
                best[k] = min(best[k], (time.thread_time() - c0, r.newton), key=lambda b: b[0])
            bar.update()
    out = [ContactSchemeBench(name, sim_dt, how, step_count(simulated, sim_dt), cpu, n.per_step if n else 0.0,
                              n.matrices if n else 0)
           for (name, sim_dt, how, _), (cpu, n) in zip(schemes, best)]
    mode = f"{opts.iterations} corrections a step" if opts.iterations else f"to tolerance {opts.tol:g}"
    command = f"mechdyn sim {dyn.model.name} --scheme {scheme} --dt {dt:g}" + (
        f" --newton {opts.iterations}" if opts.iterations else "") + (
        f" --refresh {opts.refresh}" if opts.refresh else "")
    return ContactImplicitBench(dyn.model.name, lead_in, simulated, mode, repeats, out[0], out[1], command)



@dataclass(frozen=True)
class VehicleBench:
    """A model on tires through ISO 3888-1's lane change (mechdyn.sim.manoeuvres.lane_change) at the step its
    accuracy allows: the stepping alone and the whole loop (the controllers, the driveline, the logging between
    the C calls), CPU time, best of `repeats`; the stepping's stages from one more, timed, run."""
    model: str
    speed: float
    dt: float
    control_dt: float
    simulated: float
    stepping: float  # s on the wall clock in the C calls, best repeat
    whole: float  # s of CPU time for the whole manoeuvre, best repeat
    stages: dict[str, float]
    repeats: int

    @property
    def stepping_rtf(self) -> float:
        return self.simulated / self.stepping

    @property
    def whole_rtf(self) -> float:
        return self.simulated / self.whole

    def as_dict(self) -> dict:
        return asdict(self) | {"stepping_realtime_factor": self.stepping_rtf, "whole_realtime_factor": self.whole_rtf,
                               "machine": machine()}

    def lines(self) -> list[str]:
        total = sum(self.stages.values())
        return [f"bench: {self.model}: ISO 3888-1 lane change at {self.speed:g} m/s, {self.simulated:.3g} s at dt "
                f"{self.dt:.4g} s (its accuracy step, a whole number of steps per control period of {self.control_dt:g} s), "
                f"on {machine()}",
                f"bench: the stepping {self.stepping:.4g} s: real-time factor {self.stepping_rtf:.3g} (wall clock in "
                f"the C calls, best of {self.repeats})",
                f"bench: the whole manoeuvre {self.whole:.4g} s CPU: real-time factor {self.whole_rtf:.3g} (with the "
                "controllers, the driveline and the logging in Python between the C calls)",
                "bench: the stepping by stage (one timed run):",
                *(f"bench:   {k:<12} {100 * v / total:5.1f} %" for k, v in self.stages.items() if k in
                  ("tires", "kinematics", "dynamics", "integration"))]


def bench_vehicle(dyn: Dynamics, speed: float = 15.0, dt: float | None = None, repeats: int = 5) -> VehicleBench:
    """Time the lane change of the tired model `dyn` (VehicleBench), each repeat from the settled state."""
    from mechdyn.sim import manoeuvres as mv
    from mechdyn.sim.vehicle import Vehicle

    best_step, best_whole, sim, stages, control, step = np.inf, np.inf, 0.0, {}, 0.0, 0.0
    for k in range(repeats + 1):
        car = Vehicle(dyn, speed=speed, dt=dt, timed=k == repeats)
        mv.statics(car)
        car.stages.clear()
        start = time.process_time()
        lane = mv.lane_change(car, speed=speed)
        cpu = time.process_time() - start
        sim, control, step = float(lane.log["t"][-1] - lane.log["t"][0]), car.control_dt, car.dt
        if k == repeats:
            stages = dict(car.stages)
        else:
            best_step, best_whole = min(best_step, lane.seconds), min(best_whole, cpu)
    return VehicleBench(dyn.model.name, speed, step, control, sim, best_step, best_whole, stages, repeats)
