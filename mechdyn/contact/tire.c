/* The tires' forces: each wheel a disc against the ground's height field, with Project Chrono's TMeasy or Fiala
 * handling law (docs/tires.md). Compiled after ground.c, whose terrain it reads (ground_terrain). Body rows X and
 * fext rows as there: a wheel's row R (9, body to world), p, w, v; its wrench about the world origin. */
#include <math.h>

/* API begin */
enum { MD_TMEASY = 0, MD_FIALA = 1 };
enum { MD_TIRE_INFO = 20 };  /* doubles per tire of md_tire_fext's info, in this order: */
/* in contact (0/1), depth, Fz, slip (TMeasy sx, Fiala kappa), lateral slip (TMeasy sy, Fiala alpha), camber,
 * Fx, Fy, Mx, My, Mz (contact frame), omega, vx, vy (contact frame), P (3: the patch point), the bristle force
 * (2: TMeasy's low-speed friction, contact frame), the potential */

typedef struct {
    int law;                /* MD_TMEASY or MD_FIALA */
    int points;             /* 1 or 4: the contact's reference points */
    int body;               /* the wheel's body row */
    double axis[3];         /* the spin axis in the wheel's frame (unit); the disc's centre is the frame's origin */
    double r0, width;       /* unloaded radius, width, m */
    double mu0;             /* the data's friction coefficient: the road's mu scales the law by mu / mu0 */
    double rr;              /* rolling resistance coefficient */
    double dz;              /* vertical damping, N·s/m */
    /* TMeasy */
    double d1, d2;          /* vertical stiffness: Fz = d1·δ + d2·δ² */
    double r_bottom, k_bottom;  /* bottoming: radius, stiffness past it */
    double pn, pn_max;      /* nominal and largest load used by the curves, N */
    double curve[26];       /* (pn, 2pn) pairs: dfx0 sxm fxm sxs fxs dfy0 sym fym sys fys nL0 sq0 sqe */
    double vnum, fr_begin, fr_end, sigma0, sigma1;  /* low speed: slip's speed floor, the blend's speeds, bristle */
    /* Fiala */
    double kz;              /* linear vertical stiffness when no table */
    int ncurve;             /* vertical table's points (0: linear) */
    const double *table;    /* ncurve × 2: deflection, force */
    double cslip, calpha, umin, umax;
} md_tire;

double md_tire_fext(const md_tire *t, int ntire, const md_ground *g, double mu_road, const double *X, double dt,
                    double *state, double *fext, double *info);
double md_tire_static(const md_tire *t, int ntire, const md_ground *g, const double *X, const double *state,
                      double *fext);
int md_tire_fext_jac(const md_tire *t, int ntire, const md_ground *g, double mu_road, const double *X, double dt,
                     double *state, double *fext, int cap, int *bodies, double *blocks);
/* API end */

#define TIRE_PI 3.141592653589793

/* Chrono's ChFunctionSineStep from (x1, y1) to (x2, y2) at x */
static double tire_sinestep(double x, double x1, double y1, double x2, double y2)
{
    if (x <= x1) return y1;
    if (x >= x2) return y2;
    double xx = (x - x1) / (x2 - x1);
    return y1 + (y2 - y1) * (xx - sin(2.0 * TIRE_PI * xx) / (2.0 * TIRE_PI));
}

