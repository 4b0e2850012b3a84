"""Golden results and deterministic speed figures per model, written only by `crosscheck golden --update`.

`regression/golden/<model>.npz` holds

- 20 input states (q, qd, tau, fext, act) drawn once from
  `states(model, 20, seed=1234)`; fext is kept only for the bodies that declare
  it (the generated code reads no other rows), the rest is zero;
- the generated code's outputs there: qdd (`fwd_dyn`) and the observe vector;
- `meta`, a JSON string: the flop count per call (`fwd_dyn_flops`), the
  instructions per `fwd_dyn` call counted by callgrind, and the toolchain the
  instructions were counted with (compiler identity, the counting flags, the
  target they resolve to, libc and valgrind versions).

`regression/golden/derivatives/<model>.npz`, written by `crosscheck golden
--derivatives --update`, holds the generated derivatives (fwd_dyn_derivs: qdd and
its blocks dq, dqd, dtau, dact, dfext, the last on the fext bodies' columns only)
at the first DERIV_NSTATES of those stored states, and their flop count
(`fwd_dyn_derivs_flops`), for every model.

The regression gates (regression/test_golden.py, regression/test_speed.py)
read the files and never write them. The inputs are stored rather than
re-sampled, so the gates do not depend on the sampler staying identical.

Instruction counts. A small C driver (`DRIVER_C`, compiled once into the
cache) dlopens a compiled extension of the model, calls `fwd_dyn` once per pool
state to bind lazy symbols and warm up, then `CYCLES` more times over the
pool, under `valgrind --tool=callgrind --zero-before=mechdyn_measure_start
--toggle-collect=fwd_dyn`: only instructions executed inside `fwd_dyn` and its
callees (sincos) on the measured calls are counted. Whole passes over the same
pool make the figure an exact average, identical on every run.

The counting build. The production build's flags (`-march=native` by default,
or $MECHDYN_CFLAGS) depend on the host CPU, and valgrind cannot decode the
AVX-512 code `-march=native` emits where the CPU has it. So instructions are
counted on a build of its own, compiled with `flags.counting()` whatever
$MECHDYN_CFLAGS says: `-O2 -march=x86-64-v3 -mtune=generic -fno-math-errno` on
x86-64 (AVX2 and FMA, which valgrind decodes; gcc reads no cpuid for a named
-march), the compiler's default target elsewhere. The figure then depends on
the compiler and the generated code, not on the host or the production flags.
It runs on any x86-64-v3 CPU; on an older one `counting_unavailable()` says
so and measuring refuses, as without valgrind. The toolchain stored with it
holds only what it depends on: the compiler's identity, the counting flags,
the target options the compiler proper receives for them (the same on every
host), libc (its libm serves a sincos beyond the batch's range) and valgrind.

Another toolchain (a different gcc, valgrind or libc) makes the stored figure
incomparable: the gate cannot say whether the code got slower, so it passes,
says "not compared (re-baseline needed)" with what changed, and the test
suite warns; where counting is unavailable the instruction tests skip, saying
why. A fresh clone with the goldens' toolchain compares every gate. The
project's CI must compare, never skip: with $MECHDYN_REQUIRE_TOOLCHAIN=1 (set
by .ci/run) an incomparable golden fails the gate, and so does a machine that
cannot count, so a CI image that drifted from the goldens' toolchain is
noticed and re-baselined.
"""
from __future__ import annotations

import io
import json
import math
import os
import shlex
import subprocess
import tempfile
import zipfile
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import numpy as np

