/* The band's contact forces: each track's pins against its end rollers and its shoes' faces under its road
 * wheels (docs/contact.md, "The band"). Shares no code with ground.c. A body row X is R (9, row-major, body to
 * world), p (3), w (3), v (3, the origin's velocity), world coordinates; fext rows are [x × F; F]. */
#include <math.h>

/* API begin */
enum { MD_PIN_FRICTION = 0, MD_PIN_TOOTH = 1, MD_FACE = 2 };

typedef struct {
    int body;       /* the roller's body */
    int kind;       /* MD_PIN_FRICTION, MD_PIN_TOOTH (an end roller) or MD_FACE (a road wheel) */
    double radius;
    double teeth;   /* tooth count (MD_PIN_TOOTH) */
    double theta0;  /* pocket phase (MD_PIN_TOOTH) */
    double y0;      /* the band plane's offset along the axle (pins) */
    double m_pair;  /* the pair's reduced mass, for the implicit friction */
    double crush;   /* the penetration that presses the roller's rim onto the pins (0: not known) */
} md_roller;

typedef struct {
    int first_shoe, nshoe, nroller;
    const md_roller *rollers;
    double link_len, face_z, face_fade;     /* face_fade in metres */
    double kn, cn, kg, mu, v_eps, ramp, gate, f_skip;
} md_band;

double md_pin_pair(const md_band *band, const md_roller *r, const double *Xs, const double *Xr, double dt,
                   double *F, double *x, double *torque);
double md_face_pair(const md_band *band, const md_roller *r, const double *Xs, const double *Xr, double dt,
                    double *F, double *x, double *torque);
double md_face_weight(const md_band *band, double x, double *slope);
double md_band_fext(const md_band *bands, int nband, const double *X, double dt, double *fext, double *torque);
void md_band_depth(const md_band *bands, int nband, const double *X, double *out);
int md_band_fext_jac(const md_band *bands, int nband, const double *X, double dt, double *fext, double *torque,
                     int cap, int *pairs, double *blocks);
/* API end */

/* the smoothstep S(t) and its slope */
static double band_smooth(double t, double *slope)
{
    if (t <= 0.0 || t >= 1.0) {
        *slope = 0.0;
        return t <= 0.0 ? 0.0 : 1.0;
    }
    *slope = 6.0 * t * (1.0 - t);
    return t * t * (3.0 - 2.0 * t);
}

/* the damper's fade-in over the first `ramp` of penetration */
static double band_ramp(double delta, double ramp)
{
    return delta < ramp ? delta / ramp : 1.0;
}

/* y = Rᵀ x for a row-major R */
static void band_tmul(const double *R, const double *x, double *y)
{
    for (int k = 0; k < 3; ++k) y[k] = R[k] * x[0] + R[3 + k] * x[1] + R[6 + k] * x[2];
}

/* y = R x */
static void band_mul(const double *R, const double *x, double *y)
{
    for (int k = 0; k < 3; ++k) y[k] = R[3 * k] * x[0] + R[3 * k + 1] * x[1] + R[3 * k + 2] * x[2];
}

/* the velocity of world point x moving with body row X: v + w × (x − p) */
static void band_point_velocity(const double *X, const double *x, double *u)
{
    const double *p = X + 9, *w = X + 12, *v = X + 15;
    double e[3] = {x[0] - p[0], x[1] - p[1], x[2] - p[2]};
    u[0] = v[0] + w[1] * e[2] - w[2] * e[1];
    u[1] = v[1] + w[2] * e[0] - w[0] * e[2];
    u[2] = v[2] + w[0] * e[1] - w[1] * e[0];
}

/* the implicit regularized-Coulomb coefficient k̃: the force is −k̃·u */
static double band_friction(double mu, double load, double slip2, double v_eps, double dt, double m)
{
    double k = mu * load / sqrt(slip2 + v_eps * v_eps);
    return k / (1.0 + k * dt / m);
}

/* A pin (shoe Xs's origin) against end roller r (Xr): the force F on the shoe at world point x (the pin), and
 * the roller's torque about its axle, from the roller-frame arm d; the pair's potential. */
