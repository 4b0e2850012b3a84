"""The linearized dynamics about a state: M, C, K on the closure's tangent space and the state-space A, B.

Everything comes from the generated derivatives (Dynamics.derivatives); nothing here differentiates numerically.
The formulas are those of docs/derivatives.md ("Linearization"); in short, with dq, dqd, dtau, dact the blocks of
∂qdd at the state (dq on the tangent of core.integrate.retract):

    full tangent   x = [δ; qd] (2 nv),  u = [tau; act]
                   A = [[Ak, I], [dq, dqd]],   B = [[0, 0], [dtau, dact]]
    loops          N_K: an orthonormal basis of the null space of the loop Jacobian and the drivers' rows (a driven
                   coordinate is an input: the generated dtau's row and column of it are zero), M_K = inv(N_Kᵀ dtau N_K)
                   (= N_Kᵀ H N_K, since dtau = N_K M_K⁻¹ N_Kᵀ), K_K = -M_K N_Kᵀ dq N_K, C_K = -M_K N_Kᵀ dqd N_K
                   (a tree: N_K = I, M_K = H = inv(dtau))
    held slots     W: an orthonormal basis of the null space of E N_K (E the held slots' rows of I), N = N_K W;
                   M = Wᵀ M_K W, K = Wᵀ K_K W, C = Wᵀ C_K W (the held coordinates' reactions do no work along W)
    reduced        z (dim m) with δ = N z:  Ar = [[Nᵀ Ak N, I], [-M⁻¹K, -M⁻¹C]],  Br = [[0], [P dtau, P dact]],
                   P = M⁻¹ Wᵀ M_K N_Kᵀ maps full accelerations to z̈: with nothing held W = I and P = N_Kᵀ, the
                   orthogonal projection (z the minimum-norm chart close_loops' steps give); only the held part,
                   M⁻¹ Wᵀ M_K, is H-weighted (the held reactions' change eliminated)

δqdd lies in N_K's span only at an equilibrium (qdd = 0): off one, K δqdd = -(∂K δ) qdd, the loops' curvature times
qdd, which N_Kᵀ drops, and K, C are the minimum-norm chart's (another chart moves that term).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from mechdyn.core.loops import closure
from mechdyn.core.model import Model
from mechdyn.core.spatial import crm
from mechdyn.dynamics import Derivatives, Dynamics

NULL_RCOND = 1e-9  # singular values below this fraction of the largest count as zero (a loop Jacobian's rank)


def kinematic_block(model: Model, qd: np.ndarray) -> np.ndarray:
    """Ak (nv, nv) = ∂δ̇/∂δ: zero for single-DOF joints; for a floating body with body-axes twist [ω; v], the
    Lie-group term of δ̇ = δqd - ad_qd δ on retract's chart: δφ̇ = δω - ω×δφ, δṗ = δv - v×δφ - ω×δp, that is
    the body's block -crm([ω; v])."""
    Ak = np.zeros((model.nv, model.nv))
    for b, iv in zip(model.bodies, model.vidx):
        if b.joint != "floating":
            continue
        Ak[iv : iv + 6, iv : iv + 6] = -crm(qd[iv : iv + 6])
    return Ak


def held_slots(model: Model, held: Iterable[int | str]) -> tuple[int, ...]:
    """Velocity slots from slot numbers and/or body names (a name stands for all of its body's slots), sorted."""
    names = {b.name: i for i, b in enumerate(model.bodies)}
    slots: set[int] = set()
    for h in held:
        if isinstance(h, str) and not h.lstrip("-").isdigit():
            if h not in names:
                raise ValueError(f"held: no body named {h!r} in model {model.name} (bodies: "
                                 f"{', '.join(names)})")
            i = names[h]
            slots.update(range(model.vidx[i], model.vidx[i] + model.bodies[i].nv))
            continue
        s = int(h)
        if not 0 <= s < model.nv:
            raise ValueError(f"held: velocity slot {s} is out of range 0..{model.nv - 1} of model {model.name}")
        slots.add(s)
    return tuple(sorted(slots))


def null_basis(A: np.ndarray, n: int) -> np.ndarray:
    """An orthonormal basis (n, k) of A's null space (A has n columns; no rows: the identity)."""
    if A.shape[0] == 0:
        return np.eye(n)
    return scipy.linalg.null_space(A, rcond=NULL_RCOND)


CLOSURE_TOL = 1e-8  # max |φ| (m, or cosines) a linearization point may be off the loops' manifold


def tangent_basis(model: Model, q: np.ndarray, held: Sequence[int] = ()) -> tuple[np.ndarray, np.ndarray]:
    """N_K (nv, nv - rank K - ndriver), the tangent space at q of the loops with the driven coordinates fixed (a
    driver is an input, not a state: its row of the generated dtau is zero), and W with N = N_K W also keeping the
    held slots. Refused (ValueError) when q is off the loops' manifold by more than CLOSURE_TOL: the reduction
    assumes φ = 0."""
    rows = np.eye(model.nv)[list(model.driven)]
    if model.loops:
        phi, K = closure(model, q)
        if np.max(np.abs(phi)) > CLOSURE_TOL:
            raise ValueError(f"q is off the loops' manifold of model {model.name} by max |phi| "
                             f"{np.max(np.abs(phi)):.3e} (> {CLOSURE_TOL:g}): close it first "
                             "(mechdyn.linear.close_loops or mechdyn.core.loops.project_q)")
        rows = np.vstack([K, rows])
    NK = null_basis(rows, model.nv)
    W = null_basis(np.eye(model.nv)[list(held)] @ NK, NK.shape[1])
    return NK, W


