"""The generated code as a whole (mechdyn/codegen/generate.py and the passes it calls): nothing emitted that the
model did not ask for, every joint type under every parent, and planted bugs in the kinematics, CRBA, RNEA and
force elements that gen_vs_dense must catch."""
import re
from pathlib import Path

import mechdyn
from crosscheck import dense_compare as compare
from mechdyn.codegen import crba as gcrba
from mechdyn.codegen import kinematics as gkin
from mechdyn.codegen import rnea as grnea
from mechdyn.codegen import sspatial
from mechdyn.codegen.generate import generate
from mechdyn.core.parse import load_model

TRIALS = 200
JOINTMIX = Path(__file__).parents[1] / "data" / "jointmix.mech"  # every joint under every parent


def test_nothing_is_emitted_that_the_model_did_not_ask_for():
    elbow = generate(load_model("elbow")).source
    assert "fext[" not in elbow and "act[" not in elbow and "obs[" not in elbow
    spring = generate(load_model("springpend")).source
    slots = {int(k) for k in re.findall(r"fext\[(\d+)\]", spring.split("void fwd_dyn_batch")[0])}
    assert slots and max(slots) < 6, slots  # only pend1 (body 0) declares fext 1
    assert "act[1]" in spring


def test_pendulums_H_is_diagonal_by_branch_sparsity():
    src = generate(load_model("pendulums")).source
    gantry = generate(load_model("gantry"))
    assert gantry.flops < 10, gantry.flops  # constant H: no trigonometry, almost no arithmetic
    assert "md_sincos4" not in gantry.source and "md_sincos4(" in src


def test_every_joint_type_under_every_kind_of_parent():
    """A slider on a spinning arm, hinges on sliders, a probe on a floating drone: generated = dense."""
    assert compare.gen_vs_dense(mechdyn.load(JOINTMIX), 1000).value < 1e-12


# -- planted bugs: validation must catch each ---------------------------------
def _gen_error(model_name: str) -> float:
    return compare.gen_vs_dense(mechdyn.load(model_name), TRIALS).value


def test_planted_R_instead_of_RT(fresh_cache, monkeypatch):
    real = gkin.joint_rotation_T
    monkeypatch.setattr(gkin, "joint_rotation_T", lambda b, axis, q: sspatial.transpose(real(b, axis, q)))
    err = _gen_error("elbow")
    print(f"planted E = R: gen_vs_dense = {err:.3e}")
    assert err > 1e-3


def test_planted_inertia_lower_left_sign(fresh_cache, monkeypatch):
    def planted(b, I, m):  # [Ī ω + h × v; m v + h × ω]: the lower-left block's sign flipped
        w, v = m[:3], m[3:]
        return sspatial.vadd(b, sspatial.mv(b, sspatial.sym3(I.I), w), sspatial.cross(b, I.h, v)) + \
            sspatial.vadd(b, sspatial.scale(b, I.m, v), sspatial.cross(b, I.h, w))

    monkeypatch.setattr(gcrba, "rbi_apply", planted)  # the CRBA's composite-inertia products
    err = _gen_error("threelink")
    print(f"planted inertia sign: gen_vs_dense = {err:.3e}")
    assert err > 1e-3


def test_planted_dropped_rnea_term(fresh_cache, monkeypatch):
    real = grnea.body_force  # drop the velocity products ω × (ω × c) and ω × Ic ω of the body force
    monkeypatch.setattr(grnea, "body_force", lambda b, m, i, al, aO, w: real(b, m, i, al, aO, [0.0, 0.0, 0.0]))
    err = _gen_error("satellite")
    print(f"planted dropped velocity products: gen_vs_dense = {err:.3e}")
    assert err > 1e-3


def test_planted_dropped_prismatic_coriolis(fresh_cache, monkeypatch):
    monkeypatch.setattr(grnea, "mtv", lambda b, E, x: [0.0, 0.0, 0.0])  # the slide rate: 2 ω × ṙ lost
    err = _gen_error(str(JOINTMIX))
    print(f"planted dropped prismatic Coriolis term: gen_vs_dense = {err:.3e}")
    assert err > 1e-3


def test_planted_tsda_sign(fresh_cache, monkeypatch):
    import mechdyn.codegen.elements as gel
    real = gel.path_row
    monkeypatch.setattr(gel, "path_row", lambda *a: {k: -x for k, x in real(*a).items()})
    err = _gen_error("springpend")
    print(f"planted tsda sign: gen_vs_dense = {err:.3e}")
    assert err > 1e-3


def test_planted_polarization_slip_is_caught(fresh_cache, monkeypatch):
    """The ω_i ω_j coefficients with the cross terms halved (½ of polarization): the monomial path must fail."""
    real = grnea.quadratic_coefficients

    def halved(g):
        G = real(g).copy()
        G[:, 3:] *= 0.5
        return G

    monkeypatch.setattr(grnea, "quadratic_coefficients", halved)
    err = _gen_error("elbow")
    print(f"planted polarization slip: gen_vs_dense = {err:.3e}")
    assert err > 1e-6  # the gate is 1e-9; the slip only touches the small velocity-squared terms
