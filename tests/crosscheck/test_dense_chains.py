"""The dense reference on long chains (issue 18, item 6): how far its two routes drift apart with the length of a
chain, and the size-aware gates that allow for it (crosscheck.dense_compare.gen_gate and qdd_gate).

The dense CRBA route (H by composite bodies, a dense solve) and the dense ABA route (articulated inertias, three
passes) share no code, so their gap is the round-off of solving with H: it grows with cond(H), which down a
serial chain grows with the chain's length. The chains are models/make_chains.py's (M113 shoes), built in memory
for 15, 31 and 63 shoes. Each test prints its figures; the series also appear in the assertion messages.
Run with `pytest -s tests/crosscheck/test_dense_chains.py` to see them all (docs/verification.md quotes them).
"""
from __future__ import annotations

from functools import cache

import numpy as np
import pytest

import crosscheck.dense.aba
import crosscheck.dense.loops
from crosscheck.checks import Check
from crosscheck.dense import mass_matrix
from crosscheck.dense_compare import (
    GATE_GEN, GATE_QDD, chain_depth, conditioning_gate, crba_vs_aba, gen_gate, qdd_gate, random_states,
)
from mechdyn.core.fingerprint import fingerprint
from mechdyn.core.kinematics import forward_kinematics
from mechdyn.core.model import Model
from mechdyn.core.parse import load_model, parse
from tests.conftest import MODELS, make_chains

mc = make_chains()
LENGTHS = (15, 31, 63)
TRIALS = 200  # per model: the max over them is the figure (crosscheck dense itself takes 1000)
TWOBANDS_TRIALS = 100  # its manifold walk and 132-coordinate solves take ~0.3 s a state
SEED = 0


@cache
def chain(n: int, closed: bool = False) -> Model:
    return parse(mc.chain_text(n, closed), name=f"{'band' if closed else 'chain'}{n}")


_gaps: dict[tuple[str, int], float] = {}


def gap(model: Model, trials: int = TRIALS) -> float:
    """Max scaled |qdd_crba − qdd_aba| over the seeded validation states: crosscheck dense's crba_vs_aba
    (for a loop model, both routes close the loops by method 2 at near-manifold states); measured once per model."""
    key = (fingerprint(model), trials)
    if key not in _gaps:
        _gaps[key] = crba_vs_aba(model, trials, SEED).value
    return _gaps[key]


def median_cond(model: Model, trials: int = TRIALS) -> float:
    """Median cond(H) over the states gap() ran on (random_states draws them once per model)."""
    return float(np.median([np.linalg.cond(mass_matrix(model, s.q))
                            for s in random_states(model, trials, SEED, "cond(H)")]))


def slope(ns, ys) -> float:
    """The least-squares slope of log y against log n."""
    return float(np.polyfit(np.log(ns), np.log(ys), 1)[0])


def series(closed: bool) -> tuple[list[float], list[float], str]:
    gaps = [gap(chain(n, closed)) for n in LENGTHS]
    conds = [median_cond(chain(n, closed)) for n in LENGTHS]
    kind = "closed bands (near-manifold states)" if closed else "open chains (random states)"
    text = (f"{kind}, {TRIALS} states each, seed {SEED}:\n"
            + "".join(f"  {n:3d} shoes: max scaled |qdd_crba - qdd_aba| {g:.1e}, median cond(H) {c:.1e}\n"
                      for n, g, c in zip(LENGTHS, gaps, conds))
            + f"  log-log slope: gap {slope(LENGTHS, gaps):.2f}, cond(H) {slope(LENGTHS, conds):.2f}")
    return gaps, conds, text


