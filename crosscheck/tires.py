"""The tires' second route (docs/tires.md): the TMeasy and Fiala laws in NumPy, written from the spec alone, and a
one-wheel model for the checks.

    t = read_tire("models/data/hmmwv/tire/HMMWV_TMeasyTire.json")
    wrench, bristles, info = tire_wrench(t, "single", model.ground, X[wheel], axis, state, dt)
    text = wheel_text("models/data/hmmwv/tire/HMMWV_TMeasyTire.json", "four", "sine 0 0.02 3 5")
"""
from __future__ import annotations

import json
import math
import re

import numpy as np

from crosscheck.contact import terrain_height


def wheel_text(data: str, contact: str = "single", terrain: str = "plane 0 0 1 0", mu: float = 0.8) -> str:
    """A one-wheel `.mech` model: a free hub 0.45 m up, the wheel spinning about its y on it, the tire from
    `data` with `contact` on the ground's `terrain` with the road's friction `mu`."""
    return f"""gravity 0 0 -9.81
body hub
  parent base
  joint floating
  xtree 0 0 0.45
  mass 500
  inertia 10 10 10 0 0 0
end
body wheel
  parent hub
  joint revolute y
  mass 56.4
  inertia 4.3 7.3 4.3 0 0 0
  fext 1
end
ground
  terrain {terrain}
  kn 1e6
  mu {mu!r}
end
tire t
  wheel wheel
  data {data}
  contact {contact}
end
"""


# ---- the laws in NumPy, from docs/tires.md alone (the product's C and its reader are not read here)

# Chrono's load per tire, kg, of load index 0.. (docs/tires.md: 280 indices, 108 is 1000 kg). The product's reader
# carries the same table: kept apart on purpose, so the two routes share nothing (Chrono's rig ties the product's
# to Chrono's own).
_LI = np.array([
    45, 46.5, 47.5, 48.7, 50, 51.5, 53, 54.5, 56, 58, 60, 61.5, 63, 65, 67, 69, 71, 73, 75, 77.5, 80, 82.5, 85,
    87.5, 90, 92.5, 95, 97.5, 100, 103, 106, 109, 112, 115, 118, 121, 125, 128, 132, 136, 140, 145, 150, 155, 160,
    165, 170, 175, 180, 185, 190, 195, 200, 206, 212, 218, 224, 230, 236, 243, 250, 257, 265, 272, 280, 290, 300,
    307, 315, 325, 335, 345, 355, 365, 375, 387, 400, 412, 425, 437, 450, 462, 475, 487, 500, 515, 530, 545, 560,
    580, 600, 615, 630, 650, 670, 690, 710, 730, 750, 775, 800, 825, 850, 875, 900, 925, 950, 975, 1000, 1030, 1060,
    1090, 1120, 1150, 1180, 1215, 1250, 1285, 1320, 1360, 1400, 1450, 1500, 1550, 1600, 1650, 1700, 1750, 1800,
    1850, 1900, 1950, 2000, 2060, 2120, 2180, 2240, 2300, 2360, 2430, 2500, 2575, 2650, 2725, 2800, 2900, 3000,
    3075, 3150, 3250, 3350, 3450, 3550, 3650, 3750, 3875, 4000, 4125, 4250, 4375, 4500, 4625, 4750, 4875, 5000,
    5150, 5300, 5450, 5600, 5850, 6000, 6150, 6300, 6500, 6700, 6900, 7100, 7300, 7500, 7750, 8000, 8250, 8500,
    8750, 9000, 9250, 9500, 9750, 10000, 10300, 10600, 10900, 11200, 11500, 11800, 12150, 12500, 12850, 13200,
    13600, 14000, 14500, 15000, 15550, 16000, 16500, 17000, 17500, 18000, 18500, 19000, 19500, 20000, 20600, 21200,
    21800, 22400, 23000, 23600, 24300, 25000, 25750, 26500, 27250, 28000, 29000, 30000, 30750, 31500, 32500, 33500,
    34500, 35500, 36500, 37500, 38750, 40000, 41250, 42500, 43750, 45000, 46250, 47500, 48750, 50000, 51500, 53000,
    54500, 56000, 58000, 60000, 61500, 63000, 65000, 67000, 69000, 71000, 73000, 75000, 77500, 80000, 82500, 85000,
    87500, 90000, 92500, 95000, 97500, 100000, 103000, 106000, 109000, 112000, 115000, 118000, 121000, 125000,
    128500, 132000, 136000])
