"""Pinocchio as an independent engine: forward dynamics of the exported URDF, checked against mechdyn.

The Pinocchio model is built from `mechdyn.export.export_urdf` (so the exporter
is under test too), with gravity set from the .mech model and frames added at
every point of interest and loop anchor. Nothing of mechdyn's dynamics is used:
the tree dynamics is Pinocchio's ABA; force elements are applied as generalized
forces computed here from Pinocchio's frame kinematics and the element laws of
docs/conventions.md; loop closures are solved as the acceleration-level KKT
system built from Pinocchio's mass matrix, bias forces, frame Jacobians and
classical frame accelerations, with each loop's constraint rows written out
here from their definitions (conventions, "Loop closures").

States, torques and accelerations are mapped between conventions by
`mechdyn.export.urdf` (quaternion order, [ω; v] against [v; ω], [n; f] against
[f; n]); base-coordinate fext rows become forces in each joint's local frame.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from mechdyn.core.model import BASE, LOOP_ROWS, Loop, Model
from mechdyn.export import urdf

try:
    import pinocchio as pin
except ImportError as e:  # pragma: no cover - pin is a test dependency
    raise ImportError("the Pinocchio cross-check needs the 'pin' package: pip install -e '.[test]'") from e

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


@dataclass
class PinModel:
    """A Pinocchio model of a mechdyn Model, with the maps between their conventions."""

    model: Model
    pmodel: "pin.Model"
    data: "pin.Data"
    layout: dict[str, tuple[int, int, int]]  # body name -> (idx_q, idx_v, nq)
    joint: list[int]  # mechdyn body index -> Pinocchio joint id
    poi_frame: list[int]  # POI index -> frame id
    anchor_frames: list[tuple[int, int]]  # loop index -> (pred anchor frame, succ anchor frame)
    urdf_text: str

    @cached_property
    def has_fext(self) -> bool:
        return any(b.fext for b in self.model.bodies)


def build(model: Model, urdf_text: str | None = None) -> PinModel:
    """Load the model's URDF export in Pinocchio (pin.buildModelFromUrdf) and add frames for POIs and loop anchors."""
    text = urdf_text if urdf_text is not None else urdf.export_urdf(model).text
    fd, path = tempfile.mkstemp(suffix=".urdf", prefix=f"{model.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        pm = pin.buildModelFromUrdf(path)
    finally:
        os.unlink(path)
    return _mapped(model, pm, [b.name for b in model.bodies], text)


def build_from_file(model: Model, path: str) -> PinModel:
    """Pinocchio's own model of the URDF file `model` was imported from (mechdyn.imports): pin.buildModelFromUrdf
    of the same file, with a free-flyer root where mechdyn's root is floating; bodies are matched to Pinocchio's
    joints by the imported joint's name (the root's: Pinocchio's root_joint)."""
    floating = model.bodies[0].joint == "floating"
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)
    names = ["root_joint" if b.joint == "floating" else b.info.name if b.info else b.name for b in model.bodies]
    with open(path) as f:
        return _mapped(model, pm, names, f.read())


def _mapped(model: Model, pm: "pin.Model", joint_names: list[str], text: str) -> PinModel:
    """The PinModel of Pinocchio model `pm`, whose joints `joint_names` are mechdyn's bodies, with gravity set from
    the .mech model and frames added at every POI and loop anchor."""
    pm.gravity = pin.Motion(np.asarray(model.gravity, dtype=float), np.zeros(3))
    joint = [pm.getJointId(name) for name in joint_names]
    if any(j >= pm.njoints for j in joint) or pm.nv != model.nv:
        raise RuntimeError(f"Pinocchio's model of {model.name} does not match: nq {pm.nq}, nv {pm.nv}")
    # a continuous joint is a (cos, sin) pair in Pinocchio's q: its third entry says so
    layout = {b.name: (pm.joints[j].idx_q, pm.joints[j].idx_v, pm.joints[j].nq) for b, j in zip(model.bodies, joint)}

    def frame(name: str, body: int, pos: np.ndarray) -> int:
        jid = 0 if body == BASE else joint[body]
        parent = pm.getFrameId("universe") if body == BASE else \
            next(k for k, f in enumerate(pm.frames) if f.parentJoint == jid and f.type == pin.FrameType.JOINT)
        return pm.addFrame(pin.Frame(name, jid, parent, pin.SE3(np.eye(3), np.asarray(pos, dtype=float)),
                                     pin.FrameType.OP_FRAME), False)

    pois = [frame(f"poi:{p.name}", p.body, p.pos) for p in model.pois]
    anchors = [(frame(f"loop:{lp.name}:pred", lp.pred, lp.anchor_pred), frame(f"loop:{lp.name}:succ", lp.succ, lp.anchor_succ))
               for lp in model.loops]
    return PinModel(model, pm, pm.createData(), layout, joint, pois, anchors, text)


