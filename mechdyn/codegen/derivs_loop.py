"""Pass 7, the loop route: fwd_dyn_derivs as loops over the tree's tables, for the models whose straight-line
derivatives (derivs.py) would cost more operations or would not compile in reasonable time.

The work that grows faster than the tree is written once, in C (tree_derivs.c), and reads the model from
generated tables: the analytic derivatives of the recursive Newton–Euler inverse dynamics in world coordinates
(Carpentier and Mansard, RSS 2018), and the solves: H⁻¹ by the articulated-body recursion, a Schur complement
for the loop and driver rows, each over one independent component (the trees that no loop or element joins). What stays
straight-line is what is small and model-specific, generated as everywhere else: each body's pose, the
elements' forces and the loops' rows (`pre`), and, once qdd and μ are known, the derivatives of the elements'
forces and of the loops' terms Kᵀμ and K qdd − k by forward mode along the tape (`post`). The operation count
is exact: the straight-line parts' by their builders, the loops' by `kernel_ops`, which mirrors their trip
counts (a test checks it against the C's own count).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mechdyn.core.model import BASE, Model

from .elements import element_forces
from .expr import OPS_COUNTED, Builder, Sym, Val, c_text, lit
from .simd import forward_stages
from .trig import batch as sincos_batch
from .kinematics import TreeKinematics, motion_subspace
from .loops import as_K, loop_rows
from .ltdl import expanded_parents
from .tangent import derivatives
from . import declared, derivs, driven

KERNEL = Path(__file__).with_name("tree_derivs.c")
STAGE_PAST, STAGE = 8000, 2000  # as the straight-line route's (generate.DERIV_SPLIT, DERIV_STAGE)


def _find(parent: list[int], x: int) -> int:
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def components(model: Model, coupled: list[tuple[int, int]],
               row_dofs: list[list[int]]) -> tuple[list[list[int]], list[list[int]], list[int]]:
    """The coordinates and loop rows of each independent component, and each body's component: bodies joined by
    the tree, by any coupled pair of coordinates (an element's or a loop term's derivative), or by a loop row."""
    nb = model.nbody
    up = list(range(nb))

    def join(a: int, b: int) -> None:
        ra, rb = _find(up, a), _find(up, b)
        if ra != rb:
            up[max(ra, rb)] = min(ra, rb)

    dbody = [i for i, bd in enumerate(model.bodies) for _ in range(bd.nv)]
    for i, bd in enumerate(model.bodies):
        if bd.parent != BASE:
            join(i, bd.parent)
    for i, j in coupled:
        join(dbody[i], dbody[j])
    for dofs in row_dofs:
        for j in dofs[1:]:
            join(dbody[dofs[0]], dbody[j])
    roots = sorted({_find(up, b) for b in range(nb)})
    index = {r: c for c, r in enumerate(roots)}
    bcomp = [index[_find(up, b)] for b in range(nb)]
    comps: list[list[int]] = [[] for _ in roots]
    for j, b in enumerate(dbody):
        comps[bcomp[b]].append(j)
    rows: list[list[int]] = [[] for _ in roots]
    for r, dofs in enumerate(row_dofs):
        rows[bcomp[dbody[dofs[0]]] if dofs else 0].append(r)
    return comps, rows, bcomp


def pre_builder(model: Model) -> Builder:
    """The straight-line part before the solve: every body's pose (E: world to body coordinates, r: its origin)
    into pose[12 i ..], the elements' generalized forces into Q, and the loops' rows K (nc × nv) and k."""
    b = Builder(path=model.path)
    kin = TreeKinematics(b, model)
    for i in range(model.nbody):
        X = kin.X0(i)
        for r in range(3):
            for c in range(3):
                b.store(f"pose[{12 * i + 3 * r + c}]", X.E[r][c])
            b.store(f"pose[{12 * i + 9 + r}]", X.r[r])
    for i, x in element_forces(b, kin).items():
        b.store(f"Q[{i}]", x)
    for c, (K, k) in enumerate(rows(b, kin)):
        for j, x in K.items():
            b.store(f"K[{model.nv * c + j}]", x)
        b.store(f"k[{c}]", k)
    return b


def rows(b: Builder, kin: TreeKinematics) -> list[tuple[dict[int, Val], Val]]:
    """The loops' rows (K as {coordinate: value}, k), then one row per driver: qdd_d = act_d, its multiplier the
    driver's force (the partitioned solve of driven.py, written as constraint rows)."""
    model, out = kin.model, []
    for lp in model.loops:
        with b.at(model.path, lp.line, f"loop '{lp.name}'"):
            out += loop_rows(b, kin, lp, as_K)
    return out + [({d: 1.0}, a) for d, a in zip(model.driven, driven.accelerations(model))]


