"""Assemble the passes into one self-contained C translation unit per model.

The exported functions and constants, with their C types, are declared once in capi.py's table (the C API of
docs/generator.md): the definitions' headers here, in simd.py and in stepper.py, and the cffi declarations
(CDEF), are produced from it. The translation unit is emitted section by section, one function each, in the
order generate() calls them.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from mechdyn.core.fingerprint import fingerprint
from mechdyn.core.model import Model
from mechdyn.core.params import neutral, read_by_c, size

from .capi import (BODY_ROW, CDEF, GENERATOR_VERSION, CONSTANT, DERIV_CDEF, DERIV_CONSTANT, DERIV_FUNCTION,  # noqa: F401  (CDEFs: re-exported
                   DRIVEN_CDEF, FUNCTION, PARAM_FUNCTION)  # for build.py)
from .aba import apply_Hinv, loop_solve
from .elements import tsda_state
from .equations import system
from .expr import OPS_COUNTED, Builder, OverBudget, Sym, Val
from .kinematics import TreeKinematics
from . import aba, declared, derivs_loop, driven, frames, kkt, schedule
from .derivs import derivatives_builder
from .ltdl import expanded_parents, floating_blocks, ltdl_forward
from .stepper import damped, drift_function, power_body, sim_function
from .simd import SQRT_C, batch4_function, batch_function, forward_stages, staged
from .sspatial import mm, mtv
from .trig import SINCOS_C, VECTOR_TYPES
from .trig import batch as sincos_batch



@dataclass(frozen=True)
class Generated:
    model: Model
    source: str  # the C translation unit
    ops: Counter  # live operations in fwd_dyn, by kind
    observe_len: int
    route: Route | None  # the solve taken, and both routes' operation counts (None: the derivatives' unit)
    parts: int = 1  # translation units the source splits into (generate's part(); 1: it is one)
    how: str = ""  # the derivatives' unit: how it solves (its route, docs/derivatives.md)

    @property
    def flops(self) -> int:
        """Arithmetic operations per fwd_dyn call (+ − × ÷ sqrt, a sincos pair as one), counted at generation time."""
        return sum(self.ops[o] for o in OPS_COUNTED)


ROUTES = {  # the two ways fwd_dyn solves for qdd, each under its name, without and with loops
    "crba": ("CRBA + sparse LᵀDL", "CRBA + sparse LDLᵀ of the KKT system"),
    "aba": ("articulated-body algorithm", "articulated-body algorithm + method 2 (1 + nc solves)"),
}


def dynamics_builder(model: Model, route: str = "crba", eager: bool = False, budget: int | None = None) -> Builder:
    """fwd_dyn as built, in pass order: the system (kinematics, H or the articulated inertias, C, elements, loop
    rows), and the solve of H qdd = tau − C + Q: by LᵀDL, or the KKT system with loops (`eager`: the LᵀDL's
    updates subtracted as they come, ltdl.py); or by H⁻¹ applied in O(n), through method 2 with loops.
    Past `budget` emitted operations it raises OverBudget."""
    b = Builder(path=model.path)
    b.budget = budget
    s = system(b, model, route)
    if model.drivers:
        if route != "crba":
            raise ValueError(f"{model.path}: a driven model is solved by the CRBA route's partition (driven.py), "
                             f"not by the {route} route")
        qdd, _, R = driven.solver(b, model, s.H, s.rows, eager)(s.rhs, [kr for _, kr in s.rows],
                                                               driven.accelerations(model))
        for k, x in enumerate(R):
            b.store(f"r[{k}]", x)
    elif route == "aba":
        qdd = (loop_solve(b, s.kin, s.art, s.rhs, s.bias, s.rows) if s.rows
               else apply_Hinv(b, s.kin, s.art, [s.rhs], [list(enumerate(s.bias))])[0])
    elif s.rows:
        qdd = kkt.kkt_solve(b, s.H, s.rows, s.rhs, kkt.elimination_order(model), model=model)
    else:
        qdd = ltdl_forward(b, s.H, expanded_parents(model), s.rhs, floating_blocks(model), eager)
    for i, x in enumerate(qdd):
        b.store(f"qdd[{i}]", x)
    return b


def route_builder(model: Model, route: str, budget: int | None = None) -> Builder:
    """fwd_dyn by `route`, the CRBA's LᵀDL factored eagerly in a function that keeps the emitted order."""
    b = dynamics_builder(model, route, budget=budget)
    if route == "crba" and not model.loops and not model.drivers and schedule.keeps_emitted_order(len(b.live())):
        b = dynamics_builder(model, route, eager=True, budget=budget)
    return b


