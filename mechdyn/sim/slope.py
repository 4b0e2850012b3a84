"""A tracked vehicle parked on a slope, sliding off a steeper one, and sunk into flat ground (docs/simulation.md,
"The slope hold" and "Release, sinkage and driving").

    tilted = tilt(model, q, qd, 15.0)                       # state and terrain rotated rigidly, gravity untouched
    h = hold(dyn, q, qd, degrees=15, fric="anchor")         # Hold: the patch slip gate, the run, the energy figure
    r = release(dyn, q, qd, degrees=45)                     # Release: the slide against g(sin θ − μ cos θ)
    s = sinkage(dyn, q, qd)                                 # Sinkage: the loaded corners' mean gap against W/(n·kn)

q, qd is a settled flat state (the settle run's last, or a short ContactSim run of one's own).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from mechdyn.contact.law import ContactLaw
from mechdyn.contact.producers import Contact
from mechdyn.core.kinematics import forward_kinematics
from mechdyn.core.model import BASE, Model
from mechdyn.core.integrate import quat_exp, quat_mul
from mechdyn.core.spatial import rot_axis
from mechdyn.dynamics import Dynamics, real_array, real_scalar

from .contact import STORED, ContactRun, ContactSim, accuracy_step, sprocket_brakes
from .energy import mechanics, total_mass
from .gate import Gate, above, below
from .implicit import Implicit
from .run import step_count

AXES = {"x": 0, "y": 1, "z": 2}
HOLD_BOUND = 5e-4  # m/s: the patch's tangential slip per second the anchored hold must stay below
FRICTION = ("anchor", "reg")
ROW_DT = 0.01  # s between the recorded rows the patch and momentum figures are read from
RISE_FRACTION = 1e-4  # a single step's energy rise, as a fraction of the run's kinetic energy scale


def rotation(degrees: float, axis: str = "y") -> np.ndarray:
    """The rotation matrix (body-to-world convention) of `degrees` about the world `axis`, right-handed: about y,
    positive degrees turn +x towards −z (a vehicle facing +x is pitched nose down)."""
    if axis not in AXES:
        raise ValueError(f"axis {axis!r}: expected one of {', '.join(AXES)}")
    return rot_axis(AXES[axis], math.radians(real_scalar("degrees", degrees)))


@dataclass(frozen=True)
class Tilted:
    """A state and its terrain rotated rigidly about the world origin by R."""
    model: Model  # the model with the rotated ground: the contact reads it (ContactSim(dyn, model=...))
    q: np.ndarray
    qd: np.ndarray
    R: np.ndarray  # (3, 3)

    @property
    def normal(self) -> np.ndarray:
        """The terrain plane's unit normal, rotated."""
        n = np.asarray(self.model.ground.params[:3], dtype=float)
        return n / np.linalg.norm(n)


def tilt(model: Model, q, qd, degrees: float, axis: str = "y") -> Tilted:
    """The state (q, qd) and the model's ground plane rotated rigidly by `degrees` about the world `axis` through
    the origin. Floating bodies parented to the world get Q' = Qrot ⊗ Q, p' = Rrot·p; every other coordinate and
    every body-frame velocity is unchanged, and so are gravity and the generated code. A plane n·x = d becomes
    (Rrot·n)·x = d. A sine or grid terrain, or a non-floating joint on the world, is refused: neither rotates."""
    R = rotation(degrees, axis)
    Qrot = quat_exp(np.eye(3)[AXES[axis]], math.radians(degrees))
    q = np.array(real_array("q", q, (model.nq,)))
    qd = np.array(real_array("qd", qd, (model.nv,)))
    g = model.ground
    if g is None:
        raise ValueError(f"model '{model.name}' has no ground block: there is no terrain to tilt")
    if g.terrain != "plane":
        raise ValueError(f"model '{model.name}' has a {g.terrain} terrain; tilt rotates only a plane (a rotated "
                         "height field is no longer a height field over the same grid)")
    for i, b in enumerate(model.bodies):
        if b.parent != BASE:
            continue
        if b.joint != "floating":
            raise ValueError(f"body '{b.name}' is on a {b.joint} joint to the world: its axis is fixed in the "
                             "world, so the state cannot be rotated rigidly")
        k = model.qidx[i]
        q[k:k + 4] = quat_mul(Qrot, q[k:k + 4])
        q[k + 4:k + 7] = R @ q[k + 4:k + 7]
    n = np.asarray(g.params, dtype=float)
    ground = dataclasses.replace(g, params=np.array([*(R @ n[:3]), n[3]]))
    return Tilted(dataclasses.replace(model, ground=ground), q, qd, R)


