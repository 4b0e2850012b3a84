"""The shaker rig (`mechdyn rig`, docs/rig.md): a driven vehicle model shaken through its post drivers.

A rig model is one whose drivers include shaker posts: prismatic drivers whose posts carry a wheel through a
loop (the "tire" rod of quartercar, halfcar and the HMMWVs), and optionally a steering driver named `steer`.
`layout` finds them and classifies each post front or rear, left or right, by its design position; the inputs
(rig inputs of road.py, or analytic motions) become each driver's motion (Dynamics.set_motion); `run` starts
from the static equilibrium on the posts held at the design pose and records, per step, the ride quantities of
`RigRun`.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mechdyn.core import motion
from mechdyn.core.kinematics import forward_kinematics
from mechdyn.core.model import Model
from mechdyn.dynamics import Dynamics

from .energy import mechanics
from .run import Trajectory, simulate


class RigError(ValueError):
    """A model the rig cannot shake, or an input it cannot apply."""


@dataclass(frozen=True)
class Post:
    driver: str
    body: int  # the post
    wheel: int  # the body the post's loop carries
    x: float  # the post's design position in the base frame (x forward, y left)
    y: float


@dataclass(frozen=True)
class Layout:
    chassis: int  # the heaviest body: the sprung mass whose ride is measured
    posts: tuple[Post, ...]
    front: tuple[str, ...]  # post drivers at the front axle (all of them on a single axle), left first
    rear: tuple[str, ...]
    left: tuple[str, ...]
    steer: str | None  # the steering driver, if any
    wheelbase: float  # m between the axles (0 on a single axle)


def layout(model: Model) -> Layout:
    """The model's rig: its post drivers (each a prismatic driver along gravity whose body is the predecessor of a
    loop), the
    wheel each one carries, front and rear by design position, and the steering driver `steer`. RigError when
    the model has no post driver."""
    posts = []
    kin = forward_kinematics(model, model.q0())
    down = model.gravity / max(float(np.linalg.norm(model.gravity)), 1e-300)
    for d in model.drivers:
        b = model.bodies[d.body]
        axis = kin.R[d.body] @ b.axis  # the joint axis in base coordinates at the design pose
        if b.joint != "prismatic" or abs(abs(float(axis @ down)) - 1.0) > 1e-9:
            continue  # a post slides along gravity
        carried = [lp.succ for lp in model.loops if lp.pred == d.body]
        if carried:
            p = kin.p[d.body]
            posts.append(Post(d.name, d.body, carried[0], float(p[0]), float(p[1])))
    if not posts:
        what = ("it has no driver" if not model.drivers else
                f"its drivers ({', '.join(d.name for d in model.drivers)}) drive no post that carries a wheel")
        raise RigError(f"model '{model.name}' cannot be put on the rig: {what}; expected shaker posts as prismatic "
                       "joints driven by 'driver' blocks, each post joined to its wheel by a loop (see models/"
                       "quartercar.mech and docs/rig.md)")
    xs = np.array([p.x for p in posts])
    mid = 0.5 * (xs.max() + xs.min())
    single = xs.max() - xs.min() < 0.1
    front = tuple(p.driver for p in sorted(posts, key=lambda p: -p.y) if single or p.x > mid)
    rear = tuple(p.driver for p in sorted(posts, key=lambda p: -p.y) if not single and p.x <= mid)
    wheelbase = 0.0 if single else float(np.mean([p.x for p in posts if p.driver in front])
                                           - np.mean([p.x for p in posts if p.driver in rear]))
    chassis = max(range(model.nbody), key=lambda i: model.bodies[i].mass)
    steer = next((d.name for d in model.drivers if d.name == "steer"), None)
    return Layout(chassis, tuple(posts), front, rear, tuple(p.driver for p in posts if p.y > 0), steer, wheelbase)


# -- inputs -------------------------------------------------------------------------------------------------------

MODES = ("heave", "pitch", "roll", "warp")  # how a sine or sweep phases the posts: signs()


def signs(lay: Layout, mode: str) -> dict[str, float]:
    """Each post's sign for a shaking mode: heave all in phase; pitch front against rear; roll left against
    right; warp diagonals against each other."""
    if mode not in MODES:
        raise RigError(f"unknown mode '{mode}'; expected one of {', '.join(MODES)}")
    out = {}
    for p in lay.posts:
        front, left = p.driver in lay.front, p.driver in lay.left
        out[p.driver] = {"heave": 1.0, "pitch": 1.0 if front else -1.0, "roll": 1.0 if left else -1.0,
                         "warp": 1.0 if front == left else -1.0}[mode]
    return out


def analytic_motions(lay: Layout, m: motion.Motion, mode: str = "heave") -> dict[str, motion.Motion]:
    """The same motion on every post, signed by the shaking mode."""
    out = {}
    for name, s in signs(lay, mode).items():
        params = (s * m.params[0], *m.params[1:])
        out[name] = motion.Motion(m.kind, params, start=m.start, blend=m.blend, log=m.log)
    return out


def table_motions(t: np.ndarray, series: dict[str, np.ndarray], blend: float) -> dict[str, motion.Motion]:
    """Each driver's sampled series (times t) as a quintic table motion, blended in from rest over `blend` s."""
    if not blend > 0:
        raise RigError(f"blend {blend:g} s: expected a blend time > 0 (a sampled input does not start at rest)")
    return {name: motion.table(t, z, blend=blend) for name, z in series.items()}


