"""Every MJCF model dm_control's suite and gymnasium's MuJoCo environments ship, imported and checked against
MuJoCo's mj_forward on the same file (crosscheck/mujoco/imported.py), or refused for the reason the table says.

The files are found through importlib.resources (dm_control/suite/*.xml, gymnasium/envs/mujoco/assets/*.xml).
Files whose imports have the same dynamics (the same mechdyn.core.fingerprint once the model's name, which
follows the file's, is blanked) share the first one's compiled module, each still checked against MuJoCo on its
own file; DUPLICATES names them, so a change to either file shows. A refused file, and the plain gate of a model
with no well-conditioned state, are recorded as skipped with the reason.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib.resources

import pytest

from crosscheck.mujoco import imported
from mechdyn.core.errors import MechError
from mechdyn.core.fingerprint import fingerprint
from mechdyn.core.model import Model
from mechdyn.dynamics import Dynamics
from mechdyn.imports import import_model

SOURCES = {"dm_control": "suite", "gymnasium": "envs/mujoco/assets"}

# file -> the words its refusal must contain (the importer's or the code generator's MechError)
REFUSED = {
    "dm_control/lqr.xml": "the model has no joint: nothing moves",
    # the goal marker's compiled mass is below the format's smallest mass, 1e-9 kg
    "gymnasium/pusher.xml": "'mass' in body 'goal' is 4.021238596594936e-10, out of bounds for a mass",
    "gymnasium/pusher_v5.xml": "'mass' in body 'goal' is 4.021238596594936e-10, out of bounds for a mass",
}
# file -> the earlier file whose import has the same fingerprint
DUPLICATES = {"gymnasium/walker2d_v5.xml": "gymnasium/walker2d.xml"}  # pusher_v5 and pusher are both refused


def _files() -> dict[str, str]:
    """'package/name.xml' -> the file's path, for every MJCF file of the two packages."""
    out = {}
    for pkg, sub in SOURCES.items():
        for f in importlib.resources.files(pkg).joinpath(sub).iterdir():
            if f.name.endswith(".xml"):
                out[f"{pkg}/{f.name}"] = str(f)
    return dict(sorted(out.items()))


FILES = _files()


@functools.cache
def _import(key: str) -> Model | MechError:
    """The file's import, or the importer's refusal."""
    try:
        return import_model(FILES[key])
    except MechError as e:
        return e


@functools.cache
def _first_alike() -> dict[str, str]:
    """Each imported file -> the first file in sorted order whose import has the same fingerprint."""
    seen: dict[str, str] = {}
    out = {}
    for key in FILES:
        m = _import(key)
        if isinstance(m, Model):
            out[key] = seen.setdefault(fingerprint(dataclasses.replace(m, name="")), key)
    return out


def test_the_suite_is_found() -> None:
    """Both packages' files are there (an empty glob would pass every test below vacuously)."""
    assert {"dm_control/humanoid_CMU.xml", "dm_control/quadruped.xml", "gymnasium/ant.xml",
            "gymnasium/humanoid.xml"} <= set(FILES)
    assert set(REFUSED) | set(DUPLICATES) <= set(FILES)


@pytest.mark.parametrize("key", list(FILES))
def test_mjcf_against_mujoco(key: str, gate) -> None:
    """Imported and matching mj_forward (a duplicate through its twin's module), or refused with the table's
    reason."""
    names = ("mjcf_accel_vs_mujoco", "mjcf_accel_vs_mujoco_cond")
    m = _import(key)
    if not isinstance(m, MechError):
        assert DUPLICATES.get(key, key) == _first_alike()[key], "the duplicates' table is out of date"
        if key in DUPLICATES:  # named as its twin, it is its twin's module (the build cache keys by content)
            m = dataclasses.replace(m, name=_import(DUPLICATES[key]).name)
        try:
            dyn = Dynamics(m)
        except MechError as e:
            m = e
    if isinstance(m, MechError):
        assert key in REFUSED, f"{key} refused: {m}"
        assert REFUSED[key] in str(m)
        gate.skip(key, names, f"refused: {m.msg}")
    assert key not in REFUSED, f"{key} is imported now: take it out of REFUSED"
    well, cond = imported.accel_vs_mujoco(FILES[key], dyn)
    gate(key, cond)
    if well is None:
        gate.skip(key, names[0], f"no state has κ(M) <= {imported.WELL:.0e}: only {names[1]} judges {key}")
    gate(key, well)
