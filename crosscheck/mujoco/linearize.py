"""MuJoCo's finite-difference linearization (mjd_transitionFD) against mechdyn's generated derivatives.

MuJoCo linearizes one step of its own integrator, so both sides form the same
discrete transition x⁺ = F(x, u) and its Jacobians A = ∂x⁺/∂x, B = ∂x⁺/∂u:

- MuJoCo's side: the exported MJCF with the integrator set to semi-implicit
  Euler at timestep H, the Euler integrator's implicit damping disabled (it would
  solve (M + h D) instead of taking the explicit step mechdyn's derivatives
  describe), and one motor of gear 1 per degree of freedom appended after the
  model's own input motors, so that B also holds ∂x⁺/∂qfrc_applied. Centered
  differences of step EPS.
- mechdyn's side: Dynamics.derivatives at the same state, carried into MuJoCo's
  coordinates and through the Euler step exactly:
    v⁺ = v + h a(q, v),   q⁺ = q ⊕ h v⁺
    A = [[P + h² V Aq, h V (I + h Av)], [h Aq, I + h Av]],   B = [[h² V Bc], [h Bc]]
  where Aq, Av, Bc are ∂qacc/∂(δq, qvel, ctrl) in MuJoCo's coordinates, and
  P, V are the identity except on a free joint's rotation, whose local tangent
  after q ⊗ exp(h ω⁺) moves as δθ⁺ = exp(h ω⁺)ᵀ δθ + J_r(h ω⁺) h δω⁺.

MuJoCo's state x = [δq; qvel]: δq on its tangent (hinge angles, slide displacements; a free
joint's world position, then its rotation in its local frame), qvel = [ṙ in world
coordinates; ω in body coordinates]. mechdyn's tangent δ = [δφ; δp] in body axes
and qd = [ω; v in body axes] (docs/conventions.md). MuJoCo holds qfrc_applied
(world force on a free joint) and xfrc_applied (world force, moment about the
centre of mass) fixed while it perturbs the state, so the chain rule carries
how mechdyn's tau (body-axes force) and fext (moment about the base origin) move
with q at that fixed input; the centre of mass's motion comes from the generated
fwd_dyn_bodies, exact, since its velocity is linear in qd.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace

import numpy as np

from crosscheck.checks import Check
from mechdyn import load
from mechdyn.core.model import Model
from mechdyn.core.parse import MODELS_DIR, load_model
from mechdyn.core.sample import State, scaled_error, states
from mechdyn.core.spatial import quat_to_R
from mechdyn.dynamics import Dynamics
from mechdyn.export import mjcf

from . import MjModel, NotRepresentable, build, mujoco, why_not, xfrc

H = 1e-3  # the Euler step both sides linearize
EPS = 1e-6  # MuJoCo's centered-difference step
NOTE = ("a failure here alone, with crosscheck mujoco and crosscheck pinocchio --derivatives passing, points at "
        "this module's maps between the two coordinate sets and the Euler step")


def cross(x: np.ndarray) -> np.ndarray:
    """[x]×: the matrix with [x]× y = x × y."""
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def so3_exp(phi: np.ndarray) -> np.ndarray:
    """The rotation matrix exp([φ]×) (Rodrigues)."""
    t, K = float(np.linalg.norm(phi)), cross(phi)
    if t < 1e-8:
        return np.eye(3) + K + K @ K / 2
    return np.eye(3) + np.sin(t) / t * K + (1 - np.cos(t)) / t**2 * K @ K


def so3_right_jacobian(phi: np.ndarray) -> np.ndarray:
    """J_r(φ): exp(φ + δ) = exp(φ) exp(J_r(φ) δ) to first order."""
    t, K = float(np.linalg.norm(phi)), cross(phi)
    if t < 1e-8:
        return np.eye(3) - K / 2 + K @ K / 6
    return np.eye(3) - (1 - np.cos(t)) / t**2 * K + (t - np.sin(t)) / t**3 * K @ K


def transition_xml(model: Model, h: float = H) -> str:
    """The MJCF export set up for mjd_transitionFD: explicit semi-implicit Euler at step h, and a gear-1 motor on
    every degree of freedom after the model's input motors, in MuJoCo's dof order (ctrl = [act; qfrc_applied])."""
    text = mjcf.export_mjcf(model).text
    opt, flag = "  <option", '<flag contact="disable"/>'
    if text.count(opt) != 1 or text.count(flag) != 1:
        raise RuntimeError("the MJCF export's <option> block is not the one this module edits")
    text = text.replace(opt, f'  <option integrator="Euler" timestep="{h!r}"')
    text = text.replace(flag, '<flag contact="disable" eulerdamp="disable"/>')
    layout = build(model).layout
    motors = []
    for b in sorted(model.bodies, key=lambda b: layout[b.name][1]):
        if b.joint == "floating":
            motors += [f'<motor name="dof:{b.name}:{k}" joint="{b.name}" '
                       f'gear="{" ".join("1" if j == k else "0" for j in range(6))}"/>' for k in range(6)]
        else:
            motors.append(f'<motor name="dof:{b.name}" joint="{b.name}" gear="1"/>')
    # a second <actuator> section, after the export's: MuJoCo numbers actuators in document order
    block = "".join(f"    {m}\n" for m in motors)
    return text.replace("</mujoco>\n", f"  <actuator>\n{block}  </actuator>\n</mujoco>\n", 1)


def transition_model(model: Model, h: float = H) -> MjModel:
    """MuJoCo's model of the export for the transition Jacobians; checks that motor nact + j drives dof j alone."""
    mm = build(model, transition_xml(model, h))
    mj, nact = mm.mj, model.nact
    if mj.nu != nact + model.nv or mj.na != 0:
        raise RuntimeError(f"MuJoCo's transition model of {model.name} has nu {mj.nu}, na {mj.na}")
    M = np.zeros((mj.nv, mj.nv))
    d = mm.data
    for j in range(mj.nv):  # each dof motor's generalized force at unit ctrl
        d.ctrl[:] = 0.0
        d.ctrl[nact + j] = 1.0
        mujoco.mj_forward(mj, d)
        M[:, j] = d.qfrc_actuator
    if not np.array_equal(M, np.eye(mj.nv)):
        raise RuntimeError(f"MuJoCo's dof motors of {model.name} do not map ctrl to qfrc one to one")
    d.ctrl[:] = 0.0
    return mm


