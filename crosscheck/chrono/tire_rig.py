"""Project Chrono's own TMeasy and Fiala tires on Chrono::Vehicle's single-wheel test rig, sampled in steady
operation: the wheel's state and the tire's forces at that state, for mechdyn's tire laws to be checked against
(issue 37).

Chrono's side: pychrono.vehicle's `ChWheelTestRig` (Chrono 10 has no `ChTireTestRig`: the rig was renamed and
demo_VEH_TireTestRig.py, which still calls `ChTireTestRig`, `SetTireCollisionType` and `SetTireStepsize`, does not
run) carrying Chrono's HMMWV wheel and its TMeasy or Fiala tire, each built by its JSON constructor from this
repository's copies of Chrono's files (models/data/hmmwv), so Chrono derives the TMeasy parameters from the load
index itself. Rigid terrain, friction 0.8 (the tires' mu_0). The rig imposes everything but the wheel's height:
`SetConstantLongitudinalSlip(slip, speed)` drives the carrier at `speed` and the wheel at ω = (1 + slip)·speed/r0
(both ramped up over 0.25 + 0.5 s after the settling delay), `SetSlipAngleFunction` yaws the wheel by a constant
angle, `SetCamberAngle` tilts it, and `SetNormalLoad` sizes the ballast so that gravity on the sprung bodies is the
load; the wheel drops onto the terrain and its height is then free. The sweep keeps the speed at 5 m/s or more:
below 3 m/s TMeasy blends in its stateful Dahl friction model, above it the forces are functions of the state.

What this Chrono does that matters to a reimplementation (measured with this module):

- the rig builds its spindle with the wheel on Chrono's LEFT side: the spin axis is the spindle's +y, which points
  to the world's +y (the rig's carrier runs along +x). SetCamberAngle(γ) turns the spindle about x by −γ, its axis
  tipping down, and the tire reports camber −γ (the rig's own GetCamberAngle, +γ); SetSlipAngleFunction(α) yaws
  the wheel so that the tire reports slip angle +α (its lateral velocity is −v·sin α).
- the rig's ballast is SetNormalLoad/g less the slip body and "wheel" masses it reads at construction, where
  ChWheel::GetMass() is still 0: the wheel's 18.8 kg is on the spindle but not subtracted, so the tire carries
  the load plus 184 N. `weight` holds what the rig's free bodies weigh, the tire's steady normal load.
- the rig's constructor forces the tire to single-point contact; the four-point contact is set on the tire after
  the rig is built (pychrono 10's rig has no SetTireCollisionType).
- the terrain's friction is a float: 0.8f = 0.800000011920929, clamped to [0.1, 1], so TMeasy's muscale and
  Fiala's mu/mu_0 are 1 + 1.5e-8, not 1 (`mu` holds the value the tire read).
- single-point contact builds its frame from (fwd, lat, n) with fwd = dn × n unnormalised ("both dn and n are
  normalized; therefore, fwd will be too": not under camber, where |fwd| = cos γ) and converts that matrix to
  a quaternion, so under camber the contact frame is not a rotation (its quaternion's norm is not 1); forces are
  reported in, and rotated to the world by, that linear map. `frame_R` is the map as Chrono applies it
  (ChQuaternion::Rotate of the unit vectors) and `frame_q` the quaternion; the four-point frame is normalised.
  The single-point depth is shortened too: it takes the disc's point as C − r·n before normalising n
  (|n| = cos γ), so the depth is r·cos γ less the centre's distance from the terrain plane, 0.64 mm less than the
  disc's at γ = 3 deg.
- TMeasy's GetRadius() is its effective rolling radius R_eff = r0 − depth/3, updated in Synchronize *after* the
  kinematics, so its reported longitudinal slip uses the previous step's R_eff (`radius_slip`), and the rig,
  which reads GetRadius() at initialisation, imposes its slip on r0: at an imposed slip of 0.1 TMeasy reports
  ~0.073. Fiala's GetRadius() is r0. The forces themselves use the current step's state.
- the slips the force laws use are not the slip ChTire reports (−(vx − ω·r)/|vx|, r = GetRadius()): Fiala's
  kappa rolls on r0 − depth, TMeasy's sx on R_eff and divides by R_eff·|ω|. At the rig's "zero slip" (ω = v/r0)
  Fiala's kappa is −depth/r0 ≈ −0.08, so it brakes at close to its friction limit; its Fx changes sign near an
  imposed slip of +0.085. Fiala has no relaxation in this Chrono (the JSON's relaxation lengths are not read).
- the rig's vertical mode (the ballast on the tire's stiffness) is lightly damped, TMeasy's most: the ramp
  excites it and it decays over seconds (TMeasy: e-fold ~0.6 s), so each configuration runs until its contact
  forces hold still (`SETTLE_TOL` of the load over `WINDOW`): 2 to 4 s (Fiala), 4 to 10 s (TMeasy) of rig
  time at `STEP` = 1 ms; the full sweep takes ~75 s (TMeasy) and ~25 s (Fiala).

Chrono computes a tire's forces in ChWheelTestRig::Advance before stepping: Synchronize(t) reads the wheel's state
at t and Advance(h) evaluates the law, then the system steps to t + h with those forces. So a sample reads the
spindle's state before `rig.Advance` and the tire's outputs after it; both belong to time t. The tire's world
report (ReportTireForce) takes its moment about the wheel's position when it is called (t + h), so it is moved
back to the wheel centre at t.
"""
from __future__ import annotations

