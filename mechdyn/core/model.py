"""The immutable mechanism model: what a `.mech` file describes.

A `Model` is built once by `mechdyn.core.parse` and never changes. Algorithms
take it as their first argument and keep their workspace elsewhere.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Literal

import numpy as np

from .motion import Motion
from .spatial import R_to_quat, plux, triad

BASE = -1  # parent index of a body attached to the fixed base

JointKind = Literal["revolute", "prismatic", "floating"]
LoopKind = Literal["revolute", "prismatic", "cylindrical", "spherical", "point-on-line", "distance"]

# Each loop joint's closure rows, in the order docs/conventions.md lists them, with d = S − P between the anchors:
# ("sep", e) is e·d for e fixed to the predecessor (x, y, z of its frame, or u, w of the loop's triad);
# ("dirs", e1, e2) is e1·e2 for e1 of the predecessor's triad and e2 of the successor's (as, ws: its a and w);
# ("dist",) is (d·d − L²)/2. The routes that build rows (mechdyn/core/loops.py, the Pinocchio cross-check) read it.
LOOP_ROWS: dict[str, tuple[tuple[str, ...], ...]] = {
    "revolute": (("sep", "x"), ("sep", "y"), ("sep", "z"), ("dirs", "u", "as"), ("dirs", "w", "as")),
    "prismatic": (("sep", "u"), ("sep", "w"), ("dirs", "u", "as"), ("dirs", "w", "as"), ("dirs", "u", "ws")),
    "cylindrical": (("sep", "u"), ("sep", "w"), ("dirs", "u", "as"), ("dirs", "w", "as")),
    "spherical": (("sep", "x"), ("sep", "y"), ("sep", "z")),
    "point-on-line": (("sep", "u"), ("sep", "w")),
    "distance": (("dist",),),
}

# constraints imposed by each loop joint type
LOOP_NC: dict[str, int] = {joint: len(rows) for joint, rows in LOOP_ROWS.items()}


if TYPE_CHECKING:
    from .params import Param


def _frozen(a) -> np.ndarray:
    """A read-only float array, so a Model cannot be mutated through its arrays."""
    out = np.array(a, dtype=float)
    out.flags.writeable = False
    return out


_EYE3 = _frozen(np.eye(3))


@dataclass(frozen=True)
class JointInfo:
    """What an imported file says about a body's joint besides its geometry: its name there, its limits, damping
    and friction. `mechdyn info` reports them; the dynamics use none of them (docs/import.md)."""

    name: str = ""  # the joint's name in the file it came from (a URDF joint, an MJCF joint)
    lower: float | None = None  # position limits, m or rad
    upper: float | None = None
    effort: float | None = None  # N or N·m
    velocity: float | None = None  # m/s or rad/s
    damping: float | None = None  # N·s/m or N·m·s/rad
    friction: float | None = None  # N or N·m

    def describe(self) -> str:
        """One line: the fields given, in the file's words."""
        parts = [f"joint {self.name}"] if self.name else []
        if self.lower is not None:
            parts.append(f"limit [{self.lower:g}, {self.upper:g}]")
        parts += [f"{k} {v:g}" for k, v in (("effort", self.effort), ("velocity", self.velocity),
                                             ("damping", self.damping), ("friction", self.friction)) if v is not None]
        return "  ".join(parts)


