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