import hashlib
import io
import json
from collections import deque
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Callable

import numpy as np

from .vehicle import vehicle_modules

MODEL_DATA = Path(__file__).resolve().parents[2] / "models" / "data"
TIRE_JSON = {"tmeasy": "hmmwv/tire/HMMWV_TMeasyTire.json", "fiala": "hmmwv/tire/HMMWV_FialaTire.json"}
WHEEL_JSON = "hmmwv/wheel/HMMWV_Wheel.json"

STEP = 1e-3  # s: the rig's default step, and the tire's (TMeasy's Dahl states integrate with it)
GRAVITY = 9.81
FRICTION = 0.8  # the tires' mu_0
NOMINAL_LOAD = 8000.0  # N
SPEED = 5.0  # m/s: above TMeasy's low-speed blend (1 to 3 m/s)
DROP_SPEED = 0.5  # m/s: the rig lowers the wheel 0.1 m onto the terrain at this speed
INPUT_DELAY = 0.25  # s after touchdown before the rig's motion starts
RAMP = 0.75  # s: ChWheelTestRig's constant-slip functions wait 0.25 s past the delay, then ramp for 0.5 s
WINDOW = 0.5  # s: longer than the rig's vertical period (~0.35 s), so a settled window holds a whole swing
SETTLE_TOL = 2e-4  # of the load: the largest swing of Fx, Fy, Fz over the window of a settled run
MAX_TIME = 20.0  # s of rig time before a configuration is declared unsettled
SAMPLES = 4
SAMPLE_GAP = 37  # steps between samples: not a divisor of the vertical period's steps
SPIN_AXIS = (0.0, 1.0, 0.0)  # the wheel's spin axis in the spindle frame (the rig mounts it LEFT: no flip)
COMPONENTS = ("Fx", "Fy", "Fz", "Mx", "My", "Mz")


@dataclass(frozen=True)
class Case:
    """One rig configuration: what the rig imposes (angles in rad, load in N, speed in m/s)."""

    slip: float = 0.0  # SetConstantLongitudinalSlip: ω = (1 + slip)·speed/r0
    alpha: float = 0.0  # SetSlipAngleFunction: the tire reports this slip angle
    camber: float = 0.0  # SetCamberAngle: the tire reports −camber
    load: float = NOMINAL_LOAD  # SetNormalLoad
    speed: float = SPEED
    four_point: bool = False  # the tire's FOUR_POINTS contact instead of the rig's SINGLE_POINT


