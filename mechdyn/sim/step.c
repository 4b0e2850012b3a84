/* The stepping loop with contact (docs/simulation.md): at every step the generated body kinematics, both
 * contact producers (band.c, ground.c, compiled into this translation unit), the sprocket brakes, the generated
 * forward dynamics and the drift, with no Python in between. The generated functions are called through
 * pointers (Dynamics.address), so one compiled loop serves every model. galpha.c comes before it in the unit:
 * the implicit scheme's step, controller and linear algebra, and ga_finite, serve this loop too. */
#include <string.h>
#include <time.h>

/* API begin */
typedef void (*md_dyn_fn)(const double *q, const double *qd, const double *tau, const double *fext,
                          const double *act, double *qdd);
typedef void (*md_rows_fn)(const double *q, const double *qd, double *out);
typedef void (*md_drift_fn)(double *q, const double *qd, double tau);

typedef struct {
    int nq, nv, nbody, nact;
    md_dyn_fn fwd_dyn;     /* the model's generated fwd_dyn */
    md_rows_fn bodies;     /* fwd_dyn_bodies */
    md_drift_fn drift;     /* fwd_dyn_drift */
    md_rows_fn power;      /* fwd_dyn_power: the model's dampers' dissipated power into out[0] */
    md_drivers *drv;       /* the model's drivers (motion.c; fwd_dyn_react called instead of fwd_dyn), NULL: none */
} md_plant;

typedef struct {
    int iq, iv;            /* the braked joint's q and qd slots */
    double q0, k, c;       /* torque −k·(q − q0) − c·qd on it */
} md_brake;

typedef struct {
    const md_band *bands;
    int nband;
    const md_ground *ground;    /* NULL: no ground */
    double *anchors;            /* the ground's anchored-friction state (ncorner × 4), NULL: regularized */
    const md_tire *tires;       /* the tires (tire.c), on the ground's terrain */
    int ntire;
    double mu_road;             /* the ground's mu: the road's friction the tires scale their laws by */
    double *tire_state;         /* the tires' carried bristles (ntire × 2, at least 2) */
    const md_brake *brakes;
    int nbrake;
    double ramp_band, ramp_ground;  /* s: each producer's wrenches are scaled by t / ramp until then (0: none) */
    int predictor;              /* Verlet: evaluate at qd + qdd_prev·dt/2 (1) or at qd (0) */
    double *X, *fext, *fband;   /* workspaces: nbody × 18, nbody × 6, nbody × 6 */
    double *torque;             /* workspace: the rollers of all bands (at least 1) */
    double *tau, *qdd, *qdm;    /* workspaces: nv each */
    int dissipation;            /* integrate the contact's dissipated power into *work_contact (1) or not (0) */
    double *Xs, *fstat, *astat; /* its workspaces: nbody × 18, nbody × 6, the anchors' copy (ncorner × 4) */
    struct md_implicit *ga;     /* scheme 2 (generalized-α): its settings and carried state; NULL otherwise */
} md_scene;

/* Generalized-α with contact (scheme 2; docs/implicit.md "With contact"): galpha.c's step on the whole right-hand
 * side (the producers, the brakes, fwd_dyn), Newton on an iteration matrix built by differences of it, factored
 * and kept across steps until `refresh` steps have passed or Newton slows. */
typedef struct md_implicit {
    md_ga_plant plant;     /* the joints' layout for q ∘ exp(Δ) (its function pointers are not called here) */
    md_ga_opts opts;       /* the parameters, max_iter, tol; fixed: exactly max_iter corrections a step; adaptive:
                            * rtol, atol, dt_min, dt_max */
    int refresh;           /* rebuild the matrix at least every this many steps (0: only when Newton slows) */
    int started;           /* 0: the call starts a run (the carried state below is computed at q, qd) */
    double *acc;           /* nv: the pseudo-acceleration carried from step to step */
    double *wrench;        /* 12: the last step's ground wrench and its pseudo-wrench (the impulse's recurrence) */
    double *J;             /* nv × nv: the iteration matrix's LU factor, kept across steps */
    int *piv;              /* nv */
    double *anchors0;      /* the anchors at the step's start (≥ 1), restored before each evaluation */
    double *tires0;        /* the tires' bristles at the step's start (≥ 2), restored with the anchors */
    double *stats;         /* MD_GA_STATS, as galpha.c's, then the matrices built */
    long since;            /* steps since the matrix was built; < 0: none yet (a run's first call: the brakes or
                            * the step may have changed) */
    double pc;             /* the contact's dissipated power at the last step's end */
    int pc_valid;          /* pc was integrated by the last call (0: recompute it at the next call's start) */
    int status;            /* how the call ended: 0 done, 1 not finite, 2 Newton failed, 3 below dt_min, 4 memory */
} md_implicit;

