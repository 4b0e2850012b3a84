"""Mode shapes as small multiples: the mechanism at equilibrium and displaced along each mode, one panel a mode."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from mechdyn.core.integrate import retract  # noqa: E402
from mechdyn.core.model import BASE, Model  # noqa: E402
from mechdyn.dynamics import Dynamics  # noqa: E402

from .equilibrium import EquilibriumError, close_loops  # noqa: E402
from .modes import Modes  # noqa: E402

AMPLITUDE = 0.12  # the largest point's displacement drawn, as a fraction of the mechanism's size
AXES = "xyz"


def _body_points(model: Model) -> list[list[np.ndarray]]:
    """Per body, the points that outline it in its own frame: its origin first (the joint), then its children's
    joints, its loop anchors and points of interest (or, with none of those, its CG). Drawn as spokes from the
    origin."""
    pts: list[list[np.ndarray]] = [[np.zeros(3)] for _ in model.bodies]
    for b in model.bodies:
        if b.parent != BASE:
            pts[b.parent].append(b.xtree)
    for lp in model.loops:
        if lp.pred != BASE:
            pts[lp.pred].append(lp.anchor_pred)
        pts[lp.succ].append(lp.anchor_succ)
    for p in model.pois:
        if p.body != BASE:
            pts[p.body].append(p.pos)
    for i, b in enumerate(model.bodies):
        if len(pts[i]) == 1:  # a body with nothing else to outline it (a pendulum): a spoke to its CG
            pts[i].append(b.cg)
    return pts


class _Drawing:
    """World positions of the outline points, the loops' anchors and the springs' ends at a configuration."""

    def __init__(self, dyn: Dynamics) -> None:
        self.dyn, self.model, self.local = dyn, dyn.model, _body_points(dyn.model)

    def at(self, q: np.ndarray) -> dict[str, list[np.ndarray]]:
        bs = self.dyn.body_states(q, np.zeros(self.model.nv))

        def world(body: int, p: np.ndarray) -> np.ndarray:
            return p if body == BASE else bs.p[body] + bs.R[body] @ p

        bodies = [np.array([world(i, p) for p in pts]) for i, pts in enumerate(self.local)]
        loops = [np.array([world(lp.pred, lp.anchor_pred), world(lp.succ, lp.anchor_succ)]) for lp in self.model.loops]
        pois = self.model.pois
        springs = [np.array([world(pois[t.poi_a].body, pois[t.poi_a].pos), world(pois[t.poi_b].body, pois[t.poi_b].pos)])
                   for t in self.model.tsdas]
        ground = [world(BASE, lp.anchor_pred) for lp in self.model.loops if lp.pred == BASE]
        ground += [world(BASE, p.pos) for p in pois if p.body == BASE]
        ground += [bs.p[i] for i, b in enumerate(self.model.bodies) if b.parent == BASE and b.joint == "revolute"]
        return {"bodies": bodies, "loops": loops, "springs": springs, "ground": ground}


def _flat(d: dict[str, list[np.ndarray]]) -> np.ndarray:
    return np.vstack([x.reshape(-1, 3) for k in ("bodies", "loops", "springs") for x in d[k]] or [np.zeros((1, 3))])


def _view(motion: np.ndarray, gravity: np.ndarray) -> tuple[np.ndarray, tuple[str, str]]:
    """The 2 x 3 projection onto the page and its axis labels: an elevation, gravity's axis up, across the
    horizontal axis the modes move the most (without gravity: the plane of the two axes they move the most), the
    third axis receding obliquely (a cabinet view) when it carries a quarter of the largest motion or more."""
    order = [int(i) for i in np.argsort(-motion)]
    if np.any(gravity):
        b = int(np.argmax(np.abs(gravity)))
        a = next(i for i in order if i != b)
    else:
        a, b = sorted(order[:2])
    c = 3 - a - b
    P = np.zeros((2, 3))
    P[0, a] = 1.0
    P[1, b] = 1.0 if not np.any(gravity) or gravity[b] < 0 else -1.0  # up is against gravity
    label = (f"{AXES[a]} [m]", f"{AXES[b]} [m]")
    if motion[c] >= 0.25 * max(motion[a], motion[b]):
        P[:, c] = 0.45 * np.array([np.cos(np.radians(35)), np.sin(np.radians(35))])
        label = (f"{AXES[a]} [m] ({AXES[c]} receding)", label[1])
    return P, label


def _draw(ax, d: dict[str, list[np.ndarray]], P: np.ndarray, color: str, width: float, style: str = "-",
          alpha: float = 1.0) -> None:
    for pts in d["bodies"]:
        xy = pts @ P.T
        for p in xy[1:]:
            ax.plot([xy[0, 0], p[0]], [xy[0, 1], p[1]], style, color=color, lw=width, alpha=alpha,
                    solid_capstyle="round")
        ax.plot(xy[0, 0], xy[0, 1], "o", color=color, ms=2.5 * width, alpha=alpha)
    for seg in d["loops"]:
        xy = seg @ P.T
        ax.plot(xy[:, 0], xy[:, 1], ":", color=color, lw=width, alpha=alpha)
    for seg in d["springs"]:
        xy = seg @ P.T
        ax.plot(xy[:, 0], xy[:, 1], "-", color="tab:green", lw=0.6 * width, alpha=alpha)


HALVINGS = 6  # a drawn displacement the loops cannot close onto is halved up to this many times


def _displaced(model: Model, lin, shape: np.ndarray) -> tuple[list[np.ndarray], float]:
    """The poses displaced by −shape and +shape with the loops re-closed, and the fraction of the shape drawn: a
    vehicle's suspension cannot follow a large displacement, so it is halved until the loops close."""
    scale = 1.0
    for _ in range(HALVINGS):
        try:
            return [close_loops(model, retract(model, lin.q, sign * scale * shape), lin.held) for sign in (-1, 1)], scale
        except EquilibriumError:
            scale /= 2
    return [close_loops(model, retract(model, lin.q, sign * scale * shape), lin.held) for sign in (-1, 1)], scale


