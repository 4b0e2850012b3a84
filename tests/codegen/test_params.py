"""Declared parameters (docs/params.md): read at run time, they must give what folding the same values gives.

The second route is a module generated with the new values folded in, as every model was before parameters:
the two share the model and nothing of the parameter path (declared.py, the thread's vector, the binding).
They agree to round-off, not bit for bit: folded, m c is one constant; declared, it is a product at run time,
and the sums around it are ordered by what is constant.
"""
from __future__ import annotations

import dataclasses as dc
import os
import threading
from pathlib import Path

import numpy as np
import pytest

import mechdyn
from mechdyn.codegen import declared
from mechdyn.codegen.generate import generate
from mechdyn.core import params as P
from mechdyn.core.errors import MechError
from mechdyn.core.fingerprint import fingerprint
from mechdyn.core.model import Model
from mechdyn.core.parse import MODELS_DIR, load_model, parse
from mechdyn.core.sample import states
from mechdyn.dynamics import Dynamics

GATE = 1e-9  # relative to the accelerations' scale, as the generated C is gated against the dense reference
# the models whose two builds take most of a minute or more, and two of the HMMWV's kin (hmmwv itself stays),
# checked with MECHDYN_TEST_ALL_PARAMS=1: the suite's time
LONG = {"m113", "twobands", "hmmwv_pitman", "track_demo", "band63", "chain63", "hmmwv_road", "halfcar"}
MODELS = sorted(p.stem for p in MODELS_DIR.glob("*.mech"))


def chosen(model: Model, k: int = 4) -> list[str]:
    """k declarable parameters of `model`, drawn by a seed of its name (a test's choice, the same every run)."""
    names = P.declarable(model)
    rng = np.random.default_rng(sum(map(ord, model.name)))
    return [str(n) for n in rng.choice(names, size=min(k, len(names)), replace=False)]


def moved(model: Model, seed: int = 0) -> np.ndarray:
    """New values for model's declared parameters, each valid for its kind: masses, stiffnesses, dampings and
    lengths scaled by up to ±20 %, CGs moved by up to 2 cm, inertias scaled and turned (so they stay inertias),
    free angles moved by up to 0.1 rad."""
    rng = np.random.default_rng(seed)
    x = P.values(model)
    for p in model.params:
        v = x[p.offset:p.offset + p.size]
        if p.field == "cg":
            v += rng.uniform(-0.02, 0.02, 3)
        elif p.field == "q0":
            v += rng.uniform(-0.1, 0.1)
        elif p.field == "inertia":
            w = rng.uniform(-0.3, 0.3, 3)
            th = np.linalg.norm(w)
            K = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]]) / th
            R = np.eye(3) + np.sin(th) * K + (1 - np.cos(th)) * K @ K
            I = P._written(p, v)
            I = rng.uniform(0.8, 1.2) * R @ I @ R.T
            v[:] = [I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]]
        else:
            v *= rng.uniform(0.8, 1.2)
    return x


def folded(model: Model) -> Model:
    """The model with its parameters' values folded, as a model that declares none."""
    return dc.replace(model, params=())


def worst(a: Dynamics, b: Dynamics, n: int = 12) -> float:
    """The largest difference of fwd_dyn, fwd_dyn_observe and the dampers' power between a and b over n states,
    relative to each output's scale."""
    errs = []
    for s in states(b.model, n, 3):
        x, y = a.forward(s.q, s.qd, s.tau, s.fext, s.act), b.forward(s.q, s.qd, s.tau, s.fext, s.act)
        errs.append(np.max(np.abs(x - y)) / max(1.0, np.max(np.abs(y))))
        if b.observe_len:
            x, y = a.observe(s.q, s.qd), b.observe(s.q, s.qd)
            errs.append(np.max(np.abs(x - y)) / max(1.0, np.max(np.abs(y))))
    return max(errs)


