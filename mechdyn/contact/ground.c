/* The ground's contact forces: each padded shoe's four pad corners against a height field h(x, y) (docs/contact.md,
 * "The ground"). Shares no code with band.c. Body rows X and fext rows as there. */
#include <math.h>

#define GROUND_TWO_PI 6.283185307179586

/* API begin */
enum { MD_PLANE = 0, MD_SINE = 1, MD_GRID = 2 };

typedef struct {
    int kind;               /* MD_PLANE, MD_SINE or MD_GRID */
    double p[4];            /* plane: h0 hx hy (h = h0 + hx·x + hy·y); sine: z0 amp wx wy; grid: x0 y0 dx dy */
    int nx, ny;             /* grid nodes */
    const double *heights;  /* grid: ny rows of nx */
    int npad;
    const int *pad_body;        /* npad: the padded shoes */
    const double *corner;       /* npad × 4 × 3: the corners in their shoe's frame */
    const double *corner_mass;  /* npad: the mass per corner, for the implicit friction */
    double kn, cg, kt, mu, v_eps, ramp;
    double reach;  /* > 0: skip a shoe whose origin is more than this above the terrain (0: all corners) */
} md_ground;

void md_terrain(const md_ground *g, double x, double y, double *h);
double md_ground_point(const md_ground *g, const double *p, const double *u, double m, double dt, double *anchor,
                       double *F);
double md_ground_fext(const md_ground *g, const double *X, double dt, double *anchors, double *fext);
void md_ground_depth(const md_ground *g, const double *X, double *out);
double md_ground_anchor_energy(const md_ground *g, const double *X, const double *anchors);
int md_ground_fext_jac(const md_ground *g, const double *X, double dt, double *anchors, double *fext, int cap,
                       int *bodies, double *blocks);
/* API end */

/* Catmull–Rom weights at t ∈ [0, 1] of nodes −1, 0, 1, 2, and their t-derivatives */
static void ground_cr(double t, double *c, double *dc)
{
    double t2 = t * t, t3 = t2 * t;
    c[0] = 0.5 * (-t3 + 2.0 * t2 - t), dc[0] = 0.5 * (-3.0 * t2 + 4.0 * t - 1.0);
    c[1] = 0.5 * (3.0 * t3 - 5.0 * t2 + 2.0), dc[1] = 0.5 * (9.0 * t2 - 10.0 * t);
    c[2] = 0.5 * (-3.0 * t3 + 4.0 * t2 + t), dc[2] = 0.5 * (-9.0 * t2 + 8.0 * t + 1.0);
    c[3] = 0.5 * (t3 - t2), dc[3] = 0.5 * (3.0 * t2 - 2.0 * t);
}

/* the grid's node (i, j), nodes beyond an edge extrapolated linearly from the two inside it */
static double ground_node(const md_ground *g, int i, int j)
{
    if (i < 0) return 2.0 * ground_node(g, 0, j) - ground_node(g, 1, j);
    if (i >= g->nx) return 2.0 * ground_node(g, g->nx - 1, j) - ground_node(g, g->nx - 2, j);
    if (j < 0) return 2.0 * ground_node(g, i, 0) - ground_node(g, i, 1);
    if (j >= g->ny) return 2.0 * ground_node(g, i, g->ny - 1) - ground_node(g, i, g->ny - 2);
    return g->heights[j * g->nx + i];
}

/* the cell index and fraction of coordinate s along n nodes from s0 by ds, clamped into the grid; *inside is 0
 * when clamped (the height is then constant along this axis) */
static int ground_cell(double s, double s0, double ds, int n, double *t, int *inside)
{
    double u = (s - s0) / ds;
    *inside = u > 0.0 && u < n - 1;
    u = u < 0.0 ? 0.0 : (u > n - 1 ? n - 1 : u);
    int i = (int)floor(u);
    if (i > n - 2) i = n - 2;
    *t = u - i;
    return i;
}

/* ground_terrain on a sine or a grid: kept out of line, so that the plane's few products inline at every call */
static void ground_curved(const md_ground *g, double x, double y, double *h);

/* h = (h, ∂h/∂x, ∂h/∂y) of the terrain at (x, y) */
static inline void ground_terrain(const md_ground *g, double x, double y, double *h)
{
    const double *p = g->p;
    if (g->kind == MD_PLANE) h[0] = p[0] + p[1] * x + p[2] * y, h[1] = p[1], h[2] = p[2];
    else ground_curved(g, x, y, h);
}

