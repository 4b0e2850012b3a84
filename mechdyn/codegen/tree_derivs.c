/* The loop route of fwd_dyn_derivs (docs/derivatives.md "The loop route"): the analytic derivatives of the
 * recursive Newton-Euler inverse dynamics (Carpentier and Mansard, RSS 2018) in world coordinates, and the
 * KKT solves, as loops over the tree's tables. Emitted once into each derivatives unit that takes this route
 * (derivs_loop.py); the model's tables and its straight-line parts (poses, elements, loop rows) are generated.
 *
 * Spatial vectors are Plücker coordinates about the world origin: a motion [w; v], a force [n; f]. Every
 * matrix is row-major. TD_OPS(k) counts k arithmetic operations where a build defines it (the count's test). */
#include <pthread.h>
#include <stdlib.h>

#ifndef TD_OPS
#define TD_OPS(k) ((void)0)
#endif

/* The loops run over many right-hand sides at once: gcc vectorizes them at -O3 (about twice as fast as -O2 on
 * chain63), whatever the unit's own flags; the straight-line parts after this file keep those. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("O3")
#endif

typedef struct {
    int nv, nb, nc;          /* velocity coordinates, bodies, loop rows */
    const int *bparent;      /* nb: each body's parent body, -1 at the base */
    const int *dbody;        /* nv: each coordinate's body */
    const int *dfirst;       /* nb: each body's first coordinate */
    const int *dcount;       /* nb: its number of coordinates */
    const double *S;         /* 6 nv: each coordinate's motion subspace column in its body's coordinates */
    const double *mass;      /* nb */
    const double *cg;        /* 3 nb: the CG in body coordinates */
    const double *Icg;       /* 9 nb: the inertia about the CG in body coordinates */
    const double *a0;        /* 6: the base's acceleration, -g */
    int ncomp;               /* independent components: trees no loop or element joins */
    const int *cstart;       /* ncomp + 1: each component's coordinates are perm[cstart[c] .. cstart[c+1]) */
    const int *perm;         /* nv: coordinates by component, ascending within each */
    const int *dloc;         /* nv: each coordinate's position within its component */
    const int *cbstart;      /* ncomp + 1: each component's bodies are cbody[cbstart[c] .. cbstart[c+1]) */
    const int *cbody;        /* nb: bodies by component, in tree order */
    const int *rstart;       /* ncomp + 1: each component's loop rows are rperm[rstart[c] .. rstart[c+1]) */
    const int *rperm;        /* nc */
    const int *bcomp;        /* nb: each body's component */
    const int *fextb;        /* nb: 1 where the body reads fext */
    int nfext, nmax, rmax;   /* bodies that read fext; the largest component's coordinates and loop rows */
} td_model;

typedef struct {             /* per body, in world coordinates */
    double I[36], Ic[36], B[36];  /* the inertia; the subtree's inertia and its rate dI/dt */
    double IA[36], Dinv[36]; /* the articulated inertia; (J^T IA J)^-1 over the body's coordinates */
    double v[6], a[6], h[6], G[6], X[6];  /* velocity, acceleration; the subtree's momentum, force, fext */
} td_body;

typedef struct {
    td_body *bd;             /* nb */
    double *J;               /* 6 nv: the world motion subspace columns */
    double *tau_id;          /* nv: the inverse dynamics J^T (G - X) */
    double *col;             /* 54 nv: each coordinate's vectors of td_id_derivs */
    double *U;               /* 6 nv: IA J per coordinate */
    double *pa;              /* 6 TD_W nb: the articulated solve's bias forces, then accelerations */
    int *touched;            /* nb: the body's pa has been written in this block of columns */
} td_work;

#define TD_W 16              /* the articulated solve's columns at a time: its bodies' work stays in cache */

/* c = a x b for motion vectors. */
static void td_crm(const double *a, const double *b, double *c)
{
    c[0] = a[1] * b[2] - a[2] * b[1]; c[1] = a[2] * b[0] - a[0] * b[2]; c[2] = a[0] * b[1] - a[1] * b[0];
    c[3] = a[1] * b[5] - a[2] * b[4] + a[4] * b[2] - a[5] * b[1];
    c[4] = a[2] * b[3] - a[0] * b[5] + a[5] * b[0] - a[3] * b[2];
    c[5] = a[0] * b[4] - a[1] * b[3] + a[3] * b[1] - a[4] * b[0];
    TD_OPS(30);
}

