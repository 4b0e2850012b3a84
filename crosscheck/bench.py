"""The harness's benchmarks: the generated code beside the dense reference (`crosscheck bench`), side by side
with Pinocchio and MuJoCo (`crosscheck bench --peers`), and the generated derivatives side by side with
Pinocchio's (`crosscheck bench --peers --derivatives`).

The generated code's own timing is the product's (mechdyn.bench, `mechdyn bench`); this module adds the
engines it is judged against, on the same pool of states.
"""
from __future__ import annotations

import dataclasses
import os
import shlex
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from crosscheck import callgrind
from crosscheck.dense import forward_crba
from mechdyn.bench import POOL, TIMING_C, BenchResult, batch_ns, bench, machine, state_pool, time_per_call
from mechdyn.codegen import flags
from mechdyn.codegen.cache import compiled
from mechdyn.codegen.capi import DERIV_FUNCTION, FUNCTION
from mechdyn.core.model import Model
from mechdyn.core.sample import scaled_error
from mechdyn.dynamics import Derivatives, Dynamics


# -- beside the dense reference (crosscheck bench) ----------------------------------------------------------

@dataclass(frozen=True)
class DenseBenchResult:
    generated: BenchResult  # mechdyn bench's figures
    dense_ns_per_call: float  # crosscheck.dense.forward_crba on the same pool

    @property
    def speedup(self) -> float:
        return self.dense_ns_per_call / self.generated.ns_per_call

    def as_dict(self) -> dict:
        return self.generated.as_dict() | {"dense_ns_per_call": self.dense_ns_per_call, "speedup": self.speedup}

    def lines(self) -> list[str]:
        return [*self.generated.lines(),
                f"bench: dense      {self.dense_ns_per_call:10.1f} ns/call  (numpy 6x6 reference)",
                f"bench: speedup    {self.speedup:10.1f}x"]


def bench_dense(dyn: Dynamics, repeats: int = 7, seconds: float = 0.2, dense_calls: int = 200,
                seed: int = 0) -> DenseBenchResult:
    """mechdyn.bench.bench, and the dense reference's ns/call on the same state pool."""
    gen = bench(dyn, repeats, seconds, seed)
    states, _ = state_pool(dyn, seed)
    # the dense calls alone take seconds on a large model: name the phase
    with tqdm(total=1, desc=f"bench {dyn.model.name}: dense reference", unit="pass", leave=False,
              disable=None) as bar:
        t0 = time.perf_counter()
        for k in range(dense_calls):
            s = states[k % POOL]
            forward_crba(dyn.model, s.q, s.qd, s.tau, s.fext, s.act)
        dense = (time.perf_counter() - t0) / dense_calls
        bar.update()
    return DenseBenchResult(gen, dense * 1e9)


# -- side by side with Pinocchio and MuJoCo (crosscheck bench --peers) ----------------------------------------

GEN_DRIVER = r"""/* mechdyn's timing loop (mechdyn/bench.py TIMING_C) over a compiled mechdyn module's fwd_dyn and a pool of
 * states, for callgrind (crosscheck/bench.py).
 * usage: gen_driver MODULE.so POOL.bin NPOOL NCALLS; POOL.bin holds Q, QD, TAU, FEXT, ACT blocks of NPOOL rows. */
""" + callgrind.MODULE_DRIVER_C + TIMING_C + r"""
int main(int argc, char **argv)
{
    if (argc != 5) { fprintf(stderr, "usage: %s MODULE.so POOL.bin NPOOL NCALLS\n", argv[0]); return 2; }
    long size[4];
    md_fwd_dyn_fn f = (md_fwd_dyn_fn)md_open(argv[1], size);
    long nq = size[0], nv = size[1], nb = size[2], na = size[3];
    long npool = atol(argv[3]), ncalls = atol(argv[4]), n = npool * (nq + 2 * nv + 6 * nb + na);
    double *pool = malloc(sizeof(double) * (size_t)(n + 1)), *out = malloc(sizeof(double) * (size_t)nv), chk = 0.0;
    FILE *fp = fopen(argv[2], "rb");
    if (!fp || !pool || !out || fread(pool, sizeof(double), (size_t)n, fp) != (size_t)n) { fprintf(stderr, "short pool\n"); return 4; }
    fclose(fp);
    double *q = pool, *qd = q + npool * nq, *tau = qd + npool * nv, *fext = tau + npool * nv, *act = fext + npool * 6 * nb;
    md_time_calls(f, (int)nq, (int)nv, (int)(6 * nb), (int)na, ncalls, (int)npool, q, qd, tau, fext, act, out, &chk);
    printf("%.17g\n", chk);
    return 0;
}
"""


def _run_program(cmd: list[str]) -> str:
    res = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"$ {shlex.join(str(c) for c in cmd)}\nexit {res.returncode}: {res.stderr.strip()[-2000:]}")
    return res.stdout


def callgrind_instructions(cmd: list, function: str, ncalls: int) -> float:
    """Instructions per call inside `function` (inclusive), counted by callgrind from the start of the program."""
    return callgrind.count(cmd, function).instructions / ncalls


