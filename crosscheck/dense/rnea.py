"""Recursive Newton–Euler algorithm (RBDA §5.3) with qdd = 0: the bias force C."""
from __future__ import annotations

import numpy as np

from mechdyn.core.kinematics import Kinematics, forward_kinematics
from mechdyn.core.model import BASE, Model
from mechdyn.core.spatial import crf, crm, jcalc

from .common import applied_forces, body_inertias, gravity_accel, require_expanded


def bias_force(model: Model, q: np.ndarray, qd: np.ndarray, fext: np.ndarray | None = None,
               f_elem: np.ndarray | None = None, kin: Kinematics | None = None) -> np.ndarray:
    """C(q, qd, fext, f_elem): velocity products, gravity and applied base-coordinate forces, so H qdd + C = tau.

    kin is forward_kinematics(model, q, qd), computed here unless the caller already has it.
    """
    require_expanded(model)
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    kin = forward_kinematics(model, q, qd) if kin is None else kin
    I = body_inertias(model)
    fx = applied_forces(model, kin, fext, f_elem)
    a0 = gravity_accel(model)
    nb = model.nbody
    S, a, f = [None] * nb, np.zeros((nb, 6)), np.zeros((nb, 6))
    for i, b in enumerate(model.bodies):
        S[i] = jcalc(b, q[model.qidx[i] : model.qidx[i] + b.nq])[1]
        vJ = S[i] @ qd[model.vidx[i] : model.vidx[i] + b.nv]
        ap = a0 if b.parent == BASE else a[b.parent]
        v = kin.v[i]
        a[i] = kin.Xup[i] @ ap + crm(v) @ vJ
        f[i] = I[i] @ a[i] + crf(v) @ I[i] @ v - fx[i]
    C = np.zeros(model.nv)
    for i in reversed(range(nb)):
        b = model.bodies[i]
        C[model.vidx[i] : model.vidx[i] + b.nv] = S[i].T @ f[i]
        if b.parent != BASE:
            f[b.parent] += kin.Xup[i].T @ f[i]
    return C
