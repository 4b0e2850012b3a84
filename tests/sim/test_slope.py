"""The slope gates (mechdyn/sim/slope.py): the tilt against the numeric kinematics, the anchored hold and its
regularized control, the release above tan θ = μ, the sinkage on the flat; each passes, and each trips on a planted
bug once. track_min and track_demo are fast; the anchored hold also runs on m113."""
from __future__ import annotations

import dataclasses
from functools import cache

import numpy as np
import pytest

from mechdyn.contact import native as contact_native
from mechdyn.contact.producers import Contact
from mechdyn.core.parse import load_model
from mechdyn.dynamics import Dynamics
from mechdyn.sim import native, slope
from mechdyn.sim.contact import ContactSim, accuracy_step
from mechdyn.sim.energy import energy_terms

SETTLE = 4.0  # s of flat settling before each gate, from q0 (the settle run's length)


@cache
def settled(name: str) -> tuple[Dynamics, np.ndarray, np.ndarray]:
    """The model's dynamics and its state after SETTLE seconds on the flat from q0 at rest."""
    dyn = Dynamics(load_model(name))
    sim = ContactSim(dyn)
    run = slope.run_whole(sim, dyn.model.q0(), np.zeros(dyn.nv), SETTLE, accuracy_step(sim.contact).dt, 100)
    return dyn, run.q[-1], run.qd[-1]


@cache
def planted(old: str, new: str):
    """The stepping loop compiled over the contact C with `old` (exactly once in it) replaced by `new`."""
    src = contact_native.source()
    assert src.count(old) == 1, f"the planted bug's anchor is not unique in the contact C: {old!r}"
    return native.compile(src.replace(old, new))


# the anchored friction re-anchored at the corner every step: no spring, the anchors ignored
ANCHORS_IGNORED = ("if (anchor[3] == 0.0) anchor[0] = p[0]", "if (1) anchor[0] = p[0]")
MU_DOUBLED = ("double cone = g->mu * load;", "double cone = 2.0 * g->mu * load;")
KN_DOUBLED = ("double f = g->kn * gap + g->cg", "double f = 2.0 * g->kn * gap + g->cg")


@pytest.mark.parametrize("name", ["track_min", "track_demo"])
def test_tilt_matches_kinematics(name):
    dyn, q, qd = settled(name)
    t = slope.tilt(dyn.model, q, qd, 15.0)
    err, where = slope.tilt_error(dyn.model, q, qd, t)
    print(f"{name}: worst body-by-body difference {err:.3g} on {where}")
    assert err < 1e-12, (err, where)
    assert np.allclose(t.normal, t.R @ [0, 0, 1])
    assert t.normal[0] > 0.25  # about y, positive: +x pitched down, the plane's normal leans to +x
    # the settled state barely moves: the velocities are checked again at a state that does
    moving = np.random.default_rng(21).normal(size=dyn.nv)
    err, where = slope.tilt_error(dyn.model, q, moving, slope.tilt(dyn.model, q, moving, 15.0))
    print(f"{name}: at random velocities {err:.3g} on {where}")
    assert err < 1e-12, (err, where)


def test_tilt_planted_hull_only_is_caught():
    dyn, q, qd = settled("track_min")
    m = dyn.model
    good = slope.tilt(m, q, qd, 15.0)
    bad_q = good.q.copy()
    k = m.qidx[m.body_index("band.s00")]
    bad_q[k:k + 7] = q[k:k + 7]  # the anchor shoe left unrotated: only the hull tilted
    err, where = slope.tilt_error(m, q, qd, dataclasses.replace(good, q=bad_q))
    print(f"planted (hull only): worst difference {err:.3g} on {where}")
    assert err > 1e-2 and where.startswith("band.")


def test_tilt_refuses_a_sine_terrain():
    m = load_model("track_min")
    sine = dataclasses.replace(m, ground=dataclasses.replace(m.ground, terrain="sine",
                                                             params=np.array([0.0, 0.01, 2.0, 2.0])))
    with pytest.raises(ValueError, match="sine terrain"):
        slope.tilt(sine, m.q0(), np.zeros(m.nv), 15.0)


@cache
def held(name: str, fric: str, T: float) -> slope.Hold:
    dyn, q, qd = settled(name)
    return slope.hold(dyn, q, qd, 15.0, fric=fric, T=T)


def test_hold_anchored_track_min():
    # track_min rocks on its one road wheel for ~4 s after the tilt: 8 s lets the last two seconds be parked
    h = held("track_min", "anchor", 8.0)
    print(h.gates[0].line(), f"energy: worst step rise {h.rise:.3g} J, bound {h.rise_bound:.3g} J")
    assert h.gates[0].passed and h.shoes >= 2


