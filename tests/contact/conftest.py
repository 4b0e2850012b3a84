"""Fixtures of the contact checks: the tracked models' producers, built once per session."""
from __future__ import annotations

from functools import cache
from types import ModuleType

import pytest

from mechdyn.contact import Contact, native
from mechdyn.core.parse import load_model

TRACKED = ("m113", "track_min", "track_demo")


@cache
def contact(name: str) -> Contact:
    return Contact(load_model(name))


def planted(old: str, new: str) -> ModuleType:
    """The contact module built from the product's C with `old` (which must occur exactly once) replaced."""
    src = native.source()
    assert src.count(old) == 1, f"the planted bug's anchor is not unique in the contact C: {old!r}"
    return native.compile(src.replace(old, new))


@pytest.fixture(params=TRACKED)
def tracked(request) -> Contact:
    return contact(request.param)
