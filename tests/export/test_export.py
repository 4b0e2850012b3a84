"""URDF and MJCF export: every model's file loads in its engine with its numbers exact, and what a format
cannot express is listed, never dropped."""
import xml.etree.ElementTree as ET

import mujoco
import numpy as np
import pinocchio as pin
import pytest

from crosscheck import mujoco as cmj
from crosscheck import pinocchio as cpin
from mechdyn.cli import parser as mechdyn_main
from mechdyn.cliutil import run
from mechdyn.core.parse import load_model, parse
from mechdyn.export import export_mjcf, export_urdf

from tests.conftest import MODELS

FLOATING = """
body a
  parent base
  joint floating
  xtree 0.1 0.2 0.3
  mass 1.2345678901234567
  cg 0.1 -0.3 0.7
  inertia 0.31 0.27 0.22 0.013 -0.017 0.0011
end
body b
  parent base
  joint floating
  mass 2
  inertia 1 1 1 0 0 0
end
body c
  parent a
  joint prismatic y
  xtree 0.3 0.1 0.2
  mass 3
  inertia 1 1 1 0 0 0
end
"""


def floats(text: str) -> list[float]:
    return [float(x) for x in text.split()]


@pytest.mark.parametrize("name", MODELS)
def test_urdf_text_is_exact(name):
    """Masses, CGs, inertia entries, offsets and axes read back from the text as the very same doubles."""
    model = load_model(name)
    root = ET.fromstring(export_urdf(model).text)
    links = {e.get("name"): e for e in root.iter("link")}
    joints = {e.get("name"): e for e in root.iter("joint")}
    assert set(links) == {"base", *(b.name for b in model.bodies)} and set(joints) == {b.name for b in model.bodies}
    for b in model.bodies:
        inertial = links[b.name].find("inertial")
        assert floats(inertial.find("origin").get("xyz")) == list(b.cg)
        assert float(inertial.find("mass").get("value")) == b.mass
        I = inertial.find("inertia")
        assert [float(I.get(k)) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")] == \
            [b.inertia[0, 0], b.inertia[0, 1], b.inertia[0, 2], b.inertia[1, 1], b.inertia[1, 2], b.inertia[2, 2]]
        j = joints[b.name]
        assert j.get("type") == b.joint
        parent = "base" if b.parent < 0 else model.bodies[b.parent].name
        assert j.find("parent").get("link") == parent and j.find("child").get("link") == b.name
        if b.joint != "floating":
            assert floats(j.find("origin").get("xyz")) == list(b.xtree)
            assert floats(j.find("axis").get("xyz")) == list(b.axis)
    assert f"gravity {' '.join(repr(float(g)) for g in model.gravity)}" in export_urdf(model).text


@pytest.mark.parametrize("name", MODELS)
def test_urdf_loads_in_pinocchio_exactly(name):
    """pin.buildModelFromUrdf reads the file: joint types, parents and placements exact, masses exact, CGs and
    inertias to round-off (Pinocchio adds each body to its joint's empty inertia, m c / m, which rounds)."""
    model = load_model(name)
    pm = cpin.build(model).pmodel  # writes the export and loads it with pin.buildModelFromUrdf
    assert (pm.nq, pm.nv, pm.njoints - 1) == (model.nq, model.nv, model.nbody)
    for b in model.bodies:
        j = pm.getJointId(b.name)
        kind = pm.joints[j].shortname()
        # Pinocchio reads a joint about +x, +y or +z of its joint frame as RX/RY/RZ (PX...), any other as unaligned
        simple = b.axis_index >= 0
        want = ("JointModelFreeFlyer" if b.joint == "floating" else
                f"JointModel{b.joint[0].upper()}{'XYZ'[b.axis_index]}" if simple else
                f"JointModel{b.joint.capitalize()}Unaligned")
        assert kind == want, b.name
        assert pm.names[pm.parents[j]] == ("universe" if b.parent < 0 else model.bodies[b.parent].name)
        M, Y = pm.jointPlacements[j], pm.inertias[j]
        # a turned frame goes through URDF's rpy, whose quarter turns Pinocchio's cosines leave 2e-16 off zero
        if b.joint == "floating" or b.aligned:
            assert np.array_equal(M.rotation, np.eye(3))
        else:
            assert np.abs(M.rotation - b.rot).max() <= 4 * np.finfo(float).eps
        assert np.array_equal(M.translation, np.zeros(3) if b.joint == "floating" else b.xtree)
        eps, scale = np.finfo(float).eps, np.abs(b.inertia).max() + b.mass * (b.cg @ b.cg)
        assert Y.mass == b.mass
        assert np.abs(Y.lever - b.cg).max() <= 4 * eps * max(np.abs(b.cg).max(), 1e-300)
        assert np.abs(Y.inertia - b.inertia).max() <= 8 * eps * scale


@pytest.mark.parametrize("name", MODELS)
def test_mjcf_loads_in_mujoco_exactly(name):
    """MjModel.from_xml_string reads the file: masses, CGs and gravity exact; the inertia tensor MuJoCo rebuilds
    from its principal axes matches to round-off; the text itself holds the exact numbers."""
    model = load_model(name)
    ex = export_mjcf(model)
    mm = cmj.build(model, ex.text)
    mj = mm.mj
    assert np.array_equal(mj.opt.gravity, model.gravity)
    root = ET.fromstring(ex.text)
    bodies = {e.get("name"): e for e in root.iter("body")}
    for b, k in zip(model.bodies, mm.body_id):
        assert mj.body_mass[k] == b.mass and np.array_equal(mj.body_ipos[k], b.cg)
        R = np.zeros(9)
        mujoco.mju_quat2Mat(R, mj.body_iquat[k])
        R = R.reshape(3, 3)
        # the eigen decomposition rounds at the scale of the principal moments' sum (panda's link 2, whose products
        # of inertia are as large as its moments, comes to 3e-16 of a largest entry of 0.028)
        assert np.abs(R @ np.diag(mj.body_inertia[k]) @ R.T - b.inertia).max() <= 1e-14 * np.trace(b.inertia)
        inertial = bodies[b.name].find("inertial")
        I = b.inertia
        assert floats(inertial.get("fullinertia")) == [I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]]
        assert float(inertial.get("mass")) == b.mass and floats(inertial.get("pos")) == list(b.cg)
        assert floats(bodies[b.name].get("pos")) == list(b.xtree)
        if b.joint != "floating":
            jid = mj.joint(b.name).id
            assert mj.jnt_type[jid] == (mujoco.mjtJoint.mjJNT_HINGE if b.joint == "revolute" else mujoco.mjtJoint.mjJNT_SLIDE)
            assert np.abs(mj.jnt_axis[jid] - b.axis).max() <= np.finfo(float).eps  # MuJoCo normalizes it again
            assert mj.dof_armature[mj.jnt_dofadr[jid]] == 0.0
    assert not mj.jnt_limited.any()


