"""An imported model as a tree of parts and joints, and the `.mech` text it becomes.

The importers (urdf.py, mjcf.py) describe what they read as parts (URDF links, MJCF bodies) joined by joints;
`mech_text` merges every part fixed to its parent into the moving part it hangs from (mass, cg and inertia
combined exactly, its frame kept as a point of interest), writes each body once with the source of its numbers
in comments, and `load` parses that text. So an imported model and the `.mech` file `mechdyn import` writes are
one model, and an error in a number the format refuses is reported at the line of the file it came from.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field

import numpy as np

from mechdyn.core.errors import MechError
from mechdyn.core.model import JointInfo, Model
from mechdyn.core.spatial import R_to_quat, rpy_to_R
from mechdyn.export.common import direction, num, rpy

MOVING = ("revolute", "prismatic")
# the format's smallest nonzero magnitudes (docs/mech-format.md, "Bounds"): a smaller number read from a file is
# round-off (a cos(π/2) of 6e-17 in an axis) and is written as 0
SMALLEST = {"length": 1e-15, "direction": 1e-15, "angle": 1e-15, "inertia": 1e-27}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


@dataclass
class Part:
    """A rigid part as the file gives it: a URDF link, an MJCF body (or the massless frame between two joints of
    one MJCF body). Its inertia is about its centre of mass, in its own axes."""

    name: str
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))
    source: str = ""  # where mass, com and inertia were read, for the comment
    line: int = 0  # the line of its inertial element (its own line when it has none; 0 when the file gives none)


@dataclass
class Joint:
    """A joint from part `parent` to part `child`: the child's frame at coordinate 0 is (R, p) in the parent's
    frame; the child turns about, or slides along, `axis` (in its own frame)."""

    name: str
    kind: str  # revolute, prismatic, fixed or floating
    parent: str
    child: str
    R: np.ndarray
    p: np.ndarray
    axis: np.ndarray = field(default_factory=lambda: np.zeros(3))
    info: JointInfo | None = None
    source: str = ""  # the joint as the file writes it, for the comment
    line: int = 0


@dataclass
class Tree:
    """What an importer read: its parts, its joints, and the file's own words for the header."""

    path: str  # the file, as the user named it (messages)
    fmt: str  # "URDF" or "MJCF"
    name: str
    parts: dict[str, Part]
    joints: list[Joint]
    root: str  # the part nothing moves: the URDF root link, MJCF's world body
    floating: bool  # a free joint between the base and the root part (URDF --floating)
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -9.81]))
    notes: list[str] = field(default_factory=list)  # what was read but left out, for the header


def _clean(x: float, kind: str) -> float:
    return 0.0 if abs(x) < SMALLEST[kind] else float(x)


def _vec(v, kind: str = "length") -> str:
    return " ".join(_fmt(_clean(x, kind)) for x in np.asarray(v, dtype=float))


def _fmt(x: float) -> str:
    return "0" if x == 0 else num(x)


def _axis(a: np.ndarray) -> str:
    """The axis as the format reads best: x, -y, or its three components."""
    a = np.array([_clean(x, "direction") for x in a])
    for k, name in enumerate("xyz"):
        for sign, mark in ((1.0, ""), (-1.0, "-")):
            e = np.zeros(3)
            e[k] = sign
            if np.array_equal(a / np.linalg.norm(a), e):
                return mark + name
    return direction(a)


class Names:
    """Names the format accepts, unique over bodies and points, from the file's names: characters outside
    [A-Za-z0-9_.-] become '_', a leading digit gets a '_', and 'base' (the format's fixed base) and repeats get
    a suffix."""

    def __init__(self) -> None:
        self.taken: set[str] = {"base"}
        self.of: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        if name in self.of:
            return self.of[name]
        out = re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "_"
        if not _NAME.fullmatch(out):
            out = "_" + out
        stem, k = out, 1
        while out in self.taken:
            k += 1
            out = f"{stem}_{k}"
        self.taken.add(out)
        self.of[name] = out
        return out


@dataclass
class _Body:
    """A body of the written model: the moving part it is named after, the parts fixed to it, its joint."""

    part: str
    joint: Joint | None  # None: the floating root
    parent: str  # written name of the parent body, or "base"
    R: np.ndarray
    p: np.ndarray
    merged: list[tuple[Part, np.ndarray, np.ndarray]] = field(default_factory=list)  # (part, R, p) in this body


