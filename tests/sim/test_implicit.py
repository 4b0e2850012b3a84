"""The implicit generalized-α stepper (mechdyn/sim/galpha.c, docs/implicit.md): its group operations against
independent routes, second order on a tree, a spinning floating body, a loop model and the heavy top, the
amplification matrix against generalized-α's defining recurrence, stiffness, a constant-moment spin, Newton's
quadratic convergence, the real-time and adaptive modes; each check shown once to catch a planted bug."""
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy.linalg import expm

import mechdyn
from mechdyn.core.integrate import difference
from mechdyn.core.spatial import crm, quat_to_R
from mechdyn.sim import implicit as imp
from mechdyn.sim.run import SimulationDiverged, initial_state, simulate

DATA = Path(__file__).resolve().parents[1] / "data"
HEAVYTOP_W0 = np.array([0.0, 150.0, -4.61538])  # Brüls, Cardona and Arnold (2012), body axes, rad/s


def _c(mod, x: np.ndarray):
    return mod.ffi.from_buffer("double[]", x)


def group_ops(mod=None):
    """galpha.c's SE(3) exponential on a floating body's 7 coordinates and its tangent operator, as numpy."""
    mod = mod or imp.module()

    def exp(q7, xi):
        out = np.empty(7)
        mod.lib.md_ga_exp(_c(mod, np.array(q7, float)), _c(mod, np.array(xi, float)), _c(mod, out))
        return out

    def dexp(xi):
        T = np.empty(36)
        mod.lib.md_ga_dexp(_c(mod, np.array(xi, float)), _c(mod, T))
        return T.reshape(6, 6)
    return exp, dexp


def lu_solve(A: np.ndarray, b: np.ndarray, mod=None) -> np.ndarray:
    """galpha.c's factor and solve (what Newton uses) on A x = b."""
    mod = mod or imp.module()
    A, x = np.array(A, dtype=float), np.array(b, dtype=float)
    assert mod.lib.md_ga_lu_solve(len(x), _c(mod, A), mod.ffi.new("int[]", len(x)), _c(mod, x)) == 0
    return x


def pivoting_matrices(n: int = 30, count: int = 20) -> list[tuple[np.ndarray, np.ndarray]]:
    """Random systems whose factor swaps rows, as the contact loop's matrices do (a diagonally dominant −I + ε
    matrix, as the trees give, never swaps and could not tell a right solve from a wrong one)."""
    rng = np.random.default_rng(7)
    return [(rng.normal(size=(n, n)), rng.normal(size=n)) for _ in range(count)]


def test_linear_solve_matches_scipy():
    from scipy.linalg import solve
    for A, b in pivoting_matrices():
        x = lu_solve(A, b)
        assert np.abs(x - solve(A, b)).max() <= 1e-10 * np.abs(x).max()


def test_planted_interleaved_row_swaps_are_caught():
    """The solve once applied each row swap in turn between the eliminations, on a factor whose rows of L had
    been swapped with the rest: right without pivoting, wrong with it (Newton then stalled on the contact)."""
    text = (Path(imp.__file__).parent / "galpha.c").read_text()
    good = """    for (int k = 0; k < n; ++k)
        if (piv[k] != k) { double t = x[k]; x[k] = x[piv[k]]; x[piv[k]] = t; }
    for (int i = 1; i < n; ++i) x[i] -= ga_dot(A + i * n, x, i);  /* by rows: the factor is row-major */"""
    planted = text.replace(good, """    for (int k = 0; k < n; ++k) {
        if (piv[k] != k) { double t = x[k]; x[k] = x[piv[k]]; x[piv[k]] = t; }
        for (int i = k + 1; i < n; ++i) x[i] -= A[i * n + k] * x[k];
    }""")
    assert planted != text
    mod = imp.compile(planted)
    worst = max(np.abs(lu_solve(A, b, mod) - np.linalg.solve(A, b)).max() for A, b in pivoting_matrices())
    print(f"planted interleaved swaps: solve error {worst:.3g}")
    assert worst > 1e-3


