/* The stepping loop with contact (docs/simulation.md): at every step the generated body kinematics, both
 * contact producers (band.c, ground.c, compiled into this translation unit), the sprocket brakes, the generated
 * forward dynamics and the drift, with no Python in between. The generated functions are called through
 * pointers (Dynamics.address), so one compiled loop serves every model. */
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
    const md_brake *brakes;
    int nbrake;
    double ramp_band, ramp_ground;  /* s: each producer's wrenches are scaled by t / ramp until then (0: none) */
    int predictor;              /* Verlet: evaluate at qd + qdd_prev·dt/2 (1) or at qd (0) */
    double *X, *fext, *fband;   /* workspaces: nbody × 18, nbody × 6, nbody × 6 */
    double *torque;             /* workspace: the rollers of all bands (at least 1) */
    double *tau, *qdd, *qdm;    /* workspaces: nv each */
    int dissipation;            /* integrate the contact's dissipated power into *work_contact (1) or not (0) */
    double *Xs, *fstat, *astat; /* its workspaces: nbody × 18, nbody × 6, the anchors' copy (ncorner × 4) */
} md_scene;

enum { MD_AUX = 25 };  /* doubles per recorded row of aux, in this order: */
/* work, ground wrench (6: moment about the world origin, force; the step's, as applied), ground impulse (6, since
 * the call's start plus *impulse's), pin depth, pins, face depth, faces, ground depth, corners (md_band_depth,
 * md_ground_depth), band potential, ground potential, anchor springs, brake springs (J), crush (md_band_depth's
 * fraction of the crush depth), the contact's dissipated work (J, with sc->dissipation; since *work_contact's) */

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

/* The contact wrenches at (q, qd) and time t into sc->fext, each producer's ramped; the ground's total wrench
 * (as applied) into W. Timed as kinematics (0), band (1), ground (2). */
static void sim_contact(const md_plant *m, const md_scene *sc, const double *q, const double *qd, double dt, double t,
                        double *W, double *timers, double *mark)
{
    const double sg = sim_ramp(sc->ramp_ground, t), sb = sim_ramp(sc->ramp_band, t);
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
    if (sb == 1.0) {
        md_band_fext(sc->bands, sc->nband, sc->X, dt, sc->fext, sc->torque);
    } else {  /* ramping in: the band's share alone scaled, from its own array */
        memset(sc->fband, 0, sizeof(double) * 6 * m->nbody);
        md_band_fext(sc->bands, sc->nband, sc->X, dt, sc->fband, sc->torque);
        for (int i = 0; i < 6 * m->nbody; ++i) sc->fext[i] += sb * sc->fband[i];
    }
    sim_lap(timers, 1, mark);
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
    aux[17] = aux[18] = aux[19] = aux[20] = aux[21] = 0.0;
    /* the potentials, from the producers at dt 0 into the scratch fext (their forces are not used) */
    memset(sc->fext, 0, sizeof(double) * 6 * m->nbody);
    aux[19] = md_band_fext(sc->bands, sc->nband, sc->X, 0.0, sc->fext, sc->torque);
    if (sc->ground) {
        md_ground_depth(sc->ground, sc->X, aux + 17);
        aux[20] = md_ground_fext(sc->ground, sc->X, 0.0, NULL, sc->fext);
        if (sc->anchors) aux[21] = md_ground_anchor_energy(sc->ground, sc->X, sc->anchors);
    }
    aux[22] = sim_brake_energy(sc, q);
}

/* x is neither inf nor NaN, read from its exponent bits (isfinite() may fold to 1 under -ffinite-math-only) */
static int sim_finite(double x)
{
    unsigned long long bits;
    memcpy(&bits, &x, sizeof bits);
    return (bits & 0x7ff0000000000000ULL) != 0x7ff0000000000000ULL;
}

