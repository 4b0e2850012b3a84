"""Drivers in the dense reference: rheonomic constraint rows, one per driver, appended to the loops' rows.

A driver prescribes its coordinate's acceleration, e_dᵀ qdd = a_d (a_d read from its act slot, as the
generated code reads it), and exerts an unknown generalized force R_d on that coordinate:

    H qdd + C = tau + Q + Kᵀλ + Eᵀ R          K qdd = k,   E qdd = a

with E (ndriver, nv) selecting the driven velocity slots and λ the loops' multiplier as loops.forward has it
(a force on the system: qdd = qdd0 + H⁻¹Kᵀλ). With G = [K; E] and ν = [λ; R] the KKT system

    [H  −Gᵀ] [qdd]   [tau − C + Q]
    [G   0 ] [ ν ] = [   k ; a   ]

is solved densely, so R comes out directly as the force ON each driven coordinate. This is not the generator's
formulation (mechdyn/codegen/driven.py moves the driven columns to the right-hand side and solves the free
partition); docs/generator.md, "With drivers".
"""
from __future__ import annotations

import numpy as np
import scipy.linalg

from mechdyn.core.kinematics import forward_kinematics
from mechdyn.core.model import Model

from .common import check_vector, require_expanded
from .crba import mass_matrix
from .elements import rsda_torque, tsda_forces
from .loops import forward, loop_system
from .rnea import bias_force


def driver_rows(model: Model) -> np.ndarray:
    """E (ndriver, nv): row d picks driver d's velocity slot."""
    E = np.zeros((len(model.drivers), model.nv))
    for d, drv in enumerate(model.drivers):
        E[d, model.vidx[drv.body]] = 1.0
    return E


def forward_driven(model: Model, q, qd, tau, fext=None, act=None) -> tuple[np.ndarray, np.ndarray]:
    """qdd (nv,) and the drivers' reactions R (ndriver,), the generalized force each driver exerts on its
    coordinate, from the KKT system of the module docstring; a = act at the drivers' slots."""
    require_expanded(model)
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    act = check_vector("act", act, (model.nact,))
    kin = forward_kinematics(model, q, qd)
    H = mass_matrix(model, q)
    rhs = (np.asarray(tau, dtype=float) - bias_force(model, q, qd, fext, tsda_forces(model, kin, act), kin)
           + rsda_torque(model, q, qd, act))
    K, k, _ = loop_system(model, q, qd, kin) if model.loops else (np.zeros((0, model.nv)), np.zeros(0), None)
    G = np.vstack([K, driver_rows(model)])
    g = np.concatenate([k, [act[d.act] for d in model.drivers]])
    nv, m = model.nv, G.shape[0]
    A = np.block([[H, -G.T], [G, np.zeros((m, m))]])
    x = scipy.linalg.solve(A, np.concatenate([rhs, g]))
    return x[:nv], x[nv + len(k):]


def forward_model(model: Model, q, qd, tau, fext=None, act=None) -> np.ndarray:
    """qdd of the model as written: forward_driven's with drivers, else the loops' forward (loops.py)."""
    if model.drivers:
        return forward_driven(model, q, qd, tau, fext, act)[0]
    return forward(model, q, qd, tau, fext, act)