def se3(xi: np.ndarray) -> np.ndarray:
    """The 4×4 SE(3) exponential of xi = [φ; p] by scipy's matrix exponential (no closed form shared)."""
    X = np.zeros((4, 4))
    X[:3, :3] = crm(np.r_[xi[:3], 0, 0, 0])[:3, :3]
    X[:3, 3] = xi[3:]
    return expm(X)


def dexp_series(xi: np.ndarray) -> np.ndarray:
    """Σ (−ad_xi)^k / (k+1)!: the tangent operator as its defining series (ad = crm in mechdyn's order)."""
    A, T, P = -crm(xi), np.eye(6), np.eye(6)
    for k in range(1, 60):
        P = P @ A / (k + 1)
        T = T + P
    return T


@pytest.mark.parametrize("scale", [1e-7, 4e-3, 0.05, 0.12, 0.4, 2.0])
def test_group_exponential_and_tangent_operator(scale):
    """md_ga_exp is scipy's expm of the twist, and md_ga_dexp the series Σ (−ad)^k/(k+1)!, on both sides of
    the small-angle switch (0.1 rad) and past a radian; the series itself against central differences of expm."""
    exp, dexp = group_ops()
    rng = np.random.default_rng(int(scale * 1e9) % 2**32)
    for _ in range(5):
        xi = rng.normal(size=6) * scale
        Q0 = rng.normal(size=4)
        Q0 /= np.linalg.norm(Q0)
        q7 = np.r_[Q0, rng.normal(size=3)]
        out = exp(q7, xi)
        G0 = np.eye(4)
        G0[:3, :3], G0[:3, 3] = quat_to_R(Q0), q7[4:]
        G = G0 @ se3(xi)
        tol = 1e-14 * (1 + np.abs(xi).max()) ** 2  # expm's and the series' own rounding grow with |xi|
        assert np.abs(quat_to_R(out[:4]) - G[:3, :3]).max() < tol
        assert np.abs(out[4:] - G[:3, 3]).max() < tol * (1 + np.abs(G[:3, 3]).max())
        assert np.abs(dexp(xi) - dexp_series(xi)).max() < tol
    xi, eps = rng.normal(size=6) * scale, 1e-6
    E = se3(xi)
    fd = np.empty((6, 6))
    for k in range(6):
        d = np.zeros(6)
        d[k] = eps
        # exp(xi)⁻¹ exp(xi ± eps e_k) is a small motion: its twist to first order is read off its 4×4 matrix
        lo, hi = np.linalg.solve(E, se3(xi - d)), np.linalg.solve(E, se3(xi + d))
        fd[:, k] = np.r_[hi[2, 1] - lo[2, 1], hi[0, 2] - lo[0, 2], hi[1, 0] - lo[1, 0], hi[:3, 3] - lo[:3, 3]] / (2 * eps)
    assert np.abs(dexp_series(xi) - fd).max() < 1e-8


def test_planted_tangent_coupling_is_caught():
    """The translation–rotation coupling block with one term's sign flipped (a real slip of the closed form)
    fails the series comparison above."""
    text = (Path(imp.__file__).parent / "galpha.c").read_text()
    planted = text.replace("+ 0.5 * (c + 3.0 * e)", "+ 0.5 * (c - 3.0 * e)")
    assert planted != text
    _, dexp = group_ops(imp.compile(planted))
    xi = np.array([0.3, -0.2, 0.25, 0.5, 1.0, -0.7])
    assert np.abs(dexp(xi) - dexp_series(xi)).max() > 1e-4


# -- second order ----------------------------------------------------------------------------------------------

def heavytop():
    """The heavy top and its initial state."""
    d = mechdyn.load(DATA / "heavytop.mech")
    return d, d.model.q0(), np.r_[HEAVYTOP_W0, 0.0, 0.0, 0.0]


def spinning_satellite():
    """satellite tumbling at 2 to 3 rad/s, its wings and boom swinging."""
    d = mechdyn.load("satellite")
    q, qd = initial_state(d, seed=3)
    qd[:3] = [2.0, -1.5, 3.0]
    return d, q, qd