@pytest.mark.parametrize("name", MODELS)
def test_parameters_match_recompiling(name):
    """For every model and four parameters drawn from what it may declare, new values set at run time give the
    module generated with those values folded in."""
    if name in LONG and not os.environ.get("MECHDYN_TEST_ALL_PARAMS"):
        pytest.skip(f"{name}: its two builds cost the suite most of a minute or more; set MECHDYN_TEST_ALL_PARAMS=1")
    model = P.declare(load_model(name), chosen(load_model(name)))
    dyn = Dynamics(model)
    dyn.params.values = moved(model)
    err = worst(dyn, Dynamics(folded(dyn.model)))
    print(f"\n{name} {dyn.params.names}: {err:.2e}")
    assert err <= GATE, (name, dyn.params.names, err)


def test_the_source_does_not_depend_on_the_values():
    """The C is the same whatever the declared values (the cache key leaves them out), and changes with what is
    declared."""
    model = P.declare(load_model("hmmwv"), ["spring_FL.k", "chassis.mass", "uca_FL.cg", "wheel_RR.inertia"])
    other = P.with_values(model, moved(model, 1))
    assert generate(model).source == generate(other).source
    assert fingerprint(model, values=False) == fingerprint(other, values=False)
    assert fingerprint(model) != fingerprint(other)
    assert fingerprint(P.declare(load_model("hmmwv"), ["chassis.mass"]), values=False) != \
        fingerprint(model, values=False)


def test_no_parameters_no_change():
    """A model that declares none generates what it generated before parameters existed: no vector, no setter."""
    src = generate(load_model("elbow")).source
    assert declared.P not in src and "set_params" not in src


def test_setting_takes_effect_without_a_compile(tmp_path, monkeypatch):
    """A new value changes the next call's result, and no module is compiled for it."""
    monkeypatch.setenv("MECHDYN_CACHE", str(tmp_path))
    dyn = mechdyn.load("elbow", params=["forearm.mass"])
    built = sorted(tmp_path.glob("*.so"))
    q, qd, tau = np.full(6, 0.3), np.zeros(6), np.zeros(6)
    a = dyn.forward(q, qd, tau)
    dyn.params["forearm.mass"] = 2 * dyn.params["forearm.mass"]
    assert np.max(np.abs(dyn.forward(q, qd, tau) - a)) > 1e-3
    assert sorted(tmp_path.glob("*.so")) == built


def test_two_models_on_one_module_in_two_threads():
    """Two models sharing a module (the same declarations, other values), called from two threads in turns, each
    get their own values; a thread that never set any gets NaN from the C wherever the values matter, never
    another model's numbers."""
    model = P.declare(load_model("quartercar"), chosen(load_model("quartercar")))
    a, b = Dynamics(model), Dynamics(P.with_values(model, moved(model, 2)))
    assert a.library == b.library
    want = {id(d): Dynamics(folded(d.model)) for d in (a, b)}
    s = next(iter(states(model, 1, 5)))
    errs: list[float] = []

    def run(d: Dynamics) -> None:
        for _ in range(200):
            x = d.forward(s.q, s.qd, s.tau, s.fext, s.act)
            errs.append(float(np.max(np.abs(x - want[id(d)].forward(s.q, s.qd, s.tau, s.fext, s.act)))))

    threads = [threading.Thread(target=run, args=(d,)) for d in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errs) == 400 and max(errs) < 1e-9
    out = np.zeros(a.nv)

    def unbound() -> None:
        ffi = a.ffi
        a._lib.fwd_dyn(*(ffi.from_buffer("double[]", np.ascontiguousarray(x)) for x in (s.q, s.qd, s.tau)),
                       ffi.NULL, ffi.NULL if s.act is None else ffi.from_buffer("double[]", s.act),
                       ffi.from_buffer("double[]", out))

    t = threading.Thread(target=unbound)
    t.start()
    t.join()
    xa, xb = (d.forward(s.q, s.qd, s.tau, s.fext, s.act) for d in (a, b))
    assert np.all(np.isnan(out[xa != xb])) and np.all(out[xa == xb] == xa[xa == xb])  # what the values move is NaN


