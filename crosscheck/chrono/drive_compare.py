"""mechdyn's hmmwv_road against Chrono::Vehicle's HMMWV (crosscheck/chrono/hmmwv_drive.py) on the same manoeuvres:
the constant-radius turn, the straight-line braking, the double lane change (docs/manoeuvres.md, "Against
Chrono::Vehicle").

The two vehicles share the chassis, suspension hardpoints, springs' slope, shocks, wheels, TMeasy tires, brakes,
engine map and gearbox; they differ by design in the steering (mechdyn's rack and pinion, Chrono's Pitman arm),
the springs (mechdyn's linear at the table's zero-deflection slope, Chrono's cubic f = a·x + b·x³, stiffer at the
static deflection), the driveline (mechdyn's torque split 50/50 to open differentials, Chrono's 2WD shafts on the
rear axle), and the solver (Chrono's PSOR, 300 iterations). So the comparison gates what those differences leave
equal: the kinematics of the turn (yaw rate and lateral acceleration against v/R and v²/R at each one's own
speed), the stopping distance (tire-limited: both lock their wheels), and reports the roll gradient and the steer,
which the springs and the steering geometry set.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from crosscheck.checks import Check

RADIUS = 50.0
SPEEDS = (5.0, 7.5, 10.0, 12.5)  # m/s: Chrono's path follower holds the 50 m circle up to 15 m/s, not past it
BRAKE_SPEED = 20.0
LANE_SPEED = 15.0
KINEMATIC_BOUND = 0.02  # yaw rate over v/R and a_y over v²/R, each vehicle's own, against each other
STOP_BOUND = 0.05  # the stopping distance, at the same onset speed, relative
ROLL_BOUND = 0.6  # the roll gradient, relative: the springs differ (module docstring)
LANE_BOUND = 0.25  # m: the lane change's paths, the same controller on the two cars


@dataclass(frozen=True)
class Side:
    """One engine's figures: per speed (speed, yaw_rate, ay, roll), the stopping distance and its onset speed, the
    lane change's wall-clock real-time factor, and the histories the picture draws."""
    name: str
    steady: np.ndarray  # (n, 4)
    stop: float
    stop_speed: float
    lane_rtf: float
    lane_xy: np.ndarray  # the lane change's path, from the entry lane's start on its centre line
    brake_v: tuple[np.ndarray, np.ndarray]  # t from onset, speed

    def roll_gradient(self) -> float:
        """deg of roll per m/s² of lateral acceleration, fitted through the steady points."""
        return float(np.degrees(np.polyfit(self.steady[:, 2], self.steady[:, 3], 1)[0]))

    def stop_at(self, v: float) -> float:
        """The stopping distance scaled to onset speed v (a constant deceleration's v²)."""
        return self.stop * (v / self.stop_speed) ** 2


def chrono_side() -> Side:
    """Chrono::Vehicle's HMMWV on the three manoeuvres (hmmwv_drive)."""
    from crosscheck.chrono import hmmwv_drive as hd

    _, table = hd.constant_radius(RADIUS, SPEEDS)
    steady = table[["speed", "yaw_rate", "ay", "roll"]].to_numpy()
    df, brake = hd.straight_brake(BRAKE_SPEED)
    after = df[df.t >= brake["t_brake"]]
    lane, info = hd.double_lane_change(LANE_SPEED)
    return Side("Chrono::Vehicle", steady, brake["distance"], brake["v_brake"], info["sim"] / info["wall"],
                lane[["x", "y"]].to_numpy(), (after.t.to_numpy() - brake["t_brake"], after.speed.to_numpy()))


def mechdyn_side(dyn, module=None) -> Side:
    """mechdyn's hmmwv_road (`dyn`) on the three manoeuvres (mechdyn.sim.manoeuvres); `module` the contact loop
    compiled over other contact C (a planted copy)."""
    import time

    from mechdyn.sim import manoeuvres as mv
    from mechdyn.sim.vehicle import Vehicle

    def car(speed: float) -> Vehicle:
        c = Vehicle(dyn, speed=speed, module=module)
        mv.statics(c)
        return c

    turn = mv.constant_radius(car(min(SPEEDS)), RADIUS, SPEEDS)
    steady = np.array([[p.speed, p.yaw_rate, p.ay, p.roll] for p in turn.points])
    brk = mv.straight_brake(car(1.0), speed=BRAKE_SPEED)
    c = car(LANE_SPEED)
    start = time.perf_counter()
    lane = mv.lane_change(c, speed=LANE_SPEED)
    wall = time.perf_counter() - start
    sim = float(lane.log["t"][-1] - lane.log["t"][0])
    t, v = brk.log["t"][brk.onset - 1:], brk.log["speed"][brk.onset - 1:]
    entry = np.array(lane.lanes[0][::2])  # the entry lane's start and centre: Chrono's course starts there, at 0
    return Side("mechdyn", steady, brk.distance, brk.speed, sim / wall,
                np.stack([lane.log["x"], lane.log["y"]], 1) - entry, (t - t[0], v))


