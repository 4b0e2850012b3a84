"""The `.mech` parser: text in, immutable `Model` out (grammar: docs/mech-format.md).

Parsing runs in two stages. `_read` walks the lines once, checking block
structure and converting every key's fields against the per-block tables below,
so syntax errors come out in file order. `_Builder` then resolves names across
statements and applies the rules that span lines: bodies first (everything else
refers to them), then the other statements in file order. Every problem is one
`MechError` at the line that caused it.
"""
from __future__ import annotations

import difflib
import math
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

import numpy as np

from .errors import MechError, MechWarning  # noqa: F401  (MechWarning re-exported beside MechError)
from .loops import AssemblyError, closure, loop_of_row, project_q, reach_fault
from . import motion
from .params import ParamError, declare
from .model import BASE, LOOP_NC, Body, Driver, Ground, JointInfo, Loop, Model, Poi, Roller, Rsda, Tire, Track, Tsda, _frozen
from .spatial import quat_to_R, rpy_to_R, signed_permutation
from .tracks import expand_tracks

MODELS_DIR = Path(__file__).resolve().parents[2] / "models"

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
# Python's float() also takes "1_0", "nan", "infinity" and non-ASCII digits; the format does not.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INTEGER = re.compile(r"[+-]?[0-9]{1,9}")  # bounded: int() refuses digit strings over 4300 long
_AXES = {"x": 0, "y": 1, "z": 2}
_ZERO3 = _frozen(np.zeros(3))
_DEFAULT_GRAVITY = _frozen([0.0, 0.0, -9.81])
_DEFAULT_STAB = 0.1
_SLACK = 1e-9  # relative slack on the inertia triangle inequality: exact thin plates sit on its boundary


class ModelNotFound(ValueError):
    """`load_model` got neither an existing file nor the name of a model in models/."""


class _Invalid(Exception):
    """A field converter's complaint; the reader adds the location."""


class _Where(NamedTuple):
    """What is being read, for messages: a key and its block ("" at top level)."""

    key: str
    block: str

    def __str__(self) -> str:
        return f"'{self.key}' in {self.block}" if self.block else f"'{self.key}'"


Converter = Callable[[list[str], _Where], Any]


