"""Symbolic scalars that fold structure away as they are built, and emit C.

A value in generated code is either a Python float (a constant known at
generation time) or a `Sym`: a signed reference to a named C value, an input
slot such as `q[3]` or a temporary `t17`. Arithmetic on them goes through a
`Builder`, which

- folds constants, and the structural zeros and ones (`0*x`, `1*x`, `x+0`);
- keeps signs on the reference, so negation is free and `a-b`, `b-a`, `-(a-b)`
  share one temporary;
- hash-conses every operation, so an identical subexpression anywhere in the
  function is emitted once;
- emits each operation as one `const double tN = ...;` line and returns a
  reference to it, so later stages name results instead of re-expanding them;
- tracks when each value is ready on a core without limits, so that a sum of
  several terms adds the late ones last (the scheduler, schedule.py, can
  reorder statements but cannot reassociate them).

Every line is a single operation, so the generator's cost is linear in the
size of the emitted code and the flop count is exact.
"""
from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Union

from mechdyn.core.parse import MechError

from . import schedule, trig


class GenerationError(MechError):
    """The model would put a non-finite constant into the generated C (it cannot compile, or computes NaN);
    located at the model statement being generated (`Builder.at`)."""


class OverBudget(Exception):
    """A builder emitted more operations than its `budget`: the function it was building is abandoned."""


@dataclass(frozen=True, slots=True)
class Sym:
    name: str  # a C lvalue or temporary
    neg: bool = False  # the value is -name

    def __neg__(self) -> Sym:
        return Sym(self.name, not self.neg)

    def c(self) -> str:
        """The C text of this value."""
        return f"-{self.name}" if self.neg else self.name


Val = Union[float, Sym]

OPS_COUNTED = ("+", "-", "*", "/", "sqrt", "sincos")  # a sincos pair counts once


def lit(x: float) -> str:
    """A C double literal that round-trips exactly."""
    s = repr(float(x))
    return s if ("." in s or "e" in s or "n" in s) else s + ".0"


def c_text(x: Val) -> str:
    return lit(x) if isinstance(x, float) else x.c()


def _split(x: Val) -> tuple[bool, Val]:
    """(negative?, magnitude) of a value, for sign-canonical hashing."""
    if isinstance(x, float):
        return (x < 0, abs(x))
    return (x.neg, Sym(x.name))


def _key(x: Val) -> str:
    return lit(x) if isinstance(x, float) else x.name