/* Step (q, qd) in place by semi-implicit Euler (scheme 0) or Störmer–Verlet (1), with contact: kinematics, the
 * producers, the brakes, fwd_dyn, the drift. tau and act are schedules of nsched samples dt_sched apart, held
 * between samples (the index clamped into range); act may be NULL. *work accumulates the dissipated work of the
 * model's dampers and the brakes (trapezoidal on the step's end powers), *impulse (6) the ground's wrench times
 * dt. Every stride-th state is recorded into traj_q, traj_qd and traj_aux (MD_AUX per row). Stops at the first
 * step whose state or work is not finite; *done is the steps completed. timers (5, s: kinematics, band, ground,
 * dynamics, integration) accumulate when not NULL. Returns the rows recorded. */
long md_sim_contact(const md_plant *m, const md_scene *sc, int scheme, long nsteps, double t0, double dt, double *q,
                    double *qd, double *qdd_prev, int nsched, double dt_sched, const double *tau, const double *act,
                    long stride, double *traj_q, double *traj_qd, double *traj_aux, double *work, double *impulse,
                    double *work_contact, long *done, double *timers)
{
    const int nv = m->nv, na = m->nact > 0 ? m->nact : 1;
    double *qdd = sc->qdd, *qdm = sc->qdm, W[6], J[6], w = *work, p0 = sim_power(m, sc, q, qd), wc = *work_contact;
    double mark = timers ? sim_now() : 0.0;
    long nrec = 0, k;
    for (int i = 0; i < 6; ++i) J[i] = impulse[i];
    for (k = 0; k < nsteps; ++k) {
        const double at = nsched > 1 ? (t0 + k * dt) / dt_sched : 0.0;
        const long s = at >= (double)(nsched - 1) ? (long)nsched - 1 : at > 0.0 ? (long)at : 0;
        const double *ac = act ? act + s * na : 0, *qv = qd;
        const double t = t0 + (scheme == 0 ? k : k + 0.5) * dt;
        if (scheme != 0) {
            m->drift(q, qd, 0.5 * dt);
            if (sc->predictor) {
                for (int i = 0; i < nv; ++i) qdm[i] = qd[i] + qdd_prev[i] * 0.5 * dt;
                qv = qdm;
            }
            sim_lap(timers, 4, &mark);
        }
        sim_contact(m, sc, q, qv, dt, t, W, timers, &mark);
        /* at the state the forces were evaluated at, over the step: the midpoint rule of the force's own time */
        const double pc = sc->dissipation ? sim_dissipated(m, sc, dt, sim_ramp(sc->ramp_ground, t),
                                                           sim_ramp(sc->ramp_band, t)) : 0.0;
        memcpy(sc->tau, tau + s * nv, sizeof(double) * nv);
        sim_brakes(sc, q, qv, sc->tau);
        m->fwd_dyn(q, qv, sc->tau, sc->fext, ac, qdd);
        sim_lap(timers, 3, &mark);
        for (int i = 0; i < nv; ++i) qd[i] += qdd[i] * dt, qdd_prev[i] = qdd[i];
        m->drift(q, qd, scheme == 0 ? dt : 0.5 * dt);
        double p1 = sim_power(m, sc, q, qd), w1 = w + 0.5 * dt * (p0 + p1), sum = w1;
        for (int i = 0; i < m->nq; ++i) sum += q[i];
        for (int i = 0; i < nv; ++i) sum += qd[i];
        if (!sim_finite(sum)) break;
        w = w1, p0 = p1, wc += pc * dt;
        for (int i = 0; i < 6; ++i) J[i] += W[i] * dt;
        sim_lap(timers, 4, &mark);
        if (stride > 0 && (k + 1) % stride == 0) {
            memcpy(traj_q + nrec * m->nq, q, sizeof(double) * m->nq);
            memcpy(traj_qd + nrec * nv, qd, sizeof(double) * nv);
            sim_record(m, sc, q, qd, w, W, J, traj_aux + nrec * MD_AUX);
            traj_aux[nrec * MD_AUX + 24] = wc;
            ++nrec;
            if (timers) mark = sim_now();
        }
    }
    *work = w, *work_contact = wc;
    for (int i = 0; i < 6; ++i) impulse[i] = J[i];
    *done = k;
    return nrec;
}
