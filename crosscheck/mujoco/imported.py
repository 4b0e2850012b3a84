"""MuJoCo on the very file mechdyn imported: mj_forward on an MJCF file against the generated C of its import.

`mechdyn.imports.mjcf.read` takes from the compiled MjModel only the rigid-body tree, its inertias and gravity;
`configure` switches off in MuJoCo everything else that reaches qacc, so the two compute the same equations:

- model fields zeroed: dof_armature, tendon_armature, actuator_armature (they add to the mass matrix);
  dof_damping, dof_frictionloss, jnt_stiffness, tendon_stiffness, tendon_damping, tendon_frictionloss,
  actuator_damping; body_gravcomp; opt.density, opt.viscosity and opt.wind (fluid forces);
- opt.disableflags |= mjDSBL_CONTACT | mjDSBL_CONSTRAINT | mjDSBL_EQUALITY | mjDSBL_LIMIT | mjDSBL_FRICTIONLOSS
  | mjDSBL_ACTUATION | mjDSBL_SPRING | mjDSBL_DAMPER (MuJoCo 4 splits the old mjDSBL_PASSIVE into the last two);
- ctrl and xfrc_applied stay 0; the generalized force goes in as qfrc_applied.

State map: a hinge's or slide's qpos is mechdyn's q + qpos0 (the joint's `ref`), its qvel and qfrc_applied are
qd and tau; a free joint's maps as mechdyn.export.mjcf.to_mujoco / from_mujoco_qacc (qpos [r, w x y z], qvel
[ṙ in world axes; ω in body axes]). Each mechdyn body finds its MuJoCo joint by the name the importer kept in its
JointInfo (mechdyn.imports.mjcf.joint_names, sanitized as the .mech writer does).
"""
from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from crosscheck.checks import Check
from mechdyn.core.model import Model
from mechdyn.core.sample import scaled_error, states
from mechdyn.dynamics import Dynamics
from mechdyn.export import mjcf as mjcf_export
from mechdyn.imports import import_model as mjcf_import, mjcf
from mechdyn.imports.tree import Names

GATE = 1e-9
WELL = 1e6  # the largest κ(M) at which the scaled error is gated at GATE: κ ε = 2.2e-10 there
COND_GATE = 1.0  # the scaled error in units of max(GATE, κ(M) ε): κ ε is the round-off bound of a solve
EPS = float(np.finfo(float).eps)
DISABLED = (mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
            | mujoco.mjtDisableBit.mjDSBL_EQUALITY | mujoco.mjtDisableBit.mjDSBL_LIMIT
            | mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS | mujoco.mjtDisableBit.mjDSBL_ACTUATION
            | mujoco.mjtDisableBit.mjDSBL_SPRING | mujoco.mjtDisableBit.mjDSBL_DAMPER)
ZEROED = ("dof_armature", "tendon_armature", "actuator_armature", "dof_damping", "dof_frictionloss", "jnt_stiffness",
          "tendon_stiffness", "tendon_damping", "tendon_frictionloss", "actuator_damping", "body_gravcomp")
NOTE = ("check the frames in mechdyn/imports/mjcf.py (the −jnt_pos shift, the order of several joints on a body) "
        "and the state map here (qpos0 offsets, the free joint's [world v; body ω])")


@dataclass
class Imported:
    model: Model
    mj: "mujoco.MjModel"
    data: "mujoco.MjData"
    layout: dict[str, tuple[int, int]]  # mechdyn body name -> (qposadr, dofadr) of its MuJoCo joint
    offset: np.ndarray  # (nq,) qpos0 at the hinges' and slides' qpos addresses, 0 at free joints'


def configure(mj: "mujoco.MjModel") -> None:
    """Switch off in `mj` all that reaches qacc besides the rigid tree and gravity (the module docstring lists it)."""
    for field in ZEROED:
        getattr(mj, field)[:] = 0.0
    mj.opt.density, mj.opt.viscosity = 0.0, 0.0
    mj.opt.wind[:] = 0.0
    mj.opt.disableflags |= int(DISABLED)


