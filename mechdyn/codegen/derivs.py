"""Pass 7: the derivatives of the forward dynamics, ∂qdd/∂(q, qd, tau, act, fext), by the implicit-function theorem.

qdd solves H(q) qdd = rhs(q, qd, tau, act, fext), and with loops the KKT
system [H Kᵀ; K 0] [qdd; μ] = [rhs; k] (kkt.py). With the solution (qdd, μ)
held, the residuals

    r = H qdd + Kᵀ μ − rhs,     g = K qdd − k

vanish for every input, so along every direction x

    [H Kᵀ; K 0] [∂qdd/∂x; ∂μ/∂x] = −[∂r/∂x; ∂g/∂x],

where ∂r/∂x and ∂g/∂x are the forward-mode derivatives of the emitted
residuals (tangent.py). The system's factor is the forward pass's own (shared
by hash-consing); only the right-hand sides are new. The loops' Baumgarte
terms are in k, so they are differentiated with it. For tau, −∂r/∂tau = 1 and
∂g/∂tau = 0: ∂qdd/∂tau is H⁻¹, or the constrained inverse with loops.

A floating body is differentiated on its group, along q ∘ exp(δ) with
δ = [δφ; δp] in the body's own axes, the same six directions as its velocity
[ω; v] (docs/conventions.md): Q ↦ Q ⊗ (1, δφ/2), r ↦ r + R(Q) δp. The
system is always the CRBA route's (its factor serves every column), on the
model with its frames slid as fwd_dyn's (generate.py): q, qd and the blocks
mean what they mean on the model as written.
"""
from __future__ import annotations

from collections.abc import Hashable

from mechdyn.core.model import Model
from mechdyn.core.params import size

from . import declared, driven, kkt
from .equations import system
from .expr import Builder, Sym, Val
from .kinematics import quaternion_rotation_T
from .elements import element_forces
from .ltdl import expanded_parents, floating_blocks, ltdl_solver
from .rnea import bias_force
from .sspatial import cross
from .tangent import Tangent, derivatives

def _entry(d: dict, key: Hashable) -> Val:
    return d.get(key, 0.0)


def seeds(b: Builder, model: Model, params: bool = False) -> dict[str, Tangent]:
    """Each input slot's derivative along the directions ("q", j) (the tangent: q[j] for a single-DOF joint, δ for
    a floating body), ("v", j) (qd[j]), ("a", k) (act[k]) and ("f", k) (fext[k]); with `params`, ("p", k) (the
    declared parameter slot k; otherwise the parameters are held)."""
    out: dict[str, Tangent] = {}
    for i, bd in enumerate(model.bodies):
        qi, vi = model.qidx[i], model.vidx[i]
        if bd.joint != "floating":
            out[f"q[{qi}]"] = {("q", vi): 1.0}
            continue
        Q = [Sym(f"q[{qi + m}]") for m in range(4)]
        w, v = Q[0], Q[1:]
        for k in range(3):  # ½ Q ⊗ (0, e_k) = ½ (−v_k, w e_k + v × e_k)
            e = [1.0 if m == k else 0.0 for m in range(3)]
            dQ = [b.neg(v[k])] + [b.add(b.mul(w, e[m]), c) for m, c in enumerate(cross(b, v, e))]
            for m in range(4):
                out.setdefault(f"q[{qi + m}]", {})[("q", vi + k)] = b.mul(0.5, dQ[m])
        E = quaternion_rotation_T(b, Q)  # E = Rᵀ: r ↦ r + R δp, R[m][k] = E[k][m]
        for m in range(3):
            out[f"q[{qi + 4 + m}]"] = {("q", vi + 3 + k): E[k][m] for k in range(3)}
    for j in range(model.nv):
        out[f"qd[{j}]"] = {("v", j): 1.0}
    for k in range(model.nact):
        out[f"act[{k}]"] = {("a", k): 1.0}
    for i, bd in enumerate(model.bodies):
        for k in range(6 * i, 6 * i + 6) if bd.fext else ():
            out[f"fext[{k}]"] = {("f", k): 1.0}
    for k in range(size(model) if params else 0):
        out[declared.slot(k).name] = {("p", k): 1.0}
    return out


