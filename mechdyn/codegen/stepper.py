"""The time stepper emitted beside fwd_dyn: the drift of docs/conventions.md and two schemes.

fwd_dyn_drift, fwd_dyn_power and fwd_dyn_sim, declared with their parameters in capi.py's table.

The drift is written exactly, so each half-step is self-adjoint: single-DOF
joints move by qd·τ; a floating body's attitude by Q ⊗ exp(½ ω τ) and its
position by R(Q ⊗ exp(½ ω τ/2)) v τ (the midpoint attitude).

Schemes: 0 is semi-implicit Euler (kick with f(q, qd), then drift dt);
1 is Störmer–Verlet composed as drift(dt/2), kick with f evaluated once at the
midpoint with the velocity predictor qd + qdd_prev·dt/2, drift(dt/2).
Inputs are schedules of `nsched` samples `dt_sched` apart, held between
samples (nsched = 1 holds one value throughout); the sample index is clamped
into [0, nsched - 1], so no time reads outside them.

Beside the stepping, the work the dampers dissipate (the TSDAs' c l̇² and the
RSDAs' c q̇², as mechdyn/sim/energy.py defines them) is integrated at every
step by the trapezoidal rule on the powers at the step's two ends: second
order, like the energy error of Verlet, and what energy_balance computes when
every step is recorded. The inputs' work (tau, act, fext) is not counted.
The stepping stops at the first step whose state (or that work) is not finite.
"""
from __future__ import annotations

from collections import Counter

from mechdyn.core.model import Model

from . import declared
from .capi import FUNCTION
from .elements import tsda_state
from .expr import Builder
from .kinematics import TreeKinematics

SCHEMES = {"euler": 0, "verlet": 1}

_QUAT_HELPERS = r"""
/* a ⊗ b for scalar-first quaternions, into out (which may alias neither) */
static void quat_mul(const double *a, const double *b, double *out)
{
    out[0] = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
    out[1] = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
    out[2] = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
    out[3] = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
}

/* exp(½ w t/2) and exp(½ w t): the unit quaternions turning by |w| t/2 and |w| t about w,
 * both from one batched sincos (codegen/trig.py) */
static void quat_exp2(const double *w, double t, double *half, double *full)
{
    const double n = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
    md_v4 s, c;
    md_sincos4((md_v4){0.25 * n * t, 0.5 * n * t, 0.0, 0.0}, &s, &c);
    const double sh = n > 0.0 ? s[0] / n : 0.25 * t, sf = n > 0.0 ? s[1] / n : 0.5 * t;
    half[0] = c[0];
    full[0] = c[1];
    for (int k = 0; k < 3; ++k) { half[k + 1] = sh * w[k]; full[k + 1] = sf * w[k]; }
}

/* R(Q) v for a unit quaternion */
static void quat_rotate(const double *Q, const double *v, double *out)
{
    double w = Q[0], x = Q[1], y = Q[2], z = Q[3];
    out[0] = (1 - 2 * (y * y + z * z)) * v[0] + 2 * (x * y - w * z) * v[1] + 2 * (x * z + w * y) * v[2];
    out[1] = 2 * (x * y + w * z) * v[0] + (1 - 2 * (x * x + z * z)) * v[1] + 2 * (y * z - w * x) * v[2];
    out[2] = 2 * (x * z - w * y) * v[0] + 2 * (y * z + w * x) * v[1] + (1 - 2 * (x * x + y * y)) * v[2];
}

"""


DRIFT_FLOATING = r"""
/* one floating body: Q ← Q ⊗ exp(½ ω τ), r ← r + R(Q ⊗ exp(½ ω τ/2)) v τ */
static void drift_floating(double *q, const double *qd, double tau)
{
    double eh[4], e[4], Qmid[4], Qnew[4], dr[3];
    quat_exp2(qd, tau, eh, e);
    quat_mul(q, eh, Qmid);
    quat_rotate(Qmid, qd + 3, dr);
    quat_mul(q, e, Qnew);
    q[0] = Qnew[0]; q[1] = Qnew[1]; q[2] = Qnew[2]; q[3] = Qnew[3];
    q[4] += dr[0] * tau; q[5] += dr[1] * tau; q[6] += dr[2] * tau;
}
"""


def drift_function(model: Model) -> str:
    """fwd_dyn_drift: q advanced by tau at constant qd, body by body."""
    lines = []
    for b, iq, iv in zip(model.bodies, model.qidx, model.vidx):
        if b.joint == "floating":
            lines.append(f"    drift_floating(q + {iq}, qd + {iv}, tau);")
        else:
            lines.append(f"    q[{iq}] += qd[{iv}] * tau;")
    helpers = _QUAT_HELPERS + DRIFT_FLOATING if any(b.joint == "floating" for b in model.bodies) else ""
    return f"{helpers}\n{FUNCTION['fwd_dyn_drift'].header()}\n{{\n" + "\n".join(lines) + "\n}\n"


def damped(model: Model) -> bool:
    """Whether any element dissipates: then the stepper integrates the dampers' power."""
    return any(declared.damped(model, kind, n) for kind in ("tsda", "rsda")
               for n in range(len(model.tsdas if kind == "tsda" else model.rsdas)))


def power_body(model: Model) -> tuple[list[str], Counter]:
    """The statements of fwd_dyn_power (p[0] = Σ c l̇² over the TSDAs + Σ c q̇² over the RSDAs), and their
    operation counts."""
    b = Builder()
    kin = TreeKinematics(b, model)
    terms = []
    for n, e in enumerate(model.tsdas):
        if declared.damped(model, "tsda", n):
            ldot = tsda_state(b, kin, e).ldot
            terms.append(b.mul(declared.element(model, "tsda", n, "c"), b.mul(ldot, ldot)))
    for n, e in enumerate(model.rsdas):
        if declared.damped(model, "rsda", n):
            x = kin.qd(model.vidx[e.body])
            terms.append(b.mul(declared.element(model, "rsda", n, "c"), b.mul(x, x)))
    b.store("p[0]", b.sum(*terms))
    return b.finish()


