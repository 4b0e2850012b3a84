"""Write the long-chain models: chain63.mech, band63.mech and twobands.mech (issue 18).

Run from anywhere: `python models/make_chains.py` regenerates the committed files beside this script
(tests/test_chain_models.py checks that they equal what it writes). The functions build the text of
chains of any length, so the tests can build the 15- and 31-shoe chains in memory.

The .mech format has no per-joint initial angle: at q = 0 every body frame is aligned with the base and
xtree is a pure translation. So a band is laid out at q = 0 as a regular polygon of side = pitch in the
xz-plane, each shoe's xtree its predecessor's pin-to-pin vector. The vectors are rounded to whole
picometres and the last one is minus the sum of the others, in integers, so the loop closes at q = 0 to
the round-off of reading the decimals back, whatever the libm.
"""
from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Iterable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from a checkout
from mechdyn.cliutil import atomic_write  # noqa: E402

HERE = Path(__file__).resolve().parent
SHOE_JSON = "M113/track_shoe/M113_TrackShoeSinglePin.json"
CHASSIS_JSON = "M113/chassis/M113_Chassis.json"
VEHICLE_JSON = "M113/vehicle/M113_Vehicle_SinglePin.json"
DATA = "/work/shared/data/chrono-vehicle/"

TRACK_JSON = "M113/track_assembly/M113_TrackAssemblySinglePin_Left.json"

SHOES = 63  # TRACK_JSON "Track Shoes" "Number Shoes"
PITCH = 0.154  # SHOE_JSON "Shoe" "Pitch", m
SHOE_MASS = 18.02  # SHOE_JSON "Shoe" "Mass", kg
# SHOE_JSON "Shoe" "Inertia": principal moments about the shoe's x (along the band), y (the pin axis) and z (its
# normal), kg m^2
SHOE_INERTIA = (0.22, 0.04, 0.25)
HULL_MASS = 7819.24  # CHASSIS_JSON "Mass", kg
HULL_INERTIA = (13983.08, 27287.61, 28805.57)  # CHASSIS_JSON "Moments of Inertia" (products 0), kg m^2
HULL_CG = (-2.006, 0.0, 0.406)  # CHASSIS_JSON "Centroidal Frame" "Location", m
TRACK_OFFSET = 1.0795  # VEHICLE_JSON "Track Assemblies" "Offset" (+ left, - right), m

PM = 10**12  # picometres per metre: the grid the pin vectors are rounded to


def num(x: float) -> str:
    """x rounded to 12 decimals, in the shortest positional form that reads back as that double; -0 written 0."""
    s = np.format_float_positional(round(x, 12), trim="-")
    return "0" if s == "-0" else s


def nums(xs: Iterable[float]) -> str:
    return " ".join(num(float(x)) for x in xs)


def pin_vectors(n: int, pitch: float = PITCH) -> list[tuple[int, int]]:
    """The n pin-to-pin vectors (x, z) of a regular n-gon of side `pitch`, in picometres, summing to exactly 0.

    Pin j sits at R (sin 2πj/n, cos 2πj/n − 1): the band starts at its first pin heading +x and turns down
    (clockwise with x to the right and z up), so an open chain of them hangs below its first pin.
    """
    R = pitch / (2 * math.sin(math.pi / n))
    pins = [(R * math.sin(2 * math.pi * j / n), R * (math.cos(2 * math.pi * j / n) - 1)) for j in range(n)]
    vecs = [(round((b[0] - a[0]) * PM), round((b[1] - a[1]) * PM)) for a, b in zip(pins, pins[1:])]
    vecs.append((-sum(v[0] for v in vecs), -sum(v[1] for v in vecs)))  # back onto the first pin
    return vecs


def shoe_inertia(dx: float, dz: float) -> np.ndarray:
    """The shoe's inertia tensor (about its cg) with its x axis turned onto the pin-to-pin direction (dx, 0, dz)."""
    u = np.array([dx, 0.0, dz]) / math.hypot(dx, dz)
    R = np.column_stack([u, [0.0, 1.0, 0.0], np.cross(u, [0.0, 1.0, 0.0])])
    return R @ np.diag(SHOE_INERTIA) @ R.T


