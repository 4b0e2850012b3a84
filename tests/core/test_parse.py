"""The `.mech` parser: a file using every construct, one case per error class, and fuzzing."""
from __future__ import annotations

import dataclasses
import importlib
import math
import pickle
import re
import time
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mechdyn.core import BASE, MechError, ModelNotFound, load_model
from mechdyn.core import parse as parse_and_assemble
from mechdyn.core.model import _frozen


def parse(text: str, *args, **kwargs):
    """The parser alone: FULL's loops are arbitrary geometry that need not close (assembly has its own tests)."""
    return parse_and_assemble(text, *args, assemble=False, **kwargs)

# the package re-exports the function `parse`, which shadows the submodule's attribute
parse_module = importlib.import_module("mechdyn.core.parse")

DOCS = Path(__file__).resolve().parents[2] / "docs" / "mech-format.md"

# Every construct of the format. Bodies: floating, revolute, prismatic, on a
# support path of depth 2 (slider -> arm) and below a floating body (chassis -> wheel).
FULL = """\
# every construct of the format
gravity 0 0 -9.81
stab 0.05

body chassis
  parent base
  joint floating
  xtree 1 2 3
  mass 100
  cg 0 0 0.1
  inertia 10 20 25 0.5 -0.2 0.1
  fext 1
end

body wheel
  parent chassis
  joint revolute y
  xtree 0.5 -0.4 0
  mass 5
  inertia 0.2 0.3 0.2 0 0 0
end

body wheel2
  parent chassis
  joint revolute y
  xtree -0.5 -0.4 0
  mass 5
  inertia 0.2 0.3 0.2 0 0 0
end

body slider
  parent base
  joint prismatic x
  xtree 0 0 1
  mass 2
  inertia 0.1 0.7 0.8 0 0 0   # a thin plate: on the triangle inequality (0.1 + 0.7 < 0.8 in floats)
end

body arm
  parent slider
  joint revolute z
  xtree 0.3 0 0
  mass 1
  cg 0.1 0 0
  inertia 0.001 0.01 0.01 0 0 0
end

poi top chassis 0 0 1
poi tip arm 0.2 0 0
poi hook base 0 0 0

loop l_rev
  joint revolute
  pred base
  succ arm
  anchor_pred 0.5 0 1
  anchor_succ 0.2 0 0
  axis z
end

loop l_pri
  joint prismatic
  pred slider
  succ arm
  anchor_pred 0 0 0
  anchor_succ 0 0 0
  axis 0 0 2
end

loop l_cyl
  joint cylindrical
  pred chassis
  succ wheel
  anchor_pred 0.5 -0.4 0
  anchor_succ 0 0 0
  axis y
end

loop l_sph
  joint spherical
  pred base
  succ chassis
  anchor_pred 1 2 3
  anchor_succ 0 0 0
end

loop l_pol
  joint point-on-line
  pred wheel
  succ wheel2
  anchor_pred 0 0 0
  anchor_succ 0 0 0
  axis 3 0 -4
end

loop l_dist
  joint distance
  pred slider
  succ wheel
  anchor_pred 0 0 0.5
  anchor_succ 0 0.1 0
end

loop l_rod
  joint distance
  pred chassis
  succ arm
  anchor_pred 0 0 0
  anchor_succ 0 0 0
  length 0.7
end

tsda spring
  between top tip
  k 100
  c 1
  l0 0.5
end

tsda cable
  between hook tip
  l0 0
  input
end

rsda motor
  joint wheel
  input
end

rsda damper
  joint slider
  c 3
  q0 0.1
end

tsda strut
  between tip top
  k 5
  l0 1.5
  input
end

track left
  root chassis
  plane xz
  shoes 40
  pitch 0.15
  mass 2
  cg 0 0 0.01
  inertia 0.01 0.02 0.02 0 0 0
  fext 0
  roller wheel 0.3 end drive teeth 12 root 0.25
  roller wheel2 0.3 end
  roller chassis 0.1
  pad -0.02 0.1 0.3
  thickness 0.01
  kn 1e6
  kt 5e5
  mu 0.8
end

ground
  terrain plane 0 0 2 0.5
  kn 1e5
  mu 0.7
end
"""

# A minimal valid body, for building error cases.
BODY_A = """\
body a
  parent base
  joint revolute y
  mass 1
  inertia 1 1 1 0 0 0
end
"""


def test_full_model_layout():
    m = parse(FULL, "models/full.mech")
    assert m.name == "full" and m.path == "models/full.mech" and m.source == FULL
    assert [b.name for b in m.bodies] == ["chassis", "wheel", "wheel2", "slider", "arm"]
    assert [b.joint for b in m.bodies] == ["floating", "revolute", "revolute", "prismatic", "revolute"]
    assert [b.axis_index for b in m.bodies] == [-1, 1, 1, 0, 2]
    assert [b.parent for b in m.bodies] == [BASE, 0, 0, BASE, 3]
    assert [b.fext for b in m.bodies] == [True, False, False, False, False]
    assert (m.nq, m.nv) == (11, 10)
    assert m.qidx == (0, 7, 8, 9, 10) and m.vidx == (0, 6, 7, 8, 9)
    assert m.q0().tolist() == [1, 0, 0, 0, 1, 2, 3, 0, 0, 0, 0]
    assert m.gravity.tolist() == [0, 0, -9.81] and m.stab == 0.05
    assert m.bodies[4].line == FULL.split("\n").index("body arm") + 1 and m.bodies[4].cg.tolist() == [0.1, 0, 0]


def test_full_model_inertia():
    chassis = parse(FULL).bodies[0]
    assert chassis.mass == 100
    np.testing.assert_array_equal(chassis.inertia, [[10, 0.5, -0.2], [0.5, 20, 0.1], [-0.2, 0.1, 25]])
    with pytest.raises(ValueError):  # read-only: a Model cannot be mutated through its arrays
        chassis.inertia[0, 0] = 1.0


def test_full_model_pois_and_loops():
    m = parse(FULL)
    assert [(p.name, p.body) for p in m.pois] == [("top", 0), ("tip", 4), ("hook", BASE)]
    assert [lp.joint for lp in m.loops] == [
        "revolute", "prismatic", "cylindrical", "spherical", "point-on-line", "distance", "distance"]
    assert [(lp.pred, lp.succ) for lp in m.loops] == [(BASE, 4), (3, 4), (0, 1), (BASE, 0), (1, 2), (3, 1), (0, 4)]
    assert m.nc == 5 + 5 + 4 + 3 + 2 + 1 + 1
    axes = [None if lp.axis is None else lp.axis.tolist() for lp in m.loops]
    assert axes == [[0, 0, 1], [0, 0, 1], [0, 1, 0], None, [0.6, 0, -0.8], None, None]
    # default length: slider origin (0 0 1) + (0 0 0.5) to wheel origin (1 2 3)+(0.5 -0.4 0) + (0 0.1 0)
    assert m.loops[5].length == pytest.approx(math.sqrt(1.5**2 + 1.7**2 + 1.5**2), rel=1e-15)
    assert m.loops[6].length == 0.7
    assert all(lp.length is None for lp in m.loops[:5])