def tilt_error(model: Model, q, qd, tilted: Tilted) -> tuple[float, str]:
    """The worst difference, body by body, between each body's world attitude, origin, angular and linear velocity
    at the tilted state and Rrot applied to those at (q, qd), by the numeric kinematics (mechdyn.core.kinematics,
    not the generated code); and the body it is on. Mixed units (1, m, rad/s, m/s): each should be round-off."""
    a, b, R = forward_kinematics(model, q, qd), forward_kinematics(tilted.model, tilted.q, tilted.qd), tilted.R
    worst, where = 0.0, ""
    for i, body in enumerate(model.bodies):
        err = max(np.abs(b.R[i] - R @ a.R[i]).max(), np.abs(b.p[i] - R @ a.p[i]).max(),
                  np.abs(b.R[i] @ b.v[i, :3] - R @ a.R[i] @ a.v[i, :3]).max(),
                  np.abs(b.R[i] @ b.v[i, 3:] - R @ a.R[i] @ a.v[i, 3:]).max())
        if err >= worst:
            worst, where = float(err), body.name
    return worst, where


def corner_gaps(con: Contact, R: np.ndarray, p: np.ndarray) -> np.ndarray:
    """(npad, 4) each pad corner's vertical gap h(x, y) − z (> 0 below the terrain), the shoes at attitudes R
    (nbody, 3, 3) and origins p (nbody, 3)."""
    g = con.ground
    pts = p[g.pad_body][:, None, :] + np.einsum("sij,scj->sci", R[g.pad_body], g.corner)
    return np.array([[con.terrain(x, y)[0] - z for x, y, z in s] for s in pts])


def stride_for(dt: float) -> int:
    return max(1, int(round(ROW_DT / dt)))


