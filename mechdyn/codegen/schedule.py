"""Pass 7: the order of fwd_dyn's straight-line statements, for the core rather than for the reader.

Emitted in the order the passes build them (H, then C, then the solve), the
factorization's chain of divisions starts only after all of C, and the core
waits on it. gcc does not schedule before register allocation on x86, so the
order is chosen here, by list scheduling (Goodman and Hsu's integrated
prepass heuristic):

- among the statements whose operands are ready, take the one with the
  longest latency-weighted path to the end (its height), so long chains start
  early and the rest of the work fills their latency;
- while REGISTERS values are live, take instead the one that frees the most,
  so the order buys less latency with spills.

The register rule can only pick among the ready statements, and on the arms
they rarely free anything: the schedule holds more values live than the
vector registers of the timed build, so gcc spills, mostly to general
registers. Other rules (operands nearest their last use first, freed values
weighed against height) and other budgets did not make the arms faster.

Functions of more than WHOLE statements keep the emitted order: there the
height pulls many long chains forward at once and their live ranges outgrow
what the register heuristic repairs, whole or in windows. The constants are
set from timings of the models in models/ (`mechdyn bench`; the figures are
in docs/performance.md).

Functions of more than SPLIT statements are cut into stages of STAGE
statements (`stages`), which simd.py emits as functions of their own: gcc's
register allocator (LRA's hard register assignment) takes time quadratic in
the length of one straight-line function, and a stage bounds it. A temporary
that crosses a cut goes through a workspace slot; a slot is reused once the
last stage reading its value has read it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

LATENCY = {"+": 3, "-": 3, "*": 3, "/": 13, "sqrt": 20}  # cycles, AMD Zen 3; anything else 1
REGISTERS = 12  # live values before the rule turns to freeing them; set by timing (see above)
WHOLE = 2000  # larger functions keep the emitted order
SPLIT = 32000  # larger functions are emitted as stage functions: above every model in models/ (at 18000 a split
# compiled no faster and ran 8% slower; docs/performance.md)
STAGE = 4000  # statements per stage function


@dataclass(frozen=True, slots=True)
class Stmt:
    name: str | None  # the temporary it defines, None for a store
    op: str  # "+", "-", "*", "/", "sqrt", or "" for a store
    uses: tuple[str, ...]


def heights(stmts: list[Stmt], users: list[list[int]]) -> list[int]:
    """Each statement's latency-weighted longest path to the end of the function (users[k]: the statements
    reading statement k's temporary)."""
    h = [0] * len(stmts)
    for k in range(len(stmts) - 1, -1, -1):
        h[k] = LATENCY.get(stmts[k].op, 1) + max((h[j] for j in users[k]), default=0)
    return h


def readers(stmts: list[Stmt]) -> list[list[int]]:
    """For each statement, the statements that read the temporary it defines."""
    index = {s.name: k for k, s in enumerate(stmts) if s.name}
    users: list[list[int]] = [[] for _ in stmts]
    for k, s in enumerate(stmts):
        for u in set(s.uses):
            if u in index:
                users[index[u]].append(k)
    return users


def keeps_emitted_order(n: int) -> bool:
    """Whether a function of n statements is left in the order the passes emitted it (see WHOLE)."""
    return n > WHOLE


def schedule(stmts: list[Stmt]) -> list[int]:
    """A permutation of range(len(stmts)) in which every statement follows the statements defining its uses."""
    if keeps_emitted_order(len(stmts)):
        return list(range(len(stmts)))
    users = readers(stmts)
    waiting = [0] * len(stmts)  # operands not yet defined
    for readers_of_k in users:
        for j in readers_of_k:
            waiting[j] += 1
    remaining = {stmts[k].name: len(r) for k, r in enumerate(users) if r}  # uses not yet scheduled, per temporary
    h = heights(stmts, users)
    ready = {k for k in range(len(stmts)) if waiting[k] == 0}
    order: list[int] = []
    live = 0  # values defined and still needed

    def frees(k: int) -> int:  # live values after k minus before
        s = stmts[k]
        return sum(remaining.get(u) == 1 for u in set(s.uses)) - (s.name in remaining)

    while ready:
        k = max(ready, key=(lambda k: (frees(k), h[k], -k)) if live >= REGISTERS else (lambda k: (h[k], -k)))
        ready.remove(k)
        order.append(k)
        for u in set(stmts[k].uses):
            if u in remaining:
                remaining[u] -= 1
                live -= remaining[u] == 0
        live += stmts[k].name in remaining and remaining[stmts[k].name] > 0
        for j in users[k]:
            waiting[j] -= 1
            if waiting[j] == 0:
                ready.add(j)
    return order


TEMP = re.compile(r"\bt\d+\b")  # a temporary of fwd_dyn's Builder (prefix "t")
_DEFINES = re.compile(r"^const double (t\d+) = ")


@dataclass(frozen=True)
class Stage:
    lines: list[str]  # its statements, in order
    imports: list[tuple[str, int]]  # (temporary, workspace slot) read at its start
    exports: list[tuple[str, int]]  # (temporary, workspace slot) written at its end


def stages(lines: list[str], size: int = STAGE) -> tuple[list[Stage], int]:
    """fwd_dyn's statements cut into consecutive stages of `size`, with the temporaries that cross each cut; and
    the number of workspace slots they need."""
    cut = [lines[k:k + size] for k in range(0, len(lines), size)]
    born: dict[str, int] = {}  # temporary -> the stage defining it
    readers: dict[str, list[int]] = {}  # crossing temporary -> the later stages reading it, in order
    for n, part in enumerate(cut):
        for text in part:
            d = _DEFINES.match(text)
            for u in set(TEMP.findall(text)) - {d[1] if d else ""}:
                if born[u] != n and (not readers.get(u) or readers[u][-1] != n):
                    readers.setdefault(u, []).append(n)
            if d:
                born[d[1]] = n
    crossing: list[list[str]] = [[] for _ in cut]  # by the stage defining them, in definition order
    for t in sorted(readers, key=lambda t: int(t[1:])):
        crossing[born[t]].append(t)
    imports: list[list[tuple[str, int]]] = [[] for _ in cut]
    exports: list[list[tuple[str, int]]] = [[] for _ in cut]
    releases: list[list[int]] = [[] for _ in cut]  # the slots stage n is the last to read
    free: list[int] = []
    nslots = 0
    for n in range(len(cut)):
        free += releases[n]  # read at stage n's start, so stage n's exports may take them
        for t in crossing[n]:
            if free:
                k = free.pop()
            else:
                k, nslots = nslots, nslots + 1
            exports[n].append((t, k))
            releases[readers[t][-1]].append(k)
            for m in readers[t]:
                imports[m].append((t, k))
    return [Stage(part, imports[n], exports[n]) for n, part in enumerate(cut)], nslots
