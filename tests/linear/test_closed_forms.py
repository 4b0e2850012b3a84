"""Modes against closed forms computed here from each model's own numbers (issue 22's checks), each shown once to
fail on a planted bug: the mass matrix taken as the identity, or the stiffness with the wrong sign."""
from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest
import scipy.optimize

import mechdyn
from mechdyn.core.model import Model
from mechdyn.core.parse import parse
from mechdyn.linear import Linear, equilibrium, linearize, modes
from tests.linear.models import TIRE_K, design_origin, quartercar_with_tire
from tests.linear.planted import rebuilt

ROOT = Path(__file__).resolve().parents[2]
modes_module = importlib.import_module("mechdyn.linear.modes")  # the package's `modes` is the function


def at_equilibrium(dyn: mechdyn.Dynamics, held=()) -> Linear:
    q = equilibrium(dyn, dyn.model.q0(), held=held)
    return linearize(dyn, q, np.zeros(dyn.nv), held=held)


def rel(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.max(np.abs(np.asarray(got) - want) / np.abs(want)))


def wrong_mass(lin: Linear) -> Linear:
    return rebuilt(lin, M=np.eye(len(lin.M)))


def wrong_stiffness(lin: Linear) -> Linear:
    return rebuilt(lin, K=-lin.K)


# -- a simple pendulum: ω² = m g l / I --------------------------------------------------------------
@pytest.fixture(scope="module")
def pendulums() -> Linear:
    return at_equilibrium(mechdyn.load("pendulums"))


def pendulum_error(lin: Linear) -> float:
    """Each of pendulums' bodies is a compound pendulum about a fixed axis e: ω² = m |g⊥| l⊥ / (I_e + m l⊥²), l⊥
    the CG's distance from the axis, g⊥ gravity's part across it; an axis along gravity gives a rigid-body mode."""
    model, md = lin.model, modes(lin)
    want, rigid = [], 0
    for b in model.bodies:
        e = b.axis
        g_perp = np.linalg.norm(model.gravity - (model.gravity @ e) * e)
        l_perp = np.linalg.norm(b.cg - (b.cg @ e) * e)
        if g_perp == 0:
            rigid += 1
            continue
        want.append(np.sqrt(b.mass * g_perp * l_perp / (e @ b.inertia @ e + b.mass * l_perp**2)) / (2 * np.pi))
    if md.rigid.sum() != rigid or len(md) != len(model.bodies) or md.unstable.any():
        return np.inf
    return max(rel(md.frequency[~md.rigid], np.sort(want)), float(np.max(np.abs(md.damping[~md.rigid]))))


def test_pendulum_frequencies_are_the_closed_form(pendulums):
    assert np.max(np.abs(pendulums.qdd)) <= 1e-10
    err = pendulum_error(pendulums)
    print(f"pendulums: worst relative error of f and |zeta| {err:.2e}")
    assert err <= 1e-9


def test_pendulum_check_catches_an_identity_mass(pendulums):
    assert pendulum_error(wrong_mass(pendulums)) > 0.1


# -- bodies on linear springs: ω² = k / m, ζ = c / (2 √(k m)), the static sag m g / k ----------------
@pytest.fixture(scope="module")
def sliders() -> Linear:
    return at_equilibrium(mechdyn.load(ROOT / "tests/data/spring_slider.mech"))


def slider_error(lin: Linear) -> float:
    model, md = lin.model, modes(lin)
    want_f, want_z, want_q = [], [], []
    for t in model.tsdas:
        a, p = model.pois[t.poi_a], model.pois[t.poi_b]
        b = model.bodies[p.body]
        e = b.axis
        d = design_origin(model, p.body) + p.pos - a.pos  # the spring, lying along the slide: L = |e·d + s|
        s_rest = np.sign(e @ d) * t.l0 - e @ d  # where the spring is at its rest length
        want_q.append(s_rest + b.mass * (model.gravity @ e) / t.k)  # k (L - l0) balances the weight along e
        want_f.append(np.sqrt(t.k / b.mass) / (2 * np.pi))
        want_z.append(t.c / (2 * np.sqrt(t.k * b.mass)))
    order = np.argsort(want_f)
    q_err = np.max(np.abs(lin.q - want_q))
    z_err = np.max(np.abs(md.damping - np.array(want_z)[order]))
    return max(rel(md.frequency, np.array(want_f)[order]), z_err, q_err)


