"""The mechanics of recorded rows in C (mechdyn/sim/mechanics.c, energy.mechanics) against the row-by-row route it
replaced: energy_terms and loops.closure on core.kinematics' spatial transforms, state by state, on every model
and on every loop joint; the threads' row blocks against one call per row; and a planted bug in the C for each
output the gates read."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mechdyn.blocks
from mechdyn.core.kinematics import forward_kinematics
from mechdyn.core.loops import closure
from mechdyn.core.model import LOOP_ROWS
from mechdyn.core.parse import load_model, parse
from mechdyn.core.sample import states
from mechdyn.sim import energy
from mechdyn.sim.energy import energy_terms, mechanics

MODELS_DIR = Path(__file__).resolve().parents[2] / "models"
MODELS = sorted(p.stem for p in MODELS_DIR.glob("*.mech"))
STATES = 6
TOL = 1e-11  # of each quantity's scale over the states: the two routes differ by round-off (worst seen 8e-15)


def reference(model, Q, QD) -> dict[str, np.ndarray]:
    """The row-by-row route: energy_terms, Σ m·v_cg and each body's pose from forward_kinematics, loops.closure."""
    out = {"kinetic": [], "potential": [], "power": [], "momentum": [], "closure": [], "poses": []}
    for q, qd in zip(Q, QD):
        T, V, P = energy_terms(model, q, qd)
        kin = forward_kinematics(model, q, qd)
        out["kinetic"].append(T), out["potential"].append(V), out["power"].append(P)
        out["momentum"].append(sum(b.mass * kin.R[i] @ (kin.v[i, 3:] + np.cross(kin.v[i, :3], b.cg))
                                   for i, b in enumerate(model.bodies)))
        out["closure"].append(closure(model, q)[0] if model.loops else np.zeros(0))
        w, v = (np.einsum("bij,bj->bi", kin.R, kin.v[:, k:k + 3]) for k in (0, 3))  # body coords to world
        out["poses"].append(np.concatenate([kin.R.reshape(-1, 9), kin.p, w, v], axis=1))
    return {k: np.array(v) for k, v in out.items()}


def worst(mech, ref: dict[str, np.ndarray]) -> dict[str, float]:
    """Each output's largest difference from the reference, over the reference's own scale (at least 1)."""
    got = {"kinetic": mech.kinetic, "potential": mech.potential, "power": mech.power, "momentum": mech.momentum,
           "closure": mech.closure, "poses": mech.poses}
    return {k: float(np.max(np.abs(got[k] - ref[k]), initial=0.0) / max(1.0, float(np.max(np.abs(ref[k]), initial=0.0))))
            for k in ref}


# a floating door closed to the base by each loop joint in turn, about a tilted axis: no model in models/ has a
# revolute, prismatic or cylindrical loop, whose rows compare directions of the predecessor and the successor
DOOR = """
body door
  parent base
  joint floating
  mass 2
  cg 0.1 0.2 0.3
  inertia 0.2 0.25 0.3 0.01 0 -0.02
end
loop hinge
  joint {joint}
  pred base
  succ door
  anchor_pred 0.1 -0.2 0.3
  anchor_succ {anchor}
{extra}end
"""


def door(joint: str):
    """The door on a loop joint of that kind."""
    extra = {"spherical": "", "distance": "  length 0.5\n"}.get(joint, "  axis 0.48 0.6 0.64\n")
    anchor = "0.1 0.2 0.3" if joint == "distance" else "0.1 -0.2 0.3"
    return parse(DOOR.format(joint=joint, anchor=anchor, extra=extra), name=f"door_{joint}")


def sampled(name: str):
    model = door(name.removeprefix("door_")) if name.startswith("door_") else load_model(name)
    S = list(states(model, STATES, 7, tear=1e-3))  # a loop model's rows slightly open: the residuals are not zeros
    return model, np.array([s.q for s in S]), np.array([s.qd for s in S])