static double band_pin_pair(const md_band *band, const md_roller *r, const double *Xs, const double *Xr, double dt,
                   double *F, double *x, double *torque)
{
    const double *ps = Xs + 9, *pr = Xr + 9;
    double e[3] = {ps[0] - pr[0], ps[1] - pr[1], ps[2] - pr[2]}, d[3];
    x[0] = ps[0], x[1] = ps[1], x[2] = ps[2];
    F[0] = F[1] = F[2] = *torque = 0.0;
    /* the in-plane components first: most pins are outside the gate, and need no more */
    d[0] = Xr[0] * e[0] + Xr[3] * e[1] + Xr[6] * e[2];
    d[2] = Xr[2] * e[0] + Xr[5] * e[1] + Xr[8] * e[2];
    double rho = sqrt(d[0] * d[0] + d[2] * d[2]);
    double delta = r->radius - rho;
    if (!(delta > -band->gate) || rho == 0.0) return 0.0; /* outside the gate: no term is nonzero */
    d[1] = Xr[1] * e[0] + Xr[4] * e[1] + Xr[7] * e[2];
    double dgamma, gamma = band_smooth((delta + band->gate) / band->gate, &dgamma);
    dgamma /= band->gate;
    double n[3] = {d[0] / rho, 0.0, d[2] / rho}, t[3] = {-d[2] / rho, 0.0, d[0] / rho};
    double us[3], ur[3], uw[3], u[3];
    band_point_velocity(Xs, ps, us);
    band_point_velocity(Xr, ps, ur);
    for (int k = 0; k < 3; ++k) uw[k] = us[k] - ur[k];
    band_tmul(Xr, uw, u);
    double un = n[0] * u[0] + n[2] * u[2], ut = t[0] * u[0] + t[2] * u[2];
    double fn = 0.0, ft = 0.0, fy = 0.0, U = 0.0, radial = 0.0;
    if (delta > 0.0) { /* one-sided, the damper ramped in and never pulling */
        double f = band->kn * delta + band->cn * band_ramp(delta, band->ramp) * (-un);
        radial = f > 0.0 ? f : 0.0;
        fn += radial;
        U += 0.5 * band->kn * delta * delta;
    }
    double y = d[1] - r->y0; /* the guide: ½·γ·kg·y² and its damper */
    fn += 0.5 * dgamma * band->kg * y * y;
    fy -= gamma * (band->kg * y + band->cn * u[1]);
    U += 0.5 * gamma * band->kg * y * y;
    if (r->kind == MD_PIN_TOOTH) { /* −∇(γ·U0(θ)), the arm ρ */
        double phase = r->teeth * (atan2(d[2], d[0]) - r->theta0);
        double U0 = band->f_skip * r->radius / r->teeth * (1.0 - cos(phase));
        fn += dgamma * U0;
        ft -= gamma * (band->f_skip * r->radius / rho * sin(phase) + band->cn * ut);
        U += gamma * U0;
    } else if (radial > 0.0) {
        ft -= band_friction(band->mu, radial, ut * ut, band->v_eps, dt, r->m_pair) * ut;
    }
    double f[3] = {fn * n[0] + ft * t[0], fy, fn * n[2] + ft * t[2]};
    band_mul(Xr, f, F);
    *torque = -(d[2] * f[0] - d[0] * f[2]); /* y of d × (−f): the reaction −f at d */
    return U;
}

/* The face weight w(x) of a shoe at x along it, and its slope: complementary smoothsteps reaching face_fade past
 * both ends, a partition of unity across each pin. */
static double band_face_weight(const md_band *band, double x, double *slope)
{
    double phi = band->face_fade, s1, s2;
    double w = band_smooth((x + phi) / (2.0 * phi), &s1) - band_smooth((x - band->link_len + phi) / (2.0 * phi), &s2);
    *slope = (s1 - s2) / (2.0 * phi);
    return w;
}

/* A road wheel r (Xr) on shoe Xs's face: F[0..2] on the shoe at x[0..2] (the axle: the normal and conservative
 * part), F[3..5] on the shoe at x[3..5] (the wheel's foot: friction), and the wheel's torque about its axle, from
 * the shoe-frame arm to the foot; the pair's potential. */
