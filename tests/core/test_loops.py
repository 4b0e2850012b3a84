"""Loop closures: K against finite differences of φ, constraint accelerations, Baumgarte, rank, assembly, planted bugs."""
import os
from pathlib import Path

import numpy as np
import pytest

import mechdyn
from crosscheck import dense_compare as compare
from crosscheck.dense.loops import forward
from mechdyn.codegen import kkt
from mechdyn.codegen import loops as gloops
from mechdyn.core.integrate import integrate
from mechdyn.core.loops import closure, loop_of_row, project_qd
from mechdyn.core.parse import MechError, load_model, parse
from mechdyn.core.sample import manifold_states, random_q, scaled_error

DATA = Path(__file__).parents[1] / "data"
ZOO = DATA / "loopzoo.mech"  # one loop of every type
FOURBAR = DATA / "fourbar_min.mech"
H = 1e-5


def phi_at(model, q, dv):
    return closure(model, integrate(model, q, dv, 1.0))[0]


@pytest.mark.parametrize("path", [ZOO, FOURBAR])
def test_K_is_the_rate_of_phi(path):
    """K qd = dφ/dt by central differences, at arbitrary (torn) configurations."""
    model = load_model(path)
    rng = np.random.default_rng(1)
    worst = 0.0
    for _ in range(30):
        q, qd = random_q(model, rng), rng.normal(size=model.nv)
        fd = (phi_at(model, q, qd * H) - phi_at(model, q, -qd * H)) / (2 * H)
        worst = max(worst, scaled_error(closure(model, q)[1] @ qd, fd))
    print(f"{model.name}: max scaled |K qd - dphi/dt| = {worst:.2e}")
    assert worst < 1e-7


def phi_ddot(model, q, qd, qdd, h=1e-4):
    """φ̈ along q(t) = q ⊕ (qd t + ½ qdd t²), by central differences."""
    at = lambda t: phi_at(model, q, qd * t + 0.5 * qdd * t * t)  # noqa: E731
    return (at(h) - 2 * at(0.0) + at(-h)) / (h * h)


@pytest.mark.parametrize("path", [ZOO, FOURBAR])
def test_constraint_accelerations_vanish_on_the_manifold(path):
    """At closed, velocity-consistent states both routes' qdd keep φ̈ = 0 (the Baumgarte terms vanish there)."""
    model = load_model(path)
    dyn = mechdyn.load(model)
    worst = 0.0
    for s in manifold_states(model, np.random.default_rng(2), 20, tear=0.0):
        for qdd in (forward(model, s.q, s.qd, s.tau, s.fext, s.act), dyn.forward(s.q, s.qd, s.tau, s.fext, s.act)):
            scale = max(1.0, np.abs(qdd).max(), np.abs(s.qd).max() ** 2)
            worst = max(worst, np.abs(phi_ddot(model, s.q, s.qd, qdd)).max() / scale)
    print(f"{model.name}: max |phi_ddot| / scale on the manifold = {worst:.2e}")
    assert worst < 1e-5


def test_baumgarte_pulls_a_torn_loop_back():
    """Off the manifold φ̈ = −2α φ̇ − β² φ with α = β = 1/stab."""
    model = load_model(ZOO)
    dyn = mechdyn.load(model)
    a = 1.0 / model.stab
    worst = 0.0
    for s in manifold_states(model, np.random.default_rng(3), 10, tear=1e-3):
        qd = s.qd + np.random.default_rng(4).normal(0, 1e-2, model.nv)  # velocity-inconsistent too
        phi, K = closure(model, s.q)
        want = -2 * a * (K @ qd) - a * a * phi
        got = phi_ddot(model, s.q, qd, dyn.forward(s.q, qd, s.tau, s.fext, s.act))
        worst = max(worst, np.abs(got - want).max() / max(1e-3, np.abs(want).max()))
    print(f"loopzoo: Baumgarte law, max relative gap = {worst:.2e}")
    assert worst < 1e-3


def test_projections():
    model = load_model(ZOO)
    s = next(manifold_states(model, np.random.default_rng(5), 1, tear=0.0))
    phi, K = closure(model, s.q)
    assert np.abs(phi).max() < 1e-12 and np.abs(K @ s.qd).max() < 1e-10
    qd = project_qd(model, s.q, np.ones(model.nv))
    assert np.abs(K @ qd).max() < 1e-10


