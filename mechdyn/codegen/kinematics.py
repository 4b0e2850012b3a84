"""Pass 1: per-body joint transforms, base and body-to-body transforms, and velocities, symbolically.

Shared by every generated function that needs the tree's kinematics (the
dynamics and the observation function each run it in their own scope).
"""
from __future__ import annotations

import copy
from functools import cached_property

from mechdyn.core.model import BASE, Body, Model

from . import declared
from .expr import Builder, Sym, Val
from .sspatial import EYE3, ZERO3, Vec3, Vec6, Xf, cross, mtv, vadd, xf_compose, xf_inverse, xf_motion


def joint_rotation_T(b: Builder, axis: int, q: Sym) -> list[list[Val]]:
    """E = R(axis, q)ᵀ: the coordinate transform of a body physically turned by q (E = Rᵀ, S = +a)."""
    s, c = b.sincos(q)
    E: list[list[Val]] = [[1.0 if i == j else 0.0 for j in range(3)] for i in range(3)]
    i, j = (axis + 1) % 3, (axis + 2) % 3
    # R has R[i][i] = R[j][j] = c, R[j][i] = s, R[i][j] = -s; E is its transpose
    E[i][i], E[j][j], E[i][j], E[j][i] = c, c, s, -s
    return E


def quaternion_rotation_T(b: Builder, Q: list[Sym]) -> list[list[Val]]:
    """E = R(Q)ᵀ for a unit quaternion Q = [w, x, y, z]; the transpose is an index swap."""
    w, x, y, z = Q
    two = lambda u, v: b.mul(2.0, b.mul(u, v))  # noqa: E731
    xx, yy, zz = two(x, x), two(y, y), two(z, z)
    xy, xz, yz, wx, wy, wz = two(x, y), two(x, z), two(y, z), two(w, x), two(w, y), two(w, z)
    R = [
        [b.sub(1.0, b.add(yy, zz)), b.sub(xy, wz), b.add(xz, wy)],
        [b.add(xy, wz), b.sub(1.0, b.add(xx, zz)), b.sub(yz, wx)],
        [b.sub(xz, wy), b.add(yz, wx), b.sub(1.0, b.add(xx, yy))],
    ]
    return [[R[j][i] for j in range(3)] for i in range(3)]


def motion_subspace(body: Body) -> list[Vec6]:
    """The columns of S: +axis for single-DOF joints, the identity for a floating body."""
    if body.joint == "floating":
        return [[1.0 if i == k else 0.0 for i in range(6)] for k in range(6)]
    col = [0.0] * 6
    col[body.axis_index + (0 if body.joint == "revolute" else 3)] = 1.0
    return [col]


# Up a walk of more than this many joints, relative() associates the product from F's end, so that every
# transform it caches shares F and a loop's rows along a path of n joints cost O(n) products, not O(n²). Shorter
# walks keep the association from i's end, which the spanning trees of models/ fold better (rrrs: 4 fewer).
LONG_WALK = 3


