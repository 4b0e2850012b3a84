"""Magnitude bounds of the .mech format, assembly on absurd numbers, and the generator's non-finite check."""
from __future__ import annotations

import dataclasses as dc
import re
from pathlib import Path

import numpy as np
import pytest

from mechdyn.codegen.expr import Builder, GenerationError, Sym
from mechdyn.codegen.generate import generate
from mechdyn.core import MechError, load_model, parse
from mechdyn.core.loops import AssemblyError, project_q
from mechdyn.core.parse import BOUNDS, assemble_model, short_number

ROOT = Path(__file__).resolve().parents[1]
THREELINK = "models/threelink.mech"
LOOPZOO = "tests/data/loopzoo.mech"


def text(path: str) -> str:
    return (ROOT / path).read_text()


def line_of(src: str, needle: str) -> int:
    return src[: src.index(needle)].count("\n") + 1


def parse_edit(path: str, old: str, new: str) -> None:
    src = text(path)
    assert old in src
    parse(src.replace(old, new, 1), path)


# the examples and one key of every kind: (file, text replaced, replacement, kind named in the message)
ABSURD = {
    "mass 1e308": (THREELINK, "mass 2.269", "mass 1e308", "mass"),
    "mass 1e-300": (THREELINK, "mass 2.269", "mass 1e-300", "mass"),
    "xtree 0 1e308 0": (THREELINK, "xtree 0.5 0 0", "xtree 0 1e308 0", "position"),
    "cg 1e-300": (THREELINK, "cg 0.25 0 0", "cg 1e-300 0 0", "position"),
    "distance length 1e155": (LOOPZOO, "joint distance", "joint distance\n  length 1e155", "length"),
    "anchor 2e4": (LOOPZOO, "anchor_pred 0.7 0.1 0.3", "anchor_pred 0.7 2e4 0.3", "position"),
    "inertia 1e300": (THREELINK, "inertia 0.001209 0.04787 0.04787", "inertia 1e300 1e300 1e300", "moment of inertia"),
    "gravity 1e5": (THREELINK, "gravity 0 -9.81 0", "gravity 0 -1e5 0", "gravity component"),
}


@pytest.mark.parametrize("case", sorted(ABSURD))
def test_absurd_magnitudes_are_located_mech_errors(case):
    path, old, new, kind = ABSURD[case]
    src = text(path)
    assert old in src, old
    edited = src.replace(old, new, 1)
    bad = new.split("\n")[-1].strip()
    with pytest.raises(MechError) as e:
        parse(edited, path)
    assert str(e.value).startswith(f"{path}:{line_of(edited, bad)}: '{bad.split()[0]}'"), str(e.value)
    bound = next(b for b in BOUNDS if b.kind == kind)
    assert f"out of bounds for a {kind}; expected " in str(e.value)
    assert f" {short_number(bound.lo)} <= " in str(e.value)
    assert f" <= {short_number(bound.hi)} {bound.unit}" in str(e.value)


@pytest.mark.parametrize("stmt,kind", [
    ("stab 1e-300", "time constant"), ("stab 1e7", "time constant"),
    ("poi far base 0 0 1e5", "position"), ("poi near base 0 0 1e-16", "position"),
])
def test_top_level_bounds(stmt, kind):
    src = text(THREELINK) + f"\n{stmt}\n"
    with pytest.raises(MechError, match=f"out of bounds for a {kind}") as e:
        parse(src, THREELINK)
    assert e.value.line == src.count("\n")


# a 4 x 4 grid ground: 'terrain grid {g}', its third row 'heights {h}'
GRID = ("ground\n  terrain grid {g}\n  heights 0 0 0 0\n  heights 0 0 0 0\n  heights {h}\n  heights 0 0 0 0\n"
        "  kn 1e5\n  mu 0.5\nend")


@pytest.mark.parametrize("block,kind", [
    ("tsda s\n  between a b\n  k 1e13\n  l0 0.1\nend", "stiffness"),
    ("tsda s\n  between a b\n  c -1e13\n  l0 0.1\nend", "damping"),
    ("tsda s\n  between a b\n  l0 1e-12\nend", "length"),
    ("rsda r\n  joint link2\n  q0 1e5\nend", "joint coordinate"),
    ("ground\n  terrain plane 0 0 1e-20 0\n  kn 1e5\n  mu 0.5\nend", "direction component"),
    ("ground\n  terrain sine 0 0.1 1e5 1\n  kn 1e5\n  mu 0.5\nend", "length"),
    ("ground\n  terrain plane 0 0 1 0\n  kn 1e5\n  mu 1e4\nend", "friction coefficient"),
    (GRID.format(g="0 0 1 1", h="0 0 2e4 0"), "length"),
    (GRID.format(g="0 0 1 1", h="0 -1e-10 0 0"), "length"),
    (GRID.format(g="-2e4 0 1 1", h="0 0 0 0"), "length"),
    (GRID.format(g="0 0 1e-12 1", h="0 0 0 0"), "length"),
])
def test_block_bounds(block, kind):
    src = text(THREELINK) + "\npoi a base 0 0 0\npoi b link3 0 0 0\n" + block + "\n"
    with pytest.raises(MechError, match=f"out of bounds for a {kind}"):
        parse(src, THREELINK)


