"""The spatial algebra's conventions, pinned: Plücker identities, cross products, joint handedness, quaternions, mcI."""
from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from mechdyn.core.model import BASE, Body
from mechdyn.core.spatial import (
    crf, crm, dual, jcalc, mcI, plux, quat_to_R, rot_about, rot_axis, rotx, roty, rotz, skew, xtree,
)

TOL = 1e-13


def rand_rot(rng: np.random.Generator) -> np.ndarray:
    """A random rotation matrix, built outside the code under test."""
    return Rotation.random(random_state=rng.integers(2**31)).as_matrix()


def rand_plux(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random Plücker transform with its E and r."""
    E, r = rand_rot(rng), rng.uniform(-2, 2, 3)
    return plux(E, r), E, r


def joint_body(joint: str, axis: int) -> Body:
    """A bare body with the given tree joint."""
    return Body(name="b", parent=BASE, joint=joint, axis=np.eye(3)[axis] if axis >= 0 else np.zeros(3), xtree=np.array([0.3, -0.2, 0.5]), mass=1.0,
                cg=np.zeros(3), inertia=np.eye(3), fext=False, line=0)


def test_skew_is_cross_product():
    rng = np.random.default_rng(1)
    err = max(np.max(np.abs(skew(a) @ b - np.cross(a, b))) for a, b in rng.normal(size=(100, 2, 3)))
    print(f"\nskew vs np.cross: max error {err:.2e}")
    assert err < TOL


def test_plux_composition_and_inverse():
    rng = np.random.default_rng(2)
    ecomp = einv = edual = 0.0
    for _ in range(200):
        X1, E1, r1 = rand_plux(rng)  # A → B
        X2, E2, r2 = rand_plux(rng)  # B → C, C's origin at r2 in B coords
        # C's origin in A coords is r1 + E1ᵀ r2, and A-coords rotate into C-coords by E2 E1
        ecomp = max(ecomp, np.max(np.abs(X2 @ X1 - plux(E2 @ E1, r1 + E1.T @ r2))))
        einv = max(einv, np.max(np.abs(np.linalg.inv(X1) - plux(E1.T, -E1 @ r1))))
        edual = max(edual, np.max(np.abs(dual(X1) - np.linalg.inv(X1).T)))
    print(f"\nplux: composition {ecomp:.2e}, inverse {einv:.2e}, dual = X^-T {edual:.2e}")
    assert ecomp < TOL and einv < TOL and edual < TOL


def test_plux_moves_points_and_forces():
    """plux(E, r) maps a point's coordinates p ↦ E (p − r), and a force [p × F; F] at p to the same force about B."""
    rng = np.random.default_rng(3)
    err = 0.0
    for _ in range(100):
        X, E, r = rand_plux(rng)
        p, F = rng.normal(size=3), rng.normal(size=3)
        fB = dual(X) @ np.concatenate([np.cross(p, F), F])
        pB, FB = E @ (p - r), E @ F
        err = max(err, np.max(np.abs(fB - np.concatenate([np.cross(pB, FB), FB]))))
    print(f"\nforce transform of a point force: max error {err:.2e}")
    assert err < TOL


def test_cross_products():
    rng = np.random.default_rng(4)
    e1 = e2 = e3 = 0.0
    for _ in range(200):
        v, m = rng.normal(size=6), rng.normal(size=6)
        X, _, _ = rand_plux(rng)
        e1 = max(e1, np.max(np.abs(crf(v) + crm(v).T)))
        e2 = max(e2, np.max(np.abs(crm(v) @ v)))
        # cross products commute with coordinate changes: X (v × m) = (X v) × (X m)
        e3 = max(e3, np.max(np.abs(X @ crm(v) @ m - crm(X @ v) @ (X @ m))))
    print(f"\ncrf + crm^T {e1:.2e}; crm(v) v {e2:.2e}; X(v x m) - (Xv) x (Xm) {e3:.2e}")
    assert e1 == 0.0 and e2 < TOL and e3 < 1e-12


def test_rotations_are_physical_right_handed():
    rng = np.random.default_rng(5)
    ex = np.eye(3)
    # a quarter turn about z carries x onto y, about x carries y onto z, about y carries z onto x
    e_quarter = max(np.max(np.abs(rotz(np.pi / 2) @ ex[0] - ex[1])), np.max(np.abs(rotx(np.pi / 2) @ ex[1] - ex[2])),
                    np.max(np.abs(roty(np.pi / 2) @ ex[2] - ex[0])))
    e_rv = 0.0
    for th in rng.uniform(-np.pi, np.pi, 50):
        for k in range(3):
            e_rv = max(e_rv, np.max(np.abs(rot_axis(k, th) - Rotation.from_rotvec(th * ex[k]).as_matrix())))
    print(f"\nquarter turns {e_quarter:.2e}; rot_axis vs scipy rotvec {e_rv:.2e}")
    assert e_quarter < TOL and e_rv < TOL


def joint_point_error(jc=jcalc) -> float:
    """Max error of a body-fixed point moved by a revolute/prismatic joint at q against the physical motion."""
    rng = np.random.default_rng(6)
    ex = np.eye(3)
    err = 0.0
    for q in rng.uniform(-np.pi, np.pi, 50):
        pb = rng.normal(size=3)  # body coordinates of a body-fixed point
        for k in range(3):
            for joint in ("revolute", "prismatic"):
                XJ, S = jc(joint_body(joint, k), np.array([q]))
                E = XJ[:3, :3]
                r = -E.T @ XJ[3:, :3]  # skew of the body origin in joint-frame coords
                r = np.array([r[2, 1], r[0, 2], r[1, 0]])
                world = r + E.T @ pb  # the point in joint-frame coordinates
                if joint == "revolute":
                    want = Rotation.from_rotvec(q * ex[k]).as_matrix() @ pb
                    Swant = np.concatenate([ex[k], np.zeros(3)])
                else:
                    want = pb + q * ex[k]
                    Swant = np.concatenate([np.zeros(3), ex[k]])
                err = max(err, np.max(np.abs(world - want)), np.max(np.abs(S[:, 0] - Swant)))
    return err


def test_joint_turns_body_physically():
    """q is the physical right-handed angle (displacement) about (along) +axis, and S = +axis."""
    err = joint_point_error()
    print(f"\njoint moves a body-fixed point by R(a, q) / q a: max error {err:.2e}")
    assert err < TOL


def test_planted_joint_transpose_bug_is_caught():
    def bad_jcalc(body, q):
        XJ, S = jcalc(body, q)
        if body.joint == "revolute":
            XJ = plux(rot_about(body.axis, q[0]), np.zeros(3))  # R where Rᵀ belongs
        return XJ, S

    err = joint_point_error(bad_jcalc)
    print(f"\nplanted E = R bug: joint point error {err:.2e} (must be large)")
    assert err > 0.1


def test_quaternion():
    rng = np.random.default_rng(7)
    ex = np.eye(3)
    e_axis = 0.0
    for th in rng.uniform(-np.pi, np.pi, 50):
        for k, rot in enumerate((rotx, roty, rotz)):
            Q = np.concatenate([[np.cos(th / 2)], np.sin(th / 2) * ex[k]])
            e_axis = max(e_axis, np.max(np.abs(quat_to_R(Q) - rot(th))))
    e_rand = e_orth = 0.0
    for _ in range(200):
        Q = rng.normal(size=4)
        Q /= np.linalg.norm(Q)
        Rq = quat_to_R(Q)
        e_rand = max(e_rand, np.max(np.abs(Rq - Rotation.from_quat(np.r_[Q[1:], Q[0]]).as_matrix())))
        e_orth = max(e_orth, np.max(np.abs(Rq @ Rq.T - np.eye(3))), abs(np.linalg.det(Rq) - 1))
    print(f"\nquat_to_R: axis quaternions vs rotx/y/z {e_axis:.2e}; random vs scipy {e_rand:.2e}; orthonormal {e_orth:.2e}")
    assert e_axis < TOL and e_rand < TOL and e_orth < TOL


def test_floating_jcalc():
    rng = np.random.default_rng(8)
    body = joint_body("floating", -1)
    err = 0.0
    for _ in range(50):
        Q = rng.normal(size=4)
        Q /= np.linalg.norm(Q)
        r = rng.uniform(-1, 1, 3)
        XJ, S = jcalc(body, np.r_[Q, r])
        pb = rng.normal(size=3)
        E = XJ[:3, :3]
        rx = -E.T @ XJ[3:, :3]
        world = np.array([rx[2, 1], rx[0, 2], rx[1, 0]]) + E.T @ pb
        err = max(err, np.max(np.abs(world - (r + quat_to_R(Q) @ pb))), np.max(np.abs(S - np.eye(6))))
    err = max(err, np.max(np.abs(xtree(body) - np.eye(6))))
    print(f"\nfloating joint: body point at r + R(Q) p, S = I6, XT = I: max error {err:.2e}")
    assert err < TOL


def momentum_error(mci=mcI) -> float:
    """Max error of I v against the momenta of a rigid body: [Ic ω + c × m v_c; m v_c], v_c = v_o + ω × c."""
    rng = np.random.default_rng(9)
    err = 0.0
    for _ in range(100):
        m, c = rng.uniform(0.5, 3), rng.normal(size=3)
        Rr = rand_rot(rng)
        Ic = Rr @ np.diag(rng.uniform(0.1, 1, 3)) @ Rr.T
        w, vo = rng.normal(size=3), rng.normal(size=3)
        vc = vo + np.cross(w, c)
        h = mci(m, c, Ic) @ np.r_[w, vo]
        err = max(err, np.max(np.abs(h - np.r_[Ic @ w + np.cross(c, m * vc), m * vc])))
    return err


def test_mcI_momentum():
    err = momentum_error()
    I = mcI(2.0, np.array([0.1, -0.3, 0.2]), np.diag([0.3, 0.2, 0.4]))
    sym = np.max(np.abs(I - I.T))
    mineig = np.min(np.linalg.eigvalsh(I))
    print(f"\nmcI: momentum error {err:.2e}, asymmetry {sym:.1e}, min eigenvalue {mineig:.3f}")
    assert err < 1e-12 and sym == 0.0 and mineig > 0


def test_planted_mcI_sign_bug_is_caught():
    def bad_mcI(m, c, Ic):
        I = mcI(m, c, Ic)
        I[3:, :3] = -I[3:, :3]
        return I

    err = momentum_error(bad_mcI)
    print(f"\nplanted mcI lower-left sign bug: momentum error {err:.2e} (must be large)")
    assert err > 0.1
