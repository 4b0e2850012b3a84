"""A trajectory and its sensitivities to the declared parameters, and their identification by Gauss–Newton
(docs/params.md "Trajectory sensitivities and identification").

The stepper is symplectic Euler on the joints' group, v ← v + h qdd(q, v); q ← q ∘ exp(h v) (the generated
fwd_dyn_drift), and the sensitivities are its exact derivatives (discrete forward sensitivities): with
S = ∂(q, v)/∂p on the tangent,

    Sv ← Sv + h (dq Sq + dqd Sv + dparam),     Sq ← Jq Sq + Jv Sv,

dq, dqd and dparam from the generated derivatives, Jq and Jv the drift's own derivatives (the identity and h for
a one-DOF joint; for a floating body, its rotation's and its midpoint position's, below). So they agree with
differences of whole runs of this same stepper to the differences' own error, whatever the step. A driven
model's drivers follow their motions (act = f''), which no parameter moves.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mechdyn.core.spatial import quat_to_R

Feedback = Callable[[float, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class SensitivityRun:
    """A run's states at t (n + 1,), q (n + 1, nq), qd (n + 1, nv), and their sensitivities to the parameter
    vector, Sq and Sv (n + 1, nv, nparam): Sq on the tangent (a floating body's δφ, δp in its own axes)."""
    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    Sq: np.ndarray
    Sv: np.ndarray


def _skew(w: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def _exp(w: np.ndarray) -> np.ndarray:
    """The rotation exp([w]×) (Rodrigues)."""
    th = float(np.linalg.norm(w))
    K = _skew(w)
    if th < 1e-8:
        return np.eye(3) + K + 0.5 * K @ K
    return np.eye(3) + np.sin(th) / th * K + (1 - np.cos(th)) / th**2 * K @ K


def _right_jacobian(w: np.ndarray) -> np.ndarray:
    """SO(3)'s right Jacobian: exp([w + δ]×) = exp([w]×) exp([J_r(w) δ]×) to first order."""
    th = float(np.linalg.norm(w))
    K = _skew(w)
    if th < 1e-6:
        return np.eye(3) - 0.5 * K + K @ K / 6.0
    return np.eye(3) - (1 - np.cos(th)) / th**2 * K + (th - np.sin(th)) / th**3 * K @ K


def drift_jacobians(dyn, v: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray]:
    """Jq, Jv (nv × nv): the tangent derivatives of q ∘ exp(h v) (fwd_dyn_drift) in q and in v. A floating body
    (Q ← Q ⊗ exp(hω), r ← r + R(Q ⊗ exp(hω/2)) v h), with Re = exp(hω), Rh = exp(hω/2):
    δφ' = Reᵀ δφ + h J_r(hω) δω;  δp' = Reᵀ δp + h Rhᵀ (δv − [v]× (Rhᵀ δφ + (h/2) J_r(hω/2) δω))."""
    nv = dyn.nv
    Jq, Jv = np.eye(nv), h * np.eye(nv)
    for b, i in zip(dyn.model.bodies, dyn.model.vidx):
        if b.joint != "floating":
            continue
        w, lin = v[i:i + 3], v[i + 3:i + 6]
        Re, Rh = _exp(h * w), _exp(0.5 * h * w)
        th = Rh.T  # δθ = Rhᵀ δφ + (h/2) J_r(hω/2) δω: the midpoint rotation's perturbation
        Vx = _skew(lin)
        Jq[i:i + 3, i:i + 3] = Re.T
        Jq[i + 3:i + 6, i:i + 3] = -h * Rh.T @ Vx @ th
        Jq[i + 3:i + 6, i + 3:i + 6] = Re.T
        Jv[i:i + 3, i:i + 3] = h * _right_jacobian(h * w)
        Jv[i + 3:i + 6, i:i + 3] = -h * Rh.T @ Vx @ (0.5 * h * _right_jacobian(0.5 * h * w))
        Jv[i + 3:i + 6, i + 3:i + 6] = h * Rh.T
    return Jq, Jv


def local(dyn, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
    """ξ on the tangent at q0 with q1 = q0 ∘ exp(ξ): q1 − q0 for a one-DOF joint; a floating body's rotation
    log(R0ᵀ R1) and its position R0ᵀ (r1 − r0). Central differences of whole runs read through it."""
    out = np.empty(dyn.nv)
    for b, iq, iv in zip(dyn.model.bodies, dyn.model.qidx, dyn.model.vidx):
        if b.joint != "floating":
            out[iv] = q1[iq] - q0[iq]
            continue
        R0, R1 = quat_to_R(q0[iq:iq + 4]), quat_to_R(q1[iq:iq + 4])
        R = R0.T @ R1
        th = np.arccos(np.clip((np.trace(R) - 1) / 2, -1.0, 1.0))
        axis = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
        out[iv:iv + 3] = 0.5 * axis if th < 1e-8 else th / (2 * np.sin(th)) * axis
        out[iv + 3:iv + 6] = R0.T @ (q1[iq + 4:iq + 7] - q0[iq + 4:iq + 7])
    return out


def simulate(dyn, q0, qd0, T: float, dt: float, tau=None, feedback: Feedback | None = None) -> SensitivityRun:
    """n = round(T / dt) steps of symplectic Euler from (q0, qd0) with the parameters' sensitivities (zero at
    the start). tau: constant (nv,) or None; `feedback(t, q, qd)` -> (tau, ∂tau/∂q on the tangent, ∂tau/∂qd): a
    control law added to it, differentiated with the rest."""
    if not len(dyn.params):
        raise ValueError(f"model '{dyn.model.name}' declares no parameters: nothing to be sensitive to")
    n, nv, npar = int(round(T / dt)), dyn.nv, dyn.params.values.size
    tau0 = np.zeros(nv) if tau is None else np.asarray(tau, dtype=float)
    slots = [dyn.find("act", d.name) for d in dyn.model.drivers]
    q, v = np.array(q0, dtype=float), np.array(qd0, dtype=float)
    Sq, Sv = np.zeros((nv, npar)), np.zeros((nv, npar))
    t = np.arange(n + 1) * dt
    Q, V = np.empty((n + 1, dyn.nq)), np.empty((n + 1, nv))
    SQ, SV = np.empty((n + 1, nv, npar)), np.empty((n + 1, nv, npar))
    Q[0], V[0], SQ[0], SV[0] = q, v, Sq, Sv
    act = np.zeros(dyn.nact)
    for k in range(n):
        if slots:
            act[slots] = dyn.drive(t[k])[2]
        u = tau0
        if feedback is not None:
            f, Dq, Dv = feedback(t[k], q, v)
            u = tau0 + f
        d = dyn.derivatives(q, v, u, None, act if dyn.nact else None)
        _, dparam = dyn.param_derivatives(q, v, u, None, act if dyn.nact else None)
        A_q, A_v = (d.dq, d.dqd) if feedback is None else (d.dq + d.dtau @ Dq, d.dqd + d.dtau @ Dv)
        Sv = Sv + dt * (A_q @ Sq + A_v @ Sv + dparam)
        v = v + dt * d.qdd
        Jq, Jv = drift_jacobians(dyn, v, dt)
        Sq = Jq @ Sq + Jv @ Sv
        q = dyn.drift(q, v, dt)
        Q[k + 1], V[k + 1], SQ[k + 1], SV[k + 1] = q, v, Sq, Sv
    return SensitivityRun(t, Q, V, SQ, SV)


@dataclass(frozen=True)
class Fit:
    """A Gauss–Newton fit: the estimate, its Cramér–Rao covariance σ² (JᵀJ)⁻¹ at the estimate, the iterations,
    and each iteration's cost (the sum of squared residuals)."""
    p: np.ndarray
    covariance: np.ndarray
    iterations: int
    costs: list[float]

    @property
    def sigma(self) -> np.ndarray:
        """Each parameter's Cramér–Rao standard deviation."""
        return np.sqrt(np.diag(self.covariance))


def identify(dyn, run: Callable[[], SensitivityRun], measure: list[int], data: np.ndarray, noise: float,
             max_iter: int = 30, tol: float = 1e-10) -> Fit:
    """Fit dyn's parameters (from their present values) to `data` (n + 1, len(measure)): the coordinates
    `measure` (velocity slots of one-DOF joints, whose q is their tangent) of the run `run()` makes at dyn's
    present values, by Gauss–Newton on the sensitivities (the columns scaled to unit norm), halving a step that
    does not lower the cost; stops when a step lowers it by no more than tol of itself. `noise`: the
    measurements' standard deviation, for the Cramér–Rao covariance."""
    qslot = {iv: iq for b, iq, iv in zip(dyn.model.bodies, dyn.model.qidx, dyn.model.vidx) if b.joint != "floating"}
    if any(m not in qslot for m in measure):
        raise ValueError("identify measures one-DOF joints' coordinates only (a floating body's are on a group)")
    qs = [qslot[m] for m in measure]

    def residual_and_jacobian() -> tuple[np.ndarray, np.ndarray]:
        r = run()
        res, J = (data - r.q[:, qs]).ravel(), r.Sq[:, measure, :].reshape(-1, r.Sq.shape[2])
        if not (np.all(np.isfinite(res)) and np.all(np.isfinite(J))):
            raise ValueError("the run went non-finite")
        return res, J

    p = dyn.params.values
    res, J = residual_and_jacobian()
    costs = [float(res @ res)]
    it = 0
    for it in range(1, max_iter + 1):
        scale = 1.0 / np.maximum(np.linalg.norm(J, axis=0), 1e-300)  # columns to unit norm: units drop out
        step = np.linalg.lstsq(J * scale, res, rcond=None)[0] * scale
        for _ in range(30):
            try:
                dyn.params.values = p + step
                r2, J2 = residual_and_jacobian()
            except ValueError:  # out of a parameter's bounds, or the run went non-finite: a shorter step
                step *= 0.5
                continue
            if r2 @ r2 <= costs[-1]:
                break
            step *= 0.5
        else:
            dyn.params.values = p
            break
        p, res, J = p + step, r2, J2
        costs.append(float(res @ res))
        if costs[-2] - costs[-1] <= tol * costs[-1]:
            break
    dyn.params.values = p
    scale = 1.0 / np.maximum(np.linalg.norm(J, axis=0), 1e-300)
    _, sv, vt = np.linalg.svd(J * scale, full_matrices=False)
    if not sv[-1] > IDENTIFIABLE * sv[0]:
        v = vt[-1] * scale
        v /= np.max(np.abs(v))
        weakest = " ".join(f"{x:+.3g} {n}" for x, n in sorted(zip(v, dyn.params.labels), key=lambda a: -abs(a[0]))
                           if abs(x) >= 0.05)
        raise ValueError(f"the parameters are not identifiable from these measurements (the scaled sensitivities' "
                         f"condition number {sv[0] / sv[-1]:.3g}): the data cannot tell apart a change along "
                         f"{weakest}; measure more, excite more, or declare fewer")
    return Fit(p, noise**2 * np.linalg.inv(J.T @ J), it, costs)


IDENTIFIABLE = 1e-8  # the least singular value of the scaled sensitivities, relative to the largest, for a fit