def test_full_model_force_elements():
    m = parse(FULL)
    assert [(t.name, t.poi_a, t.poi_b, t.k, t.c, t.l0, t.act) for t in m.tsdas] == [
        ("spring", 0, 1, 100, 1, 0.5, -1), ("cable", 2, 1, 0, 0, 0, 0), ("strut", 1, 0, 5, 0, 1.5, 2)]
    assert [(r.name, r.body, r.k, r.c, r.q0, r.act) for r in m.rsdas] == [
        ("motor", 1, 0, 0, 0, 1), ("damper", 3, 0, 3, 0.1, -1)]
    assert m.nact == 3


def test_full_model_track_and_ground():
    m = parse(FULL)
    (t,) = m.tracks
    assert (t.name, t.root, t.plane, t.shoes, t.pitch, t.mass, t.fext) == ("left", 0, "xz", 40, 0.15, 2, False)
    assert t.cg.tolist() == [0, 0, 0.01] and t.inertia.tolist() == [[0.01, 0, 0], [0, 0.02, 0], [0, 0, 0.02]]
    assert [(r.body, r.radius, r.end, r.drive, r.teeth, r.root) for r in t.rollers] == [
        (1, 0.3, True, True, 12, 0.25), (2, 0.3, True, False, 0, 0.0), (0, 0.1, False, False, 0, 0.0)]
    assert t.pad.tolist() == [-0.02, 0.1, 0.3] and (t.thickness, t.kn, t.kt, t.mu) == (0.01, 1e6, 5e5, 0.8)
    g = m.ground
    assert (g.terrain, g.kn, g.kt, g.mu) == ("plane", 1e5, None, 0.7)
    assert g.line == FULL.split("\n").index("ground") + 1
    assert g.params.tolist() == [0, 0, 1, 0.25]  # unit normal, d scaled with it


def grid_ground(rows: list[str], terrain: str = "grid -1 -2 0.5 0.25") -> str:
    """A ground block with the given 'heights' rows (field text) under 'terrain TERRAIN'."""
    return (f"ground\n  terrain {terrain}\n" + "".join(f"  heights {r}\n" for r in rows)
            + "  kn 2e5\n  mu 0.8\nend\n")


GRID_ROWS = ["0 0.1 0.2 0.3 0.4", "0 0 0 0 0", "1 1 1 1 -1", "-1e-3 2 3 4 5"]  # 4 rows (y) of 5 columns (x)
_PLANE = "ground\n  terrain plane 0 0 2 0.5\n  kn 1e5\n  mu 0.7\nend\n"
FULL_GRID = FULL.replace(_PLANE, grid_ground(GRID_ROWS))  # every construct, the ground a grid


def test_grid_terrain():
    text = BODY_A + grid_ground(GRID_ROWS)
    g = parse(text).ground
    assert (g.terrain, g.kn, g.kt, g.mu) == ("grid", 2e5, None, 0.8)
    assert g.params.tolist() == [-1, -2, 0.5, 0.25]  # x0 y0 dx dy
    assert g.heights.shape == (4, 5)  # (ny, nx): row j is y0 + j·dy, column i is x0 + i·dx
    assert g.heights.tolist() == [[float(x) for x in r.split()] for r in GRID_ROWS]
    assert g.heights[3, 0] == -1e-3 and g.heights[2, 4] == -1
    with pytest.raises(ValueError):  # read-only like the Model's other arrays
        g.heights[0, 0] = 1.0
    with pytest.raises(ValueError):
        g.params[0] = 1.0
    # comments and blank lines between rows, and the minimal 4 x 4 grid
    rows = "  heights 1 2 3 4  # row 0\n\n  heights 5 6 7 8\n  heights 9 10 11 12\n  heights 13 14 15 16\n"
    g = parse(BODY_A + "ground\n  terrain grid 0 0 1 1\n" + rows + "  kn 1\n  mu 0\nend\n").ground
    assert g.heights.tolist() == np.arange(1.0, 17.0).reshape(4, 4).tolist()
    # the other terrains carry no heights
    assert parse(BODY_A + _GROUND.format(terrain="sine 0 0.1 2 2")).ground.heights is None
    assert parse(FULL).ground.heights is None
    assert FULL_GRID != FULL and parse(FULL_GRID).ground.heights.tolist() == parse(text).ground.heights.tolist()


def test_grid_heights_round_trip_exactly():
    """Heights written with repr come back bit for bit, at every magnitude the length bounds allow."""
    rng = np.random.default_rng(20)
    h = rng.choice([-1.0, 1.0], (6, 9)) * rng.uniform(1, 9.999, (6, 9)) * 10.0 ** rng.integers(-9, 4, (6, 9))
    h[0, 0], h[1, 1], h[2, 2], h[3, 3] = 0.0, 1e4, -1e-9, -0.0
    g = parse(BODY_A + grid_ground([" ".join(repr(float(x)) for x in row) for row in h])).ground
    assert g.heights.shape == h.shape and g.heights.tobytes() == h.tobytes()


def ground_fingerprint_collisions(model) -> list[str]:
    """The one-leaf changes of the model's ground (each height and parameter by one ulp, each other field) that
    leave the model's fingerprint unchanged: the compile cache would take the changed model for the old one."""
    from mechdyn.core.fingerprint import fingerprint

    g = model.ground
    variants = [("terrain", dataclasses.replace(g, terrain=g.terrain + "_")),
                ("kn", dataclasses.replace(g, kn=float(np.nextafter(g.kn, np.inf)))),
                ("kt", dataclasses.replace(g, kt=1.0)),
                ("mu", dataclasses.replace(g, mu=float(np.nextafter(g.mu, np.inf)))),
                ("heights shape", dataclasses.replace(g, heights=_frozen(g.heights[:, :-1])))]
    for name in ("params", "heights"):
        a = getattr(g, name)
        for k in np.ndindex(a.shape):
            v = a.copy()
            v[k] = np.nextafter(v[k], np.inf)
            variants.append((f"{name}{list(k)}", dataclasses.replace(g, **{name: v})))
    base = fingerprint(model)
    return [w for w, v in variants if fingerprint(dataclasses.replace(model, ground=v)) == base]


def test_the_fingerprint_sees_every_grid_value(monkeypatch):
    """Ground never reaches the generated C, but the fingerprint keys the compile cache and the harness's drawn
    states, so it must see every field; shown to catch heights left out of it."""
    model = parse(BODY_A + grid_ground(GRID_ROWS))
    assert ground_fingerprint_collisions(model) == []
    fp = importlib.import_module("mechdyn.core.fingerprint")
    monkeypatch.setattr(fp, "PROVENANCE_FIELDS", fp.PROVENANCE_FIELDS | {"heights"})  # the planted bug
    assert ground_fingerprint_collisions(model) == ["heights shape"] + [f"heights{[j, i]}"
                                                                        for j in range(4) for i in range(5)]


def test_docs_grid_example_parses():
    section = DOCS.read_text().split("## `ground`", 1)[1].split("\n## ", 1)[0]
    example = section.split("```")[1]
    g = parse(BODY_A + example).ground
    assert g.terrain == "grid" and g.heights.shape[0] >= 4 and g.heights.shape[1] >= 4