DEEP = 16  # coordinates down the deepest chain past which the articulated-body route is built first
BUDGET = 3  # the second route built is abandoned past this multiple of the first one's operations


@dataclass(frozen=True)
class Route:
    """The solve fwd_dyn takes, chosen by operation count, and the count of each route: a route abandoned
    (BUDGET) has the number of operations it had emitted when it was."""
    name: str  # a key of ROUTES
    flops: dict[str, int]
    abandoned: tuple[str, ...] = ()

    def describe(self, model: Model) -> str:
        """The route taken and its count, then the other's: "CRBA + sparse LᵀDL, 742 operations (the …: 935)"."""
        label = lambda r: ROUTES[r][bool(model.loops)]  # noqa: E731
        others = "; ".join(f"the {label(r)}: " + (f"abandoned past {n} operations" if r in self.abandoned else f"{n}")
                           for r, n in self.flops.items() if r != self.name)
        if not others:  # a driven model: the partitioned solve is the CRBA's (driven.py)
            return f"{label(self.name)}, partitioned by {len(model.drivers)} driver(s), {self.flops[self.name]} operations"
        return f"{label(self.name)}, {self.flops[self.name]} operations ({others})"


def first_route(model: Model) -> str:
    """The route likelier to count fewer operations, built first: the articulated-body one when a chain of more
    than DEEP coordinates makes H full down it (O(n²) entries and O(n³) factor work), else the CRBA's."""
    lam = expanded_parents(model)
    depth: list[int] = []
    for p in lam:
        depth.append(1 + (depth[p] if p >= 0 else 0))
    return "aba" if max(depth, default=0) > DEEP else "crba"


def counted(b: Builder) -> int:
    """The live operations of b that fwd_dyn_flops counts."""
    return sum(n for op, n in b.finish()[1].items() if op in OPS_COUNTED)


def choose_route(model: Model) -> tuple[Route, Builder]:
    """Both routes built, the one with fewer operations taken (the CRBA's on a tie); the second one built is
    abandoned once it has emitted BUDGET times the first one's operations (no route's dead code is that large,
    so it would not have been taken)."""
    if model.drivers:  # the partitioned solve is written over H (driven.py)
        b = route_builder(model, "crba")
        return Route("crba", {"crba": counted(b)}), b
    first = first_route(model)
    built = {first: route_builder(model, first)}
    flops = {first: counted(built[first])}
    abandoned: tuple[str, ...] = ()
    for r in ROUTES:
        if r != first:
            try:
                built[r] = route_builder(model, r, budget=BUDGET * flops[first])
                flops[r] = counted(built[r])
            except OverBudget as e:
                flops[r], abandoned = e.args[0], (*abandoned, r)
    name = min(built, key=lambda r: (flops[r], r != "crba"))
    return Route(name, {r: flops[r] for r in ROUTES}, abandoned), built[name]


COUNTED = {"crba": frames.tree_passes, "aba": aba.tree_passes}  # what each route's frame search counts


def slid(model: Model) -> tuple[tuple[float, ...], Model]:
    """The frames turned onto their joint axes (frames.align), their shifts searched by the count of the route
    built first (first_route), and the aligned and slid model. Remembered per model content (_SLID)."""
    key = (fingerprint(model, values=False), *(f for f in vars(frames).values() if callable(f)))
    if key not in _SLID:
        aligned = frames.align(neutral(model))  # a declared parameter's value never reaches the C
        s = frames.shifts(aligned, COUNTED[first_route(aligned)])
        _SLID[key] = s, frames.slide(aligned, s)
        while len(_SLID) > SLID_KEPT:
            del _SLID[next(iter(_SLID))]
    return _SLID[key]


# The shift search takes tens of seconds on a 60-body tree, and a model's dynamics, derivatives and route all
# need it, so a process keeps the last few. The key holds frames.py's functions themselves (kept alive by it, so
# never mistaken for a later object at the same address): a test that replaces one is never served the real result.
SLID_KEPT = 8
_SLID: dict[tuple, tuple[tuple[float, ...], Model]] = {}


def route(model: Model) -> Route:
    """The solve fwd_dyn takes for `model` (its frames slid as generate() slides them), and both routes' counts."""
    return choose_route(slid(model)[1])[0]


