"""Random mechanisms with turned joint frames and joint axes in any direction, written as `.mech` text.

The checks of general frames (tests/core/test_turned_frames.py) run these: trees and loop models with floating
bodies, each joint frame turned by a random rpy or quaternion, each axis one of x, y, z, -x, -y, -z or an oblique
vector. `aligned=True` writes the same mechanism with every rotation left out and every axis +z (the same random
numbers drawn, so the same topology, masses and points), the baseline a turned model's operation count is set
against.

Loops are written so that they close at the design pose: a spherical or distance loop between two bodies'
design-pose points, so the parser's assembly has nothing to do.
"""
from __future__ import annotations

import dataclasses as dc

import numpy as np
from scipy.spatial.transform import Rotation

from mechdyn.core.kinematics import forward_kinematics, point_state
from mechdyn.core.model import BASE, Model
from mechdyn.core.parse import parse
from mechdyn.core.spatial import exact_units

AXES = ("x", "y", "z", "-x", "-y", "-z")


@dc.dataclass(frozen=True)
class Spec:
    """What a random model holds."""
    bodies: int = 6
    floating: bool = True  # a floating root body
    loops: int = 0  # spherical or distance closures between two bodies of different branches
    aligned: bool = False  # no rotations, every axis +z: the same topology and masses, frames aligned
    chain: bool = False  # each body the child of the one before it: one long chain, not a random tree
    springs: int | None = None  # TSDAs between neighbours, the first ones (None: between every pair)


def _fmt(x) -> str:
    return " ".join(f"{v:.17g}" for v in np.atleast_1d(x))


def _inertia(rng: np.random.Generator, m: float) -> np.ndarray:
    a, b, c = rng.uniform(0.2, 1.0, 3) * 0.05 * m
    R = Rotation.random(random_state=rng.integers(2**31)).as_matrix()
    I = R @ np.diag([b + c, a + c, a + b]) @ R.T
    return np.array([I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]])


def _axis(rng: np.random.Generator) -> str:
    if rng.uniform() < 0.5:
        return str(rng.choice(AXES))
    v = rng.normal(size=3)
    return _fmt(v / np.linalg.norm(v))


def _rotation(rng: np.random.Generator) -> str:
    R = Rotation.random(random_state=rng.integers(2**31))
    if rng.uniform() < 0.5:
        return "rpy " + _fmt(R.as_euler("xyz"))  # scipy's extrinsic xyz is URDF's fixed-axis roll, pitch, yaw
    x, y, z, w = R.as_quat()
    return "quat " + _fmt([w, x, y, z])


def random_mech(seed: int, spec: Spec = Spec()) -> str:
    """The `.mech` text of a random mechanism (see the module docstring)."""
    rng = np.random.default_rng(seed)
    lines = [f"# random mechanism, seed {seed}, {spec}", "gravity 0.3 -0.2 -9.81"]
    parents: list[int] = []
    for i in range(spec.bodies):
        floating = spec.floating and i == 0
        parent = -1 if floating or i == 0 else int(rng.integers(-1 if not spec.floating else 0, i))
        parent = i - 1 if spec.chain and i > 0 else parent  # drawn either way: the other numbers stay the same
        parents.append(parent)
        # the axis and the rotation are drawn whether they are written or not, so that aligned=True draws the
        # same numbers: the same topology, masses and points, only the frames differ
        joint = "floating"
        if not floating:
            kind, axis = rng.choice(["revolute", "revolute", "prismatic"]), _axis(rng)
            joint = f"{kind} {'z' if spec.aligned else axis}"
        m = float(rng.uniform(0.5, 3.0))
        block = [f"body b{i}", f"  parent {'base' if parent < 0 else f'b{parent}'}", f"  joint {joint}",
                 f"  xtree {_fmt(rng.uniform(-0.4, 0.4, 3) + (np.array([0, 0, 1.0]) if floating else 0))}"]
        rotation = _rotation(rng)
        if not spec.aligned:
            block.append("  " + rotation)
        block += [f"  mass {m:.17g}", f"  cg {_fmt(rng.uniform(-0.15, 0.15, 3))}",
                  f"  inertia {_fmt(_inertia(rng, m))}", "  fext 1", "end"]
        lines += block
    lines += [f"poi p{i} b{i} {_fmt(rng.uniform(-0.2, 0.2, 3))}" for i in range(spec.bodies)]
    lines += [f"tsda s{i}\n  between p{i} p{i + 1}\n  k 20\n  c 0.5\n  l0 0.1\nend" for i in range(spec.bodies - 1)][:spec.springs]
    lines += [f"rsda r{i}\n  joint b{i}\n  k 3\n  c 0.1\nend" for i in range(spec.bodies) if parents[i] >= 0 or
              not (spec.floating and i == 0)][:2]
    text = "\n".join(lines) + "\n"
    return text + _loops(text, parents, spec, rng)