def test_revolute_closed_fourbar_is_rejected_with_the_fix():
    """The load refuses it at the loop's line (its y_p·d row constrains nothing in the xz plane); read without
    assembly, which skips that check, crosscheck's rank(K) check still fails it."""
    text = FOURBAR.read_text().replace("point-on-line", "revolute")
    with pytest.raises(MechError) as e:
        parse(text, path="fourbar_revolute.mech")
    assert str(e.value) == ("fourbar_revolute.mech:25: loop 'ground' (revolute) is redundant at the design pose: its "
                            "row 2 of 5 (y_p·d) constrains nothing the tree's joints and earlier loops leave free "
                            "(rank(K) 2 < nc 5); expected independent rows (close a planar loop with point-on-line "
                            "along the pin axis, not revolute)")
    model = parse(text, path="fourbar_revolute.mech", assemble=False)
    check = compare.rank_K(model, 5)
    print(check.line())
    assert not check.passed and "point-on-line" in check.note and "fourbar_revolute.mech:25" in check.note


def test_design_pose_is_assembled_on_load():
    text = FOURBAR.read_text().replace("anchor_pred 0.4 0 0", "anchor_pred 0.43 0 0.02")  # loop open at q = 0
    model = parse(text, path="open.mech")
    assert np.abs(closure(model, model.q0())[0]).max() < 1e-12
    assert np.abs(model.q0()).max() > 1e-3  # it moved to close


def test_unassemblable_model_names_the_loop():
    text = FOURBAR.read_text().replace("anchor_pred 0.4 0 0", "anchor_pred 3.0 0 0")  # out of reach
    with pytest.raises(MechError, match=r"open.mech:25: cannot assemble the design pose: loop 'ground'.*residual"):
        parse(text, path="open.mech")


# -- planted generator bugs: gen_vs_dense must catch each ------------------------
@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MECHDYN_CACHE", str(tmp_path))


def _gen_error() -> float:
    model = load_model(ZOO)
    return compare.gen_vs_dense(mechdyn.load(model), 100).value


def test_planted_dropped_K_entry(fresh_cache, monkeypatch):
    real = gloops.path_row

    def dropped(b, kin, a, s, T, F):
        row = real(b, kin, a, s, T, F)
        row.pop(min(row), None)  # lose the first joint's entry
        return row

    monkeypatch.setattr(gloops, "path_row", dropped)
    err = _gen_error()
    print(f"planted dropped K entry: gen_vs_dense = {err:.3e}")
    assert err > 1e-6


def test_planted_point_g_without_coriolis(fresh_cache, monkeypatch):
    """The spherical and revolute rows' k along the successor's axes (loops.point_g) lose 2 ḋ × ω."""
    from mechdyn.codegen.sspatial import cross, scale, vadd, vsub

    def planted(b, d, dd, dA, w, al, alpha, beta):
        accel = vadd(b, vadd(b, dA, cross(b, d, al)), cross(b, w, cross(b, w, d)))
        return vsub(b, vsub(b, scale(b, 2 * alpha, cross(b, w, d)), accel),
                    vadd(b, scale(b, 2 * alpha, dd), scale(b, beta * beta, d)))

    monkeypatch.setattr(gloops, "point_g", planted)
    err = _gen_error()
    print(f"planted point_g without 2 ḋ × ω: gen_vs_dense = {err:.3e}")
    assert err > 1e-7  # ḋ is of the order of the 1e-4 tear at these states: ~1e-6 here, a thousand times the gate


FRAMES = {"predecessor": lambda m, lp: lp.pred, "successor": lambda m, lp: lp.succ,
          "base": lambda m, lp: -1, "root of the predecessor": lambda m, lp: m.support(lp.pred)[-1] if lp.pred >= 0 else -1}


def _force_frame(monkeypatch, pick):
    """The generator writing every loop in the frame `pick` names instead of the cheapest."""
    import mechdyn.codegen.equations as equations
    monkeypatch.setattr(equations, "loop_rows",
                        lambda b, kin, lp, form=gloops.as_K: form(b, kin, lp, gloops.rows_in(b, kin, lp, pick(kin.model, lp))))


@pytest.mark.parametrize("frame", FRAMES)
def test_every_frame_gives_the_same_rows(fresh_cache, monkeypatch, frame):
    """The loop zoo with every loop forced into one frame: each is the same system, so each matches the dense
    reference (the generator itself picks the cheapest per loop)."""
    _force_frame(monkeypatch, FRAMES[frame])
    err = _gen_error()
    print(f"every loop in its {frame}'s frame: gen_vs_dense = {err:.3e}")
    assert err < 1e-9