def _verify(model: Model, engine: str, qdd: np.ndarray, run: Callable[[int], str]) -> float:
    """The timing program's checksum (the sum of output c mod nv of call c) against the same engine's results
    computed from Python on the pool, so that a timed loop is known to compute what it claims; returns it."""
    n = 2 * POOL
    c = np.arange(n)
    terms = qdd[c % POOL, c % qdd.shape[1]]
    got = float(run(n).split()[1])
    if abs(got - terms.sum()) > 1e-9 * max(1.0, float(np.abs(terms).sum())):
        raise RuntimeError(f"{engine}'s timing program on {model.name} computed checksum {got!r} where its "
                           f"Python bindings give {float(terms.sum())!r}: the timed loop is not computing the model")
    return got


def _agreement(gen: np.ndarray, peer: np.ndarray) -> float:
    """The largest scaled error of the peer's qdd against the generated over the pool, both in mechdyn's
    coordinates."""
    return max(scaled_error(p, g) for p, g in zip(peer, gen))


def _timed(run: Callable[[int, int], float], npool: int, seconds: float, repeats: int) -> float:
    """Best ns/call: calibrate the loop length on one pass over the pool, then `repeats` loops of ~seconds."""
    per_call = run(npool, 1) * 1e-9
    ncalls = max(npool, int(seconds / max(per_call, 1e-9)))
    return run(ncalls, repeats)


