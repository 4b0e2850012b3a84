"""Pass 5: the sparse LᵀDL factorization of H and its solve (RBDA §6.5, Tables 6.3–6.5).

Over the expanded parent array lam (the parent relation on velocity
coordinates) the factorization has zero fill-in: L has exactly H's sparsity,
so branch-induced zeros are never touched.

The sums are associated for latency (the scheduler can reorder statements but
not reassociate them). An entry's updates are collected and summed when the
entry is needed (Builder.sum), and the back substitution subtracts the
parent's term, ready last, last, which shortens the longest chain. Summing the
back substitution's terms by Builder.sum too made the large functions that
keep the emitted order (schedule.py) slower, for no further gain on the arms.
In such a large function the collected updates themselves stay live too long,
so there the factorization subtracts them as they come (`eager`). The
measured figures are in docs/performance.md.

A floating body's six coordinates form a dense block in H, so they may be
eliminated in any order without fill-in. The order is chosen pivot by pivot:
the coordinate whose pivot is ready first goes next, since the block's pivots
are a chain of divisions (each needs the one before it), and a pivot that is
constant or ready early costs the chain nothing.
"""
from __future__ import annotations

from collections.abc import Callable

from mechdyn.core.model import BASE, Model

from .expr import Builder, Val


def expanded_parents(model: Model) -> list[int]:
    """lam: each velocity coordinate's parent coordinate (-1 at a root); a floating body's six chain."""
    lam: list[int] = []
    for bd in model.bodies:
        p = bd.parent
        last = -1 if p == BASE else model.vidx[p] + model.bodies[p].nv - 1
        for k in range(bd.nv):
            lam.append(last)
            last = len(lam) - 1
    return lam


def floating_blocks(model: Model) -> list[range]:
    """The velocity coordinates of each floating body: blocks of H that are dense (pivot_order)."""
    return [range(model.vidx[i], model.vidx[i] + bd.nv) for i, bd in enumerate(model.bodies) if bd.joint == "floating"]


def lam_pattern(lam: list[int]) -> set[tuple[int, int]]:
    """The lower-triangle pairs (i, j) with j = i or j a lam-ancestor of i."""
    pattern = set()
    for i in range(len(lam)):
        j = i
        while j != -1:
            pattern.add((i, j))
            j = lam[j]
    return pattern


def check_sparsity(H: dict[tuple[int, int], Val], lam: list[int]) -> None:
    """Generation-time assertion: lam and the CRBA describe the same sparsity on every pair."""
    want, have = lam_pattern(lam), set(H)
    if want != have:
        raise AssertionError(f"lam disagrees with the CRBA's sparsity: only in lam {sorted(want - have)[:5]}, "
                             f"only in H {sorted(have - want)[:5]}")


def update_entry(b: Builder, entry: list[Val], update: Val, eager: bool) -> None:
    """Record one update of an H entry: kept for the sum at its row, or, if `eager`, added to its one running
    value. The seam tests replace to plant a wrong update."""
    if eager:
        entry[0] = b.add(entry[0], update)
    else:
        entry.append(update)


def ltdl_factor(b: Builder, H: dict[tuple[int, int], Val], lam: list[int], eager: bool = False,
                zero: Callable[[int], Exception] | None = None) -> tuple[dict[tuple[int, int], Val], list[Val]]:
    """H = Lᵀ D L: returns L's strictly-lower entries and 1/D. An entry's updates from the rows below it are
    summed when its row is reached (Builder.sum), so a late H entry waits for one addition; or, if `eager`,
    subtracted as they come, one running value per entry, for a function that keeps the emitted order (more
    than schedule.WHOLE statements), where collected updates would stay live from their products to their sum.
    A pivot k that folds to 0 raises zero(k), when given (else Builder.div's error, at the builder's statement)."""
    terms: dict[tuple[int, int], list[Val]] = {ij: [h] for ij, h in H.items()}
    L: dict[tuple[int, int], Val] = {}
    n = len(lam)
    Dinv: list[Val] = [0.0] * n
    for k in range(n - 1, -1, -1):
        row = {}  # row k of the updated H, unscaled
        j = k
        while j != -1:
            row[j] = b.sum(*terms[k, j])
            j = lam[j]
        if row[k] == 0.0 and zero is not None:
            raise zero(k)
        Dinv[k] = b.div(1.0, row[k])
        i = lam[k]
        while i != -1:
            a = b.mul(row[i], Dinv[k])
            j = i
            while j != -1:
                update_entry(b, terms[i, j], b.neg(b.mul(a, row[j])), eager)
                j = lam[j]
            L[k, i] = a
            i = lam[i]
    return L, Dinv


