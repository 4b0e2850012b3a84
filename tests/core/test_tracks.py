"""Track bands (mechdyn/core/tracks.py): the belt path, the expansion, the design pose and the load warnings.

Each check is a function run once on the real code and once on a planted bug it must catch."""
from __future__ import annotations

import dataclasses as dc
import math
import sys
import warnings

import numpy as np
import pytest

from mechdyn.cli import parser as mechdyn_main
from mechdyn.cliutil import run
from mechdyn.core import tracks
from mechdyn.core.kinematics import forward_kinematics
from mechdyn.core.loops import closure, rank_deficiency
from mechdyn.core.model import BASE
from mechdyn.core.parse import MechError, MechWarning, load_model, parse
from mechdyn.core.tracks import Arc, Belt, Run, band_belt, belt_path

TAU = 2 * math.pi


def two_pulley_length(r1: float, r2: float, d: float) -> float:
    """The open belt around two pulleys d apart: two tangents and the two wraps π ± 2 asin((r1 − r2)/d)."""
    D = r1 - r2
    return 2 * math.sqrt(d * d - D * D) + math.pi * (r1 + r2) + 2 * D * math.asin(D / d)


TWO_PULLEYS = [  # (x1, z1, r1, x2, z2, r2): unequal radii, level and inclined, either one larger
    (0.8, 0.0, 0.3, -0.7, 0.1, 0.2),
    (-2.0, 0.4, 0.245, 2.5, -0.3, 0.255),
    (0.0, 0.0, 1.0, 0.3, 2.0, 0.05),
    (1.0, 1.0, 0.01, -1.0, -1.0, 0.9),
]


def two_pulley_error(belt: Belt, case: tuple[float, ...]) -> float:
    x1, z1, r1, x2, z2, r2 = case
    exact = two_pulley_length(r1, r2, math.hypot(x2 - x1, z2 - z1))
    return abs(belt.perimeter - exact) / exact


