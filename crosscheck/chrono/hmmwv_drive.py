"""Chrono::Vehicle's own HMMWV driving the reference manoeuvres (issue 37), the peer mechdyn's `hmmwv_road` is
compared with: a straight-line full brake, constant-radius turns, the ISO 3888-1 double lane change.

The vehicle is Chrono::Vehicle's `WheeledVehicle` read from hmmwv/vehicle/HMMWV_Vehicle.json (chassis, double
wishbones front and rear, Pitman-arm steering, the JSON's 2WD shafts driveline on the rear axle, `BrakeSimple`
brakes of 4000 N·m), TMeasy tires (hmmwv/tire/HMMWV_TMeasyTire.json, Chrono's default single-point disc collision)
on all four wheels, the simple-map engine and simple-map automatic transmission of hmmwv/powertrain, on a flat
`RigidTerrain` box patch (friction 0.8, restitution 0). The system is NSC, Chrono's PSOR solver (300 iterations)
and implicit linearised Euler, stepped at 1e-3 s, the vehicle and tire step of
Chrono's TMeasy HMMWV lane-change demo (demo_VEH_Controller_DLC.cpp). No visualisation.

Every run starts at speed: `WheeledVehicle.Initialize`'s forward velocity moves only the chassis (the suspension
bodies stay at rest and the wheels do not spin, so the first step's constraint impulse took 3 m/s off 20 m/s), so
`_set_motion` gives every body the rigid motion of the chassis, and the wheels and their axle shafts the spin of
rolling. The chassis starts at its height at rest on the tires.

Drivers: the turns and the lane change use Chrono's `ChPathFollowerDriver` (PID steering on the lateral error of a
sentinel point ahead, P speed control) built from Chrono's hmmwv/SteeringController.json (Kp 0.5, look-ahead 5 m)
and hmmwv/SpeedController.json (Kp 0.4), on a Bezier path; the brake is a scripted schedule of the pedals.

Histories (one row each SAMPLE s), in SI units and radians, world frame z up, chassis frame x forward y left:
t; x, y (chassis reference point: mid-wheelbase, wheel-centre height); yaw, roll (positive: left side up, outward
in a left turn), pitch (positive: nose down), Z-Y-X angles of the chassis; yaw_rate (chassis frame); speed
(forward, the chassis reference point's velocity along its x); ay, ax (the acceleration of the chassis COM in the
chassis frame, no gravity: what v²/R is compared with); steering (the driver's normalised input, + left),
delta_FL, delta_FR (each front spindle's yaw relative to the chassis, the road-wheel angle), delta (their mean);
throttle, braking; per wheel W in FL FR RL RR: Fz_W (normal load, the tire's reported force on the wheel along the
world z), kappa_W (TMeasy's longitudinal slip), alpha_W (its slip angle, + left), omega_W (spindle spin, + rolling
forward).
"""
from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from . import PychronoMissing
from .vehicle import VEHICLE_JSON, data_dir, require_vehicle

TIRE_JSON = "hmmwv/tire/HMMWV_TMeasyTire.json"
ENGINE_JSON = "hmmwv/powertrain/HMMWV_EngineSimpleMap.json"
TRANSMISSION_JSON = "hmmwv/powertrain/HMMWV_AutomaticTransmissionSimpleMap.json"
STEERING_JSON = "hmmwv/SteeringController.json"
SPEED_JSON = "hmmwv/SpeedController.json"
# the shared data holds the vehicle's files but not the controllers': Chrono's own data directory has them
CHRONO_DATA = Path(os.environ.get("MECHDYN_CHRONO_FULL_DATA", "/root/chrono-src/data/vehicle"))

STEP = 1e-3
SAMPLE = 0.01
FRICTION = 0.8
Z0 = 0.576  # the chassis reference point's height at rest on the TMeasy tires (settled), so no run starts by falling
WIDTH = 2.16  # the HMMWV's overall width, the b of ISO 3888-1's lane widths (Chrono's lane-change demo's value)
WHEELS = ("FL", "FR", "RL", "RR")
REST = 0.05  # m/s: below this forward speed the braked vehicle is at rest


