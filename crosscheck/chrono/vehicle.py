"""Chrono::Vehicle's own HMMWV double wishbone, built from the JSON files the HMMWV models take their numbers from,
swept through its travel (crosscheck/suspension.py compares it with mechdyn's quarter car).

The vehicle is Chrono::Vehicle's `WheeledVehicle` read from hmmwv/vehicle/HMMWV_Vehicle.json (chassis, both
double wishbones, the Pitman-arm steering, wheels; no powertrain, no tires), its chassis fixed. Chrono builds
every body, joint, spring and shock itself (ChDoubleWishbone, from HMMWV_DoubleWishboneFront.json); this module
only moves the wheel: a linear motor along z between the chassis and each spindle holds the spindle's centre at
its height, free in every other direction, and Chrono's position-level assembly (Newton on its constraints)
closes the rest. The steering link is fixed, so the front tierods' inner ends stay where they are, as on
mechdyn's quarter car.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from crosscheck.suspension import Sweep, angles

from . import PychronoMissing, require_pychrono

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "chrono-vehicle"
VEHICLE_JSON = "hmmwv/vehicle/HMMWV_Vehicle.json"
ASSEMBLY_TOL = 1e-14


def data_dir() -> Path:
    """The Chrono vehicle data: $MECHDYN_CHRONO_DATA, else shared/data/chrono-vehicle beside the repository."""
    return Path(os.environ.get("MECHDYN_CHRONO_DATA", DATA))


def vehicle_modules():
    """(pychrono, pychrono.vehicle), or PychronoMissing saying why not; Chrono's vehicle data is not needed."""
    ch = require_pychrono()
    try:
        import pychrono.vehicle as veh
    except ImportError as e:
        raise PychronoMissing(f"pychrono.vehicle is not importable ({e}): the comparison needs pychrono built with "
                              "Chrono::Vehicle (the projectchrono conda channel's pychrono has it)") from None
    return ch, veh


def require_vehicle():
    """(pychrono, pychrono.vehicle) with Chrono's vehicle data under data_dir(), or PychronoMissing saying why not."""
    ch, veh = vehicle_modules()
    if not (data_dir() / VEHICLE_JSON).is_file():
        raise PychronoMissing(f"no {VEHICLE_JSON} under {data_dir()}; set MECHDYN_CHRONO_DATA to Chrono's vehicle "
                              "data directory")
    return ch, veh


def _np(v) -> np.ndarray:
    return np.array([v.x, v.y, v.z])


def chrono_sweep(travel: np.ndarray) -> Sweep:
    """The front-left corner of Chrono::Vehicle's HMMWV at each wheel travel (crosscheck/suspension.py's
    definitions), the other three spindles held at their design heights."""
    ch, veh = require_vehicle()
    veh.SetVehicleDataPath(str(data_dir()) + "/")
    system = ch.ChSystemNSC()
    system.SetGravitationalAcceleration(ch.ChVector3d(0, 0, 0))
    vehicle = veh.WheeledVehicle(system, veh.GetVehicleDataFile(VEHICLE_JSON), False, False)
    vehicle.Initialize(ch.ChCoordsysd(ch.ChVector3d(0, 0, 0), ch.QUNIT))
    vehicle.GetChassis().SetFixed(True)
    # the steering link carries the front tierods' inner ends: fixed, as the quarter car's are to its chassis (held
    # only by the Pitman arm's motor and the idler, Chrono's assembly lets it drift by tenths of a millimetre)
    vehicle.GetSteering(0).GetSteeringLink().SetFixed(True)
    chassis = vehicle.GetChassisBody()
    motors = {}
    for axle in (0, 1):
        for side in (veh.LEFT, veh.RIGHT):
            spindle = vehicle.GetSuspension(axle).GetSpindle(side)
            m = ch.ChLinkMotorLinearPosition()
            m.Initialize(spindle, chassis, ch.ChFramed(spindle.GetPos(), ch.QUNIT))  # acts along the frame's z
            m.SetGuideConstraint(ch.ChLinkMotorLinear.GuideConstraint_FREE)
            fun = ch.ChFunctionConst(0.0)
            m.SetMotionFunction(fun)
            system.AddLink(m)
            motors[axle, side] = fun
    spindle = vehicle.GetSuspension(0).GetSpindle(veh.LEFT)
    links = {lk.GetName(): lk for lk in system.GetLinks()}
    spring = ch.CastToChLinkTSDA(_element(links, "spring", "_L"))
    shock = ch.CastToChLinkTSDA(_element(links, "shock", "_L"))
    z0 = spindle.GetPos().z
    out = {f: np.zeros(len(travel)) for f in ("camber", "toe", "spring", "shock", "x", "y")}
    for k in np.argsort(np.abs(travel)):  # outward from the design pose, each assembly from its neighbour's
        motors[0, veh.LEFT].SetConstant(float(travel[k]))
        system.DoAssembly(ch.POSITION, 100, ASSEMBLY_TOL, 1e-14, 1e-14)
        p = _np(spindle.GetPos())
        if abs(p[2] - (z0 + travel[k])) > 1e-9:
            raise RuntimeError(f"Chrono's assembly at travel {travel[k]:+.4f} m left the spindle at z {p[2]:.9f}")
        s = _np(spindle.GetRot().Rotate(ch.ChVector3d(0, 1, 0)))
        out["camber"][k], out["toe"][k] = angles(s)
        out["x"][k], out["y"][k] = p[0], p[1]
        out["spring"][k] = float(spring.GetLength())
        out["shock"][k] = float(shock.GetLength())
    return Sweep("Chrono::Vehicle", np.asarray(travel, dtype=float), **out)


def _element(links: dict, kind: str, side: str):
    """The front suspension's spring or shock on `side`, by the name Chrono::Vehicle gives it."""
    found = [lk for name, lk in links.items() if kind in name.lower() and name.endswith(side) and "Front" in name]
    if len(found) != 1:
        raise RuntimeError(f"expected one front {kind} ending in {side} among Chrono's links, found "
                           f"{sorted(n for n in links if kind in n.lower())}")
    return found[0]