def hull_defects(belt: Belt, circles: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    """(poke, joint, turn): how far any circle pokes out of the path (through a run's line, or past a wrap's own
    circle along its normals), the worst break of position or tangency where a run meets a wrap, and the total
    turn's error against one revolution. All three are zero for the convex hull, walked once round."""
    c = np.array([[x, z] for x, z, _ in circles])
    r = np.array([rad for _, _, rad in circles])
    poke, joint = 0.0, 0.0
    segs = belt.segments
    for k, seg in enumerate(segs):
        if isinstance(seg, Run):
            t = (seg.b - seg.a) / seg.length
            n = np.array([-t[1], t[0]])  # outward: the hull is on the right
            poke = max(poke, float(np.max(c @ n + r - n @ seg.a)))
            for arc, end in ((segs[k - 1], seg.a), (segs[(k + 1) % len(segs)], seg.b)):
                normal = (end - arc.centre) / arc.radius
                joint = max(joint, abs(math.hypot(*(end - arc.centre)) - arc.radius), abs(float(normal @ t)))
        else:
            for u in np.linspace(0.0, seg.sweep, 17):
                nu = np.array([math.cos(seg.start - u), math.sin(seg.start - u)])
                poke = max(poke, float(np.max(c @ nu + r - (seg.centre @ nu + seg.radius))))
    turn = abs(math.fsum(s.sweep for s in segs if isinstance(s, Arc)) - TAU)
    return poke, joint, turn


# ---------------------------------------------------------------- the belt path


@pytest.mark.parametrize("case", TWO_PULLEYS)
def test_two_pulleys_give_the_analytic_belt_length(case):
    belt = belt_path([case[:3], case[3:]])
    err = two_pulley_error(belt, case)
    print(f"two pulleys {case}: perimeter {belt.perimeter:.12f}, relative error {err:.1e}")
    assert err <= 1e-12


def test_planted_inner_tangent_breaks_the_two_pulley_length(monkeypatch):
    """The tangent with the radii's difference the wrong way round: the walk still closes, the length is wrong."""
    real = tracks._tangent
    monkeypatch.setattr(tracks, "_tangent", lambda ci, ri, cj, rj: real(ci, rj, cj, ri))
    assert max(two_pulley_error(belt_path([c[:3], c[3:]]), c) for c in TWO_PULLEYS) > 1e-3


def random_layouts(n: int) -> list[list[tuple[float, float, float]]]:
    """Layouts of 2-8 circles, some inside others, but none holding all the rest (that has no belt)."""
    rng = np.random.default_rng(19)
    out = []
    while len(out) < n:
        k = int(rng.integers(2, 9))
        circles = [(float(x), float(z), float(rad)) for x, z, rad in
                   zip(rng.uniform(-2, 2, k), rng.uniform(-1, 1, k), rng.uniform(0.05, 1.0, k))]
        if not any(all(math.dist(a[:2], b[:2]) <= a[2] - b[2] for b in circles if b is not a) for a in circles):
            out.append(circles)
    return out


def test_the_path_is_the_convex_hull_of_every_roller():
    worst = np.zeros(3)
    for circles in random_layouts(200):
        worst = np.maximum(worst, hull_defects(belt_path(circles), circles))
    print(f"200 random layouts of 2-8 rollers: poke {worst[0]:.1e} m, joint {worst[1]:.1e}, turn {worst[2]:.1e} rad")
    assert np.all(worst <= 1e-12)


# sprocket, idler, and three equal road wheels in a line below, the whole layout tilted so that the wheels'
# tangents agree only to round-off
LEVEL = [(-1.2, 0.3, 0.245), (1.2, 0.3, 0.255), (-0.6, 0.0, 0.305), (0.0, 0.0, 0.305), (0.6, 0.0, 0.305)]
TILT = 0.12
TRACK = [(x * math.cos(TILT) - z * math.sin(TILT), x * math.sin(TILT) + z * math.cos(TILT), r) for x, z, r in LEVEL]


def test_planted_end_pulleys_only_let_the_road_wheels_through():
    """The belt of the two end pulleys alone (the old idealization): the road wheels poke through its lower run."""
    poke, _, _ = hull_defects(belt_path(TRACK[:2]), TRACK)
    print(f"two-pulley belt: road wheels poke {poke:.3f} m through it")
    assert poke > 0.1


def stops_between(belt: Belt, middle: int) -> int:
    """How many times the walk stops at the middle road wheel (an arc on it, even of zero sweep)."""
    return sum(1 for s in belt.segments if isinstance(s, Arc) and s.roller == middle)


def test_collinear_equal_wheels_are_passed_to_the_farthest():
    belt = belt_path(TRACK)
    runs = [s for s in belt.segments if isinstance(s, Run)]
    print(f"tilted track: wraps {belt.wrapped}, runs {[round(s.length, 6) for s in runs]}")
    assert stops_between(belt, 3) == 0 and set(belt.wrapped) == {0, 1, 2, 4}
    assert any(abs(s.length - 1.2) < 1e-12 for s in runs)  # one run from the front wheel to the rear one
    assert max(hull_defects(belt, TRACK)) <= 1e-12  # and the middle wheel is on it, not through it


def test_planted_nearest_tie_break_stops_at_the_middle_wheel(monkeypatch):
    monkeypatch.setattr(tracks, "_better", lambda turn, reach, bt, br: turn < bt - tracks._TIE
                        or (abs(turn - bt) <= tracks._TIE and reach < br))
    assert stops_between(belt_path(TRACK), 3) > 0


# ---------------------------------------------------------------- expansion and design pose

FRAME = """\
body frame
  parent base
  joint floating
  xtree 0.1 0.2 0.5
  mass 10
  inertia 1 1 1 0 0 0
end
body spr
  parent frame
  joint revolute y
  xtree -0.8 0.05 0.1
  mass 1
  inertia 0.1 0.1 0.1 0 0 0
end
body idl
  parent frame
  joint revolute y
  xtree 0.8 0.05 0.1
  mass 1
  inertia 0.1 0.1 0.1 0 0 0
end
body whl
  parent frame
  joint revolute y
  mass 1
  inertia 0.1 0.1 0.1 0 0 0
end
"""
BAND = """\
track band
  root frame
  shoes 30
  pitch {pitch}
  mass 1.5
  cg 0.05 0 0.01
  inertia 0.01 0.02 0.02 0 0 0
  roller spr {rs} end drive teeth {teeth}
  roller idl 0.26 end
  roller whl 0.3
end
"""


def band_text(pitch: float = 0.161, rs: float = 0.25, teeth: int = 10) -> str:
    return FRAME + BAND.format(pitch=pitch, rs=rs, teeth=teeth)


def quiet(text: str, path: str = "band.mech"):
    """parse, with no warning allowed"""
    with warnings.catch_warnings():
        warnings.simplefilter("error", MechWarning)
        return parse(text, path)


def test_expansion_builds_the_shoes_and_the_closure():
    m = quiet(band_text())
    (t,) = m.tracks
    assert t.expanded and t.first_shoe == 4 and m.nbody == 34 and (m.nq, m.nv, m.nc) == (7 + 3 + 7 + 29, 6 + 3 + 6 + 29, 2)
    shoes = m.bodies[4:]
    assert [b.name for b in shoes] == [f"band.s{k:02d}" for k in range(30)]
    assert shoes[0].parent == BASE and shoes[0].joint == "floating"
    assert all(b.parent == 4 + k and b.joint == "revolute" and b.axis_index == 1 and b.xtree.tolist() == [t.link_len, 0, 0]
               for k, b in enumerate(shoes[1:]))
    assert all(b.mass == 1.5 and b.cg.tolist() == [0.05, 0, 0.01] and b.fext and b.line == t.line for b in shoes)
    assert t.link_len == t.perimeter / 30
    (lp,) = m.loops
    assert (lp.name, lp.joint, lp.pred, lp.succ) == ("band.closure", "point-on-line", 4, 33)
    assert lp.anchor_pred.tolist() == [0, 0, 0] and lp.anchor_succ.tolist() == [t.link_len, 0, 0]
    assert lp.axis.tolist() == [0, 1, 0]


def closure_defects(model) -> tuple[float, str | None]:
    """The closure residual at q0 and rank(K) = nc there (None when full rank)."""
    phi, K = closure(model, model.q0())
    return float(np.abs(phi).max()), rank_deficiency(model, K)


@pytest.mark.parametrize("name", ["band", "track_min", "track_demo", "m113"])
def test_design_pose_closes_the_band(name):
    m = quiet(band_text()) if name == "band" else load_model(name)
    res, rank = closure_defects(m)
    print(f"{name}: closure residual at q0 {res:.1e}, rank(K) = nc {rank is None}")
    assert res <= 1e-12 and rank is None


def naive_pins(circles, n):
    """The pins at equal arc spacing on the belt itself: links of that spacing overshoot every wrap's chords."""
    belt = belt_path(circles)
    link = belt.perimeter / n
    return [belt.point(k * link) for k in range(n)], link, 0.0


def test_planted_open_band_and_revolute_closure_are_caught(monkeypatch):
    """Pins at equal arc spacing, not closed by projection, leave the band open; a revolute closure of the planar
    band over-constrains it."""
    m = quiet(band_text())
    over = dc.replace(m, loops=(dc.replace(m.loops[0], joint="revolute"),))
    assert closure_defects(over)[1] is not None
    monkeypatch.setattr(tracks, "lay_pins", naive_pins)
    monkeypatch.setattr(sys.modules["mechdyn.core.parse"], "project_q", lambda model, q: q)
    assert closure_defects(quiet(band_text()))[0] > 1e-6


def end_clearance(model) -> dict[str, np.ndarray]:
    """δ = R − ρ of every pin against each end roller, ρ the pin's distance from the axle in the band plane."""
    out = {}
    kin = forward_kinematics(model, model.q0())
    for t in model.tracks:
        Rr = kin.R[t.root]
        for ro in (ro for ro in t.rollers if ro.end):
            d = (kin.p[t.first_shoe : t.first_shoe + t.shoes] - kin.p[ro.body]) @ Rr
            out[model.bodies[ro.body].name] = ro.radius - np.hypot(d[:, 0], d[:, 2])
    return out


def clearance_defects(model) -> tuple[float, float]:
    """(inside, slack): the deepest any pin sits inside an end roller (≤ 0 when none does), and the largest gap
    between an end roller and the pins riding it (its nearest two)."""
    delta = end_clearance(model)
    return max(float(d.max()) for d in delta.values()), max(float(-np.sort(d)[-2]) for d in delta.values())


@pytest.mark.parametrize("name", ["band", "track_min", "track_demo", "m113"])
def test_pins_sit_just_outside_the_end_pulleys(name):
    m = quiet(band_text()) if name == "band" else load_model(name)
    inside, slack = clearance_defects(m)
    print(f"{name}: deepest pin inside an end pulley {inside:.3e} m, pins riding it at most {slack:.3e} m out "
          f"(clearance e = {tracks.pin_clearance(m, m.tracks[0]):.3e} m)")
    assert inside <= 0 and slack <= 0.01


def test_planted_arc_spaced_pins_sit_inside(monkeypatch):
    """The pins at equal arc spacing (closed afterwards by projection): some end up inside an end pulley."""
    monkeypatch.setattr(tracks, "lay_pins", naive_pins)
    assert clearance_defects(quiet(band_text()))[0] > 1e-4


def test_rollers_are_located_by_the_assembled_loops():
    """An idler on an arm held by a distance loop: the band wraps it where the loop puts it, and all loops close."""
    arm = ("body arm\n  parent frame\n  joint revolute y\n  xtree 0.5 0.05 0.1\n  mass 1\n  inertia 0.1 0.1 0.1 0 0 0\n"
           "end\n")
    text = (band_text(pitch=0.146, teeth=11).replace("  parent frame\n  joint revolute y\n  xtree 0.8 0.05 0.1",
                                "  parent arm\n  joint revolute y\n  xtree 0.3 0 0")
            .replace("body idl", arm + "body idl")
            + "loop prop\n  joint distance\n  pred frame\n  succ arm\n  anchor_pred 0.5 0 0.35\n"
              "  anchor_succ 0.3 0 0\n  length 0.55\nend\n")
    m = quiet(text)
    res, rank = closure_defects(m)
    kin = forward_kinematics(m, m.q0())
    idler = m.body_index("idl")
    lift = (kin.p[idler] - kin.p[0])[2] - 0.1
    print(f"idler moved {lift:+.4f} m in z by its loop; residual {res:.1e}")
    assert res <= 1e-12 and rank is None and abs(lift) > 0.05
    wraps = [s for s in band_belt(m, m.tracks[0]).segments if isinstance(s, Arc) and s.roller == 1]
    where = (kin.R[0].T @ (kin.p[idler] - kin.p[0]))[[0, 2]]
    assert wraps and all(np.abs(s.centre - where).max() < 1e-12 for s in wraps)
    assert clearance_defects(m)[0] <= 0


# ---------------------------------------------------------------- errors and warnings


def line_of(text: str, start: str) -> int:
    """The first line whose words begin with those of `start`."""
    return next(k for k, ln in enumerate(text.split("\n"), 1) if ln.split()[: len(start.split())] == start.split())


def test_expansion_errors_name_the_line():
    text = band_text().replace("  roller whl 0.3\n", "  roller whl 0.3\n  roller idl 0.2\n")
    with pytest.raises(MechError, match=rf"band.mech:{line_of(text, 'roller idl 0.2')}: roller 'idl' in track "
                                        rf"'band' is listed twice \(first at line {line_of(text, 'roller idl')}\)"):
        quiet(text)
    text = band_text().replace("body whl", "body band.s07").replace("roller whl", "roller band.s07")
    with pytest.raises(MechError, match=rf"band.mech:{line_of(text, 'track band')}: track 'band' expands into a "
                                        rf"shoe named 'band.s07'.*line {line_of(text, 'body band.s07')}"):
        quiet(text)


SPR, PITCH = line_of(band_text(), "roller spr"), line_of(band_text(), "pitch")
WARNINGS = {  # what, the text, the line it must name, the planted constant that silences it
    "sprocket teeth": (band_text(teeth=9), SPR, "drive sprocket 'spr' has tooth pitch", ("PITCH_TOLERANCE", 10.0)),
    "end roller diameter": (band_text(rs=0.12, teeth=5), SPR, "end roller 'spr' has diameter",
                            ("END_PITCH_RATIO", 0.5)),
    "pitch": (band_text(pitch=0.18), PITCH, "off the declared pitch", ("PITCH_TOLERANCE", 10.0)),
}


def warned_at(text: str, line: int) -> str:
    """The MechWarnings issued at band.mech:line, joined."""
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        parse(text, "band.mech")
    return " | ".join(str(w.message) for w in got
                      if issubclass(w.category, MechWarning) and (w.filename, w.lineno) == ("band.mech", line))


@pytest.mark.parametrize("what", WARNINGS)
def test_each_warning_names_its_line(what):
    text, line, msg, _ = WARNINGS[what]
    got = warned_at(text, line)
    print(f"{what}: band.mech:{line}: {got}")
    assert msg in got


@pytest.mark.parametrize("what", WARNINGS)
def test_planted_tolerance_silences_the_warning(what, monkeypatch):
    text, line, msg, (name, value) = WARNINGS[what]
    monkeypatch.setattr(tracks, name, value)
    assert msg not in warned_at(text, line)


def test_info_folds_the_band_and_prints_the_warnings(tmp_path, capsys):
    f = tmp_path / "band.mech"
    f.write_text(WARNINGS["pitch"][0])
    assert run(mechdyn_main, ["info", str(f), "--no-route"]) == 0
    out, err = capsys.readouterr()
    assert "band.s00..band.s29" in out and "floating + 29 revolute y" in out and "30 x 1.5" in out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MechWarning)  # the one `info` printed
        link = parse(WARNINGS["pitch"][0]).tracks[0].link_len
    assert f"linkLen {link:.6g} m (declared pitch 0.18 m)" in out
    assert f"{f}:{PITCH}: warning: track 'band': perimeter / shoes" in err


