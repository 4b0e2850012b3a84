"""Pass 3: the bias force C(q, qd, fext) by the recursive Newton–Euler algorithm with qdd = 0 (RBDA §5.3).

Gravity enters as the base's fictitious acceleration [0; −g]. External
forces are read only for bodies declared `fext 1`.
"""
from __future__ import annotations

from mechdyn.core.model import BASE

from .crba import body_inertia
from .expr import Builder, Sym, Val
from .kinematics import TreeKinematics
from .sspatial import Vec6, crf, crm, rbi_apply, vadd, vsub, xf_force, xf_force_T, xf_motion


def bias_force(b: Builder, kin: TreeKinematics, fext: str = "fext") -> list[Val]:
    """C such that H qdd + C = tau, for the model's gravity and the declared external forces."""
    model = kin.model
    a0: Vec6 = [0.0, 0.0, 0.0] + [-float(g) for g in model.gravity]
    a: list[Vec6] = []
    f: list[Vec6] = []
    for i, bd in enumerate(model.bodies):
        ap = a0 if bd.parent == BASE else a[bd.parent]
        ai = vadd(b, xf_motion(b, kin.Xup[i], ap), crm(b, kin.v[i], kin.vJ(i)))
        I = body_inertia(model, i)
        fi = vadd(b, rbi_apply(b, I, ai), crf(b, kin.v[i], rbi_apply(b, I, kin.v[i])))
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