def data_file(rel: str) -> Path:
    """`rel` under the shared vehicle data, else under Chrono's own data directory (the controllers' files)."""
    for root in (data_dir(), CHRONO_DATA):
        if (root / rel).is_file():
            return root / rel
    raise PychronoMissing(f"no {rel} under {data_dir()} or {CHRONO_DATA}; set MECHDYN_CHRONO_FULL_DATA to Chrono's "
                          "data/vehicle directory")


@dataclass
class Car:
    """One HMMWV in its own system, with the handles the drivers and the recorder use."""
    ch: object
    veh: object
    system: object
    vehicle: object
    terrain: object
    tires: dict = field(default_factory=dict)  # "FL" … → ChTire
    com: object = None  # the chassis COM in the chassis reference frame


def build(x: float = 0.0, y: float = 0.0, yaw: float = 0.0, speed: float = 0.0, yaw_rate: float = 0.0) -> Car:
    """The HMMWV on the flat patch, its reference point at (x, y), heading `yaw`, moving forward at `speed` and
    turning at `yaw_rate` as a rigid body (the wheels rolling)."""
    ch, veh = require_vehicle()
    veh.SetVehicleDataPath(str(data_dir()) + "/")
    system = ch.ChSystemNSC()
    system.SetGravitationalAcceleration(ch.ChVector3d(0, 0, -9.81))  # Chrono's default is y-down; the vehicle is z-up
    system.SetCollisionSystemType(ch.ChCollisionSystem.Type_BULLET)
    # PSOR, omega 0.8 (Chrono's SetChronoSolver settings), 300 iterations: at 100 the steering linkage gave way at
    # R = 50 m, 15 m/s (the input wound up to 0.88 while the road wheels stayed at 4.5 deg); Barzilai-Borwein (the
    # JSON demo's) at 100 scattered the lateral acceleration by 25 %; at 300 both agree to 0.2 %. The direct
    # SPARSE_QR steers 0.088 rad at 5 m/s where the kinematic angle is 0.068, so it is not the reference either.
    system.SetSolverType(ch.ChSolver.Type_PSOR)
    solver = ch.CastToChIterativeSolverVI(system.GetSolver())
    solver.SetMaxIterations(300)
    solver.SetOmega(0.8)
    solver.SetSharpnessLambda(1.0)
    system.SetTimestepperType(ch.ChTimestepper.Type_EULER_IMPLICIT_LINEARIZED)
    vehicle = veh.WheeledVehicle(system, str(data_file(VEHICLE_JSON)))
    vehicle.Initialize(ch.ChCoordsysd(ch.ChVector3d(x, y, Z0), ch.QuatFromAngleZ(yaw)))
    engine = veh.ReadEngineJSON(str(data_file(ENGINE_JSON)))
    transmission = veh.ReadTransmissionJSON(str(data_file(TRANSMISSION_JSON)))
    vehicle.InitializePowertrain(veh.ChPowertrainAssembly(engine, transmission))
    tires = {}
    for name, (axle, side) in zip(WHEELS, [(0, veh.LEFT), (0, veh.RIGHT), (1, veh.LEFT), (1, veh.RIGHT)]):
        tire = veh.ReadTireJSON(str(data_file(TIRE_JSON)))
        vehicle.InitializeTire(tire, vehicle.GetWheel(axle, side), ch.VisualizationType_NONE)
        tires[name] = tire
    terrain = veh.RigidTerrain(system)
    mat = ch.ChContactMaterialNSC()
    mat.SetFriction(FRICTION)
    mat.SetRestitution(0.0)
    terrain.AddPatch(mat, ch.ChCoordsysd(ch.ChVector3d(0, 0, 0), ch.QUNIT), 2000, 2000)
    terrain.Initialize()
    car = Car(ch, veh, system, vehicle, terrain, tires, vehicle.GetChassis().GetCOMFrame().GetPos())
    _set_motion(car, speed, yaw_rate)
    return car