def _hint(word: str, options: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(options), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


# ---------------------------------------------------------------- field converters


@dataclass(frozen=True)
class Bound:
    """The magnitudes a quantity kind accepts: 0, or lo <= |x| <= hi (docs/mech-format.md, "Bounds").

    Wide enough for a 1 µg part or a 10,000 t machine at nm-to-10 km scales; narrow enough that no product the
    algorithms form (inertia × acceleration², stiffness × length, 1/T², ...) overflows or reaches the
    subnormal range, where values lose precision and their reciprocals overflow. Tests replace `check` to
    switch the bounds off."""

    kind: str
    unit: str
    lo: float
    hi: float

    def check(self, x: float, tok: str, w: _Where, positive: bool) -> float:
        if abs(x) > self.hi or (x != 0 and abs(x) < self.lo):
            span = f"{short_number(self.lo)} <= value" if positive else f"0 or {short_number(self.lo)} <= |value|"
            raise _Invalid(f"{w} is {tok}, out of bounds for {'an' if self.kind[0] in 'aeiou' else 'a'} {self.kind}; expected {span} <= {short_number(self.hi)}"
                           f"{' ' + self.unit if self.unit else ''} (docs/mech-format.md, Bounds)")
        return x


def short_number(x: float) -> str:
    """1e-9, 1e4: a bound as the docs write it (6.28319 for one that is not a power of ten)."""
    if float(f"{x:.0e}") != x:
        return f"{x:.6g}"
    return re.sub(r"e([+-])0*(\d)", lambda m: "e" + m[1].replace("+", "") + m[2], f"{x:.0e}")


LENGTH = Bound("length", "m", 1e-9, 1e4)
# a point's coordinate: CAD exports carry offsets of 1e-13 m, which Pinocchio and MuJoCo keep, and a point is
# only ever added to others and multiplied (never a divisor), so its floor is far below a length's
POSITION = Bound("position", "m", 1e-15, 1e4)
MASS = Bound("mass", "kg", 1e-9, 1e7)
INERTIA = Bound("moment of inertia", "kg m^2", 1e-27, 1e15)
STIFFNESS = Bound("stiffness", "N/m or N m/rad", 1e-9, 1e12)
DAMPING = Bound("damping", "N s/m or N m s/rad", 1e-9, 1e12)
COORDINATE = Bound("joint coordinate", "m or rad", 1e-9, 1e4)
DIRECTION = Bound("direction component", "", 1e-15, 1e4)
ACCELERATION = Bound("gravity component", "m/s^2", 1e-9, 1e4)
TIME = Bound("time constant", "s", 1e-6, 1e6)
FRICTION = Bound("friction coefficient", "", 1e-9, 1e3)
ANGLE = Bound("angle", "rad", 1e-15, 2 * math.pi)
FREQUENCY = Bound("frequency", "Hz", 1e-6, 1e4)
RATE = Bound("rate", "m/s or rad/s", 1e-9, 1e4)
EFFORT = Bound("effort", "N or N m", 1e-9, 1e12)
BOUNDS = (LENGTH, POSITION, MASS, INERTIA, STIFFNESS, DAMPING, COORDINATE, DIRECTION, ACCELERATION, TIME, FRICTION, ANGLE,
          FREQUENCY, RATE, EFFORT)


def _number(tok: str, w: _Where, bound: Bound, positive: bool = False) -> float:
    shown = tok if len(tok) <= 40 else f"{tok[:24]}...{tok[-8:]}"  # a 400-digit literal fits the message line
    if not _NUMBER.fullmatch(tok):
        raise _Invalid(f"bad number '{shown}' for {w}; expected a finite decimal literal such as 1, -0.5 or 2e-5")
    x = float(tok)
    if not math.isfinite(x):
        raise _Invalid(f"number '{shown}' for {w} overflows; expected a finite value")
    return bound.check(x, shown, w, positive)


def _scalar(bound: Bound, ok: Callable[[float], bool] | None = None, expect: str = "",
            positive: bool = False) -> Converter:
    def conv(f: list[str], w: _Where) -> float:
        x = _number(f[0], w, bound, positive)
        if ok is not None and not ok(x):
            raise _Invalid(f"{w} is {f[0]}; expected {expect}")
        return x

    return conv


def _positive(bound: Bound) -> Converter:
    return _scalar(bound, lambda x: x > 0, "a number > 0", positive=True)


def _nonneg(bound: Bound) -> Converter:
    return _scalar(bound, lambda x: x >= 0, "a number >= 0")


def _integer(lo: int) -> Converter:
    def conv(f: list[str], w: _Where) -> int:
        if not _INTEGER.fullmatch(f[0]) or int(f[0]) < lo:
            raise _Invalid(f"{w} is {f[0]}; expected an integer >= {lo}")
        return int(f[0])

    return conv


_TEETH = _integer(1)


def _vec(bound: Bound) -> Converter:
    def conv(f: list[str], w: _Where) -> np.ndarray:
        return _frozen([_number(t, w, bound) for t in f])

    return conv


_POSITION = _vec(POSITION)


def _name(f: list[str], w: _Where) -> str:
    if not _NAME.fullmatch(f[0]):
        raise _Invalid(f"bad name '{f[0]}' for {w}; expected a name matching [A-Za-z_][A-Za-z0-9_.-]*")
    return f[0]


def _names(f: list[str], w: _Where) -> tuple[str, ...]:
    return tuple(_name([t], w) for t in f)


def _choice(*options: str) -> Converter:
    def conv(f: list[str], w: _Where) -> str:
        if f[0] not in options:
            raise _Invalid(f"unknown value '{f[0]}' for {w}; expected {' or '.join(options)}{_hint(f[0], options)}")
        return f[0]

    return conv


def _bit(f: list[str], w: _Where) -> bool:
    if f[0] not in ("0", "1"):
        raise _Invalid(f"bad value '{f[0]}' for {w}; expected 0 or 1")
    return f[0] == "1"


def _flag(f: list[str], w: _Where) -> bool:
    return True


_AXIS_FORM = "x|y|z|-x|-y|-z or ax ay az"


def _tree_joint(f: list[str], w: _Where) -> tuple[str, np.ndarray]:
    kind = f[0]
    if kind in ("spherical", "cylindrical"):
        raise _Invalid(f"'joint {kind}' in {w.block} is not implemented as a tree joint; "
                       "use a floating body with loop closures")
    if kind == "floating":
        if len(f) != 1:
            raise _Invalid(f"'joint floating' in {w.block} takes no axis; expected 'joint floating'")
        return kind, _ZERO3
    if kind not in ("revolute", "prismatic"):
        raise _Invalid(f"unknown joint type '{kind}' in {w.block}; expected revolute, prismatic or floating"
                       f"{_hint(kind, ('revolute', 'prismatic', 'floating'))}")
    if len(f) == 2 and f[1].lstrip("-") in _AXES and f[1].count("-") <= 1:
        return kind, _frozen((-1.0 if f[1][0] == "-" else 1.0) * np.eye(3)[_AXES[f[1].lstrip("-")]])
    if len(f) == 4:
        return kind, _direction(f[1:], _Where("joint", w.block))
    got = f"'{' '.join(f[1:])}'" if len(f) > 1 else "none"
    raise _Invalid(f"bad axis {got} for 'joint {kind}' in {w.block}; expected 'joint {kind} {_AXIS_FORM}'")


def _direction(f: list[str], w: _Where) -> np.ndarray:
    """Three numbers normalized to a unit vector."""
    v = [_number(t, w, DIRECTION) for t in f]
    big = max(abs(x) for x in v)
    if big == 0:
        raise _Invalid(f"{w} is the zero vector; expected a nonzero direction")
    v = [x / big for x in v]  # rescale first so tiny or huge components normalize exactly
    n = math.hypot(*v)
    return _frozen([x / n for x in v])


def _rpy(f: list[str], w: _Where) -> np.ndarray:
    return rpy_to_R(_vec(ANGLE)(f, w))


QUAT_TOL = 1e-3  # how far off unit norm a written quaternion may be (four-digit components) before it is refused


def _quat(f: list[str], w: _Where) -> np.ndarray:
    Q = np.array([_number(t, w, DIRECTION) for t in f])
    n = float(np.linalg.norm(Q))
    if not abs(n - 1.0) <= QUAT_TOL:
        raise _Invalid(f"{w} has norm {n:.6g}; expected a unit quaternion w x y z (norm within {QUAT_TOL:g} of 1)")
    return _frozen(signed_permutation(quat_to_R(Q / n)))


def _loop_axis(f: list[str], w: _Where) -> np.ndarray:
    if len(f) == 1:
        if f[0] not in _AXES:
            raise _Invalid(f"bad axis '{f[0]}' for {w}; expected x, y, z or three numbers")
        return _frozen(np.eye(3)[_AXES[f[0]]])
    return _direction(f, w)


def _inertia(f: list[str], w: _Where) -> np.ndarray:
    ixx, iyy, izz, ixy, ixz, iyz = (_number(t, w, INERTIA) for t in f)
    tensor = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    if not tensor.any():  # a massless body's (add_body checks that its mass is 0 too)
        return _frozen(tensor)
    lam = np.linalg.eigvalsh(tensor)  # ascending principal moments
    moments = ", ".join(f"{x:.6g}" for x in lam)
    # comparisons are written so that a nan from an overflowing tensor also fails
    if not lam[0] > 1e-12 * abs(lam[2]):
        raise _Invalid(f"{w} is not positive definite (principal moments {moments}); "
                       "expected all principal moments > 0")
    if not lam[0] + lam[1] >= lam[2] * (1 - _SLACK):
        raise _Invalid(f"{w} violates the triangle inequality (principal moments {moments}); "
                       "expected each principal moment <= the sum of the other two")
    return _frozen(tensor)


_ROLLER_FORM = "'roller BODY RADIUS [end] [drive] [teeth N] [root R]'"


def _roller(f: list[str], w: _Where) -> tuple[str, float, bool, bool, int, float]:
    body = _name(f, w)
    radius = _positive(LENGTH)(f[1:2], w)
    opts, seen, teeth, root = f[2:], set(), 0, 0.0
    i = 0
    while i < len(opts):
        opt = opts[i]
        takes = opt in ("teeth", "root")
        if opt in seen or opt not in ("end", "drive", "teeth", "root") or (takes and i + 1 == len(opts)):
            raise _Invalid(f"unexpected '{opt}' in {w}; expected {_ROLLER_FORM}")
        seen.add(opt)
        if opt == "teeth":
            i += 1
            teeth = _TEETH(opts[i : i + 1], w)
        elif opt == "root":
            i += 1
            root = _positive(LENGTH)(opts[i : i + 1], w)
            if not root < radius:
                raise _Invalid(f"{w} has root {root:g} >= its radius {radius:g}; expected the radius a pin "
                               "bottoms out at, inside the roller's radius")
        i += 1
    return body, radius, "end" in seen, "drive" in seen, teeth, root


_TERRAINS = {"plane": "plane nx ny nz d", "sine": "sine z0 amp wx wy", "grid": "grid x0 y0 dx dy"}
_MIN_NZ = 1e-6  # of the unit normal: below it a plane is too steep to be a height field z = h(x, y)
_STENCIL = 4  # bicubic interpolation reads a 4 x 4 block of samples


def _terrain(f: list[str], w: _Where) -> tuple[str, np.ndarray]:
    kind = f[0] if f else ""
    if kind not in _TERRAINS:
        choices = " or ".join(f"'terrain {u}'" for u in _TERRAINS.values())
        raise _Invalid(f"unknown terrain '{kind}' in {w.block}; expected {choices}{_hint(kind, _TERRAINS)}")
    if len(f) != 5:
        raise _Invalid(f"'terrain {kind}' takes 4 numbers, got {len(f) - 1}; expected 'terrain {_TERRAINS[kind]}'")
    # plane: a direction and an offset; sine and grid: lengths throughout
    p = np.array([_number(t, w, DIRECTION if kind == "plane" and k < 3 else LENGTH) for k, t in enumerate(f[1:])])
    if kind == "plane":
        n = float(np.linalg.norm(p[:3]))
        if not n > 0:
            raise _Invalid("'terrain plane' normal is the zero vector; expected a nonzero nx ny nz")
        p = p / n  # unit normal (d scaled with it), so n·p - d is a signed distance
        if abs(p[2]) < _MIN_NZ:
            raise _Invalid(f"'terrain plane' normal {f[1]} {f[2]} {f[3]} has unit nz {p[2]:.3g}: the plane is "
                           f"vertical, not a height field z = h(x, y); expected |nz| >= {_MIN_NZ:g} of the unit normal")
    elif kind == "sine" and not (p[2] > 0 and p[3] > 0):
        raise _Invalid(f"'terrain sine' wavelengths are {f[3]} {f[4]}; expected wx > 0 and wy > 0")
    elif kind == "grid" and not (p[2] > 0 and p[3] > 0):
        raise _Invalid(f"'terrain grid' spacings are {f[3]} {f[4]}; expected dx > 0 and dy > 0")
    return kind, _frozen(p)


def _heights(f: list[str], w: _Where) -> np.ndarray:
    if len(f) < _STENCIL:
        raise _Invalid(f"{w} has {len(f)} values; expected at least {_STENCIL} per row "
                       f"(bicubic interpolation needs a {_STENCIL}x{_STENCIL} stencil)")
    return _vec(LENGTH)(f, w)


def _sine(f: list[str], w: _Where) -> tuple[float, ...]:
    return (_number(f[0], w, COORDINATE), _nonneg(FREQUENCY)(f[1:], w), _number(f[2], w, ANGLE))


def _sweep(f: list[str], w: _Where) -> tuple[tuple[float, ...], bool]:
    if len(f) == 5 and f[4] not in ("linear", "log"):
        raise _Invalid(f"unknown sweep '{f[4]}' for {w}; expected linear or log{_hint(f[4], ('linear', 'log'))}")
    freq = _positive(FREQUENCY)
    return (_number(f[0], w, COORDINATE), freq(f[1:], w), freq(f[2:], w), _positive(TIME)(f[3:], w)), \
        len(f) == 5 and f[4] == "log"


def _limit(f: list[str], w: _Where) -> tuple[float, float]:
    lower, upper = (_number(t, w, COORDINATE) for t in f)
    if not lower <= upper:
        raise _Invalid(f"{w} is {f[0]} {f[1]}; expected lower <= upper")
    return lower, upper


def _poi(f: list[str], w: _Where) -> tuple[str, str, np.ndarray]:
    return _name(f, w), _name(f[1:], w), _POSITION(f[2:], w)


# ---------------------------------------------------------------- key tables


@dataclass(frozen=True)
class _Key:
    usage: str  # the fields as written in the docs, quoted in messages
    counts: tuple[int, ...] | None  # allowed field counts; None: the converter checks
    conv: Converter
    required: bool = False
    default: Any = None
    repeat: bool = False  # may appear more than once; collects [(value, line), ...]

    def written(self, key: str) -> str:
        """The key line as the docs write it, e.g. 'xtree x y z'."""
        return f"'{key} {self.usage}'" if self.usage else f"'{key}'"


_XYZ = "x y z"
_INERTIA = "Ixx Iyy Izz Ixy Ixz Iyz"

_TOP: dict[str, _Key] = {
    "gravity": _Key("gx gy gz", (3,), _vec(ACCELERATION)),
    "stab": _Key("T", (1,), _positive(TIME)),
    "poi": _Key("NAME BODY x y z", (5,), _poi),
    "param": _Key("NAME.FIELD", (1,), _name),
}

_BODY = {
    "parent": _Key("NAME", (1,), _name, required=True),
    "joint": _Key(f"revolute|prismatic {_AXIS_FORM}, or floating", (1, 2, 4), _tree_joint, required=True),
    "xtree": _Key(_XYZ, (3,), _POSITION, default=_ZERO3),
    "rpy": _Key("roll pitch yaw", (3,), _rpy),
    "quat": _Key("w x y z", (4,), _quat),
    "mass": _Key("m", (1,), _nonneg(MASS), required=True),
    "cg": _Key(_XYZ, (3,), _POSITION, default=_ZERO3),
    "inertia": _Key(_INERTIA, (6,), _inertia, required=True),
    "fext": _Key("0|1", (1,), _bit, default=False),
    # what an imported file says about the joint: reported by `mechdyn info`, never used by the dynamics
    "joint_name": _Key("NAME", (1,), _name),
    "limit": _Key("lower upper", (2,), _limit),
    "effort": _Key("e", (1,), _nonneg(EFFORT)),
    "velocity": _Key("v", (1,), _nonneg(RATE)),
    "joint_damping": _Key("c", (1,), _nonneg(DAMPING)),
    "joint_friction": _Key("f", (1,), _nonneg(EFFORT)),
}
_INFO_KEYS = ("joint_name", "limit", "effort", "velocity", "joint_damping", "joint_friction")
_LOOP = {
    "joint": _Key("|".join(LOOP_NC), (1,), _choice(*LOOP_NC), required=True),
    "pred": _Key("NAME", (1,), _name, required=True),
    "succ": _Key("NAME", (1,), _name, required=True),
    "anchor_pred": _Key(_XYZ, (3,), _POSITION, required=True),
    "anchor_succ": _Key(_XYZ, (3,), _POSITION, required=True),
    "axis": _Key("x|y|z or ax ay az", (1, 3), _loop_axis),  # required by joint type: see _Builder.add_loop
    "length": _Key("d", (1,), _positive(LENGTH)),
}
_TSDA = {
    "between": _Key("POI_A POI_B", (2,), _names, required=True),
    "k": _Key("k", (1,), _scalar(STIFFNESS), default=0.0),
    "c": _Key("c", (1,), _scalar(DAMPING), default=0.0),
    "l0": _Key("l0", (1,), _nonneg(LENGTH), required=True),
    "input": _Key("", (0,), _flag, default=False),
}
_RSDA = {
    "joint": _Key("BODY", (1,), _name, required=True),
    "k": _Key("k", (1,), _scalar(STIFFNESS), default=0.0),
    "c": _Key("c", (1,), _scalar(DAMPING), default=0.0),
    "q0": _Key("q0", (1,), _scalar(COORDINATE), default=0.0),
    "input": _Key("", (0,), _flag, default=False),
}
_TRACK = {
    "root": _Key("BODY", (1,), _name, required=True),
    "plane": _Key("xz", (1,), _choice("xz"), default="xz"),
    "shoes": _Key("N", (1,), _integer(3), required=True),
    "pitch": _Key("p", (1,), _positive(LENGTH), required=True),
    "mass": _Key("m", (1,), _positive(MASS), required=True),
    "cg": _Key(_XYZ, (3,), _POSITION, default=_ZERO3),
    "inertia": _Key(_INERTIA, (6,), _inertia, required=True),
    "fext": _Key("0|1", (1,), _bit, default=True),
    "roller": _Key("BODY RADIUS [end] [drive] [teeth N] [root R]", (2, 3, 4, 5, 6, 7, 8), _roller, repeat=True),
    "pad": _Key("z lx ly", (3,), _POSITION),
    "thickness": _Key("t", (1,), _nonneg(LENGTH)),
    "kn": _Key("kn", (1,), _positive(STIFFNESS)),
    "kt": _Key("kt", (1,), _nonneg(STIFFNESS)),
    "mu": _Key("mu", (1,), _nonneg(FRICTION)),
}
_GROUND = {
    "terrain": _Key(" | ".join(_TERRAINS.values()), None, _terrain, required=True),
    "heights": _Key("h0 h1 h2 h3 ...", None, _heights, repeat=True),  # one grid row each; see _Builder.add_ground
    "kn": _Key("kn", (1,), _positive(STIFFNESS), required=True),
    "kt": _Key("kt", (1,), _nonneg(STIFFNESS)),
    "mu": _Key("mu", (1,), _nonneg(FRICTION), required=True),
}
_DRIVER = {
    "joint": _Key("BODY", (1,), _name, required=True),
    "constant": _Key("value", (1,), _scalar(COORDINATE)),
    "ramp": _Key("rate", (1,), _scalar(RATE)),
    "sine": _Key("amplitude frequency phase", (3,), _sine),
    "sweep": _Key("amplitude f0 f1 duration [linear|log]", (4, 5), _sweep),
    "table": _Key("FILE", (1,), lambda f, w: f[0]),
    "start": _Key("t", (1,), _nonneg(TIME), default=0.0),
    "blend": _Key("T", (1,), _positive(TIME), default=0.0),
}
_TIRE = {
    "wheel": _Key("BODY", (1,), _name, required=True),
    "data": _Key("FILE", (1,), lambda f, w: f[0], required=True),
    "contact": _Key("single|four", (1,), _choice("single", "four"), default="single"),
}
_MOTIONS = ("constant", "ramp", "sine", "sweep", "table")
_BLOCKS: dict[str, dict[str, _Key]] = {
    "body": _BODY, "loop": _LOOP, "tsda": _TSDA, "rsda": _RSDA, "track": _TRACK, "ground": _GROUND,
    "driver": _DRIVER, "tire": _TIRE,
}
_KEYWORDS = (*_TOP, *_BLOCKS)


# ---------------------------------------------------------------- stage 1: lines to statements


@dataclass
class _Stmt:
    """One block or `poi` statement with its converted values."""

    kind: str
    name: str  # "" for ground
    line: int
    vals: dict[str, Any] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)  # line of each key given

    def at(self, key: str) -> int:
        return self.lines.get(key, self.line)

    @property
    def label(self) -> str:
        return f"{self.kind} '{self.name}'" if self.name else self.kind


