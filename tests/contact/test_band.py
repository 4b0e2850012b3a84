"""The band's laws at random states and along sweeps (docs/contact.md, "The band"): its internal wrenches cancel,
the axle torques from fext equal those summed pair by pair, the tooth law's shape, the face weights, passivity
and the friction cone, and the design pose. The C against an independent NumPy route: test_route.py."""
from __future__ import annotations

import math

import numpy as np
import pytest

from mechdyn.contact import Contact

from .conftest import TRACKED, contact, planted
from .states import design_rows, dissipated, perturbed, still

N_STATES = 1000
DT = 2e-5  # the stepping dt the implicit friction is also checked at


def states(con: Contact, n: int = N_STATES, seed: int = 0, **kw) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    X0 = design_rows(con.model)
    return [perturbed(X0, rng, **kw) for _ in range(n)]


def imbalance(con: Contact, X: np.ndarray, dt: float = 0.0) -> float:
    """|Σ of the band's wrench rows| relative to the largest row: 0 up to round-off when every reaction is there."""
    f = con.band_fext(X, dt)
    return float(np.abs(f.sum(axis=0)).max() / max(np.abs(f).max(), 1e-300))


@pytest.mark.parametrize("name", TRACKED)
def test_band_wrenches_cancel(name):
    con = contact(name)
    worst = max(imbalance(con, X, dt) for X in states(con) for dt in (0.0, DT))
    print(f"{name}: band wrenches sum to {worst:.1e} of the largest row over {N_STATES} states")
    assert worst < 1e-13


def test_a_dropped_reaction_is_caught():
    con = contact("track_min")
    bad = Contact(con.model, module=planted("fr[k] -= m[k], fr[3 + k] -= F[k];", "(void)fr;"))
    assert max(imbalance(bad, X) for X in states(con, 20)) > 0.1