@pytest.mark.parametrize("angle", [0.0, 0.3, 1.0, 2.5])
def test_thin_plate_inertia_passes(angle):
    """A plate's Izz = Ixx + Iyy exactly, so rounding must not push it over the triangle inequality."""
    c, s = math.cos(angle), math.sin(angle)
    rot = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
    tensor = rot @ np.diag([0.1, 0.7, 0.8]) @ rot.T
    fields = " ".join(repr(float(x)) for x in (*np.diag(tensor), tensor[0, 1], tensor[0, 2], tensor[1, 2]))
    b = parse(BODY_A.replace("inertia 1 1 1 0 0 0", f"inertia {fields}")).bodies[0]
    np.testing.assert_allclose(np.linalg.eigvalsh(b.inertia), [0.1, 0.7, 0.8], rtol=1e-14)


def test_defaults():
    m = parse(BODY_A + "body b\n parent a\n joint prismatic z\n mass 1\n inertia 1 1 1 0 0 0\nend\n")
    a, b = m.bodies
    assert m.name == "<string>" and m.path == "<string>"
    assert m.gravity.tolist() == [0, 0, -9.81] and m.stab == 0.1
    assert a.xtree.tolist() == [0, 0, 0] and a.cg.tolist() == [0, 0, 0] and a.fext is False
    assert (b.parent, b.joint, b.axis_index) == (0, "prismatic", 2)
    assert m.pois == m.loops == m.tsdas == m.rsdas == m.tracks == () and m.ground is None
    track = parse(FULL.replace("  fext 0\n", "").replace("  cg 0 0 0.01\n", "")).tracks[0]
    assert track.fext is True and track.cg.tolist() == [0, 0, 0]
    assert parse(BODY_A, "x/y/arm.v2.mech").name == "arm.v2"
    assert parse(BODY_A, name="custom").name == "custom"


def test_docs_example_parses():
    example = DOCS.read_text().split("## Example")[1].split("```")[1]
    m = parse(example)
    assert (m.nbody, m.nact, len(m.pois)) == (2, 1, 3)


def test_lexical_details():
    text = "body a   # comment\r\n\tparent base\r\n joint revolute x\r\n mass +2.\r\n inertia .5 .5 .5 0 0 0\r\nend"
    b = parse(text).bodies[0]
    assert (b.mass, b.inertia[0, 0]) == (2.0, 0.5)


# ---------------------------------------------------------------- error classes
#
# Each case is a text with "# <-" on the line the error must be reported at,
# and a phrase the message must contain.

_LOOP = "loop l\n  joint {joint}\n  pred {pred}\n  succ {succ}\n  anchor_pred 0 0 0\n  anchor_succ 0 0 0\n{extra}end\n"
_GROUND = "ground\n  terrain {terrain}\n  kn 1\n  mu 0.5\nend\n"


def loop(joint="revolute", pred="base", succ="a", extra="  axis x\n"):
    return _LOOP.format(joint=joint, pred=pred, succ=succ, extra=extra)


def track(extra="", mark="", **keys):
    """Track 't' on body a; `keys` override its required key lines, `extra` goes before its end."""
    lines = {"root": "a", "shoes": "4", "pitch": "0.1", "mass": "1", "inertia": "1 1 1 0 0 0"} | keys
    return (f"track t{mark}\n" + "".join(f"  {k} {v}\n" for k, v in lines.items())
            + f"  roller a 0.2 end\n{extra}end\n")


def body(name="b", parent="base", joint="revolute y", extra="", mark=""):
    return (f"body {name}{mark}\n  parent {parent}\n  joint {joint}\n  mass 1\n"
            f"  inertia 1 1 1 0 0 0\n{extra}end\n")


BODY_WITH = BODY_A.replace("end\n", "{}end\n")  # body a with extra lines before its end

