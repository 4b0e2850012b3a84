"""Comparisons that `crosscheck dense` runs, each returning a Check: the dense reference (crosscheck.dense)
against itself and against the generated code.

Outside crosscheck.dense, which must not import the generator (pyproject.toml, [tool.importlinter]): these
comparisons load the generated code through mechdyn.dynamics.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

import numpy as np
from tqdm import tqdm

from crosscheck.checks import Check
from crosscheck.dense.elements import tsda_state
from crosscheck.dense.driven import forward_model
from crosscheck.dense.loops import forward
from mechdyn.core.fingerprint import fingerprint
from mechdyn.core.kinematics import forward_kinematics, point_state
from mechdyn.core.loops import closure, rank_deficiency
from mechdyn.core.model import Model
from mechdyn.core.sample import State, scaled_error, states
from mechdyn.dynamics import Dynamics

GATE_QDD = 1e-12  # two dense routes in double precision on O(1)-conditioned trees, up to QDD_KNEE coordinates deep
GATE_GEN = 1e-9  # the generated C against the dense reference, up to GEN_KNEE coordinates deep
GATE_OBSERVE = 1e-12  # kinematics only: no solve, so no conditioning to allow for
QDD_KNEE = 8  # the deepest chain of the hand-written models (hmmwv_pitman's steering), gated at exactly GATE_QDD
GEN_KNEE = 64


_drawn: dict[tuple[str, int, int], list[State]] = {}


def random_states(model: Model, trials: int, seed: int, desc: str) -> Iterable[State]:
    """`trials` seeded validation states (near-manifold for loop models), with a progress bar on a terminal.

    The states are drawn once per (model, trials, seed) and shared by every
    comparison, since a loop model's manifold walk costs more than the checks.
    """
    key = (fingerprint(model), trials, seed)  # the content: a model changed in Python draws its own
    if key not in _drawn:
        _drawn[key] = list(tqdm(states(model, trials, seed), total=trials, desc=f"states for {model.name}",
                                unit="state", leave=False, disable=None))
    yield from tqdm(_drawn[key], desc=desc, unit="state", leave=False, disable=None)


_reference: dict[tuple[str, int, int, str], list[np.ndarray]] | None = None  # None: nothing is kept


@contextmanager
def shared_references() -> Iterator[None]:
    """Within this, reference_qdd keeps what it computes and hands it to the next comparison that asks: the
    regression suite's gates share one model's dense solutions. Outside it (the CLI, the unit tests, whose planted
    bugs in the dense routes must be seen) every comparison solves afresh."""
    global _reference
    _reference = {}
    try:
        yield
    finally:
        _reference = None


def reference_qdd(model: Model, trials: int, seed: int, route: str) -> list[np.ndarray]:
    """The dense qdd at each validation state: route "crba" or "aba" (the loops' forward, drivers left out), or
    "model" (the model as written: forward_model). Within shared_references, computed once per (model, trials,
    seed, route): crba_vs_aba and gen_vs_dense read the same CRBA solutions on a model without drivers."""
    if route == "model" and not model.drivers:
        route = "crba"
    key = (fingerprint(model), trials, seed, route)
    if _reference is not None and key in _reference:
        return _reference[key]

    def solve(s: State) -> np.ndarray:
        if route == "model":
            return forward_model(model, s.q, s.qd, s.tau, s.fext, s.act)
        return forward(model, s.q, s.qd, s.tau, s.fext, s.act, route=route)
    qdd = [solve(s) for s in random_states(model, trials, seed, f"dense {route}")]
    if _reference is not None:
        _reference[key] = qdd
    return qdd


def worst_of(a: Iterable[np.ndarray], b: Iterable[np.ndarray]) -> tuple[float, int]:
    """Largest scaled error of a against b, pairwise, and the trial where it occurred."""
    worst, at = 0.0, -1
    for k, (x, y) in enumerate(zip(a, b, strict=True)):
        e = scaled_error(x, y)
        if e > worst or at < 0:
            worst, at = e, k
    return worst, at


def worst_over_states(states: Iterable[State], a: Callable[[State], np.ndarray], b: Callable[[State], np.ndarray]) -> tuple[float, int]:
    """Largest scaled error of a against b over the states, and the trial where it occurred."""
    states = list(states)
    return worst_of(map(a, states), map(b, states))


def chain_depth(model: Model) -> int:
    """The number of coordinates on the longest path from a body to the base (a floating body counts 6)."""
    return max((sum(model.bodies[j].nv for j in model.support(i)) for i in range(model.nbody)), default=0)


def conditioning_gate(model: Model, gate: float, knee: int) -> float:
    """`gate`, times (depth/knee)^4 past `knee` coordinates of the deepest chain (depth = chain_depth).

    Two routes that both end in a solve with H disagree by round-off times cond(H). Down an unfolded serial
    chain of n links of pitch p the largest eigenvalue of H grows like n^4 (all n joint rates equal at 1/√n
    move link k at about k²p/(2√n)) while the smallest stays O(1) in n, so cond(H) grows like
    n^4; random, folded poses keep it and the routes' gap nearer n^3, inside that envelope
    (tests/crosscheck/test_dense_chains.py measures both). Branches side by side do not multiply it, so the
    key is the deepest chain, not nv (twobands: nv 132, depth 69). Below the knee the gate is exactly `gate`.
    """
    return gate * max(1.0, (chain_depth(model) / knee) ** 4)


def gen_gate(model: Model) -> float:
    """The gen_vs_dense gate: 1e-9, growing as (depth/64)^4 past a chain 64 coordinates deep (conditioning_gate)."""
    return conditioning_gate(model, GATE_GEN, GEN_KNEE)


def qdd_gate(model: Model) -> float:
    """The crba_vs_aba gate: 1e-12, growing as (depth/8)^4 past the deepest chain of the hand-written models, and
    never above gen_gate: a reference that disagreed with itself by more could not judge the generated code."""
    return min(conditioning_gate(model, GATE_QDD, QDD_KNEE), gen_gate(model))


def crba_vs_aba(model: Model, trials: int = 1000, seed: int = 0) -> Check:
    """The CRBA route (H qdd = tau − C, dense solve) against the articulated-body algorithm."""
    worst, at = worst_of(reference_qdd(model, trials, seed, "crba"), reference_qdd(model, trials, seed, "aba"))
    return Check("crba_vs_aba", worst, qdd_gate(model),
                 f"{trials} trials, max scaled |qdd_crba - qdd_aba| (worst at trial {at})")


def gen_vs_dense(dyn: Dynamics, trials: int = 1000, seed: int = 0) -> Check:
    """The generated C against the dense CRBA route on the same random states."""
    model = dyn.model
    generated = [dyn.forward(s.q, s.qd, s.tau, s.fext, s.act)
                 for s in random_states(model, trials, seed, "generated vs dense")]
    worst, at = worst_of(generated, reference_qdd(model, trials, seed, "model"))
    return Check("gen_vs_dense", worst, gen_gate(model),
                 f"{trials} trials, max scaled |qdd_generated - qdd_dense| (worst at trial {at})")


def dense_observe(model: Model, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """The observation vector recomputed from the dense kinematics: POIs, then TSDA l and l̇, then RSDA q and q̇."""
    kin = forward_kinematics(model, q, qd)
    parts = [np.concatenate(point_state(model, kin, p.body, p.pos)) for p in model.pois]
    l, ldot = tsda_state(model, kin)
    parts += [np.array([a, b]) for a, b in zip(l, ldot)]
    parts += [np.array([q[model.qidx[e.body]], qd[model.vidx[e.body]]]) for e in model.rsdas]
    return np.concatenate(parts) if parts else np.zeros(0)


def observe_vs_dense(dyn: Dynamics, trials: int = 1000, seed: int = 0) -> Check:
    """fwd_dyn_observe (POI motion, TSDA l and l̇, RSDA state) against the dense kinematics."""
    model = dyn.model
    worst, at = worst_over_states(
        random_states(model, trials, seed, "observe vs dense"),
        lambda s: dyn.observe(s.q, s.qd),
        lambda s: dense_observe(model, s.q, s.qd),
    ) if dyn.observe_len else (0.0, -1)
    detail = (f"{trials} trials, {dyn.observe_len} outputs, max scaled |obs_generated - obs_dense| (worst at trial {at})"
              if dyn.observe_len else "nothing declared to observe, fwd_dyn_observe is empty")
    return Check("observe_vs_dense", worst, GATE_OBSERVE, detail)


def find_roundtrip(dyn: Dynamics) -> Check:
    """find returns each declared name's index, -1 for unknown names and for a declared name with a tail after a
    NUL, and raises ValueError for an unknown kind; value = mismatches."""
    model = dyn.model
    acts = sorted((e.act, e.name) for e in (*model.tsdas, *model.rsdas) if e.act >= 0)
    expected = {("poi", p.name): i for i, p in enumerate(model.pois)}
    expected |= {("tsda", e.name): i for i, e in enumerate(model.tsdas)}
    expected |= {("rsda", e.name): i for i, e in enumerate(model.rsdas)}
    expected |= {("act", n): i for i, n in acts}
    declared = len(expected)
    probe = next(iter(expected), ("poi", "no-such-name"))  # a declared name, where the model has one
    expected |= {(k, "no-such-name"): -1 for k in ("poi", "tsda", "rsda", "act")}
    expected |= {(probe[0], probe[1] + "\0junk"): -1, ("bogus", probe[1]): ValueError}

    def found(kind: str, name: str) -> int | type:
        try:
            return dyn.find(kind, name)
        except ValueError:
            return ValueError
    bad = [key for key, want in expected.items() if found(*key) != want]
    return Check("find_roundtrip", float(len(bad)), 0.0,
                 f"{declared} declared names and {len(expected) - declared} bogus lookups, mismatches"
                 + (f" e.g. {bad[0]}" if bad else ""))


def rank_K(model: Model, trials: int = 1000, seed: int = 0) -> Check:
    """rank(K) = nc at every validation state; value = trials where it is not."""
    bad, message = 0, ""
    for s in random_states(model, trials, seed, "rank(K)"):
        msg = rank_deficiency(model, closure(model, s.q)[1])
        if msg:
            bad, message = bad + 1, message or msg
    return Check("rank_K", float(bad), 0.0, f"{trials} trials, nc {model.nc}, trials with rank(K) < nc", message)
