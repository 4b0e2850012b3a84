"""The repository's models with other drivers than their files', for the tests of drivers and of what drivers
change (a rig model's posts are driven in its file)."""
from __future__ import annotations

import dataclasses as dc
import re

from mechdyn.core.model import Model
from mechdyn.core.parse import MODELS_DIR, load_model, parse

_DRIVER_BLOCK = re.compile(r"(?ms)^driver \S+\n.*?^end\n")


def undriven_text(name: str) -> str:
    """models/NAME.mech's text without its driver blocks."""
    return _DRIVER_BLOCK.sub("", (MODELS_DIR / f"{name}.mech").read_text())


def with_drivers(name: str, blocks: str) -> Model:
    """models/NAME.mech with its own driver blocks replaced by `blocks`, parsed as that file (tables, messages)."""
    return parse(undriven_text(name) + "\n" + blocks, path=str(MODELS_DIR / f"{name}.mech"))


def undriven(name: str) -> Model:
    """models/NAME as loaded, its drivers taken off: its posts free joints, as before rigs had drivers."""
    return dc.replace(load_model(name), drivers=())
