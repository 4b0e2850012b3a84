"""Pass 5 (articulated-body route): H⁻¹ applied to generalized forces in O(n), by the articulated-body
algorithm (RBDA §7.3) split in the two parts that method 2 of the loop solve needs (RBDA §8.5):

- `articulated_inertias`, the configuration part, once per call: every body's articulated inertia IA
  (leaves first), with U = IA S, D = Sᵀ U, and the inertia Ia = IA − U D⁻¹ Uᵀ it hands to its parent;
- `apply_Hinv`, the per-right-hand-side part: the backward pass of the articulated bias forces pA and the
  forward pass of the accelerations a. The velocity and gravity terms enter as the bodies' forces at
  qdd = 0 (rnea.body_forces) starting the first right-hand side's pA, and a loop's constraint force as the
  force on its two bodies.

`loop_solve` needs no forward pass per constraint row: the backward pass is u = P τ and the forward pass
qdd = Pᵀ D⁻¹ u, so K H⁻¹ Kᵀ and K qdd0 are sums over the bodies of the backward passes' outputs.

Everything is symbolic, so the structural zeros fold as in the CRBA: a planar chain's articulated inertias
keep their out-of-plane entries zero, and what no output reads is dropped with the dead temporaries.

A single-DOF joint's S is a unit column e_c, so U is column c of IA, D its diagonal entry, and Ia has row
and column c exactly zero (Ia e_c = U − U D/D), which is written as such rather than left to cancel. A
floating body (always a root) has S = 1: its U and D are IA itself, solved by a 6 × 6 LᵀDL (ltdl.py), and
it hands nothing on.
"""
from __future__ import annotations

from dataclasses import dataclass

from mechdyn.core.model import BASE, Model

from .crba import body_inertia
from .elements import element_forces
from .expr import Builder, Sym, Val
from .kinematics import TreeKinematics
from .loops import Wrench
from .kkt import zero_pivot
from .ltdl import ltdl_factor, ltdl_forward, ltdl_solve
from .rnea import body_forces
from .sspatial import Mat3, Rbi, Vec3, Vec6, mm, transpose, xf_force_T, xf_motion

Sym6 = list[list[Val]]  # a symmetric 6 × 6, both triangles holding the same values

CHAIN6 = [-1, 0, 1, 2, 3, 4]  # the parent array of a dense 6 × 6 block (ltdl.py)


def skew(r: Vec3) -> Mat3:
    """r× as a matrix, for generation-time or symbolic r."""
    neg = lambda x: -x  # noqa: E731  (a float or a Sym: negation is free)
    return [[0.0, neg(r[2]), r[1]], [r[2], 0.0, neg(r[0])], [neg(r[1]), r[0], 0.0]]


def rbi_matrix(I: Rbi) -> Sym6:
    """The 6 × 6 of a rigid-body inertia: [[Ī, h×], [(h×)ᵀ, m 1]] (sspatial.Rbi's convention)."""
    hx = skew(I.h)
    M: Sym6 = [[0.0] * 6 for _ in range(6)]
    for i in range(3):
        for j in range(3):
            M[i][j] = I.I[max(i, j)][min(i, j)]
            M[i][3 + j] = hx[i][j]
            M[3 + j][i] = hx[i][j]
        M[3 + i][3 + i] = I.m
    return M


def block(M: Sym6, r: int, c: int) -> Mat3:
    """The 3 × 3 block of M at block row r, block column c."""
    return [[M[3 * r + i][3 * c + j] for j in range(3)] for i in range(3)]


def sym6_to_parent(b: Builder, X, M: Sym6) -> Sym6:
    """Xᵀ M X for X = [[E, 0], [−E r×, E]]: an articulated inertia in child coordinates re-expressed in the
    parent's. With M = [[A, B], [Bᵀ, C]] rotated first (A₁ = Eᵀ A E, and B₁, C₁ alike), the shift by r gives
    C' = C₁, B' = B₁ + r× C₁ and A' = A₁ + r× B₁ᵀ − B' r×; only lower triangles are formed."""
    E, Et, rx = X.E, transpose(X.E), skew(X.r)
    rot = lambda P: mm(b, Et, mm(b, P, E))  # noqa: E731
    A1, B1, C1 = rot(block(M, 0, 0)), rot(block(M, 0, 1)), rot(block(M, 1, 1))
    B = [[b.add(B1[i][j], b.dot(rx[i], [C1[k][j] for k in range(3)])) for j in range(3)] for i in range(3)]
    out: Sym6 = [[0.0] * 6 for _ in range(6)]
    for i in range(3):
        for j in range(i + 1):
            rxB1t = b.dot(rx[i], B1[j])  # (r× B₁ᵀ)_ij = Σ_k r×_ik B₁_jk
            Brx = b.dot(B[i], [rx[k][j] for k in range(3)])
            out[i][j] = out[j][i] = b.sub(b.add(A1[i][j], rxB1t), Brx)
            out[3 + i][3 + j] = out[3 + j][3 + i] = C1[i][j]
        for j in range(3):
            out[i][3 + j] = out[3 + j][i] = B[i][j]
    return out


