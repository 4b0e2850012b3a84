"""The generated derivatives (fwd_dyn_derivs) against differences of the generated fwd_dyn, on every model they
accept.

Two references, both of `dyn.forward` alone (the derivatives module shares its generator but not its C):
- central differences at h = 1e-6 (scaled by each input's size), along the tangent for q (core.integrate.retract);
- Ridders' extrapolation of central differences (a Neville tableau of steps shrinking by CON from H0, the entry
  with the smallest error estimate kept), which cancels the truncation error to high order with steps large
  enough that rounding stays small.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest
import scipy.linalg

import mechdyn
from crosscheck import golden
from crosscheck.dense.crba import mass_matrix
from crosscheck.dense.loops import loop_system
from crosscheck.dense_compare import qdd_gate
from mechdyn.codegen import derivs as derivs_module
from mechdyn.codegen import kkt, tangent
from mechdyn.codegen.expr import Builder
from mechdyn.codegen.generate import choose_route, slid
from mechdyn.core.integrate import quat_mul, retract
from mechdyn.core.loops import closure
from mechdyn.core.model import Model
from mechdyn.core.parse import load_model
from mechdyn.core.sample import scaled_error, states
from mechdyn.core.spatial import quat_to_R
from mechdyn.dynamics import Derivatives, Dynamics
from tests.conftest import MODELS

BLOCKS = ("dq", "dqd", "dtau", "dact", "dfext")
Input = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # q, qd, tau, fext, act
H_CENTRAL = 1e-6  # the central difference's step, times each input's scale
H0, CON, NTAB = 0.1, 1.4, 10  # Ridders: the first step (times the scale), its shrink factor, the tableau's size


def sample(model: Model, n: int, seed: int = 22) -> list[Input]:
    """n seeded states: random for a tree, near the closure manifold (a walk on it, torn by 1e-4) for loops."""
    return [(s.q, s.qd, s.tau, s.fext, s.act) for s in states(model, n, seed)]


def columns(dyn: Dynamics, x: Input) -> Iterator[tuple[str, int, float, Callable[[float], Input]]]:
    """Each derivative column: its block, its index in the block (dfext flattened over (nbody, 6)), the scale of its
    input, and the input moved by t along it. dfext: only the bodies that read fext (the others' columns are 0)."""
    q, qd, tau, fext, act = x
    m = dyn.model
    for j in range(m.nv):
        yield "dq", j, 1.0, lambda t, j=j: (retract(m, q, t * np.eye(m.nv)[j]), qd, tau, fext, act)
    for j in range(m.nv):
        yield "dqd", j, max(1.0, abs(qd[j])), lambda t, j=j: (q, qd + t * np.eye(m.nv)[j], tau, fext, act)
    for j in range(m.nv):
        yield "dtau", j, max(1.0, abs(tau[j])), lambda t, j=j: (q, qd, tau + t * np.eye(m.nv)[j], fext, act)
    for k in range(m.nact):
        yield "dact", k, max(1.0, abs(act[k])), lambda t, k=k: (q, qd, tau, fext, act + t * np.eye(m.nact)[k])
    for i, b in enumerate(m.bodies):
        for c in range(6) if b.fext else ():
            def moved(t: float, i: int = i, c: int = c) -> Input:
                f = fext.copy()
                f[i, c] += t
                return q, qd, tau, f, act
            yield "dfext", 6 * i + c, max(1.0, abs(fext[i, c])), moved


def _forward(dyn: Dynamics, xs: list[Input]) -> np.ndarray:
    Q, QD, TAU, F, A = (np.array([x[k] for x in xs]) for k in range(5))
    return dyn.forward_batch(Q, QD, TAU, F, A.reshape(len(xs), dyn.nact))


def _shapes(dyn: Dynamics) -> dict[str, tuple[int, int]]:
    return {"dq": (dyn.nv, dyn.nv), "dqd": (dyn.nv, dyn.nv), "dtau": (dyn.nv, dyn.nv), "dact": (dyn.nv, dyn.nact),
            "dfext": (dyn.nv, 6 * dyn.nbody)}


Evaluate = Callable[[list[Input]], np.ndarray]  # inputs -> one output row each


def _differences(evaluate: Evaluate, cols: list, steps: list[float]) -> np.ndarray:
    """(len(steps), ncols, m): the central difference of evaluate along each column at each step (times its
    scale)."""
    xs = [move(s * h * scale) for h in steps for _, _, scale, move in cols for s in (1.0, -1.0)]
    f = np.asarray(evaluate(xs)).reshape(len(steps), len(cols), 2, -1)
    scales = np.array([scale for *_, scale, _ in cols])
    return (f[:, :, 0] - f[:, :, 1]) / (2 * np.array(steps)[:, None, None] * scales[None, :, None])


def extrapolated(evaluate: Evaluate, cols: list, h0: float = H0, con: float = CON,
                 ntab: int = NTAB) -> tuple[np.ndarray, np.ndarray]:
    """(ncols, m) derivatives by Ridders' extrapolation of central differences, and (ncols,) the tableau's own
    error estimate of each (the largest over its m outputs)."""
    d = _differences(evaluate, cols, [h0 / con**i for i in range(ntab)])
    a = [[d[i]] for i in range(ntab)]  # a[i][j]: step i, extrapolated j times
    best, err = d[0].copy(), np.full(len(cols), np.inf)
    for i in range(1, ntab):
        fac = con**2
        for j in range(1, i + 1):
            a[i].append((a[i][j - 1] * fac - a[i - 1][j - 1]) / (fac - 1.0))
            fac *= con**2
            e = np.maximum(np.abs(a[i][j] - a[i][j - 1]).max(axis=1), np.abs(a[i][j] - a[i - 1][j - 1]).max(axis=1))
            better = e <= err
            err[better], best[better] = e[better], a[i][j][better]
    return best, err


def _assemble(dyn: Dynamics, cols: list, d: np.ndarray) -> dict[str, np.ndarray]:
    """Column estimates d (ncols, nv) into the blocks' matrices, columns not estimated left NaN."""
    out = {k: np.full(s, np.nan) for k, s in _shapes(dyn).items()}
    for (block, j, _, _), v in zip(cols, d):
        out[block][:, j] = v
    return out


def central(dyn: Dynamics, x: Input, h: float = H_CENTRAL) -> dict[str, np.ndarray]:
    """Every block by central differences of fwd_dyn at step h (times each input's scale)."""
    cols = list(columns(dyn, x))
    return _assemble(dyn, cols, _differences(lambda xs: _forward(dyn, xs), cols, [h])[0])


def ridders(dyn: Dynamics, x: Input) -> dict[str, np.ndarray]:
    """Every block by Ridders' extrapolation of fwd_dyn's central differences."""
    cols = list(columns(dyn, x))
    return _assemble(dyn, cols, extrapolated(lambda xs: _forward(dyn, xs), cols)[0])


KAPPA = 1e3  # the forward pass's rounding amplification a difference may show (central differences measure ~750)
EPS = np.finfo(float).eps


def step_of(ref: Callable) -> float:
    """The smallest step (times each input's scale) the reference differences take."""
    return H_CENTRAL if ref is central else H0 / CON ** (NTAB - 1)


def block_errors(D: Derivatives, ref: dict[str, np.ndarray], h: float) -> dict[str, float]:
    """Per block, the largest |D − ref| over the columns ref estimates beyond the differences' rounding floor,
    KAPPA ε |qdd[i]| / h in row i (a difference of fwd_dyn rounds in proportion to qdd itself), each row scaled by
    max(1, max |ref row i|). A block with no estimated column: 0."""
    floor = KAPPA * EPS * np.abs(D.qdd) / h
    out = {}
    for k in BLOCKS:
        got, want = getattr(D, k).reshape(ref[k].shape), ref[k]
        mask = ~np.isnan(want)
        if not mask.any():
            out[k] = 0.0
            continue
        size = np.maximum(1.0, np.max(np.abs(np.where(mask, want, 0.0)), axis=1))
        beyond = np.maximum(np.where(mask, np.abs(got - want), 0.0) - floor[:, None], 0.0)
        out[k] = float(np.max(beyond / size[:, None]))
    return out


# -- the models ----------------------------------------------------------------------------------------------------
ACCEPTED = MODELS
NSTATES = 3
_built: dict[str, Dynamics] = {}


def derivs(name: str) -> Dynamics:
    """The model's dynamics with its derivatives module built, once per worker (through the cache)."""
    if (why := golden.long_build_skip(name)) is not None:
        pytest.skip(why)
    if name not in _built:
        dyn = mechdyn.load(name)
        dyn.derivatives_lib
        _built[name] = dyn
    return _built[name]


@pytest.fixture(params=ACCEPTED)
def name(request) -> str:
    return request.param


@pytest.fixture(params=[m for m in ACCEPTED if load_model(m).loops])
def loop_name(request) -> str:
    return request.param


# -- the checks (each a figure, so the planted bugs below run the same code) ---------------------------------------
CENTRAL_TOL = 1e-6  # central differences at h = 1e-6: rounding ε |qdd| κ / h ≈ 2e-10 κ, truncation h² |f'''| / 6
RIDDERS_TOL = 1e-9  # the extrapolated differences: truncation cancelled, beyond the rounding floor (block_errors)
QDD_TOL = 1e-13  # fwd_dyn_derivs' qdd against fwd_dyn's on the CRBA route: the same expressions, scheduled apart
INVERSE_TOL = 1e-11  # dtau against the dense reference's H⁻¹ or N (Nᵀ H N)⁻¹ Nᵀ: rounding ε κ(H), κ up to ~1e5
# (past that, ε κ(H) at the states themselves: the 63-link band's κ is 1e7)
SYMMETRY_TOL = 1e-13  # dtau's asymmetry, relative: each column solved apart, so they round differently
CONSTRAINT_TOL = 1e-9  # the differentiated constraint, against Ridders' differences of the dense reference
CONSTRAINT_NTAB = 6  # K and k are smooth and the dense reference is Python: a shorter tableau (achieved ~1e-13)


def difference_errors(dyn: Dynamics, xs: list[Input],
                      ref: Callable[[Dynamics, Input], dict[str, np.ndarray]]) -> dict[str, float]:
    """Per block, the worst block_errors over the states, against ref(dyn, x)."""
    worst = {k: 0.0 for k in BLOCKS}
    for x in xs:
        errs = block_errors(dyn.derivatives(*x), ref(dyn, x), step_of(ref))
        worst = {k: max(worst[k], errs[k]) for k in BLOCKS}
    return worst


def figures(errs: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.1e}" for k, v in errs.items())


def qdd_bound(dyn: Dynamics) -> tuple[str, float]:
    """fwd_dyn's route, and the bound on its qdd against fwd_dyn_derivs': QDD_TOL where both take the CRBA route
    (the straight-line derivatives always do); else the two routes' own gate (crosscheck.dense_compare.qdd_gate:
    round-off times cond(H), which two different solves do not share)."""
    route = choose_route(slid(dyn.model)[1])[0].name
    same = route == "crba" and not dyn.derivatives_lib.fwd_dyn_derivs_loops
    return route, QDD_TOL if same else qdd_gate(dyn.model)


def qdd_and_batch_errors(dyn: Dynamics, xs: list[Input], single: list[Derivatives],
                         batch: Derivatives) -> tuple[float, int]:
    """qdd of each single call against fwd_dyn's (scaled), and the number of batch entries not bitwise equal to
    the single calls'."""
    qdd = max(scaled_error(D.qdd, dyn.forward(*x)) for D, x in zip(single, xs))
    unequal = sum(int(np.count_nonzero(np.asarray(getattr(batch, k)[i]).view(np.uint64)
                                       != np.asarray(getattr(D, k)).view(np.uint64)))
                  for i, D in enumerate(single) for k in ("qdd", *BLOCKS))
    return qdd, unequal


def inverse_errors(dyn: Dynamics, x: Input, D: Derivatives) -> tuple[float, float, float]:
    """dtau's asymmetry (relative), its distance from the dense reference's constrained inverse (scaled), and
    (loops) max |K dtau| relative to |K| |dtau|, K the loop Jacobian of mechdyn.core.loops at q. A driver holds
    its coordinate's acceleration whatever tau is: its rows join K (the inverse on the loops' and drivers'
    null space)."""
    m, T = dyn.model, D.dtau
    asym = float(np.max(np.abs(T - T.T)) / np.max(np.abs(T)))
    H = mass_matrix(m, x[0])
    if not (m.loops or m.drivers):
        return asym, scaled_error(T, np.linalg.inv(H)), 0.0
    K = np.vstack([closure(m, x[0])[1] if m.loops else np.zeros((0, m.nv)), np.eye(m.nv)[list(m.driven)]])
    N = scipy.linalg.null_space(K)
    ref = N @ np.linalg.solve(N.T @ H @ N, N.T)
    return asym, scaled_error(T, ref), float(np.max(np.abs(K @ T)) / (np.max(np.abs(K)) * np.max(np.abs(T))))


def unread_fext_entries(dyn: Dynamics, D: Derivatives) -> int:
    """The nonzero entries of dfext on bodies that do not declare `fext 1`."""
    return int(np.count_nonzero(D.dfext[:, [i for i, b in enumerate(dyn.model.bodies) if not b.fext], :]))


def constraint_error(dyn: Dynamics, x: Input, D: Derivatives) -> float:
    """K qdd = k holds at every (q, qd), so K ∂qdd/∂x = −∂(K a − k)/∂x with a = qdd held: the residual, scaled by
    max(1, |K D|, |∂(K a − k)|), over the dq and dqd columns (k reads neither tau, act nor fext: K times those
    blocks is checked to be 0). K, k from crosscheck.dense.loops (Baumgarte terms included), ∂ by Ridders."""
    m, a = dyn.model, D.qdd

    def r(xs: list[Input]) -> np.ndarray:
        out = []
        for q, qd, *_ in xs:
            K, k, _ = loop_system(m, q, qd)
            out.append(K @ a - k)
        return np.array(out)

    cols = [c for c in columns(dyn, x) if c[0] in ("dq", "dqd")]
    dr, _ = extrapolated(r, cols, ntab=CONSTRAINT_NTAB)
    K = loop_system(m, x[0], x[1])[0]
    KD = K @ np.hstack([D.dq, D.dqd])
    err = np.abs(KD + dr.T).max() / max(1.0, np.abs(KD).max(), np.abs(dr).max())
    rest = np.hstack([D.dtau, D.dact, D.dfext.reshape(dyn.nv, -1)])
    return float(max(err, np.abs(K @ rest).max() / max(1.0, np.abs(K).max() * np.abs(rest).max())))


# -- the gates -----------------------------------------------------------------------------------------------------
def test_blocks_match_central_differences(name):
    dyn = derivs(name)
    errs = difference_errors(dyn, sample(dyn.model, NSTATES), central)
    print(f"\n{name}: derivatives vs central differences (h {H_CENTRAL:g}), worst of {NSTATES} states: {figures(errs)}")
    assert max(errs.values()) <= CENTRAL_TOL, figures(errs)


def conditioning(dyn: Dynamics, xs: list[Input]) -> float:
    """The largest cond(H) over the states (the dense reference's H): how much a solve amplifies rounding."""
    return max(float(np.linalg.cond(mass_matrix(dyn.model, x[0]))) for x in xs)


def test_blocks_match_extrapolated_differences(name):
    dyn = derivs(name)
    xs = sample(dyn.model, NSTATES)
    kappa = conditioning(dyn, xs)
    if kappa * EPS / step_of(ridders) > RIDDERS_TOL * 100:  # the differences round above the gate: nothing to read
        pytest.skip(f"{name}: cond(H) {kappa:.1e}, so Ridders' differences round at ε κ |qdd| / h ≈ "
                    f"{kappa * EPS / step_of(ridders):.0e} |qdd|, above this check's {RIDDERS_TOL:g}; the central "
                    "differences, the constraint and the dense inverse check it")
    errs = difference_errors(dyn, xs, ridders)
    print(f"\n{name}: derivatives vs Ridders' differences, worst of {NSTATES} states: {figures(errs)}")
    assert max(errs.values()) <= RIDDERS_TOL, figures(errs)


def test_qdd_is_fwd_dyn_s_and_the_batch_is_the_single_calls(name):
    dyn = derivs(name)
    xs = sample(dyn.model, NSTATES)
    single = [dyn.derivatives(*x) for x in xs]
    Q, QD, TAU, F, A = (np.array([x[k] for x in xs]) for k in range(5))
    qdd, unequal = qdd_and_batch_errors(dyn, xs, single, dyn.derivatives_batch(Q, QD, TAU, F, A))
    route, bound = qdd_bound(dyn)
    print(f"\n{name}: qdd vs fwd_dyn ({route} route) {qdd:.1e} (bound {bound:.0e}); batch entries differing from "
          f"single calls: {unequal}")
    assert qdd <= bound and unequal == 0


def test_dtau_is_the_constrained_inverse_and_unread_fext_columns_are_zero(name):
    dyn = derivs(name)
    worst = np.zeros(3)
    for x in sample(dyn.model, NSTATES):
        D = dyn.derivatives(*x)
        worst = np.maximum(worst, inverse_errors(dyn, x, D))
        assert unread_fext_entries(dyn, D) == 0, "dfext has entries for bodies that do not read fext"
    bound = max(INVERSE_TOL, EPS * conditioning(dyn, sample(dyn.model, NSTATES)))  # rounding ε κ(H)
    print(f"\n{name}: dtau asymmetry {worst[0]:.1e}, vs the dense constrained inverse {worst[1]:.1e} (bound "
          f"{bound:.0e}), K dtau {worst[2]:.1e}")
    assert worst[0] <= SYMMETRY_TOL and worst[1] <= bound and worst[2] <= SYMMETRY_TOL, worst


def test_loop_derivatives_satisfy_the_differentiated_constraint(loop_name):
    dyn = derivs(loop_name)
    err = max(constraint_error(dyn, x, dyn.derivatives(*x)) for x in sample(dyn.model, NSTATES))
    print(f"\n{loop_name}: K ∂qdd/∂x + ∂(K qdd − k)/∂x, worst {err:.1e}")
    assert err <= CONSTRAINT_TOL


# -- the floating body's convention ---------------------------------------------------------------------------------
def group_errors(dyn: Dynamics, x: Input, D: Derivatives) -> tuple[float, float]:
    """For the first floating body: dq's six columns against J T (scaled), J the Ridders derivative through the
    seven numbers (Q renormalized) and T = [½ Q ⊗ (0, e_k) | R(Q)], the chain rule along Q ⊗ exp(δφ/2),
    r + R(Q) δp; and against J's columns taken as coordinates (Q's vector part, r in base axes)."""
    m = dyn.model
    i = next(i for i, b in enumerate(m.bodies) if b.joint == "floating")
    iq, iv = m.qidx[i], m.vidx[i]
    q = x[0]

    def moved(k: int) -> Callable[[float], Input]:
        def at(t: float) -> Input:
            p = q.copy()
            p[iq + k] += t
            p[iq : iq + 4] /= np.linalg.norm(p[iq : iq + 4])
            return (p, *x[1:])
        return at

    J = extrapolated(lambda xs: _forward(dyn, xs), [("q7", k, 1.0, moved(k)) for k in range(7)])[0].T
    Q = q[iq : iq + 4]
    T = np.column_stack([0.5 * quat_mul(Q, np.concatenate([[0.0], e])) for e in np.eye(3)])
    on_group = np.hstack([J[:, :4] @ T, J[:, 4:] @ quat_to_R(Q)])
    cols = D.dq[:, iv : iv + 6]
    return scaled_error(cols, on_group), scaled_error(cols, J[:, 1:])


def test_floating_body_dq_is_along_the_group_not_through_the_quaternion_numbers():
    """satellite's bus: dq's six columns are the derivatives along Q ⊗ exp(δφ/2), r + R(Q) δp (body axes), by the
    chain rule from the derivative through the seven numbers, Q renormalized: fwd_dyn refuses a quaternion off unit
    norm, so the raw numbers cannot be differenced at all. Taking the quaternion's vector part and r (base axes)
    as coordinates instead is far from dq."""
    dyn = derivs("satellite")
    x = sample(dyn.model, 1)[0]
    err, off = group_errors(dyn, x, dyn.derivatives(*x))
    print(f"\nsatellite: dq's bus columns vs the group's chain rule {err:.1e}; vs the quaternion numbers {off:.2f}")
    assert err <= RIDDERS_TOL and off > 0.1
    raw = x[0].copy()
    raw[dyn.model.qidx[0] + 1] += H_CENTRAL
    with pytest.raises(ValueError, match="expected a unit quaternion"):
        dyn.forward(raw, *x[1:])


# -- planted bugs: each check above fails on a generator with a bug in the derivatives -----------------------------
def _planted(name: str) -> Dynamics:
    """The model built afresh (the fresh_cache fixture's private cache), with whatever the test has planted."""
    dyn = mechdyn.load(name)
    dyn.derivatives_lib
    return dyn


def test_planted_product_rule_without_its_second_term_is_caught(fresh_cache, monkeypatch):
    """(x y)' = x' y + x y' with the x y' term dropped, in tangent.derivatives: both difference checks fail."""
    current: dict[str, str] = {}
    real_tape, real_combine = Builder.tape, tangent.combine

    def tape(self, roots):
        for name, op, args in real_tape(self, roots):
            current["op"] = op  # the rule being applied when combine is next called
            yield name, op, args

    monkeypatch.setattr(Builder, "tape", tape)
    monkeypatch.setattr(tangent, "combine", lambda b, terms: real_combine(b, terms[:1] if current.get("op") == "*"
                                                                           else terms))
    dyn = _planted("elbow")
    xs = sample(dyn.model, 1)
    c, r = difference_errors(dyn, xs, central), difference_errors(dyn, xs, ridders)
    print(f"\nplanted product rule: vs central {figures(c)}; vs Ridders {figures(r)}")
    assert max(c.values()) > CENTRAL_TOL and max(r.values()) > RIDDERS_TOL


def test_planted_floating_translation_seeded_in_base_axes_is_caught(fresh_cache, monkeypatch):
    """A floating body's δp seeded as r + δp (base axes) instead of r + R(Q) δp: dq fails both difference checks
    (the other blocks do not read the seed)."""
    real = derivs_module.seeds

    def seeds(b, model, params=False):
        out = real(b, model, params)
        for bd, qi, vi in zip(model.bodies, model.qidx, model.vidx):
            if bd.joint == "floating":
                for k in range(3):
                    out[f"q[{qi + 4 + k}]"] = {("q", vi + 3 + k): 1.0}
        return out

    monkeypatch.setattr(derivs_module, "seeds", seeds)
    dyn = _planted("satellite")
    xs = sample(dyn.model, 1)
    c, r = difference_errors(dyn, xs, central), difference_errors(dyn, xs, ridders)
    group = group_errors(dyn, xs[0], dyn.derivatives(*xs[0]))[0]
    print(f"\nplanted base-axes δp: vs central {figures(c)}; vs Ridders {figures(r)}; vs the group's chain rule "
          f"{group:.1e}")
    assert c["dq"] > CENTRAL_TOL and r["dq"] > RIDDERS_TOL and group > RIDDERS_TOL
    assert max(c["dqd"], c["dtau"], c["dfext"]) <= CENTRAL_TOL


def test_planted_loop_rows_left_undifferentiated_are_caught(fresh_cache, monkeypatch):
    """The loop rows' residuals g = K qdd − k taken as constant (their derivatives dropped): the differentiated
    constraint and the differences fail."""
    real = derivs_module.derivatives
    nv = load_model("fourbar").nv
    monkeypatch.setattr(derivs_module, "derivatives",
                        lambda b, roots, seed: [*real(b, roots, seed)[:nv], *({} for _ in roots[nv:])])
    dyn = _planted("fourbar")
    x = sample(dyn.model, 1)[0]
    err, c = constraint_error(dyn, x, dyn.derivatives(*x)), difference_errors(dyn, [x], central)
    print(f"\nplanted undifferentiated loop rows: constraint {err:.1e}; vs central {figures(c)}")
    assert err > CONSTRAINT_TOL and max(c.values()) > CENTRAL_TOL


def test_planted_constraint_right_hand_side_in_the_tau_columns_is_caught(fresh_cache, monkeypatch):
    """The tau columns solved with k = 1 on every loop row instead of 0 (∂k/∂tau = 0): dtau leaves null(K) and
    the dense constrained inverse."""
    real = kkt.kkt_solve

    def kkt_solve(b, H, rows, rhs, order, **kw):
        if all(isinstance(v, float) for v in rhs):  # a tau column: the unit right-hand sides
            rows = [(K, 1.0) for K, _ in rows]
        return real(b, H, rows, rhs, order, **kw)

    monkeypatch.setattr(kkt, "kkt_solve", kkt_solve)
    dyn = _planted("fourbar")
    x = sample(dyn.model, 1)[0]
    asym, inverse, null = inverse_errors(dyn, x, dyn.derivatives(*x))
    print(f"\nplanted tau-column k: asymmetry {asym:.1e}, vs the dense inverse {inverse:.1e}, K dtau {null:.1e}")
    assert inverse > INVERSE_TOL and null > SYMMETRY_TOL


def test_planted_output_changes_are_caught():
    """qdd off fwd_dyn's by 1e-12 relative, one batch entry off by one ulp, dtau asymmetric by 1e-12 and an entry
    of dfext on a body without `fext 1` are reported."""
    dyn = derivs("elbow")
    xs = sample(dyn.model, 2)
    single = [dyn.derivatives(*x) for x in xs]
    Q, QD, TAU, F, A = (np.array([x[k] for x in xs]) for k in range(5))
    batch = dyn.derivatives_batch(Q, QD, TAU, F, A)
    assert qdd_and_batch_errors(dyn, xs, single, batch)[1] == 0
    batch.dq[1, 2, 3] = np.nextafter(batch.dq[1, 2, 3], np.inf)
    assert qdd_and_batch_errors(dyn, xs, single, batch)[1] == 1
    off = single[0]._replace(qdd=single[0].qdd * (1 + 1e-12))
    assert qdd_and_batch_errors(dyn, xs, [off, single[1]], batch)[0] > QDD_TOL
    asym = single[0]._replace(dtau=single[0].dtau + 1e-12 * np.abs(single[0].dtau).max() * np.triu(np.ones((6, 6)), 1))
    assert inverse_errors(dyn, xs[0], asym)[0] > SYMMETRY_TOL
    sp = derivs("springpend")  # fext on pend1 only
    x = sample(sp.model, 1)[0]
    D = sp.derivatives(*x)
    assert unread_fext_entries(sp, D) == 0
    D.dfext[0, 1, 2] = 1e-300
    assert unread_fext_entries(sp, D) == 1


# -- arguments -----------------------------------------------------------------------------------------------------
# (label, the arguments): each refused by forward with a ValueError, or (the NaN cases) accepted with NaN out;
# springpend reads fext on pend1 only and has 2 act slots, satellite has a floating bus
Z2, F = np.zeros(2), np.zeros((2, 6))
ARGS = [
    ("q too long", "springpend", (np.zeros(3), Z2, Z2)),
    ("tau 2-D", "springpend", (Z2, Z2, np.zeros((2, 1)))),
    ("fext flat", "springpend", (Z2, Z2, Z2, np.zeros(6))),
    ("act short", "springpend", (Z2, Z2, Z2, None, np.zeros(1))),
    ("qd complex", "springpend", (Z2, Z2 + 1j, Z2)),
    ("fext on a body without fext 1", "springpend", (Z2, Z2, Z2, np.vstack([np.zeros(6), np.ones(6)]))),
    ("NaN fext on a body without fext 1", "springpend", (Z2, Z2, Z2, np.vstack([np.zeros(6), np.full(6, np.nan)]))),
    ("quaternion off unit norm", "satellite", "bad quaternion"),
    ("NaN q", "springpend", (np.array([np.nan, 0.0]), Z2, Z2)),
    ("NaN tau", "springpend", (Z2, Z2, np.array([0.0, np.nan]))),
]


def _args(name: str, args):
    if args != "bad quaternion":
        return args
    dyn = derivs(name)
    q = dyn.model.q0()
    q[0:4] = [1.2, 1.6, 0.0, 0.0]
    return q, np.zeros(dyn.nv), np.zeros(dyn.nv)


def _outcome(call: Callable) -> str:
    try:
        out = call()
    except ValueError as e:
        return f"ValueError: {e}"
    return "NaN out" if np.isnan(out if isinstance(out, np.ndarray) else out.qdd).any() else "accepted"


@pytest.mark.parametrize("label, name, args", ARGS, ids=[a[0] for a in ARGS])
def test_derivatives_refuse_what_forward_refuses_with_its_message(label, name, args):
    """derivatives checks its arguments as forward does: the same ValueError, or (NaN in q, qd or tau, which
    forward passes through to a NaN qdd) a NaN qdd, never a crash."""
    dyn = derivs(name)
    args = _args(name, args)
    want, got = _outcome(lambda: dyn.forward(*args)), _outcome(lambda: dyn.derivatives(*args))
    print(f"\n{label}: forward {want}; derivatives {got}")
    assert got == want and (want.startswith("ValueError") or want == "NaN out")
    batch = [np.array([a]) if a is not None else None for a in args]
    want, got = _outcome(lambda: dyn.forward_batch(*batch)), _outcome(lambda: dyn.derivatives_batch(*batch))
    assert got.replace("Q[0]", "q") == want.replace("Q[0]", "q") and (want.startswith("ValueError") or
                                                                     want == "NaN out"), (got, want)


def test_batch_shapes_are_checked_as_forward_batch_checks_them():
    dyn = derivs("springpend")
    Z5 = np.zeros((5, 2))
    for args in [(Z5, np.zeros((4, 2)), Z5), (Z5, Z5, Z5, np.zeros((5, 1, 6))), (Z5, Z5, Z5, None, np.zeros(5)),
                 (np.zeros(2), Z5, Z5)]:
        with pytest.raises(ValueError) as want:
            dyn.forward_batch(*args)
        with pytest.raises(ValueError) as got:
            dyn.derivatives_batch(*args)
        assert str(got.value) == str(want.value)


def test_a_model_past_the_old_size_cap_has_its_derivatives_by_the_loop_route():
    """chain63 (63 links; past the 48 coordinates the straight-line derivatives were capped at) takes the loop
    route (derivs_loop.py), chosen by operation count."""
    dyn = derivs("chain63")
    assert dyn.nv == 63 and dyn.derivatives_lib.fwd_dyn_derivs_loops == 1
    assert derivs("elbow").derivatives_lib.fwd_dyn_derivs_loops == 0
