"""Test models of tests/linear built from the repository's: quartercar on a tire spring."""
from __future__ import annotations

import dataclasses as dc
from pathlib import Path

import numpy as np

from mechdyn.core.model import BASE, Model
from mechdyn.core.parse import parse

ROOT = Path(__file__).resolve().parents[2]
TIRE_K = 350e3  # N/m: a tire spring under the post (the model's tire is a rigid rod, its post free)


def design_origin(model: Model, body: int) -> np.ndarray:
    """A body frame's origin at the design pose (q = 0: every frame parallel to the base's)."""
    p = np.zeros(3)
    while body != BASE:
        p, body = p + model.bodies[body].xtree, model.bodies[body].parent
    return p


def quartercar_with_tire() -> Model:
    """quartercar with a vertical tire spring from the ground 1 m under the post to the post top, so the post and
    wheel end are an unsprung mass on it (nothing held, the post's driver taken off): its l0 makes it carry the
    whole weight at q0."""
    text = (ROOT / "models/quartercar.mech").read_text()
    base = parse(text, name="quartercar")
    weight = -sum(b.mass for b in base.bodies) * base.gravity[2]
    top = design_origin(base, base.body_index("post"))
    text += (f"\npoi tire_ground base {top[0]:.9g} {top[1]:.9g} {top[2] - 1:.9g}\npoi post_top post 0 0 0\n"
             f"tsda tire_spring\n  between tire_ground post_top\n  k {TIRE_K:g}\n  l0 {1 + weight / TIRE_K:.9g}\nend\n")
    return dc.replace(parse(text, name="quartercar_tire"), drivers=())