enum { MD_AUX = 26 };  /* doubles per recorded row of aux, in this order: */
/* work, ground wrench (6: moment about the world origin, force; the step's, as applied), ground impulse (6, since
 * the call's start plus *impulse's), pin depth, pins, face depth, faces, ground depth, corners (md_band_depth,
 * md_ground_depth), band potential, ground potential, anchor springs, brake springs (J), crush (md_band_depth's
 * fraction of the crush depth), the contact's dissipated work (J, with sc->dissipation; since *work_contact's), the
 * tires' stored energy (md_tire_static, J) */

long md_sim_contact(const md_plant *m, const md_scene *sc, int scheme, long nsteps, double t0, double dt, double *q,
                    double *qd, double *qdd_prev, int nsched, double dt_sched, const double *tau, const double *act,
                    long stride, double *traj_q, double *traj_qd, double *traj_aux, double *work, double *impulse,
                    double *work_contact, long *done, double *timers);
/* API end */

/* seconds on the monotonic clock */
static double sim_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* the time since *mark into timers[k], when timing */
static void sim_lap(double *timers, int k, double *mark)
{
    if (!timers) return;
    double now = sim_now();
    timers[k] += now - *mark;
    *mark = now;
}

/* the brakes' torques added into tau at (q, qd) */
static void sim_brakes(const md_scene *sc, const double *q, const double *qd, double *tau)
{
    for (int i = 0; i < sc->nbrake; ++i) {
        const md_brake *b = sc->brakes + i;
        tau[b->iv] -= b->k * (q[b->iq] - b->q0) + b->c * qd[b->iv];
    }
}

/* the dissipated power at (q, qd) counted in *work: the model's dampers and the brakes' */
static double sim_power(const md_plant *m, const md_scene *sc, const double *q, const double *qd)
{
    double p;
    m->power(q, qd, &p);
    for (int i = 0; i < sc->nbrake; ++i) p += sc->brakes[i].c * qd[sc->brakes[i].iv] * qd[sc->brakes[i].iv];
    return p;
}

/* the factor t / ramp of a producer's wrenches ramped in over `ramp` s, at time t */
static double sim_ramp(double ramp, double t)
{
    return ramp > 0.0 && t < ramp ? t / ramp : 1.0;
}

/* The tires' wrenches at body rows sc->X added into sc->fext, ramped by sg, and into the terrain's wrench W: the
 * tires' bristles carried over dt (sc->fband is their scratch). */
static void sim_tires(const md_plant *m, const md_scene *sc, double dt, double sg, double *W)
{
    memset(sc->fband, 0, sizeof(double) * 6 * m->nbody);
    md_tire_fext(sc->tires, sc->ntire, sc->ground, sc->mu_road, sc->X, dt, sc->tire_state, sc->fband, NULL);
    for (int i = 0; i < sc->ntire; ++i) {
        const int b = sc->tires[i].body;
        for (int k = 0; k < 6; ++k) {
            const double f = sg * sc->fband[6 * b + k];
            sc->fext[6 * b + k] += f, W[k] += f;
        }
    }
}

/* The contact wrenches at (q, qd) and time t into sc->fext, each producer's ramped (the tires as the ground); the
 * terrain's total wrench (as applied: the ground's and the tires') into W. Timed as kinematics (0), band (1),
 * ground (2), tires (5). */
static void sim_contact(const md_plant *m, const md_scene *sc, const double *q, const double *qd, double dt, double t,
                        double *W, double *timers, double *mark)
{
    const double sg = sim_ramp(sc->ramp_ground, t), sb = sim_ramp(sc->ramp_band, t);
    if (!sc->nband && !sc->ground) {  /* nothing to touch (a driven model stepped here): no wrench, no kinematics */
        memset(sc->fext, 0, sizeof(double) * 6 * m->nbody);
        for (int k = 0; k < 6; ++k) W[k] = 0.0;
        return;
    }
    m->bodies(q, qd, sc->X);
    sim_lap(timers, 0, mark);
    memset(sc->fext, 0, sizeof(double) * 6 * m->nbody);
    for (int k = 0; k < 6; ++k) W[k] = 0.0;
    if (sc->ground) {
        md_ground_fext(sc->ground, sc->X, dt, sc->anchors, sc->fext);
        for (int i = 0; i < sc->ground->npad; ++i) {
            double *row = sc->fext + 6 * sc->ground->pad_body[i];
            for (int k = 0; k < 6; ++k) row[k] *= sg, W[k] += row[k];
        }
    }
    sim_lap(timers, 2, mark);
    if (sc->ntire) {
        sim_tires(m, sc, dt, sg, W);
        sim_lap(timers, 5, mark);
    }
    if (sb == 1.0) {
        md_band_fext(sc->bands, sc->nband, sc->X, dt, sc->fext, sc->torque);
    } else {  /* ramping in: the band's share alone scaled, from its own array */
        memset(sc->fband, 0, sizeof(double) * 6 * m->nbody);
        md_band_fext(sc->bands, sc->nband, sc->X, dt, sc->fband, sc->torque);
        for (int i = 0; i < 6 * m->nbody; ++i) sc->fext[i] += sb * sc->fband[i];
    }
    sim_lap(timers, 1, mark);
}

