"""The contact laws' derivatives (docs/contact.md, "Derivatives"): each producer's blocks against central differences
of its C and of its NumPy route (crosscheck/contact.py, crosscheck/tires.py), 1000 states per case along one random
tangent each (every body perturbed at once); one planted sign error per law; the layout, the capacity and the input
checks.

The step is chosen per quantity, 1e-4 of the laws' smallest scale of it: 1e-7 rad and 1e-7 m (the dampers' 1 mm ramp),
1e-6 rad/s and 1e-6 m/s (the friction's 1 cm/s regularization), where the central difference's truncation and
rounding are both near 1e-8 of the scale. Errors are |difference − blocks·δ| over the scale: the largest sum of the
magnitudes of a row's terms Σ_j |J_ij·δ_j|, moment rows and force rows apart.

A difference is not taken across a branch switch of the law (contact on or off, a ramp's or a smoothstep's end, a
clipped force, the cone, a curve's piece, a contact point skipped). A switch is found from fext alone, never from the
derivative under test: at half the stencil's step the three second differences of fext along the tangent agree to
O(step³) where fext is smooth, and a kink or a jump inside the stencil sets them apart by about its size. A stencil
is taken when they agree to KINK of the scale, so a switch left in it moves the difference by at most 2·KINK; else a
tenth of the step is tried, then a hundredth (a smooth but strongly curved stretch, as Fiala's at large slip angles at
walking pace, is taken there too). A state with a switch within a hundredth of a step of it is excluded: at most 1 %
of a case's states may be. The gate is GATE, 15 times the worst error measured and 5 times 2·KINK.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from crosscheck import contact as band_route
from crosscheck import tires as tire_route
from mechdyn.contact import Contact, ContactJacobian
from mechdyn.core.parse import load_model, parse

from .conftest import contact, planted
from .states import design_rows, perturbed
from .test_ground import grid_ground, with_ground
from .test_tire_numpy import random_states

N = 1000
STEP = np.repeat([1e-7, 1e-7, 1e-6, 1e-6], 3)  # δφ rad, δp m, δw rad/s, δv m/s
KINK = 1e-7
GATE = 1e-6
DT = 2e-5
ROAD = Path(__file__).resolve().parents[2] / "models" / "hmmwv_road.mech"
SINE = "terrain sine -0.56 0.02 0.9 1.7"  # m113's pads near it (tests/contact/test_ground.py's broadphase states)


def move(X: np.ndarray, d: np.ndarray) -> np.ndarray:
    """X moved along the tangent d (nbody, 12): R ↦ exp(δφ×)·R, p, w, v added."""
    n = len(X)
    Y = X.copy()
    turn = Rotation.from_rotvec(d[:, :3]).as_matrix()
    Y[:, :9] = np.einsum("nij,njk->nik", turn, X[:, :9].reshape(n, 3, 3)).reshape(n, 9)
    Y[:, 9:] += d[:, 3:]
    return Y


@dataclass(frozen=True)
class Case:
    """A producer on a model and its states; each callable takes the state's index for its carried state (dt, the
    anchors, the bristles)."""

    name: str
    states: list[np.ndarray]
    jacobian: Callable[[np.ndarray, int], ContactJacobian]  # (X, i): the blocks at state i's carried state
    c: Callable[[np.ndarray, int], np.ndarray]  # the C producer's fext
    route: Callable[[np.ndarray, int], np.ndarray]  # the NumPy route's fext


def band_case(name: str, module=None) -> Case:
    con = Contact(load_model(name), module=module)
    rng = np.random.default_rng(11)
    X0 = design_rows(con.model)
    states = [perturbed(X0, rng) for _ in range(N)]
    dt = [(0.0, DT)[i % 2] for i in range(N)]  # the explicit law and the implicit friction over a step
    return Case(f"{name} band", states, lambda X, i: con.band_jacobian(X, dt[i]), lambda X, i: con.band_fext(X, dt[i]),
                lambda X, i: band_route.band_fext(con.model, X, dt[i], con.law))


def corners(con: Contact, X: np.ndarray) -> np.ndarray:
    """(ncorner, 3) the pad corners at X, in the anchors' order."""
    g = con.ground
    R, p = X[g.pad_body, :9].reshape(-1, 3, 3), X[g.pad_body, 9:12]
    return (p[:, None, :] + np.einsum("sij,scj->sci", R, g.corner)).reshape(-1, 3)