def dynamics_body(model: Model) -> tuple[list[str], Counter, list[str], Route]:
    """The statements of fwd_dyn by the cheaper route, scheduled (schedule.py), without their sincos batch; the
    operation counts; the angles of the batch; the route."""
    route, b = choose_route(model)
    return (*b.finish(sincos=False, scheduled=True), b.angles, route)


def observe_body(model: Model) -> tuple[list[str], Counter]:
    """The statements of fwd_dyn_observe (POI position and velocity, TSDA l and l̇, RSDA q and q̇), and their
    operation counts (a "sincos" among them: the lines call md_sincos4)."""
    b = Builder(path=model.path)
    kin = TreeKinematics(b, model)
    k = 0
    for p in model.pois:
        with b.at(model.path, p.line, f"poi '{p.name}'"):
            pos, vel = kin.point(p.body, [float(x) for x in p.pos])
            for x in (*pos, *vel):
                b.store(f"obs[{k}]", x)
                k += 1
    for e in model.tsdas:
        with b.at(model.path, e.line, f"tsda '{e.name}'"):
            st = tsda_state(b, kin, e)
            b.store(f"obs[{k}]", st.l)
            b.store(f"obs[{k + 1}]", st.ldot)
        k += 2
    for e in model.rsdas:
        b.store(f"obs[{k}]", Sym(f"q[{model.qidx[e.body]}]"))
        b.store(f"obs[{k + 1}]", Sym(f"qd[{model.vidx[e.body]}]"))
        k += 2
    return b.finish()


def observe_length(model: Model) -> int:
    return 6 * len(model.pois) + 2 * len(model.tsdas) + 2 * len(model.rsdas)


def bodies_body(model: Model) -> tuple[list[str], Counter]:
    """The statements of fwd_dyn_bodies and their operation counts: row i is body i's R (body to world,
    row-major), p (its origin), w and v (its angular velocity and its origin's velocity), all in base coordinates.
    Built on the model aligned but not slid (a slid frame has its origin elsewhere along the joint axis), each R
    turned back from the aligned frame B C to the body's own frame B (frames.align)."""
    b = Builder(path=model.path)
    C = frames.turns(model)
    kin = TreeKinematics(b, frames.align(model))
    for i, bd in enumerate(model.bodies):
        with b.at(model.path, bd.line, f"body '{bd.name}'"):
            X, v = kin.X0(i), kin.v[i]  # X0 = plux(E, p) with E = Rᵀ; v = [w; v_O] in body coordinates
            E = X.E if np.array_equal(C[i], np.eye(3)) else mm(b, C[i].tolist(), X.E)  # x_B = C x_BC
            row = [E[c][a] for a in range(3) for c in range(3)] + X.r + mtv(b, X.E, v[:3]) + mtv(b, X.E, v[3:])
            for k, x in enumerate(row):
                b.store(f"out[{BODY_ROW * i + k}]", x)
    return b.finish()


def _names_table(kind: str, names: list[str]) -> str:
    """A `kind` lookup branch of fwd_dyn_find (also for a kind with no entries, which is known, not bogus)."""
    table = ", ".join(f'"{n}"' for n in names)
    lookup = (f"        static const char *const names[] = {{{table}}};\n"
              f"        for (int i = 0; i < {len(names)}; ++i) if (strcmp(names[i], name) == 0) return i;\n"
              if names else "")
    return f'    if (strcmp(kind, "{kind}") == 0) {{\n{lookup}        return -1;\n    }}\n'


def find_function(model: Model) -> str:
    """Emits fwd_dyn_find: a name's index among POIs, TSDAs, RSDAs or act slots; -1 if the kind has no such name, -2 if
    the kind is none of those. The name matches whole (strcmp on the NUL-terminated string)."""
    acts = sorted([(e.act, e.name) for e in (*model.tsdas, *model.rsdas) if e.act >= 0]
                  + [(d.act, d.name) for d in model.drivers])
    body = "".join([
        _names_table("poi", [p.name for p in model.pois]),
        _names_table("tsda", [e.name for e in model.tsdas]),
        _names_table("rsda", [e.name for e in model.rsdas]),
        _names_table("act", [n for _, n in acts]),
    ])
    return ("\n" + FUNCTION["fwd_dyn_find"].header() + "\n{\n"
            "    if (!kind) return -2;\n    if (!name) return -1;\n" + body + "    return -2;\n}\n")