from crosscheck import callgrind
from crosscheck.checks import Check
from mechdyn.cliutil import InputError, atomic_write
from mechdyn.codegen import flags
from mechdyn.codegen.cache import compiled
from mechdyn.core.model import Model
from mechdyn.core.parse import MODELS_DIR, load_model
from mechdyn.core.sample import scaled_error, states
from mechdyn.dynamics import Dynamics

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "regression" / "golden"
NSTATES, SEED = 20, 1234
OUTPUT_TOL = 1e-12  # scaled error of qdd and observe against the golden
FLOPS_SLACK = 0.02  # the flop count may grow by 2 % before the gate fails
INSTRUCTIONS_SLACK = 0.05  # instructions per call may grow by 5 %
CYCLES = 3  # measured passes over the pool, after one warm-up pass
# instructions are counted on a build for a fixed target, never -march=native (see the module docstring);
# mechdyn.codegen.flags decides the flags of every build
# x86-64-v3's features as /proc/cpuinfo names them (abm: lzcnt); a CPU without them cannot run the counting build
X86_64_V3_CPU_FLAGS = ("avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave")
CPUINFO = Path("/proc/cpuinfo")
REQUIRE_TOOLCHAIN = "MECHDYN_REQUIRE_TOOLCHAIN"  # "1": an incomparable instruction golden fails (CI)


def update_command(model: str, derivatives: bool = False) -> str:
    return f"crosscheck golden {'--derivatives ' if derivatives else ''}--update {model}"


def models() -> list[str]:
    """Every model in models/, as the regression suite discovers them."""
    return sorted(p.stem for p in MODELS_DIR.glob("*.mech"))


def golden_path(model: str) -> Path:
    return GOLDEN_DIR / f"{model}.npz"


# -- the stored record ---------------------------------------------------------
@dataclass(frozen=True)
class Golden:
    model: str
    q: np.ndarray  # (n, nq)
    qd: np.ndarray  # (n, nv)
    tau: np.ndarray  # (n, nv)
    fext: np.ndarray  # (n, nbody, 6), zero on bodies without fext
    act: np.ndarray  # (n, nact)
    qdd: np.ndarray  # (n, nv)
    obs: np.ndarray  # (n, observe_len)
    flops: int
    instructions: float | None  # per fwd_dyn call (None only in a hand-made file)
    toolchain: dict[str, str] | None  # what `instructions` was counted with

    @property
    def n(self) -> int:
        return self.q.shape[0]


def _zip_member(zf: zipfile.ZipFile, name: str, a: np.ndarray) -> None:
    info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))  # fixed: same content, same bytes
    info.compress_type = zipfile.ZIP_DEFLATED
    with zf.open(info, "w") as f:
        np.lib.format.write_array(f, np.ascontiguousarray(a) if a.ndim else a, allow_pickle=False)


def to_bytes(g: Golden, fext_bodies: list[int]) -> bytes:
    """The .npz file: arrays plus `meta` (JSON); byte-identical for identical content."""
    meta = {"model": g.model, "nstates": g.n, "seed": SEED, "flops": g.flops,
            "instructions_per_call": g.instructions, "toolchain": g.toolchain,
            "written_by": update_command(g.model)}
    arrays = {**stored_states(g, fext_bodies), "qdd": g.qdd, "obs": g.obs,
              "meta": np.array(json.dumps(meta, sort_keys=True))}
    return npz_bytes(arrays)


