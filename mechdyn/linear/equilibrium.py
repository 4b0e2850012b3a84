"""Static equilibrium: Newton on qdd(q, 0) = 0 with the generated derivatives, on the loops' manifold."""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import scipy.linalg

from mechdyn.core.integrate import retract
from mechdyn.core.loops import closure, loop_of_row
from mechdyn.core.model import Model
from mechdyn.dynamics import Dynamics

from .linearization import held_slots, linearize


class EquilibriumError(ValueError):
    """No static equilibrium was found from the given start."""


def close_loops(model: Model, q: np.ndarray, held: Sequence[int] = (), tol: float = 1e-12,
                maxit: int = 50) -> np.ndarray:
    """q moved onto φ(q) = 0 by Gauss–Newton with minimum-norm tangent steps that leave the held slots alone
    (core.loops.project_q's iteration, the held columns of the loop Jacobian removed)."""
    q = np.array(q, dtype=float)
    if not model.loops:
        return q
    free = np.setdiff1d(np.arange(model.nv), held)
    for _ in range(maxit):
        phi, K = closure(model, q)
        if np.max(np.abs(phi)) <= tol:
            return q
        if not (np.isfinite(phi).all() and np.isfinite(K).all()):
            break
        step = np.zeros(model.nv)
        step[free] = scipy.linalg.lstsq(K[:, free], -phi, cond=1e-12)[0]
        q = retract(model, q, step)
    phi, _ = closure(model, q)
    worst = int(np.nanargmax(np.abs(phi)))
    raise EquilibriumError(f"loop '{loop_of_row(model, worst).name}' does not close with slots {list(held)} held: "
                           f"residual {abs(phi[worst]):.3e} after {maxit} Gauss-Newton steps")


def equilibrium(dyn: Dynamics, q0, held: Iterable[int | str] = (), tau=None, act=None, fext=None,
                tol: float = 1e-10, maxit: int = 50) -> np.ndarray:
    """A configuration q at rest with qdd(q, 0, tau) = 0, the held slots' coordinates kept at q0's (their
    reactions take up what holds them), found by Newton from q0.

    Each step solves P dq N y = -P qdd on the tangent space N of the loops and held slots (linearize's reduced
    stiffness, exact Newton: the held reactions do no work along N), moves by retract(q, N y), re-closes the loops
    with the held slots fixed, and halves the step while the residual grows. Converged when max |qdd| <= tol
    (SI units of qdd). A rigid-body direction (zero stiffness, zero residual) gets no step: minimum-norm solves.
    Refused with EquilibriumError when it does not converge in maxit steps."""
    model = dyn.model
    hs = held_slots(model, held)
    q = close_loops(model, np.array(q0, dtype=float), hs)
    zero = np.zeros(model.nv)

    def state(q: np.ndarray):
        lin = linearize(dyn, q, zero, tau, act, fext, hs)
        return lin, float(np.max(np.abs(lin.qdd), initial=0.0))

    lin, res = state(q)
    for _ in range(maxit):
        if not np.isfinite(res):
            break
        if res <= tol:
            return q
        m = lin.M.shape[0]
        y = scipy.linalg.lstsq(lin.Ar[m:, :m], -lin.P @ lin.qdd, cond=1e-12)[0]  # z̈ ≈ P qdd + P dq N y = 0
        step = lin.N @ y
        step[list(hs)] = 0.0  # N's held rows are zero only to round-off; the held coordinates must not creep
        for _ in range(30):  # backtracking: far from equilibrium the full step may overshoot
            try:
                trial = close_loops(model, retract(model, q, step), hs)
                tlin, tres = state(trial)
            except EquilibriumError:
                tres = np.inf
            if tres < res:
                break
            step = 0.5 * step
        else:
            break
        q, lin, res = trial, tlin, tres
    where = int(np.argmax(np.abs(lin.qdd))) if np.isfinite(res) else 0
    raise EquilibriumError(f"model {model.name}: no static equilibrium found from the given start: max |qdd| "
                           f"{res:.3e} (velocity slot {where}) after Newton's steps stopped (tol {tol:g}); a free "
                           "body under a constant load has none: hold its slots or start nearer")
