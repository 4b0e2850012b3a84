"""Assemble the passes into one self-contained C translation unit per model.

Exports (the C API in docs/generator.md):

    void fwd_dyn(q, qd, tau, fext, act, qdd)         fext, act may be NULL
    void fwd_dyn_batch(n, Q, QD, TAU, FEXT, ACT, QDD)   four states per SIMD pass (simd.py)
    void fwd_dyn_observe(q, qd, obs)
    int  fwd_dyn_find(kind, name)                    -1: no such name, -2: no such kind
    double fwd_dyn_bench(ncalls, npool, Q, QD, TAU, FEXT, ACT)
    double fwd_dyn_bench_batch(nrounds, npool, Q, QD, TAU, FEXT, ACT, OUT)
    const int fwd_dyn_nq, fwd_dyn_nv, fwd_dyn_nact, fwd_dyn_nbody, fwd_dyn_observe_len
    const long fwd_dyn_flops
    void fwd_dyn_drift(q, qd, tau)                   the integration rule (stepper.py)
    long fwd_dyn_sim(scheme, nsteps, dt, q, qd, ...)  Euler or Verlet steps in C, with the dampers' work
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from mechdyn.core.model import Model

from .crba import mass_matrix
from .elements import element_forces, tsda_state
from .expr import OPS_COUNTED, Builder, Sym, Val
from .kinematics import TreeKinematics
from . import frames, kkt, schedule
from .loops import loop_rows
from .ltdl import check_sparsity, expanded_parents, floating_blocks, ltdl_forward
from .rnea import bias_force
from .stepper import CDEF as STEPPER_CDEF
from .stepper import damped, drift_function, power_body, sim_function
from .simd import SQRT_C, batch4_function, batch_function
from .trig import SINCOS_C, VECTOR_TYPES
from .trig import batch as sincos_batch

GENERATOR_VERSION = "10"  # bump whenever the emitted code changes for the same model


@dataclass(frozen=True)
class Generated:
    model: Model
    source: str  # the C translation unit
    ops: Counter  # live operations in fwd_dyn, by kind
    observe_len: int

    @property
    def flops(self) -> int:
        """Arithmetic operations per fwd_dyn call (+ − × ÷ sqrt, a sincos pair as one), counted at generation time."""
        return sum(self.ops[o] for o in OPS_COUNTED)


def dynamics_builder(model: Model, eager: bool = False) -> Builder:
    """fwd_dyn as built, in pass order: kinematics, H, C, elements, then H qdd = tau − C + Q, or the KKT system
    with loops (`eager`: the LᵀDL's updates subtracted as they come, ltdl.py)."""
    if model.tracks:
        raise NotImplementedError(f"{model.path}: track bands are parsed but not yet expanded into bodies")
    b = Builder(path=model.path)
    kin = TreeKinematics(b, model)
    H = mass_matrix(b, kin)
    lam = expanded_parents(model)
    check_sparsity(H, lam)
    C = bias_force(b, kin)
    Q = element_forces(b, kin)
    rhs: list[Val] = [b.add(b.sub(Sym(f"tau[{i}]"), C[i]), Q.get(i, 0.0)) for i in range(model.nv)]
    if model.loops:
        rows = []
        for lp in model.loops:
            with b.at(model.path, lp.line, f"loop '{lp.name}'"):
                rows += loop_rows(b, kin, lp)
        qdd = kkt.kkt_solve(b, H, rows, rhs, kkt.elimination_order(model))
    else:
        qdd = ltdl_forward(b, H, lam, rhs, floating_blocks(model), eager)
    for i, x in enumerate(qdd):
        b.store(f"qdd[{i}]", x)
    return b


def dynamics_body(model: Model) -> tuple[list[str], Counter, list[str]]:
    """The statements of fwd_dyn, scheduled (schedule.py), without their sincos batch; the operation counts; the
    angles of the batch."""
    b = dynamics_builder(model)
    if not model.loops and schedule.keeps_emitted_order(len(b.live())):  # then factor eagerly (ltdl.py)
        b = dynamics_builder(model, eager=True)
    return (*b.finish(sincos=False, scheduled=True), b.angles)


def observe_body(model: Model) -> list[str]:
    """The statements of fwd_dyn_observe: POI position and velocity, TSDA l and l̇, RSDA q and q̇."""
    b = Builder(path=model.path)
    kin = TreeKinematics(b, model)
    k = 0
    for p in model.pois:
        with b.at(model.path, p.line, f"poi '{p.name}'"):
            pos, vel = kin.point(p.body, [float(x) for x in p.pos])
            for x in (*pos, *vel):
                b.store(f"obs[{k}]", x)
                k += 1
    for e in model.tsdas:
        with b.at(model.path, e.line, f"tsda '{e.name}'"):
            st = tsda_state(b, kin, e)
            b.store(f"obs[{k}]", st.l)
            b.store(f"obs[{k + 1}]", st.ldot)
        k += 2
    for e in model.rsdas:
        b.store(f"obs[{k}]", Sym(f"q[{model.qidx[e.body]}]"))
        b.store(f"obs[{k + 1}]", Sym(f"qd[{model.vidx[e.body]}]"))
        k += 2
    return b.finish()[0]


def observe_length(model: Model) -> int:
    return 6 * len(model.pois) + 2 * len(model.tsdas) + 2 * len(model.rsdas)


def _names_table(kind: str, names: list[str]) -> str:
    """A `kind` lookup branch of fwd_dyn_find (also for a kind with no entries, which is known, not bogus)."""
    table = ", ".join(f'"{n}"' for n in names)
    lookup = (f"        static const char *const names[] = {{{table}}};\n"
              f"        for (int i = 0; i < {len(names)}; ++i) if (strcmp(names[i], name) == 0) return i;\n"
              if names else "")
    return f'    if (strcmp(kind, "{kind}") == 0) {{\n{lookup}        return -1;\n    }}\n'


def find_function(model: Model) -> str:
    """fwd_dyn_find: a name's index among POIs, TSDAs, RSDAs or act slots; -1 if the kind has no such name, -2 if
    the kind is none of those. The name matches whole (strcmp on the NUL-terminated string)."""
    acts = sorted((e.act, e.name) for e in (*model.tsdas, *model.rsdas) if e.act >= 0)
    body = "".join([
        _names_table("poi", [p.name for p in model.pois]),
        _names_table("tsda", [e.name for e in model.tsdas]),
        _names_table("rsda", [e.name for e in model.rsdas]),
        _names_table("act", [n for _, n in acts]),
    ])
    return ("int fwd_dyn_find(const char *kind, const char *name)\n{\n"
            "    if (!kind) return -2;\n    if (!name) return -1;\n" + body + "    return -2;\n}\n")


def generate(model: Model) -> Generated:
    """The C translation unit for `model`."""
    shifts = frames.shifts(model)
    framed = frames.slide(model, shifts)
    body, ops, angles = dynamics_body(framed)
    dyn = sincos_batch(angles) + body
    nobs = observe_length(model)
    obs = observe_body(framed) if nobs else []
    power = power_body(framed) if damped(model) else []
    nf, na = 6 * model.nbody, model.nact
    indent = lambda lines: "".join(f"    {ln}\n" for ln in lines)  # noqa: E731
    null_guards = []
    if any(bd.fext for bd in model.bodies):
        null_guards.append(f"static const double fext_zero[{nf}] = {{0}};")
        null_guards.append("if (!fext) fext = fext_zero;")
    if na:
        null_guards.append(f"static const double act_zero[{na}] = {{0}};")
        null_guards.append("if (!act) act = act_zero;")
    floating = any(bd.joint == "floating" for bd in model.bodies)  # the drift's quaternion exponential
    trig_c = SINCOS_C if floating or angles or any("md_sincos4(" in ln for ln in obs + power) else ""
    sqrt_c = SQRT_C if any("sqrt(" in ln for ln in body) else ""
    unused = [f"(void){a};" for a, used in (("fext", any(bd.fext for bd in model.bodies)), ("act", na > 0)) if not used]
    src = f"""/* Forward dynamics of model '{model.name}', generated by mechdyn (generator version {GENERATOR_VERSION}).
 * nq {model.nq}, nv {model.nv}, bodies {model.nbody}, act slots {na}; {sum(ops[o] for o in OPS_COUNTED)} operations per call.
 * Body frames slid along their joint axes (codegen/frames.py; q, qd, qdd, tau, fext and act as in the model):
 *   {frames.describe(model, shifts)}.
 * Conventions: docs/conventions.md. Do not edit: regenerate with `mechdyn gen`. */
#include <math.h>
#include <string.h>
#include <time.h>
{VECTOR_TYPES}{trig_c}{sqrt_c}
const int fwd_dyn_nq = {model.nq};
const int fwd_dyn_nv = {model.nv};
const int fwd_dyn_nact = {na};
const int fwd_dyn_nbody = {model.nbody};
const int fwd_dyn_observe_len = {nobs};
const long fwd_dyn_flops = {sum(ops[o] for o in OPS_COUNTED)};

void fwd_dyn(const double *q, const double *qd, const double *tau, const double *fext, const double *act, double *qdd)
{{
{indent(null_guards + unused)}{indent(dyn)}}}

{batch4_function(model, body, angles)}{batch_function(model)}
void fwd_dyn_observe(const double *q, const double *qd, double *obs)
{{
{indent(obs) if obs else "    (void)q; (void)qd; (void)obs;" + chr(10)}}}

{find_function(model)}
/* Seconds per call of fwd_dyn over `ncalls` calls cycling through a pool of states;
 * the running checksum goes to *checksum so the calls cannot be optimized away. */
double fwd_dyn_bench(long ncalls, int npool, const double *q, const double *qd, const double *tau,
                     const double *fext, const double *act, double *checksum)
{{
    double out[{model.nv}], sum = 0.0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long c = 0; c < ncalls; ++c) {{
        int k = (int)(c % npool);
        fwd_dyn(q + (long)k * {model.nq}, qd + (long)k * {model.nv}, tau + (long)k * {model.nv},
                fext + (long)k * {nf}, {"act + (long)k * " + str(na) if na else "0"}, out);
        sum += out[c % {model.nv}];
    }}
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *checksum = sum;
    return ((t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec)) / (double)ncalls;
}}

/* Seconds per state of fwd_dyn_batch over `nrounds` passes through the whole pool (four states per SIMD
 * pass), into out[npool * nv]; the sum of the last pass's outputs goes to *checksum. */
double fwd_dyn_bench_batch(long nrounds, int npool, const double *q, const double *qd, const double *tau,
                           const double *fext, const double *act, double *out, double *checksum)
{{
    double sum = 0.0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long r = 0; r < nrounds; ++r)
        fwd_dyn_batch(npool, q, qd, tau, fext, act, out);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    for (long i = 0; i < (long)npool * {model.nv}; ++i) sum += out[i];
    *checksum = sum;
    return ((t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec)) / ((double)nrounds * npool);
}}
"""
    return Generated(model, src + drift_function(model) + sim_function(model, power), ops, nobs)


CDEF = """
const int fwd_dyn_nq, fwd_dyn_nv, fwd_dyn_nact, fwd_dyn_nbody, fwd_dyn_observe_len;
const long fwd_dyn_flops;
void fwd_dyn(const double *q, const double *qd, const double *tau, const double *fext, const double *act, double *qdd);
void fwd_dyn_batch(int n, const double *q, const double *qd, const double *tau, const double *fext, const double *act, double *qdd);
void fwd_dyn_observe(const double *q, const double *qd, double *obs);
int fwd_dyn_find(const char *kind, const char *name);
double fwd_dyn_bench(long ncalls, int npool, const double *q, const double *qd, const double *tau,
                     const double *fext, const double *act, double *checksum);
double fwd_dyn_bench_batch(long nrounds, int npool, const double *q, const double *qd, const double *tau,
                           const double *fext, const double *act, double *out, double *checksum);
""" + STEPPER_CDEF
