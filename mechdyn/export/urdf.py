"""URDF export, and the state map between mechdyn and Pinocchio's URDF conventions.

Layout of the file: a root link `base` (the fixed base), then one link and one
joint per body, both named after the body. The joint's origin is the body's
xtree (no rotation: at the design pose every body frame is aligned with the
base), its axis the body's x, y or z; revolute and prismatic joints get
unbounded limits (`continuous` would make Pinocchio use a (cos, sin) pair).
A floating body is a `floating` joint at the base origin: its position lives
in q, as in mechdyn. Inertials sit at the CG with rpy 0, so mass, CG and the
inertia tensor about the CG (ixy etc. are tensor entries, as in .mech) are
written exactly. URDF has no gravity element, no closed chains and no force
elements: gravity goes in a comment (set it on the engine's model), and loops,
tsda and rsda are listed as omitted.

State map (Pinocchio's free-flyer: q = [x y z, qx qy qz qw] with the position in
the parent frame; v = [v; ω] in the local frame; tau = [force; moment] about
the body origin, local frame):
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from mechdyn.core.model import BASE, Model

from .common import Exported, direction, num, rpy, unsupported, vec, xml_escape
UNBOUNDED = "1e+30"
ROOT = "base"

# mechdyn's quaternion is [w, x, y, z]; Pinocchio's is [x, y, z, w]: these are the
# mechdyn slots that fill Pinocchio's four quaternion slots in order.
PIN_QUAT = (1, 2, 3, 0)

# body name -> (first q slot, first v slot[, q slots]) in the engine; 2 q slots: a continuous joint's (cos, sin)
Layout = Mapping[str, tuple[int, ...]]


def export_urdf(model: Model) -> Exported:
    """The model's spanning tree as URDF text, and what URDF cannot express."""
    name = lambda i: ROOT if i == BASE else model.bodies[i].name  # noqa: E731
    g = model.gravity
    out = ['<?xml version="1.0"?>',
           f"<!-- exported by mechdyn from {xml_escape(model.path)} -->",
           f"<!-- gravity {vec(g)} (URDF has no gravity element: set it on the engine's model) -->",
           f'<robot name="{xml_escape(model.name)}">',
           f'  <link name="{ROOT}"/>']
    for b in model.bodies:
        I = b.inertia
        out += [f'  <link name="{b.name}">',
                "    <inertial>",
                f'      <origin xyz="{vec(b.cg)}" rpy="0 0 0"/>',
                f'      <mass value="{num(b.mass)}"/>',
                f'      <inertia ixx="{num(I[0, 0])}" ixy="{num(I[0, 1])}" ixz="{num(I[0, 2])}" '
                f'iyy="{num(I[1, 1])}" iyz="{num(I[1, 2])}" izz="{num(I[2, 2])}"/>',
                "    </inertial>",
                "  </link>"]
    for b in model.bodies:
        kind = "floating" if b.joint == "floating" else b.joint
        out += [f'  <joint name="{b.name}" type="{kind}">',
                f'    <parent link="{name(b.parent)}"/>',
                f'    <child link="{b.name}"/>',
                f'    <origin xyz="{"0 0 0" if b.joint == "floating" else vec(b.xtree)}" '
                f'rpy="{"0 0 0" if b.joint == "floating" else rpy(b.rot)}"/>']
        if b.joint != "floating":
            out += [f'    <axis xyz="{direction(b.axis)}"/>',
                    f'    <limit lower="-{UNBOUNDED}" upper="{UNBOUNDED}" effort="{UNBOUNDED}" velocity="{UNBOUNDED}"/>']
        out.append("  </joint>")
    out += ["</robot>", ""]
    omitted = [f"gravity {vec(g)}: URDF has no gravity element (written in a comment; set it on the engine's model)"]
    omitted += [f"loop '{lp.name}' ({lp.joint}, {model.path}:{lp.line}): URDF describes trees only, no closed chains"
                for lp in model.loops]
    omitted += [f"tsda '{e.name}' ({model.path}:{e.line}): URDF has no force elements" for e in model.tsdas]
    omitted += [f"rsda '{e.name}' ({model.path}:{e.line}): URDF has no force elements" for e in model.rsdas]
    omitted += unsupported(model)
    return Exported("urdf", "\n".join(out), tuple(omitted))


def to_pinocchio(model: Model, layout: Layout, nq: int, nv: int, q: np.ndarray, qd: np.ndarray,
                 tau: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """mechdyn (q, qd, tau) in Pinocchio's coordinates for a model built from `export_urdf`.

    Floating: q [w x y z, r] -> [r, x y z w]; qd [ω; v] -> [v; ω]; tau [n; f] -> [f; n].
    """
    qp, vp, tp = np.zeros(nq), np.zeros(nv), np.zeros(nv)
    for b, iq, iv in zip(model.bodies, model.qidx, model.vidx):
        jq, jv, *nqj = layout[b.name]
        if nqj == [2]:
            qp[jq], qp[jq + 1], vp[jv], tp[jv] = np.cos(q[iq]), np.sin(q[iq]), qd[iv], tau[iv]
        elif b.joint == "floating":
            qp[jq : jq + 3] = q[iq + 4 : iq + 7]
            qp[jq + 3 : jq + 7] = q[iq : iq + 4][list(PIN_QUAT)]
            vp[jv : jv + 3], vp[jv + 3 : jv + 6] = qd[iv + 3 : iv + 6], qd[iv : iv + 3]
            tp[jv : jv + 3], tp[jv + 3 : jv + 6] = tau[iv + 3 : iv + 6], tau[iv : iv + 3]
        else:
            qp[jq], vp[jv], tp[jv] = q[iq], qd[iv], tau[iv]
    return qp, vp, tp


def from_pinocchio_v(model: Model, layout: Layout, a: np.ndarray) -> np.ndarray:
    """A velocity-space vector (v, a or ddq) from Pinocchio's coordinates back to mechdyn's."""
    out = np.zeros(model.nv)
    for b, iv in zip(model.bodies, model.vidx):
        jv = layout[b.name][1]
        if b.joint == "floating":
            out[iv : iv + 3], out[iv + 3 : iv + 6] = a[jv + 3 : jv + 6], a[jv : jv + 3]
        else:
            out[iv] = a[jv]
    return out