def full_sweep() -> list[Case]:
    """Pure slip and pure slip angle at 0.5, 1 and 1.5 x the nominal load, combined slip, camber, a faster run and a
    few four-point contacts at the nominal load."""
    deg = np.radians
    loads = [f * NOMINAL_LOAD for f in (0.5, 1.0, 1.5)]
    slips = [-0.5, -0.3, -0.2, -0.1, -0.05, -0.02, 0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5]
    alphas = [-15, -10, -6, -3, -1, 1, 3, 6, 10, 15]
    cases = [Case(slip=s, load=L) for L in loads for s in slips]
    cases += [Case(alpha=deg(a), load=L) for L in loads for a in alphas]
    cases += [Case(slip=s, alpha=deg(a)) for s in (-0.1, 0.1) for a in (-5, 5)]
    cases += [Case(slip=s, alpha=deg(a), camber=deg(c)) for c in (-3, 3) for s, a in ((0.0, 0), (0.1, 5), (0.0, -5))]
    cases += [Case(slip=0.1, speed=10.0), Case(alpha=deg(5), speed=10.0)]
    cases += [Case(slip=s, alpha=deg(a), camber=deg(c), four_point=True)
              for s, a, c in ((0.1, 0, 0), (0.0, 5, 0), (-0.1, -5, 3))]
    return cases


def quick_sweep() -> list[Case]:
    """A handful of the full sweep's configurations, for a test: driving, braking, both slip angles, camber with a
    slip angle (single and four-point) and a light load."""
    deg = np.radians
    return [Case(slip=0.1), Case(slip=-0.1), Case(alpha=deg(5)), Case(alpha=deg(-5), load=0.5 * NOMINAL_LOAD),
            Case(slip=0.05, alpha=deg(3), camber=deg(3)), Case(slip=0.05, alpha=deg(3), camber=deg(3), four_point=True)]


@dataclass(frozen=True)
class RigSamples:
    """Samples of one tire on the rig, n of them, each at one step's start t (all world frame, SI units, rad).

    rows     (n, 18) the spindle as mechdyn's body rows: R (body to world, row-major), p, ω, v (of p, the wheel
             centre: the HMMWV wheel has no offset)
    axis     (n, 3) the spin axis in the spindle frame
    F_local, M_local (n, 3) ReportTireForceLocal: the force and moment in the contact frame, on the tire at the
             frame's origin
    frame_R  (n, 3, 3) the contact frame's map to the world as Chrono applies it (columns: fwd, lat, normal);
             frame_q (n, 4) its quaternion (e0, e1, e2, e3), not always of norm 1; frame_p (n, 3) its origin
    F_world, M_world (n, 3) ReportTireForce, the moment about the wheel centre p
    slip, alpha, camber (n,) the tire's GetLongitudinalSlip, GetSlipAngle, GetCamberAngle
    deflection (n,) GetDeflection (the disc's penetration); radius (n,) GetRadius after the step's Synchronize;
             radius_slip (n,) GetRadius before it, the radius the reported slip was computed with
    terrain_z, mu (n,) the terrain's height and friction at the contact point (mu as the float Chrono holds)
    weight   (n,) the weight of the rig's bodies the tire carries (N): the steady normal load
    t        (n,) the rig's time; case_* (n,) the configuration's Case fields
    """

    tire: str
    rows: np.ndarray
    axis: np.ndarray
    F_local: np.ndarray
    M_local: np.ndarray
    frame_R: np.ndarray
    frame_q: np.ndarray
    frame_p: np.ndarray
    F_world: np.ndarray
    M_world: np.ndarray
    slip: np.ndarray
    alpha: np.ndarray
    camber: np.ndarray
    deflection: np.ndarray
    radius: np.ndarray
    radius_slip: np.ndarray
    terrain_z: np.ndarray
    mu: np.ndarray
    weight: np.ndarray
    t: np.ndarray
    case_slip: np.ndarray
    case_alpha: np.ndarray
    case_camber: np.ndarray
    case_load: np.ndarray
    case_speed: np.ndarray
    case_four_point: np.ndarray

    def __len__(self) -> int:
        return len(self.rows)

    def case(self, i: int) -> Case:
        return Case(*(getattr(self, f"case_{f.name}")[i].item() for f in fields(Case)))

    def save(self, path: Path) -> None:
        """An .npz at path, written atomically (a reader sees the old file or the whole new one)."""
        from mechdyn.cliutil import atomic_write

        buf = io.BytesIO()
        np.savez(buf, **{f.name: np.asarray(getattr(self, f.name)) for f in fields(self)})
        atomic_write(Path(path), buf.getvalue())

    @classmethod
    def load(cls, path: Path) -> RigSamples:
        with np.load(path) as z:
            return cls(**{f.name: (str(z[f.name]) if f.name == "tire" else z[f.name]) for f in fields(cls)})