static __attribute__((noinline)) void ground_curved(const md_ground *g, double x, double y, double *h)
{
    const double *p = g->p;
    if (g->kind == MD_SINE) {
        double kx = GROUND_TWO_PI / p[2], ky = GROUND_TWO_PI / p[3];
        double sx = sin(kx * x), cx = cos(kx * x), sy = sin(ky * y), cy = cos(ky * y);
        h[0] = p[0] + p[1] * sx * sy, h[1] = p[1] * kx * cx * sy, h[2] = p[1] * ky * sx * cy;
    } else {
        double t, s, cx[4], dcx[4], cy[4], dcy[4];
        int inx, iny;
        int i = ground_cell(x, p[0], p[2], g->nx, &t, &inx), j = ground_cell(y, p[1], p[3], g->ny, &s, &iny);
        ground_cr(t, cx, dcx);
        ground_cr(s, cy, dcy);
        h[0] = h[1] = h[2] = 0.0;
        for (int b = 0; b < 4; ++b)
            for (int a = 0; a < 4; ++a) {
                double H = ground_node(g, i + a - 1, j + b - 1);
                h[0] += cx[a] * cy[b] * H, h[1] += dcx[a] * cy[b] * H, h[2] += cx[a] * dcy[b] * H;
            }
        h[1] = inx ? h[1] / p[2] : 0.0;
        h[2] = iny ? h[2] / p[3] : 0.0;
    }
}

/* ground_terrain, exported. The producers call ground_terrain itself, which the compiler may inline: an exported
 * function of a shared library can be interposed, so calls to it cannot be. */
void md_terrain(const md_ground *g, double x, double y, double *h)
{
    ground_terrain(g, x, y, h);
}

/* The terrain's normal at slopes h (ground_terrain's): m = (−hx, −hy, 1), its unit n̂ = m/|m| into nrm[0..2] and
 * |m| into nrm[3] */
static void ground_normal(const double *h, double *nrm)
{
    double mm = sqrt(h[1] * h[1] + h[2] * h[2] + 1.0), inv = 1.0 / mm;
    nrm[0] = -h[1] * inv, nrm[1] = -h[2] * inv, nrm[2] = inv, nrm[3] = mm;
}

/* What the corners of one pad share in a call, computed once: the plane's normal (a plane's slope is constant),
 * and the friction's constants of the corner mass m over dt. */
typedef struct {
    int plane;       /* the terrain is a plane: nrm is its normal everywhere */
    double nrm[4];   /* ground_normal of the plane */
    double dtm;      /* dt / m */
    double ct, kd;   /* anchored: c̃t = cg / (1 + cg·dt/m), and kt + c̃t/dt */
} ground_shared;

/* the call's share: the plane's normal */
static void ground_share_call(const md_ground *g, ground_shared *s)
{
    s->plane = g->kind == MD_PLANE;
    if (s->plane) {
        double h[3] = {0.0, g->p[1], g->p[2]};
        ground_normal(h, s->nrm);
    }
}

/* a pad's share: its corners' mass m over dt */
static void ground_share_pad(const md_ground *g, double m, double dt, int anchored, ground_shared *s)
{
    s->dtm = dt / m;
    if (anchored) {
        s->ct = g->cg / (1.0 + g->cg * dt / m);
        s->kd = g->kt + s->ct / dt;
    }
}

/* The implicit regularized-Coulomb coefficient k̃ = k / (1 + k·dt/m), k = μ·load/√(slip² + v_eps²), with
 * dtm = dt/m: the force is −k̃·u. Written as μ·load / (√(slip² + v_eps²) + μ·load·dt/m): one division. */
static double ground_friction(double mu, double load, double slip2, double v_eps, double dtm)
{
    double muN = mu * load;
    return muN / (sqrt(slip2 + v_eps * v_eps) + muN * dtm);
}

/* The anchored (elastoplastic) tangential force at a corner in contact: f from the anchor a (anchor[0..2]),
 * a dragged back onto the friction cone by a backward-Euler return when the trial force leaves it. */