@pytest.mark.parametrize("closed", [False, True], ids=["chains", "bands"])
def test_the_dense_routes_drift_apart_as_cond_h_grows(closed):
    """The gap grows with the length between n² and n⁵, and at the rate cond(H) grows on the same states (slopes
    within 1).

    Why those bounds: the gap is the round-off of two solves with H, about eps·cond(H), and cond(H) of a chain of
    n links lies between n³ (folded poses, which random states mostly are) and n⁴ (unfolded:
    test_cond_h_of_the_unfolded_chain_grows_like_n4), so the slope of a max over 200 draws falls in [2, 5].
    Seed 000 reported 3.0e-12 / 1.5e-10 / 2.5e-9 on its m113's bands (slope 4.7); these chains, without its
    road-wheel stations and force elements, measure lower and nearer n³. A bug in either route would not track cond(H): it would
    show a gap of its own size (see test_planted_bugs_trip_the_gates), not a few ulps growing with n.
    """
    gaps, conds, text = series(closed)
    print("\n" + text)
    s_gap, s_cond = slope(LENGTHS, gaps), slope(LENGTHS, conds)
    assert 2.0 <= s_gap <= 5.0 and abs(s_gap - s_cond) <= 1.0, text


def test_cond_h_of_the_unfolded_chain_grows_like_n4():
    """Straightened out (each pin turned back by the polygon's exterior angle 2π/n), cond(H) of the chain grows like
    n⁴: λ_max like n⁴ (all joint rates equal move link k at ~k²), λ_min the same at every length. This is the
    envelope the gates' fourth power follows."""
    conds, lmins = [], []
    for n in LENGTHS:
        m = chain(n)
        q = np.full(n, -2 * np.pi / n)
        q[0] = 0.0
        kin = forward_kinematics(m, q, np.zeros(n))
        last = np.array([mc.pin_vectors(n)[-1][0], 0.0, mc.pin_vectors(n)[-1][1]]) / mc.PM  # the last shoe's pin vector
        tip = kin.p[-1] + kin.R[-1] @ last
        assert np.isclose(np.linalg.norm(tip), n * mc.PITCH, rtol=1e-9)  # the pose is straight
        ev = np.linalg.eigvalsh(mass_matrix(m, q))
        conds.append(ev[-1] / ev[0])
        lmins.append(ev[0])
    text = "unfolded chains: " + ", ".join(f"{n} shoes cond(H) {c:.2e} (lambda_min {lm:.2e})"
                                          for n, c, lm in zip(LENGTHS, conds, lmins))
    text += f"; slope {slope(LENGTHS, conds):.2f}"
    print("\n" + text)
    assert 3.8 <= slope(LENGTHS, conds) <= 4.2, text


# ---------------------------------------------------------------- the gates

# chain_depth of the chain models, and the gates it gives: past 45 coordinates deep (8 · 1000^(1/4)) crba_vs_aba's
# quartic meets gen_gate, which caps it
CHAIN_GATES = {
    "chain63": (63, 1e-9, 1e-9),
    "band63": (63, 1e-9, 1e-9),
    "twobands": (69, 1e-9 * (69 / 64) ** 4, 1e-9 * (69 / 64) ** 4),  # 6 hull coordinates + 63 shoes
    # the expanded bands: 6 anchor coordinates + 15 (16 shoes) and + 39 (40 shoes) pins
    "track_min": (21, 1e-9, 1e-12 * (21 / 8) ** 4),
    "track_demo": (45, 1e-9, 1e-9),  # 1e-12 (45/8)^4 = 1.001e-9, capped
    "m113": (68, 1e-9 * (68 / 64) ** 4, 1e-9 * (68 / 64) ** 4),  # 6 anchor coordinates + 62 pins of a 63-shoe band
}


@pytest.mark.parametrize("name", MODELS)
def test_gate_values(name):
    """Every hand-written model is at most 8 coordinates deep, so it keeps exactly 1e-9 (gen_vs_dense) and 1e-12
    (crba_vs_aba); the chain models get the values in CHAIN_GATES. twobands is keyed on its 69-deep chain, not
    on nv = 132, where (nv/64)^4 gave 1.8e-8, 13x more than the chain it is made of calls for."""
    m = load_model(name)
    depth, gen, qdd = CHAIN_GATES.get(name, (chain_depth(m), GATE_GEN, GATE_QDD))
    assert chain_depth(m) == depth
    assert name in CHAIN_GATES or depth <= 8
    assert gen_gate(m) == pytest.approx(gen, rel=1e-15) and qdd_gate(m) == pytest.approx(qdd, rel=1e-15)