@dataclass(frozen=True)
class Passes:
    """What the generator's passes produced for one model, before any C is laid out."""
    model: Model
    shifts: dict  # the body frames' slides along their joint axes (frames.py)
    body: list[str]  # fwd_dyn's statements, scheduled, without their sincos batch
    ops: Counter  # fwd_dyn's live operations
    angles: list[str]  # fwd_dyn's sincos batch
    observe: list[str]  # fwd_dyn_observe's statements, empty if there is nothing to observe
    observe_ops: Counter
    bodies: list[str]  # fwd_dyn_bodies' statements, on the model's own frames
    bodies_ops: Counter
    power: list[str]  # the dampers' power, empty if nothing dissipates (stepper.py)
    power_ops: Counter
    route: Route

    @property
    def nobs(self) -> int:
        return observe_length(self.model)

    @property
    def flops(self) -> int:
        return sum(self.ops[o] for o in OPS_COUNTED)


def passes(model: Model) -> Passes:
    """Every pass run on the model with its frames slid (frames.py): fwd_dyn, fwd_dyn_observe, the dampers' power;
    and fwd_dyn_bodies on the model as written, whose body frames it reports. A declared parameter is NaN in all
    of them (core/params.py, neutral): the passes read it through declared.py."""
    shifts, framed = slid(model)
    model = neutral(model)
    body, ops, angles, route = dynamics_body(framed)
    obs, obs_ops = observe_body(framed) if observe_length(model) else ([], Counter())
    bodies, bodies_ops = bodies_body(model)
    power, power_ops = power_body(framed) if damped(model) else ([], Counter())
    return Passes(model, shifts, body, ops, angles, obs, obs_ops, bodies, bodies_ops, power, power_ops, route)


def _indent(lines: list[str]) -> str:
    return "".join(f"    {ln}\n" for ln in lines)


def header_comment(p: Passes) -> str:
    """Emits the file's opening comment: the model, its sizes and operation count, the slid frames."""
    m = p.model
    return (f"/* Forward dynamics of model '{m.name}', generated by mechdyn (generator version {GENERATOR_VERSION}).\n"
            f" * nq {m.nq}, nv {m.nv}, bodies {m.nbody}, act slots {m.nact}; {p.flops} operations per call.\n"
            f" * Solve: {p.route.describe(m)}.\n"
            f" * Body frames slid along their joint axes (codegen/frames.py; q, qd, qdd, tau, fext and act as in the "
            f"model):\n"
            f" *   {frames.describe(m, p.shifts)}.\n"
            + (f" * Body frames turned onto their joint axes (codegen/frames.py, align; fwd_dyn_bodies reports the "
               f"model's own frames):\n *   {turned}.\n" if (turned := frames.describe_turns(m)) else "")
            + " * Conventions: docs/conventions.md. Do not edit: regenerate with `mechdyn gen`. */\n")


def includes() -> str:
    """Emits the #includes: libm, and string.h for fwd_dyn_find's strcmp and the stepper's memcpy."""
    return "#include <math.h>\n#include <string.h>\n"


def helpers(p: Passes) -> str:
    """Emits the vector types, then the batched sincos if any pass takes a sine (the drift of a floating body does)
    and the lane-wise sqrt if fwd_dyn takes a square root (for its four-lane twin)."""
    floating = any(bd.joint == "floating" for bd in p.model.bodies)  # the drift's quaternion exponential
    trig = floating or p.angles or p.observe_ops["sincos"] or p.bodies_ops["sincos"] or p.power_ops["sincos"]
    return VECTOR_TYPES + (SINCOS_C if trig else "") + (SQRT_C if p.ops["sqrt"] else "")


def constants(p: Passes) -> str:
    """Emits the model's sizes and operation count as the const ints of the API table."""
    m = p.model
    values = {"fwd_dyn_nq": m.nq, "fwd_dyn_nv": m.nv, "fwd_dyn_nact": m.nact, "fwd_dyn_nbody": m.nbody,
              "fwd_dyn_observe_len": p.nobs, "fwd_dyn_bodies_len": BODY_ROW * m.nbody, "fwd_dyn_flops": p.flops}
    if m.drivers:
        values["fwd_dyn_ndriver"] = len(m.drivers)
    return "\n" + "".join(CONSTANT[name].definition(v) + "\n" for name, v in values.items())


