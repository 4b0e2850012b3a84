"""The spatial algebra's conventions, pinned: Plücker identities, cross products, joint handedness, quaternions, mcI,
rotations about any axis, URDF's rpy, the loop triad, joints about oblique and negative axes."""
from __future__ import annotations

import numpy as np
import scipy.linalg
from scipy.spatial.transform import Rotation

from mechdyn.core.model import BASE, Body
from mechdyn.core.spatial import (
    crf, crm, dual, jcalc, mcI, plux, quat_to_R, rot_about, rot_axis, rotx, roty, rotz, rpy_to_R, skew, triad, xtree,
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


# -- turned frames and axes in any direction ---------------------------------------------------------------------
def unit(rng: np.random.Generator) -> np.ndarray:
    """A random unit vector."""
    a = rng.normal(size=3)
    return a / np.linalg.norm(a)


def cross_matrix(a: np.ndarray) -> np.ndarray:
    """a× written out here, not spatial.skew, so the checks below do not lean on the code under test."""
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def rot_about_error(rot=rot_about) -> float:
    """Max error of rot(a, θ) against scipy's rotation vector θ a, on random unit axes (negative ones included)."""
    rng = np.random.default_rng(10)
    err = 0.0
    for _ in range(200):
        a, th = unit(rng), rng.uniform(-2 * np.pi, 2 * np.pi)
        err = max(err, np.max(np.abs(rot(a, th) - Rotation.from_rotvec(th * a).as_matrix())))
    return err


def test_rot_about_is_the_physical_rotation():
    """rot_about(a, θ) turns right-handedly about a: scipy's rotation vector θ a; a stays put, and about a
    coordinate axis it is rot_axis."""
    err = rot_about_error()
    rng = np.random.default_rng(11)
    e_fixed = e_axis = 0.0
    for th in rng.uniform(-np.pi, np.pi, 50):
        a = unit(rng)
        e_fixed = max(e_fixed, np.max(np.abs(rot_about(a, th) @ a - a)))
        for k in range(3):
            e_axis = max(e_axis, np.max(np.abs(rot_about(np.eye(3)[k], th) - rot_axis(k, th))))
    print(f"\nrot_about: vs scipy rotvec {err:.2e}; R a - a {e_fixed:.2e}; vs rot_axis on x, y, z {e_axis:.2e}")
    assert err < TOL and e_fixed < TOL and e_axis < TOL


def test_planted_rot_about_sign_bug_is_caught():
    err = rot_about_error(lambda a, th: rot_about(a, th).T)  # −sin θ a×: the rotation the other way round
    print(f"\nplanted transposed Rodrigues: error {err:.2e} (must be large)")
    assert err > 0.1


def rpy_error(to_R=rpy_to_R) -> float:
    """Max error of to_R(rpy) against scipy's extrinsic ("xyz": about the fixed x, then y, then z) Euler angles."""
    rng = np.random.default_rng(12)
    angles = np.vstack([rng.uniform(-np.pi, np.pi, (200, 3)), rng.uniform(-np.pi / 2, np.pi / 2, (50, 3))])
    return max(np.max(np.abs(to_R(rpy) - Rotation.from_euler("xyz", rpy).as_matrix())) for rpy in angles)


def test_rpy_is_urdf_fixed_axis_order():
    """rpy_to_R is URDF's R = Rz(yaw) Ry(pitch) Rx(roll): scipy's extrinsic xyz. Quarter turns are exact (their
    zeros are zeros), and still scipy's rotation to round-off."""
    err = rpy_error()
    quarter = np.array([np.pi / 2, -np.pi, np.pi / 2])
    Rq = rpy_to_R(quarter)
    e_quarter = np.max(np.abs(Rq - Rotation.from_euler("xyz", quarter).as_matrix()))
    exact = bool(np.all(np.isin(Rq, (-1.0, 0.0, 1.0))))
    print(f"\nrpy_to_R vs scipy from_euler('xyz'): {err:.2e}; a quarter-turn rpy: {e_quarter:.2e}, "
          f"entries exact: {exact}")
    assert err < TOL and e_quarter < TOL and exact


def test_planted_rpy_in_moving_axis_order_is_caught():
    err = rpy_error(lambda rpy: rotx(rpy[0]) @ roty(rpy[1]) @ rotz(rpy[2]))  # Rx Ry Rz: the intrinsic order
    print(f"\nplanted R = Rx Ry Rz (moving axes): error {err:.2e} (must be large)")
    assert err > 0.1


def triad_error(tri=triad) -> float:
    """Max error of tri(a) against its definition (docs/conventions.md): columns (u, w, a), u = normalize(a × e)
    with e the base axis least aligned with a (x on ties), w = a × u; so orthonormal and right-handed."""
    rng = np.random.default_rng(13)
    ex = np.eye(3)
    axes = [unit(rng) for _ in range(200)] + [s * ex[k] for k in range(3) for s in (1.0, -1.0)]
    axes += [np.array([1.0, 1.0, 0.0]) / np.sqrt(2), np.array([0.0, -1.0, 1.0]) / np.sqrt(2)]  # ties: x, then x
    err = 0.0
    for a in axes:
        e = ex[int(np.argmin(np.abs(a)))]  # argmin takes the first on ties
        u = np.cross(a, e) / np.linalg.norm(np.cross(a, e))
        want = np.column_stack([u, np.cross(a, u), a])
        T = tri(a)
        err = max(err, np.max(np.abs(T - want)), np.max(np.abs(T.T @ T - np.eye(3))), abs(np.linalg.det(T) - 1.0))
    return err


def test_triad():
    err = triad_error()
    Tz = triad(np.array([0.0, 0.0, 1.0]))
    print(f"\ntriad vs its definition, orthonormal, det 1: {err:.2e}; triad(z) = (u, w, a) =\n{Tz}")
    assert err < TOL
    assert np.array_equal(Tz, np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]))  # (y, -x, z)


