"""The dense 6×6 reference dynamics, straight from RBDA: the independent check on the code generator.

Uses mechdyn.core (model, spatial algebra, kinematics) and nothing from mechdyn.codegen.
The tree algorithms (CRBA, RNEA, ABA, forward_crba, forward_aba) work on the
spanning tree; `forward` closes the loops (method 2, loops.py);
`forward_driven` adds the drivers as rheonomic rows (driven.py), and `forward_model`
is the model as written, drivers or not. A loaded model's
track bands are ordinary bodies and a loop (mechdyn/core/tracks.py); a band left
unexpanded (parsed without assembly) raises NotImplementedError.
"""
from .aba import AbaFactor, aba_factor, aba_solve, forward_aba
from .common import require_expanded
from .crba import mass_matrix
from .driven import driver_rows, forward_driven, forward_model
from .elements import rsda_torque, tsda_forces, tsda_state
from .fd import forward_crba
from .loops import forward, loop_system
from .rnea import bias_force

__all__ = [
    "AbaFactor",
    "aba_factor",
    "aba_solve",
    "bias_force",
    "driver_rows",
    "forward_aba",
    "forward_crba",
    "forward_driven",
    "forward_model",
    "mass_matrix",
    "require_expanded",
    "forward",
    "loop_system",
    "rsda_torque",
    "tsda_forces",
    "tsda_state",
]