def end_errors(d, q, qd, T, steps, opts, scheme="galpha"):
    """The end state's error in q (on the tangent) and qd at each step of `steps`, against a run at steps[-1]/16."""
    ref = simulate(d, q, qd, T, steps[-1] / 16, scheme, implicit=opts)
    out = []
    for h in steps:
        tr = simulate(d, q, qd, T, h, scheme, implicit=opts)
        out.append((np.abs(difference(d.model, tr.q[-1], ref.q[-1])).max(), np.abs(tr.qd[-1] - ref.qd[-1]).max()))
    return np.array(out)


def ratios(e: np.ndarray) -> np.ndarray:
    """The error ratios per halving, q's and qd's rows."""
    return (e[:-1] / e[1:]).T


CASES = {  # model, the run's length and its largest step: each in the asymptotic range
    "elbow": (lambda: (mechdyn.load("elbow"), *initial_state(mechdyn.load("elbow"), seed=1)), 0.5, 4e-3),
    "satellite": (spinning_satellite, 0.5, 4e-3),
    "heavytop": (heavytop, 0.3, 1e-3),
    "hmmwv": (lambda: (mechdyn.load("hmmwv"), *initial_state(mechdyn.load("hmmwv"), seed=1)), 0.1, 4e-3),
}


@pytest.mark.parametrize("name", CASES)
def test_second_order(name):
    """The end-state error falls by 4.0 ± 0.4 per halving of the step, in q and in qd."""
    make, T, h = CASES[name]
    d, q, qd = make()
    e = end_errors(d, q, qd, T, [h, h / 2, h / 4], imp.Implicit(tol=1e-13))
    r = ratios(e)
    print(f"{name}: errors {e.tolist()}, ratios q {r[0]}, qd {r[1]}")
    assert np.all(np.abs(r - 4.0) < 0.4), r


def test_planted_gamma_is_first_order():
    """γ mis-set by 0.1 (off ½ + α_f − α_m) drops the scheme to first order: the ratio is 2."""
    d, q, qd = CASES["elbow"][0]()
    s = imp.Scheme.galpha(0.8)
    planted = imp.Implicit(tol=1e-13, scheme=replace(s, gamma=s.gamma + 0.1))
    r = ratios(end_errors(d, q, qd, 0.5, [4e-3, 2e-3, 1e-3], planted))
    print(f"planted gamma: ratios {r}")
    assert np.all(np.abs(r[:, -1] - 2.0) < 0.3), r


def test_hht_is_generalized_alpha_with_alpha_m_zero(tmp_path):
    """HHT-α is second order too, and the stepper's spectral radius at ω h → ∞ is (1 + α)/(1 − α)."""
    d, q, qd = CASES["elbow"][0]()
    r = ratios(end_errors(d, q, qd, 0.5, [4e-3, 2e-3, 1e-3], imp.Implicit(tol=1e-13, alpha=-0.2), "hht"))
    assert np.all(np.abs(r - 4.0) < 0.4), r
    s = imp.Scheme.hht(-0.2)
    A = scaled(amplification(oscillator(tmp_path, k=4.0), s, 1e4 / 2), 1e4 / 2)
    assert np.abs(A - at_infinity(s)).max() < 1e-6
    assert abs(np.abs(np.linalg.eigvals(at_infinity(s))).max() - 0.8 / 1.2) < 1e-4


# -- the linear oscillator: amplification matrix ---------------------------------------------------------------

def slider(name: str, parent: str = "base", x: float = 0.0) -> str:
    """A 1 kg body on a prismatic joint along x, `x` from its parent's origin."""
    return (f"body {name}\n  parent {parent}\n  joint prismatic x\n  xtree {x} 0 0\n  mass 1\n  cg 0 0 0\n"
            "  inertia 0.01 0.01 0.01 0 0 0\nend\n")


def spring(name: str, body: str, k: float) -> str:
    """An rsda of stiffness k on `body`'s joint."""
    return f"rsda {name}\n  joint {body}\n  k {k}\nend\n"


OSCILLATOR = "gravity 0 0 -9.81\n" + slider("slider") + "{spring}"


def oscillator(tmp_path: Path, k: float = 1.0):
    p = tmp_path / "oscillator.mech"
    p.write_text(OSCILLATOR.format(spring=spring("spring", "slider", k)))
    return mechdyn.load(p)


