"""Pass 0: every single-DOF body's frame slid along its own joint axis to where its constants fold best.

A revolute or prismatic joint's motion commutes with a translation along its axis, so body i's frame may
move by sᵢ·aᵢ without changing what q, qd and qdd mean: its joint frame moves with it (xtreeᵢ += sᵢ aᵢ), and
everything fixed on it moves back (its CG, points and loop anchors, its children's xtree, each −= sᵢ aᵢ).
Denavit and Hartenberg's convention spends the same freedom. A component that becomes zero folds away in
every transform and inertia that carries it, so each sᵢ is chosen from the values that zero one such
component, by the counted operations of the passes the route emits (`Counted`; by default the tree's
kinematics, H, C and Q), fewest wins, ties keep the frame where it is. The loop rows are left out of that
count: their frame trial (loops.py) makes each count many times slower, and they moved the result by a few
operations (figures in docs/performance.md). Floating bodies stay put: their q holds a position (and their
parent is the base).

A shift of body i changes only constants of body i (its xtree, CG, points, anchors) and its children's
xtree, so each candidate is counted on a window of the tree around body i (`window`), not on the whole
model: the search costs bodies × candidates × window, where counting the whole model would cost bodies ×
candidates × model (cubic and worse down a chain, whose H alone is quadratic).

Only the generated code sees the slid model. The dense reference and every check run the model as written.
"""
from __future__ import annotations

import dataclasses as dc
from collections.abc import Callable

import numpy as np

from mechdyn.core.model import BASE, Model

from .crba import mass_matrix
from .elements import element_forces
from .expr import Builder, Val
from .kinematics import TreeKinematics
from .rnea import bias_force

Counted = Callable[[Builder, TreeKinematics], list[Val]]  # the outputs whose operations a frame search counts
RADIUS = 3  # joints from the moved body to the window's edge: at 2 the arms (elbow) chose worse shifts


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


def tree_passes(b: Builder, kin: TreeKinematics) -> list[Val]:
    """The outputs of the CRBA route's tree passes: H, C and Q (the kinematics counted through them)."""
    return [*mass_matrix(b, kin).values(), *bias_force(b, kin), *element_forces(b, kin).values()]


def cost(model: Model, counted: Counted = tree_passes) -> int:
    """Counted operations of the `counted` passes on the model: what the frames change most."""
    b = Builder(path=model.path)
    return b.cost(counted(b, TreeKinematics(b, model)), 0)


def neighbourhood(model: Model, i: int, radius: int) -> list[int]:
    """The bodies at most `radius` joints from body i, in model order (so parents come first)."""
    near, edge = {i}, {i}
    for _ in range(radius):
        edge = {j for k in edge for j in (model.bodies[k].parent, *(c for c, bd in enumerate(model.bodies)
                                                                     if bd.parent == k))} - near - {BASE}
        near |= edge
    return sorted(near)


def window(model: Model, i: int, radius: int = RADIUS) -> tuple[Model, int]:
    """The tree around body i on which a shift of i is counted, and i's index in it.

    It holds the bodies within `radius` joints of i. Its top body hangs from the base as in the model, or, when
    the model gives it a parent outside the window, from that parent made floating, so that the top body moves
    as generally as it does in the model (a window on the base would fold its velocities away). The points,
    TSDAs and RSDAs on its bodies come along, a TSDA's end outside the window on the top body's parent; the
    loops stay out, as in the whole model's count."""
    near = neighbourhood(model, i, radius)
    top = model.bodies[near[0]]
    proxy = [] if top.parent == BASE else [dc.replace(model.bodies[top.parent], parent=BASE, joint="floating",
                                                      axis=-1, xtree=np.zeros(3))]
    index = {k: len(proxy) + n for n, k in enumerate(near)}
    outside = 0 if proxy else BASE
    where = lambda k: index.get(k, outside) if k != BASE else BASE  # noqa: E731
    bodies = tuple(proxy) + tuple(dc.replace(model.bodies[k], parent=where(model.bodies[k].parent)) for k in near)
    tsdas = [e for e in model.tsdas if model.pois[e.poi_a].body in index or model.pois[e.poi_b].body in index]
    ends = {n for e in tsdas for n in (e.poi_a, e.poi_b)}
    kept = [n for n, p in enumerate(model.pois) if p.body in index or n in ends]
    renum = {n: m for m, n in enumerate(kept)}
    pois = tuple(dc.replace(model.pois[n], body=where(model.pois[n].body)) for n in kept)
    return dc.replace(model, bodies=bodies, pois=pois, loops=(), tracks=(), q_design=None,
                      tsdas=tuple(dc.replace(e, poi_a=renum[e.poi_a], poi_b=renum[e.poi_b]) for e in tsdas),
                      rsdas=tuple(dc.replace(e, body=index[e.body]) for e in model.rsdas if e.body in index)), index[i]


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


def shifts(model: Model, counted: Counted = tree_passes, radius: int = RADIUS) -> tuple[float, ...]:
    """The shifts, by coordinate descent root first until a sweep changes nothing; each body's candidates
    counted on its window."""
    s = (0.0,) * model.nbody
    here = model
    changed = True
    while changed:
        changed = False
        for i in movable(model):
            local, k = window(here, i, radius)
            best, s0 = cost(local, counted), s[i]
            for x in sorted(candidates(here, i)):
                if x and (c := cost(slide(local, tuple(x if n == k else 0.0 for n in range(local.nbody))),
                                    counted)) < best:
                    best, s, changed = c, s[:i] + (s0 + x,) + s[i + 1:], True
            if s[i] != s0:
                here = slide(model, s)
    return s


def describe(model: Model, s: tuple[float, ...]) -> str:
    """The shifts for a reader of the generated code, whose constants are in the slid frames."""
    moved = [f"{model.bodies[i].name} {x:+.10g} m along {'xyz'[model.bodies[i].axis]}" for i, x in enumerate(s) if x]
    return ", ".join(moved) if moved else "none"
