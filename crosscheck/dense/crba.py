"""Composite-rigid-body algorithm (RBDA §6.2): the joint-space inertia matrix H."""
from __future__ import annotations

import numpy as np

from mechdyn.core.model import BASE, Model

from .common import body_inertias, joint_transforms, require_expanded


def mass_matrix(model: Model, q: np.ndarray) -> np.ndarray:
    """H(q) by composite rigid bodies, (nv, nv) symmetric positive definite."""
    require_expanded(model)
    nb = model.nbody
    Xup, S = joint_transforms(model, q)
    IC = body_inertias(model)
    for i in reversed(range(nb)):
        p = model.bodies[i].parent
        if p != BASE:
            IC[p] += Xup[i].T @ IC[i] @ Xup[i]
    H = np.zeros((model.nv, model.nv))
    for i, b in enumerate(model.bodies):
        vi = slice(model.vidx[i], model.vidx[i] + b.nv)
        F = IC[i] @ S[i]
        H[vi, vi] = S[i].T @ F
        j = i
        while model.bodies[j].parent != BASE:
            F = Xup[j].T @ F
            j = model.bodies[j].parent
            vj = slice(model.vidx[j], model.vidx[j] + model.bodies[j].nv)
            H[vi, vj] = F.T @ S[j]
            H[vj, vi] = H[vi, vj].T
    return H
