"""Driving a tracked vehicle by its sprockets' torque through `tau` (docs/simulation.md, "Release, sinkage and
driving"): the tractive force against T/R on a slope, and the steady track speed against ω·R on the flat.

    c = climb(dyn, q, qd, degrees=15)       # Climb: T0 = M g sin θ · R / n holds, ±20 % climbs / rolls back
    s = coast(dyn, q, qd)                   # Coast: torque up, held, off; the hull's speed against ω·R coasting

q, qd is a settled flat state, as for mechdyn.sim.slope.hold.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mechdyn.contact.params import PIN_TOOTH
from mechdyn.contact.producers import Contact
from mechdyn.core.kinematics import forward_kinematics
from mechdyn.dynamics import Dynamics, real_scalar

from .contact import ContactRun, ContactSim, accuracy_step
from .gate import Gate, above, below
from .energy import total_mass
from .slope import HOLD_BOUND, Tilted, patch_slip, run_whole, stride_for, tilt

ROLLING_FRACTION = 0.1  # the hold's hull speed, as a fraction of what ±20 % of T0 reaches in the same time
SLIP_TOL = 0.02  # of ω·R while coasting


@dataclass(frozen=True)
class Sprocket:
    """A drive sprocket's joint: tau[v] = sign·T pushes the vehicle forward (+x of the band's root)."""
    body: int
    v: int  # its velocity slot
    sign: float  # ±1
    radius: float  # m, the pitch circle the pins sit on


def sprockets(con: Contact) -> tuple[Sprocket, ...]:
    """Every band's toothed rollers, each with the sign that makes a positive torque push the vehicle forward.
    The sign comes from the joint axis in the root's frame at the design pose: forward is the root's +x and up its
    +z, so the lower run must move aft, which is a rotation about +y (ẑ × x̂): sign = sign(axis · ŷ_root)."""
    model = con.model
    kin = forward_kinematics(model, model.q0())
    out = []
    for b in con.bands:
        root = b.track.root
        for r in b.rollers:
            if r.kind != PIN_TOOTH:
                continue
            body = model.bodies[r.body]
            if body.joint != "revolute":
                raise ValueError(f"drive sprocket '{body.name}' is on a {body.joint} joint; expected revolute")
            axis = (kin.R[body.parent] if body.parent >= 0 else np.eye(3)) @ body.rot @ body.axis
            along = float((kin.R[root].T @ axis)[1])
            if abs(along) < 0.5:
                raise ValueError(f"drive sprocket '{body.name}' turns about an axis off its band's root y axis")
            out.append(Sprocket(r.body, model.vidx[r.body], math.copysign(1.0, along), float(r.radius)))
    if not out:
        raise ValueError(f"model '{model.name}' has no drive sprocket (a roller with teeth)")
    return tuple(out)


def drive_tau(dyn: Dynamics, gears: tuple[Sprocket, ...], torque: float) -> np.ndarray:
    """(nv,) tau with `torque` N·m on every drive sprocket, each in its forward sense."""
    tau = np.zeros(dyn.nv)
    for s in gears:
        tau[s.v] += s.sign * torque
    return tau


def hull_velocity(dyn: Dynamics, q, qd) -> np.ndarray:
    """The world velocity of the first band's root (the hull) origin (the generated kinematics)."""
    root = dyn.model.tracks[0].root
    return dyn.bodies(q, qd)[root, 15:18]


@dataclass(frozen=True)
class Climb:
    """The slope drive: T0 on every sprocket holds the vehicle (the T/R check: the torque reaches the ground at R),
    ±20 % of it climbs and rolls back, and the ground's tangential force at T0 carries the vehicle's weight along the
    slope, n·T0/R = M g sin θ (Newton's law at a holding state, not a second T/R check)."""
    gates: tuple[Gate, ...]
    torque: float  # N·m, T0 per sprocket
    speeds: dict[float, float]  # factor of T0 -> the hull's mean speed up the slope over the last second, m/s
    tractive: float  # N, the ground's force up the slope at T0, mean over the last second (from the impulse)
    slip: float  # m/s, the patch slip at T0 over the last two seconds (all of T when shorter)
    runs: dict[float, ContactRun]
    tilted: Tilted