def test_several_floating_bodies_and_a_branch():
    """Two free-flyers off the base and a prismatic child: both engines load them, and agree with mechdyn."""
    import mechdyn
    from mechdyn.core.sample import scaled_error, states

    model = parse(FLOATING, "floating.mech")
    dyn = mechdyn.load(model)
    pm, mm = cpin.build(model), cmj.build(model)
    assert [pm.pmodel.joints[j].shortname() for j in pm.joint] == ["JointModelFreeFlyer", "JointModelFreeFlyer",
                                                                    "JointModelPY"]
    for s in states(model, 50, 3):
        want = dyn.forward(s.q, s.qd, s.tau, s.fext, s.act)
        assert scaled_error(cpin.forward(pm, s.q, s.qd, s.tau, s.fext, s.act), want) <= 1e-12
        assert scaled_error(cmj.forward(mm, s.q, s.qd, s.tau, s.fext, s.act), want) <= 1e-12


def test_urdf_lists_loops_and_elements_with_lines():
    ex = export_urdf(load_model("slidercrank"))
    assert any(o.startswith("loop 'conrod' (distance, ") and "slidercrank.mech:" in o and "no closed chains" in o
               for o in ex.omitted)
    assert any(o.startswith("tsda 'return_spring' (") for o in ex.omitted)
    assert any(o.startswith("gravity 0.0 0.0 -9.81") for o in ex.omitted)
    springpend = export_urdf(load_model("springpend"))
    assert any(o.startswith("rsda 'torsion'") for o in springpend.omitted)


def test_mjcf_expresses_spherical_and_distance_loops_and_lists_the_rest():
    """Spherical loops become connect, distance loops a tendon held at the rod length; both hold at the design
    pose (keyframe 'design'), where MuJoCo's constraint residuals vanish. A point-on-line loop is listed."""
    for name in ("rrrs", "slidercrank", "quartercar", "hmmwv_pitman"):
        model = load_model(name)
        ex = export_mjcf(model)
        assert not ex.omitted and ex.notes
        mm = cmj.build(model, ex.text)
        assert mm.mj.neq == len(model.loops)
        mujoco.mj_resetDataKeyframe(mm.mj, mm.data, mm.mj.key("design").id)
        mujoco.mj_forward(mm.mj, mm.data)
        assert mm.data.nefc == model.nc
        assert np.abs(mm.data.efc_pos).max() <= 1e-9
    ex = export_mjcf(load_model("fourbar"))
    assert len(ex.omitted) == 1 and ex.omitted[0].startswith("loop 'ground' (point-on-line, ")
    assert "no equality constraint for a point-on-line joint" in ex.omitted[0]


def test_mjcf_elements_are_tendons_joint_springs_and_motors():
    model = load_model("springpend")
    mm = cmj.build(model)
    mj = mm.mj
    t = mj.tendon("spring").id
    assert (mj.tendon_stiffness[t], mj.tendon_damping[t], mj.tendon_lengthspring[t][0]) == (200.0, 5.0, 0.45)
    j = mj.joint("pend2")
    assert (mj.jnt_stiffness[j.id], mj.qpos_spring[j.qposadr[0]], mj.dof_damping[j.dofadr[0]]) == (20.0, 0.2, 0.5)
    assert [mj.actuator(k).name for k in range(mj.nu)] == ["act:spring", "act:torsion"]
    assert list(mj.actuator_gear[:, 0]) == [-1.0, 1.0]


def test_export_command_writes_both_files(tmp_path, capsys):
    urdf, xml = tmp_path / "q.urdf", tmp_path / "q.xml"
    assert run(mechdyn_main, ["export", "quartercar", "--urdf", str(urdf), "--mjcf", str(xml)]) == 0
    out = capsys.readouterr().out
    assert f"{urdf}: URDF, 7 item(s) left out:" in out and "loop 'tierod' (distance" in out
    assert f"{xml}: MJCF, everything in the model exported" in out and "note: uca_ball, lca_ball" in out
    pin.buildModelFromUrdf(str(urdf))
    mujoco.MjModel.from_xml_path(str(xml))


def test_export_command_needs_a_format(capsys):
    assert run(mechdyn_main, ["export", "elbow"]) == 2
    assert "give --urdf FILE and/or --mjcf FILE" in capsys.readouterr().err
