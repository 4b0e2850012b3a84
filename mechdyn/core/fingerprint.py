"""The content hash of a model: everything in it that can reach the generated C.

The compile cache keys modules by it (mechdyn.codegen.build; without the declared
parameters' values), and the harness keys its drawn states by it (crosscheck), so
it lives in the core both use.
"""
from __future__ import annotations

import dataclasses
import hashlib

import numpy as np

from mechdyn.core.model import Model

# Dataclass fields that never reach the generated C: where a model came from (messages only), a driver's
# motion (data the steppers read at run time; the driven set is in the C, the schedule is not), and what an
# imported file says about a joint's limits, damping and friction (reported, never simulated), and the tires
# (external forces, computed by the contact's C from fext).
# tests/codegen/test_build_cache.py checks that changing them leaves the generated source unchanged, so a
# reformatted or moved .mech file, or one whose drivers move differently, shares its module.
PROVENANCE_FIELDS = frozenset({"path", "source", "line", "pitch_line", "motion", "info", "tires"})


def _feed(h: "hashlib._Hash", x: object, where: str) -> None:
    """Hash x exactly and unambiguously: every value is tagged with its kind (and strings and sequences with their
    length), floats go in by their bits, arrays by dtype, shape and bytes. An unknown type is an error, so a new
    kind of field can never be left out of the key silently."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        h.update(f"D{type(x).__module__}.{type(x).__qualname__}(".encode())
        for f in dataclasses.fields(x):
            if f.name not in PROVENANCE_FIELDS:
                h.update(f"{f.name}=".encode())
                _feed(h, getattr(x, f.name), f"{where}.{f.name}")
        h.update(b")")
    elif x is None:
        h.update(b"N")
    elif isinstance(x, bool):
        h.update(b"B1" if x else b"B0")
    elif isinstance(x, int):
        h.update(f"I{x};".encode())
    elif isinstance(x, float):  # np.float64 too
        h.update(f"F{x.hex()};".encode())
    elif isinstance(x, str):
        b = x.encode()
        h.update(f"S{len(b)}:".encode() + b)
    elif isinstance(x, (tuple, list)):
        h.update(f"T{len(x)}(".encode())
        for k, item in enumerate(x):
            _feed(h, item, f"{where}[{k}]")
        h.update(b")")
    elif isinstance(x, (np.ndarray, np.generic)) and not np.asarray(x).dtype.hasobject:
        a = np.ascontiguousarray(x)
        h.update(f"A{a.dtype.str}{a.shape}:".encode() + a.tobytes())
    else:
        raise ValueError(f"cache key: {where} is a {type(x).__name__}, which mechdyn.core.fingerprint cannot hash; "
                         "expected a number, string, array, tuple or dataclass")


def fingerprint(model: Model, values: bool = True) -> str:
    """The sha256 of everything in `model` that can reach the generated C (all but PROVENANCE_FIELDS). Without
    `values`, a declared parameter's value is left out (mechdyn/core/params.py): the compile cache's key, since
    the C reads it at run time; with them, the content, as the harness keys what it computed on a model."""
    from .params import neutral  # here: params imports the model, as this module does

    if not values:  # a tire's parameters stay out with the tires (the generated C never reads them)
        model = neutral(model)
        model = dataclasses.replace(model, params=tuple(p for p in model.params if p.kind != "tire"))
    h = hashlib.sha256()
    _feed(h, model, "model")
    return h.hexdigest()
