"""A compiled model's declared parameters, as Python sees them: `dyn.params` (docs/params.md).

    dyn = mechdyn.load("elbow", params=["upper_arm.mass", "forearm.cg"])
    dyn.params                          # a table: name, values
    dyn.params["upper_arm.mass"] = 18.0  # the next call uses it; no compile
    dyn.params.values = x               # the whole vector (dyn.params.labels names its slots)

The generated C keeps one copy of the values per thread (codegen/declared.py). Every call through `dyn.lib`
first sets this model's values in the calling thread when they are not already there, so two models sharing one
module (the same declarations, other values) never see each other's numbers.
"""
from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator

import numpy as np

import mechdyn.contact.tires  # noqa: F401  (registers how a tire's parameters are read: core.params.TIRE_VALUE)
from mechdyn.core import params as core

_TOKENS = itertools.count(1)  # one per set of values ever bound: never reused, unlike an object's id
_BOUND = threading.local()  # per thread: module id -> the token of the values it holds


class Parameters:
    """The declared parameters of a Dynamics: names, values, and the values' binding to its C."""

    def __init__(self, dyn) -> None:
        self._dyn = dyn
        self._values = core.values(dyn.model)
        self._token = next(_TOKENS)
        self._in_c = core.read_by_c(dyn.model)  # otherwise binding has nothing to set: every call returns at once

    @property
    def names(self) -> list[str]:
        """The declared parameters, in the order of the vector."""
        return [p.name for p in self._dyn.model.params]

    @property
    def labels(self) -> list[str]:
        """One label per slot of the vector (a cg's x, y, z; an inertia's Ixx .. Iyz)."""
        return core.labels(self._dyn.model)

    @property
    def values(self) -> np.ndarray:
        """The parameter vector (a copy)."""
        return self._values.copy()

    @values.setter
    def values(self, x) -> None:
        x = np.array(x, dtype=float).reshape(-1)
        model = core.with_values(self._dyn.model, x)  # refuses a value out of bounds, naming it
        self._dyn.model, self._values, self._token = model, x, next(_TOKENS)

    def __len__(self) -> int:
        return len(self._dyn.model.params)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def _param(self, name: str) -> core.Param:
        for p in self._dyn.model.params:
            if p.name == name:
                return p
        declared = ", ".join(self.names) or "none"
        raise KeyError(f"model '{self._dyn.model.name}' has no parameter '{name}' (declared: {declared})")

    def __getitem__(self, name: str) -> float | np.ndarray:
        p = self._param(name)
        v = self._values[p.offset:p.offset + p.size]
        return float(v[0]) if p.size == 1 else v.copy()

    def __setitem__(self, name: str, value) -> None:
        p = self._param(name)
        x = self._values.copy()
        v = np.array(value, dtype=float).reshape(-1)
        if v.shape != (p.size,):
            raise ValueError(f"parameter '{name}' holds {p.size} numbers, got {v.size}")
        x[p.offset:p.offset + p.size] = v
        self.values = x

    def as_dict(self) -> dict[str, float | np.ndarray]:
        return {n: self[n] for n in self.names}

    def __repr__(self) -> str:
        if not len(self):
            return f"<no parameters declared on model '{self._dyn.model.name}'>"
        width = max(len(n) for n in self.names)
        rows = [f"{n:<{width}}  {np.array2string(np.atleast_1d(self[n]), precision=6)}" for n in self.names]
        return "\n".join([f"parameters of model '{self._dyn.model.name}':", *rows])

    def bind(self, ffi, lib) -> None:
        """Set these values in the calling thread's copy of `lib`'s (a module of this model, `ffi` its FFI),
        unless they are there already."""
        if not self._in_c:
            return
        key = id(lib)
        if getattr(_BOUND, "tokens", None) is None:
            _BOUND.tokens = {}
        if _BOUND.tokens.get(key) != self._token:
            setter = getattr(lib, "fwd_dyn_set_params", None) or lib.fwd_dyn_derivs_set_params
            setter(ffi.from_buffer("double[]", self._values))
            _BOUND.tokens[key] = self._token
