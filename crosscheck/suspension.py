"""The suspension's geometry swept through its travel: mechdyn's quarter car against Chrono::Vehicle's own HMMWV
double wishbone built from the same JSON files (crosscheck/chrono/vehicle.py).

Both sides hold the chassis and move the wheel centre to a height, quasi-statically, and read the wheel's
attitude and the elements' lengths there. What this compares is the model's fidelity to the vehicle, not the
algebra: a control arm turning about the wrong axis moves camber and toe (bump steer) by tenths of a degree.

Definitions, the same on both sides, with s the wheel's spin axis (the spindle's y) in the chassis frame
(x forward, y left, z up), for the left wheel:
- travel: the wheel centre's z minus its design z (m), positive up (bump);
- camber: atan2(−s_z, s_y) in degrees, positive when the wheel's top leans outward;
- toe: atan2(s_x, s_y) in degrees, positive when the wheel's front turns inward (toe-in);
- spring and shock: the distances between their two attachment points (m);
- x and y: the wheel centre's (m).
"""
from __future__ import annotations

import dataclasses as dc
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from mechdyn.core.integrate import integrate
from mechdyn.core.kinematics import forward_kinematics, point_state
from mechdyn.core.loops import body_jacobian, closure
from mechdyn.core.model import Model

FIELDS = ("camber", "toe", "spring", "shock", "x", "y")
UNITS = {"camber": "deg", "toe": "deg", "spring": "m", "shock": "m", "x": "m", "y": "m"}
GATES = {"camber": 1e-3, "toe": 1e-3, "spring": 1e-5, "shock": 1e-5, "x": 1e-5, "y": 1e-5}  # issue 33
TRAVEL = 0.1  # m each way


@dataclass(frozen=True)
class Sweep:
    """One engine's geometry at each travel (all arrays (n,))."""
    engine: str
    travel: np.ndarray
    camber: np.ndarray
    toe: np.ndarray
    spring: np.ndarray
    shock: np.ndarray
    x: np.ndarray
    y: np.ndarray


def angles(s: np.ndarray) -> tuple[float, float]:
    """Camber and toe in degrees of a left wheel whose spin axis is s (module docstring)."""
    return float(np.degrees(np.arctan2(-s[2], s[1]))), float(np.degrees(np.arctan2(s[0], s[1])))


def old_axes(model: Model) -> Model:
    """The model with every upper control arm turning about x again: the approximation the HMMWV models carried
    before joint axes could point anywhere, which the gate must refuse."""
    return dc.replace(model, bodies=tuple(dc.replace(b, axis=np.array([1.0, 0.0, 0.0])) if b.name.startswith("uca")
                                          else b for b in model.bodies))


def _wheel_state(model: Model, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    kin = forward_kinematics(model, q)
    w = model.body_index("wheel")
    return kin.p[w], kin.R[w][:, 1]


def mechdyn_sweep(model: Model, travel: np.ndarray, held: str = "sprung", tol: float = 1e-13) -> Sweep:
    """The quarter car's geometry with body `held` (the chassis) at its design pose and the wheel centre at each
    travel: Gauss-Newton on the loop closures and the wheel centre's height, every other coordinate free (the post
    follows the tire rod), from the design pose outward so each solve starts from its neighbour's."""
    w = model.body_index("wheel")
    fixed = model.vidx[model.body_index(held)]
    q0 = model.q0()
    z0 = _wheel_state(model, q0)[0][2]
    elems = {e.name: e for e in model.tsdas}
    out = {f: np.zeros(len(travel)) for f in FIELDS}
    order = np.argsort(np.abs(travel))
    solved: dict[int, np.ndarray] = {}
    for k in order:
        near = min(solved, key=lambda j: abs(travel[j] - travel[k]), default=None)
        q = (solved[near] if near is not None else q0).copy()
        for _ in range(50):
            kin = forward_kinematics(model, q)
            phi, K = closure(model, q, kin)
            J = body_jacobian(model, kin, w)
            p = kin.p[w]
            Jz = J[5] - (p[0] * J[1] - p[1] * J[0])  # the wheel centre's z velocity: (v_O + ω × p)_z
            r = np.append(phi, p[2] - (z0 + travel[k]))
            if np.max(np.abs(r)) <= tol:
                break
            A = np.vstack([K, Jz])
            A[:, fixed] = 0.0
            q = integrate(model, q, scipy.linalg.lstsq(A, -r, cond=1e-12)[0], 1.0)
        else:
            raise RuntimeError(f"travel {travel[k]:+.4f} m: the closure did not converge (residual {np.abs(r).max():.2e})")
        solved[int(k)] = q
        kin = forward_kinematics(model, q)
        out["camber"][k], out["toe"][k] = angles(kin.R[w][:, 1])
        out["x"][k], out["y"][k] = kin.p[w][0], kin.p[w][1]
        for name in ("spring", "shock"):
            e = elems[name]
            a, b = (point_state(model, kin, model.pois[i].body, model.pois[i].pos)[0] for i in (e.poi_a, e.poi_b))
            out[name][k] = float(np.linalg.norm(b - a))
    return Sweep("mechdyn", np.asarray(travel, dtype=float), **out)


def differences(a: Sweep, b: Sweep) -> dict[str, float]:
    """The largest |a − b| of each field over the sweep (the travels must match)."""
    if not np.array_equal(a.travel, b.travel):
        raise ValueError("the sweeps are at different travels")
    return {f: float(np.max(np.abs(getattr(a, f) - getattr(b, f)))) for f in FIELDS}


def plot(sweeps: list[Sweep], path: str, title: str) -> None:
    """The six curves against travel, every sweep on the same axes, and the differences of the first two."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(13, 7.5), constrained_layout=True)
    styles = [dict(color="C0", lw=2.2), dict(color="C3", lw=1.0, ls="--", marker="o", ms=2.5), dict(color="0.5", lw=1.0, ls=":")]
    for ax, f in zip(axes.flat, FIELDS):
        for s, st in zip(sweeps, styles):
            ax.plot(s.travel * 1e3, getattr(s, f), label=s.engine, **st)
        if len(sweeps) >= 2:
            d = np.max(np.abs(getattr(sweeps[0], f) - getattr(sweeps[1], f)))
            ax.set_title(f"{f}: largest difference {d:.2g} {UNITS[f]} (gate {GATES[f]:g})", fontsize=9)
        ax.set_xlabel("wheel travel (mm, + bump)")
        ax.set_ylabel(f"{f} ({UNITS[f]})")
        ax.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=8)
    fig.suptitle(title)
    fig.savefig(path, dpi=110)
    plt.close(fig)
