"""MJCF import: a MuJoCo model compiled by MuJoCo itself and read into a `Tree` (mechdyn/imports/tree.py).

MuJoCo's compiler resolves what MJCF leaves implicit (defaults, includes, frames, inertia from geoms, `childclass`,
angle units, `fusestatic`), so the importer reads the compiled `MjModel`, never the XML, and two tools cannot
disagree on what the file means. Read: the body tree (body_parentid, body_pos/body_quat at qpos0), each body's
inertial (body_mass, body_ipos/body_iquat and the principal body_inertia, turned into a full tensor in body axes),
its joints (jnt_type, jnt_pos, jnt_axis, qpos0, jnt_range/jnt_limited, jnt_actfrcrange, dof_damping,
dof_frictionloss) and opt.gravity.

Frames. MuJoCo moves a body by its joints in order, each one's axis and anchor (jnt_pos) in the body frame as the
joints before it left it (mj_kinematics): a hinge turns the frame about its anchor, a slide moves it along its
axis. mechdyn turns a body about its own origin, so each joint becomes a part whose origin is the joint's anchor:
the part sits at the MuJoCo frame shifted by +jnt_pos, and what hangs from it (its inertial, the next joint, the
child bodies) is shifted by −jnt_pos, which is exact. Several joints on one body are a chain of massless parts,
one joint each, in MuJoCo's order; the body's mass sits on the last. A body with no joint (and a mocap body) is
welded to its parent; a free joint (a child of the world only) is a floating body.

Coordinates. A hinge's or slide's mechdyn coordinate is MuJoCo's qpos − qpos0 (the joint's `ref`), and its limits
are shifted by the same qpos0. A free joint's qpos [r, w x y z] and qvel [ṙ in world axes, ω in body axes] map to
the floating body's q [w x y z, r] and qd [ω; v in body axes] as mechdyn.export.mjcf.to_mujoco writes.

Refused: ball joints (mechdyn has no spherical tree joint), flex (deformable) elements, a model with no joint;
MuJoCo's compiler itself refuses a free joint below another body or beside another joint ("more than 6 dofs").
Listed as left out in the `.mech` header: contacts,
actuators, tendons, equality constraints, joint springs, armature, damping, friction loss, limits, gravity
compensation, fluid forces, plugins; damping, friction loss, limits and force ranges are carried as the body's
joint info (reported, not simulated).
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from mechdyn.core.errors import MechError
from mechdyn.core.model import JointInfo
from mechdyn.core.spatial import quat_to_R
from mechdyn.export.common import vec

from .tree import Joint, Part, Tree

FREE, BALL, SLIDE, HINGE = 0, 1, 2, 3  # mjtJoint
TYPE = {FREE: "free", BALL: "ball", SLIDE: "slide", HINGE: "hinge"}
GRAVITY_OFF = 1 << 7  # mjDSBL_GRAVITY: the file's <flag gravity="disable"/>
_LINE = re.compile(r"[Ll]ine(?: number)?\s*[=:]?\s*(\d+)")


def compile_model(path: str):
    """The MjModel MuJoCo compiles from the file at `path`; its compile error is one MechError at the line MuJoCo
    names (0 when it names none)."""
    try:
        import mujoco
    except ImportError:
        raise MechError(path, 0, "MJCF import needs MuJoCo's compiler: pip install mujoco") from None
    if not Path(path).is_file():
        raise MechError(path, 0, "cannot read the file: no such file")
    try:
        return mujoco.MjModel.from_xml_path(path)
    except ValueError as e:
        msg = " ".join(str(e).split())
        m = _LINE.search(msg)
        raise MechError(path, int(m.group(1)) if m else 0, f"MuJoCo cannot compile the file: {msg}") from None


def _name(mj, kind: str, i: int) -> str:
    import mujoco

    return mujoco.mj_id2name(mj, getattr(mujoco.mjtObj, f"mjOBJ_{kind.upper()}"), i) or ""


def body_names(mj) -> list[str]:
    """Each body's MuJoCo name, or body<id> where it has none (the world is 'world')."""
    return [_name(mj, "body", b) or f"body{b}" for b in range(mj.nbody)]