def test_spring_frequencies_damping_and_sag_are_the_closed_form(sliders):
    err = slider_error(sliders)
    print(f"spring_slider: worst error (relative f, absolute zeta and q) {err:.2e}")
    assert err <= 1e-9


def test_spring_check_catches_an_identity_mass(sliders):
    assert slider_error(wrong_mass(sliders)) > 0.1



def overdamped_sliders(c: float) -> Linear:
    """spring_slider with its slider's damper at c: ζ = c / (2 √(k m)) > 1, two real eigenvalues of one coordinate."""
    text = (ROOT / "tests/data/spring_slider.mech").read_text()
    assert "  c 6\n" in text
    return at_equilibrium(mechdyn.load(parse(text.replace("  c 6\n", f"  c {c:g}\n"), name="spring_slider_od")))


@pytest.mark.parametrize("c, tol", [(400.0, 1e-9), (3e5, 1e-7)])
def test_overdamped_slider_is_one_mode_with_the_closed_form_zeta_and_frequency(c, tol):
    """c = 400: ζ 6.3, eigenvalues -1.0 and -159 paired into one mode, ωn = √(λ1 λ2) = √(k/m), ζ = -(λ1+λ2)/(2 ωn).
    c = 3e5: the slow eigenvalue -k/c is below the rigid tolerance of the fast one (-c/m) with K nonsingular, and is
    still the slider's mode, not dropped; its relative accuracy is eps |λ2 / λ1| ~ 1e-8, hence tol."""
    lin = overdamped_sliders(c)
    md = modes(lin)
    assert len(md) == lin.M.shape[0] == 2 and not md.rigid.any() and not md.unstable.any()
    err = slider_error(lin)
    print(f"spring_slider, c {c:g}: zeta {md.damping}, worst error (relative f, absolute zeta and q) {err:.2e}")
    assert err <= tol


def test_overdamped_check_catches_an_identity_mass():
    assert slider_error(wrong_mass(overdamped_sliders(400.0))) > 0.1


def test_modes_refuse_real_eigenvalues_left_unpaired(monkeypatch):
    """Planted: the real eigenvalues not paired (each its own mode, as before): the count check refuses."""
    lin = overdamped_sliders(400.0)
    monkeypatch.setattr(modes_module, "_pair_reals", lambda idx, U, M: [])
    with pytest.raises(ValueError, match="one mode per free coordinate"):
        modes(lin)


def test_a_damped_rigid_mode_is_one_mode_with_its_decay():
    """spring_slider with the slider's spring at k = 0: the slider is free but damped, eigenvalues 0 and -c/m, one
    rigid-body mode carrying both; the bob's mode stays as it was (count = the two free coordinates)."""
    text = (ROOT / "tests/data/spring_slider.mech").read_text()
    assert "  k 400\n" in text
    lin = at_equilibrium(mechdyn.load(parse(text.replace("  k 400\n", "  k 0\n"), name="spring_slider_free")))
    md = modes(lin)
    slider = lin.model.bodies[0]
    c = lin.model.tsdas[0].c
    assert len(md) == 2 and md.rigid.tolist() == [True, False] and not md.unstable.any()
    assert abs(md.pairs[0, 1].real + c / slider.mass) <= 1e-12 * c / slider.mass and md.pairs[0, 0] == 0

# -- springpend: pend2 on its rsda, (k + m g l cos q*) / I; pend1 on its tsda, V''(q*) / I ------------
@pytest.fixture(scope="module")
def springpend() -> Linear:
    return at_equilibrium(mechdyn.load("springpend"))