def _set_state(mm: MjModel, s: State) -> None:
    model, mj, d = mm.model, mm.mj, mm.data
    d.qpos[:], d.qvel[:], d.qfrc_applied[:] = mjcf.to_mujoco(model, mm.layout, mj.nq, mj.nv, s.q, s.qd, s.tau)
    d.ctrl[:] = 0.0
    d.ctrl[: model.nact] = s.act
    d.xfrc_applied[:] = 0.0
    mujoco.mj_kinematics(mj, d)  # xipos, where xfrc_applied acts
    if any(b.fext for b in model.bodies):
        d.xfrc_applied[:] = xfrc(mm, s.fext)


def mujoco_transition(mm: MjModel, s: State, eps: float = EPS) -> tuple[np.ndarray, np.ndarray]:
    """MuJoCo's A (2nv, 2nv) and B (2nv, nact + nv) at the state: centered differences of one mj_step."""
    _set_state(mm, s)
    nv, nu = mm.mj.nv, mm.mj.nu
    A, B = np.zeros((2 * nv, 2 * nv)), np.zeros((2 * nv, nu))
    mujoco.mjd_transitionFD(mm.mj, mm.data, eps, True, A, B, None, None)
    return A, B


def held_force(f: np.ndarray) -> np.ndarray:
    """∂f/∂δθ for the body-axes force f = Rᵀ F of a held world force F as R ↦ R exp(δθ): [f]×
    (qfrc_applied's free-joint force, as MuJoCo holds it while mechdyn's derivatives hold tau)."""
    return cross(f)


def _dof_perm(mm: MjModel) -> np.ndarray:
    """perm[j] = mechdyn's velocity index of MuJoCo's dof j (a free joint's six in mechdyn's [ω; v] order)."""
    perm = np.zeros(mm.model.nv, dtype=int)
    for b, iv in zip(mm.model.bodies, mm.model.vidx):
        jv = mm.layout[b.name][1]
        if b.joint == "floating":
            perm[jv : jv + 6] = [iv + 3, iv + 4, iv + 5, iv, iv + 1, iv + 2]
        else:
            perm[jv] = iv
    return perm