def ltdl_solve(b: Builder, L: dict[tuple[int, int], Val], Dinv: list[Val], lam: list[int], rhs: list[Val]) -> list[Val]:
    """x with Lᵀ D L x = rhs. A coordinate's terms are summed at once (Builder.sum), not subtracted one by one
    as its descendants finish: the right-hand side, last out of the Newton–Euler pass, waits for one addition."""
    n = len(lam)
    terms: list[list[Val]] = [[rhs[i]] for i in range(n)]
    y: list[Val] = [0.0] * n
    for i in range(n - 1, -1, -1):  # Lᵀ y = rhs
        y[i] = b.sum(*terms[i])
        j = lam[i]
        while j != -1:
            terms[j].append(b.neg(b.mul(L[i, j], y[i])))
            j = lam[j]
    x = [b.mul(y[i], Dinv[i]) for i in range(n)]
    for i in range(n):  # L x = D⁻¹ y, the ancestors root first
        ancestors = []
        j = lam[i]
        while j != -1:
            ancestors.append(j)
            j = lam[j]
        for j in reversed(ancestors):
            x[i] = b.sub(x[i], b.mul(L[i, j], x[j]))
    return x


def permute(H: dict[tuple[int, int], Val], perm: list[int]) -> dict[tuple[int, int], Val]:
    """H with coordinate perm[k] at position k (lower triangle). A permutation within floating blocks keeps
    lam's pattern: each block is dense, and so is every descendant's row across it."""
    at = {c: k for k, c in enumerate(perm)}
    return {(max(at[i], at[j]), min(at[i], at[j])): h for (i, j), h in H.items()}


def pivot_order(b: Builder, H: dict[tuple[int, int], Val], lam: list[int], blocks: list[range],
                eager: bool = False) -> list[int]:
    """perm for permute(): the identity outside `blocks`; within each, from its last position (eliminated
    first) down, the coordinate whose pivot 1/D is ready first (Builder.ready; each candidate factored on a
    fork), the written order on ties."""
    perm = list(range(len(lam)))
    for blk in blocks:
        rest, placed = list(blk), []  # placed: the block's positions from the last one down
        for pos in reversed(blk):
            trials = {rest[0]: 0}  # the last position has one candidate: nothing to try
            for c in rest if len(rest) > 1 else ():
                trial = perm.copy()
                trial[blk.start:blk.stop] = [x for x in rest if x != c] + [c] + placed[::-1]
                f = b.fork()
                trials[c] = f.ready(ltdl_factor(f, permute(H, trial), lam, eager)[1][pos])
            c = min(rest, key=trials.__getitem__)
            rest.remove(c)
            placed.append(c)
        perm[blk.start:blk.stop] = placed[::-1]
    return perm


def ltdl_solver(b: Builder, H: dict[tuple[int, int], Val], lam: list[int], blocks: list[range],
                eager: bool = False) -> Callable[[list[Val]], list[Val]]:
    """rhs ↦ x with H x = rhs: the floating blocks' pivots ordered (pivot_order) and H factored in that order once,
    each right-hand side solved in that order, x in the written order."""
    perm = pivot_order(b, H, lam, blocks, eager)
    L, Dinv = ltdl_factor(b, permute(H, perm), lam, eager)

    def solve(rhs: list[Val]) -> list[Val]:
        y = ltdl_solve(b, L, Dinv, lam, [rhs[c] for c in perm])
        x: list[Val] = [0.0] * len(perm)
        for k, c in enumerate(perm):
            x[c] = y[k]
        return x
    return solve


def ltdl_forward(b: Builder, H: dict[tuple[int, int], Val], lam: list[int], rhs: list[Val], blocks: list[range],
                 eager: bool = False) -> list[Val]:
    """x with H x = rhs (ltdl_solver)."""
    return ltdl_solver(b, H, lam, blocks, eager)(rhs)