ERRORS = {
    # unknown keywords and keys
    "unknown keyword": ("bodi a   # <-\n", "unknown keyword 'bodi'; expected one of gravity, stab, poi, param, body, "
                                          "loop, tsda, rsda, track, ground, driver, tire (did you mean 'body'?)"),
    "key outside block": (BODY_A + "  mass 2   # <-\n", "'mass' outside any block; expected it inside a body or track"),
    "unknown key": (BODY_WITH.format("  mas 2   # <-\n"),
                    "unknown key 'mas' in body 'a'; expected one of parent, joint, xtree, rpy, quat, mass, cg, inertia, fext, "
                    "joint_name, limit, effort, velocity, joint_damping, joint_friction (did you mean 'mass'?)"),
    "unknown key ground": ("ground\n  terrain plane 0 0 1 0\n  kn 1\n  muu 1  # <-\n  mu 1\nend\n" + BODY_A,
                           "unknown key 'muu' in ground; expected one of terrain, heights, kn, kt, mu "
                           "(did you mean 'mu'?)"),
    # field counts
    "too few fields": (BODY_WITH.format("  xtree 1 2   # <-\n"),
                       "wrong number of fields for 'xtree' in body 'a': got 2; expected 'xtree x y z'"),
    "too many fields": (BODY_WITH.format("  fext 1 1   # <-\n"), "got 2; expected 'fext 0|1'"),
    "fields on flag": (BODY_A + "poi p a 0 0 0\npoi q a 1 0 0\ntsda t\n  between p q\n  l0 1\n  input 1  # <-\nend\n",
                       "wrong number of fields for 'input' in tsda 't': got 1; expected 'input'"),
    "gravity fields": ("gravity 0 -9.81   # <-\n" + BODY_A, "wrong number of fields for 'gravity': got 2"),
    "block header": ("body   # <-\n", "expected 'body NAME'"),
    "ground name": ("ground g  # <-\n", "the ground block takes no name"),
    "end fields": ("body a\n parent base\n joint floating\n mass 1\n inertia 1 1 1 0 0 0\nend a  # <-\n",
                   "unexpected fields after 'end' of body 'a'"),
    # numbers
    "bad number": (BODY_A.replace("mass 1", "mass abc  # <-"), "bad number 'abc' for 'mass' in body 'a'; expected a "
                                                               "finite decimal literal"),
    "nan": (BODY_WITH.format("  cg 0 nan 0  # <-\n"), "bad number 'nan' for 'cg' in body 'a'"),
    "inf": ("gravity 0 0 -inf  # <-\n" + BODY_A, "bad number '-inf' for 'gravity'"),
    "underscore number": (BODY_A.replace("mass 1", "mass 1_0  # <-"), "bad number '1_0'"),
    "overflow": (BODY_A.replace("mass 1", "mass 1e999  # <-"), "number '1e999' for 'mass' in body 'a' overflows"),
    # required and repeated keys
    "missing key": ("\nbody a  # <-\n  parent base\n  joint revolute y\n  inertia 1 1 1 0 0 0\nend\n",
                    "body 'a' is missing required key 'mass'; expected 'mass m'"),
    "missing ground key": ("ground  # <-\n  terrain plane 0 0 1 0\n  mu 1\nend\n", "missing required key 'kn'"),
    "repeated key": (BODY_WITH.format("  mass 2  # <-\n"), "repeated key 'mass' in body 'a' (first at line 4)"),
    "repeated gravity": ("gravity 0 0 -1\n" + BODY_A + "gravity 0 0 -1  # <-\n",
                         "repeated 'gravity' (first at line 1)"),
    "repeated stab": ("stab 1\nstab 1  # <-\n", "repeated 'stab'"),
    # names
    "bad body name": ("body 1a  # <-\n", "bad body name '1a'; expected a name matching"),
    "bad poi name": (BODY_A + "poi p! a 0 0 0  # <-\n", "bad name 'p!' for 'poi'"),
    "base as body": ("body base  # <-\n  parent base\n  joint floating\n  mass 1\n  inertia 1 1 1 0 0 0\nend\n",
                     "'base' is reserved"),
    "duplicate body": (BODY_A + body("a", mark="  # <-"), "duplicate body name 'a' (first declared at line 1)"),
    "duplicate poi": (BODY_A + "poi p a 0 0 0\npoi p base 0 0 0  # <-\n", "duplicate poi name 'p'"),
    "duplicate loop": (BODY_A + loop() + loop().replace("loop l", "loop l  # <-"), "duplicate loop name 'l'"),
    "duplicate tsda": (BODY_A + "poi p a 0 0 0\npoi q base 0 0 0\n" + "tsda t\n between p q\n l0 1\nend\n"
                       + "tsda t  # <-\n between p q\n l0 1\nend\n", "duplicate tsda name 't'"),
    "duplicate rsda": (BODY_A + "rsda r\n joint a\nend\nrsda r  # <-\n joint a\nend\n", "duplicate rsda name 'r'"),
    "duplicate track": (BODY_A + body("b") + track("  roller b 0.2 end\n")
                        + track("  roller b 0.2 end\n", mark="  # <-"), "duplicate track name 't'"),
    # parents and joints
    "unknown parent": (BODY_A + body(parent="aa").replace("parent aa", "parent aa  # <-"),
                       "unknown parent 'aa' for body 'b'; expected base or a body declared earlier "
                       "(did you mean 'a'?)"),
    "later parent": (body(parent="a").replace("parent a", "parent a  # <-") + BODY_A,
                     "parent 'a' of body 'b' is declared later (line 7)"),
    "own parent": (body(parent="b").replace("parent b", "parent b  # <-"), "body 'b' is its own parent"),
    "floating parent": (BODY_A + body(parent="a", joint="floating").replace("parent a", "parent a  # <-"),
                        "floating body 'b' has parent 'a'; expected parent base"),
    "spherical tree joint": (body(joint="spherical  # <-"), "'joint spherical' in body 'b' is not implemented as a "
                                                            "tree joint; use a floating body with loop closures"),
    "cylindrical tree joint": (body(joint="cylindrical x  # <-"), "not implemented as a tree joint"),
    "unknown joint": (body(joint="hinge y  # <-"), "unknown joint type 'hinge' in body 'b'; expected revolute, "
                                                   "prismatic or floating"),
    "bad tree axis": (body(joint="revolute w  # <-"), "bad axis 'w' for 'joint revolute' in body 'b'; "
                                                      "expected 'joint revolute x|y|z|-x|-y|-z or ax ay az'"),
    "vector tree axis": (body(joint="prismatic 1 0  # <-"), "got 3"),
    "missing tree axis": (body(joint="prismatic  # <-"), "bad axis none for 'joint prismatic'"),
    "floating with axis": (body(joint="floating z  # <-"), "'joint floating' in body 'b' takes no axis"),
    # turned joint frames and axes in any direction (issue 33)
    "zero tree axis": (body(joint="revolute 0 0 0  # <-"), "'joint' in body 'b' is the zero vector; expected a "
                                                            "nonzero direction"),
    "double minus axis": (body(joint="revolute --x  # <-"), "bad axis '--x' for 'joint revolute'"),
    "quaternion off unit": (body(extra="  quat 1 0 0 1  # <-\n"), "'quat' in body 'b' has norm 1.41421; expected a "
                                                                  "unit quaternion w x y z (norm within 0.001 of 1)"),
    "rotation twice": (body(extra="  rpy 0 0 1\n  quat 1 0 0 0  # <-\n"),
                       "body 'b' gives its rotation twice: 'quat' here and 'rpy' at line 6; expected one of rpy or quat"),
    "angle out of bound": (body(extra="  rpy 0 7 0  # <-\n"), "'rpy' in body 'b' is 7, out of bounds for an angle; "
                                                            "expected 0 or 1e-15 <= |value| <= 6.28319 rad"),
    "rpy field count": (body(extra="  rpy 0 1  # <-\n"), "wrong number of fields for 'rpy' in body 'b': got 2; "
                                                        "expected 'rpy roll pitch yaw'"),
    # mass and inertia
    "zero mass": (BODY_A.replace("mass 1", "mass 0  # <-"), "body 'a' has mass 0 and a nonzero inertia; expected "
                  "mass 0 with inertia 0 0 0 0 0 0 (a massless link)"),
    "zero inertia": (BODY_A.replace("inertia 1 1 1 0 0 0", "inertia 0 0 0 0 0 0  # <-"),
                     "body 'a' has mass 1 and a zero inertia"),
    "massless leaf": (BODY_A.replace("body a", "body a  # <-").replace("mass 1", "mass 0").replace("inertia 1 1 1",
                                                                                                 "inertia 0 0 0"),
                      "body 'a' has mass 0 and so does every body it carries"),
    "massless on the axis": (BODY_A.replace("body a", "body a  # <-").replace("mass 1", "mass 0")
                             .replace("inertia 1 1 1", "inertia 0 0 0") + BODY_A.replace("body a", "body b")
                             .replace("parent base", "parent a").replace("inertia 1 1 1", "inertia 1 2 1"),
                             "the mass matrix is singular at the design pose (smallest eigenvalue 0, largest 4), "
                             "through the joint of body 'a'"),
    "negative mass": (BODY_A.replace("mass 1", "mass -1  # <-"), "'mass' in body 'a' is -1; expected a number >= 0"),
    "limit order": (BODY_A.replace("mass 1", "mass 1\n  limit 1 -1  # <-"),
                    "'limit' in body 'a' is 1 -1; expected lower <= upper"),
    "indefinite inertia": (BODY_A.replace("inertia 1 1 1 0 0 0", "inertia 1 1 -1 0 0 0  # <-"),
                           "'inertia' in body 'a' is not positive definite"),
    "singular inertia": (BODY_A.replace("inertia 1 1 1 0 0 0", "inertia 1 1 1 1 0 0  # <-"),
                         "not positive definite (principal moments 0, 1, 2)"),
    "rod inertia": (BODY_A.replace("inertia 1 1 1 0 0 0", "inertia 1 1 0 0 0 0  # <-"), "not positive definite"),
    "triangle": (BODY_A.replace("inertia 1 1 1 0 0 0", "inertia 1 1 2.1 0 0 0  # <-"),
                 "'inertia' in body 'a' violates the triangle inequality (principal moments 1, 1, 2.1)"),
    "triangle off-diagonal": (BODY_A.replace("inertia 1 1 1 0 0 0", "inertia 1 1 3 0.9 0 0  # <-"),
                              "violates the triangle inequality"),
    "fext": (BODY_WITH.format("  fext 2  # <-\n"), "bad value '2' for 'fext' in body 'a'; expected 0 or 1"),
    # block structure
    "unclosed": (BODY_A + "body b  # <-\n  parent base\n", "body 'b' is not closed; expected 'end'"),
    "unclosed ground": (BODY_A + "ground  # <-\n  kn 1\n\n# trailing comment\n", "ground is not closed"),
    "end outside": (BODY_A + "end  # <-\n", "'end' outside any block"),
    "nested block": (BODY_A.replace("end\n", "") + "body b  # <-\n", "'body' inside body 'a' (opened at line 1); "
                                                                      "expected 'end' first"),
    "statement in block": (BODY_WITH.format("  poi p a 0 0 0  # <-\n"), "'poi' inside body 'a'"),
    "no bodies": ("gravity 0 0 -1  # <-\npoi p base 0 0 0\n", "no body declared"),
    # loops
    "loop pred == succ": (BODY_A + loop(pred="a").replace("succ a", "succ a  # <-"),
                          "loop 'l' joins body 'a' to itself; expected pred != succ"),
    "loop succ base": (BODY_A + loop(pred="a", succ="base  # <-"), "'succ' in loop 'l' cannot be base"),
    "loop unknown body": (BODY_A + loop(pred="aa  # <-"), "unknown body 'aa' for 'pred' in loop 'l'; expected base or "
                                                          "a body (did you mean 'a'?)"),
    "loop unknown type": (BODY_A + loop(joint="hinge  # <-"), "unknown value 'hinge' for 'joint' in loop 'l'"),
    "axis on spherical": (BODY_A + loop(joint="spherical", extra="  axis x  # <-\n"),
                          "'axis' given for spherical loop 'l'; expected no axis"),
    "axis on distance": (BODY_A + loop(joint="distance", extra="  length 1\n  axis 1 0 0  # <-\n"),
                         "'axis' given for distance loop 'l'"),
    "missing axis revolute": (BODY_A + loop(extra="").replace("loop l", "loop l  # <-"),
                              "revolute loop 'l' is missing required key 'axis'"),
    "missing axis prismatic": (BODY_A + loop(joint="prismatic", extra="").replace("loop l", "loop l  # <-"),
                               "prismatic loop 'l' is missing required key 'axis'"),
    "missing axis cylindrical": (BODY_A + loop(joint="cylindrical", extra="").replace("loop l", "loop l  # <-"),
                                 "cylindrical loop 'l' is missing required key 'axis'"),
    "missing axis point-on-line": (BODY_A + loop(joint="point-on-line", extra="").replace("loop l", "loop l  # <-"),
                                   "point-on-line loop 'l' is missing required key 'axis'"),
    "zero axis": (BODY_A + loop(extra="  axis 0 0 0  # <-\n"), "'axis' in loop 'l' is the zero vector"),
    "bad axis letter": (BODY_A + loop(extra="  axis w  # <-\n"), "bad axis 'w' for 'axis' in loop 'l'"),
    "two-field axis": (BODY_A + loop(extra="  axis 1 0  # <-\n"), "expected 'axis x|y|z or ax ay az'"),
    "length on revolute": (BODY_A + loop(extra="  axis x\n  length 1  # <-\n"),
                           "'length' given for revolute loop 'l'; expected it only on distance loops"),
    "zero length": (BODY_A + loop(joint="distance", extra="  length 0  # <-\n"), "expected a number > 0"),
    "negative length": (BODY_A + loop(joint="distance", extra="  length -1  # <-\n"), "expected a number > 0"),
    "coincident anchors": (BODY_A + loop(joint="distance", extra="").replace("loop l", "loop l  # <-"),
                           "distance loop 'l' has coincident anchors at the design pose"),
    # tsda
    "tsda unknown poi": (BODY_A + "poi p a 0 0 0\ntsda t\n  between p qq  # <-\n  l0 1\nend\n",
                         "unknown poi 'qq' in tsda 't'; expected a poi declared earlier"),
    "tsda later poi": (BODY_A + "poi p a 0 0 0\ntsda t\n  between p q  # <-\n  l0 1\nend\npoi q a 1 0 0\n",
                       "poi 'q' in tsda 't' is declared later (line 12)"),
    "tsda same poi": (BODY_A + "poi p a 0 0 0\ntsda t\n  between p p  # <-\n  l0 1\nend\n",
                      "tsda 't' connects poi 'p' to itself; expected two distinct pois"),
    "negative l0": (BODY_A + "poi p a 0 0 0\npoi q a 1 0 0\ntsda t\n  between p q\n  l0 -0.1  # <-\nend\n",
                    "'l0' in tsda 't' is -0.1; expected a number >= 0"),
    "poi unknown body": (BODY_A + "poi p b 0 0 0  # <-\n", "unknown body 'b' for poi 'p'"),
    # rsda
    "rsda floating": (body("f", joint="floating") + "rsda r\n  joint f  # <-\nend\n",
                      "rsda 'r' acts on floating body 'f'; expected a body with a revolute or prismatic joint"),
    "rsda unknown body": (BODY_A + "rsda r\n  joint b  # <-\nend\n", "unknown body 'b' for 'joint' in rsda 'r'"),
    "rsda base": (BODY_A + "rsda r\n  joint base  # <-\nend\n", "'joint' in rsda 'r' cannot be base"),
    # top-level settings
    "zero stab": ("stab 0  # <-\n", "'stab' is 0; expected a number > 0"),
    "negative stab": ("stab -1  # <-\n", "'stab' is -1; expected a number > 0"),
    # track
    "track few shoes": (BODY_A + track(shoes="2  # <-"),
                        "'shoes' in track 't' is 2; expected an integer >= 3"),
    "track fractional shoes": (BODY_A + track(shoes="4.5  # <-"), "expected an integer >= 3"),
    "track one end roller": (BODY_A + track("  roller a 0.3 drive\n", mark="  # <-"),
                             "track 't' has 1 'end' roller(s); expected at least two"),
    "track roller body": (BODY_A + track("  roller b 0.3 end  # <-\n"),
                          "unknown body 'b' for 'roller' in track 't'"),
    "track root": (BODY_A + track(root="base  # <-"),
                   "'root' in track 't' cannot be base"),
    "track teeth": (BODY_A + track("  roller a 1 end teeth 0  # <-\n"),
                    "'roller' in track 't' is 0; expected an integer >= 1"),
    "track teeth float": (BODY_A + track("  roller a 1 end teeth 7.5  # <-\n"),
                          "expected an integer >= 1"),
    "track teeth missing": (BODY_A + track("  roller a 1 end teeth  # <-\n"),
                            "unexpected 'teeth' in 'roller' in track 't'"),
    "track roller option": (BODY_A + track("  roller a 1 ends  # <-\n"),
                            "unexpected 'ends' in 'roller' in track 't'; "
                            "expected 'roller BODY RADIUS [end] [drive] [teeth N] [root R]'"),
    "track roller root": (BODY_A + track("  roller a 0.3 end drive root 0.3  # <-\n"),
                          "'roller' in track 't' has root 0.3 >= its radius 0.3; expected the radius a pin "
                          "bottoms out at"),
    "track roller root missing": (BODY_A + track("  roller a 0.3 end root  # <-\n"),
                                  "unexpected 'root' in 'roller' in track 't'"),
    "track roller root negative": (BODY_A + track("  roller a 0.3 end root -0.1  # <-\n"),
                                   "expected a number > 0"),
    "track roller repeated option": (BODY_A + track("  roller a 1 end end  # <-\n"), "unexpected 'end'"),
    "track roller radius": (BODY_A + track("  roller a 0 end  # <-\n"),
                            "'roller' in track 't' is 0; expected a number > 0"),
    "track plane": (BODY_A + track("  plane yz  # <-\n"),
                    "unknown value 'yz' for 'plane' in track 't'; expected xz"),
    # ground
    "second ground": (_GROUND.format(terrain="plane 0 0 1 0") + _GROUND.format(terrain="sine 0 1 2 2")
                      .replace("ground", "ground  # <-", 1) + BODY_A, "second ground block (first at line 1)"),
    "terrain kind": (_GROUND.format(terrain="hill 0 0 1 0  # <-"),
                     "unknown terrain 'hill' in ground; expected 'terrain plane nx ny nz d' or "
                     "'terrain sine z0 amp wx wy' or 'terrain grid x0 y0 dx dy'"),
    "terrain kind hint": (_GROUND.format(terrain="gird 0 0 1 1  # <-"), "(did you mean 'grid'?)"),
    "terrain count": (_GROUND.format(terrain="plane 0 0 1  # <-"),
                      "'terrain plane' takes 4 numbers, got 3; expected 'terrain plane nx ny nz d'"),
    "terrain empty": (_GROUND.format(terrain="  # <-"), "unknown terrain ''"),
    "terrain zero normal": (_GROUND.format(terrain="plane 0 0 0 1  # <-"), "normal is the zero vector"),
    "terrain wavelength": (_GROUND.format(terrain="sine 0 0.1 0 2  # <-"), "expected wx > 0 and wy > 0"),
    "ground nan": (_GROUND.format(terrain="sine 0 nan 1 1  # <-"), "bad number 'nan' for 'terrain' in ground"),
    "terrain vertical plane": (_GROUND.format(terrain="plane 1 0 0 0  # <-"),
                               "'terrain plane' normal 1 0 0 has unit nz 0: the plane is vertical, not a height "
                               "field z = h(x, y); expected |nz| >= 1e-06 of the unit normal"),
    "terrain nearly vertical plane": (_GROUND.format(terrain="plane 0 -3 2e-6 0  # <-"),
                                      "has unit nz 6.67e-07: the plane is vertical"),
    "grid count": (_GROUND.format(terrain="grid 0 0 1  # <-"),
                   "'terrain grid' takes 4 numbers, got 3; expected 'terrain grid x0 y0 dx dy'"),
    "grid zero spacing": (grid_ground(GRID_ROWS, terrain="grid 0 0 0 1  # <-"),
                          "'terrain grid' spacings are 0 1; expected dx > 0 and dy > 0"),
    "grid negative spacing": (grid_ground(GRID_ROWS, terrain="grid 0 0 1 -0.5  # <-"), "expected dx > 0 and dy > 0"),
    "grid without heights": (BODY_A + _GROUND.format(terrain="grid 0 0 1 1  # <-"),
                             "'terrain grid' in ground has 0 'heights' row(s); expected at least 4 'heights h0 h1 ...' "
                             "lines of at least 4 values each (bicubic interpolation needs a 4x4 stencil)"),
    "grid three rows": (BODY_A + grid_ground(GRID_ROWS[:3], terrain="grid 0 0 1 1  # <-"),
                        "'terrain grid' in ground has 3 'heights' row(s) (lines 9-11); expected at least 4"),
    "grid short row": (BODY_A + grid_ground(GRID_ROWS[:2] + ["1 2 3  # <-"] + GRID_ROWS[2:]),
                       "'heights' in ground has 3 values; expected at least 4 per row "
                       "(bicubic interpolation needs a 4x4 stencil)"),
    "grid empty row": (BODY_A + grid_ground(GRID_ROWS[:1] + ["  # <-"] + GRID_ROWS[1:]),
                       "'heights' in ground has 0 values"),
    "grid one row": (BODY_A + grid_ground(GRID_ROWS[:1], terrain="grid 0 0 1 1  # <-"),
                     "'terrain grid' in ground has 1 'heights' row(s) (line 9); expected at least 4"),
    "grid ragged row": (BODY_A + grid_ground(GRID_ROWS[:3] + ["1 2 3 4 5 6  # <-"]),
                        "'heights' row in ground has 6 values, the first row (line 9) has 5; "
                        "expected every row the same length"),
    "grid ragged second row": (BODY_A + grid_ground(GRID_ROWS[:1] + ["1 2 3 4  # <-"] + GRID_ROWS[1:]),
                               "has 4 values, the first row (line 9) has 5"),
    "grid bad height": (BODY_A + grid_ground(["0 0 0 0 0", "0 0 nan 0 0  # <-"] + GRID_ROWS[2:]),
                        "bad number 'nan' for 'heights' in ground"),
    "heights with plane": (BODY_A + grid_ground(["1 2 3 4  # <-", "1 2 3 4"], terrain="plane 0 0 1 0"),
                           "'heights' given for 'terrain plane' in ground; "
                           "expected heights only with 'terrain grid x0 y0 dx dy'"),
    "heights with sine": (BODY_A + grid_ground(["1 2 3 4  # <-"], terrain="sine 0 1 2 2"),
                          "'heights' given for 'terrain sine' in ground"),
    "heights outside ground": (BODY_A + "heights 1 2 3 4  # <-\n",
                               "'heights' outside any block; expected it inside a ground block"),
}