def stored_states(g, fext_bodies: list[int]) -> dict[str, np.ndarray]:
    """A golden's input states as stored: fext only on the bodies that read it, and which those are."""
    return {"q": g.q, "qd": g.qd, "tau": g.tau, "fext_bodies": np.array(fext_bodies, dtype=np.int64),
            "fext": g.fext[:, fext_bodies, :], "act": g.act}


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """The arrays as the bytes of an .npz file, each member written by _zip_member."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, a in arrays.items():
            _zip_member(zf, name, a)
    return buf.getvalue()


def load(model: str, nbody: int) -> Golden | None:
    """The stored golden of `model` (None if there is none), fext expanded to (n, nbody, 6)."""
    path = golden_path(model)
    if not path.is_file():
        return None
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(z["meta"].item())
        n = z["q"].shape[0]
        fext = np.zeros((n, max(nbody, int(z["fext_bodies"].max(initial=-1)) + 1), 6))  # a shrunk model: mismatch
        fext[:, z["fext_bodies"], :] = z["fext"]
        return Golden(model, z["q"], z["qd"], z["tau"], fext, z["act"], z["qdd"], z["obs"], int(meta["flops"]),
                      meta["instructions_per_call"], meta["toolchain"])


def load_for(dyn: Dynamics) -> Golden | None:
    return load(dyn.model.name, dyn.nbody)


def stored(spec: str) -> Golden | None:
    """The stored golden of a model given by name or path, or None."""
    model = load_model(spec)
    return load(model.name, model.nbody)


# -- recording ------------------------------------------------------------------
def record(model: Model) -> tuple[Golden, list[int]]:
    """Sample the inputs, run the production build there, and count its flops and instructions."""
    dyn = Dynamics(model)
    fext_bodies = [i for i, b in enumerate(model.bodies) if b.fext]
    sts = list(states(model, NSTATES, seed=SEED))
    fext = np.zeros((NSTATES, model.nbody, 6))
    fext[:, fext_bodies, :] = np.array([s.fext for s in sts])[:, fext_bodies, :]
    q, qd, tau = (np.array([getattr(s, k) for s in sts]) for k in ("q", "qd", "tau"))
    act = np.array([s.act for s in sts]).reshape(NSTATES, model.nact)
    qdd = np.array([dyn.forward(q[k], qd[k], tau[k], fext[k], act[k]) for k in range(NSTATES)])
    obs = np.array([dyn.observe(q[k], qd[k]) for k in range(NSTATES)]).reshape(NSTATES, dyn.observe_len)
    g = Golden(model.name, q, qd, tau, fext, act, qdd, obs, int(dyn.flops), None, None)
    m = measure(model, g)
    return replace(g, instructions=m.instructions, toolchain=m.toolchain), fext_bodies


def update(spec: str) -> Golden:
    """(Re)write the golden of one model; the only writer of regression/golden/."""
    why = counting_unavailable()
    if why:  # a golden without its instruction count would silently disarm that gate
        raise InputError(f"{why}; the golden records instructions per call")
    model = load_model(spec)
    g, fext_bodies = record(model)
    path = golden_path(model.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, to_bytes(g, fext_bodies), mode=0o644)  # a data file in the repository is world-readable
    return g


def describe(g: Golden) -> str:
    """One line: what the golden holds."""
    path = golden_path(g.model)
    size = path.stat().st_size if path.is_file() else 0
    shown = os.path.relpath(path) if path.is_relative_to(Path.cwd()) else str(path)
    ins = (f"{g.instructions:.1f} instructions/call ({toolchain_text(g.toolchain)})" if g.instructions is not None
           else "no instruction count")
    return f"golden {g.model}: {g.n} states, {g.flops} flops, {ins}; {shown} ({size} bytes)"


# -- the toolchain an instruction count belongs to ------------------------------
class CountingUnavailable(RuntimeError):
    """Instructions cannot be counted on this machine (no valgrind, or the CPU); the message says why."""


valgrind = callgrind.valgrind


@cache
def _valgrind_version(exe: str) -> str:
    return _run([exe, "--version"]).stdout.strip()


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)


@cache
def resolved_options(cc: tuple[str, ...], cflags: tuple[str, ...]) -> tuple[str, ...]:
    """The target options the compiler proper receives for these flags (what -march=native would expand to)."""
    out = _run([*cc, *cflags, "-E", "-v", "-x", "c", os.devnull, "-o", os.devnull])
    for line in out.stderr.splitlines():
        toks = [t.strip('"') for t in line.split()]
        if toks and (toks[0].endswith("/cc1") or toks[0] == "cc1" or "-cc1" in toks[:2]):
            keep, take_next = [], False
            for t in toks:
                if take_next:
                    keep.append(t)
                    take_next = False
                elif t.startswith("-m") or t.startswith("--param") and "=" in t:
                    keep.append(t)
                elif t in ("--param", "-target-cpu", "-target-feature"):
                    keep.append(t)
                    take_next = True
            return tuple(keep)
    return ()


def counting_cpu_gap() -> list[str]:
    """The x86-64-v3 CPU flags this host lacks, which the counting build (flags.counting()) needs to run natively;
    empty where the counting flags name no such level (not x86-64) or where /proc/cpuinfo cannot be read."""
    if flags.counting() != list(flags.COUNT_FLAGS_X86_64):
        return []
    try:
        cpu = next((ln.split(":", 1)[1].split() for ln in CPUINFO.read_text().splitlines()
                    if ln.startswith("flags")), None)
    except OSError:
        cpu = None
    return [f for f in X86_64_V3_CPU_FLAGS if cpu is not None and f not in cpu]


def counting_unavailable() -> str | None:
    """Why instructions cannot be counted here, or None: no valgrind, or a CPU that cannot run the counting build
    (the checksum runs it natively, and valgrind decodes only what the host CPU has)."""
    if valgrind() is None:
        return "valgrind not found: apt-get install valgrind"
    missing = counting_cpu_gap()
    return (f"this CPU lacks {' '.join(missing)} of x86-64-v3, which the instruction-counting build "
            f"({shlex.join(flags.counting())}) needs" if missing else None)


def toolchain() -> dict[str, str]:
    """Everything an instruction count depends on besides the generated code and its inputs."""
    cc, counting = tuple(flags.cc()), flags.counting()
    opts = resolved_options(cc, tuple(counting))
    vg = _valgrind_version(valgrind()) if valgrind() else "none"
    return {
        "compiler": flags.compiler_identity(cc),
        "cflags": shlex.join(counting),
        "target": " ".join([flags.target_machine(cc), *opts]),
        "libc": os.confstr("CS_GNU_LIBC_VERSION") if "CS_GNU_LIBC_VERSION" in os.confstr_names else "unknown",
        "valgrind": vg,
    }


def toolchain_text(t: dict[str, str] | None) -> str:
    if not t:
        return "no toolchain recorded"
    return f"{t['compiler']}, {t['cflags']}, target {t['target']}, {t['libc']}, {t['valgrind']}"


# -- counting instructions ------------------------------------------------------
DRIVER_C = r"""/* Calls fwd_dyn of a compiled mechdyn module over a pool of states, for callgrind (crosscheck/golden.py).
 * usage: driver MODULE.so STATES.bin NPOOL CYCLES; STATES.bin holds NPOOL records of
 * q[nq] qd[nv] tau[nv] fext[6 nbody] act[nact] as native doubles. Prints the calls and a checksum. */
