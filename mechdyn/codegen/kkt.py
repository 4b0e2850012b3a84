"""Pass 6: the closed-loop solve as one sparse LDLᵀ of the KKT system (RBDA §8.5).

    [H  Kᵀ] [qdd]   [tau − C + Q]
    [K  0 ] [ μ ] = [     k     ]      (μ = −λ)

solved by symbolic elimination without pivoting in an order chosen from the
mechanism's structure, so the structural zeros fold away and fill appears
only where it must:

- a hub is every body that is a proper ancestor of a body on some loop's path
  (a vehicle's chassis: its six coordinates couple all the corners);
- loops that share a non-hub body form a group (one corner; the two front
  corners tied by the steering rack), and a group's coordinates are
  eliminated leaves first, then its constraint rows, then the next group;
- the hub's coordinates go last, so the corners meet only in the hub's 6 × 6
  Schur complement instead of in a dense nc × nc matrix A = K H⁻¹ Kᵀ.

Eliminating a group's rows after its own coordinates needs the rows
independent with the hub held still; a group where that fails at the design
pose keeps its rows to the very end, where the order is RBDA method 2 (all
coordinates, then A's LDLᵀ), valid whenever K has full rank. Pivots of
coordinates are positive (H is SPD), those of rows negative.
"""
from __future__ import annotations

import numpy as np

from mechdyn.core.loops import closure, loop_of_row
from mechdyn.core.model import Model

from .expr import Builder, GenerationError, Val
from .loops import Row


def _slots(model: Model, bodies) -> list[int]:
    """The bodies' velocity coordinates but the driven ones (driven.py moves those to the right-hand side)."""
    driven = set(model.driven)
    return [model.vidx[i] + k for i in bodies for k in range(model.bodies[i].nv) if model.vidx[i] + k not in driven]


Pivot = tuple[str, int]  # ("v", slot) for a coordinate, ("c", row) for a constraint row


def elimination_order(model: Model) -> list[Pivot]:
    """The pivots of the KKT system in elimination order (see the module docstring)."""
    paths = [set(model.support(lp.pred)) ^ set(model.support(lp.succ)) for lp in model.loops]
    hub = {a for path in paths for i in path for a in model.support(model.bodies[i].parent)}
    first_row = np.cumsum([0] + [lp.nc for lp in model.loops])
    rows_of = lambda loops: [r for j in loops for r in range(first_row[j], first_row[j + 1])]  # noqa: E731
    _, K = closure(model, model.q0())

    def components(loops: list[int], held: set[int]) -> list[list[int]]:
        """The loops split where they share no body outside `held`."""
        comps: list[tuple[set[int], list[int]]] = []
        for j in loops:
            touching = [c for c in comps if c[0] & (paths[j] - held)]
            merged = (set(paths[j]) - held, [j])
            for c in touching:
                comps.remove(c)
                merged = (merged[0] | c[0], c[1] + merged[1])
            comps.append(merged)
        return [sorted(c[1]) for c in comps]

    def plan(loops: list[int], held: set[int]) -> tuple[list[Pivot], list[int]]:
        """(pivots for these loops' free bodies and rows, rows that must wait for the hub)."""
        parts = components(loops, held)
        if len(parts) > 1:
            plans = [plan(c, held) for c in parts]
            return [p for pv, _ in plans for p in pv], [r for _, d in plans for r in d]
        bodies = set().union(*(paths[j] for j in loops)) - held
        shared = [i for i in bodies if sum(i in paths[j] for j in loops) > 1]
        for sep in sorted(shared, key=lambda i: (model.bodies[i].nv, i)):  # a separator: the corners' rack
            if len(components(loops, held | {sep})) > 1:
                pivots, waiting = plan(loops, held | {sep})
                if not waiting:
                    return pivots + [("v", s) for s in reversed(_slots(model, [sep]))], []
        dofs = sorted(_slots(model, bodies), reverse=True)
        Kg = K[np.ix_(rows_of(loops), dofs)]
        if dofs and np.linalg.matrix_rank(Kg, tol=1e-9 * max(1.0, np.abs(Kg).max())) == Kg.shape[0]:
            return [("v", s) for s in dofs] + [("c", r) for r in rows_of(loops)], []
        return [("v", s) for s in dofs], rows_of(loops)

    pivots, waiting = plan(list(range(len(model.loops))), hub)
    placed = {idx for kind, idx in pivots if kind == "v"}
    hub_slots = set(_slots(model, hub))
    free = [("v", s) for s in reversed(_slots(model, range(model.nbody))) if s not in placed and s not in hub_slots]
    return free + pivots + [("v", s) for s in sorted(hub_slots, reverse=True)] + [("c", r) for r in sorted(waiting)]