def marked_line(text: str) -> int:
    (line,) = [i for i, s in enumerate(text.split("\n"), 1) if "# <-" in s]
    return line


@pytest.mark.parametrize("case", ERRORS, ids=list(ERRORS))
def test_error(case):
    text, phrase = ERRORS[case]
    with pytest.raises(MechError) as info:
        parse(text, "models/bad.mech")
    e = info.value
    assert (e.path, e.line) == ("models/bad.mech", marked_line(text)), str(e)
    assert str(e) == f"models/bad.mech:{e.line}: {e.msg}"
    assert phrase in e.msg, str(e)
    assert "\n" not in str(e)


def test_error_cases_are_distinct_texts():
    texts = [t for t, _ in ERRORS.values()]
    assert len(set(texts)) == len(texts)


def test_mech_error_pickles():
    e = pickle.loads(pickle.dumps(MechError("m.mech", 3, "bad")))
    assert (e.path, e.line, e.msg, str(e)) == ("m.mech", 3, "bad", "m.mech:3: bad")


# ---------------------------------------------------------------- the design pose
#
# What only the assembled design pose shows (parse.py _check_design_pose): each case edits a real model and
# gives the whole message and the line (the element at fault) it must be reported at.

ROOT = Path(__file__).resolve().parents[2]
PIN_LOOP = "loop pin\n  joint distance\n  pred base\n  succ crank\n  anchor_pred 0 0 0\n  anchor_succ 0 0.05 0\nend\n"
STAY_LOOP = ("loop stay\n  joint distance\n  pred base\n  succ slider\n  anchor_pred 0.199714052097 0.1 0\n"
             "  anchor_succ 0 0 0\nend\n")