def directions(model: Model) -> dict[str, list[Hashable]]:
    """The columns of each output block, in order: fwd_dyn_derivs' blocks, and dparam (the declared parameters,
    fwd_dyn_dparams')."""
    return {"dq": [("q", j) for j in range(model.nv)], "dqd": [("v", j) for j in range(model.nv)],
            "dtau": [("t", j) for j in range(model.nv)], "dact": [("a", k) for k in range(model.nact)],
            "dfext": [("f", k) for k in range(6 * model.nbody)], "dparam": [("p", k) for k in range(size(model))]}


BLOCKS = ("dq", "dqd", "dtau", "dact", "dfext")  # fwd_dyn_derivs' blocks


def derivatives_builder(model: Model, budget: int | None = None,
                        blocks: tuple[str, ...] = BLOCKS) -> tuple[Builder, dict[str, list[list[Val]]]]:
    """fwd_dyn and its derivatives in one builder; the values of qdd (as a 1 × nv block) and of each of `blocks`
    (directions()), row i the derivatives of qdd[i]. Past `budget` emitted operations it raises OverBudget."""
    b = Builder(path=model.path)
    b.budget = budget
    s = system(b, model, "crba")
    nv, nc = model.nv, len(s.rows)
    if model.drivers:  # qdd_d = act_d held by each driver (driven.py): a is the right-hand side of those rows
        partitioned = driven.solver(b, model, s.H, s.rows)

        def solve(rhs: list[Val], k: list[Val], a: list[Val]) -> list[Val]:
            qdd, mu, _ = partitioned(rhs, k, a)
            return qdd + mu
    elif s.rows:
        order = kkt.elimination_order(model)

        def solve(rhs: list[Val], k: list[Val], a: list[Val]) -> list[Val]:
            return kkt.kkt_solve(b, s.H, [(K, kr) for (K, _), kr in zip(s.rows, k)], rhs, order, multipliers=True,
                                 model=model)
    else:
        tree = ltdl_solver(b, s.H, expanded_parents(model), floating_blocks(model))

        def solve(rhs: list[Val], k: list[Val], a: list[Val]) -> list[Val]:
            return tree(rhs)
    x = solve(s.rhs, [kr for _, kr in s.rows], driven.accelerations(model))
    qdd, mu = x[:nv], x[nv:]
    a, lam = [b.hold(v) for v in qdd], [b.hold(v) for v in mu]
    # the residuals with (qdd, μ) held
    ID, Q = bias_force(b, s.kin, qdd=a), element_forces(b, s.kin)  # Q: the system's own, shared
    r = [b.sum(ID[i], b.neg(Sym(f"tau[{i}]")), b.neg(Q.get(i, 0.0)),
               *(b.mul(K.get(i, 0.0), lam[c]) for c, (K, _) in enumerate(s.rows))) for i in range(nv)]
    g = [b.sub(b.sum(*(b.mul(x_, a[j]) for j, x_ in K.items())), kr) for K, kr in s.rows]
    seed = seeds(b, model, params="dparam" in blocks)  # fwd_dyn_derivs holds the parameters
    dr = derivatives(b, r + g, lambda name: seed.get(name, {}))
    out: dict[str, list[list[Val]]] = {"qdd": [qdd]}
    for block in blocks:
        keys, cols = directions(model)[block], []
        for key in keys:
            if key[0] == "t":
                rhs, k = [1.0 if i == key[1] else 0.0 for i in range(nv)], [0.0] * nc
            else:
                rhs = [b.neg(_entry(dr[i], key)) for i in range(nv)]
                k = [b.neg(_entry(dr[nv + c], key)) for c in range(nc)]
            a = [1.0 if key == ("a", d.act) else 0.0 for d in model.drivers]  # ∂qdd_d/∂act_d = 1, else 0
            cols.append(solve(rhs, k, a)[:nv] if any(v != 0.0 for v in rhs + k + a) else [0.0] * nv)
        out[block] = [[cols[j][i] for j in range(len(keys))] for i in range(nv)]
    return b, out
