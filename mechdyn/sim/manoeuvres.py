"""The vehicle manoeuvres and their gates (docs/manoeuvres.md): the statics on the tires, straight-line
acceleration then braking to rest, the constant-radius turn at several speeds (the understeer curve against the
bicycle model), and ISO 3888-1's double lane change.

    car = Vehicle(mechdyn.load("hmmwv_road")); st = statics(car)
    brk = straight_brake(car); turn = constant_radius(car); dlc = lane_change(car)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mechdyn.contact.tires import TIRE_INFO

from .energy import mechanics, total_mass
from .gate import Gate, below
from .run import SimulationDiverged
from .vehicle import Log, PathFollower, Vehicle, circle, iso3888, iso3888_lanes, straight

G = 9.81
STATIC_BOUND = 0.01  # each wheel's load against the beam model's, and the total against the weight
SINKAGE_BOUND = 1e-3  # relative: a tire's depth against its load over its vertical law (one function inverted)
AY_BOUND = 0.02  # steady lateral acceleration against v²/R
BALANCE_BOUND = 1e-3  # the braking run's energy budget, of the kinetic energy at the brakes' onset
# the measured understeer gradient against the bicycle model's, deg/g: absolute, as the HMMWV is near neutral
# (0.05 deg/g predicted), and the bicycle model leaves out the load transfer, the front wheels' scrub against
# each other and the suspension's compliance steer (docs/manoeuvres.md)
UNDERSTEER_BOUND = 0.1


def road_wheel_angle(car: Vehicle, q: np.ndarray, front: bool = True) -> float:
    """The front (or rear) wheels' mean steer angle about the chassis's z, rad (+: left): the rack's steer and
    what the suspension adds as it moves (roll steer, toe)."""
    X = car.dyn.bodies(q, np.zeros(car.dyn.nv))
    Rc = X[car.layout.chassis, :9].reshape(3, 3)
    out = []
    for w, f in zip(car.layout.wheels, car.layout.front):
        if f == front:
            a = Rc.T @ X[w, :9].reshape(3, 3) @ car.dyn.model.bodies[w].axis
            out.append(math.atan2(-a[0], a[1]))
    return float(np.mean(out))


# ---------------------------------------------------------------------------------------------- statics


@dataclass(frozen=True)
class Statics:
    gates: tuple[Gate, ...]
    loads: np.ndarray  # (nwheel,) N, measured
    expected: np.ndarray  # (nwheel,) N, from the cg and the contact points
    depth: np.ndarray  # (nwheel,) m
    log: Log


def statics(car: Vehicle, T: float = 2.5) -> Statics:
    """Settle `car` on its tires (braked) and compare each wheel's load with the rigid-body statics: the weight
    W at the whole vehicle's cg shared between the contact points by the moment balance about the axles (fore-aft)
    and within each axle by the lateral balance (the four-point support taken as two beams, which is exact for a
    vehicle symmetric left to right); the total against the weight; each tire's depth against its load over its
    vertical law."""
    log = car.settle(T)
    m = car.dyn.model
    info = log.tires[-1]
    loads, depth = info[:, TIRE_INFO.index("Fz")], info[:, TIRE_INFO.index("depth")]
    P = info[:, [TIRE_INFO.index("Px"), TIRE_INFO.index("Py")]]
    X = car.dyn.bodies(car.q, np.zeros(m.nv))
    M = total_mass(m)
    cg = sum(b.mass * (X[i, 9:12] + X[i, :9].reshape(3, 3) @ b.cg) for i, b in enumerate(m.bodies)) / M
    W = M * float(np.linalg.norm(m.gravity))
    front, left = np.array(car.layout.front), np.array(car.layout.left)
    xf, xr = P[front, 0].mean(), P[~front, 0].mean()
    axle = {True: W * (cg[0] - xr) / (xf - xr), False: W * (xf - cg[0]) / (xf - xr)}
    expected = np.zeros(len(loads))
    for ax in (True, False):
        on = front == ax
        yl, yr = P[on & left, 1].mean(), P[on & ~left, 1].mean()
        expected[on & left] = axle[ax] * (cg[1] - yr) / (yl - yr)
        expected[on & ~left] = axle[ax] * (yl - cg[1]) / (yl - yr)
    tires = car.sim.contact.tires
    sink = max(abs(d - t.sinkage(f)) / t.sinkage(f) for d, f, t in zip(depth, loads, tires))
    worst = int(np.argmax(np.abs(loads - expected) / expected))
    names = [m.bodies[w].name for w in car.layout.wheels]
    gates = (
        below("wheel_loads", float(abs(loads[worst] - expected[worst]) / expected[worst]), STATIC_BOUND, "relative",
              f"{names[worst]} carries {loads[worst]:.1f} N against {expected[worst]:.1f} N from the cg "
              f"({cg[0]:.4f}, {cg[1]:.2g}) m and the contact points; loads "
              + ", ".join(f"{n} {f:.0f}" for n, f in zip(names, loads))),
        below("total_load", float(abs(loads.sum() - W) / W), STATIC_BOUND, "relative",
              f"the tires carry {loads.sum():.1f} N against the weight {W:.1f} N"),
        below("sinkage", float(sink), SINKAGE_BOUND, "relative",
              "each tire's depth against the depth its vertical law gives its load (the damper at rest: none)"),
    )
    return Statics(gates, loads, expected, depth, log)


# ---------------------------------------------------------------------------------------------- braking


@dataclass(frozen=True)
class Braking:
    gates: tuple[Gate, ...]
    speed: float  # m/s at the brakes' onset
    distance: float  # m from the onset to rest
    time: float  # s
    log: Log  # the acceleration, the cruise and the braking, one row per control period
    onset: int  # the log's row the brakes came on at


def straight_brake(car: Vehicle, speed: float = 20.0, cruise: float = 2.0, limit: float = 15.0,
                   stop: float = 0.05) -> Braking:
    """From rest on the straight: accelerate under the speed controller to `speed` (driveline, gears), cruise,
    then full brakes and no throttle until the forward speed is below `stop` m/s. Gates: the energy budget over
    the braking (kinetic + gravity + springs + the tires' springs, plus the dampers', brakes' and tires'
    dissipated work) closes, and the tires' dissipated work never falls by more than their bristles can hold."""
    x0 = float(car.chassis_pose(car.q, car.qd)[1][0])
    path = PathFollower.hmmwv(straight(x0=x0, y0=float(car.chassis_pose(car.q, car.qd)[1][1])))
    up = car.drive(limit, steer=path, speed=speed, until=lambda v: v >= speed)
    hold = car.drive(cruise, steer=path, speed=speed)
    base = car.sim.work_contact
    brk = car.drive(limit, steer=path, braking=1.0, until=lambda v: v < stop, dissipation=True)
    log = _join(up, hold, brk)
    onset = len(up["t"]) + len(hold["t"])
    xs = log["x"]
    v0 = float(log["speed"][onset - 1])
    dist = float(xs[-1] - xs[onset - 1])
    gates = _braking_gates(car, log, onset, base)
    return Braking(gates, v0, dist, float(log["t"][-1] - log["t"][onset - 1]), log, onset)


