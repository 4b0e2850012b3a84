"""The generated derivatives of the forward dynamics against Pinocchio's analytic ones (computeABADerivatives).

Tree models only (Pinocchio's ABA derivatives have no loop closures). Pinocchio runs the model it loads from the
URDF export (crosscheck.pinocchio.build) at the state the exporter's maps give (mechdyn.export.urdf), and its
blocks are mapped back: rows and columns through the same permutation as the accelerations (a floating body's
[v; ω] against [ω; v], [f; n] against [n; f]). The floating body's tangent needs nothing more: Pinocchio's
q ⊕ δ = q·exp_SE3([δv; δω]) in local axes and mechdyn's q ∘ exp([δφ; δp]) (Q ⊗ exp(δφ/2), r + R δp) agree to
first order once the halves are swapped, and a Jacobian sees only the first order.

What Pinocchio's ABA does not hold is added on Pinocchio's own terms, as the acceleration comparison does:

- fext: mechdyn's rows are fixed in base coordinates, Pinocchio's in each joint's local frame, and
  computeABADerivatives holds the local ones fixed. Turning the frame by ξ = J_i δ (J_i the joint's local
  Jacobian) changes a base-fixed force's local coordinates by −ξ ×* f, so ∂qdd/∂q gains Minv Σ J_iᵀ (−(J_i δ) ×* f_i),
  written here from Pinocchio's Jacobians and its own cross product. ∂qdd/∂fext is Minv J_iᵀ times the map of a
  base-coordinate row to local coordinates (crosscheck.pinocchio.local_fext, applied to unit rows).
- TSDA and RSDA elements: the acceleration comparison hands Pinocchio their generalized forces Q_e(q, v, act),
  computed from Pinocchio's frame kinematics (crosscheck.pinocchio.element_forces), as torques. Their
  derivatives are Minv ∂Q_e/∂(q, v, act); ∂Q_e is taken by an eighth-order central difference, in q along
  Pinocchio's own Lie group (pin.integrate). Not by complex step: Pinocchio's Python bindings and
  mechdyn.core's kinematics under the dense reference (np.asarray(..., dtype=float)) both compute in real
  doubles only. Not through the generator, which this would then check against itself. Q_e is smooth away from a
  collapsed TSDA, so at a step h the stencil's truncation (~h⁸) and round-off (~1e-16 |Q_e| / h) are both
  orders below the 1e-9 gate; h starts at STEP and is halved until h and h/2 agree to AGREE (near a short
  TSDA, whose direction turns fast). Q_e is affine in v and act, where the stencil is exact but for round-off.

Metric, per block (qdd, dq, dqd, dtau, dact, dfext): max |generated − Pinocchio| / max(1, max |Pinocchio|).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from tqdm import tqdm

from crosscheck.checks import Check
from mechdyn.core.model import Model
from mechdyn.core.sample import State, scaled_error, states
from mechdyn.dynamics import Derivatives, Dynamics
from mechdyn.export import urdf

from . import PinModel, element_forces, kinematics, local_fext, pin, to_pin
from .compare import pin_model

GATE = 1e-9  # the issue's: two analytic routes (Pinocchio's recursive derivatives, the generator's tangent pass)
BLOCKS = Derivatives._fields
STEP = 0.02  # the central difference's step, in Pinocchio's tangent coordinates (rad, m, rad/s, m/s, act units)
AGREE, HALVINGS = 1e-11, 10  # the stencil's self-consistency between a step and its half, and how far it may go
STENCIL = (4 / 5, -1 / 5, 4 / 105, -1 / 280)  # eighth-order central first derivative: weights of ±h, ±2h, ±3h, ±4h

NOTE = ("a failure here alone, with crosscheck pinocchio passing, points at the generated derivatives "
        "(mechdyn/codegen/tangent.py, derivs.py) or at this module's maps; in qdd too, at the convention maps")


def why_not(model: Model) -> str | None:
    """Why the model has no comparison with Pinocchio's derivatives, or None."""
    if model.loops:
        return f"{model.name} has loop closures: Pinocchio's computeABADerivatives is for trees"
    return None


def permutation(pm: PinModel) -> np.ndarray:
    """p with x_mechdyn = x_pinocchio[p] for any velocity-space vector: the acceleration comparison's own map."""
    nv = pm.pmodel.nv
    p = urdf.from_pinocchio_v(pm.model, pm.layout, np.arange(nv, dtype=float))
    if sorted(p) != list(range(nv)):  # the map must be a pure reordering for a Jacobian's rows and columns
        raise AssertionError(f"{pm.model.name}: the state map to Pinocchio is not a permutation of the slots")
    return p.astype(int)


def _stencil(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray, move: "_Move", h: float) -> np.ndarray:
    """∂f/∂x, one column per tangent coordinate of x: the eighth-order central stencil at step h."""
    cols = []
    for k in range(move.dim):
        d, col = np.zeros(move.dim), 0.0
        for j, w in enumerate(STENCIL, start=1):
            d[k] = j * h
            col = col + w * (f(move(x, d)) - f(move(x, -d)))
        cols.append(col / h)
    return np.array(cols).T


def _difference(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray, move: "_Move") -> np.ndarray:
    """∂f/∂x by the stencil from STEP down, halving until two steps agree to AGREE (scaled): the stencil must
    not reach past a nearby singularity (a TSDA nearly collapsed, where its direction turns within 4 STEP)."""
    h, prev = STEP, _stencil(f, x, move, STEP)
    for _ in range(HALVINGS):
        h /= 2
        cur = _stencil(f, x, move, h)
        if scaled_error(prev, cur) <= AGREE:
            return cur
        prev = cur
    raise RuntimeError(f"the element forces' difference did not settle by step {h:g}: a singular state?")