def test_conditioning_gate_is_flat_to_the_knee_then_quartic():
    m = chain(15)
    assert conditioning_gate(m, 1.0, 15) == 1.0 and conditioning_gate(m, 1.0, 16) == 1.0
    assert conditioning_gate(m, 1.0, 5) == pytest.approx(81.0)
    assert qdd_gate(m) == pytest.approx(1e-12 * (15 / 8) ** 4) and gen_gate(m) == 1e-9  # below the cap


def test_report_line_shows_a_size_aware_gate():
    """A gate that is not a round power of ten is printed with its digits, not rounded to one."""
    assert "(gate 1.35e-09)" in Check("gen_vs_dense", 0.0, gen_gate(load_model("twobands")), "d").line()
    assert "(gate 1e-09)" in Check("gen_vs_dense", 0.0, gen_gate(load_model("elbow")), "d").line()


NOISE_CASES = [pytest.param(lambda n=n, c=c: chain(n, c), id=f"{'band' if c else 'chain'}{n}")
               for c in (False, True) for n in LENGTHS[:2]] + \
              [pytest.param(lambda name=name: load_model(name), id=name) for name in CHAIN_GATES]


@pytest.mark.parametrize("make", NOISE_CASES)
def test_gates_sit_above_the_dense_noise(make):
    """The two dense routes' gap stays at least 3x under both gates, on every chain length and model (twobands is
    the tightest: its 7819 kg hull on 18 kg shoes adds to cond(H); docs/verification.md gives its gap over 1000
    states)."""
    m = make()
    g = gap(m, TWOBANDS_TRIALS if m.name == "twobands" else TRIALS)
    text = (f"{m.name} (nv {m.nv}, depth {chain_depth(m)}): dense gap {g:.1e}, crba_vs_aba gate {qdd_gate(m):.2e} "
            f"({qdd_gate(m) / g:.0f}x), gen_vs_dense gate {gen_gate(m):.2e} ({gen_gate(m) / g:.0f}x)")
    print("\n" + text)
    assert g * 3 <= qdd_gate(m) <= gen_gate(m), text


def planted_inertia(monkeypatch, model: Model) -> None:
    """The ABA route drops the last shoe's own moment about its pin axis (Iyy about its cg, 0.04 of the 0.147 about
    its pin) from its articulated inertia. (Its Ixz would not do: the chain moves in its plane, where only the
    moments about y act.)"""
    real = crosscheck.dense.aba.body_inertias

    def dropped(m: Model) -> np.ndarray:
        I = real(m)
        I[-1, 1, 1] -= m.bodies[-1].inertia[1, 1]
        return I

    monkeypatch.setattr(crosscheck.dense.aba, "body_inertias", dropped)


def planted_rhs(monkeypatch, model: Model) -> None:
    """The ABA route's method 2 drops a term of its right-hand sides: each column of Kᵀ loses its last entry (the
    last shoe's) before H⁻¹ is applied. (Dropping a whole column would make K H⁻¹ Kᵀ singular and raise.)"""
    real = crosscheck.dense.loops.aba_solve

    def dropped(m: Model, fac, tau, *rest):
        tau = np.array(tau, dtype=float)
        tau[m.nv - 1] = 0.0  # the last entry of tau, or of every column when it holds several
        return real(m, fac, tau, *rest)

    monkeypatch.setattr(crosscheck.dense.loops, "aba_solve", dropped)


@pytest.mark.parametrize("name, plant", [("chain63", planted_inertia), ("twobands", planted_inertia),
                                         ("band63", planted_rhs), ("twobands", planted_rhs)])
def test_planted_bugs_trip_the_gates(monkeypatch, name, plant):
    """A small real bug in one route shows as a gap orders of magnitude above both gates on the longest chains."""
    m = load_model(name)
    clean = gap(m, 20)
    plant(monkeypatch, m)
    planted = crba_vs_aba(m, 20, SEED).value
    text = (f"{name}, {plant.__name__}: dense gap {planted:.1e} (unplanted, 20 states: {clean:.1e}), "
            f"gen_vs_dense gate {gen_gate(m):.2e}")
    print("\n" + text)
    assert planted > 1e3 * gen_gate(m) and clean < qdd_gate(m), text