def to_pin(pm: PinModel, q, qd, tau) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return urdf.to_pinocchio(pm.model, pm.layout, pm.pmodel.nq, pm.pmodel.nv, q, qd, tau)


def local_fext(pm: PinModel, fext: np.ndarray | None) -> list:
    """Base-coordinate fext rows [n about the base origin; f] as Pinocchio forces in each joint's local frame.

    Needs data.oMi at the current q. Rows of bodies not declared `fext 1` are ignored, as mechdyn does.
    """
    out = [pin.Force.Zero() for _ in range(pm.pmodel.njoints)]
    if fext is None:
        return out
    for i, b in enumerate(pm.model.bodies):
        if not b.fext:
            continue
        n0, f = np.asarray(fext[i][:3], dtype=float), np.asarray(fext[i][3:], dtype=float)
        M = pm.data.oMi[pm.joint[i]]
        R, p = M.rotation, M.translation
        out[pm.joint[i]] = pin.Force(R.T @ f, R.T @ (n0 - np.cross(p, f)))
    return out


def element_forces(pm: PinModel, qp: np.ndarray, vp: np.ndarray, act: np.ndarray | None) -> np.ndarray:
    """Generalized forces of the tsda and rsda elements in Pinocchio's coordinates (kinematics from Pinocchio).

    tsda: tension f = k (l − l0) + c l̇ + act pulls the two points together: Q = −f (J_B − J_A)ᵀ e.
    rsda: τ = −k (q − q0) − c q̇ + act on the joint's own coordinate.
    Needs forwardKinematics(q, v), computeJointJacobians and updateFramePlacements done at (qp, vp).
    """
    model, pmod, data = pm.model, pm.pmodel, pm.data
    Q = np.zeros(pmod.nv)
    a = np.zeros(max(model.nact, 1)) if act is None else np.asarray(act, dtype=float)
    for e in model.tsdas:
        fa, fb = pm.poi_frame[e.poi_a], pm.poi_frame[e.poi_b]
        d = data.oMf[fb].translation - data.oMf[fa].translation
        l = float(np.linalg.norm(d))
        u = d / l
        ld = float(u @ (pin.getFrameVelocity(pmod, data, fb, LWA).linear - pin.getFrameVelocity(pmod, data, fa, LWA).linear))
        f = e.k * (l - e.l0) + e.c * ld + (a[e.act] if e.act >= 0 else 0.0)
        dJ = pin.getFrameJacobian(pmod, data, fb, LWA)[:3] - pin.getFrameJacobian(pmod, data, fa, LWA)[:3]
        Q -= f * (dJ.T @ u)
    for e in model.rsdas:
        jq, jv = pm.layout[model.bodies[e.body].name][:2]
        Q[jv] += -e.k * (qp[jq] - e.q0) - e.c * vp[jv] + (a[e.act] if e.act >= 0 else 0.0)
    return Q


def kinematics(pm: PinModel, qp: np.ndarray, vp: np.ndarray) -> None:
    """Joint and frame placements, velocities, zero-acceleration (bias) accelerations and Jacobians at (qp, vp)."""
    pmod, data = pm.pmodel, pm.data
    pin.computeJointJacobians(pmod, data, qp)
    pin.forwardKinematics(pmod, data, qp, vp, np.zeros(pmod.nv))
    pin.updateFramePlacements(pmod, data)


def forward(pm: PinModel, q, qd, tau, fext=None, act=None) -> np.ndarray:
    """qdd in mechdyn's coordinates: Pinocchio's ABA for a tree, the KKT system on Pinocchio's terms for loops
    (and for drivers, each a row fixing its coordinate's acceleration to its act slot)."""
    qp, vp, tp = to_pin(pm, q, qd, tau)
    kinematics(pm, qp, vp)
    a = np.zeros(max(pm.model.nact, 1)) if act is None else np.asarray(act, dtype=float)
    prescribed = [(pm.layout[pm.model.bodies[d.body].name][1], float(a[d.act])) for d in pm.model.drivers]
    return urdf.from_pinocchio_v(pm.model, pm.layout, accel(pm, qp, vp, tp + element_forces(pm, qp, vp, act),
                                                            local_fext(pm, fext), prescribed=prescribed))


