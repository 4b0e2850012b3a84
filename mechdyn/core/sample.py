"""Random states for validation: the same sampler serves every route being compared."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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


def random_state(model: Model, rng: np.random.Generator) -> State:
    """A random (q, qd, tau, fext, act) with O(1) velocities and O(5) loads."""
    return State(
        q=random_q(model, rng),
        qd=rng.normal(0.0, 1.0, model.nv),
        tau=rng.normal(0.0, 5.0, model.nv),
        fext=rng.normal(0.0, 5.0, (model.nbody, 6)),
        act=rng.normal(0.0, 5.0, model.nact),
    )


def scaled_error(a: np.ndarray, b: np.ndarray) -> float:
    """‖a − b‖∞ / max(1, ‖b‖∞): relative for large b, absolute for small."""
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))
