"""The long-chain models (issue 18): models/make_chains.py writes exactly the committed files, each loads with the
size its topology implies, and every band closes at q = 0 (the design pose needs no assembly step)."""
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from mechdyn.core.loops import closure
from mechdyn.core.parse import load_model, parse
from tests.conftest import MODELS_DIR, make_chains

mc = make_chains()

# nq, nv, nc, nbody, from the topology each header describes
SIZES = {
    "chain63": (63, 63, 0, 63),
    "band63": (63, 63, 2, 63),
    "twobands": (133, 132, 4, 127),
}


def test_committed_files_are_what_the_script_writes():
    written = mc.models()
    assert sorted(written) == sorted(f"{n}.mech" for n in SIZES)
    for name, text in written.items():
        assert (MODELS_DIR / name).read_text() == text, f"{name} differs: run python models/make_chains.py"


def test_script_writes_into_out(tmp_path):
    """The command line (as the docstring says to run it) writes the same three files, and nothing else."""
    out = subprocess.run([sys.executable, str(MODELS_DIR / "make_chains.py"), "--out", str(tmp_path)],
                         capture_output=True, text=True, check=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{n}.mech" for n in SIZES), out.stdout
    for p in tmp_path.iterdir():
        assert p.read_text() == (MODELS_DIR / p.name).read_text()


@pytest.mark.parametrize("name", SIZES)
def test_sizes(name):
    m = load_model(name)
    assert (m.nq, m.nv, m.nc, m.nbody) == SIZES[name]


@pytest.mark.parametrize("name", ["band63", "twobands"])
def test_bands_close_at_q_zero(name):
    """φ(q_nominal) ≤ 1e-12, so assembly leaves the design pose exactly at q = 0 (floating hull at its xtree)."""
    m = load_model(name)
    phi, _ = closure(m, m.q_nominal())
    print(f"\n{name}: |phi(q = 0)| = {np.abs(phi).max():.1e}")
    assert np.abs(phi).max() <= 1e-12
    assert np.array_equal(m.q0(), m.q_nominal())


def test_a_polygon_that_does_not_close_is_caught():
    """The closure check can fail: moving the last shoe's trailing pin by 1e-10 m along z opens the loop by that."""
    m = load_model("band63")
    (lp,) = m.loops
    opened = replace(m, loops=(replace(lp, anchor_succ=lp.anchor_succ + np.array([0.0, 0.0, 1e-10])),))
    phi, _ = closure(opened, m.q_nominal())
    assert np.abs(phi).max() > 1e-12


@pytest.mark.parametrize("n", [15, 31, 63])
def test_shoes_carry_the_m113_shoe_data(n):
    """Every shoe: pin-to-pin length = pitch, cg at mid-pitch, mass 18.02 kg, principal moments 0.22 0.04 0.25 with
    the 0.22 axis along the shoe (M113_TrackShoeSinglePin.json)."""
    m = parse(mc.chain_text(n, closed=True), name=f"band{n}")
    vecs = [b.xtree for b in m.bodies[1:]] + [m.loops[0].anchor_succ]
    assert np.allclose([np.linalg.norm(v) for v in vecs], mc.PITCH, rtol=0, atol=1e-10)
    assert np.abs(sum(vecs)).max() <= 1e-12  # the polygon closes
    for b, v in zip(m.bodies, vecs):
        assert b.mass == mc.SHOE_MASS and b.joint == "revolute" and b.axis_index == 1
        assert np.allclose(b.cg, v / 2, rtol=0, atol=1e-12)
        w, axes = np.linalg.eigh(b.inertia)
        assert np.allclose(w, sorted(mc.SHOE_INERTIA), rtol=0, atol=1e-11)
        along = axes[:, list(np.argsort(mc.SHOE_INERTIA)).index(0)]  # the 0.22 axis
        assert abs(abs(along @ v) / np.linalg.norm(v) - 1) < 1e-9


def test_twobands_hull_and_offsets():
    """The hull is M113_Chassis.json's; the bands hang at y = ±1.0795 (M113_Vehicle_SinglePin.json)."""
    m = load_model("twobands")
    hull = m.bodies[0]
    assert hull.joint == "floating" and hull.mass == 7819.24
    assert np.array_equal(np.diag(hull.inertia), [13983.08, 27287.61, 28805.57])
    roots = [b for b in m.bodies if b.parent == 0]
    assert [b.xtree[1] for b in roots] == [1.0795, -1.0795]
    assert [(lp.pred, lp.succ) for lp in m.loops] == [(1, 63), (64, 126)]