static double band_face_pair(const md_band *band, const md_roller *r, const double *Xs, const double *Xr, double dt,
                    double *F, double *x, double *torque)
{
    const double *ps = Xs + 9, *pr = Xr + 9;
    double e[3] = {pr[0] - ps[0], pr[1] - ps[1], pr[2] - ps[2]}, a[3];
    for (int k = 0; k < 6; ++k) F[k] = 0.0;
    *torque = 0.0;
    x[0] = x[3] = pr[0], x[1] = x[4] = pr[1], x[2] = x[5] = pr[2];
    /* the normal component first, then along the shoe: most wheels are off most shoes, and need no more */
    a[2] = Xs[2] * e[0] + Xs[5] * e[1] + Xs[8] * e[2];
    double delta = r->radius - (a[2] - band->face_z);
    if (!(delta > 0.0)) return 0.0;
    a[0] = Xs[0] * e[0] + Xs[3] * e[1] + Xs[6] * e[2];
    double dw, w = band_face_weight(band, a[0], &dw);
    if (!(w > 0.0)) return 0.0;
    a[1] = Xs[1] * e[0] + Xs[4] * e[1] + Xs[7] * e[2];
    double ur[3], us[3], uw[3], adot[3];
    band_point_velocity(Xr, pr, ur);
    band_point_velocity(Xs, pr, us);
    for (int k = 0; k < 3; ++k) uw[k] = ur[k] - us[k];
    band_tmul(Xs, uw, adot);
    double f = band->kn * delta + band->cn * band_ramp(delta, band->ramp) * (-adot[2]);
    double fn = w * (f > 0.0 ? f : 0.0);
    double on_wheel[3] = {-0.5 * band->kn * delta * delta * dw, 0.0, fn}, on_shoe[3];
    band_mul(Xs, on_wheel, on_shoe);
    for (int k = 0; k < 3; ++k) F[k] = -on_shoe[k];
    /* friction at the foot, against the wheel's slip over the shoe there */
    double b[3] = {a[0], a[1], band->face_z}, xb[3];
    band_mul(Xs, b, xb);
    for (int k = 0; k < 3; ++k) xb[k] += ps[k], x[3 + k] = xb[k];
    band_point_velocity(Xr, xb, ur);
    band_point_velocity(Xs, xb, us);
    for (int k = 0; k < 3; ++k) uw[k] = ur[k] - us[k];
    double slip[3];
    band_tmul(Xs, uw, slip);
    if (fn > 0.0) {
        double k = band_friction(band->mu, fn, slip[0] * slip[0] + slip[1] * slip[1], band->v_eps, dt, r->m_pair);
        double fric[3] = {k * slip[0], k * slip[1], 0.0}; /* on the shoe: the wheel's −k̃·slip, negated */
        band_mul(Xs, fric, F + 3);
        /* the wheel's −fric at the arm (0, 0, zf − az) from its axle, about the axle's direction in the shoe frame */
        double axis_w[3] = {Xr[1], Xr[4], Xr[7]}, axis[3], arm = band->face_z - a[2];
        band_tmul(Xs, axis_w, axis);
        double wheel[3] = {-fric[0], -fric[1], 0.0};
        *torque = -arm * wheel[1] * axis[0] + arm * wheel[0] * axis[1]; /* ((0, 0, arm) × wheel) · axis */
    }
    return 0.5 * w * band->kn * delta * delta;
}

/* fext rows of shoe s and roller r += [x × F; F] and its exact negation, the moment computed once */
static void band_apply(double *fext, int s, int r, const double *F, const double *x)
{
    double m[3] = {x[1] * F[2] - x[2] * F[1], x[2] * F[0] - x[0] * F[2], x[0] * F[1] - x[1] * F[0]};
    double *fs = fext + 6 * s, *fr = fext + 6 * r;
    for (int k = 0; k < 3; ++k) {
        fs[k] += m[k], fs[3 + k] += F[k];
        fr[k] -= m[k], fr[3 + k] -= F[k];
    }
}

/* band_pin_pair, band_face_pair and band_face_weight, exported (the producer calls them itself, which the compiler
 * may inline: an exported function of a shared library can be interposed, so calls to it cannot be). */
double md_pin_pair(const md_band *band, const md_roller *r, const double *Xs, const double *Xr, double dt,
                   double *F, double *x, double *torque)
{
    return band_pin_pair(band, r, Xs, Xr, dt, F, x, torque);
}

double md_face_pair(const md_band *band, const md_roller *r, const double *Xs, const double *Xr, double dt,
                    double *F, double *x, double *torque)
{
    return band_face_pair(band, r, Xs, Xr, dt, F, x, torque);
}

double md_face_weight(const md_band *band, double x, double *slope)
{
    return band_face_weight(band, x, slope);
}

/* Whether the pair of roller r and shoe Xs can touch: each pair law's first test, with a margin, so a pair it
 * turns away is one whose law returns zeros (the law runs its own test exactly); the sums are bitwise those of
 * every pair. Road wheels: the face's normal component; end rollers: the pin's in-plane distance. */