# the thirteen pairs in the spec's table order, and which are forces (in units of pn)
_PAIRS = ("dfx0", "sxm", "fxm", "sxs", "fxs", "dfy0", "sym", "fym", "sys", "fys", "nL0", "sq0", "sqe")
_KEYS = {"dfx0": ("Longitudinal", "Initial Slopes dFx/dsx [N]"), "sxm": ("Longitudinal", "Slip sx at Maximum Fx"),
         "fxm": ("Longitudinal", "Maximum Fx Load [N]"), "sxs": ("Longitudinal", "Slip sx where sliding begins"),
         "fxs": ("Longitudinal", "Sliding Fx Load [N]"), "dfy0": ("Lateral", "Initial Slopes dFy/dsy [N]"),
         "sym": ("Lateral", "Slip sy at Maximum Fy"), "fym": ("Lateral", "Maximum Fy Load [N]"),
         "sys": ("Lateral", "Slip sy where sliding begins"), "fys": ("Lateral", "Sliding Fy Load [N]"),
         "nL0": ("Aligning", "Normalized Trail at Zero Slip sy"),
         "sq0": ("Aligning", "Slip sy where Trail Changes Sign"), "sqe": ("Aligning", "Slip sy where Trail Tends to Zero")}
_GUESS = {"Truck": ((17.7764, 14.5301 * 2), (0.10811, 0.12389), (0.89965, 0.77751 * 2), (0.66667, 0.66667),
                    (0.46183, 0.42349 * 2), (7.4013, 6.8505 * 2), (0.33167, 0.33216), (0.75876, 0.72628 * 2),
                    (1.0296, 1.0296), (0.68276, 0.65319 * 2), (0.178, 0.19), (0.36484, 0.36538), (1.0296, 1.0296)),
          "Passenger": ((18.3741, 19.4669 * 2), (0.13913, 0.13913), (1.1292, 1.0896 * 2), (0.66667, 0.66667),
                        (0.80149, 0.76917 * 2), (15.9826, 12.8509 * 2), (0.14852, 0.18504), (1.0009, 0.91367 * 2),
                        (0.96524, 1.0714), (0.8336, 0.77336 * 2), (0.178, 0.19), (0.16337, 0.20355),
                        (0.96524, 1.0714))}
_FORCES = {"dfx0", "fxm", "fxs", "dfy0", "fym", "fys"}


def _json(path: str) -> dict:
    with open(path) as f:
        text = f.read()
    return json.loads(re.sub(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/',
                             lambda m: m.group(0) if m.group(0).startswith('"') else "", text, flags=re.S))


def read_tire(path: str) -> dict:
    """A tire file's law as docs/tires.md derives it: 'law' 'tmeasy' or 'fiala' and its numbers by name."""
    d = _json(path)
    if d["Template"] == "FialaTire":
        f = d["Fiala Parameters"]
        table = np.array(f["Vertical Curve Data"], float) if "Vertical Curve Data" in f else None
        return dict(law="fiala", r0=f["Unloaded Radius"], w=f["Width"], mu0=d.get("Coefficient of Friction", 0.8),
                    kz=f["Vertical Stiffness"], table=table, dz=f["Vertical Damping"], rr=f["Rolling Resistance"],
                    cslip=f["CSLIP"], calpha=f["CALPHA"], umin=f["UMIN"], umax=f["UMAX"])
    des = d["Design"]
    r0, rim, mass = des["Unloaded Radius [m]"], des["Rim Radius [m]"], des["Mass [kg]"]
    t = dict(law="tmeasy", r0=r0, w=des["Width [m]"], mu0=d.get("Coefficient of Friction", 0.8),
             rr=d.get("Rolling Resistance Coefficient", 0.015), d2=0.0, vnum=0.01, sigma0=1e5, sigma1=5e3)
    if "Parameters" in d:
        p = d["Parameters"]
        v = p["Vertical"]
        t["pn"] = v["Nominal Vertical Force [N]"]
        t["pn_max"] = v.get("Maximum Vertical Force [N]", 3.5 * t["pn"])
        if "Vertical Tire Stiffness [N/m]" in v:
            t["d1"] = v["Vertical Tire Stiffness [N/m]"]
        else:
            c = np.array(v["Tire Spring Curve Data"], float)
            t["d1"], t["d2"] = np.linalg.lstsq(np.stack([c[:, 0], c[:, 0] ** 2], 1), c[:, 1], rcond=None)[0]
        t["dz"] = v["Tire Vertical Damping [Ns/m]"]
        t["r_bot"], t["k_bot"] = v.get("Tire Bottoming Radius [m]", 0.0), v.get("Tire Bottoming Stiffness [N/m]", 0.0)
        for name in _PAIRS:
            t[name] = tuple(p[_KEYS[name][0]][_KEYS[name][1]])
    else:
        p_li, p_use = d.get("Inflation Pressure Design [Pa]", 0.0), d.get("Inflation Pressure Use [Pa]", 0.0)
        if not (p_li > 0 and p_use > 0):
            p_li = p_use = 1.0
        load = _LI[min(d["Load Index"], len(_LI) - 1)] * 9.81
        t["pn"] = 0.5 * load * (p_use / p_li) ** 0.8
        t["pn_max"] = 3.5 * t["pn"]
        t["d1"] = load / (0.16 * (r0 - rim))
        t["dz"] = 2 * 0.5 * math.sqrt(t["d1"] * mass)
        t["r_bot"] = t["k_bot"] = 0.0
        for name, (a, b) in zip(_PAIRS, _GUESS[d["Vehicle Type"]]):
            t[name] = (a * t["pn"], b * t["pn"]) if name in _FORCES else (a, b)
    t["r_bot"] = t["r_bot"] or rim + 0.01
    t["k_bot"] = t["k_bot"] or 5 * t["d1"]
    return t


