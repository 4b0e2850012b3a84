"""A wheeled model driven on its tires: its layout, driveline, brakes and driver controllers, stepped in C between
control updates (docs/manoeuvres.md).

    car = Vehicle(mechdyn.load("hmmwv_road"))
    car.settle()                                    # onto its tires, parking brakes on
    car.launch(15.0)                                # moving at 15 m/s, wheels rolling
    log = car.drive(10.0, PathFollower(circle(50.0)), speed=15.0)   # a Log of the histories

The loop holds each control output for one control period (`control_dt`): the wheel torques from the driveline,
the brakes as per-step dampers on the wheel joints, the steering rack's motion as a rest-to-rest quintic to its
new set point. Everything else (tires, suspension, dynamics) runs in C at the step dt.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mechdyn.contact.tires import TIRE_INFO, strip_comments
from mechdyn.core.loops import close_loops
from mechdyn.core import motion
from mechdyn.core.motion import Motion
from mechdyn.dynamics import Dynamics

from .contact import Brake, ContactSim, accuracy_step

DATA = Path(__file__).resolve().parents[2] / "models" / "data" / "hmmwv"
STEER_DRIVER = "steer"


def _json(path: Path) -> dict:
    return json.loads(strip_comments(path.read_text()))


# ---------------------------------------------------------------------------------------------- layout


@dataclass(frozen=True)
class Layout:
    """What the manoeuvres read off a wheeled model: the chassis (its heaviest floating body), the tired wheels,
    each wheel's corner, and the steering driver."""
    chassis: int
    wheels: tuple[int, ...]
    front: tuple[bool, ...]
    left: tuple[bool, ...]
    inertia: tuple[float, ...]  # each wheel's spin inertia about its axis, kg·m²
    steer: str | None


def layout(dyn: Dynamics) -> Layout:
    """The Layout of `dyn`'s model: refused (ValueError) without tires or a floating chassis."""
    m = dyn.model
    if not m.tires:
        raise ValueError(f"model '{m.name}' has no tires: nothing to drive on")
    floating = [i for i, b in enumerate(m.bodies) if b.joint == "floating"]
    if not floating:
        raise ValueError(f"model '{m.name}' has no floating body to be the chassis")
    chassis = max(floating, key=lambda i: m.bodies[i].mass)
    X = dyn.bodies(m.q_design if m.q_design is not None else m.q0(), np.zeros(m.nv))
    cg = X[chassis, 9:12] + X[chassis, :9].reshape(3, 3) @ m.bodies[chassis].cg
    wheels = tuple(t.body for t in m.tires)
    inertia = tuple(float(m.bodies[w].axis @ m.bodies[w].inertia @ m.bodies[w].axis) for w in wheels)
    steer = STEER_DRIVER if any(d.name == STEER_DRIVER for d in m.drivers) else None
    return Layout(chassis, wheels, tuple(bool(X[w, 9] > cg[0]) for w in wheels),
                  tuple(bool(X[w, 10] > cg[1]) for w in wheels), inertia, steer)


# ---------------------------------------------------------------------------------------------- driveline