@dataclass(frozen=True)
class PeersResult:
    model: str
    nq: int
    nv: int
    flops: int
    ns_per_call: float  # generated
    pinocchio_ns_per_call: float
    mujoco_ns_per_call: float
    instructions: float | None  # per call, callgrind; None without valgrind
    pinocchio_instructions: float | None
    mujoco_instructions: float | None
    pinocchio_convention: str  # the faster of Pinocchio's two ABA conventions, the one reported
    # loop models: the peers run the spanning tree, so the generated code of the spanning tree (the model with
    # its loops removed) is timed too, on the same pool: like against like
    tree_flops: int | None = None
    tree_ns_per_call: float | None = None
    tree_instructions: float | None = None
    batch_ns_per_state: float | None = None  # fwd_dyn_batch on the same pool: throughput, four states per SIMD pass
    # loop models: Pinocchio with the loops closed too (computeAllTerms, the closure rows, forwardDynamics with
    # J and gamma): the same output as mechdyn's closed-loop code
    closed_rows: int | None = None
    pinocchio_closed_ns_per_call: float | None = None
    pinocchio_closed_instructions: float | None = None
    # the timing programs' verified checksums (generated, Pinocchio, MuJoCo; each in its engine's coordinates), and
    # the peers' qdd on the pool against the generated qdd in mechdyn's coordinates (_agreement): a tree without
    # elements only (the peers' programs run neither loops nor elements)
    checksums: tuple[float, float, float] | None = None
    pinocchio_agreement: float | None = None
    mujoco_agreement: float | None = None

    @property
    def loops(self) -> bool:
        return self.tree_ns_per_call is not None

    @property
    def gflops(self) -> float:
        return self.flops / self.ns_per_call

    @property
    def pinocchio_ratio(self) -> float:
        return self.pinocchio_ns_per_call / self.ns_per_call

    @property
    def mujoco_ratio(self) -> float:
        return self.mujoco_ns_per_call / self.ns_per_call

    def as_dict(self) -> dict:
        d = asdict(self) | {"gflops": self.gflops, "pinocchio_ratio": self.pinocchio_ratio,
                            "mujoco_ratio": self.mujoco_ratio,
                            "pinocchio_instructions_ratio": _ratio(self.pinocchio_instructions, self.instructions),
                            "mujoco_instructions_ratio": _ratio(self.mujoco_instructions, self.instructions),
                            "machine": machine()}
        if self.loops:
            d |= {"tree_pinocchio_ratio": self.pinocchio_ns_per_call / self.tree_ns_per_call,
                  "tree_mujoco_ratio": self.mujoco_ns_per_call / self.tree_ns_per_call,
                  "closed_pinocchio_ratio": self.pinocchio_closed_ns_per_call / self.ns_per_call,
                  "closed_pinocchio_instructions_ratio": _ratio(self.pinocchio_closed_instructions, self.instructions)}
        return d

    def lines(self) -> list[str]:
        ins = lambda x: "n/a (no valgrind)" if x is None else f"{x:,.0f} instructions/call"  # noqa: E731
        out = [f"bench: {self.model} (nq {self.nq}, nv {self.nv}) on {machine()}, the same {POOL}-state pool for all",
               f"bench: mechdyn generated  {self.ns_per_call:10.1f} ns/call  {ins(self.instructions)}  "
               f"{self.flops} flops  {self.gflops:.2f} GFLOP/s"]
        out.append(f"bench:   batched        {self.batch_ns_per_state:10.1f} ns/state  (fwd_dyn_batch, four states per "
                   f"SIMD pass; Pinocchio's ABA takes {self.pinocchio_ns_per_call / self.batch_ns_per_state:.1f}x as long)")
        if self.loops:
            out.append(f"bench:   spanning tree    {self.tree_ns_per_call:10.1f} ns/call  {ins(self.tree_instructions)}  "
                       f"{self.tree_flops} flops  (the generated code with the loops removed)")
        base = self.tree_ns_per_call if self.loops else self.ns_per_call
        what = "the generated spanning tree's" if self.loops else "the generated"
        out += [f"bench: Pinocchio ABA      {self.pinocchio_ns_per_call:10.1f} ns/call  "
                f"{ins(self.pinocchio_instructions)}  ({self.pinocchio_convention} convention)  "
                f"{self.pinocchio_ns_per_call / base:.1f}x {what} time",
                f"bench: MuJoCo mj_forward  {self.mujoco_ns_per_call:10.1f} ns/call  {ins(self.mujoco_instructions)}  "
                f"{self.mujoco_ns_per_call / base:.1f}x {what} time"]
        if self.checksums:
            agree = ("" if self.pinocchio_agreement is None else
                     f"; qdd in mechdyn's coordinates against the generated: Pinocchio {self.pinocchio_agreement:.1e}, "
                     f"MuJoCo {self.mujoco_agreement:.1e} (max scaled difference over the pool)")
            out.append("bench: checksums (each program's, checked against its bindings) generated "
                       + ", Pinocchio ".join(f"{x:.10g}" for x in self.checksums[:2])
                       + f", MuJoCo {self.checksums[2]:.10g}{agree}")
        if self.loops:
            out += [f"bench: loop model: Pinocchio's ABA and MuJoCo run the spanning tree (no closures); against the "
                    f"closed-loop generated code their times are {self.pinocchio_ratio:.1f}x and "
                    f"{self.mujoco_ratio:.1f}x",
                    f"bench: Pinocchio, loops closed  {self.pinocchio_closed_ns_per_call:10.1f} ns/call  "
                    f"{ins(self.pinocchio_closed_instructions)}  (computeAllTerms, {self.closed_rows} closure "
                    f"row{'s' * (self.closed_rows != 1)}, "
                    f"forwardDynamics with J and gamma)  {self.pinocchio_closed_ns_per_call / self.ns_per_call:.1f}x "
                    f"the generated closed-loop time"]
        return out

    def closed_table_row(self) -> str:
        """The README's row of a loop model with its loops closed in both engines."""
        return (f"| {self.model} | {self.nv} | {self.closed_rows} | {self.ns_per_call:.1f} | "
                f"{self.pinocchio_closed_ns_per_call:.1f} | {self.pinocchio_closed_ns_per_call / self.ns_per_call:.1f} | "
                f"{_count(self.instructions)} | {_count(self.pinocchio_closed_instructions)} | "
                f"{_times(_ratio(self.pinocchio_closed_instructions, self.instructions))} |")

    def table_rows(self) -> list[str]:
        """The README's side-by-side rows: one for a tree; for a loop model, the closed loops and the spanning tree."""
        def row(label: str, ns: float, ins: float | None, flops: int, batch: float | None) -> str:
            return (f"| {label} | {self.nv} | {ns:.1f} | {self.pinocchio_ns_per_call:.1f} | "
                    f"{self.mujoco_ns_per_call:.1f} | {self.pinocchio_ns_per_call / ns:.1f} | "
                    f"{self.mujoco_ns_per_call / ns:.1f} | {_count(ins)} | {_count(self.pinocchio_instructions)} | "
                    f"{_count(self.mujoco_instructions)} | {_times(_ratio(self.pinocchio_instructions, ins))} | "
                    f"{_times(_ratio(self.mujoco_instructions, ins))} | {flops / ns:.2f} | "
                    + ("n/a | n/a |" if batch is None else f"{batch:.1f} | {self.pinocchio_ns_per_call / batch:.1f} |"))

        if not self.loops:
            return [row(self.model, self.ns_per_call, self.instructions, self.flops, self.batch_ns_per_state)]
        return [row(f"{self.model}, loops closed", self.ns_per_call, self.instructions, self.flops,
                    self.batch_ns_per_state),
                row(f"{self.model}, spanning tree", self.tree_ns_per_call, self.tree_instructions, self.tree_flops,
                    None)]


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def _count(x: float | None) -> str:
    return "n/a" if x is None else f"{x:,.0f}"


def _times(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1f}"


TABLE_HEADER = ("| model | nv | generated ns | Pinocchio ns | MuJoCo ns | Pinocchio / generated | MuJoCo / generated | "
                "generated instr | Pinocchio instr | MuJoCo instr | Pinocchio / generated instr | "
                "MuJoCo / generated instr | generated GFLOP/s | batched ns/state | Pinocchio / batched |\n"
                + "| --- " * 15 + "|")


CLOSED_TABLE_HEADER = ("| model | nv | closure rows | generated ns | Pinocchio ns, loops closed | Pinocchio / generated | "
                       "generated instr | Pinocchio instr | Pinocchio / generated instr |\n" + "| --- " * 9 + "|")


# -- the real robots of example-robot-data (crosscheck bench --peers --robots) -------------------------------