def _convert(spec: _Key, key: str, f: list[str], w: _Where) -> Any:
    if spec.counts is not None and len(f) not in spec.counts:
        raise _Invalid(f"wrong number of fields for {w}: got {len(f)}; expected {spec.written(key)}")
    return spec.conv(f, w)


def _read(text: str, path: str) -> tuple[list[_Stmt], dict[str, tuple[Any, int]]]:
    """Statements in file order, and the top-level settings as key -> (value, line)."""

    def fail(msg: str) -> NoReturn:
        raise MechError(path, ln, msg)

    stmts: list[_Stmt] = []
    settings: dict[str, tuple[Any, int]] = {}
    blk: _Stmt | None = None  # the open block
    ln = 0
    for ln, raw in enumerate(text.split("\n"), 1):
        toks = raw.split("#", 1)[0].split()
        if not toks:
            continue
        kw, f = toks[0], toks[1:]
        try:
            if blk is None:
                if kw in _BLOCKS:
                    blk = _open(kw, f, ln)
                elif kw in _TOP:
                    value = _convert(_TOP[kw], kw, f, _Where(kw, ""))
                    if kw == "poi":
                        stmts.append(_Stmt("poi", value[0], ln, {"body": value[1], "pos": value[2]}))
                    elif kw == "param":
                        stmts.append(_Stmt("param", value, ln, {}))
                    elif kw in settings:
                        fail(f"repeated '{kw}' (first at line {settings[kw][1]}); expected at most one")
                    else:
                        settings[kw] = (value, ln)
                elif kw == "end":
                    fail("'end' outside any block; expected it to close a body, loop, tsda, rsda, track, ground, "
                         "driver or tire")
                else:
                    owners = [k for k, keys in _BLOCKS.items() if kw in keys]
                    if owners:
                        fail(f"'{kw}' outside any block; expected it inside a {' or '.join(owners)} block")
                    fail(f"unknown keyword '{kw}'; expected one of {', '.join(_KEYWORDS)}{_hint(kw, _KEYWORDS)}")
            elif kw == "end":
                if f:
                    fail(f"unexpected fields after 'end' of {blk.label}; expected 'end' on its own")
                stmts.append(_close(blk, path))
                blk = None
            elif kw in _KEYWORDS:
                fail(f"'{kw}' inside {blk.label} (opened at line {blk.line}); "
                     f"expected 'end' first: blocks do not nest")
            else:
                spec = _BLOCKS[blk.kind].get(kw)
                if spec is None:
                    keys = _BLOCKS[blk.kind]
                    fail(f"unknown key '{kw}' in {blk.label}; expected one of {', '.join(keys)}{_hint(kw, keys)}")
                value = _convert(spec, kw, f, _Where(kw, blk.label))
                if spec.repeat:
                    blk.vals.setdefault(kw, []).append((value, ln))
                elif kw in blk.vals:
                    fail(f"repeated key '{kw}' in {blk.label} (first at line {blk.lines[kw]}); expected it once")
                else:
                    blk.vals[kw] = value
                blk.lines.setdefault(kw, ln)
        except _Invalid as e:
            raise MechError(path, ln, str(e)) from None
    if blk is not None:
        raise MechError(path, blk.line, f"{blk.label} is not closed; expected 'end' before the end of the file")
    return stmts, settings