def shoe_blocks(n: int, prefix: str, root: str, root_xtree: tuple[float, float, float]) -> list[str]:
    """The n shoe bodies of one band: shoe 1 hinged to `root` at `root_xtree`, each next one at the previous
    shoe's trailing pin."""
    vecs = pin_vectors(n)
    out = []
    for k, (ix, iz) in enumerate(vecs, 1):
        d = np.array([ix, 0, iz]) / PM
        I = shoe_inertia(d[0], d[2])
        if k == 1:
            parent, xt = root, np.array(root_xtree, dtype=float)
        else:
            parent, xt = f"{prefix}{k - 1:02d}", np.array([vecs[k - 2][0], 0, vecs[k - 2][1]]) / PM
        turn = math.degrees(math.atan2(-d[2], d[0])) % 360
        out.append(f"# {prefix}{k:02d}: pin to pin {nums(d)}, turned {turn:.4f} deg clockwise from +x\n"
                   f"body {prefix}{k:02d}\n"
                   f"  parent {parent}\n"
                   f"  joint revolute y\n"
                   f"  xtree {nums(xt)}\n"
                   f"  mass {num(SHOE_MASS)}\n"
                   f"  cg {nums(d / 2)}\n"
                   f"  inertia {nums([I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]])}\n"
                   f"end\n")
    return out


def closure_block(n: int, prefix: str, name: str) -> str:
    """The point-on-line loop (axis y) putting the last shoe's trailing pin onto the first shoe's leading pin."""
    ix, iz = pin_vectors(n)[-1]
    return (f"# {name}: the last shoe's trailing pin (its pin-to-pin vector, in its frame) stays on the pin\n"
            f"# axis y through the first shoe's leading pin (its frame origin)\n"
            f"loop {name}\n"
            f"  joint point-on-line\n"
            f"  pred {prefix}01\n"
            f"  succ {prefix}{n:02d}\n"
            f"  anchor_pred 0 0 0\n"
            f"  anchor_succ {nums(np.array([ix, 0, iz]) / PM)}\n"
            f"  axis y\n"
            f"end\n")


def _numbers(n: int) -> str:
    R = PITCH / (2 * math.sin(math.pi / n))
    return (f"# Numbers  : shoe mass {num(SHOE_MASS)} kg, pitch {num(PITCH)} m, principal inertia\n"
            f"#            {' '.join(num(x) for x in SHOE_INERTIA)} kg m^2 about the shoe's x (along the band),\n"
            f"#            y (pin axis) and z (normal): {SHOE_JSON}\n"
            f"#            \"Shoe\" \"Mass\", \"Pitch\", \"Inertia\". {SHOES} shoes per M113 band:\n"
            f"#            {TRACK_JSON} \"Number Shoes\".\n"
            f"#            Each shoe's cg at mid-pitch (Chrono's shoe has its pins at +-pitch/2 about\n"
            f"#            its centre), its inertia rotated onto its pin-to-pin direction (so Ixz\n"
            f"#            appears). Polygon radius {R:.6f} m; band mass {num(n * SHOE_MASS)} kg.\n"
            f"# Data     : Project Chrono vehicle data (BSD-3), {DATA}\n")


def _geometry(n: int, closed: bool, bands: int = 1) -> str:
    shoes, loop = ("each band's shoes", "loops close") if bands > 1 else ("the shoes", "loop closes")
    return (f"# Geometry : at q = 0 {shoes} lie on a regular {n}-gon of side = pitch in the xz-plane,\n"
            f"#            pins along y, gravity -z. Pin j at R (sin 2 pi j/{n}, 0, cos 2 pi j/{n} - 1) from the\n"
            f"#            first pin: the band heads +x and turns down (clockwise, x right and z up). Each shoe's\n"
            f"#            frame origin is its leading pin; the next shoe's xtree is its pin-to-pin\n"
            f"#            vector (rounded to 1e-12 m, the last one closing the polygon exactly), so\n"
            + (f"#            the {loop} at q = 0 to round-off and the design pose is q = 0.\n" if closed else
               "#            the last shoe's trailing pin sits on the first pin at q = 0 (not joined).\n"))


