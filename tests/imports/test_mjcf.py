"""MJCF import (mechdyn/imports/mjcf.py) on small files written here, each checked against MuJoCo's mj_forward
on the same file (crosscheck/mujoco/imported.py), its refusals, and a planted bug the check must catch."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from crosscheck.mujoco import imported
from mechdyn.core.errors import MechError
from mechdyn.dynamics import Dynamics
from mechdyn.imports import import_model, import_text, mjcf

# a free torso; a thigh with three hinges at anchors off its origin (the middle one with a ref); a shin on a hinge
# and a slide with a ref; a foot welded to the shin; a mocap marker
LEG = """<mujoco model="leg">
  <compiler angle="radian"/>
  <option gravity="0.3 -0.2 -9.81"/>
  <worldbody>
    <body name="torso" pos="0.1 0.2 1.0" quat="0.9 0.1 -0.3 0.2">
      <freejoint name="root"/>
      <geom type="box" size="0.2 0.1 0.15"/>
      <body name="thigh" pos="0.05 -0.1 -0.2" quat="0.8 0.3 0.1 0.0">
        <joint name="hip_x" axis="1 0 0" pos="0.01 0.02 0.03"/>
        <joint name="hip_y" axis="0 1 0.2" pos="-0.02 0.0 0.05" ref="0.4"/>
        <joint name="hip_z" axis="0 0 1" pos="0.0 0.03 -0.01" damping="2" range="-1 1"/>
        <geom type="capsule" fromto="0 0 0 0.02 0 -0.3" size="0.04"/>
        <body name="shin" pos="0.02 0 -0.32">
          <joint name="knee" axis="0 1 0" pos="0 0 0.02" armature="0.1" stiffness="5"/>
          <joint name="slider" type="slide" axis="0.1 0 -1" ref="-0.05" pos="0.3 0.2 0.1"/>
          <geom type="capsule" fromto="0 0 0 0 0.01 -0.3" size="0.03"/>
          <body name="foot" pos="0.05 0 -0.32" euler="0.1 0.2 0.3">
            <geom type="box" size="0.08 0.04 0.02"/>
          </body>
        </body>
      </body>
    </body>
    <body name="marker" mocap="true" pos="1 1 1"><geom size="0.01" contype="0" conaffinity="0"/></body>
  </worldbody>
  <actuator><motor joint="knee"/></actuator>