def _braking_gates(car: Vehicle, log: Log, onset: int, base: float) -> tuple[Gate, ...]:
    m = car.dyn.model
    k = slice(onset - 1, None)
    mech = mechanics(m, log.q[k], log.qd[k])
    wc = log["work_contact"][k] - base
    wc[0] = 0.0
    E = mech.kinetic + mech.potential + log["u_tire"][k] + (log["work"][k] - log["work"][k][0]) + wc
    scale = float(mech.kinetic[0])
    # the budget down to the speed below which TMeasy blends its bristle friction in: the blend weighs a stored
    # bristle energy in and out with the speed, which no potential accounts for (docs/manoeuvres.md "Energy")
    fr_end = min(t.fr_end for t in car.sim.contact.tires)
    fast = np.flatnonzero(log["speed"][k] >= fr_end)
    n = int(fast[-1]) + 1 if len(fast) else 1
    drop = float(np.max(np.maximum.accumulate(wc) - wc))  # the tires' dissipated work's largest fall
    hold = sum(0.5 * (t.mu0 * t.pn_max) ** 2 / t.sigma0 for t in car.sim.contact.tires)  # the bristles' most
    return (
        below("brake_balance", float(np.abs(E[:n] - E[0]).max() / scale), BALANCE_BOUND, "of the kinetic energy",
              f"kinetic + potential + tires' springs + dissipated work over the braking from "
              f"{log['speed'][onset - 1]:.3g} m/s down to {fr_end:g} m/s "
              f"({log['t'][onset - 1 + n - 1] - log['t'][onset - 1]:.3g} s"
              f", kinetic {scale:.4g} J); the tires dissipated {wc[n - 1]:.4g} J"),
        below("brake_passivity", drop, hold, "J", f"the tires' dissipated work's largest fall, against the most "
                                                  f"their bristles can store ({hold:.3g} J); it ends at "
                                                  f"{wc[-1]:.4g} J"),
    )