def plot_modes(dyn: Dynamics, md: Modes, path: Path, title: str | None = None) -> Path:
    """Draw every mode of md into the PNG `path`: the bodies (spokes from each joint to its children's joints,
    loop anchors and points of interest) at equilibrium in grey, and displaced both ways along the mode in
    colour (solid +, dashed -), in an elevation across the modes' largest motion (_view); each panel
    labelled with its frequency and damping ratio. Triangles: revolute joints and anchors on the base; squares:
    held bodies."""
    lin, model = md.lin, dyn.model
    if not len(md):
        raise ValueError(f"model {model.name} has no free coordinates here: no mode to draw")
    drawing = _Drawing(dyn)
    rest = drawing.at(lin.q)
    rest_pts = _flat(rest)
    size = max(float(np.max(np.ptp(rest_pts, axis=0))), 0.1)
    probe = 1e-6  # the points' displacement per unit of the shape, by a small step along it
    shapes = []
    motion = np.zeros(3)
    for i, s in enumerate(md.shapes):
        v = (_flat(drawing.at(close_loops(model, retract(model, lin.q, probe * s), lin.held))) - rest_pts) / probe
        amp = AMPLITUDE * size / max(float(np.max(np.linalg.norm(v, axis=1))), 1e-12)
        shapes.append(amp * s)
        if not md.rigid[i] or md.rigid.all():  # a free rotor's spin must not choose the view of the vibrations
            motion += np.sum(np.abs(v), axis=0) * amp / size
    P, label = _view(motion, model.gravity)
    held_bodies = [i for i, b in enumerate(model.bodies) if any(model.vidx[i] <= h < model.vidx[i] + b.nv
                                                                 for h in lin.held)]
    k = len(md)
    cols = min(k, 4)
    rows = -(-k // cols)
    fig, grid = plt.subplots(rows, cols, figsize=(3.4 * cols, 3.4 * rows), squeeze=False)
    flat = rest_pts @ P.T
    lo, hi = flat.min(axis=0) - 0.2 * size, flat.max(axis=0) + 0.2 * size
    for i, ax in enumerate(grid.flat):
        if i >= k:
            ax.axis("off")
            continue
        poses, scale = _displaced(model, lin, shapes[i])
        for q, style, alpha, color in zip(poses, ("--", "-"), (0.6, 1.0), ("tab:blue", "tab:red")):
            _draw(ax, drawing.at(q), P, color, 1.8, style, alpha)
        _draw(ax, rest, P, "0.55", 1.2)
        for g in rest["ground"]:
            xy = P @ g
            ax.plot(xy[0], xy[1], "^", color="k", ms=6)
        for j in held_bodies:
            xy = rest["bodies"][j][0] @ P.T
            ax.plot(xy[0], xy[1], "s", color="k", ms=6)
        zeta = md.damping[i] if abs(md.damping[i]) >= 1e-9 else 0.0  # an undamped mode's round-off
        f = "rigid-body mode" if md.rigid[i] else f"{md.frequency[i]:.3g} Hz, ζ = {zeta:.3g}"
        ax.set_title(f"mode {i + 1}: {f}" + (f" (drawn at 1/{round(1 / scale)})" if scale < 1 else ""), fontsize=9)
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
        ax.set_aspect("equal")
        ax.set_xlabel(label[0], fontsize=8)
        ax.set_ylabel(label[1], fontsize=8)
        ax.tick_params(labelsize=7)
    about = "equilibrium" if np.max(np.abs(lin.qdd)) <= 1e-8 else "the given q (not an equilibrium)"
    fig.suptitle(title or f"{model.name}: modes about {about}\ngrey at rest, displaced + (red) and - (blue)",
                 fontsize=9)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
