"""URDF import: a robot description file read into a `Tree` (mechdyn/imports/tree.py).

The XML is parsed strictly with lxml first, so malformed XML is one error at the parser's line (yourdfpy would
recover from it silently); the URDF itself is read by yourdfpy (docs/import.md says why this library), without
meshes. lxml's element lines locate every later error at its link or joint.

Read: links' inertials (origin xyz/rpy, mass, inertia tensor), and joints' origin xyz/rpy, axis, limit, dynamics
and mimic. Revolute, continuous, prismatic, fixed and floating joints are imported; planar joints are refused.
A mimic joint is refused unless `mimic="free"`, which imports it as an independent joint (what Pinocchio's
buildModelFromUrdf does by default): mechdyn has no coupling constraint between joint coordinates yet.
"""
from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np

from mechdyn.core.errors import MechError
from mechdyn.core.model import JointInfo

from .tree import Joint, Part, Tree

MIMIC = ("refuse", "free")


def _lines(path: str) -> tuple[dict[tuple[str, str], int], dict[str, dict[str, str]], str]:
    """The line of each link, joint and link inertial element by name; each joint's origin and axis as the file
    writes them (for the comment above its body); and the robot's name. Malformed XML is a MechError at the
    parser's line."""
    from lxml import etree

    try:
        root = etree.parse(path, etree.XMLParser(remove_comments=True)).getroot()
    except etree.XMLSyntaxError as e:
        line = e.lineno or 0
        raise MechError(path, line, f"malformed XML: {e.msg}; expected a URDF robot description") from None
    except OSError as e:
        raise MechError(path, 0, f"cannot read the file: {e}") from None
    if root.tag != "robot":
        raise MechError(path, root.sourceline or 0, f"the root element is <{root.tag}>; expected <robot>")
    lines: dict[tuple[str, str], int] = {}
    written: dict[str, dict[str, str]] = {}
    for kind in ("link", "joint"):
        for el in root.findall(kind):
            name = el.get("name")
            if name is None:
                raise MechError(path, el.sourceline or 0, f"a <{kind}> without a name; expected <{kind} name=\"...\">")
            if (kind, name) in lines:
                raise MechError(path, el.sourceline or 0, f"{kind} '{name}' is declared twice (first at line "
                                                          f"{lines[kind, name]}); expected unique {kind} names")
            lines[kind, name] = el.sourceline or 0
            inertial = el.find("inertial")
            if inertial is not None:
                lines["inertial", name] = inertial.sourceline or 0
            if kind == "joint":
                for tag in ("parent", "child"):
                    ref = el.find(tag)
                    if ref is None or ref.get("link") is None:
                        raise MechError(path, el.sourceline or 0, f"joint '{name}' has no <{tag} link=\"...\">; "
                                                                  f"expected one")
                written[name] = {tag: " ".join(f'{a}="{sub.get(a)}"' for a in attrs if sub.get(a) is not None)
                                 for tag, attrs in (("origin", ("xyz", "rpy")), ("axis", ("xyz",)))
                                 if (sub := el.find(tag)) is not None}
    return lines, written, root.get("name") or Path(path).stem