def axle_from_fext(con: Contact, X: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Each roller's torque about its axle from its fext row: (M − p × F) · its y axis."""
    rollers = [r.body for b in con.bands for r in b.rollers]
    M = f[rollers, :3] - np.cross(X[rollers, 9:12], f[rollers, 3:])
    return np.einsum("ni,ni->n", M, X[rollers, :9].reshape(-1, 3, 3)[:, :, 1])


def torque_gap(con: Contact, X: np.ndarray, dt: float = 0.0) -> float:
    tau = con.axle_torque(X, dt)
    gap = np.abs(axle_from_fext(con, X, con.band_fext(X, dt)) - tau).max()
    return float(gap / max(np.abs(tau).max(), 1e-300))


@pytest.mark.parametrize("name", TRACKED)
def test_axle_torque_from_fext_equals_the_pairs_sum(name):
    con = contact(name)
    worst = max(torque_gap(con, X, dt) for X in states(con, seed=1) for dt in (0.0, DT))
    print(f"{name}: axle torques from fext vs summed pair by pair: {worst:.1e} relative over {N_STATES} states")
    assert worst < 1e-12


def test_a_wrong_moment_reference_is_caught_by_the_torque_and_not_the_balance():
    con = contact("m113")
    # the face friction's reaction applied at the axle instead of the wheel's foot: it still cancels in pairs
    bad = Contact(con.model, module=planted("x[3 + k] = xb[k];", "(void)0;"))
    Xs = states(con, 20, seed=1)
    assert max(imbalance(bad, X) for X in Xs) < 1e-13
    assert max(torque_gap(bad, X) for X in Xs) > 1e-3


def test_determinism_bitwise():
    con = contact("m113")
    Xs = states(con, 3, seed=2)
    first = [con.fext(X, DT).tobytes() for X in Xs]
    again = [con.fext(X, DT).tobytes() for X in reversed(Xs)][::-1]
    assert first == again


# ---- the tooth law, on a single pin against the sprocket

def sprocket(con: Contact):
    band = con.bands[0]
    i = next(i for i, r in enumerate(band.rollers) if r.kind == 1)
    return band, i, band.rollers[i]


def pin_force(con: Contact, rho: float, theta: float, y: float = None, u=(0.0, 0.0, 0.0)) -> np.ndarray:
    """The force on a pin at (ρ, θ) in the first band's sprocket frame (the roller at the origin, unrotated),
    moving at u in that frame: (f_ρ, f_θ, f_y) and the pair's potential."""
    band, i, r = sprocket(con)
    ffi = con.ffi
    Xs, Xr = np.zeros(18), np.zeros(18)
    Xr[:9] = np.eye(3).ravel()
    Xs[:9] = np.eye(3).ravel()
    yy = r.y0 if y is None else y
    Xs[9:12] = [rho * math.cos(theta), yy, rho * math.sin(theta)]
    Xs[15:18] = u
    F, x, tau = ffi.new("double[3]"), ffi.new("double[3]"), ffi.new("double *")
    bc = con._bands_c + 0
    U = con.lib.md_pin_pair(bc, bc.rollers + i, ffi.from_buffer("double[]", Xs), ffi.from_buffer("double[]", Xr),
                            0.0, F, x, tau)
    n, t = np.array([math.cos(theta), 0, math.sin(theta)]), np.array([-math.sin(theta), 0, math.cos(theta)])
    f = np.array(con.ffi.unpack(F, 3))
    return np.array([f @ n, f @ t, f[1], U])


def test_tooth_law_fixed_points_slopes_amplitude_period_and_branch_cut():
    con = contact("m113")
    band, _, r = sprocket(con)
    N, R, th0 = int(r.teeth), r.radius, r.theta0
    pitch = 2 * math.pi / N
    at = lambda th, rho=R: pin_force(con, rho, th)  # noqa: E731
    # fixed points: the pocket centre and the tooth tip carry no circumferential force
    for k in range(N):
        assert abs(at(th0 + k * pitch)[1]) < 1e-9 * con.law.f_skip
        assert abs(at(th0 + (k + 0.5) * pitch)[1]) < 1e-9 * con.law.f_skip
    # slopes: restoring about the pocket (stable), repelling about the tip (unstable)
    e = 1e-3
    assert at(th0 + e)[1] < 0 < at(th0 - e)[1]
    assert at(th0 + 0.5 * pitch + e)[1] > 0 > at(th0 + 0.5 * pitch - e)[1]
    # amplitude: F_skip on the pitch circle, at a quarter pitch from the pocket
    th = np.linspace(-math.pi, math.pi, 20001)
    ft = np.array([at(x)[1] for x in th])
    assert np.abs(ft).max() == pytest.approx(con.law.f_skip, rel=1e-6)
    assert abs(at(th0 + 0.25 * pitch)[1]) == pytest.approx(con.law.f_skip, rel=1e-12)
    # periodic at the pocket pitch, and continuous across θ = ±π (no wrapping)
    for x in np.linspace(-3, 3, 13):
        assert at(x + pitch)[1] == pytest.approx(at(x)[1], rel=1e-9, abs=1e-6)
    below, above = at(math.pi - 1e-9), at(-math.pi + 1e-9)
    assert np.abs(below[:3] - above[:3]).max() < 1e-3
    print(f"tooth law: N {N}, pitch {pitch:.5f} rad, peak {np.abs(ft).max():.6g} N (F_skip {con.law.f_skip:g})")


def test_tooth_radial_term_present_and_arm_is_rho():
    con = contact("m113")
    _, _, r = sprocket(con)
    h = con.law.gate_fade
    th = r.theta0 + 0.3 * 2 * math.pi / r.teeth
    rho = r.radius + 0.5 * h  # outside the circle, inside the gate: only the tooth (and the zero guide) act
    f = pin_force(con, rho, th)
    U0 = con.law.f_skip * r.radius / r.teeth * (1 - math.cos(r.teeth * (th - r.theta0)))
    gamma_slope = 1.5 / h  # S'(½)/h at the gate's middle
    assert f[0] == pytest.approx(gamma_slope * U0, rel=1e-12)  # the radial g'(δ)·U0
    assert f[1] == pytest.approx(-0.5 * con.law.f_skip * r.radius / rho * math.sin(r.teeth * (th - r.theta0)),
                                 rel=1e-12)  # γ = ½, arm ρ


# ---- the face weights

def face_weight(con: Contact, x: float) -> tuple[float, float]:
    s = con.ffi.new("double *")
    w = con.lib.md_face_weight(con._bands_c + 0, x, s)
    return w, s[0]


@pytest.mark.parametrize("name", TRACKED)
def test_face_weights_partition_unity_with_smooth_slopes(name):
    con = contact(name)
    L, phi = con.bands[0].link_len, con.bands[0].face_fade
    xs = np.linspace(L - phi, L + phi, 2001)
    worst_sum = worst_slope = 0.0
    for x in xs:
        w1, s1 = face_weight(con, x)
        w2, s2 = face_weight(con, x - L)
        worst_sum = max(worst_sum, abs(w1 + w2 - 1))
        worst_slope = max(worst_slope, abs(s1 + s2) * phi)
    assert face_weight(con, L)[0] == face_weight(con, 0.0)[0] == 0.5
    # no jump: the slope is continuous and bounded by the smoothstep's 1.5/(2φ)
    slopes = np.array([face_weight(con, x)[1] for x in np.linspace(-2 * phi, L + 2 * phi, 4001)])
    assert np.abs(slopes).max() <= 1.5 / (2 * phi) * (1 + 1e-12)
    assert np.abs(np.diff(slopes)).max() < 0.01 * 1.5 / (2 * phi)
    print(f"{name}: face weights sum to 1 within {worst_sum:.1e}, slopes cancel within {worst_slope:.1e}")
    assert worst_sum < 1e-15 and worst_slope < 1e-13


# ---- passivity and the friction cone

@pytest.mark.parametrize("name", TRACKED)
@pytest.mark.parametrize("dt", [0.0, DT])
def test_band_dampers_and_friction_are_passive(name, dt):
    con = contact(name)
    worst = max(dissipated(con.band_fext, X, dt) for X in states(con, seed=3))
    print(f"{name} dt {dt:g}: band's velocity-dependent power at most {worst:.1e} of its terms' magnitude")
    assert worst < 1e-12


def test_the_face_friction_sign_is_caught_by_passivity():
    con = contact("track_min")
    bad = Contact(con.model, module=planted("double fric[3] = {k * slip[0], k * slip[1], 0.0};",
                                            "double fric[3] = {-k * slip[0], -k * slip[1], 0.0};"))
    assert max(dissipated(bad.band_fext, X, 0.0) for X in states(con, 50, seed=3)) > 1e-3


def test_friction_cone_pins_and_faces():
    """|f_t| ≤ μ·f_n, f_t in the tangent plane, for the idler's pins and the faces, at dt = 0 and DT."""
    con = contact("m113")
    band = con.bands[0]
    ffi, lib = con.ffi, con.lib
    rng = np.random.default_rng(4)
    X0 = design_rows(con.model)
    bc = con._bands_c + 0
    F, x, tau = ffi.new("double[6]"), ffi.new("double[6]"), ffi.new("double *")
    worst, loaded = 0.0, 0
    for _ in range(300):
        X = perturbed(X0, rng)
        for dt in (0.0, DT):
            for i, r in enumerate(band.rollers):
                if r.kind == 1:
                    continue
                Xr = X[r.body]
                for s in range(band.first_shoe, band.first_shoe + band.nshoe):
                    Xs = X[s].copy()
                    if r.kind == 2:
                        lib.md_face_pair(bc, bc.rollers + i, ffi.from_buffer("double[]", Xs),
                                         ffi.from_buffer("double[]", Xr), dt, F, x, tau)
                        zs = Xs[:9].reshape(3, 3)[:, 2]
                        fn, ff = -np.array(ffi.unpack(F, 3)) @ zs, np.array(ffi.unpack(F, 6)[3:])
                        assert abs(ff @ zs) <= 1e-12 * max(np.linalg.norm(ff), 1e-300)
                    else:  # a pin in the band's plane, so the guide adds nothing radial
                        Rr = Xr[:9].reshape(3, 3)
                        d = Rr.T @ (Xs[9:12] - Xr[9:12])
                        d[1] = r.y0
                        Xs[9:12] = Xr[9:12] + Rr @ d
                        lib.md_pin_pair(bc, bc.rollers + i, ffi.from_buffer("double[]", Xs),
                                        ffi.from_buffer("double[]", Xr), dt, F, x, tau)
                        f = Rr.T @ np.array(ffi.unpack(F, 3))
                        rho = math.hypot(d[0], d[2])
                        fn, ff = (f[0] * d[0] + f[2] * d[2]) / rho, (-f[0] * d[2] + f[2] * d[0]) / rho
                        if rho >= r.radius or fn <= 1e-9 * np.linalg.norm(f):
                            continue  # no radial force: outside, or its damper clamped (the rest is round-off)
                    if fn > 0:
                        loaded += 1
                        worst = max(worst, np.linalg.norm(ff) / (band.mu * fn))
    print(f"m113: friction at most {worst:.6f} of the cone over {loaded} loaded pin and face pairs")
    assert loaded > 1000 and worst < 1.0


# ---- sweeps: no jump an explicit integrator would chatter on

def sweep_steps(forces: np.ndarray) -> float:
    return float(np.abs(np.diff(forces, axis=0)).max())


def test_pin_sweeps_are_continuous():
    """Radial (through the surface and out of the gate) and circumferential (across teeth and θ = ±π) sweeps of
    a moving pin: the largest force step shrinks in proportion to the sweep step, so there is no jump. Bound: a
    step of Δs changes the force by at most (kn + cn/δr·|u| + the tooth's N·F_skip/R)·Δs."""
    con = contact("m113")
    band, _, r = sprocket(con)
    h = con.law.gate_fade
    u = (0.05, 0.0, -0.05)
    for what, path in (("radial", lambda s: (r.radius + h - s, r.theta0 + 0.1)),
                       ("circumferential", lambda s: (r.radius - 0.002, -math.pi + s))):
        span = 2 * h if what == "radial" else 2 * math.pi
        steps = []
        for n in (2000, 20000):
            s = np.linspace(0, span, n)
            f = np.array([pin_force(con, *path(x), u=u)[:3] for x in s])
            steps.append(sweep_steps(f))
        ds = span / 20000 * (1 if what == "radial" else r.radius)
        bound = (band.kn + band.cn / con.law.ramp_depth * 0.1 + r.teeth * con.law.f_skip / r.radius) * ds
        print(f"pin {what} sweep: largest force step {steps[1]:.3g} N (bound {bound:.3g} N), "
              f"{steps[0] / steps[1]:.1f}x smaller at a 10x finer step")
        assert steps[1] <= bound and steps[0] / steps[1] > 5


def test_face_sweeps_are_continuous():
    """A road wheel rolling along a shoe and across the pin joint to the next, and pressed into the face."""
    con = contact("m113")
    band = con.bands[0]
    i = next(i for i, r in enumerate(band.rollers) if r.kind == 2)
    r = band.rollers[i]
    ffi, lib = con.ffi, con.lib
    bc = con._bands_c + 0
    F, x, tau = ffi.new("double[6]"), ffi.new("double[6]"), ffi.new("double *")
    L = band.link_len

    def on_two_shoes(ax: float, depth: float) -> np.ndarray:
        """Total force on the wheel over two consecutive flat shoes, the wheel at x = ax along the first."""
        total = np.zeros(3)
        for offset in (0.0, L):
            Xs, Xr = np.zeros(18), np.zeros(18)
            Xs[:9] = Xr[:9] = np.eye(3).ravel()
            Xs[9] = offset
            Xr[9:12] = [ax, 0.0, band.face_z + r.radius - depth]
            Xr[15:18] = [0.3, 0.0, -0.02]
            lib.md_face_pair(bc, bc.rollers + i, ffi.from_buffer("double[]", Xs), ffi.from_buffer("double[]", Xr),
                             0.0, F, x, tau)
            total -= np.array(ffi.unpack(F, 3)) + np.array(ffi.unpack(F, 6)[3:])
        return total

    for what, path, span in (("along", lambda s: (0.3 * L + s, 0.004), 1.4 * L),
                             ("into", lambda s: (L, -0.002 + s), 0.01)):
        steps = []
        for n in (1000, 10000):
            f = np.array([on_two_shoes(*path(s)) for s in np.linspace(0, span, n)])
            steps.append(sweep_steps(f))
        ds = span / 10000
        bound = (band.kn * (1 + 0.004 * 1.5 / (2 * band.face_fade)) + band.cn / con.law.ramp_depth * 0.02) * ds
        print(f"face sweep {what}: largest force step {steps[1]:.3g} N (bound {bound:.3g} N), "
              f"{steps[0] / steps[1]:.1f}x smaller at a 10x finer step")
        # continuous: the steps shrink with the sweep's step, or the force is flat to round-off (along the joint
        # the weights sum to one, so the wheel's total load does not change at all)
        assert steps[1] <= bound and (steps[0] / steps[1] > 5 or steps[0] < 1e-12 * band.kn * 0.004)
    # the support is never dropped or doubled across the pin: the normal load is flat along the joint
    loads = np.array([on_two_shoes(L + s, 0.004)[2] for s in np.linspace(-0.3 * L, 0.3 * L, 301)])
    assert np.ptp(loads) < 1e-9 * abs(loads).max()


# ---- the design pose

@pytest.mark.parametrize("name", TRACKED)
def test_design_pose_has_no_pin_inside_an_end_roller(name):
    con = contact(name)
    X = design_rows(con.model)
    worst = -math.inf
    for band in con.bands:
        for r in band.rollers:
            if r.kind == 2:
                continue
            Rr, pr = X[r.body, :9].reshape(3, 3), X[r.body, 9:12]
            d = (X[band.first_shoe:band.first_shoe + band.nshoe, 9:12] - pr) @ Rr
            worst = max(worst, float((r.radius - np.hypot(d[:, 0], d[:, 2])).max()))
    faces = -math.inf  # the road wheels: a face plane with weight over the axle, cut by the wheel
    for b in con.bands:
        S = X[b.first_shoe:b.first_shoe + b.nshoe]
        for r in b.rollers:
            if r.kind == 2:
                a = np.einsum("sji,sj->si", S[:, :9].reshape(-1, 3, 3), X[r.body, 9:12] - S[:, 9:12])
                weighted = (a[:, 0] > -b.face_fade) & (a[:, 0] < b.link_len + b.face_fade)
                faces = max(faces, float((r.radius - (a[weighted, 2] - b.face_z)).max()))
    print(f"{name}: at q0 the pins' worst clearance on the end rollers is {-worst * 1e3:.2f} mm (δ = {worst:.2e}); "
          f"the deepest face plane under a road wheel (a shoe turning onto a wrap) cuts {faces * 1e3:.2f} mm")
    assert worst <= 0


# ---- refusals

def test_refuses_a_roller_without_fext(tmp_path):
    from mechdyn.core.errors import MechError
    from mechdyn.core.parse import parse
    text = open("models/track_min.mech").read()
    i = text.index("body wheel\n")
    j = text.index("  fext 1\n", i)
    bad = text[:j] + text[j + len("  fext 1\n"):]
    model = parse(bad, "track_min_nofext.mech")
    with pytest.raises(MechError, match=r"track_min_nofext.mech:\d+: body 'wheel' is a roller .* lacks 'fext 1'"):
        Contact(model)


def test_a_model_without_band_or_ground_gives_zero():
    from mechdyn.core.parse import load_model
    con = Contact(load_model("elbow"))
    X = perturbed(design_rows(con.model), np.random.default_rng(5))
    assert not con.fext(X, DT).any() and con.band_energy(X) == 0 and con.ground_energy(X) == 0


def test_bad_arguments_are_refused():
    con = contact("track_min")
    X = design_rows(con.model)
    with pytest.raises(ValueError, match="X has shape"):
        con.fext(X[:-1])
    with pytest.raises(ValueError, match="dt is"):
        con.fext(X, -1.0)
    with pytest.raises(ValueError, match="dt is"):
        con.fext(X, float("nan"))
    with pytest.raises(ValueError, match="anchors has shape"):
        con.fext(X, DT, anchors=np.zeros((3, 4)))
    with pytest.raises(ValueError, match="anchored friction needs dt > 0"):
        con.fext(X, 0.0, anchors=np.zeros((con.ncorner, 4)))


def pair_power(con: Contact, i: int, Xs: np.ndarray, Xr: np.ndarray, dt: float) -> tuple[float, float]:
    """The power of one pair's velocity-dependent forces (its forces less those at zero velocities), each force
    on the shoe at its point and its negation on the roller there; and the scale of its terms."""
    ffi, lib = con.ffi, con.lib
    bc = con._bands_c + 0
    kind = con.bands[0].rollers[i].kind
    n = 6 if kind == 2 else 3
    call = lib.md_face_pair if kind == 2 else lib.md_pin_pair

    def forces(Xs, Xr):
        F, x, tau = ffi.new("double[6]"), ffi.new("double[6]"), ffi.new("double *")
        call(bc, bc.rollers + i, ffi.from_buffer("double[]", Xs), ffi.from_buffer("double[]", Xr), dt, F, x, tau)
        return np.array(ffi.unpack(F, n)).reshape(-1, 3), np.array(ffi.unpack(x, n)).reshape(-1, 3)

    F, x = forces(Xs, Xr)
    F0, _ = forces(still(Xs[None])[0], still(Xr[None])[0])
    P = S = 0.0
    for f, p in zip(F - F0, x):
        us = Xs[15:18] + np.cross(Xs[12:15], p - Xs[9:12])
        ur = Xr[15:18] + np.cross(Xr[12:15], p - Xr[9:12])
        P += f @ (us - ur)
        S += np.abs(f) @ (np.abs(us) + np.abs(ur))
    return float(P), float(S)


@pytest.mark.parametrize("dt", [0.0, DT])
def test_each_pair_is_passive(dt):
    """Pair by pair (a sum over pairs could hide one that injects): the sprocket's, the idler's and a road
    wheel's pairs at random states near contact dissipate."""
    con = contact("m113")
    band = con.bands[0]
    rng = np.random.default_rng(7)
    X0 = design_rows(con.model)
    worst, active = -math.inf, 0
    for _ in range(50):
        X = perturbed(X0, rng)
        for i, r in enumerate(band.rollers):
            for s in range(band.first_shoe, band.first_shoe + band.nshoe):
                P, S = pair_power(con, i, X[s], X[r.body], dt)
                if S > 0:
                    active += 1
                    worst = max(worst, P / S)
    print(f"m113 dt {dt:g}: the worst pair's velocity-dependent power is {worst:.1e} of its terms over {active} "
          f"active pairs")
    assert active > 500 and worst <= 1e-14


def test_pair_rejection_is_bitwise_every_pair():
    """The pre-test that turns away pairs out of reach changes no bit of the wrenches, torques or potential."""
    con = contact("m113")
    every = Contact(con.model, module=planted("if (!band_may_touch(band, r, Xs, Xr)) continue;", ""))
    for X in states(con, 200, seed=8) + states(con, 50, seed=9, pos=0.02):
        for dt in (0.0, DT):
            assert con.band_fext(X, dt).tobytes() == every.band_fext(X, dt).tobytes()
            assert con.axle_torque(X, dt).tobytes() == every.axle_torque(X, dt).tobytes()
        assert con.band_energy(X) == every.band_energy(X)
