"""The second route for the tire laws: docs/tires.md in NumPy, written from that page alone.

Nothing here comes from mechdyn/contact/tire.c or mechdyn/contact/tires.py: the data files are read by a reader
of our own, the parameters derived as the page says, and the contact, the frame and the TMeasy and Fiala laws
written from its formulas, so a wrong term in the product's C shows up as a disagreement with this route. The
terrain is crosscheck/contact.py's `terrain_height` (itself a second route of docs/contact.md).

`X_row` is one wheel's body row (18,): R (body to world, row-major), p (the disc's centre), ω, v, world frame.
"""
from __future__ import annotations

import json

import numpy as np

from crosscheck.contact import terrain_height
from mechdyn.core.model import Ground

# Chrono's constants TMeasy's files do not carry (docs/tires.md, "The data files")
VNUM = 0.01
BLEND_V0, BLEND_V1 = 1.0, 3.0
SIGMA0, SIGMA1 = 1e5, 5e3

# Chrono's load table (ChTMeasyTire::GetTireMaxLoad): the load in kg of load index 0..279
LOAD_KG = np.array([
    45, 46.5, 47.5, 48.7, 50, 51.5, 53, 54.5, 56, 58, 60, 61.5, 63, 65,
    67, 69, 71, 73, 75, 77.5, 80.0, 82.5, 85.0, 87.5, 90.0, 92.5, 95.0, 97.5,
    100.0, 103, 106, 109, 112, 115, 118, 121, 125, 128, 132, 136, 140, 145,
    150, 155, 160, 165, 170, 175, 180, 185, 190, 195, 200, 206, 212, 218,
    224, 230, 236, 243, 250, 257, 265, 272, 280, 290, 300, 307, 315, 325,
    335, 345, 355, 365, 375, 387, 400, 412, 425, 437, 450, 462, 475, 487,
    500, 515, 530, 545, 560, 580, 600, 615, 630, 650, 670, 690, 710, 730,
    750, 775, 800, 825, 850, 875, 900, 925, 950, 975, 1000, 1030, 1060, 1090,
    1120, 1150, 1180, 1215, 1250, 1285, 1320, 1360, 1400, 1450, 1500, 1550, 1600, 1650,
    1700, 1750, 1800, 1850, 1900, 1950, 2000, 2060, 2120, 2180, 2240, 2300, 2360, 2430,
    2500, 2575, 2650, 2725, 2800, 2900, 3000, 3075, 3150, 3250, 3350, 3450, 3550, 3650,
    3750, 3875, 4000, 4125, 4250, 4375, 4500, 4625, 4750, 4875, 5000, 5150, 5300, 5450,
    5600, 5850, 6000, 6150, 6300, 6500, 6700, 6900, 7100, 7300, 7500, 7750, 8000, 8250,
    8500, 8750, 9000, 9250, 9500, 9750, 10000, 10300, 10600, 10900, 11200, 11500, 11800, 12150,
    12500, 12850, 13200, 13600, 14000, 14500, 15000, 15550, 16000, 16500, 17000, 17500, 18000, 18500,
    19000, 19500, 20000, 20600, 21200, 21800, 22400, 23000, 23600, 24300, 25000, 25750, 26500, 27250,
    28000, 29000, 30000, 30750, 31500, 32500, 33500, 34500, 35500, 36500, 37500, 38750, 40000, 41250,
    42500, 43750, 45000, 46250, 47500, 48750, 50000, 51500, 53000, 54500, 56000, 58000, 60000, 61500,
    63000, 65000, 67000, 69000, 71000, 73000, 75000, 77500, 80000, 82500, 85000, 87500, 90000, 92500,
    95000, 97500, 100000, 103000, 106000, 109000, 112000, 115000, 118000, 121000, 125000, 128500, 132000, 136000,
], dtype=float)

# the thirteen pairs: (name, section, JSON key, is a force)
PAIRS = (
    ("dfx0", "Longitudinal", "Initial Slopes dFx/dsx [N]", True),
    ("sxm", "Longitudinal", "Slip sx at Maximum Fx", False),
    ("fxm", "Longitudinal", "Maximum Fx Load [N]", True),
    ("sxs", "Longitudinal", "Slip sx where sliding begins", False),
    ("fxs", "Longitudinal", "Sliding Fx Load [N]", True),
    ("dfy0", "Lateral", "Initial Slopes dFy/dsy [N]", True),
    ("sym", "Lateral", "Slip sy at Maximum Fy", False),
    ("fym", "Lateral", "Maximum Fy Load [N]", True),
    ("sys", "Lateral", "Slip sy where sliding begins", False),
    ("fys", "Lateral", "Sliding Fy Load [N]", True),
    ("nL0", "Aligning", "Normalized Trail at Zero Slip sy", False),
    ("sq0", "Aligning", "Slip sy where Trail Changes Sign", False),
    ("sqe", "Aligning", "Slip sy where Trail Tends to Zero", False),
)

