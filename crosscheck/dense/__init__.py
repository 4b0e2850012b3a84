"""The dense 6×6 reference dynamics, straight from RBDA: the independent check on the code generator.

Uses mechdyn.core (model, spatial algebra, kinematics) and nothing from mechdyn.codegen.
Tree models only: loop closures and tracks raise NotImplementedError.
"""
from .aba import AbaFactor, aba_factor, aba_solve, forward_aba
from .common import require_tree
from .crba import mass_matrix
from .elements import rsda_torque, tsda_forces, tsda_state
from .fd import forward_crba
from .rnea import bias_force

__all__ = [
    "AbaFactor",
    "aba_factor",
    "aba_solve",
    "bias_force",
    "forward_aba",
    "forward_crba",
    "mass_matrix",
    "require_tree",
    "rsda_torque",
    "tsda_forces",
    "tsda_state",
]