def _set_motion(car: Car, speed: float, yaw_rate: float) -> None:
    """Every body moving with the chassis reference frame (forward `speed`, `yaw_rate` about z), each wheel and its
    axle shaft spinning at its centre's forward speed over the tire's radius."""
    ch, veh, vehicle = car.ch, car.veh, car.vehicle
    ref = vehicle.GetRefFrame()
    p0 = ref.GetPos()
    v0 = ref.GetRot().GetAxisX() * speed
    w = ch.ChVector3d(0, 0, yaw_rate)
    for body in car.system.GetBodies():
        if not body.IsFixed():
            body.SetPosDt(v0 + w.Cross(body.GetPos() - p0))
            body.SetAngVelParent(w)
    for axle in range(2):
        susp = vehicle.GetSuspension(axle)
        for side in (veh.LEFT, veh.RIGHT):
            spindle = susp.GetSpindle(side)
            fwd = spindle.GetRot().GetAxisX()
            spin = spindle.GetPosDt().Dot(fwd) / vehicle.GetWheel(axle, side).GetTire().GetRadius()
            spindle.SetAngVelParent(w + spindle.GetRot().GetAxisY() * spin)
            susp.GetAxle(side).SetPosDt(-spin)  # the axle shaft turns against the spindle's y (ChDoubleWishbone)


class _Recorder:
    """The histories of the module docstring, one row every SAMPLE s."""

    def __init__(self, car: Car):
        self.car = car
        self.rows: list[dict] = []
        self.next = 0.0

    def __call__(self, inputs, last: bool = False) -> None:
        car, veh, v = self.car, self.car.veh, self.car.vehicle
        t = car.system.GetChTime()
        if t < self.next - 1e-9 and not last:
            return
        self.next += SAMPLE
        rot = v.GetRot()
        xa, ya, za = rot.GetAxisX(), rot.GetAxisY(), rot.GetAxisZ()
        pos = v.GetPos()
        acc = v.GetPointAcceleration(car.com)
        row = dict(t=t, x=pos.x, y=pos.y, yaw=math.atan2(xa.y, xa.x), roll=math.atan2(ya.z, za.z),
                   pitch=-math.asin(max(-1.0, min(1.0, xa.z))), yaw_rate=v.GetYawRate(), speed=v.GetSpeed(),
                   ay=acc.y, ax=acc.x, steering=inputs.m_steering, throttle=inputs.m_throttle,
                   braking=inputs.m_braking, delta_FL=v.GetSteeringAngle(0, veh.LEFT),
                   delta_FR=v.GetSteeringAngle(0, veh.RIGHT))
        row["delta"] = 0.5 * (row["delta_FL"] + row["delta_FR"])
        for name, (axle, side) in zip(WHEELS, [(0, veh.LEFT), (0, veh.RIGHT), (1, veh.LEFT), (1, veh.RIGHT)]):
            tire = car.tires[name]
            row[f"Fz_{name}"] = tire.ReportTireForce(car.terrain).force.z
            row[f"kappa_{name}"] = tire.GetLongitudinalSlip()
            row[f"alpha_{name}"] = tire.GetSlipAngle()
            row[f"omega_{name}"] = -v.GetSpindleOmega(axle, side)  # Chrono's axle speed is + rolling backward
        self.rows.append(row)

    def frame(self) -> pd.DataFrame:
        df = pd.DataFrame(self.rows)
        df["yaw"] = np.unwrap(df["yaw"])
        return df


def _simulate(car: Car, t_end: float, inputs: Callable[[float], object], driver=None,
              stop: Callable[[Car], bool] = lambda car: False) -> tuple[pd.DataFrame, float]:
    """Step the car to `t_end` (or until `stop`), the pedals and wheel from `inputs(t)`; `driver`, if given, is
    synchronised and advanced with it. The histories and the wall time of the loop."""
    rec = _Recorder(car)
    system, vehicle, terrain = car.system, car.vehicle, car.terrain
    wall = time.perf_counter()
    while system.GetChTime() < t_end - 1e-9 and not stop(car):
        t = system.GetChTime()
        u = inputs(t)
        rec(u)
        if driver is not None:
            driver.Synchronize(t)
        terrain.Synchronize(t)
        vehicle.Synchronize(t, u, terrain)
        if driver is not None:
            driver.Advance(STEP)
        terrain.Advance(STEP)
        vehicle.Advance(STEP)  # the vehicle does not own the system: it advances its parts, not the system
        system.DoStepDynamics(STEP)
    rec(inputs(system.GetChTime()), last=True)
    return rec.frame(), time.perf_counter() - wall