# the load-index estimate's table: forces in units of pn, at pn and at 2·pn (the second already ·2 applied below)
GUESS = {
    "Truck": {"dfx0": (17.7764, 14.5301), "sxm": (0.10811, 0.12389), "fxm": (0.89965, 0.77751),
              "sxs": (0.66667, 0.66667), "fxs": (0.46183, 0.42349), "dfy0": (7.4013, 6.8505),
              "sym": (0.33167, 0.33216), "fym": (0.75876, 0.72628), "sys": (1.0296, 1.0296),
              "fys": (0.68276, 0.65319), "nL0": (0.178, 0.19), "sq0": (0.36484, 0.36538),
              "sqe": (1.0296, 1.0296)},
    "Passenger": {"dfx0": (18.3741, 19.4669), "sxm": (0.13913, 0.13913), "fxm": (1.1292, 1.0896),
                  "sxs": (0.66667, 0.66667), "fxs": (0.80149, 0.76917), "dfy0": (15.9826, 12.8509),
                  "sym": (0.14852, 0.18504), "fym": (1.0009, 0.91367), "sys": (0.96524, 1.0714),
                  "fys": (0.8336, 0.77336), "nL0": (0.178, 0.19), "sq0": (0.16337, 0.20355),
                  "sqe": (0.96524, 1.0714)},
}


# ---------------------------------------------------------------- the data files


def strip_comments(text: str) -> str:
    """The JSON text with `//` and `/* */` comments outside strings blanked (newlines kept)."""
    out, i, n, in_str = [], 0, len(text), False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_str = False
            i += 1
        elif c == '"':
            in_str = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch for ch in text[i:j] if ch == "\n"))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def spring_fit(table: np.ndarray) -> tuple[float, float]:
    """d1, d2: the least-squares fit of F = d1·δ + d2·δ² through the rows [δ, F]."""
    d, f = table[:, 0], table[:, 1]
    A = np.stack([d, d * d], axis=1)
    d1, d2 = np.linalg.solve(A.T @ A, A.T @ f)
    return float(d1), float(d2)