def zero_pivot(model: Model | None, pivot: Pivot) -> ValueError:
    """The error for a pivot that folded to 0 (a structural zero): a GenerationError at the loop whose row it is,
    or at the body whose coordinate it is, when the model is known; else a ValueError naming the pivot."""
    kind, idx = pivot
    what = "constraint row" if kind == "c" else "coordinate"
    said = f"structural zero pivot at {what} {idx}"
    if model is None:
        return ValueError(f"{said}: the rows are redundant or the elimination order is wrong (close planar loops "
                          "with point-on-line, not revolute)")
    if kind == "c":
        lp = loop_of_row(model, idx)
        return GenerationError(model.path, lp.line, f"loop '{lp.name}' ({lp.joint}) gives a {said}: its rows "
                                                    "repeat constraints of the tree's joints or of other loops in "
                                                    "every pose (or the elimination order is wrong); expected "
                                                    "independent rows (close planar loops with point-on-line, not "
                                                    "revolute)")
    i = next(i for i in range(model.nbody) if model.vidx[i] <= idx < model.vidx[i] + model.bodies[i].nv)
    bd = model.bodies[i]
    return GenerationError(model.path, bd.line, f"body '{bd.name}' gives a {said}: its joint moves no mass, or the "
                                                "elimination order is wrong; expected a mass matrix with no zero pivot")


def kkt_solve(b: Builder, H: dict[tuple[int, int], Val], rows: list[Row], rhs: list[Val],
              order: list[Pivot], multipliers: bool = False, model: Model | None = None,
              free: list[int] | None = None) -> list[Val]:
    """qdd from the KKT system, by LDLᵀ in `order` (lower-triangle dict H, rows as from loop_rows); with
    `multipliers`, qdd followed by μ, one per row. With `free`, the coordinates the order holds (driven.py: the
    others are not unknowns) and whose qdd is returned, in that order. A structural zero pivot is an error
    (zero_pivot) located in `model`, when given."""
    slots = list(range(len(rhs))) if free is None else free
    pos = {node: p for p, node in enumerate(order)}
    at = lambda kind, idx: pos[kind, idx]  # noqa: E731
    # T[j][i]: the terms of entry (i, j), i >= j, permuted; an entry is summed (Builder.sum) when its column is
    # pivoted, so a late term waits for one addition, and an exact cancellation frees the slot then
    T: list[dict[int, list[Val]]] = [{} for _ in order]

    def put(p: int, q: int, x: Val) -> None:
        if x != 0.0:
            T[min(p, q)].setdefault(max(p, q), []).append(x)

    for (i, j), x in H.items():
        put(at("v", i), at("v", j), x)
    for r, (Krow, _) in enumerate(rows):
        for s, x in Krow.items():
            put(at("c", r), at("v", s), x)
    z: list[list[Val]] = [[rhs[idx] if kind == "v" else rows[idx][1]] for kind, idx in order]
    L: list[dict[int, Val]] = []
    Dinv: list[Val] = []
    y: list[Val] = []
    for k, (kind, idx) in enumerate(order):
        col = {i: v for i, ts in sorted(T[k].items()) if (v := b.sum(*ts)) != 0.0}
        d = col.pop(k, 0.0)
        if d == 0.0:
            raise zero_pivot(model, (kind, idx))
        dinv = b.div(1.0, d)
        below = list(col)
        Lk: dict[int, Val] = {}
        for jj, j in enumerate(below):  # Schur update of the trailing block, column by column: −L_jk M_ik to T_ij
            Lk[j] = b.mul(col[j], dinv)  # made just before its column's updates: shorter live ranges
            for i in below[jj:]:
                put(i, j, b.neg(b.mul(Lk[j], col[i])))
        L.append(Lk)
        Dinv.append(dinv)
        y.append(b.sum(*z[k]))  # L z = y
        for i, l in Lk.items():
            z[i].append(b.neg(b.mul(l, y[k])))
    x = [b.mul(y[k], Dinv[k]) for k in range(len(order))]
    for k in range(len(order) - 1, -1, -1):  # Lᵀ x = D⁻¹ z
        x[k] = b.sum(x[k], *(b.neg(b.mul(l, x[i])) for i, l in L[k].items()))
    return [x[at("v", s)] for s in slots] + ([x[at("c", r)] for r in range(len(rows))] if multipliers else [])