class Builder:
    """Straight-line C for one function: hash-consed, folded, one operation per line."""

    def __init__(self, prefix: str = "t", path: str = "<model>") -> None:
        self.prefix = prefix
        self.where: tuple[str, int, str] = (path, 1, "")  # (path, line, what): the statement being generated
        self._stmts: list[tuple[str | None, str, str, tuple[str, ...]]] = []  # (defines, text, op, uses)
        self._table: dict[tuple, Sym] = {}
        self._affine: dict[str, tuple[str, Sym, float]] = {}  # t = x*c or t = x+c, for constant folding
        self._trig: dict[str, int] = {}  # input slot -> its lane in the sincos batch
        self._ready: dict[str, int] = {}  # temporary or sincos lane -> cycle it is ready, unlimited cores
        self._ops: dict[str, tuple[str, tuple[Val, ...]]] = {}  # temporary -> (op, operands): the tape, tangent.py
        self.budget: int | None = None  # emitting more operations than this raises OverBudget

    # -- emission --------------------------------------------------------
    @contextmanager
    def at(self, path: str, line: int, what: str) -> Iterator[None]:
        """Attribute what is emitted inside the block to `what` at path:line, for the non-finite check."""
        outer, self.where = self.where, (path, line, what)
        try:
            yield
        finally:
            self.where = outer

    def check(self, *uses: Val) -> None:
        """Refuse a constant the C text cannot hold (`inf` does not compile, `nan` poisons every result), naming
        the statement being generated; emission checks its operands, callers check constants they fold."""
        for u in uses:
            if isinstance(u, float) and not math.isfinite(u):
                path, line, what = self.where
                raise GenerationError(path, line, f"{what + ' gives' if what else 'the model gives'} the generated "
                                      f"code the non-finite constant {u!r}; expected values within the bounds of "
                                      "docs/mech-format.md")

    def emit(self, key: tuple, text: str, op: str, *uses: Val) -> Sym:
        """The temporary holding `text`, emitted once per distinct key. The seam tests replace to plant a
        builder without hash-consing."""
        self.check(*uses)
        hit = self._table.get(key)
        if hit is not None:
            return hit
        if self.budget is not None and len(self._table) >= self.budget:
            raise OverBudget(self.budget)
        s = Sym(f"{self.prefix}{len(self._table)}")
        self._table[key] = s
        self._ready[s.name] = schedule.LATENCY.get(op, 1) + max((self.ready(u) for u in uses), default=0)
        self._stmts.append((s.name, f"const double {s.name} = {text};", op,
                            tuple(u.name for u in uses if isinstance(u, Sym))))
        self._ops[s.name] = (op, uses)
        return s

    def stmt(self, text: str, *uses: Val) -> None:
        """A statement with an effect (a store to an output); it keeps `uses` alive."""
        self.check(*uses)
        self._stmts.append((None, text, "", tuple(u.name for u in uses if isinstance(u, Sym))))

    def store(self, target: str, x: Val) -> None:
        """`target = x;`"""
        self.stmt(f"{target} = {c_text(x)};", x)

    def __len__(self) -> int:
        return len(self._stmts)

    def fork(self) -> Builder:
        """A copy to try an emission on: what it emits, the original never sees."""
        f = Builder(self.prefix)
        f.where, f.budget = self.where, self.budget
        f._stmts, f._table, f._affine, f._trig = list(self._stmts), dict(self._table), dict(self._affine), dict(self._trig)
        f._ready, f._ops = dict(self._ready), dict(self._ops)
        return f

    def _needed(self, since: int, roots: set[str], stores: bool) -> list[bool]:
        """Which statements after the first `since` the temporaries in `roots` (and, if `stores`, every
        store) need, by a backward walk."""
        need = set(roots)
        keep = [False] * (len(self._stmts) - since)
        for k in range(len(keep) - 1, -1, -1):
            name, _, _, uses = self._stmts[since + k]
            if (stores and name is None) or name in need:
                keep[k] = True
                need.update(uses)
        return keep

    def cost(self, outputs: list[Val], since: int) -> int:
        """The counted operations (OPS_COUNTED) that `outputs` need among the statements emitted after the
        first `since`: what emitting them cost, given everything before."""
        keep = self._needed(since, {x.name for x in outputs if isinstance(x, Sym)}, stores=False)
        return sum(kp and st[2] in OPS_COUNTED for st, kp in zip(self._stmts[since:], keep))

    def tape(self, roots: list[Val]) -> list[tuple[str, str, tuple[Val, ...]]]:
        """(temporary, op, operands) of every statement `roots` need, in emitted order, not looking past a held
        value (hold): the operations a derivative of the roots runs through (tangent.py). An operation is its
        operands combined by op: a + b, a - b, a * b, a / b, sqrt(a), or a held."""
        need = {x.name for x in roots if isinstance(x, Sym)}
        out = []
        for name, _, _, _ in reversed(self._stmts):
            if name in need:
                op, uses = self._ops[name]
                out.append((name, op, uses))
                if op != "hold":
                    need.update(u.name for u in uses if isinstance(u, Sym))
        return out[::-1]

    @property
    def angles(self) -> list[str]:
        """The input slots whose sine and cosine the statements use, in lane order."""
        return list(self._trig)

    def live(self) -> list[schedule.Stmt]:
        """The statements the stores need, in emitted order, as the scheduler sees them."""
        return [schedule.Stmt(n, op, uses) for n, _, op, uses in self._live()]

    def _live(self) -> list[tuple[str | None, str, str, tuple[str, ...]]]:
        return [st for st, kp in zip(self._stmts, self._needed(0, set(), stores=True)) if kp]

    def finish(self, sincos: bool = True, scheduled: bool = False) -> tuple[list[str], Counter[str]]:
        """The live statements, headed by the sincos batch unless `sincos` is false, in the order emitted or, if
        `scheduled`, in schedule.py's order; and the count of each live operation (dead temporaries dropped)."""
        kept = self._live()
        if scheduled:
            kept = [kept[k] for k in schedule.schedule([schedule.Stmt(n, op, uses) for n, _, op, uses in kept])]
        lines = [st[1] for st in kept]
        ops = Counter(st[2] for st in kept if st[0] is not None)
        if self._trig:
            lines = (trig.batch(self.angles) if sincos else []) + lines
            ops["sincos"] = len(self._trig)
        return lines, ops

    # -- arithmetic ------------------------------------------------------
    def add(self, a: Val, b: Val) -> Val:
        if isinstance(a, float) and isinstance(b, float):
            return a + b
        if a == 0.0:
            return b
        if b == 0.0:
            return a
        if isinstance(a, float):
            a, b = b, a
        if isinstance(b, float) and not a.neg and self._affine.get(a.name, ("",))[0] == "+":
            _, x, c = self._affine[a.name]  # (x + c) + b = x + (c + b)
            return self.add(x, c + b)
        na, A = _split(a)
        nb, B = _split(b)
        if na == nb:  # ±(A + B)
            ka, kb = sorted((_key(A), _key(B)))
            s = self.emit(("+", ka, kb), f"{c_text(A)} + {c_text(B)}", "+", A, B)
            if isinstance(B, float) and not na:
                self._affine[s.name] = ("+", A, B)
            return -s if na else s
        # A - B with the sign fixed so that a-b and b-a share a temporary
        P, M, flip = (A, B, na) if _key(A) <= _key(B) else (B, A, not na)
        if P == M:
            return 0.0
        s = self.emit(("-", _key(P), _key(M)), f"{c_text(P)} - {c_text(M)}", "-", P, M)
        return -s if flip else s

    def sub(self, a: Val, b: Val) -> Val:
        return self.add(a, self.neg(b))

    @staticmethod
    def neg(a: Val) -> Val:
        return -a

    def mul(self, a: Val, b: Val) -> Val:
        if isinstance(a, float) and isinstance(b, float):
            return a * b
        if a == 0.0 or b == 0.0:
            return 0.0
        if a == 1.0:
            return b
        if b == 1.0:
            return a
        if a == -1.0:
            return -b
        if b == -1.0:
            return -a
        if isinstance(a, float):
            a, b = b, a
        if isinstance(b, float) and self._affine.get(a.name, ("",))[0] == "*":
            _, x, c = self._affine[a.name]  # (x c) b = x (c b)
            return self.mul(-x if a.neg else x, c * b)
        na, A = _split(a)
        nb, B = _split(b)
        ka, kb = sorted((_key(A), _key(B)))
        s = self.emit(("*", ka, kb), f"{c_text(A)} * {c_text(B)}", "*", A, B)
        if isinstance(B, float):
            self._affine[s.name] = ("*", A, B)
        return -s if na != nb else s

    def div(self, a: Val, b: Val) -> Val:
        if isinstance(b, float):
            if b == 0.0:  # a divisor that folded to 0: every state would divide by zero
                path, line, what = self.where
                raise GenerationError(path, line, f"{what or 'the model'} makes the generated code divide by a "
                                      "quantity that is zero in every state (a structural zero); expected no "
                                      "degenerate element (a tsda's points apart, a loop's rows independent)")
            return self.mul(a, 1.0 / b) if isinstance(a, Sym) else a / b
        if a == 0.0:
            return 0.0
        na, A = _split(a)
        nb, B = _split(b)
        s = self.emit(("/", _key(A), _key(B)), f"{c_text(A)} / {c_text(B)}", "/", A, B)
        return -s if na != nb else s

    def sqrt(self, a: Val) -> Val:
        if isinstance(a, float):
            return a ** 0.5
        return self.emit(("sqrt", a.c()), f"sqrt({a.c()})", "sqrt", a)

    def hold(self, a: Val) -> Val:
        """a under a name of its own that no folding looks through, and whose derivative is zero (tangent.py): the
        solution of a system held while the system's residual is differentiated. A copy, not an operation."""
        if isinstance(a, float):
            return a
        return self.emit(("hold", a.c()), a.c(), "hold", a)

    def sincos(self, a: Val) -> tuple[Val, Val]:
        """(sin a, cos a) of an input slot, computed with all the others in one batch at the top (trig.py)."""
        na, A = _split(a)
        if isinstance(A, float) or self._is_temporary(A.name):
            raise TypeError(f"sincos takes an input slot, not {c_text(a)}: the batch runs before any temporary")
        k = self._trig.setdefault(A.name, len(self._trig))
        s, c = Sym(trig.lane(k, "sn")), Sym(trig.lane(k, "cs"))
        self._ready[s.name] = self._ready[c.name] = trig.LATENCY
        return (-s if na else s), c

    def _is_temporary(self, name: str) -> bool:
        return name.startswith(self.prefix) and name[len(self.prefix):].isdigit()

    # -- small compounds -------------------------------------------------
    def ready(self, x: Val) -> int:
        """The cycle at which x is ready on a core without limits: 0 for constants and inputs, the sincos batch's
        latency for a sine or cosine, otherwise the latest operand plus the operation's latency
        (schedule.LATENCY)."""
        return 0 if isinstance(x, float) else self._ready.get(x.name, 0)

    def sum(self, *xs: Val) -> Val:
        """The sum of xs (zeros vanish), the two earliest-ready terms added first (Huffman's rule on ready
        cycles), so a late term waits for one addition, not for the whole chain."""
        heap = [(self.ready(x), k, x) for k, x in enumerate(xs) if x != 0.0]
        if not heap:
            return 0.0
        heapq.heapify(heap)
        n = len(xs)  # tie-breaks stay unique, so two values are never compared
        while len(heap) > 1:
            _, _, x = heapq.heappop(heap)
            _, _, y = heapq.heappop(heap)
            s = self.add(x, y)
            heapq.heappush(heap, (self.ready(s), n, s))
            n += 1
        return heap[0][2]

    def dot(self, a: list[Val], b: list[Val]) -> Val:
        return self.sum(*(self.mul(x, y) for x, y in zip(a, b)))