# label, URDF under example-robot-data's robots/ folder, floating base, mimic joints (docs/performance.md
# "Real robots from example-robot-data"); the fixed-base ones are the arms, the derivatives' rows
ROBOTS = (("Panda", "panda_description/urdf/panda.urdf", False, "free"),
          ("UR5", "ur_description/urdf/ur5_robot.urdf", False, "refuse"),
          ("xArm7", "xarm_description/urdf/xarm7.urdf", False, "refuse"),
          ("Kinova", "kinova_description/robots/kinova.urdf", False, "refuse"),
          ("Solo12", "solo_description/robots/solo12.urdf", True, "refuse"),
          ("ANYmal C", "anymal_c_simple_description/urdf/anymal.urdf", True, "refuse"),
          ("Go2", "go2_description/urdf/go2.urdf", True, "refuse"),
          ("Talos reduced", "talos_data/robots/talos_reduced.urdf", True, "free"),
          ("Talos full", "talos_data/robots/talos_full_v2.urdf", True, "free"),
          ("G1", "g1_description/urdf/g1_29dof_rev_1_0.urdf", True, "refuse"))


def robots_dir() -> Path:
    """example-robot-data's robots/ folder (crosscheck.robots), or FileNotFoundError naming the package."""
    from crosscheck.robots import robots_dir as found

    if (path := found()) is None:
        raise FileNotFoundError("--robots: the robots are the PyPI package example-robot-data's; "
                                "pip install example-robot-data")
    return path


def robot_flags(path: str, floating: bool, mimic: str) -> str:
    """The options after `crosscheck bench --peers $ROBOTS/` that give one robot's row."""
    return path + " --floating" * floating + (" --mimic free" if mimic == "free" else "")


ROBOTS_HEADER = ("| robot | nv | mechdyn ns | batched ns/state | Pinocchio ns | MuJoCo ns | Pinocchio / mechdyn | "
                 "Pinocchio / batched | mechdyn instr | Pinocchio instr | MuJoCo instr | Pinocchio / mechdyn instr | "
                 "qdd vs Pinocchio; MuJoCo | checksums mechdyn; Pinocchio; MuJoCo |\n" + "| --- " * 14 + "|")


def robot_row(label: str, r: "PeersResult") -> str:
    """One robot's row under ROBOTS_HEADER."""
    agree = ("n/a" if r.pinocchio_agreement is None
             else f"{r.pinocchio_agreement:.0e}; {r.mujoco_agreement:.0e}")
    sums = "n/a" if r.checksums is None else "; ".join(f"{x:.9g}" for x in r.checksums)
    return (f"| {label} | {r.nv} | {r.ns_per_call:.1f} | {r.batch_ns_per_state:.1f} | {r.pinocchio_ns_per_call:.1f} | "
            f"{r.mujoco_ns_per_call:.1f} | {r.pinocchio_ratio:.1f} | "
            f"{r.pinocchio_ns_per_call / r.batch_ns_per_state:.1f} | {_count(r.instructions)} | "
            f"{_count(r.pinocchio_instructions)} | {_count(r.mujoco_instructions)} | "
            f"{_times(_ratio(r.pinocchio_instructions, r.instructions))} | {agree} | {sums} |")


def spanning_tree(model: Model) -> Model:
    """The model without its loop closures and drivers (a rig's posts free, as the peers take them): same bodies,
    elements and design pose (its own cache entry)."""
    return dataclasses.replace(model, loops=(), drivers=(),
                               source=f"{model.source}\n# loops and drivers removed: the spanning tree\n")


