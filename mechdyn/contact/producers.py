"""The contact force producers of a model, called with numpy arrays (docs/contact.md, docs/tires.md).

    con = Contact(model)
    fext = con.fext(dyn.bodies(q, qd), dt)      # (nbody, 6): band + ground + tires; contact_fext(con, dyn, q, qd, dt)
    jac = con.fext_jacobian(X, dt)              # fext and its blocks d(fext)/d(body states); jac.dense(), jac.dot(δ)

Every entry checks what it hands to C (shapes, dtype, dt), so no input makes the C read or write out of bounds.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from mechdyn.core.model import Model

from . import native
from .law import ContactLaw
from .params import FACE, PIN_FRICTION, PIN_TOOTH, BandParams, GroundParams, band_params, ground_params
from .tires import TIRE_INFO, TireParams, check_reach, model_tires

ROW = 18  # doubles per body row: R (9), p, w, v


def _real(name: str, x, shape: tuple[int, ...]) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype.kind not in "biuf":
        raise ValueError(f"{name} has dtype {a.dtype}; expected real numbers of shape {shape}")
    a = np.ascontiguousarray(a, dtype=np.float64)
    if a.shape != shape:
        raise ValueError(f"{name} has shape {a.shape}, expected {shape}")
    return a


def _in_place(name: str, a, shape: tuple[int, ...], what: str) -> np.ndarray:
    """`a`, the caller's state that C updates in place: refused unless a writeable C-contiguous float64 array
    of `shape` (a copy would be updated instead, silently)."""
    if not (isinstance(a, np.ndarray) and a.dtype == np.float64 and a.flags.c_contiguous and a.flags.writeable):
        raise ValueError(f"{name} must be a writeable C-contiguous float64 array ({what}, updated in place)")
    if a.shape != shape:
        raise ValueError(f"{name} has shape {a.shape}, expected {shape}")
    return a


def _carried(name: str, a, shape: tuple[int, ...]) -> np.ndarray | None:
    """A copy of the caller's carried state `a` (read, never updated), or None."""
    return None if a is None else _real(name, a, shape).copy()


@dataclass(frozen=True)
class ContactJacobian:
    """Contact wrenches and their derivative with respect to the body states (docs/contact.md, "Derivatives").

    A body's tangent is δ = (δφ, δp, δw, δv), world frame: R ↦ exp(δφ×)·R, p ↦ p + δp, w ↦ w + δw, v ↦ v + δv.
    Block k couples bodies a, b = pairs[k]: its rows 0–5 are d(fext[a]), rows 6–11 d(fext[b]); its columns 0–11
    are a's tangent, 12–23 b's. A one-body block (ground, tire) has b = −1 and only its [:6, :12] corner set.
    Blocks add: the derivative is their sum.
    """

    fext: np.ndarray  # (nbody, 6)
    pairs: np.ndarray  # (n, 2) int
    blocks: np.ndarray  # (n, 12, 24)

    def dot(self, delta) -> np.ndarray:
        """(nbody, 6) the derivative of fext along the tangent `delta` (nbody, 12)."""
        nbody = len(self.fext)
        d = np.vstack([_real("delta", delta, (nbody, 12)), np.zeros((1, 12))])  # row −1: a one-body block's b
        y = np.einsum("kij,kj->ki", self.blocks, np.concatenate([d[self.pairs[:, 0]], d[self.pairs[:, 1]]], axis=1))
        out = np.zeros((nbody + 1, 6))
        np.add.at(out, self.pairs[:, 0], y[:, :6])
        np.add.at(out, self.pairs[:, 1], y[:, 6:])
        return out[:nbody]

    def dense(self) -> np.ndarray:
        """(6·nbody, 12·nbody) the derivative as one matrix: row 6i + k is fext[i, k], column 12j + c body j's
        tangent component c."""
        nbody = len(self.fext)
        J = np.zeros((6 * nbody, 12 * nbody))
        for (a, b), B in zip(self.pairs, self.blocks):
            for i, rows in ((a, B[:6]), (b, B[6:])):
                for j, block in ((a, rows[:, :12]), (b, rows[:, 12:])):
                    if i >= 0 and j >= 0:
                        J[6 * i:6 * i + 6, 12 * j:12 * j + 12] += block
        return J


def _dt(dt) -> float:
    v = float(dt)
    if not (math.isfinite(v) and v >= 0.0):
        raise ValueError(f"dt is {dt!r}; expected a finite number >= 0 (0: the explicit friction law)")
    return v