class TreeKinematics:
    """Symbolic kinematics of a model's tree, emitted into one builder on demand."""

    def __init__(self, b: Builder, model: Model, q: str = "q", qd: str | None = "qd") -> None:
        self.b, self.model = b, model
        self.q = lambda k: Sym(f"{q}[{k}]")
        self.qd = (lambda k: Sym(f"{qd}[{k}]")) if qd else None
        self.S = [motion_subspace(bd) for bd in model.bodies]
        self._X0: dict[int, Xf] = {}
        self._rel: dict[tuple[int, int], Xf] = {}

    def on(self, b: Builder) -> TreeKinematics:
        """These kinematics emitting into b, a fork of this builder: what is already emitted is shared, and
        what is emitted into b stays out of this object's caches."""
        k = copy.copy(self)
        k.b, k._X0, k._rel = b, dict(self._X0), dict(self._rel)
        return k

    def qdot(self, i: int) -> list[Val]:
        """Body i's velocity coordinates."""
        bd, v0 = self.model.bodies[i], self.model.vidx[i]
        return [self.qd(v0 + k) for k in range(bd.nv)]

    def vJ(self, i: int) -> Vec6:
        """The joint velocity S_i qd_i of body i."""
        b = self.b
        return [b.sum(*(b.mul(S[k], u) for S, u in zip(self.S[i], self.qdot(i)))) for k in range(6)]

    @cached_property
    def Xup(self) -> list[Xf]:
        """Parent-to-body transform of every body: XJ(q) · XT, XT = plux(rotᵀ, xtree) (written out as a translation
        when rot is the identity). Single-DOF joints move along +x, +y or +z (frames.align)."""
        b, out = self.b, []
        for i, (bd, iq) in enumerate(zip(self.model.bodies, self.model.qidx)):
            with b.at(self.model.path, bd.line, f"body '{bd.name}'"):
                k, r = bd.axis_index, declared.xtree(b, self.model, i)
                if bd.joint == "floating":  # XJ = plux(R(Q)ᵀ, r), tree transform the identity
                    out.append(Xf(quaternion_rotation_T(b, [self.q(iq + k) for k in range(4)]),
                                  [self.q(iq + 4 + k) for k in range(3)]))
                elif not bd.aligned:
                    XJ = (Xf(joint_rotation_T(b, k, self.q(iq)), list(ZERO3)) if bd.joint == "revolute" else
                          Xf(EYE3, [self.q(iq) if j == k else 0.0 for j in range(3)]))
                    XT = Xf([[float(bd.rot[j][i]) for j in range(3)] for i in range(3)], r)
                    out.append(xf_compose(b, XJ, XT))
                elif bd.joint == "revolute":
                    out.append(Xf(joint_rotation_T(b, k, self.q(iq)), r))
                else:
                    r[k] = b.add(r[k], self.q(iq))
                    out.append(Xf(EYE3, r))
        return out

    def X0(self, i: int) -> Xf:
        """Base-to-body transform of body i (E0 = Rᵀ, r0 = the origin in base coordinates), emitted on first use."""
        if i not in self._X0:
            bd = self.model.bodies[i]
            with self.b.at(self.model.path, bd.line, f"body '{bd.name}'"):
                self._X0[i] = self.Xup[i] if bd.parent == BASE else xf_compose(self.b, self.Xup[i], self.X0(bd.parent))
        return self._X0[i]

    def relative(self, i: int, F: int) -> Xf:
        """X from frame F's coordinates to body i's (either may be BASE), composed along the tree on first use:
        down from F when F is an ancestor of i, up through the inverse joint transforms when i is one of F's, and
        otherwise up from F to a common ancestor first."""
        if (i, F) not in self._rel:
            if i == F:
                X = Xf(EYE3, list(ZERO3))
            elif F == BASE:
                X = self.X0(i)
            elif F in self.model.support(i):
                X = xf_compose(self.b, self.Xup[i], self.relative(self.model.bodies[i].parent, F))
            elif i in (up := self.model.support(F)) and up.index(i) > LONG_WALK:
                c = up[up.index(i) - 1]  # i far above F: through c, i's child toward F (see LONG_WALK)
                X = xf_compose(self.b, xf_inverse(self.b, self.Xup[c]), self.relative(c, F))
            else:
                X = xf_compose(self.b, self.relative(i, self.model.bodies[F].parent), xf_inverse(self.b, self.Xup[F]))
            self._rel[i, F] = X
        return self._rel[i, F]

    @cached_property
    def v(self) -> list[Vec6]:
        """Body spatial velocities in body coordinates: v_i = Xup_i v_parent + S_i qd_i."""
        b, out = self.b, []
        for i, bd in enumerate(self.model.bodies):
            with b.at(self.model.path, bd.line, f"body '{bd.name}'"):
                vp = [0.0] * 6 if bd.parent == BASE else xf_motion(b, self.Xup[i], out[bd.parent])
                out.append(vadd(b, vp, self.vJ(i)))
        return out

    def point(self, body: int, local: Vec3, F: int = BASE) -> tuple[Vec3, Vec3]:
        """Position (from F's origin) and world velocity of a body-fixed point, in frame F's coordinates (body
        and F may be BASE): r + Eᵀ p and Eᵀ (v_O + ω × p) with (E, r) = X_{body←F}."""
        b, X = self.b, self.relative(body, F)
        p = vadd(b, X.r, mtv(b, X.E, local))
        w, vo = ([0.0] * 3, [0.0] * 3) if body == BASE else (self.v[body][:3], self.v[body][3:])
        return p, mtv(b, X.E, vadd(b, vo, cross(b, w, local)))