HELD_COND = 1e12  # the held block of dtau is taken as singular above this condition number: λ would be noise


def held_reaction(D: Derivatives, held: Sequence[int]) -> np.ndarray:
    """The generalized forces λ on the held slots that make their accelerations zero: qdd is affine in tau, so
    E (qdd + dtau Eᵀ λ) = 0 is solved exactly. Refused (ValueError) when dtau's held block is singular or nearly
    (condition number above HELD_COND): the loops already fix (or all but fix) a held slot."""
    h = list(held)
    S = D.dtau[np.ix_(h, h)]
    cond = float(np.linalg.cond(S))
    if not cond <= HELD_COND:  # NaN or inf included
        raise ValueError(f"held slots {h}: their accelerations hardly respond to their own forces (the held block "
                         f"of dtau has condition number {cond:.3g} > {HELD_COND:g}): a held slot the loops already "
                         "fix cannot be held")
    return -np.linalg.solve(S, D.qdd[h])


@dataclass(frozen=True)
class Linear:
    """The linearized dynamics about (q, qd) with inputs tau (the held slots' reactions included), act, fext."""
    model: Model
    q: np.ndarray
    qd: np.ndarray
    tau: np.ndarray  # (nv,) the tau the derivatives were taken at: the given one plus the held reactions
    held: tuple[int, ...]
    derivatives: Derivatives  # at (q, qd, tau, fext, act)
    A: np.ndarray  # (2 nv, 2 nv) on the full tangent, x = [δ; qd]
    B: np.ndarray  # (2 nv, nv + nact), u = [tau; act]
    N: np.ndarray  # (nv, m) orthonormal: the loops' and held slots' tangent space, δ = N z
    M: np.ndarray  # (m, m)
    C: np.ndarray  # (m, m)
    K: np.ndarray  # (m, m)
    Ar: np.ndarray  # (2 m, 2 m), x = [z; ż]
    Br: np.ndarray  # (2 m, nv + nact)
    P: np.ndarray  # (m, nv): z̈ = P qdd; N_Kᵀ with nothing held, H-weighted only in the held part

    @property
    def qdd(self) -> np.ndarray:
        """The accelerations at the state, the held slots' zero: the residual of a static equilibrium."""
        return self.derivatives.qdd


def linearize(dyn: Dynamics, q, qd, tau=None, *, fext=None, act=None, held: Iterable[int | str] = ()) -> Linear:
    """M, C, K and A, B of ẋ = f(x, u) about (q, qd) from one or two generated derivative calls (two with held
    slots: the second at the reactions that hold them). q must be on the loops' manifold (close_loops)."""
    model = dyn.model
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    tau = np.zeros(model.nv) if tau is None else np.array(tau, dtype=float)
    driven = set(model.driven)  # held by their drivers, whose reactions the generated code already solves for
    hs = tuple(h for h in held_slots(model, held) if h not in driven)
    D = dyn.derivatives(q, qd, tau, fext, act)
    if hs:
        tau[list(hs)] += held_reaction(D, hs)
        D = dyn.derivatives(q, qd, tau, fext, act)
    nv = model.nv
    Ak = kinematic_block(model, qd)
    A = np.block([[Ak, np.eye(nv)], [D.dq, D.dqd]])
    B = np.vstack([np.zeros((nv, nv + model.nact)), np.hstack([D.dtau, D.dact])])
    NK, W = tangent_basis(model, q, hs)
    reduced = bool(model.loops or model.drivers)
    MK = np.linalg.inv(NK.T @ D.dtau @ NK) if reduced else np.linalg.inv(D.dtau)
    G = W.T @ MK @ NK.T  # the generalized forces along z of an acceleration field: M z̈ = G qdd (G = M_K N_Kᵀ if W = I)
    N = NK @ W
    M = W.T @ MK @ W
    M = 0.5 * (M + M.T)  # a mass matrix: symmetric, here up to the inverses' round-off
    K, C = -G @ D.dq @ N, -G @ D.dqd @ N
    # nothing to reduce (a tree, nothing held): P = M⁻¹ H is the identity, taken exactly rather than to round-off
    P = np.linalg.solve(M, G) if reduced or hs else np.eye(nv)
    m = N.shape[1]
    Ar = np.block([[N.T @ Ak @ N, np.eye(m)], [P @ D.dq @ N, P @ D.dqd @ N]])
    Br = np.vstack([np.zeros((m, nv + model.nact)), P @ np.hstack([D.dtau, D.dact])])
    return Linear(model, q, qd, tau, tuple(sorted(set(hs) | driven)), D, A, B, N, M, C, K, Ar, Br, P)