_APART = "expected them more than 1e-09 m apart there: a spring of zero length has no direction"
_REDUNDANT = "constrains nothing the tree's joints and earlier loops leave free"


def edited(path: str, old: str, new: str, extra: str = "") -> str:
    src = (ROOT / path).read_text()
    assert old in src
    return src.replace(old, new) + extra


DESIGN_POSE = {  # name: (text, line, message)
    "tsda points coincide": (
        edited("models/springpend.mech", "poi hook base 0.4 0 1.0", "poi hook base 0 0 0.6"), 57,
        f"tsda 'spring' joins poi 'hook' and poi 'eye', which coincide at the design pose (at 0 0 0.6); {_APART}"),
    "tsda points coincide on the base": (
        edited("models/springpend.mech", "poi eye pend1 0 0 -0.4", "poi eye base 0.4 0 1.0"), 57,
        f"tsda 'spring' joins poi 'hook' and poi 'eye', which coincide at the design pose (at 0.4 0 1); {_APART}"),
    "tsda points 5e-13 m apart": (
        edited("models/springpend.mech", "poi hook base 0.4 0 1.0", "poi hook base 0 0 0.6000000000005"), 57,
        f"tsda 'spring' joins poi 'hook' and poi 'eye', which are only 5e-13 m apart at the design pose; {_APART}"),
    "point-on-line axis across the band": (  # issue 33: the closure's axis repeats the plane's constraint
        edited("models/band63.mech", "  axis y\n", "  axis -1 0 0\n"), 658,
        f"loop 'band' (point-on-line) is redundant at the design pose: its row 2 of 2 (w·d) {_REDUNDANT} "
        "(rank(K) 1 < nc 2); expected independent rows (check its axis, anchor_pred and anchor_succ)"),
    "distance loop along a joint axis": (  # its length never changes: it repeats the crank's joint
        edited("models/slidercrank.mech", "", "", "\n" + PIN_LOOP), 71,
        f"loop 'pin' (distance) is redundant at the design pose: its row 1 of 1 ((d·d − L²)/2) {_REDUNDANT} "
        "(rank(K) 1 < nc 2); expected independent rows (its length must change as the joints move: check "
        "anchor_pred and anchor_succ)"),
    "distance loop across a slider's travel": (
        edited("models/slidercrank.mech", "", "", "\n" + STAY_LOOP), 71,
        f"loop 'stay' (distance) is redundant at the design pose: its row 1 of 1 ((d·d − L²)/2) {_REDUNDANT} "
        "(rank(K) 1 < nc 2); expected independent rows (its length must change as the joints move: check "
        "anchor_pred and anchor_succ)"),
}