def amplification(d, scheme: imp.Scheme, h: float) -> np.ndarray:
    """The 3×3 map (x, v, a)_n → (x, v, a)_{n+1} of one step of galpha.c on x'' = −ω² x, a the pseudo-
    acceleration: columns from steps started at the unit states (the true acceleration −ω² x each)."""
    st = imp.Stepper(d)
    o = st.options("galpha", imp.Implicit(scheme=scheme, iterations=2))  # linear: the first correction is exact
    k = d.model.rsdas[0].k
    A = np.empty((3, 3))
    for j in range(3):
        x = np.eye(3)[j]
        q, qd, qdd, acc = np.array([x[0]]), np.array([x[1]]), np.array([-k * x[0]]), np.array([x[2]])
        raw, work, conv, status = np.zeros(imp.STATS), np.zeros(1), np.zeros(o.max_iter), st.mod.ffi.new("int *")
        tq, tqd, tw = np.empty((1, 1)), np.empty((1, 1)), np.empty(1)
        tau = np.zeros((1, 1))
        c = lambda a: _c(st.mod, a)  # noqa: E731
        n = st.mod.lib.md_ga_sim(st.plant, o, 1, 0.0, h, c(q), c(qd), c(qdd), c(acc), 1, 1.0, c(tau),
                                 st.mod.ffi.NULL, st.mod.ffi.NULL, 1, c(tq), c(tqd), c(tw), c(work), c(raw), c(conv),
                                 status)
        assert n == 1 and status[0] == 0
        A[:, j] = q[0], qd[0], acc[0]
    return A


def recurrence(s: imp.Scheme, w: float, h: float) -> np.ndarray:
    """Generalized-α's amplification matrix on x'' = −ω² x from its three defining equations (Chung and Hulbert
    1993): (1 − α_m) a₁ + α_m a₀ = −ω² ((1 − α_f) x₁ + α_f x₀), Newmark's x₁ and v₁."""
    L = np.array([[1.0, 0.0, -h * h * s.beta], [0.0, 1.0, -h * s.gamma], [w * w * (1 - s.alpha_f), 0.0, 1 - s.alpha_m]])
    R = np.array([[1.0, h, h * h * (0.5 - s.beta)], [0.0, 1.0, h * (1 - s.gamma)], [-w * w * s.alpha_f, 0.0, -s.alpha_m]])
    return np.linalg.solve(L, R)


def at_infinity(s: imp.Scheme) -> np.ndarray:
    """The recurrence's limit as ω h → ∞ in the scaled state (x, h v, h² a): the force row divided by ω² leaves
    (1 − α_f) x₁ = −α_f x₀. Its eigenvalues are −ρ∞, thrice (Chung and Hulbert's design)."""
    L = np.array([[1.0, 0.0, -s.beta], [0.0, 1.0, -s.gamma], [1 - s.alpha_f, 0.0, 0.0]])
    R = np.array([[1.0, 1.0, 0.5 - s.beta], [0.0, 1.0, 1 - s.gamma], [-s.alpha_f, 0.0, 0.0]])
    return np.linalg.solve(L, R)


def scaled(A: np.ndarray, h: float) -> np.ndarray:
    """A in the state (x, h v, h² a)."""
    S = np.diag([1.0, h, h * h])
    return S @ A @ np.linalg.inv(S)