/* The right-hand side at (q, v) and time t: the contact (sim_contact; its wrenches left in sc->fext, the
 * ground's in W), the brakes on top of tau u, and fwd_dyn's qdd into F. Timed as sim_contact's stages and
 * dynamics (3). */
static void sim_rhs(const md_plant *m, const md_scene *sc, const double *q, const double *v, double dt, double t,
                    const double *u, const double *ac, double *F, double *W, double *timers, double *mark)
{
    sim_contact(m, sc, q, v, dt, t, W, timers, mark);
    memcpy(sc->tau, u, sizeof(double) * m->nv);
    sim_brakes(sc, q, v, sc->tau);
    if (m->drv) m->drv->react(q, v, sc->tau, sc->fext, ac, F, m->drv->r);
    else m->fwd_dyn(q, v, sc->tau, sc->fext, ac, F);
    sim_lap(timers, 3, mark);
}

/* The power the contact dissipates at body rows X, whose wrenches sc->fext the producers just computed (ramped
 * by sg, sb): the producers again at X with every velocity zeroed give the conservative part alone (the springs,
 * the tooth and guide potentials, the anchors' springs: every damper and friction term vanishes at zero velocity;
 * the anchors copied, so the real ones are not dragged), and the rest, −(F − F_static), does −power on the bodies'
 * motion: Σ n·ω + f·(v − ω × p) over the rows (a wrench about the world origin on a body moving at X). */
static double sim_dissipated(const md_plant *m, const md_scene *sc, double dt, double sg, double sb)
{
    const int nb = m->nbody;
    memcpy(sc->Xs, sc->X, sizeof(double) * 18 * nb);
    for (int i = 0; i < nb; ++i) memset(sc->Xs + 18 * i + 12, 0, sizeof(double) * 6);
    memset(sc->fstat, 0, sizeof(double) * 6 * nb);
    if (sc->ground) {
        double *a = NULL;
        if (sc->anchors) {
            memcpy(sc->astat, sc->anchors, sizeof(double) * 16 * sc->ground->npad);
            a = sc->astat;
        }
        md_ground_fext(sc->ground, sc->Xs, dt, a, sc->fstat);
        /* the tires' conservative part, as the law applies it at the real velocities (md_tire_static) */
        if (sc->ntire) md_tire_static(sc->tires, sc->ntire, sc->ground, sc->X, sc->tire_state, sc->fstat);
        for (int i = 0; i < 6 * nb; ++i) sc->fstat[i] *= sg;
    }
    memset(sc->fband, 0, sizeof(double) * 6 * nb);
    md_band_fext(sc->bands, sc->nband, sc->Xs, dt, sc->fband, sc->torque);
    double P = 0.0;
    for (int i = 0; i < nb; ++i) {
        const double *x = sc->X + 18 * i, *p = x + 9, *w = x + 12, *v = x + 15;
        double d[6], vo[3] = {v[0] - (w[1] * p[2] - w[2] * p[1]), v[1] - (w[2] * p[0] - w[0] * p[2]),
                              v[2] - (w[0] * p[1] - w[1] * p[0])};
        for (int k = 0; k < 6; ++k) d[k] = sc->fext[6 * i + k] - sc->fstat[6 * i + k] - sb * sc->fband[6 * i + k];
        P -= d[0] * w[0] + d[1] * w[1] + d[2] * w[2] + d[3] * vo[0] + d[4] * vo[1] + d[5] * vo[2];
    }
    return P;
}

/* the brakes' springs' energy at q */
static double sim_brake_energy(const md_scene *sc, const double *q)
{
    double E = 0.0;
    for (int i = 0; i < sc->nbrake; ++i) {
        const md_brake *b = sc->brakes + i;
        E += 0.5 * b->k * (q[b->iq] - b->q0) * (q[b->iq] - b->q0);
    }
    return E;
}