def bench_peers(dyn: Dynamics, repeats: int = 7, seconds: float = 0.02, seed: int = 0,
                count: bool = True) -> PeersResult:
    """mechdyn's generated fwd_dyn, Pinocchio's ABA and MuJoCo's mj_forward on the same exported model and the
    same pool of 256 states, each timed in a compiled loop (best of `repeats` loops of about `seconds`: short
    loops, so that the best one ran without being preempted), and their instructions per call counted by
    callgrind (`count`).

    The pool is `mechdyn.core.sample.states` (random for a tree; closed and consistent for a loop model) mapped
    into each engine's coordinates. Pinocchio's model is loaded from the URDF export, MuJoCo's from the MJCF
    export. For a loop model both peers run the spanning tree only (Pinocchio's ABA has no closures; MuJoCo's
    equality constraints are disabled), which is less work than mechdyn's closed-loop solve, so the generated
    code of the spanning tree is timed on the same pool too; and Pinocchio is timed with the loops closed as
    well, by its generic route for constraint Jacobians (the same output as the closed-loop generated code).
    """
    from crosscheck import mujoco as cmj
    from crosscheck import pinocchio as cpin
    from crosscheck.golden import counting_unavailable, measurement_build
    from crosscheck.mujoco import timing as mjt
    from crosscheck.pinocchio import timing as pint
    from mechdyn.core.sample import states as sample_states

    model = dyn.model
    pool_states = list(sample_states(model, POOL, seed, tear=0.0))
    arrays = [np.array([getattr(s, f) for s in pool_states]) for f in ("q", "qd", "tau", "fext", "act")]
    arrays[4] = arrays[4].reshape(POOL, dyn.nact)

    def gen_ns(d: Dynamics) -> float:
        return _timed(lambda n, reps: min(time_per_call(d, *arrays, n)[0] for _ in range(reps)) * 1e9,
                      POOL, seconds, repeats)

    tree = Dynamics(spanning_tree(model)) if model.loops else None
    gen = gen_ns(dyn)
    tree_ns = gen_ns(tree) if tree else None
    batched = batch_ns(dyn, arrays, seconds, repeats)

    pm = cpin.build(model)
    mm = cmj.build(model)
    # one Pinocchio build, timed and counted (mechdyn.codegen.flags.peer_cxx: without AVX-512)
    pin_exe = compiled("pinocchio_timing", pint.SOURCE, ".cpp", flags.cxx(),
                       [*flags.peer_cxx(), *pint.DEFINES, *pint.include_dirs()])
    mj_exe = compiled("mujoco_timing", mjt.SOURCE, ".c", flags.cc(), [*flags.peer_c(), *mjt.link_args()])
    gen_exe = compiled("generated_timing", GEN_DRIVER, ".c", flags.cc(), flags.driver())
    with tempfile.TemporaryDirectory(prefix="mechdyn-peers.") as tmp:
        t = Path(tmp)
        (t / "pin.txt").write_text(pint.model_text(pm))
        (t / "pin.bin").write_bytes(pint.pool_bytes(pm, pool_states))
        (t / "mj.xml").write_text(mm.xml)
        (t / "mj.bin").write_bytes(mjt.pool_bytes(mm, pool_states))
        (t / "gen.bin").write_bytes(b"".join(np.ascontiguousarray(a, dtype=np.float64).tobytes() for a in arrays))

        def pin_cmd(ncalls: int, reps: int, method: int) -> list:  # 0, 1: ABA local, world; 2: loops closed
            return [pin_exe, t / "pin.txt", t / "pin.bin", POOL, ncalls, reps, method]

        def mj_cmd(ncalls: int, reps: int) -> list:
            return [mj_exe, t / "mj.xml", t / "mj.bin", POOL, ncalls, reps]

        pin_qdd, mj_qdd = pint.expected(pm, pool_states, False), mjt.expected(mm, pool_states)
        gen_qdd = dyn.forward_batch(*arrays[:4], arrays[4] if dyn.nact else None)
        sums = (_verify(model, "generated", gen_qdd,
                        lambda n: "0 " + _run_program([gen_exe, dyn.library, t / "gen.bin", POOL, n])),
                _verify(model, "Pinocchio", pin_qdd, lambda n: _run_program(pin_cmd(n, 1, 0))),
                _verify(model, "MuJoCo", mj_qdd, lambda n: _run_program(mj_cmd(n, 1))))
        if model.loops:
            _verify(model, "Pinocchio (loops closed)", pint.expected(pm, pool_states, True),
                    lambda n: _run_program(pin_cmd(n, 1, 2)))
        agree: tuple[float | None, float | None] = (None, None)
        if not (model.loops or model.drivers or model.tsdas or model.rsdas or model.tracks or model.ground):
            from mechdyn.export import mjcf as mjcf_export
            from mechdyn.export import urdf as urdf_export

            agree = (_agreement(gen_qdd, np.array([urdf_export.from_pinocchio_v(model, pm.layout, a)
                                                   for a in pin_qdd])),
                     _agreement(gen_qdd, np.array([mjcf_export.from_mujoco_qacc(model, mm.layout, s.q, s.qd, a)
                                                   for s, a in zip(pool_states, mj_qdd)])))
        pin_ns = {conv: _timed(lambda n, r: float(_run_program(pin_cmd(n, r, conv)).split()[0]), POOL, seconds, repeats)
                  for conv in (0, 1)}
        conv = min(pin_ns, key=pin_ns.get)
        closed_ns = (_timed(lambda n, r: float(_run_program(pin_cmd(n, r, 2)).split()[0]), POOL, seconds, repeats)
                     if model.loops else None)
        mj_ns = _timed(lambda n, r: float(_run_program(mj_cmd(n, r)).split()[0]), POOL, seconds, repeats)
        ins = [None, None, None, None, None]
        if count and counting_unavailable() is None:
            # the generated code is counted on the regression gates' counting build (portable fixed flags, no
            # AVX-512, which valgrind cannot decode), so these figures match `crosscheck golden`'s
            n = 2 * POOL

            def gen_count(m: Model) -> float | None:
                return callgrind_instructions([gen_exe, measurement_build(m).library, t / "gen.bin", POOL, n],
                                              "md_time_calls", n)

            ins = [gen_count(model), callgrind_instructions(pin_cmd(n, 1, conv), "peer_loop", n),
                   callgrind_instructions(mj_cmd(n, 1), "peer_loop", n), gen_count(tree.model) if tree else None,
                   callgrind_instructions(pin_cmd(n, 1, 2), "peer_loop_closed", n) if model.loops else None]
    return PeersResult(model.name, dyn.nq, dyn.nv, dyn.flops, gen, pin_ns[conv], mj_ns, *ins[:3],
                       ("local", "world")[conv], tree.flops if tree else None, tree_ns, ins[3], batched,
                       model.nc if model.loops else None, closed_ns, ins[4], sums, *agree)


# -- the derivatives side by side with Pinocchio's (crosscheck bench --peers --derivatives) ------------------

_DERIVS, _FWD = DERIV_FUNCTION["fwd_dyn_derivs"], FUNCTION["fwd_dyn"]

