"""Rebuild a `.mech` model as a Chrono multibody system, and move it to a state.

One `ChBodyAuxRef` per model body: its reference frame is the project's body
frame, its COM frame sits at `cg` with the body's axes, and its inertia is the
model's (about the CG, body axes). Every link is created at the design pose
from the project's kinematics, with absolute marker frames:

- a tree joint is a Chrono lock link between the body (body 1) and its parent
  (body 2; a fixed ground body for the base), at the joint frame, with the
  marker's z along the joint axis: `ChLinkLockRevolute` turns about marker z,
  `ChLinkLockPrismatic` slides along it. A floating body gets no link.
- a driven tree joint (a `driver`) is a Chrono motor in its place, on the same
  two frames: `ChLinkMotorLinearPosition` (its guide prismatic) for a prismatic
  joint, `ChLinkMotorRotationAngle` (its spindle revolute) for a revolute one.
  The motor's displacement is frame 1's origin along frame 2's z (its angle,
  frame 1 turned about frame 2's z), which is the joint coordinate q itself:
  frame 2 is the joint frame (q = 0) and frame 1 the child's origin and axes.
  So the motor holds q = offset + f(t) with the offset q_design (the design
  pose's coordinate) and f the driver's motion, evaluated by
  `mechdyn.core.motion.evaluate` in a Python `ChFunction` (`MotionFunction`:
  value, rate and acceleration; Chrono's constraint reads the first two, the
  KKT solve of kkt.py the third). The motor's reaction (`GetMotorForce`,
  `GetMotorTorque`) is the force (torque) it exerts on body 1, the child,
  along (about) the axis: the generalized force on q, the project's reaction,
  with no sign change (docs/verification.md).
- a loop joint is a Chrono link between the successor (body 1) and the
  predecessor (body 2). The lock links measure the relative position in
  marker 2's frame, so the predecessor owns the line or axis, as in
  docs/conventions.md. Markers carry the loop triad (u, w, a): a is marker z
  for revolute, prismatic and cylindrical; point-on-line leaves marker **x**
  free, so its markers carry (a, u, w). Spherical is `ChLinkLockSpherical`;
  distance is `ChLinkDistance` between the two anchors with the model's length.
- a TSDA is a `ChLinkTSDA` between its two anchors with the model's k, c and
  rest length. Chrono's force pushes its anchors apart:
  F = f_act − k (l − l0) − c l̇, against the project's tension
  f = k (l − l0) + c l̇ + act, so act goes in negated.
- an RSDA is not a Chrono element. `ChLinkRSDA` tracks its angle by
  continuity and cannot be placed at an arbitrary q, so its torque is computed
  from the project's law and applied as a joint torque (see `loads`).

Loads (tau, fext, RSDA torques) go through one force accumulator per body:
a joint's tau as a couple about its axis on the child and its negation on the
parent (a force pair along the axis at the child origin for a prismatic), a
floating body's tau as its body-frame wrench, fext as a base-coordinate force
through the base origin plus the couple.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mechdyn.core.kinematics import forward_kinematics, point_state
from mechdyn.core.model import BASE, Model
from mechdyn.core.motion import Motion, evaluate
from mechdyn.core.spatial import quat_to_R, triad

from . import require_pychrono
from .mapping import BodyStates, Mapping, R_to_quat

# marker axes (columns, body coordinates) putting marker z along body axis k, right-handed


@dataclass
class ChronoModel:
    """A model rebuilt in Chrono, and what is needed to drive and read it."""

    model: Model
    mapping: Mapping
    system: Any  # chrono.ChSystemNSC
    ground: Any  # fixed chrono.ChBody standing for the base
    bodies: list  # chrono.ChBodyAuxRef per model body
    accumulators: list[int]  # each body's force accumulator index
    tree_links: list  # per body: its joint's Chrono link, or None (floating)
    loop_links: list  # per model loop, its Chrono link
    tsdas: list  # per model TSDA, its chrono.ChLinkTSDA
    chrono: Any = field(repr=False, default=None)  # the pychrono module
    motors: list = field(default_factory=list)  # per model driver, its Chrono motor (also its body's tree link)
    functions: list = field(default_factory=list)  # per model driver, its motor's MotionFunction

    def body(self, i: int):
        """The Chrono body standing for model body i (the ground for BASE)."""
        return self.ground if i == BASE else self.bodies[i]

    def set_motions(self, motions: dict[str, Motion] | list[Motion]) -> None:
        """Drive the motors by these motions from now on: a list in driver order, or a dict by driver name
        (the drivers it does not name keep theirs)."""
        named = motions if isinstance(motions, dict) else {d.name: m for d, m in zip(self.model.drivers, motions)}
        for d, fn in zip(self.model.drivers, self.functions):
            if d.name in named:
                fn.motion = named[d.name]

    def reactions(self) -> np.ndarray:
        """(ndriver,) each motor's reaction as Chrono reports it from its last reactions (a step's, or those
        kkt.scatter_accelerations handed it): the force (N) or torque (N m) on the child along or about the axis."""
        return np.array([m.GetMotorForce() if b.joint == "prismatic" else m.GetMotorTorque()
                         for m, b in zip(self.motors, (self.model.bodies[d.body] for d in self.model.drivers))])


def _vec(ch, x) -> Any:
    return ch.ChVector3d(float(x[0]), float(x[1]), float(x[2]))


def _frame(ch, p, R) -> Any:
    Q = R_to_quat(np.asarray(R, dtype=float))
    return ch.ChFramed(_vec(ch, p), ch.ChQuaterniond(*map(float, Q)))


def _np(v) -> np.ndarray:
    return np.array([v.x, v.y, v.z])


_FUNCTION_CLASS = None


def motion_function(m: Motion):
    """A Chrono function (a `ChFunction` subclass) of time evaluating the driver's motion m by
    `mechdyn.core.motion.evaluate`: GetVal f, GetDer f', GetDer2 f''. Its `motion` can be replaced. The last time
    asked is remembered, since Chrono asks for value and rate at the same time several times a step."""
    global _FUNCTION_CLASS
    if _FUNCTION_CLASS is None:
        ch = require_pychrono()

        class MotionFunction(ch.ChFunction):
            def __init__(self, m: Motion) -> None:
                super().__init__()
                self.motion = m

            @property
            def motion(self) -> Motion:
                return self._motion

            @motion.setter
            def motion(self, m: Motion) -> None:
                self._motion, self._at = m, None

            def _eval(self, x: float) -> tuple[float, float, float]:
                if self._at is None or self._at[0] != x:
                    f, fd, fdd = evaluate(self._motion, x)
                    self._at = (x, float(f), float(fd), float(fdd))
                return self._at[1:]

            def GetVal(self, x):  # noqa: N802 (Chrono's names)
                return self._eval(x)[0]

            def GetDer(self, x):  # noqa: N802
                return self._eval(x)[1]

            def GetDer2(self, x):  # noqa: N802
                return self._eval(x)[2]

        _FUNCTION_CLASS = MotionFunction
    return _FUNCTION_CLASS(m)


def build(model: Model, mapping: Mapping | None = None, motions: list[Motion] | None = None) -> ChronoModel:
    """The model as a ChSystemNSC, built at the design pose (`model.q0()`, closed onto the loops), its drivers'
    motors driven by `motions` (in driver order; default each driver's own motion).

    The timestepper is Euler implicit linearized (first order, semi-implicit in
    the velocities) and the solver a direct sparse LU, so a step solves its
    KKT system exactly rather than to an iterative tolerance. Nothing here makes
    or breaks contact, so the sparsity pattern is fixed and locked after the
    first factorization (sparse QR gives the same states to every printed
    digit at several times the cost). A `ground` block is not built: the
    generated dynamics have no contact forces, so both sides run contact-free
    (cmd_chrono says so).
    """
    ch = require_pychrono()
    if not model.bands_expanded:
        raise NotImplementedError(f"model {model.name!r}: unexpanded track bands have no Chrono counterpart here")
    mapping = mapping or Mapping(model)
    system = ch.ChSystemNSC()
    system.SetGravitationalAcceleration(_vec(ch, model.gravity))
    system.SetSleepingAllowed(False)
    system.SetNumThreads(1, 1, 1)  # small systems: threads would only contend for a shared machine's cores
    system.SetTimestepperType(ch.ChTimestepper.Type_EULER_IMPLICIT_LINEARIZED)
    solver = ch.ChSolverSparseLU()
    solver.LockSparsityPattern(True)
    system.SetSolver(solver)
    ground = ch.ChBody()
    ground.SetFixed(True)
    ground.SetName("base")
    system.AddBody(ground)

    kin = forward_kinematics(model, model.q0())
    bodies, accs = [], []
    for i, b in enumerate(model.bodies):
        cb = ch.ChBodyAuxRef()
        cb.SetName(b.name)
        cb.SetMass(float(b.mass))
        I = ch.ChMatrix33d()
        I.SetMatr(np.asarray(b.inertia, dtype=float).tolist())
        cb.SetInertia(I)
        cb.SetFrameCOMToRef(_frame(ch, b.cg, np.eye(3)))
        cb.SetFrameRefToAbs(_frame(ch, kin.p[i], kin.R[i]))
        system.AddBody(cb)
        bodies.append(cb)
        accs.append(cb.AddAccumulator())

    def pose(i):
        return (np.eye(3), np.zeros(3)) if i == BASE else (kin.R[i], kin.p[i])

    cm = ChronoModel(model, mapping, system, ground, bodies, accs, [], [], [], ch)
    q0 = model.q0()
    drivers = {d.body: k for k, d in enumerate(model.drivers)}
    motions = [d.motion for d in model.drivers] if motions is None else list(motions)
    cm.motors, cm.functions = [None] * len(model.drivers), [motion_function(m) for m in motions]
    for i, b in enumerate(model.bodies):
        if b.joint == "floating":
            cm.tree_links.append(None)
            continue
        Rp, pp = pose(b.parent)
        M = triad(b.axis)  # the markers' z along the joint axis, in the body frame and in the joint frame
        frames = (_frame(ch, kin.p[i], kin.R[i] @ M), _frame(ch, pp + Rp @ b.xtree, Rp @ b.rot @ M))
        if i in drivers:  # the motor measures q itself from the joint frame: offset q_design, then f(t)
            k = drivers[i]
            if b.joint == "revolute":
                link = ch.ChLinkMotorRotationAngle()
                link.SetAngleOffset(float(q0[model.qidx[i]]))
            else:
                link = ch.ChLinkMotorLinearPosition()
                link.SetMotionOffset(float(q0[model.qidx[i]]))
            link.SetMotorFunction(cm.functions[k])
            link.Initialize(bodies[i], cm.body(b.parent), False, *frames)
            link.SetName(f"driver {model.drivers[k].name}")
            cm.motors[k] = link
        else:
            link = ch.ChLinkLockRevolute() if b.joint == "revolute" else ch.ChLinkLockPrismatic()
            link.Initialize(bodies[i], cm.body(b.parent), False, *frames)
            link.SetName(f"joint {b.name}")
        system.AddLink(link)
        cm.tree_links.append(link)

    for lp in model.loops:
        P = point_state(model, kin, lp.pred, lp.anchor_pred)[0]
        S = point_state(model, kin, lp.succ, lp.anchor_succ)[0]
        Rp, Rs = pose(lp.pred)[0], pose(lp.succ)[0]
        if lp.joint == "distance":
            link = ch.ChLinkDistance()
            link.Initialize(cm.body(lp.succ), cm.body(lp.pred), False, _vec(ch, S), _vec(ch, P), False, float(lp.length))
        else:
            T = lp.triad  # columns (u0, w0, a0): a along marker z
            if lp.joint == "point-on-line":
                T = T[:, [2, 0, 1]]  # (a, u, w): Chrono's point-on-line slides along marker x
            link = {
                "revolute": ch.ChLinkLockRevolute,
                "prismatic": ch.ChLinkLockPrismatic,
                "cylindrical": ch.ChLinkLockCylindrical,
                "spherical": ch.ChLinkLockSpherical,
                "point-on-line": ch.ChLinkLockPointLine,
            }[lp.joint]()
            link.Initialize(cm.body(lp.succ), cm.body(lp.pred), False, _frame(ch, S, Rs @ T), _frame(ch, P, Rp @ T))
        link.SetName(f"loop {lp.name}")
        system.AddLink(link)
        cm.loop_links.append(link)

    for t in model.tsdas:
        A, B = model.pois[t.poi_a], model.pois[t.poi_b]
        pA, pB = point_state(model, kin, A.body, A.pos)[0], point_state(model, kin, B.body, B.pos)[0]
        link = ch.ChLinkTSDA()
        link.Initialize(cm.body(A.body), cm.body(B.body), False, _vec(ch, pA), _vec(ch, pB))
        link.SetRestLength(float(t.l0))
        link.SetSpringCoefficient(float(t.k))
        link.SetDampingCoefficient(float(t.c))
        link.SetActuatorForce(0.0)
        link.SetName(f"tsda {t.name}")
        system.AddLink(link)
        cm.tsdas.append(link)

    system.Setup()
    system.Update()
    return cm


# -- state ------------------------------------------------------------------
def apply(cm: ChronoModel, bs: BodyStates) -> None:
    """Move every Chrono body to the given state (no update: call `update` once the loads are in)."""
    ch = cm.chrono
    for i, cb in enumerate(cm.bodies):
        cb.SetFrameCOMToAbs(_frame(ch, bs.com[i], bs.R[i]))
        cb.SetPosDt(_vec(ch, bs.vcom[i]))
        cb.SetAngVelLocal(_vec(ch, bs.w[i]))


def read(cm: ChronoModel, bodies: list[int] | None = None) -> BodyStates:
    """The Chrono bodies' states, as numpy: every body, or only those listed (the rest at rest at the origin)."""
    nb = cm.model.nbody
    R, com, vcom, w = np.tile(np.eye(3), (nb, 1, 1)), np.zeros((nb, 3)), np.zeros((nb, 3)), np.zeros((nb, 3))
    for i in range(nb) if bodies is None else bodies:
        cb = cm.bodies[i]
        Q = cb.GetRot()
        R[i] = quat_to_R(np.array([Q.e0, Q.e1, Q.e2, Q.e3]))
        com[i], vcom[i], w[i] = _np(cb.GetPos()), _np(cb.GetPosDt()), _np(cb.GetAngVelLocal())
    return BodyStates(R, com, vcom, w)


# -- loads ------------------------------------------------------------------
def joint_loads(model: Model, bs: BodyStates, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-body force and torque (base coords, force through the body origin) that realize the joint forces tau.

    Returns (F, T), each (nbody + 1, 3): the last row is what lands on the base.
    A revolute's tau is the couple tau·a on the child and −tau·a on the parent;
    a prismatic's the force tau·a on the child and −tau·a on the parent at the
    same point (the child origin); a floating body's tau = [n; f] is its
    body-frame wrench about its origin.
    """
    nb = model.nbody
    F, T = np.zeros((nb + 1, 3)), np.zeros((nb + 1, 3))
    po = bs.origin(model)
    for i, b in enumerate(model.bodies):
        t = tau[model.vidx[i] : model.vidx[i] + b.nv]
        if b.joint == "floating":
            T[i] += bs.R[i] @ t[:3]
            F[i] += bs.R[i] @ t[3:]
            continue
        par = b.parent if b.parent != BASE else nb
        a = (np.eye(3) if b.parent == BASE else bs.R[b.parent]) @ b.rot @ b.axis
        if b.joint == "revolute":
            T[i] += t[0] * a
            T[par] -= t[0] * a
        else:  # the pair acts at the child origin: moved to the parent's origin it carries r × f
            F[i] += t[0] * a
            F[par] -= t[0] * a
            if par != nb:
                T[par] -= np.cross(po[i] - po[par], t[0] * a)
    return F, T


def set_loads(cm: ChronoModel, bs: BodyStates, tau: np.ndarray | None, fext: np.ndarray | None,
              act: np.ndarray | None, bodies: list[int] | None = None) -> None:
    """Write joint forces (tau, RSDA torques included by the caller), fext and the TSDA actuators into Chrono.

    `bodies` limits the rewrite to those bodies' accumulators (the others keep theirs).
    """
    ch, model = cm.chrono, cm.model
    tau = np.zeros(model.nv) if tau is None else np.asarray(tau, dtype=float)
    F, T = joint_loads(model, bs, tau)
    po = bs.origin(model)
    for i in range(model.nbody) if bodies is None else bodies:
        cb, k = cm.bodies[i], cm.accumulators[i]
        cb.EmptyAccumulator(k)
        f, n = F[i].copy(), T[i].copy()
        point = po[i]
        if fext is not None and model.bodies[i].fext:
            # fext = [moment about the base origin; force]: the force through the base origin plus that moment,
            # moved to the body origin
            f += fext[i, 3:]
            n += fext[i, :3] - np.cross(po[i], fext[i, 3:])
        if f.any():
            cb.AccumulateForce(k, _vec(ch, f), _vec(ch, point), False)
        if n.any():
            cb.AccumulateTorque(k, _vec(ch, n), False)
    for t, link in zip(model.tsdas, cm.tsdas):
        link.SetActuatorForce(-float(act[t.act]) if act is not None and t.act >= 0 else 0.0)


def update(cm: ChronoModel) -> None:
    """Recompute everything Chrono derives from the state and loads (forces, gyroscopic terms, Jacobians)."""
    cm.system.Update()
    cm.system.ForceUpdate()  # so the next DoStepDynamics re-reads accumulators written since
