"""The stepping loop with contact (step.c) compiled in one translation unit after the contact producers' C, the
drivers' motions (motion.c) and the implicit stepper (galpha.c), so the loop calls them directly and a Contact built on this module hands the loop its
own structs."""
from __future__ import annotations

from functools import cache
from pathlib import Path
from types import ModuleType

from mechdyn.codegen.build import build_source
from mechdyn.contact import native as contact_native

from .drivers import motion_source

_STEP = Path(__file__).parent / "step.c"
_GALPHA = Path(__file__).parent / "galpha.c"


def compile(contact_text: str | None = None, step_text: str | None = None,  # noqa: A001
            galpha_text: str | None = None) -> ModuleType:
    """The cffi module of the loop: step.c's text `step_text` over contact C `contact_text` and the implicit
    stepper's `galpha_text` (a test's planted copies; the product's where None)."""
    contact_text = contact_native.source() if contact_text is None else contact_text
    step = _STEP.read_text() if step_text is None else step_text
    galpha = _GALPHA.read_text() if galpha_text is None else galpha_text
    motion = motion_source()
    (loop_api,) = contact_native.api(step)
    (ga_api,) = contact_native.api(galpha)
    (motion_api,) = contact_native.api(motion)
    return build_source("sim", "\n".join((contact_native.cdef(contact_text), motion_api, ga_api, loop_api)),
                        "\n".join((contact_text, motion, galpha, step)))


def step_source() -> str:
    """step.c's text, as the product compiles it."""
    return _STEP.read_text()


@cache
def module() -> ModuleType:
    """The product's loop module."""
    return compile()
