"""The tires' parameters, read from Project Chrono's tire files (TMeasyTire and FialaTire JSON; docs/tires.md).

Every number is named by its key; a missing key or one out of its bounds is one MechError naming the file, the
line and the key. TMeasy files that give a "Load Index" instead of a full "Parameters" set get Chrono's own
estimate (GuessTruck80Par, GuessPassCar70Par).
"""
from __future__ import annotations

import dataclasses
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mechdyn.core import params
from mechdyn.core.errors import MechError
from mechdyn.core.model import Model

TMEASY, FIALA = 0, 1  # md_tire.law (tire.c)
LAWS = {"TMeasyTire": TMEASY, "FialaTire": FIALA}
POINTS = {"single": 1, "four": 4}
G = 9.81  # Chrono's GetTireMaxLoad

# TMeasy's constants that its files do not carry (ChTMeasyTire's constructor and header)
VNUM, FR_BEGIN, FR_END, SIGMA0, SIGMA1 = 0.01, 1.0, 3.0, 1.0e5, 5.0e3
DAMPING_RATIO = 0.5  # GuessTruck80Par / GuessPassCar70Par's default

# md_tire_fext's info columns (tire.c MD_TIRE_INFO): slip and lateral slip are TMeasy's sx, sy or Fiala's kappa, alpha
TIRE_INFO = ("contact", "depth", "Fz", "slip", "slip_lat", "camber", "Fx", "Fy", "Mx", "My", "Mz", "omega", "vx",
             "vy", "Px", "Py", "Pz", "bristle_x", "bristle_y", "potential")

# the load per tire, kg, of each load index 0..279 (ChTMeasyTire::GetTireMaxLoad)
LOAD_INDEX_KG = (
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
    128500, 132000, 136000)

# TMeasy's curve parameters as tire.c's md_tire.curve orders them: each (at pn, at 2·pn), with its JSON keys
CURVE_KEYS = (("Longitudinal", "Initial Slopes dFx/dsx [N]"), ("Longitudinal", "Slip sx at Maximum Fx"),
              ("Longitudinal", "Maximum Fx Load [N]"), ("Longitudinal", "Slip sx where sliding begins"),
              ("Longitudinal", "Sliding Fx Load [N]"), ("Lateral", "Initial Slopes dFy/dsy [N]"),
              ("Lateral", "Slip sy at Maximum Fy"), ("Lateral", "Maximum Fy Load [N]"),
              ("Lateral", "Slip sy where sliding begins"), ("Lateral", "Sliding Fy Load [N]"),
              ("Aligning", "Normalized Trail at Zero Slip sy"), ("Aligning", "Slip sy where Trail Changes Sign"),
              ("Aligning", "Slip sy where Trail Tends to Zero"))

# Chrono's estimates from a load index: each curve parameter as (at pn, at 2·pn), forces in units of pn
# (GuessTruck80Par, GuessPassCar70Par: "Normalized Parameters gained from data set containing original data from
# Pacejka book")
_GUESS = {
    "Truck": dict(ratio_defl=0.16, curve=((17.7764, 14.5301 * 2), (0.10811, 0.12389), (0.89965, 0.77751 * 2),
                                          (0.66667, 0.66667), (0.46183, 0.42349 * 2), (7.4013, 6.8505 * 2),
                                          (0.33167, 0.33216), (0.75876, 0.72628 * 2), (1.0296, 1.0296),
                                          (0.68276, 0.65319 * 2), (0.178, 0.19), (0.36484, 0.36538),
                                          (1.0296, 1.0296))),
    "Passenger": dict(ratio_defl=0.16, curve=((18.3741, 19.4669 * 2), (0.13913, 0.13913), (1.1292, 1.0896 * 2),
                                              (0.66667, 0.66667), (0.80149, 0.76917 * 2), (15.9826, 12.8509 * 2),
                                              (0.14852, 0.18504), (1.0009, 0.91367 * 2), (0.96524, 1.0714),
                                              (0.8336, 0.77336 * 2), (0.178, 0.19), (0.16337, 0.20355),
                                              (0.96524, 1.0714))),
}
_FORCE_CURVES = (0, 2, 4, 5, 7, 9)  # CURVE_KEYS entries that are forces: scaled by pn in _GUESS