""" + callgrind.MODULE_DRIVER_C + r"""
typedef void (*fwd_fn)(const double *, const double *, const double *, const double *, const double *, double *);

/* callgrind --zero-before=mechdyn_measure_start: the counts start here. */
__attribute__((noinline)) void mechdyn_measure_start(void) { __asm__ volatile(""); }

int main(int argc, char **argv)
{
    if (argc != 5) { fprintf(stderr, "usage: %s MODULE.so STATES.bin NPOOL CYCLES\n", argv[0]); return 2; }
    long size[4];
    fwd_fn f = (fwd_fn)md_open(argv[1], size);
    int nq = (int)size[0], nv = (int)size[1], nbody = (int)size[2], nact = (int)size[3];
    long npool = atol(argv[3]), cycles = atol(argv[4]), rec = nq + 2L * nv + 6L * nbody + nact;
    double *pool = malloc(sizeof(double) * (size_t)(npool * rec + 1)), *out = malloc(sizeof(double) * (size_t)nv);
    FILE *fp = fopen(argv[2], "rb");
    if (!fp || !pool || !out || fread(pool, sizeof(double), (size_t)(npool * rec + 1), fp) != (size_t)(npool * rec)) {
        fprintf(stderr, "%s: expected exactly %ld doubles\n", argv[2], npool * rec);
        return 4;
    }
    fclose(fp);
    double sum = 0.0;
    long c = 0;
    for (long pass = 0; pass <= cycles; ++pass) {
        if (pass == 1) mechdyn_measure_start();
        for (long k = 0; k < npool; ++k, ++c) {
            const double *r = pool + k * rec;
            f(r, r + nq, r + nq + nv, r + nq + 2 * nv, nact ? r + nq + 2 * nv + 6 * nbody : 0, out);
            sum += out[c % nv];
        }
    }
    printf("%ld %.17g\n", c, sum);
    return 0;
}
"""


def driver() -> Path:
    """The compiled call driver, in the compile cache."""
    return compiled("calldriver", DRIVER_C, ".c", flags.cc(), flags.driver())


def measurement_build(model: Model) -> Dynamics:
    """The build whose instructions are counted: the model compiled with flags.counting(), not the production flags."""
    return Dynamics(model, cflags=flags.counting())


@dataclass(frozen=True)
class Measurement:
    instructions: float  # per fwd_dyn call, averaged over whole passes of the pool
    calls: int  # measured calls
    toolchain: dict[str, str]


def measure(model: Model, g: Golden, cycles: int = CYCLES) -> Measurement:
    """Instructions per fwd_dyn call on the golden's input states, counted by callgrind."""
    why = counting_unavailable()
    if why:
        raise CountingUnavailable(why)
    dyn = measurement_build(model)
    n = g.n
    pool = np.concatenate([g.q, g.qd, g.tau, g.fext.reshape(n, -1), g.act], axis=1)
    expected = dyn.forward_batch(g.q, g.qd, g.tau, g.fext, g.act if model.nact else None)
    calls = np.arange(n * (cycles + 1))
    checksum = float(np.sum(expected[calls % n, calls % dyn.nv]))
    with tempfile.TemporaryDirectory(prefix="mechdyn-callgrind.") as tmp:
        data = Path(tmp) / "states.bin"
        data.write_bytes(np.ascontiguousarray(pool, dtype="=f8").tobytes())
        try:
            counted = callgrind.count([driver(), dyn.library, data, n, cycles], "fwd_dyn",
                                      zero_before="mechdyn_measure_start")
        except RuntimeError as e:
            raise RuntimeError(f"{model.name}: {e}") from None
        ncalls, got = counted.stdout.split()
    if int(ncalls) != n * (cycles + 1) or abs(float(got) - checksum) > 1e-9 * max(1.0, abs(checksum)):
        raise RuntimeError(f"the callgrind driver computed checksum {got} over {ncalls} calls; "
                           f"Python computed {checksum!r} over {n * (cycles + 1)}: it is not calling fwd_dyn right")
    return Measurement(counted.instructions / (n * cycles), n * cycles, toolchain())


