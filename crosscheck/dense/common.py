"""Pieces every dense algorithm shares: the expanded-model guard, gravity, inertias and applied forces."""
from __future__ import annotations

import numpy as np

from mechdyn.core.kinematics import Kinematics
from mechdyn.core.model import Model
from mechdyn.core.spatial import jcalc, mcI, xtree


def require_expanded(model: Model) -> None:
    """Raise NotImplementedError for a model whose track bands are not yet expanded into bodies."""
    if not model.bands_expanded:
        raise NotImplementedError(
            f"model {model.name!r}: track bands are parsed but not yet expanded into bodies, "
            f"so the dense reference cannot run it ({len(model.tracks)} tracks)"
        )


def joint_transforms(model: Model, q: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Xup (nbody, 6, 6), parent to body coordinates, and each body's motion subspace S (6, nv_i)."""
    q = np.asarray(q, dtype=float)
    Xup, S = np.zeros((model.nbody, 6, 6)), []
    for i, b in enumerate(model.bodies):
        XJ, Si = jcalc(b, q[model.qidx[i] : model.qidx[i] + b.nq])
        Xup[i] = XJ @ xtree(b)
        S.append(Si)
    return Xup, S


def gravity_accel(model: Model) -> np.ndarray:
    """The base's fictitious spatial acceleration a₀ = [0; −g]."""
    return np.concatenate([np.zeros(3), -np.asarray(model.gravity, dtype=float)])


def body_inertias(model: Model) -> np.ndarray:
    """(nbody, 6, 6) spatial inertias about each body origin, body coordinates."""
    return np.array([mcI(b.mass, b.cg, b.inertia) for b in model.bodies]).reshape(-1, 6, 6)


def check_vector(name: str, x: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray:
    """x as a float array of the given shape (zeros when None)."""
    if x is None:
        return np.zeros(shape)
    x = np.asarray(x, dtype=float)
    if x.shape != shape:
        raise ValueError(f"{name} has shape {x.shape}, expected {shape}")
    return x


def applied_forces(model: Model, kin: Kinematics, fext: np.ndarray | None, f_elem: np.ndarray | None) -> np.ndarray:
    """(nbody, 6) applied spatial forces in body coords: fext rows of fext bodies plus f_elem rows, from base coords."""
    fext = check_vector("fext", fext, (model.nbody, 6))
    f_elem = check_vector("f_elem", f_elem, (model.nbody, 6))
    fx = np.zeros((model.nbody, 6))
    for i, b in enumerate(model.bodies):
        F = f_elem[i] + (fext[i] if b.fext else 0.0)
        # force coordinate change base → body, X0* = X0⁻ᵀ, by a generic dense solve
        fx[i] = np.linalg.solve(kin.X0[i].T, F)
    return fx