static void ground_anchored(const md_ground *g, const ground_shared *sh, const double *p, const double *ut,
                            double load, double *anchor, double *f)
{
    double na[4];
    if (sh->plane) {
        for (int k = 0; k < 4; ++k) na[k] = sh->nrm[k];
    } else {
        double ha[3];
        ground_terrain(g, anchor[0], anchor[1], ha);
        ground_normal(ha, na);
    }
    double dp[3] = {p[0] - anchor[0], p[1] - anchor[1], p[2] - anchor[2]};
    double dn = dp[0] * na[0] + dp[1] * na[1] + dp[2] * na[2], f2 = 0.0;
    for (int k = 0; k < 3; ++k) {
        f[k] = -g->kt * (dp[k] - dn * na[k]) - sh->ct * ut[k];
        f2 += f[k] * f[k];
    }
    double cone = g->mu * load;
    if (f2 <= cone * cone) return; /* stick */
    double s = cone / sqrt(f2), drag = (s - 1.0) / sh->kd;
    for (int k = 0; k < 3; ++k) {
        anchor[k] += drag * f[k];
        f[k] *= s;
    }
}

/* The force F on a point p, moving at u, whose vertical gap below the terrain (h = height and slopes at p) is
 * gap > 0; its friction with the constants sh (anchored when anchor is not NULL); the point's potential. */
static double ground_force(const md_ground *g, const ground_shared *sh, const double *p, const double *h, double gap,
                           const double *u, double *anchor, double *F)
{
    double gdot = h[1] * u[0] + h[2] * u[1] - u[2];
    double f = g->kn * gap + g->cg * (gap < g->ramp ? gap / g->ramp : 1.0) * gdot; /* the damper ramped in */
    f = f > 0.0 ? f : 0.0;
    double own[4];
    const double *n = sh->plane ? sh->nrm : own;
    if (!sh->plane) ground_normal(h, own);
    double mvec[3] = {-h[1], -h[2], 1.0}, un = u[0] * n[0] + u[1] * n[1] + u[2] * n[2];
    double ut[3] = {u[0] - un * n[0], u[1] - un * n[1], u[2] - un * n[2]}, ft[3], load = f * n[3];
    if (anchor) {
        if (anchor[3] == 0.0) anchor[0] = p[0], anchor[1] = p[1], anchor[2] = p[2], anchor[3] = 1.0;
        ground_anchored(g, sh, p, ut, load, anchor, ft);
    } else {
        double k = ground_friction(g->mu, load, ut[0] * ut[0] + ut[1] * ut[1] + ut[2] * ut[2], g->v_eps, sh->dtm);
        for (int k3 = 0; k3 < 3; ++k3) ft[k3] = -k * ut[k3];
    }
    for (int k = 0; k < 3; ++k) F[k] = f * mvec[k] + ft[k];
    return 0.5 * g->kn * gap * gap;
}

/* One point p moving at u against the terrain, its friction against mass m over dt: the force F on it; its
 * potential. anchor (4: a, then 1 in contact / 0 not) selects the anchored friction, NULL the regularized. */
double md_ground_point(const md_ground *g, const double *p, const double *u, double m, double dt, double *anchor,
                       double *F)
{
    double h[3];
    F[0] = F[1] = F[2] = 0.0;
    ground_terrain(g, p[0], p[1], h);
    double gap = h[0] - p[2];
    if (!(gap > 0.0)) {
        if (anchor) anchor[3] = 0.0;
        return 0.0;
    }
    ground_shared sh;
    ground_share_call(g, &sh);
    ground_share_pad(g, m, dt, anchor != NULL, &sh);
    return ground_force(g, &sh, p, h, gap, u, anchor, F);
}

/* Every pad corner against the terrain: the wrenches on the padded shoes added into fext (nbody × 6); the
 * potential. anchors (npad × 4 rows of 4) as md_ground_point's, or NULL. With reach > 0, a shoe whose origin's
 * vertical gap is below −reach is skipped: reach bounds how far the gap can rise from the origin to a corner
 * (the corners' distance times √(1 + L²), L the terrain's steepest slope), so every skipped corner is out of
 * contact and the result is bitwise that of all corners. */