def springpend_error(lin: Linear) -> float:
    """pend2 (revolute x, CG (0, 0, -l)): -k (q - q0) - m g l sin q = 0 at q*, ω² = (k + m g l cos q*)/I_pivot,
    ζ = c / (2 √(K I)). pend1 (revolute y) with the tsda from the hook h to the eye (0, 0, -a): the eye at
    e(q) = (-a sin q, 0, -a cos q), L = |h - e|, V = -m g l cos q + k (L - l0)²/2,
    V' = m g l sin q + k (L - l0) L', V'' = m g l cos q + k L'² + k (L - l0) L'', L' = -(d·e')/L,
    L'' = (|e'|² - d·e'' - L'²)/L with d = h - e; ω² = V''/I_pivot, ζ = c L'² / (2 √(V'' I))."""
    model, md = lin.model, modes(lin)
    g = -model.gravity[2]
    b2, rs = model.bodies[1], model.rsdas[0]
    l2 = -b2.cg[2]
    I2 = b2.inertia[0, 0] + b2.mass * l2**2
    q2 = scipy.optimize.brentq(lambda q: -rs.k * (q - rs.q0) - b2.mass * g * l2 * np.sin(q), 0.0, rs.q0, xtol=1e-15)
    K2 = rs.k + b2.mass * g * l2 * np.cos(q2)
    b1, ts = model.bodies[0], model.tsdas[0]
    l1, I1 = -b1.cg[2], b1.inertia[1, 1] + b1.mass * b1.cg[2] ** 2
    h = model.pois[ts.poi_a].pos - b1.xtree
    a = -model.pois[ts.poi_b].pos[2]

    def geometry(q: float) -> tuple[float, float, float]:
        e = np.array([-a * np.sin(q), 0.0, -a * np.cos(q)])
        e1 = np.array([-a * np.cos(q), 0.0, a * np.sin(q)])
        d = h - e
        L = np.linalg.norm(d)
        L1 = -(d @ e1) / L
        return L, L1, (e1 @ e1 - d @ (-e) - L1**2) / L

    def dV(q: float) -> float:
        L, L1, _ = geometry(q)
        return b1.mass * g * l1 * np.sin(q) + ts.k * (L - ts.l0) * L1

    q1 = scipy.optimize.brentq(dV, -1.2, 0.0, xtol=1e-15)
    L, L1, L2 = geometry(q1)
    K1 = b1.mass * g * l1 * np.cos(q1) + ts.k * L1**2 + ts.k * (L - ts.l0) * L2
    want = sorted([(np.sqrt(K1 / I1), ts.c * L1**2 / (2 * np.sqrt(K1 * I1))),
                   (np.sqrt(K2 / I2), rs.c / (2 * np.sqrt(K2 * I2)))])
    if len(md) != 2 or md.rigid.any() or md.unstable.any():  # stable closed forms
        return np.inf
    return max(rel(md.frequency, [w / (2 * np.pi) for w, _ in want]),
               float(np.max(np.abs(md.damping - [z for _, z in want]))), float(np.max(np.abs(lin.q - [q1, q2]))))


def test_springpend_frequencies_are_the_closed_form(springpend):
    err = springpend_error(springpend)
    print(f"springpend: worst error (relative f, absolute zeta and q*) {err:.2e}")
    assert err <= 1e-9


def test_springpend_check_catches_a_wrong_stiffness_sign(springpend):
    assert springpend_error(wrong_stiffness(springpend)) > 0.1


# -- the IFToMM four-bar with a diagonal spring (a loop model): the energy route of one coordinate ---
@pytest.fixture(scope="module")
def fourbar_spring() -> Linear:
    return at_equilibrium(mechdyn.load(ROOT / "tests/data/fourbar_spring.mech"))