static int band_may_touch(const md_band *band, const md_roller *r, const double *Xs, const double *Xr)
{
    const double *ps = Xs + 9, *pr = Xr + 9;
    double e0 = pr[0] - ps[0], e1 = pr[1] - ps[1], e2 = pr[2] - ps[2];
    if (r->kind == MD_FACE) return r->radius - (Xs[2] * e0 + Xs[5] * e1 + Xs[8] * e2 - band->face_z) > -1e-9;
    double d0 = Xr[0] * e0 + Xr[3] * e1 + Xr[6] * e2, d2 = Xr[2] * e0 + Xr[5] * e1 + Xr[8] * e2;
    double reach = r->radius + band->gate;
    return d0 * d0 + d2 * d2 < reach * reach * (1.0 + 1e-9) + 1e-18;
}

/* Every band's pin and face pairs, all pairs: their wrenches added into fext (nbody × 6), each roller's axle
 * torque, summed pair by pair from the pairs' own arms, written into torque (the rollers of all bands in order);
 * the potential. */
double md_band_fext(const md_band *bands, int nband, const double *X, double dt, double *fext, double *torque)
{
    double U = 0.0, F[6], x[6], tau;
    for (int b = 0; b < nband; ++b) {
        const md_band *band = bands + b;
        for (int i = 0; i < band->nroller; ++i, ++torque) {
            const md_roller *r = band->rollers + i;
            const double *Xr = X + 18 * r->body;
            *torque = 0.0;
            for (int s = band->first_shoe; s < band->first_shoe + band->nshoe; ++s) {
                const double *Xs = X + 18 * s;
                if (!band_may_touch(band, r, Xs, Xr)) continue;
                /* a pair out of contact returns zeros, and adding zeros changes no sum: skip them */
                if (r->kind == MD_FACE) {
                    U += band_face_pair(band, r, Xs, Xr, dt, F, x, &tau);
                    if (F[0] != 0.0 || F[1] != 0.0 || F[2] != 0.0) band_apply(fext, s, r->body, F, x);
                    if (F[3] != 0.0 || F[4] != 0.0 || F[5] != 0.0) band_apply(fext, s, r->body, F + 3, x + 3);
                } else {
                    U += band_pin_pair(band, r, Xs, Xr, dt, F, x, &tau);
                    if (F[0] != 0.0 || F[1] != 0.0 || F[2] != 0.0) band_apply(fext, s, r->body, F, x);
                }
                *torque += tau;
            }
        }
    }
    return U;
}

/* How deep the band is pressed into its rollers at X: out[0] the deepest pin inside an end roller's radius
 * (m, 0 when none is) and out[1] how many are; out[2] the deepest road wheel into a face it weighs on and
 * out[3] how many such pairs there are; out[4] the largest penetration as a fraction of its roller's crush
 * depth (>= 1: the band is crushed onto its pins). The same depths as the laws', for the traces and the
 * settle's gate. */
void md_band_depth(const md_band *bands, int nband, const double *X, double *out)
{
    out[0] = out[1] = out[2] = out[3] = out[4] = 0.0;
    for (int b = 0; b < nband; ++b) {
        const md_band *band = bands + b;
        for (int i = 0; i < band->nroller; ++i) {
            const md_roller *r = band->rollers + i;
            const double *Xr = X + 18 * r->body, *pr = Xr + 9;
            for (int s = band->first_shoe; s < band->first_shoe + band->nshoe; ++s) {
                const double *Xs = X + 18 * s, *ps = Xs + 9;
                double delta, slope;
                int k;
                if (r->kind == MD_FACE) {
                    double e[3] = {pr[0] - ps[0], pr[1] - ps[1], pr[2] - ps[2]};
                    delta = r->radius - (Xs[2] * e[0] + Xs[5] * e[1] + Xs[8] * e[2] - band->face_z);
                    if (!(band_face_weight(band, Xs[0] * e[0] + Xs[3] * e[1] + Xs[6] * e[2], &slope) > 0.0)) continue;
                    k = 2;
                } else {
                    double e[3] = {ps[0] - pr[0], ps[1] - pr[1], ps[2] - pr[2]};
                    double d0 = Xr[0] * e[0] + Xr[3] * e[1] + Xr[6] * e[2], d2 = Xr[2] * e[0] + Xr[5] * e[1] + Xr[8] * e[2];
                    delta = r->radius - sqrt(d0 * d0 + d2 * d2);
                    k = 0;
                }
                if (!(delta > 0.0)) continue;
                if (delta > out[k]) out[k] = delta;
                out[k + 1] += 1.0;
                if (r->crush > 0.0 && delta / r->crush > out[4]) out[4] = delta / r->crush;
            }
        }
    }
}

