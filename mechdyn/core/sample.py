"""Random states for validation: the same sampler serves every route being compared."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from .integrate import integrate
from .loops import AssemblyError, closure, project_q, project_qd
from .model import Model


@dataclass(frozen=True)
class State:
    q: np.ndarray  # (nq,)
    qd: np.ndarray  # (nv,)
    tau: np.ndarray  # (nv,)
    fext: np.ndarray  # (nbody, 6), base coordinates
    act: np.ndarray  # (nact,)


def random_q(model: Model, rng: np.random.Generator) -> np.ndarray:
    """Joint angles uniform in [-π, π]; floating bodies at a uniform random attitude within 1 m of their design position."""
    q = rng.uniform(-np.pi, np.pi, model.nq)
    for b, i in zip(model.bodies, model.qidx):
        if b.joint == "floating":
            Q = rng.normal(size=4)  # normalized Gaussian: uniform on SO(3)
            q[i : i + 4] = Q / np.linalg.norm(Q)
            q[i + 4 : i + 7] = b.xtree + rng.uniform(-1.0, 1.0, 3)
    return q


def random_fext(model: Model, rng: np.random.Generator) -> np.ndarray:
    """O(5) loads on the bodies declaring `fext 1`, zero rows elsewhere (Dynamics refuses loads it would ignore);
    every row is drawn, so the stream of random numbers does not depend on the flags."""
    f = rng.normal(0.0, 5.0, (model.nbody, 6))
    f[[i for i, b in enumerate(model.bodies) if not b.fext]] = 0.0
    return f


def random_act(model: Model, rng: np.random.Generator) -> np.ndarray:
    """act: the elements' slots from rng, N(0, 5); the drivers' prescribed accelerations, N(0, 5) too, from a
    generator spawned off it, which leaves rng's own stream, and so every other draw, as it was without drivers."""
    drivers = len(model.drivers)
    own = rng.normal(0.0, 5.0, model.nact - drivers)
    return np.concatenate([own, rng.spawn(1)[0].normal(0.0, 5.0, drivers)]) if drivers else own


def random_state(model: Model, rng: np.random.Generator) -> State:
    """A random (q, qd, tau, fext, act) with O(1) velocities and O(5) loads."""
    return State(
        q=random_q(model, rng),
        qd=rng.normal(0.0, 1.0, model.nv),
        tau=rng.normal(0.0, 5.0, model.nv),
        fext=random_fext(model, rng),
        act=random_act(model, rng),
    )


def scaled_error(a: np.ndarray, b: np.ndarray) -> float:
    """‖a − b‖∞ / max(1, ‖b‖∞): relative for large b, absolute for small."""
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


def manifold_states(model: Model, rng: np.random.Generator, n: int, step: float = 0.2,
                    tear: float = 1e-4) -> Iterator[State]:
    """n states near the closure manifold of a loop model, by a random walk on it.

    Each trial takes a random step of size ~step in the tangent space (the null
    space of K), projects back onto φ = 0, projects a random qd onto K qd = 0, and
    then tears q by ~tear so the Baumgarte terms stay exercised (tear=0: exactly
    closed). Fully random q would tear the loops open by meters, where
    A = K H⁻¹ Kᵀ is arbitrarily ill-conditioned.
    """
    import scipy.linalg  # here: a tree model's states never need it

    q = model.q0()
    for _ in range(n):
        h = step
        while True:
            _, K = closure(model, q)
            N = scipy.linalg.null_space(K)
            try:
                q_next = project_q(model, integrate(model, q, N @ rng.normal(0.0, h, N.shape[1]), 1.0))
                break
            except AssemblyError:
                h /= 2  # too far for Gauss-Newton: a shorter step stays in its basin
        q = q_next
        qd = project_qd(model, q, rng.normal(0.0, 1.0, model.nv))
        q_torn = integrate(model, q, rng.normal(0.0, tear, model.nv), 1.0) if tear else q
        yield State(q_torn, qd, rng.normal(0.0, 5.0, model.nv), random_fext(model, rng), random_act(model, rng))


def states(model: Model, n: int, seed: int, tear: float = 1e-4) -> Iterator[State]:
    """n seeded validation states: fully random for a tree, near the closure manifold for a loop model."""
    rng = np.random.default_rng(seed)
    if model.loops:
        yield from manifold_states(model, rng, n, tear=tear)
    else:
        for _ in range(n):
            yield random_state(model, rng)