def _join(*logs: Log) -> Log:
    cols = {k: np.concatenate([lg.cols[k] for lg in logs]) for k in logs[0].cols}
    cat = lambda name: np.concatenate([getattr(lg, name) for lg in logs])  # noqa: E731
    return Log(cols, cat("tires"), cat("drive"), cat("brake"), cat("q"), cat("qd"), sum(lg.seconds for lg in logs))


# ---------------------------------------------------------------------------------------------- the turn


@dataclass(frozen=True)
class Steady:
    speed: float  # m/s
    yaw_rate: float  # rad/s
    ay: float  # m/s², measured (the cg's acceleration across the heading)
    roll: float  # rad
    delta: float  # rad, the axles' net steer: the front road wheels' mean steer angle less the rear's
    radius: float  # m, speed over yaw rate


@dataclass(frozen=True)
class Turn:
    gates: tuple[Gate, ...]
    radius: float
    points: tuple[Steady, ...]
    gradient: float  # rad per m/s², measured: d(delta)/d(ay)
    predicted: float  # the bicycle model's: (W_f/C_f − W_r/C_r)/g, rad per m/s² (docs/manoeuvres.md)
    wheelbase: float
    logs: tuple[Log, ...]


def cornering_stiffness(car: Vehicle, loads: np.ndarray) -> np.ndarray:
    """Each tire's cornering stiffness at its static load, N/rad: TMeasy's initial lateral slope dfy0 at that
    load (sy ≈ tan α near zero slip), Fiala's CALPHA."""
    out = []
    for t, fz in zip(car.sim.contact.tires, loads):
        if t.law == 0:
            q = min(fz, t.pn_max) / t.pn
            w1, w2 = t.curve[10], t.curve[11]
            out.append(q * (2.0 * w1 - 0.5 * w2 - (w1 - 0.5 * w2) * q))
        else:
            out.append(t.calpha)
    return np.array(out)


LINEAR = 0.25 * G  # m/s²: the understeer gradient is fitted to the steady points below this lateral acceleration


def constant_radius(car: Vehicle, radius: float = 50.0, speeds=(4.0, 6.0, 8.0, 10.0, 12.0, 14.0), T: float = 8.0,
                    window: float = 2.0) -> Turn:
    """The settled car launched at each speed onto a left circle of `radius`, path-followed and speed-controlled
    for T s; the last `window` s averaged. Gates: the measured lateral acceleration against v²/R at the mean
    speed, and the understeer gradient (the road wheels' steer angle against the lateral acceleration, fitted)
    against the bicycle model's from the axles' static loads and cornering stiffnesses."""
    st = statics(car)
    q0 = car.q.copy()
    loads = st.loads
    points, logs = [], []
    for v in speeds:
        car.q, car.qd = q0.copy(), np.zeros(car.dyn.nv)
        car.launch(v)
        _, cg, _ = car.chassis_pose(car.q, car.qd)
        try:
            log = car.drive(T, steer=PathFollower.hmmwv(circle(radius, cg[0], cg[1])), speed=v)
        except SimulationDiverged:  # the car could not hold the circle and the state went non-finite
            points.append(Steady(v, math.nan, math.nan, math.nan, math.nan, math.nan))
            continue
        logs.append(log)
        k = log["t"] >= log["t"][-1] - window
        delta = float(np.mean([road_wheel_angle(car, q) - road_wheel_angle(car, q, front=False) for q in log.q[k]]))
        sp, r = float(log["speed"][k].mean()), float(log["yaw_rate"][k].mean())
        points.append(Steady(sp, r, float(log["ay"][k].mean()), float(log["roll"][k].mean()), delta, sp / r))
    front = np.array(car.layout.front)
    C = cornering_stiffness(car, loads)
    Wf, Wr, Cf, Cr = loads[front].sum(), loads[~front].sum(), C[front].sum(), C[~front].sum()
    predicted = (Wf / Cf - Wr / Cr) / G
    lin = [p for p in points if abs(p.ay) <= LINEAR]  # nan compares false: a diverged speed is left out
    # fewer than two points in the linear range (a car that cannot hold the circle): no gradient, the gate fails
    gradient = float(np.polyfit([p.ay for p in lin], [p.delta for p in lin], 1)[0]) if len(lin) >= 2 else math.nan
    X = car.dyn.bodies(q0, np.zeros(car.dyn.nv))
    xs = [X[w, 9] for w in car.layout.wheels]
    L = float(np.mean([x for x, f in zip(xs, front) if f]) - np.mean([x for x, f in zip(xs, front) if not f]))
    # a speed that diverged is the worst (its nan fails the gate)
    worst = max(points, key=lambda p: math.inf if math.isnan(p.ay) else abs(p.ay - p.speed**2 / radius) / p.speed**2)
    gates = (
        below("turn_ay", abs(worst.ay - worst.speed**2 / radius) / (worst.speed**2 / radius), AY_BOUND, "relative",
              f"at {worst.speed:.3g} m/s on R {radius:g} m: a_y {worst.ay:.4g} against v²/R "
              f"{worst.speed**2 / radius:.4g} m/s² (the path's radius; the car's own v/r {worst.radius:.4g} m)"),
        below("understeer", math.degrees(abs(gradient - predicted)) * G, UNDERSTEER_BOUND, "deg/g",
              f"d(delta)/d(a_y) {math.degrees(gradient) * G:.3g} deg/g measured over the {len(lin)} speeds below "
              f"{LINEAR / G:.2g} g (delta the front road wheels' steer less the rear's) against the "
              f"bicycle model's {math.degrees(predicted) * G:.3g} deg/g (axle loads {Wf:.0f}, {Wr:.0f} N; cornering "
              f"stiffnesses {Cf:.4g}, {Cr:.4g} N/rad)"),
    )
    return Turn(gates, radius, tuple(points), float(gradient), float(predicted), L, tuple(logs))