double md_ground_fext(const md_ground *g, const double *X, double dt, double *anchors, double *fext)
{
    double U = 0.0;
    ground_shared sh;
    ground_share_call(g, &sh);
    for (int i = 0; i < g->npad; ++i) {
        const double *R = X + 18 * g->pad_body[i], *ps = R + 9, *w = R + 12, *v = R + 15;
        double *row = fext + 6 * g->pad_body[i], *anchor = anchors ? anchors + 16 * i : NULL;
        if (g->reach > 0.0) {
            double h[3];
            ground_terrain(g, ps[0], ps[1], h);
            if (h[0] - ps[2] < -g->reach) {
                if (anchor) anchor[3] = anchor[7] = anchor[11] = anchor[15] = 0.0;
                continue;
            }
        }
        ground_share_pad(g, g->corner_mass[i], dt, anchor != NULL, &sh);
        for (int c = 0; c < 4; ++c) {
            const double *cl = g->corner + 12 * i + 3 * c;
            double r[3], p[3], u[3], F[3] = {0.0, 0.0, 0.0}, h[3];
            for (int k = 0; k < 3; ++k) r[k] = R[3 * k] * cl[0] + R[3 * k + 1] * cl[1] + R[3 * k + 2] * cl[2];
            for (int k = 0; k < 3; ++k) p[k] = ps[k] + r[k];
            ground_terrain(g, p[0], p[1], h);
            double gap = h[0] - p[2];
            if (!(gap > 0.0)) { /* out of contact: as md_ground_point, without its velocity */
                if (anchor) anchor[4 * c + 3] = 0.0;
                continue;
            }
            u[0] = v[0] + w[1] * r[2] - w[2] * r[1];
            u[1] = v[1] + w[2] * r[0] - w[0] * r[2];
            u[2] = v[2] + w[0] * r[1] - w[1] * r[0];
            U += ground_force(g, &sh, p, h, gap, u, anchor ? anchor + 4 * c : NULL, F);
            if (F[0] == 0.0 && F[1] == 0.0 && F[2] == 0.0) continue; /* adding zeros changes no sum */
            row[0] += p[1] * F[2] - p[2] * F[1];
            row[1] += p[2] * F[0] - p[0] * F[2];
            row[2] += p[0] * F[1] - p[1] * F[0];
            row[3] += F[0], row[4] += F[1], row[5] += F[2];
        }
    }
    return U;
}

/* corner c of pad i at body rows X, in world coordinates */
static void ground_corner(const md_ground *g, const double *X, int i, int c, double *p)
{
    const double *R = X + 18 * g->pad_body[i], *ps = R + 9, *cl = g->corner + 12 * i + 3 * c;
    for (int k = 0; k < 3; ++k) p[k] = ps[k] + R[3 * k] * cl[0] + R[3 * k + 1] * cl[1] + R[3 * k + 2] * cl[2];
}

/* How deep the pads are in the terrain at X: out[0] the largest vertical gap of a corner below it (m, 0 when none
 * is), out[1] how many corners are below it. */
void md_ground_depth(const md_ground *g, const double *X, double *out)
{
    out[0] = out[1] = 0.0;
    for (int i = 0; i < g->npad; ++i)
        for (int c = 0; c < 4; ++c) {
            double p[3], h[3];
            ground_corner(g, X, i, c, p);
            ground_terrain(g, p[0], p[1], h);
            double gap = h[0] - p[2];
            if (!(gap > 0.0)) continue;
            if (gap > out[0]) out[0] = gap;
            out[1] += 1.0;
        }
}

/* The energy the anchored friction's springs hold at X: ½·kt·|z|² over the anchored corners, z the corner's
 * offset from its anchor in the anchor's tangent plane (as ground_anchored computes it). */
double md_ground_anchor_energy(const md_ground *g, const double *X, const double *anchors)
{
    double E = 0.0;
    for (int i = 0; i < g->npad; ++i)
        for (int c = 0; c < 4; ++c) {
            const double *a = anchors + 16 * i + 4 * c;
            if (a[3] == 0.0) continue;
            double p[3], ha[3], n[4];
            ground_corner(g, X, i, c, p);
            ground_terrain(g, a[0], a[1], ha);
            ground_normal(ha, n);
            double dp[3] = {p[0] - a[0], p[1] - a[1], p[2] - a[2]};
            double dn = dp[0] * n[0] + dp[1] * n[1] + dp[2] * n[2], z2 = 0.0;
            for (int k = 0; k < 3; ++k) z2 += (dp[k] - dn * n[k]) * (dp[k] - dn * n[k]);
            E += 0.5 * g->kt * z2;
        }
    return E;
}