/* the tires' stored energy at body rows sc->X (md_tire_static; sc->fext its scratch) */
static double sim_tire_energy(const md_scene *sc)
{
    return sc->ntire ? md_tire_static(sc->tires, sc->ntire, sc->ground, sc->X, sc->tire_state, sc->fext) : 0.0;
}

/* one recorded row of aux at the state (q, qd) reached: see MD_AUX */
static void sim_record(const md_plant *m, const md_scene *sc, const double *q, const double *qd, double w,
                       const double *W, const double *J, double *aux)
{
    m->bodies(q, qd, sc->X);
    aux[0] = w;
    for (int k = 0; k < 6; ++k) aux[1 + k] = W[k], aux[7 + k] = J[k];
    double depth[5];
    md_band_depth(sc->bands, sc->nband, sc->X, depth);
    for (int k = 0; k < 4; ++k) aux[13 + k] = depth[k];
    aux[23] = depth[4];
    aux[17] = aux[18] = aux[19] = aux[20] = aux[21] = aux[25] = 0.0;
    /* the potentials, from the producers at dt 0 into the scratch fext (their forces are not used) */
    memset(sc->fext, 0, sizeof(double) * 6 * m->nbody);
    aux[19] = md_band_fext(sc->bands, sc->nband, sc->X, 0.0, sc->fext, sc->torque);
    if (sc->ground) {
        md_ground_depth(sc->ground, sc->X, aux + 17);
        aux[20] = md_ground_fext(sc->ground, sc->X, 0.0, NULL, sc->fext);
        if (sc->anchors) aux[21] = md_ground_anchor_energy(sc->ground, sc->X, sc->anchors);
        aux[25] = sim_tire_energy(sc);
    }
    aux[22] = sim_brake_energy(sc, q);
}

/* the doubles of the ground's anchored-friction state (0: none, or no ground to anchor to) */
static long sim_anchor_count(const md_scene *sc)
{
    return sc->anchors && sc->ground ? 16L * sc->ground->npad : 0;
}

/* The carried contact state (the anchors, the tires' bristles) saved into G's copies (save 1) or restored from
 * them (save 0) */
static void sim_carry(const md_scene *sc, int save)
{
    const md_implicit *G = sc->ga;
    const long nanch = sim_anchor_count(sc);
    if (nanch) {
        if (save) memcpy(G->anchors0, sc->anchors, sizeof(double) * nanch);
        else memcpy(sc->anchors, G->anchors0, sizeof(double) * nanch);
    }
    if (sc->ntire) {
        if (save) memcpy(G->tires0, sc->tire_state, sizeof(double) * 2 * sc->ntire);
        else memcpy(sc->tire_state, G->tires0, sizeof(double) * 2 * sc->ntire);
    }
}

/* One evaluation of the implicit step's right-hand side at the step's acceleration w->x: the state it gives
 * (ga_state), then sim_rhs there at time t with the anchors as they were at the step's start. */
static void sim_ga_eval(const md_plant *m, const md_scene *sc, ga_work *w, double h, double t, const double *u,
                        const double *ac, double *q, double *v, double *a, double *F, double *W, double *timers,
                        double *mark)
{
    md_implicit *G = sc->ga;
    ga_state(&G->plant, &G->opts, w, h, q, v, a);
    sim_carry(sc, 0);
    sim_rhs(m, sc, q, v, h, t, u, ac, F, W, timers, mark);
}

#define SIM_GA_DELTA 1e-11  /* m or rad: how far each difference column of the implicit step's matrix moves q */

/* The iteration matrix ∂(f − x)/∂x at w->x by forward differences, each column moving q by SIM_GA_DELTA,
 * factored into G->J: 0, or -1 if it is singular. F0 is f at w->x (evaluated here). */
static int sim_ga_matrix(const md_plant *m, const md_scene *sc, ga_work *w, double h, double t, const double *u,
                         const double *ac, double *q, double *v, double *a, double *F0, double *F, double *W,
                         double *timers, double *mark)
{
    md_implicit *G = sc->ga;
    const int nv = m->nv;
    const double bp = G->opts.beta * (1.0 - G->opts.alpha_f) / (1.0 - G->opts.alpha_m) * h * h;
    sim_ga_eval(m, sc, w, h, t, u, ac, q, v, a, F0, W, timers, mark);
    for (int j = 0; j < nv; ++j) {
        const double xj = w->x[j], e = SIM_GA_DELTA / bp;
        w->x[j] = xj + e;
        sim_ga_eval(m, sc, w, h, t, u, ac, q, v, a, F, W, timers, mark);
        w->x[j] = xj;
        for (int i = 0; i < nv; ++i) G->J[i * nv + j] = (F[i] - F0[i]) / e - (i == j);
    }
    G->stats[MD_GA_STATS] += 1.0;
    const int bad = ga_lu(nv, G->J, G->piv);
    G->since = bad ? -1 : 0;  /* a singular factor is never kept */
    sim_lap(timers, 4, mark);
    return bad;
}