def test_planted_left_handed_triad_is_caught():
    def left(a):
        T = triad(a)
        return np.column_stack([T[:, 0], np.cross(T[:, 0], a), a])  # w = u × a: left-handed

    err = triad_error(left)
    print(f"\nplanted w = u x a: error {err:.2e} (must be large)")
    assert err > 0.1


def oblique_body(joint: str, a: np.ndarray) -> Body:
    """A bare body with a revolute or prismatic joint about (along) the unit vector a."""
    return Body(name="b", parent=BASE, joint=joint, axis=a, xtree=np.array([0.3, -0.2, 0.5]), mass=1.0,
                cg=np.zeros(3), inertia=np.eye(3), fext=False, line=0)


def oblique_joint_error(jc=jcalc) -> tuple[float, float]:
    """Max errors of jcalc on oblique and negative axes: XJ and S against their definitions, built here (XJ =
    plux(expm(q a×)ᵀ, 0), S = [a; 0] for a revolute, plux(1, q a), S = [0; a] for a prismatic); and how far S
    is from the joint's velocity, dXJ/dq = −(S×) XJ (central differences)."""
    rng = np.random.default_rng(14)
    ex = np.eye(3)
    axes = [unit(rng) for _ in range(40)] + [-ex[k] for k in range(3)]
    err = err_rate = 0.0
    h = 1e-6
    for a in axes:
        q = rng.uniform(-np.pi, np.pi)
        for joint in ("revolute", "prismatic"):
            body = oblique_body(joint, a)
            XJ, S = jc(body, np.array([q]))
            if joint == "revolute":
                E = scipy.linalg.expm(q * cross_matrix(a)).T
                want = np.block([[E, np.zeros((3, 3))], [np.zeros((3, 3)), E]])
                Swant = np.concatenate([a, np.zeros(3)])
            else:
                want = np.block([[np.eye(3), np.zeros((3, 3))], [-cross_matrix(q * a), np.eye(3)]])
                Swant = np.concatenate([np.zeros(3), a])
            err = max(err, np.max(np.abs(XJ - want)), np.max(np.abs(S[:, 0] - Swant)))
            dX = (jc(body, np.array([q + h]))[0] - jc(body, np.array([q - h]))[0]) / (2 * h)
            err_rate = max(err_rate, np.max(np.abs(dX + crm(S[:, 0]) @ XJ)))
    return err, err_rate


def test_jcalc_oblique_and_negative_axes():
    """A joint about (along) any unit vector: XJ = plux(R(a, q)ᵀ, 0) with R = expm(q a×), S = [a; 0]; a prismatic
    plux(1, q a), S = [0; a]; and S is the velocity XJ moves with (so qd = dq/dt holds off the coordinate axes)."""
    err, err_rate = oblique_joint_error()
    print(f"\njcalc on oblique and -x, -y, -z axes: XJ and S vs expm / definition {err:.2e}; "
          f"dXJ/dq + (S x) XJ by central differences {err_rate:.2e}")
    assert err < 1e-12 and err_rate < 1e-8  # expm's own round-off; the difference's truncation, ~h²


def test_planted_oblique_joint_bugs_are_caught():
    def no_transpose(body, q):
        XJ, S = jcalc(body, q)
        if body.joint == "revolute":
            XJ = plux(rot_about(body.axis, q[0]), np.zeros(3))  # R where Rᵀ belongs
        return XJ, S

    def negated_S(body, q):
        XJ, S = jcalc(body, q)
        return XJ, -S  # the axis backwards: q runs against qd

    for name, jc in (("E = R", no_transpose), ("S = -a", negated_S)):
        err, err_rate = oblique_joint_error(jc)
        print(f"\nplanted {name}: definition error {err:.2e}, rate error {err_rate:.2e} (both must be large)")
        assert err > 0.1 and err_rate > 0.1