SAMPLE = 2e-3  # s between the samples of a road, bump or Chrono file input (its table's knots): 500 Hz
RACK_TRAVEL = 0.1 * math.radians(50.0)  # m of rack per unit of Chrono's steering input: the pinion "Radius" 0.1
# times "Maximum Angle (deg)" 50 (hmmwv/steering/HMMWV_RackPinion.json; ChRackPinion::Synchronize)
DISPLACEMENT_LIMIT = 0.15  # m per unit of a Chrono rig file's post input: "Displacement Limit" of
# hmmwv/suspensionTest/HMMWV_ST_front.json and HMMWV_ST_rear.json


@dataclass(frozen=True)
class Input:
    """One rig input, as `mechdyn rig` takes it: kind "sine", "sweep", "bump", "road" or "chrono" with its
    numbers (docs/rig.md)."""
    kind: str
    amplitude: float = 0.0  # sine, sweep: m
    f0: float = 0.0  # sine: its frequency; sweep: from (Hz)
    f1: float = 0.0  # sweep: to (Hz)
    sweep_time: float = 0.0  # sweep: s
    log: bool = False  # sweep: geometric in frequency
    mode: str = "heave"  # sine, sweep: the posts' phases (signs)
    height: float = 0.0  # bump: m
    length: float = 0.0  # bump: m
    at: float = 1.0  # bump: s when the front wheels reach it
    road_class: str = "C"  # road
    speed: float = 0.0  # bump, road: m/s
    seed: int = 0  # road
    path: str = ""  # chrono: the rig data file
    blend: float = 0.5  # s: every input enters from rest over it


def motions_for(lay: Layout, inp: Input, duration: float) -> dict[str, motion.Motion]:
    """The drivers' motions for `inp` over `duration` s: analytic for a sine or sweep, quintic tables of
    road.py's samples (every SAMPLE s) otherwise. The rear posts of a road or bump see the front's input one
    wheelbase later; a single-axle rig takes the front's. A Chrono file moves the posts by its inputs times
    DISPLACEMENT_LIMIT and the steering driver by its steering times RACK_TRAVEL."""
    from . import road

    if inp.kind == "sine":
        return analytic_motions(lay, motion.sine(inp.amplitude, inp.f0, 0.0, blend=inp.blend), inp.mode)
    if inp.kind == "sweep":
        return analytic_motions(lay, motion.sweep(inp.amplitude, inp.f0, inp.f1, inp.sweep_time, log=inp.log,
                                                  blend=inp.blend), inp.mode)
    span = duration + 1.0  # a table ends at rest (its spline's ends): past the run, not in it
    try:
        if inp.kind == "bump":
            sig = road.bump_posts(inp.height, inp.length, inp.speed, inp.at, span, lay.wheelbase, SAMPLE)
        elif inp.kind == "road":
            sig = road.road_posts(inp.road_class, inp.speed, span, lay.wheelbase, inp.seed, SAMPLE)
        elif inp.kind == "chrono":
            return _chrono_motions(lay, road.read_chrono_rig_inputs(inp.path), span, inp.blend)
        else:
            raise RigError(f"unknown rig input '{inp.kind}'; expected sine, sweep, bump, road or chrono")
    except ValueError as e:
        raise RigError(str(e)) from None
    corners = {"front_left": sig.front_left, "front_right": sig.front_right, "rear_left": sig.rear_left,
               "rear_right": sig.rear_right}
    series = {p.driver: corners[("front" if p.driver in lay.front else "rear") + ("_left" if p.driver in lay.left
                                                                                   else "_right")]
              for p in lay.posts}
    return table_motions(sig.t, series, inp.blend)


def _chrono_motions(lay: Layout, data, duration: float, blend: float) -> dict[str, motion.Motion]:
    """A Chrono rig file's posts (axle 0 the front, 1 the rear; a single-axle rig takes axle 0, as Chrono's rig
    of one axle does) and steering, sampled as Chrono interpolates them."""
    t = np.arange(0.0, duration + SAMPLE, SAMPLE)
    steering, left, right = data.evaluate(t, DISPLACEMENT_LIMIT)
    series = {}
    for p in lay.posts:
        axle = 1 if p.driver in lay.rear and data.naxles > 1 else 0
        series[p.driver] = (left if p.driver in lay.left else right)[axle]
    if lay.steer is not None:
        series[lay.steer] = RACK_TRAVEL * np.asarray(steering)
    return table_motions(t, series, blend)