def sym6_add(b: Builder, P: Sym6, Q: Sym6) -> Sym6:
    out: Sym6 = [[0.0] * 6 for _ in range(6)]
    for i in range(6):
        for j in range(i + 1):
            out[i][j] = out[j][i] = b.add(P[i][j], Q[i][j])
    return out


def leaves_first(model: Model) -> list[int]:
    """The bodies from the last to the first: every child before its parent, one branch after another. The
    backward sweeps carry a whole articulated inertia or 1 + nc bias forces per body, more than the registers
    hold, so two branches' side by side would only add spills (docs/performance.md)."""
    return list(range(model.nbody - 1, -1, -1))


def roots_first(model: Model) -> list[int]:
    """The bodies by depth below the base, then by index: every parent before its children, and independent
    branches (a vehicle's two bands) a body of each in turn, so that the forward pass's chains of dependent
    operations, which carry only an acceleration per body, are emitted side by side."""
    depth = [0] * model.nbody
    for i, bd in enumerate(model.bodies):
        depth[i] = 0 if bd.parent == BASE else depth[bd.parent] + 1
    return sorted(range(model.nbody), key=lambda i: (depth[i], i))


def joint_column(kin: TreeKinematics, i: int) -> int:
    """The index c of a single-DOF body's S = e_c."""
    (s,) = kin.S[i]
    return s.index(1.0)


@dataclass(frozen=True)
class Articulated:
    """The configuration part of the articulated-body algorithm, per body."""
    IA: list[Sym6]  # articulated inertias, body coordinates
    U: list[Vec6]  # IA S (single-DOF bodies; unused for floating ones)
    Dinv: list[Val]  # 1 / Sᵀ IA S (single-DOF bodies)


def handed_on(b: Builder, IA: Sym6, U: Vec6, Dinv: Val, c: int) -> Sym6:
    """Ia = IA − U D⁻¹ Uᵀ, the inertia a single-DOF body hands its parent; row and column c are zero. The
    seam tests replace to plant a dropped term."""
    W = [b.mul(u, Dinv) for u in U]
    Ia: Sym6 = [[0.0] * 6 for _ in range(6)]
    for i in range(6):
        for j in range(i + 1):
            if c not in (i, j):
                Ia[i][j] = Ia[j][i] = b.sub(IA[i][j], b.mul(W[i], U[j]))
    return Ia


def articulated_inertias(b: Builder, kin: TreeKinematics) -> Articulated:
    """IA, U and D⁻¹ of every body, leaves first: IA_i = I_i + Σ_children Xᵀ Ia_child X."""
    model = kin.model
    IA = [rbi_matrix(body_inertia(b, model, i)) for i in range(model.nbody)]
    U: list[Vec6] = [[] for _ in range(model.nbody)]
    Dinv: list[Val] = [0.0] * model.nbody
    for i in leaves_first(model):
        bd = model.bodies[i]
        if bd.joint == "floating":
            continue  # a root: its IA is solved whole (apply_Hinv) and handed to no one
        with b.at(model.path, bd.line, f"body '{bd.name}'"):
            c = joint_column(kin, i)
            U[i] = [IA[i][r][c] for r in range(6)]
            Dinv[i] = b.div(1.0, IA[i][c][c])
            if bd.parent != BASE:
                Ia = handed_on(b, IA[i], U[i], Dinv[i], c)
                IA[bd.parent] = sym6_add(b, IA[bd.parent], sym6_to_parent(b, kin.Xup[i], Ia))
    return Articulated(IA, U, Dinv)


def bias_to_parent(b: Builder, kin: TreeKinematics, i: int, pA: Vec6, U: Vec6, ud: Val) -> Vec6:
    """Xᵀ (pA + U D⁻¹ u): body i's articulated bias force as its parent sees it. The seam tests replace to
    plant a sign error."""
    return xf_force_T(b, kin.Xup[i], [b.add(p, b.mul(x, ud)) for p, x in zip(pA, U)])