@dataclass(frozen=True)
class Driveline:
    """Chrono's HMMWV powertrain and simple driveline as torque maps, without shafts (docs/manoeuvres.md): the
    engine's throttle maps, the automatic gearbox's ratios and shift points, the conical gears, the front torque
    fraction, open differentials (equal torques left and right), and each brake's maximum torque."""
    full_rpm: np.ndarray
    full_torque: np.ndarray
    zero_rpm: np.ndarray
    zero_torque: np.ndarray
    max_rpm: float
    gears: tuple[float, ...]
    shift: tuple[tuple[float, float], ...]  # (downshift, upshift) rpm per gear
    conical: float
    front_fraction: float
    brake_front: float
    brake_rear: float

    @classmethod
    def hmmwv(cls, data: Path = DATA) -> "Driveline":
        """From hmmwv/powertrain/HMMWV_EngineSimpleMap.json, HMMWV_AutomaticTransmissionSimpleMap.json,
        hmmwv/driveline/HMMWV_DrivelineSimple.json and hmmwv/brake/HMMWV_BrakeSimple_{Front,Rear}.json."""
        eng = _json(data / "powertrain" / "HMMWV_EngineSimpleMap.json")
        box = _json(data / "powertrain" / "HMMWV_AutomaticTransmissionSimpleMap.json")["Gear Box"]
        drv = _json(data / "driveline" / "HMMWV_DrivelineSimple.json")
        full, zero = np.array(eng["Map Full Throttle"], float), np.array(eng["Map Zero Throttle"], float)
        if drv["Front Conical Gear Ratio"] != drv["Rear Conical Gear Ratio"]:
            raise ValueError("the driveline's front and rear conical gear ratios differ; this driveline has one")
        return cls(full[:, 0], full[:, 1], zero[:, 0], zero[:, 1], float(eng["Maximal Engine Speed RPM"]),
                   tuple(box["Forward Gear Ratios"]), tuple(tuple(p) for p in box["Shift Points Map RPM"]),
                   float(drv["Front Conical Gear Ratio"]), float(drv["Front Torque Fraction"]),
                   float(_json(data / "brake" / "HMMWV_BrakeSimple_Front.json")["Maximum Torque"]),
                   float(_json(data / "brake" / "HMMWV_BrakeSimple_Rear.json")["Maximum Torque"]))

    def engine_torque(self, rpm: float, throttle: float) -> float:
        """N·m at engine speed `rpm` and throttle in [0, 1] (Chrono's EngineSimpleMap: the two maps blended)."""
        full = float(np.interp(rpm, self.full_rpm, self.full_torque))
        zero = float(np.interp(rpm, self.zero_rpm, self.zero_torque))
        return throttle * full + (1.0 - throttle) * zero

    def gear_for(self, gear: int, rpm: float) -> int:
        """The gear after the shift map at engine speed `rpm` (one shift per call)."""
        down, up = self.shift[gear]
        if rpm > up and gear + 1 < len(self.gears):
            return gear + 1
        if rpm < down and gear > 0:
            return gear - 1
        return gear

    def wheel_torques(self, omega: np.ndarray, front: np.ndarray, throttle: float,
                      gear: int) -> tuple[np.ndarray, float]:
        """Each wheel's drive torque, and the engine's rpm, at wheel speeds `omega` (rad/s) in `gear`."""
        ratio = self.gears[gear] * self.conical  # wheel speed over engine speed
        rpm = max(float(np.mean(omega)), 0.0) / ratio * 30.0 / math.pi
        total = self.engine_torque(min(rpm, self.max_rpm), throttle) / ratio
        share = np.where(front, self.front_fraction, 1.0 - self.front_fraction) / 2.0  # open differentials
        return total * share, rpm


# ---------------------------------------------------------------------------------------------- paths, drivers


@dataclass
class Path2D:
    """A path on the ground as a dense polyline (x, y), m."""
    xy: np.ndarray
    _near: int = field(default=0, repr=False)  # the segment the last query landed on: where the next one looks first

    WINDOW = 64  # segments searched each side of the last query's before the whole path

    def closest(self, p: np.ndarray) -> np.ndarray:
        """The path's point closest to p (x, y), on its segments: near the last query's first, the whole path
        when the best there lies on the window's edge."""
        n = len(self.xy) - 1
        lo, hi = max(0, self._near - self.WINDOW), min(n, self._near + self.WINDOW)
        k, c = self._search(p, lo, hi)
        if (k == lo and lo > 0) or (k == hi - 1 and hi < n):
            k, c = self._search(p, 0, n)
        self._near = k
        return c

    def _search(self, p: np.ndarray, lo: int, hi: int) -> tuple[int, np.ndarray]:
        a, b = self.xy[lo:hi], self.xy[lo + 1:hi + 1]
        ab = b - a
        t = np.clip(((p - a) * ab).sum(1) / np.maximum((ab * ab).sum(1), 1e-300), 0, 1)
        c = a + t[:, None] * ab
        k = int(np.argmin(((c - p) ** 2).sum(1)))
        return lo + k, c[k]