def _follower(car: Car, path, speed: float):
    """Chrono's path follower from its HMMWV controller files, on `path`, at `speed`."""
    driver = car.veh.ChPathFollowerDriver(car.vehicle, str(data_file(STEERING_JSON)), str(data_file(SPEED_JSON)),
                                          path, "path", speed)
    driver.Initialize()
    return driver


def _bezier(ch, points: list[tuple[float, float]], before: list[tuple[float, float]],
            after: list[tuple[float, float]], z: float):
    """A Bezier curve through `points`, each one's control points at − `before` and + `after` from it."""
    pts = [ch.ChVector3d(px, py, z) for px, py in points]
    return ch.ChBezierCurve(ch.vector_ChVector3d(pts),
                            ch.vector_ChVector3d([p - ch.ChVector3d(dx, dy, 0) for p, (dx, dy) in zip(pts, before)]),
                            ch.vector_ChVector3d([p + ch.ChVector3d(dx, dy, 0) for p, (dx, dy) in zip(pts, after)]))


def _scripted(veh, steering: float, throttle: float, braking: float):
    u = veh.DriverInputs()
    u.m_steering, u.m_throttle, u.m_braking, u.m_clutch = steering, throttle, braking, 0.0
    return u


def straight_brake(v0: float = 20.0, lead: float = 1.0, settle: float = 0.3,
                   t_max: float = 15.0) -> tuple[pd.DataFrame, dict]:
    """Straight ahead, the steering at 0: the car starts `lead` m/s above `v0` and coasts (throttle 0) until it has
    run `settle` s and slowed to `v0`, so the brake comes on at `v0` after the start's transient; then full brake
    (pedal 1) until at rest (forward speed < REST). The histories and {v_brake, t_brake, distance, time, rest}: the
    speed and time at brake onset, the distance and time from brake onset to rest, whether it came to rest before
    `t_max`."""
    car = build(speed=v0 + lead)
    onset: list[float] = []

    def inputs(t: float):
        if not onset and t >= settle and car.vehicle.GetSpeed() <= v0:
            onset.append(t)
        return _scripted(car.veh, 0.0, 0.0, 1.0 if onset else 0.0)

    df, _ = _simulate(car, t_max, inputs, stop=lambda c: bool(onset) and c.vehicle.GetSpeed() < REST)
    if not onset:
        raise RuntimeError(f"the car never slowed to {v0} m/s in {t_max} s of coasting")
    onset = df[df.t >= onset[0] - 1e-9].iloc[0]
    end = df.iloc[-1]
    rest = bool(end.speed < REST)
    return df, dict(v_brake=float(onset.speed), t_brake=float(onset.t), distance=float(math.hypot(end.x - onset.x, end.y - onset.y)),
                    time=float(end.t - onset.t) if rest else math.nan, rest=rest)


def circle_path(ch, R: float, turns: int, z: float):
    """A left circle of radius R centred at (0, R), from the origin heading +x, `turns` times round: quarter arcs
    as cubic Bezier pieces (Chrono's CirclePath's construction, without its run-in)."""
    k = R * 4.0 / 3.0 * math.tan(math.pi / 8)  # the control distance that makes a cubic a quarter circle
    points, tangents = [], []
    for i in range(4 * turns + 1):
        a = -math.pi / 2 + i * math.pi / 2
        points.append((R * math.cos(a), R + R * math.sin(a)))
        tangents.append((-k * math.sin(a), k * math.cos(a)))
    return _bezier(ch, points, tangents, tangents, z)


