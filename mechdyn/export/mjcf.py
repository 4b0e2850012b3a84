"""MJCF (MuJoCo) export, and the state map between mechdyn and MuJoCo.

Bodies nest as the tree does. A body's `pos` is its xtree and its frame is the
joint frame (hinge or slide about x, y or z at the body origin, unbounded, no
armature, damping or friction loss); a floating body carries a `freejoint` and
sits at its design position. Inertials are written with `fullinertia` at the
CG (mass, CG and tensor exactly as in the .mech file; MuJoCo diagonalizes the
tensor when it compiles). `option` carries gravity, and contacts are disabled
(the export has no collision geometry).

What MJCF expresses beyond the tree:
- a point of interest is a `site` on its body;
- a tsda is a spatial tendon between its two sites with stiffness k, damping c
  and springlength l0 (MuJoCo's tendon spring is −k (l − l0) − c l̇ along the
  tendon: the same law); an input tsda gets a `motor` on the tendon with
  gear −1, since act[] is a tension;
- an rsda is the joint's stiffness, springref and damping; an input rsda gets a
  `motor` on the joint with gear 1; actuators are declared in act[] slot order,
  so ctrl = act;
- a spherical loop is an equality `connect` between sites at its two anchors;
- a distance loop is a spatial tendon between its anchors held at the rod
  length by an equality `tendon` (polycoef a0 = L − the tendon's length at
  qpos0, which is computed here);
- revolute, prismatic, cylindrical and point-on-line loops have no MJCF
  equality and are listed as omitted.
MuJoCo enforces equality constraints softly (solref/solimp), so an exported
loop model is MuJoCo's approximation of the mechanism, not the same equations.

State map (MuJoCo's free joint: qpos = [r, w x y z]; qvel = [ṙ in world
coordinates, ω in body coordinates]; the dual generalized force is
[world-frame force, body-frame moment about the body origin]):
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from mechdyn.core.kinematics import forward_kinematics, point_state
from mechdyn.core.model import BASE, Model
from mechdyn.core.spatial import quat_to_R

from .common import Exported, direction, num, quat, unsupported, vec, xml_escape
JOINT = {"revolute": "hinge", "prismatic": "slide"}

# mechdyn's quaternion is [w, x, y, z], and so is MuJoCo's: the identity map.
MJ_QUAT = (0, 1, 2, 3)

Layout = Mapping[str, tuple[int, int]]  # body name -> (qposadr, dofadr)


def export_mjcf(model: Model) -> Exported:
    """The model as MJCF text, and what MJCF cannot express."""
    omitted = []
    children: dict[int, list[int]] = {}
    for i, b in enumerate(model.bodies):
        children.setdefault(b.parent, []).append(i)
    sites: dict[int, list[str]] = {}

    def site(body: int, name: str, pos) -> None:
        sites.setdefault(body, []).append(f'<site name="{name}" pos="{vec(pos)}"/>')

    for p in model.pois:
        site(p.body, f"poi:{p.name}", p.pos)
    equality, tendons = [], []
    kin0 = forward_kinematics(model, model.q_nominal()) if any(lp.joint == "distance" for lp in model.loops) else None
    for lp in model.loops:
        where = f"loop '{lp.name}' ({lp.joint}, {model.path}:{lp.line})"
        if lp.joint == "spherical":
            site(lp.pred, f"loop:{lp.name}:pred", lp.anchor_pred)
            site(lp.succ, f"loop:{lp.name}:succ", lp.anchor_succ)
            equality.append(f'<connect name="{lp.name}" site1="loop:{lp.name}:pred" site2="loop:{lp.name}:succ"/>')
        elif lp.joint == "distance":
            site(lp.pred, f"loop:{lp.name}:pred", lp.anchor_pred)
            site(lp.succ, f"loop:{lp.name}:succ", lp.anchor_succ)
            P = point_state(model, kin0, lp.pred, lp.anchor_pred)[0]
            S = point_state(model, kin0, lp.succ, lp.anchor_succ)[0]
            tendons.append(f'<spatial name="loop:{lp.name}"><site site="loop:{lp.name}:pred"/>'
                           f'<site site="loop:{lp.name}:succ"/></spatial>')
            a0 = lp.length - float(np.linalg.norm(S - P))
            equality.append(f'<tendon name="{lp.name}" tendon1="loop:{lp.name}" polycoef="{num(a0)} 0 0 0 0"/>')
        else:
            omitted.append(f"{where}: MJCF has no equality constraint for a {lp.joint} joint")
    actuators: dict[int, str] = {}
    for e in model.tsdas:
        a, b = model.pois[e.poi_a].name, model.pois[e.poi_b].name
        tendons.append(f'<spatial name="{e.name}" stiffness="{num(e.k)}" damping="{num(e.c)}" '
                       f'springlength="{num(e.l0)}"><site site="poi:{a}"/><site site="poi:{b}"/></spatial>')
        if e.act >= 0:
            actuators[e.act] = f'<motor name="act:{e.name}" tendon="{e.name}" gear="-1"/>'
    rsda: dict[int, tuple[float, float, float]] = {}
    for e in model.rsdas:
        k, c, kq0 = rsda.get(e.body, (0.0, 0.0, 0.0))
        rsda[e.body] = (k + e.k, c + e.c, kq0 + e.k * e.q0)
        if e.act >= 0:
            actuators[e.act] = f'<motor name="act:{e.name}" joint="{model.bodies[e.body].name}" gear="1"/>'
    omitted += unsupported(model)
    notes = []
    held = [lp.name for lp in model.loops if lp.joint in ("spherical", "distance")]
    if held:
        notes.append(f"{', '.join(held)}: exported as MuJoCo equality constraints, which MuJoCo enforces softly "
                     "(solref, solimp)")
    if model.loops:
        notes.append("keyframe 'design' holds the design pose closed onto the loops")

    out = [f'<mujoco model="{xml_escape(model.name)}">',
           f"  <!-- exported by mechdyn from {xml_escape(model.path)} -->",
           '  <compiler angle="radian" inertiafromgeom="false" autolimits="true"/>',
           f'  <option gravity="{vec(model.gravity)}">',
           '    <flag contact="disable"/>',
           "  </option>",
           "  <worldbody>"]
    out += [f"    {s}" for s in sites.get(BASE, [])]

    def body(i: int, depth: int) -> None:
        b, ind = model.bodies[i], "  " * depth
        turned = "" if b.aligned else f' quat="{quat(b.rot)}"'
        out.append(f'{ind}<body name="{b.name}" pos="{vec(b.xtree)}"{turned}>')
        I = b.inertia
        out.append(f'{ind}  <inertial pos="{vec(b.cg)}" mass="{num(b.mass)}" fullinertia="{num(I[0, 0])} '
                   f'{num(I[1, 1])} {num(I[2, 2])} {num(I[0, 1])} {num(I[0, 2])} {num(I[1, 2])}"/>')
        if b.joint == "floating":
            out.append(f'{ind}  <freejoint name="{b.name}"/>')
        else:
            extra = ' damping="0"'
            if i in rsda:
                k, c, kq0 = rsda[i]
                extra = f' stiffness="{num(k)}" springref="{num(kq0 / k if k else 0.0)}" damping="{num(c)}"'
            out.append(f'{ind}  <joint name="{b.name}" type="{JOINT[b.joint]}" axis="{direction(b.axis)}" '
                       f'pos="0 0 0" armature="0"{extra}/>')
        out.extend(f"{ind}  {s}" for s in sites.get(i, []))
        for c in children.get(i, []):
            body(c, depth + 1)
        out.append(f"{ind}</body>")

    for i in children.get(BASE, []):
        body(i, 2)
    out.append("  </worldbody>")
    layout, nq, nv = _file_layout(model)
    qpos = to_mujoco(model, layout, nq, nv, model.q0(), np.zeros(model.nv), np.zeros(model.nv))[0]
    for tag, items in (("tendon", tendons), ("equality", equality),
                       ("actuator", [actuators[k] for k in sorted(actuators)]),
                       ("keyframe", [f'<key name="design" qpos="{vec(qpos)}"/>'])):
        if items:
            out += [f"  <{tag}>"] + [f"    {x}" for x in items] + [f"  </{tag}>"]
    out += ["</mujoco>", ""]
    return Exported("mjcf", "\n".join(out), tuple(omitted), tuple(notes))


def _file_layout(model: Model) -> tuple[dict[str, tuple[int, int]], int, int]:
    """Where MuJoCo puts each body's joint in qpos and qvel for the exported file: depth-first in tree order."""
    children: dict[int, list[int]] = {}
    for i, b in enumerate(model.bodies):
        children.setdefault(b.parent, []).append(i)
    layout, nq, nv = {}, 0, 0
    stack = list(reversed(children.get(BASE, [])))
    while stack:
        i = stack.pop()
        b = model.bodies[i]
        layout[b.name] = (nq, nv)
        nq, nv = nq + b.nq, nv + b.nv
        stack += reversed(children.get(i, []))
    return layout, nq, nv


