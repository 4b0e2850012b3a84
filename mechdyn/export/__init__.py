"""Export a mechanism to other engines' formats: URDF (Pinocchio and most robotics tools) and MJCF (MuJoCo).

    from mechdyn.export import export_urdf, export_mjcf
    ex = export_urdf(model)       # ex.text: the file; ex.omitted: what the format could not express

Every number is written with repr(float), so the file reads back to exactly the
model's masses, CG positions, inertia entries, joint offsets and gravity. What a
format cannot express (loop closures in URDF, some loop types in MJCF, force
elements in URDF) is never silently dropped: it is listed in `omitted`, one line
per item, naming the item, its line in the .mech file and why.

Each module also maps states between mechdyn's conventions (docs/conventions.md)
and the target engine's, since an exported file is only usable with them:
`urdf.to_pinocchio` / `urdf.from_pinocchio_v` and `mjcf.to_mujoco` /
`mjcf.from_mujoco_qacc`.
"""
from __future__ import annotations

from .common import Exported, num, vec
from .mjcf import export_mjcf
from .urdf import export_urdf

__all__ = ["Exported", "export_mjcf", "export_urdf", "num", "vec"]