def ground_con(terrain: str, module=None) -> Contact:
    ground = {"plane": None, "sine": f"ground\n  {SINE}\n  kn 2e5\n  mu 0.8\nend\n",
              "grid": grid_ground(z0=-0.58, bump=0.01)}[terrain]
    model = contact("m113").model if ground is None else with_ground("m113", ground).model
    return Contact(model, module=module)


def ground_states(con: Contact, anchored: bool) -> tuple[list[np.ndarray], list[np.ndarray | None]]:
    """N states of m113's pads sunk a little; anchored: each corner's anchor a few mm off it (so both stick and
    slide), one in five new (its flag 0: anchored where the corner is)."""
    rng = np.random.default_rng(12)
    X0 = design_rows(con.model)
    states = [perturbed(X0, rng, drop=0.003) for _ in range(N)]
    anchors: list[np.ndarray | None] = [None] * N
    for i, X in enumerate(states if anchored else ()):
        anchors[i] = np.zeros((con.ncorner, 4))
        anchors[i][:, :3] = corners(con, X) + rng.normal(scale=2e-3, size=(con.ncorner, 3))
        anchors[i][:, 3] = rng.random(con.ncorner) < 0.8
    return states, anchors


def ground_case(terrain: str, anchored: bool = False, module=None) -> Case:
    con = ground_con(terrain, module)
    states, anchors = ground_states(con, anchored)
    dt = [DT if anchored else (0.0, DT)[i % 2] for i in range(N)]

    def own(i: int) -> np.ndarray | None:
        return None if anchors[i] is None else anchors[i].copy()  # the producers update theirs in place

    return Case(f"m113 ground on {terrain}" + (", anchored" if anchored else ""), states,
                lambda X, i: con.ground_jacobian(X, dt[i], anchors[i]), lambda X, i: con.ground_fext(X, dt[i], own(i)),
                lambda X, i: band_route.ground_fext(con.model, X, dt[i], con.law, own(i)))


@cache
def road_text(law: str, points: str, terrain: str) -> str:
    text = ROAD.read_text()
    if law == "fiala":
        text = text.replace("HMMWV_TMeasyTire.json", "HMMWV_FialaTire.json")
    if points == "four":
        text = text.replace("Tire.json\nend", "Tire.json\n  contact four\nend")
    if terrain == "sine":
        text = text.replace("terrain plane 0 0 1 -0.4959", "terrain sine -0.4959 0.06 7 5")
    return text


def tire_case(law: str, points: str, terrain: str, module=None) -> Case:
    """hmmwv_road with its four tires of `law` and `points` on `terrain`, each wheel's row drawn as
    test_tire_numpy.py draws them (creeping, blending and rolling, slipping, cambered, in and out of contact)."""
    model = parse(road_text(law, points, terrain), str(ROAD), "hmmwv_road")
    con = Contact(model, module=module)
    tire = tire_route.read_tire(con.tires[0].data)
    wheels = [t.body for t in con.tires]
    rng = np.random.default_rng(13)
    X0 = design_rows(model)
    states, bristles = [], []
    for _ in range(N):
        rows, z = random_states(tire, model.ground, rng, len(wheels))
        X = X0.copy()
        X[wheels] = rows
        states.append(X)
        bristles.append(z)

    def route(X: np.ndarray, i: int) -> np.ndarray:
        out = np.zeros((model.nbody, 6))
        for k, t in enumerate(con.tires):
            out[t.body] += tire_route.tire_wrench(tire, points, model.ground, X[t.body], t.axis, bristles[i][k],
                                                  1e-3)[0]
        return out

    return Case(f"hmmwv_road {law} {points} on {terrain}", states,
                lambda X, i: con.tire_jacobian(X, 1e-3, bristles[i]),
                lambda X, i: con.tire_fext(X, 1e-3, bristles[i].copy()), route)


CASES = {  # id: (kind, arguments)
    **{f"band-{m}": ("band", m) for m in ("m113", "track_min", "track_demo")},
    "ground-plane": ("ground", ("plane", False)), "ground-sine": ("ground", ("sine", False)),
    "ground-grid": ("ground", ("grid", False)), "ground-sine-anchored": ("ground", ("sine", True)),
    **{f"tire-{law}-{points}-{terrain}": ("tire", (law, points, terrain)) for law, points, terrain in (
        ("tmeasy", "single", "plane"), ("tmeasy", "single", "sine"), ("tmeasy", "four", "sine"),
        ("fiala", "single", "sine"), ("fiala", "four", "sine"))},
}