def test_hold_regularized_control_slides():
    h = held("track_min", "reg", 8.0)
    print(h.gates[0].line())
    assert h.gates[0].name == "hold_control" and h.gates[0].passed


def test_hold_anchored_m113():
    h = held("m113", "anchor", 4.0)
    print(h.gates[0].line(), f"energy: worst step rise {h.rise:.3g} J, bound {h.rise_bound:.3g} J")
    assert h.gates[0].passed and h.shoes > 10


def thinned(run, keep: np.ndarray):
    """The run's rows at `keep` only."""
    return dataclasses.replace(run, t=run.t[keep], q=run.q[keep], qd=run.qd[keep], aux=run.aux[keep],
                               dissipated=run.dissipated[keep])


def test_patch_slip_refuses_an_empty_half_window():
    """A run with no row in the window but its last (planted: the rows of the last two seconds dropped) cannot be
    measured. The old fallback read the last row for both halves: a slip of exactly 0, which passed the hold on
    the regularized run, which slides."""
    h = held("track_min", "reg", 8.0)
    dyn, con, t = settled("track_min")[0], Contact(h.tilted.model), h.run.t
    print("every row: slip %.4g m/s on %d shoes" % slope.patch_slip(con, dyn, h.run, h.tilted.normal))
    sparse = thinned(h.run, (t < t[-1] - 2.0 - 1e-9) | (np.arange(len(t)) == len(t) - 1))
    with pytest.raises(ValueError, match="no recorded row in"):
        slope.patch_slip(con, dyn, sparse, h.tilted.normal)


def test_energy_rise_is_energy_terms_per_row():
    """energy_rise, on energy.mechanics over all rows at once, against energy_terms row by row on the same tail."""
    h = held("track_min", "anchor", 8.0)
    dyn, tail = settled("track_min")[0], h.tail
    terms = np.array([energy_terms(dyn.model, q, qd)[:2] for q, qd in zip(tail.q, tail.qd)])
    E = terms.sum(axis=1) + sum(tail.col(c) for c in ("u_band", "u_ground", "u_anchor", "u_brake", "work"))
    rise, ke = slope.energy_rise(dyn.model, tail)
    print(f"{len(tail.t)} rows: rise {rise:.6g} J against {np.diff(E).max():.6g}, kinetic {ke:.6g} J against "
          f"{terms[:, 0].max():.6g}")
    assert len(tail.t) > 100
    assert abs(rise - np.diff(E).max()) < 1e-9 * np.abs(E).max() and abs(ke - terms[:, 0].max()) < 1e-9 * ke


def test_hold_planted_anchors_ignored():
    dyn, q, qd = settled("track_min")
    h = slope.hold(dyn, q, qd, 15.0, fric="anchor", T=8.0, module=planted(*ANCHORS_IGNORED))
    print("planted (anchors ignored):", h.gates[0].line())
    assert not h.gates[0].passed


def test_hold_planted_brake_off(monkeypatch):
    monkeypatch.setattr(slope, "sprocket_brakes", lambda con, q, period: ())
    dyn, q, qd = settled("track_min")
    h = slope.hold(dyn, q, qd, 15.0, fric="anchor", T=4.0)
    print("planted (no brake):", h.gates[0].line())
    assert not h.gates[0].passed


def test_release_track_demo():
    dyn, q, qd = settled("track_demo")
    r = slope.release(dyn, q, qd, 45.0)
    print(r.gates[0].line())
    assert r.gates[0].passed


def test_release_planted_mu_doubled():
    dyn, q, qd = settled("track_demo")
    r = slope.release(dyn, q, qd, 45.0, module=planted(*MU_DOUBLED))
    print("planted (μ doubled in the anchored law):", r.gates[0].line())
    assert not r.gates[0].passed


def test_release_refuses_a_holding_slope():
    dyn, q, qd = settled("track_min")
    with pytest.raises(ValueError, match="within the friction cone"):
        slope.release(dyn, q, qd, 30.0)


@pytest.mark.parametrize("name", ["track_min", "track_demo"])
def test_sinkage(name):
    dyn, q, qd = settled(name)
    s = slope.sinkage(dyn, q, qd)
    print(s.gates[0].line())
    assert s.gates[0].passed


def test_sinkage_planted_kn_doubled():
    dyn, q, qd = settled("track_min")
    s = slope.sinkage(dyn, q, qd, module=planted(*KN_DOUBLED))
    print("planted (the ground's force on twice its kn):", s.gates[0].line())
    assert not s.gates[0].passed
