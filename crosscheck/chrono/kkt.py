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
here from the link's own definition C = |p1 − p2| − L. DoAssembly is not used:
it finite-differences a small step (about 1e-5 accurate) and drops the
centripetal terms.

The solution a holds each body's COM acceleration (base coordinates) and
angular acceleration (body coordinates); `Mapping.qdd_from_chrono` turns it
into the project's qdd.
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


def scatter_accelerations(cm: ChronoModel) -> None:
    """Solve the KKT system at Chrono's current state and hand its accelerations and reactions to the system, as
    an implicit stepper reads them for its first step (Chrono's reactions L are −λ: its residual is
    F + Cqᵀ L − M a)."""
    ch, system = cm.chrono, cm.system
    k = assemble(cm)
    n = k.M.shape[0]
    x = solve(k, multipliers=True)
    A, L = ch.ChStateDelta(), ch.ChVectorDynamicd()
    A.SetVect(x[:n].tolist())
    L.SetVect((-x[n:]).tolist())
    system.StateScatterAcceleration(A)
    system.StateScatterReactions(L)


def body_accelerations(cm: ChronoModel, a: np.ndarray) -> np.ndarray:
    """(nbody, 6) [COM acceleration, base coords; angular acceleration, body coords] out of the KKT solution."""
    return np.array([a[cb.GetOffset_w() : cb.GetOffset_w() + 6] for cb in cm.bodies]).reshape(-1, 6)


def set_state(cm: ChronoModel, q, qd, tau=None, fext=None, act=None) -> BodyStates:
    """Put Chrono at the project's state with its loads (RSDA torques from the project's q and qd) and update it.

    Returns the body states as Chrono holds them, read back.
    """
    model = cm.model
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    bs = cm.mapping.to_chrono(q, qd)
    apply(cm, bs)
    tau = np.zeros(model.nv) if tau is None else np.asarray(tau, dtype=float)
    set_loads(cm, bs, tau + rsda_torque(model, q, qd, act), fext, act)
    update(cm)
    return read(cm)


def forward(cm: ChronoModel, q, qd, tau=None, fext=None, act=None) -> np.ndarray:
    """qdd at (q, qd, tau, fext, act) computed by Chrono: set the state, solve the KKT system, map back."""
    bs = set_state(cm, q, qd, tau, fext, act)
    acc = body_accelerations(cm, solve(assemble(cm)))
    return cm.mapping.qdd_from_chrono(bs, acc)
