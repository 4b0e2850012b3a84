"""Planted bugs for tests/linear: a Linear rebuilt with a wrong block, as a buggy linearize would return it."""
from __future__ import annotations

import dataclasses

import numpy as np

from mechdyn.linear import Linear


def rebuilt(lin: Linear, M: np.ndarray | None = None, C: np.ndarray | None = None,
            K: np.ndarray | None = None) -> Linear:
    """lin with M, C and/or K replaced and Ar's dynamic rows recomputed from them, [-M⁻¹K, -M⁻¹C]."""
    M = lin.M if M is None else M
    C = lin.C if C is None else C
    K = lin.K if K is None else K
    m = M.shape[0]
    Ar = lin.Ar.copy()
    Ar[m:, :m], Ar[m:, m:] = -np.linalg.solve(M, K), -np.linalg.solve(M, C)
    return dataclasses.replace(lin, M=M, C=C, K=K, Ar=Ar)
