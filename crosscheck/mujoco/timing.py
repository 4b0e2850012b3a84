"""MuJoCo's forward pass timed in a compiled C loop, for `crosscheck bench --peers`.

The C program loads the exported MJCF with mj_loadXML from the libmujoco that
ships in the mujoco wheel, and calls mj_forward over a pool of states (qpos,
qvel, qfrc_applied, xfrc_applied, ctrl copied into mjData before each call).
Equality constraints are disabled, so for a loop model MuJoCo runs the spanning
tree (with its tendons and joint springs), as Pinocchio's ABA does.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from mechdyn.core.sample import State
from mechdyn.export import mjcf

from . import MjModel, xfrc

SOURCE = r"""/* mj_forward over a pool of states (crosscheck bench --peers; crosscheck/mujoco/timing.py).
 * usage: mj_timing MODEL.xml POOL.bin NPOOL NCALLS REPEATS
 * POOL.bin: NPOOL records of qpos[nq] qvel[nv] qfrc_applied[nv] xfrc_applied[6 nbody] ctrl[nu].
 * prints: the best ns/call over REPEATS timed loops, and a checksum. callgrind: --toggle-collect=peer_loop */
#include <mujoco/mujoco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

__attribute__((noinline)) double peer_loop(const mjModel *m, mjData *d, const double *pool, long npool, long rec, long ncalls)
{
    double sum = 0.0;
    for (long c = 0; c < ncalls; ++c) {
        const double *r = pool + (c % npool) * rec;
        memcpy(d->qpos, r, sizeof(double) * m->nq);
        memcpy(d->qvel, r + m->nq, sizeof(double) * m->nv);
        memcpy(d->qfrc_applied, r + m->nq + m->nv, sizeof(double) * m->nv);
        memcpy(d->xfrc_applied, r + m->nq + 2 * m->nv, sizeof(double) * 6 * m->nbody);
        if (m->nu) memcpy(d->ctrl, r + m->nq + 2 * m->nv + 6 * m->nbody, sizeof(double) * m->nu);
        mj_forward(m, d);
        sum += d->qacc[c % m->nv];
    }
    return sum;
}

int main(int argc, char **argv)
{
    if (argc != 6) { fprintf(stderr, "usage: %s MODEL.xml POOL.bin NPOOL NCALLS REPEATS\n", argv[0]); return 2; }
    char err[1000];
    mjModel *m = mj_loadXML(argv[1], NULL, err, sizeof err);
    if (!m) { fprintf(stderr, "%s: %s\n", argv[1], err); return 3; }
    m->opt.disableflags |= mjDSBL_EQUALITY | mjDSBL_CONTACT;
    mjData *d = mj_makeData(m);
    long npool = atol(argv[3]), ncalls = atol(argv[4]), repeats = atol(argv[5]);
    long rec = m->nq + 2L * m->nv + 6L * m->nbody + m->nu;
    double *pool = malloc(sizeof(double) * (size_t)(npool * rec));
    FILE *f = fopen(argv[2], "rb");
    if (!f || !pool || fread(pool, sizeof(double), (size_t)(npool * rec), f) != (size_t)(npool * rec)) {
        fprintf(stderr, "%s: short pool\n", argv[2]);
        return 4;
    }
    fclose(f);
    double best = 1e300, sum = 0.0;
    for (long r = 0; r < repeats; ++r) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        sum = peer_loop(m, d, pool, npool, rec, ncalls);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ns = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (double)ncalls;
        if (ns < best) best = ns;
    }
    printf("%.6g %.17g\n", best, sum);
    mj_deleteData(d);
    mj_deleteModel(m);
    return 0;
}
"""


def library() -> tuple[Path, Path]:
    """The mujoco wheel's include directory and libmujoco shared library."""
    import mujoco

    root = Path(mujoco.__file__).parent
    libs = sorted(root.glob("libmujoco.so*"))
    if not (root / "include" / "mujoco" / "mujoco.h").is_file() or not libs:
        raise RuntimeError(f"the mujoco wheel at {root} has no include/mujoco/mujoco.h or libmujoco.so")
    return root / "include", libs[0]


def link_args() -> list[str]:
    inc, lib = library()
    return [f"-I{inc}", str(lib), f"-Wl,-rpath,{lib.parent}"]


def pool_bytes(mm: MjModel, pool: list[State]) -> bytes:
    """Records of qpos, qvel, qfrc_applied, xfrc_applied (every MuJoCo body) and ctrl, in MuJoCo's terms."""
    import mujoco

    model, mj, d = mm.model, mm.mj, mm.data
    recs = []
    for s in pool:
        qpos, qvel, qfrc = mjcf.to_mujoco(model, mm.layout, mj.nq, mj.nv, s.q, s.qd, s.tau)
        d.qpos[:] = qpos
        mujoco.mj_kinematics(mj, d)
        xf = xfrc(mm, s.fext)
        ctrl = np.asarray(s.act, dtype=float) if mj.nu else np.zeros(0)
        recs.append(np.concatenate([qpos, qvel, qfrc, xf.ravel(), ctrl]))
    return np.ascontiguousarray(recs, dtype=np.float64).tobytes()


def expected(mm: MjModel, pool: list[State]) -> np.ndarray:
    """What the timing program computes for each pool state: qacc in MuJoCo's coordinates, equality constraints
    and contacts disabled, as the program sets them."""
    import mujoco

    mj, d = mm.mj, mm.data
    saved = mj.opt.disableflags
    mj.opt.disableflags = saved | mujoco.mjtDisableBit.mjDSBL_EQUALITY | mujoco.mjtDisableBit.mjDSBL_CONTACT
    try:
        rec = np.frombuffer(pool_bytes(mm, pool), dtype=np.float64).reshape(len(pool), -1)
        out = []
        for r in rec:
            d.qpos[:], d.qvel[:], d.qfrc_applied[:] = r[: mj.nq], r[mj.nq : mj.nq + mj.nv], r[mj.nq + mj.nv : mj.nq + 2 * mj.nv]
            k = mj.nq + 2 * mj.nv
            d.xfrc_applied[:] = r[k : k + 6 * mj.nbody].reshape(mj.nbody, 6)
            d.ctrl[:] = r[k + 6 * mj.nbody :]
            mujoco.mj_forward(mj, d)
            out.append(d.qacc.copy())
    finally:
        mj.opt.disableflags = saved
    return np.array(out)
