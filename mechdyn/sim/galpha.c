/* The implicit generalized-α stepper (docs/implicit.md): Arnold and Brüls' form on mechdyn's coordinates, a
 * floating body on SE(3) (its velocity is the body twist [ω; v], so q_{n+1} = q_n ∘ exp(Δ) with SE(3)'s
 * exponential), Newton on the exact iteration matrix I − γ′h ∂f/∂qd − β′h² ∂f/∂q T(Δ) assembled from the
 * generated derivatives (the dynamics' mass matrix already solved out: f = qdd). The generated functions are
 * called through pointers (Dynamics.address), so one compiled stepper serves every model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* API begin */
typedef void (*md_ga_derivs_fn)(const double *q, const double *qd, const double *tau, const double *fext,
                                const double *act, double *qdd, double *dq, double *dqd, double *dtau, double *dact,
                                double *dfext);
typedef void (*md_ga_power_fn)(const double *q, const double *qd, double *out);

typedef struct {
    int nq, nv, nbody, nact;
    int njoint;
    const int *kind;       /* per joint: 0 single-DOF, 1 floating */
    const int *iq, *iv;    /* per joint: its first q and qd slot */
    md_ga_derivs_fn derivs; /* the model's fwd_dyn_derivs: qdd with its derivatives, the residual and its matrix */
    md_ga_power_fn power;  /* the model's dampers' dissipated power into out[0] */
    md_drivers *drv;       /* the model's drivers (motion.c), NULL: none */
} md_ga_plant;

typedef struct {
    double alpha_m, alpha_f, beta, gamma;  /* the scheme's parameters (Scheme in implicit.py) */
    int max_iter;          /* Newton corrections at most per step; with fixed, exactly this many */
    int fixed;             /* 1: exactly max_iter corrections every step, no test (the real-time mode) */
    double tol;            /* converged when |γ′h Δqdd|∞ <= tol (1 + |qd|∞) */
    int adaptive;          /* 1: the step adapts to the local error estimate, hitting every output time */
    double rtol, atol;     /* the estimate's tolerance, per coordinate: atol + rtol |Δ_i| */
    double dt_min, dt_max; /* the adaptive step's bounds */
} md_ga_opts;

enum { MD_GA_STATS = 8 };
/* stats, accumulated: steps taken, Newton corrections, most corrections in one step, steps rejected (adaptive),
 * the smallest and largest step taken (s), the next step's size (s; where an adaptive run resumes), the largest
 * last correction |γ′h Δqdd|∞ of a step (what a fixed count of corrections leaves unconverged) */

long md_ga_sim(const md_ga_plant *m, const md_ga_opts *o, long nout, double t0, double dt, double *q, double *qd,
               double *qdd, double *acc, int nsched, double dt_sched, const double *tau, const double *fext,
               const double *act, long stride, double *traj_q, double *traj_qd, double *traj_work, double *work,
               double *stats, double *conv, int *status);
void md_ga_exp(const double *q6, const double *xi, double *out7);
void md_ga_dexp(const double *xi, double *T);
int md_ga_system(const md_ga_plant *m, const md_ga_opts *o, double h, const double *qn, const double *vn,
                 const double *fn, const double *an, const double *x, const double *tau, const double *fext,
                 const double *act, double *r, double *J);
int md_ga_lu_solve(int n, double *A, int *piv, double *x);
/* API end */

/* x is neither inf nor NaN, read from its exponent bits (isfinite() may fold to 1 under -ffinite-math-only) */
static int ga_finite(double x)
{
    unsigned long long bits;
    memcpy(&bits, &x, sizeof bits);
    return (bits & 0x7ff0000000000000ULL) != 0x7ff0000000000000ULL;
}

/* a ⊗ b for scalar-first quaternions, into out (which may alias neither) */
static void ga_quat_mul(const double *a, const double *b, double *out)
{
    out[0] = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
    out[1] = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
    out[2] = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
    out[3] = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
}