def _ground_at(ground, x: float, y: float) -> tuple[np.ndarray, np.ndarray]:
    h, hx, hy = (float(a) for a in terrain_height(ground, np.array(x), np.array(y)))
    m = np.array([-hx, -hy, 1.0])
    return np.array([x, y, h]), m / np.linalg.norm(m)


def _unit(a: np.ndarray) -> np.ndarray:
    return a / np.linalg.norm(a)


def contact(ground, points: str, C: np.ndarray, dn: np.ndarray, r: float, w: float):
    """docs/tires.md "The wheel, the terrain and the contact": (frame columns fwd, lat, n; patch point; depth) or
    None."""
    d_f = _unit(np.cross(dn, [0.0, 0.0, 1.0]))
    B = C + r * np.cross(dn, d_f)
    Pt, n = _ground_at(ground, B[0], B[1])
    if C[2] <= Pt[2]:
        return None
    n1 = n - (n @ dn) * dn
    nh = _unit(n1)
    if points == "single":
        depth = r * np.linalg.norm(n1) - abs((C - Pt) @ nh)
        if depth <= 0:
            return None
        Pc, nc = _ground_at(ground, *(C - ((C - Pt) @ nh) * nh)[:2])
    else:
        fwd = _unit(np.cross(dn, nh))
        lat = np.cross(nh, fwd)
        depths, projs = [], []
        for A in (C + 0.1 * r * fwd, C - 0.1 * r * fwd, C + 0.3 * w * lat, C - 0.3 * w * lat):
            b, c = nh @ (A - C), (A - C) @ (A - C) - r * r
            if b * b - c < 0:
                continue
            Bp = A + (b - math.sqrt(b * b - c)) * nh
            dA = np.linalg.norm(Bp - A) - abs((A - Pt) @ nh)
            if dA <= 0:
                continue
            proj = A - ((A - Pt) @ nh) * nh
            q, nh = _ground_at(ground, proj[0], proj[1])  # the query's normal serves the points after it
            depths.append(dA)
            projs.append(q)
        if not depths:
            return None
        depth = float(np.mean(depths))
        if depth <= 0:
            return None
        Pc, nc = _ground_at(ground, *np.mean(projs, axis=0)[:2])
    fwd = _unit(np.cross(dn, nc))
    return np.stack([fwd, np.cross(nc, fwd), nc], 1), Pc, float(depth)


def _sinestep(x: float, x1: float, y1: float, x2: float, y2: float) -> float:
    if x <= x1:
        return y1
    if x >= x2:
        return y2
    xi = (x - x1) / (x2 - x1)
    return y1 + (y2 - y1) * (xi - math.sin(2 * math.pi * xi) / (2 * math.pi))


def tmeasy_spring(t: dict, depth: float) -> tuple[float, float]:
    """(force, potential) of TMeasy's vertical spring and bottoming."""
    over = max(depth - (t["r0"] - t["r_bot"]), 0.0)
    return (t["d1"] * depth + t["d2"] * depth**2 + t["k_bot"] * over,
            t["d1"] * depth**2 / 2 + t["d2"] * depth**3 / 3 + t["k_bot"] * over**2 / 2)


