"""What both exporters share: the result with its list of omissions, and exact number formatting."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from mechdyn.core.model import Model
from mechdyn.core.spatial import R_to_quat


@dataclass(frozen=True)
class Exported:
    format: str  # "urdf" or "mjcf"
    text: str
    omitted: tuple[str, ...]  # one human line per item the format could not express
    notes: tuple[str, ...] = ()  # items exported with a meaning that differs from mechdyn's, one line each

    def message(self, path: str) -> str:
        """One summary line, then one indented line per omitted item and per note."""
        head = f"{path}: {self.format.upper()}"
        lines = [f"{head}, everything in the model exported" if not self.omitted
                 else f"{head}, {len(self.omitted)} item(s) left out:"]
        return "\n".join(lines + [f"  {o}" for o in self.omitted] + [f"  note: {n}" for n in self.notes])


def num(x: float) -> str:
    """A float as text that reads back to exactly the same double."""
    return repr(float(x))


def vec(v) -> str:
    return " ".join(num(x) for x in np.asarray(v, dtype=float).ravel())


def direction(v) -> str:
    """A unit vector as text: its whole components as integers ("0 0 1", "-1 0 0"), the others exactly."""
    return " ".join(str(int(x)) if float(x).is_integer() else num(x) for x in np.asarray(v, dtype=float))


def rpy(R: np.ndarray) -> str:
    """URDF's roll, pitch, yaw of rotation R (fixed axes x, y, z: R = Rz Ry Rx), "0 0 0" for the identity."""
    if np.array_equal(R, np.eye(3)):
        return "0 0 0"
    return vec(Rotation.from_matrix(R).as_euler("xyz"))


def quat(R: np.ndarray) -> str:
    """MJCF's w x y z of rotation R, "1 0 0 0" for the identity."""
    return "1 0 0 0" if np.array_equal(R, np.eye(3)) else vec(R_to_quat(R))


def xml_escape(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def unsupported(model: Model) -> list[str]:
    """Track contact and ground contact: no exporter expresses them yet (an expanded band's shoes and closure are
    ordinary bodies and a loop, exported as such)."""
    items = [f"track '{t.name}' ({model.path}:{t.line}): "
             + ("its roller and ground contact is not exported" if t.expanded else
                "track bands are not expanded into bodies yet") for t in model.tracks]
    if model.ground is not None:
        items.append(f"ground ({model.path}:{model.ground.line}): contact is not exported")
    return items