DERIVS_DRIVER = r"""/* fwd_dyn_derivs of a compiled derivatives module (or, with FWD.so, fwd_dyn of the model's module) timed or
 * counted over a pool of states (crosscheck/bench.py), on the thread's CPU clock: a shared machine's preemption
 * does not advance it.
 * usage: derivs_driver MODULE.so POOL.bin NPOOL NCALLS REPEATS NQ [FWD.so]; POOL.bin holds Q, QD, TAU, FEXT, ACT
 * blocks of NPOOL rows. prints: the best ns/call over REPEATS loops of NCALLS calls, and the checksum: the sum
 * over calls c of entry e = c mod nv^2 (row r, column s) of dq + dqd + dtau, dtau read at (min(r, s), max(r, s))
 * as Pinocchio's timing program reads its Minv; for fwd_dyn, of qdd[c mod nv]. Under callgrind,
 * --toggle-collect=md_derivs_loop (md_fwd_loop). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* the module is a cffi extension: its one data reference into libpython resolves against this (-rdynamic) */
char _Py_NoneStruct[64];

typedef """ + _DERIVS.returns + " (*md_derivs_fn)(" + ", ".join(_DERIVS.params) + r""");
typedef """ + _FWD.returns + " (*md_fwd_fn)(" + ", ".join(_FWD.params) + r""");

struct blocks { double *qdd, *dq, *dqd, *dtau, *dact, *dfext; };

__attribute__((noinline)) double md_derivs_loop(md_derivs_fn f, long nq, long nv, long nf, long na, long ncalls,
                                                long npool, const double *q, const double *qd, const double *tau,
                                                const double *fext, const double *act, struct blocks *b)
{
    double sum = 0.0;
    for (long c = 0; c < ncalls; ++c) {
        long k = c % npool, e = c % (nv * nv), r = e / nv, s = e % nv;
        f(q + k * nq, qd + k * nv, tau + k * nv, fext + k * nf, na ? act + k * na : 0, b->qdd, b->dq, b->dqd,
          b->dtau, b->dact, b->dfext);
        sum += b->dq[e] + b->dqd[e] + b->dtau[r < s ? r * nv + s : s * nv + r];
    }
    return sum;
}

__attribute__((noinline)) double md_fwd_loop(md_fwd_fn f, long nq, long nv, long nf, long na, long ncalls,
                                             long npool, const double *q, const double *qd, const double *tau,
                                             const double *fext, const double *act, double *qdd)
{
    double sum = 0.0;
    for (long c = 0; c < ncalls; ++c) {
        long k = c % npool;
        f(q + k * nq, qd + k * nv, tau + k * nv, fext + k * nf, na ? act + k * na : 0, qdd);
        sum += qdd[c % nv];
    }
    return sum;
}

static long constant(void *h, const char *name)
{
    const int *p = (const int *)dlsym(h, name);
    if (!p) { fprintf(stderr, "%s: %s\n", name, dlerror()); exit(3); }
    return *p;
}

int main(int argc, char **argv)
{
    if (argc != 7 && argc != 8) {
        fprintf(stderr, "usage: %s MODULE.so POOL.bin NPOOL NCALLS REPEATS NQ [FWD.so]\n", argv[0]);
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_LAZY | RTLD_LOCAL);
    md_derivs_fn f = h ? (md_derivs_fn)dlsym(h, "fwd_dyn_derivs") : 0;
    if (!f) { fprintf(stderr, "%s: %s\n", argv[1], dlerror()); return 3; }
    long nv = constant(h, "fwd_dyn_derivs_nv"), na = constant(h, "fwd_dyn_derivs_nact");
    long nf = 6 * constant(h, "fwd_dyn_derivs_nbody"), nq = atol(argv[6]);
    long npool = atol(argv[3]), ncalls = atol(argv[4]), repeats = atol(argv[5]), n = npool * (nq + 2 * nv + nf + na);
    double *pool = malloc(sizeof(double) * (size_t)(n + 1));
    struct blocks b;
    double **outs[6] = {&b.qdd, &b.dq, &b.dqd, &b.dtau, &b.dact, &b.dfext};
    long sizes[6] = {nv, nv * nv, nv * nv, nv * nv, nv * na, nv * nf};
    for (int k = 0; k < 6; ++k) *outs[k] = malloc(sizeof(double) * (size_t)(sizes[k] + 1));
    FILE *fp = fopen(argv[2], "rb");
    if (!fp || !pool || fread(pool, sizeof(double), (size_t)n, fp) != (size_t)n) {
        fprintf(stderr, "short pool\n");
        return 4;
    }
    fclose(fp);
    double *q = pool, *qd = q + npool * nq, *tau = qd + npool * nv, *fext = tau + npool * nv, *act = fext + npool * nf;
    void *hf = argc == 8 ? dlopen(argv[7], RTLD_LAZY | RTLD_LOCAL) : 0;
    md_fwd_fn fwd = hf ? (md_fwd_fn)dlsym(hf, "fwd_dyn") : 0;
    if (argc == 8 && !fwd) { fprintf(stderr, "%s: %s\n", argv[7], dlerror()); return 3; }
    double best = 1e300, sum = 0.0;
    for (long r = 0; r < repeats; ++r) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
        sum = fwd ? md_fwd_loop(fwd, nq, nv, nf, na, ncalls, npool, q, qd, tau, fext, act, b.qdd)
                  : md_derivs_loop(f, nq, nv, nf, na, ncalls, npool, q, qd, tau, fext, act, &b);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
        double ns = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (double)ncalls;
        if (ns < best) best = ns;
    }
    printf("%.6g %.17g\n", best, sum);
    return 0;
}
"""