def _order(tree: Tree) -> list[Joint]:
    """The joints parents first, depth first in file order; a part that is a child twice, a joint from an
    unknown part, two roots or a cycle is refused at the joint's line."""
    by_parent: dict[str, list[Joint]] = {}
    child_of: dict[str, Joint] = {}
    for j in tree.joints:
        for end in (j.parent, j.child):
            if end not in tree.parts:
                raise MechError(tree.path, j.line, f"joint '{j.name}' names link '{end}', which the file does not "
                                                   "declare; expected an existing link")
        if j.child in child_of:
            first = child_of[j.child]
            raise MechError(tree.path, j.line, f"link '{j.child}' is the child of joint '{j.name}' and of joint "
                                               f"'{first.name}' (line {first.line}); expected a tree: one parent "
                                               "per link")
        if j.child == tree.root:
            raise MechError(tree.path, j.line, f"joint '{j.name}' makes the root link '{tree.root}' a child; "
                                               "expected a tree with one root")
        child_of[j.child] = j
        by_parent.setdefault(j.parent, []).append(j)
    roots = [name for name in tree.parts if name not in child_of]
    if len(roots) > 1:
        others = [r for r in roots if r != tree.root]
        part = tree.parts[others[0]]
        raise MechError(tree.path, part.line, f"the links form {len(roots)} trees: '{tree.root}' and "
                                              f"'{others[0]}' are both roots (no joint has them as child); "
                                              "expected one root")
    out: list[Joint] = []
    stack = list(reversed(by_parent.get(tree.root, [])))
    while stack:
        j = stack.pop()
        out.append(j)
        stack += reversed(by_parent.get(j.child, []))
    if len(out) < len(tree.joints):
        j = next(j for j in tree.joints if j not in out)
        raise MechError(tree.path, j.line, f"joint '{j.name}' is part of a cycle of links (link '{j.child}' cannot be "
                                           f"reached from the root '{tree.root}'); expected a tree")
    return out


def _bodies(tree: Tree, names: Names) -> tuple[list[_Body], dict[str, tuple[str, np.ndarray, np.ndarray]]]:
    """The written bodies parents first, and each part's owner: (body name or 'base', R, p in the owner's frame)."""
    bodies: list[_Body] = []
    owner: dict[str, tuple[str, np.ndarray, np.ndarray]] = {}
    root = tree.parts[tree.root]
    if tree.floating:
        b = _Body(root.name, None, "base", np.eye(3), np.zeros(3), [(root, np.eye(3), np.zeros(3))])
        bodies.append(b)
        owner[root.name] = (names(root.name), np.eye(3), np.zeros(3))
    else:
        owner[root.name] = ("base", np.eye(3), np.zeros(3))
    index = {names(b.part): b for b in bodies}
    for j in _order(tree):
        o, Ro, po = owner[j.parent]
        R, p = Ro @ j.R, po + Ro @ j.p
        child = tree.parts[j.child]
        if j.kind == "fixed":
            owner[j.child] = (o, R, p)
            if o != "base":
                index[o].merged.append((child, R, p))
            continue
        if j.kind == "floating" and o != "base":
            raise MechError(tree.path, j.line, f"floating joint '{j.name}' hangs link '{j.child}' from '{j.parent}', "
                                               "which moves; expected a floating joint only from the fixed root")
        b = _Body(child.name, j, o, R, p, [(child, np.eye(3), np.zeros(3))])
        bodies.append(b)
        index[names(child.name)] = b
        owner[j.child] = (names(child.name), np.eye(3), np.zeros(3))
    return bodies, owner


def combined(parts: list[tuple[Part, np.ndarray, np.ndarray]]) -> tuple[float, np.ndarray, np.ndarray]:
    """Mass, centre of mass and inertia about it of parts placed at (R, p) in one frame: the parallel-axis sum."""
    m = sum(pt.mass for pt, _, _ in parts)
    if m == 0:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    cs = [(pt.mass, p + R @ pt.com, R @ pt.inertia @ R.T) for pt, R, p in parts]
    c = sum(mi * ci for mi, ci, _ in cs) / m
    Ic = np.zeros((3, 3))
    for mi, ci, Ii in cs:
        d = ci - c
        Ic += Ii + mi * (d @ d * np.eye(3) - np.outer(d, d))
    return float(m), c, 0.5 * (Ic + Ic.T)


