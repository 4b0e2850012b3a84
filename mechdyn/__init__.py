"""mechdyn: specialized multibody forward dynamics with a verification harness."""
from mechdyn.dynamics import Dynamics, load

__all__ = ["Dynamics", "load"]