/* R(Q) v for a unit quaternion */
static void ga_quat_rotate(const double *Q, const double *v, double *out)
{
    double w = Q[0], x = Q[1], y = Q[2], z = Q[3];
    out[0] = (1 - 2 * (y * y + z * z)) * v[0] + 2 * (x * y - w * z) * v[1] + 2 * (x * z + w * y) * v[2];
    out[1] = 2 * (x * y + w * z) * v[0] + (1 - 2 * (x * x + z * z)) * v[1] + 2 * (y * z - w * x) * v[2];
    out[2] = 2 * (x * z - w * y) * v[0] + 2 * (y * z + w * x) * v[1] + (1 - 2 * (x * x + y * y)) * v[2];
}

/* the skew matrix of w, row-major */
static void ga_skew(const double *w, double *S)
{
    S[0] = 0.0;   S[1] = -w[2]; S[2] = w[1];
    S[3] = w[2];  S[4] = 0.0;   S[5] = -w[0];
    S[6] = -w[1]; S[7] = w[0];  S[8] = 0.0;
}

/* C = A B for 3×3 row-major matrices */
static void ga_mul3(const double *A, const double *B, double *C)
{
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) C[3 * i + j] = A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j];
}

/* Below this angle the coefficients below are summed as their Taylor series through θ⁶: the closed forms lose
 * digits to cancellation near 0 (as 1/θ⁴ and 1/θ⁵), the series' first omitted term is under 1e-16 there. */
#define GA_SMALL 0.1

/* (1 − cos θ)/θ², (θ − sin θ)/θ³ at θ = |w| */
static void ga_coef(double th, double *a, double *b)
{
    const double t2 = th * th;
    if (th < GA_SMALL) {
        *a = 0.5 - t2 / 24.0 + t2 * t2 / 720.0 - t2 * t2 * t2 / 40320.0;
        *b = 1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0 - t2 * t2 * t2 / 362880.0;
    } else {
        *a = (1.0 - cos(th)) / t2;
        *b = (th - sin(th)) / (t2 * th);
    }
}

/* SE(3)'s exponential on a floating body's 7 coordinates: q6 = [Q; r], xi = [φ; p] in the body's axes;
 * out = [Q ⊗ exp(φ/2); r + R(Q) V(φ) p] with V = I + a φ× + b φ×² */
void md_ga_exp(const double *q6, const double *xi, double *out7)
{
    const double th = sqrt(xi[0] * xi[0] + xi[1] * xi[1] + xi[2] * xi[2]);
    double a, b, e[4], S[9], S2[9], Vp[3], dr[3];
    ga_coef(th, &a, &b);
    /* exp(φ/2) as a unit quaternion: cos(θ/2), sin(θ/2)/θ φ (the ratio by its series near 0) */
    const double t2 = th * th;
    const double s = th < GA_SMALL ? 0.5 - t2 / 48.0 + t2 * t2 / 3840.0 - t2 * t2 * t2 / 645120.0 : sin(0.5 * th) / th;
    e[0] = cos(0.5 * th);
    for (int k = 0; k < 3; ++k) e[k + 1] = s * xi[k];
    ga_quat_mul(q6, e, out7);
    const double n = 1.0 / sqrt(out7[0] * out7[0] + out7[1] * out7[1] + out7[2] * out7[2] + out7[3] * out7[3]);
    for (int k = 0; k < 4; ++k) out7[k] *= n;  /* unit to rounding over millions of steps */
    ga_skew(xi, S);
    ga_mul3(S, S, S2);
    for (int i = 0; i < 3; ++i)
        Vp[i] = xi[3 + i] + a * (S[3 * i] * xi[3] + S[3 * i + 1] * xi[4] + S[3 * i + 2] * xi[5])
              + b * (S2[3 * i] * xi[3] + S2[3 * i + 1] * xi[4] + S2[3 * i + 2] * xi[5]);
    ga_quat_rotate(q6, Vp, dr);
    for (int k = 0; k < 3; ++k) out7[4 + k] = q6[4 + k] + dr[k];
}

