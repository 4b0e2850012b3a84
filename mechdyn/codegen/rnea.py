"""Pass 3: the bias force C(q, qd, fext) by the recursive Newton–Euler algorithm with qdd = 0 (RBDA §5.3).

Gravity enters as the base's fictitious acceleration [0; −g]. Each body's
force is written by Newton–Euler about its CG rather than as I a + v ×* I v
(7 % fewer operations on elbow). External forces are read only for bodies
declared `fext 1`.
"""
from __future__ import annotations

from mechdyn.core.model import BASE, Body

from .expr import Builder, Sym, Val
from .kinematics import TreeKinematics
from .sspatial import Vec6, cross, crm, mv, scale, vadd, vsub, xf_force, xf_force_T, xf_motion


def body_force(b: Builder, bd: Body, a: Vec6, v: Vec6) -> Vec6:
    """I a + v ×* I v by Newton–Euler about the CG: F = m a_C, n = Ic α + ω × Ic ω + c × F.

    a_C = a_O + α × c + ω × (ω × c), with a_O = a_lin + ω × v_lin the classical acceleration of
    the origin: the same force as the spatial form, with fewer products (Ic is about the CG, so it
    has the zeros that the parallel-axis shift fills in)."""
    m, c = float(bd.mass), [float(x) for x in bd.cg]
    Ic = [[float(bd.inertia[i][j]) for j in range(3)] for i in range(3)]
    al, alin, w, vlin = a[:3], a[3:], v[:3], v[3:]
    aC = vadd(b, vadd(b, alin, cross(b, w, vlin)), vadd(b, cross(b, al, c), cross(b, w, cross(b, w, c))))
    F = scale(b, m, aC)
    n = vadd(b, vadd(b, mv(b, Ic, al), cross(b, w, mv(b, Ic, w))), cross(b, c, F))
    return n + F


def bias_force(b: Builder, kin: TreeKinematics, fext: str = "fext") -> list[Val]:
    """C such that H qdd + C = tau, for the model's gravity and the declared external forces."""
    model = kin.model
    a0: Vec6 = [0.0, 0.0, 0.0] + [-float(g) for g in model.gravity]
    a: list[Vec6] = []
    f: list[Vec6] = []
    for i, bd in enumerate(model.bodies):
        ap = a0 if bd.parent == BASE else a[bd.parent]
        ai = vadd(b, xf_motion(b, kin.Xup[i], ap), crm(b, kin.v[i], kin.vJ(i)))
        fi = body_force(b, model.bodies[i], ai, kin.v[i])
        if bd.fext:
            fx = [Sym(f"{fext}[{6 * i + k}]") for k in range(6)]
            fi = vsub(b, fi, xf_force(b, kin.X0(i), fx))
        a.append(ai)
        f.append(fi)
    C: list[Val] = [0.0] * model.nv
    for i in range(model.nbody - 1, -1, -1):
        bd = model.bodies[i]
        for k, s in enumerate(kin.S[i]):
            C[model.vidx[i] + k] = b.dot(s, f[i])
        if bd.parent != BASE:
            f[bd.parent] = vadd(b, f[bd.parent], xf_force_T(b, kin.Xup[i], f[i]))
    return C