def _loops(tree: str, parents: list[int], spec: Spec, rng: np.random.Generator) -> str:
    """Loop blocks that close at the tree's design pose: spherical ones from the base to a leaf (through the
    floating root's six coordinates, so never redundant), distance ones between two leaves."""
    if not spec.loops:
        return ""
    model = parse(tree)
    kin = forward_kinematics(model, model.q0())
    leaves = [i for i in range(spec.bodies) if i not in parents]
    out = []
    held = set()  # leaves already pinned to the base: a second spherical closure there would repeat the first
    for k in range(spec.loops):
        spherical = spec.floating and k % 2 == 0 and leaves[k % len(leaves)] not in held
        a, b = leaves[k % len(leaves)], leaves[(k + 1) % len(leaves)]
        a, b = (-1, a) if spherical or a == b else (a, b)
        held |= {b} if spherical else set()
        pa = rng.uniform(-0.2, 0.2, 3)
        if spherical:  # the successor's anchor where the predecessor's is, at the design pose
            P = point_state(model, kin, a, pa)[0]
            pb = kin.R[b].T @ (P - kin.p[b])
        else:
            pb = rng.uniform(-0.2, 0.2, 3)
        out += [f"loop c{k}", f"  joint {'spherical' if spherical else 'distance'}",
                f"  pred {'base' if a < 0 else f'b{a}'}", f"  succ b{b}", f"  anchor_pred {_fmt(pa)}",
                f"  anchor_succ {_fmt(pb)}", "end"]
    return "\n".join(out) + "\n"


def turn_frames(model: Model, Q: list[np.ndarray]) -> Model:
    """The same mechanism with body i's frame turned by Q[i] (B' = B Q): its joint frame turns with it (rot' =
    Q_pᵀ rot Q_i, xtree' = Q_pᵀ xtree), and its axis, CG, inertia, points and loop anchors are re-expressed in
    it. Floating bodies keep their frames (their q holds the attitude), as do loops with an axis (the loop
    triad is defined in both bodies' frames at once), so Q must be the identity for those."""
    T = lambda i: np.eye(3) if i == BASE else Q[i]  # noqa: E731
    for i, b in enumerate(model.bodies):
        if b.joint == "floating" and not np.array_equal(Q[i], np.eye(3)):
            raise ValueError(f"body '{b.name}' is floating: its frame is its q's, so it cannot be turned")
    for lp in model.loops:
        if lp.axis is not None and not (np.array_equal(T(lp.pred), np.eye(3)) and np.array_equal(T(lp.succ), np.eye(3))):
            raise ValueError(f"loop '{lp.name}' has an axis: its bodies' frames cannot be turned")
    bodies = tuple(b if b.joint == "floating" else
                   dc.replace(b, rot=T(b.parent).T @ b.rot @ Q[i], xtree=T(b.parent).T @ b.xtree, axis=Q[i].T @ b.axis,
                              cg=Q[i].T @ b.cg, inertia=Q[i].T @ b.inertia @ Q[i])
                   for i, b in enumerate(model.bodies))
    pois = tuple(dc.replace(p, pos=T(p.body).T @ p.pos) for p in model.pois)
    loops = tuple(dc.replace(lp, anchor_pred=T(lp.pred).T @ lp.anchor_pred, anchor_succ=T(lp.succ).T @ lp.anchor_succ)
                  for lp in model.loops)
    return dc.replace(model, bodies=bodies, pois=pois, loops=loops, name=model.name + "_turned")


def unturned(model: Model) -> Model:
    """The same mechanism with every single-DOF body's frame turned onto the base's axes at the design pose (every
    joint coordinate 0): no joint frame turns, and each axis is the joint's direction in the base frame. For a model
    written with URDF's turned frames, it is the twin an aligned-frame author would have written."""
    kin = forward_kinematics(model, model.q_nominal())
    Q = [np.eye(3) if b.joint == "floating" else kin.R[i].T for i, b in enumerate(model.bodies)]
    out = turn_frames(model, Q)
    return dc.replace(out, name=model.name + "_unturned",
                      bodies=tuple(b if b.joint == "floating" else dc.replace(b, axis=exact_units(b.axis), rot=np.eye(3))
                                   for b in out.bodies))