def test_derivatives_with_parameters():
    """The derivatives' module reads the same parameters (its own vector): against its folded twin."""
    model = P.declare(load_model("elbow"), ["upper_arm.mass", "forearm.cg", "wrist_pitch.inertia"])
    dyn = Dynamics(model)
    dyn.params.values = moved(model, 4)
    ref = Dynamics(folded(dyn.model))
    for s in states(model, 5, 1):
        d, r = dyn.derivatives(s.q, s.qd, s.tau), ref.derivatives(s.q, s.qd, s.tau)
        for x, y in zip(d, r):
            assert np.max(np.abs(x - y), initial=0.0) <= GATE * max(1.0, np.max(np.abs(y), initial=0.0))


def test_planted_shift_is_caught(tmp_path, monkeypatch):
    """declared.cg without the frames' shift (the CG left where the model put it, while the frame moved along its
    axis) is caught by the comparison with recompiling. Built in a private cache: the planted module shares the
    real one's key."""
    monkeypatch.setenv("MECHDYN_CACHE", str(tmp_path))
    real = declared.cg

    def unshifted(b, model, i):
        p = P.on(model, "body", i, "cg")
        return real(b, model, i) if p is None else real(b, dc.replace(model, params=tuple(
            dc.replace(q, shift=np.zeros(3)) if q is p else q for q in model.params)), i)

    monkeypatch.setattr(declared, "cg", unshifted)
    model = P.declare(load_model("elbow"), ["forearm.cg"])  # elbow's forearm frame slides 0.1501 m along y
    dyn = Dynamics(model)
    dyn.params.values = moved(model)
    err = worst(dyn, Dynamics(folded(dyn.model)))
    print(f"\nplanted: the cg's shift dropped: {err:.2e} (gate {GATE:g})")
    assert err > 1e3 * GATE


@pytest.mark.parametrize("text, says", [
    ("param upper_arm.axis", "the axis cannot be a parameter: a joint axis decides"),
    ("param upper_arm.rpy", "the rpy cannot be a parameter"),
    ("param upper_arm.masss", "a body has no parameter 'masss'; expected one of mass, cg, inertia"),
    ("param nobody.mass", "no body, tsda, rsda, track, tire or ground is named 'nobody'"),
    ("param mass", "expected NAME.FIELD"),
    ("param upper_arm.mass\nparam upper_arm.mass", "duplicate param name 'upper_arm.mass'"),
])
def test_bad_declarations_name_the_line(text, says):
    base = (MODELS_DIR / "elbow.mech").read_text()
    lines = base.count("\n") + 1
    with pytest.raises(MechError) as e:
        parse(base + "\n" + text, "elbow_p.mech")
    assert says in str(e.value) and str(e.value).startswith("elbow_p.mech:"), str(e.value)
    assert e.value.line in (lines + 1, lines + 2)


@pytest.mark.parametrize("name, value, says", [
    ("upper_arm.mass", 0.0, "expected a mass > 0"),
    ("upper_arm.mass", np.nan, "expected finite values"),
    ("forearm.inertia", [1, 1, 3, 0, 0, 0], "violates the triangle inequality"),
    ("forearm.inertia", [1, 1, 1, 2, 0, 0], "not positive definite"),
    ("forearm.cg", [1, 2], "holds 3 numbers, got 2"),
])
def test_bad_values_are_refused(name, value, says):
    dyn = mechdyn.load("elbow", params=["upper_arm.mass", "forearm.inertia", "forearm.cg"])
    before = dyn.params.values
    with pytest.raises(ValueError, match=says):
        dyn.params[name] = value
    assert np.array_equal(dyn.params.values, before)


def test_massless_and_unknown_names_are_refused_from_python():
    with pytest.raises(P.ParamError, match="no body, tsda, rsda, track, tire or ground is named .arm."):
        mechdyn.load("elbow", params=["arm.mass"])
    dyn = mechdyn.load("elbow", params=["upper_arm.mass"])
    with pytest.raises(KeyError, match="declared: upper_arm.mass"):
        dyn.params["forearm.mass"]