def accel(pm: PinModel, qp: np.ndarray, vp: np.ndarray, tp: np.ndarray, fx: list, closed: bool = True,
          prescribed: list[tuple[int, float]] = ()) -> np.ndarray:
    """ddq in Pinocchio's coordinates for joint torques tp and local forces fx, after kinematics at (qp, vp):
    ABA on the tree, or with the loops closed (unless not `closed`: then ABA on the spanning tree), and the
    `prescribed` (velocity index, acceleration) pairs held by rows of the KKT system."""
    pmod, data = pm.pmodel, pm.data
    if not ((pm.model.loops and closed) or prescribed):
        return np.array(pin.aba(pmod, data, qp, vp, tp, fx) if pm.has_fext else pin.aba(pmod, data, qp, vp, tp))
    K, gamma, phi = (constraint_terms(pm) if pm.model.loops and closed
                     else (np.zeros((0, pmod.nv)), np.zeros(0), np.zeros(0)))
    M = pin.crba(pmod, data, qp)
    M = np.triu(M) + np.triu(M, 1).T  # crba fills the upper triangle
    b = pin.rnea(pmod, data, qp, vp, np.zeros(pmod.nv), fx)  # C + gravity − Σ Jᵀ fext
    alpha = 1.0 / pm.model.stab
    k = -gamma - 2.0 * alpha * (K @ vp) - alpha**2 * phi  # Baumgarte (conventions): vanish at closed, consistent states
    E = np.zeros((len(prescribed), pmod.nv))
    for r, (iv, _) in enumerate(prescribed):
        E[r, iv] = 1.0
    K, k = np.vstack([K, E]), np.concatenate([k, [x for _, x in prescribed]])
    nv, nc = pmod.nv, K.shape[0]
    A = np.zeros((nv + nc, nv + nc))
    A[:nv, :nv], A[:nv, nv:], A[nv:, :nv] = M, K.T, K
    return np.linalg.solve(A, np.concatenate([tp - b, k]))[:nv]


def constraint_terms(pm: PinModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """K (nc, nv), γ = φ̈ at zero acceleration, and φ, in Pinocchio's coordinates, loops and rows in conventions order.

    Rows, with d = S − P, P and S the anchors: e·d (e fixed to the predecessor), e1·e2 (e1 on the
    predecessor, e2 on the successor), (d·d − L²)/2. Their first and second time derivatives are
    written out from the anchors' frame velocities, Jacobians and classical accelerations.
    """
    K, gamma, phi = [], [], []
    for lp, (fp, fs) in zip(pm.model.loops, pm.anchor_frames):
        for row in _loop_rows(pm, lp, fp, fs):
            K.append(row[0])
            gamma.append(row[1])
            phi.append(row[2])
    return np.array(K), np.array(gamma), np.array(phi)


def _loop_rows(pm: PinModel, lp: Loop, fp: int, fs: int):
    pmod, data = pm.pmodel, pm.data
    P, S = data.oMf[fp].translation.copy(), data.oMf[fs].translation.copy()
    Rp, Rs = data.oMf[fp].rotation.copy(), data.oMf[fs].rotation.copy()
    Jp, Js = pin.getFrameJacobian(pmod, data, fp, LWA), pin.getFrameJacobian(pmod, data, fs, LWA)
    Vp, Vs = pin.getFrameVelocity(pmod, data, fp, LWA), pin.getFrameVelocity(pmod, data, fs, LWA)
    Ap, As = pin.getFrameClassicalAcceleration(pmod, data, fp, LWA), pin.getFrameClassicalAcceleration(pmod, data, fs, LWA)
    wp, ws, vP, vS = Vp.angular, Vs.angular, Vp.linear, Vs.linear
    alp, als, aP, aS = Ap.angular, As.angular, Ap.linear, As.linear  # at zero joint acceleration
    d, dd, d2 = S - P, vS - vP, aS - aP
    dJ = Js[:3] - Jp[:3]

    def sep(e):  # e·d, e fixed to the predecessor: ė = ωp × e
        ed = np.cross(wp, e)
        edd = np.cross(alp, e) + np.cross(wp, ed)
        Krow = e @ dJ + np.cross(e, d) @ Jp[3:]
        return Krow, float(edd @ d + 2 * ed @ dd + e @ d2), float(e @ d)

    def dirs(e1, e2):  # e1 on the predecessor, e2 on the successor
        e1d, e2d = np.cross(wp, e1), np.cross(ws, e2)
        e1dd, e2dd = np.cross(alp, e1) + np.cross(wp, e1d), np.cross(als, e2) + np.cross(ws, e2d)
        Krow = np.cross(e2, e1) @ (Js[3:] - Jp[3:])
        return Krow, float(e1dd @ e2 + 2 * e1d @ e2d + e1 @ e2dd), float(e1 @ e2)

    T = lp.triad  # the documented completion of the axis, a definition rather than an algorithm
    u, w, a = (Rp @ T).T
    us, ws_, as_ = (Rs @ T).T
    if lp.joint not in LOOP_ROWS:
        raise ValueError(f"unknown loop joint {lp.joint!r}")
    axes = {"x": Rp[:, 0], "y": Rp[:, 1], "z": Rp[:, 2], "u": u, "w": w, "as": as_, "ws": ws_}

    def dist():  # (d·d − L²)/2
        return d @ dJ, float(dd @ dd + d @ d2), 0.5 * float(d @ d - lp.length**2)

    return [sep(axes[n[0]]) if kind == "sep" else dirs(axes[n[0]], axes[n[1]]) if kind == "dirs" else dist()
            for kind, *n in LOOP_ROWS[lp.joint]]