def _finite(path: str, line: int, what: str, x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if not np.all(np.isfinite(x)):
        raise MechError(path, line, f"{what} is not finite ({' '.join(f'{v:g}' for v in x.ravel())}); expected numbers")
    return x


def _part(path: str, link, lines: dict[tuple[str, str], int]) -> Part:
    line = lines.get(("inertial", link.name), lines["link", link.name])
    inertial = link.inertial
    if inertial is None or inertial.mass is None:
        return Part(link.name, source=f"link {link.name} (line {line}): no inertial, massless", line=line)
    m = float(_finite(path, line, f"the mass of link '{link.name}'", inertial.mass))
    if m < 0:
        raise MechError(path, line, f"link '{link.name}' has mass {m:g}; expected a mass >= 0")
    T = _finite(path, line, f"the inertial origin of link '{link.name}'",
                inertial.origin if inertial.origin is not None else np.eye(4))
    I = _finite(path, line, f"the inertia of link '{link.name}'",
                inertial.inertia if inertial.inertia is not None else np.zeros((3, 3)))
    R = T[:3, :3]
    return Part(link.name, m, T[:3, 3].copy(), R @ I @ R.T,
                source=f"link {link.name} (line {line}): inertial mass, origin and inertia"
                       + ("" if np.allclose(R, np.eye(3), rtol=0, atol=0) else ", the inertia turned by its rpy"),
                line=line)


def _info(j) -> JointInfo:
    lim, dyn = j.limit, j.dynamics
    bounded = j.type in ("revolute", "prismatic") and lim is not None
    return JointInfo(
        name=j.name,
        lower=float(lim.lower) if bounded and lim.lower is not None else None,
        upper=float(lim.upper) if bounded and lim.upper is not None else None,
        effort=float(lim.effort) if lim is not None and lim.effort is not None else None,
        velocity=float(lim.velocity) if lim is not None and lim.velocity is not None else None,
        damping=float(dyn.damping) if dyn is not None and dyn.damping is not None else None,
        friction=float(dyn.friction) if dyn is not None and dyn.friction is not None else None)


def read(path: str, floating: bool = False, mimic: str = "refuse") -> Tree:
    """The URDF file at `path` as a Tree; `floating` adds a free joint at the root link."""
    import yourdfpy

    lines, written, robot_name = _lines(path)
    logging.getLogger("yourdfpy").setLevel(logging.ERROR)  # it logs, rather than raises, what it skips
    try:
        robot = yourdfpy.URDF.load(path, build_scene_graph=False, load_meshes=False,
                                   build_collision_scene_graph=False, load_collision_meshes=False).robot
    except (KeyError, ValueError, TypeError, AttributeError) as e:
        raise MechError(path, 0, f"not a URDF yourdfpy can read ({type(e).__name__}: {e}); expected a URDF robot "
                                 "description") from None
    parts = {link.name: _part(path, link, lines) for link in robot.links}
    joints: list[Joint] = []
    notes: list[str] = []
    for j in robot.joints:
        line = lines.get(("joint", j.name), 0)
        if j.type == "planar":
            raise MechError(path, line, f"joint '{j.name}' is planar; expected revolute, continuous, prismatic, "
                                        "fixed or floating (mechdyn has no planar tree joint)")
        if j.type not in ("revolute", "continuous", "prismatic", "fixed", "floating"):
            raise MechError(path, line, f"joint '{j.name}' has type '{j.type}'; expected revolute, continuous, "
                                        "prismatic, fixed or floating")
        if j.mimic is not None:
            if mimic == "refuse":
                raise MechError(path, line, f"joint '{j.name}' mimics joint '{j.mimic.joint}'; mechdyn has no "
                                            "coupling constraint between joint coordinates yet: expected no mimic "
                                            "joint, or --mimic free to import it as an independent joint (as "
                                            "Pinocchio does by default)")
            notes.append(f"mimic of joint {j.name} (line {line}) on {j.mimic.joint}: imported as an independent joint")
        T = _finite(path, line, f"the origin of joint '{j.name}'", j.origin if j.origin is not None else np.eye(4))
        kind = {"continuous": "revolute"}.get(j.type, j.type)
        axis = np.zeros(3)
        if kind in ("revolute", "prismatic"):
            axis = _finite(path, line, f"the axis of joint '{j.name}'", j.axis if j.axis is not None else [1, 0, 0])
            if not np.linalg.norm(axis) > 0:
                raise MechError(path, line, f"joint '{j.name}' has axis 0 0 0; expected a nonzero axis")
        text = written.get(j.name, {})
        source = (f"joint {j.name} ({j.type}, line {line}): origin {text.get('origin', '(none)')}"
                  + (f", axis {text.get('axis', '(none: 1 0 0)')}" if kind in ("revolute", "prismatic") else ""))
        joints.append(Joint(j.name, kind, j.parent, j.child, T[:3, :3].copy(), T[:3, 3].copy(), axis,
                            _info(j) if kind in ("revolute", "prismatic") else None, source, line))
        _check_angles(path, line, j.name, T[:3, :3])
    children = {j.child for j in joints}
    roots = [name for name in parts if name not in children]
    root = roots[0] if roots else robot.links[0].name
    return Tree(path, "URDF", robot_name, parts, joints, root, floating, notes=notes)


def _check_angles(path: str, line: int, name: str, R: np.ndarray) -> None:
    """A rotation matrix from the file's rpy must be orthonormal to round-off (a huge angle is not)."""
    if not np.allclose(R @ R.T, np.eye(3), atol=1e-9) or not math.isclose(np.linalg.det(R), 1.0, abs_tol=1e-9):
        raise MechError(path, line, f"the origin rpy of joint '{name}' does not give a rotation; expected finite "
                                    "angles")