@pytest.mark.parametrize("rho_inf", [0.0, 0.5, 0.8, 1.0])
def test_amplification_matrix(tmp_path, rho_inf):
    """The stepper's amplification matrix is the recurrence's (the true acceleration entering with α_f); as
    ω h → ∞ it tends to the closed-form limit whose spectral radius is ρ∞; the period error of its principal
    roots falls as h²."""
    d = oscillator(tmp_path, k=4.0)
    s, w = imp.Scheme.galpha(rho_inf), 2.0
    for wh in [1e-2, 0.3, 3.0, 1e3]:
        A, R = amplification(d, s, wh / w), recurrence(s, w, wh / w)
        # each column against its own size; the step solves a system whose condition grows as (ω h)²
        assert np.all(np.abs(A - R) < 1e-14 * (1 + wh * wh) * np.abs(R).max(axis=0)), (wh, A - R)
    # the limit is approached as (ω h)⁻² (3e-8 at 1e4), the stepper's rounding grows as (ω h)²
    A = scaled(amplification(d, s, 1e4 / w), 1e4 / w)
    assert np.abs(A - at_infinity(s)).max() < 1e-6
    assert abs(np.abs(np.linalg.eigvals(at_infinity(s))).max() - rho_inf) < 1e-4  # a triple root: cube-root rounding
    errs = []
    for wh in [0.1, 0.05, 0.025]:
        lam = np.linalg.eigvals(amplification(d, s, wh / w))
        principal = lam[np.argmin(np.abs(np.angle(lam) - wh))]  # the pair turning by about ω h; the third is real
        errs.append(wh / np.angle(principal) - 1.0)  # the period's relative error
    errs = np.array(errs)
    print(f"rho_inf {rho_inf}: period errors {errs}")
    assert np.all(np.abs(errs[:-1] / errs[1:] - 4.0) < 0.1), errs


def test_planted_alpha_f_misses_rho_inf(tmp_path):
    """α_f off by 0.1 moves the stepper's limit off the closed form and its spectral radius off ρ∞."""
    d = oscillator(tmp_path, k=4.0)
    s = imp.Scheme.galpha(0.5)
    A = scaled(amplification(d, replace(s, alpha_f=s.alpha_f + 0.1), 1e4 / 2), 1e4 / 2)
    assert np.abs(A - at_infinity(s)).max() > 1e-2
    assert abs(np.abs(np.linalg.eigvals(A)).max() - 0.5) > 0.05


# -- stiffness -------------------------------------------------------------------------------------------------

# two sliders in series along x: the first on a soft spring to the ground, the second on a spring 10^4 times
# stiffer to the first (omega 7.7 rad/s and 1.4e3 rad/s)
STIFF = ("gravity 0 0 -9.81\n" + slider("soft") + slider("stiff", "soft", 0.5) + spring("soft_spring", "soft", 100)
         + spring("stiff_spring", "stiff", 1e6))


def test_stiff_element(tmp_path):
    """At 5e-3 s (ω_stiff h = 7) Verlet diverges and generalized-α (ρ∞ 0.5) runs; at steps that resolve the
    soft mode but not the stiff one it is second order in the soft coordinate."""
    p = tmp_path / "stiff.mech"
    p.write_text(STIFF)
    d = mechdyn.load(p)
    q, qd = np.array([0.1, 0.0]), np.zeros(2)
    with pytest.raises(SimulationDiverged):
        simulate(d, q, qd, 2.0, 5e-3, "verlet")
    opts = imp.Implicit(rho_inf=0.5, tol=1e-13)
    tr = simulate(d, q, qd, 2.0, 5e-3, "galpha", implicit=opts)
    assert np.abs(tr.q).max() < 0.2 and tr.newton.most <= 2
    ref = simulate(d, q, qd, 1.0, 5e-3 / 64, "galpha", implicit=opts)
    e = np.array([abs(simulate(d, q, qd, 1.0, h, "galpha", implicit=opts).q[-1, 0] - ref.q[-1, 0])
                  for h in [1e-2, 5e-3, 2.5e-3]])
    print(f"stiff: soft-coordinate errors {e}, ratios {e[:-1] / e[1:]}")
    assert np.all(np.abs(e[:-1] / e[1:] - 4.0) < 0.4), e


# -- a free body spun by a constant body-fixed moment ----------------------------------------------------------

FREE = """gravity 0 0 0
body rotor
  parent base
  joint floating
  xtree 0 0 0
  mass 3
  cg 0 0 0
  inertia 0.5 1.1 0.8 0 0 0
  fext 1
end
"""


