"""Pass 6 with drivers: the partitioned solve of docs/generator.md ("Drivers").

A driver prescribes its coordinate's acceleration, qdd_d = a_d (act slot), and adds an unknown generalized force
R_d on that coordinate, the force the driver exerts. With F the free coordinates and D the driven ones,

    [H_FF  K_Fᵀ] [qdd_F]   [rhs_F − H_FD a]
    [K_F   0   ] [  μ  ] = [ k   − K_D a  ]          R = H_D· qdd + K_Dᵀ μ − rhs_D

(μ = −λ as in kkt.py; without loops the first row alone, by the sparse LᵀDL over the tree with the driven
coordinates cut out, whose parent relation keeps H_FF's sparsity). The driven columns are moved to the right-hand
side at generation time, so the system solved is smaller than the undriven one and no constraint row is added;
the reaction costs one row of H times qdd and one column of K times μ per driver.
"""
from __future__ import annotations

from collections.abc import Callable

from mechdyn.core.model import Model

from . import kkt
from .expr import Builder, Sym, Val
from .loops import Row
from .ltdl import expanded_parents, floating_blocks, ltdl_solver

# (rhs, k, a) ↦ (qdd, μ, R): the solve of the module docstring for one right-hand side
DrivenSolve = Callable[[list[Val], list[Val], list[Val]], tuple[list[Val], list[Val], list[Val]]]


def accelerations(model: Model) -> list[Val]:
    """The drivers' prescribed accelerations as fwd_dyn reads them: their act slots."""
    return [Sym(f"act[{d.act}]") for d in model.drivers]


def free_tree(model: Model) -> tuple[list[int], list[int], list[range]]:
    """The free coordinates, their parent relation (each one's nearest free ancestor, renumbered) and their
    floating blocks, renumbered."""
    driven = set(model.driven)
    free = [i for i in range(model.nv) if i not in driven]
    new = {old: k for k, old in enumerate(free)}
    lam = expanded_parents(model)

    def parent(i: int) -> int:
        p = lam[i]
        while p in driven:
            p = lam[p]
        return new.get(p, -1)

    blocks = [range(new[r.start], new[r.start] + len(r)) for r in floating_blocks(model)]
    return free, [parent(i) for i in free], blocks


def solver(b: Builder, model: Model, H: dict[tuple[int, int], Val], rows: list[Row],
           eager: bool = False) -> DrivenSolve:
    """The partitioned solve over H (lower triangle) and the loops' K, factored once for every right-hand side."""
    driven = list(model.driven)
    free, lam, blocks = free_tree(model)
    isfree = set(free)
    Hfull = lambda i, j: H.get((max(i, j), min(i, j)), 0.0)  # noqa: E731
    if rows:
        Hf = {(i, j): x for (i, j), x in H.items() if i in isfree and j in isfree}
        order = kkt.elimination_order(model)
        Kf = [({j: x for j, x in K.items() if j in isfree}, kr) for K, kr in rows]
    else:
        new = {old: k for k, old in enumerate(free)}
        tree = ltdl_solver(b, {(new[i], new[j]): x for (i, j), x in H.items() if i in isfree and j in isfree},
                           lam, blocks, eager)

    def solve(rhs: list[Val], k: list[Val], a: list[Val]) -> tuple[list[Val], list[Val], list[Val]]:
        moved = [b.sum(rhs[i], *(b.neg(b.mul(Hfull(i, d), ad)) for d, ad in zip(driven, a))) for i in range(model.nv)]
        if rows:
            kf = [b.sum(kr, *(b.neg(b.mul(K.get(d, 0.0), ad)) for d, ad in zip(driven, a)))
                  for (K, _), kr in zip(rows, k)]
            x = kkt.kkt_solve(b, Hf, [(K, kr) for (K, _), kr in zip(Kf, kf)], moved, order, multipliers=True,
                              model=model, free=free)
            qf, mu = x[:len(free)], x[len(free):]
        else:
            qf, mu = tree([moved[i] for i in free]), []
        qdd: list[Val] = [0.0] * model.nv
        for i, x in zip(free, qf):
            qdd[i] = x
        for d, ad in zip(driven, a):
            qdd[d] = ad
        R = [b.sum(*(b.mul(Hfull(d, j), qdd[j]) for j in range(model.nv)),
                   *(b.mul(K.get(d, 0.0), m) for (K, _), m in zip(rows, mu)), b.neg(rhs[d])) for d in driven]
        return qdd, mu, R

    return solve
