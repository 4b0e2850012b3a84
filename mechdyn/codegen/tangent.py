"""Pass 7a: forward-mode derivatives of emitted values, by the chain rule along the builder's tape.

A derivative is a sparse map from a direction (a key such as ("q", 3)) to its
value: a direction a value does not depend on has no entry, so the structural
zeros of the Jacobian never reach the C, and every derivative is emitted into
the same builder as the values, where hash-consing shares what the forward
pass already computed. The leaves' derivatives (the seeds) come from the
caller; a held value (Builder.hold) is constant: the solution of a linear
system whose derivative the caller takes by the implicit-function theorem.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable

from .expr import Builder, Sym, Val
from .trig import LANE_NAME, lane

Tangent = dict[Hashable, Val]  # direction -> derivative; a missing direction is a structural zero
Seed = Callable[[str], Tangent]  # an input slot's name ("q[3]") -> its derivative


def combine(b: Builder, terms: list[tuple[Val, Tangent]]) -> Tangent:
    """Σ c·t over (c, t) in terms, direction by direction."""
    parts: dict[Hashable, list[Val]] = {}
    for c, t in terms:
        if c == 0.0:
            continue
        for k, x in t.items():
            parts.setdefault(k, []).append(b.mul(c, x))
    out = {k: b.sum(*xs) for k, xs in parts.items()}
    return {k: x for k, x in out.items() if x != 0.0}


def _angles(b: Builder) -> dict[str, tuple[str, str]]:
    """The sincos batch's lane names -> (the input slot, "sn" or "cs")."""
    return {lane(k, part): (slot, part) for k, slot in enumerate(b.angles) for part in ("sn", "cs")}


def derivatives(b: Builder, roots: list[Val], seed: Seed) -> list[Tangent]:
    """The derivative of each root along every direction the seeds name, emitted into b."""
    lanes = _angles(b)
    d: dict[str, Tangent] = {}

    def of(x: Val) -> Tangent:
        if isinstance(x, float):
            return {}
        t = d.get(x.name)
        if t is None:
            t = d[x.name] = leaf(x.name)
        return {k: -v for k, v in t.items()} if x.neg else t

    def leaf(name: str) -> Tangent:
        if LANE_NAME.fullmatch(name):
            slot, part = lanes[name]
            s, c = b.sincos(Sym(slot))
            return combine(b, [(c if part == "sn" else -s, seed(slot))])  # d sin = cos dq, d cos = −sin dq
        return seed(name)

    for name, op, (x, *rest) in b.tape(roots):
        s = Sym(name)
        if op == "hold":
            d[name] = {}
        elif op == "+":
            d[name] = combine(b, [(1.0, of(x)), (1.0, of(rest[0]))])
        elif op == "-":
            d[name] = combine(b, [(1.0, of(x)), (-1.0, of(rest[0]))])
        elif op == "*":
            d[name] = combine(b, [(rest[0], of(x)), (x, of(rest[0]))])
        elif op == "/":  # (x/y)' = (x' − s y')/y
            r = b.div(1.0, rest[0])
            d[name] = combine(b, [(r, of(x)), (b.neg(b.mul(s, r)), of(rest[0]))])
        elif op == "sqrt":  # s' = x'/(2 s)
            d[name] = combine(b, [(b.div(0.5, s), of(x))])
        else:
            raise AssertionError(f"no derivative rule for the operation {op!r}")
    return [of(x) for x in roots]