@dataclass(frozen=True)
class Body:
    name: str
    parent: int  # index of the parent body, BASE for the base
    joint: JointKind
    axis: np.ndarray  # (3,) unit joint axis in the joint frame (= the body frame at q = 0); zeros for floating
    xtree: np.ndarray  # (3,) joint frame origin in the parent body frame (floating: the design-pose position)
    mass: float  # 0 for a massless link (with zero inertia) that carries massive ones
    cg: np.ndarray  # (3,) centre of mass in the body frame
    inertia: np.ndarray  # (3, 3) about the CG, body axes
    fext: bool
    line: int  # line of the `body` statement, for messages
    # the joint frame's rotation in the parent body frame (its columns: the joint frame's axes in parent
    # coordinates); for a floating body, its design-pose attitude (its tree transform is the identity)
    rot: np.ndarray = field(default_factory=lambda: _EYE3)
    info: JointInfo | None = None  # an imported joint's name, limits, damping and friction (never in the dynamics)

    @property
    def axis_index(self) -> int:
        """k when the axis is exactly +e_k (x, y, z: 0, 1, 2), else -1 (oblique, negative, or floating)."""
        for k in range(3):
            if self.axis[k] == 1.0:
                return k
        return -1

    @property
    def axis_text(self) -> str:
        """The axis as the format writes it: x, -y, or three components ("" for floating)."""
        for k, name in enumerate("xyz"):
            for sign, mark in ((1.0, ""), (-1.0, "-")):
                if self.axis[k] == sign:
                    return mark + name
        return "" if self.joint == "floating" else " ".join(f"{x:.6g}" for x in self.axis)

    @property
    def aligned(self) -> bool:
        """Whether the joint frame is the parent's, translated (its rotation exactly the identity)."""
        return bool(np.array_equal(self.rot, _EYE3))

    @cached_property
    def XT(self) -> np.ndarray:
        """Tree transform, parent frame → joint frame: plux(rotᵀ, xtree), the identity for a floating body. Formed
        once, since a Body never changes, and read-only; kinematics and the dense reference ask for it per body per
        pass."""
        X = np.eye(6) if self.joint == "floating" else plux(np.asarray(self.rot).T, self.xtree)
        X.flags.writeable = False
        return X

    @property
    def nq(self) -> int:
        return 7 if self.joint == "floating" else 1

    @property
    def nv(self) -> int:
        return 6 if self.joint == "floating" else 1


@dataclass(frozen=True)
class Poi:
    name: str
    body: int  # BASE allowed
    pos: np.ndarray  # (3,) body-frame coordinates
    line: int


@dataclass(frozen=True)
class Loop:
    name: str
    joint: LoopKind
    pred: int  # BASE allowed
    succ: int
    anchor_pred: np.ndarray  # (3,) in the predecessor frame
    anchor_succ: np.ndarray  # (3,) in the successor frame
    axis: np.ndarray | None  # (3,) unit vector in the predecessor frame
    length: float | None  # distance loops only
    line: int

    @property
    def nc(self) -> int:
        return LOOP_NC[self.joint]

    @cached_property
    def triad(self) -> np.ndarray:
        """Columns (u0, w0, a0): the axis completed to a right-handed orthonormal basis (docs/conventions.md).

        u0 = normalize(a0 × e) with e the base axis least aligned with a0 (the first on ties).
        """
        return triad(self.axis if self.axis is not None else np.array([0.0, 0.0, 1.0]))


@dataclass(frozen=True)
class Tsda:
    name: str
    poi_a: int  # index into Model.pois
    poi_b: int
    k: float
    c: float
    l0: float
    act: int  # slot in act[], -1 when not an input
    line: int


@dataclass(frozen=True)
class Rsda:
    name: str
    body: int  # the tree joint is this body's joint
    k: float
    c: float
    q0: float
    act: int
    line: int


@dataclass(frozen=True)
class Driver:
    """A tree joint's coordinate prescribed as q = q_design + f(t) (mechdyn/core/motion.py); the generated solve
    takes its f'' from act slot `act` and returns the generalized force the driver exerts (docs/generator.md)."""
    name: str
    body: int  # the driven joint is this body's (revolute or prismatic)
    motion: Motion
    act: int  # the act slot of f''
    line: int


@dataclass(frozen=True)
class Roller:
    body: int
    radius: float
    end: bool
    drive: bool
    teeth: int  # 0 when not given
    root: float = 0.0  # m: the radius a pin bottoms out at (a sprocket's tooth root); 0 when not given
    line: int = 0  # line of the `roller` statement, for messages


@dataclass(frozen=True)
class Track:
    name: str
    root: int
    plane: str
    shoes: int
    pitch: float
    mass: float
    cg: np.ndarray
    inertia: np.ndarray
    fext: bool
    rollers: tuple[Roller, ...]
    pad: np.ndarray | None  # (3,) z, lx, ly
    thickness: float | None
    kn: float | None
    kt: float | None
    mu: float | None
    line: int
    pitch_line: int = 0  # line of the `pitch` key, for the pitch warning
    # set once the band is expanded into bodies (mechdyn/core/tracks.py); -1 / None before
    first_shoe: int = -1  # body index of the anchor shoe; the others follow it in order
    link_len: float | None = None  # pin to pin, = perimeter / shoes
    perimeter: float | None = None  # of the belt path at the design pose

    @property
    def expanded(self) -> bool:
        return self.first_shoe >= 0


@dataclass(frozen=True)
class Ground:
    terrain: str  # "plane", "sine" or "grid"
    params: np.ndarray  # plane: nx ny nz d (unit normal); sine: z0 amp wx wy; grid: x0 y0 dx dy
    kn: float
    kt: float | None
    mu: float
    line: int
    # grid only, (ny, nx): heights[j, i] is h(x0 + i·dx, y0 + j·dy); None for the other terrains
    heights: np.ndarray | None = None


