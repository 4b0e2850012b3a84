"""The immutable mechanism model and its `.mech` parser."""
from .model import BASE, Model
from .parse import MechError, ModelNotFound, load_model, parse

__all__ = ["BASE", "MechError", "Model", "ModelNotFound", "load_model", "parse"]
