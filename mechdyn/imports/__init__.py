"""Models from other formats: URDF (urdf.py) and MJCF (mjcf.py), read into a tree of parts (tree.py) and written
as `.mech` text, which the ordinary parser loads (docs/import.md)."""
from __future__ import annotations

import os
from pathlib import Path

from mechdyn.core.model import Model

SUFFIXES = {".urdf": "URDF", ".xml": "MJCF", ".mjcf": "MJCF"}


def is_foreign(path: str | Path) -> bool:
    """Whether `path` names a file an importer reads (by its suffix)."""
    return Path(path).suffix.lower() in SUFFIXES


def import_text(path: str | Path, floating: bool = False, mimic: str = "refuse") -> tuple[Model, str]:
    """The model of a URDF or MJCF file and the `.mech` text it was parsed from. `floating`: a free joint at a
    URDF's root link (an MJCF file says where its free joints are); `mimic`: "refuse" a URDF mimic joint, or
    import it as an independent joint ("free")."""
    from . import tree

    path = str(path)
    if SUFFIXES.get(Path(path).suffix.lower()) == "URDF":
        from . import urdf

        return tree.load(urdf.read(path, floating, mimic), Path(path).stem)
    from . import mjcf

    return tree.load(mjcf.read(path), Path(path).stem)


def import_model(path: str | Path, floating: bool = False, mimic: str = "refuse") -> Model:
    """The model of a URDF or MJCF file (import_text without the text)."""
    return import_text(path, floating, mimic)[0]


def load_model(spec: str | os.PathLike[str], floating: bool = False, mimic: str = "refuse") -> Model:
    """A model by name in models/, or from a `.mech`, URDF or MJCF file (`floating` and `mimic` as import_text)."""
    from mechdyn.core.parse import load_model as load_mech

    return import_model(spec, floating, mimic) if is_foreign(spec) and Path(spec).is_file() else load_mech(spec)