# -- the gates -------------------------------------------------------------------
def missing(model: str, name: str, threshold: float, derivatives: bool = False) -> Check:
    """A failing check for a model without golden results (NaN: nothing was measured); `derivatives`: without
    the derivatives' golden."""
    path = derivatives_path(model) if derivatives else golden_path(model)
    return Check(name, math.nan, threshold, f"no golden results for {model} at {path}",
                 f"create them with `{update_command(model, derivatives)}`")


def _output_check(model: str, name: str, what: str, got: np.ndarray, want: np.ndarray) -> Check:
    if got.shape != want.shape:
        return Check(name, math.nan, OUTPUT_TOL, f"{what}: the stored states or outputs do not fit the model "
                     f"(got {got.shape}, golden {want.shape})",
                     f"the model's sizes changed; if intended, re-record with `{update_command(model)}`")
    if got.size == 0:
        return Check(name, 0.0, OUTPUT_TOL, f"{what}: the model has none")
    errs = [scaled_error(a, b) for a, b in zip(got, want)]
    k = int(np.argmax(errs))
    return Check(name, errs[k], OUTPUT_TOL, f"{what} vs golden at {len(errs)} stored states, worst state {k}",
                 f"the generated physics changed; if intended, re-record with `{update_command(model)}`"
                 if errs[k] > OUTPUT_TOL else "")


