"""The immutable mechanism model and its `.mech` parser."""
from .model import BASE, Model
from .parse import MechError, MechWarning, ModelNotFound, load_model, parse

__all__ = ["BASE", "MechError", "MechWarning", "Model", "ModelNotFound", "load_model", "parse"]