def mechdyn_transition(dyn: Dynamics, mm: MjModel, s: State, h: float = H) -> tuple[np.ndarray, np.ndarray]:
    """The same A and B from mechdyn's continuous derivatives, in MuJoCo's coordinates, through the Euler step."""
    model, nv = dyn.model, dyn.nv
    D = dyn.derivatives(s.q, s.qd, s.tau, s.fext, s.act)
    perm = _dof_perm(mm)
    # mechdyn's perturbations as linear maps of MuJoCo's: δq_md = Pq δq, δqd_md = Pvq δq + Pvv δqvel,
    # δtau_md = Ptq δq + Ptu δqfrc (qfrc_applied held), δfext_md = Pfq δq (xfrc_applied held)
    Pq, Pvv = np.zeros((nv, nv)), np.zeros((nv, nv))
    Pq[perm, np.arange(nv)] = 1.0
    Pvv[perm, np.arange(nv)] = 1.0
    Pvq, Ptq, Ptu = np.zeros((nv, nv)), np.zeros((nv, nv)), Pvv.copy()
    # qacc in MuJoCo's dofs from mechdyn's: δqacc = Ga δa_md + Gq δq + Gv δqd_md (Ga starts as the permutation back)
    Ga, Gq, Gv = Pq.T.copy(), np.zeros((nv, nv)), np.zeros((nv, nv))
    rot = []  # (MuJoCo rotation dofs, mechdyn ω indices) of each free joint
    for b, iq, iv in zip(model.bodies, model.qidx, model.vidx):
        if b.joint != "floating":
            continue
        jv = mm.layout[b.name][1]
        lin, ang = slice(jv, jv + 3), slice(jv + 3, jv + 6)  # MuJoCo: world position / velocity, then local rotation
        om, vb = slice(iv, iv + 3), slice(iv + 3, iv + 6)  # mechdyn: ω, then v, body axes
        R = quat_to_R(s.q[iq : iq + 4] / np.linalg.norm(s.q[iq : iq + 4]))
        w, v, f = s.qd[om], s.qd[vb], s.tau[vb]
        Pq[vb, lin] = R.T  # δp = Rᵀ δr
        Pvv[vb, lin] = R.T  # v = Rᵀ ṙ
        # v = Rᵀ ṙ at fixed ṙ, R ↦ R exp(δθ); its effect cancels in qacc (a uniform translational velocity
        # changes no acceleration), so no comparison can see this term, but it belongs to the map
        Pvq[vb, ang] = cross(v)
        Ptu[vb, lin] = R.T
        Ptq[vb, ang] = held_force(f)
        y = D.qdd[vb] + np.cross(w, v)  # qacc's linear part is R (v̇ + ω × v)
        Ga[lin, vb] = R
        Gq[lin, ang] = -R @ cross(y)
        Gv[lin, om], Gv[lin, vb] = -R @ cross(v), R @ cross(w)
        rot.append((ang, om))
    Pfq = np.zeros((model.nbody, 6, nv))
    if any(b.fext for b in model.bodies):
        # n0 = n_cg + c × F at fixed (n_cg, F): δn0 = −[F]× δc; δc along tangent column k is the centre of mass's
        # velocity at qd = e_k (q ∘ exp(δ) moves as qd = δ does)
        fext = np.asarray(s.fext, dtype=float)
        moves = [dyn.body_states(s.q, e) for e in np.eye(nv)]
        for i, b in enumerate(model.bodies):
            if b.fext:
                Jc = np.array([bs.v[i] + np.cross(bs.w[i], bs.R[i] @ b.cg) for bs in moves]).T
                Pfq[i, :3] = -cross(fext[i, 3:]) @ Jc @ Pq
    da_dq = D.dq @ Pq + D.dqd @ Pvq + D.dtau @ Ptq + np.einsum("ibk,bkj->ij", D.dfext, Pfq)
    Aq = Ga @ da_dq + Gq + Gv @ Pvq
    Av = Ga @ D.dqd @ Pvv + Gv @ Pvv
    Bc = np.hstack([Ga @ D.dact, Ga @ D.dtau @ Ptu])
    # the position update q ⊕ h v⁺, on MuJoCo's tangent
    P, V = np.eye(nv), np.eye(nv)
    for ang, om in rot:
        w_next = s.qd[om] + h * D.qdd[om]
        P[ang, ang] = so3_exp(h * w_next).T
        V[ang, ang] = so3_right_jacobian(h * w_next)
    I = np.eye(nv)
    A = np.block([[P + h * h * V @ Aq, h * V @ (I + h * Av)], [h * Aq, I + h * Av]])
    B = np.vstack([h * h * V @ Bc, h * Bc])
    return A, B


