"""How long a run may be: checked before anything is loaded or stepped (the CLI's arguments, the runners)."""
from __future__ import annotations

MAX_STEPS = 10**9  # a run longer than this is a typo (dt 1e-300), not a plan: hours of stepping


def step_count(T: float, dt: float) -> int:
    """The steps of a run of T seconds at dt (finite, dt > 0, T >= 0); ValueError past MAX_STEPS."""
    n = T / dt
    if not n <= MAX_STEPS:
        raise ValueError(f"T {T:g} at dt {dt:g} would take {n:.3g} steps; at most {MAX_STEPS:.0e} are allowed")
    return int(round(n))
