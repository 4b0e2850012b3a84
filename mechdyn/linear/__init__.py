"""Linearization, static equilibrium and modes from the generated derivatives (docs/derivatives.md)."""
from .equilibrium import EquilibriumError, close_loops, equilibrium
from .linearization import Linear, held_slots, kinematic_block, linearize, tangent_basis
from .modes import Modes, coordinate_names, modes

__all__ = ["EquilibriumError", "Linear", "Modes", "close_loops", "coordinate_names", "equilibrium", "held_slots", "kinematic_block",
           "linearize", "modes", "tangent_basis"]
