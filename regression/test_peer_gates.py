"""External engines as gates, on every model each can represent: Pinocchio (all of them) and MuJoCo (trees);
and the generated derivatives against Pinocchio's computeABADerivatives (trees).

Pinocchio loads the URDF export and MuJoCo the MJCF export, so these gates also
hold the exporters and the convention maps (quaternion order, [ω; v] against
[v; ω], fext frames) to the same accelerations as mechdyn.
"""
from dataclasses import replace

import pytest

from crosscheck.mujoco import why_not
from crosscheck.mujoco.compare import accel_vs_generated as mujoco_vs_generated
from crosscheck.pinocchio import compare as pinocchio
from crosscheck.pinocchio import derivatives as pinocchio_derivs
from mechdyn.core.parse import load_model

from .conftest import MODELS, dynamics

TRIALS = 200
DERIV_TRIALS = 50
MUJOCO_MODELS = [m for m in MODELS if why_not(load_model(m)) is None]


def test_pinocchio_vs_generated(model_name, gate):
    check = pinocchio.accel_vs_generated(dynamics(model_name), TRIALS)
    gate(model_name, replace(check, name="pinocchio_vs_generated"))


def test_pinocchio_vs_dense(model_name, gate):
    check = pinocchio.accel_vs_dense(load_model(model_name), TRIALS)
    gate(model_name, replace(check, name="pinocchio_vs_dense"))


@pytest.mark.parametrize("mujoco_model", MUJOCO_MODELS)
def test_mujoco_vs_generated(mujoco_model, gate):
    gate(mujoco_model, replace(mujoco_vs_generated(dynamics(mujoco_model), TRIALS), name="mujoco_vs_generated"))


def test_mujoco_covers_every_tree_model(tree_model_name):
    """A tree model MuJoCo cannot represent would drop out of the gates above unnoticed: say so instead."""
    assert why_not(load_model(tree_model_name)) is None, why_not(load_model(tree_model_name))


def test_derivatives_vs_pinocchio(tree_model_name, gate):
    """∂qdd/∂(q, qd, tau, act, fext) of fwd_dyn_derivs against Pinocchio's analytic derivatives, scaled per block."""
    if reason := pinocchio_derivs.why_not(load_model(tree_model_name)):
        pytest.skip(reason)
    check, _ = pinocchio_derivs.derivs_vs_generated(dynamics(tree_model_name), DERIV_TRIALS)
    gate(tree_model_name, check)
