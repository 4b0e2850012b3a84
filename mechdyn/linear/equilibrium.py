"""Static equilibrium: Newton on qdd(q, 0) = 0 with the generated derivatives, on the loops' manifold."""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import scipy.linalg

from mechdyn.core import loops
from mechdyn.core.integrate import retract
from mechdyn.core.loops import AssemblyError
from mechdyn.core.model import Model
from mechdyn.dynamics import Dynamics

from .linearization import held_slots, linearize


MAX_STEP = 0.5  # rad or m per Newton step: a soft direction's step would otherwise fling q far from the start


class EquilibriumError(ValueError):
    """No static equilibrium was found from the given start."""


def close_loops(model: Model, q: np.ndarray, held: Sequence[int] = (), tol: float = 1e-12,
                maxit: int = 50) -> np.ndarray:
    """core.loops.close_loops, its AssemblyError an EquilibriumError here."""
    try:
        return loops.close_loops(model, q, held, tol, maxit)
    except AssemblyError as e:
        raise EquilibriumError(str(e)) from None


def equilibrium(dyn: Dynamics, q0, *, held: Iterable[int | str] = (), tau=None, fext=None, act=None,
                tol: float = 1e-9, maxit: int = 50) -> np.ndarray:
    """A configuration q at rest with qdd(q, 0, tau) = 0, the held slots' coordinates kept at q0's (their
    reactions take up what holds them), found by Newton from q0.

    Each step solves P dq N y = -P qdd on the tangent space N of the loops and held slots (linearize's reduced
    stiffness; the held reactions do no work along N). That Jacobian drops (dP/dz) qdd, exact at the solution
    only (qdd = 0): quadratic convergence near it. It moves by retract(q, N y), re-closes the loops
    with the held slots fixed, and halves the step while |P qdd|₂ grows (a step is at most MAX_STEP in any slot).
    Where the Newton step cannot lower it (a singular stiffness: a pendulum held out level), it steps along z̈ = P qdd
    instead, the way the mechanism would fall. Converged when max |qdd| <= tol (SI units of qdd). A rigid-body
    direction (zero stiffness, zero residual) gets no step: minimum-norm solves. Newton may end on an unstable
    equilibrium (modes then shows it). Refused with EquilibriumError when it does not converge in maxit steps."""
    model = dyn.model
    hs = tuple(sorted(set(held_slots(model, held)) | set(model.driven)))  # a driven coordinate stays where q0 has it
    q = close_loops(model, np.array(q0, dtype=float), hs)
    zero = np.zeros(model.nv)

    def state(q: np.ndarray):
        """The linearization at q and the merit: |P qdd|₂, the norm of the equations Newton solves (its step is a
        descent direction of it, unlike for max |qdd|)."""
        lin = linearize(dyn, q, zero, tau, fext=fext, act=act, held=hs)
        return lin, float(np.linalg.norm(lin.P @ lin.qdd))

    lin, res = state(q)
    for _ in range(maxit):
        if not np.isfinite(res):
            break
        if np.max(np.abs(lin.qdd), initial=0.0) <= tol:
            return q
        m = lin.M.shape[0]
        newton = scipy.linalg.lstsq(lin.Ar[m:, :m], -lin.P @ lin.qdd, cond=1e-12)[0]  # z̈ ≈ P qdd + P dq N y = 0
        fall = lin.P @ lin.qdd  # where it accelerates: downhill in the potential, for a system at rest
        for y, first in ((newton, MAX_STEP), (fall, 0.2 * MAX_STEP)):
            step = lin.N @ y
            step[list(hs)] = 0.0  # N's held rows are zero only to round-off; the held coordinates must not creep
            step *= min(1.0, first / max(float(np.max(np.abs(step), initial=0.0)), 1e-300))
            trial = None
            for _ in range(12):  # backtracking: far from equilibrium the full step may overshoot
                try:
                    trial = close_loops(model, retract(model, q, step), hs)
                    tlin, tres = state(trial)
                except EquilibriumError:
                    tres = np.inf
                if tres < res:
                    break
                step = 0.5 * step
            else:
                trial = None
            if trial is not None:
                break
        if trial is None:
            break
        q, lin, res = trial, tlin, tres
    if np.isfinite(res) and np.max(np.abs(lin.qdd), initial=0.0) <= tol:
        return q
    where = int(np.argmax(np.abs(lin.qdd))) if np.isfinite(res) else 0
    raise EquilibriumError(f"model {model.name}: no static equilibrium found from the given start: max |qdd| "
                           f"{np.max(np.abs(lin.qdd), initial=0.0):.3e} (velocity slot {where}) after Newton's steps stopped (tol {tol:g}); a free "
                           "body under a constant load has none: hold its slots or start nearer")
