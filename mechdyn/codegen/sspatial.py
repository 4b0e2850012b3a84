"""Spatial algebra on symbolic values, in the compact forms RBDA uses for speed.

Independent of mechdyn.core.spatial by design: the dense reference uses that
module, and a shared mistake would let both routes agree.

- A Plücker transform is `Xf(E, r)`: X = [[E, 0], [-E r×, E]], with E the 3x3
  coordinate rotation and r the new origin in old coordinates (RBDA §2.8).
- Motion and force vectors are 6-lists [angular; linear].
- A rigid-body inertia is `Rbi(m, h, I)`: mass, first moment h = m c, and the
  rotational inertia about the frame origin (RBDA §2.13), so that
  Rbi·[ω; v] = [I ω + h × v; m v − h × ω].
"""
from __future__ import annotations

from dataclasses import dataclass

from .expr import Builder, Val

Vec3 = list[Val]
Mat3 = list[list[Val]]
Vec6 = list[Val]

EYE3: Mat3 = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
ZERO3: Vec3 = [0.0, 0.0, 0.0]


@dataclass(frozen=True)
class Xf:
    E: Mat3
    r: Vec3


@dataclass(frozen=True)
class Rbi:
    m: Val
    h: Vec3
    I: Mat3  # symmetric; only the lower triangle is ever read


def cross(b: Builder, x: Vec3, y: Vec3) -> Vec3:
    """x × y."""
    return [
        b.sub(b.mul(x[1], y[2]), b.mul(x[2], y[1])),
        b.sub(b.mul(x[2], y[0]), b.mul(x[0], y[2])),
        b.sub(b.mul(x[0], y[1]), b.mul(x[1], y[0])),
    ]


def vadd(b: Builder, x: list[Val], y: list[Val]) -> list[Val]:
    return [b.add(p, q) for p, q in zip(x, y)]


def vsub(b: Builder, x: list[Val], y: list[Val]) -> list[Val]:
    return [b.sub(p, q) for p, q in zip(x, y)]


def scale(b: Builder, s: Val, x: list[Val]) -> list[Val]:
    return [b.mul(s, p) for p in x]


def mv(b: Builder, M: Mat3, x: Vec3) -> Vec3:
    """M x."""
    return [b.dot(M[i], x) for i in range(3)]


def mtv(b: Builder, M: Mat3, x: Vec3) -> Vec3:
    """Mᵀ x, by reading M's columns (the transpose is an index swap)."""
    return [b.dot([M[0][i], M[1][i], M[2][i]], x) for i in range(3)]


def mm(b: Builder, A: Mat3, B: Mat3) -> Mat3:
    return [[b.dot(A[i], [B[0][j], B[1][j], B[2][j]]) for j in range(3)] for i in range(3)]


def transpose(M: Mat3) -> Mat3:
    return [[M[j][i] for j in range(3)] for i in range(3)]


def sym3(M: Mat3) -> Mat3:
    """M with the upper triangle mirrored from the lower one."""
    return [[M[max(i, j)][min(i, j)] for j in range(3)] for i in range(3)]


# -- transforms --------------------------------------------------------------
def xf_compose(b: Builder, X1: Xf, X2: Xf) -> Xf:
    """X1·X2 (apply X2 first): plux(E1 E2, r2 + E2ᵀ r1)."""
    return Xf(mm(b, X1.E, X2.E), vadd(b, X2.r, mtv(b, X2.E, X1.r)))


def xf_inverse(b: Builder, X: Xf) -> Xf:
    """X⁻¹ = plux(Eᵀ, −E r): the old origin seen from the new frame."""
    return Xf(transpose(X.E), [b.neg(x) for x in mv(b, X.E, X.r)])


def xf_motion(b: Builder, X: Xf, m: Vec6) -> Vec6:
    """X·m for a motion vector: [E ω; E (v − r × ω)]."""
    w, v = m[:3], m[3:]
    return mv(b, X.E, w) + mv(b, X.E, vsub(b, v, cross(b, X.r, w)))


def xf_force(b: Builder, X: Xf, f: Vec6) -> Vec6:
    """X*·f for a force vector: [E (n − r × f); E f]."""
    n, fl = f[:3], f[3:]
    return mv(b, X.E, vsub(b, n, cross(b, X.r, fl))) + mv(b, X.E, fl)


def xf_force_T(b: Builder, X: Xf, f: Vec6) -> Vec6:
    """Xᵀ·f, a force moved from the new frame back to the old: [Eᵀ n + r × Eᵀ f; Eᵀ f]."""
    fl = mtv(b, X.E, f[3:])
    return vadd(b, mtv(b, X.E, f[:3]), cross(b, X.r, fl)) + fl


# -- rigid-body inertias -------------------------------------------------------
def rbi_apply(b: Builder, I: Rbi, m: Vec6) -> Vec6:
    """I·[ω; v] = [Ī ω + h × v; m v − h × ω]."""
    w, v = m[:3], m[3:]
    return vadd(b, mv(b, sym3(I.I), w), cross(b, I.h, v)) + vsub(b, scale(b, I.m, v), cross(b, I.h, w))


def rbi_add(b: Builder, A: Rbi, B: Rbi) -> Rbi:
    return Rbi(b.add(A.m, B.m), vadd(b, A.h, B.h),
               [[b.add(A.I[i][j], B.I[i][j]) if j <= i else 0.0 for j in range(3)] for i in range(3)])


def rbi_to_parent(b: Builder, X: Xf, I: Rbi) -> Rbi:
    """Xᵀ I X: a body inertia in child coordinates re-expressed in the parent's (RBDA eq. 2.66).

    With hp = Eᵀ h: h' = hp + m r and Ī' = Eᵀ Ī E − (hp× r× + r× hp×) − m r× r×,
    using s× t× + t× s× = t sᵀ + s tᵀ − 2 (s·t) 1.
    """
    hp = mtv(b, X.E, I.h)
    r = X.r
    T = mm(b, sym3(I.I), X.E)
    # (Eᵀ Ī E)_ij = column i of E · column j of Ī E, lower triangle only
    rot = [[b.dot([X.E[k][i] for k in range(3)], [T[k][j] for k in range(3)]) if j <= i else 0.0
            for j in range(3)] for i in range(3)]
    hr = b.dot(hp, r)
    rr = b.dot(r, r)
    out: Mat3 = [[0.0] * 3 for _ in range(3)]
    for i in range(3):
        for j in range(i + 1):
            cross_term = b.add(b.mul(r[i], hp[j]), b.mul(hp[i], r[j]))
            if i == j:
                cross_term = b.sub(cross_term, b.mul(2.0, hr))
            rxrx = b.mul(r[i], r[j])  # (r× r×)_ij = r_i r_j − |r|² δ_ij
            if i == j:
                rxrx = b.sub(rxrx, rr)
            out[i][j] = b.sub(b.sub(rot[i][j], cross_term), b.mul(I.m, rxrx))
    return Rbi(I.m, vadd(b, hp, scale(b, I.m, r)), out)
