"""Mechanical energy along a trajectory, by a route independent of the stepper.

Kinetic ½ Σ vᵢᵀ Iᵢ vᵢ from the numeric forward kinematics, gravitational
−Σ mᵢ g·cᵢ, and the elements' springs ½k(l − l0)² and ½k(q − q0)²; plus the
power the elements' dampers dissipate, c l̇² and c q̇², so that a damped model's
balance E + ∫P_diss can be checked too. The stepper integrates that power in C
at every step (Trajectory.dissipated); integrated here over the recorded rows
alone, it is right only when every step is recorded.

Two routes compute them, neither from the generated code: `energy_terms` at one
state, from core.kinematics' spatial transforms, and `mechanics` at every row of
a run in one call of mechanics.c's world-frame recursion (with the momentum,
the loop closure residuals and the bodies' poses). The tests hold the second to
the first on every model.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType

import numpy as np

from mechdyn.blocks import each_block
from mechdyn.codegen.build import build_source
from mechdyn.codegen.capi import BODY_ROW
from mechdyn.contact.native import api
from mechdyn.core.kinematics import forward_kinematics, point_state
from mechdyn.core.model import LOOP_ROWS, Model
from mechdyn.core.spatial import mcI

_SOURCE = Path(__file__).with_name("mechanics.c")


def total_mass(model: Model) -> float:
    """The model's mass, kg: every body's."""
    return float(sum(b.mass for b in model.bodies))


def energy_terms(model: Model, q: np.ndarray, qd: np.ndarray) -> tuple[float, float, float]:
    """(kinetic, potential, dissipated power) at one state; potential = gravity + springs."""
    kin = forward_kinematics(model, q, qd)
    T = sum(0.5 * v @ mcI(b.mass, b.cg, b.inertia) @ v for b, v in zip(model.bodies, kin.v))
    V = -sum(b.mass * model.gravity @ (kin.p[i] + kin.R[i] @ b.cg) for i, b in enumerate(model.bodies))
    P = 0.0
    for e in model.tsdas:
        (pa, va), (pb, vb) = (point_state(model, kin, model.pois[k].body, model.pois[k].pos) for k in (e.poi_a, e.poi_b))
        l = np.linalg.norm(pb - pa)
        ldot = (pb - pa) @ (vb - va) / l
        V += 0.5 * e.k * (l - e.l0) ** 2
        P += e.c * ldot**2
    for e in model.rsdas:
        x, xd = q[model.qidx[e.body]], qd[model.vidx[e.body]]
        V += 0.5 * e.k * (x - e.q0) ** 2
        P += e.c * xd**2
    return float(T), float(V), float(P)


def energy_balance(model: Model, t: np.ndarray, Q: np.ndarray, QD: np.ndarray, dissipated: np.ndarray | None = None,
                   mech: Mechanics | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Total mechanical energy E(t), and E(t) + W(t), which an exact solution keeps at E(0).

    E from `mechanics` (`mech`, when the caller has it already). W is `dissipated` (the stepper's, integrated
    at every step) when given, else ∫₀ᵗ P_diss by the trapezoidal rule over the rows themselves.
    """
    mech = mech or mechanics(model, Q, QD)
    E = mech.kinetic + mech.potential
    if dissipated is not None:
        return E, E + dissipated
    P = mech.power
    W = np.concatenate([[0.0], np.cumsum(0.5 * (P[1:] + P[:-1]) * np.diff(t))])
    return E, E + W


@dataclass(frozen=True)
class Mechanics:
    """Per recorded row: kinetic and potential (gravity + springs) energy, J; linear momentum Σ m·v_cg, N·s; the
    power the elements' dampers dissipate, W; the loop closure residuals φ (docs/conventions.md)."""
    kinetic: np.ndarray  # (n,)
    potential: np.ndarray  # (n,)
    momentum: np.ndarray  # (n, 3)
    power: np.ndarray  # (n,)
    closure: np.ndarray  # (n, nc)
    poses: np.ndarray | None = None  # (n, nbody, 18): R (row-major, body to world), origin, ω, origin's velocity


JOINTS = {"revolute": 0, "prismatic": 1, "floating": 2}  # mechanics.c's joint codes
ROW_KINDS = {"sep": 0, "dirs": 1, "dist": 2}
AXES = {"x": 0, "y": 1, "z": 2, "u": 3, "w": 4, "as": 5, "ws": 6}  # mechanics.c's closure axes


def compile(text: str) -> ModuleType:  # noqa: A001  (the module's verb)
    """The cffi module of C `text` with mechanics.c's API (a test's planted copy), through the compile cache."""
    return build_source("mechanics", api(text)[0], text)


@cache
def module() -> ModuleType:
    """mechanics.c's cffi module, as the product compiles it."""
    return compile(_SOURCE.read_text())


