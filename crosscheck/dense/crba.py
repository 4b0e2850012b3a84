"""Composite-rigid-body algorithm (RBDA §6.2): the joint-space inertia matrix H."""
from __future__ import annotations

import numpy as np

from mechdyn.core.model import BASE, Model

from .common import body_inertias, joint_transforms, require_expanded


def _T(A: np.ndarray) -> np.ndarray:
    """Each matrix of a stack, transposed."""
    return np.transpose(A, (0, 2, 1))


def mass_matrix(model: Model, q: np.ndarray) -> np.ndarray:
    """H(q) by composite rigid bodies, (nv, nv) symmetric positive definite.

    The walk from each body i to the base (F = Ic_i S_i, then F ← Xup_jᵀ F and
    H_ij = Fᵀ S_j at each j on the way) takes its steps for all bodies at once,
    batched by joint width so that every F and S_j in a batch has one shape.
    """
    require_expanded(model)
    nb = model.nbody
    Xup, S = joint_transforms(model, q)
    IC = body_inertias(model)
    for i in reversed(range(nb)):
        p = model.bodies[i].parent
        if p != BASE:
            IC[p] += Xup[i].T @ IC[i] @ Xup[i]
    nv = np.array([b.nv for b in model.bodies])
    vidx = np.array(model.vidx[:nb])
    parent = np.array([b.parent for b in model.bodies])
    H = np.zeros((model.nv, model.nv))
    for w in np.unique(nv):
        i = np.flatnonzero(nv == w)
        Si = np.array([S[n] for n in i])
        F = IC[i] @ Si
        rows = vidx[i, None, None] + np.arange(w)[:, None]
        H[rows, _T(rows)] = _T(Si) @ F
        j = i
        while (up := parent[j] != BASE).any():
            i, F, j = i[up], _T(Xup[j[up]]) @ F[up], parent[j[up]]
            for wj in np.unique(nv[j]):
                m = nv[j] == wj
                Hij = _T(F[m]) @ np.array([S[n] for n in j[m]])
                rows = vidx[i[m], None, None] + np.arange(w)[:, None]
                cols = vidx[j[m], None, None] + np.arange(wj)[None, :]
                H[rows, cols] = Hij
                H[cols, rows] = Hij
    return H