/* ---- Derivatives (docs/contact.md, "Derivatives"): each pair's force again, in forward-mode jets along the pair's
 * 24 tangents, the shoe's (δφ, δp, δw, δv) then the roller's: R ↦ exp(δφ×)·R, p ↦ p + δp, w ↦ w + δw, v ↦ v + δv,
 * all in world coordinates. Every branch is the one the evaluation takes. */

/* A jet type T (prefix P) of N derivatives and its arithmetic: the constant, a + b, a − b, a·s for a constant s,
 * a·b, a / b and √a (its slope taken as 0 at a = 0). Instantiated here for a band pair's 24 tangents and in ground.c
 * for one body's 12. */
#define MD_JET(T, P, N)                                                                                             \
    typedef struct {                                                                                                \
        double v, d[N]; /* the value and its derivatives along the tangents */                                      \
    } T;                                                                                                            \
    static T P##_const(double c) { T r = {c, {0.0}}; return r; }                                                    \
    static T P##_add(T a, T b) { a.v += b.v; for (int k = 0; k < N; ++k) a.d[k] += b.d[k]; return a; }             \
    static T P##_sub(T a, T b) { a.v -= b.v; for (int k = 0; k < N; ++k) a.d[k] -= b.d[k]; return a; }             \
    static T P##_scale(T a, double s) { a.v *= s; for (int k = 0; k < N; ++k) a.d[k] *= s; return a; }              \
    static T P##_mul(T a, T b)                                                                                      \
    {                                                                                                               \
        T r = {a.v * b.v, {0.0}};                                                                                   \
        for (int k = 0; k < N; ++k) r.d[k] = a.d[k] * b.v + a.v * b.d[k];                                           \
        return r;                                                                                                   \
    }                                                                                                               \
    static T P##_div(T a, T b)                                                                                      \
    {                                                                                                               \
        T r = {a.v / b.v, {0.0}};                                                                                   \
        for (int k = 0; k < N; ++k) r.d[k] = (a.d[k] - r.v * b.d[k]) / b.v;                                         \
        return r;                                                                                                   \
    }                                                                                                               \
    static T P##_sqrt(T a)                                                                                          \
    {                                                                                                               \
        T r = {sqrt(a.v), {0.0}};                                                                                   \
        if (r.v > 0.0)                                                                                              \
            for (int k = 0; k < N; ++k) r.d[k] = 0.5 * a.d[k] / r.v;                                                \
        return r;                                                                                                   \
    }

enum { BJ = 24 };
MD_JET(band_jet, bj, BJ)

/* sin a and cos a */
static void bj_sincos(band_jet a, band_jet *s, band_jet *c)
{
    *s = bj_scale(a, cos(a.v)), s->v = sin(a.v);
    *c = bj_scale(a, -sin(a.v)), c->v = cos(a.v);
}

/* atan2(y, x) */
static band_jet bj_atan2(band_jet y, band_jet x)
{
    band_jet r = bj_scale(bj_sub(bj_scale(y, x.v), bj_scale(x, y.v)), 1.0 / (x.v * x.v + y.v * y.v));
    r.v = atan2(y.v, x.v);
    return r;
}

/* max(0, a) */
static band_jet bj_pos(band_jet a)
{
    return a.v > 0.0 ? a : bj_const(0.0);
}

/* band_smooth in jets: S(t), and its slope S′(t) into *slope */
static band_jet bj_smooth(band_jet t, band_jet *slope)
{
    if (t.v <= 0.0 || t.v >= 1.0) {
        *slope = bj_const(0.0);
        return bj_const(t.v <= 0.0 ? 0.0 : 1.0);
    }
    *slope = bj_scale(t, 6.0 - 12.0 * t.v), slope->v = 6.0 * t.v * (1.0 - t.v);
    band_jet S = bj_scale(t, slope->v);
    S.v = t.v * t.v * (3.0 - 2.0 * t.v);
    return S;
}

/* band_ramp in jets */
static band_jet bj_ramp(band_jet delta, double ramp)
{
    return delta.v < ramp ? bj_scale(delta, 1.0 / ramp) : bj_const(1.0);
}