def _tree(model: Model, ffi) -> tuple[object, list[np.ndarray]]:
    """mechanics.c's md_tree of `model`, and the arrays it points into (kept alive beside it)."""
    bodies, loops = model.bodies, model.loops
    for b in bodies:
        if b.joint not in JOINTS:
            raise ValueError(f"body {b.name!r}: unsupported tree joint {b.joint!r}")
    ints = lambda rows: np.ascontiguousarray(np.array(rows, dtype=np.int32).reshape(-1))  # noqa: E731
    reals = lambda rows: np.ascontiguousarray(np.array(rows, dtype=float).reshape(-1))  # noqa: E731
    rows = []  # (loop, kind, axis, axis): a sep row reads one axis, a dist row none
    for k, lp in enumerate(loops):
        for kind, *names in LOOP_ROWS[lp.joint]:
            axes = [AXES[a] for a in names] + [0, 0]
            rows.append((k, ROW_KINDS[kind], axes[0], axes[1]))
    fields = {
        "parent": ints([b.parent for b in bodies]), "joint": ints([JOINTS[b.joint] for b in bodies]),
        "qidx": ints([model.qidx[i] for i in range(len(bodies))]),
        "vidx": ints([model.vidx[i] for i in range(len(bodies))]),
        "rot": reals([b.rot for b in bodies]), "axis": reals([b.axis for b in bodies]),
        "xtree": reals([b.xtree for b in bodies]), "mass": reals([b.mass for b in bodies]),
        "cg": reals([b.cg for b in bodies]), "inertia": reals([b.inertia for b in bodies]),
        "tsda_body": ints([(model.pois[e.poi_a].body, model.pois[e.poi_b].body) for e in model.tsdas]),
        "tsda_pos": reals([(model.pois[e.poi_a].pos, model.pois[e.poi_b].pos) for e in model.tsdas]),
        "tsda_klc": reals([(e.k, e.l0, e.c) for e in model.tsdas]),
        "rsda_slot": ints([(model.qidx[e.body], model.vidx[e.body]) for e in model.rsdas]),
        "rsda_kqc": reals([(e.k, e.q0, e.c) for e in model.rsdas]),
        "loop_body": ints([(lp.pred, lp.succ) for lp in loops]),
        "loop_geom": reals([[*lp.anchor_pred, *lp.anchor_succ, *lp.triad.reshape(-1),
                             lp.length if lp.length is not None else 0.0] for lp in loops]),
        "rows": ints(rows),
    }
    t = ffi.new("md_tree *")
    t.nbody, t.nq, t.nv = len(bodies), model.nq, model.nv
    t.gravity = list(map(float, model.gravity))
    t.ntsda, t.nrsda, t.nloop, t.nc = len(model.tsdas), len(model.rsdas), len(loops), len(rows)
    for name, a in fields.items():
        setattr(t, name, ffi.from_buffer("int[]" if a.dtype == np.int32 else "double[]", a))
    return t, list(fields.values())


def mechanics(model: Model, Q: np.ndarray, QD: np.ndarray, poses: bool = False) -> Mechanics:
    """The kinetic and potential energy, momentum, dissipated power and closure residuals at every row of (Q, QD)
    (energy_terms' and loops.closure's quantities), and with `poses` every body's pose and velocity in the rows
    of fwd_dyn_bodies (BODY_ROW: R row-major, origin, ω, the origin's velocity, world), by mechanics.c's numeric
    kinematics: independent of the generated code, in one C call over all rows."""
    Q = np.ascontiguousarray(np.atleast_2d(np.asarray(Q, dtype=float)))
    QD = np.ascontiguousarray(np.atleast_2d(np.asarray(QD, dtype=float)))
    if Q.ndim != 2 or QD.ndim != 2 or Q.shape != (len(Q), model.nq) or QD.shape != (len(Q), model.nv):
        raise ValueError(f"Q has shape {Q.shape} and QD {QD.shape}; expected (n, {model.nq}) and (n, {model.nv}) "
                         f"for model '{model.name}'")
    mod = module()
    ffi = mod.ffi
    t, _arrays = _tree(model, ffi)  # _arrays: what t points into, alive through the call
    n = len(Q)
    T, V, P, M = np.empty(n), np.empty(n), np.empty(n), np.empty((n, 3))
    phi = np.empty((n, t.nc))
    X = np.empty((n, model.nbody, BODY_ROW)) if poses else None
    buf = lambda a: ffi.from_buffer("double[]", a)  # noqa: E731

    def rows(a: int, b: int) -> None:  # rows [a, b), with a workspace of their own (cffi releases the GIL)
        work = np.empty(18 * max(model.nbody, 1))
        mod.lib.md_mechanics(t, b - a, *(buf(x[a:b]) for x in (Q, QD, T, V, P, M)),
                             buf(phi[a:b]) if t.nc else ffi.NULL, buf(X[a:b]) if poses else ffi.NULL, buf(work))

    list(each_block(rows, n))  # every block done before the arrays are read
    return Mechanics(T, V, M, P, phi, X)