def constant_radius(R: float = 50.0, speeds: Iterable[float] = (5.0, 7.5, 10.0, 12.5, 15.0),
                    t_end: float = 8.0, settle: float = 5.0) -> tuple[dict[float, pd.DataFrame], pd.DataFrame]:
    """A left circle of radius R at each speed: the car starts on the circle at that speed and yaw rate v/R, the
    path follower holds it there for `t_end` s. The histories per speed and, per speed, the means over the run after
    `settle` s: speed, yaw_rate, ay, roll, steering, delta (front road-wheel angle), the radius speed/yaw_rate, and
    v²/R and v/R from the measured speed."""
    histories, rows = {}, []
    for v in speeds:
        car = build(speed=v, yaw_rate=v / R)
        path = circle_path(car.ch, R, math.ceil(v * t_end / (2 * math.pi * R)) + 1, 0.0)
        driver = _follower(car, path, v)
        df, _ = _simulate(car, t_end, lambda t: driver.GetInputs(), driver)
        histories[v] = df
        s = df[df.t >= settle]
        m = {k: float(s[k].mean()) for k in ("speed", "yaw_rate", "ay", "roll", "steering", "delta")}
        m.update(target=v, radius=m["speed"] / m["yaw_rate"], v2_over_R=m["speed"] ** 2 / R, v_over_R=m["speed"] / R,
                 path_error=float(np.max(np.abs(np.hypot(s.x, s.y - R) - R))))
        rows.append(m)
    return histories, pd.DataFrame(rows).set_index("target")


@dataclass(frozen=True)
class Course:
    """ISO 3888-1's double lane change for a car of width b: the lanes' (x start, x end, centre y, width)."""
    lanes: tuple[tuple[float, float, float, float], ...]

    @classmethod
    def iso3888_1(cls, b: float = WIDTH, offset: float = 3.5) -> Course:
        """Sections 15, 30, 25, 25, 15 m from x = 0; lanes 1.1 b + 0.25 (entry), 1.2 b + 0.25 (offset lane),
        1.3 b + 0.25 (exit) wide; the offset lane to the left, its right-hand cones `offset` to the left of the entry
        lane's right-hand cones; the exit lane's right-hand cones in line with the entry lane's."""
        wa, wb, wc = 1.1 * b + 0.25, 1.2 * b + 0.25, 1.3 * b + 0.25
        return cls(((0.0, 15.0, 0.0, wa), (45.0, 70.0, -wa / 2 + offset + wb / 2, wb),
                    (95.0, 110.0, -wa / 2 + wc / 2, wc)))

    def path(self, ch, run_in: float, run_out: float, z: float):
        """The lanes' centre lines joined by S-curves, `run_in` m of straight before the entry lane and `run_out` m
        after the exit lane: each piece's control points a third of its length in from its ends, level, so x runs
        uniformly along it and y follows 3u² − 2u³ between its lanes."""
        points = [(-run_in, 0.0)]
        for x0, x1, yc, _ in self.lanes:
            points += [(x0, yc), (x1, yc)]
        points.append((self.lanes[-1][1] + run_out, self.lanes[-1][2]))
        third = np.diff([p[0] for p in points]) / 3
        return _bezier(ch, points, [(t, 0.0) for t in np.r_[third[0], third]],
                       [(t, 0.0) for t in np.r_[third, third[-1]]], z)

    def excursion(self, df: pd.DataFrame, b: float = WIDTH, length: float = 4.57) -> float:
        """How far (m) a corner of the car's footprint (b wide, `length` long, centred on the reference point
        mid-wheelbase) got outside a lane it was passing through, over the run: 0 if it ran the course clean."""
        worst = 0.0
        for r in df.itertuples():
            c, s = math.cos(r.yaw), math.sin(r.yaw)
            for fx in (length / 2, -length / 2):
                for fy in (b / 2, -b / 2):
                    px, py = r.x + c * fx - s * fy, r.y + s * fx + c * fy
                    for x0, x1, yc, w in self.lanes:
                        if x0 <= px <= x1:
                            worst = max(worst, abs(py - yc) - w / 2)
        return worst


def double_lane_change(v: float = 15.0, course: Course | None = None, run_in: float = 40.0,
                       run_out: float = 40.0) -> tuple[pd.DataFrame, dict]:
    """ISO 3888-1 at `v` m/s: the car starts `run_in` m before the entry lane at that speed, the path follower
    drives the lanes' centre lines until the reference point is 20 m past the exit lane. The histories and {wall,
    sim, rtf (wall time / simulated time, Chrono's real-time factor), max_ay, max_roll, max_yaw_rate, excursion}."""
    course = course or Course.iso3888_1()
    car = build(x=-run_in, speed=v)
    driver = _follower(car, course.path(car.ch, run_in, run_out, 0.0), v)
    x_end = course.lanes[-1][1] + 20.0
    df, wall = _simulate(car, 60.0, lambda t: driver.GetInputs(), driver, stop=lambda c: c.vehicle.GetPos().x > x_end)
    sim = float(df.t.iloc[-1])
    return df, dict(wall=wall, sim=sim, rtf=wall / sim, max_ay=float(df.ay.abs().max()),
                    max_roll=float(df.roll.abs().max()), max_yaw_rate=float(df.yaw_rate.abs().max()),
                    excursion=course.excursion(df))


