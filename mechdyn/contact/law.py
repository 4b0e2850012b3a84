"""The contact laws' constants (docs/contact.md, "Parameters"): what the `.mech` format does not carry."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ContactLaw:
    zeta_band: float = 0.2  # critical-damping fraction of a band pair's normal damper, against the shoe mass
    zeta_ground: float = 0.2  # the ground's, against the mass each loaded corner carries
    v_eps: float = 0.01  # m/s: regularized Coulomb's speed scale
    ramp_depth: float = 1e-3  # m: penetration over which a damper fades in
    gate_fade: float = 0.03  # m: the pin gate's width (tooth and guide engage over it)
    f_skip: float = 2e4  # N: the tooth's peak circumferential force on the pitch circle
    face_fade: float = 0.25  # the face weight's fade past each end of a shoe, in link lengths (at most 0.5)

    def __post_init__(self) -> None:
        for name in ("zeta_band", "zeta_ground", "v_eps", "ramp_depth", "gate_fade", "f_skip"):
            v = getattr(self, name)
            if not (v > 0 and v < float("inf")):
                raise ValueError(f"ContactLaw.{name} is {v!r}; expected a finite number > 0")
        if not 0 < self.face_fade <= 0.5:
            raise ValueError(f"ContactLaw.face_fade is {self.face_fade!r}; expected 0 < face_fade <= 0.5 "
                             "(past a half link the weights of three shoes would overlap)")