/* c = a x* f: a motion vector acting on a force. */
static void td_crf(const double *a, const double *f, double *c)
{
    c[0] = a[1] * f[2] - a[2] * f[1] + a[4] * f[5] - a[5] * f[4];
    c[1] = a[2] * f[0] - a[0] * f[2] + a[5] * f[3] - a[3] * f[5];
    c[2] = a[0] * f[1] - a[1] * f[0] + a[3] * f[4] - a[4] * f[3];
    c[3] = a[1] * f[5] - a[2] * f[4]; c[4] = a[2] * f[3] - a[0] * f[5]; c[5] = a[0] * f[4] - a[1] * f[3];
    TD_OPS(30);
}

/* y = M x for a 6 x 6 M. */
static void td_mv(const double *M, const double *x, double *y)
{
    for (int r = 0; r < 6; ++r)
        y[r] = M[6 * r] * x[0] + M[6 * r + 1] * x[1] + M[6 * r + 2] * x[2] + M[6 * r + 3] * x[3]
               + M[6 * r + 4] * x[4] + M[6 * r + 5] * x[5];
    TD_OPS(66);
}

/* a . b over six entries. */
static double td_dot(const double *a, const double *b)
{
    TD_OPS(11);
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5];
}

/* y += x, y -= x over six entries. */
static void td_add(double *y, const double *x) { for (int r = 0; r < 6; ++r) y[r] += x[r]; TD_OPS(6); }
static void td_sub(double *y, const double *x) { for (int r = 0; r < 6; ++r) y[r] -= x[r]; TD_OPS(6); }

/* The world spatial inertia of a body at pose (E, r): E rotates world coordinates into the body's, r is its
 * origin. [Ibar, [h]x; [h]x^T, m 1] with h = m c the first moment and Ibar the inertia about the origin. */
static void td_inertia(double m, const double *cb, const double *Ib, const double *E, const double *r, double *I)
{
    double c[3], Rt[9], RI[9];  /* c: the CG in world coordinates; R = E^T */
    for (int i = 0; i < 3; ++i) {
        c[i] = r[i] + E[i] * cb[0] + E[3 + i] * cb[1] + E[6 + i] * cb[2];
        for (int j = 0; j < 3; ++j) Rt[3 * i + j] = E[3 * j + i];
    }
    for (int i = 0; i < 3; ++i)  /* R Ib */
        for (int j = 0; j < 3; ++j)
            RI[3 * i + j] = Rt[3 * i] * Ib[j] + Rt[3 * i + 1] * Ib[3 + j] + Rt[3 * i + 2] * Ib[6 + j];
    double cc = c[0] * c[0] + c[1] * c[1] + c[2] * c[2], h[3] = {m * c[0], m * c[1], m * c[2]};
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            I[6 * i + j] = RI[3 * i] * Rt[3 * j] + RI[3 * i + 1] * Rt[3 * j + 1] + RI[3 * i + 2] * Rt[3 * j + 2]
                           + m * ((i == j ? cc : 0.0) - c[i] * c[j]);
    double hx[9] = {0.0, -h[2], h[1], h[2], 0.0, -h[0], -h[1], h[0], 0.0};
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            I[6 * i + 3 + j] = hx[3 * i + j];
            I[6 * (3 + i) + j] = hx[3 * j + i];
            I[6 * (3 + i) + 3 + j] = i == j ? m : 0.0;
        }
    TD_OPS(3 * 6 + 45 + 5 + 3 + 9 * 9);
}

/* dI/dt = v x* I - I v x = A + A^T with A = v x* I (I v x = -(v x* I)^T): a symmetric 6 x 6. */
static void td_idot(const double *v, const double *I, double *B)
{
    double A[36], col[6], t[6];
    for (int j = 0; j < 6; ++j) {
        for (int r = 0; r < 6; ++r) col[r] = I[6 * r + j];
        td_crf(v, col, t);
        for (int r = 0; r < 6; ++r) A[6 * r + j] = t[r];
    }
    for (int r = 0; r < 6; ++r)
        for (int c = 0; c < 6; ++c) B[6 * r + c] = A[6 * r + c] + A[6 * c + r];
    TD_OPS(36);
}

