"""Pinocchio's ABA timed in a compiled C++ loop, for `mechdyn bench --peers`.

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

from . import PinModel, local_fext, to_pin

JOINTS = {"JointModelRX": 0, "JointModelRY": 1, "JointModelRZ": 2,
          "JointModelPX": 3, "JointModelPY": 4, "JointModelPZ": 5, "JointModelFreeFlyer": 6}

SOURCE = r"""// Pinocchio's ABA over a pool of states (mechdyn bench --peers; crosscheck/pinocchio/timing.py).
// usage: pin_timing MODEL.txt POOL.bin NPOOL NCALLS REPEATS CONVENTION(0 local, 1 world)
// prints: the best ns/call over REPEATS timed loops of NCALLS calls, and a checksum.
// Under callgrind, --toggle-collect=peer_loop counts the instructions of the loop alone.
#include <pinocchio/algorithm/aba.hpp>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

using namespace pinocchio;

struct Pool {
  std::vector<Eigen::VectorXd> q, v, tau;
  std::vector<std::vector<Force>> fext;
  bool with_fext;
};

static Model read_model(const char *path, bool *with_fext) {
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
    double R[9], p[3], m, c[3], I[9];
    if (std::fscanf(f, "%d %d", &type, &parent) != 2) std::exit(3);
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
      default: std::fprintf(stderr, "unknown joint type %d\n", type); std::exit(3);
    }
    model.appendBodyToJoint(id, Inertia(m, Eigen::Vector3d(c[0], c[1], c[2]), Im), SE3::Identity());
  }
  std::fclose(f);
  return model;
}

// one timed (or counted) loop: the only code callgrind counts
extern "C" __attribute__((noinline)) double peer_loop(const Model *model, Data *data, const Pool *pool, long ncalls, int world) {
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

int main(int argc, char **argv) {
  if (argc != 7) { std::fprintf(stderr, "usage: %s MODEL.txt POOL.bin NPOOL NCALLS REPEATS CONVENTION\n", argv[0]); return 2; }
  Pool pool;
  Model model = read_model(argv[1], &pool.with_fext);
  Data data(model);
  const long npool = std::atol(argv[3]), ncalls = std::atol(argv[4]), repeats = std::atol(argv[5]);
  const int world = std::atoi(argv[6]);
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
    clock_gettime(CLOCK_MONOTONIC, &t0);
    sum = peer_loop(&model, &data, &pool, ncalls, world);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const double ns = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (double)ncalls;
    if (ns < best) best = ns;
  }
  std::printf("%.6g %.17g\n", best, sum);
  return 0;
}
"""

DEFINES = ["-DBOOST_MPL_LIMIT_LIST_SIZE=30", "-DBOOST_MPL_LIMIT_VECTOR_SIZE=30",
           "-DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS", "-DBOOST_FUSION_INVOKE_MAX_ARITY=12"]
CXXFLAGS = ["-std=c++17", "-O3", "-march=native", "-fno-math-errno", "-DNDEBUG"]


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
    """The Pinocchio model, joint by joint: gravity, njoints, fext flag, then per joint type, parent,
    placement (R row-major, p) and inertia (mass, lever, 3x3 about the CG)."""
    pmod = pm.pmodel
    r = lambda a: " ".join(repr(float(x)) for x in np.asarray(a).ravel())  # noqa: E731
    lines = [f"{r(pmod.gravity.linear)} {pmod.njoints - 1} {int(pm.has_fext)}"]
    for j in range(1, pmod.njoints):
        kind = pmod.joints[j].shortname()
        if kind not in JOINTS:
            raise RuntimeError(f"joint {pmod.names[j]} is a {kind}: the timing program knows {', '.join(JOINTS)}")
        M, Y = pmod.jointPlacements[j], pmod.inertias[j]
        lines.append(f"{JOINTS[kind]} {pmod.parents[j]} {r(M.rotation)} {r(M.translation)} "
                     f"{r([Y.mass])} {r(Y.lever)} {r(Y.inertia)}")
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


def expected(pm: PinModel, pool: list[State]) -> np.ndarray:
    """What the timing program computes for each pool state: ABA's ddq in Pinocchio's coordinates (no elements)."""
    import pinocchio as pin

    out = []
    for s in pool:
        qp, vp, tp = to_pin(pm, s.q, s.qd, s.tau)
        pin.forwardKinematics(pm.pmodel, pm.data, qp)
        fx = local_fext(pm, s.fext)
        a = pin.aba(pm.pmodel, pm.data, qp, vp, tp, fx) if pm.has_fext else pin.aba(pm.pmodel, pm.data, qp, vp, tp)
        out.append(np.array(a))
    return np.array(out)