@dataclass(frozen=True)
class TireParams:
    """One tire's law, every number tire.c's md_tire takes (docs/tires.md)."""
    name: str
    body: int
    law: int  # TMEASY or FIALA
    points: int  # 1 or 4
    axis: np.ndarray  # (3,) the spin axis in the wheel's frame
    data: str  # the data file
    mass: float  # the tire's, from its file (the model's wheel body carries it: reported, not used here)
    r0: float
    width: float
    mu0: float
    rr: float
    dz: float
    d1: float = 0.0
    d2: float = 0.0
    r_bottom: float = 0.0
    k_bottom: float = 0.0
    pn: float = 0.0
    pn_max: float = 0.0
    curve: tuple[float, ...] = (0.0,) * 26
    kz: float = 0.0
    table: np.ndarray | None = None  # (n, 2) deflection, force
    cslip: float = 0.0
    calpha: float = 0.0
    umin: float = 0.0
    umax: float = 0.0
    vnum: float = VNUM
    fr_begin: float = FR_BEGIN
    fr_end: float = FR_END
    sigma0: float = SIGMA0
    sigma1: float = SIGMA1

    def vertical_force(self, depth: float) -> float:
        """The vertical spring's force at depth δ (no damping), N: what a static load settles on."""
        if self.law == TMEASY:
            over = depth - (self.r0 - self.r_bottom)
            return self.d1 * depth + self.d2 * depth**2 + (self.k_bottom * over if over > 0 else 0.0)
        if self.table is None:
            return self.kz * depth
        x, f = self.table[:, 0], self.table[:, 1]
        if depth > x[-1]:
            return float(f[-1] + (f[-1] - f[-2]) / (x[-1] - x[-2]) * (depth - x[-1]))
        return float(np.interp(depth, x, f))

    def sinkage(self, load: float) -> float:
        """The depth at which the vertical spring carries `load`, m."""
        lo, hi = 0.0, self.r0
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if self.vertical_force(mid) < load else (lo, mid)
        return 0.5 * (lo + hi)