def circle(radius: float, x0: float = 0.0, y0: float = 0.0, laps: float = 3.0, n: int = 4000) -> Path2D:
    """A left-hand circle of `radius` entered at (x0, y0) heading +x (centre at y0 + radius)."""
    s = np.linspace(0.0, 2 * math.pi * laps, n)
    return Path2D(np.stack([x0 + radius * np.sin(s), y0 + radius * (1 - np.cos(s))], axis=1))


def straight(length: float = 2000.0, x0: float = 0.0, y0: float = 0.0) -> Path2D:
    """A straight line along +x."""
    return Path2D(np.array([[x0 - 10.0, y0], [x0 + length, y0]]))


# ISO 3888-1's three lanes between cones, from the entry lane's start: start and end (m), and the lane's width as
# (a, b), a·w + b for a vehicle w wide
ISO3888_LANES = ((0.0, 15.0, (1.1, 0.25)), (45.0, 70.0, (1.2, 0.25)), (95.0, 110.0, (1.3, 0.25)))


def iso3888_lanes(width: float, x0: float = 0.0, y0: float = 0.0,
                  offset: float = 3.5) -> tuple[tuple[float, float, float, float], ...]:
    """ISO 3888-1's lanes for a vehicle `width` m wide, the entry lane centred on y0 from x0: each (x start, x end,
    centre y, half-width). The offset lane lies to the left, its right-hand cones `offset` m left of the entry lane's
    right-hand cones; the exit lane's right-hand cones are in line with the entry lane's."""
    right = y0 - 0.5 * (1.1 * width + 0.25)
    out = []
    for (a, b, (k, c)), shift in zip(ISO3888_LANES, (0.0, offset, 0.0)):
        half = 0.5 * (k * width + c)
        out.append((x0 + a, x0 + b, right + shift + half, half))
    return tuple(out)


def iso3888(lanes: tuple[tuple[float, float, float, float], ...], lead: float = 20.0,
            run_out: float = 100.0) -> Path2D:
    """The lanes' centre lines joined by the smoothstep 3u² − 2u³ across each gap, `lead` m of straight before and
    `run_out` m after."""
    xs, ys = [np.array([lanes[0][0] - lead])], [np.array([lanes[0][2]])]
    for k, (a, b, yc, _) in enumerate(lanes):
        xs.append(np.linspace(a, b, max(2, int((b - a) * 5))))
        ys.append(np.full(len(xs[-1]), yc))
        if k + 1 < len(lanes):
            a1, y1 = lanes[k + 1][0], lanes[k + 1][2]
            u = np.linspace(0.0, 1.0, max(2, int((a1 - b) * 5)))[1:-1]
            xs.append(b + (a1 - b) * u)
            ys.append(yc + (y1 - yc) * (3 * u**2 - 2 * u**3))
    xs.append(np.array([lanes[-1][1] + run_out]))
    ys.append(np.array([lanes[-1][2]]))
    return Path2D(np.stack([np.concatenate(xs), np.concatenate(ys)], axis=1))


@dataclass
class Pid:
    """Chrono's controllers' PID on an error: the derivative by a backward difference, the integral by the
    trapezoidal rule, the output clipped to [−1, 1]."""
    kp: float
    ki: float = 0.0
    kd: float = 0.0
    _err: float = field(default=0.0, init=False)
    _int: float = field(default=0.0, init=False)

    def __call__(self, err: float, dt: float) -> float:
        d = (err - self._err) / dt
        self._int += 0.5 * (err + self._err) * dt
        self._err = err
        return float(np.clip(self.kp * err + self.ki * self._int + self.kd * d, -1.0, 1.0))

    @classmethod
    def from_json(cls, gains: dict) -> "Pid":
        return cls(gains["Kp"], gains["Ki"], gains["Kd"])


@dataclass
class PathFollower:
    """Chrono's path steering controller (ChPathSteeringController, hmmwv/driver/SteeringController.json): a
    sentinel `lookahead` m ahead of the chassis, its distance to the path's closest point signed by the side
    it lies on, through a PID into the normalized steering in [−1, 1]."""
    path: Path2D
    pid: Pid = field(default_factory=lambda: Pid(0.5))
    lookahead: float = 5.0

    @classmethod
    def hmmwv(cls, path: Path2D, data: Path = DATA) -> "PathFollower":
        d = _json(data / "driver" / "SteeringController.json")
        return cls(path, Pid.from_json(d["Gains"]), d["Lookahead Distance"])

    def __call__(self, pos: np.ndarray, heading: np.ndarray, dt: float) -> float:
        sentinel = pos + self.lookahead * heading
        target = self.path.closest(sentinel)
        s, tv = sentinel - pos, target - pos
        return self.pid(math.copysign(float(np.linalg.norm(target - sentinel)), s[0] * tv[1] - s[1] * tv[0]), dt)