def mech_text(tree: Tree) -> tuple[str, dict[int, int]]:
    """The `.mech` text of `tree`, and for each of its lines the line of the source file its numbers came from."""
    names = Names()
    bodies, owner = _bodies(tree, names)
    if not bodies:
        raise MechError(tree.path, tree.parts[tree.root].line,
                        f"'{tree.root}' carries no moving joint (every joint is fixed); expected at least one "
                        "revolute, continuous or prismatic joint, or --floating for a free root")
    out: list[str] = []
    where: dict[int, int] = {}

    def put(text: str, line: int = 0) -> None:
        out.append(text)
        if line:
            where[len(out)] = line

    put(f"# {tree.name}: imported by mechdyn from {tree.path.rsplit('/', 1)[-1]} ({tree.fmt})")
    put("# Each body is a part with a moving joint; the parts fixed to it are merged into it (mass, cg and inertia")
    put("# combined exactly) and kept as points of interest. The comment above each body names its sources.")
    for note in tree.notes:
        put(f"# left out: {note}")
    put(f"gravity {_vec(tree.gravity, 'length')}")
    for b in bodies:
        j = b.joint
        m, c, Ic = combined(b.merged)
        put("")
        src = j.source if j else "a free joint between the base and the root (--floating)"
        put(f"# {b.part}: {src}", j.line if j else 0)
        for pt, _, _ in b.merged:
            put(f"#   {'inertial' if pt.name == b.part else 'merged'}: {pt.source}", pt.line)
        line = j.line if j else tree.parts[b.part].line
        put(f"body {names(b.part)}", line)
        put(f"  parent {b.parent}", line)
        put(f"  joint {'floating' if j is None or j.kind == 'floating' else f'{j.kind} {_axis(j.axis)}'}", line)
        if np.any(b.p):
            put(f"  xtree {_vec(b.p)}", line)
        if not np.allclose(b.R, np.eye(3), rtol=0, atol=1e-15):
            put(_rotation(b.R), line)
        ln = tree.parts[b.part].line or line
        put(f"  mass {_fmt(m)}", ln)
        if np.any(c):
            put(f"  cg {_vec(c)}", ln)
        entries = (Ic[0, 0], Ic[1, 1], Ic[2, 2], Ic[0, 1], Ic[0, 2], Ic[1, 2])
        put(f"  inertia {' '.join(_fmt(_clean(x, 'inertia')) for x in entries)}", ln)
        if j is not None and j.info is not None:
            _info(put, j.info, j.line)
        put("end")
    pois = [(pt, o, p) for pt in tree.parts.values() for o, _, p in [owner.get(pt.name, (None, None, None))]
            if o is not None and names(pt.name) != o and pt.name != tree.root]
    if pois:
        put("")
        put("# the frames of the merged parts, by name, on the body they were merged into (their origins)")
        for pt, o, p in pois:
            put(f"poi {names(pt.name)} {o} {_vec(p)}", pt.line)
    return "\n".join(out) + "\n", where


# the format's largest magnitudes of the joint's reported quantities (docs/mech-format.md, "Bounds"); a file's
# 1e30 or 1e16 means "no limit", and is written as a comment
LARGEST = {"limit": 1e4, "effort": 1e12, "velocity": 1e4, "joint_damping": 1e12, "joint_friction": 1e12}


def _rotation(R: np.ndarray) -> str:
    """The body's rotation key: URDF's rpy, which reads best, unless it does not give R back to round-off (at
    gimbal lock, a pitch of ±π/2), then the quaternion."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # scipy's gimbal-lock warning: the check below decides
        angles = [_clean(float(x), "angle") for x in rpy(R).split()]
    if np.allclose(rpy_to_R(np.array(angles)), R, rtol=0, atol=1e-14):
        return f"  rpy {' '.join(_fmt(x) for x in angles)}"
    return f"  quat {' '.join(num(x) for x in R_to_quat(R))}"


def _info(put, info: JointInfo, line: int) -> None:
    put(f"  joint_name {Names()(info.name)}", line)
    values = [("limit", (info.lower, info.upper)), ("effort", (info.effort,)), ("velocity", (info.velocity,)),
              ("joint_damping", (info.damping,)), ("joint_friction", (info.friction,))]
    for key, v in values:
        if v[0] is None:
            continue
        text = " ".join(_fmt(0.0 if abs(x) < 1e-9 else x) for x in v)
        if max(abs(x) for x in v) > LARGEST[key]:
            put(f"  # {key} {text} in the file: beyond the format's range, read as no {key}", line)
        else:
            put(f"  {key} {text}", line)


def load(tree: Tree, name: str | None = None) -> tuple[Model, str]:
    """The model of `tree`, parsed from its `.mech` text, and the text. A number the format refuses is reported
    at the line of the source file it came from."""
    from mechdyn.core.parse import parse

    text, where = mech_text(tree)
    try:
        model = parse(text, path=tree.path, name=name or tree.name)
    except MechError as e:
        raise MechError(tree.path, where.get(e.line, 0), f"{e.msg} (in the imported .mech text, line {e.line})") \
            from None
    return model, text