# x is neither inf nor NaN, read from its exponent bits: isfinite() may fold to 1 under -ffinite-math-only
_FINITE_C = r"""
static inline int md_finite(double x)
{
    unsigned long long bits;
    memcpy(&bits, &x, sizeof bits);
    return (bits & 0x7ff0000000000000ULL) != 0x7ff0000000000000ULL;
}
"""


def _tree_sum(terms: list[str]) -> str:
    """terms added pairwise, so the sum's latency grows with the log of their number, not the number."""
    while len(terms) > 1:
        terms = [f"({a} + {b})" for a, b in zip(terms[::2], terms[1::2])] + terms[len(terms) & ~1:]
    return terms[0]


def sim_function(model: Model, power: list[str]) -> str:
    """fwd_dyn_sim: nsteps of a scheme in C, recording every stride-th state and the dissipated work there;
    `power` is power_body of the model as generated (its frames slid), empty if nothing dissipates."""
    nq, nv, nf, na = model.nq, model.nv, 6 * model.nbody, model.nact
    body = "".join(f"    {ln}\n" for ln in power) or "    (void)q, (void)qd;\n    p[0] = 0.0;\n"
    power_fn = f"""
{FUNCTION['fwd_dyn_power'].header()}
{{
{body}}}
"""
    if model.drivers:
        return f"""{power_fn}
/* A driven model steps in mechdyn/sim (step.c, galpha.c), which evaluates the drivers' motions at every stage;
 * this stepper cannot, so it takes no step and records nothing. */
{FUNCTION['fwd_dyn_sim'].header()}
{{
    (void)scheme, (void)nsteps, (void)t0, (void)dt, (void)q, (void)qd, (void)qdd_prev, (void)nsched, (void)dt_sched;
    (void)tau, (void)fext, (void)act, (void)stride, (void)traj_q, (void)traj_qd, (void)work, (void)traj_work;
    *done = 0;
    return -1;
}}
"""
    # the trapezoid's end powers: p0 at the step's start (the call's start, then the last step's end), p1 at its end
    p_start = "    double p0, p1;\n    fwd_dyn_power(q, qd, &p0);\n" if power else ""
    p_step = ("            fwd_dyn_power(q, qd, &p1);\n"
              "            const double w1 = w + 0.5 * dt * (p0 + p1);\n") if power else "            const double w1 = w;\n"
    p_next = "            w = w1;\n            p0 = p1;\n" if power else ""
    state_sum = _tree_sum(["w1"] + [f"q[{i}]" for i in range(nq)] + [f"qd[{i}]" for i in range(nv)])
    return f"""{_FINITE_C}{power_fn}
/* Step (q, qd) in place; qdd_prev carries Verlet's predictor between calls (zeros: compute it).
 * *work accumulates the dampers' dissipated work (trapezoidal, every step) and traj_work gets it at each
 * recorded state. Stops at the first step whose state or work is not finite, leaving q, qd there and
 * *work at its last finite value; *done is the number of steps completed with a finite state (nsteps
 * unless it stopped). Returns the number of states recorded (after steps stride, 2 stride, ...). */
{FUNCTION['fwd_dyn_sim'].header()}
{{
    double qdd[{nv}], qdm[{nv}], w = *work;
{p_start}    long nrec = 0, k;
    for (k = 0; k < nsteps; ++k) {{
        /* the sample index clamped into [0, nsched - 1] in double, before the conversion: a negative or NaN
         * time / dt_sched holds sample 0, a time past the last sample holds the last (Dynamics.step refuses
         * bad dt_sched; this second line keeps every read inside the schedules whatever the caller passes) */
        const double at = nsched > 1 ? (t0 + k * dt) / dt_sched : 0.0;
        const long s = at >= (double)(nsched - 1) ? (long)nsched - 1 : at > 0.0 ? (long)at : 0;
        const double *u = tau + s * {nv};
        const double *fe = fext ? fext + s * {nf} : 0;
        const double *ac = act ? act + s * {max(na, 1)} : 0;
        if (scheme == 0) {{
            fwd_dyn(q, qd, u, fe, ac, qdd);
            for (int i = 0; i < {nv}; ++i) qd[i] += qdd[i] * dt;
            fwd_dyn_drift(q, qd, dt);
        }} else {{
            fwd_dyn_drift(q, qd, 0.5 * dt);
            for (int i = 0; i < {nv}; ++i) qdm[i] = qd[i] + qdd_prev[i] * 0.5 * dt;
            fwd_dyn(q, qdm, u, fe, ac, qdd);
            for (int i = 0; i < {nv}; ++i) {{ qd[i] += qdd[i] * dt; qdd_prev[i] = qdd[i]; }}
            fwd_dyn_drift(q, qd, 0.5 * dt);
        }}
        {{
{p_step}            /* one test for all: a NaN or inf anywhere makes the sum non-finite */
            if (!md_finite({state_sum})) break;
{p_next}        }}
        if (stride > 0 && (k + 1) % stride == 0) {{
            memcpy(traj_q + nrec * {nq}, q, sizeof(double) * {nq});
            memcpy(traj_qd + nrec * {nv}, qd, sizeof(double) * {nv});
            traj_work[nrec] = w;
            ++nrec;
        }}
    }}
    *work = w;
    *done = k;
    return nrec;
}}
"""