def test_planted_relative_transform_without_transpose(fresh_cache, monkeypatch):
    """X⁻¹ with E where Eᵀ belongs: caught wherever a loop is written in a frame not above both its bodies."""
    from mechdyn.codegen import kinematics, sspatial
    monkeypatch.setattr(kinematics, "xf_inverse", lambda b, X: sspatial.Xf(X.E, [b.neg(x) for x in sspatial.mv(b, X.E, X.r)]))
    _force_frame(monkeypatch, FRAMES["predecessor"])
    err = _gen_error()
    print(f"planted X⁻¹ without its transpose: gen_vs_dense = {err:.3e}")
    assert err > 1e-6


def test_planted_distance_accel_sign(fresh_cache, monkeypatch):
    monkeypatch.setattr(gloops, "distance_accel",
                        lambda b, d, dd, dA: b.sub(b.dot(d, dA), b.dot(dd, dd)))  # −ḋ·ḋ instead of +
    err = _gen_error()
    print(f"planted distance acceleration sign: gen_vs_dense = {err:.3e}")
    assert err > 1e-6


def test_planted_baumgarte_sign(fresh_cache, monkeypatch):
    real = gloops.baumgarte
    monkeypatch.setattr(gloops, "baumgarte", lambda b, phi, phid, al, be: b.neg(real(b, phi, phid, al, be)))
    err = _gen_error()
    print(f"planted Baumgarte sign: gen_vs_dense = {err:.3e}")
    assert err > 1e-6


# -- the KKT elimination order (mechdyn/codegen/kkt.py) ----------------------------
def test_vehicle_order_eliminates_each_corner_then_the_rack_then_the_chassis():
    model = load_model("hmmwv")
    order = kkt.elimination_order(model)
    free = [s for s in range(model.nv) if s not in model.driven]  # the driven posts and rack are no unknowns
    assert sorted(order) == sorted([("v", s) for s in free] + [("c", r) for r in range(model.nc)])
    slot = lambda name: model.vidx[next(i for i, bd in enumerate(model.bodies) if bd.name == name)]  # noqa: E731
    pos = {p: k for k, p in enumerate(order)}
    assert order[-9:-3] == [("v", s) for s in range(5, -1, -1)]  # the chassis, leaves first, then its restraints
    rack = pos.get(("v", slot("rack")), pos["v", 5])  # the rack is driven (no pivot): the chassis bounds them
    for corner, first_row in (("FL", 0), ("FR", 8)):  # the front corners, tied only by the rack
        wheel = pos["v", slot(f"wheel_{corner}")]
        rows = [pos["c", r] for r in range(first_row, first_row + 8)]
        assert wheel < min(rows) and max(rows) < rack
    corners = [r for r in range(model.nc) if not loop_of_row(model, r).name.startswith("restraint")]
    assert all(pos["c", r] < pos["v", 5] for r in corners)  # no corner's row waits for the chassis
    assert order[-3:] == [("c", r) for r in range(model.nc - 3, model.nc)]  # the rig's restraints, base to chassis


def test_loops_that_need_the_hub_wait_for_it():
    """fourbar's rows cannot be met by the rocker alone: they go last, which is RBDA method 2."""
    order = kkt.elimination_order(load_model("fourbar"))
    assert order == [("v", 2), ("v", 1), ("v", 0), ("c", 0), ("c", 1)]


def test_two_elimination_orders_give_the_same_accelerations(fresh_cache, monkeypatch):
    """The structured order against method 2 (every row last): the same KKT solution."""
    model = load_model("halfcar")
    states = list(manifold_states(model, np.random.default_rng(3), 20))
    structured = mechdyn.load(model)
    got = [structured.forward(s.q, s.qd, s.tau, s.fext, s.act) for s in states]
    method2 = ([("v", s) for s in range(model.nv - 1, -1, -1) if s not in model.driven]
               + [("c", r) for r in range(model.nc)])
    monkeypatch.setattr(kkt, "elimination_order", lambda m: method2)
    monkeypatch.setenv("MECHDYN_CACHE", str(Path(os.environ["MECHDYN_CACHE"]) / "method2"))
    plain = mechdyn.load(model)
    want = [plain.forward(s.q, s.qd, s.tau, s.fext, s.act) for s in states]
    assert max(scaled_error(g, w) for g, w in zip(got, want)) < 1e-12


def test_planted_row_before_its_coordinates_is_refused(fresh_cache, monkeypatch):
    """A row pivot with none of its coordinates eliminated is a structural zero: generation stops."""
    model = load_model("quartercar")
    bad = [("c", 0)] + [p for p in kkt.elimination_order(model) if p != ("c", 0)]
    monkeypatch.setattr(kkt, "elimination_order", lambda m: bad)
    with pytest.raises(ValueError, match="structural zero pivot at constraint row 0"):
        mechdyn.load(model)