/* band_friction in jets: the implicit regularized-Coulomb coefficient k̃ */
static band_jet bj_friction(double mu, band_jet load, band_jet slip2, double v_eps, double dt, double m)
{
    band_jet k = bj_div(bj_scale(load, mu), bj_sqrt(bj_add(slip2, bj_const(v_eps * v_eps))));
    return bj_div(k, bj_add(bj_const(1.0), bj_scale(k, dt / m)));
}

/* c = a × b for plain vectors */
static void band_cross(const double *a, const double *b, double *c)
{
    c[0] = a[1] * b[2] - a[2] * b[1], c[1] = a[2] * b[0] - a[0] * b[2], c[2] = a[0] * b[1] - a[1] * b[0];
}

/* Body row X as jets along tangents off … off + 11 (δφ, δp, δw, δv): R (9, row-major), p, w, v; column j of R
 * moves by δφ × (its column) */
static void bj_row(const double *X, int off, band_jet *R, band_jet *p, band_jet *w, band_jet *v)
{
    for (int j = 0; j < 3; ++j) {
        double c[3] = {X[j], X[3 + j], X[6 + j]};
        for (int i = 0; i < 3; ++i) R[3 * i + j] = bj_const(X[3 * i + j]);
        for (int k = 0; k < 3; ++k) {
            double e[3] = {k == 0, k == 1, k == 2}, m[3];
            band_cross(e, c, m);
            for (int i = 0; i < 3; ++i) R[3 * i + j].d[off + k] = m[i];
        }
    }
    for (int k = 0; k < 3; ++k) {
        p[k] = bj_const(X[9 + k]), w[k] = bj_const(X[12 + k]), v[k] = bj_const(X[15 + k]);
        p[k].d[off + 3 + k] = w[k].d[off + 6 + k] = v[k].d[off + 9 + k] = 1.0;
    }
}

/* y = Rᵀ x in jets */
static void bj_tmul(const band_jet *R, const band_jet *x, band_jet *y)
{
    for (int k = 0; k < 3; ++k)
        y[k] = bj_add(bj_add(bj_mul(R[k], x[0]), bj_mul(R[3 + k], x[1])), bj_mul(R[6 + k], x[2]));
}

/* y = R x in jets */
static void bj_rmul(const band_jet *R, const band_jet *x, band_jet *y)
{
    for (int k = 0; k < 3; ++k)
        y[k] = bj_add(bj_add(bj_mul(R[3 * k], x[0]), bj_mul(R[3 * k + 1], x[1])), bj_mul(R[3 * k + 2], x[2]));
}

/* c = a × b in jets */
static void bj_cross(const band_jet *a, const band_jet *b, band_jet *c)
{
    c[0] = bj_sub(bj_mul(a[1], b[2]), bj_mul(a[2], b[1]));
    c[1] = bj_sub(bj_mul(a[2], b[0]), bj_mul(a[0], b[2]));
    c[2] = bj_sub(bj_mul(a[0], b[1]), bj_mul(a[1], b[0]));
}

/* u = v + w × (x − p) in jets: the velocity of point x moving with the body (p, w, v) */
static void bj_point_velocity(const band_jet *p, const band_jet *w, const band_jet *v, const band_jet *x, band_jet *u)
{
    band_jet e[3] = {bj_sub(x[0], p[0]), bj_sub(x[1], p[1]), bj_sub(x[2], p[2])}, m[3];
    bj_cross(w, e, m);
    for (int k = 0; k < 3; ++k) u[k] = bj_add(v[k], m[k]);
}

/* W += [x × F; F] in jets */
static void bj_wrench(const band_jet *x, const band_jet *F, band_jet *W)
{
    band_jet m[3];
    bj_cross(x, F, m);
    for (int k = 0; k < 3; ++k) W[k] = bj_add(W[k], m[k]), W[3 + k] = bj_add(W[3 + k], F[k]);
}