def post_builder(model: Model) -> tuple[Builder, list[tuple[int, int]], list[list[int]]]:
    """The straight-line part after the solve: with qdd and μ held (read from their arrays), the derivatives of
    e = Kᵀμ − Q added into the residual's Dq, Dqd (in dq, dqd) and written into Da (in dact), and those of
    g = K qdd − k into Gq, Gqd, Ga. Also the coupled coordinate pairs and each loop row's coordinates."""
    b = Builder(path=model.path)
    kin = TreeKinematics(b, model)
    nv, na = model.nv, model.nact
    Q = element_forces(b, kin)
    rs = rows(b, kin)
    mu = [Sym(f"mu[{c}]") for c in range(len(rs))]
    a = [Sym(f"qdd[{j}]") for j in range(nv)]
    e = [b.sub(b.sum(*(b.mul(K.get(i, 0.0), mu[c]) for c, (K, _) in enumerate(rs))), Q.get(i, 0.0))
         for i in range(nv)]
    g = [b.sub(b.sum(*(b.mul(x, a[j]) for j, x in K.items())), k) for K, k in rs]
    seed = derivs.seeds(b, model)
    d = derivatives(b, e + g, lambda name: seed.get(name, {}))
    coupled = []
    targets = {"q": ("dq", "Gq", nv), "v": ("dqd", "Gqd", nv), "a": ("dact", "Ga", na)}
    for i, t in enumerate(d):
        for (kind, j), x in sorted(t.items()):
            if kind == "f":
                raise AssertionError("an element or loop row reads fext")  # they never do (elements.py, loops.py)
            rdst, gdst, width = targets[kind]
            if i < nv:
                if kind in "qv":
                    coupled.append((i, j))
                op = "+=" if kind in "qv" else "="
                b.stmt(f"{rdst}[{width * i + j}] {op} {c_text(x)};", x)
            else:
                b.stmt(f"{gdst}[{width * (i - nv) + j}] = {c_text(x)};", x)
    return b, coupled, [sorted(K) for K, _ in rs]


@dataclass(frozen=True)
class Layout:
    """The tree and its components as tree_derivs.c reads them (td_model)."""
    model: Model
    comps: list[list[int]]  # the coordinates of each component, ascending
    rows: list[list[int]]  # the loop rows of each component
    bcomp: list[int]  # each body's component

    @property
    def dloc(self) -> list[int]:
        """Each coordinate's position within its component."""
        out = [0] * self.model.nv
        for dofs in self.comps:
            for k, j in enumerate(dofs):
                out[j] = k
        return out

    @property
    def cbody(self) -> list[list[int]]:
        """The bodies of each component, in tree order."""
        out: list[list[int]] = [[] for _ in self.comps]
        for b, c in enumerate(self.bcomp):
            out[c].append(b)
        return out


def _array(ctype: str, name: str, values) -> str:
    text = ", ".join(lit(float(v)) if ctype == "double" else str(int(v)) for v in values) or "0"
    return f"static const {ctype} {name}[] = {{{text}}};\n"


def declared_inertias(model: Model) -> bool:
    """Whether a body's mass, CG or inertia is a declared parameter: then td_inertias fills the tables per call."""
    return any(p.kind == "body" and p.field != "xtree" for p in model.params)


def inertias_builder(model: Model) -> Builder:
    """td_inertias: every body's mass, CG and inertia about the CG (row-major) in its generated frame, from the
    thread's parameter vector where declared, constants elsewhere (declared.py)."""
    b = Builder(path=model.path)
    for i in range(model.nbody):
        b.store(f"mass[{i}]", declared.mass(model, i))
        for k, x in enumerate(declared.cg(b, model, i)):
            b.store(f"cg[{3 * i + k}]", x)
        for k, x in enumerate(x for row in declared.inertia(b, model, i) for x in row):
            b.store(f"Icg[{9 * i + k}]", x)
    return b


