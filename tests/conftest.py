"""Shared fixtures: the model set is discovered from models/, never listed by hand."""
from pathlib import Path

MODELS_DIR = Path(__file__).resolve().parents[1] / "models"
MODELS = sorted(p.stem for p in MODELS_DIR.glob("*.mech"))


def critical_path(name: str) -> int:
    """The latency-weighted longest path through the model's fwd_dyn as emitted (its frames slid), in cycles
    after the sincos batch."""
    from mechdyn.codegen import frames, schedule
    from mechdyn.codegen.generate import dynamics_builder
    from mechdyn.core.parse import load_model

    model = load_model(name)
    stmts = dynamics_builder(frames.slide(model, frames.shifts(model))).live()
    return max(schedule.heights(stmts, schedule.readers(stmts)))