def read_tire(path: str) -> dict:
    """The tire's parameters from its Chrono data file, derived as docs/tires.md says."""
    with open(path) as fh:
        d = json.loads(strip_comments(fh.read()))
    if d["Template"] == "FialaTire":
        fp = d["Fiala Parameters"]
        t = {"law": "fiala", "mass": float(d["Mass"]), "mu0": float(d.get("Coefficient of Friction", 0.8)),
             "r0": float(fp["Unloaded Radius"]), "w": float(fp["Width"]), "kz": float(fp["Vertical Stiffness"]),
             "dz": float(fp["Vertical Damping"]), "rr": float(fp["Rolling Resistance"]),
             "cslip": float(fp["CSLIP"]), "calpha": float(fp["CALPHA"]),
             "umin": float(fp["UMIN"]), "umax": float(fp["UMAX"]), "curve": None}
        if "Vertical Curve Data" in fp:
            t["curve"] = np.asarray(fp["Vertical Curve Data"], dtype=float)
        return t
    if d["Template"] != "TMeasyTire":
        raise ValueError(f"{path}: template {d['Template']!r} is neither TMeasyTire nor FialaTire")
    des = d["Design"]
    t = {"law": "tmeasy", "r0": float(des["Unloaded Radius [m]"]), "r_rim": float(des["Rim Radius [m]"]),
         "w": float(des["Width [m]"]), "mass": float(des["Mass [kg]"]),
         "mu0": float(d.get("Coefficient of Friction", 0.8)),
         "rr": float(d.get("Rolling Resistance Coefficient", 0.01 if "Parameters" in d else 0.015))}
    r_bot, k_bot = None, None
    if "Parameters" in d:
        par = d["Parameters"]
        vert = par["Vertical"]
        t["pn"] = float(vert["Nominal Vertical Force [N]"])
        t["pn_max"] = float(vert.get("Maximum Vertical Force [N]", 3.5 * t["pn"]))
        if "Vertical Tire Stiffness [N/m]" in vert:
            t["d1"], t["d2"] = float(vert["Vertical Tire Stiffness [N/m]"]), 0.0
        else:
            t["d1"], t["d2"] = spring_fit(np.asarray(vert["Tire Spring Curve Data"], dtype=float))
        t["dz"] = float(vert["Tire Vertical Damping [Ns/m]"])
        r_bot, k_bot = vert.get("Tire Bottoming Radius [m]"), vert.get("Tire Bottoming Stiffness [N/m]")
        for name, sec, key, _ in PAIRS:
            t[name] = tuple(float(x) for x in par[sec][key])
    else:
        li = int(d["Load Index"])
        f_li = LOAD_KG[min(li, len(LOAD_KG) - 1)] * 9.81
        p_li, p_use = d.get("Inflation Pressure Design [Pa]"), d.get("Inflation Pressure Use [Pa]")
        ratio = 1.0 if p_li is None or p_use is None else float(p_use) / float(p_li)
        pn = 0.5 * f_li * ratio ** 0.8
        h = t["r0"] - t["r_rim"]
        t["pn"], t["pn_max"] = pn, 3.5 * pn
        t["d1"], t["d2"] = f_li / (0.16 * h), 0.0
        t["dz"] = 2.0 * 0.5 * np.sqrt(t["d1"] * t["mass"])
        for name, _, _, is_force in PAIRS:
            a, b = GUESS[d["Vehicle Type"]][name]
            t[name] = (a * pn, b * 2.0 * pn) if is_force else (a, b)
    t["r_bot"] = float(r_bot) if r_bot else t["r_rim"] + 0.01  # absent or 0: Chrono's default
    t["k_bot"] = float(k_bot) if k_bot else 5.0 * t["d1"]
    return t


# ---------------------------------------------------------------- the contact


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x)


def _terrain(ground: Ground, x: float, y: float) -> tuple[np.ndarray, np.ndarray]:
    """P(x, y) and n(x, y)."""
    h, hx, hy = (float(a) for a in terrain_height(ground, np.array(x), np.array(y)))
    return np.array([x, y, h]), np.array([-hx, -hy, 1.0]) / np.sqrt(1.0 + hx * hx + hy * hy)


def disc_contact(tire: dict, contact: str, ground: Ground, C: np.ndarray, dn: np.ndarray
                 ) -> tuple[bool, float, np.ndarray, np.ndarray]:
    """(in contact, depth δ, patch point P_c, patch normal n_c) of the disc (centre C, normal dn)."""
    r0 = tire["r0"]
    df = _unit(np.cross(dn, [0.0, 0.0, 1.0]))
    B = C + r0 * np.cross(dn, df)
    Pt, n = _terrain(ground, B[0], B[1])
    if C[2] <= Pt[2]:
        return False, 0.0, C, n
    n1 = n - (n @ dn) * dn
    nhat = n1 / np.linalg.norm(n1)
    if contact == "single":
        depth = r0 * np.linalg.norm(n1) - abs((C - Pt) @ nhat)
        if depth <= 0.0:
            return False, 0.0, C, n
        Pc, nc = _terrain(ground, *(C - ((C - Pt) @ nhat) * nhat)[:2])
        return True, depth, Pc, nc
    fwd = _unit(np.cross(dn, nhat))
    lat = np.cross(nhat, fwd)
    depths, projs = [], []
    for A in (C + 0.1 * r0 * fwd, C - 0.1 * r0 * fwd, C + 0.3 * tire["w"] * lat, C - 0.3 * tire["w"] * lat):
        # the line A − t·n̂ meets the sphere |X − C| = r0 (Chrono's LineCircleIntersection): once n̂ is a
        # terrain normal it is no longer square to A − C, so the general root, not √(r0² − |A − C|²)
        dA = A - C
        b = nhat @ dA
        disc = b * b - (dA @ dA - r0 * r0)
        if disc < 0.0:
            continue
        Bp = A + (b - np.sqrt(disc)) * nhat
        dep = np.linalg.norm(Bp - A) - abs((A - Pt) @ nhat)
        if dep <= 0.0:
            continue
        proj = A - ((A - Pt) @ nhat) * nhat
        _, nhat = _terrain(ground, proj[0], proj[1])  # Chrono's: this normal serves the points after it
        depths.append(dep)
        projs.append(proj)
    if not depths:
        return False, 0.0, C, n
    m = np.mean(projs, axis=0)
    Pc, nc = _terrain(ground, m[0], m[1])
    return True, float(np.mean(depths)), Pc, nc