/* SE(3)'s tangent operator at xi = [φ; p], 6×6 row-major: exp(xi + dxi) = exp(xi) ∘ exp(T dxi) to first order.
 * T = [[Tr, 0], [Q, Tr]] with Tr = I − a φ× + b φ×² (SO(3)'s right Jacobian) and Q the coupling of the
 * translation to the rotation: Barfoot's Q_l (State Estimation for Robotics, 2017, eq. 7.86) at −xi. */
void md_ga_dexp(const double *xi, double *T)
{
    const double th = sqrt(xi[0] * xi[0] + xi[1] * xi[1] + xi[2] * xi[2]), t2 = th * th;
    double a, b, c, e, F[9], P[9], F2[9], FP[9], PF[9], FPF[9], F2P[9], PF2[9], FPFF[9], F2PF[9];
    ga_coef(th, &a, &b);
    /* c = (θ²/2 + cos θ − 1)/θ⁴, e = (θ − sin θ − θ³/6)/θ⁵ (both as their series near 0) */
    if (th < GA_SMALL) {
        c = 1.0 / 24.0 - t2 / 720.0 + t2 * t2 / 40320.0 - t2 * t2 * t2 / 3628800.0;
        e = -1.0 / 120.0 + t2 / 5040.0 - t2 * t2 / 362880.0 + t2 * t2 * t2 / 39916800.0;
    } else {
        c = (0.5 * t2 + cos(th) - 1.0) / (t2 * t2);
        e = (th - sin(th) - t2 * th / 6.0) / (t2 * t2 * th);
    }
    /* F = (−φ)×, P = (−p)×: the right Jacobian is the left one at −xi */
    const double mphi[3] = {-xi[0], -xi[1], -xi[2]}, mp[3] = {-xi[3], -xi[4], -xi[5]};
    ga_skew(mphi, F);
    ga_skew(mp, P);
    ga_mul3(F, F, F2);
    ga_mul3(F, P, FP);
    ga_mul3(P, F, PF);
    ga_mul3(FP, F, FPF);
    ga_mul3(F2, P, F2P);
    ga_mul3(P, F2, PF2);
    ga_mul3(FPF, F, FPFF);
    ga_mul3(F2P, F, F2PF);
    memset(T, 0, sizeof(double) * 36);
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
            const int k = 3 * i + j;
            /* SO(3)'s right Jacobian is its left one at −φ: I + a F + b F² with F = (−φ)× */
            const double Tr = (i == j) + a * F[k] + b * F2[k];
            T[6 * i + j] = Tr;
            T[6 * (i + 3) + j + 3] = Tr;
            T[6 * (i + 3) + j] = 0.5 * P[k] + b * (FP[k] + PF[k] + FPF[k])
                               + c * (F2P[k] + PF2[k] - 3.0 * FPF[k])
                               + 0.5 * (c + 3.0 * e) * (FPFF[k] + F2PF[k]);
        }
    }
}

/* LU with partial pivoting of the n×n row-major A in place, pivots into piv: 0, or -1 if A is singular */
static int ga_lu(int n, double *A, int *piv)
{
    for (int k = 0; k < n; ++k) {
        int p = k;
        double best = fabs(A[k * n + k]);
        for (int i = k + 1; i < n; ++i)
            if (fabs(A[i * n + k]) > best) best = fabs(A[i * n + k]), p = i;
        if (!(best > 0.0)) return -1;
        piv[k] = p;
        if (p != k)
            for (int j = 0; j < n; ++j) { double t = A[k * n + j]; A[k * n + j] = A[p * n + j]; A[p * n + j] = t; }
        const double inv = 1.0 / A[k * n + k];
        for (int i = k + 1; i < n; ++i) {
            const double l = (A[i * n + k] *= inv);
            if (l != 0.0)
                for (int j = k + 1; j < n; ++j) A[i * n + j] -= l * A[k * n + j];
        }
    }
    return 0;
}

/* Σ a[k]·b[k] over k < n, in four running sums: one sum is a chain of dependent adds, latency-bound */
static double ga_dot(const double *a, const double *b, int n)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int k = 0;
    for (; k + 4 <= n; k += 4) {
        s0 += a[k] * b[k], s1 += a[k + 1] * b[k + 1];
        s2 += a[k + 2] * b[k + 2], s3 += a[k + 3] * b[k + 3];
    }
    for (; k < n; ++k) s0 += a[k] * b[k];
    return (s0 + s1) + (s2 + s3);
}

