"""The tires' C (mechdyn/contact/tire.c, docs/tires.md): the vertical spring against its potential, the data
files' errors, and the format's refusals. The NumPy route and Chrono's own tires check the laws themselves
(test_tire_numpy.py, tests/crosscheck/test_tire_rig.py)."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from crosscheck.tires import wheel_text
from mechdyn.contact import native
from mechdyn.contact.producers import Contact
from mechdyn.contact.tires import TIRE_INFO, strip_comments
from mechdyn.core.errors import MechError
from mechdyn.core.parse import parse

MODELS = Path(__file__).resolve().parents[2] / "models"
TMEASY = MODELS / "data" / "hmmwv" / "tire" / "HMMWV_TMeasyTire.json"
FIALA = MODELS / "data" / "hmmwv" / "tire" / "HMMWV_FialaTire.json"


def wheel_model(data: Path, contact: str = "single", terrain: str = "plane 0 0 1 0", extra: str = "") -> str:
    """One wheel spinning about y on a free hub, 0.45 m above the terrain."""
    return wheel_text(str(data), contact, terrain) + extra


def rows(nbody: int, R: np.ndarray, p, w=(0, 0, 0), v=(0, 0, 0), body: int = 1) -> np.ndarray:
    X = np.zeros((nbody, 18))
    X[:, :9] = np.eye(3).ravel()
    X[body] = np.concatenate([R.ravel(), p, w, v])
    return X


@pytest.mark.parametrize("data", [TMEASY, FIALA], ids=["tmeasy", "fiala"])
@pytest.mark.parametrize("contact", ["single", "four"])
def test_vertical_force_is_minus_the_potentials_gradient(data, contact):
    con = Contact(parse(wheel_model(data, contact)))
    for z in (0.4612, 0.4537, 0.4418, 0.4271, 0.3953, 0.2513):  # off the table's kinks; the last past bottoming
        h = 1e-7
        U = [con.tire_energy(rows(2, np.eye(3), (0.3, 0.1, z + s * h))) for s in (1, -1)]
        F = con.tire_fext(rows(2, np.eye(3), (0.3, 0.1, z)))[1]
        assert abs(F[5] - (-(U[0] - U[1]) / (2 * h))) <= 1e-6 * max(1.0, abs(F[5])), (z, F[5])
        assert np.allclose(F[3:5], 0.0, atol=1e-9)  # standing still: no friction, no bristle carried


def test_a_planted_spring_bug_trips_the_gradient_check():
    text = native.source().replace("*U = 0.5 * t->d1 * depth * depth", "*U = 0.55 * t->d1 * depth * depth")
    con = Contact(parse(wheel_model(TMEASY)), module=native.compile(text))
    h, z = 1e-7, 0.44
    U = [con.tire_energy(rows(2, np.eye(3), (0, 0, z + s * h))) for s in (1, -1)]
    F = con.tire_fext(rows(2, np.eye(3), (0, 0, z)))[1]
    assert abs(F[5] + (U[0] - U[1]) / (2 * h)) > 1e-3 * abs(F[5])


def test_info_reports_load_slip_and_the_wrench_at_the_centre():
    con = Contact(parse(wheel_model(TMEASY)))
    r0, z, v = 0.4699, 0.44, 10.0
    X = rows(2, np.eye(3), (1.0, 2.0, z), w=(0, 0.95 * v / r0, 0), v=(v, 0, 0))
    info = dict(zip(TIRE_INFO, con.tire_info(X)[0]))
    assert info["contact"] == 1 and math.isclose(info["depth"], r0 - z, rel_tol=1e-12)
    assert info["slip"] < 0 and info["Fx"] < 0  # the wheel turns slower than it rolls: braking slip, braking force
    F = con.tire_fext(X)[1]
    # the force acts at the patch, z below the centre: the braking force's moment about the centre spins it up
    Mc = F[:3] - np.cross([1.0, 2.0, z], F[3:])
    assert Mc[1] == pytest.approx(-info["Fx"] * z + info["My"], rel=1e-9) and Mc[1] > 0


def test_off_the_ground_no_force_and_the_bristles_reset():
    con = Contact(parse(wheel_model(TMEASY)))
    state = np.array([[1e-3, -2e-3]])
    F = con.tire_fext(rows(2, np.eye(3), (0, 0, 0.6), v=(0.1, 0, 0)), dt=1e-3, state=state)
    assert not F.any() and not state.any()


def test_bristles_hold_a_standing_wheel_and_are_carried_over_dt():
    con = Contact(parse(wheel_model(TMEASY)))
    state = np.zeros((1, 2))
    X = rows(2, np.eye(3), (0, 0, 0.44), v=(0.01, 0, 0))
    for _ in range(3):
        F = con.tire_fext(X, dt=1e-3, state=state)[1]
    assert state[0, 0] > 0 and F[3] < 0  # sliding forward winds the bristle up, its force pushes back


# ---- bad input: one error naming the file, the line or the key


def copy_with(tmp_path: Path, src: Path, edit) -> Path:
    d = json.loads(strip_comments(src.read_text()))
    edit(d)
    out = tmp_path / src.name
    out.write_text(json.dumps(d, indent=2))
    return out


def load_error(text: str, tmp_path: Path) -> MechError:
    path = tmp_path / "car.mech"
    path.write_text(text)
    with pytest.raises(MechError) as e:
        Contact(parse(text, str(path)))
    return e.value


def test_missing_data_file(tmp_path):
    (tmp_path / "car.mech").write_text(wheel_model(Path("nowhere/tire.json")))
    with pytest.raises(MechError) as e:
        parse((tmp_path / "car.mech").read_text(), str(tmp_path / "car.mech"))
    line = 1 + wheel_model(Path("x")).splitlines().index("  data x")
    assert "nowhere/tire.json" in str(e.value) and "does not exist" in str(e.value) and e.value.line == line


def test_missing_key_names_the_file_and_the_key(tmp_path):
    data = copy_with(tmp_path, FIALA, lambda d: d["Fiala Parameters"].pop("CSLIP"))
    e = load_error(wheel_model(data), tmp_path)
    assert e.path == str(data) and '"CSLIP"' in str(e) and "Fiala Parameters" in str(e)


@pytest.mark.parametrize("edit,key", [
    (lambda d: d["Design"].__setitem__("Unloaded Radius [m]", -0.47), "Unloaded Radius [m]"),
    (lambda d: d.__setitem__("Coefficient of Friction", 0.0), "Coefficient of Friction"),
    (lambda d: d.__setitem__("Load Index", 2.5), "Load Index"),
    (lambda d: d.__setitem__("Vehicle Type", "Tractor"), "Vehicle Type"),
    (lambda d: d.__setitem__("Template", "Pac89Tire"), "Template"),
])
def test_value_out_of_bounds_names_its_key_and_line(tmp_path, edit, key):
    data = copy_with(tmp_path, TMEASY, edit)
    e = load_error(wheel_model(data), tmp_path)
    assert key in str(e) and e.path == str(data)
    assert f'"{key}"' in data.read_text().splitlines()[e.line - 1]


def test_fiala_table_must_increase(tmp_path):
    def bad(d):
        d["Fiala Parameters"]["Vertical Curve Data"][3][0] = 0.001
    e = load_error(wheel_model(copy_with(tmp_path, FIALA, bad)), tmp_path)
    assert "Vertical Curve Data" in str(e)


def test_wheel_without_spin_joint_and_without_fext(tmp_path):
    text = wheel_model(TMEASY).replace("joint revolute y\n  mass 56.4", "joint prismatic z\n  mass 56.4")
    with pytest.raises(MechError, match="revolute joint about its spin axis"):
        parse(text, str(tmp_path / "a.mech"))
    with pytest.raises(MechError, match="lacks 'fext 1'"):
        parse(wheel_model(TMEASY).replace("  fext 1\n", ""), str(tmp_path / "a.mech"))


def test_no_ground_and_terrain_not_under_the_wheel(tmp_path):
    text = wheel_model(TMEASY)
    no_ground = text[:text.index("ground")] + text[text.index("tire t"):]
    with pytest.raises(MechError, match="no terrain to roll on"):
        parse(no_ground, str(tmp_path / "a.mech"))
    grid = "grid 5 5 1 1\n  heights 0 0 0 0\n  heights 0 0 0 0\n  heights 0 0 0 0\n  heights 0 0 0 0"
    e = load_error(wheel_model(TMEASY, terrain=grid), tmp_path)
    assert "off the ground's grid" in str(e)
    e = load_error(wheel_model(TMEASY, terrain="plane 0 0 1 0.5"), tmp_path)
    assert "at or below the terrain" in str(e)


def test_data_path_is_relative_to_the_model_file(tmp_path):
    shutil.copy(TMEASY, tmp_path / "t.json")
    (tmp_path / "car.mech").write_text(wheel_model(Path("t.json")))
    m = parse((tmp_path / "car.mech").read_text(), str(tmp_path / "car.mech"))
    assert Path(m.tires[0].data) == tmp_path / "t.json"
