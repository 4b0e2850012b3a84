"""Pinocchio's ABA (and its derivatives, computeABADerivatives) timed in a compiled C++ loop, for
`crosscheck bench --peers [--derivatives]`.

The model is the one `crosscheck.pinocchio.build` loads from the exported URDF,
transcribed joint by joint (type, parent, placement, spatial inertia, all
written with repr so they read back exactly) into a small text file that the
C++ program rebuilds with `addJoint` / `appendBodyToJoint`. Pinocchio is used
header-only: its templates are instantiated in the timing program, compiled
with -O3 -march=native -mno-avx512f -fno-math-errno (the generated code's
flags, at -O3), because -march=native code cannot be mixed with the wheel's
prebuilt instances (Eigen's alignment differs), and valgrind cannot decode
AVX-512 (turning it off changed Pinocchio's time by less than the noise).
"""
from __future__ import annotations

import site
import sys
from pathlib import Path

import numpy as np

from mechdyn.core.sample import State

from . import PinModel, accel, kinematics, local_fext, to_pin

LOOPS = ["spherical", "revolute", "prismatic", "cylindrical", "point-on-line", "distance"]  # the program's LoopKind
JOINTS = {"JointModelRX": 0, "JointModelRY": 1, "JointModelRZ": 2,
          "JointModelPX": 3, "JointModelPY": 4, "JointModelPZ": 5, "JointModelFreeFlyer": 6,
          "JointModelRevoluteUnaligned": 7, "JointModelPrismaticUnaligned": 8}  # the last two carry their axis

