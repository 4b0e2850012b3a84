/* The mechanics of recorded rows (docs/simulation.md, "Energy and closure"): for every row (q, qd) of a run, the
 * numeric forward kinematics of the spanning tree in world coordinates, then the kinetic and potential energy,
 * the linear momentum, the power the elements' dampers dissipate, the loop closure residuals and, when asked,
 * every body's pose. Written by hand from the model's numbers (mechanics.py packs them): it shares nothing with
 * the generated code, so the energy it measures checks the generated dynamics and the stepper. */
#include <math.h>
#include <string.h>

/* API begin */
typedef struct {
    int nbody, nq, nv;
    const int *parent;        /* nbody: the parent's index, -1 the base */
    const int *joint;         /* nbody: 0 revolute, 1 prismatic, 2 floating */
    const int *qidx, *vidx;   /* nbody: the first q and qd slot */
    const double *rot;        /* nbody x 9: the joint frame's rotation in the parent (row-major) */
    const double *axis;       /* nbody x 3: the joint axis in the joint frame */
    const double *xtree;      /* nbody x 3: the joint frame's origin in the parent */
    const double *mass;       /* nbody */
    const double *cg;         /* nbody x 3, body coordinates */
    const double *inertia;    /* nbody x 9: about the cg, body coordinates */
    double gravity[3];
    int ntsda;
    const int *tsda_body;     /* ntsda x 2: the two ends' bodies, -1 the base */
    const double *tsda_pos;   /* ntsda x 6: the two ends in their bodies' coordinates */
    const double *tsda_klc;   /* ntsda x 3: k, l0, c */
    int nrsda;
    const int *rsda_slot;     /* nrsda x 2: the joint's q and qd slot */
    const double *rsda_kqc;   /* nrsda x 3: k, q0, c */
    int nloop, nc;
    const int *loop_body;     /* nloop x 2: predecessor, successor (-1 the base) */
    const double *loop_geom;  /* nloop x 16: the anchors in pred and succ (6), the triad (9, row-major), length */
    const int *rows;          /* nc x 4, loop by loop: the row's loop, kind (0 sep, 1 dirs, 2 dist) and two axes
                               * (0 x, 1 y, 2 z, 3 u, 4 w, 5 as, 6 ws: docs/conventions.md, "Loop closures") */
} md_tree;

/* Rows [0, n) of (Q, QD): kinetic, potential (gravity and springs), dissipated power and momentum into T, V, P,
 * M (n x 3), closure residuals into phi (n x nc, NULL: none), and every body's pose and velocity into poses
 * (n x nbody x 18, NULL: none: R row-major body to world, origin, ω, origin's velocity, as fwd_dyn_bodies'
 * rows); work holds nbody x 18 doubles. */
void md_mechanics(const md_tree *t, long n, const double *Q, const double *QD, double *T, double *V, double *P,
                  double *M, double *phi, double *poses, double *work);
/* API end */

/* y = A x, A row-major 3 x 3 */
static void mv3(const double *A, const double *x, double *y)
{
    for (int i = 0; i < 3; i++)
        y[i] = A[3 * i] * x[0] + A[3 * i + 1] * x[1] + A[3 * i + 2] * x[2];
}

/* y = Aᵀ x */
static void mtv3(const double *A, const double *x, double *y)
{
    for (int i = 0; i < 3; i++)
        y[i] = A[i] * x[0] + A[3 + i] * x[1] + A[6 + i] * x[2];
}

/* C = A B */
static void mm3(const double *A, const double *B, double *C)
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            C[3 * i + j] = A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j];
}

/* c = a × b */
static void cross3(const double *a, const double *b, double *c)
{
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
}

