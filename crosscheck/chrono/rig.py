"""Chrono::Vehicle's own HMMWV suspension test rig, run on Chrono's rig data file, beside `mechdyn rig hmmwv --chrono`
(a report, not a gate: `crosscheck chrono-rig`, docs/verification.md "Chrono::Vehicle's rig").

Chrono's side is its HMMWV setup of demo_VEH_SuspensionTestRig.cpp: the rig of hmmwv/suspensionTest/
HMMWV_ST_front.json (the vehicle of hmmwv/vehicle/HMMWV_Vehicle.json, its chassis fixed to the ground, axle 0
tested, the steering mechanism included, "Displacement Limit" 0.15 m, "Initial Ride Height" 0.5 m: a 0.5 s ramp
to that height before the data file starts), TMeasy tires (hmmwv/tire/HMMWV_TMeasyTire.json) on the tested
wheels, `ChSuspensionTestRigDataDriver` on the data file, stepped by `Advance` at the demo's 1e-3 s; built either
as the demo's `ChSuspensionTestRigPlatform` (the tires on two posts) or as `ChSuspensionTestRigPushrod` (the
spindles moved directly, the tires off the ground). Two things in this Chrono (commit 7689fbc) bear on what it
shows, both measured by `crosscheck chrono-rig`:

- both rigs move their actuators against their inputs: they write the setpoint −displacement "because of the motor
  definition" (ChSuspensionTestRig.cpp, UpdateActuators), but the motor's displacement is already the post's (or
  spindle's) height above its frame on the chassis, so a positive input moves the post down, and the ride-height
  ramp goes the wrong way. `transformed_inputs(negate=True)` feeds the pushrod rig the file with its post columns
  negated, which undoes the first (not the ramp's).
- the platform rig's terrain (TestRigTerrain) overrides GetHeight but not GetPoint, whose ChTerrain default
  puts the terrain point at z = 0; the tire models' disc collision takes the terrain plane through that point, so
  TMeasy (and every force-element tire) sees a ground at the chassis reference height, 0.47 m above the posts,
  whatever the posts do.

Recorded per step, per front wheel: the spindle's height above its design height in the chassis frame (the chassis
is fixed at the origin), the coil spring's force (Chrono's TSDA force, compression positive: it pushes its ends
apart) and length, and the height of the body the actuator moves (the post, or the spindle).

mechdyn's side is what `mechdyn rig MODEL --chrono FILE` runs (mechdyn.sim.rig: from the static equilibrium on the
posts at the design pose): hmmwv (the whole vehicle on four posts, held in the plane by the rig's restraints) and quartercar (the front-left corner, its
sprung mass on a vertical slider), recorded the same way from their states.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .vehicle import data_dir, require_vehicle

RIG_JSON = "hmmwv/suspensionTest/HMMWV_ST_front.json"
TIRE_JSON = "hmmwv/tire/HMMWV_TMeasyTire.json"
INPUTS = "hmmwv/suspensionTest/ST_inputs.dat"
STEP = 1e-3  # s: the step of Chrono's rig demo
SIDES = ("left", "right")


@dataclass(frozen=True)
class RigSeries:
    """Time series of a rig run's front wheels: the rig's own time t (s), and per side ("left", "right") the wheel
    travel (m, the wheel centre's height relative to the chassis above its design value), the coil spring's force
    (N, compression positive) and the post top's height (m, chassis frame)."""

    name: str
    t: np.ndarray
    travel: dict[str, np.ndarray]
    spring: dict[str, np.ndarray]
    post: dict[str, np.ndarray]
    length: dict[str, np.ndarray]  # m: the coil spring's length
    delay: float = 0.0  # s: the rig's time at which the data file's time 0 is applied

    @property
    def input_time(self) -> np.ndarray:
        """The data file's time at each sample: t − delay."""
        return self.t - self.delay


def _link(system, name: str):
    found = [lk for lk in system.GetLinks() if lk.GetName() == name]
    if len(found) != 1:
        raise RuntimeError(f"expected one link named {name!r} in Chrono's rig, found {len(found)}")
    return found[0]


def _spring(system, side: str):
    """The front suspension's coil spring on `side` (Chrono::Vehicle names it …Spring_L / …Spring_R)."""
    suffix = "_L" if side == "left" else "_R"
    found = [lk for lk in system.GetLinks()
             if "spring" in lk.GetName().lower() and lk.GetName().endswith(suffix) and "Front" in lk.GetName()]
    if len(found) != 1:
        raise RuntimeError(f"expected one front spring ending in {suffix} among Chrono's links, found "
                           f"{sorted(lk.GetName() for lk in system.GetLinks() if 'spring' in lk.GetName().lower())}")
    return found[0]


def transformed_inputs(inputs: str | Path, out: str | Path, negate: bool = False, swap: bool = False) -> Path:
    """A copy of the rig data file `inputs`, written to `out`, with every post column negated (`negate`: fed to
    Chrono's rig it undoes the rig's inverted post sign, docs/verification.md) and/or each axle's left and right
    columns exchanged (`swap`: a left-side model driven by the right side's input). Time and steering as they are."""
    from mechdyn.sim.road import read_chrono_rig_inputs

    d = read_chrono_rig_inputs(inputs)
    sign = -1.0 if negate else 1.0
    cols = [d.time, d.steering]
    for left, right in zip(d.left, d.right):
        cols += [sign * right, sign * left] if swap else [sign * left, sign * right]
    out = Path(out)
    out.write_text("".join(" ".join(f"{x:.9g}" for x in row) + "\n" for row in np.column_stack(cols)))
    return out


def chrono_rig(inputs: str | Path | None = None, T: float | None = None, step: float = STEP,
               kind: str = "platform", name: str | None = None) -> RigSeries:
    """Chrono::Vehicle's HMMWV front suspension test rig, `kind` "platform" (ChSuspensionTestRigPlatform: TMeasy
    tires on two posts, Chrono's demo) or "pushrod" (ChSuspensionTestRigPushrod: the spindles moved directly, the
    tires off the ground), on the data file `inputs` (default Chrono's own ST_inputs.dat) for T s of the rig's
    time (default: until its driver ends), recorded every step. `post` is the height of the body the rig's actuator
    moves: the platform's top, or the spindle."""
    ch, veh = require_vehicle()
    veh.SetVehicleDataPath(str(data_dir()) + "/")
    inputs = Path(inputs) if inputs is not None else data_dir() / INPUTS
    make = {"platform": veh.ChSuspensionTestRigPlatform, "pushrod": veh.ChSuspensionTestRigPushrod}[kind]
    rig = make(veh.GetVehicleDataFile(RIG_JSON))
    vehicle = rig.GetVehicle()
    for wheel in vehicle.GetAxle(0).GetWheels():
        vehicle.InitializeTire(veh.ReadTireJSON(veh.GetVehicleDataFile(TIRE_JSON)), wheel, ch.VisualizationType_NONE)
    rig.SetDriver(veh.ChSuspensionTestRigDataDriver(str(inputs)))
    rig.Initialize()
    system = vehicle.GetSystem()
    system.SetNumThreads(1, 1, 1)
    actuator = "post" if kind == "platform" else "rod"
    motors = {s: ch.CastToChLinkMotorLinearPosition(_link(system, f"{s[0].upper()}_{actuator}_linActuator"))
              for s in SIDES}
    moved = {s: motors[s].GetBody1() for s in SIDES}  # Initialize(post or spindle, chassis, frame): body 1
    springs = {s: ch.CastToChLinkTSDA(_spring(system, s)) for s in SIDES}
    spindle = {s: vehicle.GetSuspension(0).GetSpindle(veh.LEFT if s == "left" else veh.RIGHT) for s in SIDES}
    chassis = vehicle.GetChassisBody().GetFrameRefToAbs()  # the chassis reference frame (its body's is the COM's)

    def height(body) -> float:  # in the chassis frame (fixed, but read rather than assumed)
        return chassis.TransformPointParentToLocal(body.GetPos()).z

    design = {s: height(spindle[s]) for s in SIDES}  # the rig is built at the design pose
    rows: list[list[float]] = []

    def record() -> None:
        rows.append([vehicle.GetChTime(), *(height(spindle[s]) - design[s] for s in SIDES),
                     *(springs[s].GetForce() for s in SIDES), *(height(moved[s]) for s in SIDES),
                     *(springs[s].GetLength() for s in SIDES)])

    record()
    while (T is None and not rig.DriverEnded()) or (T is not None and vehicle.GetChTime() < T - 0.5 * step):
        rig.Advance(step)
        record()
    a = np.array(rows)
    by = lambda k: {s: a[:, k + i] for i, s in enumerate(SIDES)}  # noqa: E731
    delay = 0.5 if _ride_height(RIG_JSON) > 0 else 0.0
    return RigSeries(name or f"Chrono::Vehicle {kind} rig", a[:, 0], by(1), by(3), by(5), by(7), delay)


def _ride_height(rig_json: str) -> float:
    """The rig JSON's "Initial Ride Height" (−1 without one): Chrono delays the data file by 0.5 s when it is given,
    ramping the posts to that ride height meanwhile (ChSuspensionTestRig::Initialize)."""
    import json

    return float(json.loads((data_dir() / rig_json).read_text()).get("Initial Ride Height", -1.0))


def mechdyn_rig(model_name: str = "hmmwv", inputs: str | Path | None = None, T: float = 8.0, dt: float = 1e-3,
                scheme: str = "verlet", sides: dict[str, str] | None = None, name: str | None = None) -> RigSeries:
    """`mechdyn rig MODEL --chrono inputs --time T --dt dt --scheme scheme`'s run, its front wheels recorded as
    RigSeries: the wheel travel against the design pose (not against the run's first row, as the rig's records),
    the spring tsda's force (compression positive) and length, the post top's height, all in the chassis frame.
    `sides` maps the series' sides to the model's (default each to itself; quartercar has a left side only)."""
    from mechdyn.core.parse import load_model
    from mechdyn.dynamics import Dynamics
    from mechdyn.sim import rig

    inputs = Path(inputs) if inputs is not None else data_dir() / INPUTS
    model = load_model(model_name)
    lay = rig.layout(model)
    dyn = Dynamics(model, progress=True)
    for driver, m in rig.motions_for(lay, rig.Input("chrono", path=str(inputs)), T).items():
        dyn.set_motion(driver, m)
    rr = rig.run(dyn, {}, T, dt, scheme, q0=rig.start_state(dyn), progress=True)
    front = {side: p for side in SIDES for p in lay.posts if p.driver in lay.front and (p.driver in lay.left) ==
             (side == "left")}
    sides = sides or {s: s for s in front}
    ride = rig.Ride(dyn, lay, reactions=False)
    col = {n: k for k, n in enumerate(ride.names)}
    act = np.zeros(dyn.nact)
    design = ride(model.q0(), np.zeros(dyn.nv), act)
    out = {k: {} for k in ("travel", "spring", "post", "length")}
    Y = np.array([ride(q, qd, act) for q, qd in zip(rr.trajectory.q, rr.trajectory.qd)])
    X = np.array([dyn.bodies(q, qd) for q, qd in zip(rr.trajectory.q, rr.trajectory.qd)])
    obs = np.array([dyn.observe(q, qd) for q, qd in zip(rr.trajectory.q, rr.trajectory.qd)])
    Rc, pc = X[:, lay.chassis, :9].reshape(-1, 3, 3), X[:, lay.chassis, 9:12]
    for side, theirs in sides.items():
        post = front[theirs]
        k = col[f"travel_{post.driver}"]
        e = _front_spring(model, post)
        out["travel"][side] = Y[:, k] - design[k]
        out["spring"][side] = Y[:, col[f"force_{e}"]]
        out["length"][side] = obs[:, 6 * len(model.pois) + 2 * [t.name for t in model.tsdas].index(e)]
        out["post"][side] = np.einsum("nji,nj->ni", Rc, X[:, post.body, 9:12] - pc)[:, 2]
    return RigSeries(name or f"mechdyn rig {model.name}", rr.trajectory.t, out["travel"], out["spring"], out["post"],
                     out["length"], 0.0)


def _front_spring(model, post) -> str:
    """The coil spring tsda of the corner whose wheel `post` carries: spring_FL for post_FL (hmmwv), spring for
    the quarter car's single post."""
    corner = post.driver.split("_")[-1] if "_" in post.driver else ""
    names = [e.name for e in model.tsdas if e.name == (f"spring_{corner}" if corner else "spring")]
    if len(names) != 1:
        raise ValueError(f"model {model.name}: expected one spring tsda for {post.driver}, found {names}")
    return names[0]


STYLES = ({"color": "C0", "lw": 1.8}, {"color": "C2", "lw": 1.4}, {"color": "C3", "lw": 1.4, "ls": "--"},
          {"color": "0.45", "lw": 1.2, "ls": ":"})


def plot(series: list[RigSeries], path: str | Path, title: str) -> Path:
    """One picture, two rows (wheel travel, spring force) by two columns (front left, front right): every rig's
    series against the data file's time (a series without a side is left out of that column)."""
    import textwrap

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(13, 8), sharex=True)
    for j, side in enumerate(SIDES):
        for r, style in zip(series, STYLES):
            if side in r.travel:
                axes[0, j].plot(r.input_time, 1e3 * r.travel[side], label=r.name, **style)
                axes[1, j].plot(r.input_time, 1e-3 * r.spring[side], label=r.name, **style)
        axes[0, j].set_title(f"front {side}")
        axes[0, j].set_ylabel("wheel travel above design, mm")
        axes[1, j].set_ylabel("coil spring force (compression +), kN")
        axes[1, j].set_xlabel("data file's time, s (Chrono's rig time less 0.5 s)")
        for ax in axes[:, j]:
            ax.grid(alpha=0.3)
    axes[0, 0].legend(loc="upper left", fontsize=8)
    fig.suptitle(textwrap.fill(title, 160), fontsize=9)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def all_rigs(inputs: str | Path | None = None, T: float = 8.0, dt: float = 1e-3) -> list[RigSeries]:
    """The four rigs of `crosscheck chrono-rig` on the data file `inputs` (default Chrono's ST_inputs.dat), T s of
    the file's time each: mechdyn's hmmwv (`mechdyn rig hmmwv --chrono`), mechdyn's quartercar (its one front-left
    corner on the file's left column, and again on its right column for the front right), Chrono's pushrod rig on
    the file with its posts negated (undoing the rig's inverted sign) and Chrono's platform rig on the file as it
    is (its own demo)."""
    import tempfile

    inputs = Path(inputs) if inputs is not None else data_dir() / INPUTS
    with tempfile.TemporaryDirectory() as tmp:
        swapped = transformed_inputs(inputs, Path(tmp) / "swapped.dat", swap=True)
        negated = transformed_inputs(inputs, Path(tmp) / "negated.dat", negate=True)
        hmmwv = mechdyn_rig("hmmwv", inputs, T, dt)
        left = mechdyn_rig("quartercar", inputs, T, dt)
        right = mechdyn_rig("quartercar", swapped, T, dt, sides={"right": "left"})
        quarter = RigSeries("mechdyn rig quartercar (FR: the file's right column)", left.t,
                            *({**getattr(left, f), **getattr(right, f)} for f in ("travel", "spring", "post", "length")))
        pushrod = chrono_rig(negated, T + 0.5, kind="pushrod",
                             name="Chrono::Vehicle pushrod rig, post inputs negated")
    platform = chrono_rig(inputs, T + 0.5, kind="platform", name="Chrono::Vehicle platform rig (its demo: TMeasy)")
    return [hmmwv, quarter, pushrod, platform]