@dataclass(frozen=True)
class Tire:
    """A tire on a wheel: the wheel's body (its revolute joint the spin), the tire's data file (docs/tires.md)."""
    name: str
    body: int
    data: str  # the data file's path, resolved against the model file's directory
    contact: str  # "single" or "four": Chrono's one- or four-point disc contact
    line: int
    data_line: int = 0  # line of the `data` key, for messages
    given: tuple[tuple[str, float], ...] = ()  # declared parameters' values, in place of the data file's


@dataclass(frozen=True)
class Model:
    name: str
    path: str  # file the model came from ("<string>" when parsed from text)
    source: str  # the exact text, for content-addressed caches
    gravity: np.ndarray  # (3,)
    stab: float
    bodies: tuple[Body, ...]
    pois: tuple[Poi, ...] = ()
    loops: tuple[Loop, ...] = ()
    tsdas: tuple[Tsda, ...] = ()
    rsdas: tuple[Rsda, ...] = ()
    tracks: tuple[Track, ...] = ()
    ground: Ground | None = None
    drivers: tuple[Driver, ...] = ()
    tires: tuple[Tire, ...] = ()
    q_design: np.ndarray | None = None  # the design pose closed onto the loops, set on load
    params: tuple[Param, ...] = ()  # the numbers read at run time, not folded (mechdyn/core/params.py)
    # derived layout, filled by __post_init__
    qidx: tuple[int, ...] = field(init=False)  # first q slot of each body
    vidx: tuple[int, ...] = field(init=False)  # first v slot of each body
    nq: int = field(init=False)
    nv: int = field(init=False)

    def __post_init__(self) -> None:
        qidx, vidx, nq, nv = [], [], 0, 0
        for b in self.bodies:
            qidx.append(nq)
            vidx.append(nv)
            nq += b.nq
            nv += b.nv
        object.__setattr__(self, "qidx", tuple(qidx))
        object.__setattr__(self, "vidx", tuple(vidx))
        object.__setattr__(self, "nq", nq)
        object.__setattr__(self, "nv", nv)

    @property
    def nbody(self) -> int:
        return len(self.bodies)

    @property
    def nc(self) -> int:
        return sum(lp.nc for lp in self.loops)

    @property
    def nact(self) -> int:
        """act slots: the elements' inputs, then one per driver (its f'')."""
        return sum(1 for e in (*self.tsdas, *self.rsdas) if e.act >= 0) + len(self.drivers)

    @property
    def driven(self) -> tuple[int, ...]:
        """The velocity slots the drivers prescribe, in driver order."""
        return tuple(self.vidx[d.body] for d in self.drivers)

    def driver_index(self, name: str) -> int:
        """Index of the driver called `name` (KeyError if none)."""
        for k, d in enumerate(self.drivers):
            if d.name == name:
                return k
        raise KeyError(name)

    @property
    def mobility(self) -> int:
        """Degrees of freedom left once the loops are closed (assuming full rank)."""
        return self.nv - self.nc

    def body_index(self, name: str) -> int:
        """Index of the body called `name` (BASE for "base")."""
        if name == "base":
            return BASE
        for i, b in enumerate(self.bodies):
            if b.name == name:
                return i
        raise KeyError(name)

    @property
    def bands_expanded(self) -> bool:
        """Whether every track band is expanded into shoe bodies and a closure (parse's assembly does it)."""
        return all(t.expanded for t in self.tracks)

    def q0(self) -> np.ndarray:
        """The design pose: zero joint coordinates, floating bodies at their xtree and attitude, each
        track band laid round its belt (mechdyn/core/tracks.py), then closed onto the loop constraints."""
        return self.q_design.copy() if self.q_design is not None else self.q_nominal()

    def q_nominal(self) -> np.ndarray:
        """Every joint coordinate 0, floating bodies at their xtree and design attitude (loops not closed)."""
        q = np.zeros(self.nq)
        for b, i in zip(self.bodies, self.qidx):
            if b.joint == "floating":
                q[i : i + 4] = R_to_quat(b.rot)
                q[i + 4 : i + 7] = b.xtree
        return q

    def support(self, i: int) -> list[int]:
        """Bodies on the path from body i to the base, i first."""
        path = []
        while i != BASE:
            path.append(i)
            i = self.bodies[i].parent
        return path