# -- the run ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RigRun:
    """A rig run: the trajectory, and per recorded step the ride quantities (`records`, a DataFrame with column t
    and the columns of docs/rig.md), with the static post loads the dynamic ones are measured from."""
    layout: Layout
    trajectory: Trajectory
    records: pd.DataFrame
    static: dict[str, float]  # each post driver's reaction at the static equilibrium, N
    seconds: float  # wall time of the stepping alone (the records are computed after it)

    def figures(self) -> dict[str, float]:
        """The ride figures: RMS chassis vertical acceleration (m/s²), and each post's peak and RMS dynamic load
        (its reaction minus the static, N)."""
        r = self.records
        out = {"rms heave acceleration": float(np.sqrt(np.mean(r["heave_acc"] ** 2)))}
        for p in self.layout.posts:
            dyn = r[f"post_{p.driver}"] - self.static[p.driver]
            out[f"peak dynamic load {p.driver}"] = float(np.abs(dyn).max())
            out[f"rms dynamic load {p.driver}"] = float(np.sqrt(np.mean(dyn**2)))
        return out


def start_state(dyn: Dynamics) -> np.ndarray:
    """The static equilibrium with every driver at the design pose (mechdyn.linear.equilibrium)."""
    from mechdyn.linear import equilibrium

    return equilibrium(dyn, dyn.model.q0())


def run(dyn: Dynamics, motions: dict[str, motion.Motion], T: float, dt: float, scheme: str = "verlet",
        q0: np.ndarray | None = None, stride: int = 1, progress: bool = False) -> RigRun:
    """The rig shaken by `motions` (driver name: motion; the others held) for T seconds from the static
    equilibrium (or q0), every stride-th step recorded."""
    lay = layout(dyn.model)
    for name, m in motions.items():
        dyn.set_motion(name, m)
    q = start_state(dyn) if q0 is None else np.asarray(q0, dtype=float)
    start = time.perf_counter()
    tr = simulate(dyn, q, np.zeros(dyn.nv), T, dt, scheme, stride=stride, progress=progress)
    seconds = time.perf_counter() - start
    static = {p.driver: float(tr.reactions[0, dyn.model.driver_index(p.driver)]) for p in lay.posts}
    return RigRun(lay, tr, records(dyn, lay, tr), static, seconds)


class Ride:
    """The ride quantities as a function of the state, y(q, qd, act): the chassis CG's height (m), its pitch and
    roll (rad, Z-Y-X angles from its design attitude), each wheel's height in the chassis frame (m), each TSDA's
    force (compression positive, N) and, with `reactions`, each driver's reaction (N or N m). `names` lists them;
    records() takes differences from the first row, the frequency response (linear/frf.py) derivatives."""

    def __init__(self, dyn: Dynamics, lay: Layout, reactions: bool = True) -> None:
        m = dyn.model
        self.dyn, self.lay, self.reactions = dyn, lay, reactions
        self.R0 = poses(m, m.q0()[None], np.zeros((1, m.nv)))[0, lay.chassis, :9].reshape(3, 3)
        post = {p.driver for p in lay.posts}
        self.names = (["heave", "pitch", "roll"] + [f"travel_{p.driver}" for p in lay.posts]
                      + [f"force_{e.name}" for e in m.tsdas]
                      + ([("post_" if d.name in post else "driver_") + d.name for d in m.drivers] if reactions else []))

    def __call__(self, q: np.ndarray, qd: np.ndarray, act: np.ndarray) -> np.ndarray:
        m = self.dyn.model
        y = self.kinematic(poses(m, np.asarray(q, dtype=float)[None], np.asarray(qd, dtype=float)[None]))[0]
        if self.reactions:
            y = np.concatenate([y, self.dyn.react(q, qd, np.zeros(m.nv), None, act)[1]])
        return y

    def kinematic(self, X: np.ndarray) -> np.ndarray:
        """(n, k): the quantities but the reactions at rows of the bodies' poses and velocities X (n, nbody,
        BODY_ROW, energy.mechanics'), all rows at once."""
        m, lay, c = self.dyn.model, self.lay, self.lay.chassis
        Rc, pc = X[:, c, :9].reshape(-1, 3, 3), X[:, c, 9:12]
        Rrel = self.R0.T @ Rc
        cols = [(pc + Rc @ m.bodies[c].cg)[:, 2], -np.arcsin(np.clip(Rrel[:, 2, 0], -1.0, 1.0)),
                np.arctan2(Rrel[:, 2, 1], Rrel[:, 2, 2])]
        cols += [np.einsum("nji,nj->ni", Rc, X[:, p.wheel, 9:12] - pc)[:, 2] for p in lay.posts]
        for e in m.tsdas:
            (a, va), (b, vb) = (_point(X, m.pois[k]) for k in (e.poi_a, e.poi_b))
            d = b - a
            length = np.linalg.norm(d, axis=1)
            rate = np.einsum("ni,ni->n", d, vb - va) / length
            cols.append(-(e.k * (length - e.l0) + e.c * rate))
        return np.column_stack(cols)


