"""Pass 2: the joint-space inertia matrix H by the composite-rigid-body algorithm (RBDA §6.2).

Only the lower triangle is produced, and only the entries that the tree's
branch structure allows: H[i][j] for j an ancestor coordinate of i.
"""
from __future__ import annotations

from mechdyn.core.model import BASE, Model
from mechdyn.core.params import on

from . import declared
from .expr import Builder, Val
from .kinematics import TreeKinematics
from .sspatial import Rbi, rbi_add, rbi_apply, rbi_to_parent, xf_force_T


def body_inertia(b: Builder, model: Model, i: int) -> Rbi:
    """Body i's rigid-body inertia about its own origin: generation-time constants, or expressions in the
    declared parameters (declared.py) for a body that has any."""
    bd = model.bodies[i]
    if any(on(model, "body", i, f) for f in ("mass", "cg", "inertia")):
        return _declared_inertia(b, model, i)
    m, c, Ic = float(bd.mass), [float(x) for x in bd.cg], bd.inertia
    # Ī = Ic + m (|c|² 1 − c cᵀ), the parallel-axis theorem
    cc = sum(x * x for x in c)
    I = [[float(Ic[i][j]) + m * ((cc if i == j else 0.0) - c[i] * c[j]) if j <= i else 0.0
          for j in range(3)] for i in range(3)]
    return Rbi(m, [m * x for x in c], I)


def _declared_inertia(b: Builder, model: Model, i: int) -> Rbi:
    """body_inertia's Rbi(m, m c, Ic + m (|c|² 1 − c cᵀ)) in the builder, from body i's declared parameters."""
    m, c, Ic = declared.mass(model, i), declared.cg(b, model, i), declared.inertia(b, model, i)
    h = [b.mul(m, x) for x in c]
    cc = b.dot(c, c)
    I = [[b.add(Ic[r][k], b.sub(b.mul(m, cc) if r == k else 0.0, b.mul(h[r], c[k]))) if k <= r else 0.0
          for k in range(3)] for r in range(3)]
    return Rbi(m, h, I)


def composite_inertias(b: Builder, kin: TreeKinematics) -> list[Rbi]:
    """Ic_i: the inertia of the subtree rooted at body i, in body i's coordinates."""
    model = kin.model
    Ic = [body_inertia(b, model, i) for i in range(model.nbody)]
    for bd, r in zip(model.bodies, Ic):  # checked at its own body: a child's is first emitted inside its parent's
        with b.at(model.path, bd.line, f"body '{bd.name}'"):
            b.check(r.m, *r.h, *(x for row in r.I for x in row))
    for i in range(model.nbody - 1, -1, -1):
        bd = model.bodies[i]
        if bd.parent != BASE:
            with b.at(model.path, bd.line, f"body '{bd.name}'"):
                Ic[bd.parent] = rbi_add(b, Ic[bd.parent], rbi_to_parent(b, kin.Xup[i], Ic[i]))
    return Ic


def mass_matrix(b: Builder, kin: TreeKinematics) -> dict[tuple[int, int], Val]:
    """The lower triangle of H as {(row, col): value}, row ≥ col, structural zeros absent."""
    model = kin.model
    Ic = composite_inertias(b, kin)
    H: dict[tuple[int, int], Val] = {}
    for i, bd in enumerate(model.bodies):
        vi = model.vidx[i]
        with b.at(model.path, bd.line, f"body '{bd.name}'"):
            for a, s in enumerate(kin.S[i]):
                F = rbi_apply(b, Ic[i], s)
                for c, sc in enumerate(kin.S[i][: a + 1]):
                    H[vi + a, vi + c] = b.dot(sc, F)
                j = i
                while model.bodies[j].parent != BASE:
                    F = xf_force_T(b, kin.Xup[j], F)
                    j = model.bodies[j].parent
                    vj = model.vidx[j]
                    for c, sc in enumerate(kin.S[j]):
                        H[vi + a, vj + c] = b.dot(sc, F)
    return H