def test_constant_moment_spin(tmp_path, monkeypatch):
    """A free body at an arbitrary attitude, spinning about its major principal axis y and driven by a moment M
    along it: ω_y = ω0 + M t / I_yy and the angle ω0 t + ½ (M/I) t² hold to rounding at every recorded step, at a
    step of 0.05 s (no spurious slowdown). A pseudo-acceleration started at zero (not the true one) lags."""
    p = tmp_path / "free.mech"
    p.write_text(FREE)
    d = mechdyn.load(p)
    Q0 = np.array([0.8, 0.2, -0.4, 0.4])
    Q0 /= np.linalg.norm(Q0)
    q, Iy, M, w0 = np.r_[Q0, 1.0, 2.0, 3.0], 1.1, 2.4, 5.0
    axis = quat_to_R(Q0)[:, 1]  # the body's y axis in the world: fixed while it spins about it
    fext = np.zeros((1, 6))
    fext[0, :3] = M * axis
    qd = np.array([0.0, w0, 0.0, 0.0, 0.0, 0.0])

    def run():
        return simulate(d, q, qd, 4.0, 0.05, "galpha", implicit=imp.Implicit(rho_inf=0.6, tol=1e-15), fext=fext)
    tr = run()
    assert np.abs(tr.qd[:, 1] - (w0 + M / Iy * tr.t)).max() < 1e-12 * (w0 + M / Iy * 4)
    assert np.abs(tr.qd[:, [0, 2, 3, 4, 5]]).max() < 1e-12
    angle = np.array([difference(d.model, x, q)[1] for x in tr.q[:5]])  # first steps, inside ±π
    assert np.abs(angle - (w0 * tr.t[:5] + 0.5 * M / Iy * tr.t[:5] ** 2)).max() < 1e-12
    real = imp.start
    monkeypatch.setattr(imp, "start", lambda *a: (real(*a)[0], np.zeros(6)))
    lag = np.abs(run().qd[:, 1] - (w0 + M / Iy * tr.t)).max()
    assert lag > 1e-3, lag


# -- Newton ----------------------------------------------------------------------------------------------------

def system(d, q, qd, h: float, x: np.ndarray, mod=None) -> tuple[np.ndarray, np.ndarray]:
    """galpha.c's Newton system for a step of size h from (q, qd) started consistently: r(x) and J."""
    st = imp.Stepper(d, mod)
    o = st.options("galpha", imp.Implicit())
    f0, a0 = imp.start(d, q, qd, np.zeros(d.nv), None, None)
    r, J = np.empty(d.nv), np.empty((d.nv, d.nv))
    c = lambda a: _c(st.mod, np.ascontiguousarray(a, float))  # noqa: E731
    assert st.mod.lib.md_ga_system(st.plant, o, h, c(q), c(qd), c(f0), c(a0), c(x), c(np.zeros(d.nv)),
                                   st.mod.ffi.NULL, st.mod.ffi.NULL, _c(st.mod, r), _c(st.mod, J)) == 0
    return r, J


def newton_matrix_error(d, q, qd, h: float, mod=None) -> float:
    """|J − ∂r/∂x|∞ / |J|∞, ∂r/∂x by central differences of the residual (step 1e-6 of |x|), at x = f(q, qd) + 1."""
    x = d.forward(q, qd, np.zeros(d.nv)) + 1.0
    _, J = system(d, q, qd, h, x, mod)
    fd = np.empty_like(J)
    eps = 1e-6 * (1 + np.abs(x).max())
    for k in range(d.nv):
        e = np.zeros(d.nv)
        e[k] = eps
        fd[:, k] = (system(d, q, qd, h, x + e, mod)[0] - system(d, q, qd, h, x - e, mod)[0]) / (2 * eps)
    return float(np.abs(J - fd).max() / np.abs(J).max())


@pytest.mark.parametrize("case", ["heavytop", "satellite"])
def test_iteration_matrix_is_exact(case):
    """Newton's matrix is the derivative of the discrete residual (so Newton converges quadratically): against
    central differences, at a step turning the body 0.75 rad (heavy top) or 0.02 rad (satellite)."""
    d, q, qd = CASES[case][0]()
    err = newton_matrix_error(d, q, qd, 5e-3)
    print(f"{case}: |J - dr/dx| / |J| = {err:.2e}")
    assert err < 1e-7