/* x ← A⁻¹ x with ga_lu's factor */
static void ga_solve(int n, const double *A, const int *piv, double *x)
{
    /* every row swap first: the factor's rows of L were swapped with the rest, so L is in the final order */
    for (int k = 0; k < n; ++k)
        if (piv[k] != k) { double t = x[k]; x[k] = x[piv[k]]; x[piv[k]] = t; }
    for (int i = 1; i < n; ++i) x[i] -= ga_dot(A + i * n, x, i);  /* by rows: the factor is row-major */
    for (int k = n - 1; k >= 0; --k) x[k] = (x[k] - ga_dot(A + k * n + k + 1, x + k + 1, n - k - 1)) / A[k * n + k];
}

/* x ← A⁻¹ x, A (n × n, row-major) overwritten by its factor, piv (n) by its row swaps: 0, or -1 singular.
 * Exported for the tests: the factor and the solve that Newton uses, on any matrix. */
int md_ga_lu_solve(int n, double *A, int *piv, double *x)
{
    if (ga_lu(n, A, piv)) return -1;
    ga_solve(n, A, piv, x);
    return 0;
}

/* The workspace of one stepper call */
typedef struct {
    double *qn, *vn, *an, *fn, *D, *x, *J, *dq, *dqd, *dtau, *dact, *dfext, *T, *r, *qs, *vs, *as;
    int *piv;
    double *pool;
    double t1;             /* the step's end time, where the drivers' schedules are read */
} ga_work;

/* w's arrays for plant m: 0, or -1 out of memory (nothing to free then) */
static int ga_alloc(const md_ga_plant *m, ga_work *w)
{
    const int nq = m->nq, nv = m->nv, nn = nv * nv, na = m->nact > 0 ? m->nact : 1;
    w->pool = calloc((size_t)(nq + 9 * nv + 4 * nn + nv * na + 6 * nv * m->nbody + 36), sizeof(double));
    w->piv = calloc((size_t)nv, sizeof(int));
    if (!w->pool || !w->piv) {
        free(w->pool);
        free(w->piv);
        return -1;
    }
    double *p = w->pool;
    w->t1 = 0.0;
    double **vec[] = {&w->vn, &w->an, &w->fn, &w->D, &w->x, &w->r, &w->qs, &w->vs, &w->as};
    w->qn = p; p += nq;
    for (unsigned i = 0; i < sizeof vec / sizeof *vec; ++i) { *vec[i] = p; p += nv; }
    w->J = p; p += nn;
    w->dq = p; p += nn;
    w->dqd = p; p += nn;
    w->dtau = p; p += nn;
    w->dact = p; p += nv * na;
    w->dfext = p; p += 6 * nv * m->nbody;
    w->T = p;
    return 0;
}

static void ga_free(ga_work *w)
{
    free(w->pool);
    free(w->piv);
}

/* inputs held over the step from t: the schedule's samples at t (the index clamped as fwd_dyn_sim clamps it) */
static void ga_inputs(const md_ga_plant *m, int nsched, double dt_sched, double t, const double *tau,
                      const double *fext, const double *act, const double **u, const double **fe, const double **ac)
{
    const double at = nsched > 1 ? t / dt_sched : 0.0;
    const long s = at >= (double)(nsched - 1) ? (long)nsched - 1 : at > 0.0 ? (long)at : 0;
    *u = tau + s * m->nv;
    *fe = fext ? fext + s * 6 * m->nbody : 0;
    *ac = act ? act + s * (m->nact > 0 ? m->nact : 1) : 0;
}

/* The parts of the step's a, v and Δ that its unknown acceleration does not change, from the step's start
 * (w->qn, vn, fn, an) at size h (Arnold and Brüls' recurrence) */
