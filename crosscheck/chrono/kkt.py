"""Accelerations from Chrono, exactly: the acceleration-level KKT system assembled from Chrono's own terms.

    [ M   Cqᵀ ] [ a ]   [ F  ]
    [ Cq  0   ] [ λ ] = [ Qc ]

M is Chrono's mass matrix (column by column through `LoadResidual_Mv`), F its
applied forces (`LoadResidual_F`: gravity, the gyroscopic torque, TSDA forces,
the accumulators carrying tau, RSDA and fext), Cq its constraint Jacobian (row
by row through `LoadResidual_CqL`), and Qc the velocity-product terms
−(d/dt Cq)·v that make Cq a + Cq_dot v = 0. The lock links compute Qc
analytically (`ConstraintsBiLoad_Qc`, read back through the system
descriptor); `ChLinkDistance` leaves it unimplemented, so its term is written
here from the link's own definition C = |p1 − p2| − L. So do the motors of the
drivers (`ChLinkMateGeneric`s, which leave it unimplemented too): their terms
are written here from their rows' definitions (`motor_qc`), with the rheonomic
term f''(t) of the motor's function at the system's time, which Chrono's own
steppers never need (they impose the motor at velocity level, with C and
Ct = −f'). DoAssembly is not used: it finite-differences a small step (about
1e-5 accurate) and drops the centripetal terms.

The solution a holds each body's COM acceleration (base coordinates) and
angular acceleration (body coordinates); `Mapping.qdd_from_chrono` turns it
into the project's qdd. Its multipliers, handed back to Chrono
(`scatter_accelerations`), give each motor's reaction as Chrono reports it
(`react`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse
import scipy.sparse.linalg

from crosscheck.dense.elements import rsda_torque
from mechdyn.core.model import Loop

from .build import ChronoModel, apply, read, set_loads, update
from .mapping import BodyStates


@dataclass(frozen=True)
class Kkt:
    M: np.ndarray  # (n, n)
    F: np.ndarray  # (n,)
    Cq: np.ndarray  # (m, n)
    Qc: np.ndarray  # (m,)


def _vector(ch, n: int):
    v = ch.ChVectorDynamicd(n)
    v.SetZero()
    return v


def _data(v, n: int) -> np.ndarray:
    return np.array(v.GetVectorData(n)) if n else np.zeros(0)


def distance_qc(cm: ChronoModel, lp: Loop, link) -> float:
    """−(d/dt Cq)·v of a ChLinkDistance, from C = |p1 − p2| − L with p1, p2 its two end points.

    C̈ = n·(p̈1 − p̈2) + (|ṙ|² − (n·ṙ)²)/l for r = p1 − p2, n = r/l; the velocity
    product is that second term plus n·(ω1×(ω1×s1) − ω2×(ω2×s2)), s the end
    point's offset from its body's COM.
    """
    def end(body, p_abs):
        if body.IsFixed():
            return np.zeros(3), np.zeros(3)
        w = body.GetAngVelParent().to_numpy()
        s = p_abs - body.GetPos().to_numpy()
        v = body.GetPosDt().to_numpy() + np.cross(w, s)
        return v, np.cross(w, np.cross(w, s))

    p1, p2 = link.GetEndPoint1Abs().to_numpy(), link.GetEndPoint2Abs().to_numpy()
    b1, b2 = cm.body(lp.succ), cm.body(lp.pred)  # built as Initialize(successor, predecessor, ...)
    v1, c1 = end(b1, p1)
    v2, c2 = end(b2, p2)
    r, rd = p1 - p2, v1 - v2
    l = np.linalg.norm(r)
    n = r / l
    return -float(n @ (c1 - c2) + (rd @ rd - (n @ rd) ** 2) / l)


def _point(body, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ω (base coords), the velocity and the centripetal acceleration ω×(ω×s) of the point p fixed in body."""
    if body.IsFixed():
        return np.zeros(3), np.zeros(3), np.zeros(3)
    w = body.GetAngVelParent().to_numpy()
    s = p - body.GetPos().to_numpy()
    return w, body.GetPosDt().to_numpy() + np.cross(w, s), np.cross(w, np.cross(w, s))


