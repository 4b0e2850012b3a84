"""The contact producers' C (band.c, ground.c, tire.c), compiled once through the shared compile cache.

`source()` is the text compiled and `compile(text)` builds any text of the same API, so a test can build a copy
with a planted bug and hand it to `Contact(..., module=...)`.
"""
from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from types import ModuleType

from mechdyn.codegen.build import build_source

_FILES = ("band.c", "ground.c", "tire.c")  # tire.c reads ground.c's terrain: after it
_API = re.compile(r"/\* API begin \*/\n(.*?)/\* API end \*/", re.S)


def source() -> str:
    """The producers' C, every file in one translation unit."""
    return "\n".join((Path(__file__).parent / f).read_text() for f in _FILES)


def api(text: str) -> list[str]:
    """The text between each pair of API markers in C `text`: the declarations cffi is given, written once."""
    return _API.findall(text)


def cdef(text: str) -> str:
    """The declarations cffi is given for the producers' C `text`: every file's API section."""
    parts = api(text)
    if len(parts) != len(_FILES):
        raise ValueError(f"expected {len(_FILES)} API sections in the contact C, found {len(parts)}")
    return "\n".join(parts)


def compile(text: str) -> ModuleType:  # noqa: A001  (the module's verb)
    """The cffi module of contact C `text` (cached by its content)."""
    return build_source("contact", cdef(text), text)


@cache
def module() -> ModuleType:
    """The product's contact module."""
    return compile(source())