def scales(model: Model) -> np.ndarray:
    """Each parameter slot's scale, for differences: a mass, rate or length its own size; a CG 0.1 m; an inertia's
    slots a tenth of its least principal moment (so a step keeps it an inertia); a free angle 1 rad."""
    out = []
    for p in model.params:
        v = P.values(model)[p.offset:p.offset + p.size]
        if p.field in ("cg", "xtree"):
            out += [0.1] * 3
        elif p.field == "inertia":
            out += [0.1 * float(np.min(np.linalg.eigvalsh(P._written(p, v))))] * 6
        elif p.field == "q0":
            out.append(1.0)
        else:
            out.append(max(abs(float(v[0])), 1e-3))
    return np.array(out)


SENSITIVITY_MODELS = {"elbow": ["upper_arm.mass", "forearm.cg", "wrist_pitch.inertia", "forearm.xtree"],
                      "satellite": ["bus.mass", "bus.inertia", "panel_left.cg"],
                      "quartercar": ["spring.k", "shock.c", "sprung.mass", "lca.cg"],
                      "springpend": ["spring.k", "spring.l0", "torsion.q0", "pend2.inertia"],
                      "fourbar": ["crank.mass", "coupler.cg", "rocker.inertia"],
                      "hmmwv": ["spring_FL.k", "chassis.mass", "uca_FL.cg", "wheel_RR.inertia", "shock_FL.c"]}


def sensitivity_errors(dyn: Dynamics) -> tuple[float, float]:
    """The largest difference of ∂qdd/∂p (fwd_dyn_dparams) from Ridders' differences of fwd_dyn over the
    parameters (beyond their rounding floor), and from central differences of the dense reference
    (crosscheck/dense) built with the same changed values, over 3 states; each column times its scale, each row
    relative to max(1, its largest such entry)."""
    from crosscheck.dense.driven import forward_model

    from .test_derivs import CON, EPS, H0, KAPPA, NTAB, extrapolated

    x0, scale = dyn.params.values, scales(dyn.model)
    cols = [("dparam", k, scale[k], lambda t, k=k: x0 + t * np.eye(x0.size)[k]) for k in range(x0.size)]
    worst_ridders = worst_dense = 0.0
    for s in states(dyn.model, 3, 8):
        qdd, D = dyn.param_derivatives(s.q, s.qd, s.tau, s.fext, s.act)

        def generated(xs: list[np.ndarray]) -> np.ndarray:
            out = []
            for x in xs:
                dyn.params.values = x
                out.append(dyn.forward(s.q, s.qd, s.tau, s.fext, s.act))
            return np.array(out)

        ridders, _ = extrapolated(generated, cols)
        dyn.params.values = x0
        Ds = D * scale[None, :]
        rows = np.maximum(1.0, np.abs(Ds).max(axis=1, keepdims=True))
        floor = KAPPA * EPS * np.abs(qdd)[:, None] / (H0 / CON ** (NTAB - 1))
        worst_ridders = max(worst_ridders, float(np.max(np.maximum(np.abs(Ds - ridders.T * scale) - floor, 0) / rows)))
        h = 1e-4
        xs = [x0 + sg * h * scale[k] * np.eye(x0.size)[k] for k in range(x0.size) for sg in (1.0, -1.0)]
        f = np.array([forward_model(P.with_values(dyn.model, x), s.q, s.qd, s.tau, s.fext, s.act)
                      for x in xs]).reshape(x0.size, 2, -1)
        dense = ((f[:, 0] - f[:, 1]) / (2 * h)).T  # along each column's scaled step
        worst_dense = max(worst_dense, float(np.max(np.abs(Ds - dense) / rows)))
    return worst_ridders, worst_dense


DENSE_GATE = 1e-6  # central differences of the dense reference at 1e-4 of each scale: truncation ~h², rounding ~ε/h


