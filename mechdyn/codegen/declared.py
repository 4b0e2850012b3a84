"""The declared parameters (mechdyn/core/params.py) as the generated C reads them.

A model's declared numbers are NaN in the model the generator sees; every pass that uses a body's mass, cg or
inertia, or an element's k, c, l0 or q0, asks here, and gets the generation-time constant or, for a parameter,
its slot of the thread's parameter vector fwd_dyn_P re-expressed in the generator's frames (frames.align turns
a body's frame, frames.slide moves it along its axis). A module without parameters is the C it always was.
"""
from __future__ import annotations

from mechdyn.core.model import Model
from mechdyn.core.params import on, read_by_c, size

from .capi import PARAM_FUNCTION
from .expr import Builder, Sym, Val

P = "fwd_dyn_P"  # the thread's parameter values in the generated C


def slot(k: int) -> Sym:
    """Slot k of the parameter vector."""
    return Sym(f"{P}[{k}]")


def mass(model: Model, i: int) -> Val:
    """Body i's mass."""
    p = on(model, "body", i, "mass")
    return float(model.bodies[i].mass) if p is None else slot(p.offset)


def cg(b: Builder, model: Model, i: int) -> list[Val]:
    """Body i's CG in its generated frame: turnᵀ p − shift for a parameter."""
    p = on(model, "body", i, "cg")
    if p is None:
        return [float(x) for x in model.bodies[i].cg]
    return _turned(b, p)


def _turned(b: Builder, p) -> list[Val]:
    """turnᵀ p − shift: a vector parameter in the generator's frames."""
    T = p.turn
    return [b.sub(b.sum(*(b.mul(float(T[k][j]), slot(p.offset + k)) for k in range(3) if T[k][j] != 0.0)),
                  float(p.shift[j])) for j in range(3)]


def xtree(b: Builder, model: Model, i: int) -> list[Val]:
    """Body i's joint frame offset in its parent's generated frame: turnᵀ p − shift for a parameter."""
    p = on(model, "body", i, "xtree")
    if p is None:
        return [float(x) for x in model.bodies[i].xtree]
    return _turned(b, p)


def inertia(b: Builder, model: Model, i: int) -> list[list[Val]]:
    """Body i's inertia about its CG in its generated frame (3 × 3): turnᵀ I(p) turn for a parameter."""
    p = on(model, "body", i, "inertia")
    if p is None:
        return [[float(x) for x in row] for row in model.bodies[i].inertia]
    slots = {(0, 0): 0, (1, 1): 1, (2, 2): 2, (0, 1): 3, (0, 2): 4, (1, 2): 5}
    I = [[slot(p.offset + slots[min(r, c), max(r, c)]) for c in range(3)] for r in range(3)]
    T = p.turn
    out = [[0.0] * 3 for _ in range(3)]
    for r in range(3):
        for c in range(r, 3):
            out[r][c] = out[c][r] = b.sum(*(b.mul(float(T[k][r] * T[m][c]), I[k][m]) for k in range(3)
                                            for m in range(3) if T[k][r] * T[m][c] != 0.0))
    return out


def element(model: Model, kind: str, index: int, field: str) -> Val:
    """A tsda's or rsda's k, c, l0 or q0."""
    p = on(model, kind, index, field)
    e = (model.tsdas if kind == "tsda" else model.rsdas)[index]
    return float(getattr(e, field)) if p is None else slot(p.offset)


def damped(model: Model, kind: str, index: int) -> bool:
    """Whether the element may dissipate: its damping nonzero, or a parameter."""
    e = (model.tsdas if kind == "tsda" else model.rsdas)[index]
    return on(model, kind, index, "c") is not None or e.c != 0.0


_LINKAGE = '__attribute__((visibility("hidden"))) _Thread_local double'  # one per module, shared by its parts


def extern(model: Model) -> str:
    """The parameter vector's declaration, for every part of a unit ("" without parameters)."""
    return f"extern {_LINKAGE} {P}[{size(model)}];\n" if read_by_c(model) else ""


def c_block(model: Model, prefix: str = "fwd_dyn") -> str:
    """The unit's parameter vector, NaN in every thread until set, and its setter ("" without parameters).
    `prefix` names the setter and the length: each unit (dynamics, derivatives) has its own."""
    if not read_by_c(model):
        return ""
    n = size(model)
    names = ", ".join(p.name for p in model.params)
    return (f"\n/* The declared parameters ({names}): this thread's values, NaN until {prefix}_set_params sets\n"
            f" * them, so that a call in a thread that never set them returns NaN, never the values of another. */\n"
            f"{_LINKAGE} {P}[{n}] = {{{', '.join(['NAN'] * n)}}};\n"
            f"const int {prefix}_nparam = {n};\n"
            f"void {prefix}_set_params(const double *p)\n{{\n"
            f"    for (int k = 0; k < {n}; ++k) {P}[k] = p[k];\n}}\n")


def cdef(model: Model, prefix: str = "fwd_dyn") -> str:
    """The declarations of c_block's constant and setter ("" without parameters)."""
    if not read_by_c(model):
        return ""
    return (f"const int {prefix}_nparam;  /* parameter slots: the length of set_params' p */\n"
            f"void {prefix}_set_params(const double *p);  /* this thread's parameter values, from p[nparam] */\n"
            + ("const long fwd_dyn_dparams_ops;  /* fwd_dyn_dparams' operations; 0: not built (too long) */\n"
               + PARAM_FUNCTION.declaration() + "\n" if prefix == "fwd_dyn_derivs" else ""))