/* The world columns J of every coordinate, each body's inertia and velocity. */
static void td_kinematics(const td_model *M, const double *pose, const double *qd, td_work *w)
{
    for (int b = 0; b < M->nb; ++b) {
        td_body *B = &w->bd[b];
        const double *E = pose + 12 * b, *r = pose + 12 * b + 9;
        int p = M->bparent[b];
        for (int k = 0; k < 6; ++k) B->v[k] = p < 0 ? 0.0 : w->bd[p].v[k];
        for (int j = M->dfirst[b]; j < M->dfirst[b] + M->dcount[b]; ++j) {
            const double *s = M->S + 6 * j;
            double *J = w->J + 6 * j, wv[3];
            for (int i = 0; i < 3; ++i) {  /* E^T s */
                J[i] = E[i] * s[0] + E[3 + i] * s[1] + E[6 + i] * s[2];
                wv[i] = E[i] * s[3] + E[3 + i] * s[4] + E[6 + i] * s[5];
            }
            J[3] = r[1] * J[2] - r[2] * J[1] + wv[0];
            J[4] = r[2] * J[0] - r[0] * J[2] + wv[1];
            J[5] = r[0] * J[1] - r[1] * J[0] + wv[2];
            for (int k = 0; k < 6; ++k) B->v[k] += J[k] * qd[j];
            TD_OPS(54);
        }
        td_inertia(M->mass[b], M->cg + 3 * b, M->Icg + 9 * b, E, r, B->I);
    }
}

/* Each body's acceleration at qdd (NULL: zero) and force I a + v x* I v, summed over subtrees into G, fext into
 * X; tau_id = J^T (G - X). With `all`, also each subtree's momentum h and dI/dt B, which the derivatives need. */
static void td_rnea(const td_model *M, const double *qdd, const double *fext, int all, td_work *w)
{
    double t[6], vJ[6];
    for (int b = 0; b < M->nb; ++b) {
        td_body *B = &w->bd[b];
        int p = M->bparent[b];
        for (int k = 0; k < 6; ++k) {
            B->a[k] = p < 0 ? M->a0[k] : w->bd[p].a[k];
            vJ[k] = p < 0 ? B->v[k] : B->v[k] - w->bd[p].v[k];
        }
        td_crm(B->v, vJ, t);
        td_add(B->a, t);
        if (qdd)
            for (int j = M->dfirst[b]; j < M->dfirst[b] + M->dcount[b]; ++j) {
                for (int k = 0; k < 6; ++k) B->a[k] += w->J[6 * j + k] * qdd[j];
                TD_OPS(12);
            }
        td_mv(B->I, B->a, B->G);
        td_mv(B->I, B->v, B->h);
        td_crf(B->v, B->h, t);
        td_add(B->G, t);
        for (int k = 0; k < 6; ++k) B->X[k] = fext && M->fextb[b] ? fext[6 * b + k] : 0.0;
        if (all) td_idot(B->v, B->I, B->B);
        TD_OPS(p < 0 ? 0 : 6);
    }
    for (int b = M->nb - 1; b >= 0; --b) {
        td_body *B = &w->bd[b];
        double F[6];
        for (int k = 0; k < 6; ++k) F[k] = B->G[k] - B->X[k];
        TD_OPS(6);
        for (int j = M->dfirst[b]; j < M->dfirst[b] + M->dcount[b]; ++j) w->tau_id[j] = td_dot(w->J + 6 * j, F);
        int p = M->bparent[b];
        if (p < 0) continue;
        td_body *P = &w->bd[p];
        td_add(P->G, B->G);
        td_add(P->X, B->X);
        if (all) {
            td_add(P->h, B->h);
            for (int k = 0; k < 36; ++k) P->B[k] += B->B[k];
            TD_OPS(36);
        }
    }
}

/* Each subtree's composite inertia Ic. */
static void td_composite(const td_model *M, td_work *w)
{
    for (int b = 0; b < M->nb; ++b) memcpy(w->bd[b].Ic, w->bd[b].I, sizeof(double) * 36);
    for (int b = M->nb - 1; b >= 0; --b) {
        int p = M->bparent[b];
        if (p < 0) continue;
        for (int k = 0; k < 36; ++k) w->bd[p].Ic[k] += w->bd[b].Ic[k];
        TD_OPS(36);
    }
}

/* Dinv = D^-1 for the k x k symmetric positive definite D (k <= 6), by Gauss-Jordan without pivoting. */
static void td_spdinv(int k, const double *D, double *Dinv)
{
    double A[36];
    memcpy(A, D, sizeof(double) * k * k);
    for (int i = 0; i < k; ++i)
        for (int j = 0; j < k; ++j) Dinv[k * i + j] = i == j ? 1.0 : 0.0;
    for (int p = 0; p < k; ++p) {
        double d = 1.0 / A[k * p + p];
        for (int j = 0; j < k; ++j) { A[k * p + j] *= d; Dinv[k * p + j] *= d; }
        for (int i = 0; i < k; ++i) {
            if (i == p) continue;
            double f = A[k * i + p];
            for (int j = 0; j < k; ++j) { A[k * i + j] -= f * A[k * p + j]; Dinv[k * i + j] -= f * Dinv[k * p + j]; }
            TD_OPS(4 * k);
        }
        TD_OPS(1 + 2 * k);
    }
}