def build(path: str, model: Model) -> Imported:
    """MuJoCo's model of the MJCF file `path`, configured, with each body of `model` (its import) mapped to its
    MuJoCo joint."""
    mj = mjcf.compile_model(path)
    configure(mj)
    by_name = {Names()(n): j for j, n in enumerate(mjcf.joint_names(mj))}
    if len(by_name) != mj.njnt or mj.nq != model.nq or mj.nv != model.nv:
        raise RuntimeError(f"{path}: MuJoCo's joints do not map one to one onto {model.name}'s bodies "
                           f"(nq {mj.nq} vs {model.nq}, nv {mj.nv} vs {model.nv}, or two names alike once sanitized)")
    layout, offset = {}, np.zeros(mj.nq)
    for b in model.bodies:
        j = by_name[b.info.name]
        layout[b.name] = (int(mj.jnt_qposadr[j]), int(mj.jnt_dofadr[j]))
        if b.joint != "floating":
            offset[mj.jnt_qposadr[j]] = mj.qpos0[mj.jnt_qposadr[j]]
    return Imported(model, mj, mujoco.MjData(mj), layout, offset)


def to_mujoco(im: Imported, q: np.ndarray, qd: np.ndarray, tau: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """mechdyn's (q, qd, tau) as MuJoCo's (qpos, qvel, qfrc_applied) for the imported file."""
    qpos, qvel, qfrc = mjcf_export.to_mujoco(im.model, im.layout, im.mj.nq, im.mj.nv, q, qd, tau)
    return qpos + im.offset, qvel, qfrc


def forward(im: Imported, q: np.ndarray, qd: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """qdd in mechdyn's coordinates from mj_forward at the state (q, qd, tau)."""
    d = im.data
    d.qpos[:], d.qvel[:], d.qfrc_applied[:] = to_mujoco(im, q, qd, tau)
    mujoco.mj_forward(im.mj, d)
    return mjcf_export.from_mujoco_qacc(im.model, im.layout, q, qd, d.qacc.copy())


def accel_vs_mujoco(path: str, dyn: Dynamics, trials: int = 1000, seed: int = 0) -> tuple[Check | None, Check]:
    """mj_forward on the file against the generated C of its import over `trials` random states (no fext, no
    inputs: the import has neither): the largest scaled error over the states whose mass matrix has κ(M) ≤ WELL,
    and over all of them the largest scaled error over max(GATE, κ(M)·ε), which passes at or below 1.

    Why two: round-off alone moves a solve by up to κ(M)·ε, and uniform random angles put some states of a body
    with three hinges near its gimbal lock (κ up to 1e9 without MuJoCo's armature), where both engines are right to
    round-off and still differ by 1e-8. Below WELL that bound is 2.2e-10, under the gate. The first check is None
    when no state has κ(M) ≤ WELL: it would judge nothing.
    """
    im = build(path, dyn.model)
    M = np.zeros((im.mj.nv, im.mj.nv))
    well, ratio, excluded = (0.0, -1), (0.0, -1), 0
    for k, s in enumerate(states(dyn.model, trials, seed)):
        e = scaled_error(dyn.forward(s.q, s.qd, s.tau), forward(im, s.q, s.qd, s.tau))
        mujoco.mj_fullM(im.mj, im.data, M)
        kappa = float(np.linalg.cond(M))
        if kappa <= WELL:
            well = max(well, (e, k))
        else:
            excluded += 1
        ratio = max(ratio, (e / max(GATE, kappa * EPS), k))
    a = Check("mjcf_accel_vs_mujoco", well[0], GATE,
              f"{trials - excluded} of {trials} random states with κ(M) <= {WELL:.0e}, mj_forward on the file "
              "(contacts, constraints, actuation and passive forces off), max scaled |qdd_generated - qdd_mujoco| "
              f"(worst at state {well[1]})")
    b = Check("mjcf_accel_vs_mujoco_cond", ratio[0], COND_GATE,
              f"all {trials} states, max scaled |qdd_generated - qdd_mujoco| / max({GATE:.0e}, κ(M) ε) "
              "(worst at state "
              f"{ratio[1]})")
    return (_noted(a) if excluded < trials else None), _noted(b)


def _noted(c: Check) -> Check:
    """The check, with what to look at when it fails."""
    return c if c.passed else Check(c.name, c.value, c.threshold, c.detail, NOTE)


def main(argv: list[str]) -> int:
    """`python -m crosscheck.mujoco.imported FILE...`: each MJCF file's two checks, one line each; 1 if any fails."""
    failed = False
    for path in argv:
        for c in accel_vs_mujoco(path, Dynamics(mjcf_import(path))):
            print(f"{path}: {c.line() if c else f'mjcf_accel_vs_mujoco: no state has κ(M) <= {WELL:.0e}'}")
            failed |= c is not None and not c.passed
    return int(failed)


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