def _vec(v) -> list[float]:
    return [v.x, v.y, v.z]


def _map(ch, q) -> np.ndarray:
    """The 3x3 matrix of ChQuaternion::Rotate for q: Chrono's own map, also when q is not of norm 1."""
    return np.array([_vec(q.Rotate(ch.ChVector3d(*e))) for e in np.eye(3)]).T


def _build(tire_name: str, case: Case):
    """The rig for `case`, initialised in TEST mode: (pychrono, system, rig, tire, terrain, wheel)."""
    ch, veh = vehicle_modules()
    cls = {"tmeasy": veh.TMeasyTire, "fiala": veh.FialaTire}[tire_name]
    tire = cls(str(MODEL_DATA / TIRE_JSON[tire_name]))
    wheel = veh.Wheel(str(MODEL_DATA / WHEEL_JSON))
    system = ch.ChSystemNSC()
    system.SetSolverType(ch.ChSolver.Type_SPARSE_QR)  # no contacts (a force-element tire): a direct solve of the joints
    rig = veh.ChWheelTestRig(wheel, tire, system)
    if case.four_point:
        tire.SetCollisionType(veh.ChTire.CollisionType_FOUR_POINTS)  # after the rig, which forces SINGLE_POINT
    rig.SetGravitationalAcceleration(GRAVITY)
    rig.SetNormalLoad(case.load)
    rig.SetCamberAngle(case.camber)
    rig.SetStepsize(STEP)
    rig.SetVisualizationType(ch.VisualizationType_NONE)
    patch = veh.TerrainPatchSize()
    patch.length = case.speed * MAX_TIME + 10.0  # the rig centres nothing: the wheel must not run off the patch
    patch.width = 2.0
    rig.SetTerrainRigid(patch, FRICTION, 0.0, 2e7)
    rig.SetConstantLongitudinalSlip(case.slip, case.speed)
    rig.SetSlipAngleFunction(ch.ChFunctionConst(case.alpha))
    rig.SetTimeDelay(INPUT_DELAY)
    rig.Initialize(veh.ChWheelTestRig.Mode_TEST, DROP_SPEED)
    if _vec(wheel.GetPos()) != _vec(wheel.GetSpindle().GetPos()):  # rows are the spindle's (rig.GetSpindle() is None)
        raise RuntimeError("the wheel has an offset: its centre is not the spindle's origin")
    return ch, system, rig, tire, rig.GetTerrain(), wheel


def _weight(system) -> float:
    """What the bodies the tire carries weigh: every moving body but the carrier, which runs on the ground."""
    return GRAVITY * sum(b.GetMass() for b in system.GetBodies() if not b.IsFixed() and b.GetName() != "rig_carrier")


def _local(ch, tire, terrain):
    frame = ch.ChCoordsysd()
    f = tire.ReportTireForceLocal(terrain, frame)
    return f, frame