def _open(kind: str, f: list[str], ln: int) -> _Stmt:
    if kind == "ground":
        if f:
            raise _Invalid("the ground block takes no name; expected 'ground' on its own")
        return _Stmt(kind, "", ln)
    if len(f) != 1:
        raise _Invalid(f"wrong number of fields for '{kind}': got {len(f)}; expected '{kind} NAME'")
    if not _NAME.fullmatch(f[0]):
        raise _Invalid(f"bad {kind} name '{f[0]}'; expected a name matching [A-Za-z_][A-Za-z0-9_.-]*")
    return _Stmt(kind, f[0], ln)


def _close(blk: _Stmt, path: str) -> _Stmt:
    """Check required keys (reported at the block's line) and fill defaults."""
    for key, spec in _BLOCKS[blk.kind].items():
        if key in blk.vals:
            continue
        if spec.required:
            raise MechError(path, blk.line, f"{blk.label} is missing required key '{key}'; "
                                            f"expected {spec.written(key)}")
        blk.vals[key] = [] if spec.repeat else spec.default
    return blk


# ---------------------------------------------------------------- stage 2: statements to a Model


class _Builder:
    """Resolves names and applies the rules that span statements."""

    def __init__(self, path: str, stmts: list[_Stmt]) -> None:
        self.path = path
        self.stmts = stmts
        self.first: dict[tuple[str, str], int] = {}  # (kind, name) -> line of its first declaration
        for s in reversed(stmts):
            self.first[s.kind, s.name] = s.line
        self.bodies: list[Body] = []
        self.body_index: dict[str, int] = {}
        self.origin: list[np.ndarray] = []  # body origins in base coordinates at the design pose
        self.attitude: list[np.ndarray] = []  # body-to-base rotations at the design pose
        self.pois: list[Poi] = []
        self.poi_index: dict[str, int] = {}
        self.loops: list[Loop] = []
        self.tsdas: list[Tsda] = []
        self.rsdas: list[Rsda] = []
        self.tracks: list[Track] = []
        self.ground: Ground | None = None
        self.drivers: list[Driver] = []
        self.tires: list[Tire] = []
        self.nact = 0

    def fail(self, line: int, msg: str) -> NoReturn:
        raise MechError(self.path, line, msg)

    def model(self, name: str, text: str, settings: dict[str, tuple[Any, int]]) -> Model:
        for s in self.stmts:
            if s.kind == "body":
                self.add_body(s)
        if not self.bodies:
            self.fail(1, "no body declared; expected at least one 'body NAME' block")
        self.check_massless()
        for s in self.stmts:  # drivers last: their act slots follow the elements'
            if s.kind not in ("body", "driver", "param"):
                getattr(self, f"add_{s.kind}")(s)
        for s in self.stmts:
            if s.kind == "driver":
                self.add_driver(s)
        if self.tires and self.ground is None:
            self.fail(self.tires[0].line, f"tire '{self.tires[0].name}' has no terrain to roll on; expected a "
                                          "'ground' block (its terrain and its mu, the road's friction)")
        model = Model(
            name=name, path=self.path, source=text,
            gravity=settings.get("gravity", (_DEFAULT_GRAVITY,))[0],
            stab=settings.get("stab", (_DEFAULT_STAB,))[0],
            bodies=tuple(self.bodies), pois=tuple(self.pois), loops=tuple(self.loops),
            tsdas=tuple(self.tsdas), rsdas=tuple(self.rsdas), tracks=tuple(self.tracks), ground=self.ground,
            drivers=tuple(self.drivers), tires=tuple(self.tires),
        )
        for s in self.stmts:
            if s.kind == "param":
                self.unique(s)
                try:
                    model = declare(model, [s.name], [s.line])
                except ParamError as e:
                    self.fail(s.line, f"{e}; declared as 'param NAME.FIELD'")
        return model

    # -- helpers

    def unique(self, s: _Stmt) -> None:
        first = self.first[s.kind, s.name]
        if first != s.line:
            self.fail(s.line, f"duplicate {s.kind} name '{s.name}' (first declared at line {first}); "
                              "expected a unique name")

    def body_ref(self, name: str, line: int, what: str, allow_base: bool) -> int:
        """Index of the body `name` referred to by `what` (any body of the file)."""
        if name == "base" and allow_base:
            return BASE
        if name == "base":
            self.fail(line, f"{what} cannot be base; expected a body")
        if name not in self.body_index:
            expect = "base or a body" if allow_base else "a body"
            self.fail(line, f"unknown body '{name}' for {what}; expected {expect}{_hint(name, self.body_index)}")
        return self.body_index[name]

    def act_slot(self, s: _Stmt) -> int:
        if not s.vals["input"]:
            return -1
        self.nact += 1
        return self.nact - 1

    # -- one method per statement kind

    def add_body(self, s: _Stmt) -> None:
        if s.name == "base":
            self.fail(s.line, "'base' is reserved for the fixed base; expected another body name")
        self.unique(s)
        v = s.vals
        pname = v["parent"]
        if pname == "base":
            parent = BASE
        elif pname in self.body_index:
            parent = self.body_index[pname]
        elif pname == s.name:
            self.fail(s.at("parent"), f"body '{s.name}' is its own parent; expected base or an earlier body")
        elif ("body", pname) in self.first:
            self.fail(s.at("parent"), f"parent '{pname}' of body '{s.name}' is declared later "
                                      f"(line {self.first['body', pname]}); expected base or a body declared earlier")
        else:
            self.fail(s.at("parent"), f"unknown parent '{pname}' for body '{s.name}'; "
                                      f"expected base or a body declared earlier{_hint(pname, self.body_index)}")
        joint, axis = v["joint"]
        if joint == "floating" and parent != BASE:
            self.fail(s.at("parent"), f"floating body '{s.name}' has parent '{pname}'; expected parent base")
        if v["rpy"] is not None and v["quat"] is not None:
            first, second = sorted(("rpy", "quat"), key=s.at)
            self.fail(s.at(second), f"{s.label} gives its rotation twice: '{second}' here and '{first}' at line "
                                    f"{s.at(first)}; expected one of rpy or quat")
        rot = v["rpy"] if v["rpy"] is not None else v["quat"] if v["quat"] is not None else np.eye(3)
        massless, still = v["mass"] == 0, not v["inertia"].any()
        if massless != still:
            self.fail(s.at("mass" if massless else "inertia"),
                      f"{s.label} has mass {v['mass']:g} and {'a nonzero' if massless else 'a zero'} inertia; expected "
                      "mass 0 with inertia 0 0 0 0 0 0 (a massless link) or a positive mass with a positive definite "
                      "inertia")
        if massless and joint == "floating":
            self.fail(s.at("mass"), f"floating {s.label} has mass 0; expected a floating body with mass")
        self.body_index[s.name] = len(self.bodies)
        Rp, pp = (self.attitude[parent], self.origin[parent]) if parent != BASE else (np.eye(3), np.zeros(3))
        self.origin.append(pp + Rp @ v["xtree"])
        self.attitude.append(Rp @ rot)
        self.bodies.append(Body(name=s.name, parent=parent, joint=joint, axis=axis, xtree=v["xtree"], rot=_frozen(rot),
                                mass=v["mass"], cg=v["cg"], inertia=v["inertia"], fext=v["fext"], line=s.line,
                                info=self.joint_info(s)))

    def joint_info(self, s: _Stmt) -> JointInfo | None:
        """The body's imported joint name, limits, damping and friction; None when it gives none."""
        v = s.vals
        if all(v[k] is None for k in _INFO_KEYS):
            return None
        lower, upper = v["limit"] if v["limit"] is not None else (None, None)
        return JointInfo(name=v["joint_name"] or "", lower=lower, upper=upper, effort=v["effort"],
                         velocity=v["velocity"], damping=v["joint_damping"], friction=v["joint_friction"])

    def check_massless(self) -> None:
        """Refuse massless bodies that leave the mass matrix singular: a massless body that carries no body with mass
        (at its line), and, at the design pose, an H whose smallest eigenvalue is below 1e-12 of its largest (at the
        line of the body whose coordinate dominates that eigenvector). Checked only where a body is massless: a
        positive mass with a positive definite inertia on every body keeps H positive definite everywhere."""
        from .kinematics import forward_kinematics  # here: the rest of the parser needs no kinematics
        from .spatial import jcalc, mcI

        if all(b.mass > 0 for b in self.bodies):
            return
        n = len(self.bodies)
        subtree = [[i] for i in range(n)]
        for i in reversed(range(n)):
            if self.bodies[i].parent != BASE:
                subtree[self.bodies[i].parent] += subtree[i]
        for i, b in enumerate(self.bodies):
            if not any(self.bodies[k].mass > 0 for k in subtree[i]):
                self.fail(b.line, f"body '{b.name}' has mass 0 and so does every body it carries; expected a massless "
                                  "body only where it carries a body with mass (its joint would move nothing)")
        model = Model(name="", path=self.path, source="", gravity=np.zeros(3), stab=1.0, bodies=tuple(self.bodies))
        kin = forward_kinematics(model, model.q0())
        # H = Jᵀ M J in base coordinates: each body's columns S (motion subspace) carried to the base
        S = np.zeros((n, 6, model.nv))
        for i, b in enumerate(self.bodies):
            Xinv = np.linalg.inv(kin.X0[i])
            Si = jcalc(b, model.q0()[model.qidx[i]:model.qidx[i] + b.nq])[1]
            for k in subtree[i]:
                S[k][:, model.vidx[i]:model.vidx[i] + b.nv] = Xinv @ Si
        H = sum(S[k].T @ kin.X0[k].T @ mcI(c.mass, c.cg, c.inertia) @ kin.X0[k] @ S[k]
                for k, c in enumerate(self.bodies))
        lam, vec = np.linalg.eigh(H)
        if not lam[0] > 1e-12 * lam[-1]:
            v = int(np.argmax(np.abs(vec[:, 0])))
            b = self.bodies[max(i for i in range(n) if model.vidx[i] <= v)]
            self.fail(b.line, f"the mass matrix is singular at the design pose (smallest eigenvalue {lam[0]:.3g}, "
                              f"largest {lam[-1]:.3g}), through the joint of body '{b.name}': a massless body's joints "
                              "move no independent inertia; expected massless bodies whose joints each move mass")

    def add_poi(self, s: _Stmt) -> None:
        self.unique(s)
        body = self.body_ref(s.vals["body"], s.line, f"poi '{s.name}'", allow_base=True)
        self.poi_index[s.name] = len(self.pois)
        self.pois.append(Poi(name=s.name, body=body, pos=s.vals["pos"], line=s.line))

    def add_loop(self, s: _Stmt) -> None:
        self.unique(s)
        v = s.vals
        pred = self.body_ref(v["pred"], s.at("pred"), f"'pred' in {s.label}", allow_base=True)
        succ = self.body_ref(v["succ"], s.at("succ"), f"'succ' in {s.label}", allow_base=False)
        if pred == succ:
            self.fail(s.at("succ"), f"{s.label} joins body '{v['succ']}' to itself; expected pred != succ")
        joint = v["joint"]
        takes_axis = joint not in ("spherical", "distance")
        if v["axis"] is not None and not takes_axis:
            self.fail(s.at("axis"), f"'axis' given for {joint} {s.label}; expected no axis "
                                    "(only revolute, prismatic, cylindrical and point-on-line loops take one)")
        if v["axis"] is None and takes_axis:
            self.fail(s.line, f"{joint} {s.label} is missing required key 'axis'; "
                              "expected 'axis x|y|z' or 'axis ax ay az'")
        length = v["length"]
        if length is not None and joint != "distance":
            self.fail(s.at("length"), f"'length' given for {joint} {s.label}; expected it only on distance loops")
        if joint == "distance" and length is None:
            length = float(np.linalg.norm(self.design_point(succ, v["anchor_succ"])
                                          - self.design_point(pred, v["anchor_pred"])))
            if not length > 0:
                self.fail(s.line, f"distance {s.label} has coincident anchors at the design pose; "
                                  "expected 'length d' with d > 0")
        self.loops.append(Loop(name=s.name, joint=joint, pred=pred, succ=succ, anchor_pred=v["anchor_pred"],
                               anchor_succ=v["anchor_succ"], axis=v["axis"], length=length, line=s.line))

    def design_point(self, body: int, p: np.ndarray) -> np.ndarray:
        """A body-fixed point in base coordinates at the design pose (every joint coordinate 0)."""
        return p if body == BASE else self.origin[body] + self.attitude[body] @ p

    def add_tsda(self, s: _Stmt) -> None:
        self.unique(s)
        ln = s.at("between")
        ends = []
        for pname in s.vals["between"]:
            if pname in self.poi_index:
                ends.append(self.poi_index[pname])
            elif ("poi", pname) in self.first:
                self.fail(ln, f"poi '{pname}' in {s.label} is declared later (line {self.first['poi', pname]}); "
                              "expected a poi declared earlier")
            else:
                self.fail(ln, f"unknown poi '{pname}' in {s.label}; expected a poi declared earlier"
                              f"{_hint(pname, self.poi_index)}")
        if ends[0] == ends[1]:
            self.fail(ln, f"{s.label} connects poi '{s.vals['between'][0]}' to itself; expected two distinct pois")
        v = s.vals
        self.tsdas.append(Tsda(name=s.name, poi_a=ends[0], poi_b=ends[1], k=v["k"], c=v["c"], l0=v["l0"],
                               act=self.act_slot(s), line=s.line))

    def single_dof_body(self, s: _Stmt, acts: str) -> int:
        """The body of `joint` in s, which must be a revolute or prismatic joint (the error says s `acts` on it)."""
        name = s.vals["joint"]
        body = self.body_ref(name, s.at("joint"), f"'joint' in {s.label}", allow_base=False)
        if self.bodies[body].joint == "floating":
            self.fail(s.at("joint"), f"{s.label} {acts} floating body '{name}'; expected a body with a revolute or "
                                     "prismatic joint")
        return body

    def add_rsda(self, s: _Stmt) -> None:
        self.unique(s)
        v = s.vals
        body = self.single_dof_body(s, "acts on")
        self.rsdas.append(Rsda(name=s.name, body=body, k=v["k"], c=v["c"], q0=v["q0"],
                               act=self.act_slot(s), line=s.line))

    def add_driver(self, s: _Stmt) -> None:
        self.unique(s)
        v = s.vals
        body = self.single_dof_body(s, "drives")
        if (other := next((d for d in self.drivers if d.body == body), None)) is not None:
            self.fail(s.at("joint"), f"{s.label} drives body '{v['joint']}', already driven by driver "
                                     f"'{other.name}' (line {other.line}); expected one driver per coordinate")
        given = sorted((k for k in _MOTIONS if v.get(k) is not None), key=s.at)
        if len(given) > 1:
            self.fail(s.at(given[1]), f"{s.label} has two motions, '{given[0]}' (line {s.at(given[0])}) and "
                                      f"'{given[1]}'; expected one of {', '.join(_MOTIONS)}")
        kind = given[0] if given else "constant"
        when = {"start": v["start"], "blend": v["blend"]}
        try:
            if kind == "table":
                t, x = self.table(v["table"], s)
                m = motion.table(t, x, **when)
            elif kind == "sweep":
                params, log = v["sweep"]
                m = motion.Motion("sweep", params, log=log, **when)
            else:
                params = v[kind] if given else 0.0
                m = motion.Motion(kind, tuple(params) if kind == "sine" else (params,), **when)
        except motion.MotionError as e:
            self.fail(s.at(kind) if given else s.line, f"{s.label}: {e}")
        self.drivers.append(Driver(name=s.name, body=body, motion=m, act=self.nact, line=s.line))
        self.nact += 1

    def table(self, name: str, s: _Stmt) -> tuple[np.ndarray, np.ndarray]:
        """The (t, value) columns of a driver's table file, relative to the .mech file's folder; a MechError at
        the file's own line for a bad row, at the driver's `table` line for a missing or short file."""
        base = Path(self.path).parent if self.path != "<string>" else Path.cwd()
        file = base / name
        if not file.is_file():
            self.fail(s.at("table"), f"{s.label}: table file '{file}' does not exist; expected a text file of "
                                     "rows 't value'")
        rows, lines = [], []
        for ln, raw in enumerate(file.read_text(errors="replace").split("\n"), 1):
            toks = raw.split("#", 1)[0].split()
            if not toks:
                continue
            if len(toks) != 2 or not all(_NUMBER.fullmatch(t) for t in toks):
                raise MechError(str(file), ln, f"table row '{raw.strip()[:60]}' of {s.label}; expected two "
                                               "numbers, 't value'")
            row = [float(t) for t in toks]
            if not all(map(math.isfinite, row)):
                raise MechError(str(file), ln, f"table row of {s.label} is not finite; expected finite numbers")
            if rows and row[0] <= rows[-1][0]:
                raise MechError(str(file), ln, f"table time {toks[0]} of {s.label} does not come after "
                                               f"{rows[-1][0]:g} (line {lines[-1]}); expected times that increase")
            rows.append(row)
            lines.append(ln)
        if len(rows) < 2:
            self.fail(s.at("table"), f"{s.label}: table file '{file}' has {len(rows)} row(s); expected at least 2")
        t, x = np.array(rows).T
        return t, x

    def add_track(self, s: _Stmt) -> None:
        self.unique(s)
        v = s.vals
        root = self.body_ref(v["root"], s.at("root"), f"'root' in {s.label}", allow_base=False)
        rollers = tuple(
            Roller(body=self.body_ref(b, ln, f"'roller' in {s.label}", allow_base=False),
                   radius=r, end=end, drive=drive, teeth=teeth, root=root, line=ln)
            for (b, r, end, drive, teeth, root), ln in v["roller"]
        )
        n_end = sum(r.end for r in rollers)
        if n_end < 2:
            self.fail(s.line, f"{s.label} has {n_end} 'end' roller(s); "
                              "expected at least two 'roller BODY RADIUS end' lines")
        self.tracks.append(Track(name=s.name, root=root, plane=v["plane"], shoes=v["shoes"], pitch=v["pitch"],
                                 mass=v["mass"], cg=v["cg"], inertia=v["inertia"], fext=v["fext"],
                                 rollers=rollers, pad=v["pad"], thickness=v["thickness"],
                                 kn=v["kn"], kt=v["kt"], mu=v["mu"], line=s.line, pitch_line=s.at("pitch")))

    def add_tire(self, s: _Stmt) -> None:
        self.unique(s)
        v = s.vals
        body = self.body_ref(v["wheel"], s.at("wheel"), f"'wheel' in {s.label}", allow_base=False)
        b = self.bodies[body]
        if b.joint != "revolute":
            self.fail(s.at("wheel"), f"{s.label} is on body '{b.name}', whose joint is {b.joint}; expected a wheel "
                                     "that spins: a body on a revolute joint about its spin axis")
        if not b.fext:
            self.fail(s.at("wheel"), f"{s.label} is on body '{b.name}', which lacks 'fext 1': the tire's forces "
                                     "would be silently dropped; expected 'fext 1' in its block")
        for t in self.tires:
            if t.body == body:
                self.fail(s.line, f"{s.label} is on body '{b.name}', which already has tire '{t.name}' (line "
                                  f"{t.line}); expected one tire per wheel")
        data = Path(v["data"])
        if not data.is_absolute() and self.path != "<string>":
            data = Path(self.path).resolve().parent / data
        if not data.is_file():
            self.fail(s.at("data"), f"{s.label}'s data file '{v['data']}' does not exist (looked for {data}); "
                                    "expected a Chrono tire file (TMeasyTire or FialaTire JSON), relative to the "
                                    "model file's directory")
        self.tires.append(Tire(name=s.name, body=body, data=str(data), contact=v["contact"], line=s.line,
                               data_line=s.at("data")))

    def add_ground(self, s: _Stmt) -> None:
        if self.ground is not None:
            self.fail(s.line, f"second ground block (first at line {self.ground.line}); expected a single ground")
        kind, params = s.vals["terrain"]
        rows = s.vals["heights"]  # [(row, line), ...] in file order
        heights = None
        if kind != "grid" and rows:
            self.fail(rows[0][1], f"'heights' given for 'terrain {kind}' in ground; "
                                  "expected heights only with 'terrain grid x0 y0 dx dy'")
        if kind == "grid":
            if len(rows) < _STENCIL:
                lines = [ln for _, ln in rows]
                where = f" (line {lines[0]})" if len(rows) == 1 else f" (lines {lines[0]}-{lines[-1]})" if rows else ""
                self.fail(s.at("terrain"), f"'terrain grid' in ground has {len(rows)} 'heights' row(s){where}; "
                                           f"expected at least {_STENCIL} 'heights h0 h1 ...' lines of at least "
                                           f"{_STENCIL} values each (bicubic interpolation needs a "
                                           f"{_STENCIL}x{_STENCIL} stencil)")
            nx, first_line = len(rows[0][0]), rows[0][1]
            for row, ln in rows[1:]:
                if len(row) != nx:
                    self.fail(ln, f"'heights' row in ground has {len(row)} values, the first row (line {first_line}) "
                                  f"has {nx}; expected every row the same length")
            heights = _frozen([row for row, _ in rows])  # (ny, nx): row j is y = y0 + j·dy
        self.ground = Ground(terrain=kind, params=params, kn=s.vals["kn"], kt=s.vals["kt"], mu=s.vals["mu"],
                             line=s.line, heights=heights)