def plot(runs: dict[str, pd.DataFrame], steady: pd.DataFrame | None, path: str, R: float = 50.0) -> None:
    """Top view of the paths, then speed, yaw rate, lateral acceleration and roll against time for each run in
    `runs`, and the understeer curve (front road-wheel angle against lateral acceleration) from `steady`
    (constant_radius's table), with the kinematic angle atan(wheelbase / R)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(14, 8), constrained_layout=True)
    panels = [("speed", "speed (m/s)", 1.0), ("yaw_rate", "yaw rate (deg/s)", 180 / math.pi),
              ("ay", "lateral acceleration (m/s²)", 1.0), ("roll", "roll (deg, + left side up)", 180 / math.pi)]
    for name, df in runs.items():
        axes[0, 0].plot(df.x, df.y, label=name)
        for ax, (col, _, scale) in zip(axes.flat[1:5], panels):
            ax.plot(df.t, df[col] * scale, label=name)
    axes[0, 0].set(xlabel="x (m)", ylabel="y (m)", title="top view (chassis reference point)")
    axes[0, 0].set_aspect("equal", adjustable="datalim")
    for ax, (_, label, _) in zip(axes.flat[1:5], panels):
        ax.set(xlabel="t (s)", ylabel=label)
    ax = axes.flat[5]
    if steady is not None:
        ax.plot(steady.ay / 9.81, np.degrees(steady.delta), "o-", label="mean front road-wheel angle")
        ax.axhline(math.degrees(math.atan(3.378 / R)), color="0.5", ls=":", label=f"atan(L/R), R = {R:g} m")
        ax.legend(fontsize=8)
    ax.set(xlabel="lateral acceleration (g)", ylabel="steering (deg)", title="understeer curve")
    for ax in axes.flat:
        ax.grid(alpha=0.3)
    axes[0, 1].legend(fontsize=7)
    fig.suptitle("Chrono::Vehicle HMMWV (TMeasy, rigid plane)")
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    """All three manoeuvres, a summary, and the picture hmmwv_drive.png in the working directory
    (python -m crosscheck.chrono.hmmwv_drive)."""
    df_b, brake = straight_brake()
    print(f"straight brake from {brake['v_brake']:.2f} m/s: {brake['distance']:.2f} m in {brake['time']:.2f} s "
          f"(at rest: {brake['rest']})")
    circles, steady = constant_radius()
    table = steady.assign(yaw_rate_deg=np.degrees(steady.yaw_rate), roll_deg=np.degrees(steady.roll),
                          delta_deg=np.degrees(steady.delta))
    print("constant radius R = 50 m (means after 5 s):")
    print(table[["speed", "yaw_rate_deg", "v_over_R", "yaw_rate", "ay", "v2_over_R", "roll_deg", "steering",
                 "delta_deg", "radius", "path_error"]].to_string(float_format=lambda f: f"{f:.4f}"))
    df_l, lane = double_lane_change()
    print(f"ISO 3888-1 at 15 m/s: {lane['sim']:.2f} s simulated in {lane['wall']:.2f} s wall, real-time factor "
          f"{lane['rtf']:.3f} (step {STEP:g} s); max |ay| {lane['max_ay']:.2f} m/s², max |roll| "
          f"{math.degrees(lane['max_roll']):.2f} deg; the car's corners got {lane['excursion']:.2f} m outside the lanes")
    runs = {"brake 20 m/s": df_b, "ISO 3888-1 15 m/s": df_l}
    runs.update({f"R 50 m, {v:g} m/s": df for v, df in circles.items()})
    plot(runs, steady, "hmmwv_drive.png")


if __name__ == "__main__":
    main()