@pytest.mark.parametrize("case", DESIGN_POSE, ids=list(DESIGN_POSE))
def test_design_pose_error(case):
    text, line, msg = DESIGN_POSE[case]
    with pytest.raises(MechError) as info:
        parse_and_assemble(text, "bad.mech")
    assert str(info.value) == f"bad.mech:{line}: {msg}"
    assert len(info.value.msg) <= 300
    parse(text, "bad.mech")  # the text itself is fine: only the assembled pose shows it


def test_design_pose_reports_the_earlier_line():
    text = (edited("models/slidercrank.mech", "poi hook base -0.1 0 0.1", "poi hook base 0.025 0 0.043301270189")
            + "\n" + PIN_LOOP)
    with pytest.raises(MechError, match=r"^bad\.mech:64: tsda 'return_spring' joins poi 'hook' and poi 'crankpin'"):
        parse_and_assemble(text, "bad.mech")


def test_a_short_tsda_and_a_moved_one_still_load():
    """1 µm apart at the design pose is a (stiff) spring with a direction; so is one that reaches zero length only
    away from the design pose."""
    m = parse_and_assemble(edited("models/springpend.mech", "poi hook base 0.4 0 1.0", "poi hook base 0 0 0.600001"))
    assert m.tsdas[0].name == "spring"
    parse_and_assemble(edited("models/springpend.mech", "poi hook base 0.4 0 1.0", "poi hook base 0.4 0 0.6"))


@pytest.mark.parametrize("path", sorted(p.relative_to(ROOT).as_posix() for p in
                                        [*(ROOT / "models").glob("*.mech"), *(ROOT / "tests/data").glob("*.mech")]))
def test_every_shipped_model_passes_the_design_pose_checks(path):
    """Full rank and apart tsdas with a margin: the worst row keeps 3 % of its size (the tolerance is 1e-9)."""
    from mechdyn.core.loops import redundant_rows

    m = load_model(ROOT / path)
    if m.loops:
        t0 = time.perf_counter()
        assert redundant_rows(m, m.q0()) == ([], m.nc)
        assert time.perf_counter() - t0 < 0.25  # m113: 168 coordinates, about 3 ms


# ---------------------------------------------------------------- long messages


def test_capped_messages_clip_words_and_fit():
    from mechdyn.core.errors import MAX_MSG, capped, clip, listed

    assert capped("short  and\nplain") == "short and plain" and clip("x" * 80) == "x" * 80
    assert clip("'" + "m" * 200_000 + "'") == "'" + "m" * 52 + "…[199,936 more]…" + "m" * 12 + "'"
    assert listed(["a", "b"]) == "a, b" and listed(range(12), 3) == "0, 1, 2 and 9 others"
    assert listed(range(4), 3) == "0, 1, 2 and 1 other"
    two = capped(f"loop '{'a' * 5000}' and loop '{'b' * 5000}' " + "filler " * 20 + "; expected x")
    assert len(two) <= MAX_MSG and two.endswith("; expected x") and "[4,9" in two and " … " not in two
    wall = capped("word " * 200 + "expected the end")
    assert len(wall) == MAX_MSG and wall.startswith("word word") and wall.endswith("expected the end")
    key = "'" + "k" * 200_000 + "'"
    assert MechError("m.mech", 2, f"unknown key {key}").msg == f"unknown key {clip(key)}"


def test_model_not_found_lists_a_few_names(tmp_path, monkeypatch):
    for k in range(40):
        (tmp_path / f"model{k:02d}.mech").write_text(BODY_A)
    monkeypatch.setattr(parse_module, "MODELS_DIR", tmp_path)
    with pytest.raises(ModelNotFound) as e:
        load_model("modl07" + "z" * 200)
    assert len(str(e.value)) <= 300
    assert re.fullmatch(r"no model file or model name 'modl07z+…\[143 more\]…z+'; expected a path to a \.mech, "
                        r"\.urdf or MJCF \.xml file or one of: model00, model01, .*, model07 and 32 others", str(e.value)), str(e.value)


# ---------------------------------------------------------------- load_model


def test_load_model_by_path_and_name(tmp_path, monkeypatch):
    f = tmp_path / "arm.mech"
    f.write_text(BODY_A)
    m = load_model(f)
    assert (m.name, m.path, m.nbody) == ("arm", str(f), 1)
    assert load_model(str(f)).source == BODY_A
    monkeypatch.setattr(parse_module, "MODELS_DIR", tmp_path)
    assert load_model("arm").path.endswith("arm.mech") and load_model("arm").name == "arm"