def climb(dyn: Dynamics, q, qd, degrees: float = 15.0, T: float = 2.0, factors: tuple[float, ...] = (0.5, 1.0, 1.5),
          dt: float | None = None, module=None) -> Climb:
    """Face the settled flat state (q, qd) up `degrees` (tilt by −degrees about y: +x up the fall line), anchored
    ground friction, no brake, and drive every sprocket at factor·T0, T0 = M g sin θ · R / n (n sprockets), for T
    seconds each. Gates: at T0 the hull's speed up the slope (mean over the last second) below ROLLING_FRACTION of
    what 0.2·T0 of excess would give it as a point mass in T; the factors above 1 climb and those below roll back
    (signs: the least of the signed speeds above 0); and the patch's slip below the hold's HOLD_BOUND. Reported,
    not gated: the ground's force up the slope at T0 (`tractive`) beside n·T0/R.

    drive_hold is the T/R check: T0 holds the vehicle only if n·T0 reaches the ground as n·T0/R. The ground's force
    at T0 is not gated: n·T0/R is M g sin θ by construction, so at a holding state it is Newton's law along the slope
    (the settle's momentum gate checks the recorded impulse against it), and over one second the vehicle's surge on
    its free sprockets moves it by a few per cent. The factors ±50 % sit outside the band's own resistance to
    rolling (about 20 % of M g sin θ on m113), so the signs read the torque, not the losses."""
    theta = math.radians(real_scalar("degrees", degrees))
    if not 0 < theta < math.pi / 2:
        raise ValueError(f"{degrees:g}°: expected a slope in (0, 90)")
    if 1.0 not in factors:
        raise ValueError("factors must include 1.0 (T0, the holding torque)")
    tilted = tilt(dyn.model, q, qd, -float(degrees))
    M, g = total_mass(dyn.model), float(np.linalg.norm(dyn.model.gravity))
    n = tilted.normal
    up = -(dyn.model.gravity - (dyn.model.gravity @ n) * n)
    up /= np.linalg.norm(up)
    gears = sprockets(Contact(tilted.model))
    R = gears[0].radius
    T0 = M * g * math.sin(theta) * R / len(gears)
    speeds, runs, tractive, slip = {}, {}, float("nan"), float("nan")
    for f in factors:
        sim = ContactSim(dyn, model=tilted.model, anchored=True, ramp_ground=0.0, module=module)
        step_dt = accuracy_step(sim.contact).dt if dt is None else real_scalar("dt", dt)
        run = run_whole(sim, tilted.q, tilted.qd, T, step_dt, stride_for(step_dt), tau=drive_tau(dyn, gears, f * T0))
        last = run.t >= run.t[-1] - 1.0 + 1e-9
        speeds[f] = float(np.mean([hull_velocity(dyn, a, b) @ up for a, b in zip(run.q[last], run.qd[last])]))
        runs[f] = run
        if f == 1.0:
            # the impulse's change: the exact mean over the steps, where rows 10 ms apart alias the pins' ripple
            i0 = int(np.argmax(last))
            J = run.aux[:, 10:13]
            tractive = float((J[-1] - J[i0]) @ up / (run.t[-1] - run.t[i0]))
            slip = patch_slip(sim.contact, dyn, run, n, window=min(2.0, T))[0]
    scale = 0.2 * g * math.sin(theta) * T  # the excess's point-mass speed after T
    name = dyn.model.name
    gates = [below("drive_hold", abs(speeds[1.0]), ROLLING_FRACTION * scale, "m/s",
                   f"{name} up {degrees:g}°, anchored, no brake: T0 = {T0:.4g} N·m on each of {len(gears)} "
                   f"sprockets (R {R:g} m), the hull's speed up the slope over the last second")]
    moved = [(speeds[f] if f > 1 else -speeds[f]) for f in factors if f != 1.0]
    if moved:
        gates.append(above("drive_signs", min(moved), 0.0, "m/s",
                           f"{name}: the hull's speed up the slope at " + ", ".join(
                               f"{f:g}·T0 {speeds[f]:+.3g}" for f in factors if f != 1.0)
                           + " m/s: above T0 it climbs, below it rolls back (the least, signed)"))
    gates.append(below("drive_patch", slip, HOLD_BOUND, "m/s",
                       f"{name}: at T0 the patch's slip over the last {min(2.0, T):g} s (slope.patch_slip), against "
                       "the anchored hold's bound"))
    return Climb(tuple(gates), T0, speeds, tractive, slip, runs, tilted)