def _sample(ch, system, rig, tire, terrain, wheel) -> dict[str, np.ndarray]:
    """One step of the rig, its state at the step's start and the tire's outputs computed from it."""
    t = system.GetChTime()
    state = wheel.GetState()  # what the tire's Synchronize reads: the spindle's frame moved by the wheel's offset (0)
    p = np.array(_vec(state.pos))
    row = np.concatenate([_map(ch, state.rot).ravel(), p, _vec(state.ang_vel), _vec(state.lin_vel)])
    radius_slip = tire.GetRadius()
    rig.Advance(STEP)  # Synchronize(t) and the tire's Advance from the state above, then the step to t + h
    f, frame = _local(ch, tire, terrain)
    if f.force.z <= 0:
        raise RuntimeError(f"the {tire.GetName()} is off the terrain at t = {t:.3f} s")
    world = tire.ReportTireForce(terrain)
    F_world = np.array(_vec(world.force))
    M_world = np.array(_vec(world.moment)) + np.cross(np.array(_vec(world.point)) - p, F_world)
    q = frame.rot
    return dict(rows=row, axis=np.array(SPIN_AXIS), F_local=np.array(_vec(f.force)), M_local=np.array(_vec(f.moment)),
                frame_R=_map(ch, q), frame_q=np.array([q.e0, q.e1, q.e2, q.e3]), frame_p=np.array(_vec(frame.pos)),
                F_world=F_world, M_world=M_world, slip=tire.GetLongitudinalSlip(), alpha=tire.GetSlipAngle(),
                camber=tire.GetCamberAngle(), deflection=tire.GetDeflection(), radius=tire.GetRadius(),
                radius_slip=radius_slip, terrain_z=terrain.GetHeight(frame.pos),
                mu=terrain.GetCoefficientFriction(frame.pos), weight=_weight(system), t=t)


def run_case(tire_name: str, case: Case, samples: int = SAMPLES) -> list[dict[str, np.ndarray]]:
    """`samples` samples of `tire_name` ("tmeasy" or "fiala") on the rig in configuration `case`, once settled."""
    ch, system, rig, tire, terrain, wheel = _build(tire_name, case)
    try:
        return _settle_and_sample(ch, system, rig, tire, terrain, wheel, tire_name, case, samples)
    finally:
        del rig  # its destructor removes its bodies from the system it holds by reference: before the system goes


def _settle_and_sample(ch, system, rig, tire, terrain, wheel, tire_name: str, case: Case,
                       samples: int) -> list[dict[str, np.ndarray]]:
    window: deque[np.ndarray] = deque(maxlen=round(WINDOW / STEP))
    swing = np.inf
    while True:
        rig.Advance(STEP)
        if not rig.OutputEnabled():  # still dropping, or before the delay
            continue
        window.append(np.array(_vec(_local(ch, tire, terrain)[0].force)))
        if system.GetChTime() > rig.GetTimeDelay() + RAMP + WINDOW:
            swing = np.ptp(np.array(window), axis=0).max()
            if swing < SETTLE_TOL * case.load:
                break
        if system.GetChTime() > MAX_TIME:
            raise RuntimeError(f"{tire_name} {case} has not settled in {MAX_TIME} s: its forces still swing by "
                               f"{swing:.3g} N over {WINDOW} s")
    out = []
    for _ in range(samples):
        for _ in range(SAMPLE_GAP):
            rig.Advance(STEP)
        out.append(_sample(ch, system, rig, tire, terrain, wheel))
    return out


def run_sweep(tire_name: str, cases: list[Case], samples: int = SAMPLES) -> RigSamples:
    """The rig's samples of `tire_name` over `cases`, `samples` per case."""
    recs, case_of = [], []
    for case in cases:
        got = run_case(tire_name, case, samples)
        recs += got
        case_of += [case] * len(got)
    cols = {k: np.array([r[k] for r in recs], dtype=float) for k in recs[0]}
    per_case = {f"case_{f.name}": np.array([getattr(c, f.name) for c in case_of]) for f in fields(Case)}
    return RigSamples(tire=tire_name, **cols, **per_case)