def build(kind: str, args, module=None) -> Case:
    if kind == "band":
        return band_case(args, module)
    if kind == "ground":
        return ground_case(*args, module=module)
    return tire_case(*args, module=module)


def scale_of(jac: ContactJacobian, d: np.ndarray) -> np.ndarray:
    """(6,) the largest Σ_j |J_ij·δ_j| over the moment rows (3 ×) and over the force rows (3 ×)."""
    nbody = len(jac.fext)
    ad = np.abs(np.vstack([d, np.zeros((1, 12))]))
    terms = np.einsum("kij,kj->ki", np.abs(jac.blocks), np.concatenate([ad[jac.pairs[:, 0]], ad[jac.pairs[:, 1]]], 1))
    M = np.zeros((nbody + 1, 6))
    np.add.at(M, jac.pairs[:, 0], terms[:, :6])
    np.add.at(M, jac.pairs[:, 1], terms[:, 6:])
    return np.repeat([max(M[:, :3].max(), 1e-300), max(M[:, 3:].max(), 1e-300)], 3)


def smooth_difference(c: Callable[[np.ndarray], np.ndarray], X: np.ndarray, f0: np.ndarray, d: np.ndarray,
                      scale: np.ndarray) -> tuple[float, np.ndarray]:
    """The central difference of c along d over the largest of d, d/10, d/100 whose stencil is smooth (its second
    differences at half the step agree to KINK of the scale), and that fraction; (0, zeros) when none is."""
    for fraction in (1.0, 0.1, 0.01):
        g = {t: c(move(X, t * fraction * d)) for t in (-1.0, -0.5, 0.5, 1.0)}
        g[0.0] = f0
        second = np.stack([g[-1.0] - 2 * g[-0.5] + g[0.0], g[-0.5] - 2 * g[0.0] + g[0.5], g[0.0] - 2 * g[0.5] + g[1.0]])
        if ((second.max(0) - second.min(0)) / (fraction * scale)).max() <= KINK:
            return fraction, (g[1.0] - g[-1.0]) / (2 * fraction)
    return 0.0, np.zeros_like(f0)


@dataclass(frozen=True)
class Outcome:
    """Over a case's states: the worst scaled error against the C's differences and against the route's (nan when
    not taken), the blocks per state, and the fraction of the step each state was differenced over (0: excluded)."""

    c: float
    route: float
    blocks: float
    fraction: np.ndarray


def check(case: Case, n: int = N, route: bool = False, seed: int = 0) -> Outcome:
    rng = np.random.default_rng(seed)
    err_c, err_route, blocks, fractions = 0.0, float("nan") if not route else 0.0, 0, np.zeros(n)
    for i, X in enumerate(case.states[:n]):
        jac = case.jacobian(X, i)
        assert jac.fext.tobytes() == case.c(X, i).tobytes()
        d = rng.normal(size=(len(X), 12)) * STEP
        scale, jd = scale_of(jac, d), jac.dot(d)
        f, diff = smooth_difference(lambda Y: case.c(Y, i), X, jac.fext, d, scale)
        fractions[i], blocks = f, blocks + len(jac.pairs)
        if not f:
            continue
        err_c = max(err_c, float((np.abs(diff - jd) / scale).max()))
        if route:
            diff = (case.route(move(X, f * d), i) - case.route(move(X, -f * d), i)) / (2 * f)
            err_route = max(err_route, float((np.abs(diff - jd) / scale).max()))
    return Outcome(err_c, err_route, blocks / n, fractions)


@pytest.mark.parametrize("case", CASES)
def test_blocks_against_central_differences_of_the_c(case):
    c = build(*CASES[case])
    out = check(c)
    tenth, hundredth = np.count_nonzero(out.fraction == 0.1), np.count_nonzero(out.fraction == 0.01)
    excluded = np.count_nonzero(out.fraction == 0.0)
    print(f"{c.name}: {out.blocks:.1f} blocks per state; {tenth} states differenced over a tenth of the step, "
          f"{hundredth} over a hundredth, {excluded} excluded; worst {out.c:.1e} against the C's central "
          f"differences (gate {GATE:g})")
    assert excluded <= N // 100 and out.blocks >= 1
    assert out.c <= GATE


