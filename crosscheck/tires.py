"""The tires' second route (docs/tires.md): a one-wheel model for the checks, and the NumPy laws.

    text = wheel_text("models/data/hmmwv/tire/HMMWV_TMeasyTire.json", "four", "sine 0 0.02 3 5")
"""
from __future__ import annotations


def wheel_text(data: str, contact: str = "single", terrain: str = "plane 0 0 1 0", mu: float = 0.8) -> str:
    """A one-wheel `.mech` model: a free hub 0.45 m up, the wheel spinning about its y on it, the tire from
    `data` with `contact` on the ground's `terrain` with the road's friction `mu`."""
    return f"""gravity 0 0 -9.81
body hub
  parent base
  joint floating
  xtree 0 0 0.45
  mass 500
  inertia 10 10 10 0 0 0
end
body wheel
  parent hub
  joint revolute y
  mass 56.4
  inertia 4.3 7.3 4.3 0 0 0
  fext 1
end
ground
  terrain {terrain}
  kn 1e6
  mu {mu!r}
end
tire t
  wheel wheel
  data {data}
  contact {contact}
end
"""
