"""Pass 3: the bias force C(q, qd, fext) by the recursive Newton–Euler algorithm with qdd = 0 (RBDA §5.3), and,
given qdd, the inverse dynamics H qdd + C (the derivatives' residual, derivs.py).

Gravity enters as the base's fictitious acceleration −g. The recursion
carries each body's angular acceleration and its origin's classical
acceleration, which single-DOF joints propagate without linear velocities,
and each body's force is written by Newton–Euler about its CG rather than as
I a + v ×* I v. External forces are read only for bodies
declared `fext 1`.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from mechdyn.core.model import BASE, Model
from mechdyn.core.params import on
from mechdyn.core.spatial import cross as cross3  # numeric, at generation time

from . import declared
from .expr import Builder, Sym, Val
from .kinematics import TreeKinematics
from .sspatial import Vec3, Vec6, cross, mtv, mv, scale, vadd, vsub, xf_force, xf_force_T


PAIRS = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))  # the monomials ω_i ω_j of a quadratic form in ω
# A term takes the monomial form up to this many coefficients: a diagonal inertia has 3 at most, a CG or offset
# on an axis 4 and in a coordinate plane 8, and the monomials are shared by every such term of the same ω; a
# general vector (12) or inertia keeps the cross products (set from the flop counts of the models in models/).
MONOMIAL_TERMS = 8


def quadratic_coefficients(g) -> np.ndarray:
    """G (3 × 6) with g(ω) = G [ω_i ω_j for (i, j) in PAIRS], for a quadratic map g, by polarization."""
    e = np.eye(3)
    cols = [g(e[i]) if i == j else g(e[i] + e[j]) - g(e[i]) - g(e[j]) for i, j in PAIRS]
    return np.array(cols).T


def quadratic(b: Builder, g, w: Vec3, general) -> Vec3:
    """g(ω) for a quadratic map g: in the monomials ω_i ω_j with generation-time coefficients when those have at
    most MONOMIAL_TERMS nonzeros, else by `general(ω)`, the cross products."""
    G = quadratic_coefficients(g)
    if np.count_nonzero(G) > MONOMIAL_TERMS:
        return general(w)
    mono = [b.mul(w[i], w[j]) if np.any(G[:, k]) else 0.0 for k, (i, j) in enumerate(PAIRS)]
    return [b.sum(*(b.mul(float(G[r, k]), mono[k]) for k in range(6) if G[r, k] != 0.0)) for r in range(3)]


def body_force(b: Builder, model: Model, i: int, al: Vec3, aO: Vec3, w: Vec3) -> Vec6:
    """I a + v ×* I v by Newton–Euler about the CG: F = m a_C, n = Ic α + ω × Ic ω + c × F.

    a_C = a_O + α × c + ω × (ω × c) from the classical acceleration a_O of the origin: the same
    force as the spatial form about the origin, with fewer products (Ic is about the CG, so it has
    the zeros that the parallel-axis shift fills in). The two terms quadratic in ω are written in
    the six monomials ω_i ω_j with generation-time coefficients, which a diagonal or symmetric
    Ic and a CG on an axis make sparse. A body with declared parameters (declared.py) keeps the cross products."""
    bd = model.bodies[i]
    if any(on(model, "body", i, f) for f in ("mass", "cg", "inertia")):
        return _declared_body_force(b, model, i, al, aO, w)
    m, c = float(bd.mass), np.array(bd.cg, dtype=float)
    Ic = np.array(bd.inertia, dtype=float)
    ww_c = quadratic(b, lambda u: cross3(u, cross3(u, c)), w, lambda u: cross(b, u, cross(b, u, list(c))))
    gyro = quadratic(b, lambda u: cross3(u, Ic @ u), w, lambda u: cross(b, u, mv(b, Ic.tolist(), u)))
    aC = vadd(b, aO, vadd(b, cross(b, al, list(c)), ww_c))
    F = scale(b, m, aC)
    n = vadd(b, vadd(b, mv(b, Ic.tolist(), al), gyro), cross(b, list(c), F))
    return n + F


def _declared_body_force(b: Builder, model: Model, i: int, al: Vec3, aO: Vec3, w: Vec3) -> Vec6:
    """body_force's F = m a_C, n = Ic α + ω × Ic ω + c × F with m, c and Ic from body i's declared parameters."""
    m, c, Ic = declared.mass(model, i), declared.cg(b, model, i), declared.inertia(b, model, i)
    aC = vadd(b, aO, vadd(b, cross(b, al, c), cross(b, w, cross(b, w, c))))
    F = scale(b, m, aC)
    n = vadd(b, vadd(b, mv(b, Ic, al), cross(b, w, mv(b, Ic, w))), cross(b, c, F))
    return n + F


def joint_acceleration(b: Builder, kin: TreeKinematics, i: int, qdd: list[Val] | None) -> Vec6:
    """S qdd_i, body i's joint acceleration in its own coordinates (zero without qdd): the origin is on the joint's
    axis, so a revolute joint's adds to α only, a prismatic joint's to a_O only."""
    if qdd is None:
        return [0.0] * 6
    v0 = kin.model.vidx[i]
    return [b.sum(*(b.mul(s[r], qdd[v0 + k]) for k, s in enumerate(kin.S[i]))) for r in range(6)]


def accelerations(b: Builder, kin: TreeKinematics, i: int, al_p: Vec3, aO_p: Vec3,
                  qdd: list[Val] | None = None) -> tuple[Vec3, Vec3]:
    """(α, a_O) of body i from its parent's: angular acceleration and the origin's classical one, at qdd = 0 or
    at the given qdd (joint_acceleration).

    For a single-DOF joint a_O = E (a_Op + α_p × r + ω_p × (ω_p × r) + 2 ω_p × ṙ), which needs no
    linear velocities; a floating body (a root, by the format) has a_O = E a_Op + ω × v. Given qdd, S qdd_i
    is added to both."""
    bd, X, vJ = kin.model.bodies[i], kin.Xup[i], kin.vJ(i)
    w = kin.v[i][:3]
    aJ = joint_acceleration(b, kin, i, qdd)
    al = vadd(b, vadd(b, mv(b, X.E, al_p), cross(b, w, vJ[:3])), aJ[:3])
    if bd.joint == "floating":
        return al, vadd(b, vadd(b, mv(b, X.E, aO_p), cross(b, w, kin.v[i][3:])), aJ[3:])
    w_p = [0.0] * 3 if bd.parent == BASE else kin.v[bd.parent][:3]
    rdot = mtv(b, X.E, vJ[3:])  # the prismatic slide rate in parent coordinates (zero for revolute)
    if all(isinstance(x, float) for x in X.r):  # a fixed offset: ω_p × (ω_p × r) in the parent's monomials
        r = np.array(X.r)
        centripetal = quadratic(b, lambda u: cross3(u, cross3(u, r)), w_p, lambda u: cross(b, u, cross(b, u, X.r)))
    else:
        centripetal = cross(b, w_p, cross(b, w_p, X.r))
    inner = vadd(b, vadd(b, aO_p, cross(b, al_p, X.r)), vadd(b, centripetal, cross(b, w_p, scale(b, 2.0, rdot))))
    return al, vadd(b, mv(b, X.E, inner), aJ[3:])


def origin_accelerations(b: Builder, kin: TreeKinematics, gravity: bool = True,
                         qdd: list[Val] | None = None) -> Iterator[tuple[int, tuple[Vec3, Vec3]]]:
    """(body, (α, a_O)) at qdd = 0 (or at `qdd`), the base (BASE) first, accelerating at −g unless `gravity` is
    false: gravity as a fictitious acceleration, which the difference of two points' accelerations cancels. Lazy,
    so that a caller's per-body work is emitted beside each body's accelerations."""
    g0: Vec3 = [-float(g) for g in kin.model.gravity]
    acc = {BASE: ([0.0] * 3, g0 if gravity else [0.0] * 3)}
    yield BASE, acc[BASE]
    for i, bd in enumerate(kin.model.bodies):
        with b.at(kin.model.path, bd.line, f"body '{bd.name}'"):
            acc[i] = accelerations(b, kin, i, *acc[bd.parent], qdd)
        yield i, acc[i]


def body_forces(b: Builder, kin: TreeKinematics, fext: str = "fext", qdd: list[Val] | None = None) -> list[Vec6]:
    """Every body's force I a + v ×* I v − fext at qdd = 0 (or at `qdd`), in its own coordinates: the forward half
    of the pass."""
    model = kin.model
    f: list[Vec6] = []
    for i, (al, aO) in origin_accelerations(b, kin, qdd=qdd):
        if i == BASE:
            continue
        bd = model.bodies[i]
        with b.at(model.path, bd.line, f"body '{bd.name}'"):
            fi = body_force(b, model, i, al, aO, kin.v[i][:3])
            if bd.fext:
                fx = [Sym(f"{fext}[{6 * i + k}]") for k in range(6)]
                fi = vsub(b, fi, xf_force(b, kin.X0(i), fx))
        f.append(fi)
    return f


def bias_force(b: Builder, kin: TreeKinematics, fext: str = "fext", qdd: list[Val] | None = None) -> list[Val]:
    """C such that H qdd + C = tau, for the model's gravity and the declared external forces; or, given `qdd`,
    the inverse dynamics H qdd + C."""
    model = kin.model
    f = body_forces(b, kin, fext, qdd)
    C: list[Val] = [0.0] * model.nv
    for i in range(model.nbody - 1, -1, -1):
        bd = model.bodies[i]
        with b.at(model.path, bd.line, f"body '{bd.name}'"):
            for k, s in enumerate(kin.S[i]):
                C[model.vidx[i] + k] = b.dot(s, f[i])
            if bd.parent != BASE:
                f[bd.parent] = vadd(b, f[bd.parent], xf_force_T(b, kin.Xup[i], f[i]))
    return C