def null_guards(m: Model) -> list[str]:
    """The statements that read a NULL fext or act as zeros where the model reads them, and silence them where it
    does not."""
    guards = []
    if any(bd.fext for bd in m.bodies):
        guards += [f"static const double fext_zero[{6 * m.nbody}] = {{0}};", "if (!fext) fext = fext_zero;"]
    if m.nact:
        guards += [f"static const double act_zero[{m.nact}] = {{0}};", "if (!act) act = act_zero;"]
    return guards + [f"(void){a};" for a, used in (("fext", any(bd.fext for bd in m.bodies)), ("act", m.nact > 0))
                     if not used]


def forward_function(p: Passes) -> tuple[str, str]:
    """Emits fwd_dyn: zeros for a NULL fext or act where the model reads them, then the sincos batch and the
    scheduled statements, or, for a body too long for one function, the calls of its stages (simd.py), whose
    definitions it returns apart ("" when unstaged). A driven model's statements are fwd_dyn_react's, which
    fwd_dyn calls with its reactions going to a local array."""
    f = FUNCTION["fwd_dyn_react" if p.model.drivers else "fwd_dyn"]
    args = ", ".join(q.split("*")[-1] for q in f.params)  # "const double *q" -> "q"
    stages, protos, dyn = (forward_stages(p.angles, p.body, params=", ".join(f.params), args=args)
                           if staged(p.body) else ([], "", sincos_batch(p.angles) + p.body))
    text = "\n" + protos + f.header() + "\n{\n" + _indent(null_guards(p.model)) + _indent(dyn) + "}\n"
    if p.model.drivers:
        text += (f"\n{FUNCTION['fwd_dyn'].header()}\n{{\n    double r[{len(p.model.drivers)}];\n"
                 f"    fwd_dyn_react(q, qd, tau, fext, act, qdd, r);\n}}\n")
    return "".join(stages), text


def batch_functions(p: Passes) -> tuple[str, str]:
    """Emits fwd_dyn_batch4 (fwd_dyn's statements over four states' vectors) and fwd_dyn_batch (simd.py); and
    fwd_dyn_batch4's stage definitions apart ("" when unstaged)."""
    stages, batch4 = batch4_function(p.model, p.body, p.angles)
    return stages, "\n" + batch4 + batch_function(p.model)


def observe_function(p: Passes) -> str:
    """Emits fwd_dyn_observe (a body that only silences its parameters when there is nothing to observe)."""
    body = _indent(p.observe) if p.observe else "    (void)q; (void)qd; (void)obs;\n"
    return "\n" + FUNCTION["fwd_dyn_observe"].header() + "\n{\n" + body + "}\n"


def bodies_function(p: Passes) -> str:
    """Emits fwd_dyn_bodies (every model has a body)."""
    return "\n" + FUNCTION["fwd_dyn_bodies"].header() + "\n{\n" + _indent(p.bodies) + "}\n"


def stepper_functions(p: Passes) -> str:
    """Emits fwd_dyn_drift with its quaternion helpers, and fwd_dyn_sim with the dampers' power (stepper.py)."""
    return drift_function(p.model) + sim_function(p.model, p.power)


def part(k: int, text: str) -> str:
    """`text` as part k of a source that compiles whole, or one part per translation unit with -DMD_PART=k."""
    return f"\n#if !defined(MD_PART) || MD_PART == {k}\n{text}#endif /* part {k} */\n"


def generate(model: Model) -> Generated:
    """The C translation unit for `model`: the passes, then the sections in file order. A staged model's stage
    functions (simd.py) are two more parts of the file, which build.py compiles in parallel with the rest."""
    p = passes(model)
    fwd_stages, fwd = forward_function(p)
    batch_stages, batch = batch_functions(p)
    head = header_comment(p) + includes() + helpers(p) + declared.extern(model)
    body = "".join([declared.c_block(model), constants(p), fwd, batch, observe_function(p), bodies_function(p), find_function(p.model),
                    stepper_functions(p)])
    if not fwd_stages:
        return Generated(model, head + body, p.ops, p.nobs, p.route)
    source = head + "".join([PARTS_NOTE, part(0, body), part(1, fwd_stages), part(2, batch_stages)])
    return Generated(model, source, p.ops, p.nobs, p.route, parts=3)


PARTS_NOTE = ("\n/* Three parts: the API (0), fwd_dyn's stages (1), fwd_dyn_batch4's stages (2). The file compiles "
              "whole, or\n * one part per translation unit with -DMD_PART=0, 1 or 2 (mechdyn compiles them in "
              "parallel and links them). */\n")


