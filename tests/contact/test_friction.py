"""Friction: the implicit regularized law's bound over a grid of conditions, for the ground and the band, and
the opt-in anchored ground law on a point mass on a slope (docs/contact.md)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from .conftest import contact

LOADS = (1.0, 30.0, 300.0, 3e3, 3e4, 3e5, 3e6)  # N
SLIPS = (1e-6, 1e-3, 0.01, 0.1, 1.0, 10.0)  # m/s
V_EPS = (1e-4, 1e-3, 0.01, 0.03, 0.1)  # m/s
DTS = (1e-6, 2e-5, 2e-4, 1e-2)  # s
MASSES = (0.5, 4.5, 90.0)  # kg


def ground_struct(con, v_eps: float, kn: float = 2e5):
    """A flat md_ground with the given regularization speed (the other fields as con's ground)."""
    g = con.ffi.new("md_ground *")
    g[0] = con._ground_c[0]
    g.kind, g.v_eps, g.kn = 0, v_eps, kn
    for k in range(4):
        g.p[k] = 0.0  # the plane h = 0
    return g


def ground_point(con, g, p, u, m, dt, anchor=None) -> np.ndarray:
    ffi = con.ffi
    F = ffi.new("double[3]")
    a = ffi.NULL if anchor is None else ffi.from_buffer("double[]", anchor)
    con.lib.md_ground_point(g, ffi.from_buffer("double[]", np.asarray(p, float)),
                            ffi.from_buffer("double[]", np.asarray(u, float)), m, dt, a, F)
    return np.array(ffi.unpack(F, 3))


def test_implicit_ground_friction_never_reverses_the_slip():
    """Over 7 loads x 6 slips x 5 v_eps x 4 dt x 3 masses = 2520 combinations, the velocity change the friction
    impulse implies removes less than all of the slip and never reverses it; and dt = 0 is the explicit law
    bit for bit."""
    con = contact("m113")
    worst = 0.0
    for load, slip, v_eps, dt, m in itertools.product(LOADS, SLIPS, V_EPS, DTS, MASSES):
        g = ground_struct(con, v_eps)
        p, u = np.array([0.0, 0.0, -load / g.kn]), np.array([slip, 0.0, 0.0])
        F = ground_point(con, g, p, u, m, dt)
        removed = -F[0] * dt / m / slip  # the fraction of the slip one step of friction takes away
        assert 0.0 < removed < 1.0, (load, slip, v_eps, dt, m, removed)
        worst = max(worst, removed)
        explicit = ground_point(con, g, p, u, m, 0.0)
        k = con.ground.mu * (g.kn * (load / g.kn)) / math.sqrt(slip * slip + v_eps * v_eps)
        assert explicit[0] == -k * slip  # the regularized law, at dt = 0, to the bit
    print(f"implicit ground friction: the worst step removes 1 - {1 - worst:.2e} of the slip over 2520 combinations")


def test_an_implicit_friction_reciprocal_error_is_caught():
    from mechdyn.contact import Contact
    from .conftest import planted
    con = contact("m113")
    bad = Contact(con.model, module=planted("return muN / (sqrt(slip2 + v_eps * v_eps) + muN * dtm);",
                                            "return muN * (sqrt(slip2 + v_eps * v_eps) + muN * dtm);"))
    g = ground_struct(bad, 0.01)
    F = ground_point(bad, g, [0.0, 0.0, -3e4 / g.kn], [0.1, 0.0, 0.0], 4.5, 2e-4)
    assert -F[0] * 2e-4 / 4.5 / 0.1 > 1.0


def test_implicit_band_friction_never_reverses_the_slip():
    """The face law's friction, a wheel slipping over a flat shoe, over the same grid (the load set by the
    penetration, the pair mass by the wheel's rim)."""
    con = contact("m113")
    band = con.bands[0]
    i = next(i for i, r in enumerate(band.rollers) if r.kind == 2)
    ffi, lib = con.ffi, con.lib
    F, x, tau = ffi.new("double[6]"), ffi.new("double[6]"), ffi.new("double *")
    worst = 0.0
    for load, slip, v_eps, dt, m in itertools.product(LOADS, SLIPS, V_EPS, DTS, MASSES):
        b = ffi.new("md_band *")
        b[0] = con._bands_c[0]
        b.v_eps = v_eps
        r = ffi.new("md_roller *")
        r[0] = b.rollers[i]
        r.m_pair = m
        Xs, Xr = np.zeros(18), np.zeros(18)
        Xs[:9] = Xr[:9] = np.eye(3).ravel()
        delta = load / b.kn
        Xr[9:12] = [0.5 * b.link_len, 0.0, b.face_z + r.radius - delta]
        Xr[15] = slip  # the wheel's axle slides at `slip`, the wheel not turning: the foot slips at `slip`
        lib.md_face_pair(b, r, ffi.from_buffer("double[]", Xs), ffi.from_buffer("double[]", Xr), dt, F, x, tau)
        on_shoe = ffi.unpack(F, 6)[3]
        removed = on_shoe * dt / m / slip
        assert 0.0 < removed < 1.0, (load, slip, v_eps, dt, m, removed)
        worst = max(worst, removed)
    print(f"implicit band friction: the worst step removes 1 - {1 - worst:.2e} of the slip over 2520 combinations")


# ---- the anchored law on a point mass on a slope

SLOPE = math.radians(15.0)
G = 9.81


class PointOnSlope:
    """A point mass on a plane tilted by SLOPE about y (uphill toward +x), under gravity, an extra push along
    the slope and an extra normal load, stepped by semi-implicit Euler with the C ground law."""

    def __init__(self, anchored: bool, dt: float = 1e-4) -> None:
        self.con = contact("m113")
        g = self.con.ffi.new("md_ground *")
        g[0] = self.con._ground_c[0]
        n = np.array([-math.sin(SLOPE), 0.0, math.cos(SLOPE)])
        g.kind = 0
        for k, v in enumerate((0.0, math.tan(SLOPE), 0.0, 0.0)):  # h = x·tan(slope)
            g.p[k] = v
        self.g, self.n, self.dt = g, n, dt
        self.t_hat = np.array([math.cos(SLOPE), 0.0, math.sin(SLOPE)])  # uphill
        self.m = self.con.ground.supported_mass  # the mass one loaded corner carries on m113
        self.mu, self.kt = self.con.ground.mu, self.con.ground.kt
        self.p = np.array([0.0, 0.0, -self.m * G / g.kn])  # near the static sinkage, below the origin
        self.u = np.zeros(3)
        self.anchor = np.zeros(4) if anchored else None

    def breakaway_push(self, fraction: float, load: float = 1.0) -> float:
        """The push down the slope that makes the tangential demand `fraction` of μ·N."""
        N = self.m * G * math.cos(SLOPE) * load
        return fraction * self.mu * N - self.m * G * math.sin(SLOPE)

    def run(self, seconds: float, push: float, normal=lambda t: 0.0) -> list[tuple[float, np.ndarray, np.ndarray]]:
        out = []
        for k in range(int(round(seconds / self.dt))):
            t = k * self.dt
            F = ground_point(self.con, self.g, self.p, self.u, self.m, self.dt, self.anchor)
            f = F + self.m * np.array([0.0, 0.0, -G]) - push * self.t_hat - normal(t) * self.n
            self.u = self.u + f / self.m * self.dt
            self.p = self.p + self.u * self.dt
            out.append((t, self.p.copy(), self.u.copy()))
        return out


def along(sim: PointOnSlope, rec, t0: float) -> tuple[np.ndarray, np.ndarray]:
    t = np.array([r[0] for r in rec])
    s = np.array([r[1] @ sim.t_hat for r in rec])
    keep = t >= t0
    return t[keep], s[keep]


def test_anchored_holds_at_0p9_of_breakaway_at_exactly_f_over_kt():
    sim = PointOnSlope(anchored=True)
    push = sim.breakaway_push(0.9)
    rec = sim.run(4.0, push)
    t, s = along(sim, rec, 3.0)  # once the tangential spring's ringing (ζ 0.2 at 7.5 Hz) has died away
    speed = abs(np.polyfit(t, s, 1)[0])
    a = sim.anchor[:3]
    deflection = (sim.p - a) @ sim.t_hat
    expected = -0.9 * sim.mu * sim.m * G * math.cos(SLOPE) / sim.kt
    control = PointOnSlope(anchored=False)
    tc, sc = along(control, control.run(4.0, push), 3.0)
    creep = abs(np.polyfit(tc, sc, 1)[0])
    print(f"anchored, 0.9 of breakaway: holds at {deflection * 1e3:.4f} mm (F/kt {expected * 1e3:.4f} mm), "
          f"moving {speed:.1e} m/s; regularized control creeps at {creep:.3g} m/s")
    assert deflection == pytest.approx(expected, rel=1e-6)
    assert speed < 1e-9
    assert creep > 1e4 * max(speed, 1e-12)  # the control must fail to hold: the two laws told apart


def test_anchored_slides_at_1p1_with_the_coulomb_acceleration():
    sim = PointOnSlope(anchored=True)
    rec = sim.run(1.5, sim.breakaway_push(1.1))
    t = np.array([r[0] for r in rec])
    v = np.array([r[2] @ sim.t_hat for r in rec])
    keep = t >= 0.5
    acc = np.polyfit(t[keep], v[keep], 1)[0]
    expected = -(1.1 - 1.0) * sim.mu * G * math.cos(SLOPE)  # downhill
    print(f"anchored, 1.1 of breakaway: accelerates at {acc / expected:.5f} of (1.1 - 1)·μ·g·cos(slope)")
    assert acc == pytest.approx(expected, rel=2e-3)


def test_anchored_holds_under_normal_load_vibration():
    """±30 % normal load at 2 Hz (below the 7.5 Hz bounce), the push at half of breakaway: the anchored law
    holds still; the regularized control walks."""
    freq = 2.0
    results = {}
    for anchored in (True, False):
        sim = PointOnSlope(anchored=anchored)
        wiggle = lambda t: 0.3 * sim.m * G * math.cos(SLOPE) * math.sin(2 * math.pi * freq * t)  # noqa: E731
        t, s = along(sim, sim.run(5.0, sim.breakaway_push(0.5), wiggle), 3.0)
        period = int(round(1.0 / freq / sim.dt))  # the drift of the mean over whole periods of the wiggle
        results[anchored] = abs(s[-period:].mean() - s[:period].mean()) / (t[-1] - t[0] - 1.0 / freq)
    print(f"±30 % normal load at half breakaway: anchored drifts {results[True]:.1e} m/s, "
          f"regularized {results[False]:.3g} m/s")
    assert results[True] < 1e-8 and results[False] > 1e4 * max(results[True], 1e-12)