def strip_comments(text: str) -> str:
    """JSON text without the // and /* */ comments Chrono's files carry (strings untouched; newlines kept, so
    lines still count)."""
    def keep(m: re.Match) -> str:
        s = m.group(0)
        return s if s.startswith('"') else re.sub(r"[^\n]", " ", s)
    return re.sub(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', keep, text, flags=re.S)


class _File:
    """A tire file's keys, read with the line each was written on, for messages."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self.text = Path(path).read_text()
        except OSError as e:
            raise MechError(path, 1, f"cannot read the tire file ({e.strerror}); expected a Chrono tire JSON file")
        try:
            self.d = json.loads(strip_comments(self.text))
        except json.JSONDecodeError as e:
            raise MechError(path, e.lineno, f"not valid JSON ({e.msg}, column {e.colno}); expected a Chrono tire "
                                            "JSON file") from None
        if not isinstance(self.d, dict):
            raise MechError(path, 1, "the tire file is not a JSON object; expected {\"Template\": ..., ...}")

    def line(self, key: str) -> int:
        at = self.text.find(f'"{key}"')
        return self.text.count("\n", 0, at) + 1 if at >= 0 else 1

    def has(self, *keys: str) -> bool:
        d = self.d
        for k in keys:
            if not (isinstance(d, dict) and k in d):
                return False
            d = d[k]
        return True

    def get(self, *keys: str):
        d = self.d
        for i, k in enumerate(keys):
            if not (isinstance(d, dict) and k in d):
                where = " in " + " > ".join(f'"{x}"' for x in keys[:i]) if i else ""
                raise MechError(self.path, self.line(keys[i - 1]) if i else 1,
                                f'missing key "{k}"{where}; expected it in a {self.d.get("Template", "tire")} file '
                                "(docs/tires.md lists every key)")
            d = d[k]
        return d

    def number(self, *keys: str, lo: float = -math.inf, hi: float = math.inf, lo_open: bool = False,
               default: float | None = None) -> float:
        if default is not None and not self.has(*keys):
            return default
        x = self.get(*keys)
        bad = not (isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x))
        if bad or x < lo or (lo_open and x == lo) or x > hi:
            rng = f"{'>' if lo_open else '>='} {lo:g}" + (f" and <= {hi:g}" if hi < math.inf else "")
            raise MechError(self.path, self.line(keys[-1]), f'"{keys[-1]}" is {x!r}; expected a number {rng}')
        return float(x)

    def pair(self, *keys: str, lo: float = 0.0) -> tuple[float, float]:
        x = self.get(*keys)
        if not (isinstance(x, list) and len(x) == 2 and all(isinstance(v, (int, float)) and math.isfinite(v)
                                                          and v > lo for v in x)):
            raise MechError(self.path, self.line(keys[-1]), f'"{keys[-1]}" is {x!r}; expected two numbers > {lo:g} '
                                                            "(at the nominal load and at twice it)")
        return float(x[0]), float(x[1])


def _tmeasy(f: _File, common: dict) -> TireParams:
    """TMeasy's parameters: the full "Parameters" set, or Chrono's estimate from a "Load Index" (TMeasyTire.cpp)."""
    mass = f.number("Design", "Mass [kg]", lo=0.0, lo_open=True)
    r0 = f.number("Design", "Unloaded Radius [m]", lo=0.0, lo_open=True)
    rim = f.number("Design", "Rim Radius [m]", lo=0.0, lo_open=True, hi=r0)
    width = f.number("Design", "Width [m]", lo=0.0, lo_open=True)
    if rim >= r0:
        raise MechError(f.path, f.line("Rim Radius [m]"), f'"Rim Radius [m]" {rim:g} is not below "Unloaded Radius '
                                                          f'[m]" {r0:g}; expected a rim inside its tire')
    rr, mu0 = 0.01, 0.8  # Chrono's constructor's defaults (the estimate sets rr 0.015), the file's keys override
    r_bottom = k_bottom = d2 = 0.0
    if f.has("Parameters"):
        v = ("Parameters", "Vertical")
        pn = f.number(*v, "Nominal Vertical Force [N]", lo=0.0, lo_open=True)
        pn_max = f.number(*v, "Maximum Vertical Force [N]", lo=pn, default=3.5 * pn)
        if f.has(*v, "Vertical Tire Stiffness [N/m]"):
            d1 = f.number(*v, "Vertical Tire Stiffness [N/m]", lo=0.0, lo_open=True)
        else:
            d1, d2 = _fit_spring(f, f.get(*v, "Tire Spring Curve Data"))
        dz = f.number(*v, "Tire Vertical Damping [Ns/m]", lo=0.0, lo_open=True)
        r_bottom = f.number(*v, "Tire Bottoming Radius [m]", lo=0.0, hi=r0, default=0.0)
        k_bottom = f.number(*v, "Tire Bottoming Stiffness [N/m]", lo=0.0, default=0.0)
        curve = tuple(x for keys in CURVE_KEYS for x in f.pair("Parameters", *keys))
    elif f.has("Load Index"):
        li = f.get("Load Index")
        if not (isinstance(li, int) and not isinstance(li, bool) and li >= 0):
            raise MechError(f.path, f.line("Load Index"), f'"Load Index" is {li!r}; expected an integer >= 0')
        kind = f.get("Vehicle Type")
        if kind not in _GUESS:
            raise MechError(f.path, f.line("Vehicle Type"), f'"Vehicle Type" is {kind!r}; expected "Truck" or '
                                                             '"Passenger"')
        p_li = f.number("Inflation Pressure Design [Pa]", lo=0.0, default=0.0)
        p_use = f.number("Inflation Pressure Use [Pa]", lo=0.0, default=0.0)
        if not (p_li > 0 and p_use > 0):
            p_li = p_use = 1.0
        load = LOAD_INDEX_KG[min(li, len(LOAD_INDEX_KG) - 1)] * G
        guess = _GUESS[kind]
        pn = 0.5 * load * (p_use / p_li) ** 0.8
        pn_max = 3.5 * pn
        d1 = load / (guess["ratio_defl"] * (r0 - rim))  # the payload at 16 % of the section height
        dz = 2.0 * DAMPING_RATIO * math.sqrt(d1 * mass)
        curve = tuple(x * (pn if i in _FORCE_CURVES else 1.0)
                      for i, pair in enumerate(guess["curve"]) for x in pair)
        rr = 0.015  # GuessTruck80Par and GuessPassCar70Par set it
    else:
        raise MechError(f.path, 1, 'a TMeasyTire file without "Parameters" or "Load Index"; expected one of them '
                                   '(mechdyn does not read the "Maximum Bearing Capacity [N]" estimate)')
    rr = f.number("Rolling Resistance Coefficient", lo=0.0, hi=1.0, default=rr)
    mu0 = f.number("Coefficient of Friction", lo=0.0, lo_open=True, hi=2.0, default=mu0)
    return TireParams(**common, mass=mass, r0=r0, width=width, mu0=mu0, rr=rr, dz=dz, d1=d1, d2=d2,
                      r_bottom=r_bottom or rim + 0.01, k_bottom=k_bottom or 5.0 * d1, pn=pn, pn_max=pn_max,
                      curve=curve)


def _fit_spring(f: _File, data) -> tuple[float, float]:
    """d1, d2 of Fz = d1·δ + d2·δ² fitted to a spring table by least squares (Chrono's SetVerticalStiffness)."""
    t = _table(f, "Tire Spring Curve Data", data)
    A = np.stack([t[:, 0], t[:, 0] ** 2], axis=1)
    d1, d2 = np.linalg.lstsq(A, t[:, 1], rcond=None)[0]
    if not d1 > 0:
        raise MechError(f.path, f.line("Tire Spring Curve Data"), f'"Tire Spring Curve Data" fits a stiffness '
                                                                   f"{d1:g} N/m; expected a table whose slope is > 0")
    return float(d1), float(d2)


def _table(f: _File, key: str, data) -> np.ndarray:
    ok = isinstance(data, list) and len(data) >= 2 and all(
        isinstance(r, list) and len(r) == 2 and all(isinstance(v, (int, float)) and math.isfinite(v) for v in r)
        for r in data)
    t = np.array(data, dtype=float) if ok else None
    if t is None or t[0, 0] < 0 or np.any(np.diff(t[:, 0]) <= 0) or np.any(np.diff(t[:, 1]) < 0):
        raise MechError(f.path, f.line(key), f'"{key}" is not a table of [deflection, force] rows; expected at '
                                             "least two rows, deflections >= 0 increasing, forces not decreasing")
    return t


def _fiala(f: _File, common: dict) -> TireParams:
    """Fiala's parameters (FialaTire.cpp): the vertical table has precedence over the linear stiffness."""
    P = "Fiala Parameters"
    mass = f.number("Mass", lo=0.0, lo_open=True)
    r0 = f.number(P, "Unloaded Radius", lo=0.0, lo_open=True)
    umin = f.number(P, "UMIN", lo=0.0, lo_open=True)
    table = _table(f, "Vertical Curve Data", f.get(P, "Vertical Curve Data")) if f.has(P, "Vertical Curve Data") \
        else None
    return TireParams(
        **common, mass=mass, r0=r0, width=f.number(P, "Width", lo=0.0, lo_open=True),
        mu0=f.number("Coefficient of Friction", lo=0.0, lo_open=True, hi=2.0, default=0.8),
        rr=f.number(P, "Rolling Resistance", lo=0.0, hi=1.0), dz=f.number(P, "Vertical Damping", lo=0.0),
        kz=f.number(P, "Vertical Stiffness", lo=0.0, lo_open=True), table=table,
        cslip=f.number(P, "CSLIP", lo=0.0, lo_open=True), calpha=f.number(P, "CALPHA", lo=0.0, lo_open=True),
        umin=umin, umax=f.number(P, "UMAX", lo=umin))


def tire_params(name: str, body: int, data: str, contact: str, axis: np.ndarray) -> TireParams:
    """One tire's parameters from its data file `data`."""
    f = _File(data)
    template = f.get("Template")
    if template not in LAWS:
        raise MechError(data, f.line("Template"), f'"Template" is {template!r}; expected one of '
                                                  f"{', '.join(repr(k) for k in LAWS)}")
    common = dict(name=name, body=body, law=LAWS[template], points=POINTS[contact],
                  axis=np.asarray(axis, dtype=float) / np.linalg.norm(axis), data=data)
    return _tmeasy(f, common) if template == "TMeasyTire" else _fiala(f, common)


LAW_FIELDS = {TMEASY: ("r0", "width", "mu0", "rr", "dz", "d1", "d2", "r_bottom", "k_bottom", "pn", "pn_max"),
              FIALA: ("r0", "width", "mu0", "rr", "dz", "kz", "cslip", "calpha", "umin", "umax")}


def law_fields(tp: TireParams) -> tuple[str, ...]:
    """The numbers tire.c reads of `tp`'s law (a Fiala tire's vertical table takes kz's place)."""
    return tuple(f for f in LAW_FIELDS[tp.law] if not (f == "kz" and tp.table is not None))


def model_tires(model: Model) -> tuple[TireParams, ...]:
    """Every tire of `model`, its parameters read from its data file, a declared parameter's value in place of
    the file's (docs/params.md); the spin axis is its wheel's joint axis."""
    out = []
    for t in model.tires:
        tp = tire_params(t.name, t.body, t.data, t.contact, model.bodies[t.body].axis)
        unread = [f for f, _ in t.given if f not in law_fields(tp)]
        if unread:  # a value the law would ignore: refused, never a run that silently lacks it
            raise ValueError(f"tire '{t.name}': its law reads {', '.join(law_fields(tp))}, not {unread[0]}")
        out.append(dataclasses.replace(tp, **dict(t.given)))
    return tuple(out)


def _file_value(model: Model, i: int, field: str) -> float:
    t = model.tires[i]
    return float(getattr(tire_params(t.name, t.body, t.data, t.contact, model.bodies[t.body].axis), field))


def _used(model: Model, i: int) -> tuple[str, ...]:
    t = model.tires[i]
    return law_fields(tire_params(t.name, t.body, t.data, t.contact, model.bodies[t.body].axis))


params.TIRE_VALUE.update(read=_file_value, fields=_used)  # the core's parameters read tires through these


def check_reach(model: Model, tires: tuple[TireParams, ...], terrain) -> None:
    """Refuse tires the terrain does not reach at the design pose: a wheel centre below the terrain, or, on a
    grid, off its nodes (beyond them the height is extrapolated, not data). `terrain(x, y)` -> (h, hx, hy)."""
    from mechdyn.core.kinematics import forward_kinematics  # noqa: PLC0415  (kinematics only where tires are)

    kin = forward_kinematics(model, model.q_design if model.q_design is not None else model.q0())
    g = model.ground
    for t, decl in zip(tires, model.tires):
        x, y, z = kin.p[t.body]
        name = model.bodies[t.body].name
        if g.terrain == "grid":
            x0, y0, dx, dy = (float(v) for v in g.params)
            ny, nx = np.shape(g.heights)
            if not (x0 <= x <= x0 + (nx - 1) * dx and y0 <= y <= y0 + (ny - 1) * dy):
                raise MechError(model.path, decl.line, f"tire '{t.name}': its wheel '{name}' is at x {x:.3f}, y "
                                                       f"{y:.3f}, off the ground's grid (x {x0:g} to "
                                                       f"{x0 + (nx - 1) * dx:g}, y {y0:g} to {y0 + (ny - 1) * dy:g}); "
                                                       "expected terrain under every wheel")
        h = terrain(x, y)[0]
        if not z > h:
            raise MechError(model.path, decl.line, f"tire '{t.name}': its wheel '{name}' has its centre at z {z:.3f}, "
                                                   f"at or below the terrain's {h:.3f}; expected the wheel above the "
                                                   "ground at the design pose")