def sine_step(x: float, x0: float, y0: float, x1: float, y1: float) -> float:
    """Chrono's ChFunctionSineStep: y0 below x0, y1 above x1, ξ − sin(2πξ)/(2π) between."""
    if x <= x0:
        return y0
    if x >= x1:
        return y1
    xi = (x - x0) / (x1 - x0)
    return y0 + (y1 - y0) * (xi - np.sin(2.0 * np.pi * xi) / (2.0 * np.pi))


# ---------------------------------------------------------------- TMeasy


def _lin(p: tuple[float, float], q: float) -> float:
    return p[0] + (p[1] - p[0]) * (q - 1.0)


def _quad(p: tuple[float, float], q: float) -> float:
    return q * (2.0 * p[0] - 0.5 * p[1] - (p[0] - 0.5 * p[1]) * q)


def tmxy_combined(s: float, df0: float, fm: float, sm: float, fs: float, ss: float) -> float:
    """Chrono's tmxy_combined: the combined force f(s)."""
    df0 = max(2.0 * fm / sm, df0)
    if s == 0.0 or df0 == 0.0:
        return 0.0
    if s > ss:
        return fs
    if s < sm:
        sig = s / sm
        p = df0 * sm / fm - 2.0
        return df0 * sm * sig / (1.0 + (sig + p) * sig)
    a = (fm / sm) ** 2 / (df0 * sm)
    sstar = sm + (fm - fs) / (a * (ss - sm))
    if sstar <= ss:
        if s <= sstar:
            return fm - a * (s - sm) ** 2
        b = a * (sstar - sm) / (ss - sstar)
        return fs + b * (ss - s) ** 2
    sig = (s - sm) / (ss - sm)
    return fm - (fm - fs) * sig * sig * (3.0 - 2.0 * sig)


def trail(y: float, nL0: float, sq0: float, sqe: float) -> float:
    """The normalized trail t(y), y = |sy|."""
    se = max(sqe, sq0)
    wf = sq0 / se
    if y >= se:
        return 0.0
    if y <= sq0:
        sig = y / sq0
        return (1.0 - wf) * nL0 * (1.0 - sig) + wf * nL0 * (1.0 - (3.0 - 2.0 * sig) * sig * sig)
    sig = (se - y) / (se - sq0)
    return -nL0 * (1.0 - wf) * (y - sq0) / sq0 * sig * sig


def mu_scale(tire: dict, ground: Ground) -> float:
    return min(max(ground.mu, 0.1), 1.0) / tire["mu0"]


