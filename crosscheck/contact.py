"""The second route for the contact forces: docs/contact.md in NumPy, sharing no code with mechdyn/contact.

Every law is written from the doc's formulas alone and vectorized over the (roller, shoe) pairs and the pad
corners, so the product's C can be compared with it at many random states. The one thing taken from the
product is the `ContactLaw` dataclass (the law's constants, data and no code). The design-pose quantities
(nr, θ0r, y0r) come from body poses at `model.q0()` composed here from the dense reference's joint
transforms, not from mechdyn's kinematics or the generated code.

`X` is the (nbody, 18) array of body rows: R (body to world, row-major), p, ω, v of the origin, world frame.
Every wrench row is [x × F; F] about the world origin.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from crosscheck.dense.common import joint_transforms
from mechdyn.contact.law import ContactLaw  # the law's constants: data, the one thing taken from the product
from mechdyn.core.model import Ground, Model


# ---------------------------------------------------------------- shared formulas


def smooth(t: np.ndarray) -> np.ndarray:
    """S(t): 0 below 0, 3t² − 2t³ on (0, 1), 1 above."""
    t = np.clip(t, 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def smooth_d(t: np.ndarray) -> np.ndarray:
    """S′(t) = 6t(1 − t) on (0, 1), else 0."""
    return np.where((t > 0.0) & (t < 1.0), 6.0 * t * (1.0 - t), 0.0)


def ramp(delta: np.ndarray, depth: float) -> np.ndarray:
    """min(1, δ/δr) for δ ≥ 0 (callers pass 0 where out of contact)."""
    return np.minimum(1.0, delta / depth)


def implicit_gain(mu: float, N: np.ndarray, slip2: np.ndarray, v_eps: float, dt: float, m: float) -> np.ndarray:
    """k̃ = k / (1 + k·dt/m), k = μN/√(|u|² + v_eps²): the backward-Euler regularized Coulomb gain."""
    k = mu * N / np.sqrt(slip2 + v_eps * v_eps)
    return k / (1.0 + k * dt / m)


def _rows(X: np.ndarray, nbody: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """R (nbody, 3, 3), p, ω, v of the body rows, after checking their shape."""
    X = np.asarray(X, dtype=float)
    if X.shape != (nbody, 18):
        raise ValueError(f"X has shape {X.shape}, expected ({nbody}, 18)")
    return X[:, :9].reshape(-1, 3, 3), X[:, 9:12], X[:, 12:15], X[:, 15:18]


def _to_local(R: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Rᵀx for R (..., 3, 3) broadcast against x (..., 3)."""
    return np.einsum("...ji,...j->...i", R, x)