def _fits(dyn: Dynamics, g: Golden) -> bool:
    """Whether the stored inputs have the model's sizes (else the model changed: re-record)."""
    return (g.q.shape[1:], g.qd.shape[1:], g.fext.shape[1:], g.act.shape[1:]) == (
        (dyn.nq,), (dyn.nv,), (dyn.nbody, 6), (dyn.nact,))


def qdd_check(dyn: Dynamics, g: Golden) -> Check:
    act = g.act if dyn.nact else None
    got = np.array([dyn.forward(g.q[k], g.qd[k], g.tau[k], g.fext[k], None if act is None else act[k])
                    for k in range(g.n)]) if _fits(dyn, g) else np.zeros((0,))
    return _output_check(g.model, "golden_qdd", "generated qdd", got, g.qdd)


def observe_check(dyn: Dynamics, g: Golden) -> Check:
    got = (np.array([dyn.observe(g.q[k], g.qd[k]) for k in range(g.n)]).reshape(g.n, dyn.observe_len)
           if _fits(dyn, g) else np.zeros((0,)))
    return _output_check(g.model, "golden_observe", "generated observe", got, g.obs)


def flops_check(model: str, flops: int, g: Golden | DerivativesGolden) -> Check:
    """The generated flop count may exceed the golden by FLOPS_SLACK; fewer passes with a note. For a
    DerivativesGolden, fwd_dyn_derivs' count (the check named "derivatives_flops")."""
    derivatives = isinstance(g, DerivativesGolden)
    command = update_command(model, derivatives)
    excess = flops / g.flops - 1.0
    detail = f"{flops} flops per call vs golden {g.flops} ({100 * excess:+.2f} %), relative excess"
    if excess > FLOPS_SLACK:
        note = (f"the generated code does more arithmetic; find the change, or if it is intended "
                f"re-baseline with `{command}`")
    elif flops < g.flops:
        note = f"fewer flops than the golden: lock in the gain with `{command}`"
    else:
        note = ""
    return Check("derivatives_flops" if derivatives else "flops", excess, FLOPS_SLACK, detail, note)


def instructions_check(model: str, m: Measurement, g: Golden) -> Check:
    """Instructions per call may exceed the golden by INSTRUCTIONS_SLACK, when counted with the same toolchain.

    A golden counted with another toolchain is not comparable: the check passes
    with value 0 and says so in its detail and note (the caller should also warn),
    or, with $MECHDYN_REQUIRE_TOOLCHAIN=1, fails with value inf and the same note.
    """
    if g.instructions is None or g.toolchain != m.toolchain:
        if g.toolchain is None:
            why = "the golden has no instruction count"
        else:
            changed = [f"{k} changed from '{g.toolchain.get(k)}' to '{m.toolchain.get(k)}'"
                       for k in sorted(set(g.toolchain) | set(m.toolchain)) if g.toolchain.get(k) != m.toolchain.get(k)]
            why = "; ".join(changed) + ": instruction golden not comparable"
        required = os.environ.get(REQUIRE_TOOLCHAIN) == "1"
        return Check("instructions", math.inf if required else 0.0, INSTRUCTIONS_SLACK,
                     f"{m.instructions:.1f} instructions/call, not compared (re-baseline needed)",
                     f"{why}; re-baseline with `{update_command(model)}`"
                     + (f" ({REQUIRE_TOOLCHAIN}=1: an incomparable golden fails)" if required else ""))
    excess = m.instructions / g.instructions - 1.0
    detail = (f"{m.instructions:.1f} instructions per fwd_dyn call vs golden {g.instructions:.1f} "
              f"({100 * excess:+.2f} %, callgrind, {m.calls} calls), relative excess")
    if excess > INSTRUCTIONS_SLACK:
        note = (f"the compiled code executes more instructions; find the change, or if it is intended "
                f"re-baseline with `{update_command(model)}`")
    elif excess < -INSTRUCTIONS_SLACK:
        note = f"fewer instructions than the golden: lock in the gain with `{update_command(model)}`"
    else:
        note = ""
    return Check("instructions", excess, INSTRUCTIONS_SLACK, detail, note)


