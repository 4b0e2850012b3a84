"""The external suite: every URDF of example-robot-data, on a fixed and on a floating base, imported by mechdyn and
parsed by Pinocchio itself, their forward dynamics compared on 1000 random states; the generated derivatives
against Pinocchio's computeABADerivatives on a sample; the dense reference on a sample.

A file the importer refuses must be in REFUSED with the words of its reason, so a robot that starts or stops
being refused shows here. Identical robots (a URDF with and without joint limits, a `_box` collision variant)
share one compiled module (SAME_AS).
"""
from dataclasses import replace
from pathlib import Path

import pytest

from crosscheck import dense_compare, robots
from crosscheck.pinocchio import compare as pinocchio
from crosscheck.pinocchio import derivatives as pinocchio_derivs
from mechdyn.core.errors import MechError
from mechdyn.core.fingerprint import fingerprint
from mechdyn.dynamics import Dynamics

TRIALS = 1000
DERIV_TRIALS = 50
DENSE_TRIALS = 200
PACKAGE_URDFS = 69  # example-robot-data 6.0.0

# (file, base) -> words of the importer's reason. Each is the file's own fault by the format's rules
# (docs/import.md, "What is refused"); Pinocchio loads all but ur3.urdf without a word.
REFUSED = {
    ("hector_description/robots/quadrotor_base.urdf", "fixed"): "carries no moving joint",
    ("iris_description/robots/iris_simple.urdf", "fixed"): "carries no moving joint",
    ("icub_description/robots/icub.urdf", "fixed"): "'inertia' in body 'r_hip_2' is not positive definite",
    ("icub_description/robots/icub.urdf", "floating"): "'inertia' in body 'r_hip_2' is not positive definite",
    ("icub_description/robots/icub_reduced.urdf", "fixed"): "'inertia' in body 'r_hip_2' is not positive definite",
    ("icub_description/robots/icub_reduced.urdf", "floating"): "'inertia' in body 'r_hip_2' is not positive definite",
    ("romeo_description/urdf/romeo.urdf", "fixed"): "body 'LFinger11Link' has mass 0 and so does every body it carries",
    ("romeo_description/urdf/romeo.urdf", "floating"): "body 'LFinger11Link' has mass 0 and so does every body it "
                                                       "carries",
    ("romeo_description/urdf/romeo_laas_small.urdf", "fixed"): "'inertia' in body 'LShoulderYaw_link' violates the "
                                                               "triangle inequality",
    ("romeo_description/urdf/romeo_laas_small.urdf", "floating"): "'inertia' in body 'base_link' is not positive "
                                                                  "definite",
    ("romeo_description/urdf/romeo_small.urdf", "fixed"): "'inertia' in body 'RShoulderYawLink' violates the triangle "
                                                          "inequality",
    ("romeo_description/urdf/romeo_small.urdf", "floating"): "'inertia' in body 'RShoulderYawLink' violates the "
                                                             "triangle inequality",
    ("ur_description/urdf/ur3.urdf", "fixed"): "not a URDF yourdfpy can read",
    ("ur_description/urdf/ur3.urdf", "floating"): "not a URDF yourdfpy can read",
}
# file -> the file with the same dynamics on both bases (the same fingerprint, the model's name aside: joint limits,
# collision shapes and continuous-for-revolute do not reach the C). It is checked against Pinocchio's parse of its
# own file through the other's compiled module, on the other's worker; test_same_as_holds holds the table.
SAME_AS = {
    "double_pendulum_description/urdf/double_pendulum_continuous.urdf":
        "double_pendulum_description/urdf/double_pendulum.urdf",
    "panda_description/urdf/panda_collision.urdf": "panda_description/urdf/panda.urdf",
    "talos_data/robots/talos_full_v2_box.urdf": "talos_data/robots/talos_full_v2.urdf",
    "talos_data/robots/talos_reduced_box.urdf": "talos_data/robots/talos_reduced.urdf",
    "talos_data/robots/talos_reduced_corrected.urdf": "talos_data/robots/talos_reduced.urdf",
    "ur_description/urdf/ur10_robot.urdf": "ur_description/urdf/ur10_joint_limited_robot.urdf",
    "ur_description/urdf/ur3_robot.urdf": "ur_description/urdf/ur3_joint_limited_robot.urdf",
    "ur_description/urdf/ur5_robot.urdf": "ur_description/urdf/ur5_joint_limited_robot.urdf",
}
CASES = [(rel, base) for rel in robots.urdfs() for base in robots.BASES]
# the derivatives' module grows with nv²: a sample across the kinds (arms, a hand, quadrupeds, humanoids, a mobile
# manipulator, massless links), on both bases, every one under the 48-DoF cap
DERIVATIVE_SAMPLE = [
    ("panda_description/urdf/panda.urdf", "fixed"), ("ur_description/urdf/ur5_robot.urdf", "fixed"),
    ("kinova_description/robots/kinova.urdf", "fixed"), ("xarm_description/urdf/xarm7.urdf", "fixed"),
    ("allegro_hand_description/urdf/allegro_left_hand.urdf", "fixed"), ("solo_description/robots/solo12.urdf",
                                                                        "floating"),
    ("go2_description/urdf/go2.urdf", "floating"), ("anymal_c_simple_description/urdf/anymal.urdf", "floating"),
    ("talos_data/robots/talos_reduced.urdf", "floating"), ("human_description/robots/human.urdf", "fixed"),
    ("tiago_description/robots/tiago_no_hand.urdf", "fixed"),
]
DENSE_SAMPLE = [("panda_description/urdf/panda.urdf", "floating"), ("go2_description/urdf/go2.urdf", "floating"),
                ("talos_data/robots/talos_full_v2.urdf", "floating"), ("human_description/robots/human.urdf", "fixed"),
                ("kinova_description/robots/kinova.urdf", "fixed"), ("baxter_description/urdf/baxter.urdf", "fixed")]