/* The articulated inertias IA, U = IA J and (J^T IA J)^-1 of every body, leaves first (RBDA Table 7.1, in world
 * coordinates: no transforms between bodies). */
static void td_abi(const td_model *M, td_work *w)
{
    for (int b = 0; b < M->nb; ++b) memcpy(w->bd[b].IA, w->bd[b].I, sizeof(double) * 36);
    for (int b = M->nb - 1; b >= 0; --b) {
        td_body *B = &w->bd[b];
        int k = M->dcount[b], j0 = M->dfirst[b], p = M->bparent[b];
        double D[36];
        for (int c = 0; c < k; ++c) td_mv(B->IA, w->J + 6 * (j0 + c), w->U + 6 * (j0 + c));
        for (int c = 0; c < k; ++c)
            for (int e = 0; e < k; ++e) D[k * c + e] = td_dot(w->J + 6 * (j0 + c), w->U + 6 * (j0 + e));
        if (k == 1) { B->Dinv[0] = 1.0 / D[0]; TD_OPS(1); }
        else td_spdinv(k, D, B->Dinv);
        if (p < 0) continue;
        double T[36];  /* U Dinv, 6 x k */
        for (int r = 0; r < 6; ++r)
            for (int c = 0; c < k; ++c) {
                double t = 0.0;
                for (int e = 0; e < k; ++e) t += w->U[6 * (j0 + e) + r] * B->Dinv[k * e + c];
                T[k * r + c] = t;
                TD_OPS(2 * k - 1);
            }
        double *P = w->bd[p].IA;
        for (int r = 0; r < 6; ++r)
            for (int q = 0; q < 6; ++q) {
                double t = B->IA[6 * r + q];
                for (int c = 0; c < k; ++c) t -= T[k * r + c] * w->U[6 * (j0 + c) + q];
                P[6 * r + q] += t;
                TD_OPS(2 * k + 1);
            }
    }
}

/* y = D^-1 z over wd columns for one coordinate e of a body of k: z[f] the rows of its coordinates. */
static void td_dinv(int k, int e, const double *Dinv, double *const *z, double *y, int wd)
{
    if (k == 1) {
        for (int q = 0; q < wd; ++q) y[q] = Dinv[0] * z[0][q];
    } else {
        for (int q = 0; q < wd; ++q) {
            double s = 0.0;
            for (int f = 0; f < k; ++f) s += Dinv[k * e + f] * z[f][q];
            y[q] = s;
        }
    }
    TD_OPS(wd * (2 * k - 1));
}

/* X = H^-1 X for component c's m columns (X: its n coordinates' rows, row-major) by the articulated-body
 * recursion: u = x - J^T p and p_parent += p + U D^-1 u leaves first, then x = D^-1 (u - U^T a_parent) and
 * a = a_parent + J x from the roots, TD_W columns at a time. A body's p is zero until a child writes it, so a
 * leaf reads none and the first child of each body writes rather than adds (w->touched). */