/* band_pin_pair's wrench on the shoe in jets, added into W; 0 (W untouched) when the pin is outside the gate */
static int bj_pin_pair(const md_band *band, const md_roller *r, const double *Xs, const double *Xr, double dt,
                       band_jet *W)
{
    band_jet Rs[9], ps[3], ws[3], vs[3], Rr[9], pr[3], wr[3], vr[3], e[3], d[3];
    bj_row(Xs, 0, Rs, ps, ws, vs);
    bj_row(Xr, 12, Rr, pr, wr, vr);
    for (int k = 0; k < 3; ++k) e[k] = bj_sub(ps[k], pr[k]);
    bj_tmul(Rr, e, d);
    band_jet rho = bj_sqrt(bj_add(bj_mul(d[0], d[0]), bj_mul(d[2], d[2])));
    band_jet delta = bj_sub(bj_const(r->radius), rho);
    if (!(delta.v > -band->gate) || rho.v == 0.0) return 0;
    band_jet dgamma, gamma = bj_smooth(bj_scale(bj_add(delta, bj_const(band->gate)), 1.0 / band->gate), &dgamma);
    dgamma = bj_scale(dgamma, 1.0 / band->gate);
    band_jet n[3] = {bj_div(d[0], rho), bj_const(0.0), bj_div(d[2], rho)};
    band_jet t[3] = {bj_scale(n[2], -1.0), bj_const(0.0), n[0]};
    band_jet us[3], ur[3], uw[3], u[3];
    bj_point_velocity(ps, ws, vs, ps, us);
    bj_point_velocity(pr, wr, vr, ps, ur);
    for (int k = 0; k < 3; ++k) uw[k] = bj_sub(us[k], ur[k]);
    bj_tmul(Rr, uw, u);
    band_jet un = bj_add(bj_mul(n[0], u[0]), bj_mul(n[2], u[2])), ut = bj_add(bj_mul(t[0], u[0]), bj_mul(t[2], u[2]));
    band_jet fn = bj_const(0.0), ft = bj_const(0.0), radial = bj_const(0.0);
    if (delta.v > 0.0) {
        radial = bj_pos(bj_sub(bj_scale(delta, band->kn), bj_mul(bj_scale(bj_ramp(delta, band->ramp), band->cn), un)));
        fn = radial;
    }
    band_jet y = bj_sub(d[1], bj_const(r->y0));
    fn = bj_add(fn, bj_scale(bj_mul(dgamma, bj_mul(y, y)), 0.5 * band->kg));
    band_jet fy = bj_scale(bj_mul(gamma, bj_add(bj_scale(y, band->kg), bj_scale(u[1], band->cn))), -1.0);
    if (r->kind == MD_PIN_TOOTH) {
        band_jet s, c, phase = bj_scale(bj_sub(bj_atan2(d[2], d[0]), bj_const(r->theta0)), r->teeth);
        bj_sincos(phase, &s, &c);
        band_jet U0 = bj_scale(bj_sub(bj_const(1.0), c), band->f_skip * r->radius / r->teeth);
        fn = bj_add(fn, bj_mul(dgamma, U0));
        band_jet tooth = bj_add(bj_div(bj_scale(s, band->f_skip * r->radius), rho), bj_scale(ut, band->cn));
        ft = bj_sub(ft, bj_mul(gamma, tooth));
    } else if (radial.v > 0.0) {
        ft = bj_sub(ft, bj_mul(bj_friction(band->mu, radial, bj_mul(ut, ut), band->v_eps, dt, r->m_pair), ut));
    }
    band_jet f[3] = {bj_add(bj_mul(fn, n[0]), bj_mul(ft, t[0])), fy, bj_add(bj_mul(fn, n[2]), bj_mul(ft, t[2]))}, F[3];
    bj_rmul(Rr, f, F);
    bj_wrench(ps, F, W);
    return 1;
}

/* band_face_weight in jets: w(x), and its slope into *slope */
static band_jet bj_face_weight(const md_band *band, band_jet x, band_jet *slope)
{
    double phi = band->face_fade;
    band_jet s1, s2;
    band_jet w = bj_sub(bj_smooth(bj_scale(bj_add(x, bj_const(phi)), 0.5 / phi), &s1),
                        bj_smooth(bj_scale(bj_add(x, bj_const(phi - band->link_len)), 0.5 / phi), &s2));
    *slope = bj_scale(bj_sub(s1, s2), 0.5 / phi);
    return w;
}

/* band_face_pair's wrenches on the shoe (at the axle and at the foot) in jets, added into W; 0 (W untouched) when the
 * wheel does not weigh on the face */