def _to_world(R: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Rx, broadcast as _to_local."""
    return np.einsum("...ij,...j->...i", R, x)


# ---------------------------------------------------------------- the design pose and the derived parameters


def design_rows(model: Model) -> np.ndarray:
    """(nbody, 18) body rows at model.q0() with zero velocities, composed from the dense joint transforms."""
    Xup, _ = joint_transforms(model, model.q0())
    X0 = np.zeros_like(Xup)
    out = np.zeros((model.nbody, 18))
    for i, b in enumerate(model.bodies):
        X0[i] = Xup[i] if b.parent < 0 else Xup[i] @ X0[b.parent]
        E, B = X0[i][:3, :3], X0[i][3:, :3]  # X0 = [[E, 0], [−E r×, E]]
        R = E.T
        rx = -R @ B
        out[i, :9] = R.reshape(-1)
        out[i, 9:12] = (rx[2, 1], rx[0, 2], rx[1, 0])
    return out


@dataclass(frozen=True)
class _Rollers:
    """One band's rollers of one law (pins on the end rollers, faces on the others), as arrays over rollers."""

    body: np.ndarray  # (nr,) body indices
    radius: np.ndarray
    teeth: np.ndarray  # 0: no teeth
    theta0: np.ndarray  # pocket phase (0 where untoothed)
    y0: np.ndarray  # the band plane's offset along the axle
    mass: np.ndarray  # mr (pins) or mf (faces), the pair mass of the friction law
    slot: np.ndarray  # position of each roller in the axle_torque output


@dataclass(frozen=True)
class _Band:
    shoes: np.ndarray  # (N,) body indices
    L: float
    ms: float
    kn: float
    mu: float
    cn: float
    kg: float
    zf: float
    phi: float
    pins: _Rollers
    faces: _Rollers


@dataclass(frozen=True)
class _GroundParams:
    shoe: np.ndarray  # (ncorner,) body index of each corner's shoe
    local: np.ndarray  # (ncorner, 3) corner in its shoe's frame
    mass: np.ndarray  # (ncorner,) a quarter shoe: ms/4
    kn: float
    kt: float
    mu: float
    cg: float


@dataclass(frozen=True)
class Params:
    """Everything docs/contact.md derives from the model, once per (model, law)."""

    law: ContactLaw
    bands: tuple[_Band, ...]
    nroller: int
    ground: _GroundParams | None


def _i_axle(model: Model, body: int) -> float:
    """The roller's inertia about its axle (its frame's y through its origin): Iyy + m(cx² + cz²)."""
    b = model.bodies[body]
    return float(b.inertia[1, 1] + b.mass * (b.cg[0] ** 2 + b.cg[2] ** 2))


def _band_params(model: Model, law: ContactLaw, X0: np.ndarray) -> list[_Band]:
    R, p, _, _ = _rows(X0, model.nbody)
    bands, slot = [], 0
    for t in model.tracks:
        if t.kn is None or t.mu is None:
            raise ValueError(f"track {t.name!r} (line {t.line}): the band law needs its block's kn and mu")
        shoes = np.arange(t.first_shoe, t.first_shoe + t.shoes)
        ms, kn, L = float(t.mass), float(t.kn), float(t.link_len)
        cn = 2.0 * law.zeta_band * np.sqrt(kn * ms)
        has_faces = any(not r.end for r in t.rollers)
        if has_faces and (t.pad is None or t.thickness is None):
            raise ValueError(f"track {t.name!r} (line {t.line}): road wheels need the block's pad and thickness")
        zf = float(t.pad[0] + t.thickness) if has_faces else 0.0
        groups: dict[bool, list[tuple]] = {True: [], False: []}
        for r in t.rollers:
            j = r.body
            rim_inv = 1.0 / model.bodies[j].mass + r.radius**2 / _i_axle(model, j)
            d = _to_local(R[j], p[shoes] - p[j])  # (N, 3) each pin in the roller's frame at q0
            rho = np.hypot(d[:, 0], d[:, 2])
            if r.end:
                nr = max(1, int(np.count_nonzero(r.radius - rho > -law.gate_fade)))
                mass = 1.0 / (1.0 / ms + nr * rim_inv)
                near = int(np.argmin(rho))  # argmin takes the lowest shoe index on ties
                theta0 = float(np.arctan2(d[near, 2], d[near, 0])) if r.teeth > 0 else 0.0
            else:
                mass = 1.0 / (1.0 / ms + rim_inv)
                theta0 = 0.0
            groups[r.end].append((j, r.radius, r.teeth, theta0, float(d[0, 1]), mass, slot))
            slot += 1

        def pack(rows: list[tuple]) -> _Rollers:
            cols = list(zip(*rows)) if rows else [()] * 7
            return _Rollers(
                body=np.array(cols[0], dtype=int), radius=np.array(cols[1], dtype=float),
                teeth=np.array(cols[2], dtype=int), theta0=np.array(cols[3], dtype=float),
                y0=np.array(cols[4], dtype=float), mass=np.array(cols[5], dtype=float),
                slot=np.array(cols[6], dtype=int),
            )

        bands.append(_Band(shoes=shoes, L=L, ms=ms, kn=kn, mu=float(t.mu), cn=cn, kg=kn, zf=zf,
                           phi=law.face_fade * L, pins=pack(groups[True]), faces=pack(groups[False])))
    return bands


def _ground_params(model: Model, law: ContactLaw) -> _GroundParams | None:
    g = model.ground
    if g is None:
        return None
    shoe, local, mass = [], [], []
    for t in model.tracks:
        if t.pad is None:
            continue
        z, lx, ly = (float(v) for v in t.pad)
        L = float(t.link_len)
        corners = [(L / 2 + sx * lx / 2, sy * ly / 2, z) for sy in (-1, 1) for sx in (-1, 1)]  # (−,−) (+,−) (−,+) (+,+)
        for s in range(t.first_shoe, t.first_shoe + t.shoes):
            shoe += [s] * 4
            local += corners
            mass += [t.mass / 4.0] * 4
    if not shoe:
        return None
    M = sum(b.mass for b in model.bodies)
    n = len(shoe) / 4.0
    kn = float(g.kn)
    return _GroundParams(shoe=np.array(shoe), local=np.array(local), mass=np.array(mass), kn=kn,
                         kt=float(g.kt) if g.kt is not None else kn, mu=float(g.mu),
                         cg=2.0 * law.zeta_ground * np.sqrt(kn * M / n))


_CACHE: dict[int, tuple[weakref.ref, ContactLaw, Params]] = {}


def params(model: Model, law: ContactLaw | None = None) -> Params:
    """The derived parameters of docs/contact.md's tables, cached per model and law."""
    law = ContactLaw() if law is None else law
    hit = _CACHE.get(id(model))
    if hit is not None and hit[0]() is model and hit[1] == law:
        return hit[2]
    X0 = design_rows(model)
    bands = _band_params(model, law, X0)
    nroller = sum(len(t.rollers) for t in model.tracks)
    out = Params(law=law, bands=tuple(bands), nroller=nroller, ground=_ground_params(model, law))
    _CACHE[id(model)] = (weakref.ref(model), law, out)
    return out


def ncorner(model: Model, law: ContactLaw | None = None) -> int:
    """The model's pad corners (four per padded shoe; none without a ground)."""
    gp = params(model, law).ground
    return 0 if gp is None else len(gp.shoe)


# ---------------------------------------------------------------- the band: pins on the end rollers


def _pin_pairs(b: _Band, law: ContactLaw, R, p, w, v, dt: float) -> dict[str, np.ndarray]:
    """Per (end roller, shoe) pair: the force on the shoe in world coordinates, the pin centre, and the
    potentials (radial, tooth, guide)."""
    r = b.pins
    Rr, pr, wr, vr = R[r.body], p[r.body], w[r.body], v[r.body]
    ps, vs = p[b.shoes], v[b.shoes]
    rel = ps[None, :, :] - pr[:, None, :]  # (nr, N, 3)
    d = _to_local(Rr[:, None], rel)
    u = _to_local(Rr[:, None], vs[None] - vr[:, None] - np.cross(wr[:, None], rel))
    rho = np.hypot(d[..., 0], d[..., 2])
    live = rho > 0.0  # a pin on the axle gets no force
    rs = np.where(live, rho, 1.0)
    nx, nz = d[..., 0] / rs, d[..., 2] / rs  # n̂ = (nx, 0, nz), t̂ = (−nz, 0, nx)
    theta = np.arctan2(d[..., 2], d[..., 0])
    R_ = r.radius[:, None]
    delta = R_ - rho
    h = law.gate_fade
    gamma = smooth((delta + h) / h)
    gamma_d = smooth_d((delta + h) / h) / h
    un, ut, uy = nx * u[..., 0] + nz * u[..., 2], -nz * u[..., 0] + nx * u[..., 2], u[..., 1]

    # radial, one-sided, δ̇ = −n̂·u
    inside = delta > 0.0
    dd = np.where(inside, delta, 0.0)
    fr = np.where(inside, np.maximum(0.0, b.kn * dd + b.cn * ramp(dd, law.ramp_depth) * -un), 0.0)
    f_n, f_t = fr.copy(), np.zeros_like(fr)
    U_radial = 0.5 * b.kn * dd * dd

    # tooth: −∇(γ·U0) plus the gated circumferential damper
    Nt = r.teeth[:, None]
    toothed = Nt > 0
    Ntf = np.where(toothed, Nt, 1).astype(float)
    phase = Ntf * (theta - r.theta0[:, None])
    U0 = np.where(toothed, law.f_skip * R_ / Ntf * (1.0 - np.cos(phase)), 0.0)
    f_n = f_n + gamma_d * U0
    f_t = f_t - np.where(toothed, gamma * (law.f_skip * (R_ / rs) * np.sin(phase) + b.cn * ut), 0.0)
    U_tooth = gamma * U0

    # guide, every end roller: the gated ½·γ·kg·y²
    y = d[..., 1] - r.y0[:, None]
    f_n = f_n + 0.5 * gamma_d * b.kg * y * y
    f_y = -gamma * (b.kg * y + b.cn * uy)
    U_guide = 0.5 * gamma * b.kg * y * y

    # friction along t̂ on an untoothed roller, pair mass mr
    kf = implicit_gain(b.mu, fr, ut * ut, law.v_eps, dt, r.mass[:, None])
    f_t = f_t - np.where(toothed, 0.0, kf * ut)

    f_local = np.stack([f_n * nx - f_t * nz, f_y, f_n * nz + f_t * nx], axis=-1)
    F = np.where(live[..., None], _to_world(Rr[:, None], f_local), 0.0)
    zero = np.where(live, 1.0, 0.0)
    return {"F": F, "x": np.broadcast_to(ps[None], F.shape), "U_radial": U_radial * zero,
            "U_tooth": U_tooth * zero, "U_guide": U_guide * zero}


# ---------------------------------------------------------------- the band: road wheels on the faces


def face_weight(ax: np.ndarray, L: float, phi: float) -> tuple[np.ndarray, np.ndarray]:
    """w(ax) = S((ax + φ)/(2φ)) − S((ax − L + φ)/(2φ)) and its slope w′."""
    t1, t2 = (ax + phi) / (2.0 * phi), (ax - L + phi) / (2.0 * phi)
    return smooth(t1) - smooth(t2), (smooth_d(t1) - smooth_d(t2)) / (2.0 * phi)


def _face_pairs(b: _Band, law: ContactLaw, R, p, w, v, dt: float) -> dict[str, np.ndarray]:
    """Per (road wheel, shoe) pair: the forces on the wheel (conservative + normal at the axle, friction at
    the foot), in world coordinates, and the potential ½·w·kn·δ²."""
    r = b.faces
    pr, wr, vr = p[r.body], w[r.body], v[r.body]
    Rs, ps, ws, vs = R[b.shoes], p[b.shoes], w[b.shoes], v[b.shoes]
    rel = pr[:, None, :] - ps[None, :, :]  # (nf, N, 3)
    a = _to_local(Rs[None], rel)
    adot = _to_local(Rs[None], vr[:, None] - vs[None] - np.cross(ws[None], rel))
    delta = r.radius[:, None] - (a[..., 2] - b.zf)
    wt, wt_d = face_weight(a[..., 0], b.L, b.phi)
    on = (delta > 0.0) & (wt > 0.0)
    dd = np.where(on, delta, 0.0)
    fz = np.where(on, wt * np.maximum(0.0, b.kn * dd + b.cn * ramp(dd, law.ramp_depth) * -adot[..., 2]), 0.0)
    fx = np.where(on, -0.5 * b.kn * dd * dd * wt_d, 0.0)
    F_axle = _to_world(Rs[None], np.stack([fx, np.zeros_like(fx), fz], axis=-1))

    # friction at the foot b = (ax, ay, zf): the roller's slip relative to the shoe there
    foot = np.stack([a[..., 0], a[..., 1], np.full_like(fx, b.zf)], axis=-1)
    xb = ps[None] + _to_world(Rs[None], foot)
    slip_w = (vr[:, None] + np.cross(wr[:, None], xb - pr[:, None])) - (vs[None] + np.cross(ws[None], xb - ps[None]))
    us = _to_local(Rs[None], slip_w)
    k = implicit_gain(b.mu, fz, us[..., 0] ** 2 + us[..., 1] ** 2, law.v_eps, dt, r.mass[:, None])
    k = np.where(on, k, 0.0)
    F_foot = _to_world(Rs[None], np.stack([-k * us[..., 0], -k * us[..., 1], np.zeros_like(k)], axis=-1))
    return {"F_axle": F_axle, "x_axle": np.broadcast_to(pr[:, None], F_axle.shape), "F_foot": F_foot,
            "x_foot": xb, "U_face": 0.5 * wt * b.kn * dd * dd}


# ---------------------------------------------------------------- the band's public entries


def _add(out: np.ndarray, idx: np.ndarray, x: np.ndarray, F: np.ndarray, sign: float) -> None:
    """Accumulate sign·[x × F; F] into rows idx (idx broadcast against the pair arrays)."""
    W = np.concatenate([np.cross(x, F), F], axis=-1) * sign
    np.add.at(out, np.broadcast_to(idx, W.shape[:-1]), W)


def band_fext(model: Model, X: np.ndarray, dt: float = 0.0, law: ContactLaw | None = None) -> np.ndarray:
    """(nbody, 6) band wrenches: every pin–end-roller pair and every shoe face–road-wheel pair."""
    P = params(model, law)
    R, p, w, v = _rows(X, model.nbody)
    out = np.zeros((model.nbody, 6))
    for b in P.bands:
        if len(b.pins.body):
            pin = _pin_pairs(b, P.law, R, p, w, v, dt)
            _add(out, b.shoes[None, :], pin["x"], pin["F"], 1.0)
            _add(out, b.pins.body[:, None], pin["x"], pin["F"], -1.0)
        if len(b.faces.body):
            face = _face_pairs(b, P.law, R, p, w, v, dt)
            for F, x in ((face["F_axle"], face["x_axle"]), (face["F_foot"], face["x_foot"])):
                _add(out, b.faces.body[:, None], x, F, 1.0)
                _add(out, b.shoes[None, :], x, F, -1.0)
    return out


def energy_terms(model: Model, X: np.ndarray, which: str, law: ContactLaw | None = None) -> np.ndarray:
    """One law's potential pair by pair (or corner by corner), flattened: "pin" (radial ½kn δ² + tooth γU0 +
    guide ½γ kg y², end rollers × shoes), "face" (½ w kn δ², road wheels × shoes) or "ground" (½ kn g²)."""
    if which not in ("pin", "face", "ground"):
        raise ValueError(f"which={which!r} is not one of pin, face, ground")
    if which == "ground":
        _, c = _ground_pass(model, X, 0.0, law, None)
        return np.zeros(0) if c is None else c["U"]
    P = params(model, law)
    R, p, w, v = _rows(X, model.nbody)
    parts = []
    for b in P.bands:
        if which == "pin" and len(b.pins.body):
            pin = _pin_pairs(b, P.law, R, p, w, v, 0.0)
            parts.append((pin["U_radial"] + pin["U_tooth"] + pin["U_guide"]).ravel())
        elif which == "face" and len(b.faces.body):
            parts.append(_face_pairs(b, P.law, R, p, w, v, 0.0)["U_face"].ravel())
    return np.concatenate(parts) if parts else np.zeros(0)


def band_energy(model: Model, X: np.ndarray, law: ContactLaw | None = None) -> float:
    """The band's potential: pins ½kn δ², tooth γU0, guide ½γ kg y², faces ½ w kn δ²."""
    return float(energy_terms(model, X, "pin", law).sum() + energy_terms(model, X, "face", law).sum())


def axle_torque(model: Model, X: np.ndarray, dt: float = 0.0, law: ContactLaw | None = None) -> np.ndarray:
    """Each roller's torque about its axle from its contact forces, ((x − p_r) × F_roller)·(R_r e_y) pair by pair;
    rollers in the order of the track blocks' `roller` lines."""
    P = params(model, law)
    R, p, w, v = _rows(X, model.nbody)
    out = np.zeros(P.nroller)
    for b in P.bands:
        if len(b.pins.body):
            pin = _pin_pairs(b, P.law, R, p, w, v, dt)
            r = b.pins
            ey = R[r.body][:, :, 1][:, None, :]
            arm = pin["x"] - p[r.body][:, None]
            out[r.slot] += np.einsum("enk,enk->e", np.cross(arm, -pin["F"]), np.broadcast_to(ey, arm.shape))
        if len(b.faces.body):
            face = _face_pairs(b, P.law, R, p, w, v, dt)
            r = b.faces
            ey = np.broadcast_to(R[r.body][:, :, 1][:, None, :], face["x_foot"].shape)
            pr = p[r.body][:, None]
            tq = np.einsum("fnk,fnk->f", np.cross(face["x_axle"] - pr, face["F_axle"]), ey)
            tq += np.einsum("fnk,fnk->f", np.cross(face["x_foot"] - pr, face["F_foot"]), ey)
            out[r.slot] += tq
    return out


# ---------------------------------------------------------------- the ground


def terrain_height(ground: Ground, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """h(x, y) and its first derivatives hx, hy for a plane, a sine or a grid terrain."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    q = np.asarray(ground.params, dtype=float)
    if ground.terrain == "plane":
        nx, ny, nz, d = q
        return (d - nx * x - ny * y) / nz, np.full_like(x, -nx / nz), np.full_like(y, -ny / nz)
    if ground.terrain == "sine":
        z0, amp, wx, wy = q
        kx, ky = 2.0 * np.pi / wx, 2.0 * np.pi / wy
        sx, sy = np.sin(kx * x), np.sin(ky * y)
        return z0 + amp * sx * sy, amp * kx * np.cos(kx * x) * sy, amp * ky * sx * np.cos(ky * y)
    if ground.terrain == "grid":
        return _grid_height(q, np.asarray(ground.heights, dtype=float), x, y)
    raise ValueError(f"terrain {ground.terrain!r} is not one of plane, sine, grid")


def _catmull_rom(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The four weights c_{−1..2}(t) and their derivatives, stacked on the last axis."""
    t2, t3 = t * t, t * t * t
    c = np.stack([(-t3 + 2 * t2 - t) / 2, (3 * t3 - 5 * t2 + 2) / 2, (-3 * t3 + 4 * t2 + t) / 2, (t3 - t2) / 2], -1)
    dc = np.stack([(-3 * t2 + 4 * t - 1) / 2, (9 * t2 - 10 * t) / 2, (-9 * t2 + 8 * t + 1) / 2, (3 * t2 - 2 * t) / 2], -1)
    return c, dc


def _grid_axis(x: np.ndarray, x0: float, dx: float, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cell index, local coordinate t and the in-range flag of one axis, after clamping into the grid."""
    xc = np.clip(x, x0, x0 + (n - 1) * dx)
    inside = (x >= x0) & (x <= x0 + (n - 1) * dx)
    s = (xc - x0) / dx
    i = np.minimum(np.floor(s).astype(int), n - 2)
    return i, s - i, inside


def _grid_height(q: np.ndarray, H: np.ndarray, x: np.ndarray, y: np.ndarray):
    x0, y0, dx, dy = q
    ny, nx = H.shape
    # ghost nodes extrapolated linearly beyond every edge, so index k of the padded grid is node k − 1
    G = np.empty((ny + 2, nx + 2))
    G[1:-1, 1:-1] = H
    G[0, 1:-1], G[-1, 1:-1] = 2 * H[0] - H[1], 2 * H[-1] - H[-2]
    G[:, 0], G[:, -1] = 2 * G[:, 1] - G[:, 2], 2 * G[:, -2] - G[:, -3]
    i, t, in_x = _grid_axis(x, x0, dx, nx)
    j, s, in_y = _grid_axis(y, y0, dy, ny)
    cx, dcx = _catmull_rom(t)
    cy, dcy = _catmull_rom(s)
    off = np.arange(4)  # a = −1..2 is padded index i + a + 1 = i + off
    patch = G[(j[..., None] + off)[..., :, None], (i[..., None] + off)[..., None, :]]  # (..., b, a)
    h = np.einsum("...b,...a,...ba->...", cy, cx, patch)
    hx = np.where(in_x, np.einsum("...b,...a,...ba->...", cy, dcx, patch) / dx, 0.0)
    hy = np.where(in_y, np.einsum("...b,...a,...ba->...", dcy, cx, patch) / dy, 0.0)
    return h, hx, hy


def _ground_pass(model: Model, X: np.ndarray, dt: float, law: ContactLaw | None, anchors: np.ndarray | None):
    P = params(model, law)
    gp = P.ground
    if gp is None:
        return P, None
    law = P.law
    R, p, w, v = _rows(X, model.nbody)
    x = p[gp.shoe] + _to_world(R[gp.shoe], gp.local)
    u = v[gp.shoe] + np.cross(w[gp.shoe], x - p[gp.shoe])
    h, hx, hy = terrain_height(model.ground, x[:, 0], x[:, 1])
    g = h - x[:, 2]
    g_dot = hx * u[:, 0] + hy * u[:, 1] - u[:, 2]
    m = np.stack([-hx, -hy, np.ones_like(hx)], axis=-1)
    on = g > 0.0
    gg = np.where(on, g, 0.0)
    fn = np.where(on, np.maximum(0.0, gp.kn * gg + gp.cg * ramp(gg, law.ramp_depth) * g_dot), 0.0)
    Fn = fn[:, None] * m
    N = fn * np.linalg.norm(m, axis=-1)
    nhat = m / np.linalg.norm(m, axis=-1)[:, None]
    ut = u - np.sum(u * nhat, axis=-1)[:, None] * nhat
    if anchors is None:
        k = implicit_gain(gp.mu, N, np.sum(ut * ut, axis=-1), law.v_eps, dt, gp.mass)
        Ft = np.where(on[:, None], -k[:, None] * ut, 0.0)
    else:
        Ft = _anchored(gp, model.ground, anchors, on, x, ut, N, dt)
    return P, {"x": x, "F": Fn + Ft, "U": 0.5 * gp.kn * gg * gg}


def _anchored(gp: _GroundParams, ground: Ground, anchors: np.ndarray, on: np.ndarray, x: np.ndarray,
              ut: np.ndarray, N: np.ndarray, dt: float) -> np.ndarray:
    """Anchored (elastoplastic) friction: stick to the anchor inside the cone, a backward-Euler return onto it
    when sliding. Updates anchors (ncorner, 4) = (a, flag) in place."""
    if not dt > 0.0:
        raise ValueError("anchored friction needs dt > 0")
    if anchors.shape != (len(gp.shoe), 4):
        raise ValueError(f"anchors has shape {anchors.shape}, expected ({len(gp.shoe)}, 4)")
    new = on & (anchors[:, 3] == 0.0)
    anchors[new, :3] = x[new]
    anchors[:, 3] = np.where(on, 1.0, 0.0)
    a = anchors[:, :3]
    _, hx, hy = terrain_height(ground, a[:, 0], a[:, 1])
    ma = np.stack([-hx, -hy, np.ones_like(hx)], axis=-1)
    na = ma / np.linalg.norm(ma, axis=-1)[:, None]
    dz = x - a
    z = dz - np.sum(dz * na, axis=-1)[:, None] * na
    ct = gp.cg / (1.0 + gp.cg * dt / gp.mass)
    f = -gp.kt * z - ct[:, None] * ut
    fmag = np.linalg.norm(f, axis=-1)
    slide = on & (fmag > gp.mu * N)
    s = np.where(slide, gp.mu * N / np.where(slide, fmag, 1.0), 1.0)
    anchors[:, :3] += np.where(slide[:, None], (s - 1.0)[:, None] * f / (gp.kt + ct / dt)[:, None], 0.0)
    return np.where(on[:, None], s[:, None] * f, 0.0)


def ground_fext(model: Model, X: np.ndarray, dt: float = 0.0, law: ContactLaw | None = None,
                anchors: np.ndarray | None = None) -> np.ndarray:
    """(nbody, 6) ground wrenches, every pad corner's force at the corner on its shoe alone; `anchors`
    (ncorner, 4) selects anchored friction and is updated in place."""
    P, c = _ground_pass(model, X, dt, law, anchors)
    out = np.zeros((model.nbody, 6))
    if c is not None:
        _add(out, P.ground.shoe, c["x"], c["F"], 1.0)
    return out


def ground_energy(model: Model, X: np.ndarray, law: ContactLaw | None = None) -> float:
    """The ground's potential, Σ ½·kn·g² over the penetrating corners."""
    return float(energy_terms(model, X, "ground", law).sum())


# ---------------------------------------------------------------- states and finite differences for the checks


def _rotation(rotvec: np.ndarray) -> np.ndarray:
    """exp(rotvec×), by Rodrigues."""
    th = float(np.linalg.norm(rotvec))
    if th == 0.0:
        return np.eye(3)
    k = rotvec / th
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + np.sin(th) * K + (1.0 - np.cos(th)) * (K @ K)


def perturbed_rows(model: Model, rng: np.random.Generator, X0: np.ndarray | None = None,
                   moving: bool = True) -> np.ndarray:
    """Body rows near the design pose, every body perturbed on its own: a rotation of a few degrees, a
    translation whose scale is drawn per state from 2 mm to 3 cm (so some states barely touch and some press
    hard), each roller also spun about its axle by any angle (every tooth phase), and, when `moving`,
    random velocities of 0.1 to 1 m/s and rad/s."""
    X = (design_rows(model) if X0 is None else X0).copy()
    rollers = {r.body for t in model.tracks for r in t.rollers}
    scale = float(np.exp(rng.uniform(np.log(2e-3), np.log(3e-2))))
    for i in range(model.nbody):
        R = X[i, :9].reshape(3, 3)
        turn = _rotation(rng.normal(0.0, np.radians(2.0), 3))
        spin = _rotation(R[:, 1] * rng.uniform(-np.pi, np.pi)) if i in rollers else np.eye(3)
        X[i, :9] = (turn @ spin @ R).reshape(-1)
        X[i, 9:12] += rng.normal(0.0, scale, 3)
        if moving:
            for k in (12, 15):
                d = rng.normal(size=3)
                X[i, k : k + 3] = d / np.linalg.norm(d) * rng.uniform(0.1, 1.0)
    return X


def fd_wrench(model: Model, X: np.ndarray, body: int, which: str, law: ContactLaw | None = None, h: float = 1e-6) -> np.ndarray:
    """−∇U of one law with respect to one body's pose, by central differences: [moment about the world origin;
    force], from rotating the body's R and p about the world axes and translating it. The potential is
    differenced pair by pair, so the pairs the body does not touch cancel exactly."""
    out = np.zeros(6)
    for j in range(6):
        U = []
        for sgn in (1.0, -1.0):
            Y = X.copy()
            e = np.zeros(3)
            e[j % 3] = sgn * h
            if j < 3:
                Q = _rotation(e)
                Y[body, :9] = (Q @ Y[body, :9].reshape(3, 3)).reshape(-1)
                Y[body, 9:12] = Q @ Y[body, 9:12]
            else:
                Y[body, 9:12] += e
            U.append(energy_terms(model, Y, which, law))
        out[j] = -np.sum(U[0] - U[1]) / (2.0 * h)
    return out