SOURCE = r"""// Pinocchio's forward dynamics over a pool of states (crosscheck bench --peers; crosscheck/pinocchio/timing.py).
// usage: pin_timing MODEL.txt POOL.bin NPOOL NCALLS REPEATS METHOD [cpu]
//   METHOD 0: ABA, local convention; 1: ABA, world convention (the spanning tree only, loops ignored);
//   2: the closed loops: computeAllTerms, the closure rows J and gamma from frame Jacobians and classical
//      accelerations, then forwardDynamics(tau, J, gamma) (Cholesky of M, then of J M^-1 J^T);
//   3: computeABADerivatives (the spanning tree): ddq_dq, ddq_dv and Minv's upper triangle.
// prints: the best ns/call over REPEATS timed loops of NCALLS calls (wall clock; with "cpu", the thread's CPU
// clock, which a shared machine's preemption does not advance), and a checksum.
// Under callgrind, --toggle-collect=peer_loop (or peer_loop_closed, peer_loop_derivs) counts the instructions of
// the loop alone.
#include <pinocchio/algorithm/aba-derivatives.hpp>
#include <pinocchio/algorithm/aba.hpp>
#include <pinocchio/algorithm/compute-all-terms.hpp>
#include <pinocchio/algorithm/contact-dynamics.hpp>
#include <pinocchio/algorithm/frames.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

using namespace pinocchio;

struct Pool {
  std::vector<Eigen::VectorXd> q, v, tau;
  std::vector<std::vector<Force>> fext;
  bool with_fext;
};

// a loop closure as docs/conventions.md defines it: anchors P on the predecessor, S on the successor
enum LoopKind { SPHERICAL, REVOLUTE, PRISMATIC, CYLINDRICAL, POINT_ON_LINE, DISTANCE };
struct Loop {
  int kind;
  JointIndex pj, sj;
  SE3 pM, sM;           // the anchors' placements in their joints' frames
  Eigen::Matrix3d T;    // the loop's triad (u, w, axis) in the anchors' frames
  double length;        // distance loops
};
struct Loops {
  std::vector<Loop> loops;
  double alpha = 0.0;   // 1 / stab: Baumgarte's rate
  int rows = 0;
};

static Model read_model(const char *path, bool *with_fext, Loops *lp) {
  FILE *f = std::fopen(path, "r");
  if (!f) { std::perror(path); std::exit(3); }
  Model model;
  double g[3];
  int nj, fx;
  if (std::fscanf(f, "%lf %lf %lf %d %d", &g[0], &g[1], &g[2], &nj, &fx) != 5) { std::fprintf(stderr, "bad model\n"); std::exit(3); }
  model.gravity.linear(Eigen::Vector3d(g[0], g[1], g[2]));
  *with_fext = fx != 0;
  for (int j = 1; j <= nj; ++j) {
    int type, parent;
    double a[3], R[9], p[3], m, c[3], I[9];
    if (std::fscanf(f, "%d %d", &type, &parent) != 2) std::exit(3);
    for (double &x : a) if (std::fscanf(f, "%lf", &x) != 1) std::exit(3);
    for (double &x : R) if (std::fscanf(f, "%lf", &x) != 1) std::exit(3);
    for (double &x : p) if (std::fscanf(f, "%lf", &x) != 1) std::exit(3);
    if (std::fscanf(f, "%lf", &m) != 1) std::exit(3);
    for (double &x : c) if (std::fscanf(f, "%lf", &x) != 1) std::exit(3);
    for (double &x : I) if (std::fscanf(f, "%lf", &x) != 1) std::exit(3);
    Eigen::Matrix3d Rm;
    Rm << R[0], R[1], R[2], R[3], R[4], R[5], R[6], R[7], R[8];
    SE3 M(Rm, Eigen::Vector3d(p[0], p[1], p[2]));
    Eigen::Matrix3d Im;
    Im << I[0], I[1], I[2], I[3], I[4], I[5], I[6], I[7], I[8];
    JointIndex id;
    std::string name = "j" + std::to_string(j);
    switch (type) {
      case 0: id = model.addJoint(parent, JointModelRX(), M, name); break;
      case 1: id = model.addJoint(parent, JointModelRY(), M, name); break;
      case 2: id = model.addJoint(parent, JointModelRZ(), M, name); break;
      case 3: id = model.addJoint(parent, JointModelPX(), M, name); break;
      case 4: id = model.addJoint(parent, JointModelPY(), M, name); break;
      case 5: id = model.addJoint(parent, JointModelPZ(), M, name); break;
      case 6: id = model.addJoint(parent, JointModelFreeFlyer(), M, name); break;
      case 7: id = model.addJoint(parent, JointModelRevoluteUnaligned(Eigen::Vector3d(a[0], a[1], a[2])), M, name);
        break;
      case 8: id = model.addJoint(parent, JointModelPrismaticUnaligned(Eigen::Vector3d(a[0], a[1], a[2])), M, name);
        break;
      default: std::fprintf(stderr, "unknown joint type %d\n", type); std::exit(3);
    }
    model.appendBodyToJoint(id, Inertia(m, Eigen::Vector3d(c[0], c[1], c[2]), Im), SE3::Identity());
  }
  int nl;
  if (std::fscanf(f, "%d %lf", &nl, &lp->alpha) != 2) std::exit(3);
  static const int rows[] = {3, 5, 5, 4, 2, 1};
  for (int k = 0; k < nl; ++k) {
    Loop L;
    int pj, sj;
    double pp[3], sp[3], T[9];
    if (std::fscanf(f, "%d %d %lf %lf %lf %d %lf %lf %lf", &L.kind, &pj, &pp[0], &pp[1], &pp[2], &sj, &sp[0], &sp[1],
                    &sp[2]) != 9 || L.kind < 0 || L.kind > DISTANCE) std::exit(3);
    for (double &x : T) if (std::fscanf(f, "%lf", &x) != 1) std::exit(3);
    if (std::fscanf(f, "%lf", &L.length) != 1) std::exit(3);
    L.pj = pj, L.sj = sj;
    L.pM = SE3(Eigen::Matrix3d::Identity(), Eigen::Vector3d(pp[0], pp[1], pp[2]));
    L.sM = SE3(Eigen::Matrix3d::Identity(), Eigen::Vector3d(sp[0], sp[1], sp[2]));
    L.T << T[0], T[1], T[2], T[3], T[4], T[5], T[6], T[7], T[8];
    lp->loops.push_back(L);
    lp->rows += rows[L.kind];
  }
  std::fclose(f);
  return model;
}

// the closure rows' workspace, allocated once: the timed loop allocates nothing
struct RowsWork {
  Data::Matrix6x Jp, Js;                   // the anchors' frame Jacobians
  Eigen::Matrix<double, 3, Eigen::Dynamic> dJ, dJw;  // their linear and angular differences
  explicit RowsWork(int nv) : Jp(6, nv), Js(6, nv), dJ(3, nv), dJw(3, nv) {}
};

// the closure rows at the state computeAllTerms left in data: J ddq + gamma = 0 holds them
// (gamma: the rows' second derivative at zero ddq plus the Baumgarte terms 2 alpha J v + alpha^2 phi)
static void closure_rows(const Model &model, Data &data, const Loops &lp, const Eigen::VectorXd &v, RowsWork &w,
                         Eigen::MatrixXd &J, Eigen::VectorXd &gamma) {
  using V3 = Eigen::Vector3d;
  const ReferenceFrame rf = LOCAL_WORLD_ALIGNED;
  int r = 0;
  for (const Loop &L : lp.loops) {
    const SE3 oMp = data.oMi[L.pj] * L.pM, oMs = data.oMi[L.sj] * L.sM;
    w.Jp.setZero(), w.Js.setZero();
    getFrameJacobian(model, data, L.pj, L.pM, rf, w.Jp);
    getFrameJacobian(model, data, L.sj, L.sM, rf, w.Js);
    const Motion Vp = getFrameVelocity(model, data, L.pj, L.pM, rf), Vs = getFrameVelocity(model, data, L.sj, L.sM, rf);
    const Motion Ap = getFrameClassicalAcceleration(model, data, L.pj, L.pM, rf);
    const Motion As = getFrameClassicalAcceleration(model, data, L.sj, L.sM, rf);
    const V3 wp = Vp.angular(), ws = Vs.angular(), alp = Ap.angular(), als = As.angular();
    const V3 d = oMs.translation() - oMp.translation(), dd = Vs.linear() - Vp.linear(), d2 = As.linear() - Ap.linear();
    w.dJ.noalias() = w.Js.topRows<3>() - w.Jp.topRows<3>();
    w.dJw.noalias() = w.Js.bottomRows<3>() - w.Jp.bottomRows<3>();
    auto done = [&](double g, double phi) {  // row r of J is written: its gamma
      gamma(r) = g + 2.0 * lp.alpha * J.row(r).dot(v) + lp.alpha * lp.alpha * phi;
      ++r;
    };
    auto sep = [&](const V3 &e) {  // e.d, e fixed to the predecessor
      const V3 ed = wp.cross(e), edd = alp.cross(e) + wp.cross(ed);
      J.row(r).noalias() = e.transpose() * w.dJ;
      J.row(r).noalias() += e.cross(d).transpose() * w.Jp.bottomRows<3>();
      done(edd.dot(d) + 2.0 * ed.dot(dd) + e.dot(d2), e.dot(d));
    };
    auto dirs = [&](const V3 &e1, const V3 &e2) {  // e1 on the predecessor, e2 on the successor
      const V3 e1d = wp.cross(e1), e2d = ws.cross(e2);
      const V3 e1dd = alp.cross(e1) + wp.cross(e1d), e2dd = als.cross(e2) + ws.cross(e2d);
      J.row(r).noalias() = e2.cross(e1).transpose() * w.dJw;
      done(e1dd.dot(e2) + 2.0 * e1d.dot(e2d) + e1.dot(e2dd), e1.dot(e2));
    };
    const Eigen::Matrix3d Tp = oMp.rotation() * L.T, Ts = oMs.rotation() * L.T;
    const V3 u = Tp.col(0), wv = Tp.col(1), ws_ = Ts.col(1), as = Ts.col(2);
    switch (L.kind) {
      case SPHERICAL: for (int k = 0; k < 3; ++k) sep(oMp.rotation().col(k)); break;
      case REVOLUTE: for (int k = 0; k < 3; ++k) sep(oMp.rotation().col(k)); dirs(u, as); dirs(wv, as); break;
      case PRISMATIC: sep(u); sep(wv); dirs(u, as); dirs(wv, as); dirs(u, ws_); break;
      case CYLINDRICAL: sep(u); sep(wv); dirs(u, as); dirs(wv, as); break;
      case POINT_ON_LINE: sep(u); sep(wv); break;
      case DISTANCE:
        J.row(r).noalias() = d.transpose() * w.dJ;
        done(dd.dot(dd) + d.dot(d2), 0.5 * (d.dot(d) - L.length * L.length));
        break;
    }
  }
}

// tau plus the external forces as joint torques: the sum of J_i^T f_i, J_i joint i's local Jacobian
static void add_fext(const Model &model, const Data &data, const std::vector<Force> &fext, Eigen::VectorXd &tau,
                     Data::Matrix6x &Ji) {
  for (JointIndex i = 1; i < (JointIndex)model.njoints; ++i) {
    Ji.setZero();
    getJointJacobian(model, data, i, LOCAL, Ji);
    tau.noalias() += Ji.transpose() * fext[i].toVector();
  }
}

// one timed (or counted) loop of ABA: the only code callgrind counts
extern "C" __attribute__((noinline)) double peer_loop(const Model *model, Data *data, const Pool *pool, long ncalls,
                                                      int world) {
  const long npool = (long)pool->q.size();
  const Convention conv = world ? Convention::WORLD : Convention::LOCAL;
  double sum = 0.0;
  for (long c = 0; c < ncalls; ++c) {
    const long k = c % npool;
    if (pool->with_fext) aba(*model, *data, pool->q[k], pool->v[k], pool->tau[k], pool->fext[k], conv);
    else aba(*model, *data, pool->q[k], pool->v[k], pool->tau[k], conv);
    sum += data->ddq[c % model->nv];
  }
  return sum;
}

// the same with the loops closed: computeAllTerms, the closure rows, forwardDynamics (Cholesky of M, then of
// J M^-1 J^T). It is marked unsupported, but Pinocchio's supported route (RigidConstraintModel) has no distance
// or point-on-line closures, and this one takes any constraint Jacobian.
extern "C" __attribute__((noinline)) double peer_loop_closed(const Model *model, Data *data, const Pool *pool,
                                                             long ncalls, const Loops *lp) {
  const long npool = (long)pool->q.size();
  Eigen::MatrixXd J = Eigen::MatrixXd::Zero(lp->rows, model->nv);
  Eigen::VectorXd gamma(lp->rows), tau(model->nv);
  Data::Matrix6x Ji(6, model->nv);
  RowsWork work(model->nv);
  double sum = 0.0;
  for (long c = 0; c < ncalls; ++c) {
    const long k = c % npool;
    computeAllTerms(*model, *data, pool->q[k], pool->v[k]);
    closure_rows(*model, *data, *lp, pool->v[k], work, J, gamma);
    tau = pool->tau[k];
    if (pool->with_fext) add_fext(*model, *data, pool->fext[k], tau, Ji);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    forwardDynamics(*model, *data, tau, J, gamma);
#pragma GCC diagnostic pop
    sum += data->ddq[c % model->nv];
  }
  return sum;
}

// one timed (or counted) loop of computeABADerivatives; the checksum's term of call c is entry e = c mod nv^2
// (row r, column s) of ddq_dq + ddq_dv + Minv, Minv read from its upper triangle (all that Pinocchio fills)
extern "C" __attribute__((noinline)) double peer_loop_derivs(const Model *model, Data *data, const Pool *pool,
                                                             long ncalls) {
  const long npool = (long)pool->q.size(), nv = model->nv;
  double sum = 0.0;
  for (long c = 0; c < ncalls; ++c) {
    const long k = c % npool, e = c % (nv * nv), r = e / nv, s = e % nv;
    if (pool->with_fext) computeABADerivatives(*model, *data, pool->q[k], pool->v[k], pool->tau[k], pool->fext[k]);
    else computeABADerivatives(*model, *data, pool->q[k], pool->v[k], pool->tau[k]);
    sum += data->ddq_dq(r, s) + data->ddq_dv(r, s) + data->Minv(std::min(r, s), std::max(r, s));
  }
  return sum;
}

int main(int argc, char **argv) {
  if (argc != 7 && !(argc == 8 && std::string(argv[7]) == "cpu")) {
    std::fprintf(stderr, "usage: %s MODEL.txt POOL.bin NPOOL NCALLS REPEATS METHOD [cpu]\n", argv[0]);
    return 2;
  }
  const clockid_t clock = argc == 8 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
  Pool pool;
  Loops loops;
  Model model = read_model(argv[1], &pool.with_fext, &loops);
  Data data(model);
  const long npool = std::atol(argv[3]), ncalls = std::atol(argv[4]), repeats = std::atol(argv[5]);
  const int method = std::atoi(argv[6]);
  if (method == 2 && loops.loops.empty()) { std::fprintf(stderr, "method 2 needs loop closures\n"); return 2; }
  const long rec = model.nq + 2L * model.nv + 6L * model.njoints;
  std::vector<double> raw((size_t)(npool * rec));
  FILE *f = std::fopen(argv[2], "rb");
  if (!f || std::fread(raw.data(), sizeof(double), raw.size(), f) != raw.size()) { std::fprintf(stderr, "%s: short pool\n", argv[2]); return 4; }
  std::fclose(f);
  for (long k = 0; k < npool; ++k) {
    const double *r = raw.data() + k * rec;
    pool.q.push_back(Eigen::Map<const Eigen::VectorXd>(r, model.nq));
    pool.v.push_back(Eigen::Map<const Eigen::VectorXd>(r + model.nq, model.nv));
    pool.tau.push_back(Eigen::Map<const Eigen::VectorXd>(r + model.nq + model.nv, model.nv));
    std::vector<Force> fx;
    for (int j = 0; j < model.njoints; ++j) {
      const double *x = r + model.nq + 2 * model.nv + 6 * j;
      fx.push_back(Force(Eigen::Vector3d(x[0], x[1], x[2]), Eigen::Vector3d(x[3], x[4], x[5])));
    }
    pool.fext.push_back(fx);
  }
  double best = 1e300, sum = 0.0;
  for (long r = 0; r < repeats; ++r) {
    timespec t0, t1;
    clock_gettime(clock, &t0);
    sum = method == 2 ? peer_loop_closed(&model, &data, &pool, ncalls, &loops)
          : method == 3 ? peer_loop_derivs(&model, &data, &pool, ncalls)
                        : peer_loop(&model, &data, &pool, ncalls, method);
    clock_gettime(clock, &t1);
    const double ns = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (double)ncalls;
    if (ns < best) best = ns;
  }
  std::printf("%.6g %.17g\n", best, sum);
  return 0;
}
"""