def tables(lay: Layout) -> str:
    """The C tables and the td_model TD_MODEL over them (a model whose inertias are parameters: with NULL masses,
    CGs and inertias, which each call points at td_inertias' tables)."""
    m = lay.model
    bodies = m.bodies
    declared_ = declared_inertias(m)
    S = [float(x) for bd in bodies for col in motion_subspace(bd) for x in col]
    cstart = np.cumsum([0] + [len(c) for c in lay.comps]).tolist()
    rstart = np.cumsum([0] + [len(r) for r in lay.rows]).tolist()
    a0 = [0.0, 0.0, 0.0] + [-float(g) for g in m.gravity]
    text = "".join([
        _array("int", "td_bparent", [bd.parent if bd.parent != BASE else -1 for bd in bodies]),
        _array("int", "td_dbody", [i for i, bd in enumerate(bodies) for _ in range(bd.nv)]),
        _array("int", "td_dfirst", m.vidx), _array("int", "td_dcount", [bd.nv for bd in bodies]),
        _array("double", "td_S", S),
        *([] if declared_ else [_array("double", "td_mass", [bd.mass for bd in bodies]),
                                _array("double", "td_cg", [x for bd in bodies for x in bd.cg]),
                                _array("double", "td_Icg", [x for bd in bodies for row in bd.inertia for x in row])]),
        _array("double", "td_a0", a0), _array("int", "td_cstart", cstart),
        _array("int", "td_perm", [j for c in lay.comps for j in c]), _array("int", "td_dloc", lay.dloc),
        _array("int", "td_cbstart", np.cumsum([0] + [len(c) for c in lay.cbody]).tolist()),
        _array("int", "td_cbody", [b for c in lay.cbody for b in c]),
        _array("int", "td_rstart", rstart), _array("int", "td_rperm", [r for c in lay.rows for r in c]),
        _array("int", "td_bcomp", lay.bcomp), _array("int", "td_fextb", [int(bool(bd.fext)) for bd in bodies]),
    ])
    nc = sum(len(r) for r in lay.rows)
    return text + (
        f"static const td_model TD_MODEL = {{{m.nv}, {m.nbody}, {nc}, td_bparent, td_dbody, td_dfirst, td_dcount, "
        f"td_S, {'0, 0, 0' if declared_ else 'td_mass, td_cg, td_Icg'}, td_a0, {len(lay.comps)}, td_cstart, td_perm, "
        f"td_dloc, td_cbstart, td_cbody, "
        f"td_rstart, td_rperm, "
        f"td_bcomp, td_fextb, {sum(bool(bd.fext) for bd in bodies)}, {max(len(c) for c in lay.comps)}, "
        f"{max(len(r) for r in lay.rows)}}};\n")


def straight_solves_at_least(model: Model) -> int:
    """A lower bound on the straight-line route's operations, from its solves alone: the 2 nv columns of dq and dqd
    each a forward and a back substitution through the factor of H (LᵀDL, H's own pattern), whose right-hand sides
    fill at least their component (a coordinate's derivatives reach every coordinate of its tree), at one multiply
    and one add per factor entry and sweep."""
    lam = expanded_parents(model)
    root = []
    for j, p in enumerate(lam):
        root.append(j if p < 0 else root[p])
    size, nnz = Counter(root), Counter()
    for j in range(len(lam)):
        i = lam[j]
        while i >= 0:
            nnz[root[j]] += 1
            i = lam[i]
    return sum(2 * size[r] * 2 * 2 * nnz[r] for r in size)