def derivative_terms(D: Derivatives) -> np.ndarray:
    """The derivatives driver's checksum terms per state (n, nv²): dq + dqd + dtau, dtau from its upper triangle."""
    dtau = np.triu(D.dtau) + np.swapaxes(np.triu(D.dtau, 1), -1, -2)
    return (D.dq + D.dqd + dtau).reshape(len(D.dq), -1)


@dataclass(frozen=True)
class DerivsPeersResult:
    model: str
    nv: int
    derivs_flops: int  # fwd_dyn_derivs, the forward pass included
    flops: int  # fwd_dyn's own
    derivs_ns_per_call: float  # fwd_dyn_derivs in its compiled loop
    ns_per_call: float  # fwd_dyn, in the same driver on the same pool
    pinocchio_ns_per_call: float  # computeABADerivatives
    pinocchio_aba_ns_per_call: float  # Pinocchio's ABA (the faster convention), the same program and pool
    derivs_instructions: float | None  # per call, callgrind; None without valgrind
    instructions: float | None  # fwd_dyn's
    pinocchio_instructions: float | None
    accuracy: float  # max over the pool and the blocks of the scaled error against Pinocchio (derivatives.py)
    load: tuple[float, float]  # the 1-minute load average before and after

    @property
    def pinocchio_ratio(self) -> float:
        """Pinocchio's time over the generated derivatives' time: the issue's target is >= 5 up to 10 DoF."""
        return self.pinocchio_ns_per_call / self.derivs_ns_per_call

    @property
    def cost_ratio(self) -> float:
        """fwd_dyn_derivs' time over fwd_dyn's."""
        return self.derivs_ns_per_call / self.ns_per_call

    def as_dict(self) -> dict:
        return asdict(self) | {"pinocchio_ratio": self.pinocchio_ratio, "cost_ratio": self.cost_ratio,
                               "pinocchio_instructions_ratio": _ratio(self.pinocchio_instructions,
                                                                      self.derivs_instructions),
                               "cost_instructions_ratio": _ratio(self.derivs_instructions, self.instructions),
                               "pinocchio_cost_ratio": self.pinocchio_ns_per_call / self.pinocchio_aba_ns_per_call,
                               "machine": machine()}

    def lines(self) -> list[str]:
        ins = lambda x: "n/a (no valgrind)" if x is None else f"{x:,.0f} instructions/call"  # noqa: E731
        return [f"bench: {self.model} (nv {self.nv}) derivatives on {machine()}, the same {POOL}-state pool for both "
                f"(load average {self.load[0]:.2f} before, {self.load[1]:.2f} after)",
                f"bench: fwd_dyn_derivs          {self.derivs_ns_per_call:10.1f} ns/call  "
                f"{ins(self.derivs_instructions)}  "
                f"{self.derivs_flops} flops",
                f"bench: Pinocchio ABA derivs    {self.pinocchio_ns_per_call:10.1f} ns/call  "
                f"{ins(self.pinocchio_instructions)}  {self.pinocchio_ratio:.1f}x the generated time",
                f"bench: cost over the dynamics  generated {self.cost_ratio:.1f}x fwd_dyn ({self.ns_per_call:.1f} ns, "
                f"{ins(self.instructions)}); Pinocchio "
                f"{self.pinocchio_ns_per_call / self.pinocchio_aba_ns_per_call:.1f}x "
                f"its ABA ({self.pinocchio_aba_ns_per_call:.1f} ns)",
                f"bench: accuracy against Pinocchio: max scaled block error {self.accuracy:.1e} over the pool"]

    def table_row(self) -> str:
        """docs' row: model, nv, ns both, ratio, instructions both, derivs/fwd_dyn (ns; instructions), accuracy."""
        return (f"| {self.model} | {self.nv} | {self.derivs_ns_per_call:.1f} | {self.pinocchio_ns_per_call:.1f} | "
                f"{self.pinocchio_ratio:.1f} | {_count(self.derivs_instructions)} | "
                f"{_count(self.pinocchio_instructions)} | {self.cost_ratio:.1f}; "
                f"{_times(_ratio(self.derivs_instructions, self.instructions))} | {self.accuracy:.0e} |")


DERIVS_TABLE_HEADER = ("| model | nv | derivs ns | Pinocchio ns | Pinocchio / derivs | derivs instr | "
                       "Pinocchio instr | "
                       "derivs / fwd_dyn (ns; instr) | accuracy vs Pinocchio |\n" + "| --- " * 9 + "|")