def backward_pass(b: Builder, kin: TreeKinematics, art: Articulated, taus: list[list[Val]],
                  forces: list[list[tuple[int, Vec6]]] | None = None) -> list[list[list[Val]]]:
    """u = τ − Sᵀ pA for every body, leaves first, each handing Xᵀ (pA + U D⁻¹ u) to its parent's pA; for every
    right-hand side in `taus` at once, body by body, so that their chains are emitted side by side. `forces`, per
    right-hand side, starts bodies' pA: the bodies' forces at qdd = 0 (rnea.body_forces) make that right-hand
    side's u the one of τ − C, without C's own backward sweep, and a force −f on a body that of the generalized
    force of f applied to it."""
    model = kin.model
    pA: list[list[Vec6]] = [[[0.0] * 6 for _ in range(model.nbody)] for _ in taus]
    for p, start in zip(pA, forces or []):
        for i, f in start:
            p[i] = [b.add(x, y) for x, y in zip(p[i], f)]
    u: list[list[list[Val]]] = [[[] for _ in range(model.nbody)] for _ in taus]
    for i in leaves_first(model):
        bd, v0 = model.bodies[i], model.vidx[i]
        for tau, p, ui in zip(taus, pA, u):
            if bd.joint == "floating":  # a root: S = 1
                ui[i] = [b.sub(tau[v0 + k], p[i][k]) for k in range(6)]
                continue
            ui[i] = [b.sub(tau[v0], p[i][joint_column(kin, i)])]
            if bd.parent != BASE:
                up = bias_to_parent(b, kin, i, p[i], art.U[i], b.mul(ui[i][0], art.Dinv[i]))
                p[bd.parent] = [b.add(x, y) for x, y in zip(p[bd.parent], up)]
    return u


def forward_pass(b: Builder, kin: TreeKinematics, art: Articulated, us: list[list[list[Val]]]) -> list[list[Val]]:
    """qdd = D⁻¹ (u − Uᵀ a) with a = X a_parent, then a += S qdd, roots first, for every right-hand side at once;
    a floating root solves IA qdd = u whole (6 × 6 LᵀDL), and its a is its qdd."""
    model = kin.model
    qdd: list[list[Val]] = [[0.0] * model.nv for _ in us]
    a: list[list[Vec6]] = [[[0.0] * 6 for _ in range(model.nbody)] for _ in us]
    for i in roots_first(model):
        bd, v0 = model.bodies[i], model.vidx[i]
        for u, x, ak in zip(us, qdd, a):
            if bd.joint == "floating":
                IA = art.IA[i]
                ak[i] = ltdl_forward(b, {(r, s): IA[r][s] for r in range(6) for s in range(r + 1)}, CHAIN6, u[i],
                                     [range(6)])
                x[v0:v0 + 6] = ak[i]
                continue
            c = joint_column(kin, i)
            ai = [0.0] * 6 if bd.parent == BASE else xf_motion(b, kin.Xup[i], ak[bd.parent])
            x[v0] = b.mul(b.sub(u[i][0], b.dot(art.U[i], ai)), art.Dinv[i])
            ai[c] = b.add(ai[c], x[v0])
            ak[i] = ai
    return qdd


def apply_Hinv(b: Builder, kin: TreeKinematics, art: Articulated, taus: list[list[Val]],
               forces: list[list[tuple[int, Vec6]]] | None = None) -> list[list[Val]]:
    """H⁻¹ τ for every τ in `taus`, with the bodies' `forces` (backward_pass) of each: the two per-right-hand-side
    passes of the articulated-body algorithm. The right-hand sides share nothing but the factor, so their passes
    are emitted body by body side by side: a long function keeps the emitted order (schedule.py), and the core
    overlaps chains that are near each other in it, not whole passes one after another."""
    return forward_pass(b, kin, art, backward_pass(b, kin, art, taus, forces))


def loop_columns(rows: list[Wrench]) -> list[list[tuple[int, Vec6]]]:
    """The columns of Kᵀ as bodies' starting pA (backward_pass), one right-hand side per constraint row:
    Kᵀ e_j is T_j applied to its loop's successor and −T_j to its predecessor."""
    return [[(r.succ, [-x for x in r.T_succ])] + ([(r.pred, r.T_pred)] if r.T_pred is not None else []) for r in rows]


