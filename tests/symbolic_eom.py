"""Forward dynamics derived symbolically with Kane's method (sympy.physics.mechanics).

A third route, independent of the spatial-algebra code: the equations of motion
are built from ReferenceFrames, Points and RigidBodies and sympy does all the
kinematics (velocities, accelerations, partial velocities) itself.

Supported: tree models of revolute/prismatic joints about x/y/z, optionally with
one floating body whose parent is the base (and with children of its own).
Loops, TSDAs, RSDAs and tracks are rejected: this route only checks
H(q) qdd + C(q, qd) = tau with gravity.

Conventions (docs/mech-format.md, mechdyn/core/model.py):
  * at q = 0 every body frame is a pure translation of its parent; the joint
    frame sits at `xtree` in the parent body frame;
  * revolute: the child is rotated by the right-handed angle q about the joint
    axis; prismatic: the child is translated by q along the axis;
  * floating body: q = [qw qx qy qz rx ry rz] (scalar-first unit quaternion,
    body-to-base attitude, base-frame position of the body origin), velocity
    coordinates u = [omega; v] in body coordinates (v = velocity of the body
    origin), generalized force = [moment about the origin; force] in body
    coordinates.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import sympy as sp
from sympy.physics import mechanics as me

__all__ = ["symbolic_forward", "SymbolicEOM", "UnsupportedModel"]


class UnsupportedModel(ValueError):
    """The model uses something the symbolic route does not derive."""


def _check_supported(model) -> None:
    problems = []
    for name in ("loops", "tsdas", "rsdas", "tracks"):
        if getattr(model, name, ()):
            problems.append(f"{len(getattr(model, name))} {name}")
    floating = [i for i, b in enumerate(model.bodies) if b.joint == "floating"]
    if len(floating) > 1:
        problems.append(f"{len(floating)} floating bodies (at most one)")
    for i, b in enumerate(model.bodies):
        if b.joint == "floating":
            if b.parent != -1:
                problems.append(f"floating body {b.name!r} has a parent other than base")
        elif b.joint in ("revolute", "prismatic"):
            if b.axis_index < 0 or not b.aligned:
                problems.append(f"body {b.name!r}: axis {b.axis_text} is not x/y/z of an unturned frame")
        else:
            problems.append(f"body {b.name!r}: joint {b.joint!r} is not revolute/prismatic/floating")
        if b.parent >= i:
            problems.append(f"body {b.name!r}: parent {b.parent} is not an earlier body")
    if problems:
        raise UnsupportedModel(
            f"symbolic_forward({model.name!r}): unsupported model: " + "; ".join(problems)
            + " (supported: revolute/prismatic x/y/z trees with at most one floating body at the root)"
        )


def _vec(frame: me.ReferenceFrame, xyz) -> me.Vector:
    return sum((sp.Float(float(c), 17) * e for c, e in zip(xyz, (frame.x, frame.y, frame.z)) if c != 0),
               me.Vector(0))


def _quat_R(qw, qx, qy, qz) -> sp.Matrix:
    """Body-to-base rotation matrix of a unit scalar-first quaternion (Hamilton)."""
    return sp.Matrix([
        [1 - 2 * (qy**2 + qz**2), 2 * (qx * qy - qw * qz), 2 * (qx * qz + qw * qy)],
        [2 * (qx * qy + qw * qz), 1 - 2 * (qx**2 + qz**2), 2 * (qy * qz - qw * qx)],
        [2 * (qx * qz - qw * qy), 2 * (qy * qz + qw * qx), 1 - 2 * (qx**2 + qy**2)],
    ])


class SymbolicEOM:
    """Kane's equations for one model; call it as f(q, qd, tau) -> qdd."""

    def __init__(self, model, *, revolute_sign: float = 1.0) -> None:
        # revolute_sign = -1 plants a bug (child oriented by -q): tests use it
        # to prove the comparison can fail.
        _check_supported(model)
        self.model = model
        N = me.ReferenceFrame("N")
        O = me.Point("O")
        O.set_vel(N, 0)
        g = _vec(N, model.gravity)

        q_syms: list = []  # generalized coordinates, model q order
        u_syms: list = []  # generalized speeds, model v order
        kd: list = []  # kinematic differential equations
        frames: list[me.ReferenceFrame] = []
        origins: list[me.Point] = []
        bodies: list[me.RigidBody] = []
        loads: list = []
        pe = sp.S(0)  # potential energy (for the self-check)
        tau_syms: list = []  # generalized-force symbols, model v order

        for i, b in enumerate(model.bodies):
            if b.parent == -1:
                Pf, Po = N, O
            else:
                Pf, Po = frames[b.parent], origins[b.parent]
            if b.joint == "floating":
                qs = me.dynamicsymbols(f"qw{i} qx{i} qy{i} qz{i} rx{i} ry{i} rz{i}")
                us = me.dynamicsymbols(f"wx{i} wy{i} wz{i} vx{i} vy{i} vz{i}")
                qw, qx, qy, qz, rx, ry, rz = qs
                wx, wy, wz, vx, vy, vz = us
                B = me.ReferenceFrame(f"B{i}")
                R = _quat_R(qw, qx, qy, qz)  # r_N = R r_B, i.e. N.dcm(B) = R
                B.orient_dcm(N, R.T)  # B.dcm(N) = R^T
                B.set_ang_vel(N, wx * B.x + wy * B.y + wz * B.z)
                Bo = O.locatenew(f"O{i}", rx * N.x + ry * N.y + rz * N.z)
                Bo.set_vel(N, vx * B.x + vy * B.y + vz * B.z)
                # kinematics: Qdot = 1/2 Q (x) (0, omega); rdot = R v
                kd += [
                    qw.diff() + (qx * wx + qy * wy + qz * wz) / 2,
                    qx.diff() - (qw * wx + qy * wz - qz * wy) / 2,
                    qy.diff() - (qw * wy - qx * wz + qz * wx) / 2,
                    qz.diff() - (qw * wz + qx * wy - qy * wx) / 2,
                ]
                rdot = R * sp.Matrix([vx, vy, vz])
                kd += [rx.diff() - rdot[0], ry.diff() - rdot[1], rz.diff() - rdot[2]]
                q_syms += qs
                u_syms += us
                # generalized forces [moment; force] in body coordinates
                tq = sp.symbols(f"tau{i}_0:6")
                loads.append((B, tq[0] * B.x + tq[1] * B.y + tq[2] * B.z))
                loads.append((Bo, tq[3] * B.x + tq[4] * B.y + tq[5] * B.z))
                tau_syms_i = list(tq)
            else:
                qi = me.dynamicsymbols(f"q{i}")
                ui = me.dynamicsymbols(f"u{i}")
                kd.append(qi.diff() - ui)
                q_syms.append(qi)
                u_syms.append(ui)
                J = Po.locatenew(f"J{i}", _vec(Pf, b.xtree))  # joint point, fixed in the parent
                J.v2pt_theory(Po, N, Pf)
                axis = (Pf.x, Pf.y, Pf.z)[b.axis_index]
                ti = sp.Symbol(f"tau{i}")
                if b.joint == "revolute":
                    B = me.ReferenceFrame(f"B{i}")
                    B.orient_axis(Pf, axis, revolute_sign * qi)  # sympy derives omega = qdot axis
                    Bo = J.locatenew(f"O{i}", 0)
                    Bo.v2pt_theory(J, N, B)
                    # an actuator torque between parent and child
                    loads.append((B, ti * axis))
                    if Pf is not N:
                        loads.append((Pf, -ti * axis))
                else:  # prismatic: same orientation as the parent
                    B = me.ReferenceFrame(f"B{i}")
                    B.orient_axis(Pf, axis, 0)
                    B.set_ang_vel(Pf, 0)
                    Bo = J.locatenew(f"O{i}", qi * axis)
                    Bo.set_vel(Pf, qi.diff() * axis)
                    Bo.v1pt_theory(J, N, Pf)
                    # an actuator force between parent and child, along the same line
                    loads.append((Bo, ti * axis))
                    if Pf is not N:
                        Jc = J.locatenew(f"Jc{i}", qi * axis)  # parent point coincident with Bo
                        Jc.v2pt_theory(J, N, Pf)
                        loads.append((Jc, -ti * axis))
                tau_syms_i = [ti]
            G = Bo.locatenew(f"G{i}", _vec(B, b.cg))
            G.v2pt_theory(Bo, N, B)
            I = np.asarray(b.inertia, dtype=float)
            dyad = sum(
                (sp.Float(float(I[r, c]), 17) * (ex | ey)
                 for r, ex in enumerate((B.x, B.y, B.z))
                 for c, ey in enumerate((B.x, B.y, B.z)) if I[r, c] != 0),
                me.Dyadic(0),
            )
            m = sp.Float(float(b.mass), 17)
            body = me.RigidBody(f"body{i}", G, B, m, (dyad, G))
            loads.append((G, m * g))
            pe += -m * g.dot(G.pos_from(O))
            frames.append(B)
            origins.append(Bo)
            bodies.append(body)
            tau_syms += tau_syms_i

        kane = me.KanesMethod(N, q_ind=q_syms, u_ind=u_syms, kd_eqs=kd)
        kane.kanes_equations(bodies, loads)
        M = kane.mass_matrix
        F = kane.forcing
        qdot_map = kane.kindiffdict()

        # plain symbols for lambdify
        qv = sp.symbols(f"q0:{len(q_syms)}")
        uv = sp.symbols(f"u0:{len(u_syms)}")
        sub = dict(zip(q_syms, qv)) | dict(zip(u_syms, uv))
        M = me.msubs(M, sub)
        F = me.msubs(F, sub)
        args = (qv, uv, tau_syms)
        self._M = sp.lambdify(args, M, modules="numpy", cse=True)
        self._F = sp.lambdify(args, F, modules="numpy", cse=True)
        ke = sum((bd.kinetic_energy(N) for bd in bodies), sp.S(0))
        self._E = sp.lambdify(args, me.msubs(me.msubs(ke + pe, qdot_map), sub), modules="numpy", cse=True)
        qd_exprs = sp.Matrix([me.msubs(qdot_map[qs.diff()], sub) for qs in q_syms])
        self._qdot = sp.lambdify(args, qd_exprs, modules="numpy", cse=True)
        self.nq, self.nv = len(q_syms), len(u_syms)
        assert self.nq == model.nq and self.nv == model.nv

    def _args(self, q, qd, tau):
        return (tuple(np.asarray(q, float)), tuple(np.asarray(qd, float)), tuple(np.asarray(tau, float)))

    def __call__(self, q, qd, tau) -> np.ndarray:
        a = self._args(q, qd, tau)
        M = np.asarray(self._M(*a), dtype=float)
        F = np.asarray(self._F(*a), dtype=float).reshape(-1)
        return np.linalg.solve(M, F)

    def mass_matrix(self, q) -> np.ndarray:
        a = self._args(q, np.zeros(self.nv), np.zeros(self.nv))
        return np.asarray(self._M(*a), dtype=float)

    def energy(self, q, qd) -> float:
        """Kinetic plus gravitational potential energy."""
        return float(self._E(*self._args(q, qd, np.zeros(self.nv))))

    def qdot(self, q, qd) -> np.ndarray:
        """dq/dt from the kinematic differential equations."""
        return np.asarray(self._qdot(*self._args(q, qd, np.zeros(self.nv))), dtype=float).reshape(-1)


def symbolic_forward(model, *, revolute_sign: float = 1.0) -> Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
    """f(q, qd, tau) -> qdd from Kane's equations (tau=0 gives the free motion under gravity)."""
    return SymbolicEOM(model, revolute_sign=revolute_sign)
