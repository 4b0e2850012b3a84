/* Driver motions in C (docs/mech-format.md, `driver`): the formulas of mechdyn/core/motion.py, evaluated by the
 * steppers at every stage time, from the flat arrays motion.pack() writes:
 *   [code, start, blend, p0..p4]                                      (constant 0, ramp 1, sine 2, sweep 3, log sweep 4)
 *   [5, start, blend, 0 x 5, n, breaks (n + 1), coef (6 n, piece by piece, highest power first)]   (table)
 * The caller (drivers.py) checks each array's length against its piece count once, before any step. */
#include <math.h>
#include <string.h>

/* API begin */
typedef struct {
    int iq, iv, act;        /* the driven coordinate's q and qd slots, and the act slot that carries its f'' */
    double q0;              /* its design value: q = q0 + f(t) */
    const double *motion;   /* motion.pack() */
} md_driver;

typedef void (*md_react_fn)(const double *q, const double *qd, const double *tau, const double *fext,
                            const double *act, double *qdd, double *r);

/* A model's drivers as a stepper runs them, with what it records of them */
typedef struct {
    const md_driver *d;
    int n;
    md_react_fn react;      /* the model's fwd_dyn_react */
    double *act;            /* workspace: nact, the act array with the drivers' f'' in their slots */
    double *r;              /* n: the reactions at the last evaluation */
    double *traj_r;         /* n + 1 per recorded state, the reactions then the work (NULL: not recorded) */
    double *work;           /* 1: the drivers' work, the integral of r . f' dt, accumulated */
} md_drivers;

void md_motion_eval(const double *m, double t, double *out);
const double *md_drive(const md_driver *d, int n, int nact, double t, const double *ac, double *buf, double *q,
                       double *qd);
double md_drive_power(const md_driver *d, int n, const double *qd, const double *r);
void md_drive_record(const md_drivers *drv, long row);
/* API end */

#define MD_TWO_PI 6.283185307179586

/* f, f', f'' of the motion itself at local time s >= 0 (no start, no blend) */
static void motion_raw(const double *m, double s, double *f)
{
    const int code = (int)m[0];
    const double *p = m + 3;
    if (code == 0) { f[0] = p[0]; f[1] = 0.0; f[2] = 0.0; return; }
    if (code == 1) { f[0] = p[0] * s; f[1] = p[0]; f[2] = 0.0; return; }
    if (code == 5) {
        const int n = (int)m[8];
        const double *x = m + 9, *c = m + 10 + n;
        const double sc = s < x[0] ? x[0] : s > x[n] ? x[n] : s;
        int lo = 0, hi = n - 1;  /* the last piece whose start is <= sc */
        while (lo < hi) {
            const int mid = (lo + hi + 1) / 2;
            if (x[mid] <= sc) lo = mid; else hi = mid - 1;
        }
        const double h = sc - x[lo], *ck = c + 6 * lo;
        double v = 0.0, d1 = 0.0, d2 = 0.0;
        for (int k = 0; k < 6; ++k) { d2 = d2 * h + 2.0 * d1; d1 = d1 * h + v; v = v * h + ck[k]; }
        f[0] = v; f[1] = d1; f[2] = d2;
        return;
    }
    double th, thd, thdd;
    if (code == 2) {
        th = MD_TWO_PI * p[1] * s + p[2]; thd = MD_TWO_PI * p[1]; thdd = 0.0;
    } else {
        const double f0 = p[1], f1 = p[2], d = p[3], u = s < d ? s : d;
        if (code == 4) {
            const double lk = log(f1 / f0), g = exp(lk * u / d);
            th = MD_TWO_PI * f0 * d * (g - 1.0) / lk; thd = MD_TWO_PI * f0 * g; thdd = MD_TWO_PI * f0 * g * lk / d;
        } else {
            th = MD_TWO_PI * (f0 * u + (f1 - f0) * u * u / (2.0 * d));
            thd = MD_TWO_PI * (f0 + (f1 - f0) * u / d);
            thdd = MD_TWO_PI * (f1 - f0) / d;
        }
        if (s > d) { th += MD_TWO_PI * f1 * (s - d); thd = MD_TWO_PI * f1; thdd = 0.0; }
    }
    const double sn = sin(th), cs = cos(th);
    f[0] = p[0] * sn; f[1] = p[0] * cs * thd; f[2] = p[0] * (cs * thdd - sn * thd * thd);
}

/* The driver's offset from the design pose, its rate and its acceleration at time t: at rest before the start,
 * entering through the degree-7 blend w(s / T) f(s) over the blend time T */
void md_motion_eval(const double *m, double t, double *out)
{
    const double s = t - m[1], T = m[2];
    if (!(s >= 0.0)) { out[0] = out[1] = out[2] = 0.0; return; }
    motion_raw(m, s, out);
    if (T > 0.0 && s < T) {
        const double u = s / T, v = 1.0 - u;
        const double w = u * u * u * u * (35.0 - 84.0 * u + 70.0 * u * u - 20.0 * u * u * u);
        const double w1 = 140.0 * u * u * u * v * v * v / T;
        const double w2 = 420.0 * u * u * v * v * (1.0 - 2.0 * u) / (T * T);
        const double f = out[0], fd = out[1], fdd = out[2];
        out[0] = w * f;
        out[1] = w1 * f + w * fd;
        out[2] = w2 * f + 2.0 * w1 * fd + w * fdd;
    }
}

/* The drivers at time t: each one's coordinate and rate set in q and qd (either may be NULL: not set), and the
 * act sample ac (NULL: zeros) copied into buf (nact) with each driver's slot holding its f''. Returns the act
 * array fwd_dyn is to read: buf, or ac itself when there is no driver. */
const double *md_drive(const md_driver *d, int n, int nact, double t, const double *ac, double *buf, double *q,
                       double *qd)
{
    if (n == 0) return ac;
    if (ac) memcpy(buf, ac, sizeof(double) * (size_t)nact);
    else memset(buf, 0, sizeof(double) * (size_t)nact);
    for (int k = 0; k < n; ++k) {
        double f[3];
        md_motion_eval(d[k].motion, t, f);
        if (q) q[d[k].iq] = d[k].q0 + f[0];
        if (qd) qd[d[k].iv] = f[1];
        buf[d[k].act] = f[2];
    }
    return buf;
}

/* The drivers' power with reactions r: the sum of r_k times each one's rate, read from qd (which md_drive, or
 * the implicit step's state, has just set from the schedule: the motion is not evaluated again) */
double md_drive_power(const md_driver *d, int n, const double *qd, const double *r)
{
    double p = 0.0;
    for (int k = 0; k < n; ++k) p += r[k] * qd[d[k].iv];
    return p;
}

/* Row `row` of drv's recorded trajectory: the last evaluation's reactions, then the work so far (if recorded) */
void md_drive_record(const md_drivers *drv, long row)
{
    if (!drv || !drv->traj_r) return;
    double *out = drv->traj_r + row * (drv->n + 1);
    memcpy(out, drv->r, sizeof(double) * (size_t)drv->n);
    out[drv->n] = drv->work[0];
}