def motor_qc(cm: ChronoModel, k: int, t: float) -> np.ndarray:
    """(6,) the Qc of driver k's motor rows (x, y, z, rx, ry, rz of frame 2) at time t: −(d/dt Cq)·v, plus the
    motor's rheonomic term, at a state where its guide holds (the relative rotation is the motor's own).

    A translation row is C = e·(p1 − p2), e frame 2's axis (turning with body 2) and p1, p2 the frames'
    origins: C̈ = (ω2×e)·(ḋ − ω2×d) + e·(p̈1 − p̈2 − ω̇2×d − ω2×ḋ) for d = p1 − p2, whose velocity product is
    everything but the accelerations in p̈ = a_com + α×s + ω×(ω×s) and in ω̇2. A rotation row is the vector part
    of q_s = q2* ⊗ q1 ⊗ qz(−θ) (θ = 0 for the linear motor, θ = offset + f(t) for the rotation motor): where
    it vanishes, q_s = ±1 and C̈ = ±½ [R2ᵀ(α1 − α2) − R2ᵀ(ω2 × (ω1 − ω2)) − θ̈ e_z], the sign q_s's (Chrono's
    Jacobian carries it too). The linear motor's z row is C = z − f(t) − offset, so its term is +f''(t); the
    rotation motor's rz row takes ±½ f''(t).
    """
    model = cm.model
    d = model.drivers[k]
    link = cm.motors[k]
    F1, F2 = link.GetFrame1Abs(), link.GetFrame2Abs()
    p1, p2 = F1.GetPos().to_numpy(), F2.GetPos().to_numpy()
    R2 = np.array(F2.GetRotMat().GetMatr())
    w1, v1, c1 = _point(cm.bodies[d.body], p1)
    w2, v2, c2 = _point(cm.body(model.bodies[d.body].parent), p2)
    r, rd = p1 - p2, v1 - v2
    qc = np.zeros(6)
    for j in range(3):
        e = R2[:, j]
        qc[j] = -(np.cross(w2, e) @ (rd - np.cross(w2, r)) + e @ (c1 - c2 - np.cross(w2, rd)))
    sign = motor_sign(cm, k, t)
    qc[3:] = sign * 0.5 * R2.T @ np.cross(w2, w1 - w2)
    if model.bodies[d.body].joint == "revolute":
        qc[5] += sign * 0.5 * cm.functions[k].GetDer2(t)
    else:
        qc[2] += cm.functions[k].GetDer2(t)
    return qc


def motor_sign(cm: ChronoModel, k: int, t: float) -> float:
    """±1: the scalar part's sign of driver k's motor's rotation residual q_s = q2* ⊗ q1 ⊗ qz(−θ) at time t
    (θ = 0 for a linear motor), ±1 where the motor holds. q and −q are one rotation; Chrono's rotation rows
    (their Jacobian ½ e0 …) carry the sign, so their Qc does too."""
    link = cm.motors[k]
    theta = (cm.functions[k].GetVal(t) + link.GetAngleOffset()
             if cm.model.bodies[cm.model.drivers[k].body].joint == "revolute" else 0.0)
    shadow = _qmul(_qmul(_quat(link.GetFrame2Abs().GetRot()) * [1, -1, -1, -1], _quat(link.GetFrame1Abs().GetRot())),
                   [np.cos(theta / 2), 0.0, 0.0, -np.sin(theta / 2)])
    return 1.0 if shadow[0] >= 0 else -1.0


def _quat(Q) -> np.ndarray:
    return np.array([Q.e0, Q.e1, Q.e2, Q.e3])


def _qmul(a, b) -> np.ndarray:
    """The quaternion product a ⊗ b, [w, x, y, z]."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return np.concatenate([[a[0] * b[0] - a[1:] @ b[1:]], a[0] * b[1:] + b[0] * a[1:] + np.cross(a[1:], b[1:])])


def assemble(cm: ChronoModel) -> Kkt:
    """M, F, Cq and Qc of the Chrono system at its current (updated) state."""
    ch, system = cm.chrono, cm.system
    system.DescriptorPrepareInject()
    system.LoadConstraintJacobians()
    n, m = system.GetNumCoordsVelLevel(), system.GetNumConstraints()
    R = _vector(ch, n)

    def columns(width: int, load) -> np.ndarray:
        """(n, width): Chrono's linear map `load(R, e)` applied to each unit vector e of length width."""
        out, e = np.zeros((n, width)), _vector(ch, width)
        for j in range(width):
            e.SetZero()
            e.SetItem(j, 1.0)
            R.SetZero()
            load(R, e)
            out[:, j] = _data(R, n)
        return out

    M = columns(n, lambda r, e: system.LoadResidual_Mv(r, e, 1.0))
    R.SetZero()
    system.LoadResidual_F(R, 1.0)
    F = _data(R, n)
    Cq = columns(m, lambda r, e: system.LoadResidual_CqL(r, e, 1.0)).T
    system.ConstraintsBiReset()
    system.ConstraintsBiLoad_Qc(1.0)
    b = _vector(ch, m)
    system.GetSystemDescriptor().BuildBiVector(b)
    Qc = _data(b, m)
    for lp, link in zip(cm.model.loops, cm.loop_links):
        if lp.joint == "distance":
            Qc[link.GetOffset_L()] += distance_qc(cm, lp, link)
    t = system.GetChTime()
    for k, link in enumerate(cm.motors):
        Qc[link.GetOffset_L() : link.GetOffset_L() + 6] += motor_qc(cm, k, t)
    return Kkt(M, F, Cq, Qc)