@pytest.mark.parametrize("case", CASES)
def test_blocks_against_central_differences_of_the_numpy_route(case):
    """The same states, tangents and fractions of the step."""
    c = build(*CASES[case])
    out = check(c, route=True)
    print(f"{c.name}: worst {out.route:.1e} against the NumPy route's central differences (gate {GATE:g})")
    assert out.route <= GATE


@pytest.mark.parametrize("kind,args,old,new", [
    ("band", "m113", "bj_scale(t, 6.0 - 12.0 * t.v)", "bj_scale(t, 12.0 * t.v - 6.0)"),  # the smoothstep's S″
    ("ground", ("sine", False), "H[1] = p[1] * kx * ky", "H[1] = -p[1] * kx * ky"),  # the sine's ∂²h/∂x∂y
    ("tire", ("tmeasy", "single", "sine"), "(1.0 - cos(2.0 * TIRE_PI * xx))", "(1.0 + cos(2.0 * TIRE_PI * xx))"),
], ids=["band", "ground", "tire"])
def test_a_planted_sign_error_is_caught(kind, args, old, new):
    """One derivative term's sign flipped (fext itself unchanged): the check above sees it on 100 states."""
    err = check(build(kind, args, planted(old, new)), n=100).c
    print(f"{kind}: a flipped {old!r} reads {err:.1e}")
    assert err > 1e3 * GATE


def test_anchored_states_both_stick_and_slide():
    """The anchored case's corners in contact take both branches of the cone, as the C's own anchor update shows."""
    con = ground_con("sine")
    stick = slide = new = 0
    for X, a in zip(*ground_states(con, anchored=True)):
        b = a.copy()
        con.ground_fext(X, DT, b)
        held, moved = (a[:, 3] == 1) & (b[:, 3] == 1), np.any(a[:, :3] != b[:, :3], axis=1)
        stick += int(np.count_nonzero(held & ~moved))
        slide += int(np.count_nonzero(held & moved))
        new += int(np.count_nonzero((a[:, 3] == 0) & (b[:, 3] == 1)))
    print(f"anchored corners in contact over {N} states: {stick} stick, {slide} slide, {new} new")
    assert min(stick, slide, new) > N


# ---- what the entries return, and what they refuse


def road(law: str = "tmeasy", points: str = "single", terrain: str = "plane") -> Contact:
    return Contact(parse(road_text(law, points, terrain), str(ROAD), "hmmwv_road"))


def test_the_entries_return_the_producers_fext_bit_for_bit_and_leave_the_carried_state():
    con = ground_con("sine")
    X = perturbed(design_rows(con.model), np.random.default_rng(5), drop=0.003)
    a = np.zeros((con.ncorner, 4))
    con.ground_fext(X, DT, a)  # anchored where the corners are now
    X = perturbed(X, np.random.default_rng(6), rot=0.0, pos=0.002)
    kept = a.copy()
    jac = con.fext_jacobian(X, DT, anchors=a)
    assert jac.fext.tobytes() == con.fext(X, DT, a.copy()).tobytes() and a.tobytes() == kept.tobytes()
    assert con.band_jacobian(X, DT).fext.tobytes() == con.band_fext(X, DT).tobytes()
    assert len(jac.pairs) == len(con.band_jacobian(X, DT).pairs) + len(con.ground_jacobian(X, DT, a).pairs)
    car = road()
    rows, z = random_states(tire_route.read_tire(car.tires[0].data), car.model.ground, np.random.default_rng(7), 4)
    X = design_rows(car.model)
    X[[t.body for t in car.tires]] = rows
    kept = z.copy()
    jac = car.fext_jacobian(X, 1e-3, tire_state=z)
    assert jac.fext.tobytes() == car.fext(X, 1e-3, state=z.copy()).tobytes() and z.tobytes() == kept.tobytes()