/* ---- Derivatives (docs/contact.md, "Derivatives"): each corner's force again, in forward-mode jets along its shoe's
 * 12 tangents (δφ, δp, δw, δv): R ↦ exp(δφ×)·R, p ↦ p + δp, w ↦ w + δw, v ↦ v + δv, all in world coordinates.
 * Every branch is the one the evaluation takes. tire.c differentiates the tires with the same jets. */

enum { GJ = 12 };
MD_JET(ground_jet, gj, GJ)  /* band.c */

/* a·b + c·d + e·f, the sum in that order */
static ground_jet gj_dot3(ground_jet a, ground_jet b, ground_jet c, ground_jet d, ground_jet e, ground_jet f)
{
    return gj_add(gj_add(gj_mul(a, b), gj_mul(c, d)), gj_mul(e, f));
}

/* a · b for 3-vectors of jets */
static ground_jet gj_dot(const ground_jet *a, const ground_jet *b)
{
    return gj_dot3(a[0], b[0], a[1], b[1], a[2], b[2]);
}

/* c = a × b for 3-vectors of jets */
static void gj_cross(const ground_jet *a, const ground_jet *b, ground_jet *c)
{
    c[0] = gj_sub(gj_mul(a[1], b[2]), gj_mul(a[2], b[1]));
    c[1] = gj_sub(gj_mul(a[2], b[0]), gj_mul(a[0], b[2]));
    c[2] = gj_sub(gj_mul(a[0], b[1]), gj_mul(a[1], b[0]));
}

/* Body row X as jets: R (9, row-major), p, w, v; column j of R moves by δφ × (its column) */
static void gj_row(const double *X, ground_jet *R, ground_jet *p, ground_jet *w, ground_jet *v)
{
    for (int j = 0; j < 3; ++j) {
        const double c[3] = {X[j], X[3 + j], X[6 + j]};
        for (int i = 0; i < 3; ++i) R[3 * i + j] = gj_const(X[3 * i + j]);
        R[j].d[1] = c[2], R[j].d[2] = -c[1];          /* δφ × c, row 0 */
        R[3 + j].d[0] = -c[2], R[3 + j].d[2] = c[0];  /* row 1 */
        R[6 + j].d[0] = c[1], R[6 + j].d[1] = -c[0];  /* row 2 */
    }
    for (int k = 0; k < 3; ++k) {
        p[k] = gj_const(X[9 + k]), w[k] = gj_const(X[12 + k]), v[k] = gj_const(X[15 + k]);
        p[k].d[3 + k] = w[k].d[6 + k] = v[k].d[9 + k] = 1.0;
    }
}

/* y = R x in jets */
static void gj_rmul(const ground_jet *R, const ground_jet *x, ground_jet *y)
{
    for (int k = 0; k < 3; ++k) y[k] = gj_dot3(R[3 * k], x[0], R[3 * k + 1], x[1], R[3 * k + 2], x[2]);
}

/* W += [x × F; F] in jets */
static void gj_wrench(const ground_jet *x, const ground_jet *F, ground_jet *W)
{
    ground_jet m[3];
    gj_cross(x, F, m);
    for (int k = 0; k < 3; ++k) W[k] = gj_add(W[k], m[k]), W[3 + k] = gj_add(W[3 + k], F[k]);
}

/* the second derivatives of the Catmull–Rom weights at t */
static void ground_cr2(double t, double *ddc)
{
    ddc[0] = 0.5 * (-6.0 * t + 4.0), ddc[1] = 0.5 * (18.0 * t - 10.0);
    ddc[2] = 0.5 * (-18.0 * t + 8.0), ddc[3] = 0.5 * (6.0 * t - 2.0);
}

