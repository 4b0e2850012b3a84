"""Modes of a linearized system: eigenvalues of the reduced first-order system, frequencies, damping, shapes."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mechdyn.core.model import Model

from .linearization import Linear

RIGID_TOL = 1e-7  # |λ| below this fraction of the largest (or of 1 rad/s) is a rigid-body mode
UNSTABLE_TOL = 1e-9  # Re λ above this fraction of |λ| grows; an undamped mode's round-off is ~1e-16


@dataclass(frozen=True)
class Modes:
    """One entry per mode, sorted by frequency, the rigid-body modes first. A complex pair of eigenvalues is one
    mode (λ with Im λ > 0 kept); a real eigenvalue (an overdamped or first-order motion) is a mode of its own."""
    lin: Linear
    eigenvalues: np.ndarray  # (k,) complex; 0 for rigid-body modes
    frequency: np.ndarray  # (k,) Hz: the undamped natural frequency |λ| / 2π
    damping: np.ndarray  # (k,) ζ = -Re λ / |λ|; NaN for rigid-body modes
    shapes: np.ndarray  # (k, nv) on the full tangent, largest entry +1
    rigid: np.ndarray  # (k,) bool

    @property
    def unstable(self) -> np.ndarray:
        """(k,) bool: the modes that grow, Re λ > UNSTABLE_TOL |λ| (an unstable equilibrium has one or more)."""
        return self.eigenvalues.real > UNSTABLE_TOL * np.abs(self.eigenvalues)

    def __len__(self) -> int:
        return len(self.frequency)


def coordinate_names(model: Model) -> list[str]:
    """A name per velocity slot: the body's for a single-DOF joint; a floating body's δ = [δφ; δp] as name.rx, .ry,
    .rz (rotation about its own axes) and name.x, .y, .z (translation along them)."""
    names = []
    for b in model.bodies:
        names += [f"{b.name}.{c}" for c in ("rx", "ry", "rz", "x", "y", "z")] if b.joint == "floating" else [b.name]
    return names


def _real_shape(v: np.ndarray) -> np.ndarray:
    """A complex mode shape turned so its largest entry is real and positive, real part, scaled to max |·| = 1."""
    v = v * np.exp(-1j * np.angle(v[np.argmax(np.abs(v))]))
    r = v.real
    return r / np.max(np.abs(r))


def modes(lin: Linear) -> Modes:
    """The modes of lin's reduced system ẋ = Ar x, x = [z; ż]. Rigid-body modes are the stiffness K's null space
    (a zero eigenvalue carries no frequency); their eigenvalues are dropped from the rest."""
    m = lin.M.shape[0]
    lam, V = np.linalg.eig(lin.Ar)
    scale = max(1.0, float(np.max(np.abs(lam), initial=0.0)))
    keep = np.abs(lam) > RIGID_TOL * scale
    vals, shapes = [], []
    for i in np.flatnonzero(keep):
        if lam[i].imag < 0 and np.any(np.isclose(lam[keep], lam[i].conj(), rtol=1e-9, atol=0)):
            continue  # the conjugate of one kept
        vals.append(lam[i])
        shapes.append(_real_shape(lin.N @ V[:m, i]))
    Z = np.zeros((m, 0))
    if np.count_nonzero(~keep):  # K's null space, on the eigenvalues' scale: σ(M⁻¹K) ~ |λ|² ≤ (RIGID_TOL scale)²
        _, sv, Vt = np.linalg.svd(np.linalg.solve(lin.M, lin.K))
        Z = Vt[sv <= (RIGID_TOL * scale) ** 2].T
    rigid_shapes = [_real_shape(lin.N @ Z[:, j].astype(complex)) for j in range(Z.shape[1])]
    lam_all = np.array([0.0] * len(rigid_shapes) + vals, dtype=complex)
    absl = np.abs(lam_all)
    freq = absl / (2 * np.pi)
    with np.errstate(invalid="ignore", divide="ignore"):
        zeta = np.where(absl > 0, -lam_all.real / np.where(absl > 0, absl, 1.0), np.nan)
    rigid = np.arange(len(lam_all)) < len(rigid_shapes)
    order = np.lexsort((freq, ~rigid))
    S = np.array(rigid_shapes + shapes).reshape(len(lam_all), lin.model.nv)
    return Modes(lin, lam_all[order], freq[order], zeta[order], S[order], rigid[order])