@pytest.mark.parametrize("old,new", [
    ("xtree 0.5 0 0", "xtree 1e4 -1e-15 0"),  # both ends of the position bounds
    ("xtree 0.5 0 0", "xtree -0 0.0 0e5"),  # zeros in any spelling
    ("mass 2.269", "mass 1e7"),  # a 10,000 t body
    ("mass 2.269", "mass 1e-9"),
])
def test_values_at_the_bounds_are_accepted(old, new):
    parse_edit(THREELINK, old, new)


def test_grid_heights_at_the_bounds_are_accepted():
    src = text(THREELINK) + "\n" + GRID.format(g="-1e4 1e-9 1e-9 1e4", h="1e4 -1e4 1e-9 -0") + "\n"
    g = parse(src, THREELINK).ground
    assert g.params.tolist() == [-1e4, 1e-9, 1e-9, 1e4] and g.heights[2].tolist() == [1e4, -1e4, 1e-9, 0]


def test_every_shipped_model_is_within_the_bounds():
    for f in sorted([*ROOT.glob("models/*.mech"), *ROOT.glob("tests/data/*.mech")]):
        load_model(f)


def test_docs_table_states_the_bounds_the_parser_applies():
    doc = (ROOT / "docs" / "mech-format.md").read_text()
    table = doc.split("## Bounds", 1)[1].split("\n## ", 1)[0]
    rows = {r.split("|")[1].strip().split(",")[0]: (float(r.split("|")[3]), float(r.split("|")[4]))
            for r in table.split("\n") if r.startswith("| ") and not r.startswith(("| kind", "| ---"))}
    named = {b.kind: (b.lo, b.hi) for b in BOUNDS}
    # the docs say "acceleration" and "time" for the parser's gravity component and time constant
    named["acceleration"], named["time"] = named.pop("gravity component"), named.pop("time constant")
    named["inertia"] = named.pop("moment of inertia")
    assert rows == named


# ---------------------------------------------------------------- assembly on a Model that bypasses the bounds


def test_project_q_on_an_overflowing_loop_raises_assembly_error():
    m = load_model(LOOPZOO)
    rod = next(lp for lp in m.loops if lp.name == "rod")
    bad = dc.replace(m, loops=tuple(dc.replace(lp, length=1e155) if lp is rod else lp for lp in m.loops))
    with np.errstate(all="ignore"):  # the overflow is the subject; its warnings are not
        with pytest.raises(AssemblyError, match="loop 'rod'"):
            project_q(bad, bad.q0())
        with pytest.raises(MechError) as e:
            assemble_model(bad)
    assert e.value.line == rod.line and "loop 'rod'" in str(e.value)


# ---------------------------------------------------------------- the generator's non-finite check


def with_body(m, i: int, **changes):
    return dc.replace(m, bodies=tuple(dc.replace(b, **changes) if k == i else b for k, b in enumerate(m.bodies)))


@pytest.mark.parametrize("changes", [{"xtree": np.array([0.0, 1e308, 0.0])},  # folds to sn0 * inf on e292858
                                     {"cg": np.array([0.0, 0.0, 1e200])},  # |c|² overflows in the inertia
                                     {"mass": float("nan")}])
def test_generator_refuses_non_finite_constants_at_the_body_line(changes):
    m = load_model(THREELINK)
    bad = with_body(m, 1, **changes)
    with np.errstate(all="ignore"), pytest.raises(GenerationError) as e:
        generate(bad)
    assert isinstance(e.value, ValueError) and isinstance(e.value, MechError)
    assert str(e.value).startswith(f"{THREELINK}:{m.bodies[1].line}: body 'link2' gives the generated code "
                                   "the non-finite constant")


def test_generator_names_the_element_line():
    m = load_model("models/springpend.mech")
    assert m.tsdas or m.rsdas
    if m.tsdas:
        e0 = m.tsdas[0]
        bad = dc.replace(m, tsdas=(dc.replace(e0, k=float("inf")), *m.tsdas[1:]))
        what = f"tsda '{e0.name}'"
    else:
        e0 = m.rsdas[0]
        bad = dc.replace(m, rsdas=(dc.replace(e0, k=float("inf")), *m.rsdas[1:]))
        what = f"rsda '{e0.name}'"
    with pytest.raises(GenerationError, match=re.escape(f"{m.path}:{e0.line}: {what} gives")):
        generate(bad)


