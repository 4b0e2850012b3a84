"""Pass 0 (codegen/frames.py): body frames slid along their joint axes change the constants, not the mechanism."""
import dataclasses as dc

import numpy as np
import pytest

import mechdyn
from crosscheck import dense_compare as compare
from crosscheck.dense.loops import forward
from mechdyn.codegen import frames
from mechdyn.core.parse import load_model
from mechdyn.core.sample import scaled_error, states


@pytest.mark.parametrize("name", ["elbow", "stanford", "satellite", "rrrs", "quartercar"])
def test_slid_model_has_the_same_dense_dynamics_and_observations(name):
    """The dense reference, which never sees a slid model in the gates, gives the same qdd and the same POI and
    TSDA observations for the model as written and as the generated code sees it."""
    model = load_model(name)
    s = frames.shifts(model)
    slid = frames.slide(model, s)
    for st in states(model, 20, 3):
        qdd = forward(model, st.q, st.qd, st.tau, st.fext, st.act)
        assert scaled_error(forward(slid, st.q, st.qd, st.tau, st.fext, st.act), qdd) < 1e-12
        assert np.allclose(compare.dense_observe(slid, st.q, st.qd), compare.dense_observe(model, st.q, st.qd),
                           rtol=0.0, atol=1e-12)


@pytest.mark.parametrize("name", ["elbow", "stanford", "satellite", "rrrs"])
def test_shifts_fold_constants(name):
    """On the arms and rrrs some frames move, and each move pays for itself: putting any one moved frame back
    where the model has it raises the tree's operation count."""
    model = load_model(name)
    s = frames.shifts(model)
    kept = frames.cost(frames.slide(model, s))
    assert any(s) and kept < frames.cost(model)
    for i in (i for i, x in enumerate(s) if x):
        assert frames.cost(frames.slide(model, s[:i] + (0.0,) + s[i + 1:])) > kept, model.bodies[i].name


def test_floating_bodies_stay_put():
    """A floating body's q holds its position, so its frame may not move: satellite's bus keeps its own."""
    model = load_model("satellite")
    assert frames.movable(model) == [1, 2, 3]
    assert frames.shifts(model)[0] == 0.0


def test_planted_slide_without_the_children_is_caught(tmp_path, monkeypatch):
    """A slide that moves a body's frame but leaves its children's joint frames where they were (the children
    then hang from the wrong point) is caught by gen_vs_dense on elbow."""
    monkeypatch.setenv("MECHDYN_CACHE", str(tmp_path))
    model = load_model("elbow")
    s = frames.shifts(model)
    eye = np.eye(3)
    back = lambda b: s[b.parent] * eye[model.bodies[b.parent].axis_index] if b.parent >= 0 else 0.0  # noqa: E731
    out = frames.slide(model, s)
    planted = dc.replace(out, bodies=tuple(dc.replace(b, xtree=b.xtree + back(b)) for b in out.bodies))
    monkeypatch.setattr(frames, "shifts", lambda m, counted=None: s)
    monkeypatch.setattr(frames, "slide", lambda m, s: planted)
    err = compare.gen_vs_dense(mechdyn.load(model), 50).value
    print(f"planted slide without the children: gen_vs_dense = {err:.3e}")
    assert err > 1e-3


def test_generated_code_names_its_moved_frames():
    """The generated C's constants are in the moved frames, so its header says which frames moved and how far;
    a model whose frames stay says so."""
    from mechdyn.codegen.generate import generate
    assert "upper_arm -0.2435 m along y, forearm -0.1501 m along y." in generate(load_model("elbow")).source
    assert " *   none.\n" in generate(load_model("threelink")).source


def _three_hinge_chain(links: int) -> str:
    """A floating trunk and `links` bodies below it, each hung on three massless frames turning about z, y and x
    at one point (MJCF's several joints on one body, imported as a chain of massless parts)."""
    text, parent = ("body trunk\n  parent base\n  joint floating\n  mass 5\n  inertia 0.1 0.2 0.25 0 0 0\nend\n",
                    "trunk")
    for k in range(links):
        for axis in "zyx":
            name = f"link{k}_{axis}"
            text += (f"body {name}\n  parent {parent}\n  joint revolute {axis}\n"
                     + ("  xtree 0 0 -0.3\n" if axis == "z" else "") + "  mass 0\n  inertia 0 0 0 0 0 0\nend\n")
            parent = name
        text += (f"body link{k}\n  parent {parent}\n  joint revolute y\n  xtree 0.05 0 0\n  mass 1\n"
                 "  cg 0 0.01 -0.15\n  inertia 0.01 0.011 0.002 0 0 0\nend\n")
        parent = f"link{k}"
    return text


def test_frame_search_windows_keep_what_a_massless_body_carries(monkeypatch):
    """A window cut off below a massless frame would count a zero pivot and refuse the model (it refused
    dm_control's humanoid_CMU and dog, and human.urdf on a floating base): the windows keep a massless body's
    children, and the model generates and agrees with the dense reference. Planted: the windows of radius alone."""
    from crosscheck.dense import forward_model
    from mechdyn.codegen import aba
    from mechdyn.codegen.expr import GenerationError
    from mechdyn.core.parse import parse
    model = parse(_three_hinge_chain(2), name="hinges")
    dyn = mechdyn.load(model)
    worst = max(scaled_error(dyn.forward(s.q, s.qd, s.tau), forward_model(model, s.q, s.qd, s.tau))
                for s in states(model, 100, 0))
    assert worst < 1e-9, worst  # the gen_vs_dense gate: three hinges at a point come near gimbal lock

    def radius_only(m, i, radius):
        near, edge = {i}, {i}
        for _ in range(radius):
            edge = {j for k in edge for j in (m.bodies[k].parent, *(c for c, bd in enumerate(m.bodies)
                                                                     if bd.parent == k))} - near - {-1}
            near |= edge
        return sorted(near)

    aligned = frames.align(model)
    frames.shifts(aligned, aba.tree_passes)  # the articulated-body count divides by each joint's pivot
    monkeypatch.setattr(frames, "neighbourhood", radius_only)
    with pytest.raises(GenerationError, match="structural zero"):
        frames.shifts(aligned, aba.tree_passes)