def kernel_ops(lay: Layout) -> int:
    """The arithmetic operations of one call's loops (tree_derivs.c), counted as the C counts them (TD_OPS)."""
    m = lay.model
    nv, na, nb = m.nv, m.nact, m.nbody
    crm = crf = 30
    mv, dot, add = 66, 11, 6
    depth_b = []  # each body's coordinates on its support, itself included
    for bd in m.bodies:
        depth_b.append(bd.nv + (0 if bd.parent == BASE else depth_b[bd.parent]))
    roots = sum(bd.parent == BASE for bd in m.bodies)
    has_parent = [bd.parent != BASE for bd in m.bodies]

    def rnea(qdd: bool, full: bool) -> int:
        ops = nb * (crm + add + 2 * mv + crf + add) + (nb - roots) * 6 + (12 * nv if qdd else 0)
        ops += nb * (216 if full else 0)
        ops += nb * 6 + nv * dot + (nb - roots) * (2 * add + (add + 36 if full else 0))
        return ops

    def abi(b: int) -> int:
        k, P = m.bodies[b].nv, has_parent[b]
        inv = 1 if k == 1 else k * (1 + 2 * k + 4 * k * (k - 1))
        return k * mv + k * k * dot + inv + P * (6 * k * (2 * k - 1) + 36 * (2 * k + 1))

    def absolve(c: int, cols: int) -> int:  # per column, summed over the component's bodies
        per, touched = 0, set()  # a body's p is written by its first child (td_absolve)
        for b in reversed(lay.cbody[c]):
            k, p = m.bodies[b].nv, m.bodies[b].parent
            per += 12 * k * (b in touched)
            if p != BASE:
                per += 6 * (p in touched and b in touched) + k * (2 * k - 1) + 12 * k
                touched.add(p)
        for b in lay.cbody[c]:
            k = m.bodies[b].nv
            per += 12 * k * has_parent[b] + k * (2 * k - 1) + 12 * k
        return cols * per

    def chol(r: int) -> int:
        return sum(1 + 2 * j + (r - j - 1) * (2 * j + 1) for j in range(r))

    def cholsolve(r: int, cols: int) -> int:
        return 2 * (r * cols + cols * r * (r - 1))

    ops = nb * 152 + nv * 54  # kinematics
    ops += rnea(False, False) + (nb - roots) * 36 + sum(abi(b) for b in range(nb))
    for c, (dofs, rws) in enumerate(zip(lay.comps, lay.rows)):  # td_forward
        n, r = len(dofs), len(rws)
        ops += 2 * n + absolve(c, 1 + r) + r * (2 * n + r * 2 * n) + chol(r) + cholsolve(r, 1) + n * 2 * r
    ops += rnea(True, True) + nv * 618  # td_id_derivs
    ops += sum(depth_b[bd] * (5 * dot + 3) + (depth_b[bd] - m.bodies[bd].nv) * 2 * dot
               for bd in (i for i, b in enumerate(m.bodies) for _ in range(b.nv)))
    for c, (dofs, rws) in enumerate(zip(lay.comps, lay.rows)):  # td_finish
        n, r = len(dofs), len(rws)
        cols = 3 * n + na
        ops += absolve(c, cols)
        if r:
            ops += r * n * 2 * cols + cholsolve(r, cols) + n * r * 2 * cols
    if any(bd.fext for bd in m.bodies):
        ops += sum(bd.nv * len(lay.comps[lay.bcomp[i]]) * 12 for i, bd in enumerate(m.bodies))
    return ops


def _function(name: str, params: str, b: Builder) -> tuple[str, list[str], Counter]:
    """The static function `name` of b's statements, in emitted order; past STAGE_PAST statements it calls stage
    functions of STAGE statements instead (simd.py), returned apart for the unit's other parts."""
    lines, ops = b.finish(sincos=False)
    stages: list[str] = []
    if len(lines) > STAGE_PAST:
        args = ", ".join(p.rsplit("*", 1)[1] for p in params.split(", "))
        stages, protos, body = forward_stages(b.angles, lines, f"{name}_stage", params, args, STAGE)
    else:
        protos, body = "", sincos_batch(b.angles) + lines
    text = protos + f"static void {name}({params})\n{{\n" + "".join(f"    {ln}\n" for ln in body) + "}\n"
    return text, stages, ops


@dataclass(frozen=True)
class LoopRoute:
    """The loop route's C, in pieces for the unit (generate.derivatives_unit)."""
    text: str  # tree_derivs.c, the tables, td_pre and td_post
    stages: list[str]  # td_pre's and td_post's stage functions, if they are long
    body: list[str]  # fwd_dyn_derivs's statements
    ops: Counter  # the straight-line parts' operations by kind
    kernel: int  # the loops' operations
    trig: bool  # a sincos batch is used

    @property
    def flops(self) -> int:
        return sum(self.ops[o] for o in OPS_COUNTED) + self.kernel