DERIV_SPLIT = 8000  # fwd_dyn_derivs longer than this many statements is emitted as stage functions in two parts
# The straight-line route is taken only up to this many operations, whatever the loop route costs: gcc's time grows
# with a unit's length (hmmwv_pitman's 235,182 take about 50 s), and past this it would take minutes
STRAIGHT_MAX = 300_000
DERIV_STAGE = 2000  # statements per stage: the derivatives are compiled on first use, so compile time counts
_DERIV_PARAMS = ", ".join(DERIV_FUNCTION["fwd_dyn_derivs"].params)
_DERIV_ARGS = "q, qd, tau, fext, act, qdd, dq, dqd, dtau, dact, dfext"


def derivatives_unit(model: Model, route: str | None = None) -> Generated:
    """The derivatives' translation unit: fwd_dyn_derivs on the model with its frames slid, its batched twin,
    the sizes and the operation count, by the cheaper of the two routes: straight-line (derivs.py) or loops over
    the tree's tables (derivs_loop.py). The straight-line builder is abandoned once it has emitted more
    operations than the loop route costs or than STRAIGHT_MAX. A long straight-line body is cut into stage
    functions (simd.py), their halves compiled as two parts side by side. `route` ("straight" or "loop") takes
    that route whatever it costs."""
    m = slid(model)[1]
    loop = None if route == "straight" else derivs_loop.loop_route(m)
    if route == "loop":
        return _loop_unit(model, loop)
    loop_flops = None if loop is None else loop.flops
    budget = None if loop_flops is None else min(loop_flops, STRAIGHT_MAX)
    if budget is not None and derivs_loop.straight_solves_at_least(m) > budget:
        return _loop_unit(model, loop)  # not worth building the straight-line route to find out
    try:
        b, blocks = derivatives_builder(m, budget=budget)
    except OverBudget:
        return _loop_unit(model, loop)
    clear = stored(b, blocks)
    lines, ops = b.finish(sincos=False, scheduled=True)
    flops = sum(ops[o] for o in OPS_COUNTED)
    if loop_flops is not None and flops > loop_flops:
        return _loop_unit(model, loop)
    stages: list[str] = []
    protos = ""
    if len(lines) > DERIV_SPLIT:
        stages, protos, body = forward_stages(b.angles, lines, "fwd_dyn_derivs_stage", _DERIV_PARAMS, _DERIV_ARGS,
                                              DERIV_STAGE)
    else:
        body = sincos_batch(b.angles) + lines
    head = _deriv_head(model, "straight-line", flops, bool(b.angles), ops["sqrt"] > 0)
    api = _deriv_api(model, flops, protos, null_guards(m) + clear + body) + dparam_function(model, m)
    how = ("straight-line, the forward pass included: its factor (the LᵀDL, with loops the KKT system's) reused for "
           "every column")
    if not stages:
        return Generated(model, head + api, ops, 0, None, how=how)
    half = (len(stages) + 1) // 2
    return Generated(model, head + part(0, api) + part(1, "".join(stages[:half])) + part(2, "".join(stages[half:])),
                     ops, 0, None, parts=3, how=how)


def stored(b: Builder, blocks: dict[str, list[list[Val]]]) -> list[str]:
    """Stores every block's nonzero entries in b; returns the statements that zero the rest first."""
    clear = []
    for name, rows in blocks.items():
        if name != "qdd" and rows[0]:
            clear.append(f"memset({name}, 0, sizeof(double) * {len(rows) * len(rows[0])});")
        for i, row in enumerate(rows):
            for j, x in enumerate(row):
                if x != 0.0 or name == "qdd":
                    b.store(f"{name}[{i * len(row) + j}]", x)
    return clear