def joint_names(mj) -> list[str]:
    """Each joint's MuJoCo name, or <body>_joint<k> (k-th joint of its body) where it has none: the name the
    importer keeps in JointInfo.name, by which a check finds the joint again."""
    bodies = body_names(mj)
    out = []
    for j in range(mj.njnt):
        b = int(mj.jnt_bodyid[j])
        out.append(_name(mj, "joint", j) or f"{bodies[b]}_joint{j - int(mj.body_jntadr[b])}")
    return out


def _lines(path: str) -> dict[tuple[str, str], int]:
    """The line of each named body and joint in the file itself (elements from included files are not there)."""
    from lxml import etree

    try:
        root = etree.parse(path).getroot()
    except (etree.XMLSyntaxError, OSError):
        return {}
    out: dict[tuple[str, str], int] = {}
    for el in root.iter("body", "joint", "freejoint"):
        if el.get("name") is not None:
            out.setdefault(("joint" if el.tag == "freejoint" else el.tag, el.get("name")), el.sourceline or 0)
    return out


def _info(mj, j: int, name: str) -> JointInfo:
    """The joint's limits (in mechdyn's coordinate, qpos − qpos0), force range, damping and friction loss."""
    q0, v = float(mj.qpos0[mj.jnt_qposadr[j]]), int(mj.jnt_dofadr[j])
    lower = upper = effort = None
    if mj.jnt_limited[j]:
        lower, upper = (float(x) - q0 for x in mj.jnt_range[j])
    if mj.jnt_actfrclimited[j]:
        effort = float(np.max(np.abs(mj.jnt_actfrcrange[j])))
    damping, friction = float(mj.dof_damping[v]), float(mj.dof_frictionloss[v])
    return JointInfo(name=name, lower=lower, upper=upper, effort=effort, damping=damping or None,
                     friction=friction or None)


def _listed(names: list[str], first: int = 4) -> str:
    more = len(names) - first
    return ", ".join(names[:first]) + (f" and {more} more" if more > 0 else "")


def _notes(mj, jnames: list[str], bnames: list[str]) -> list[str]:
    """What the compiled model has that the tree leaves out: one line each."""
    notes = []
    collide = [g for g in range(mj.ngeom) if mj.geom_contype[g] or mj.geom_conaffinity[g]]
    if collide:
        notes.append(f"contacts of {len(collide)} colliding geoms (mechdyn has no contact from MJCF geometry)")
    for count, kind, what in ((mj.nu, "actuator", "actuators"), (mj.ntendon, "tendon", "tendons"),
                              (mj.neq, "equality", "equality constraints")):
        if count:
            named = [_name(mj, kind, i) or f"#{i}" for i in range(count)]
            notes.append(f"{what} ({count}): {_listed(named)}")
    dofj = [int(j) for j in mj.dof_jntid]
    springs = [jnames[j] for j in range(mj.njnt) if mj.jnt_stiffness[j]]
    if springs:
        notes.append(f"joint springs (stiffness) on {len(springs)} joints: {_listed(springs)}")
    for field, what in (("dof_armature", "armature"), ("dof_damping", "joint damping (reported as joint_damping)"),
                        ("dof_frictionloss", "friction loss (reported as joint_friction)")):
        hit = sorted({jnames[dofj[v]] for v in range(mj.nv) if getattr(mj, field)[v]}, key=jnames.index)
        if hit:
            notes.append(f"{what} on {len(hit)} joints: {_listed(hit)}")
    limited = [jnames[j] for j in range(mj.njnt) if mj.jnt_limited[j]]
    if limited:
        notes.append(f"limits of {len(limited)} joints (reported as limit, in qpos − qpos0)")
    grav = [bnames[b] for b in range(mj.nbody) if mj.body_gravcomp[b]]
    if grav:
        notes.append(f"gravity compensation of {len(grav)} bodies: {_listed(grav)}")
    if mj.opt.density or mj.opt.viscosity or np.any(mj.opt.wind):
        notes.append("fluid forces (density, viscosity, wind)")
    mocap = [bnames[b] for b in range(mj.nbody) if mj.body_mocapid[b] >= 0]
    if mocap:
        notes.append(f"mocap motion of {_listed(mocap)}: fixed to the world at its model pose")
    if mj.nplugin:
        notes.append(f"{mj.nplugin} engine plugins")
    return notes