static void td_absolve(const td_model *M, td_work *w, int c, double *X, int m)
{
    const int *bs = M->cbody + M->cbstart[c], nbc = M->cbstart[c + 1] - M->cbstart[c];
    for (int c0 = 0; c0 < m; c0 += TD_W) {
        int wd = m - c0 < TD_W ? m - c0 : TD_W;
        for (int t = 0; t < nbc; ++t) w->touched[bs[t]] = 0;
        for (int t = nbc - 1; t >= 0; --t) {
            int b = bs[t], k = M->dcount[b], j0 = M->dfirst[b], p = M->bparent[b];
            const double *pb = w->pa + 6L * TD_W * b;
            double *z[6];
            for (int e = 0; e < k; ++e) {  /* u = x - J^T p, kept in X */
                const double *J = w->J + 6 * (j0 + e);
                double *x = z[e] = X + (long)m * M->dloc[j0 + e] + c0;
                if (!w->touched[b]) continue;
                for (int q = 0; q < wd; ++q)
                    x[q] -= J[0] * pb[q] + J[1] * pb[TD_W + q] + J[2] * pb[2 * TD_W + q] + J[3] * pb[3 * TD_W + q]
                            + J[4] * pb[4 * TD_W + q] + J[5] * pb[5 * TD_W + q];
                TD_OPS(12 * wd);
            }
            if (p < 0) continue;
            double *pp = w->pa + 6L * TD_W * p;
            if (!w->touched[p]) {
                for (int r = 0; r < 6; ++r)
                    for (int q = 0; q < wd; ++q) pp[r * TD_W + q] = w->touched[b] ? pb[r * TD_W + q] : 0.0;
                w->touched[p] = 1;
            } else if (w->touched[b]) {
                for (int r = 0; r < 6; ++r)
                    for (int q = 0; q < wd; ++q) pp[r * TD_W + q] += pb[r * TD_W + q];
                TD_OPS(6 * wd);
            }
            for (int e = 0; e < k; ++e) {  /* p_parent += U D^-1 u */
                double y[TD_W];
                td_dinv(k, e, w->bd[b].Dinv, z, y, wd);
                const double *U = w->U + 6 * (j0 + e);
                for (int r = 0; r < 6; ++r)
                    for (int q = 0; q < wd; ++q) pp[r * TD_W + q] += U[r] * y[q];
                TD_OPS(12 * wd);
            }
        }
        for (int t = 0; t < nbc; ++t) {
            int b = bs[t], k = M->dcount[b], j0 = M->dfirst[b], p = M->bparent[b];
            double *ab = w->pa + 6L * TD_W * b, u[6][TD_W], *z[6];
            for (int e = 0; e < k; ++e) {  /* u - U^T a_parent */
                const double *x = X + (long)m * M->dloc[j0 + e] + c0;
                z[e] = u[e];
                if (p < 0) {
                    for (int q = 0; q < wd; ++q) u[e][q] = x[q];
                    continue;
                }
                const double *U = w->U + 6 * (j0 + e), *ap = w->pa + 6L * TD_W * p;
                for (int q = 0; q < wd; ++q)
                    u[e][q] = x[q] - (U[0] * ap[q] + U[1] * ap[TD_W + q] + U[2] * ap[2 * TD_W + q]
                                      + U[3] * ap[3 * TD_W + q] + U[4] * ap[4 * TD_W + q] + U[5] * ap[5 * TD_W + q]);
                TD_OPS(12 * wd);
            }
            for (int r = 0; r < 6; ++r)
                for (int q = 0; q < wd; ++q) ab[r * TD_W + q] = p < 0 ? 0.0 : w->pa[6L * TD_W * p + r * TD_W + q];
            for (int e = 0; e < k; ++e) {  /* x = D^-1 (u - U^T a_parent); a += J x */
                double *x = X + (long)m * M->dloc[j0 + e] + c0;
                const double *J = w->J + 6 * (j0 + e);
                td_dinv(k, e, w->bd[b].Dinv, z, x, wd);
                for (int r = 0; r < 6; ++r)
                    for (int q = 0; q < wd; ++q) ab[r * TD_W + q] += J[r] * x[q];
                TD_OPS(12 * wd);
            }
        }
    }
}

/* The Cholesky factor of the r x r S in place (lower triangle), and x = S^-1 x for one column. */
static void td_chol(int r, double *S)
{
    for (int j = 0; j < r; ++j) {
        for (int k = 0; k < j; ++k) { S[r * j + j] -= S[r * j + k] * S[r * j + k]; TD_OPS(2); }
        S[r * j + j] = sqrt(S[r * j + j]);
        for (int i = j + 1; i < r; ++i) {
            for (int k = 0; k < j; ++k) { S[r * i + j] -= S[r * i + k] * S[r * j + k]; TD_OPS(2); }
            S[r * i + j] /= S[r * j + j];
            TD_OPS(1);
        }
        TD_OPS(1);
    }
}

static void td_cholsolve(int r, const double *S, double *x, int m)
{
    for (int i = 0; i < r; ++i) {
        for (int k = 0; k < i; ++k)
            for (int c = 0; c < m; ++c) { x[m * i + c] -= S[r * i + k] * x[m * k + c]; TD_OPS(2); }
        for (int c = 0; c < m; ++c) { x[m * i + c] /= S[r * i + i]; TD_OPS(1); }
    }
    for (int i = r - 1; i >= 0; --i) {
        for (int k = i + 1; k < r; ++k)
            for (int c = 0; c < m; ++c) { x[m * i + c] -= S[r * k + i] * x[m * k + c]; TD_OPS(2); }
        for (int c = 0; c < m; ++c) { x[m * i + c] /= S[r * i + i]; TD_OPS(1); }
    }
}

/* The components' work: H's factor, Y = H^-1 K^T and the factor of S = K Y, per component. */
typedef struct {
    double **Y, **S;         /* ncomp each */
    double *X, *W, *pre;     /* the solve's block; K Z - G; the fext prefix sums (nb x 6 nmax) */
} td_comp;