@pytest.mark.parametrize("name", sorted(SENSITIVITY_MODELS))
def test_sensitivities_against_differences(name):
    """∂qdd/∂p from fwd_dyn_dparams against differences of fwd_dyn and of the dense reference."""
    if name == "hmmwv" and not os.environ.get("MECHDYN_TEST_ALL_PARAMS"):
        pytest.skip("hmmwv: its derivatives' module with parameters costs the suite over a minute to build; set "
                    "MECHDYN_TEST_ALL_PARAMS=1 (docs/params.md has its figures)")
    dyn = Dynamics(P.declare(load_model(name), SENSITIVITY_MODELS[name]))
    ridders, dense = sensitivity_errors(dyn)
    print(f"\n{name} {dyn.params.names}: Ridders {ridders:.2e}, dense central differences {dense:.2e}")
    assert ridders <= GATE and dense <= DENSE_GATE, (ridders, dense)


def test_planted_sensitivity_sign_is_caught(tmp_path, monkeypatch):
    """The parameters' seeds negated in the tangent (derivs.seeds): ∂qdd/∂p changes sign, which both differences
    catch. Built in a private cache: the planted module shares the real one's key."""
    from mechdyn.codegen import derivs

    monkeypatch.setenv("MECHDYN_CACHE", str(tmp_path))
    real = derivs.seeds
    monkeypatch.setattr(derivs, "seeds", lambda b, m, params=False: {
        k: ({d: -1.0 for d in v} if k.startswith(declared.P) else v) for k, v in real(b, m, params).items()})
    dyn = Dynamics(P.declare(load_model("quartercar"), SENSITIVITY_MODELS["quartercar"]))
    ridders, dense = sensitivity_errors(dyn)
    print(f"\nplanted: the parameters' seeds negated: Ridders {ridders:.2e}, dense {dense:.2e}")
    assert ridders > 1e3 * GATE and dense > 1e3 * DENSE_GATE


def test_contact_parameters_match_the_folded_model():
    """The ground's and a band's kn, kt and mu declared and set give the run of the model with those values
    written in, bit for bit: the contact's C reads them from the model either way, and the generated C never
    does."""
    from mechdyn.sim.contact import ContactSim

    names = ["ground.kn", "ground.mu", "band.kt", "band.mu"]
    dyn = Dynamics(P.declare(load_model("track_min"), names))
    dyn.params.values = dyn.params.values * np.array([1.7, 0.6, 1.3, 0.8])
    ref = Dynamics(folded(dyn.model))
    assert fingerprint(dyn.model, values=False) != fingerprint(ref.model, values=False)  # the declared's own key
    runs = [ContactSim(d).run(d.model.q0(), np.zeros(d.nv), 0.3, 2e-4) for d in (dyn, ref)]
    assert np.array_equal(runs[0].q, runs[1].q) and np.array_equal(runs[0].aux, runs[1].aux)
    base = ContactSim(Dynamics(load_model("track_min"))).run(dyn.model.q0(), np.zeros(dyn.nv), 0.3, 2e-4)
    assert not np.array_equal(base.q, runs[0].q)  # the values moved the run


def test_joint_offset_declarations_refused():
    """A joint frame's offset is a parameter of a tree: in a loop model it moves the closed design pose, and a
    floating body's is its q0."""
    with pytest.raises(P.ParamError, match="in a model with loops moves its closed design pose"):
        P.declare(load_model("quartercar"), ["uca.xtree"])
    with pytest.raises(P.ParamError, match="a floating body's xtree is its design-pose position"):
        P.declare(load_model("satellite"), ["bus.xtree"])


def test_contact_declarations_refused():
    with pytest.raises(P.ParamError, match="a ground's parameters are kn, kt, mu"):
        P.declare(load_model("track_min"), ["ground.terrain"])
    with pytest.raises(P.ParamError, match="no body, tsda, rsda, track, tire or ground is named 'ground'"):
        P.declare(load_model("elbow"), ["ground.kn"])