# Each state's gates, for centered differences of step eps: the rounding error of a difference quotient is about
# the rounding noise of x⁺ over 2 eps, u = ε_mach / (2 eps) per unit of x⁺ (5.5e-11 at eps = 1e-6).
# - velocity rows / h (MuJoCo's ∂qacc/∂x and ∂qacc/∂u): v⁺ = v + h qacc rounds to ε_mach |v|, which is
#   ε_mach |v| / h after the division by h, and qacc is solved to ≈ κ(H) ε_mach relative:
#   u (max(1, |qd|) / h + κ(H)).
# - position rows: x⁺'s positions round to ε_mach max(1, |q|), a free joint's rotation tangent to ε_mach ROTATION
#   (the logarithm of q⁺'s quaternion difference doubles the rounding of both quaternions, each a product and a
#   normalization); and q⁺ = q ⊕ h v⁺ carries the velocity rows' absolute error times h:
#   u max(1, |q|, ROTATION) + h² (velocity gate) (the continuous blocks' scale).
# Both times ROUNDINGS: the roundings of one evaluation that the estimate counts as one (the terms summed in qacc,
# the steps of the position update). Truncation (eps² / 6 times third derivatives, ≈ 1e-12 relative at eps = 1e-6) is
# not counted: at eps = 1e-4 it is ≈ 1e-8 and exceeds these gates on several models.
ROUNDINGS = 10.0
ROTATION = 8.0
EPS_MACH = float(np.finfo(float).eps) / 2


def gates(dyn: Dynamics, s: State, scale: float, h: float = H, eps: float = EPS) -> tuple[float, float]:
    """(position rows, velocity rows / h) gates at state s, scaled errors as in Agreement."""
    u = ROUNDINGS * EPS_MACH / (2 * eps)
    kappa = float(np.linalg.cond(dyn.derivatives(s.q, s.qd, s.tau, s.fext, s.act).dtau))
    vel = u * (max(1.0, float(np.max(np.abs(s.qd)))) / h + kappa)
    free = any(b.joint == "floating" for b in dyn.model.bodies)
    size = max(1.0, float(np.max(np.abs(s.q))), ROTATION if free else 0.0)
    return u * size + h * h * vel * scale, vel


@dataclass
class Agreement:
    """The worst disagreement over the trials, each scaled as core.sample.scaled_error
    (‖Δ‖∞ / max(1, ‖mechdyn‖∞)), and the largest share of its state's gate that one took."""
    model: str
    trials: int
    A: float  # |A_mujoco − A_mechdyn|, the whole matrix
    B: float
    pos: float  # the position rows of [A B]
    vel: float  # the velocity rows of [A − I B] / h: the continuous ∂qacc/∂(x, u) in MuJoCo's coordinates
    pos_share: float  # max over the trials of pos / its gate
    vel_share: float
    h: float = H  # the Euler step and the differences' step the figures were taken at
    eps: float = EPS

    @property
    def passed(self) -> bool:
        return self.pos_share <= 1.0 and self.vel_share <= 1.0

    def checks(self) -> list[Check]:
        """The agreement as the harness's checks: each row block's share of its gate, against 1."""
        what = (f"{self.trials} random states, mjd_transitionFD vs the generated derivatives' Euler step "
                f"(h={self.h:g}, eps={self.eps:g})")
        share = "largest share of a state's gate"
        checks = [Check("linearize_pos", self.pos_share, 1.0,
                        f"{what}, position rows of [A B]: worst scaled error {self.pos:.1e}; {share}"),
                  Check("linearize_vel", self.vel_share, 1.0,
                        f"{what}, velocity rows of [A - I B] / h: worst scaled error {self.vel:.1e}; {share}")]
        return [c if c.passed else replace(c, note=NOTE) for c in checks]

    def figures(self) -> dict[str, float]:
        """The worst scaled errors and the steps, for --json."""
        return {"A": self.A, "B": self.B, "pos": self.pos, "vel": self.vel, "h": self.h, "eps": self.eps}

    def row(self) -> str:
        return (f"| {self.model} | {self.trials} | {self.A:.1e} | {self.B:.1e} | {self.pos:.1e} | {self.pos_share:.2f} "
                f"| {self.vel:.1e} | {self.vel_share:.2f} |")