# ---------------------------------------------------------------- public API


def parse(text: str, path: str = "<string>", name: str | None = None, assemble: bool = True) -> Model:
    """The Model described by `.mech` source `text`; errors are located in `path`.

    With `assemble`, track bands are expanded into bodies and a model with loops
    gets its design pose closed onto them (and fails here if it cannot be);
    without, only the text is checked and the bands stay unexpanded.
    """
    stmts, settings = _read(text, path)
    model = _Builder(path, stmts).model(Path(path).stem if name is None else name, text, settings)
    return assemble_model(model) if assemble else model


def assemble_model(model: Model) -> Model:
    """The model with its track bands expanded into bodies (mechdyn/core/tracks.py) and its design pose closed
    onto the loop constraints (without loops or tracks, the model itself), checked there (_check_design_pose).

    The written bodies are assembled first, so the rollers are located where their own loops put them; the
    bands are then laid around them and the whole pose is closed once more, to round-off."""
    if model.loops or model.tracks:
        q = _closed(model, model.q0())
        if not model.bands_expanded:
            model, q = expand_tracks(model, q)
            q = _closed(model, q)
        model = replace(model, q_design=q)
    _check_design_pose(model)
    return model


TSDA_GAP = 1e-9  # of the scale max(1 m, |p_A|, |p_B|): a tsda's points closer than this at the design pose coincide