/* qdd and mu of [H K^T; K 0] [qdd; mu] = [tau - C + Q; k], C the bias force with fext, K (nc x nv) and k
 * the loops' rows. */
static void td_forward(const td_model *M, const double *pose, const double *qd, const double *tau,
                       const double *fext, const double *Q, const double *K, const double *k, td_work *w,
                       td_comp *cw, double *qdd, double *mu)
{
    td_kinematics(M, pose, qd, w);
    td_rnea(M, NULL, fext, 0, w);
    td_composite(M, w);
    td_abi(M, w);
    for (int c = 0; c < M->ncomp; ++c) {
        int n = M->cstart[c + 1] - M->cstart[c], r = M->rstart[c + 1] - M->rstart[c], m = 1 + r;
        const int *P = M->perm + M->cstart[c], *R = M->rperm + M->rstart[c];
        double *X = cw->X, *S = cw->S[c];
        for (int i = 0; i < n; ++i) {
            X[m * i] = tau[P[i]] - w->tau_id[P[i]] + Q[P[i]];
            for (int a = 0; a < r; ++a) X[m * i + 1 + a] = K[(long)M->nv * R[a] + P[i]];
            TD_OPS(2);
        }
        td_absolve(M, w, c, X, m);
        for (int a = 0; a < r; ++a) {  /* Y, S = K Y, and K x - k */
            for (int i = 0; i < n; ++i) cw->Y[c][r * i + a] = X[m * i + 1 + a];
            double kx = -k[R[a]];
            for (int i = 0; i < n; ++i) kx += K[(long)M->nv * R[a] + P[i]] * X[m * i];
            mu[R[a]] = kx;
            for (int e = 0; e < r; ++e) {
                double s = 0.0;
                for (int i = 0; i < n; ++i) s += K[(long)M->nv * R[a] + P[i]] * X[m * i + 1 + e];
                S[r * a + e] = s;
                TD_OPS(2 * n);
            }
            TD_OPS(2 * n);
        }
        td_chol(r, S);
        double rmu[r > 0 ? r : 1];
        for (int a = 0; a < r; ++a) rmu[a] = mu[R[a]];
        td_cholsolve(r, S, rmu, 1);
        for (int a = 0; a < r; ++a) mu[R[a]] = rmu[a];
        for (int i = 0; i < n; ++i) {
            double x = X[m * i];
            for (int a = 0; a < r; ++a) { x -= X[m * i + 1 + a] * rmu[a]; TD_OPS(2); }
            qdd[P[i]] = x;
        }
    }
}

/* dID/dq and dID/dqd at qdd into Dq and Dqd (nv x nv, row i: tau_i), over the tree pattern; the rest is left
 * as it is. For coordinates j of body bj and i of body bi with bj an ancestor of bi or bi itself:
 *   dtau_i/dq_j  = alpha_i . w_j + beta_i . u_j + gamma_i . J_j,   dtau_j/dq_i  = J_j . psi_i  (bj != bi),
 *   dtau_i/dqd_j = alpha_i . z_j - beta_i . J_j,                    dtau_j/dqd_i = J_j . phi_i  (bj != bi),
 * with u = J x v_p, w = J x a_p - u x v_p, z = J x (v_p + v), alpha = -Ic J, beta = J x* h - B J,
 * gamma = -J x* X, psi = J x* G - Ic w - u x* h - B u, phi = B J - Ic z + J x* h, every subtree sum (Ic, h,
 * B, G, X) of the coordinate's own body and v_p, a_p its parent's (docs/derivatives.md "The loop route"). */