TABLE_HEADER = ("| model | trials | A | B | [A B] position rows | of gate | [A − I B] velocity rows / h | of gate |\n"
                "|---|---|---|---|---|---|---|---|")


def errors(Am: np.ndarray, Bm: np.ndarray, Ad: np.ndarray, Bd: np.ndarray, h: float = H) -> tuple[float, ...]:
    """(A, B, pos, vel, scale) of MuJoCo's (Am, Bm) against mechdyn's (Ad, Bd) as in Agreement; scale is
    max(1, ‖mechdyn's continuous blocks‖∞)."""
    nv = Am.shape[0] // 2
    drift = np.hstack([np.zeros((nv, nv)), np.eye(nv), np.zeros((nv, Bm.shape[1]))])
    vm, vd = ((np.hstack([A[nv:], B[nv:]]) - drift) / h for A, B in ((Am, Bm), (Ad, Bd)))
    return (scaled_error(Am, Ad), scaled_error(Bm, Bd),
            scaled_error(np.hstack([Am[:nv], Bm[:nv]]), np.hstack([Ad[:nv], Bd[:nv]])), scaled_error(vm, vd),
            max(1.0, float(np.max(np.abs(vd)))))


def compare(dyn: Dynamics, trials: int = 20, seed: int = 0, h: float = H, eps: float = EPS) -> Agreement:
    """MuJoCo's mjd_transitionFD against mechdyn's transition Jacobians at seeded random states (fext, inputs)."""
    reason = covered(dyn.model)
    if reason:
        raise NotRepresentable(reason)
    mm = transition_model(dyn.model, h)
    worst = np.zeros(6)
    for s in states(dyn.model, trials, seed):
        eA, eB, pos, vel, scale = errors(*mujoco_transition(mm, s, eps), *mechdyn_transition(dyn, mm, s, h), h)
        pos_gate, vel_gate = gates(dyn, s, scale, h, eps)
        worst = np.maximum(worst, [eA, eB, pos, vel, pos / pos_gate, vel / vel_gate])
    return Agreement(dyn.model.name, trials, *map(float, worst), h=h, eps=eps)


def covered(model: Model) -> str | None:
    """None when the linearizations are compared on the model, else why not."""
    return why_not(model)


def tree_models() -> list[str]:
    """Every model in models/ that `compare` takes."""
    return [p.stem for p in sorted(MODELS_DIR.glob("*.mech")) if covered(load_model(p.stem)) is None]


def main(argv: list[str] | None = None) -> int:
    """python -m crosscheck.mujoco.linearize [models...]: the agreement table (default: every model it covers)."""
    p = argparse.ArgumentParser(prog="python -m crosscheck.mujoco.linearize", description=main.__doc__)
    p.add_argument("models", nargs="*")
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eps", type=float, default=EPS, help="MuJoCo's centered-difference step")
    args = p.parse_args(argv)
    for name in args.models:
        reason = covered(load_model(name))
        if reason:
            print(f"crosscheck.mujoco.linearize: {reason}", file=sys.stderr)
            return 2
    print(f"h = {H}, eps = {args.eps:g}, {args.trials} random states, seed {args.seed}")
    print(TABLE_HEADER)
    failed = []
    for name in args.models or tree_models():
        a = compare(load(name), args.trials, args.seed, eps=args.eps)
        print(a.row(), flush=True)
        if not a.passed:
            failed.append(name)
    if failed:
        print(f"over the gates: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