@dataclass(frozen=True)
class Coast:
    """The flat drive: the hull's speed against the sprockets' rate relative to the hull times R, coasting."""
    gates: tuple[Gate, ...]
    torque: float  # N·m per sprocket, held
    speed: float  # m/s, the hull's mean forward speed over the coast
    track_speed: float  # m/s, ω·R, its mean over the coast
    run: ContactRun

    @property
    def slip(self) -> float:
        """1 − v/(ω·R)."""
        return 1.0 - self.speed / self.track_speed


def coast(dyn: Dynamics, q, qd, accel: float = 1.0, ramp: float = 0.5, hold: float = 1.0, off: float = 1.0,
          dt: float | None = None, module=None) -> Coast:
    """On flat ground from the settled state (q, qd), anchored friction, no brake: every sprocket's torque ramps
    linearly to the one that would accelerate the whole mass at `accel` (M·accel·R/n) over `ramp` s, is held
    `hold` s, then is zero for `off` s. Over the coast, the hull's mean forward speed (its displacement along its
    own x, the heading averaged over the two ends, per second) against the sprockets' mean rate relative to the
    hull (their joint angles' change per second) times R: means over the whole coast, because the polygon action
    of the pins on the sprocket makes both rates swing by ±20 % within a pitch. The gate: the slip
    1 − v/(ω·R) within SLIP_TOL."""
    for k, v in (("accel", accel), ("ramp", ramp), ("hold", hold), ("off", off)):
        if not real_scalar(k, v) > 0:
            raise ValueError(f"{k} {v!r}: expected > 0")
    sim = ContactSim(dyn, anchored=True, ramp_ground=0.0, module=module)
    gears = sprockets(sim.contact)
    R, M = gears[0].radius, total_mass(dyn.model)
    torque = M * accel * R / len(gears)
    dt = accuracy_step(sim.contact).dt if dt is None else real_scalar("dt", dt)
    dts = 0.005
    ts = np.arange(0.0, ramp + hold + off + dts, dts)
    level = np.clip(ts / ramp, 0.0, 1.0) * (ts < ramp + hold)
    tau = np.array([drive_tau(dyn, gears, torque * x) for x in level])
    run = run_whole(sim, q, qd, ramp + hold + off, dt, stride_for(dt), tau=tau, dt_sched=dts)
    root = dyn.model.tracks[0].root
    i0 = int(np.searchsorted(run.t, ramp + hold - 1e-9))
    span = float(run.t[-1] - run.t[i0])
    X0, X1 = dyn.bodies(run.q[i0], run.qd[i0]), dyn.bodies(run.q[-1], run.qd[-1])
    heading = 0.5 * (X0[root, :9].reshape(3, 3)[:, 0] + X1[root, :9].reshape(3, 3)[:, 0])
    v = (X1[root, 9:12] - X0[root, 9:12]) @ heading / span
    w = np.mean([s.sign * (run.q[-1][dyn.model.qidx[s.body]] - run.q[i0][dyn.model.qidx[s.body]]) * s.radius
                 for s in gears]) / span
    speed, track = float(v), float(w)
    out = Coast((), torque, speed, track, run)
    gate = below("drive_speed", abs(out.slip), SLIP_TOL, "",
                 f"{dyn.model.name} on the flat, coasting after {torque:.4g} N·m per sprocket: the hull at "
                 f"{speed:.4g} m/s against ω·R {track:.4g} m/s (slip {out.slip:+.3g}) over "
                 f"the coast [{run.t[i0]:.3g}, {run.t[-1]:.3g}] s")
    return Coast((gate,), torque, speed, track, run)