_built: dict[tuple[str, str], Dynamics] = {}


def cases(pairs: list[tuple[str, str]]) -> list:
    """pytest params, one xdist group per file: its bases and samples share a worker and the modules built there."""
    return [pytest.param(rel, base, id=robots.label(rel, base),
                         marks=pytest.mark.xdist_group(f"robot:{SAME_AS.get(rel, rel)}")) for rel, base in pairs]


def dynamics(rel: str, base: str, gate, gates: str | tuple[str, ...]) -> Dynamics:
    """The compiled dynamics of one robot, once per worker; a refused robot is checked against REFUSED and
    skipped (its gates recorded as skipped, with the reason)."""
    name = robots.label(rel, base)
    try:
        model = robots.load(rel, base)
    except MechError as e:
        assert (rel, base) in REFUSED, f"{name} is refused, and REFUSED does not list it: {e}"
        assert REFUSED[rel, base] in e.msg, f"{name} is refused for another reason than REFUSED's: {e}"
        gate.skip(name, gates, f"refused by the importer: {e.msg}")
    assert (rel, base) not in REFUSED, f"{name} is imported, but REFUSED lists it"
    if rel in SAME_AS:  # named as its twin, it is its twin's module (the build cache keys modules by content)
        model = replace(model, name=Path(SAME_AS[rel]).stem)
    if (rel, base) not in _built:
        _built[rel, base] = Dynamics(model)
    return _built[rel, base]


def test_the_suite_has_its_robots():
    """example-robot-data is a test dependency: without it the suite would pass on nothing."""
    assert robots.robots_dir() is not None, "example-robot-data is not installed: pip install -e '.[test]'"
    assert len(robots.urdfs()) == PACKAGE_URDFS, robots.urdfs()
    assert set(REFUSED) <= set(CASES), set(REFUSED) - set(CASES)


def test_same_as_holds():
    """Each file of SAME_AS has its twin's dynamics on both bases: sharing the twin's module checks this file."""
    for rel, twin in SAME_AS.items():
        for base in robots.BASES:
            a, b = (replace(robots.load(r, base), name="") for r in (rel, twin))
            assert fingerprint(a) == fingerprint(b), (rel, twin, base)


@pytest.mark.parametrize("rel, base", cases(CASES))
def test_robot_vs_pinocchio(rel, base, gate):
    dyn = dynamics(rel, base, gate, "robot_vs_pinocchio")
    gate(robots.label(rel, base), replace(pinocchio.accel_vs_generated(dyn, TRIALS), name="robot_vs_pinocchio"))


@pytest.mark.parametrize("rel, base", cases(DERIVATIVE_SAMPLE))
def test_robot_derivatives_vs_pinocchio(rel, base, gate):
    dyn = dynamics(rel, base, gate, "robot_derivs_vs_pinocchio")
    check, _ = pinocchio_derivs.derivs_vs_generated(dyn, DERIV_TRIALS)
    gate(robots.label(rel, base), replace(check, name="robot_derivs_vs_pinocchio"))


@pytest.mark.parametrize("rel, base", cases(DENSE_SAMPLE))
def test_robot_dense_vs_generated(rel, base, gate):
    dyn = dynamics(rel, base, gate, "robot_dense_vs_generated")
    gate(robots.label(rel, base), replace(dense_compare.gen_vs_dense(dyn, DENSE_TRIALS),
                                          name="robot_dense_vs_generated"))