def fiala_spring(t: dict, depth: float) -> tuple[float, float]:
    """(force, potential) of Fiala's vertical table (or kz)."""
    if t["table"] is None:
        return t["kz"] * depth, t["kz"] * depth**2 / 2
    x, f = t["table"][:, 0], t["table"][:, 1]
    k = min(max(int(np.searchsorted(x, depth, side="left")) - 1, 0), len(x) - 2)
    slope = (f[k + 1] - f[k]) / (x[k + 1] - x[k])
    force = f[k] + slope * (depth - x[k])
    area = float(np.sum((f[1:k + 1] + f[:k]) / 2 * np.diff(x[:k + 1])))
    return force, area + (f[k] + force) / 2 * (depth - x[k])


def _combined(s, df0, sm, fm, ss, fs) -> float:
    dfl = max(2 * fm / sm, df0) if sm > 0 else 0.0
    if not (s > 0 and dfl > 0):
        return 0.0
    if s > ss:
        return fs
    if s < sm:
        sig, p = s / sm, dfl * sm / fm - 2
        return dfl * sm * sig / (1 + (sig + p) * sig)
    a = (fm / sm) ** 2 / (dfl * sm)
    s_star = sm + (fm - fs) / (a * (ss - sm))
    if s_star <= ss:
        if s <= s_star:
            return fm - a * (s - sm) ** 2
        return fs + a * (s_star - sm) / (ss - s_star) * (ss - s) ** 2
    sig = (s - sm) / (ss - sm)
    return fm - (fm - fs) * sig**2 * (3 - 2 * sig)


def _trail(y, nL0, sq0, sqe) -> float:
    se = max(sqe, sq0)
    if y >= se:
        return 0.0
    wf = sq0 / se
    if y <= sq0:
        sig = y / sq0
        return (1 - wf) * nL0 * (1 - sig) + wf * nL0 * (1 - (3 - 2 * sig) * sig**2)
    sig = (se - y) / (se - sq0)
    return -nL0 * (1 - wf) * (y - sq0) / sq0 * sig**2


def _tmeasy(t, mus, depth, vel, om, gamma, z, dt):
    Fn = tmeasy_spring(t, depth)[0] - t["dz"] * vel[2]
    if Fn < 0:
        return None
    Fz = min(Fn, t["pn_max"])
    q = Fz / t["pn"]
    R_eff = (2 * t["r0"] + t["r0"] - depth) / 3
    vta = R_eff * abs(om) + t["vnum"]
    vsx, vsy = vel[0] - om * R_eff, vel[1]
    sx, sy = -vsx / vta, -vsy / vta
    lin = {k: t[k][0] + (t[k][1] - t[k][0]) * (q - 1) for k in ("sxm", "sxs", "sym", "sys", "nL0", "sq0", "sqe")}
    quad = {k: q * (2 * t[k][0] - t[k][1] / 2 - (t[k][0] - t[k][1] / 2) * q) for k in _FORCES}
    fc = Fz * mus
    zx, zy = z
    F0 = np.array([-(t["sigma0"] * zx + t["sigma1"] * (vsx - t["sigma0"] * zx * abs(vsx) / fc)),
                   -(t["sigma0"] * zy + t["sigma1"] * (vsy - t["sigma0"] * zy * abs(vsy) / fc))])
    if dt > 0:
        z = np.array([(2 * zc * fc + 2 * fc * dt * vs - zc * dt * t["sigma0"] * abs(vs)) / (2 * fc + dt * t["sigma0"] * abs(vs))
                      for zc, vs in ((zx, vsx), (zy, vsy))])
    if np.hypot(*F0) > fc:
        F0 = F0 * (fc / np.hypot(*F0))
    s = math.hypot(sx, sy)
    ca, sa = (sx / s, sy / s) if s > 0 else (math.sqrt(0.5), math.sqrt(0.5))
    f = _combined(s, math.hypot(quad["dfx0"] * ca, quad["dfy0"] * sa),
                  mus * math.hypot(lin["sxm"] * ca, lin["sym"] * sa), mus * math.hypot(quad["fxm"] * ca, quad["fym"] * sa),
                  mus * math.hypot(lin["sxs"] * ca, lin["sys"] * sa), mus * math.hypot(quad["fxs"] * ca, quad["fys"] * sa))
    Fx, Fy = (f * ca, f * sa) if s > 0 else (0.0, 0.0)
    blend = _sinestep(vel[0], 1.0, 0.0, 3.0, 1.0)
    Fx, Fy = (1 - blend) * F0[0] + blend * Fx, (1 - blend) * F0[1] + blend * Fy
    Mz = -Fy * 2 * math.sqrt(t["r0"] * depth) * _trail(abs(sy), lin["nL0"], lin["sq0"], lin["sqe"]) \
        if vel[0] >= 1.0 else 0.0
    Mx = -t["w"] ** 2 * (t["d1"] + 2 * t["d2"] * depth) / 12 * gamma
    My = -t["rr"] * Fn * t["r0"] * math.tanh(om)
    return np.array([Fx, Fy, Fn]), np.array([Mx, My, Mz]), (sx, sy), z