/* the residual w->r = F − w->x from F = f at w->x; |r|² */
static double sim_ga_r(int nv, ga_work *w, const double *F)
{
    double rn = 0.0;
    for (int i = 0; i < nv; ++i) w->r[i] = F[i] - w->x[i], rn += w->r[i] * w->r[i];
    return rn;
}

/* sim_ga_r with F evaluated at w->x by sim_ga_eval */
static double sim_ga_residual(const md_plant *m, const md_scene *sc, ga_work *w, double h, double t, const double *u,
                              const double *ac, double *q, double *qd, double *F, double *W, double *timers,
                              double *mark)
{
    sim_ga_eval(m, sc, w, h, t, u, ac, q, qd, sc->ga->acc, F, W, timers, mark);
    return sim_ga_r(m->nv, w, F);
}

/* One generalized-α step of size h from the state saved in w (qn, vn, fn, an) with contact, into q, qd, f (the
 * true acceleration), G->acc; W the ground wrench at the new state, which also leaves the anchors there. Newton's
 * correction d solves J d = r with the kept factor. To a tolerance: a full correction below it ends the step;
 * one that does not lower |r| is halved (at most LINE_HALVINGS times), and the matrix is rebuilt where Newton
 * landed, as it is when Newton slows (at most MATRICES_PER_STEP times a step). The real-time mode takes exactly
 * max_iter full corrections. Each correction evaluates the right-hand side once (more when halved). Returns the
 * corrections, or -1 (a singular matrix, a non-finite value, no convergence). */
enum { LINE_HALVINGS = 8, MATRICES_PER_STEP = 4 };
static int sim_ga_step(const md_plant *m, const md_scene *sc, ga_work *w, double h, double t, const double *u,
                       const double *ac, double *q, double *qd, double *f, double *W, double *last, double *timers,
                       double *mark)
{
    md_implicit *G = sc->ga;
    const md_ga_opts *o = &G->opts;
    const int nv = m->nv;
    const double gp = o->gamma * (1.0 - o->alpha_f) / (1.0 - o->alpha_m) * h;
    /* workspaces free here: the explicit schemes' and the generated derivatives' (not called by this loop) */
    double *F = sc->qdm, *F0 = sc->qdd, *x0 = w->dq, *d = w->dqd, vmax = 0.0;
    for (int i = 0; i < nv; ++i) if (fabs(w->vn[i]) > vmax) vmax = fabs(w->vn[i]);
    ga_predict(&G->plant, o, w, h);
    memcpy(w->x, w->fn, sizeof(double) * nv);
    int built = 0, it = 0;
    double rn, prev = 0.0;
    if (G->since < 0 || (G->refresh > 0 && G->since >= G->refresh)) {
        if (sim_ga_matrix(m, sc, w, h, t, u, ac, q, qd, G->acc, F0, F, W, timers, mark)) return -1;
        built = 1;
        rn = sim_ga_r(nv, w, F0);  /* the matrix's first evaluation was at w->x */
    } else {
        rn = sim_ga_residual(m, sc, w, h, t, u, ac, q, qd, F, W, timers, mark);
    }
    for (;;) {
        double dv = 0.0, vm = vmax;
        memcpy(d, w->r, sizeof(double) * nv);
        ga_solve(nv, G->J, G->piv, d);
        for (int i = 0; i < nv; ++i) {
            if (fabs(gp * d[i]) > dv) dv = fabs(gp * d[i]);
            if (fabs(qd[i]) > vm) vm = fabs(qd[i]);
        }
        sim_lap(timers, 4, mark);
        if (!ga_finite(dv)) return -1;
        ++it;
        *last = dv;
        if (o->fixed || dv <= o->tol * (1.0 + vm)) {  /* the full correction */
            for (int i = 0; i < nv; ++i) w->x[i] -= d[i];
            if (!o->fixed || it == o->max_iter) break;
            rn = sim_ga_residual(m, sc, w, h, t, u, ac, q, qd, F, W, timers, mark);
            continue;
        }
        double lam = 1.0;
        memcpy(x0, w->x, sizeof(double) * nv);
        for (int ls = 0;; ++ls) {  /* backtracking on |r| */
            for (int i = 0; i < nv; ++i) w->x[i] = x0[i] - lam * d[i];
            double rt = sim_ga_residual(m, sc, w, h, t, u, ac, q, qd, F, W, timers, mark);
            if (rt <= (1.0 - 1e-4 * lam) * rn || ls == LINE_HALVINGS) {
                rn = rt;
                break;
            }
            lam *= 0.5;
        }
        if (it >= o->max_iter) return -1;
        /* a kept matrix that no longer contracts, or a correction that had to be halved: rebuild it here */
        if ((lam < 1.0 || (it >= 2 && dv > 0.1 * prev)) && built < MATRICES_PER_STEP) {
            if (sim_ga_matrix(m, sc, w, h, t, u, ac, q, qd, G->acc, F0, F, W, timers, mark)) return -1;
            ++built;
        }
        prev = lam * dv;
    }
    /* the state at the solved acceleration, its contact evaluated once more: the wrench and the anchors there */
    sim_ga_eval(m, sc, w, h, t, u, ac, q, qd, G->acc, F, W, timers, mark);
    memcpy(f, w->x, sizeof(double) * nv);
    G->since += 1;
    return it;
}