def poses(model: Model, Q: np.ndarray, QD: np.ndarray) -> np.ndarray:
    """(n, nbody, BODY_ROW) every body's pose and velocity at the rows of (Q, QD), by the numeric kinematics."""
    return mechanics(model, Q, QD, poses=True).poses


def _point(X: np.ndarray, poi) -> tuple[np.ndarray, np.ndarray]:
    """(n, 3) world position and velocity of a point of interest at rows of poses X."""
    if poi.body < 0:
        return np.broadcast_to(poi.pos, (len(X), 3)), np.zeros((len(X), 3))
    R, p, w, v = X[:, poi.body, :9].reshape(-1, 3, 3), X[:, poi.body, 9:12], X[:, poi.body, 12:15], X[:, poi.body, 15:18]
    r = R @ poi.pos
    return p + r, v + np.cross(w, r)


def records(dyn: Dynamics, lay: Layout, tr: Trajectory) -> pd.DataFrame:
    """Ride's quantities at every recorded row, heave, pitch, roll and the travels from the first row's, with
    the chassis's accelerations: heave_acc (central differences of its CG's vertical velocity), pitch_acc and
    roll_acc (of its angular velocity about y and x, base axes); the drivers' reactions are the stepper's
    (Trajectory.reactions). All rows at once, from one call of the numeric kinematics."""
    ride = Ride(dyn, lay, reactions=False)
    c, cg = lay.chassis, dyn.model.bodies[lay.chassis].cg
    X = poses(dyn.model, tr.q, tr.qd)
    Y = ride.kinematic(X)
    Rc, wc, vc = X[:, c, :9].reshape(-1, 3, 3), X[:, c, 12:15], X[:, c, 15:18]
    V = (vc + np.cross(wc, Rc @ cg))[:, 2]
    nmove = 3 + len(lay.posts)
    Y[:, :nmove] -= Y[0, :nmove]
    grad = (lambda x: np.gradient(x, tr.t)) if len(tr.t) > 2 else np.zeros_like
    cols = {"t": tr.t, **dict(zip(ride.names, Y.T))}
    cols.update(heave_acc=grad(V), pitch_acc=grad(wc[:, 1]), roll_acc=grad(wc[:, 0]))
    post = {p.driver for p in lay.posts}
    for k, d in enumerate(dyn.model.drivers):
        cols[("post_" if d.name in post else "driver_") + d.name] = tr.reactions[:, k]
    return pd.DataFrame(cols)


def sweep_transmissibility(rr: RigRun, m: motion.Motion, columns: list[str], freq: np.ndarray,
                           periods: float = 2.0) -> np.ndarray:
    """The measured response per unit post motion of each column at each frequency (Hz) of a sine sweep `m`
    (the motion of the posts, sign +1 each): at the time the sweep passes f, a least-squares fit over `periods`
    periods of y ≈ a sin θ + b cos θ + c0 + c1 τ + c2 τ² (θ the sweep's phase, τ the time from the window's
    centre; the polynomial takes up the slow drift), H = (a + j b)/A. A tracking filter, as shaker tests use:
    it reads the quasi-steady response, so the sweep must be slow beside the modes' decay (docs/rig.md)."""
    t = rr.records["t"].to_numpy()
    A, f0, f1, D = m.params
    s = t - m.start
    th, thd, _ = motion.sweep_phase(f0, f1, D, m.log, np.maximum(s, 0.0))
    finst = thd / (2 * math.pi)
    out = np.zeros((len(freq), len(columns)), dtype=complex)
    for i, f in enumerate(freq):
        k = int(np.searchsorted(finst, f))
        w = np.abs(th - th[min(k, len(th) - 1)]) <= periods * math.pi
        tau = t[w] - t[min(k, len(t) - 1)]
        X = np.column_stack([np.sin(th[w]), np.cos(th[w]), np.ones(w.sum()), tau, tau * tau])
        for j, col in enumerate(columns):
            c = np.linalg.lstsq(X, rr.records[col].to_numpy()[w], rcond=None)[0]
            out[i, j] = (c[0] + 1j * c[1]) / A
    return out