def test_builder_check_refuses_what_it_would_emit():
    b = Builder(path="x.mech")
    with b.at("x.mech", 7, "body 'a'"):
        assert b.mul(Sym("q[0]"), 1e308) != 0.0  # finite constants pass
        with pytest.raises(GenerationError, match=r"^x\.mech:7: body 'a' gives .* constant inf"):
            b.mul(Sym("q[0]"), 1e308 * 10)
    with pytest.raises(GenerationError, match=r"^x\.mech:1: the model gives .* constant nan"):
        b.store("qdd[0]", float("nan"))


def test_generator_names_the_loop_line():
    m = load_model(LOOPZOO)
    rod = next(lp for lp in m.loops if lp.name == "rod")
    bad = dc.replace(m, loops=tuple(dc.replace(lp, length=1e155) if lp is rod else lp for lp in m.loops))
    with pytest.raises(GenerationError, match=re.escape(f"{LOOPZOO}:{rod.line}: loop 'rod' gives")):
        generate(bad)  # an OverflowError from squaring the length on e292858


# ---------------------------------------------------------------- the generator's structural zeros
#
# A Model built in Python skips the load's design-pose checks (parse.py _check_design_pose); what they refuse
# and what the generator folds to an exact zero divisor is a GenerationError at the element's line, not a bare
# ZeroDivisionError or an unlocated ValueError (issue 33).


def test_builder_division_by_a_structural_zero_is_located():
    b = Builder(path="x.mech")
    with b.at("x.mech", 7, "loop 'l'"), pytest.raises(
            GenerationError, match=r"^x\.mech:7: loop 'l' makes the generated code divide by a quantity that is zero "
                                   r"in every state \(a structural zero\); expected"):
        b.div(Sym("q[0]"), 0.0)
    with pytest.raises(GenerationError, match=r"^x\.mech:1: the model makes the generated code divide"):
        b.div(1.0, 0.0)


def test_generator_refuses_a_tsda_whose_points_coincide():
    m = load_model("models/springpend.mech")
    hook, eye = m.pois[:2]
    bad = dc.replace(m, pois=(hook, dc.replace(eye, body=hook.body, pos=hook.pos), *m.pois[2:]))
    with pytest.raises(GenerationError) as e:
        generate(bad)
    assert str(e.value) == (f"models/springpend.mech:{m.tsdas[0].line}: tsda 'spring' joins poi 'hook' and poi 'eye', "
                            "which coincide in every pose; expected two points apart: a spring of zero length has no "
                            "direction")


def with_loop(m, lp):
    from mechdyn.core.model import Loop

    return dc.replace(m, loops=(*m.loops, Loop(**lp)))


PIN = dict(name="pin", joint="distance", pred=-1, succ=0, anchor_pred=np.zeros(3), anchor_succ=np.array([0, 0.05, 0]),
           axis=None, length=0.05, line=99)  # base to the crank, on its joint axis: a length that never changes


@pytest.mark.parametrize("what", ["aba", "kkt", "derivatives"])
def test_generator_refuses_redundant_loop_rows_at_the_loop_line(what):
    """The articulated-body route's A = K H⁻¹ Kᵀ (band63, a deep chain, built first) and the KKT solve of the
    CRBA route and of the derivatives meet the redundant row as a pivot that folds to 0."""
    from mechdyn.codegen.generate import derivatives_unit

    if what == "aba":
        m = load_model("models/band63.mech")
        (band,) = m.loops
        bad = dc.replace(m, loops=(dc.replace(band, axis=np.array([-1.0, 0, 0])),))
        line, name, row, want = band.line, "band", 1, "point-on-line"
    else:
        bad, line, name, row, want = with_loop(load_model("models/slidercrank.mech"), PIN), 99, "pin", 1, "distance"
    with pytest.raises(GenerationError) as e:
        (derivatives_unit if what == "derivatives" else generate)(bad)
    assert str(e.value).startswith(f"{bad.path}:{line}: loop '{name}' ({want}) gives a structural zero pivot at "
                                   f"constraint row {row}: its rows repeat constraints of the tree's joints or of "
                                   "other loops in every pose"), str(e.value)


def test_a_long_literal_is_shortened_in_the_message():
    with pytest.raises(MechError) as e:
        parse_edit(THREELINK, "mass 2.269", "mass 1" + "0" * 400)
    assert "number '100000000000000000000000...00000000' for 'mass' in body 'link2' overflows" in str(e.value)
    assert len(str(e.value)) < 200