DEFINES = ["-DBOOST_MPL_LIMIT_LIST_SIZE=30", "-DBOOST_MPL_LIMIT_VECTOR_SIZE=30",
           "-DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS", "-DBOOST_FUSION_INVOKE_MAX_ARITY=12"]


def include_dirs() -> list[str]:
    """Pinocchio's and boost's headers (the pin wheel's cmeel prefix) and Eigen's (cmeel-eigen, else the system's)."""
    prefixes = [Path(p) / "cmeel.prefix" for p in [*site.getsitepackages(), site.getusersitepackages(), *sys.path]]
    prefix = next((p for p in prefixes if (p / "include" / "pinocchio").is_dir()), None)
    if prefix is None:
        raise RuntimeError("Pinocchio's C++ headers were not found under site-packages/cmeel.prefix: pip install pin")
    eigen = next((d for d in (prefix / "include" / "eigen3", Path("/usr/include/eigen3"), Path("/usr/local/include/eigen3"))
                  if (d / "Eigen" / "Core").is_file()), None)
    if eigen is None:
        raise RuntimeError("Eigen's headers were not found (cmeel.prefix/include/eigen3 or /usr/include/eigen3): "
                           "pip install cmeel-eigen")
    return [f"-I{prefix / 'include'}", f"-I{eigen}"]