def to_mujoco(model: Model, layout: Layout, nq: int, nv: int, q: np.ndarray, qd: np.ndarray,
              tau: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """mechdyn (q, qd, tau) as MuJoCo's (qpos, qvel, qfrc_applied) for a model loaded from `export_mjcf`.

    Floating: q [Q, r] -> [r, Q]; qd [ω; v] -> [R v; ω]; tau [n; f] -> [R f; n], with R the body's attitude.
    """
    qpos, qvel, qfrc = np.zeros(nq), np.zeros(nv), np.zeros(nv)
    for b, iq, iv in zip(model.bodies, model.qidx, model.vidx):
        jq, jv = layout[b.name]
        if b.joint == "floating":
            R = quat_to_R(q[iq : iq + 4] / np.linalg.norm(q[iq : iq + 4]))
            qpos[jq : jq + 3] = q[iq + 4 : iq + 7]
            qpos[jq + 3 : jq + 7] = q[iq : iq + 4][list(MJ_QUAT)]
            qvel[jv : jv + 3], qvel[jv + 3 : jv + 6] = R @ qd[iv + 3 : iv + 6], qd[iv : iv + 3]
            qfrc[jv : jv + 3], qfrc[jv + 3 : jv + 6] = R @ tau[iv + 3 : iv + 6], tau[iv : iv + 3]
        else:
            qpos[jq], qvel[jv], qfrc[jv] = q[iq], qd[iv], tau[iv]
    return qpos, qvel, qfrc


def from_mujoco_qacc(model: Model, layout: Layout, q: np.ndarray, qd: np.ndarray, qacc: np.ndarray) -> np.ndarray:
    """MuJoCo's qacc as mechdyn's qdd at the state (q, qd).

    Floating: qacc = [d/dt(R v); ω̇], so v̇ = Rᵀ qacc[0:3] − ω × v.
    """
    out = np.zeros(model.nv)
    for b, iq, iv in zip(model.bodies, model.qidx, model.vidx):
        jv = layout[b.name][1]
        if b.joint == "floating":
            R = quat_to_R(q[iq : iq + 4] / np.linalg.norm(q[iq : iq + 4]))
            w, v = qd[iv : iv + 3], qd[iv + 3 : iv + 6]
            out[iv : iv + 3] = qacc[jv + 3 : jv + 6]
            out[iv + 3 : iv + 6] = R.T @ qacc[jv : jv + 3] - np.cross(w, v)
        else:
            out[iv] = qacc[jv]
    return out