# ---------------------------------------------------------------- the M113


def roller_pokes(model) -> dict[str, float]:
    """How far each roller's circle pokes through the polygon of its band's pins at q0 (≤ 0: it does not), in the
    band plane: its radius less its centre's distance to the nearest side of the polygon."""
    kin = forward_kinematics(model, model.q0())
    out = {}
    for t in model.tracks:
        Rr = kin.R[t.root]
        pins = (kin.p[t.first_shoe : t.first_shoe + t.shoes] @ Rr)[:, [0, 2]]
        sides = list(zip(pins, np.roll(pins, -1, axis=0)))
        for ro in t.rollers:
            c = (kin.p[ro.body] @ Rr)[[0, 2]]
            dist = min(float(np.linalg.norm(c - (a + np.clip((c - a) @ (b - a) / ((b - a) @ (b - a)), 0, 1) * (b - a))))
                       for a, b in sides)
            out[model.bodies[ro.body].name] = ro.radius - dist
    return out


def test_m113_band_rides_all_seven_rollers():
    """The M113's bands: 27 written bodies expand to 153 (nq 171, nv 168, nc 4) with no load warning; no roller
    pokes through its band's pins by more than the sagitta linkLen²/8R of one link across it (a wrap arc's
    chord; seed 000: 0.0087 m, against 0.22 m for a belt round the end pulleys only); linkLen is within the
    warnings' 5 % of the sprocket's tooth pitch and of the declared pitch; the mass is the vehicle's."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", MechWarning)
        m = load_model("m113")
    assert (m.nbody, m.nq, m.nv, sum(2 for _ in m.loops)) == (153, 171, 168, 4)
    mass = sum(b.mass for b in m.bodies)
    assert abs(mass - 11340.0) / 11340.0 < 0.005, mass
    pokes = roller_pokes(m)
    for t in m.tracks:
        sprocket = next(ro for ro in t.rollers if ro.drive)
        tooth = TAU * sprocket.radius / sprocket.teeth
        sagitta = {m.bodies[ro.body].name: t.link_len ** 2 / (8 * ro.radius) for ro in t.rollers}
        worst = max(sagitta, key=lambda name: pokes[name] - sagitta[name])
        print(f"{t.name}: linkLen {t.link_len:.6f} m, tooth pitch {tooth:.6f} m, declared {t.pitch} m; closest to its "
              f"bound: {worst} {pokes[worst]:.4f} m through the pins (one link's sagitta {sagitta[worst]:.4f} m)")
        assert all(pokes[name] <= bound for name, bound in sagitta.items())
        assert abs(t.link_len / tooth - 1) < tracks.PITCH_TOLERANCE and abs(t.link_len / t.pitch - 1) < tracks.PITCH_TOLERANCE


def test_planted_end_pulleys_only_let_the_m113_wheels_through(monkeypatch):
    """The M113's bands laid round their two end pulleys alone: its road wheels poke through the lower run."""
    real = tracks.lay_pins
    monkeypatch.setattr(tracks, "lay_pins", lambda circles, n: real(circles[:2], n))  # sprocket and idler first
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MechWarning)
        m = load_model("m113")
    worst = max(roller_pokes(m).values())
    print(f"m113 with end-pulley belts: a road wheel pokes {worst:.3f} m through its band")
    assert worst > 0.1