def instructions_gate(model: Model, g: Golden) -> Check:
    """Count the model's instructions per call on the golden's states and check them (CountingUnavailable if not
    possible here)."""
    if not _fits(measurement_build(model), g):  # the counted build: no other compile for a size check
        return Check("instructions", math.nan, INSTRUCTIONS_SLACK, "the stored states do not fit the model",
                     f"the model's sizes changed; if intended, re-record with `{update_command(model.name)}`")
    return instructions_check(model.name, measure(model, g), g)


def rebaselined(c: Check) -> bool:
    """Whether an instruction check was not compared because the toolchain differs."""
    return c.name == "instructions" and "not compared" in c.detail


# -- the derivatives' golden -----------------------------------------------------------------------------------------
DERIV_DIR = GOLDEN_DIR / "derivatives"
DERIV_NSTATES = 5  # the golden's first states: the blocks are O(nv²) numbers (track_min's 5: 134 kB compressed)
DERIV_BLOCKS = ("qdd", "dq", "dqd", "dtau", "dact", "dfext")
# the models whose derivatives' checks and gates the suite leaves out unless $MECHDYN_TEST_ALL_DERIVATIVES=1: their
# modules take 46 s and 84 s of CPU to build (docs/derivatives.md, "Build times"), which the CI's 30 minutes
# cannot spare; hmmwv_pitman is hmmwv with another steering linkage, track_min a band on the tree hmmwv exercises
LONG_BUILD = frozenset({"hmmwv_pitman", "track_min", "m113", "track_demo", "twobands"})
ALL_DERIVATIVES = "MECHDYN_TEST_ALL_DERIVATIVES"


def long_build_skip(name: str) -> str | None:
    """Why the suite leaves out `name`'s derivatives, or None when it checks them."""
    if name in LONG_BUILD and os.environ.get(ALL_DERIVATIVES) != "1":
        return (f"{name}: its derivatives module takes most of a minute of CPU or more to build, which the suite's "
                f"time cannot spare; set {ALL_DERIVATIVES}=1 to check it (docs/derivatives.md has its figures)")
    return None


@dataclass(frozen=True)
class DerivativesGolden:
    model: str
    q: np.ndarray  # (n, nq): the model's golden states 0..n-1
    qd: np.ndarray  # (n, nv)
    tau: np.ndarray  # (n, nv)
    fext: np.ndarray  # (n, nbody, 6)
    act: np.ndarray  # (n, nact)
    blocks: dict[str, np.ndarray]  # DERIV_BLOCKS, each with a leading axis n; dfext (n, nv, nbody, 6)
    flops: int  # fwd_dyn_derivs_flops

    @property
    def n(self) -> int:
        return self.q.shape[0]


def derivatives_path(model: str) -> Path:
    return DERIV_DIR / f"{model}.npz"


def derivative_models() -> list[str]:
    """The models in models/ whose derivatives have a golden: all of them."""
    return models()


def _derivatives_bytes(g: DerivativesGolden, fext_bodies: list[int]) -> bytes:
    meta = {"model": g.model, "nstates": g.n, "flops": g.flops, "states": f"{golden_path(g.model).name} 0..{g.n - 1}",
            "written_by": update_command(g.model, derivatives=True)}
    arrays = {**stored_states(g, fext_bodies),
              **{k: v for k, v in g.blocks.items() if k != "dfext"}, "dfext": g.blocks["dfext"][:, :, fext_bodies, :],
              "meta": np.array(json.dumps(meta, sort_keys=True))}
    return npz_bytes(arrays)