def checks(ours: Side, theirs: Side) -> list[Check]:
    """The gates: each vehicle's own yaw rate over v/R and a_y over v²/R against the other's, worst speed; the
    stopping distance at the same onset speed; the roll gradient."""
    def kin(s: Side, k: int) -> np.ndarray:
        v = s.steady[:, 0]
        return s.steady[:, k] / (v / RADIUS if k == 1 else v**2 / RADIUS)

    out = []
    for k, name in ((1, "yaw_rate"), (2, "ay")):
        d = np.abs(kin(ours, k) - kin(theirs, k))
        out.append(Check(f"drive_{name}_vs_chrono", float(d.max()), KINEMATIC_BOUND,
                         f"{name} over its v/R{'²' if k == 2 else ''} on R {RADIUS:g} m, mechdyn's against Chrono's "
                         f"at {', '.join(f'{v:g}' for v in SPEEDS)} m/s [relative]"))
    stop = ours.stop_at(theirs.stop_speed)
    out.append(Check("drive_stop_vs_chrono", abs(stop - theirs.stop) / theirs.stop, STOP_BOUND,
                     f"stopping distance from {theirs.stop_speed:.4g} m/s: mechdyn {stop:.4g} m (its own "
                     f"{ours.stop:.4g} m from {ours.stop_speed:.4g}), Chrono {theirs.stop:.4g} m [relative]"))
    x = np.linspace(0.0, 110.0, 221)  # through the three lanes: the lateral gap of the two paths at the same x
    gap = np.abs(np.interp(x, *ours.lane_xy.T) - np.interp(x, *theirs.lane_xy.T)).max()
    out.append(Check("drive_lane_vs_chrono", float(gap), LANE_BOUND,
                     f"the lane change's path at {LANE_SPEED:g} m/s, largest lateral gap between the two through the "
                     "lanes (the same path follower; the steering linkages differ) [m]"))
    rg, rc = ours.roll_gradient(), theirs.roll_gradient()
    out.append(Check("drive_roll_vs_chrono", abs(rg - rc) / abs(rc), ROLL_BOUND,
                     f"roll gradient mechdyn {rg:.3g}, Chrono {rc:.3g} deg per m/s² (linear against cubic springs) "
                     "[relative]"))
    return out


def figure(ours: Side, theirs: Side, path: Path) -> Path:
    """Both engines on one picture: steady yaw rate, lateral acceleration and roll against speed, the braking's
    speed against time, the lane change's path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 5, figsize=(22, 4.2), constrained_layout=True)
    v = np.linspace(min(SPEEDS) * 0.9, max(SPEEDS) * 1.05, 20)
    for s, style in ((ours, "o-"), (theirs, "s--")):
        sp = s.steady[:, 0]
        ax[0].plot(sp, s.steady[:, 1], style, label=s.name)
        ax[1].plot(sp, s.steady[:, 2], style, label=s.name)
        ax[2].plot(s.steady[:, 2], np.degrees(s.steady[:, 3]), style,
                   label=f"{s.name}: {s.roll_gradient():.3g} deg/(m/s²)")
        ax[3].plot(*s.brake_v, style[1:], label=f"{s.name}: {s.stop:.4g} m from {s.stop_speed:.4g} m/s")
        ax[4].plot(s.lane_xy[:, 0], s.lane_xy[:, 1], style[1:],
                   label=f"{s.name}: real-time factor {s.lane_rtf:.3g}")
    ax[0].plot(v, v / RADIUS, "k:", label="v/R")
    ax[1].plot(v, v**2 / RADIUS, "k:", label="v²/R")
    for a, t, xl, yl in ((ax[0], f"yaw rate on R {RADIUS:g} m", "speed, m/s", "rad/s"),
                         (ax[1], "lateral acceleration", "speed, m/s", "m/s²"),
                         (ax[2], "roll", "lateral acceleration, m/s²", "deg"),
                         (ax[3], "braking to rest", "t from the brakes' onset, s", "speed, m/s"),
                         (ax[4], f"lane change at {LANE_SPEED:g} m/s", "x from the entry lane, m", "y, m")):
        a.set(title=t, xlabel=xl, ylabel=yl)
        a.legend(fontsize=8)
        a.grid(alpha=0.3)
    fig.suptitle("hmmwv_road (mechdyn) against Chrono::Vehicle's HMMWV, both on TMeasy tires on a flat road")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def compare(dyn, path: Path | None = None) -> tuple[list[Check], Side, Side, Path | None]:
    """Both engines, their gates and (with `path`) the picture."""
    theirs = chrono_side()
    ours = mechdyn_side(dyn)
    return checks(ours, theirs), ours, theirs, figure(ours, theirs, path) if path else None


def steer_line(ours: Side, theirs: Side) -> str:
    """A report line of the two engines' speeds and yaw rates (the steer is not compared: module docstring)."""
    return "; ".join(f"{a[0]:.3g}/{b[0]:.3g} m/s: r {a[1]:.4g}/{b[1]:.4g}, roll {math.degrees(a[3]):.3g}/"
                     f"{math.degrees(b[3]):.3g} deg" for a, b in zip(ours.steady, theirs.steady))
