"""Body-level states near a model's design pose, for the contact laws' checks.

Contact only happens near the design pose, and the laws read body rows, not q: so each body's row at q0 is
perturbed on its own (a rotation of a few degrees, a translation of a few millimetres, a random twist). Many
pins, faces and pad corners are then in contact, many are not, and every branch of the laws is visited.
"""
from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from mechdyn.core.kinematics import forward_kinematics
from mechdyn.core.model import Model


def design_rows(model: Model) -> np.ndarray:
    """(nbody, 18) the body rows at q0 (R, p; zero velocity), from the tree kinematics."""
    k = forward_kinematics(model, model.q0())
    X = np.zeros((model.nbody, 18))
    X[:, :9] = k.R.reshape(-1, 9)
    X[:, 9:12] = k.p
    return X


def perturbed(X0: np.ndarray, rng: np.random.Generator, rot: float = 0.03, pos: float = 0.005, w: float = 1.0,
              v: float = 0.3, drop: float = 0.0) -> np.ndarray:
    """X0 with every body turned by ~rot rad, moved by ~pos m (and `drop` m down), twisting at ~w rad/s, ~v m/s."""
    n = len(X0)
    X = X0.copy()
    turn = Rotation.from_rotvec(rng.normal(scale=rot, size=(n, 3))).as_matrix()
    X[:, :9] = np.einsum("nij,njk->nik", turn, X0[:, :9].reshape(n, 3, 3)).reshape(n, 9)
    X[:, 9:12] += rng.normal(scale=pos, size=(n, 3)) - [0.0, 0.0, drop]
    X[:, 12:15] = rng.normal(scale=w, size=(n, 3))
    X[:, 15:18] = rng.normal(scale=v, size=(n, 3))
    return X


def power(X: np.ndarray, fext: np.ndarray) -> float:
    """The power of wrenches fext (about the world origin) on bodies moving as X: Σ M·ω + F·(v − ω × p)."""
    w, p, v = X[:, 12:15], X[:, 9:12], X[:, 15:18]
    return float(np.sum(fext[:, :3] * w) + np.sum(fext[:, 3:] * (v - np.cross(w, p))))


def power_scale(X: np.ndarray, fext: np.ndarray) -> float:
    """The sum of the magnitudes of power's terms: what round-off in `power` is relative to."""
    w, p, v = X[:, 12:15], X[:, 9:12], X[:, 15:18]
    return float(np.sum(np.abs(fext[:, :3] * w)) + np.sum(np.abs(fext[:, 3:] * (v - np.cross(w, p)))))


def dissipated(produce, X: np.ndarray, dt: float) -> float:
    """The power of a producer's velocity-dependent forces at X (its wrenches less those with the velocities
    zeroed, which are the conservative part) relative to the magnitude of power's terms (its round-off scale)."""
    f = produce(X, dt) - produce(still(X), dt)
    return power(X, f) / max(power_scale(X, f), 1e-300)


def still(X: np.ndarray) -> np.ndarray:
    """X with every velocity zeroed."""
    Y = X.copy()
    Y[:, 12:] = 0.0
    return Y
