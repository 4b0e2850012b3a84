"""The external suite's robots: every URDF that the PyPI package example-robot-data ships, found on disk.

These are files nobody here wrote; Pinocchio parses each one itself (crosscheck.pinocchio.build_from_file), so the
check through them holds the importer, the generator and the convention maps against an engine that shares none
of them. Mimic joints are imported as independent joints, as Pinocchio's buildModelFromUrdf does by default.
"""
from __future__ import annotations

import importlib.metadata
from functools import cache
from pathlib import Path

from mechdyn.core.model import Model
from mechdyn.imports import import_model

BASES = ("fixed", "floating")


@cache
def robots_dir() -> Path | None:
    """example-robot-data's robots/ folder, or None when the package is not installed."""
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(str(dist.locate_file("cmeel.prefix/share/example-robot-data/robots")))
    return path if path.is_dir() else None


def urdfs() -> list[str]:
    """Every URDF of the package, relative to robots_dir(), sorted ([] without the package)."""
    root = robots_dir()
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.urdf")) if root else []


def label(rel: str, base: str) -> str:
    """A short name for the gate history: the package folder without '_description', the file's stem, and the
    base ('panda/panda', 'go2/go2+floating')."""
    parts = Path(rel).parts
    folder = parts[0].removesuffix("_description").removesuffix("_data")
    return f"{folder}/{Path(rel).stem}" + ("+floating" if base == "floating" else "")


def load(rel: str, base: str) -> Model:
    """The imported model of one robot file on a fixed or floating base (a MechError when it is refused)."""
    return import_model(robots_dir() / rel, floating=base == "floating", mimic="free")