def cached_sweep(tire_name: str, cases: list[Case], samples: int = SAMPLES) -> RigSamples:
    """run_sweep, kept as an .npz under $MECHDYN_CACHE (else ~/.cache/mechdyn)/tire_rig, keyed by the tire's and
    wheel's files, the cases and this module's settings."""
    from mechdyn.codegen.cache import cache_dir

    key = json.dumps([tire_name, [asdict(c) for c in cases], samples, STEP, GRAVITY, FRICTION, DROP_SPEED,
                      INPUT_DELAY, WINDOW, SETTLE_TOL, SAMPLE_GAP, (MODEL_DATA / TIRE_JSON[tire_name]).read_text(),
                      (MODEL_DATA / WHEEL_JSON).read_text(), Path(__file__).read_text()])
    path = cache_dir() / "tire_rig" / f"{tire_name}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.npz"
    if path.is_file():
        return RigSamples.load(path)
    got = run_sweep(tire_name, cases, samples)
    path.parent.mkdir(parents=True, exist_ok=True)
    got.save(path)
    return got


Law = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Agreement:
    """A law against the rig's samples: per component (COMPONENTS), the worst scaled error and its sample."""

    tire: str
    worst: dict[str, float]
    at: dict[str, int]

    def __str__(self) -> str:
        return f"{self.tire}: " + ", ".join(f"{c} {self.worst[c]:.2e} (sample {self.at[c]})" for c in COMPONENTS)


def compare(samples: RigSamples, law: Law) -> Agreement:
    """law(rows, axis) -> (F_local, M_local), each (n, 3), in Chrono's contact frame, against Chrono's. A force
    error is scaled by max(|F|, Fz), a moment's by max(|M|, Fz·lever), the lever the wheel centre's distance from
    the contact point: a small component is held to the load, not to itself."""
    F, M = (np.asarray(a, dtype=float) for a in law(samples.rows, samples.axis))
    Fz = samples.F_local[:, 2:3]
    lever = np.linalg.norm(samples.rows[:, 9:12] - samples.frame_p, axis=1)[:, None]
    eF = np.abs(F - samples.F_local) / np.maximum(np.abs(samples.F_local), Fz)
    eM = np.abs(M - samples.M_local) / np.maximum(np.abs(samples.M_local), Fz * lever)
    e = np.hstack([eF, eM])
    worst = np.argmax(e, axis=0)
    return Agreement(samples.tire, {c: float(e[i, k]) for k, (c, i) in enumerate(zip(COMPONENTS, worst))},
                     {c: int(i) for c, i in zip(COMPONENTS, worst)})


def _groups(samples: RigSamples, pure: np.ndarray) -> dict[float, list[np.ndarray]]:
    """Per load, the sample indices of each case among those selected by `pure`, the cases in sweep order."""
    out: dict[float, list[np.ndarray]] = {}
    keys = np.stack([getattr(samples, f"case_{f.name}").astype(float) for f in fields(Case)], axis=1)
    for load in np.unique(samples.case_load[pure]):
        sel = pure & (samples.case_load == load)
        _, first = np.unique(keys[sel], axis=0, return_index=True)
        out[float(load)] = [np.flatnonzero(sel & np.all(keys == keys[sel][j], axis=1)) for j in sorted(first)]
    return out


