"""Modes of a linearized system: eigenvalues of the reduced first-order system, frequencies, damping, shapes."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mechdyn.core.model import Model

from .linearization import Linear

RIGID_TOL = 1e-7  # |λ| below this fraction of the largest (or of 1 rad/s) is a rigid-body mode's
UNSTABLE_TOL = 1e-9  # Re λ above this fraction of |λ| grows; an undamped mode's round-off is ~1e-16


@dataclass(frozen=True)
class Modes:
    """One entry per free coordinate (len = lin's m), sorted by frequency, the rigid-body modes first. Each mode
    is a pair of eigenvalues of Ar: a complex conjugate pair (underdamped), or two real ones of one coordinate
    (overdamped, or a saddle's growing and decaying motion), or a rigid-body mode's zero and its damping's decay."""
    lin: Linear
    eigenvalues: np.ndarray  # (k,) complex: the pair's Im λ > 0 one, or its real one of largest Re λ; 0 if rigid
    pairs: np.ndarray  # (k, 2) complex: both eigenvalues of each mode
    frequency: np.ndarray  # (k,) Hz: the undamped natural frequency ωn / 2π, ωn = √|λ1 λ2|
    damping: np.ndarray  # (k,) ζ = -(λ1 + λ2) / (2 ωn); NaN for rigid-body modes
    shapes: np.ndarray  # (k, nv) on the full tangent, largest entry +1
    rigid: np.ndarray  # (k,) bool

    @property
    def unstable(self) -> np.ndarray:
        """(k,) bool: the modes that grow, Re λ > UNSTABLE_TOL |λ| for either of the pair (an unstable
        equilibrium, a saddle of the potential, has one or more)."""
        return np.any(self.pairs.real > UNSTABLE_TOL * np.abs(self.pairs), axis=1)

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


def _pair_reals(idx: list[int], U: np.ndarray, M: np.ndarray) -> list[tuple[int, int]]:
    """The real eigenvalues idx paired two by two, the pairs whose position shapes (columns of U) are the most
    alike (M-weighted |cos|) first: one coordinate's overdamped (or saddle) motion has two real eigenvalues with
    the same shape for a single coordinate, nearly the same where the damping couples little."""
    W = U[:, idx]
    G = np.abs(W.conj().T @ M @ W)
    d = np.sqrt(np.diag(G))
    cos = G / np.outer(d, d)
    np.fill_diagonal(cos, -np.inf)
    left, pairs = set(range(len(idx))), []
    for flat in np.argsort(-cos, axis=None):
        a, b = np.unravel_index(flat, cos.shape)
        if a in left and b in left and a != b:
            pairs.append((idx[a], idx[b]))
            left -= {a, b}
    return pairs


def modes(lin: Linear) -> Modes:
    """The modes of lin's reduced system ẋ = Ar x, x = [z; ż], one per free coordinate. Rigid-body modes are the
    stiffness K's null space (no frequency); the smallest eigenvalues, up to two a rigid mode, are theirs, and a
    damped rigid mode's decay (the real eigenvalue whose shape lies nearest K's null space) too. The other real
    eigenvalues pair up by shape. Refused (ValueError) when the pairs do not make one mode per free coordinate."""
    m = lin.M.shape[0]
    lam, V = np.linalg.eig(lin.Ar)
    scale = max(1.0, float(np.max(np.abs(lam), initial=0.0)))
    Z = np.zeros((m, 0))
    if m:  # K's null space, on the eigenvalues' scale: σ(M⁻¹K) ~ |λ|² ≤ (RIGID_TOL scale)²
        _, sv, Vt = np.linalg.svd(np.linalg.solve(lin.M, lin.K))
        Z = Vt[sv <= (RIGID_TOL * scale) ** 2].T
    r = Z.shape[1]
    small = [int(i) for i in np.argsort(np.abs(lam)) if abs(lam[i]) <= RIGID_TOL * scale][: 2 * r]
    rest = [i for i in range(len(lam)) if i not in small]
    real = [i for i in rest if lam[i].imag == 0.0 or abs(lam[i].imag) <= 1e-12 * abs(lam[i])]
    decays: list[int] = []
    if len(small) < 2 * r:  # damped rigid modes: a zero and a decay each
        U = V[:m] / np.linalg.norm(V[:m], axis=0)
        off = np.linalg.norm(U[:, real] - Z @ (Z.T @ U[:, real]), axis=0)
        decays = [real[j] for j in np.argsort(off)[: 2 * r - len(small)]]
    real = [i for i in real if i not in decays]
    vals, pairs, shapes = [], [], []
    for i in rest:
        if i in real or i in decays or lam[i].imag < 0:
            continue  # a real one is paired below; a conjugate is its Im λ > 0 partner's
        vals.append(lam[i])
        pairs.append((lam[i], lam[i].conj()))
        shapes.append(_real_shape(lin.N @ V[:m, i]))
    if len(real) % 2:
        raise ValueError(f"model {lin.model.name}: {len(real)} real eigenvalues besides the rigid-body modes' do not "
                         "pair up into modes of one coordinate each (an odd count: a defective Ar?)")
    for a, b in _pair_reals(real, V[:m], lin.M):
        top = a if lam[a].real >= lam[b].real else b  # the slower decay (or the growth) shows the shape
        vals.append(lam[top].real + 0j)
        pairs.append((lam[a].real, lam[b].real))
        shapes.append(_real_shape(lin.N @ V[:m, top]))
    rigid_pairs = [(0.0, 0.0)] * r
    for j, i in enumerate(decays):
        rigid_pairs[j] = (0.0, lam[i].real)
    if r + len(vals) != m:
        raise ValueError(f"model {lin.model.name}: {r} rigid-body modes, {len(vals)} others from {len(rest)} "
                         f"eigenvalues do not make one mode per free coordinate ({m})")
    rigid_shapes = [_real_shape(lin.N @ Z[:, j].astype(complex)) for j in range(r)]
    pr = np.array(rigid_pairs + pairs, dtype=complex).reshape(m, 2)
    lam_all = np.array([0.0] * r + vals, dtype=complex)
    rigid = np.arange(m) < r
    wn = np.sqrt(np.abs(pr[:, 0] * pr[:, 1]).real)
    with np.errstate(invalid="ignore", divide="ignore"):
        zeta = np.where(rigid, np.nan, -(pr[:, 0] + pr[:, 1]).real / (2 * np.where(wn > 0, wn, 1.0)))
    freq = np.where(rigid, 0.0, wn / (2 * np.pi))
    order = np.lexsort((freq, ~rigid))
    S = np.array(rigid_shapes + shapes).reshape(m, lin.model.nv)
    return Modes(lin, lam_all[order], pr[order], freq[order], zeta[order], S[order], rigid[order])