def test_load_model_unknown_name(tmp_path, monkeypatch):
    (tmp_path / "arm.mech").write_text(BODY_A)
    (tmp_path / "crane.mech").write_text(BODY_A)
    monkeypatch.setattr(parse_module, "MODELS_DIR", tmp_path)
    with pytest.raises(ModelNotFound, match=r"'crain'.*one of: arm, crane \(did you mean 'crane'\?\)"):
        load_model("crain")
    with pytest.raises(ModelNotFound, match="no model file or model name 'nowhere/arm.mech'"):
        load_model("nowhere/arm.mech")
    assert not issubclass(ModelNotFound, MechError) and issubclass(ModelNotFound, ValueError)


def test_load_model_errors_carry_the_file(tmp_path):
    f = tmp_path / "bad.mech"
    f.write_text(BODY_A.replace("mass 1", "mas 1"))
    with pytest.raises(MechError, match=re.escape(f"{f}:4: unknown key 'mas'")):
        load_model(f)
    f.write_bytes(BODY_A.encode() + b"# caf\xe9\n")
    with pytest.raises(MechError, match=re.escape(f"{f}:7: byte 0xe9 is not valid UTF-8")):
        load_model(f)


def test_parse_is_fast():
    blocks = [FULL.split("poi top")[0]]
    for i in range(1300):  # over 10k lines of bodies
        blocks.append(f"body n{i}\n  parent {'base' if i == 0 else f'n{i - 1}'}\n  joint revolute x\n"
                      f"  xtree 0 0 -0.1\n  mass 1\n  inertia 0.1 0.1 0.1 0 0 0\nend\n\n")
    text = "".join(blocks)
    assert text.count("\n") > 10_000
    t0 = time.perf_counter()
    m = parse(text)
    assert time.perf_counter() - t0 < 1.0
    assert m.nbody == 1305


# ---------------------------------------------------------------- fuzzing

_SOURCES = [FULL.split("\n"), FULL_GRID.split("\n")]  # ground on a plane and on a grid
_GRID_ONLY = [(BODY_A + grid_ground(GRID_ROWS)).split("\n")]  # small, so most mutations land in the grid
_VOCAB = sorted({tok for lines in _SOURCES for line in lines for tok in line.split()} | {
    "nan", "inf", "-inf", "-1", "0", "1e999", "base", "end", "body", "loop", "ground", "x", "q", "1_0", "#",
    "grid", "sine"})
_INSERTS = ["body", "loop", "tsda", "rsda", "track", "ground", "end", "poi", "gravity", "stab", "mass",
            "joint", "axis", "roller", "terrain", "heights", "input", "length", "between", "parent"]
_token = st.one_of(st.sampled_from(_VOCAB), st.text(max_size=8),
                   st.from_regex(r"[-+.eE0-9]{1,6}", fullmatch=True))


@st.composite
def mutated(draw, sources: list[list[str]] = _SOURCES) -> str:
    lines = list(draw(st.sampled_from(sources)))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "token", "insert", "shorten", "truncate"]))
        if op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "token":
            toks = lines[i].split() or [""]
            toks[draw(st.integers(0, len(toks) - 1))] = draw(_token)
            lines[i] = " ".join(toks)
        elif op == "shorten":  # drop trailing fields of one line
            toks = lines[i].split()
            lines[i] = " ".join(toks[: draw(st.integers(0, len(toks)))])
        elif op == "insert":
            fields = draw(st.lists(_token, max_size=5))
            lines.insert(i, " ".join([draw(st.sampled_from(_INSERTS)), *fields]))
        else:
            text = "\n".join(lines)
            lines = text[: draw(st.integers(0, len(text)))].split("\n")
        if not lines:
            lines = [""]
    return "\n".join(lines)


def located_or_parsed(text: str) -> None:
    try:
        parse_and_assemble(text, "fuzz.mech")  # the whole load path, assembly included
    except MechError as e:
        assert 1 <= e.line <= len(text.split("\n")) + 1, str(e)
        assert str(e).startswith(f"fuzz.mech:{e.line}: ") and e.msg
        assert "\n" not in str(e)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutations_raise_only_located_mech_errors(text):
    located_or_parsed(text)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(_GRID_ONLY))
def test_grid_mutations_raise_only_located_mech_errors(text):
    located_or_parsed(text)


# ---------------------------------------------------------------- turned joint frames (issue 33)

TURNED = """\
body a
  parent base
  joint revolute {axis}
  xtree 0 0 0.3
  {rot}
  mass 1
  cg 0.1 0 0
  inertia 0.01 0.02 0.03 0 0 0
end
"""


def test_axis_words_and_vectors_normalize_to_unit_axes():
    for word, want in (("x", [1, 0, 0]), ("-y", [0, -1, 0]), ("-z", [0, 0, -1]), ("0 3 4", [0, 0.6, 0.8]),
                       ("1e-9 0 -1e-9", [2**-0.5, 0, -(2**-0.5)])):
        b = parse(TURNED.format(axis=word, rot="")).bodies[0]
        assert np.allclose(b.axis, want, atol=1e-15) and abs(np.linalg.norm(b.axis) - 1) < 1e-15, word


def test_rpy_is_urdfs_fixed_axis_order_and_quat_is_scalar_first():
    rpy = parse(TURNED.format(axis="z", rot="rpy 0.3 -0.4 1.2")).bodies[0].rot
    assert np.abs(rpy - Rotation.from_euler("xyz", [0.3, -0.4, 1.2]).as_matrix()).max() < 1e-15
    x, y, z, w = Rotation.from_euler("xyz", [0.3, -0.4, 1.2]).as_quat()
    quat = parse(TURNED.format(axis="z", rot=f"quat {w:.17g} {x:.17g} {y:.17g} {z:.17g}")).bodies[0].rot
    assert np.abs(quat - rpy).max() < 1e-15


def test_quarter_turns_are_exact_so_structural_zeros_survive():
    """URDF files write π/2 to 11 or 17 digits; the rotation they mean is a signed permutation, exactly."""
    for rot in ("rpy 1.5707963267948966 0 0", "rpy 1.57079632679 0 0", "quat 0.7071067811865476 0.7071067811865476 0 0",
                "quat 0.7071 0.7071 0 0"):
        R = parse(TURNED.format(axis="z", rot=rot)).bodies[0].rot
        assert np.array_equal(R, [[1, 0, 0], [0, 0, -1], [0, 1, 0]]), rot
    off = parse(TURNED.format(axis="z", rot="rpy 1.5707 0 0")).bodies[0].rot  # 1e-4 rad short: a real angle
    assert off[1, 1] != 0.0


def test_a_turned_floating_body_starts_at_its_attitude():
    text = TURNED.format(axis="z", rot="rpy 0 0 0.5").replace("joint revolute z", "joint floating")
    m = parse(text)
    assert np.allclose(m.q0()[:4], [np.cos(0.25), 0, 0, np.sin(0.25)], atol=1e-15)


def test_design_points_read_the_turned_frames():
    """A distance loop's default length is the anchors' separation at the design pose, where the frame of a body
    turned a quarter turn about x carries its anchor (0 0.5 0) to base (0, 0, 0.5) above its joint."""
    text = TURNED.format(axis="z", rot="rpy 1.5707963267948966 0 0") + (
        "loop rod\n  joint distance\n  pred base\n  succ a\n  anchor_pred 0 0 0\n  anchor_succ 0 0.5 0\nend\n")
    assert abs(parse(text).loops[0].length - 0.8) < 1e-15