def test_layout_sparsity_and_the_dense_matrix():
    con = contact("m113")
    X = perturbed(design_rows(con.model), np.random.default_rng(8), drop=0.003)
    band, ground = con.band_jacobian(X, DT), con.ground_jacobian(X, DT)
    shoes = {s: b for b in con.bands for s in range(b.first_shoe, b.first_shoe + b.nshoe)}
    assert all(s in shoes and r in {x.body for x in shoes[s].rollers} for s, r in band.pairs)
    assert np.array_equal(band.blocks[:, 6:], -band.blocks[:, :6])  # the roller gets the shoe's negation
    assert set(ground.pairs[:, 0]) <= set(con.ground.pad_body) and (ground.pairs[:, 1] == -1).all()
    assert not ground.blocks[:, 6:].any() and not ground.blocks[:, :, 12:].any()
    jac = con.fext_jacobian(X, DT)
    d = np.random.default_rng(9).normal(size=(con.model.nbody, 12))
    J = jac.dense()
    assert J.shape == (6 * con.model.nbody, 12 * con.model.nbody)
    assert np.allclose(J @ d.ravel(), jac.dot(d).ravel(), rtol=0, atol=1e-12 * np.abs(J).max())
    touched = {int(b) for b in jac.pairs.ravel() if b >= 0}
    assert not J.reshape(con.model.nbody, 6, -1)[[i for i in range(con.model.nbody) if i not in touched]].any()
    car = road()
    X = design_rows(car.model)
    X[[t.body for t in car.tires], 11] -= 0.02  # every wheel 2 cm into the road
    assert sorted(car.tire_jacobian(X).pairs[:, 0]) == sorted(t.body for t in car.tires)
    elbow = Contact(load_model("elbow"))
    empty = elbow.fext_jacobian(design_rows(elbow.model))
    assert empty.pairs.shape == (0, 2) and empty.blocks.shape == (0, 12, 24) and not empty.fext.any()


def c_call(con: Contact, which: str, X: np.ndarray, cap: int, slots: int):
    """The C entry `which` with room for cap blocks in arrays of `slots` blocks filled with a sentinel: its return
    and the arrays."""
    ffi, lib = con.ffi, con.lib
    width = 2 if which == "band" else 1
    index, blocks = np.full((slots, width), -7, dtype=np.intc), np.full((slots, 6 * width, 12 * width), 7.0)
    fext, x = np.zeros((con.model.nbody, 6)), ffi.from_buffer("double[]", X)
    tail = (cap, ffi.from_buffer("int[]", index), ffi.from_buffer("double[]", blocks))
    if which == "band":
        torque = np.zeros(max(1, con.nroller))
        n = lib.md_band_fext_jac(con._bands_c, len(con.bands), x, DT, ffi.from_buffer("double[]", fext),
                                 ffi.from_buffer("double[]", torque), *tail)
    elif which == "ground":
        n = lib.md_ground_fext_jac(con._ground_c, x, DT, ffi.NULL, ffi.from_buffer("double[]", fext), *tail)
    else:
        n = lib.md_tire_fext_jac(con._tires_c, con.ntire, con._ground_c, con.mu_road, x, 1e-3, ffi.NULL,
                                 ffi.from_buffer("double[]", fext), *tail)
    return n, index, blocks


@pytest.mark.parametrize("which", ["band", "ground", "tire"])
def test_the_c_refuses_to_write_past_its_capacity(which):
    con = road() if which == "tire" else contact("m113")
    X = design_rows(con.model)
    if which == "tire":
        X[[t.body for t in con.tires], 11] -= 0.02
    else:
        X = perturbed(X, np.random.default_rng(10), drop=0.003)
    n, _, full = c_call(con, which, X, 1000, 1000)
    assert n > 1
    short, index, blocks = c_call(con, which, X, n - 1, n)
    assert short == -n and (index[n - 1] == -7).all() and (blocks[n - 1] == 7.0).all()
    assert np.array_equal(blocks[: n - 1], full[: n - 1])
    assert c_call(con, which, X, 0, 1)[0] == -n


def test_bad_input_is_refused_before_c():
    con = contact("m113")
    X = design_rows(con.model)
    for bad in (X[:-1], X.astype(complex), X[:, :17]):
        with pytest.raises(ValueError, match="X has"):
            con.fext_jacobian(bad)
    for dt in (-1e-3, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="dt is"):
            con.fext_jacobian(X, dt)
    with pytest.raises(ValueError, match="anchors has shape"):
        con.fext_jacobian(X, DT, anchors=np.zeros((con.ncorner - 1, 4)))
    with pytest.raises(ValueError, match="anchors has dtype"):
        con.fext_jacobian(X, DT, anchors=np.full((con.ncorner, 4), "a"))
    with pytest.raises(ValueError, match="needs dt > 0"):
        con.fext_jacobian(X, 0.0, anchors=np.zeros((con.ncorner, 4)))
    car = road()
    with pytest.raises(ValueError, match="tire_state has shape"):
        car.fext_jacobian(design_rows(car.model), tire_state=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="delta has shape"):
        con.fext_jacobian(X).dot(np.zeros((con.model.nbody, 6)))