# ---------------------------------------------------------------- the rollers' axes against the pin axis (issue 33)

IDL = "body idl\n  parent frame\n  joint revolute y\n"


def test_a_roller_turned_about_its_pin_axis_or_reversed_is_accepted():
    """The check reads the joint axis and the frame's y in the base frame: a frame turned about the pin axis, or
    an axis written -y, both keep the pin axis."""
    base = quiet(band_text())
    for joint in ("joint revolute -y\n  rpy 0 0.7 0\n", "joint revolute 0 -1 0\n"):
        m = quiet(band_text().replace(IDL, "body idl\n  parent frame\n  " + joint))
        assert m.nq == base.nq


def test_a_roller_turning_off_the_pin_axis_is_refused_at_its_line():
    text = band_text().replace(IDL, "body idl\n  parent frame\n  joint revolute 1 0.1 0\n")
    with pytest.raises(MechError, match=rf"band.mech:{line_of(text, 'roller idl')}: roller 'idl' in track 'band' "
                                        r"turns about \(\+0\.9950 \+0\.0995 \+0\.0000\) in the base frame"):
        quiet(text)


def test_a_roller_whose_frame_y_is_off_the_pin_axis_is_refused():
    """Its joint turns about the pin axis (z turned onto y by a quarter turn about x), but the band contact reads
    the pins in the roller frame's x-z plane, so its y must be the pin axis too."""
    text = band_text().replace(IDL, "body idl\n  parent frame\n  joint revolute -z\n  rpy 1.5707963267948966 0 0\n")
    with pytest.raises(MechError, match=rf"band.mech:{line_of(text, 'roller idl')}: roller 'idl' in track 'band' "
                                        r"has its frame's y along"):
        quiet(text)
