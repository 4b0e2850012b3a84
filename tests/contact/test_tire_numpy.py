"""The tires' C against the NumPy route written from docs/tires.md alone (crosscheck/tires.py), on random wheel
states: both laws, one and four contact points, a plane and a sine terrain, the bristles carried over a step."""
from __future__ import annotations

import zlib
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from crosscheck.tires import read_tire, tire_wrench, wheel_text
from mechdyn.contact import native
from mechdyn.contact.producers import Contact
from mechdyn.contact.tires import TIRE_INFO
from mechdyn.core.parse import parse

DATA = Path(__file__).resolve().parents[2] / "models" / "data" / "hmmwv" / "tire"
FILES = {"tmeasy": DATA / "HMMWV_TMeasyTire.json", "fiala": DATA / "HMMWV_FialaTire.json"}
TERRAINS = {"plane": "plane 0.05 -0.03 1 0.01", "sine": "sine 0 0.03 4 6"}
N = 1000
BOUND = 1e-12  # of the load scale: the same operations in double precision
SHARED = ("Fz", "slip", "slip_lat", "camber", "Fx", "Fy", "Mx", "My", "Mz", "omega", "vx", "vy", "Px", "Py", "Pz")


def rot(axis: int, a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    i, j = [k for k in range(3) if k != axis]
    R = np.eye(3)
    R[i, i], R[i, j], R[j, i], R[j, j] = c, -s, s, c
    return R


@cache
def states(seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """N random (wheel row, bristles): camber and yaw up to 5°, any spin angle; depths mostly 0 to 0.1 m (some
    out of contact); forward 0 to 25 m/s (a fifth below 3 m/s, where the bristles blend in), slips over ±0.5."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(N):
        R = rot(2, rng.uniform(-0.09, 0.09)) @ rot(0, rng.uniform(-0.09, 0.09)) @ rot(1, rng.uniform(-np.pi, np.pi))
        p = np.array([rng.uniform(-3, 3), rng.uniform(-3, 3), 0.0])
        p[2] = 0.47 - rng.uniform(-0.02, 0.1)  # the terrain is within a few cm of 0 here
        vx = rng.uniform(0, 3) if k % 5 == 0 else rng.uniform(0, 25)
        v = R @ np.array([vx, 0, 0]) + np.array([0, rng.uniform(-3, 3), rng.uniform(-0.5, 0.5)])
        spin = vx * (1 + rng.uniform(-0.5, 0.5)) / 0.45
        w = R @ np.array([rng.uniform(-0.5, 0.5), spin, rng.uniform(-0.5, 0.5)])
        z = rng.uniform(-0.05, 0.05, 2)
        out.append((np.concatenate([R.ravel(), p, w, v]), z))
    return out


def compare(law: str, contact: str, terrain: str, module=None) -> float:
    """The worst difference of the C and the NumPy route over N states: wrench, bristles after 1 ms, the shared
    info; forces scaled by max(1 N, the load), moments by that times 1 + the centre's distance from the origin, the
    rest by max(1, itself) (Fiala's slip ratio near
    standstill reaches 1e3)."""
    model = parse(wheel_text(str(FILES[law]), contact, TERRAINS[terrain]))
    con, tire, axis = Contact(model, module=module), read_tire(str(FILES[law])), model.bodies[1].axis
    worst = 0.0
    for row, z in states(zlib.crc32(f"{law} {contact} {terrain}".encode())):
        X = np.zeros((2, 18))
        X[:, :9] = np.eye(3).ravel()
        X[1] = row
        state = z.reshape(1, 2).copy()
        fext = con.tire_fext(X, 1e-3, state)[1]
        info = dict(zip(TIRE_INFO, con.tire_info(X, z.reshape(1, 2))[0]))
        w, z_np, got = tire_wrench(tire, contact, model.ground, row, axis, z, 1e-3)
        scale = max(1.0, abs(got.get("Fz", 0.0)))
        lever = 1.0 + np.linalg.norm(row[9:12])  # the wrench's moment is about the world origin
        worst = max(worst, np.abs(fext[:3] - w[:3]).max() / (scale * lever), np.abs(fext[3:] - w[3:]).max() / scale,
                    np.abs(state[0] - z_np).max())
        if got["in_contact"]:
            for k in SHARED:
                worst = max(worst, abs(info[k] - got[k]) / (scale if k[0] in "FM" else max(1.0, abs(got[k]))))
    return worst


@pytest.mark.parametrize("terrain", TERRAINS)
@pytest.mark.parametrize("contact", ["single", "four"])
@pytest.mark.parametrize("law", FILES)
def test_c_against_numpy(law, contact, terrain):
    assert compare(law, contact, terrain) < BOUND


def test_a_planted_bug_trips_the_comparison():
    src = native.source()
    old = "double vta = R_eff * fabs(omega) + t->vnum"
    assert src.count(old) == 1
    assert compare("tmeasy", "single", "plane", native.compile(src.replace(old, old + " * 1.01"))) > BOUND


def test_the_derived_hmmwv_numbers():
    t = read_tire(str(FILES["tmeasy"]))
    assert (t["pn"], t["pn_max"], round(t["d1"], 2), round(t["dz"], 2), t["r0"], t["r_bot"]) == \
        (4905.0, 17167.5, 235455.07, 2975.42, 0.4699, 0.2195)
