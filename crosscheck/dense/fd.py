"""Forward dynamics by CRBA + RNEA and a generic dense solve of H qdd = tau − C + τ_rsda."""
from __future__ import annotations

import numpy as np
import scipy.linalg

from mechdyn.core.kinematics import Kinematics, forward_kinematics
from mechdyn.core.model import Model

from .common import require_expanded
from .crba import mass_matrix
from .elements import rsda_torque, tsda_forces
from .rnea import bias_force


def forward_crba(model: Model, q: np.ndarray, qd: np.ndarray, tau: np.ndarray,
                 fext: np.ndarray | None = None, act: np.ndarray | None = None,
                 H: np.ndarray | None = None, kin: Kinematics | None = None) -> np.ndarray:
    """Forward dynamics qdd = H⁻¹ (tau − C + τ_rsda), TSDA forces folded into C; H is mass_matrix(model, q) and
    kin forward_kinematics(model, q, qd), formed here unless the caller (loops.forward, which uses them again)
    passes them."""
    require_expanded(model)
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    kin = forward_kinematics(model, q, qd) if kin is None else kin
    C = bias_force(model, q, qd, fext, tsda_forces(model, kin, act), kin)
    H = mass_matrix(model, q) if H is None else H
    return scipy.linalg.solve(H, np.asarray(tau, dtype=float) - C + rsda_torque(model, q, qd, act))