@dataclass
class SpeedController:
    """Chrono's speed controller (ChSpeedController, hmmwv/driver/SpeedController.json): a PID on the speed
    error; its output in [−1, 1] is the throttle when positive, the braking when negative."""
    pid: Pid = field(default_factory=lambda: Pid(0.4))

    @classmethod
    def hmmwv(cls, data: Path = DATA) -> "SpeedController":
        return cls(Pid.from_json(_json(data / "driver" / "SpeedController.json")["Gains"]))

    def __call__(self, target: float, speed: float, dt: float) -> float:
        return self.pid(target - speed, dt)


# ---------------------------------------------------------------------------------------------- the log


LOG_SCALARS = ("t", "x", "y", "z", "yaw", "roll", "pitch", "speed", "vy", "yaw_rate", "ay", "ax", "steer", "rack",
               "throttle", "braking", "gear", "rpm", "work", "work_contact", "u_tire")


@dataclass(frozen=True)
class Log:
    """A drive's histories, one row per control period: LOG_SCALARS, and per wheel (columns in Layout.wheels
    order) the tires' TIRE_INFO (load Fz, slips, forces) and the applied drive and brake torques."""
    cols: dict[str, np.ndarray]
    tires: np.ndarray  # (n, nwheel, len(TIRE_INFO))
    drive: np.ndarray  # (n, nwheel) N·m
    brake: np.ndarray  # (n, nwheel) N·m at the period's start
    q: np.ndarray
    qd: np.ndarray
    seconds: float  # wall time in the C stepping

    def __getitem__(self, name: str) -> np.ndarray:
        return self.cols[name]

    def tire(self, name: str) -> np.ndarray:
        """(n, nwheel) one TIRE_INFO column of every tire."""
        return self.tires[:, :, TIRE_INFO.index(name)]

    def to_frame(self):
        """The histories as a pandas DataFrame, the tire columns as NAME_k (k the wheel's index)."""
        import pandas as pd  # noqa: PLC0415  (pandas only where a table is asked for)

        out = dict(self.cols)
        for j, name in enumerate(TIRE_INFO):
            for k in range(self.tires.shape[1]):
                out[f"{name}_{k}"] = self.tires[:, k, j]
        return pd.DataFrame(out)


def _euler(R: np.ndarray) -> tuple[float, float, float]:
    """yaw, pitch, roll (z-y-x) of rotation R."""
    return (math.atan2(R[1, 0], R[0, 0]), math.asin(-max(-1.0, min(1.0, R[2, 0]))), math.atan2(R[2, 1], R[2, 2]))


# ---------------------------------------------------------------------------------------------- the vehicle