static void ga_predict(const md_ga_plant *m, const md_ga_opts *o, ga_work *w, double h)
{
    const double am = o->alpha_m, af = o->alpha_f;
    for (int i = 0; i < m->nv; ++i) {
        const double a0 = (af * w->fn[i] - am * w->an[i]) / (1.0 - am);
        w->as[i] = a0;
        w->vs[i] = w->vn[i] + h * (1.0 - o->gamma) * w->an[i] + h * o->gamma * a0;
        w->qs[i] = h * w->vn[i] + h * h * (0.5 - o->beta) * w->an[i] + h * h * o->beta * a0;
    }
}

/* The state the step's acceleration w->x gives: pseudo-acceleration a, velocity v, increment w->D, q = qn ∘ exp(Δ) */
static void ga_state(const md_ga_plant *m, const md_ga_opts *o, ga_work *w, double h, double *q, double *v, double *a)
{
    const double ca = (1.0 - o->alpha_f) / (1.0 - o->alpha_m);
    for (int i = 0; i < m->nv; ++i) {
        a[i] = w->as[i] + ca * w->x[i];
        v[i] = w->vs[i] + o->gamma * ca * h * w->x[i];
        w->D[i] = w->qs[i] + o->beta * ca * h * h * w->x[i];
    }
    for (int j = 0; j < m->njoint; ++j) {
        if (m->kind[j]) md_ga_exp(w->qn + m->iq[j], w->D + m->iv[j], q + m->iq[j]);
        else q[m->iq[j]] = w->qn[m->iq[j]] + w->D[m->iv[j]];
    }
    /* a driven coordinate is no unknown: its q, v and acceleration are its schedule's at the step's end */
    for (int k = 0; m->drv && k < m->drv->n; ++k) {
        const md_driver *d = m->drv->d + k;
        double f[3];
        md_motion_eval(d->motion, w->t1, f);
        q[d->iq] = d->q0 + f[0];
        v[d->iv] = f[1];
        w->x[d->iv] = f[2];
        a[d->iv] = w->as[d->iv] + ca * f[2];
        w->D[d->iv] = q[d->iq] - w->qn[d->iq];
    }
}

/* Newton's system at the state (q, v) of w->x: the residual w->r = f(q, v) − x (f into f) and the iteration matrix
 * w->J = ∂r/∂x = −(I − γ′h ∂f/∂qd − β′h² ∂f/∂q T(Δ)), the floating bodies' columns through their tangent
 * operator. */
static void ga_system(const md_ga_plant *m, const md_ga_opts *o, ga_work *w, double h, const double *q, const double *v,
                      const double *u, const double *fe, const double *ac, double *f)
{
    const int nv = m->nv;
    const double ca = (1.0 - o->alpha_f) / (1.0 - o->alpha_m), bp = o->beta * ca * h * h, gp = o->gamma * ca * h;
    m->derivs(q, v, u, fe, ac, f, w->dq, w->dqd, w->dtau, w->dact, w->dfext);
    for (int j = 0; j < m->njoint; ++j) {
        if (!m->kind[j]) continue;
        const int c0 = m->iv[j];
        md_ga_dexp(w->D + c0, w->T);
        for (int i = 0; i < nv; ++i) {
            double row[6];
            for (int k = 0; k < 6; ++k) {
                double s = 0.0;
                for (int l = 0; l < 6; ++l) s += w->dq[i * nv + c0 + l] * w->T[6 * l + k];
                row[k] = s;
            }
            for (int k = 0; k < 6; ++k) w->dq[i * nv + c0 + k] = row[k];
        }
    }
    for (int i = 0; i < nv; ++i) {
        w->r[i] = f[i] - w->x[i];
        for (int k = 0; k < nv; ++k) w->J[i * nv + k] = gp * w->dqd[i * nv + k] + bp * w->dq[i * nv + k] - (i == k);
    }
    for (int k = 0; m->drv && k < m->drv->n; ++k)  /* x_d moves nothing (ga_state): its column is −e_d */
        for (int i = 0; i < nv; ++i) w->J[i * nv + m->drv->d[k].iv] = -(double)(i == m->drv->d[k].iv);
}