static double tire_dot(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

static void tire_cross(const double *a, const double *b, double *c)
{
    c[0] = a[1] * b[2] - a[2] * b[1], c[1] = a[2] * b[0] - a[0] * b[2], c[2] = a[0] * b[1] - a[1] * b[0];
}

static void tire_unit(double *a)
{
    double n = sqrt(tire_dot(a, a));
    a[0] /= n, a[1] /= n, a[2] /= n;
}

/* The terrain at (x, y): the point P on it and its unit normal n */
static void tire_ground(const md_ground *g, double x, double y, double *P, double *n)
{
    double h[3], nrm[4];
    ground_terrain(g, x, y, h);
    ground_normal(h, nrm);
    P[0] = x, P[1] = y, P[2] = h[0];
    n[0] = nrm[0], n[1] = nrm[1], n[2] = nrm[2];
}

/* The contact of the disc (centre C, unit normal dn, radius r, width w) with the terrain, as Chrono's
 * DiscTerrainCollision1pt / 4pt: the patch frame F (columns fwd, lat, n), its point P, the depth; 0 when none. */
static int tire_contact(const md_ground *g, int points, const double *C, const double *dn, double r, double w,
                        double *F, double *P, double *depth)
{
    const double up[3] = {0.0, 0.0, 1.0};
    double df[3], dd[3], B[3], Pt[3], n[3];
    tire_cross(dn, up, df);
    tire_unit(df);
    tire_cross(dn, df, dd);
    for (int k = 0; k < 3; ++k) B[k] = C[k] + r * dd[k];  /* the disc's lowest point */
    tire_ground(g, B[0], B[1], Pt, n);
    if (C[2] <= Pt[2]) return 0;  /* the centre below the terrain */
    double nd = tire_dot(n, dn);
    for (int k = 0; k < 3; ++k) n[k] -= nd * dn[k];  /* the terrain normal projected onto the disc's plane */
    double fwd[3], lat[3], Pp[3];
    if (points == 1) {
        double AB = r * sqrt(tire_dot(n, n));  /* Chrono's B = C − r·n before n is normalized */
        tire_unit(n);
        double d[3] = {C[0] - Pt[0], C[1] - Pt[1], C[2] - Pt[2]};
        *depth = AB - fabs(tire_dot(d, n));
        if (*depth <= 0.0) return 0;
        double s = tire_dot(d, n);
        tire_ground(g, C[0] - s * n[0], C[1] - s * n[1], Pp, n);
        for (int k = 0; k < 3; ++k) P[k] = Pp[k];
    } else {
        tire_unit(n);
        tire_cross(dn, n, fwd);
        tire_unit(fwd);
        tire_cross(n, fwd, lat);
        const double dx = 0.1 * r, dy = 0.3 * w;
        const double off[4][2] = {{dx, 0.0}, {-dx, 0.0}, {0.0, dy}, {0.0, -dy}};
        int num = 4;
        double sum[3] = {0.0, 0.0, 0.0};
        *depth = 0.0;
        for (int i = 0; i < 4; ++i) {
            double A[3], Wv[3];
            for (int k = 0; k < 3; ++k) A[k] = C[k] + off[i][0] * fwd[k] + off[i][1] * lat[k], Wv[k] = A[k] - C[k];
            /* the line (A, −n) meets the circle (C, r): Chrono's LineCircleIntersection with dir −1 */
            double b = tire_dot(n, Wv), c = tire_dot(Wv, Wv) - r * r, delta = b * b - c;
            if (delta < 0.0) { --num; continue; }
            double tt = -(-b + sqrt(delta)), Bp[3], d[3];
            for (int k = 0; k < 3; ++k) Bp[k] = A[k] + tt * n[k], d[k] = A[k] - Pt[k];
            double s = tire_dot(d, n), AB = 0.0, AP = fabs(s);
            for (int k = 0; k < 3; ++k) AB += (Bp[k] - A[k]) * (Bp[k] - A[k]);
            double dd_i = sqrt(AB) - AP;
            if (dd_i <= 0.0) { --num; continue; }
            *depth += dd_i;
            /* Chrono queries the terrain at the projection, which also replaces n for the points after it */
            tire_ground(g, A[0] - s * n[0], A[1] - s * n[1], Pp, n);
            for (int k = 0; k < 3; ++k) sum[k] += Pp[k];
        }
        if (num == 0) return 0;
        *depth /= num;
        if (*depth <= 0.0) return 0;
        tire_ground(g, sum[0] / num, sum[1] / num, P, n);
    }
    tire_cross(dn, n, fwd);
    tire_unit(fwd);  /* Chrono's single point leaves |fwd| = cos(camber) here (docs/tires.md) */
    tire_cross(n, fwd, lat);
    for (int k = 0; k < 3; ++k) F[3 * k] = fwd[k], F[3 * k + 1] = lat[k], F[3 * k + 2] = n[k];
    return 1;
}

/* TMeasy's interpolations over the load ratio q = Fz / pn: linear, and quadratic through 0 */
static double tm_lin(double q, double w1, double w2) { return w1 + (w2 - w1) * (q - 1.0); }
static double tm_quad(double q, double w1, double w2) { return q * (2.0 * w1 - 0.5 * w2 - (w1 - 0.5 * w2) * q); }

/* TMeasy's combined force f at the combined slip s: the curve of initial slope df0, peak (sm, fm), sliding from
 * (ss, fs) (Chrono's tmxy_combined) */
static double tm_combined(double s, double df0, double sm, double fm, double ss, double fs)
{
    double df0loc = sm > 0.0 ? fmax(2.0 * fm / sm, df0) : 0.0;
    if (!(s > 0.0 && df0loc > 0.0)) return 0.0;
    if (s > ss) return fs;
    if (s < sm) {
        double p = df0loc * sm / fm - 2.0, sn = s / sm;
        return df0loc * sm * sn / (1.0 + (sn + p) * sn);
    }
    double a = (fm / sm) * (fm / sm) / (df0loc * sm), sstar = sm + (fm - fs) / (a * (ss - sm));
    if (sstar <= ss) {
        if (s <= sstar) return fm - a * (s - sm) * (s - sm);
        double b = a * (sstar - sm) / (ss - sstar);
        return fs + b * (ss - s) * (ss - s);
    }
    double sn = (s - sm) / (ss - sm);
    return fm - (fm - fs) * sn * sn * (3.0 - 2.0 * sn);
}

/* TMeasy's normalized trail nto at lateral slip |sy| (Chrono's AlignmentTorque, without −Fy·P_len) */
static double tm_trail(double sy_a, double nto0, double sq0, double sqe)
{
    double se = fmax(sqe, sq0);
    if (sy_a >= se) return 0.0;
    double wf = sq0 / se;
    if (sy_a <= sq0) {
        double sn = sy_a / sq0;
        return (1.0 - wf) * nto0 * (1.0 - sn) + wf * nto0 * (1.0 - (3.0 - 2.0 * sn) * sn * sn);
    }
    double sn = (se - sy_a) / (se - sq0);
    return -nto0 * (1.0 - wf) * (sy_a - sq0) / sq0 * sn * sn;
}

/* TMeasy's vertical spring force and potential at depth δ */
static double tm_spring(const md_tire *t, double depth, double *U)
{
    double f = depth * t->d1 + depth * depth * t->d2, over = depth - (t->r0 - t->r_bottom);
    *U = 0.5 * t->d1 * depth * depth + t->d2 * depth * depth * depth / 3.0;
    if (over > 0.0) f += over * t->k_bottom, *U += 0.5 * t->k_bottom * over * over;
    return f;
}

/* Fiala's vertical spring force and potential at depth δ: the table (linear between its points, extrapolated
 * along its last segment) or kz·δ */
static double fi_spring(const md_tire *t, double depth, double *U)
{
    if (t->ncurve < 2) {
        *U = 0.5 * t->kz * depth * depth;
        return t->kz * depth;
    }
    const double *T = t->table;
    int n = t->ncurve, i = 0;
    double E = 0.0;
    /* the segment holding δ, the area of the segments before it */
    while (i < n - 2 && depth > T[2 * (i + 1)]) {
        E += 0.5 * (T[2 * i + 1] + T[2 * i + 3]) * (T[2 * i + 2] - T[2 * i]);
        ++i;
    }
    double x0 = T[2 * i], f0 = T[2 * i + 1];
    double f = f0 + (T[2 * i + 3] - f0) / (T[2 * i + 2] - x0) * (depth - x0);
    *U = E + 0.5 * (f0 + f) * (depth - x0);
    return f;
}

/* The local force and moment of a TMeasy tire in contact (Chrono's Synchronize and Advance), its bristle state
 * st updated over dt (when dt > 0); 0 when the normal force vanishes */
static int tm_forces(const md_tire *t, double muscale, double depth, const double *vel, double omega, double gamma,
                     double dt, double *st, double *Fl, double *Ml, double *slips, double *bristle)
{
    double U, Fn = tm_spring(t, depth, &U) + t->dz * (-vel[2]);
    if (Fn < 0.0) return 0;
    double q = (Fn < t->pn_max ? Fn : t->pn_max) / t->pn, r_stat = t->r0 - depth;
    double R_eff = (2.0 * t->r0 + r_stat) / 3.0, P_len = 2.0 * sqrt(t->r0 * depth);
    double vta = R_eff * fabs(omega) + t->vnum, vsx = vel[0] - omega * R_eff, vsy = vel[1];
    double sx = -vsx / vta, sy = -vsy / vta;
    const double *c = t->curve;
    double dfx0 = tm_quad(q, c[0], c[1]), sxm = tm_lin(q, c[2], c[3]), fxm = tm_quad(q, c[4], c[5]);
    double sxs = tm_lin(q, c[6], c[7]), fxs = tm_quad(q, c[8], c[9]);
    double dfy0 = tm_quad(q, c[10], c[11]), sym = tm_lin(q, c[12], c[13]), fym = tm_quad(q, c[14], c[15]);
    double sys = tm_lin(q, c[16], c[17]), fys = tm_quad(q, c[18], c[19]);
    double nL0 = tm_lin(q, c[20], c[21]), sq0 = tm_lin(q, c[22], c[23]), sqe = tm_lin(q, c[24], c[25]);
    double Fz = Fn < t->pn_max ? Fn : t->pn_max;
    /* the bristle (Dahl) friction from the state at the step's start, then the state over dt */
    double fc = Fz * muscale, brx = st[0], bry = st[1];
    double bx_dot = vsx - t->sigma0 * brx * fabs(vsx) / fc, by_dot = vsy - t->sigma0 * bry * fabs(vsy) / fc;
    double F0x = -(t->sigma0 * brx + t->sigma1 * bx_dot), F0y = -(t->sigma0 * bry + t->sigma1 * by_dot);
    if (dt > 0.0) {
        double h = dt, sx0 = t->sigma0 * fabs(vsx), sy0 = t->sigma0 * fabs(vsy);
        st[0] = (2.0 * brx * fc + 2.0 * fc * h * vsx - brx * h * sx0) / (2.0 * fc + h * sx0);
        st[1] = (2.0 * bry * fc + 2.0 * fc * h * vsy - bry * h * sy0) / (2.0 * fc + h * sy0);
    }
    double F0 = hypot(F0x, F0y);
    if (F0 > fc) F0x *= fc / F0, F0y *= fc / F0;
    /* the slip law */
    double frblend = tire_sinestep(vel[0], t->fr_begin, 0.0, t->fr_end, 1.0);
    double sc = hypot(sx, sy), ca = sqrt(2.0) / 2.0, sa = sqrt(2.0) / 2.0;
    if (sc > 0.0) ca = sx / sc, sa = sy / sc;
    double df0 = hypot(dfx0 * ca, dfy0 * sa), fm = muscale * hypot(fxm * ca, fym * sa);
    double sm = muscale * hypot(sxm * ca, sym * sa), fs = muscale * hypot(fxs * ca, fys * sa);
    double ss = muscale * hypot(sxs * ca, sys * sa), f = tm_combined(sc, df0, sm, fm, ss, fs);
    double Fx = sc > 0.0 ? f * ca : 0.0, Fy = sc > 0.0 ? f * sa : 0.0;
    Fx = (1.0 - frblend) * F0x + frblend * Fx;
    Fy = (1.0 - frblend) * F0y + frblend * Fy;
    double Mz = vel[0] >= t->fr_begin ? -Fy * P_len * tm_trail(fabs(sy), nL0, sq0, sqe) : 0.0;
    double cg = t->width * t->width * (t->d1 + 2.0 * t->d2 * depth) / 12.0;
    Fl[0] = Fx, Fl[1] = Fy, Fl[2] = Fn;
    Ml[0] = -cg * gamma, Ml[1] = -t->rr * Fn * t->r0 * tanh(omega), Ml[2] = Mz;
    slips[0] = sx, slips[1] = sy;
    bristle[0] = F0x, bristle[1] = F0y;
    return 1;
}

/* The local force and moment of a Fiala tire in contact (Chrono's ChFialaTire), its rolling resistance a moment
 * (times r0: docs/tires.md); 0 when the normal force vanishes */
static int fi_forces(const md_tire *t, double muscale, double depth, const double *vel, double omega, double *Fl,
                     double *Ml, double *slips)
{
    double U, Fn = fi_spring(t, depth, &U) + t->dz * (-vel[2]);
    if (!(Fn > 0.0)) return 0;
    double abs_vx = fabs(vel[0]), vsx = vel[0] - omega * (t->r0 - depth), vsy = vel[1];
    double kappa = 0.0, alpha = 0.0;
    if (abs_vx != 0.0) kappa = -vsx / abs_vx, alpha = atan2(vsy, abs_vx);
    double SsA = fmin(1.0, sqrt(kappa * kappa + tan(alpha) * tan(alpha)));
    double U0 = t->umax - (t->umax - t->umin) * SsA;
    double S_crit = fabs(U0 * Fn / (2.0 * t->cslip)), A_crit = atan(3.0 * U0 * Fn / t->calpha);
    double Uf = U0 * muscale, fx, fy, mz;
    if (fabs(kappa) < S_crit) fx = t->cslip * kappa;
    else fx = (kappa > 0.0 ? 1.0 : (kappa < 0.0 ? -1.0 : 0.0))
              * (Uf * Fn - fabs((Uf * Fn) * (Uf * Fn) / (4.0 * kappa * t->cslip)));
    double sgn = alpha > 0.0 ? 1.0 : (alpha < 0.0 ? -1.0 : 0.0);
    if (fabs(alpha) <= A_crit) {
        double H = 1.0 - t->calpha * fabs(tan(alpha)) / (3.0 * Uf * Fn);
        fy = -Uf * Fn * (1.0 - H * H * H) * sgn;
        mz = Uf * Fn * t->width * (1.0 - H) * H * H * H * sgn;
    } else {
        fy = -Uf * Fn * sgn, mz = 0.0;
    }
    double start = tire_sinestep(abs_vx, 0.125, 0.0, 0.5, 1.0);
    double so = omega > 0.0 ? 1.0 : (omega < 0.0 ? -1.0 : 0.0);
    Fl[0] = fx, Fl[1] = fy, Fl[2] = Fn;
    Ml[0] = 0.0, Ml[1] = -start * t->rr * Fn * t->r0 * so, Ml[2] = mz;
    slips[0] = kappa, slips[1] = alpha;
    return 1;
}

/* One tire at its wheel's row x: its wrench added into row (about the world origin), its bristle state st
 * carried over dt, its record into info (MD_TIRE_INFO, or NULL); its vertical spring's potential */
static double tire_one(const md_tire *t, const md_ground *g, double muscale, const double *x, double dt, double *st,
                       double *row, double *info)
{
    const double *R = x, *C = x + 9, *w = x + 12, *v = x + 15;
    double dn[3], F[9], P[3], depth, rec[MD_TIRE_INFO] = {0.0};
    for (int k = 0; k < 3; ++k) dn[k] = R[3 * k] * t->axis[0] + R[3 * k + 1] * t->axis[1] + R[3 * k + 2] * t->axis[2];
    double U = 0.0;
    if (!tire_contact(g, t->points, C, dn, t->r0, t->width, F, P, &depth)) {
        st[0] = st[1] = 0.0;  /* off the ground: Chrono resets the bristle */
        if (info) for (int k = 0; k < MD_TIRE_INFO; ++k) info[k] = rec[k];
        return 0.0;
    }
    double vel[3], nl[3], Fl[3], Ml[3], slips[2] = {0.0, 0.0}, bristle[2] = {0.0, 0.0};
    for (int k = 0; k < 3; ++k) {
        vel[k] = F[k] * v[0] + F[3 + k] * v[1] + F[6 + k] * v[2];
        nl[k] = F[k] * dn[0] + F[3 + k] * dn[1] + F[6 + k] * dn[2];
    }
    double omega = tire_dot(w, dn), gamma = atan2(nl[2], nl[1]);
    int on = t->law == MD_TMEASY
        ? tm_forces(t, muscale, depth, vel, omega, gamma, dt, st, Fl, Ml, slips, bristle)
        : fi_forces(t, muscale, depth, vel, omega, Fl, Ml, slips);
    if (t->law == MD_TMEASY) tm_spring(t, depth, &U);
    else fi_spring(t, depth, &U);
    rec[1] = depth, rec[5] = gamma, rec[11] = omega, rec[12] = vel[0], rec[13] = vel[1], rec[19] = U;
    for (int k = 0; k < 3; ++k) rec[14 + k] = P[k];
    if (on) {
        double Fw[3], Mw[3], d[3] = {P[0] - C[0], P[1] - C[1], P[2] - C[2]}, m[3], n[3];
        for (int k = 0; k < 3; ++k) {
            Fw[k] = F[3 * k] * Fl[0] + F[3 * k + 1] * Fl[1] + F[3 * k + 2] * Fl[2];
            Mw[k] = F[3 * k] * Ml[0] + F[3 * k + 1] * Ml[1] + F[3 * k + 2] * Ml[2];
        }
        tire_cross(d, Fw, m);  /* the patch's force moved to the wheel centre */
        tire_cross(C, Fw, n);  /* and the wrench's moment taken about the world origin */
        for (int k = 0; k < 3; ++k) row[k] += Mw[k] + m[k] + n[k], row[3 + k] += Fw[k];
        rec[0] = 1.0, rec[2] = Fl[2], rec[3] = slips[0], rec[4] = slips[1];
        rec[6] = Fl[0], rec[7] = Fl[1], rec[8] = Ml[0], rec[9] = Ml[1], rec[10] = Ml[2];
        rec[17] = bristle[0], rec[18] = bristle[1];
    }
    if (info) for (int k = 0; k < MD_TIRE_INFO; ++k) info[k] = rec[k];
    return U;
}

/* Every tire against the terrain of g: the wrenches added into fext (nbody × 6); the vertical springs' potential.
 * mu_road: the road's friction coefficient. state (ntire × 2): TMeasy's bristles, carried over dt when dt > 0
 * (NULL: zero bristles, nothing carried). info: ntire × MD_TIRE_INFO, or NULL. */
double md_tire_fext(const md_tire *t, int ntire, const md_ground *g, double mu_road, const double *X, double dt,
                    double *state, double *fext, double *info)
{
    double U = 0.0;
    for (int i = 0; i < ntire; ++i) {
        const md_tire *ti = t + i;
        double mu = mu_road < 0.1 ? 0.1 : (mu_road > 1.0 ? 1.0 : mu_road), zero[2] = {0.0, 0.0};
        double *st = state ? state + 2 * i : zero;
        U += tire_one(ti, g, mu / ti->mu0, X + 18 * ti->body, state ? dt : 0.0, st, fext + 6 * ti->body,
                      info ? info + MD_TIRE_INFO * i : NULL);
    }
    return U;
}

/* The tires' stored energy and the forces that store it, at body rows X: each vertical spring's force along the
 * terrain's normal at the patch, and TMeasy's bristle springs −sigma0·z in the patch's plane weighted by 1 − the
 * friction blend at the wheel's speed, as the law applies them (the blended-out bristle stores nothing: docs/tires.md
 * "Energy"), and TMeasy's overturning moment. The wrenches added into fext; the energy. */
double md_tire_static(const md_tire *t, int ntire, const md_ground *g, const double *X, const double *state,
                      double *fext)
{
    double E = 0.0;
    for (int i = 0; i < ntire; ++i) {
        const md_tire *ti = t + i;
        const double *x = X + 18 * ti->body, *R = x, *C = x + 9, *v = x + 15;
        double dn[3], F[9], P[3], depth, U, f[3] = {0.0, 0.0, 0.0};
        for (int k = 0; k < 3; ++k)
            dn[k] = R[3 * k] * ti->axis[0] + R[3 * k + 1] * ti->axis[1] + R[3 * k + 2] * ti->axis[2];
        if (!tire_contact(g, ti->points, C, dn, ti->r0, ti->width, F, P, &depth)) continue;
        f[2] = ti->law == MD_TMEASY ? tm_spring(ti, depth, &U) : fi_spring(ti, depth, &U);
        double mx = 0.0;
        if (ti->law == MD_TMEASY) {  /* the overturning moment of the camber, as tm_forces applies it */
            double nl1 = F[1] * dn[0] + F[4] * dn[1] + F[7] * dn[2], nl2 = F[2] * dn[0] + F[5] * dn[1] + F[8] * dn[2];
            mx = -ti->width * ti->width * (ti->d1 + 2.0 * ti->d2 * depth) / 12.0 * atan2(nl2, nl1);
        }
        if (ti->law == MD_TMEASY && state) {
            const double *z = state + 2 * i, vx = F[0] * v[0] + F[3] * v[1] + F[6] * v[2];
            const double w = 1.0 - tire_sinestep(vx, ti->fr_begin, 0.0, ti->fr_end, 1.0);
            f[0] = -w * ti->sigma0 * z[0], f[1] = -w * ti->sigma0 * z[1];
            U += 0.5 * w * ti->sigma0 * (z[0] * z[0] + z[1] * z[1]);
        }
        double Fw[3], m[3], n[3], d[3] = {P[0] - C[0], P[1] - C[1], P[2] - C[2]}, *row = fext + 6 * ti->body;
        for (int k = 0; k < 3; ++k) Fw[k] = F[3 * k] * f[0] + F[3 * k + 1] * f[1] + F[3 * k + 2] * f[2];
        tire_cross(d, Fw, m);
        tire_cross(C, Fw, n);
        for (int k = 0; k < 3; ++k) row[k] += F[3 * k] * mx + m[k] + n[k], row[3 + k] += Fw[k];
        E += U;
    }
    return E;
}

/* ---- Derivatives (docs/contact.md, "Derivatives"): each tire's wrench again, in ground.c's forward-mode jets along
 * its wheel's 12 tangents (δφ, δp, δw, δv), at its bristles as passed in. Every branch is the one the evaluation
 * takes; fabs, fmin and fmax at a tie take the branch written. */

/* |a| */
static ground_jet gj_abs(ground_jet a)
{
    return a.v < 0.0 ? gj_scale(a, -1.0) : a;
}

/* the jet of the two whose value is the smaller (the first on a tie) */
static ground_jet gj_min(ground_jet a, ground_jet b)
{
    return b.v < a.v ? b : a;
}

/* the jet of the two whose value is the larger (the first on a tie) */
static ground_jet gj_max(ground_jet a, ground_jet b)
{
    return b.v > a.v ? b : a;
}

/* hypot(a, b) */
static ground_jet gj_hypot(ground_jet a, ground_jet b)
{
    ground_jet r = gj_sqrt(gj_add(gj_mul(a, a), gj_mul(b, b)));
    r.v = hypot(a.v, b.v);
    return r;
}

/* f(a) for a value fa = f(a.v) and slope df = f′(a.v) */
static ground_jet gj_chain(ground_jet a, double fa, double df)
{
    a = gj_scale(a, df);
    a.v = fa;
    return a;
}

/* atan2(y, x) */
static ground_jet gj_atan2(ground_jet y, ground_jet x)
{
    ground_jet r = gj_scale(gj_sub(gj_scale(y, x.v), gj_scale(x, y.v)), 1.0 / (x.v * x.v + y.v * y.v));
    r.v = atan2(y.v, x.v);
    return r;
}

/* tire_unit in jets, in place */
static void tj_unit(ground_jet *a)
{
    ground_jet n = gj_sqrt(gj_dot(a, a));
    for (int k = 0; k < 3; ++k) a[k] = gj_div(a[k], n);
}

/* tire_sinestep in jets */
static ground_jet tj_sinestep(ground_jet x, double x1, double y1, double x2, double y2)
{
    if (x.v <= x1) return gj_const(y1);
    if (x.v >= x2) return gj_const(y2);
    double xx = (x.v - x1) / (x2 - x1);
    return gj_chain(x, y1 + (y2 - y1) * (xx - sin(2.0 * TIRE_PI * xx) / (2.0 * TIRE_PI)),
                    (y2 - y1) * (1.0 - cos(2.0 * TIRE_PI * xx)) / (x2 - x1));
}

/* tire_ground in jets: the terrain's point P and unit normal n at (x, y) */
static void tj_ground(const md_ground *g, ground_jet x, ground_jet y, ground_jet *P, ground_jet *n)
{
    ground_jet h[3], nrm[4];
    gj_terrain(g, x, y, h);
    gj_normal(h, nrm);
    P[0] = x, P[1] = y, P[2] = h[0];
    n[0] = nrm[0], n[1] = nrm[1], n[2] = nrm[2];
}

/* the four-point contact's depth and patch point (tire_contact's points == 4) in jets, from the terrain's point Pt
 * and the normal n; 0 when no point counts */
static int tj_four(const md_ground *g, const ground_jet *C, const ground_jet *dn, double r, double w,
                   const ground_jet *Pt, ground_jet *n, ground_jet *P, ground_jet *depth)
{
    ground_jet fwd[3], lat[3], sum[3] = {gj_const(0.0), gj_const(0.0), gj_const(0.0)};
    tj_unit(n);
    gj_cross(dn, n, fwd);
    tj_unit(fwd);
    gj_cross(n, fwd, lat);
    const double dx = 0.1 * r, dy = 0.3 * w;
    const double off[4][2] = {{dx, 0.0}, {-dx, 0.0}, {0.0, dy}, {0.0, -dy}};
    int num = 4;
    *depth = gj_const(0.0);
    for (int i = 0; i < 4; ++i) {
        ground_jet A[3], Wv[3], Bp[3], d[3], Pp[3];
        for (int k = 0; k < 3; ++k)
            A[k] = gj_add(C[k], gj_add(gj_scale(fwd[k], off[i][0]), gj_scale(lat[k], off[i][1]))),
            Wv[k] = gj_sub(A[k], C[k]);
        ground_jet b = gj_dot(n, Wv), c = gj_sub(gj_dot(Wv, Wv), gj_const(r * r)), delta = gj_sub(gj_mul(b, b), c);
        if (delta.v < 0.0) { --num; continue; }
        ground_jet tt = gj_sub(b, gj_sqrt(delta));
        for (int k = 0; k < 3; ++k) Bp[k] = gj_add(A[k], gj_mul(tt, n[k])), d[k] = gj_sub(A[k], Pt[k]);
        ground_jet s = gj_dot(d, n), AB = gj_const(0.0);
        for (int k = 0; k < 3; ++k) AB = gj_add(AB, gj_mul(gj_sub(Bp[k], A[k]), gj_sub(Bp[k], A[k])));
        ground_jet dd_i = gj_sub(gj_sqrt(AB), gj_abs(s));
        if (dd_i.v <= 0.0) { --num; continue; }
        *depth = gj_add(*depth, dd_i);
        tj_ground(g, gj_sub(A[0], gj_mul(s, n[0])), gj_sub(A[1], gj_mul(s, n[1])), Pp, n);
        for (int k = 0; k < 3; ++k) sum[k] = gj_add(sum[k], Pp[k]);
    }
    if (num == 0) return 0;
    *depth = gj_scale(*depth, 1.0 / num);
    if (depth->v <= 0.0) return 0;
    tj_ground(g, gj_scale(sum[0], 1.0 / num), gj_scale(sum[1], 1.0 / num), P, n);
    return 1;
}

/* tire_contact in jets: the patch frame's columns fwd, lat, n, its point P, the depth; 0 when none */
static int tj_contact(const md_ground *g, int points, const ground_jet *C, const ground_jet *dn, double r, double w,
                      ground_jet *fwd, ground_jet *lat, ground_jet *n, ground_jet *P, ground_jet *depth)
{
    const ground_jet up[3] = {gj_const(0.0), gj_const(0.0), gj_const(1.0)};
    ground_jet df[3], dd[3], B[3], Pt[3];
    gj_cross(dn, up, df);
    tj_unit(df);
    gj_cross(dn, df, dd);
    for (int k = 0; k < 3; ++k) B[k] = gj_add(C[k], gj_scale(dd[k], r));
    tj_ground(g, B[0], B[1], Pt, n);
    if (C[2].v <= Pt[2].v) return 0;
    ground_jet nd = gj_dot(n, dn);
    for (int k = 0; k < 3; ++k) n[k] = gj_sub(n[k], gj_mul(nd, dn[k]));
    if (points == 1) {
        ground_jet AB = gj_scale(gj_sqrt(gj_dot(n, n)), r), d[3];
        tj_unit(n);
        for (int k = 0; k < 3; ++k) d[k] = gj_sub(C[k], Pt[k]);
        ground_jet s = gj_dot(d, n);
        *depth = gj_sub(AB, gj_abs(s));
        if (depth->v <= 0.0) return 0;
        tj_ground(g, gj_sub(C[0], gj_mul(s, n[0])), gj_sub(C[1], gj_mul(s, n[1])), P, n);
    } else if (!tj_four(g, C, dn, r, w, Pt, n, P, depth)) {
        return 0;
    }
    gj_cross(dn, n, fwd);
    tj_unit(fwd);
    gj_cross(n, fwd, lat);
    return 1;
}

/* tm_lin in jets of the load ratio q */
static ground_jet tj_lin(ground_jet q, double w1, double w2)
{
    return gj_add(gj_const(w1), gj_scale(gj_sub(q, gj_const(1.0)), w2 - w1));
}

/* tm_quad in jets of the load ratio q */
static ground_jet tj_quad(ground_jet q, double w1, double w2)
{
    return gj_mul(q, gj_sub(gj_const(2.0 * w1 - 0.5 * w2), gj_scale(q, w1 - 0.5 * w2)));
}

/* tm_combined in jets */
static ground_jet tj_combined(ground_jet s, ground_jet df0, ground_jet sm, ground_jet fm, ground_jet ss, ground_jet fs)
{
    ground_jet df0loc = sm.v > 0.0 ? gj_max(gj_scale(gj_div(fm, sm), 2.0), df0) : gj_const(0.0);
    if (!(s.v > 0.0 && df0loc.v > 0.0)) return gj_const(0.0);
    if (s.v > ss.v) return fs;
    ground_jet one = gj_const(1.0);
    if (s.v < sm.v) {
        ground_jet p = gj_sub(gj_div(gj_mul(df0loc, sm), fm), gj_const(2.0)), sn = gj_div(s, sm);
        return gj_div(gj_mul(gj_mul(df0loc, sm), sn), gj_add(one, gj_mul(gj_add(sn, p), sn)));
    }
    ground_jet fsm = gj_div(fm, sm), a = gj_div(gj_mul(fsm, fsm), gj_mul(df0loc, sm));
    ground_jet sstar = gj_add(sm, gj_div(gj_sub(fm, fs), gj_mul(a, gj_sub(ss, sm))));
    if (sstar.v <= ss.v) {
        if (s.v <= sstar.v) return gj_sub(fm, gj_mul(a, gj_mul(gj_sub(s, sm), gj_sub(s, sm))));
        ground_jet b = gj_div(gj_mul(a, gj_sub(sstar, sm)), gj_sub(ss, sstar));
        return gj_add(fs, gj_mul(b, gj_mul(gj_sub(ss, s), gj_sub(ss, s))));
    }
    ground_jet sn = gj_div(gj_sub(s, sm), gj_sub(ss, sm));
    return gj_sub(fm, gj_mul(gj_sub(fm, fs), gj_mul(gj_mul(sn, sn), gj_sub(gj_const(3.0), gj_scale(sn, 2.0)))));
}

/* tm_trail in jets */
static ground_jet tj_trail(ground_jet sy_a, ground_jet nto0, ground_jet sq0, ground_jet sqe)
{
    ground_jet se = gj_max(sqe, sq0), one = gj_const(1.0);
    if (sy_a.v >= se.v) return gj_const(0.0);
    ground_jet wf = gj_div(sq0, se);
    if (sy_a.v <= sq0.v) {
        ground_jet sn = gj_div(sy_a, sq0);
        ground_jet tip = gj_sub(one, gj_mul(gj_sub(gj_const(3.0), gj_scale(sn, 2.0)), gj_mul(sn, sn)));
        return gj_add(gj_mul(gj_mul(gj_sub(one, wf), nto0), gj_sub(one, sn)), gj_mul(gj_mul(wf, nto0), tip));
    }
    ground_jet sn = gj_div(gj_sub(se, sy_a), gj_sub(se, sq0));
    ground_jet tail = gj_mul(gj_mul(nto0, gj_sub(one, wf)), gj_div(gj_sub(sy_a, sq0), sq0));
    return gj_scale(gj_mul(tail, gj_mul(sn, sn)), -1.0);
}

/* tm_spring's force in jets */
static ground_jet tj_tm_spring(const md_tire *t, ground_jet depth)
{
    ground_jet f = gj_add(gj_scale(depth, t->d1), gj_scale(gj_mul(depth, depth), t->d2));
    ground_jet over = gj_sub(depth, gj_const(t->r0 - t->r_bottom));
    return over.v > 0.0 ? gj_add(f, gj_scale(over, t->k_bottom)) : f;
}

/* fi_spring's force in jets */
static ground_jet tj_fi_spring(const md_tire *t, ground_jet depth)
{
    if (t->ncurve < 2) return gj_scale(depth, t->kz);
    const double *T = t->table;
    int n = t->ncurve, i = 0;
    while (i < n - 2 && depth.v > T[2 * (i + 1)]) ++i;
    double slope = (T[2 * i + 3] - T[2 * i + 1]) / (T[2 * i + 2] - T[2 * i]);
    return gj_add(gj_const(T[2 * i + 1]), gj_scale(gj_sub(depth, gj_const(T[2 * i])), slope));
}

/* tm_forces' local force Fl and moment Ml in jets, from the bristles st (read); 0 when the normal force vanishes */
static int tj_tmeasy(const md_tire *t, double muscale, ground_jet depth, const ground_jet *vel, ground_jet omega,
                     ground_jet gamma, const double *st, ground_jet *Fl, ground_jet *Ml)
{
    ground_jet one = gj_const(1.0), Fn = gj_sub(tj_tm_spring(t, depth), gj_scale(vel[2], t->dz));
    if (Fn.v < 0.0) return 0;
    ground_jet Fz = gj_min(Fn, gj_const(t->pn_max)), q = gj_scale(Fz, 1.0 / t->pn);
    ground_jet R_eff = gj_scale(gj_sub(gj_const(3.0 * t->r0), depth), 1.0 / 3.0);
    ground_jet P_len = gj_scale(gj_sqrt(gj_scale(depth, t->r0)), 2.0);
    ground_jet vta = gj_add(gj_mul(R_eff, gj_abs(omega)), gj_const(t->vnum));
    ground_jet vsx = gj_sub(vel[0], gj_mul(omega, R_eff)), vsy = vel[1];
    ground_jet sx = gj_scale(gj_div(vsx, vta), -1.0), sy = gj_scale(gj_div(vsy, vta), -1.0);
    const double *c = t->curve;
    ground_jet dfx0 = tj_quad(q, c[0], c[1]), sxm = tj_lin(q, c[2], c[3]), fxm = tj_quad(q, c[4], c[5]);
    ground_jet sxs = tj_lin(q, c[6], c[7]), fxs = tj_quad(q, c[8], c[9]);
    ground_jet dfy0 = tj_quad(q, c[10], c[11]), sym = tj_lin(q, c[12], c[13]), fym = tj_quad(q, c[14], c[15]);
    ground_jet sys = tj_lin(q, c[16], c[17]), fys = tj_quad(q, c[18], c[19]);
    ground_jet nL0 = tj_lin(q, c[20], c[21]), sq0 = tj_lin(q, c[22], c[23]), sqe = tj_lin(q, c[24], c[25]);
    /* the bristles' force from the state as passed in, scaled back onto the circle of radius fc */
    ground_jet fc = gj_scale(Fz, muscale);
    ground_jet bx_dot = gj_sub(vsx, gj_div(gj_scale(gj_abs(vsx), t->sigma0 * st[0]), fc));
    ground_jet by_dot = gj_sub(vsy, gj_div(gj_scale(gj_abs(vsy), t->sigma0 * st[1]), fc));
    ground_jet F0x = gj_sub(gj_const(-t->sigma0 * st[0]), gj_scale(bx_dot, t->sigma1));
    ground_jet F0y = gj_sub(gj_const(-t->sigma0 * st[1]), gj_scale(by_dot, t->sigma1));
    ground_jet F0 = gj_hypot(F0x, F0y);
    if (F0.v > fc.v) F0x = gj_mul(F0x, gj_div(fc, F0)), F0y = gj_mul(F0y, gj_div(fc, F0));
    /* the slip law, blended in with the speed */
    ground_jet frblend = tj_sinestep(vel[0], t->fr_begin, 0.0, t->fr_end, 1.0);
    ground_jet sc = gj_hypot(sx, sy), ca = gj_const(sqrt(2.0) / 2.0), sa = ca;
    if (sc.v > 0.0) ca = gj_div(sx, sc), sa = gj_div(sy, sc);
    ground_jet df0 = gj_hypot(gj_mul(dfx0, ca), gj_mul(dfy0, sa));
    ground_jet fm = gj_scale(gj_hypot(gj_mul(fxm, ca), gj_mul(fym, sa)), muscale);
    ground_jet sm = gj_scale(gj_hypot(gj_mul(sxm, ca), gj_mul(sym, sa)), muscale);
    ground_jet fs = gj_scale(gj_hypot(gj_mul(fxs, ca), gj_mul(fys, sa)), muscale);
    ground_jet ss = gj_scale(gj_hypot(gj_mul(sxs, ca), gj_mul(sys, sa)), muscale);
    ground_jet f = tj_combined(sc, df0, sm, fm, ss, fs), Fx = gj_const(0.0), Fy = gj_const(0.0);
    if (sc.v > 0.0) Fx = gj_mul(f, ca), Fy = gj_mul(f, sa);
    Fl[0] = gj_add(gj_mul(gj_sub(one, frblend), F0x), gj_mul(frblend, Fx));
    Fl[1] = gj_add(gj_mul(gj_sub(one, frblend), F0y), gj_mul(frblend, Fy));
    Fl[2] = Fn;
    ground_jet Mz = gj_const(0.0);
    if (vel[0].v >= t->fr_begin) Mz = gj_scale(gj_mul(gj_mul(Fl[1], P_len), tj_trail(gj_abs(sy), nL0, sq0, sqe)), -1.0);
    ground_jet cg = gj_scale(gj_add(gj_const(t->d1), gj_scale(depth, 2.0 * t->d2)), t->width * t->width / 12.0);
    Ml[0] = gj_scale(gj_mul(cg, gamma), -1.0);
    Ml[1] = gj_scale(gj_mul(Fn, gj_chain(omega, tanh(omega.v), 1.0 - tanh(omega.v) * tanh(omega.v))), -t->rr * t->r0);
    Ml[2] = Mz;
    return 1;
}

/* fi_forces' local force Fl and moment Ml in jets; 0 when the normal force vanishes */
static int tj_fiala(const md_tire *t, double muscale, ground_jet depth, const ground_jet *vel, ground_jet omega,
                    ground_jet *Fl, ground_jet *Ml)
{
    ground_jet Fn = gj_sub(tj_fi_spring(t, depth), gj_scale(vel[2], t->dz));
    if (!(Fn.v > 0.0)) return 0;
    ground_jet abs_vx = gj_abs(vel[0]), vsx = gj_sub(vel[0], gj_mul(omega, gj_sub(gj_const(t->r0), depth)));
    ground_jet kappa = gj_const(0.0), alpha = gj_const(0.0);
    if (abs_vx.v != 0.0) kappa = gj_scale(gj_div(vsx, abs_vx), -1.0), alpha = gj_atan2(vel[1], abs_vx);
    ground_jet ta = gj_chain(alpha, tan(alpha.v), 1.0 + tan(alpha.v) * tan(alpha.v));
    ground_jet SsA = gj_min(gj_const(1.0), gj_sqrt(gj_add(gj_mul(kappa, kappa), gj_mul(ta, ta))));
    ground_jet U0 = gj_sub(gj_const(t->umax), gj_scale(SsA, t->umax - t->umin)), UFn = gj_mul(U0, Fn);
    double S_crit = fabs(UFn.v / (2.0 * t->cslip)), A_crit = atan(3.0 * UFn.v / t->calpha); /* compared only */
    ground_jet UfFn = gj_scale(UFn, muscale), fx, fy, mz = gj_const(0.0);
    double sk = kappa.v > 0.0 ? 1.0 : (kappa.v < 0.0 ? -1.0 : 0.0);
    double sgn = alpha.v > 0.0 ? 1.0 : (alpha.v < 0.0 ? -1.0 : 0.0);
    if (fabs(kappa.v) < S_crit) fx = gj_scale(kappa, t->cslip);
    else fx = gj_scale(gj_sub(UfFn, gj_abs(gj_div(gj_mul(UfFn, UfFn), gj_scale(kappa, 4.0 * t->cslip)))), sk);
    if (fabs(alpha.v) <= A_crit) {
        ground_jet H = gj_sub(gj_const(1.0), gj_div(gj_scale(gj_abs(ta), t->calpha), gj_scale(UfFn, 3.0)));
        ground_jet H3 = gj_mul(H, gj_mul(H, H));
        fy = gj_scale(gj_mul(UfFn, gj_sub(gj_const(1.0), H3)), -sgn);
        mz = gj_scale(gj_mul(gj_mul(UfFn, gj_sub(gj_const(1.0), H)), H3), t->width * sgn);
    } else {
        fy = gj_scale(UfFn, -sgn);
    }
    double so = omega.v > 0.0 ? 1.0 : (omega.v < 0.0 ? -1.0 : 0.0);
    Fl[0] = fx, Fl[1] = fy, Fl[2] = Fn;
    Ml[0] = gj_const(0.0);
    Ml[1] = gj_scale(gj_mul(tj_sinestep(abs_vx, 0.125, 0.0, 0.5, 1.0), Fn), -t->rr * t->r0 * so);
    Ml[2] = mz;
    return 1;
}

/* tire_one's wrench in jets, added into W, from the bristles st (read, not carried); 0 (W untouched) when the tire
 * exerts no force */
static int tj_one(const md_tire *t, const md_ground *g, double muscale, const double *x, const double *st,
                  ground_jet *W)
{
    ground_jet R[9], C[3], w[3], v[3], dn[3], fwd[3], lat[3], n[3], P[3], depth, vel[3], nl[3], Fl[3], Ml[3];
    ground_jet axis[3] = {gj_const(t->axis[0]), gj_const(t->axis[1]), gj_const(t->axis[2])};
    gj_row(x, R, C, w, v);
    gj_rmul(R, axis, dn);
    if (!tj_contact(g, t->points, C, dn, t->r0, t->width, fwd, lat, n, P, &depth)) return 0;
    vel[0] = gj_dot(fwd, v), vel[1] = gj_dot(lat, v), vel[2] = gj_dot(n, v);
    nl[1] = gj_dot(lat, dn), nl[2] = gj_dot(n, dn);
    ground_jet omega = gj_dot(w, dn), gamma = gj_atan2(nl[2], nl[1]);
    if (!(t->law == MD_TMEASY ? tj_tmeasy(t, muscale, depth, vel, omega, gamma, st, Fl, Ml)
                              : tj_fiala(t, muscale, depth, vel, omega, Fl, Ml)))
        return 0;
    ground_jet Fw[3], Mw[3], m[3];
    for (int k = 0; k < 3; ++k)
        Fw[k] = gj_dot3(fwd[k], Fl[0], lat[k], Fl[1], n[k], Fl[2]),
        Mw[k] = gj_dot3(fwd[k], Ml[0], lat[k], Ml[1], n[k], Ml[2]);
    gj_cross(P, Fw, m);  /* the patch's force about the world origin */
    for (int k = 0; k < 3; ++k) W[k] = gj_add(W[k], gj_add(Mw[k], m[k])), W[3 + k] = gj_add(W[3 + k], Fw[k]);
    return 1;
}

/* md_tire_fext (fext and state as there), and the derivative of fext at the bristles as passed in: for each tire
 * exerting a force, its wheel's body into bodies[n] and its 6 × 12 block (row-major: the wheel's fext row by its
 * tangents) into blocks + 72n, at most cap of them. Returns the number of tires n, or −n when n > cap (nothing is
 * written past cap). */
int md_tire_fext_jac(const md_tire *t, int ntire, const md_ground *g, double mu_road, const double *X, double dt,
                     double *state, double *fext, int cap, int *bodies, double *blocks)
{
    int n = 0;
    for (int i = 0; i < ntire; ++i) {
        const md_tire *ti = t + i;
        double mu = mu_road < 0.1 ? 0.1 : (mu_road > 1.0 ? 1.0 : mu_road), zero[2] = {0.0, 0.0};
        ground_jet W[6];
        for (int k = 0; k < 6; ++k) W[k] = gj_const(0.0);
        if (!tj_one(ti, g, mu / ti->mu0, X + 18 * ti->body, state ? state + 2 * i : zero, W)) continue;
        if (n < cap) {
            bodies[n] = ti->body;
            for (int r = 0; r < 6; ++r)
                for (int k = 0; k < GJ; ++k) blocks[GJ * (6 * n + r) + k] = W[r].d[k];
        }
        ++n;
    }
    md_tire_fext(t, ntire, g, mu_road, X, dt, state, fext, NULL); /* after the blocks, which read the state */
    return n <= cap ? n : -n;
}