def _tmeasy(t: dict, ground: Ground, depth: float, vel: np.ndarray, ws: float, gamma: float,
            z: np.ndarray, dt: float) -> tuple[dict, np.ndarray] | None:
    """TMeasy's local forces and moments, the new bristles; None when F_n < 0 (no force at all)."""
    pen = max(depth - (t["r0"] - t["r_bot"]), 0.0)
    Fn = t["d1"] * depth + t["d2"] * depth ** 2 + t["k_bot"] * pen - t["dz"] * vel[2]
    if Fn < 0.0:
        return None
    Fz = min(Fn, t["pn_max"])
    q = Fz / t["pn"]
    r_eff = (2.0 * t["r0"] + t["r0"] - depth) / 3.0
    p_len = 2.0 * np.sqrt(t["r0"] * depth)
    vta = r_eff * abs(ws) + VNUM
    vsx, vsy = vel[0] - ws * r_eff, vel[1]
    sx, sy = -vsx / vta, -vsy / vta
    mus = mu_scale(t, ground)
    c = {k: (_quad if is_force else _lin)(t[k], q) for k, _, _, is_force in PAIRS}
    # the slip law
    s = np.hypot(sx, sy)
    ca, sa = (sx / s, sy / s) if s > 0.0 else (np.sqrt(0.5), np.sqrt(0.5))

    def comb(x: float, y: float) -> float:  # a pair's value in the slip's direction
        return float(np.hypot(x * ca, y * sa))

    f = tmxy_combined(s, comb(c["dfx0"], c["dfy0"]), mus * comb(c["fxm"], c["fym"]), mus * comb(c["sxm"], c["sym"]),
                      mus * comb(c["fxs"], c["fys"]), mus * comb(c["sxs"], c["sys"]))
    Fx, Fy = (f * ca, f * sa) if s > 0.0 else (0.0, 0.0)
    # the bristles
    fc = Fz * mus
    vs = np.array([vsx, vsy])
    zdot = vs - SIGMA0 * z * np.abs(vs) / fc
    F0 = -(SIGMA0 * z + SIGMA1 * zdot)
    F0n = np.linalg.norm(F0)
    if F0n > fc:
        F0 = F0 * (fc / F0n)
    znew = z
    if dt > 0.0:
        a = dt * SIGMA0 * np.abs(vs)
        znew = (2.0 * z * fc + 2.0 * fc * dt * vs - z * a) / (2.0 * fc + a)
    w = sine_step(vel[0], BLEND_V0, 0.0, BLEND_V1, 1.0)
    Fx, Fy = (1.0 - w) * F0[0] + w * Fx, (1.0 - w) * F0[1] + w * Fy
    Mz = -Fy * p_len * trail(abs(sy), c["nL0"], c["sq0"], c["sqe"]) if vel[0] >= 1.0 else 0.0
    My = -t["rr"] * Fn * t["r0"] * np.tanh(ws)
    Mx = -t["w"] ** 2 * (t["d1"] + 2.0 * t["d2"] * depth) / 12.0 * gamma
    return {"Fz": Fn, "slip": sx, "slip_lat": sy, "Fx": Fx, "Fy": Fy, "Mx": Mx, "My": My, "Mz": Mz,
            "bristle_x": F0[0], "bristle_y": F0[1]}, znew


# ---------------------------------------------------------------- Fiala


def fiala_spring(t: dict, depth: float) -> float:
    cv = t["curve"]
    if cv is None:
        return t["kz"] * depth
    if depth >= cv[-1, 0]:  # along the last segment past the table
        d0, f0, d1, f1 = cv[-2, 0], cv[-2, 1], cv[-1, 0], cv[-1, 1]
        return f1 + (f1 - f0) / (d1 - d0) * (depth - d1)
    return float(np.interp(depth, cv[:, 0], cv[:, 1]))


def _fiala(t: dict, ground: Ground, depth: float, vel: np.ndarray, ws: float) -> dict | None:
    Fn = fiala_spring(t, depth) - t["dz"] * vel[2]
    if Fn <= 0.0:
        return None
    avx = abs(vel[0])
    kappa = -(vel[0] - ws * (t["r0"] - depth)) / avx if avx > 0.0 else 0.0
    alpha = np.arctan2(vel[1], avx) if avx > 0.0 else 0.0
    ta = np.tan(alpha)
    S = min(1.0, np.sqrt(kappa * kappa + ta * ta))
    U = t["umax"] - (t["umax"] - t["umin"]) * S
    Sc = abs(U * Fn / (2.0 * t["cslip"]))
    ac = np.arctan(3.0 * U * Fn / t["calpha"])
    Uf = U * mu_scale(t, ground)
    if abs(kappa) < Sc:
        Fx = t["cslip"] * kappa
    else:
        Fx = np.sign(kappa) * (Uf * Fn - abs((Uf * Fn) ** 2 / (4.0 * kappa * t["cslip"])))
    if abs(alpha) <= ac:
        H = 1.0 - t["calpha"] * abs(ta) / (3.0 * Uf * Fn)
        Fy = -Uf * Fn * (1.0 - H ** 3) * np.sign(alpha)
        Mz = Uf * Fn * t["w"] * (1.0 - H) * H ** 3 * np.sign(alpha)
    else:
        Fy, Mz = -Uf * Fn * np.sign(alpha), 0.0
    My = -sine_step(avx, 0.125, 0.0, 0.5, 1.0) * t["rr"] * Fn * t["r0"] * np.sign(ws)
    return {"Fz": Fn, "slip": kappa, "slip_lat": alpha, "Fx": Fx, "Fy": Fy, "Mx": 0.0, "My": My, "Mz": Mz}


# ---------------------------------------------------------------- one wheel