# ---------------------------------------------------------------------------------------------- lane change


@dataclass(frozen=True)
class LaneChange:
    gates: tuple[Gate, ...]
    speed: float
    deviation: float  # m, the cg's largest distance from the centreline through the cones
    over: float  # m, the car's edge past the cones, worst lane (negative: inside)
    log: Log | None  # None when the run diverged
    seconds: float  # wall time in the C stepping
    dt: float
    lanes: tuple[tuple[float, float, float, float], ...]  # each lane: x from, x to, centre y, half-width (m)
    width: float  # m, the car's width the gate uses


def lane_change(car: Vehicle, speed: float = 15.0, lead: float = 20.0, width: float | None = None) -> LaneChange:
    """The settled car launched at `speed` `lead` m before ISO 3888-1's entry lane, path-followed along the lanes'
    centre lines and speed-controlled. `width`: the b of the lanes' widths (default the car's wheels' outer edges:
    the track plus a tire's width). Gate: in each lane every tire's patch stays between the cones (its centre's
    distance from the lane's centre plus half the tire's width below the lane's half-width)."""
    car.launch(speed)
    _, cg, _ = car.chassis_pose(car.q, car.qd)
    X = car.dyn.bodies(car.q, np.zeros(car.dyn.nv))
    ys = [X[w, 10] for w in car.layout.wheels]
    tire_w = max(t.width for t in car.sim.contact.tires)
    width = width or float(max(ys) - min(ys)) + tire_w
    lanes = iso3888_lanes(width, float(cg[0]) + lead, float(cg[1]))
    path = iso3888(lanes, lead)
    try:
        log = car.drive((lead + lanes[-1][1] - lanes[0][0] + 30.0) / speed, steer=PathFollower.hmmwv(path),
                        speed=speed)
    except SimulationDiverged as e:  # the car left the road and the state went non-finite: the gate fails
        gate = Gate("lane_change", math.inf, 0.0, False, "m", f"at {speed:g} m/s: {e}")
        return LaneChange((gate,), speed, math.inf, math.inf, None, 0.0, car.dt, lanes, width)
    on = (log["x"] >= lanes[0][0]) & (log["x"] <= lanes[-1][1])
    dev = float(max(np.linalg.norm(path.closest(p) - p) for p in np.stack([log["x"][on], log["y"][on]], 1)))
    Px, Py = log.tire("Px"), log.tire("Py")
    over = -math.inf
    for a, b, yc, half in lanes:
        inside = (Px >= a) & (Px <= b)
        if inside.any():
            over = max(over, float(np.max(np.abs(Py[inside] - yc))) + 0.5 * tire_w - half)
    gates = (below("lane_change", over, 0.0, "m",
                   f"at {speed:g} m/s the tire patches' outer edges against the cones, worst of the three lanes "
                   f"(negative: inside; lanes for b {width:.3f} m; the cg's largest distance from the centre line "
                   f"{dev:.3g} m)"),)
    return LaneChange(gates, speed, dev, over, log, log.seconds, car.dt, lanes, width)