def read(path: str) -> Tree:
    """The MJCF file at `path`, compiled by MuJoCo, as a Tree rooted at the world body."""
    mj = compile_model(path)
    lines = _lines(path)
    bnames, jnames = body_names(mj), joint_names(mj)
    if mj.nflex:
        raise MechError(path, 0, f"the model has {mj.nflex} flex (deformable) elements, first "
                                 f"'{_name(mj, 'flex', 0) or '#0'}'; expected rigid bodies only")
    if mj.njnt == 0:
        raise MechError(path, 0, "the model has no joint: nothing moves; expected at least one hinge, slide or "
                                 "free joint")
    root = bnames[0]
    parts: dict[str, Part] = {root: Part(root, source="the world body")}
    joints: list[Joint] = []
    part_of = {0: root}  # MuJoCo body -> the part that carries its mass (its last joint's)
    shift = {0: np.zeros(3)}  # MuJoCo body -> that part's origin in the body frame (its last hinge's anchor)

    def unique(name: str) -> str:
        k, out = 1, name
        while out in parts:
            k += 1
            out = f"{name}_{k}"
        return out

    for b in range(1, mj.nbody):
        pid, name = int(mj.body_parentid[b]), bnames[b]
        line = lines.get(("body", name), 0)
        R0, p0 = quat_to_R(mj.body_quat[b]), mj.body_pos[b].copy()
        where = f"body {name} (MuJoCo body {b}{f', line {line}' if line else ''})"
        prev, s_prev = part_of[pid], shift[pid]
        adr, n = int(mj.body_jntadr[b]), int(mj.body_jntnum[b])
        last = unique(name)
        if n == 0:
            parts[last] = Part(last)
            joints.append(Joint(f"{name} (welded)", "fixed", prev, last, R0, p0 - s_prev,
                                source=f"{where}: no joint, welded at pos {vec(p0)}", line=line))
            s = np.zeros(3)
        for k in range(n):
            j = adr + k
            t, jname = int(mj.jnt_type[j]), jnames[j]
            jline = lines.get(("joint", jname), line)
            if t == BALL:
                raise MechError(path, jline, f"joint '{jname}' of body '{name}' is a ball joint; expected hinge, "
                                             "slide or free joints (mechdyn has no spherical tree joint)")
            child = last if k == n - 1 else unique(f"{name}.{jname}")
            if child != last:
                parts[child] = Part(child, source=f"a massless frame of body {name} between its joints")
            s = mj.jnt_pos[j].copy() if t == HINGE else np.zeros(3)
            R, p = (R0, p0 - s_prev + R0 @ s) if k == 0 else (np.eye(3), s - s_prev)
            q0 = float(mj.qpos0[mj.jnt_qposadr[j]])
            src = f"joint {jname} ({TYPE[t]}, MuJoCo joint {j}{f', line {jline}' if jline else ''})"
            if t == FREE:
                joints.append(Joint(jname, "floating", prev, child, R0, p0, info=JointInfo(name=jname),
                                    source=f"{src} of {where} at pos {vec(p0)}, quat {vec(mj.body_quat[b])}",
                                    line=jline))
            else:
                frame = f"body pos {vec(p0)}, quat {vec(mj.body_quat[b])}; " if k == 0 else ""
                joints.append(Joint(jname, "revolute" if t == HINGE else "prismatic", prev, child, R, p,
                                    mj.jnt_axis[j].copy(), _info(mj, j, jname),
                                    f"{src} of {where}: {frame}anchor {vec(mj.jnt_pos[j])}, axis "
                                    f"{vec(mj.jnt_axis[j])}"
                                    + (f", ref {q0!r} (coordinate = qpos − ref)" if q0 else ""),
                                    jline))
            prev, s_prev = child, s
        Ri = quat_to_R(mj.body_iquat[b])
        parts[last] = Part(last, float(mj.body_mass[b]), mj.body_ipos[b] - s, Ri @ np.diag(mj.body_inertia[b]) @ Ri.T,
                           source=f"{where}: compiled mass, ipos, iquat and principal inertia", line=line)
        part_of[b], shift[b] = last, s
    name = bytes(mj.names).split(b"\0", 1)[0].decode() or Path(path).stem
    gravity = np.zeros(3) if mj.opt.disableflags & GRAVITY_OFF else mj.opt.gravity.copy()
    return Tree(path, "MJCF", name, parts, joints, root, False, gravity=gravity, notes=_notes(mj, jnames, bnames))