class Vehicle:
    """A wheeled model on its tires, stepped in C between control updates (the module docstring)."""

    def __init__(self, dyn: Dynamics, speed: float = 0.0, dt: float | None = None, control_dt: float = 0.02,
                 driveline: Driveline | None = None, rack_per_steer: float | None = None, module=None,
                 timed: bool = False) -> None:
        """`speed` the lowest speed the car will roll at, m/s, which sets the accuracy step (accuracy_step), or
        `dt` the step; either shortened to a whole number of steps per control period `control_dt`.
        `rack_per_steer`: rack
        travel, m, at full steering (+1: a left turn); by default the HMMWV rack-and-pinion's "Pinion" "Radius"
        0.1 m times its "Maximum Angle (deg)" 50 (hmmwv/steering/HMMWV_RackPinion.json), signed so +1 turns
        left. `module`: the contact loop compiled over other contact C (a test's planted copy). `timed`: split the
        stepping into the loop's stages (`stages`, s; the clock reads add a little)."""
        self.dyn, self.sim = dyn, ContactSim(dyn, ramp_ground=0.0, module=module)
        self.layout = layout(dyn)
        dt = accuracy_step(self.sim.contact, speed=speed).dt if dt is None else float(dt)
        # the control period is kept and the step shortened to a whole number of steps in it: a step from an
        # accuracy rule is a bound, and runs at dt and dt/2 then share their control times
        self.steps = max(1, math.ceil(control_dt / dt - 1e-9))
        self.control_dt = float(control_dt)
        self.dt = self.control_dt / self.steps
        self.driveline = driveline or Driveline.hmmwv()
        self.rack_per_steer = (rack_per_steer if rack_per_steer is not None
                               else self._rack_sign() * 0.1 * math.radians(50))
        m = dyn.model
        self.q = np.array(m.q_design if m.q_design is not None else m.q0(), dtype=float)
        self.qd = np.zeros(dyn.nv)
        self.t = 0.0
        self.gear = 0
        self.work = 0.0  # the model's dampers' and the brakes' dissipated work since the start, J
        self.timed = timed
        self.stages: dict[str, float] = {}  # s per stage of the stepping so far, when timed
        self._rack = (0.0, 0.0)  # the rack's last set point: its time and offset, m
        if self.layout.steer is not None:  # the loops' reach over the whole steering range, checked once
            r, own = abs(self.rack_per_steer), dyn.motions[self.layout.steer]
            dyn.set_motion(self.layout.steer, motion.table([0.0, 1.0, 2.0, 3.0], [0.0, -r, r, 0.0]))
            dyn.set_motion(self.layout.steer, own)

    # -- geometry

    def _rack_sign(self) -> float:
        """+1 if moving the rack to +y turns the front wheels left (their heading's yaw up), −1 otherwise."""
        lay, m = self.layout, self.dyn.model
        if lay.steer is None:
            return 1.0
        d = m.drivers[m.driver_index(lay.steer)]
        q = np.array(m.q_design if m.q_design is not None else m.q0(), dtype=float)
        q2 = q.copy()
        q2[m.qidx[d.body]] += 0.01
        q2 = close_loops(m, q2, held=(m.vidx[d.body],))
        fl = next(w for w, f, lft in zip(lay.wheels, lay.front, lay.left) if f and lft)
        h = lambda qq: self.dyn.bodies(qq, np.zeros(m.nv))[fl, :9].reshape(3, 3) @ np.array([1.0, 0, 0])  # noqa: E731
        a, b = h(q), h(q2)
        return 1.0 if (a[0] * b[1] - a[1] * b[0]) > 0 else -1.0

    def chassis_pose(self, q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The chassis's R, cg position and cg velocity (world)."""
        return self._pose(self.dyn.bodies(q, qd))

    def _pose(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """chassis_pose from the body rows X."""
        X = X[self.layout.chassis]
        R = X[:9].reshape(3, 3)
        r = R @ self.dyn.model.bodies[self.layout.chassis].cg
        w, v = X[12:15], X[15:18]
        return R, X[9:12] + r, v + (w[1] * r[2] - w[2] * r[1], w[2] * r[0] - w[0] * r[2], w[0] * r[1] - w[1] * r[0])

    # -- the loop

    def _steer_to(self, value: float) -> None:
        """The rack's motion: a rest-to-rest quintic from where it is to `value` m over the next control period.
        Its table keeps two pieces, the past folded into one from rest at t = 0: the motion from now on is the
        same, and the table stays short."""
        t0, v0 = self._rack
        t1 = self.t + self.control_dt
        s, v = ([0.0, t0, t1], [0.0, v0, value]) if t0 > 0 else ([0.0, t1], [0.0, value])
        coef = [[6 * dv / h**5, -15 * dv / h**4, 10 * dv / h**3, 0.0, 0.0, a]
                for a, dv, h in zip(v[:-1], np.diff(v), np.diff(s))]
        self.dyn.set_motion(self.layout.steer, Motion("table", (), breaks=np.array(s), coef=np.array(coef).T))
        self._rack = (t1, value)

    def _brakes(self, braking: float) -> tuple[Brake, ...]:
        """Each wheel's brake for the next period: a damper on its joint giving the brake's torque (its maximum
        times `braking`) at the wheel's speed now, capped so the step stays stable (docs/manoeuvres.md)."""
        if braking <= 0.0:
            return ()
        m, lay, dl = self.dyn.model, self.layout, self.driveline
        out = []
        for w, front, inertia in zip(lay.wheels, lay.front, lay.inertia):
            omega = abs(float(self.qd[m.vidx[w]]))
            torque = braking * (dl.brake_front if front else dl.brake_rear)
            c = min(torque / max(omega, 1e-9), 0.5 * inertia / self.dt)
            out.append(Brake(w, float(self.q[m.qidx[w]]), 0.0, c))
        return tuple(out)

    def step(self, drive: np.ndarray, brakes: tuple[Brake, ...], rack: float, dissipation: bool = False):
        """One control period with wheel torques `drive` (N·m, per wheel), the wheels' `brakes` (`_brakes`) and
        the rack's set point `rack` (m): the ContactRun (with `dissipation`, its work_contact column integrated)."""
        m, lay = self.dyn.model, self.layout
        tau = np.zeros(self.dyn.nv)
        for w, T in zip(lay.wheels, drive):
            tau[m.vidx[w]] = T
        if lay.steer is not None:
            self._steer_to(rack)
        if brakes or self.sim.brakes:
            self.sim.set_brakes(brakes)
        run = self.sim.run(self.q, self.qd, T=self.control_dt, dt=self.dt, stride=self.steps, t0=self.t, tau=tau,
                           dissipation=dissipation, timed=self.timed)
        for k, v in run.stages.items():
            self.stages[k] = self.stages.get(k, 0.0) + v
        self.q, self.qd, self.t = run.q[-1].copy(), run.qd[-1].copy(), float(run.t[-1])
        return run

    # -- states

    def settle(self, T: float = 1.5) -> Log:
        """From the design pose onto the tires, every wheel braked and the rack at rest: the Log."""
        return self.drive(T, steer=None, speed=None, braking=1.0)

    def launch(self, speed: float) -> None:
        """The settled state moving forward (chassis +x) at `speed`, every body translating with it and each
        wheel rolling at speed over its loaded radius."""
        m, lay = self.dyn.model, self.layout
        X = self.dyn.bodies(self.q, np.zeros(m.nv))
        qd = np.zeros(m.nv)
        v = np.array([speed, 0.0, 0.0])
        for i, b in enumerate(m.bodies):
            if b.joint == "floating":  # the body's spatial velocity in its own frame: linear part Rᵀv
                qd[m.vidx[i] + 3: m.vidx[i] + 6] = X[i, :9].reshape(3, 3).T @ v
        info = self.sim.contact.tire_info(X)
        for k, w in enumerate(lay.wheels):
            depth = info[k, TIRE_INFO.index("depth")]
            r0 = self.sim.contact.tires[k].r0
            qd[m.vidx[w]] = speed / ((2 * r0 + (r0 - depth)) / 3)  # TMeasy's rolling radius: zero slip
        self.qd = qd
        self.sim.restart()

    def drive(self, T: float, steer=None, speed=None, braking: float = 0.0, throttle: float | None = None,
              progress: bool = False, until=None, dissipation: bool = False) -> Log:
        """Drive for T seconds: `steer` a callable (pos, heading, dt) -> steering in [−1, 1] (a PathFollower),
        or a number, or None (the rack held); `speed` a target speed for a SpeedController (m/s) or None;
        `braking` in [0, 1] and `throttle` held when no speed is given; `until(log_row)` -> True ends the drive early
        (its argument the period's forward speed). `dissipation`: the contact's dissipated work integrated (the
        Log's work_contact). The Log of every control period."""
        from tqdm import tqdm  # noqa: PLC0415

        dl, lay, m = self.driveline, self.layout, self.dyn.model
        spd = SpeedController.hmmwv() if speed is not None else None
        n = max(1, round(T / self.control_dt))
        rows, tires, drives, brakes, qs, qds, seconds = [], [], [], [], [], [], 0.0
        energy = []  # per period: the dampers' and brakes' work so far, the contact's dissipated work, u_tire
        rack = self._rack[1]
        X = self.dyn.bodies(self.q, self.qd)
        own = self.dyn.motions.get(lay.steer)  # the steering driver's own motion, given back after the drive
        try:  # the periods' steering motions are this drive's: other users of dyn see the driver's own after it
            for _ in tqdm(range(n), desc=f"drive {m.name}", unit="period", leave=False,
                          disable=None if progress else True):
                R, cg, vcg = self._pose(X)
                heading = R[:2, 0] / np.linalg.norm(R[:2, 0])
                fwd = float(vcg[:2] @ heading)
                if callable(steer):
                    s = steer(cg[:2], heading, self.control_dt)
                else:
                    s = None if steer is None else float(np.clip(steer, -1, 1))
                if s is not None and lay.steer is not None:
                    rack = s * self.rack_per_steer
                thr, brk = (throttle or 0.0), braking
                if spd is not None:
                    out = spd(speed, fwd, self.control_dt)
                    thr, brk = max(out, 0.0), max(-out, 0.0)
                omega = np.array([self.qd[m.vidx[w]] for w in lay.wheels])
                torques, rpm = dl.wheel_torques(omega, np.array(lay.front), thr, self.gear)
                self.gear = dl.gear_for(self.gear, rpm)
                if thr == 0.0 and spd is None and throttle is None:
                    torques = np.zeros_like(torques)  # coasting with the clutch open: no engine drag
                bk = self._brakes(brk)
                run = self.step(torques, bk, rack, dissipation)
                seconds += run.seconds
                self.work += float(run.col("work")[-1])
                energy.append((self.work, float(run.col("work_contact")[-1]), float(run.col("u_tire")[-1])))
                X = self.dyn.bodies(self.q, self.qd)
                tires.append(self.sim.contact.tire_info(X, self.sim.tire_state))
                drives.append(torques)
                brakes.append([b.c * abs(self.qd[m.vidx[b.body]]) for b in bk] if bk else np.zeros(len(lay.wheels)))
                qs.append(self.q.copy())
                qds.append(self.qd.copy())
                rows.append((self.t, s if s is not None else 0.0, rack, thr, brk, self.gear, rpm, *self._pose(X),
                             X[self.layout.chassis, 14]))
                if until is not None and until(fwd):
                    break
        finally:
            if own is not None:
                self.dyn.set_motion(lay.steer, own)
        return self._log(rows, tires, drives, brakes, qs, qds, seconds, energy)

    def _log(self, rows, tires, drives, brakes, qs, qds, seconds, energy) -> Log:
        cols = {k: [] for k in LOG_SCALARS}
        for t, s, rack, thr, brk, gear, rpm, R, cg, v, yaw_rate in rows:
            yaw, pitch, roll = _euler(R)
            c, sn = math.cos(yaw), math.sin(yaw)
            for k, x in (("t", t), ("x", cg[0]), ("y", cg[1]), ("z", cg[2]), ("yaw", yaw), ("roll", roll),
                         ("pitch", pitch), ("speed", c * v[0] + sn * v[1]), ("vy", -sn * v[0] + c * v[1]),
                         ("yaw_rate", yaw_rate), ("steer", s), ("rack", rack), ("throttle", thr), ("braking", brk),
                         ("gear", gear), ("rpm", rpm)):
                cols[k].append(x)
            cols.setdefault("_v", []).append(v[:2])
        out = {k: np.asarray(v, dtype=float) for k, v in cols.items() if k != "_v"}
        V = np.asarray(cols["_v"])
        t = out["t"]
        if len(t) > 2:  # the cg's acceleration on the road plane, in the heading's axes
            A = np.gradient(V, t, axis=0)
            c, sn = np.cos(out["yaw"]), np.sin(out["yaw"])
            out["ax"], out["ay"] = c * A[:, 0] + sn * A[:, 1], -sn * A[:, 0] + c * A[:, 1]
        else:
            out["ax"] = out["ay"] = np.zeros(len(t))
        out["work"], out["work_contact"], out["u_tire"] = np.asarray(energy, dtype=float).reshape(-1, 3).T
        return Log(out, np.asarray(tires), np.asarray(drives, dtype=float), np.asarray(brakes, dtype=float),
                   np.asarray(qs), np.asarray(qds), seconds)
