"""Every number the contact laws take, derived once from a model at its design pose (docs/contact.md, the
band's table and the ground's damping), as plain records the C structs are filled from."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mechdyn.core.errors import MechError
from mechdyn.core.kinematics import forward_kinematics
from mechdyn.core.model import Body, Model, Roller, Track

from .law import ContactLaw

PIN_FRICTION, PIN_TOOTH, FACE = 0, 1, 2  # md_roller.kind (band.c)
TERRAIN_KIND = {"plane": 0, "sine": 1, "grid": 2}  # md_ground.kind (ground.c)


@dataclass(frozen=True)
class RollerParams:
    body: int
    kind: int  # PIN_FRICTION, PIN_TOOTH or FACE
    radius: float
    teeth: float
    theta0: float  # rad, pocket phase
    y0: float  # m, the band plane along the axle
    m_pair: float  # kg
    pins: int  # pins on the wrap at the design pose (pin rollers), 1 for a face
    crush: float  # m: the penetration at which the band is crushed onto its pins here (0: not known)


@dataclass(frozen=True)
class BandParams:
    track: Track
    first_shoe: int
    nshoe: int
    link_len: float
    face_z: float
    face_fade: float  # m
    kn: float
    cn: float
    kg: float
    mu: float
    rollers: tuple[RollerParams, ...]


@dataclass(frozen=True)
class GroundParams:
    kind: int
    p: np.ndarray  # (4,): md_ground.p (a plane as h0, hx, hy)
    heights: np.ndarray | None  # (ny, nx) for a grid
    pad_body: np.ndarray  # (npad,) int
    corner: np.ndarray  # (npad, 4, 3) shoe-frame corners
    corner_mass: np.ndarray  # (npad,)
    kn: float
    cg: float
    kt: float
    mu: float
    supported_mass: float  # M / n, what cg is sized against
    reach: float  # m: no corner's gap exceeds its shoe origin's by more (ground.c's broadphase)


def _fail(model: Model, line: int, msg: str) -> MechError:
    return MechError(model.path, line, msg)


def _axle_inertia(b: Body) -> float:
    """The body's moment of inertia about its frame's y axis through its origin."""
    return float(b.inertia[1, 1] + b.mass * (b.cg[0] ** 2 + b.cg[2] ** 2))


def _require_fext(model: Model, t: Track) -> None:
    """Refuse a band whose reactions would be dropped: every roller and shoe must read fext."""
    for r in t.rollers:
        b = model.bodies[r.body]
        if not b.fext:
            raise _fail(model, b.line, f"body '{b.name}' is a roller of track '{t.name}' but lacks 'fext 1': its "
                                       "contact reaction would be silently dropped; expected 'fext 1' in its block")
    if not t.fext:
        raise _fail(model, t.line, f"track '{t.name}' has 'fext 0': its shoes could not take contact forces; "
                                   "expected 'fext 1' (the default)")


def _crush(t: Track, r: Roller) -> float:
    """How deep roller r can press into the band before its rim reaches the pins: to a declared `root` (a
    sprocket's tooth pocket bottom), else the shoe's `thickness` (the running face to the pin axis); 0 when
    the model says neither."""
    if r.root > 0.0:
        return float(r.radius - r.root)
    return float(t.thickness) if t.thickness else 0.0


def band_params(model: Model, law: ContactLaw) -> tuple[BandParams, ...]:
    """Each track block's band law (docs/contact.md, "The band")."""
    if not model.tracks:
        return ()
    kin = forward_kinematics(model, model.q0())
    out = []
    for t in model.tracks:
        _require_fext(model, t)
        if t.kn is None or t.mu is None:
            raise _fail(model, t.line, f"track '{t.name}' has no {'kn' if t.kn is None else 'mu'}: its contact law "
                                       "needs both; expected 'kn K' and 'mu MU' lines in the block")
        faces = [r for r in t.rollers if not r.end]
        if faces and (t.pad is None or t.thickness is None):
            raise _fail(model, t.line, f"track '{t.name}' has road wheels but no {'pad' if t.pad is None else 'thickness'}: "
                                       "they roll on the shoes' faces at pad z + thickness; expected 'pad z lx ly' and "
                                       "'thickness t' lines in the block")
        L = float(t.link_len)
        cn = 2.0 * law.zeta_band * math.sqrt(t.kn * t.mass)
        shoes = np.arange(t.first_shoe, t.first_shoe + t.shoes)
        rollers = []
        for r in t.rollers:
            b = model.bodies[r.body]
            m_rim = 1.0 / (1.0 / b.mass + r.radius**2 / _axle_inertia(b))
            if not r.end:
                rollers.append(RollerParams(r.body, FACE, r.radius, 0.0, 0.0, 0.0,
                                            1.0 / (1.0 / t.mass + 1.0 / m_rim), 1, _crush(t, r)))
                continue
            d = np.einsum("ji,sj->si", kin.R[r.body], kin.p[shoes] - kin.p[r.body])  # pins in the roller frame
            rho = np.hypot(d[:, 0], d[:, 2])
            pins = max(1, int(np.count_nonzero(r.radius - rho > -law.gate_fade)))
            near = int(np.argmin(rho))
            rollers.append(RollerParams(
                r.body, PIN_TOOTH if r.teeth > 0 else PIN_FRICTION, r.radius, float(r.teeth),
                float(math.atan2(d[near, 2], d[near, 0])) if r.teeth > 0 else 0.0, float(d[0, 1]),
                1.0 / (1.0 / t.mass + pins / m_rim), pins, _crush(t, r)))
        face_z = float(t.pad[0] + t.thickness) if faces else 0.0
        out.append(BandParams(t, t.first_shoe, t.shoes, L, face_z, law.face_fade * L, float(t.kn), cn, float(t.kn),
                              float(t.mu), tuple(rollers)))
    return tuple(out)


def _cr_weight_sums() -> tuple[float, float]:
    """The largest Σ|c_a(t)| and Σ|c_a'(t)| of the Catmull–Rom weights over t ∈ [0, 1] (ground.c ground_cr)."""
    t = np.linspace(0.0, 1.0, 10001)
    c = np.array([(-t**3 + 2 * t**2 - t), (3 * t**3 - 5 * t**2 + 2), (-3 * t**3 + 4 * t**2 + t), (t**3 - t**2)]) / 2
    dc = np.array([(-3 * t**2 + 4 * t - 1), (9 * t**2 - 10 * t), (-9 * t**2 + 8 * t + 1), (3 * t**2 - 2 * t)]) / 2
    return float(np.abs(c).sum(axis=0).max()), float(np.abs(dc).sum(axis=0).max())


def steepest_slope(g) -> float:
    """An upper bound of |∇h| over the whole terrain: exact for a plane, the amplitude's for a sine, and for a
    grid the weights' bound on nodes as far as nine half-ranges from the nodes' mid-range: a ghost beyond a
    corner, extrapolated along both axes, is 4·H00 − 2·H01 − 2·H10 + H11."""
    p = np.asarray(g.params, dtype=float)
    if g.terrain == "plane":
        return float(math.hypot(p[0], p[1]) / abs(p[2]))
    if g.terrain == "sine":
        return float(abs(p[1]) * 2 * math.pi * math.hypot(1 / p[2], 1 / p[3]))
    c, dc = _cr_weight_sums()
    spread = 4.5 * float(np.ptp(g.heights))  # nine half-ranges
    return math.hypot(dc * c * spread / p[2], dc * c * spread / p[3])


def ground_params(model: Model, law: ContactLaw) -> GroundParams | None:
    """The ground law (docs/contact.md, "The ground"), None without a ground block."""
    g = model.ground
    if g is None:
        return None
    padded = [t for t in model.tracks if t.pad is not None]
    for t in padded:
        _require_fext(model, t)
    bodies, corners, masses = [], [], []
    for t in padded:
        z, lx, ly = (float(x) for x in t.pad)
        mid = 0.5 * float(t.link_len)
        quad = [(mid + sx * 0.5 * lx, sy * 0.5 * ly, z) for sy in (-1, 1) for sx in (-1, 1)]
        for s in range(t.first_shoe, t.first_shoe + t.shoes):
            bodies.append(s)
            corners.append(quad)
            masses.append(t.mass / 4.0)
    total = float(sum(b.mass for b in model.bodies))
    n = len(bodies)  # a quarter of the 4·npad corners
    supported = total / n if n else total
    p = np.array(g.params, dtype=float)
    if g.terrain == "grid" and not (g.heights is not None and np.ndim(g.heights) == 2
                                    and min(np.shape(g.heights)) >= 4 and p[2] > 0 and p[3] > 0):
        # the parser guarantees it; a Model built otherwise must not reach the C's 4 x 4 stencil without it
        raise _fail(model, g.line, f"the ground's grid has heights of shape {np.shape(g.heights)} and spacing "
                                   f"{p[2]:g} {p[3]:g}; expected at least 4 x 4 heights and spacings > 0")
    if g.terrain == "plane":  # n·x = d as h = h0 + hx·x + hy·y (ground.c): the divisions once, here
        nx, ny, nz, d = p
        p = np.array([d / nz, -nx / nz, -ny / nz, 0.0])
    return GroundParams(
        kind=TERRAIN_KIND[g.terrain], p=p,
        heights=None if g.heights is None else np.ascontiguousarray(g.heights, dtype=float),
        pad_body=np.array(bodies, dtype=np.intc), corner=np.array(corners, dtype=float).reshape(-1, 4, 3),
        corner_mass=np.array(masses, dtype=float), kn=float(g.kn),
        cg=2.0 * law.zeta_ground * math.sqrt(g.kn * supported), kt=float(g.kt if g.kt is not None else g.kn),
        mu=float(g.mu), supported_mass=supported,
        # margins for the rounding of the gap at the shoe's origin: the skip must never drop a touching corner
        reach=(1 + 1e-9) * math.sqrt(1 + steepest_slope(g) ** 2) * float(np.linalg.norm(corners, axis=-1).max()
                                                                      if corners else 0.0) + 1e-12)