def model_text(pm: PinModel) -> str:
    """The Pinocchio model, joint by joint: gravity, njoints, fext flag, then per joint type, parent, axis (zeros
    but for an unaligned joint), placement (R row-major, p) and inertia (mass, lever, 3x3 about the CG); then the number of loops and
    Baumgarte's rate, and per loop its kind, each anchor's joint and position in it, the triad and the length."""
    pmod = pm.pmodel
    r = lambda a: " ".join(repr(float(x)) for x in np.asarray(a).ravel())  # noqa: E731
    lines = [f"{r(pmod.gravity.linear)} {pmod.njoints - 1} {int(pm.has_fext)}"]
    for j in range(1, pmod.njoints):
        kind = pmod.joints[j].shortname()
        if kind not in JOINTS:
            raise RuntimeError(f"joint {pmod.names[j]} is a {kind}: the timing program knows {', '.join(JOINTS)}")
        M, Y = pmod.jointPlacements[j], pmod.inertias[j]
        axis = pmod.joints[j].extract().axis if kind.endswith("Unaligned") else np.zeros(3)
        lines.append(f"{JOINTS[kind]} {pmod.parents[j]} {r(axis)} {r(M.rotation)} {r(M.translation)} "
                     f"{r([Y.mass])} {r(Y.lever)} {r(Y.inertia)}")
    lines.append(f"{len(pm.model.loops)} {r([1.0 / pm.model.stab])}")
    for lp, anchors in zip(pm.model.loops, pm.anchor_frames):
        ends = [f"{pmod.frames[f].parentJoint} {r(pmod.frames[f].placement.translation)}" for f in anchors]
        lines.append(f"{LOOPS.index(lp.joint)} {ends[0]} {ends[1]} {r(lp.triad)} {r([lp.length or 0.0])}")
    return "\n".join(lines) + "\n"