@dataclass(frozen=True)
class _Move:
    """x moved by a tangent step: along Pinocchio's Lie group for q (pin.integrate), additively otherwise."""
    dim: int
    pmodel: "pin.Model | None" = None

    def __call__(self, x: np.ndarray, d: np.ndarray) -> np.ndarray:
        return pin.integrate(self.pmodel, x, d) if self.pmodel is not None else x + d


def fext_terms(pm: PinModel, qp: np.ndarray, fx: list, Minv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What base-fixed fext rows add to Pinocchio's ∂ddq/∂q (which holds the local forces fx fixed), and
    ∂ddq/∂fext (nv, nbody, 6), in Pinocchio's coordinates (rows) at qp."""
    model, pmod, data = pm.model, pm.pmodel, pm.data
    nv, nb = pmod.nv, model.nbody
    dq, dfext = np.zeros((nv, nv)), np.zeros((nv, nb, 6))
    pin.computeJointJacobians(pmod, data, qp)
    for i, b in enumerate(model.bodies):
        if not b.fext:
            continue
        jid = pm.joint[i]
        J = pin.getJointJacobian(pmod, data, jid, pin.ReferenceFrame.LOCAL)
        turned = np.array([-(pin.Motion(J[:, k]).cross(fx[jid])).vector for k in range(nv)]).T  # ∂(local f)/∂δ
        dq += Minv @ J.T @ turned
        for c in range(6):  # a unit base-coordinate row, mapped to local coordinates as forward() maps it
            unit = np.zeros((nb, 6))
            unit[i, c] = 1.0
            dfext[:, i, c] = Minv @ J.T @ local_fext(pm, unit)[jid].vector
    return dq, dfext


def pinocchio_derivatives(pm: PinModel, s: State) -> Derivatives:
    """Pinocchio's derivatives of qdd at state s, mapped to mechdyn's coordinates and blocks (module docstring)."""
    model, pmod, data = pm.model, pm.pmodel, pm.data
    nv, nact = model.nv, model.nact
    qp, vp, tp = to_pin(pm, s.q, s.qd, s.tau)
    act = np.asarray(s.act, dtype=float).reshape(nact)
    kinematics(pm, qp, vp)
    fx = local_fext(pm, s.fext)
    elements = bool(model.tsdas or model.rsdas)
    Qe = element_forces(pm, qp, vp, act) if elements else np.zeros(nv)
    if pm.has_fext:
        pin.computeABADerivatives(pmod, data, qp, vp, tp + Qe, fx)
    else:
        pin.computeABADerivatives(pmod, data, qp, vp, tp + Qe)
    ddq, dq, dv = np.array(data.ddq), np.array(data.ddq_dq), np.array(data.ddq_dv)
    Minv = np.triu(data.Minv) + np.triu(data.Minv, 1).T  # Pinocchio fills the upper triangle (its documentation)
    turned, dfext = fext_terms(pm, qp, fx, Minv)
    dq = dq + turned
    dact = np.zeros((nv, nact))
    if elements:
        other = replace(pm, data=pmod.createData())  # the differences' kinematics leave pm.data alone

        def Q(qq: np.ndarray, vv: np.ndarray, aa: np.ndarray) -> np.ndarray:
            kinematics(other, qq, vv)
            return element_forces(other, qq, vv, aa)

        dq = dq + Minv @ _difference(lambda x: Q(x, vp, act), qp, _Move(nv, pmod))
        dv = dv + Minv @ _difference(lambda x: Q(qp, x, act), vp, _Move(nv))
        if nact:
            dact = Minv @ _difference(lambda x: Q(qp, vp, x), act, _Move(nact))
    p = permutation(pm)
    return Derivatives(ddq[p], dq[np.ix_(p, p)], dv[np.ix_(p, p)], Minv[np.ix_(p, p)], dact[p], dfext[p])


def block_errors(gen: Derivatives, ref: Derivatives) -> dict[str, float]:
    """Each non-empty block's scaled error: max |gen − ref| / max(1, max |ref|)."""
    return {k: scaled_error(np.asarray(g), np.asarray(r)) for k, g, r in zip(BLOCKS, gen, ref) if np.size(r)}


def derivs_vs_generated(dyn: Dynamics, trials: int = 50, seed: int = 0) -> tuple[Check, dict[str, float]]:
    """Pinocchio's derivatives against the generated fwd_dyn_derivs on `trials` seeded random states: the check
    (the worst block at the worst state) and each block's worst error."""
    model = dyn.model
    if reason := why_not(model):
        raise ValueError(reason)
    pm = pin_model(model)
    worst: dict[str, float] = {}
    at, top = -1, -1.0
    for k, s in enumerate(tqdm(states(model, trials, seed), total=trials, desc=f"derivatives of {model.name}",
                               unit="state", leave=False, disable=None)):
        act = s.act if dyn.nact else None
        e = block_errors(dyn.derivatives(s.q, s.qd, s.tau, s.fext, act), pinocchio_derivatives(pm, s))
        for name, x in e.items():
            worst[name] = max(worst.get(name, 0.0), x)
        if max(e.values()) > top:
            top, at = max(e.values()), k
    per = ", ".join(f"{k} {v:.1e}" for k, v in worst.items())
    c = Check("derivs_vs_pinocchio", top, GATE,
              f"{trials} random states, max scaled |generated - computeABADerivatives| over the blocks "
              f"({per}; worst at trial {at})")
    return (c if c.passed else replace(c, note=NOTE)), worst