def load_derivatives(model: str, nbody: int) -> DerivativesGolden | None:
    """The stored derivatives golden of `model` (None if there is none), fext and dfext expanded to nbody bodies."""
    path = derivatives_path(model)
    if not path.is_file():
        return None
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(z["meta"].item())
        n, nv = z["qd"].shape
        bodies = z["fext_bodies"]
        width = max(nbody, int(bodies.max(initial=-1)) + 1)  # a shrunk model: a mismatch, reported by the check
        fext, dfext = np.zeros((n, width, 6)), np.zeros((n, nv, width, 6))
        fext[:, bodies, :], dfext[:, :, bodies, :] = z["fext"], z["dfext"]
        blocks = {k: z[k] for k in DERIV_BLOCKS if k != "dfext"} | {"dfext": dfext}
        return DerivativesGolden(model, z["q"], z["qd"], z["tau"], fext, z["act"], blocks, int(meta["flops"]))


def record_derivatives(model: Model) -> tuple[DerivativesGolden, list[int]]:
    """The production build's derivatives at the model's golden states 0..DERIV_NSTATES-1, and their flop count."""
    g = load(model.name, model.nbody)
    if g is None:
        raise InputError(f"no golden for {model.name}: the derivatives' golden takes its states; create it with "
                         f"`{update_command(model.name)}`")
    dyn = Dynamics(model)
    if not _fits(dyn, g):
        raise InputError(f"the golden states of {model.name} do not fit the model: re-record them with "
                         f"`{update_command(model.name)}` first")
    n = min(DERIV_NSTATES, g.n)
    D = [dyn.derivatives(g.q[k], g.qd[k], g.tau[k], g.fext[k], g.act[k]) for k in range(n)]
    blocks = {k: np.array([getattr(d, k) for d in D]) for k in DERIV_BLOCKS}
    fext_bodies = [i for i, b in enumerate(model.bodies) if b.fext]
    return DerivativesGolden(model.name, g.q[:n], g.qd[:n], g.tau[:n], g.fext[:n], g.act[:n], blocks,
                             int(dyn.derivatives_flops)), fext_bodies


def update_derivatives(spec: str) -> DerivativesGolden:
    """(Re)write the derivatives' golden of one model; its only writer."""
    model = load_model(spec)
    g, fext_bodies = record_derivatives(model)
    path = derivatives_path(model.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, _derivatives_bytes(g, fext_bodies), mode=0o644)
    return g


def stored_derivatives(spec: str) -> DerivativesGolden | None:
    model = load_model(spec)
    return load_derivatives(model.name, model.nbody)


def describe_derivatives(g: DerivativesGolden) -> str:
    path = derivatives_path(g.model)
    size = path.stat().st_size if path.is_file() else 0
    shown = os.path.relpath(path) if path.is_relative_to(Path.cwd()) else str(path)
    return f"derivatives golden {g.model}: {g.n} states, {g.flops} flops; {shown} ({size} bytes)"


def derivatives_check(dyn: Dynamics, g: DerivativesGolden) -> Check:
    """Every block of fwd_dyn_derivs at the stored states against the golden, scaled per state and block, to
    OUTPUT_TOL: the dynamics' own bound, which builds for other targets (no FMA, -O0) stay far inside."""
    name, command = "golden_derivatives", update_command(g.model, derivatives=True)
    fits = (g.q.shape[1:], g.qd.shape[1:], g.fext.shape[1:], g.act.shape[1:]) == (
        (dyn.nq,), (dyn.nv,), (dyn.nbody, 6), (dyn.nact,))
    if not fits:
        return Check(name, math.nan, OUTPUT_TOL, "the stored states do not fit the model",
                     f"the model's sizes changed; if intended, re-record with `{command}`")
    worst, where = 0.0, ""
    for k in range(g.n):
        D = dyn.derivatives(g.q[k], g.qd[k], g.tau[k], g.fext[k], g.act[k])
        for b in DERIV_BLOCKS:
            want = g.blocks[b][k]
            e = scaled_error(getattr(D, b), want) if want.size else 0.0
            if e > worst or not where:
                worst, where = e, f"{b} at state {k}"
    return Check(name, worst, OUTPUT_TOL, f"generated derivatives vs golden at {g.n} stored states, worst {where}",
                 f"the generated derivatives changed; if intended, re-record with `{command}`"
                 if worst > OUTPUT_TOL else "")