def plot(samples: RigSamples, path: str | Path, law: Law | None = None) -> Path:
    """Fx against the tire's slip (pure slip), Fy and Mz against its slip angle (pure slip angle), a line per load
    for Chrono (each case's mean over its samples) and, if given, the law's markers at the same states."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plain = (samples.case_camber == 0) & ~samples.case_four_point.astype(bool) & (samples.case_speed == SPEED)
    ours = law(samples.rows, samples.axis) if law is not None else None
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5), constrained_layout=True)
    slip, turn = plain & (samples.case_alpha == 0), plain & (samples.case_slip == 0)
    panels = [(axes[0], slip, samples.slip, 1.0, (0, 0), "the tire's GetLongitudinalSlip", "Fx (kN)"),
              (axes[1], turn, samples.alpha, np.degrees(1), (0, 1), "the tire's slip angle (deg)", "Fy (kN)"),
              (axes[2], turn, samples.alpha, np.degrees(1), (1, 2), "the tire's slip angle (deg)", "Mz (kN m)")]
    for ax, sel, x, xs, (which, k), xlabel, ylabel in panels:
        for j, (load, groups) in enumerate(_groups(samples, sel).items()):
            xm = np.array([xs * x[g].mean() for g in groups])
            order = np.argsort(xm)
            y = (samples.F_local, samples.M_local)[which][:, k]
            ax.plot(xm[order], 1e-3 * np.array([y[g].mean() for g in groups])[order], color=f"C{j}",
                    label=f"Chrono, {load / 1e3:g} kN")
            if ours is not None:
                yl = np.asarray(ours[which])[:, k]
                ax.plot(xm[order], 1e-3 * np.array([yl[g].mean() for g in groups])[order], "o", color=f"C{j}",
                        ms=4, mfc="none", label=f"law, {load / 1e3:g} kN")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"Chrono's {samples.tire} on ChWheelTestRig at {SPEED:g} m/s, rigid terrain mu {FRICTION:g}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def mechdyn_law(samples: RigSamples, module=None) -> Law:
    """mechdyn's own tire law (mechdyn.contact, its C; `module` a planted copy) as `compare` takes it: each sample's
    spindle row set on a one-wheel model of the same tire, terrain and friction, and the law's local force and
    moment read off its info (TIRE_INFO)."""
    from crosscheck.tires import wheel_text
    from mechdyn.contact.producers import Contact
    from mechdyn.contact.tires import TIRE_INFO
    from mechdyn.core.parse import parse

    z0, mu = float(np.ravel(samples.terrain_z)[0]), float(np.ravel(samples.mu)[0])
    path = str(MODEL_DATA / TIRE_JSON[samples.tire])
    cons = {c: Contact(parse(wheel_text(path, c, f"plane 0 0 1 {z0!r}", mu)), module=module)
            for c in ("single", "four")}
    cols = [TIRE_INFO.index(c) for c in ("Fx", "Fy", "Fz", "Mx", "My", "Mz")]

    def law(rows: np.ndarray, axis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        out = np.empty((len(rows), 6))
        for i, (row, four) in enumerate(zip(rows, samples.case_four_point)):
            X = np.zeros((2, 18))
            X[:, :9] = np.eye(3).ravel()
            X[1] = row
            out[i] = cons["four" if four else "single"].tire_info(X)[0, cols]
        return out[:, :3], out[:, 3:]

    return law


PLAIN_BOUND = 1e-9  # the same equations in double precision: round-off of the sums and the trigonometry


def law_errors(samples: RigSamples, module=None) -> np.ndarray:
    """(n, 6) per sample the error of mechdyn's Fx, Fy, Fz, Mx, My, Mz at the rig's states, scaled as `compare`
    scales it; Fiala's My against Chrono's times r0 (mechdyn's rolling resistance is a moment: docs/tires.md)."""
    F, M = mechdyn_law(samples, module)(samples.rows, samples.axis)
    M_chrono = samples.M_local.copy()
    if samples.tire == "fiala":
        M_chrono[:, 1] *= _unloaded_radius(samples.tire)
    Fz = samples.F_local[:, 2:3]
    lever = np.linalg.norm(samples.rows[:, 9:12] - samples.frame_p, axis=1)[:, None]
    eF = np.abs(F - samples.F_local) / np.maximum(np.abs(samples.F_local), Fz)
    eM = np.abs(M - M_chrono) / np.maximum(np.abs(M_chrono), Fz * lever)
    return np.hstack([eF, eM])


def _unloaded_radius(tire: str) -> float:
    """The tire's unloaded radius, read by the second route (crosscheck/tires.py), not the product's reader."""
    from crosscheck.tires import read_tire

    return read_tire(str(MODEL_DATA / TIRE_JSON[tire]))["r0"]


def camber_single_point(samples: RigSamples) -> np.ndarray:
    """The samples whose Chrono contact frame is not a rotation: single-point contact under camber."""
    return (samples.case_camber != 0) & ~samples.case_four_point.astype(bool)