static int bj_face_pair(const md_band *band, const md_roller *r, const double *Xs, const double *Xr, double dt,
                        band_jet *W)
{
    band_jet Rs[9], ps[3], ws[3], vs[3], Rr[9], pr[3], wr[3], vr[3], e[3], a[3];
    bj_row(Xs, 0, Rs, ps, ws, vs);
    bj_row(Xr, 12, Rr, pr, wr, vr);
    for (int k = 0; k < 3; ++k) e[k] = bj_sub(pr[k], ps[k]);
    bj_tmul(Rs, e, a);
    band_jet delta = bj_sub(bj_const(r->radius), bj_sub(a[2], bj_const(band->face_z)));
    if (!(delta.v > 0.0)) return 0;
    band_jet dw, w = bj_face_weight(band, a[0], &dw);
    if (!(w.v > 0.0)) return 0;
    band_jet ur[3], us[3], uw[3], adot[3];
    bj_point_velocity(pr, wr, vr, pr, ur);
    bj_point_velocity(ps, ws, vs, pr, us);
    for (int k = 0; k < 3; ++k) uw[k] = bj_sub(ur[k], us[k]);
    bj_tmul(Rs, uw, adot);
    band_jet f = bj_sub(bj_scale(delta, band->kn), bj_mul(bj_scale(bj_ramp(delta, band->ramp), band->cn), adot[2]));
    band_jet fn = bj_mul(w, bj_pos(f));
    band_jet F[3], on_shoe[3] = {bj_scale(bj_mul(bj_mul(delta, delta), dw), 0.5 * band->kn), bj_const(0.0),
                                 bj_scale(fn, -1.0)};
    bj_rmul(Rs, on_shoe, F);
    bj_wrench(pr, F, W);
    if (!(fn.v > 0.0)) return 1;
    band_jet b[3] = {a[0], a[1], bj_const(band->face_z)}, xb[3];
    bj_rmul(Rs, b, xb);
    for (int k = 0; k < 3; ++k) xb[k] = bj_add(xb[k], ps[k]);
    bj_point_velocity(pr, wr, vr, xb, ur);
    bj_point_velocity(ps, ws, vs, xb, us);
    for (int k = 0; k < 3; ++k) uw[k] = bj_sub(ur[k], us[k]);
    band_jet slip[3];
    bj_tmul(Rs, uw, slip);
    band_jet k = bj_friction(band->mu, fn, bj_add(bj_mul(slip[0], slip[0]), bj_mul(slip[1], slip[1])), band->v_eps,
                             dt, r->m_pair);
    band_jet fric[3] = {bj_mul(k, slip[0]), bj_mul(k, slip[1]), bj_const(0.0)};
    bj_rmul(Rs, fric, F);
    bj_wrench(xb, F, W);
    return 1;
}

/* bj_face_pair or bj_pin_pair by the roller's kind, into a zeroed W */
static int bj_pair(const md_band *band, const md_roller *r, const double *Xs, const double *Xr, double dt, band_jet *W)
{
    for (int k = 0; k < 6; ++k) W[k] = bj_const(0.0);
    return r->kind == MD_FACE ? bj_face_pair(band, r, Xs, Xr, dt, W) : bj_pin_pair(band, r, Xs, Xr, dt, W);
}

/* block (12 × 24, row-major) of a pair from the shoe's wrench W: rows 0–5 the shoe's fext, rows 6–11 the roller's
 * (the negation); columns the shoe's tangents, then the roller's */
static void band_block(const band_jet *W, double *block)
{
    for (int i = 0; i < 6; ++i)
        for (int k = 0; k < BJ; ++k) block[BJ * i + k] = W[i].d[k], block[BJ * (6 + i) + k] = -W[i].d[k];
}

/* md_band_fext (fext and torque as there), and the derivative of fext: for each pair inside its law's support, its
 * shoe and roller into pairs[2n], pairs[2n + 1] and its 12 × 24 block into blocks + 288n, at most cap of them.
 * Returns the number of pairs n, or −n when n > cap (nothing is written past cap). */
int md_band_fext_jac(const md_band *bands, int nband, const double *X, double dt, double *fext, double *torque,
                     int cap, int *pairs, double *blocks)
{
    int n = 0;
    md_band_fext(bands, nband, X, dt, fext, torque);
    for (int b = 0; b < nband; ++b) {
        const md_band *band = bands + b;
        for (int i = 0; i < band->nroller; ++i) {
            const md_roller *r = band->rollers + i;
            const double *Xr = X + 18 * r->body;
            for (int s = band->first_shoe; s < band->first_shoe + band->nshoe; ++s) {
                const double *Xs = X + 18 * s;
                band_jet W[6];
                if (!band_may_touch(band, r, Xs, Xr) || !bj_pair(band, r, Xs, Xr, dt, W)) continue;
                if (n < cap) {
                    pairs[2 * n] = s, pairs[2 * n + 1] = r->body;
                    band_block(W, blocks + 12 * BJ * n);
                }
                ++n;
            }
        }
    }
    return n <= cap ? n : -n;
}