def weighted(b: Builder, kin: TreeKinematics, art: Articulated, u: list[list[Val]]) -> list[list[Val]]:
    """D⁻¹ u body by body: u D⁻¹ for a single-DOF body, IA⁻¹ u by the 6 × 6 LᵀDL for a floating root."""
    out: list[list[Val]] = []
    for i, bd in enumerate(kin.model.bodies):
        if bd.joint == "floating":
            IA = art.IA[i]
            out.append(ltdl_forward(b, {(r, s): IA[r][s] for r in range(6) for s in range(r + 1)}, CHAIN6, u[i],
                                    [range(6)]))
        else:
            out.append([b.mul(u[i][0], art.Dinv[i])])
    return out


def inner(b: Builder, w: list[list[Val]], u: list[list[Val]]) -> Val:
    """Σ_i w_iᵀ u_i over the bodies: with w = D⁻¹ x, the product xᵀ D⁻¹ u of two backward passes' outputs."""
    return b.sum(*(b.dot(wi, ui) for wi, ui in zip(w, u)))


def loop_solve(b: Builder, kin: TreeKinematics, art: Articulated, rhs: list[Val], bias: list[Vec6],
               rows: list[Wrench]) -> list[Val]:
    """qdd by method 2 (RBDA §8.5) through the articulated-body factor, with one forward pass.

    The backward pass is u = P τ for a unit triangular P, and the forward pass is qdd = Pᵀ D⁻¹ u (D the
    joints' D and a floating root's IA): H⁻¹ = Pᵀ D⁻¹ P, the LDU factorization being unique. So the backward
    passes of the 1 + nc right-hand sides τ − C + Q (`rhs` = τ + Q with the bodies' `bias` forces) and the
    columns of Kᵀ (loop_columns) give everything method 2 needs:
    A = K H⁻¹ Kᵀ = (P Kᵀ)ᵀ D⁻¹ (P Kᵀ) and K qdd0 = (P Kᵀ)ᵀ D⁻¹ u0 as sums over the bodies, λ from
    A λ = k − K qdd0 by a dense LᵀDL (λ = −μ of kkt.py's system), and qdd = H⁻¹ (τ − C + Q + Kᵀ λ) by one
    forward pass of u0 + Σ λ_j u_j. A column's u is zero off its loop's paths (folded), so a closure costs a
    backward pass along its loop, not a solve over the whole tree."""
    zero: list[Val] = [0.0] * kin.model.nv
    cols = loop_columns(rows)
    u0, *uK = backward_pass(b, kin, art, [rhs, *[zero] * len(cols)], [list(enumerate(bias)), *cols])
    w = [weighted(b, kin, art, u) for u in uK]
    A = {(r, s): inner(b, w[r], uK[s]) for r in range(len(rows)) for s in range(r + 1)}
    e = [b.sub(r.k, inner(b, wr, u0)) for wr, r in zip(w, rows)]
    chain = list(range(-1, len(rows) - 1))  # A is dense: its parent array is a chain
    L, Dinv = ltdl_factor(b, A, chain, zero=lambda r: zero_pivot(kin.model, ("c", r)))
    lam = ltdl_solve(b, L, Dinv, chain, e)
    return forward_pass(b, kin, art, [corrected(b, u0, uK, lam)])[0]


def corrected(b: Builder, u0: list[list[Val]], uK: list[list[list[Val]]], lam: list[Val]) -> list[list[Val]]:
    """u0 + Σ λ_j u_j, body by body: the backward pass of τ − C + Q + Kᵀ λ. The seam tests replace to plant an
    omitted right-hand side."""
    return [[b.sum(x, *(b.mul(l, uj[i][m]) for l, uj in zip(lam, uK))) for m, x in enumerate(ui)]
            for i, ui in enumerate(u0)]


def tree_passes(b: Builder, kin: TreeKinematics) -> list[Val]:
    """The outputs of this route's tree passes: the articulated inertias' U and D⁻¹ (a floating root's whole IA),
    the backward pass of τ − C and Q; what a frame search (frames.py) counts for it."""
    art = articulated_inertias(b, kin)
    whole = lambda M: [x for row in M for x in row]  # noqa: E731
    factor = [x for i, bd in enumerate(kin.model.bodies)
              for x in (whole(art.IA[i]) if bd.joint == "floating" else [*art.U[i], art.Dinv[i]])]
    tau = [Sym(f"tau[{i}]") for i in range(kin.model.nv)]
    (u,) = backward_pass(b, kin, art, [tau], [list(enumerate(body_forces(b, kin)))])
    return [*factor, *(x for ui in u for x in ui), *element_forces(b, kin).values()]