def loop_route(model: Model) -> LoopRoute:
    """The loop route of `model` (its frames slid as fwd_dyn's)."""
    pre = pre_builder(model)
    post, coupled, row_dofs = post_builder(model)
    comps, rows, bcomp = components(model, coupled, row_dofs)
    lay = Layout(model, comps, rows, bcomp)
    nv, nb, na, nc = model.nv, model.nbody, model.nact, sum(len(r) for r in rows)
    pre_c, pre_stages, pre_ops = _function(
        "td_pre", "const double *q, const double *qd, const double *act, double *pose, double *Q, double *K, "
                  "double *k", pre)
    post_c, post_stages, post_ops = _function(
        "td_post", "const double *q, const double *qd, const double *act, const double *qdd, const double *mu, "
                   "double *dq, double *dqd, double *dact, double *Gq, double *Gqd, double *Ga", post)
    n1 = lambda x: max(x, 1)  # noqa: E731  (C arrays need a size)
    inert_c, inert_ops, model_at = "", Counter(), "&TD_MODEL"
    if declared_inertias(model):  # the tables of this call's parameter values, in a copy of the model's td_model
        inert_c, _, inert_ops = _function("td_inertias", "double *mass, double *cg, double *Icg",
                                          inertias_builder(model))
        model_at = "&M"
    body = [
        *([f"double mass_p[{nb}], cg_p[{3 * nb}], Icg_p[{9 * nb}];", "td_inertias(mass_p, cg_p, Icg_p);",
           "td_model M = TD_MODEL;", "M.mass = mass_p; M.cg = cg_p; M.Icg = Icg_p;"] if inert_c else []),
        f"double pose[{12 * nb}], Q[{nv}] = {{0}}, K[{n1(nc * nv)}] = {{0}}, k[{n1(nc)}] = {{0}}, mu[{n1(nc)}];",
        f"double Gq[{n1(nc * nv)}] = {{0}}, Gqd[{n1(nc * nv)}] = {{0}}, Ga[{n1(nc * na)}] = {{0}};",
        "td_work w;", "td_comp cw;",
        f"void *mem = td_begin({model_at}, {na}, &w, &cw);",
        "if (!mem) {  /* no memory: every output NaN rather than a silent wrong answer */",
        f"    for (int i = 0; i < {nv}; ++i) qdd[i] = NAN;",
        f"    for (long i = 0; i < {nv * nv}L; ++i) dq[i] = dqd[i] = dtau[i] = NAN;",
        f"    for (long i = 0; i < {nv * na}L; ++i) dact[i] = NAN;",
        f"    for (long i = 0; i < {nv * 6 * nb}L; ++i) dfext[i] = NAN;",
        "    return;",
        "}",
        f"memset(dq, 0, sizeof(double) * {nv * nv}L);", f"memset(dqd, 0, sizeof(double) * {nv * nv}L);",
        f"memset(dtau, 0, sizeof(double) * {nv * nv}L);", f"memset(dfext, 0, sizeof(double) * {nv * 6 * nb}L);",
        *([f"memset(dact, 0, sizeof(double) * {nv * na}L);"] if na else []),
        "td_pre(q, qd, act, pose, Q, K, k);",
        f"td_forward({model_at}, pose, qd, tau, fext, Q, K, k, &w, &cw, qdd, mu);",
        f"td_id_derivs({model_at}, qdd, fext, &w, dq, dqd);",
        "td_post(q, qd, act, qdd, mu, dq, dqd, dact, Gq, Gqd, Ga);",
        f"td_finish({model_at}, {na}, K, Gq, Gqd, Ga, &w, &cw, dq, dqd, dtau, dact, dfext);",
    ]
    text = (KERNEL.read_text() + "\n" + tables(lay) + "\n" + inert_c + pre_c + "\n" + post_c)
    ops = pre_ops + post_ops + inert_ops
    return LoopRoute(text, pre_stages + post_stages, body, ops, kernel_ops(lay), bool(pre.angles or post.angles))