def _check_design_pose(model: Model) -> None:
    """Refuse what would leave the dynamics undefined at the design pose, at the line of the statement at fault
    (the earlier line when there are several): a loop whose constraint rows are redundant there (core/loops.py
    redundant_rows: the KKT system is singular, and a structural redundancy is a zero pivot in the generated
    solve), and a tsda whose two points coincide there (the direction of a zero-length spring is undefined,
    and its force divides by its length)."""
    from .kinematics import forward_kinematics, point_state  # here: the rest of the parser needs no kinematics
    from .loops import redundant_rows

    q = model.q0()
    found: list[tuple[int, str]] = []
    if model.loops:
        redundant, rank = redundant_rows(model, q)
        if redundant:
            found.append(_redundant_loop(model, redundant[0], rank))
    kin = forward_kinematics(model, q) if model.tsdas else None
    for e in model.tsdas:
        a, b = model.pois[e.poi_a], model.pois[e.poi_b]
        pa, pb = point_state(model, kin, a.body, a.pos)[0], point_state(model, kin, b.body, b.pos)[0]
        gap, tol = float(np.linalg.norm(pb - pa)), TSDA_GAP * max(1.0, float(np.abs(pa).max()), float(np.abs(pb).max()))
        if not gap > tol:
            where = (f"which coincide at the design pose (at {' '.join(f'{x:.6g}' for x in pa)})" if gap == 0 else
                     f"which are only {gap:.3g} m apart at the design pose")
            found.append((e.line, f"tsda '{e.name}' joins poi '{a.name}' and poi '{b.name}', {where}; expected them "
                                  f"more than {tol:.3g} m apart there: a spring of zero length has no direction"))
            break
    if model.drivers and model.loops and not found:
        found += _driver_faults(model, q)
    if found:
        line, msg = min(found)
        raise MechError(model.path, line, msg)


