"""Pass 0: every single-DOF body's frame slid along its own joint axis to where its constants fold best.

A revolute or prismatic joint's motion commutes with a translation along its axis, so body i's frame may
move by sᵢ·aᵢ without changing what q, qd and qdd mean: its joint frame moves with it (xtreeᵢ += sᵢ aᵢ), and
everything fixed on it moves back (its CG, points and loop anchors, its children's xtree, each −= sᵢ aᵢ).
Denavit and Hartenberg's convention spends the same freedom. A component that becomes zero folds away in
every transform and inertia that carries it, so each sᵢ is chosen from the values that zero one such
component, by the counted operations of the tree's kinematics, H, C and Q (fewest wins; ties keep the frame
where it is). The loop rows are left out of that count: their frame trial (loops.py) makes each count many
times slower, and they moved the result by a few operations (figures in docs/performance.md). Floating
bodies stay put: their q holds a position (and their parent is the base).

Only the generated code sees the slid model. The dense reference and every check run the model as written.
"""
from __future__ import annotations

import dataclasses as dc

import numpy as np

from mechdyn.core.model import BASE, Model

from .crba import mass_matrix
from .elements import element_forces
from .expr import Builder
from .kinematics import TreeKinematics
from .rnea import bias_force


def slide(model: Model, s: tuple[float, ...]) -> Model:
    """The same mechanism with body i's frame moved by s[i] along its joint axis."""
    eye = np.eye(3)
    d = lambda i: s[i] * eye[model.bodies[i].axis] if i != BASE and s[i] else np.zeros(3)  # noqa: E731
    bodies = tuple(dc.replace(bd, xtree=bd.xtree if bd.joint == "floating" else bd.xtree + d(i) - d(bd.parent),
                              cg=bd.cg - d(i)) for i, bd in enumerate(model.bodies))
    pois = tuple(dc.replace(p, pos=p.pos - d(p.body)) for p in model.pois)
    loops = tuple(dc.replace(lp, anchor_pred=lp.anchor_pred - d(lp.pred), anchor_succ=lp.anchor_succ - d(lp.succ))
                  for lp in model.loops)
    return dc.replace(model, bodies=bodies, pois=pois, loops=loops)


def cost(model: Model) -> int:
    """Counted operations of the tree's kinematics, H, C and Q: what the frames change most."""
    b = Builder(path=model.path)
    kin = TreeKinematics(b, model)
    return b.cost([*mass_matrix(b, kin).values(), *bias_force(b, kin), *element_forces(b, kin).values()], 0)


def candidates(model: Model, i: int) -> set[float]:
    """Shifts of body i (in `model`'s frames) that zero one component along its axis."""
    a = model.bodies[i].axis
    xs = {model.bodies[i].cg[a], -model.bodies[i].xtree[a]}
    xs |= {c.xtree[a] for c in model.bodies if c.parent == i}
    xs |= {p.pos[a] for p in model.pois if p.body == i}
    xs |= {lp.anchor_pred[a] for lp in model.loops if lp.pred == i}
    xs |= {lp.anchor_succ[a] for lp in model.loops if lp.succ == i}
    return {float(x) for x in xs}


def movable(model: Model) -> list[int]:
    """The single-DOF bodies: a floating body's q holds its position, so its frame stays."""
    return [i for i, bd in enumerate(model.bodies) if bd.joint != "floating"]


def shifts(model: Model) -> tuple[float, ...]:
    """The shifts, by coordinate descent root first until a sweep changes nothing."""
    s = (0.0,) * model.nbody
    best = cost(model)
    changed = True
    while changed:
        changed = False
        for i in movable(model):
            here, s0 = slide(model, s), s[i]
            for x in sorted(candidates(here, i)):
                t = s[:i] + (s0 + x,) + s[i + 1:]
                if (k := cost(slide(model, t))) < best:
                    best, s, changed = k, t, True
    return s


def describe(model: Model, s: tuple[float, ...]) -> str:
    """The shifts for a reader of the generated code, whose constants are in the slid frames."""
    moved = [f"{model.bodies[i].name} {x:+.10g} m along {'xyz'[model.bodies[i].axis]}" for i, x in enumerate(s) if x]
    return ", ".join(moved) if moved else "none"