/* One step of size h from (qn, vn, fn = qdd_n, an = the pseudo-acceleration) into (q, v, f, a), Newton on the
 * true acceleration f with the inputs u, fe, ac. Returns the corrections made, or −1 if Newton failed (a singular
 * matrix, a non-finite value, or no convergence in max_iter when not fixed). conv, if not NULL, gets each
 * correction's velocity change |γ′h Δqdd|∞ (max_iter of them at most), *last the last one's. */
static int ga_step(const md_ga_plant *m, const md_ga_opts *o, ga_work *w, double h, const double *u, const double *fe,
                   const double *ac, double *q, double *v, double *f, double *a, double *conv, double *last)
{
    const int nv = m->nv;
    const double gp = o->gamma * (1.0 - o->alpha_f) / (1.0 - o->alpha_m) * h;
    double vmax = 0.0;
    for (int i = 0; i < nv; ++i) if (fabs(w->vn[i]) > vmax) vmax = fabs(w->vn[i]);
    ga_predict(m, o, w, h);
    memcpy(w->x, w->fn, sizeof(double) * nv);  /* Newton starts from the last acceleration */
    int it = 0, done = 0;
    for (;;) {
        ga_state(m, o, w, h, q, v, a);
        if (done || (o->fixed && it == o->max_iter)) break;
        ga_system(m, o, w, h, q, v, u, fe, ac, f);
        if (ga_lu(nv, w->J, w->piv)) return -1;
        ga_solve(nv, w->J, w->piv, w->r);  /* J Δx = r: the correction is −Δx */
        double dv = 0.0, vm = vmax;
        for (int i = 0; i < nv; ++i) {
            w->x[i] -= w->r[i];
            if (fabs(gp * w->r[i]) > dv) dv = fabs(gp * w->r[i]);
            if (fabs(v[i]) > vm) vm = fabs(v[i]);
        }
        if (!ga_finite(dv)) return -1;
        if (conv) conv[it] = dv;
        *last = dv;
        ++it;
        if (!o->fixed) {
            if (dv <= o->tol * (1.0 + vm)) done = 1;
            else if (it >= o->max_iter) return -1;
        }
    }
    memcpy(f, w->x, sizeof(double) * nv);  /* the acceleration solved for, not the last evaluation's */
    return it;
}

/* Newton's system of one step, for tests: from the step's start (qn, vn, fn, an) at size h and the acceleration
 * x, the residual r = f(q(x), v(x)) − x (nv) and the iteration matrix J (nv × nv, row-major). 0, or -1 out of
 * memory. */
int md_ga_system(const md_ga_plant *m, const md_ga_opts *o, double h, const double *qn, const double *vn,
                 const double *fn, const double *an, const double *x, const double *tau, const double *fext,
                 const double *act, double *r, double *J)
{
    ga_work w;
    if (ga_alloc(m, &w)) return -1;
    const int nv = m->nv;
    double *q = malloc(sizeof(double) * (size_t)(m->nq + 3 * nv));
    if (!q) { ga_free(&w); return -1; }
    double *v = q + m->nq, *a = v + nv, *f = a + nv;
    memcpy(w.qn, qn, sizeof(double) * m->nq);
    memcpy(w.vn, vn, sizeof(double) * nv);
    memcpy(w.fn, fn, sizeof(double) * nv);
    memcpy(w.an, an, sizeof(double) * nv);
    memcpy(w.x, x, sizeof(double) * nv);
    ga_predict(m, o, &w, h);
    ga_state(m, o, &w, h, q, v, a);
    ga_system(m, o, &w, h, q, v, tau, fext, act, f);
    memcpy(r, w.r, sizeof(double) * nv);
    memcpy(J, w.J, sizeof(double) * nv * nv);
    free(q);
    ga_free(&w);
    return 0;
}

