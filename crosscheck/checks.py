"""A check's result: one named figure against its threshold.

Every comparison in the harness (dense, generated, Chrono, ...) reports a
`Check`, so the CLI, `--json` and the regression history all read one shape.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Check:
    name: str  # the --json key, e.g. "crba_vs_aba"
    value: float  # the measured figure (smaller is better)
    threshold: float
    detail: str  # one human line: what was compared, over how many trials, worst where
    note: str = ""  # what to do about a failure, printed under the line

    @property
    def passed(self) -> bool:
        return bool(self.value <= self.threshold)

    def line(self) -> str:
        """The human-readable report line."""
        verdict = "PASS" if self.passed else "FAIL"
        gate = f"{self.threshold:.0e}"
        if float(gate) != self.threshold:  # a size-aware gate (twobands' 1.35e-9) is not a round power of ten
            gate = f"{self.threshold:.3g}"
        line = f"{self.name}: {self.detail} = {self.value:.3e} (gate {gate}) {verdict}"
        return f"{line}\n  {self.note}" if self.note else line

    def as_dict(self) -> dict:
        return asdict(self) | {"passed": self.passed}