def _driver_faults(model: Model, q: np.ndarray) -> list[tuple[int, str]]:
    """(line, message) for the first driver that over-constrains the loops at the design pose (the rows lose
    rank once its coordinate, and the earlier drivers', are prescribed), and for each driver whose motion takes
    its coordinate where the loops cannot close (either end of its range, the other drivers at the design pose)."""
    _, K = closure(model, q)
    rank = np.linalg.matrix_rank(K, tol=1e-9 * max(1.0, np.abs(K).max()))
    held: list[int] = []
    for d in model.drivers:
        held.append(model.vidx[d.body])
        Kf = np.delete(K, held, axis=1)
        if np.linalg.matrix_rank(Kf, tol=1e-9 * max(1.0, np.abs(K).max())) < rank:
            lp = loop_of_row(model, int(np.argmax(np.abs(K[:, held[-1]]))))
            return [(d.line, f"driver '{d.name}' over-constrains the loops: with its coordinate prescribed the "
                             f"rows lose rank at the design pose (loop '{lp.name}', line {lp.line}, moves it); "
                             "expected a coordinate the loops leave free")]
    faults = []
    for d in model.drivers:
        why = reach_fault(model, q, held, model.qidx[d.body], motion.reach(d.motion))
        if why:
            faults.append((d.line, f"driver '{d.name}' ({d.motion.describe()}) is out of its joint's reach: {why}; "
                                   "expected a motion the mechanism can follow"))
    return faults