class Contact:
    """The band, ground and tire producers of `model` (its expanded bands, its ground, its tires), in C."""

    def __init__(self, model: Model, law: ContactLaw | None = None, module: ModuleType | None = None,
                 broadphase: bool = True) -> None:
        self.model, self.law, self.broadphase = model, law or ContactLaw(), broadphase
        self.module = module or native.module()
        self.ffi, self.lib = self.module.ffi, self.module.lib
        self.bands: tuple[BandParams, ...] = band_params(model, self.law)
        self.ground: GroundParams | None = ground_params(model, self.law)
        self.nroller = sum(len(b.rollers) for b in self.bands)
        self.ncorner = 0 if self.ground is None else 4 * len(self.ground.pad_body)
        self.tires: tuple[TireParams, ...] = model_tires(model)
        self.ntire = len(self.tires)
        self.mu_road = float(model.ground.mu) if model.ground is not None else 0.0
        self._keep: list = []  # the C structs' arrays, alive as long as the structs
        self._bands_c = self._band_structs()
        self._ground_c = self._ground_struct()
        self._tires_c = self._tire_structs()
        if self.tires:
            check_reach(model, self.tires, self.terrain)

    def _band_structs(self):
        ffi, law = self.ffi, self.law
        out = ffi.new("md_band[]", max(1, len(self.bands)))
        for c, b in zip(out, self.bands):
            rollers = ffi.new("md_roller[]", len(b.rollers))
            for rc, r in zip(rollers, b.rollers):
                rc.body, rc.kind, rc.radius, rc.teeth = r.body, r.kind, r.radius, r.teeth
                rc.theta0, rc.y0, rc.m_pair, rc.crush = r.theta0, r.y0, r.m_pair, r.crush
            self._keep.append(rollers)
            c.first_shoe, c.nshoe, c.nroller, c.rollers = b.first_shoe, b.nshoe, len(b.rollers), rollers
            c.link_len, c.face_z, c.face_fade = b.link_len, b.face_z, b.face_fade
            c.kn, c.cn, c.kg, c.mu = b.kn, b.cn, b.kg, b.mu
            c.v_eps, c.ramp, c.gate, c.f_skip = law.v_eps, law.ramp_depth, law.gate_fade, law.f_skip
        return out

    def _ground_struct(self):
        g, ffi = self.ground, self.ffi
        out = ffi.new("md_ground *")
        if g is None:
            return out
        out.kind = g.kind
        for k in range(4):
            out.p[k] = g.p[k]
        if g.heights is not None:
            h = ffi.new("double[]", g.heights.ravel().tolist())
            self._keep.append(h)
            out.ny, out.nx = g.heights.shape
            out.heights = h
        arrays = (ffi.new("int[]", g.pad_body.tolist()), ffi.new("double[]", g.corner.ravel().tolist()),
                  ffi.new("double[]", g.corner_mass.tolist()))
        self._keep.extend(arrays)
        out.npad = len(g.pad_body)
        out.pad_body, out.corner, out.corner_mass = arrays
        out.kn, out.cg, out.kt, out.mu = g.kn, g.cg, g.kt, g.mu
        out.v_eps, out.ramp = self.law.v_eps, self.law.ramp_depth
        out.reach = g.reach if self.broadphase else 0.0
        return out

    def _tire_structs(self):
        out = self.ffi.new("md_tire[]", max(1, self.ntire))
        plain = ("law", "points", "body", "r0", "width", "mu0", "rr", "dz", "d1", "d2", "r_bottom", "k_bottom", "pn",
                 "pn_max", "kz", "cslip", "calpha", "umin", "umax")
        for c, t in zip(out, self.tires):
            for name in plain:
                setattr(c, name, getattr(t, name))
            c.axis = t.axis.tolist()
            c.curve = list(t.curve)
            c.vnum, c.fr_begin, c.fr_end, c.sigma0, c.sigma1 = t.vnum, t.fr_begin, t.fr_end, t.sigma0, t.sigma1
            if t.table is not None:
                table = self.ffi.new("double[]", t.table.ravel().tolist())
                self._keep.append(table)
                c.ncurve, c.table = len(t.table), table
        return out

    # ---- the producers

    def _rows(self, X) -> np.ndarray:
        return _real("X", X, (self.model.nbody, ROW))

    def _band(self, X, dt, fext: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, float]:
        """The band's wrenches added into fext (a fresh zero array when None), its axle torques and potential."""
        X, dt = self._rows(X), _dt(dt)
        fext = np.zeros((self.model.nbody, 6)) if fext is None else fext
        torque = np.zeros(max(1, self.nroller))
        ffi = self.ffi
        U = self.lib.md_band_fext(self._bands_c, len(self.bands), ffi.from_buffer("double[]", X), dt,
                                  ffi.from_buffer("double[]", fext), ffi.from_buffer("double[]", torque))
        return fext, torque[: self.nroller], U

    def _ground(self, X, dt, anchors, fext: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        """The ground's wrenches added into fext (a fresh zero array when None) and its potential."""
        X, dt = self._rows(X), _dt(dt)
        fext = np.zeros((self.model.nbody, 6)) if fext is None else fext
        if self.ground is None:
            if anchors is not None and np.shape(anchors) != (0, 4):
                raise ValueError(f"anchors has shape {np.shape(anchors)}, expected (0, 4): the model has no ground")
            return fext, 0.0
        ffi = self.ffi
        if anchors is None:
            a = ffi.NULL
        else:
            _in_place("anchors", anchors, (self.ncorner, 4), "the ground's anchors")
            if not dt > 0:
                raise ValueError("anchored friction needs dt > 0 (its slide is a return over the step)")
            a = ffi.from_buffer("double[]", anchors)
        U = self.lib.md_ground_fext(self._ground_c, ffi.from_buffer("double[]", X), dt, a,
                                    ffi.from_buffer("double[]", fext))
        return fext, U

    def _tires(self, X, dt, state, fext: np.ndarray | None = None,
               info: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        """The tires' wrenches added into fext (a fresh zero array when None) and their springs' potential; state
        (ntire, 2) the bristles, updated in place over dt (None: zero bristles, none carried); info filled."""
        X, dt = self._rows(X), _dt(dt)
        fext = np.zeros((self.model.nbody, 6)) if fext is None else fext
        if not self.ntire:
            return fext, 0.0
        ffi = self.ffi
        st = ffi.NULL if state is None else ffi.from_buffer(
            "double[]", _in_place("state", state, (self.ntire, 2), "the tires' bristles"))
        out = ffi.NULL if info is None else ffi.from_buffer("double[]", info)
        U = self.lib.md_tire_fext(self._tires_c, self.ntire, self._ground_c, self.mu_road,
                                  ffi.from_buffer("double[]", X), dt, st, ffi.from_buffer("double[]", fext), out)
        return fext, U

    def tire_fext(self, X, dt: float = 0.0, state: np.ndarray | None = None) -> np.ndarray:
        """(nbody, 6) the tires' wrenches at body rows X; `state` (ntire, 2), kept by the caller, carries TMeasy's
        low-speed bristles over dt (None: zero bristles)."""
        return self._tires(X, dt, state)[0]

    def tire_info(self, X, state: np.ndarray | None = None) -> np.ndarray:
        """(ntire, len(TIRE_INFO)) each tire's contact, load, slips, camber and local forces at X (TIRE_INFO names
        the columns); the bristles `state` read, not carried."""
        info = np.zeros((self.ntire, len(TIRE_INFO)))
        self._tires(X, 0.0, None if state is None else np.array(state, dtype=float), info=info)
        return info

    def tire_energy(self, X) -> float:
        """The tires' vertical springs' potential, J."""
        return self._tires(X, 0.0, None)[1]

    def band_fext(self, X, dt: float = 0.0) -> np.ndarray:
        """(nbody, 6) the band's wrenches at body rows X (nbody, 18), friction implicit over dt."""
        return self._band(X, dt)[0]

    def ground_fext(self, X, dt: float = 0.0, anchors: np.ndarray | None = None) -> np.ndarray:
        """(nbody, 6) the ground's wrenches; `anchors` (ncorner, 4), kept by the caller, selects anchored friction."""
        return self._ground(X, dt, anchors)[0]

    def fext(self, X, dt: float = 0.0, anchors: np.ndarray | None = None,
             state: np.ndarray | None = None) -> np.ndarray:
        """(nbody, 6) band + ground + tires, all added into one array."""
        X = self._rows(X)
        return self._tires(X, dt, state, self._ground(X, dt, anchors, self._band(X, dt)[0])[0])[0]

    def _jacobian(self, fn, args: tuple, cap: int, width: int) -> tuple[np.ndarray, np.ndarray]:
        """C's `fn(*args, cap, index, blocks)` with room for cap blocks (as many as the producer has pairs), its
        pairs (n, 2) and blocks (n, 12, 24); a one-body producer's (width 1) blocks are 6 × 12, set into the
        corner of a 12 × 24 with b = −1."""
        cap = max(cap, 1)
        index, out = np.empty((cap, width), dtype=np.intc), np.empty((cap, 6 * width, 12 * width))
        n = fn(*args, cap, self.ffi.from_buffer("int[]", index), self.ffi.from_buffer("double[]", out))
        if n < 0:
            raise RuntimeError(f"{-n} derivative blocks, more than the {cap} pairs the producer has")
        if width == 2:
            return index[:n].astype(np.int64), out[:n].copy()
        blocks = np.zeros((n, 12, 24))
        blocks[:, :6, :12] = out[:n]
        return np.stack([index[:n, 0], np.full(n, -1)], axis=1).astype(np.int64), blocks

    def _band_jac(self, X: np.ndarray, dt: float, fext: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The band's wrenches added into fext, and its pairs and blocks."""
        torque, ffi = np.zeros(max(1, self.nroller)), self.ffi
        args = (self._bands_c, len(self.bands), ffi.from_buffer("double[]", X), dt, ffi.from_buffer("double[]", fext),
                ffi.from_buffer("double[]", torque))
        return self._jacobian(self.lib.md_band_fext_jac, args, sum(len(b.rollers) * b.nshoe for b in self.bands), 2)

    def _ground_jac(self, X: np.ndarray, dt: float, anchors, fext: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The ground's wrenches added into fext, and its pairs and blocks, at a copy of the anchors."""
        if self.ground is None:
            if anchors is not None and np.shape(anchors) != (0, 4):
                raise ValueError(f"anchors has shape {np.shape(anchors)}, expected (0, 4): the model has no ground")
            return np.zeros((0, 2), dtype=np.int64), np.zeros((0, 12, 24))
        anchors, ffi = _carried("anchors", anchors, (self.ncorner, 4)), self.ffi
        if anchors is not None and not dt > 0:
            raise ValueError("anchored friction needs dt > 0 (its slide is a return over the step)")
        a = ffi.NULL if anchors is None else ffi.from_buffer("double[]", anchors)
        args = (self._ground_c, ffi.from_buffer("double[]", X), dt, a, ffi.from_buffer("double[]", fext))
        return self._jacobian(self.lib.md_ground_fext_jac, args, len(self.ground.pad_body), 1)

    def _tire_jac(self, X: np.ndarray, dt: float, state, fext: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The tires' wrenches added into fext, and their pairs and blocks, at a copy of the bristles."""
        if not self.ntire:
            return np.zeros((0, 2), dtype=np.int64), np.zeros((0, 12, 24))
        state, ffi = _carried("tire_state", state, (self.ntire, 2)), self.ffi
        args = (self._tires_c, self.ntire, self._ground_c, self.mu_road, ffi.from_buffer("double[]", X), dt,
                ffi.NULL if state is None else ffi.from_buffer("double[]", state), ffi.from_buffer("double[]", fext))
        return self._jacobian(self.lib.md_tire_fext_jac, args, self.ntire, 1)

    def band_jacobian(self, X, dt: float = 0.0) -> ContactJacobian:
        """The band's wrenches at X (band_fext's, bit for bit) and their derivative: a block per pin or face pair
        inside its law's support."""
        X, dt = self._rows(X), _dt(dt)
        fext = np.zeros((self.model.nbody, 6))
        return ContactJacobian(fext, *self._band_jac(X, dt, fext))

    def ground_jacobian(self, X, dt: float = 0.0, anchors=None) -> ContactJacobian:
        """The ground's wrenches at X (ground_fext's) and their derivative at the `anchors` (ncorner, 4) as given
        (read, not updated): a block per padded shoe with a corner in contact."""
        X, dt = self._rows(X), _dt(dt)
        fext = np.zeros((self.model.nbody, 6))
        return ContactJacobian(fext, *self._ground_jac(X, dt, anchors, fext))

    def tire_jacobian(self, X, dt: float = 0.0, state=None) -> ContactJacobian:
        """The tires' wrenches at X (tire_fext's) and their derivative at the bristles `state` (ntire, 2) as given
        (read, not carried): a block per tire exerting a force."""
        X, dt = self._rows(X), _dt(dt)
        fext = np.zeros((self.model.nbody, 6))
        return ContactJacobian(fext, *self._tire_jac(X, dt, state, fext))

    def fext_jacobian(self, X, dt: float = 0.0, anchors=None, tire_state=None) -> ContactJacobian:
        """band + ground + tires (fext's, bit for bit) and the derivative of their sum, at the carried state as
        given (the anchors and the tires' bristles read, not updated): what a Newton iteration on a step of dt
        needs."""
        X, dt = self._rows(X), _dt(dt)
        fext = np.zeros((self.model.nbody, 6))
        parts = (self._band_jac(X, dt, fext), self._ground_jac(X, dt, anchors, fext),
                 self._tire_jac(X, dt, tire_state, fext))
        return ContactJacobian(fext, np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))

    def band_energy(self, X) -> float:
        """The band's contact potential (pins, teeth, guides, faces), J."""
        return self._band(X, 0.0)[2]

    def ground_energy(self, X) -> float:
        """The ground's contact potential, J."""
        return self._ground(X, 0.0, None)[1]

    def axle_torque(self, X, dt: float = 0.0) -> np.ndarray:
        """(nroller,) each roller's contact torque about its axle, summed pair by pair (rollers of every band in
        the order of their `roller` lines)."""
        return self._band(X, dt)[1]

    def terrain(self, x: float, y: float) -> tuple[float, float, float]:
        """h, ∂h/∂x, ∂h/∂y of the ground at (x, y)."""
        if self.ground is None:
            raise ValueError(f"model '{self.model.name}' has no ground block")
        h = self.ffi.new("double[3]")
        self.lib.md_terrain(self._ground_c, float(x), float(y), h)
        return h[0], h[1], h[2]

    def loaded_corners(self, X) -> int:
        """The pad corners below the terrain at X."""
        if self.ground is None:
            return 0
        X, g = self._rows(X), self.ground
        R, p = X[g.pad_body, :9].reshape(-1, 3, 3), X[g.pad_body, 9:12]
        pts = (p[:, None, :] + np.einsum("sij,scj->sci", R, g.corner)).reshape(-1, 3)
        return int(sum(self.terrain(x, y)[0] > z for x, y, z in pts))

    def ground_zeta(self, X) -> float:
        """The ground damper's critical-damping fraction realized at X: against the model's mass shared by the
        corners loaded there (nan when none is)."""
        loaded = self.loaded_corners(X)
        if not loaded:
            return float("nan")
        total, g = float(sum(b.mass for b in self.model.bodies)), self.ground
        return g.cg / (2.0 * math.sqrt(g.kn * total / loaded))

    def describe(self) -> str:
        """The derived parameters, one line per band roller kind and one for the ground."""
        lines = []
        kinds = {PIN_FRICTION: "pin+friction", PIN_TOOTH: "pin+tooth", FACE: "face"}
        for b in self.bands:
            rs = ", ".join(f"{self.model.bodies[r.body].name} {kinds[r.kind]}"
                           + (f" ({r.pins} pins)" if r.kind != FACE else "") for r in b.rollers)
            lines.append(f"band {b.track.name}: kn {b.kn:g} N/m, cn {b.cn:.0f} N·s/m (ζ {self.law.zeta_band:g} "
                         f"on the {b.track.mass:g} kg shoe), mu {b.mu:g}; {rs}")
        if self.ncorner:  # the ground's own law acts on track pads only; tires read its terrain and mu
            g = self.ground
            lines.append(f"ground: kn {g.kn:g} N/m, cg {g.cg:.0f} N·s/m (ζ {self.law.zeta_ground:g} on "
                         f"{g.supported_mass:.1f} kg per corner, a quarter of {self.ncorner} corners loaded), "
                         f"kt {g.kt:g}, mu {g.mu:g}")
        for t in self.tires:
            law = "TMeasy" if t.law == 0 else "Fiala"
            lines.append(f"tire {t.name} on {self.model.bodies[t.body].name}: {law} ({t.data}), r0 {t.r0:g} m, "
                         f"{'one point' if t.points == 1 else 'four points'}, road mu {self.mu_road:g}")
        return "\n".join(lines) or "no band, no ground and no tire: no contact"


def contact_fext(con: Contact, dyn, q, qd, dt: float = 0.0, anchors: np.ndarray | None = None) -> np.ndarray:
    """(nbody, 6) the contact wrenches of `con` (built once for the model) at (q, qd) of the compiled model `dyn`
    (mechdyn.load): its generated body kinematics, then both producers."""
    if dyn.model.name != con.model.name or dyn.nbody != con.model.nbody:
        raise ValueError(f"the Contact is of model '{con.model.name}' and dyn of '{dyn.model.name}'; expected both "
                         "of the same model")
    return con.fext(dyn.bodies(q, qd), dt, anchors)