/* the scaled local error estimate of the step just taken: |h² (β − 1/6)(f − fn)_i| / (atol + rtol |Δ_i|), max */
static double ga_error(const md_ga_plant *m, const md_ga_opts *o, const ga_work *w, double h, const double *f)
{
    double e = 0.0;
    for (int i = 0; i < m->nv; ++i) {
        const double ei = fabs(h * h * (o->beta - 1.0 / 6.0) * (f[i] - w->fn[i])) / (o->atol + o->rtol * fabs(w->D[i]));
        if (!(ei <= e)) e = ei;  /* a NaN wins */
    }
    return e;
}

/* The next step from t toward the output time tend: a fixed step is dt itself; an adaptive one is the proposal *h
 * (capped by dt_max), landing on tend exactly when it reaches it, or two even steps to tend instead of a step and a
 * sliver. *last: this step lands on tend. */
static double ga_substep(const md_ga_opts *o, double *h, double t, double tend, double dt, int *last)
{
    if (!o->adaptive) {
        *last = 1;
        return dt;
    }
    if (*h > o->dt_max) *h = o->dt_max;
    *last = 0;
    if (t + *h >= tend - 1e-12 * dt) {
        *last = 1;
        return tend - t;
    }
    return t + 2.0 * *h > tend ? 0.5 * (tend - t) : *h;
}

/* After an accepted adaptive step hs with scaled error err: the next proposal *h from the estimate (third order in
 * h), kept within [hs/5, 2hs] and above dt_min; the landing step does not shrink the proposal. */
static void ga_grow(const md_ga_opts *o, double err, double hs, int last, double *h)
{
    double grow = err > 0.0 ? 0.9 * pow(err, -1.0 / 3.0) : 2.0;
    grow = grow > 2.0 ? 2.0 : grow < 0.2 ? 0.2 : grow;
    if (!last || hs * grow > *h) *h = hs * grow;
    if (*h < o->dt_min) *h = o->dt_min;
}

/* a step's start (q, qd, qdd, acc) saved into w (qn, vn, fn, an) */
static void ga_save(const md_ga_plant *m, ga_work *w, const double *q, const double *qd, const double *qdd,
                    const double *acc)
{
    memcpy(w->qn, q, sizeof(double) * m->nq);
    memcpy(w->vn, qd, sizeof(double) * m->nv);
    memcpy(w->fn, qdd, sizeof(double) * m->nv);
    memcpy(w->an, acc, sizeof(double) * m->nv);
}

/* back to the step's start that ga_save kept in w */
static void ga_restore(const md_ga_plant *m, const ga_work *w, double *q, double *qd, double *qdd, double *acc)
{
    memcpy(q, w->qn, sizeof(double) * m->nq);
    memcpy(qd, w->vn, sizeof(double) * m->nv);
    memcpy(qdd, w->fn, sizeof(double) * m->nv);
    memcpy(acc, w->an, sizeof(double) * m->nv);
}

/* an accepted step of size hs, with `it` corrections and last correction lastdv, counted into stats (MD_GA_STATS;
 * the next step's size, stats[6], is the caller's) */
static void ga_count(double *stats, int it, double hs, double lastdv)
{
    stats[0] += 1.0;
    stats[1] += it;
    if (it > stats[2]) stats[2] = it;
    if (stats[4] == 0.0 || hs < stats[4]) stats[4] = hs;
    if (hs > stats[5]) stats[5] = hs;
    if (lastdv > stats[7]) stats[7] = lastdv;
}

/* Step (q, qd, qdd, acc) in place from t0 to t0 + nout dt: qdd is the true acceleration and acc generalized-α's
 * pseudo-acceleration (both qdd = acc = f(q, qd) at a run's start; the caller computes them). A fixed step takes
 * nout steps of dt; an adaptive one takes what its estimate allows, landing on every multiple of dt. Every
 * stride-th output time is recorded, with the dampers' dissipated work (trapezoidal over each step) in *work and
 * traj_work. stats (MD_GA_STATS) accumulates, conv (max_iter) gets the last step's velocity changes. *status: 0
 * done, 1 the state went non-finite, 2 Newton failed (fixed step), 3 the step fell below dt_min (adaptive).
 * Returns the output times completed (nout unless it stopped); q, qd, qdd, acc are left at the last completed
 * step. */