</mujoco>
"""


def _write(tmp_path: Path, text: str, name: str = "m.xml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.fixture(scope="module")
def leg(tmp_path_factory) -> tuple[str, Dynamics]:
    path = _write(tmp_path_factory.mktemp("leg"), LEG, "leg.xml")
    return path, Dynamics(import_model(path))


def test_leg_matches_mujoco(leg) -> None:
    """Several joints on one body, anchors off its origin, refs on a hinge and a slide, a free joint, a welded body:
    mechdyn's qdd is MuJoCo's to the gate on 1000 random states."""
    path, dyn = leg
    for check in imported.accel_vs_mujoco(path, dyn):
        assert check.passed, check.line()
    well, _ = imported.accel_vs_mujoco(path, dyn, trials=50)
    assert "50 of 50" in well.detail  # every state is well conditioned: the plain gate saw them all


def test_leg_text(leg) -> None:
    """The chain, the floating root, the refs, the left-out parts and the MuJoCo joint names in the .mech text."""
    path, dyn = leg
    text = import_text(path)[1]
    names = [b.name for b in dyn.model.bodies]
    assert names == ["torso", "thigh.hip_x", "thigh.hip_y", "thigh", "shin.knee", "shin"]
    assert [b.info.name for b in dyn.model.bodies] == ["root", "hip_x", "hip_y", "hip_z", "knee", "slider"]
    assert [b.joint for b in dyn.model.bodies] == ["floating"] + ["revolute"] * 4 + ["prismatic"]
    assert [b.mass for b in dyn.model.bodies][1:3] == [0.0, 0.0]
    assert "gravity 0.3 -0.2 -9.81" in text
    assert "ref 0.4 (coordinate = qpos − ref)" in text and "ref -0.05 (coordinate = qpos − ref)" in text
    for left_out in ("actuators (1)", "joint springs (stiffness) on 1 joints: knee", "armature on 1 joints: knee",
                     "joint damping (reported as joint_damping) on 1 joints: hip_z", "mocap motion of marker"):
        assert f"# left out: {left_out}" in text
    hip_z = dyn.model.bodies[3].info
    assert (hip_z.lower, hip_z.upper, hip_z.damping) == (-1.0, 1.0, 2.0)
    assert "poi foot thigh" not in text and "poi foot shin" in text  # the welded foot merged into the shin


def test_planted_missing_anchor_shift_is_caught(leg, monkeypatch) -> None:
    """Planted bug: the importer forgets the joints' anchors (as if it dropped the −jnt_pos shift); the check,
    which runs MuJoCo on the true file, must trip."""
    path, _ = leg
    real = mjcf.compile_model

    def anchorless(p: str):
        mj = real(p)
        mj.jnt_pos[:] = 0.0
        return mj

    monkeypatch.setattr(mjcf, "compile_model", anchorless)
    wrong = Dynamics(import_model(path))
    monkeypatch.setattr(mjcf, "compile_model", real)
    well, cond = imported.accel_vs_mujoco(path, wrong, trials=50)
    assert well.value > 1e3 * well.threshold and not cond.passed


def test_planted_swapped_free_velocity_is_caught(leg, monkeypatch) -> None:
    """Planted bug: the state map gives MuJoCo the free joint's [ω; v] in mechdyn's order; the check must trip."""
    path, dyn = leg
    real = imported.to_mujoco

    def swapped(im, q, qd, tau):
        qpos, qvel, qfrc = real(im, q, qd, tau)
        qvel[0:6] = np.concatenate([qd[0:3], qd[3:6]])
        return qpos, qvel, qfrc

    monkeypatch.setattr(imported, "to_mujoco", swapped)
    well, _ = imported.accel_vs_mujoco(path, dyn, trials=50)
    assert well.value > 1e3 * well.threshold


BALL = """<mujoco>
  <worldbody>
    <body name="arm" pos="0 0 1">
      <joint name="shoulder" type="ball"/>
      <geom size="0.1"/>
    </body>
  </worldbody>
</mujoco>
"""


def test_ball_joint_is_refused_by_name(tmp_path) -> None:
    path = _write(tmp_path, BALL)
    with pytest.raises(MechError, match="joint 'shoulder' of body 'arm' is a ball joint") as e:
        import_model(path)
    assert (e.value.path, e.value.line) == (path, 4)


def test_nested_free_joint_is_refused(tmp_path) -> None:
    """MuJoCo's compiler refuses a free joint below another body: one error at its line."""
    text = BALL.replace('<joint name="shoulder" type="ball"/>', '<joint name="j"/>\n<body name="b"><freejoint '
                        'name="loose"/><geom size="0.1"/></body>')
    with pytest.raises(MechError, match="free joint can only be used on top level") as e:
        import_model(_write(tmp_path, text))
    assert e.value.line == 5


@pytest.mark.parametrize("text, line, words", [
    ("<mujoco><worldbody><body><joint/></worldbody></mujoco>", 1, "MuJoCo cannot compile the file: XML parse error"),
    ("<mujoco>\n<worldbody>\n<body>\n<joint type='bogus'/>\n<geom size='1'/></body></worldbody></mujoco>", 4,
     "invalid keyword: 'bogus'"),
    ("not xml at all", 1, "XML parse error"),
    ("<mujoco><worldbody><body><geom size='1'/></body></worldbody></mujoco>", 0, "the model has no joint"),
])
def test_bad_input_is_one_error_naming_the_file(tmp_path, text, line, words) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(MechError) as e:
        import_model(path)
    assert (e.value.path, e.value.line) == (path, line)
    assert words in str(e.value) and "\n" not in e.value.msg


def test_missing_file(tmp_path) -> None:
    path = str(tmp_path / "nowhere.xml")
    with pytest.raises(MechError, match="cannot read the file") as e:
        import_model(path)
    assert e.value.path == path