def solve(k: Kkt, multipliers: bool = False) -> np.ndarray:
    """The accelerations a of the KKT system, then with `multipliers` its λ (M a + Cqᵀ λ = F).

    A sparse LU with partial pivoting (SuperLU): the system is mostly zeros, and
    unlike a dense LAPACK solve it does not fan out over BLAS threads, which on
    a shared machine made each 200-unknown solve many times slower.
    """
    n = k.M.shape[0]
    A = scipy.sparse.bmat([[scipy.sparse.csc_matrix(k.M), scipy.sparse.csc_matrix(k.Cq.T)],
                           [scipy.sparse.csc_matrix(k.Cq), None]], format="csc")
    x = scipy.sparse.linalg.splu(A).solve(np.concatenate([k.F, k.Qc]))
    return x if multipliers else x[:n]


def scatter_accelerations(cm: ChronoModel) -> np.ndarray:
    """Solve the KKT system at Chrono's current state and hand its accelerations and reactions to the system, as
    an implicit stepper reads them for its first step (Chrono's reactions L are −λ: its residual is
    F + Cqᵀ L − M a). Returns the accelerations."""
    ch, system = cm.chrono, cm.system
    k = assemble(cm)
    n = k.M.shape[0]
    x = solve(k, multipliers=True)
    A, L = ch.ChStateDelta(), ch.ChVectorDynamicd()
    A.SetVect(x[:n].tolist())
    L.SetVect((-x[n:]).tolist())
    system.StateScatterAcceleration(A)
    system.StateScatterReactions(L)
    return x[:n]


def body_accelerations(cm: ChronoModel, a: np.ndarray) -> np.ndarray:
    """(nbody, 6) [COM acceleration, base coords; angular acceleration, body coords] out of the KKT solution."""
    return np.array([a[cb.GetOffset_w() : cb.GetOffset_w() + 6] for cb in cm.bodies]).reshape(-1, 6)


def set_state(cm: ChronoModel, q, qd, tau=None, fext=None, act=None, t: float = 0.0) -> BodyStates:
    """Put Chrono at the project's state with its loads (RSDA torques from the project's q and qd) at time t (the
    motors' functions are read there) and update it.

    Returns the body states as Chrono holds them, read back.
    """
    model = cm.model
    cm.system.SetChTime(float(t))
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    bs = cm.mapping.to_chrono(q, qd)
    apply(cm, bs)
    tau = np.zeros(model.nv) if tau is None else np.asarray(tau, dtype=float)
    set_loads(cm, bs, tau + rsda_torque(model, q, qd, act), fext, act)
    update(cm)
    return read(cm)


def forward(cm: ChronoModel, q, qd, tau=None, fext=None, act=None, t: float = 0.0) -> np.ndarray:
    """qdd at (q, qd, tau, fext, act) and time t computed by Chrono: set the state, solve the KKT system, map
    back. A driven coordinate's acceleration is its motor's f''(t), not act's slot (which only the project reads)."""
    bs = set_state(cm, q, qd, tau, fext, act, t)
    acc = body_accelerations(cm, solve(assemble(cm)))
    return cm.mapping.qdd_from_chrono(bs, acc)


def react(cm: ChronoModel, q, qd, tau=None, fext=None, act=None, t: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """qdd and the drivers' reactions (ndriver,) at (q, qd, tau, fext, act) and time t, by Chrono: the KKT
    solve's accelerations mapped back, and its multipliers handed to Chrono, whose motors report their reactions
    (`ChronoModel.reactions`)."""
    bs = set_state(cm, q, qd, tau, fext, act, t)
    a = body_accelerations(cm, scatter_accelerations(cm))
    return cm.mapping.qdd_from_chrono(bs, a), cm.reactions()