/* Scheme 2 of md_sim_contact: generalized-α with contact (its arguments as md_sim_contact's; qdd_prev carries the
 * true acceleration). */
static long sim_contact_galpha(const md_plant *m, const md_scene *sc, long nsteps, double t0, double dt, double *q,
                               double *qd, double *qdd_prev, int nsched, double dt_sched, const double *tau,
                               const double *act, long stride, double *traj_q, double *traj_qd, double *traj_aux,
                               double *work, double *impulse, double *work_contact, long *done, double *timers)
{
    md_implicit *G = sc->ga;
    const md_ga_opts *o = &G->opts;
    const int nq = m->nq, nv = m->nv;
    const double am = o->alpha_m, af = o->alpha_f;
    double W[6], J[6], w = *work, p0 = sim_power(m, sc, q, qd), wc = *work_contact, lastdv = 0.0, pd0 = 0.0;
    double mark = timers ? sim_now() : 0.0;
    ga_work gw;
    long nrec = 0, k = 0;
    *done = 0;
    if (ga_alloc(&G->plant, &gw)) {
        G->status = 4;
        return 0;
    }
    for (int i = 0; i < 6; ++i) J[i] = impulse[i];
    /* a run's start: f, the pseudo-acceleration and the pseudo-wrench start at the true ones at (q, qd); the
     * contact's dissipated power there too, when the last call did not integrate it */
    if (!G->started || (sc->dissipation && !G->pc_valid)) {
        const double *u, *fe, *ac;
        ga_inputs(&G->plant, nsched, dt_sched, t0, tau, NULL, act, &u, &fe, &ac);
        if (m->drv) ac = md_drive(m->drv->d, m->drv->n, m->nact, t0, ac, m->drv->act, NULL, NULL);
        sim_carry(sc, 1);  /* this look leaves them as they are */
        sim_rhs(m, sc, q, qd, dt, t0, u, ac, sc->qdd, W, timers, &mark);
        G->pc = sc->dissipation ? sim_dissipated(m, sc, dt, sim_ramp(sc->ramp_ground, t0),
                                                 sim_ramp(sc->ramp_band, t0)) : 0.0;
        if (!G->started) {
            memcpy(qdd_prev, sc->qdd, sizeof(double) * nv);
            memcpy(G->acc, qdd_prev, sizeof(double) * nv);
            for (int i = 0; i < 6; ++i) G->wrench[i] = G->wrench[6 + i] = W[i];
            G->started = 1;
        }
        sim_carry(sc, 0);
    }
    if (m->drv) pd0 = md_drive_power(m->drv->d, m->drv->n, qd, m->drv->r);
    G->pc_valid = sc->dissipation;
    double hp = o->adaptive && G->stats[6] > 0.0 ? G->stats[6] : dt;  /* the adaptive step's proposal */
    G->status = 0;
    for (k = 0; k < nsteps; ++k) {  /* output intervals, each one step of dt or adaptive steps */
        const double tend = t0 + (k + 1) * dt;
        double t = t0 + k * dt;
        int landed = 0;
        while (!landed) {
            const double h = ga_substep(o, &hp, t, tend, dt, &landed);
            const double *u, *fe, *ac;
            ga_inputs(&G->plant, nsched, dt_sched, t + 0.5 * h, tau, NULL, act, &u, &fe, &ac);
            gw.t1 = t + h;
            if (m->drv) ac = md_drive(m->drv->d, m->drv->n, m->nact, gw.t1, ac, m->drv->act, NULL, NULL);
            ga_save(&G->plant, &gw, q, qd, qdd_prev, G->acc);
            sim_carry(sc, 1);
            /* the equations hold at the step's end */
            const int it = sim_ga_step(m, sc, &gw, h, t + h, u, ac, q, qd, qdd_prev, W, &lastdv, timers, &mark);
            const double err = o->adaptive && it >= 0 ? ga_error(&G->plant, o, &gw, h, qdd_prev) : 0.0;
            double p1 = 0.0, w1 = 0.0, sum = 0.0;
            if (it >= 0 && err <= 1.0) {
                p1 = sim_power(m, sc, q, qd), w1 = w + 0.5 * h * (p0 + p1), sum = w1;
                for (int i = 0; i < nq; ++i) sum += q[i];
                for (int i = 0; i < nv; ++i) sum += qd[i];
            }
            if (it < 0 || !(err <= 1.0) || !ga_finite(sum)) {  /* back to the step's start */
                ga_restore(&G->plant, &gw, q, qd, qdd_prev, G->acc);
                sim_carry(sc, 0);
                if (it < 0) G->since = -1;  /* a retry builds its matrix afresh */
                if (it >= 0 && err <= 1.0) {  /* accepted but not finite */
                    G->status = 1;
                    break;
                }
                if (!o->adaptive) {
                    G->status = 2;
                    break;
                }
                G->stats[3] += 1.0;  /* rejected: halve, as galpha.c does */
                hp = 0.5 * h;
                if (hp < o->dt_min) {
                    G->status = 3;
                    break;
                }
                landed = 0;
                continue;
            }
            const double pc = sc->dissipation ? sim_dissipated(m, sc, h, sim_ramp(sc->ramp_ground, t + h),
                                                               sim_ramp(sc->ramp_band, t + h)) : 0.0;
            w = w1, p0 = p1;
            if (sc->dissipation) wc += 0.5 * h * (G->pc + pc), G->pc = pc;
            if (m->drv) {  /* the reactions of the step's last evaluation, at its end */
                const double pd1 = md_drive_power(m->drv->d, m->drv->n, qd, m->drv->r);
                m->drv->work[0] += 0.5 * h * (pd0 + pd1);
                pd0 = pd1;
            }
            /* the impulse the scheme applies: its pseudo-wrench, by the recurrence the pseudo-acceleration follows */
            for (int i = 0; i < 6; ++i) {
                const double bar = ((1.0 - af) * W[i] + af * G->wrench[i] - am * G->wrench[6 + i]) / (1.0 - am);
                J[i] += h * ((1.0 - o->gamma) * G->wrench[6 + i] + o->gamma * bar);
                G->wrench[i] = W[i], G->wrench[6 + i] = bar;
            }
            t += h;
            ga_count(G->stats, it, h, lastdv);
            if (o->adaptive) ga_grow(o, err, h, landed, &hp);
            G->stats[6] = o->adaptive ? hp : h;
            sim_lap(timers, 4, &mark);
        }
        if (G->status) break;
        if (stride > 0 && (k + 1) % stride == 0) {
            memcpy(traj_q + nrec * nq, q, sizeof(double) * nq);
            memcpy(traj_qd + nrec * nv, qd, sizeof(double) * nv);
            sim_record(m, sc, q, qd, w, W, J, traj_aux + nrec * MD_AUX);
            traj_aux[nrec * MD_AUX + 24] = wc;
            md_drive_record(m->drv, nrec);
            ++nrec;
            if (timers) mark = sim_now();
        }
    }
    ga_free(&gw);
    *work = w, *work_contact = wc;
    for (int i = 0; i < 6; ++i) impulse[i] = J[i];
    *done = k;
    return nrec;
}

