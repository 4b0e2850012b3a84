"""Shared fixtures: the model set is discovered from models/, never listed by hand."""
from pathlib import Path

MODELS_DIR = Path(__file__).resolve().parents[1] / "models"
MODELS = sorted(p.stem for p in MODELS_DIR.glob("*.mech"))