static void td_id_derivs(const td_model *M, const double *qdd, const double *fext, td_work *w, double *Dq,
                         double *Dqd)
{
    double *col = w->col;
    td_rnea(M, qdd, fext, 1, w);
    const double zero[6] = {0};
    for (int j = 0; j < M->nv; ++j) {  /* col: J, u, w, z, alpha, beta, gamma, psi, phi per coordinate */
        const td_body *B = &w->bd[M->dbody[j]];
        int p = M->bparent[M->dbody[j]];
        const double *vp = p < 0 ? zero : w->bd[p].v, *ap = p < 0 ? M->a0 : w->bd[p].a, *J = w->J + 6 * j;
        double *u = col + 54 * j, *ww = u + 6, *z = u + 12, *al = u + 18, *be = u + 24, *ga = u + 30, *ps = u + 36,
               *ph = u + 42, t[6], s[6];
        td_crm(J, vp, u);
        td_crm(J, ap, ww);
        td_crm(u, vp, t);
        td_sub(ww, t);
        for (int k = 0; k < 6; ++k) s[k] = vp[k] + B->v[k];
        td_crm(J, s, z);
        td_mv(B->Ic, J, al);
        for (int k = 0; k < 6; ++k) al[k] = -al[k];
        double Jh[6], BJ[6];
        td_crf(J, B->h, Jh);
        td_mv(B->B, J, BJ);
        for (int k = 0; k < 6; ++k) be[k] = Jh[k] - BJ[k];
        td_crf(J, B->X, ga);
        for (int k = 0; k < 6; ++k) ga[k] = -ga[k];
        td_crf(J, B->G, ps);
        td_mv(B->Ic, ww, t);
        td_sub(ps, t);
        td_crf(u, B->h, t);
        td_sub(ps, t);
        td_mv(B->B, u, t);
        td_sub(ps, t);
        td_mv(B->Ic, z, t);
        for (int k = 0; k < 6; ++k) ph[k] = BJ[k] - t[k] + Jh[k];
        TD_OPS(24);
    }
    for (int i = 0; i < M->nv; ++i) {
        int bi = M->dbody[i];
        const double *ci = col + 54 * i, *Ji = w->J + 6 * i;
        for (int bj = bi; bj >= 0; bj = M->bparent[bj])
            for (int j = M->dfirst[bj]; j < M->dfirst[bj] + M->dcount[bj]; ++j) {
                const double *cj = col + 54 * j, *Jj = w->J + 6 * j;
                Dq[(long)M->nv * i + j] = td_dot(ci + 18, cj + 6) + td_dot(ci + 24, cj) + td_dot(ci + 30, Jj);
                Dqd[(long)M->nv * i + j] = td_dot(ci + 18, cj + 12) - td_dot(ci + 24, Jj);
                TD_OPS(3);
                if (bj != bi) {
                    Dq[(long)M->nv * j + i] = td_dot(Jj, ci + 36);
                    Dqd[(long)M->nv * j + i] = td_dot(Jj, ci + 42);
                }
            }
    }
}

/* dq, dqd, dtau, dact and dfext from the residual's derivatives: Dq, Dqd (in dq, dqd), Da (in dact), and the
 * loop rows' Gq, Gqd, Ga. Per component, with Z = H^-1 D: d qdd = -Z + Y S^-1 (K Z - G); dtau is the
 * constrained inverse H^-1 - Y S^-1 Y^T, and dfext its columns summed along each body's support times J. */
static void td_finish(const td_model *M, int na, const double *K, const double *Gq, const double *Gqd,
                      const double *Ga, td_work *w, td_comp *cw, double *dq, double *dqd, double *dtau,
                      double *dact, double *dfext)
{
    const long nv = M->nv;
    for (int c = 0; c < M->ncomp; ++c) {
        int n = M->cstart[c + 1] - M->cstart[c], r = M->rstart[c + 1] - M->rstart[c], m = 3 * n + na;
        const int *P = M->perm + M->cstart[c], *R = M->rperm + M->rstart[c];
        double *X = cw->X, *W = cw->W;
        for (int i = 0; i < n; ++i) {
            double *x = X + (long)m * i;
            for (int j = 0; j < n; ++j) {
                x[j] = dq[nv * P[i] + P[j]];
                x[n + j] = dqd[nv * P[i] + P[j]];
                x[2 * n + j] = i == j ? -1.0 : 0.0;  /* dr/dtau = -1 */
            }
            for (int a = 0; a < na; ++a) x[3 * n + a] = dact[(long)na * P[i] + a];
        }
        td_absolve(M, w, c, X, m);
        if (r > 0) {
            for (int a = 0; a < r; ++a) {
                const double *Ka = K + nv * R[a];
                double *wa = W + (long)m * a;
                for (int j = 0; j < n; ++j) {
                    wa[j] = -Gq[nv * R[a] + P[j]];
                    wa[n + j] = -Gqd[nv * R[a] + P[j]];
                    wa[2 * n + j] = 0.0;
                }
                for (int e = 0; e < na; ++e) wa[3 * n + e] = -Ga[(long)na * R[a] + e];
                for (int i = 0; i < n; ++i) {
                    double kai = Ka[P[i]];
                    const double *x = X + (long)m * i;
                    for (int j = 0; j < m; ++j) wa[j] += kai * x[j];
                    TD_OPS(2 * m);
                }
            }
            td_cholsolve(r, cw->S[c], W, m);
            for (int i = 0; i < n; ++i) {
                double *x = X + (long)m * i;
                const double *y = cw->Y[c] + (long)r * i;
                for (int a = 0; a < r; ++a) {
                    const double *wa = W + (long)m * a;
                    for (int j = 0; j < m; ++j) x[j] -= y[a] * wa[j];
                    TD_OPS(2 * m);
                }
            }
        }
        for (int i = 0; i < n; ++i) {  /* X holds Z - Y S^-1 (K Z - G) = -d qdd */
            const double *x = X + (long)m * i;
            for (int j = 0; j < n; ++j) {
                dq[nv * P[i] + P[j]] = -x[j];
                dqd[nv * P[i] + P[j]] = -x[n + j];
                dtau[nv * P[i] + P[j]] = -x[2 * n + j];
            }
            for (int a = 0; a < na; ++a) dact[(long)na * P[i] + a] = -x[3 * n + a];
        }
    }
    if (!M->nfext) return;
    const int nmax = M->nmax;
    for (int b = 0; b < M->nb; ++b) {  /* the prefix sums of dtau's columns times J, down the tree */
        int c = M->bcomp[b], n = M->cstart[c + 1] - M->cstart[c], p = M->bparent[b];
        const int *P = M->perm + M->cstart[c];
        double *pre = cw->pre + 6L * nmax * b;
        if (p >= 0) memcpy(pre, cw->pre + 6L * nmax * p, sizeof(double) * 6 * n);
        else memset(pre, 0, sizeof(double) * 6 * n);
        for (int j = M->dfirst[b]; j < M->dfirst[b] + M->dcount[b]; ++j) {
            const double *J = w->J + 6 * j;
            for (int i = 0; i < n; ++i) {
                double h = dtau[nv * P[i] + j];
                for (int k = 0; k < 6; ++k) pre[6 * i + k] += h * J[k];
                TD_OPS(12);
            }
        }
        if (M->fextb[b])
            for (int i = 0; i < n; ++i) memcpy(dfext + 6L * M->nb * P[i] + 6 * b, pre + 6 * i, sizeof(double) * 6);
    }
}