def fourbar_error(lin: Linear) -> float:
    """The parallelogram's one coordinate is the crank's q: the coupler translates (its q = -q[crank]) and the
    rocker turns with the crank. With R the rotation about y by q, the CGs sit at R c1 (crank), R b + c2
    (coupler) and R b + L + R c3 (rocker), the spring runs from A = 0 to C = R b + L. Then
    J = I1 + m1 |c1|² + m2 |b|² + I3 + m3 |c3 + b + L - D|² (the rocker about its ground pivot D),
    V(q) = -Σ m g·r_cg + k (|C| - l0)²/2, q* from V'(q*) = 0, ω² = V''(q*)/J, ζ = c |C|'² / (2 √(V'' J));
    derivatives of V and |C| by central differences of these closed-form positions (no product code)."""
    model, md = lin.model, modes(lin)
    crank, coupler, rocker = model.bodies
    b, Lv, D = coupler.xtree, rocker.xtree, model.loops[0].anchor_pred
    ts = model.tsdas[0]

    def R(q: float) -> np.ndarray:
        c, s = np.cos(q), np.sin(q)
        return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])

    def spring(q: float) -> float:
        return float(np.linalg.norm(R(q) @ b + Lv))

    def V(q: float) -> float:
        cgs = [R(q) @ crank.cg, R(q) @ b + coupler.cg, R(q) @ b + Lv + R(q) @ rocker.cg]
        grav = -sum(body.mass * model.gravity @ r for body, r in zip(model.bodies, cgs))
        return grav + 0.5 * ts.k * (spring(q) - ts.l0) ** 2

    def d1(f, q: float, h: float = 1e-4) -> float:
        return (f(q - 2 * h) - 8 * f(q - h) + 8 * f(q + h) - f(q + 2 * h)) / (12 * h)

    def d2(f, q: float, h: float = 1e-3) -> float:
        return (-f(q - 2 * h) + 16 * f(q - h) - 30 * f(q) + 16 * f(q + h) - f(q + 2 * h)) / (12 * h * h)

    qs = scipy.optimize.brentq(lambda q: d1(V, q), -0.5, 0.5, xtol=1e-14)
    J = (crank.inertia[1, 1] + crank.mass * crank.cg @ crank.cg + coupler.mass * b @ b + rocker.inertia[1, 1]
         + rocker.mass * np.sum((rocker.cg + b + Lv - D) ** 2))
    K, C = d2(V, qs), ts.c * d1(spring, qs) ** 2
    if len(md) != 1 or md.rigid.any() or md.unstable.any():  # stable closed forms
        return np.inf
    f_want, z_want = np.sqrt(K / J) / (2 * np.pi), C / (2 * np.sqrt(K * J))
    q_want = np.array([qs, -qs, qs])
    return max(rel(md.frequency, [f_want]), abs(md.damping[0] - z_want), float(np.max(np.abs(lin.q - q_want))))


def test_fourbar_spring_frequency_is_the_energy_route(fourbar_spring):
    assert fourbar_spring.M.shape == (1, 1)  # 3 joints, 2 closure rows
    err = fourbar_error(fourbar_spring)
    print(f"fourbar_spring: worst error (relative f, absolute zeta and q*) {err:.2e}")
    assert err <= 1e-8  # the central differences of the closed-form V


def test_fourbar_check_catches_an_identity_mass(fourbar_spring):
    assert fourbar_error(wrong_mass(fourbar_spring)) > 0.1


# -- quartercar: the 2-DoF quarter-car from the spring rate at the wheel -----------------------------
@pytest.fixture(scope="module")
def quartercar_tire() -> Linear:
    """The quarter car on its tire with its upper arm turning about x: the planar linkage `quarter_car` describes.
    The model's real arm axis is 14.9° off x, which moves the wheel fore and aft as it travels (1.4 cm over
    ±0.1 m; crosscheck suspension) and the sprung mode's damping ratio 18 % from the closed form's."""
    from crosscheck.suspension import old_axes

    return at_equilibrium(mechdyn.load(old_axes(quartercar_with_tire())))