@pytest.mark.parametrize("name", [*MODELS, *(f"door_{j}" for j in LOOP_ROWS)])
def test_every_model_matches_the_row_route(name):
    model, Q, QD = sampled(name)
    errs = worst(mechanics(model, Q, QD, poses=True), reference(model, Q, QD))
    print(name, {k: f"{v:.1e}" for k, v in errs.items()})
    assert max(errs.values()) <= TOL, errs
    if model.loops:
        assert np.abs(reference(model, Q, QD)["closure"]).max() > 1e-6  # torn: the comparison is not of zeros


def test_row_blocks_on_threads_are_one_call_per_row(monkeypatch):
    """hmmwv over 2001 rows, split in blocks on threads, is the same bits as the rows one call each."""
    model = load_model("hmmwv")
    rng = np.random.default_rng(3)
    Q = model.q0() + 1e-2 * rng.standard_normal((2001, model.nq))
    QD = rng.standard_normal((2001, model.nv))
    monkeypatch.setattr(mechdyn.blocks.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert len(mechdyn.blocks.row_blocks(len(Q))) == 4
    whole = mechanics(model, Q, QD, poses=True)
    for k in (0, 999, 2000):
        one = mechanics(model, Q[k:k + 1], QD[k:k + 1], poses=True)
        for f in ("kinetic", "potential", "power", "momentum", "closure", "poses"):
            np.testing.assert_array_equal(getattr(one, f)[0], getattr(whole, f)[k])


def test_the_balance_integrates_the_power():
    """energy_balance without the stepper's work: E + the trapezoid of mechanics' power (springpend's dampers)."""
    model, Q, QD = sampled("springpend")
    t = np.arange(len(Q)) * 0.01
    mech = mechanics(model, Q, QD)
    E, B = energy.energy_balance(model, t, Q, QD)
    W = np.concatenate([[0.0], np.cumsum(0.5 * (mech.power[1:] + mech.power[:-1]) * 0.01)])
    assert mech.power.max() > 0
    np.testing.assert_allclose(B, E + W, rtol=0, atol=1e-12 * np.abs(B).max())


def test_bad_rows_are_refused():
    model = load_model("elbow")
    with pytest.raises(ValueError, match=r"expected \(n, 6\) and \(n, 6\) for model 'elbow'"):
        mechanics(model, np.zeros((3, 6)), np.zeros((2, 6)))
    with pytest.raises(ValueError, match="expected"):
        mechanics(model, np.zeros((3, 7)), np.zeros((3, 6)))


PLANTED = {  # what each bug breaks, the C it replaces, the model it shows on
    "kinetic": ("cross3(wp, Rpr, v);", "cross3(Rpr, wp, v);", "elbow"),  # the transport velocity's sign
    "potential": ("pot -= m * (p[k] + c[k]) * t->gravity[k];", "pot -= m * p[k] * t->gravity[k];", "elbow"),
    "power": ("diss += kqc[2] * xd * xd;", "diss += kqc[2] * xd;", "springpend"),
    "momentum": ("mom[k] += m * vc[k];", "mom[k] += m * v[k];", "elbow"),
    "closure": ("ax[5][j] = Ts[3 * j + 2];", "ax[5][j] = Tp[3 * j + 2];", "door_revolute"),  # as from the predecessor
}


@pytest.mark.parametrize("output", PLANTED)
def test_a_planted_bug_is_caught(output, monkeypatch):
    old, new, name = PLANTED[output]
    text = energy._SOURCE.read_text()
    assert text.count(old) == 1, f"the planted bug's anchor is not unique: {old!r}"
    monkeypatch.setattr(energy, "module", lambda: energy.compile(text.replace(old, new)))
    model, Q, QD = sampled(name)
    errs = worst(mechanics(model, Q, QD, poses=True), reference(model, Q, QD))
    print(output, {k: f"{v:.1e}" for k, v in errs.items()})
    assert errs[output] > 1e3 * TOL