/* Step (q, qd) in place by semi-implicit Euler (scheme 0), Störmer–Verlet (1) or generalized-α (2, with its
 * settings in sc->ga; nothing is stepped without them), with contact: kinematics, the producers, the brakes,
 * fwd_dyn, the drift. tau and act are schedules of nsched samples dt_sched apart, held
 * between samples (the index clamped into range); act may be NULL. *work accumulates the dissipated work of the
 * model's dampers and the brakes (trapezoidal on the step's end powers), *impulse (6) the ground's wrench times
 * dt. Every stride-th state is recorded into traj_q, traj_qd and traj_aux (MD_AUX per row). Stops at the first
 * step whose state or work is not finite, or (generalized-α) whose Newton fails or whose adaptive step falls below
 * dt_min: sc->ga->status says which; *done is the steps (output intervals) completed. timers (5, s: kinematics,
 * band, ground, dynamics, integration) accumulate when not NULL. Returns the rows recorded. */
long md_sim_contact(const md_plant *m, const md_scene *sc, int scheme, long nsteps, double t0, double dt, double *q,
                    double *qd, double *qdd_prev, int nsched, double dt_sched, const double *tau, const double *act,
                    long stride, double *traj_q, double *traj_qd, double *traj_aux, double *work, double *impulse,
                    double *work_contact, long *done, double *timers)
{
    if (scheme == 2 && !sc->ga) {
        *done = 0;
        return 0;
    }
    if (scheme == 2)
        return sim_contact_galpha(m, sc, nsteps, t0, dt, q, qd, qdd_prev, nsched, dt_sched, tau, act, stride, traj_q,
                                  traj_qd, traj_aux, work, impulse, work_contact, done, timers);
    const int nv = m->nv, na = m->nact > 0 ? m->nact : 1;
    double *qdd = sc->qdd, *qdm = sc->qdm, W[6], J[6], w = *work, p0 = sim_power(m, sc, q, qd), wc = *work_contact;
    double mark = timers ? sim_now() : 0.0;
    long nrec = 0, k;
    for (int i = 0; i < 6; ++i) J[i] = impulse[i];
    for (k = 0; k < nsteps; ++k) {
        const double at = nsched > 1 ? (t0 + k * dt) / dt_sched : 0.0;
        const long s = at >= (double)(nsched - 1) ? (long)nsched - 1 : at > 0.0 ? (long)at : 0;
        const double *ac = act ? act + s * na : 0;
        double *qv = qd;
        const double t = t0 + (scheme == 0 ? k : k + 0.5) * dt;
        if (scheme != 0) {
            m->drift(q, qd, 0.5 * dt);
            if (sc->predictor) {
                for (int i = 0; i < nv; ++i) qdm[i] = qd[i] + qdd_prev[i] * 0.5 * dt;
                qv = qdm;
            }
            sim_lap(timers, 4, &mark);
        }
        /* the driven coordinates where their schedules put them at the force's time */
        if (m->drv) ac = md_drive(m->drv->d, m->drv->n, m->nact, t, ac, m->drv->act, q, qv);
        sim_rhs(m, sc, q, qv, dt, t, tau + s * nv, ac, qdd, W, timers, &mark);
        if (m->drv) m->drv->work[0] += dt * md_drive_power(m->drv->d, m->drv->n, qv, m->drv->r);
        /* at the state the forces were evaluated at, over the step: the midpoint rule of the force's own time */
        const double pc = sc->dissipation ? sim_dissipated(m, sc, dt, sim_ramp(sc->ramp_ground, t),
                                                           sim_ramp(sc->ramp_band, t)) : 0.0;
        for (int i = 0; i < nv; ++i) qd[i] += qdd[i] * dt, qdd_prev[i] = qdd[i];
        m->drift(q, qd, scheme == 0 ? dt : 0.5 * dt);
        if (m->drv) md_drive(m->drv->d, m->drv->n, m->nact, t0 + (k + 1) * dt, NULL, m->drv->act, q, qd);
        double p1 = sim_power(m, sc, q, qd), w1 = w + 0.5 * dt * (p0 + p1), sum = w1;
        for (int i = 0; i < m->nq; ++i) sum += q[i];
        for (int i = 0; i < nv; ++i) sum += qd[i];
        if (!ga_finite(sum)) break;
        w = w1, p0 = p1, wc += pc * dt;
        for (int i = 0; i < 6; ++i) J[i] += W[i] * dt;
        sim_lap(timers, 4, &mark);
        if (stride > 0 && (k + 1) % stride == 0) {
            memcpy(traj_q + nrec * m->nq, q, sizeof(double) * m->nq);
            memcpy(traj_qd + nrec * nv, qd, sizeof(double) * nv);
            if (m->drv) {  /* the reactions at the recorded state itself (the step's were at its force time), with
                            * the step's contact wrenches (before sim_record uses sc->fext as scratch) */
                const double *ae = md_drive(m->drv->d, m->drv->n, m->nact, t0 + (k + 1) * dt, act ? act + s * na : 0,
                                            m->drv->act, NULL, NULL);
                m->drv->react(q, qd, sc->tau, sc->fext, ae, qdm, m->drv->r);
            }
            sim_record(m, sc, q, qd, w, W, J, traj_aux + nrec * MD_AUX);
            traj_aux[nrec * MD_AUX + 24] = wc;
            md_drive_record(m->drv, nrec);
            ++nrec;
            if (timers) mark = sim_now();
        }
    }
    *work = w, *work_contact = wc;
    for (int i = 0; i < 6; ++i) impulse[i] = J[i];
    *done = k;
    return nrec;
}