static pthread_key_t td_key;  /* each thread's kept block: its size, then the work; freed when the thread ends */
static pthread_once_t td_once = PTHREAD_ONCE_INIT;

static void td_make_key(void) { pthread_key_create(&td_key, free); }

/* The work of a call, carved from one allocation that each thread keeps for its next calls (a large block is
 * mapped afresh on every malloc, and its pages faulted in again): NULL if there is no memory. */
static void *td_begin(const td_model *M, int na, td_work *w, td_comp *cw)
{
    long nmax = M->nmax, rmax = M->rmax, m = 3 * nmax + na + 1 + rmax, size = 0;
    for (int c = 0; c < M->ncomp; ++c) {
        long n = M->cstart[c + 1] - M->cstart[c], r = M->rstart[c + 1] - M->rstart[c];
        size += n * r + r * r;
    }
    size += 6L * M->nv + M->nv + 54L * M->nv + 6L * M->nv + 6L * TD_W * M->nb + nmax * m + rmax * m
            + 6L * nmax * M->nb;
    size_t bytes = 16 + sizeof(td_body) * M->nb + sizeof(double *) * 2 * M->ncomp + sizeof(double) * size
                   + sizeof(int) * M->nb;
    pthread_once(&td_once, td_make_key);
    char *kept = pthread_getspecific(td_key);
    if (!kept || *(size_t *)kept < bytes) {
        free(kept);
        kept = malloc(bytes);
        if (pthread_setspecific(td_key, kept) != 0) { free(kept); kept = NULL; }
        if (!kept) return NULL;
        *(size_t *)kept = bytes;
    }
    char *mem = kept + 16;
    w->bd = (td_body *)mem;
    cw->Y = (double **)(mem + sizeof(td_body) * M->nb);
    cw->S = cw->Y + M->ncomp;
    double *d = (double *)(cw->S + M->ncomp);
    for (int c = 0; c < M->ncomp; ++c) {
        long n = M->cstart[c + 1] - M->cstart[c], r = M->rstart[c + 1] - M->rstart[c];
        cw->Y[c] = d; d += n * r;
        cw->S[c] = d; d += r * r;
    }
    w->J = d; d += 6L * M->nv;
    w->tau_id = d; d += M->nv;
    w->col = d; d += 54L * M->nv;
    w->U = d; d += 6L * M->nv;
    w->pa = d; d += 6L * TD_W * M->nb;
    cw->X = d; d += nmax * m;
    cw->W = d; d += rmax * m;
    w->touched = (int *)(d + 6L * nmax * M->nb);
    cw->pre = d;
    return mem;
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