_ROW_NAMES = {"x": "x_p", "y": "y_p", "z": "z_p", "u": "u", "w": "w", "as": "a_s", "ws": "w_s"}


def _redundant_loop(model: Model, row: int, rank: int) -> tuple[int, str]:
    """(line, message) for the loop holding K's first redundant row at the design pose."""
    from .model import LOOP_ROWS

    k = row
    for lp in model.loops:  # the loop of the row, and the row's place in it
        if k < lp.nc:
            break
        k -= lp.nc
    kind, *axes = LOOP_ROWS[lp.joint][k]
    shown = ("(d·d − L²)/2" if kind == "dist" else f"{_ROW_NAMES[axes[0]]}·d" if kind == "sep" else
             "·".join(_ROW_NAMES[x] for x in axes))
    band = next((t for t in model.tracks if t.expanded and lp.succ == t.first_shoe + t.shoes - 1), None)
    hint = (f"check the rollers of track '{band.name}'" if band is not None else
            "close a planar loop with point-on-line along the pin axis, not revolute" if lp.joint == "revolute" else
            "its length must change as the joints move: check anchor_pred and anchor_succ" if lp.joint == "distance"
            else "check anchor_pred and anchor_succ" if lp.joint == "spherical" else
            "check its axis, anchor_pred and anchor_succ")
    return lp.line, (f"loop '{lp.name}' ({lp.joint}) is redundant at the design pose: its row {k + 1} of "
                     f"{lp.nc} ({shown}) constrains nothing the tree's joints and earlier loops leave free (rank(K) "
                     f"{rank} < nc {model.nc}); expected independent rows ({hint})")


def _closed(model: Model, q: np.ndarray) -> np.ndarray:
    """q projected onto the loops, an AssemblyError turned into a MechError at the worst loop's line."""
    if not model.loops:
        return q
    try:
        return project_q(model, q)
    except AssemblyError as e:
        phi, _ = closure(model, q)
        lp = loop_of_row(model, int(np.argmax(np.abs(phi))))
        band = next((t for t in model.tracks if t.expanded and lp.succ == t.first_shoe + t.shoes - 1), None)
        hint = (f"check the rollers of track '{band.name}'" if band is not None else
                f"check anchor_pred, anchor_succ and length of loop '{lp.name}'")
        raise MechError(model.path, lp.line, f"cannot assemble the design pose: {e}; expected anchors that "
                        f"can meet ({hint})") from None


def load_model(spec: str | os.PathLike[str]) -> Model:
    """Load a `.mech` file, or a model of the repository's models/ directory by bare name (URDF and MJCF files:
    mechdyn.imports.load_model)."""
    from .errors import capped, listed

    given = Path(spec)
    if given.is_file():
        return _load(given, str(spec))
    named = MODELS_DIR / f"{spec}.mech"
    if str(spec) == given.name and named.is_file():
        return _load(named, _display(named))
    names = sorted(p.stem for p in MODELS_DIR.glob("*.mech"))
    raise ModelNotFound(capped(f"no model file or model name '{spec}'; expected a path to a .mech, .urdf or MJCF .xml file or one of: "
                               f"{listed(names, 8) or '(models/ is empty)'}{_hint(str(spec), names)}"))


def _display(p: Path) -> str:
    """`p` relative to the working directory when it lies below it, as users type paths."""
    try:
        return str(p.relative_to(Path.cwd()))
    except ValueError:
        return str(p)


def _load(file: Path, path: str) -> Model:
    data = file.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        msg = f"byte 0x{data[e.start]:02x} is not valid UTF-8; expected a UTF-8 text file"
        raise MechError(path, line, msg) from None
    return parse(text, path)