def test_planted_tangent_operator_dropped_is_caught():
    """With T(Δ) = I in the iteration matrix (Newton then converges only linearly) the matrix misses the
    residual's derivative by 1e-3."""
    text = (Path(imp.__file__).parent / "galpha.c").read_text()
    planted = text.replace("        md_ga_dexp(w->D + c0, w->T);\n",
                           "        md_ga_dexp(w->D + c0, w->T);\n"
                           "        for (int z = 0; z < 36; ++z) w->T[z] = (z % 7 == 0);\n")
    assert planted != text
    d, q, qd = heavytop()
    err = newton_matrix_error(d, q, qd, 5e-3, imp.compile(planted))
    print(f"T dropped: {err:.2e}")
    assert err > 1e-5


def test_newton_converges_in_few_corrections():
    """The heavy top at 5e-3 s (0.75 rad a step) converges to 1e-15 in at most 4 corrections, 3.5 a step on
    average. (That its convergence is quadratic follows from the matrix being the residual's derivative, which
    test_iteration_matrix_is_exact gates and its planted bug shows can fail; this count alone would not tell a
    fast linear rate from a quadratic one.)"""
    d, q, qd = heavytop()
    tr = simulate(d, q, qd, 0.05, 5e-3, "galpha", implicit=imp.Implicit(tol=1e-15))
    assert tr.newton.most <= 4 and tr.newton.per_step <= 3.5, tr.newton


# -- modes -----------------------------------------------------------------------------------------------------

def test_fixed_iterations_are_the_real_time_mode():
    """iterations=N makes exactly N corrections every step, and at N = 3 the heavy top lands on the converged
    run's states to 1e-12; at N = 1 it differs (the check can fail)."""
    d, q, qd = heavytop()
    conv = simulate(d, q, qd, 0.1, 1e-3, "galpha", implicit=imp.Implicit(tol=1e-14))
    for n, close in [(3, True), (1, False)]:
        tr = simulate(d, q, qd, 0.1, 1e-3, "galpha", implicit=imp.Implicit(iterations=n))
        assert tr.newton.iterations == n * tr.newton.steps == n * 100 and tr.newton.most == n
        gap = np.abs(tr.qd - conv.qd).max()
        assert (gap < 1e-12) == close, (n, gap)


def test_adaptive_step_meets_its_tolerance():
    """The adaptive step lands on every output time, varies its size as the top's spin demands, and its error
    against a fixed-step run at 1e-6 s falls with rtol (the local error as h³, so the global one by 10^(2/3) a
    decade)."""
    d, q, qd = heavytop()
    ref = simulate(d, q, qd, 0.2, 1e-6, "galpha", stride=10000, implicit=imp.Implicit(tol=1e-13))
    errs = []
    for rtol in [1e-4, 1e-5, 1e-6]:
        tr = simulate(d, q, qd, 0.2, 1e-2, "galpha", implicit=imp.Implicit(adaptive=True, rtol=rtol, atol=1e-12,
                                                                           tol=1e-14))
        assert len(tr.t) == 21 and tr.t[-1] == pytest.approx(0.2)
        errs.append(np.abs(tr.qd[-1] - ref.qd[-1]).max())
        print(f"rtol {rtol:g}: {tr.newton}, error {errs[-1]:.3g}")
        assert tr.newton.h_max > 2 * tr.newton.h_min
    assert errs[0] > 3 * errs[1] > 9 * errs[2], errs  # 4.6 a decade expected


def test_bad_settings_are_refused():
    d, q, qd = heavytop()
    for opts, words in [(imp.Implicit(iterations=0), "iterations"), (imp.Implicit(tol=-1.0), "tol"),
                        (imp.Implicit(iterations=3, adaptive=True), "adaptive"),
                        (imp.Implicit(rho_inf=1.5), "rho_inf"), (imp.Implicit(alpha=0.2), "alpha")]:
        with pytest.raises(ValueError, match=words):
            simulate(d, q, qd, 0.01, 1e-3, "hht" if words == "alpha" else "galpha", implicit=opts)
    with pytest.raises(ValueError, match="explicit"):
        simulate(d, q, qd, 0.01, 1e-3, "verlet", implicit=imp.Implicit())
    with pytest.raises(imp.NewtonFailed, match="Newton"):
        simulate(d, q, qd, 0.05, 2e-2, "galpha", implicit=imp.Implicit(max_iter=2, tol=1e-14))
