"""The model set: every file loads, and the vehicles have the sizes their topology implies."""
import pytest

from mechdyn.cli import describe
from mechdyn.core.parse import load_model
from tests.conftest import MODELS

# nq, nv, nc, mobility, from the topology each header describes
VEHICLES = {
    "quartercar": (11, 10, 8, 2),
    "halfcar": (22, 20, 16, 4),
    "hmmwv": (48, 43, 35, 8),  # mobility 8: the chassis's heave, pitch and roll, the rack and four posts (the rig's
    "hmmwv_pitman": (49, 44, 36, 8),  # restraints hold its fore-aft, lateral and yaw motion)
}


@pytest.mark.parametrize("name", MODELS)
def test_model_loads_and_describes(name):
    model = load_model(name)
    assert f"nq {model.nq}  nv {model.nv}" in describe(model)


@pytest.mark.parametrize("name", VEHICLES)
def test_vehicle_sizes(name):
    m = load_model(name)
    assert (m.nq, m.nv, m.nc, m.mobility) == VEHICLES[name]


def test_hmmwv_chassis_mass_from_chrono_data():
    chassis = load_model("hmmwv").bodies[0]
    assert chassis.joint == "floating" and chassis.mass == 2086.52  # hmmwv/chassis/HMMWV_Chassis.json