def dparam_function(model: Model, m: Model) -> str:
    """fwd_dyn_dparams (capi.PARAM_FUNCTION) on m, the model with its frames slid: qdd and its derivatives along
    the declared parameters, by the straight-line route, and fwd_dyn_dparams_ops, its operation count ("" for a
    model without parameters). Past STRAIGHT_MAX operations it is not built: its outputs are NaN and the count
    is 0, which Dynamics.param_derivatives refuses, saying why."""
    if not read_by_c(model):
        return ""
    try:
        b, blocks = derivatives_builder(m, budget=STRAIGHT_MAX, blocks=("dparam",))
    except OverBudget:
        n = model.nv * (1 + size(model))
        return (f"\nconst long fwd_dyn_dparams_ops = 0;  /* over {STRAIGHT_MAX} operations by the straight-line "
                f"route: not built */\n{PARAM_FUNCTION.header()}\n{{\n"
                f"    (void)q; (void)qd; (void)tau; (void)fext; (void)act;\n"
                f"    for (int i = 0; i < {model.nv}; ++i) qdd[i] = NAN;\n"
                f"    for (long i = 0; i < {n - model.nv}L; ++i) dparam[i] = NAN;\n}}\n")
    clear = stored(b, blocks)
    lines, ops = b.finish(sincos=False, scheduled=True)
    return (f"\nconst long fwd_dyn_dparams_ops = {sum(ops[o] for o in OPS_COUNTED)};\n" + PARAM_FUNCTION.header()
            + "\n{\n" + _indent(null_guards(m) + clear + sincos_batch(b.angles) + lines) + "}\n")


def _loop_unit(model: Model, loop: derivs_loop.LoopRoute) -> Generated:
    """The derivatives' unit by the loop route (derivs_loop.py); the loops' operations are counted under "+" (their
    count is not split by kind). Long straight-line parts' stages are two more parts, compiled side by side."""
    ops = loop.ops + Counter({"+": loop.kernel})
    head = _deriv_head(model, "loop", loop.flops, loop.trig, ops["sqrt"] > 0)
    m = slid(model)[1]
    api = loop.text + _deriv_api(model, loop.flops, "", null_guards(m) + loop.body, loops=True) + dparam_function(model, m)
    how = ("the loop route: the inverse dynamics' derivatives and articulated-body solves over the tree's tables, "
           "per independent component")
    if not loop.stages:
        return Generated(model, head + api, ops, 0, None, how=how)
    half = (len(loop.stages) + 1) // 2
    return Generated(model, head + part(0, api) + part(1, "".join(loop.stages[:half]))
                     + part(2, "".join(loop.stages[half:])), ops, 0, None, parts=3, how=how)


def _deriv_head(model: Model, how: str, flops: int, trig: bool, sqrt: bool) -> str:
    m = model
    return (f"/* Derivatives of the forward dynamics of model '{m.name}', generated by mechdyn (generator version "
            f"{GENERATOR_VERSION}), {how} route.\n * nq {m.nq}, nv {m.nv}, act slots {m.nact}; {flops} operations "
            "per call. Conventions: docs/derivatives.md. Do not edit. */\n"
            + includes() + VECTOR_TYPES + (SINCOS_C if trig else "") + (SQRT_C if sqrt else "")
            + declared.extern(model))


def _deriv_api(model: Model, flops: int, protos: str, body: list[str], loops: bool = False) -> str:
    """The sizes, fwd_dyn_derivs around `body` and its batched twin."""
    m = model
    values = {"fwd_dyn_derivs_nv": m.nv, "fwd_dyn_derivs_nact": m.nact, "fwd_dyn_derivs_nbody": m.nbody,
              "fwd_dyn_derivs_flops": flops, "fwd_dyn_derivs_loops": int(loops)}
    nq, nv, na, nf = m.nq, m.nv, m.nact, 6 * m.nbody
    step = {"q": nq, "qd": nv, "tau": nv, "fext": nf, "act": na, "qdd": nv, "dq": nv * nv, "dqd": nv * nv,
            "dtau": nv * nv, "dact": nv * na, "dfext": nv * nf}
    at = lambda a: f"{a} + (long)k * {step[a]}"  # noqa: E731
    call = ", ".join([at("q"), at("qd"), at("tau"), f"fext ? {at('fext')} : 0", f"act ? {at('act')} : 0",
                      *(at(x) for x in ("qdd", "dq", "dqd", "dtau", "dact", "dfext"))])
    return (declared.c_block(m, "fwd_dyn_derivs") + "\n"
            + "".join(DERIV_CONSTANT[n].definition(v) + "\n" for n, v in values.items())
            + "\n" + protos + DERIV_FUNCTION["fwd_dyn_derivs"].header() + "\n{\n" + _indent(body)
            + "}\n\n" + DERIV_FUNCTION["fwd_dyn_derivs_batch"].header() + "\n{\n"
            + f"    for (int k = 0; k < n; ++k)\n        fwd_dyn_derivs({call});\n}}\n")
