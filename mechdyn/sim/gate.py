"""A trajectory gate's verdict: a measured figure against its bound, printed one line each."""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Gate:
    name: str  # short, stable: the gate history's metric name
    value: float
    bound: float
    passed: bool
    unit: str
    detail: str  # what was measured, and against what

    def line(self) -> str:
        """`PASS name: value unit (bound ...): detail`, one line."""
        return (f"{'PASS' if self.passed else 'FAIL'} {self.name}: {self.value:.4g} {self.unit} "
                f"(bound {self.bound:.4g}): {self.detail}")


def below(name: str, value: float, bound: float, unit: str, detail: str) -> Gate:
    """Passes when value < bound (a NaN fails)."""
    return Gate(name, float(value), float(bound), bool(value < bound), unit, detail)


def above(name: str, value: float, bound: float, unit: str, detail: str) -> Gate:
    """Passes when value > bound (a NaN fails): a control that must exceed what the gate holds to."""
    return Gate(name, float(value), float(bound), bool(value > bound), unit, detail)


def all_passed(gates: list[Gate]) -> bool:
    return all(g.passed and math.isfinite(g.value) for g in gates)