@pytest.mark.parametrize("name, names", [("elbow", ["upper_arm.mass", "forearm.cg", "wrist_pitch.inertia",
                                                    "forearm.xtree"]),
                                         ("quartercar", ["spring.k", "sprung.mass", "lca.cg", "wheel.inertia"]),
                                         ("satellite", ["bus.mass", "bus.inertia", "panel_left.cg"])])
def test_loop_route_reads_the_parameters(name, names):
    """The loop route (forced), which reads the bodies' inertias from tables: with parameters, td_inertias fills
    them per call from the thread's vector. Against the folded model's derivatives."""
    from mechdyn.codegen.build import build

    from .test_derivs_loop import ROUTES_TOL, call

    dyn = Dynamics(P.declare(load_model(name), names))
    dyn.params.values = moved(dyn.model, 6)
    loop = build(dyn.model, unit="derivatives-loop")[0]
    assert loop.lib.fwd_dyn_derivs_loops == 1
    dyn.params.bind(loop.ffi, loop.lib)
    ref = Dynamics(folded(dyn.model))
    worst = 0.0
    for s in states(dyn.model, 4, 5):
        a, b = call(dyn, loop, (s.q, s.qd, s.tau, s.fext, s.act)), ref.derivatives(s.q, s.qd, s.tau, s.fext, s.act)
        worst = max(worst, *(float(np.max(np.abs(x - y))) / max(1.0, float(np.max(np.abs(y))))
                             for x, y in zip(a, b) if y.size))
    print(f"\n{name} {names}: the loop route with parameters against the folded model: {worst:.2e}")
    assert worst <= ROUTES_TOL


def test_dparams_past_the_limit_are_refused(tmp_path, monkeypatch):
    """∂qdd/∂p whose straight-line function would pass the operation limit is not built: its outputs are NaN and
    Dynamics.param_derivatives says why, while the other derivatives are there."""
    from mechdyn.codegen import generate as gen

    monkeypatch.setenv("MECHDYN_CACHE", str(tmp_path))
    monkeypatch.setattr(gen, "STRAIGHT_MAX", 100)
    dyn = Dynamics(P.declare(load_model("elbow"), ["upper_arm.mass"]))
    s = next(iter(states(dyn.model, 1, 1)))
    assert np.all(np.isfinite(dyn.derivatives(s.q, s.qd, s.tau).dq))
    with pytest.raises(ValueError, match="fwd_dyn_dparams was not built"):
        dyn.param_derivatives(s.q, s.qd, s.tau)


def test_tire_parameters_match_an_edited_data_file(tmp_path):
    """A tire's mu0, rr and width declared and set give the run of the model whose tire reads a copy of its data
    file with those numbers written in, bit for bit; the generated C is the undeclared model's (one module)."""
    import dataclasses as dc_

    from mechdyn.sim.contact import ContactSim

    model = load_model("hmmwv_road")
    dyn = Dynamics(P.declare(model, ["tire_FL.mu0", "tire_FL.rr", "tire_FL.width"]))
    dyn.params.values = [0.65, 0.02, 0.33]
    tire = model.tires[0]
    text = Path(tire.data).read_text().replace('"Coefficient of Friction": 0.8', '"Coefficient of Friction": 0.65')
    text = text.replace('"Rolling Resistance Coefficient": 0.015', '"Rolling Resistance Coefficient": 0.02')
    text = text.replace('"Width [m]": 0.3175', '"Width [m]": 0.33')
    (tmp_path / "tire.json").write_text(text)
    edited = Dynamics(dc_.replace(model, tires=(dc_.replace(tire, data=str(tmp_path / "tire.json")),
                                                *model.tires[1:])))
    assert dyn.library == edited.library == Dynamics(model).library
    runs = [ContactSim(d).run(d.model.q0(), np.zeros(d.nv), 0.1, 5e-4) for d in (dyn, edited, Dynamics(model))]
    assert np.array_equal(runs[0].q, runs[1].q) and not np.array_equal(runs[0].q, runs[2].q)
    with pytest.raises(P.ParamError, match="the law of tire 'tire_FL' reads .*, not kz"):
        P.declare(model, ["tire_FL.kz"])