def _kinematics(tire: dict, contact: str, ground: Ground, X_row: np.ndarray, axis: np.ndarray):
    """Contact, depth, P_c, the patch frame F and the patch-frame quantities of one wheel row."""
    X_row = np.asarray(X_row, dtype=float)
    R, C, om, v = X_row[:9].reshape(3, 3), X_row[9:12], X_row[12:15], X_row[15:18]
    dn = R @ np.asarray(axis, dtype=float)
    hit, depth, Pc, nc = disc_contact(tire, contact, ground, C, dn)
    fwd = _unit(np.cross(dn, nc))
    F = np.column_stack([fwd, np.cross(nc, fwd), nc])
    nl = F.T @ dn
    return hit, depth, Pc, C, F, F.T @ v, float(om @ dn), float(np.arctan2(nl[2], nl[1]))


def tire_wrench(tire: dict, contact: str, ground: Ground, X_row: np.ndarray, axis: np.ndarray,
                state: np.ndarray | None = None, dt: float = 0.0) -> tuple[np.ndarray, np.ndarray, dict]:
    """(wrench about the world origin [M; F], new bristles state, info) of one wheel, docs/tires.md."""
    z = np.zeros(2) if state is None else np.asarray(state, dtype=float).copy()
    hit, depth, Pc, C, F, vel, ws, gamma = _kinematics(tire, contact, ground, X_row, axis)
    info = {"in_contact": 0.0, "depth": 0.0, "Fz": 0.0, "slip": 0.0, "slip_lat": 0.0, "camber": 0.0,
            "Fx": 0.0, "Fy": 0.0, "Mx": 0.0, "My": 0.0, "Mz": 0.0, "omega": 0.0, "vx": 0.0, "vy": 0.0,
            "Px": 0.0, "Py": 0.0, "Pz": 0.0, "bristle_x": 0.0, "bristle_y": 0.0}
    if not hit:
        return np.zeros(6), (np.zeros(2) if dt > 0.0 else z), info  # out of contact: the bristles reset
    info.update(depth=depth, camber=gamma, omega=ws, vx=vel[0], vy=vel[1], Px=Pc[0], Py=Pc[1], Pz=Pc[2])
    if tire["law"] == "tmeasy":
        res = _tmeasy(tire, ground, depth, vel, ws, gamma, z, dt)
        out, znew = (None, z) if res is None else res
    else:
        out, znew = _fiala(tire, ground, depth, vel, ws), z
    if out is None:  # F_n ≤ 0: no force, and (as Chrono) the bristles are neither carried nor reset
        return np.zeros(6), z, info
    info.update(out, in_contact=1.0)
    Fw = F @ np.array([out["Fx"], out["Fy"], out["Fz"]])
    Mw = F @ np.array([out["Mx"], out["My"], out["Mz"]]) + np.cross(Pc - C, Fw)
    return np.concatenate([np.cross(C, Fw) + Mw, Fw]), znew, info


def _fiala_potential(t: dict, depth: float) -> float:
    cv = t["curve"]
    if cv is None:
        return 0.5 * t["kz"] * depth * depth
    d, f = cv[:, 0], cv[:, 1]
    k = int(np.searchsorted(d, depth, side="right"))  # rows 0..k−1 lie at or below δ
    k = min(max(k, 1), len(d) - 1)  # past the table: along the last segment
    e = float(np.sum(0.5 * (f[1:k] + f[:k - 1]) * np.diff(d[:k])))
    return e + 0.5 * (f[k - 1] + fiala_spring(t, depth)) * (depth - d[k - 1])


def tire_potential(tire: dict, contact: str, ground: Ground, X_row: np.ndarray, axis: np.ndarray,
                   state: np.ndarray | None = None) -> float:
    """The stored energy: the vertical spring's potential, plus (1 − w)·½σ0|z|² with a bristles state."""
    hit, depth, _, _, _, vel, _, _ = _kinematics(tire, contact, ground, X_row, axis)
    if not hit:
        return 0.0
    if tire["law"] == "fiala":
        return _fiala_potential(tire, depth)
    pen = max(depth - (tire["r0"] - tire["r_bot"]), 0.0)
    e = 0.5 * tire["d1"] * depth ** 2 + tire["d2"] * depth ** 3 / 3.0 + 0.5 * tire["k_bot"] * pen ** 2
    if state is not None:
        z = np.asarray(state, dtype=float)
        e += (1.0 - sine_step(vel[0], BLEND_V0, 0.0, BLEND_V1, 1.0)) * 0.5 * SIGMA0 * float(z @ z)
    return e


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
