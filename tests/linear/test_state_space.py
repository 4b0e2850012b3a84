"""A, B and the reduced system against central finite differences of the generated forward dynamics and of the
integration rule; equilibrium's Newton and its refusals. Each finite-difference check is shown once to fail on a
planted bug."""
from __future__ import annotations

import dataclasses as dc

import numpy as np
import pytest

import mechdyn
import mechdyn.linear.linearization as linearization
from mechdyn.core.integrate import difference, integrate, retract
from mechdyn.core.loops import project_qd
from mechdyn.core.parse import load_model
from mechdyn.linear import EquilibriumError, Linear, close_loops, equilibrium, held_slots, linearize, modes

EPS = 1e-6  # central differences: truncation ~ EPS² against round-off ~ 1e-16 / EPS
FD_TOL = 1e-6  # relative to the block's largest entry
# along the manifold with a held post the accelerations carry round-off ~1e-11 (10 kN reactions solved out, loops
# re-closed), so ε is larger: truncation ~ε² ~ 1e-8 relative, round-off ~1e-11/ε
EPS_MANIFOLD = 1e-4


@pytest.fixture(scope="module")
def satellite() -> mechdyn.Dynamics:
    return mechdyn.load("satellite")


def moving_state(dyn: mechdyn.Dynamics, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random configuration (unit quaternions, loops closed), a velocity of order 1 (on the loops' tangent)
    and a random tau."""
    rng = np.random.default_rng(seed)
    model = dyn.model
    q = retract(model, model.q0(), 0.3 * rng.standard_normal(model.nv))
    q = close_loops(model, q)
    qd = rng.standard_normal(model.nv)
    if model.loops:
        qd = project_qd(model, q, qd)
    return q, qd, rng.standard_normal(model.nv)


def fd_dynamics(dyn: mechdyn.Dynamics, q, qd, tau, act) -> np.ndarray:
    """[∂qdd/∂δ, ∂qdd/∂qd, ∂qdd/∂tau, ∂qdd/∂act] by central differences of dyn.forward, δ along retract."""
    model = dyn.model
    cols = []
    for j in range(model.nv):
        e = EPS * np.eye(model.nv)[j]
        cols.append((dyn.forward(retract(model, q, e), qd, tau, act=act)
                     - dyn.forward(retract(model, q, -e), qd, tau, act=act)) / (2 * EPS))
    for j in range(model.nv):
        e = EPS * np.eye(model.nv)[j]
        cols.append((dyn.forward(q, qd + e, tau, act=act) - dyn.forward(q, qd - e, tau, act=act)) / (2 * EPS))
    for j in range(model.nv):
        e = np.eye(model.nv)[j]  # qdd is affine in tau
        cols.append(dyn.forward(q, qd, tau + e, act=act) - dyn.forward(q, qd, tau, act=act))
    for j in range(model.nact):
        e = np.eye(model.nact)[j]
        cols.append(dyn.forward(q, qd, tau, act=act + e) - dyn.forward(q, qd, tau, act=act))
    return np.array(cols).T


def fd_kinematics(model, q, qd, h: float = 1e-5) -> np.ndarray:
    """∂δ̇/∂δ from trajectory steps: start at retract(q, ±ε e_j), step ±h at constant qd with the integration rule
    (core.integrate.integrate), read δ(t) = difference(perturbed, nominal), and difference in t and in ε."""
    cols = []
    for j in range(model.nv):
        e = 1e-4 * np.eye(model.nv)[j]
        rate = []
        for s in (1, -1):
            qp = retract(model, q, s * e)
            dplus = difference(model, integrate(model, qp, qd, h), integrate(model, q, qd, h))
            dminus = difference(model, integrate(model, qp, qd, -h), integrate(model, q, qd, -h))
            rate.append((dplus - dminus) / (2 * h))
        cols.append((rate[0] - rate[1]) / 2e-4)
    return np.array(cols).T


def blocks_error(lin: Linear, fd: np.ndarray) -> float:
    """The worst relative disagreement of A's dynamic rows and B's with the finite differences, block by block."""
    nv = lin.model.nv
    got = np.hstack([lin.A[nv:], lin.B[nv:]])
    errs = []
    for lo, hi in ((0, nv), (nv, 2 * nv), (2 * nv, 3 * nv), (3 * nv, got.shape[1])):
        if hi > lo:
            errs.append(np.max(np.abs(got[:, lo:hi] - fd[:, lo:hi])) / max(np.max(np.abs(fd[:, lo:hi])), 1e-12))
    return float(max(errs))


def kinematic_error(lin: Linear) -> float:
    model = lin.model
    nv = model.nv
    fd = fd_kinematics(model, lin.q, lin.qd)
    kin_ok = np.array_equal(lin.A[:nv, nv:], np.eye(nv))  # δ̇ = δqd + Ak δ: the velocity columns are exactly I
    return float(np.max(np.abs(lin.A[:nv, :nv] - fd)) / np.max(np.abs(fd))) if kin_ok else np.inf


def test_satellite_A_B_match_finite_differences_about_a_moving_state(satellite):
    q, qd, tau = moving_state(satellite, 1)
    lin = linearize(satellite, q, qd, tau)
    e_dyn = blocks_error(lin, fd_dynamics(satellite, q, qd, tau, np.zeros(0)))
    e_kin = kinematic_error(lin)
    print(f"satellite: A, B dynamic rows {e_dyn:.1e}, kinematic block (Lie-group term) {e_kin:.1e} relative")
    assert e_dyn <= FD_TOL and e_kin <= FD_TOL
    assert np.array_equal(lin.Ar, lin.A)  # a tree with nothing held: the reduction is the identity


def test_actuated_tree_A_B_match_finite_differences():
    """springpend: B's act columns (its tsda and rsda are inputs) as well."""
    dyn = mechdyn.load("springpend")
    q, qd, tau = moving_state(dyn, 4)
    act = np.random.default_rng(5).standard_normal(dyn.nact)
    lin = linearize(dyn, q, qd, tau, act=act)
    assert lin.B.shape == (2 * dyn.nv, dyn.nv + dyn.nact) and np.any(lin.B[dyn.nv:, dyn.nv:])
    err = blocks_error(lin, fd_dynamics(dyn, q, qd, tau, act))
    print(f"springpend: A, B dynamic rows (act included) {err:.1e} relative")
    assert err <= FD_TOL


def test_satellite_kinematic_check_catches_a_missing_lie_group_term(satellite, monkeypatch):
    """With the kinematic block planted as 0/I (the single-DOF joints' form, wrong for a spinning floating body),
    the trajectory-step check fails."""
    q, qd, tau = moving_state(satellite, 1)
    monkeypatch.setattr(linearization, "kinematic_block", lambda model, qd: np.zeros((model.nv, model.nv)))
    assert kinematic_error(linearize(satellite, q, qd, tau)) > 0.1


@pytest.fixture(scope="module")
def fourbar() -> mechdyn.Dynamics:
    return mechdyn.load("fourbar")


def test_loop_model_A_B_match_finite_differences_about_a_moving_state(fourbar):
    """fourbar at a closed configuration with a velocity on the loop's tangent: the full-tangent A, B (Baumgarte
    terms included) against central differences of fwd_dyn."""
    q, qd, tau = moving_state(fourbar, 3)
    lin = linearize(fourbar, q, qd, tau)
    err = blocks_error(lin, fd_dynamics(fourbar, q, qd, tau, np.zeros(0)))
    print(f"fourbar: A, B dynamic rows {err:.1e} relative")
    assert err <= FD_TOL
    assert lin.M.shape == (1, 1) and np.allclose(lin.N.T @ lin.N, np.eye(1))


@pytest.fixture(scope="module")
def quartercar_held() -> tuple[mechdyn.Dynamics, Linear]:
    """quartercar with its post's driver taken off and the post held instead (by linearize's own reactions)."""
    dyn = mechdyn.load(dc.replace(load_model("quartercar"), drivers=()))
    q = equilibrium(dyn, dyn.model.q0(), held=["post"])
    return dyn, linearize(dyn, q, np.zeros(dyn.nv), held=["post"])


def test_a_driver_holds_as_held_slots_do(quartercar_held):
    """Two routes to the quarter car on a fixed post: its driver (the generated partitioned solve, the post's
    row and column cut out) and the undriven model with the post held (linearize's reactions on it): the same
    equilibrium, and the same M, C, K on the one free coordinate left."""
    undriven, held = quartercar_held
    dyn = mechdyn.load("quartercar")
    q = equilibrium(dyn, dyn.model.q0())
    lin = linearize(dyn, q, np.zeros(dyn.nv))
    assert lin.held == held.held
    scale = lambda a, b: float(np.max(np.abs(a - b)) / np.max(np.abs(b)))  # noqa: E731
    errs = {"q": scale(q, held.q), "M": scale(lin.M, held.M), "C": scale(lin.C, held.C), "K": scale(lin.K, held.K)}
    print("quartercar, driven post against held post: " + ", ".join(f"{k} {v:.1e}" for k, v in errs.items()))
    assert max(errs.values()) <= 1e-8


def held_accel(dyn: mechdyn.Dynamics, q, qd, held, tau=None) -> np.ndarray:
    """qdd with the held slots' accelerations zeroed by generalized forces on them, from fwd_dyn alone: qdd is
    affine in tau, so its response to a unit force on each held slot is one difference."""
    tau = np.zeros(dyn.nv) if tau is None else tau
    a0 = dyn.forward(q, qd, tau)
    S = np.array([dyn.forward(q, qd, tau + np.eye(dyn.nv)[h]) - a0 for h in held]).T
    lam = np.linalg.solve(S[list(held)], -a0[list(held)])
    return a0 + S @ lam


def reduced_error(dyn: mechdyn.Dynamics, lin: Linear, Ar: np.ndarray) -> float:
    """Ar's dynamic rows against central differences along the closure manifold with the held slots fixed:
    z ↦ close_loops(retract(q*, N z)), ż ↦ qd = N ż, z̈ = Nᵀ qdd_held (qdd_held lies in N's span there)."""
    model, N, m = dyn.model, lin.N, lin.N.shape[1]
    zero = np.zeros(model.nv)
    cols = []
    for j in range(m):
        qs = [close_loops(model, retract(model, lin.q, s * EPS_MANIFOLD * N[:, j]), lin.held) for s in (1, -1)]
        cols.append(N.T @ (held_accel(dyn, qs[0], zero, lin.held) - held_accel(dyn, qs[1], zero, lin.held))
                    / (2 * EPS_MANIFOLD))
    for j in range(m):
        cols.append(N.T @ (held_accel(dyn, lin.q, EPS_MANIFOLD * N[:, j], lin.held)
                           - held_accel(dyn, lin.q, -EPS_MANIFOLD * N[:, j], lin.held)) / (2 * EPS_MANIFOLD))
    fd = np.array(cols).T
    return float(np.max(np.abs(Ar[m:] - fd)) / np.max(np.abs(fd)))


def reduced_input_error(dyn: mechdyn.Dynamics, lin: Linear, Br: np.ndarray) -> float:
    """Br's tau columns against the held system's response to a unit tau in each slot (affine: one difference)."""
    m, zero = lin.N.shape[1], np.zeros(dyn.nv)
    base = held_accel(dyn, lin.q, zero, lin.held)
    fd = np.array([lin.N.T @ (held_accel(dyn, lin.q, zero, lin.held, np.eye(dyn.nv)[j]) - base)
                   for j in range(dyn.nv)]).T
    return float(np.max(np.abs(Br[m:, :dyn.nv] - fd)) / np.max(np.abs(fd)))


def test_quartercar_reduced_system_matches_finite_differences_on_the_manifold(quartercar_held):
    """Loops, a floating wheel and a held post: the reduced Ar against motion along the closure manifold."""
    dyn, lin = quartercar_held
    assert lin.held == held_slots(dyn.model, ["post"]) and lin.M.shape == (1, 1)
    post = dyn.model.qidx[dyn.model.body_index("post")]
    assert lin.q[post] == dyn.model.q0()[post]  # held: the post's coordinate stays at q0's
    err, err_b = reduced_error(dyn, lin, lin.Ar), reduced_input_error(dyn, lin, lin.Br)
    print(f"quartercar, post held: reduced Ar {err:.1e}, Br {err_b:.1e} relative")
    assert err <= FD_TOL and err_b <= FD_TOL


def test_reduced_check_catches_an_unweighted_projection(quartercar_held):
    """Planted: z̈ = Nᵀ qdd at the fixed equilibrium reaction (the held post's reaction change and the H-weighting
    dropped) instead of P qdd."""
    dyn, lin = quartercar_held
    m = lin.N.shape[1]
    D, N = lin.derivatives, lin.N
    bad = lin.Ar.copy()
    bad[m:] = np.hstack([N.T @ D.dq @ N, N.T @ D.dqd @ N])
    assert reduced_error(dyn, lin, bad) > 0.01
    bad_b = lin.Br.copy()
    bad_b[m:] = N.T @ np.hstack([D.dtau, D.dact])
    assert reduced_input_error(dyn, lin, bad_b) > 0.01


def test_equilibrium_holds_the_held_slots_and_zeroes_qdd(quartercar_held):
    dyn, lin = quartercar_held
    # what equilibrium() promises (its tol, 1e-9 m/s²); Newton stalls at 1.7e-10 on the quarter car with its real
    # upper-arm axis, its round-off floor (the loops closed to 1e-12 m against a 167 kN/m spring), and ended below
    # 1e-10 with the arm on x
    assert np.max(np.abs(lin.qdd)) <= 1e-9
    assert abs(lin.tau[list(lin.held)][0]) > 1e3  # the post carries the car's weight


def test_equilibrium_from_a_level_chain_falls_to_hanging():
    """threelink starts level, where the gravity stiffness is singular and no Newton step lowers the residual: the
    fall step takes it down, and Newton ends hanging straight down (link1 at -90 deg, the others straight), a
    stable equilibrium."""
    dyn = mechdyn.load("threelink")
    q = equilibrium(dyn, dyn.model.q0())
    assert np.allclose(q, [-np.pi / 2, 0.0, 0.0], atol=1e-9)
    md = modes(linearize(dyn, q, np.zeros(dyn.nv)))
    assert len(md) == 3 and not md.unstable.any() and not md.rigid.any()


def test_equilibrium_refuses_a_free_body_under_gravity(satellite):
    with pytest.raises(EquilibriumError, match="no static equilibrium"):
        equilibrium(satellite, satellite.model.q0())


def test_linearize_refuses_a_torn_loop(fourbar):
    q = fourbar.model.q0() + np.array([0.01, 0.0, 0.0])  # the crank turned alone: the loop opens by ~1 mm
    with pytest.raises(ValueError, match="off the loops' manifold"):
        linearize(fourbar, q, np.zeros(fourbar.nv))
    linearize(fourbar, close_loops(fourbar.model, q), np.zeros(fourbar.nv))


def test_held_slots_reject_unknown_names(satellite):
    with pytest.raises(ValueError, match="no body named 'nope'"):
        held_slots(satellite.model, ["nope"])
    with pytest.raises(ValueError, match="out of range"):
        held_slots(satellite.model, [99])
    assert held_slots(satellite.model, ["bus", 7]) == (0, 1, 2, 3, 4, 5, 7)


def test_holding_slots_the_loops_already_fix_is_refused(fourbar):
    """fourbar has one free coordinate: holding two of its three slots leaves dtau's held block (of the rank-1
    constrained inverse) singular to round-off, which an exact-singularity test lets through as noise."""
    with pytest.raises(ValueError, match=r"held slots \[0, 1\].*condition number"):
        linearize(fourbar, fourbar.model.q0(), np.zeros(fourbar.nv), held=[0, 1])
    D = fourbar.derivatives(fourbar.model.q0(), np.zeros(fourbar.nv), np.zeros(fourbar.nv))
    assert np.linalg.cond(D.dtau[:2, :2]) > 1e12


def test_inputs_after_tau_are_keyword_only(fourbar):
    """forward/derivatives take (tau, fext, act), linearize and equilibrium used (tau, act, fext): no order to
    confuse now."""
    q, zero = fourbar.model.q0(), np.zeros(fourbar.nv)
    with pytest.raises(TypeError):
        linearize(fourbar, q, zero, zero, None)
    with pytest.raises(TypeError):
        equilibrium(fourbar, q, ())
