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

Before the slide, `align` turns every single-DOF body's frame so that its joint moves along a coordinate axis
(+x, +y or +z) of it, and folds the constant turn into the tree transform: a joint frame that is the parent's
translated, moving along +x, +y or +z, is left as it is, so its C is what it was before frames could turn.

Only the generated code sees the aligned and slid model. The dense reference and every check run the model as
written.
"""
from __future__ import annotations

import dataclasses as dc
from collections.abc import Callable

import numpy as np

from mechdyn.core.model import BASE, Loop, Model
from mechdyn.core.params import on
from mechdyn.core.spatial import rot_about

from .crba import mass_matrix
from .elements import element_forces
from .expr import Builder, Val
from .kinematics import TreeKinematics
from .rnea import bias_force

Counted = Callable[[Builder, TreeKinematics], list[Val]]  # the outputs whose operations a frame search counts
RADIUS = 3  # joints from the moved body to the window's edge: at 2 the arms (elbow) chose worse shifts


def turn_onto(a: np.ndarray) -> np.ndarray:
    """A rotation C with C e_k = a, k the axis a lies nearest: the identity for +e_k, a half turn about the next
    axis for −e_k (a signed permutation, so no structural zero is lost), else the least rotation onto a."""
    k = int(np.argmax(np.abs(a)))
    e = np.eye(3)[k]
    if a[k] == 1.0:
        return np.eye(3)
    if a[k] == -1.0:
        return np.diag([1.0 if j == (k + 1) % 3 else -1.0 for j in range(3)])
    n = np.cross(e, a)
    return rot_about(n / np.linalg.norm(n), float(np.arctan2(np.linalg.norm(n), e @ a)))


@dc.dataclass(frozen=True)
class TurnedLoop(Loop):
    """A loop between aligned frames: the triad its predecessor and its successor see, each in its own turned
    frame (the model's loop sees one triad in both, as docs/conventions.md defines it)."""
    turn_pred: np.ndarray = dc.field(default_factory=lambda: np.eye(3))  # Cᵀ of the predecessor
    turn_succ: np.ndarray = dc.field(default_factory=lambda: np.eye(3))

    def triads(self) -> tuple[np.ndarray, np.ndarray]:
        return self.turn_pred @ self.triad, self.turn_succ @ self.triad


def triads(lp: Loop) -> tuple[np.ndarray, np.ndarray]:
    """The loop triad's columns (u0, w0, a0) in the predecessor's and in the successor's frame."""
    return lp.triads() if isinstance(lp, TurnedLoop) else (lp.triad, lp.triad)


def turns(model: Model) -> tuple[np.ndarray, ...]:
    """Each body's C (turn_onto its joint axis; the identity for a floating body): its aligned frame is B C."""
    return tuple(np.eye(3) if bd.joint == "floating" else turn_onto(bd.axis) for bd in model.bodies)


def align(model: Model) -> Model:
    """The same mechanism with every single-DOF body's frame turned by its C (`turns`), so that its joint moves
    along +e_k: its tree rotation becomes rot C, and everything fixed on it (CG, inertia, points, loop anchors,
    its children's xtree and rotations) is re-expressed in the turned frame. The model itself when no C turns."""
    C = turns(model)
    if all(np.array_equal(c, np.eye(3)) for c in C):
        return model
    Ct = lambda i: np.eye(3) if i == BASE else C[i].T  # noqa: E731
    bodies = []
    for i, bd in enumerate(model.bodies):
        if bd.joint == "floating":
            bodies.append(bd)
            continue
        k = int(np.argmax(np.abs(bd.axis)))
        bodies.append(dc.replace(bd, axis=np.eye(3)[k], xtree=Ct(bd.parent) @ bd.xtree,
                                 rot=Ct(bd.parent) @ bd.rot @ C[i], cg=Ct(i) @ bd.cg,
                                 inertia=Ct(i) @ bd.inertia @ C[i]))
    pois = tuple(dc.replace(p, pos=Ct(p.body) @ p.pos) for p in model.pois)

    def turned(lp: Loop) -> TurnedLoop:
        same = {f.name: getattr(lp, f.name) for f in dc.fields(Loop)}
        return TurnedLoop(**{**same, "anchor_pred": Ct(lp.pred) @ lp.anchor_pred,
                             "anchor_succ": Ct(lp.succ) @ lp.anchor_succ}, turn_pred=Ct(lp.pred), turn_succ=Ct(lp.succ))

    loops = tuple(turned(lp) for lp in model.loops)
    def turned_param(p):  # a CG and an inertia turn with their body, a joint offset with its parent
        owner = model.bodies[p.index].parent if p.field == "xtree" else p.index
        return p if owner == BASE else dc.replace(p, turn=p.turn @ C[owner])

    params = tuple(turned_param(p) if p.kind == "body" else p for p in model.params)
    return dc.replace(model, bodies=tuple(bodies), pois=pois, loops=loops, params=params)


def slide(model: Model, s: tuple[float, ...]) -> Model:
    """The same mechanism with body i's frame moved by s[i] along its joint axis."""
    eye = np.eye(3)
    d = lambda i: s[i] * eye[model.bodies[i].axis_index] if i != BASE and s[i] else np.zeros(3)  # noqa: E731
    bodies = tuple(dc.replace(bd, xtree=bd.xtree if bd.joint == "floating" else bd.xtree + bd.rot @ d(i) - d(bd.parent),
                              cg=bd.cg - d(i)) for i, bd in enumerate(model.bodies))
    pois = tuple(dc.replace(p, pos=p.pos - d(p.body)) for p in model.pois)
    loops = tuple(dc.replace(lp, anchor_pred=lp.anchor_pred - d(lp.pred), anchor_succ=lp.anchor_succ - d(lp.succ))
                  for lp in model.loops)
    def slid_param(p):  # a CG moves back by its body's shift; a joint offset as its xtree does above
        if p.field == "cg":
            return dc.replace(p, shift=p.shift + d(p.index))
        if p.field == "xtree":
            bd = model.bodies[p.index]
            return dc.replace(p, shift=p.shift - (bd.rot @ d(p.index) - d(bd.parent)))
        return p

    params = tuple(slid_param(p) for p in model.params)
    return dc.replace(model, bodies=bodies, pois=pois, loops=loops, params=params)


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
    # a massless body's joint moves only what it carries: cut off from it, its pivot would be a structural zero
    grow = [k for k in near if model.bodies[k].mass == 0]
    while grow:
        k = grow.pop()
        for c, bd in enumerate(model.bodies):
            if bd.parent == k and c not in near:
                near.add(c)
                grow += [c] if bd.mass == 0 else []
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
    # the proxy keeps a massless parent's structure but not its zero mass: a floating body with no mass of its own
    # over a window whose bodies do not span six directions would give a zero pivot (it is counted, never solved)
    parent = model.bodies[top.parent] if top.parent != BASE else None
    weight = {} if parent is None or parent.mass > 0 else {"mass": 1.0, "inertia": np.eye(3)}
    if parent is not None and any(on(model, "body", top.parent, f) for f in ("mass", "cg", "inertia")):
        weight = {"mass": 1.0, "cg": np.zeros(3), "inertia": np.eye(3)}  # a declared parent's NaNs stay out
    proxy = [] if parent is None else [dc.replace(parent, parent=BASE, joint="floating", axis=np.zeros(3),
                                                  xtree=np.zeros(3), rot=np.eye(3), **weight)]
    index = {k: len(proxy) + n for n, k in enumerate(near)}
    outside = 0 if proxy else BASE
    where = lambda k: index.get(k, outside) if k != BASE else BASE  # noqa: E731
    bodies = tuple(proxy) + tuple(dc.replace(model.bodies[k], parent=where(model.bodies[k].parent)) for k in near)
    tsda_kept = [n for n, e in enumerate(model.tsdas)
                 if model.pois[e.poi_a].body in index or model.pois[e.poi_b].body in index]
    rsda_kept = [n for n, e in enumerate(model.rsdas) if e.body in index]
    tsdas = [model.tsdas[n] for n in tsda_kept]
    ends = {n for e in tsdas for n in (e.poi_a, e.poi_b)}
    kept = [n for n, p in enumerate(model.pois) if p.body in index or n in ends]
    renum = {n: m for m, n in enumerate(kept)}
    pois = tuple(dc.replace(model.pois[n], body=where(model.pois[n].body)) for n in kept)
    new = {"body": index, "tsda": {n: m for m, n in enumerate(tsda_kept)}, "rsda": {n: m for m, n in enumerate(rsda_kept)}}
    params = tuple(dc.replace(p, index=new[p.kind][p.index]) for p in model.params
                   if p.index in new.get(p.kind, ()))  # the contact's stay out, with the tracks and the ground
    return dc.replace(model, bodies=bodies, pois=pois, loops=(), tracks=(), q_design=None, params=params,
                      tsdas=tuple(dc.replace(e, poi_a=renum[e.poi_a], poi_b=renum[e.poi_b]) for e in tsdas),
                      rsdas=tuple(dc.replace(model.rsdas[n], body=index[model.rsdas[n].body]) for n in rsda_kept)), index[i]


def candidates(model: Model, i: int) -> set[float]:
    """Shifts of body i (in `model`'s frames) that zero one component along its axis."""
    a = model.bodies[i].axis_index
    bd = model.bodies[i]
    # its own offset along the axis, in the parent's frame; a declared number is no constant to zero
    xs = set() if on(model, "body", i, "xtree") else {-float(bd.rot[:, a] @ bd.xtree)}
    xs |= set() if on(model, "body", i, "cg") else {bd.cg[a]}
    xs |= {c.xtree[a] for n, c in enumerate(model.bodies) if c.parent == i and not on(model, "body", n, "xtree")}
    xs |= {p.pos[a] for p in model.pois if p.body == i}
    xs |= {lp.anchor_pred[a] for lp in model.loops if lp.pred == i}
    xs |= {lp.anchor_succ[a] for lp in model.loops if lp.succ == i}
    return {float(x) for x in xs}


def movable(model: Model) -> list[int]:
    """The single-DOF bodies: a floating body's q holds its position, so its frame stays."""
    return [i for i, bd in enumerate(model.bodies) if bd.joint != "floating"]


def shifts(model: Model, counted: Counted = tree_passes, radius: int = RADIUS) -> tuple[float, ...]:
    """The shifts, by coordinate descent root first until a sweep changes nothing or comes back to shifts it has
    left; each body's candidates counted on its window."""
    s = (0.0,) * model.nbody
    here = model
    seen: set[tuple[float, ...]] = set()
    changed = True
    while changed and s not in seen:  # a window's count is local: round-off residues can make two shifts alternate
        seen.add(s)
        changed = False
        for i in movable(model):
            local, k = window(here, i, radius)
            best, s0 = cost(local, counted), s[i]
            for x in sorted(candidates(here, i)):
                # a candidate that s0 + x rounds away (a round-off residue of an earlier shift) cannot move the
                # frame: taking it would mark the sweep changed forever
                if s0 + x != s0 and (c := cost(slide(local, tuple(x if n == k else 0.0 for n in range(local.nbody))),
                                               counted)) < best:
                    best, s, changed = c, s[:i] + (s0 + x,) + s[i + 1:], True
            if s[i] != s0:
                here = slide(model, s)
    return s


def describe_turns(model: Model) -> str:
    """The bodies whose frames align() turns, for a reader of the generated code ("" when none is)."""
    turned = [f"{bd.name} ({bd.axis_text} onto +{'xyz'[int(np.argmax(np.abs(bd.axis)))]})"
              for bd, c in zip(model.bodies, turns(model)) if not np.array_equal(c, np.eye(3))]
    return ", ".join(turned)


def describe(model: Model, s: tuple[float, ...]) -> str:
    """The shifts for a reader of the generated code, whose constants are in the slid frames."""
    along = lambda bd: "xyz"[bd.axis_index] if bd.axis_index >= 0 else "its axis"  # noqa: E731  (a turned frame's)
    moved = [f"{model.bodies[i].name} {x:+.10g} m along {along(model.bodies[i])}" for i, x in enumerate(s) if x]
    return ", ".join(moved) if moved else "none"