def bench_derivatives(dyn: Dynamics, repeats: int = 7, seconds: float = 0.02, seed: int = 0,
                      count: bool = True) -> DerivsPeersResult:
    """mechdyn's generated fwd_dyn_derivs and Pinocchio's computeABADerivatives on the same exported tree model
    and the same pool of 256 states (bench_peers' pool), each timed in a compiled loop on the thread's CPU clock
    (best of `repeats` loops of about `seconds`) with a checksum checked against the same engine's Python
    results, and their instructions per call counted by callgrind (`count`); with fwd_dyn's and Pinocchio's
    ABA's time on the pool, for the derivatives' cost over the dynamics'. A loop model is timed as its spanning
    tree (computeABADerivatives has no closures), generated code and Pinocchio alike.

    Pinocchio's program runs what its ABA benchmark runs (tau, fext held in the joints' frames, no elements);
    the generated code runs the model, elements included. The derivatives' agreement on the pool, with the
    elements and base-fixed fext added on Pinocchio's side, is `accuracy` (crosscheck.pinocchio.derivatives).
    """
    from crosscheck.golden import counting_unavailable, measurement_build
    from crosscheck.pinocchio import derivatives as pd
    from crosscheck.pinocchio import timing as pint
    from mechdyn.codegen.build import build
    from mechdyn.core.sample import states as sample_states

    tree = bool(dyn.model.loops)
    if tree:
        dyn = Dynamics(spanning_tree(dyn.model))
    model = dyn.model
    if reason := pd.why_not(model):
        raise ValueError(f"bench --derivatives: {reason}")
    load0 = os.getloadavg()[0]
    pool_states = list(sample_states(model, POOL, seed, tear=0.0))
    arrays = [np.array([getattr(s, f) for s in pool_states]) for f in ("q", "qd", "tau", "fext", "act")]
    arrays[4] = arrays[4].reshape(POOL, dyn.nact)
    act = arrays[4] if dyn.nact else None
    D = dyn.derivatives_batch(*arrays[:4], act)
    pm = pd.pin_model(model)
    accuracy = max(max(pd.block_errors(Derivatives(*(x[k] for x in D)), pd.pinocchio_derivatives(pm, s)).values())
                   for k, s in enumerate(tqdm(pool_states, desc=f"derivatives of {model.name} against Pinocchio",
                                              unit="state", leave=False, disable=None)))
    pin_exe = compiled("pinocchio_timing", pint.SOURCE, ".cpp", flags.cxx(),
                       [*flags.peer_cxx(), *pint.DEFINES, *pint.include_dirs()])
    drv_exe = compiled("derivs_timing", DERIVS_DRIVER, ".c", flags.cc(), flags.driver())
    module = build(model, unit="derivatives")[1]  # the production build, the one dyn.derivatives calls
    with tempfile.TemporaryDirectory(prefix="mechdyn-derivs.") as tmp:
        t = Path(tmp)
        (t / "pin.txt").write_text(pint.model_text(pm))
        (t / "pin.bin").write_bytes(pint.pool_bytes(pm, pool_states))
        (t / "gen.bin").write_bytes(b"".join(np.ascontiguousarray(a, dtype=np.float64).tobytes() for a in arrays))

        def pin_cmd(ncalls: int, reps: int, method: int) -> list:  # 0, 1: ABA local, world; 3: derivatives
            return [pin_exe, t / "pin.txt", t / "pin.bin", POOL, ncalls, reps, method, "cpu"]

        def gen_cmd(so: Path, ncalls: int, reps: int, fwd: Path | None = None) -> list:  # fwd: time its fwd_dyn
            return [drv_exe, so, t / "gen.bin", POOL, ncalls, reps, dyn.nq, *([fwd] if fwd else [])]

        def best(cmd: Callable[[int, int], list]) -> float:
            return _timed(lambda n, r: float(_run_program(cmd(n, r)).split()[0]), POOL, seconds, repeats)

        _verify(model, "Pinocchio (computeABADerivatives)", pint.expected_derivatives(pm, pool_states),
                lambda n: _run_program(pin_cmd(n, 1, 3)))
        _verify(model, "fwd_dyn_derivs", derivative_terms(D), lambda n: _run_program(gen_cmd(module, n, 1)))
        _verify(model, "fwd_dyn", dyn.forward_batch(*arrays[:4], act),
                lambda n: _run_program(gen_cmd(module, n, 1, dyn.library)))
        gen_ns = best(lambda n, r: gen_cmd(module, n, r))
        fwd_ns = best(lambda n, r: gen_cmd(module, n, r, dyn.library))
        pin_ns = best(lambda n, r: pin_cmd(n, r, 3))
        aba_ns = min(best(lambda n, r: pin_cmd(n, r, conv)) for conv in (0, 1))
        ins: list[float | None] = [None, None, None]
        if count and counting_unavailable() is None:
            # the generated code is counted on the counting build (fixed flags, no AVX-512), as bench_peers does
            n = 2 * POOL
            so = build(model, cflags=flags.counting(), unit="derivatives")[1]
            ins = [callgrind_instructions(gen_cmd(so, n, 1), "md_derivs_loop", n),
                   callgrind_instructions(gen_cmd(so, n, 1, measurement_build(model).library), "md_fwd_loop", n),
                   callgrind_instructions(pin_cmd(n, 1, 3), "peer_loop_derivs", n)]
    name = f"{model.name}, spanning tree" if tree else model.name
    return DerivsPeersResult(name, dyn.nv, dyn.derivatives_flops, dyn.flops, gen_ns, fwd_ns, pin_ns, aba_ns,
                             *ins, accuracy, (load0, os.getloadavg()[0]))