def pool_bytes(pm: PinModel, pool: list[State]) -> bytes:
    """Records of q, v, tau, then every joint's local external force [f; n] (joint 0 first), in Pinocchio's terms."""
    import pinocchio as pin

    recs = []
    for s in pool:
        qp, vp, tp = to_pin(pm, s.q, s.qd, s.tau)
        pin.forwardKinematics(pm.pmodel, pm.data, qp)
        fx = local_fext(pm, s.fext)
        recs.append(np.concatenate([qp, vp, tp, *[np.concatenate([f.linear, f.angular]) for f in fx]]))
    return np.ascontiguousarray(recs, dtype=np.float64).tobytes()


def expected(pm: PinModel, pool: list[State], closed: bool) -> np.ndarray:
    """What the timing program computes for each pool state, in Pinocchio's coordinates and without elements:
    ABA's ddq on the spanning tree, or (`closed`) the closed-loop ddq, both as the cross-check computes them."""
    out = []
    for s in pool:
        qp, vp, tp = to_pin(pm, s.q, s.qd, s.tau)
        kinematics(pm, qp, vp)
        out.append(accel(pm, qp, vp, tp, local_fext(pm, s.fext), closed))
    return np.array(out)


def expected_derivatives(pm: PinModel, pool: list[State]) -> np.ndarray:
    """The terms of method 3's checksum for each pool state, from Pinocchio's Python bindings on the same inputs
    (no elements, fext held in the joints' frames): entry r nv + s is ddq_dq + ddq_dv + Minv at (r, s), Minv
    symmetric from its upper triangle."""
    import pinocchio as pin

    pmod, data, out = pm.pmodel, pm.data, []
    for s in pool:
        qp, vp, tp = to_pin(pm, s.q, s.qd, s.tau)
        pin.forwardKinematics(pmod, data, qp)
        args = (local_fext(pm, s.fext),) if pm.has_fext else ()
        dq, dv, Minv = (np.array(x) for x in pin.computeABADerivatives(pmod, data, qp, vp, tp, *args))
        out.append((dq + dv + np.triu(Minv) + np.triu(Minv, 1).T).ravel())
    return np.array(out)