def _fiala(t, mus, depth, vel, om):
    Fn = fiala_spring(t, depth)[0] - t["dz"] * vel[2]
    if not Fn > 0:
        return None
    avx = abs(vel[0])
    kappa = -(vel[0] - om * (t["r0"] - depth)) / avx if avx != 0 else 0.0
    alpha = math.atan2(vel[1], avx) if avx != 0 else 0.0
    S = min(1.0, math.sqrt(kappa**2 + math.tan(alpha) ** 2))
    U = t["umax"] - (t["umax"] - t["umin"]) * S
    S_c, a_c, Uf = abs(U * Fn / (2 * t["cslip"])), math.atan(3 * U * Fn / t["calpha"]), U * mus
    Fx = t["cslip"] * kappa if abs(kappa) < S_c else \
        np.sign(kappa) * (Uf * Fn - abs((Uf * Fn) ** 2 / (4 * kappa * t["cslip"])))
    if abs(alpha) <= a_c:
        H = 1 - t["calpha"] * abs(math.tan(alpha)) / (3 * Uf * Fn)
        Fy, Mz = -Uf * Fn * (1 - H**3) * np.sign(alpha), Uf * Fn * t["w"] * (1 - H) * H**3 * np.sign(alpha)
    else:
        Fy, Mz = -Uf * Fn * np.sign(alpha), 0.0
    My = -_sinestep(avx, 0.125, 0.0, 0.5, 1.0) * t["rr"] * Fn * t["r0"] * np.sign(om)
    return np.array([Fx, Fy, Fn]), np.array([0.0, My, Mz]), (kappa, alpha)


def tire_wrench(tire: dict, points: str, ground, X_row: np.ndarray, axis: np.ndarray, state=None,
                dt: float = 0.0) -> tuple[np.ndarray, np.ndarray, dict]:
    """One tire on its wheel's row [R (9), p, w, v]: the wrench about the world origin [moment, force], the
    bristles after dt (dt 0 or no state: unchanged), and what the law saw (docs/tires.md)."""
    R, C, w, v = X_row[:9].reshape(3, 3), X_row[9:12], X_row[12:15], X_row[15:18]
    z = np.zeros(2) if state is None else np.asarray(state, dtype=float)
    dn = R @ np.asarray(axis, dtype=float)
    hit = contact(ground, points, C, dn, tire["r0"], tire["w"])
    info = dict(in_contact=0.0)
    if hit is None:
        return np.zeros(6), np.zeros(2), info
    F, Pc, depth = hit
    vel, nl = F.T @ v, F.T @ dn
    om, gamma = float(w @ dn), math.atan2(nl[2], nl[1])
    mus = min(max(float(ground.mu), 0.1), 1.0) / tire["mu0"]
    info.update(depth=depth, camber=gamma, omega=om, vx=vel[0], vy=vel[1], Px=Pc[0], Py=Pc[1], Pz=Pc[2])
    if tire["law"] == "tmeasy":
        got = _tmeasy(tire, mus, depth, vel, om, gamma, z, dt if state is not None else 0.0)
        new = got[3] if got is not None else z
    else:
        got, new = _fiala(tire, mus, depth, vel, om), z
    if got is None:
        return np.zeros(6), new, info
    Fl, Ml, slips = got[:3]
    Fw = F @ Fl
    Mc = F @ Ml + np.cross(Pc - C, Fw)
    info.update(in_contact=1.0, Fz=Fl[2], slip=slips[0], slip_lat=slips[1], Fx=Fl[0], Fy=Fl[1], Mx=Ml[0],
                My=Ml[1], Mz=Ml[2])
    return np.concatenate([np.cross(C, Fw) + Mc, Fw]), new, info