def quarter_car(model: Model) -> tuple[np.ndarray, np.ndarray]:
    """The 2-DoF quarter-car's frequencies (Hz) and damping ratios, by hand from the design geometry.

    In the vehicle's yz-plane the lower arm turns by β about its pivot P_l, so its ball B_l moves at
    v_l = ⊥(B_l - P_l) β̇ (⊥(y, z) = (-z, y)); the upper arm's ball at v_u = ⊥(B_u - P_u) α̇. The upright B_l B_u
    is rigid: (v_u - v_l)·d = 0, d = B_u - B_l, gives α̇/β̇, and its rotation Ω from v_u - v_l = Ω ⊥d. The wheel
    centre W moves at v_l + Ω ⊥(W - B_l); its vertical part is the wheel travel z_w' per β. The spring (and
    shock) shortens by L' = u·v_a per β (u its unit vector, v_a its lower arm point's velocity), so the motion
    ratio is L'/z_w' and the wheel rate k_w = k (L'/z_w')², c_w = c (L_d'/z_w')². Masses: the sprung body, and
    the wheel end with the post as the unsprung mass, the arms split evenly between them. Then
    M = diag(m_s, m_u), K = [[k_w, -k_w], [-k_w, k_w + k_t]], C = [[c_w, -c_w], [-c_w, c_w]].

    Neglected: the spring's preload (its geometric stiffness, ~7 % of k_w at 11 kN), the 5 cm the sprung mass
    settles above its design height, the arms' own inertia. It is checked on the planar linkage (the upper arm
    on x, see quartercar_tire). These put the
    closed form 5 % above the full model's sprung mode and 2 % above its wheel hop; its damping ratios 12 % (sprung)
    and 4 % below, ζ = c_w / (2 √(k_w m)) compounding the motion ratios' and the masses' errors."""
    idx = model.body_index
    loops = {lp.name: lp for lp in model.loops}
    pois = {p.name: design_origin(model, p.body) + p.pos for p in model.pois}

    def perp(r: np.ndarray) -> np.ndarray:  # (y, z) turned +90° about x, as a 3-vector with x = 0
        return np.array([0.0, -r[2], r[1]])

    P_l, P_u = design_origin(model, idx("lca")), design_origin(model, idx("uca"))
    B_l = P_l + loops["lca_ball"].anchor_pred
    B_u = P_u + loops["uca_ball"].anchor_pred
    d = B_u - B_l
    v_l = perp(B_l - P_l)
    v_u = perp(B_u - P_u) * (v_l @ d) / (perp(B_u - P_u) @ d)
    omega = (v_u - v_l) @ perp(d) / (d[1] ** 2 + d[2] ** 2)
    z_w = (v_l + omega * perp(design_origin(model, idx("wheel")) - B_l))[2]

    def ratio(top: str, arm: str) -> float:
        u = pois[top] - pois[arm]
        return float(u @ perp(pois[arm] - P_l) / np.linalg.norm(u) / z_w)

    tsda = {t.name: t for t in model.tsdas}
    k_w = tsda["spring"].k * ratio("spring_top", "spring_arm") ** 2
    c_w = tsda["shock"].c * ratio("shock_top", "shock_arm") ** 2
    arms = model.bodies[idx("uca")].mass + model.bodies[idx("lca")].mass
    m_s = model.bodies[idx("sprung")].mass + arms / 2
    m_u = model.bodies[idx("wheel")].mass + model.bodies[idx("post")].mass + arms / 2
    M = np.diag([m_s, m_u])
    K = np.array([[k_w, -k_w], [-k_w, k_w + TIRE_K]])
    C = np.array([[c_w, -c_w], [-c_w, c_w]])
    A = np.block([[np.zeros((2, 2)), np.eye(2)], [-np.linalg.solve(M, K), -np.linalg.solve(M, C)]])
    lam = np.linalg.eigvals(A)
    lam = lam[lam.imag > 0]
    lam = lam[np.argsort(np.abs(lam))]
    return np.abs(lam) / (2 * np.pi), -lam.real / np.abs(lam)


QC_TOL_F, QC_TOL_ZETA = 0.08, 0.15  # the neglected terms of quarter_car's docstring


def quartercar_error(lin: Linear) -> tuple[float, float]:
    md = modes(lin)
    if len(md) != 2 or md.rigid.any() or md.unstable.any():  # stable closed forms
        return np.inf, np.inf
    f, z = quarter_car(lin.model)
    return rel(md.frequency, f), rel(md.damping, z)


def test_quartercar_two_frequencies_are_the_quarter_car_closed_form(quartercar_tire):
    md = modes(quartercar_tire)
    f, z = quarter_car(quartercar_tire.model)
    ef, ez = quartercar_error(quartercar_tire)
    print(f"quartercar + tire spring: model f {md.frequency} Hz zeta {md.damping}; 2-DoF closed form f {f} Hz "
          f"zeta {z}; relative errors f {ef:.3f} zeta {ez:.3f}")
    assert ef <= QC_TOL_F and ez <= QC_TOL_ZETA


def test_quartercar_check_catches_an_identity_mass(quartercar_tire):
    assert quartercar_error(wrong_mass(quartercar_tire))[0] > QC_TOL_F