/* H = (hxx, hxy, hyy), the terrain's second derivatives at (x, y) (0 along a grid's clamped axis) */
static void ground_curvature(const md_ground *g, double x, double y, double *H)
{
    const double *p = g->p;
    H[0] = H[1] = H[2] = 0.0;
    if (g->kind == MD_SINE) {
        double kx = GROUND_TWO_PI / p[2], ky = GROUND_TWO_PI / p[3];
        double sx = sin(kx * x), cx = cos(kx * x), sy = sin(ky * y), cy = cos(ky * y);
        H[0] = -p[1] * kx * kx * sx * sy, H[1] = p[1] * kx * ky * cx * cy, H[2] = -p[1] * ky * ky * sx * sy;
    } else if (g->kind == MD_GRID) {
        double t, s, cx[4], dcx[4], ddcx[4], cy[4], dcy[4], ddcy[4];
        int inx, iny;
        int i = ground_cell(x, p[0], p[2], g->nx, &t, &inx), j = ground_cell(y, p[1], p[3], g->ny, &s, &iny);
        ground_cr(t, cx, dcx), ground_cr2(t, ddcx);
        ground_cr(s, cy, dcy), ground_cr2(s, ddcy);
        for (int b = 0; b < 4; ++b)
            for (int a = 0; a < 4; ++a) {
                double Hn = ground_node(g, i + a - 1, j + b - 1);
                H[0] += ddcx[a] * cy[b] * Hn, H[1] += dcx[a] * dcy[b] * Hn, H[2] += cx[a] * ddcy[b] * Hn;
            }
        H[0] = inx ? H[0] / (p[2] * p[2]) : 0.0;
        H[1] = inx && iny ? H[1] / (p[2] * p[3]) : 0.0;
        H[2] = iny ? H[2] / (p[3] * p[3]) : 0.0;
    }
}

/* ground_terrain in jets: h = (h, ∂h/∂x, ∂h/∂y) at (x, y) */
static void gj_terrain(const md_ground *g, ground_jet x, ground_jet y, ground_jet *h)
{
    double v[3], H[3];
    ground_terrain(g, x.v, y.v, v);
    ground_curvature(g, x.v, y.v, H);
    h[0] = gj_add(gj_scale(x, v[1]), gj_scale(y, v[2])), h[0].v = v[0];
    h[1] = gj_add(gj_scale(x, H[0]), gj_scale(y, H[1])), h[1].v = v[1];
    h[2] = gj_add(gj_scale(x, H[1]), gj_scale(y, H[2])), h[2].v = v[2];
}

/* ground_normal in jets: n̂ into nrm[0..2] and |m| into nrm[3] */
static void gj_normal(const ground_jet *h, ground_jet *nrm)
{
    ground_jet mm = gj_sqrt(gj_add(gj_add(gj_mul(h[1], h[1]), gj_mul(h[2], h[2])), gj_const(1.0)));
    nrm[0] = gj_div(gj_scale(h[1], -1.0), mm), nrm[1] = gj_div(gj_scale(h[2], -1.0), mm);
    nrm[2] = gj_div(gj_const(1.0), mm), nrm[3] = mm;
}

/* ground_anchored's tangential force in jets, from the anchor a (jets: a new anchor is the corner itself) */
static void gj_anchored(const md_ground *g, const ground_shared *sh, const ground_jet *p, const ground_jet *a,
                        const ground_jet *ut, ground_jet load, ground_jet *f)
{
    ground_jet na[4], ha[3];
    if (sh->plane) {
        for (int k = 0; k < 4; ++k) na[k] = gj_const(sh->nrm[k]);
    } else {
        gj_terrain(g, a[0], a[1], ha);
        gj_normal(ha, na);
    }
    ground_jet dp[3] = {gj_sub(p[0], a[0]), gj_sub(p[1], a[1]), gj_sub(p[2], a[2])}, dn = gj_dot(dp, na), f2;
    for (int k = 0; k < 3; ++k)
        f[k] = gj_sub(gj_scale(gj_sub(dp[k], gj_mul(dn, na[k])), -g->kt), gj_scale(ut[k], sh->ct));
    f2 = gj_dot(f, f);
    ground_jet cone = gj_scale(load, g->mu);
    if (f2.v <= cone.v * cone.v) return; /* stick */
    ground_jet s = gj_div(cone, gj_sqrt(f2));
    for (int k = 0; k < 3; ++k) f[k] = gj_mul(s, f[k]);
}

/* The wrench of corner cl (shoe frame) of the shoe at row X in jets, as md_ground_fext's, added into W; anchor
 * (4, or NULL) as there, read and not updated. 0 (W untouched) when the corner is out of contact. */
