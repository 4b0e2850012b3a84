"""MuJoCo as an independent engine: forward dynamics of the exported MJCF, checked against mechdyn.

The MuJoCo model is loaded from `mechdyn.export.export_mjcf` (so the exporter
is under test too): contacts disabled, no armature, damping or joint limits.
Force elements travel in the file (tendon springs and dampers, joint springs and
dampers, motors for inputs), so a tree model with elements is compared with
them; loop models are not compared, since MuJoCo's equality constraints are
soft and several loop types have none.

Inputs map by `mechdyn.export.mjcf.to_mujoco`; fext rows (base coordinates,
moment about the base origin) become `xfrc_applied` (world force, and the moment
about the body's centre of mass as MuJoCo computes it); qacc maps back by
`mechdyn.export.mjcf.from_mujoco_qacc`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mechdyn.core.model import Model
from mechdyn.export import mjcf

try:
    import mujoco
except ImportError as e:  # pragma: no cover - mujoco is a test dependency
    raise ImportError("the MuJoCo cross-check needs the 'mujoco' package: pip install -e '.[test]'") from e


class NotRepresentable(ValueError):
    """The model has something the MuJoCo comparison cannot reproduce exactly."""


@dataclass
class MjModel:
    model: Model
    mj: "mujoco.MjModel"
    data: "mujoco.MjData"
    layout: dict[str, tuple[int, int]]  # body name -> (qposadr, dofadr)
    body_id: list[int]  # mechdyn body index -> MuJoCo body id
    xml: str


def why_not(model: Model) -> str | None:
    """None when MuJoCo's forward dynamics of the export is the same mechanism, else the reason it is not."""
    if model.loops:
        return (f"{model.name} has loop closures: MuJoCo's equality constraints are soft and some loop types "
                "have none, so its accelerations are not the same equations")
    ex = mjcf.export_mjcf(model)
    if ex.omitted:
        return f"{model.name}: the MJCF export leaves out {'; '.join(ex.omitted)}"
    return None


def build(model: Model, xml: str | None = None) -> MjModel:
    """Load the model's MJCF export in MuJoCo (MjModel.from_xml_string)."""
    text = xml if xml is not None else mjcf.export_mjcf(model).text
    mj = mujoco.MjModel.from_xml_string(text)
    if mj.nq != model.nq or mj.nv != model.nv:
        raise RuntimeError(f"MuJoCo's model of {model.name} does not match: nq {mj.nq}, nv {mj.nv}")
    layout = {b.name: (int(mj.joint(b.name).qposadr[0]), int(mj.joint(b.name).dofadr[0])) for b in model.bodies}
    return MjModel(model, mj, mujoco.MjData(mj), layout, [mj.body(b.name).id for b in model.bodies], text)


def forward(mm: MjModel, q, qd, tau, fext=None, act=None) -> np.ndarray:
    """qdd in mechdyn's coordinates from mj_forward."""
    model, mj, d = mm.model, mm.mj, mm.data
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    d.qpos[:], d.qvel[:], d.qfrc_applied[:] = mjcf.to_mujoco(model, mm.layout, mj.nq, mj.nv, q, qd, tau)
    d.xfrc_applied[:] = 0.0
    if mj.nu:
        d.ctrl[:] = np.zeros(mj.nu) if act is None else act
    if fext is not None and any(b.fext for b in model.bodies):
        mujoco.mj_kinematics(mj, d)  # xipos: where MuJoCo applies xfrc_applied
        d.xfrc_applied[:] = xfrc(mm, fext)
    mujoco.mj_forward(mj, d)
    return mjcf.from_mujoco_qacc(model, mm.layout, q, qd, d.qacc.copy())


def xfrc(mm: MjModel, fext) -> np.ndarray:
    """fext rows of the bodies declared `fext 1` (base coordinates, moment about the base origin) as MuJoCo's
    xfrc_applied (nbody, 6): world force, then the moment about the body's centre of mass.

    Needs d.xipos at the current qpos (mj_kinematics).
    """
    out = np.zeros((mm.mj.nbody, 6))
    for i, b in enumerate(mm.model.bodies):
        if b.fext:
            n0, f = np.asarray(fext[i][:3], dtype=float), np.asarray(fext[i][3:], dtype=float)
            out[mm.body_id[i]] = np.concatenate([f, n0 - np.cross(mm.data.xipos[mm.body_id[i]], f)])
    return out