def chain_text(n: int = SHOES, closed: bool = False) -> str:
    """A revolute-y chain of n shoes hanging from the base; `closed` adds the band's point-on-line closure."""
    name = f"band{n}" if closed else f"chain{n}"
    what = ("one closed track band of shoes hinged to the base" if closed else
            "an open revolute chain of track shoes hanging from the base")
    topo = (f"# Topology : base -> shoe01 -> ... -> shoe{n:02d}, {n} revolute y joints in one chain\n"
            f"#            (the spanning tree); nbody {n}, nq = nv = {n}, "
            + (f"nc 2, mobility {n - 2}.\n"
               f"#            Loop 'band' closes shoe{n:02d}'s trailing pin onto shoe01's leading pin with a\n"
               f"#            point-on-line joint along the pin axis y: the two in-plane translations (a\n"
               f"#            revolute would over-constrain the planar loop).\n" if closed else "no loops.\n"))
    head = (f"# {name} -- {what}\n"
            f"#            (generated by models/make_chains.py: edit that, not this file)\n#\n"
            + topo + _geometry(n, closed) + _numbers(n) + "gravity 0 0 -9.81\n\n")
    blocks = shoe_blocks(n, "shoe", "base", (0.0, 0.0, 0.0))
    if closed:
        blocks.append(closure_block(n, "shoe", "band"))
    return head + "\n".join(blocks)


def twobands_text(n: int = SHOES) -> str:
    """A floating M113 hull carrying two closed bands of n shoes, each hinged by its first shoe to the hull."""
    x, z = HULL_CG[0], 0.0
    nv = 6 + 2 * n
    head = (f"# twobands -- an M113-shaped tree: a floating hull carrying two closed track bands\n"
            f"#            (generated by models/make_chains.py: edit that, not this file)\n#\n"
            f"# Topology : hull floating, parent base\n"
            f"#              +- left01 -> ... -> left{n:02d}    revolute y chain, closed by loop 'left'\n"
            f"#              +- right01 -> ... -> right{n:02d}  revolute y chain, closed by loop 'right'\n"
            f"#            Each band is hinged to the hull by its first shoe; each loop (point-on-line,\n"
            f"#            axis y) puts the last shoe's trailing pin onto the first shoe's leading pin.\n"
            f"#            nbody {2 * n + 1}; nq = 7 + {2 * n} = {nv + 1}, nv = 6 + {2 * n} = {nv}, nc = 4, "
            f"mobility {nv - 4}.\n"
            f"#            The shape of the M113's tree with its two band closures; the band path is\n"
            f"#            a polygon, not the M113's sprocket-idler-road-wheel path (no rollers here).\n"
            f"# Frame    : the hull frame is Chrono's chassis reference frame (x forward, y left, z\n"
            f"#            up), at the base origin at the design pose. The first pin of each band at\n"
            f"#            x = {num(x)} (under the hull's cg, so the bands hang symmetric about it), z = {num(z)},\n"
            f"#            y = +-{num(TRACK_OFFSET)}: {VEHICLE_JSON}\n"
            f"#            \"Track Assemblies\" \"Offset\".\n"
            f"# Hull     : mass {num(HULL_MASS)} kg, cg {nums(HULL_CG)}, principal inertia\n"
            f"#            {' '.join(num(v) for v in HULL_INERTIA)} kg m^2: {CHASSIS_JSON}\n"
            f"#            \"Mass\", \"Centroidal Frame\" \"Location\", \"Moments of Inertia\".\n"
            + _geometry(n, True, bands=2)
            + _numbers(n)
            + "gravity 0 0 -9.81\n\n"
            f"body hull\n"
            f"  parent base\n"
            f"  joint floating\n"
            f"  xtree 0 0 0\n"
            f"  mass {num(HULL_MASS)}\n"
            f"  cg {nums(HULL_CG)}\n"
            f"  inertia {nums(HULL_INERTIA)} 0 0 0\n"
            f"end\n\n")
    blocks = [*shoe_blocks(n, "left", "hull", (x, TRACK_OFFSET, z)),
              *shoe_blocks(n, "right", "hull", (x, -TRACK_OFFSET, z)),
              closure_block(n, "left", "left"), closure_block(n, "right", "right")]
    return head + "\n".join(blocks)


def models() -> dict[str, str]:
    """File name -> text of every model this script writes."""
    return {f"chain{SHOES}.mech": chain_text(SHOES), f"band{SHOES}.mech": chain_text(SHOES, closed=True),
            "twobands.mech": twobands_text(SHOES)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="Shoe and hull data: Project Chrono's M113 vehicle data (BSD-3) under " + DATA)
    ap.add_argument("--out", type=Path, default=HERE, help="directory to write into (default: %(default)s)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in models().items():
        atomic_write(args.out / name, text)
        print(f"wrote {args.out / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