static int gj_corner(const md_ground *g, const ground_shared *sh, const double *X, const double *cl,
                     const double *anchor, ground_jet *W)
{
    ground_jet R[9], ps[3], w[3], v[3], c[3] = {gj_const(cl[0]), gj_const(cl[1]), gj_const(cl[2])}, r[3], p[3], h[3];
    gj_row(X, R, ps, w, v);
    gj_rmul(R, c, r);
    for (int k = 0; k < 3; ++k) p[k] = gj_add(ps[k], r[k]);
    gj_terrain(g, p[0], p[1], h);
    ground_jet gap = gj_sub(h[0], p[2]);
    if (!(gap.v > 0.0)) return 0;
    ground_jet wr[3], u[3];
    gj_cross(w, r, wr);
    for (int k = 0; k < 3; ++k) u[k] = gj_add(v[k], wr[k]);
    ground_jet gdot = gj_sub(gj_add(gj_mul(h[1], u[0]), gj_mul(h[2], u[1])), u[2]);
    ground_jet ramp = gap.v < g->ramp ? gj_scale(gap, 1.0 / g->ramp) : gj_const(1.0);
    ground_jet f = gj_add(gj_scale(gap, g->kn), gj_scale(gj_mul(ramp, gdot), g->cg));
    f = f.v > 0.0 ? f : gj_const(0.0);
    ground_jet n[4], ut[3], ft[3], F[3];
    if (sh->plane) {
        for (int k = 0; k < 4; ++k) n[k] = gj_const(sh->nrm[k]);
    } else {
        gj_normal(h, n);
    }
    ground_jet mvec[3] = {gj_scale(h[1], -1.0), gj_scale(h[2], -1.0), gj_const(1.0)}, un = gj_dot(u, n);
    for (int k = 0; k < 3; ++k) ut[k] = gj_sub(u[k], gj_mul(un, n[k]));
    ground_jet load = gj_mul(f, n[3]);
    if (anchor) {
        ground_jet a[3] = {gj_const(anchor[0]), gj_const(anchor[1]), gj_const(anchor[2])};
        gj_anchored(g, sh, p, anchor[3] == 0.0 ? p : a, ut, load, ft); /* a new anchor is the corner itself */
    } else {
        ground_jet muN = gj_scale(load, g->mu);
        ground_jet k = gj_div(muN, gj_add(gj_sqrt(gj_add(gj_dot(ut, ut), gj_const(g->v_eps * g->v_eps))),
                                          gj_scale(muN, sh->dtm)));
        for (int j = 0; j < 3; ++j) ft[j] = gj_scale(gj_mul(k, ut[j]), -1.0);
    }
    for (int k = 0; k < 3; ++k) F[k] = gj_add(gj_mul(f, mvec[k]), ft[k]);
    gj_wrench(p, F, W);
    return 1;
}

/* md_ground_fext (fext and anchors as there), and the derivative of fext at the anchors as passed in: for each
 * padded shoe with a corner in contact, its body into bodies[n] and its 6 × 12 block (row-major: its fext row by
 * its tangents) into blocks + 72n, at most cap of them. Returns the number of shoes n, or −n when n > cap
 * (nothing is written past cap). */
int md_ground_fext_jac(const md_ground *g, const double *X, double dt, double *anchors, double *fext, int cap,
                       int *bodies, double *blocks)
{
    int n = 0;
    ground_shared sh;
    ground_share_call(g, &sh);
    for (int i = 0; i < g->npad; ++i) {
        const double *R = X + 18 * g->pad_body[i], *ps = R + 9;
        if (g->reach > 0.0) { /* md_ground_fext's broadphase: a shoe it skips has no corner in contact */
            double h[3];
            ground_terrain(g, ps[0], ps[1], h);
            if (h[0] - ps[2] < -g->reach) continue;
        }
        ground_share_pad(g, g->corner_mass[i], dt, anchors != NULL, &sh);
        ground_jet W[6];
        int on = 0;
        for (int k = 0; k < 6; ++k) W[k] = gj_const(0.0);
        for (int c = 0; c < 4; ++c) {
            double p[3], h[3];
            ground_corner(g, X, i, c, p);
            ground_terrain(g, p[0], p[1], h);
            if (!(h[0] - p[2] > 0.0)) continue; /* out of contact: the jets need not be taken */
            on |= gj_corner(g, &sh, R, g->corner + 12 * i + 3 * c, anchors ? anchors + 16 * i + 4 * c : NULL, W);
        }
        if (!on) continue;
        if (n < cap) {
            bodies[n] = g->pad_body[i];
            for (int r = 0; r < 6; ++r)
                for (int k = 0; k < GJ; ++k) blocks[GJ * (6 * n + r) + k] = W[r].d[k];
        }
        ++n;
    }
    md_ground_fext(g, X, dt, anchors, fext); /* after the blocks, which read the anchors it updates */
    return n <= cap ? n : -n;
}