static double dot3(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* R of the unit quaternion [w, x, y, z] */
static void quat_R(const double *qt, double *R)
{
    double w = qt[0], x = qt[1], y = qt[2], z = qt[3];
    R[0] = 1 - 2 * (y * y + z * z); R[1] = 2 * (x * y - w * z);     R[2] = 2 * (x * z + w * y);
    R[3] = 2 * (x * y + w * z);     R[4] = 1 - 2 * (x * x + z * z); R[5] = 2 * (y * z - w * x);
    R[6] = 2 * (x * z - w * y);     R[7] = 2 * (y * z + w * x);     R[8] = 1 - 2 * (x * x + y * y);
}

/* the rotation by th about the unit vector a: cos th 1 + sin th a× + (1 − cos th) a aᵀ */
static void axis_R(const double *a, double th, double *R)
{
    double c = cos(th), s = sin(th), k = 1 - c;
    R[0] = c + k * a[0] * a[0];        R[1] = -s * a[2] + k * a[0] * a[1]; R[2] = s * a[1] + k * a[0] * a[2];
    R[3] = s * a[2] + k * a[1] * a[0]; R[4] = c + k * a[1] * a[1];         R[5] = -s * a[0] + k * a[1] * a[2];
    R[6] = -s * a[1] + k * a[2] * a[0]; R[7] = s * a[0] + k * a[2] * a[1]; R[8] = c + k * a[2] * a[2];
}

static const double I3[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, Z3[3] = {0, 0, 0};

/* a body's frame in work: R (9), p (3) for body b (the base: identity at the origin) */
static const double *frame_R(const double *work, int b) { return b < 0 ? I3 : work + 12 * b; }
static const double *frame_p(const double *work, int b) { return b < 0 ? Z3 : work + 12 * b + 9; }

/* The world position x and velocity xd of the point at local r of body b */
static void point(const double *work, const double *wv, int b, const double *r, double *x, double *xd)
{
    double Rr[3], wxr[3];
    if (b < 0) {
        memcpy(x, r, sizeof Rr);
        memset(xd, 0, sizeof Rr);
        return;
    }
    mv3(work + 12 * b, r, Rr);
    cross3(wv + 6 * b, Rr, wxr);
    for (int k = 0; k < 3; k++) {
        x[k] = work[12 * b + 9 + k] + Rr[k];
        xd[k] = wv[6 * b + 3 + k] + wxr[k];
    }
}

/* The tree's world kinematics at (q, qd): R and p into work, ω and the origin's velocity into wv (nbody x 6) */
static void kinematics(const md_tree *t, const double *q, const double *qd, double *work, double *wv)
{
    for (int i = 0; i < t->nbody; i++) {
        const double *qi = q + t->qidx[i], *vi = qd + t->vidx[i], *ax = t->axis + 3 * i;
        int par = t->parent[i];
        const double *Rp = frame_R(work, par), *pp = frame_p(work, par);
        const double *wp = par < 0 ? Z3 : wv + 6 * par, *vp = par < 0 ? Z3 : wv + 6 * par + 3;
        double Rrel[9], Ra[9], r[3], wj[3] = {0, 0, 0}, vj[3] = {0, 0, 0}, Rpr[3], tmp[3];
        double *R = work + 12 * i, *p = R + 9, *w = wv + 6 * i, *v = w + 3;
        if (t->joint[i] == 2) {  /* floating: attitude quaternion, origin in parent coordinates; qd [ω; v] body */
            quat_R(qi, Rrel);
            memcpy(r, qi + 4, sizeof r);
            memcpy(wj, vi, sizeof wj);
            memcpy(vj, vi + 3, sizeof vj);
        } else if (t->joint[i] == 0) {  /* revolute: the joint frame turned by rot, then by q about the axis */
            axis_R(ax, qi[0], Ra);
            mm3(t->rot + 9 * i, Ra, Rrel);
            memcpy(r, t->xtree + 3 * i, sizeof r);
            for (int k = 0; k < 3; k++)
                wj[k] = vi[0] * ax[k];
        } else {  /* prismatic: along the axis turned by rot */
            memcpy(Rrel, t->rot + 9 * i, sizeof Rrel);
            mv3(Rrel, ax, tmp);
            for (int k = 0; k < 3; k++) {
                r[k] = t->xtree[3 * i + k] + qi[0] * tmp[k];
                vj[k] = vi[0] * ax[k];
            }
        }
        mm3(Rp, Rrel, R);
        mv3(Rp, r, Rpr);
        for (int k = 0; k < 3; k++)
            p[k] = pp[k] + Rpr[k];
        mv3(R, wj, tmp);
        for (int k = 0; k < 3; k++)
            w[k] = wp[k] + tmp[k];
        mv3(R, vj, tmp);
        cross3(wp, Rpr, v);
        for (int k = 0; k < 3; k++)
            v[k] += vp[k] + tmp[k];
    }
}

/* One row's energies, momentum and dissipated power from the kinematics in work and wv */
static void energies(const md_tree *t, const double *q, const double *qd, const double *work, const double *wv,
                     double *T, double *V, double *P, double *M)
{
    double kin = 0, pot = 0, diss = 0, mom[3] = {0, 0, 0};
    for (int i = 0; i < t->nbody; i++) {
        const double *R = work + 12 * i, *p = R + 9, *w = wv + 6 * i, *v = w + 3, m = t->mass[i];
        double c[3], vc[3], wb[3], Iw[3];
        mv3(R, t->cg + 3 * i, c);
        cross3(w, c, vc);
        for (int k = 0; k < 3; k++)
            vc[k] += v[k];
        mtv3(R, w, wb);
        mv3(t->inertia + 9 * i, wb, Iw);
        kin += 0.5 * m * dot3(vc, vc) + 0.5 * dot3(wb, Iw);
        for (int k = 0; k < 3; k++) {
            pot -= m * (p[k] + c[k]) * t->gravity[k];
            mom[k] += m * vc[k];
        }
    }
    for (int e = 0; e < t->ntsda; e++) {
        const double *klc = t->tsda_klc + 3 * e;
        double a[3], ad[3], b[3], bd[3], d[3], dd[3];
        point(work, wv, t->tsda_body[2 * e], t->tsda_pos + 6 * e, a, ad);
        point(work, wv, t->tsda_body[2 * e + 1], t->tsda_pos + 6 * e + 3, b, bd);
        for (int k = 0; k < 3; k++) {
            d[k] = b[k] - a[k];
            dd[k] = bd[k] - ad[k];
        }
        double l = sqrt(dot3(d, d));
        pot += 0.5 * klc[0] * (l - klc[1]) * (l - klc[1]);
        if (klc[2] != 0) {  /* an undamped element dissipates exactly nothing, even at l = 0 */
            double ldot = dot3(d, dd) / l;
            diss += klc[2] * ldot * ldot;
        }
    }
    for (int e = 0; e < t->nrsda; e++) {
        const double *kqc = t->rsda_kqc + 3 * e;
        double x = q[t->rsda_slot[2 * e]] - kqc[1], xd = qd[t->rsda_slot[2 * e + 1]];
        pot += 0.5 * kqc[0] * x * x;
        diss += kqc[2] * xd * xd;
    }
    *T = kin;
    *V = pot;
    *P = diss;
    memcpy(M, mom, sizeof mom);
}

/* One row's closure residuals from the poses in work: e·d, e1·e2 or (d·d − L²)/2 per row, loop by loop */
static void closure(const md_tree *t, const double *work, const double *wv, double *phi)
{
    int k = 0;
    for (int l = 0; l < t->nloop; l++) {
        const int pred = t->loop_body[2 * l], succ = t->loop_body[2 * l + 1];
        const double *g = t->loop_geom + 16 * l, *Rp = frame_R(work, pred), *Rs = frame_R(work, succ);
        double P[3], S[3], d[3], vel[3], Tp[9], Ts[9], ax[7][3];
        point(work, wv, pred, g, P, vel);
        point(work, wv, succ, g + 3, S, vel);
        mm3(Rp, g + 6, Tp);
        mm3(Rs, g + 6, Ts);
        for (int j = 0; j < 3; j++) {
            d[j] = S[j] - P[j];
            ax[0][j] = Rp[3 * j]; ax[1][j] = Rp[3 * j + 1]; ax[2][j] = Rp[3 * j + 2];
            ax[3][j] = Tp[3 * j]; ax[4][j] = Tp[3 * j + 1];
            ax[5][j] = Ts[3 * j + 2]; ax[6][j] = Ts[3 * j + 1];
        }
        for (; k < t->nc && t->rows[4 * k] == l; k++) {
            const int *row = t->rows + 4 * k;
            if (row[1] == 0)
                phi[k] = dot3(ax[row[2]], d);
            else if (row[1] == 1)
                phi[k] = dot3(ax[row[2]], ax[row[3]]);
            else
                phi[k] = 0.5 * (dot3(d, d) - g[15] * g[15]);
        }
    }
}

void md_mechanics(const md_tree *t, long n, const double *Q, const double *QD, double *T, double *V, double *P,
                  double *M, double *phi, double *poses, double *work)
{
    double *wv = work + 12 * t->nbody;
    for (long r = 0; r < n; r++) {
        const double *q = Q + r * t->nq, *qd = QD + r * t->nv;
        kinematics(t, q, qd, work, wv);
        energies(t, q, qd, work, wv, T + r, V + r, P + r, M + 3 * r);
        if (phi)
            closure(t, work, wv, phi + r * t->nc);
        if (poses)
            for (int i = 0; i < t->nbody; i++) {
                memcpy(poses + (r * t->nbody + i) * 18, work + 12 * i, 12 * sizeof *work);
                memcpy(poses + (r * t->nbody + i) * 18 + 12, wv + 6 * i, 6 * sizeof *work);
            }
    }
}