def run_whole(sim: ContactSim, q, qd, T: float, dt: float, stride: int, t0: float = 0.0, **kw) -> ContactRun:
    """sim.run over a whole number of strides, so the last recorded row is the last state stepped."""
    n = max(1, step_count(T, dt) // stride) * stride
    return sim.run(q, qd, n * dt, dt, stride=stride, t0=t0, **kw)


def patch_slip(con: Contact, dyn: Dynamics, run: ContactRun, normal: np.ndarray,
               window: float = 2.0) -> tuple[float, int]:
    """The patch's slip: the shoes with a loaded corner when the last `window` seconds begin, their mean origin
    averaged over each half of the window, the tangential part (against `normal`) of the difference per second.
    m/s, and the number of those shoes. ValueError when a half-window holds no recorded row (rows sparser than
    window/2, or a run shorter than half the window): there is nothing to average, and no slip was measured."""
    t = run.t
    start = t[-1] - window
    i0 = int(np.searchsorted(t, start - 1e-9))
    X = dyn.bodies(run.q[i0], run.qd[i0])
    gaps = corner_gaps(con, X[:, :9].reshape(-1, 3, 3), X[:, 9:12])
    shoes = con.ground.pad_body[(gaps > 0).any(axis=1)]
    if not len(shoes):
        return float("nan"), 0
    mid = start + window / 2
    origins = mechanics(dyn.model, run.q[i0:], run.qd[i0:], poses=True).poses[:, shoes, 9:12].mean(axis=1)
    means = []
    for lo, hi in ((start, mid), (mid, t[-1] + 1e-9)):
        rows = np.flatnonzero((t[i0:] >= lo - 1e-9) & (t[i0:] < hi - 1e-9))
        if not rows.size:
            raise ValueError(f"no recorded row in [{lo:.4g}, {hi:.4g}) s, half of the slip's {window:g} s window: "
                             "the slip cannot be measured; record the run more densely")
        means.append(origins[rows].mean(axis=0))
    d = means[1] - means[0]
    return float(np.linalg.norm(d - (d @ normal) * normal) / (window / 2)), len(shoes)


def energy_rise(model: Model, run: ContactRun) -> tuple[float, float]:
    """The complete budget's worst single-step rise over a run recorded at stride 1 (kinetic, gravity and the
    model's springs by the numeric kinematics, energy.mechanics; the band's, ground's, anchors' and brakes'
    potentials and the dissipated work as step.c records them), J; and the run's kinetic energy scale, max T, J."""
    mech = mechanics(model, run.q, run.qd)
    E = mech.kinetic + mech.potential + sum(run.col(c) for c in (*STORED, "work"))
    return float(np.diff(E).max()), float(mech.kinetic.max())


@dataclass(frozen=True)
class Hold:
    """The parked run's verdict: `gates` (the patch slip; with fric "anchor" the hold, with "reg" the control
    that must exceed the same bound), the figures, and the runs."""
    gates: tuple[Gate, ...]
    slip: float  # m/s
    shoes: int  # the patch's shoes
    rise: float  # J, the energy budget's worst single-step rise over the stride-1 tail
    rise_bound: float  # J, RISE_FRACTION of the tail's kinetic energy scale
    tilted: Tilted
    run: ContactRun  # the T seconds at stride_for(dt)
    tail: ContactRun  # energy_window seconds more, at stride 1


def _parked(dyn: Dynamics, q, qd, degrees: float, fric: str, dt: float | None, law: ContactLaw | None,
            module) -> tuple[Tilted, ContactSim, float]:
    """The state tilted by `degrees`, a ContactSim on the tilted terrain with `fric` friction, the ground not ramped
    (the state is settled) and the sprockets braked at their start angle, and the step (the accuracy step when dt
    is None)."""
    tilted = tilt(dyn.model, q, qd, degrees)
    sim = ContactSim(dyn, model=tilted.model, law=law, anchored=fric == "anchor", ramp_ground=0.0, module=module)
    step = accuracy_step(sim.contact)
    sim.set_brakes(sprocket_brakes(sim.contact, tilted.q, step.period))
    return tilted, sim, step.dt if dt is None else real_scalar("dt", dt)


def hold(dyn: Dynamics, q, qd, degrees: float = 15.0, fric: str = "anchor", T: float = 4.0, dt: float | None = None,
         progress: bool = False, energy_window: float = 0.05, law: ContactLaw | None = None,
         module=None, scheme: str = "verlet", implicit: Implicit | None = None) -> Hold:
    """Park the settled flat state (q, qd) on `degrees` (tilt about y: the vehicle along the fall line), the
    sprockets braked at their start angle (sprocket_brakes), the ground's friction anchored ("anchor") or
    regularized ("reg"), for T seconds at dt (the accuracy step by default), the ground's gains not ramped (the
    state is settled). Returns the Hold: the patch slip over the run's last two seconds against HOLD_BOUND, and
    the energy budget's worst single-step rise over `energy_window` seconds more, run at stride 1. `scheme`,
    `implicit`: as ContactSim.run's."""
    if fric not in FRICTION:
        raise ValueError(f"fric {fric!r}: expected one of {', '.join(FRICTION)}")
    T = real_scalar("T", T)
    if not T > 2.0:
        raise ValueError(f"T {T:g} s: the hold gate reads the last 2 s, so the run must be longer")
    tilted, sim, dt = _parked(dyn, q, qd, degrees, fric, dt, law, module)
    run = run_whole(sim, tilted.q, tilted.qd, T, dt, stride_for(dt), progress=progress, scheme=scheme,
                    implicit=implicit)
    tail = sim.run(run.q[-1], run.qd[-1], energy_window, dt, scheme, stride=1, t0=float(run.t[-1]),
                   implicit=implicit)
    slip, shoes = patch_slip(sim.contact, dyn, run, tilted.normal)
    rise, ke = energy_rise(dyn.model, tail)
    what = (f"{dyn.model.name} on {degrees:g}°, braked, {fric} friction: the {shoes} shoes loaded at "
            f"t = {run.t[-1] - 2:.2f} s, mean position per second, tangential change")
    gate = (below("hold_slip", slip, HOLD_BOUND, "m/s", what) if fric == "anchor"
            else above("hold_control", slip, HOLD_BOUND, "m/s", what + " (the control must slide)"))
    return Hold((gate,), slip, shoes, rise, RISE_FRACTION * ke, tilted, run, tail)


@dataclass(frozen=True)
class Release:
    """The slide above tan θ = μ: the centre of mass's acceleration down the slope, corrected by μ times its
    acceleration off the plane, against g(sin θ − μ cos θ)."""
    gates: tuple[Gate, ...]
    accel: float  # m/s², the centre of mass's, down the slope
    normal_accel: float  # m/s², the centre of mass's, off the plane (the vehicle's heave and pitch averaged)
    expected: float  # m/s², g(sin θ − μ cos θ)
    run: ContactRun
    tilted: Tilted

    @property
    def corrected(self) -> float:
        """accel + μ·normal_accel: with every loaded corner sliding, the ground's tangential force is μ times its
        normal force at every step, so this is g(sin θ − μ cos θ) exactly, however the vehicle bounces."""
        return self.accel + float(self.tilted.model.ground.mu) * self.normal_accel


RELEASE_TOL = 0.01  # m/s² per m/s² of g·sin θ: a μ off by 0.01 at 45°; docs/simulation.md says what sets it


def release(dyn: Dynamics, q, qd, degrees: float = 45.0, T: float = 2.0, skip: float = 1.0, fric: str = "anchor",
            dt: float | None = None, law: ContactLaw | None = None, module=None) -> Release:
    """Park (q, qd) on `degrees` as hold does, brakes on, and let it slide for T seconds. The centre of mass's
    accelerations down the slope and off the plane are the least-squares slopes of the total momentum's
    components (energy.mechanics: the numeric kinematics, not the generated code) over [skip, T], over the total
    mass. The gate: their combination accel + μ·normal_accel (Release.corrected) against g(sin θ − μ cos θ), the
    ground's μ, within RELEASE_TOL·g·sin θ. Refuses a slope at or below tan θ = μ (there the vehicle holds: see
    hold)."""
    if fric not in FRICTION:
        raise ValueError(f"fric {fric!r}: expected one of {', '.join(FRICTION)}")
    mu, theta = float(dyn.model.ground.mu), math.radians(real_scalar("degrees", degrees))
    if not abs(math.tan(theta)) > mu:
        raise ValueError(f"{degrees:g}° is within the friction cone (tan θ {math.tan(theta):.3g} <= μ {mu:g}): "
                         "the vehicle holds there; release needs a steeper slope")
    if not 0 <= skip < T:
        raise ValueError(f"skip {skip:g} s: expected 0 <= skip < T ({T:g} s)")
    tilted, sim, dt = _parked(dyn, q, qd, degrees, fric, dt, law, module)
    run = run_whole(sim, tilted.q, tilted.qd, T, dt, stride_for(dt))
    g, n = float(np.linalg.norm(dyn.model.gravity)), tilted.normal
    down = dyn.model.gravity - (dyn.model.gravity @ n) * n
    down /= np.linalg.norm(down)
    rows = run.t >= skip - 1e-9
    P = mechanics(dyn.model, run.q[rows], run.qd[rows]).momentum / total_mass(dyn.model)
    accel, normal = (float(np.polyfit(run.t[rows], P @ d, 1)[0]) for d in (down, n))
    s = abs(math.sin(theta))
    expected = g * (s - mu * math.cos(theta))
    out = Release((), accel, normal, expected, run, tilted)
    gate = below("release_accel", abs(out.corrected - expected), RELEASE_TOL * g * s, "m/s²",
                 f"{dyn.model.name} on {degrees:g}°, μ {mu:g}, braked, {fric} friction, over [{skip:g}, "
                 f"{run.t[-1]:.3g}] s: the centre of mass accelerates {accel:.4g} m/s² down the slope and "
                 f"{normal:.3g} off it; {out.corrected:.5g} combined against g(sin θ − μ cos θ) {expected:.5g}")
    return dataclasses.replace(out, gates=(gate,))


@dataclass(frozen=True)
class Sinkage:
    """The loaded corners' mean vertical gap on flat ground against W/(n·kn)."""
    gates: tuple[Gate, ...]
    ratio: float  # the mean gap over W/(n·kn), averaged over the rows
    corners: float  # the loaded corners, averaged over the rows


SINK_TOL = 0.01  # of W/(n·kn), the settled load gate's 1 %: docs/simulation.md says why


def sinkage(dyn: Dynamics, q, qd, T: float = 0.5, dt: float | None = None, module=None) -> Sinkage:
    """From a settled flat state (q, qd), T seconds more; at each recorded row the loaded corners' (below the
    terrain) mean vertical gap, from the numeric kinematics, over W/(n·kn) with n their number; the mean of that
    ratio over the rows against 1, within SINK_TOL."""
    sim = ContactSim(dyn, ramp_ground=0.0, module=module)
    dt = accuracy_step(sim.contact).dt if dt is None else real_scalar("dt", dt)
    run = run_whole(sim, q, qd, T, dt, stride_for(dt) * 5)
    con, model = sim.contact, dyn.model
    W = total_mass(model) * float(np.linalg.norm(model.gravity))
    ratios, counts = [], []
    for a, b in zip(run.q, run.qd):
        kin = forward_kinematics(model, a)
        gaps = corner_gaps(con, kin.R, kin.p)
        loaded = gaps[gaps > 0]
        ratios.append(loaded.mean() / (W / (len(loaded) * con.ground.kn)))
        counts.append(len(loaded))
    ratio = float(np.mean(ratios))
    gate = below("sinkage", abs(ratio - 1.0), SINK_TOL, "",
                 f"{model.name} on flat ground: the {np.mean(counts):.1f} loaded corners' mean gap over W/(n·kn), "
                 f"{ratio:.4f} averaged over {len(ratios)} rows of {T:g} s")
    return Sinkage((gate,), ratio, float(np.mean(counts)))