long md_ga_sim(const md_ga_plant *m, const md_ga_opts *o, long nout, double t0, double dt, double *q, double *qd,
               double *qdd, double *acc, int nsched, double dt_sched, const double *tau, const double *fext,
               const double *act, long stride, double *traj_q, double *traj_qd, double *traj_work, double *work,
               double *stats, double *conv, int *status)
{
    const int nq = m->nq, nv = m->nv;
    ga_work w;
    if (ga_alloc(m, &w)) {
        *status = 4;
        return 0;
    }
    double wk = *work, p0 = 0.0, p1 = 0.0, pd0 = 0.0;
    m->power(q, qd, &p0);
    md_drivers *drv = m->drv;
    if (drv) {  /* the drivers' power at the start, for the trapezoid of their work */
        const double *u, *fe, *ac;
        ga_inputs(m, nsched, dt_sched, t0, tau, fext, act, &u, &fe, &ac);
        ac = md_drive(drv->d, drv->n, m->nact, t0, ac, drv->act, NULL, NULL);
        drv->react(q, qd, u, fe, ac, w.r, drv->r);
        pd0 = md_drive_power(drv->d, drv->n, qd, drv->r);
    }
    long k = 0, nrec = 0;
    double h = o->adaptive ? (stats[6] > 0.0 ? stats[6] : dt) : dt;
    *status = 0;
    for (k = 0; k < nout; ++k) {
        const double tk = t0 + k * dt, tend = t0 + (k + 1) * dt;
        double t = tk;
        int last = 0;
        while (!last) {
            const double hs = ga_substep(o, &h, t, tend, dt, &last);
            ga_save(m, &w, q, qd, qdd, acc);
            const double *u, *fe, *ac;
            ga_inputs(m, nsched, dt_sched, t + 0.5 * hs, tau, fext, act, &u, &fe, &ac);
            w.t1 = t + hs;
            if (drv) ac = md_drive(drv->d, drv->n, m->nact, w.t1, ac, drv->act, NULL, NULL);
            double lastdv = 0.0;
            const int it = ga_step(m, o, &w, hs, u, fe, ac, q, qd, qdd, acc, conv, &lastdv);
            double err = 0.0;
            if (o->adaptive && it >= 0) err = ga_error(m, o, &w, hs, qdd);
            if (it < 0 || !(err <= 1.0)) {
                ga_restore(m, &w, q, qd, qdd, acc);  /* back to the step's start */
                if (!o->adaptive) { *status = 2; goto out; }
                stats[3] += 1.0;
                h = 0.5 * hs;
                if (h < o->dt_min) { *status = 3; goto out; }
                last = 0;
                continue;
            }
            double s = 0.0;
            for (int i = 0; i < nq; ++i) s += q[i];
            for (int i = 0; i < nv; ++i) s += qd[i] + qdd[i];
            m->power(q, qd, &p1);
            const double w1 = wk + 0.5 * hs * (p0 + p1);
            if (!ga_finite(s + w1)) {
                ga_restore(m, &w, q, qd, qdd, acc);
                *status = 1;
                goto out;
            }
            wk = w1;
            p0 = p1;
            if (drv) {  /* the reactions at the step's end, where its equations hold */
                drv->react(q, qd, u, fe, ac, w.r, drv->r);
                const double pd1 = md_drive_power(drv->d, drv->n, qd, drv->r);
                drv->work[0] += 0.5 * hs * (pd0 + pd1);
                pd0 = pd1;
            }
            t += hs;
            ga_count(stats, it, hs, lastdv);
            if (o->adaptive) ga_grow(o, err, hs, last, &h);
            stats[6] = o->adaptive ? h : hs;
        }
        if (stride > 0 && (k + 1) % stride == 0) {
            memcpy(traj_q + nrec * nq, q, sizeof(double) * nq);
            memcpy(traj_qd + nrec * nv, qd, sizeof(double) * nv);
            traj_work[nrec] = wk;
            md_drive_record(drv, nrec);
            ++nrec;
        }
    }
out:
    *work = wk;
    ga_free(&w);
    return k;
}
