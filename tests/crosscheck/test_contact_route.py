"""The contact forces' second route (crosscheck/contact.py, NumPy from docs/contact.md) against itself and
against the product (mechdyn.contact, C): wrenches, axle torques and energies at random states near the
design pose, the elastic force against finite differences of the route's potentials, and planted bugs."""
from __future__ import annotations

import dataclasses
import inspect
import sys
import types

import numpy as np
import pytest

import crosscheck.contact as route
from mechdyn.contact import Contact, ContactLaw, native
from mechdyn.core.model import Ground
from mechdyn.core.parse import load_model

CONTACT_MODELS = ("m113", "track_min", "track_demo")
NO_CONTACT_MODELS = ("elbow", "hmmwv")
DT = 2e-5  # the stepping dt of issue 21
ROUND_OFF = 1e-12  # C against NumPy, relative to the largest row of the state
FD_TOL = 1e-6  # −∇U by central differences (h = 1e-6), relative


def _law() -> ContactLaw:
    return ContactLaw()


def _product(model) -> Contact:
    return Contact(model, law=_law())


def _rel_rows(a: np.ndarray, b: np.ndarray) -> float | None:
    """Largest row difference over the largest row (None when both are zero)."""
    scale = max(np.linalg.norm(a, axis=1).max(), np.linalg.norm(b, axis=1).max())
    return None if scale == 0.0 else float(np.linalg.norm(a - b, axis=1).max() / scale)


def _rel(a: np.ndarray, b: np.ndarray) -> float | None:
    scale = max(np.abs(a).max(initial=0.0), np.abs(b).max(initial=0.0))
    return None if scale == 0.0 else float(np.abs(a - b).max() / scale)


def compare_routes(model, con, mod: types.ModuleType, nstate: int, seed: int) -> dict[str, tuple[float, int]]:
    """Worst relative difference between the product `con` and the route module `mod` at `nstate` random
    states, per quantity, with the number of states where it was loaded."""
    law = _law()
    rng = np.random.default_rng(seed)
    worst: dict[str, list] = {}
    rim = max((r.radius for t in model.tracks for r in t.rollers), default=0.0)

    def note(key: str, e: float | None) -> None:
        w = worst.setdefault(key, [0.0, 0])
        if e is not None:
            w[0], w[1] = max(w[0], e), w[1] + 1

    for _ in range(nstate):
        X = mod.perturbed_rows(model, rng)
        for dt in (0.0, DT):
            note(f"band dt={dt:g}", _rel_rows(con.band_fext(X, dt=dt), mod.band_fext(model, X, dt, law)))
            note(f"ground dt={dt:g}", _rel_rows(con.ground_fext(X, dt=dt), mod.ground_fext(model, X, dt, law)))
            # a torque is a sum of arm × force over the wrap whose radial terms cancel, so its scale is the
            # largest band force of the state at the largest rim, not the (possibly small) net torque
            Fb = con.band_fext(X, dt=dt)
            t_con, t_mod = con.axle_torque(X, dt=dt), mod.axle_torque(model, X, dt, law)
            scale = max(np.abs(t_con).max(initial=0.0), rim * np.linalg.norm(Fb[:, 3:], axis=1).max())
            note(f"axle torque dt={dt:g}", None if scale == 0.0 else float(np.abs(t_con - t_mod).max(initial=0.0) / scale))
        total = mod.band_fext(model, X, DT, law) + mod.ground_fext(model, X, DT, law)
        note(f"fext (band + ground) dt={DT:g}", _rel_rows(con.fext(X, dt=DT), total))
        note("band energy", _rel(np.array([con.band_energy(X)]), np.array([mod.band_energy(model, X, law)])))
        note("ground energy", _rel(np.array([con.ground_energy(X)]), np.array([mod.ground_energy(model, X, law)])))
    return {k: (v[0], v[1]) for k, v in worst.items()}


def compare_anchored(model, con, mod: types.ModuleType, nstep: int, seed: int) -> tuple[float, float, int]:
    """Anchored friction along a walk of states (each a millimetre-scale step from the last, so corners come
    into contact, stick, slide and leave), each route keeping its own anchors: the worst relative ground-row
    difference, the worst anchor difference (m) and the number of loaded steps."""
    law = _law()
    rng = np.random.default_rng(seed)
    n = mod.ncorner(model, law)
    A_con, A_mod = np.zeros((n, 4)), np.zeros((n, 4))
    X = mod.perturbed_rows(model, rng)
    worst, worst_a, loaded = 0.0, 0.0, 0
    for _ in range(nstep):
        X[:, 9:12] += rng.normal(0.0, 1e-3, (model.nbody, 3))
        e = _rel_rows(con.ground_fext(X, dt=DT, anchors=A_con), mod.ground_fext(model, X, DT, law, A_mod))
        if e is not None:
            worst, loaded = max(worst, e), loaded + 1
        assert np.array_equal(A_con[:, 3], A_mod[:, 3]), "the two routes disagree on which corners are in contact"
        worst_a = max(worst_a, float(np.abs(A_con[:, :3] - A_mod[:, :3]).max(initial=0.0)))
    return worst, worst_a, loaded


def gradient_errors(model, fext_of, mod: types.ModuleType, which: str, nstate: int, seed: int) -> tuple[float, int]:
    """At zero velocities, the worst relative difference between a producer's fext rows (`fext_of(X)`) of the
    bodies that `which` loads and −∇U of the route's potential by central differences; force and moment
    (about the world origin) each relative to the largest of the state. Also the number of loaded rows."""
    P = mod.params(model, _law())
    bodies = {
        "pin": [r for b in P.bands for r in b.pins.body],  # the end rollers carry the pin law alone
        "face": [r for b in P.bands for r in b.faces.body],  # the road wheels the face law alone
        "ground": [] if P.ground is None else sorted(set(P.ground.shoe)),
    }[which]
    rng = np.random.default_rng(seed)
    worst, nrow = 0.0, 0
    for _ in range(nstate):
        X = mod.perturbed_rows(model, rng, moving=False)
        F = fext_of(X)
        loaded = [i for i in bodies if np.any(F[i] != 0.0)]
        if not loaded:
            continue
        fd = np.array([mod.fd_wrench(model, X, i, which, _law()) for i in loaded])
        rows = F[loaded]
        for part in (slice(0, 3), slice(3, 6)):
            scale = np.linalg.norm(rows[:, part], axis=1).max()
            worst = max(worst, float(np.abs(fd[:, part] - rows[:, part]).max() / scale))
        nrow += len(loaded)
    return worst, nrow


def planted(old: str, new: str) -> types.ModuleType:
    """A copy of crosscheck/contact.py with one text replaced (it must occur exactly once)."""
    src = inspect.getsource(route)
    assert src.count(old) == 1, f"the planted text occurs {src.count(old)} times"
    mod = types.ModuleType("crosscheck.contact_planted")
    sys.modules[mod.__name__] = mod  # dataclasses look their module up while the class body runs
    try:
        exec(compile(src.replace(old, new), "<planted contact route>", "exec"), mod.__dict__)
    finally:
        del sys.modules[mod.__name__]
    return mod


# ---------------------------------------------------------------- the terrain


def _grid(H: np.ndarray, x0=-1.0, y0=-2.0, dx=0.5, dy=0.25) -> Ground:
    """A grid terrain (params x0, y0, dx, dy; heights (ny, nx))."""
    return Ground(terrain="grid", params=np.array([x0, y0, dx, dy]), kn=1.0, kt=None, mu=1.0, line=0, heights=H)


def test_grid_reproduces_a_plane_and_its_nodes():
    """Catmull–Rom with linearly extrapolated ghosts reproduces a linear field exactly, edge cells included,
    interpolates the nodes, and outside the rectangle holds the edge value with a zero slope along the
    clamped axis."""
    nx, ny = 6, 5
    X, Y = np.meshgrid(-1.0 + 0.5 * np.arange(nx), -2.0 + 0.25 * np.arange(ny))
    g = _grid(0.3 + 0.2 * X - 0.7 * Y)
    rng = np.random.default_rng(0)
    x, y = rng.uniform(-1.0, 1.5, 500), rng.uniform(-2.0, -1.0, 500)
    h, hx, hy = route.terrain_height(g, x, y)
    err = max(np.abs(h - (0.3 + 0.2 * x - 0.7 * y)).max(), np.abs(hx - 0.2).max(), np.abs(hy + 0.7).max())
    print(f"grid of a plane: worst {err:.1e} over 500 points")
    assert err < 1e-13
    H = rng.normal(size=(ny, nx))
    hn, _, _ = route.terrain_height(_grid(H), X, Y)
    assert np.abs(hn - H).max() < 1e-13
    ho, hxo, hyo = route.terrain_height(_grid(H), np.array([-3.0, 0.2]), np.array([-1.3, -5.0]))
    hc, hxc, hyc = route.terrain_height(_grid(H), np.array([-1.0, 0.2]), np.array([-1.3, -2.0]))
    assert np.array_equal(ho, hc) and hxo[0] == 0.0 and hyo[1] == 0.0 and hxc[0] != 0.0 and hyc[1] != 0.0


def test_grid_slopes_are_the_derivative_and_continuous():
    """hx, hy match central differences of h, and across every cell edge the slope does not jump."""
    rng = np.random.default_rng(1)
    g = _grid(rng.normal(size=(7, 8)))
    x, y = rng.uniform(-0.9, 2.4, 400), rng.uniform(-1.9, -0.6, 400)
    h = 1e-6
    _, hx, hy = route.terrain_height(g, x, y)
    fx = (route.terrain_height(g, x + h, y)[0] - route.terrain_height(g, x - h, y)[0]) / (2 * h)
    fy = (route.terrain_height(g, x, y + h)[0] - route.terrain_height(g, x, y - h)[0]) / (2 * h)
    err = max(np.abs(hx - fx).max(), np.abs(hy - fy).max())
    edges = -1.0 + 0.5 * np.arange(1, 7)
    yy = rng.uniform(-1.9, -0.6, edges.size)
    jump = np.abs(route.terrain_height(g, edges + 1e-12, yy)[1] - route.terrain_height(g, edges - 1e-12, yy)[1]).max()
    print(f"grid slopes against central differences: worst {err:.1e}; slope jump across cell edges {jump:.1e}")
    assert err < 1e-7 and jump < 1e-9


def test_grid_checks_catch_a_planted_weight():
    """A wrong Catmull–Rom weight (c2 with the wrong sign of t²) breaks the plane's reproduction."""
    bad = planted("(t3 - t2) / 2], -1)", "(t3 + t2) / 2], -1)")
    X, Y = np.meshgrid(-1.0 + 0.5 * np.arange(6), -2.0 + 0.25 * np.arange(5))
    g = _grid(0.3 + 0.2 * X - 0.7 * Y)
    h, _, _ = bad.terrain_height(g, np.array([0.1]), np.array([-1.6]))
    assert abs(h[0] - (0.3 + 0.02 + 1.12)) > 1e-3


# ---------------------------------------------------------------- the route alone


@pytest.mark.parametrize("which", ["pin", "face", "ground"])
def test_route_force_is_minus_gradient_of_its_potential(which):
    """The route's own elastic forces (zero velocities) equal −∇ of its own potentials, law by law."""
    model = load_model("m113")
    fext = route.ground_fext if which == "ground" else route.band_fext
    worst, nrow = gradient_errors(model, lambda X: fext(model, X, 0.0, _law()), route, which, 12, seed=3)
    print(f"route {which}: fext against -grad U worst {worst:.1e} relative over {nrow} loaded rows")
    assert nrow > 20 and worst < FD_TOL


def test_route_gradient_check_catches_a_missing_gate_slope():
    """Dropping the tooth's radial part γ′·U0 leaves a force that is not −∇(γU0): the check sees it."""
    model = load_model("m113")
    bad = planted("f_n = f_n + gamma_d * U0\n", "f_n = f_n\n")
    worst, _ = gradient_errors(model, lambda X: bad.band_fext(model, X, 0.0, _law()), route, "pin", 12, seed=3)
    print(f"planted missing gamma' U0: worst {worst:.1e}")
    assert worst > 100 * FD_TOL


@pytest.mark.parametrize("name", NO_CONTACT_MODELS)
def test_route_is_zero_without_band_or_ground(name):
    model = load_model(name)
    rng = np.random.default_rng(0)
    for _ in range(5):
        X = route.perturbed_rows(model, rng)
        assert not route.band_fext(model, X, DT, _law()).any() and not route.ground_fext(model, X, DT, _law()).any()
        assert route.axle_torque(model, X, DT, _law()).size == 0
        assert route.band_energy(model, X, _law()) == 0.0 and route.ground_energy(model, X, _law()) == 0.0


def test_route_ground_lands_on_padded_shoes_only():
    """Every ground row is a padded shoe's, and each equals the sum of its four corners written out here."""
    model = load_model("m113")
    law = _law()
    P = route.params(model, law)
    shoes = set(P.ground.shoe.tolist())
    rng = np.random.default_rng(5)
    loaded = 0
    for _ in range(10):
        X = route.perturbed_rows(model, rng)
        G = route.ground_fext(model, X, DT, law)
        assert not G[[i for i in range(model.nbody) if i not in shoes]].any()
        loaded += int(np.count_nonzero(np.any(G != 0.0, axis=1)))
    assert loaded > 50


# ---------------------------------------------------------------- against the product (C)


@pytest.mark.parametrize("name", CONTACT_MODELS)
def test_c_matches_numpy_at_random_states(name):
    """Every body's band and ground wrench, the axle torques and the energies, C against NumPy at 1000 states,
    at dt = 0 and at the stepping dt."""
    model = load_model(name)
    con = _product(model)
    worst = compare_routes(model, con, route, 1000, seed=20)
    for key, (e, n) in worst.items():
        print(f"{name} {key} C vs NumPy: worst {e:.1e} relative over {n} loaded states")
    for key, (e, n) in worst.items():
        assert (n == 0) if ("ground" in key and model.ground is None) else (n > 100), (key, n)
        assert e < ROUND_OFF, (key, e)


def _terrain_variant(model, terrain: str):
    """The model with its ground replaced by a sine or a grid of the same law constants, near its plane."""
    g = model.ground
    if terrain == "sine":
        return dataclasses.replace(model, ground=dataclasses.replace(g, terrain="sine",
                                                                      params=np.array([-0.58, 0.02, 1.3, 0.9])))
    H = -0.58 + 0.02 * np.random.default_rng(7).normal(size=(14, 20))
    H.flags.writeable = False
    # x from -4 to 0.75: the rear pads (x < -4) and the front ones (x > 0.75) are on the clamped extension
    return dataclasses.replace(model, ground=dataclasses.replace(g, terrain="grid", params=np.array([-4.0, -1.6, 0.25, 0.25]),
                                                                  heights=H))


def _ground_routes_agree(model, con, label: str, trials: int, seed: int) -> None:
    """The ground's rows at dt 0 and DT and its energy, C against the route, to round-off over loaded states."""
    worst = compare_routes(model, con, route, trials, seed=seed)
    for key in ("ground dt=0", f"ground dt={DT:g}", "ground energy"):
        e, n = worst[key]
        print(f"{label}: {key} C vs NumPy: worst {e:.1e} relative over {n} loaded states")
        assert n > 20 and e < ROUND_OFF


@pytest.mark.parametrize("terrain", ["sine", "grid"])
def test_c_matches_numpy_on_sine_and_grid_terrain(terrain):
    model = _terrain_variant(load_model("m113"), terrain)
    con = _product(model)
    _ground_routes_agree(model, con, f"m113 on {terrain}", 200, seed=21)


@pytest.mark.parametrize("terrain", ["plane", "sine", "grid"])
def test_c_terrain_matches_numpy(terrain):
    """h, hx, hy of the product's terrain against the route's, inside the grid and on its clamped extension."""
    model = load_model("m113")
    if terrain != "plane":
        model = _terrain_variant(model, terrain)
    con = _product(model)
    rng = np.random.default_rng(8)
    x, y = rng.uniform(-5.5, 1.5, 300), rng.uniform(-2.0, 2.0, 300)
    ours = np.stack(route.terrain_height(model.ground, x, y), axis=-1)
    theirs = np.array([con.terrain(float(a), float(b)) for a, b in zip(x, y)])
    err = float(np.abs(ours - theirs).max())
    print(f"m113 {terrain} terrain C vs NumPy: worst {err:.1e} over 300 points (h in m, slopes)")
    assert err < 1e-14


def test_terrain_comparison_catches_a_planted_slope_weight():
    """A wrong derivative weight in the C's Catmull–Rom (dc3 with the sign of its t term flipped) is seen."""
    model = _terrain_variant(load_model("m113"), "grid")
    con = _planted_product(model, "dc[3] = 0.5 * (3.0 * t2 - 2.0 * t);", "dc[3] = 0.5 * (3.0 * t2 + 2.0 * t);")
    x, y = np.random.default_rng(8).uniform(-3.5, 0.5, (2, 50))
    ours = np.stack(route.terrain_height(model.ground, x, y), axis=-1)
    theirs = np.array([con.terrain(float(a), float(b)) for a, b in zip(x, y)])
    assert np.abs(ours - theirs).max() > 1e-3


def test_c_matches_numpy_anchored_friction():
    model = load_model("m113")
    con = _product(model)
    worst, worst_a, loaded = compare_anchored(model, con, route, 200, seed=22)
    print(f"m113 anchored ground C vs NumPy: worst {worst:.1e} relative, anchors within {worst_a:.1e} m, "
          f"over {loaded} loaded steps")
    assert loaded > 100 and worst < ROUND_OFF and worst_a < 1e-14


@pytest.mark.parametrize("which", ["pin", "face", "ground"])
@pytest.mark.parametrize("name", CONTACT_MODELS)
def test_c_force_is_minus_gradient_of_numpy_potential(name, which):
    model = load_model(name)
    con = _product(model)
    fext = con.ground_fext if which == "ground" else con.band_fext
    worst, nrow = gradient_errors(model, lambda X: fext(X, dt=0.0), route, which, 40, seed=0)
    print(f"{name} {which}: C fext against -grad U (NumPy potential) worst {worst:.1e} relative over {nrow} loaded rows")
    assert nrow > 20 and worst < FD_TOL


@pytest.mark.parametrize("name", NO_CONTACT_MODELS)
def test_c_is_zero_without_band_or_ground(name):
    model = load_model(name)
    con = _product(model)
    rng = np.random.default_rng(0)
    for _ in range(5):
        X = route.perturbed_rows(model, rng)
        assert not con.fext(X, dt=DT).any() and not con.band_fext(X).any() and not con.ground_fext(X).any()
        assert con.band_energy(X) == 0.0 and con.ground_energy(X) == 0.0


def test_c_ground_lands_on_padded_shoes_only():
    model = load_model("m113")
    con = _product(model)
    shoes = set(route.params(model, _law()).ground.shoe.tolist())
    assert con.ncorner == route.ncorner(model) == 4 * len(shoes)
    rng = np.random.default_rng(5)
    for _ in range(20):
        G = con.ground_fext(route.perturbed_rows(model, rng), dt=DT)
        assert not G[[i for i in range(model.nbody) if i not in shoes]].any()


# Each planted bug is put in a copy of the route; the comparison of that copy with the product's C must fail.
PLANTED = {
    "flipped sign (guide)": ("f_y = -gamma * (b.kg * y + b.cn * uy)", "f_y = gamma * (b.kg * y + b.cn * uy)", "band dt=0"),
    "dropped reaction (roller)": ('_add(out, b.pins.body[:, None], pin["x"], pin["F"], -1.0)\n', "\n", "band dt=0"),
    "missing gamma' U0": ("f_n = f_n + gamma_d * U0\n", "f_n = f_n\n", "band dt=0"),
    "face friction sign": ("-k * us[..., 0], -k * us[..., 1]", "k * us[..., 0], k * us[..., 1]", "band dt=0"),
    "wrong moment reference (axle torque)": ('arm = pin["x"] - p[r.body][:, None]', 'arm = pin["x"]', "axle torque dt=0"),
    "anchor slides the wrong way": ("(s - 1.0)[:, None] * f", "(1.0 - s)[:, None] * f", "anchored"),
}


@pytest.mark.parametrize("bug", list(PLANTED))
def test_comparison_catches_a_planted_bug(bug):
    old, new, key = PLANTED[bug]
    model = load_model("m113")
    con = _product(model)
    e = worst_gap(model, con, planted(old, new), key)
    print(f"planted in the route, {bug}: {key} C vs NumPy worst {e:.1e}")
    assert e > 1e3 * ROUND_OFF


def worst_gap(model, con, rt, key: str) -> float:
    """The worst C-vs-route gap of comparison `key` ("anchored" along a walk, or a key of compare_routes)."""
    if key == "anchored":
        return compare_anchored(model, con, rt, 30, seed=22)[0]
    return compare_routes(model, con, rt, 10, seed=20)[key][0]


# The same bugs planted in the product's C (mechdyn.contact.native: its source text, compiled by
# native.compile and handed to Contact(module=...)); the comparison of the clean route with that C must fail.
C_PLANTED = {
    "flipped sign (guide)": ("fy -= gamma * (band->kg * y + band->cn * u[1]);",
                             "fy += gamma * (band->kg * y + band->cn * u[1]);", "band dt=0"),
    "dropped reaction (roller)": ("fr[k] -= m[k], fr[3 + k] -= F[k];", "(void)fr;", "band dt=0"),
    "missing gamma' U0": ("fn += dgamma * U0;", ";", "band dt=0"),
    "face friction sign": ("double fric[3] = {k * slip[0], k * slip[1], 0.0};",
                           "double fric[3] = {-k * slip[0], -k * slip[1], 0.0};", "band dt=0"),
    "wrong moment reference (axle torque)": ("*torque = -(d[2] * f[0] - d[0] * f[2]);",
                                             "*torque = -(ps[2] * f[0] - ps[0] * f[2]);", "axle torque dt=0"),
    "wrong moment reference (ground)": ("row[0] += p[1] * F[2] - p[2] * F[1];", "row[0] += r[1] * F[2] - r[2] * F[1];",
                                        "ground dt=0"),
    "flipped sign (ground friction)": ("ft[k3] = -k * ut[k3];", "ft[k3] = k * ut[k3];", "ground dt=0"),
    "anchor slides the wrong way": ("anchor[k] += drag * f[k];", "anchor[k] -= drag * f[k];", "anchored"),
    "guide potential dropped": ("U += 0.5 * gamma * band->kg * y * y;", ";", "band energy"),
}


def _planted_product(model, old: str, new: str):
    """The product's Contact on a copy of its C with one text replaced (it must occur exactly once)."""
    src = native.source()
    assert src.count(old) == 1, f"the planted text occurs {src.count(old)} times in the contact C"
    return Contact(model, law=_law(), module=native.compile(src.replace(old, new)))


@pytest.mark.parametrize("bug", list(C_PLANTED))
def test_comparison_catches_a_bug_planted_in_the_c(bug):
    old, new, key = C_PLANTED[bug]
    model = load_model("m113")
    e = worst_gap(model, _planted_product(model, old, new), route, key)
    print(f"planted in the C, {bug}: {key} C vs NumPy worst {e:.1e}")
    assert e > 1e3 * ROUND_OFF


def test_gradient_check_catches_a_missing_gate_slope_in_the_c():
    """The C without the tooth's γ′·U0 fails the −∇U check of the pin law."""
    model = load_model("m113")
    old, new, _ = C_PLANTED["missing gamma' U0"]
    con = _planted_product(model, old, new)
    worst, _ = gradient_errors(model, lambda X: con.band_fext(X, dt=0.0), route, "pin", 12, seed=3)
    print(f"planted in the C, missing gamma' U0: -grad U worst {worst:.1e}")
    assert worst > 100 * FD_TOL


def test_gradient_check_catches_a_missing_weight_slope_in_the_c():
    """The face law without its weight's gradient −½·kn·δ²·w′ is not conservative: the face check sees it."""
    model = load_model("m113")
    con = _planted_product(model, "{-0.5 * band->kn * delta * delta * dw, 0.0, fn}", "{0.0, 0.0, fn}")
    worst, _ = gradient_errors(model, lambda X: con.band_fext(X, dt=0.0), route, "face", 12, seed=3)
    print(f"planted in the C, face weight slope missing: -grad U worst {worst:.1e}")
    assert worst > 100 * FD_TOL


def test_c_ground_force_is_minus_gradient_on_a_sine():
    """On sloped terrain the unnormalized m = (−hx, −hy, 1) is what makes the ground force −∇U; a normalized
    normal (planted) is not."""
    model = _terrain_variant(load_model("m113"), "sine")
    worst, nrow = gradient_errors(model, lambda X: _product(model).ground_fext(X, dt=0.0), route, "ground", 20, seed=4)
    print(f"m113 on sine ground: C fext against -grad U worst {worst:.1e} relative over {nrow} loaded rows")
    assert nrow > 100 and worst < FD_TOL
    bad = _planted_product(model, "F[k] = f * mvec[k] + ft[k];", "F[k] = f * n[k] + ft[k];")
    worst_bad, _ = gradient_errors(model, lambda X: bad.ground_fext(X, dt=0.0), route, "ground", 20, seed=4)
    print(f"planted in the C, normalized ground normal: -grad U worst {worst_bad:.1e}")
    assert worst_bad > 100 * FD_TOL


def test_padded_check_catches_a_wrench_on_the_wrong_body():
    """Ground wrenches written to the row of the pad's count instead of its body (planted in the C) land on
    bodies without a pad."""
    model = load_model("m113")
    con = _planted_product(model, "double *row = fext + 6 * g->pad_body[i]", "double *row = fext + 6 * i")
    shoes = set(route.params(model, _law()).ground.shoe.tolist())
    others = [i for i in range(model.nbody) if i not in shoes]
    rng = np.random.default_rng(5)
    assert any(con.ground_fext(route.perturbed_rows(model, rng), dt=DT)[others].any() for _ in range(20))


def _tilted(model, slope: float = 0.003):
    """The model on its plane tilted about y through (x, z) = (−1.6, −0.58), uphill towards −x: a constant slope
    hx = −slope, whose normal the C computes once a call (ground.c, ground_share_call)."""
    n = np.array([slope, 0.0, 1.0]) / np.hypot(slope, 1.0)
    d = -0.58 * n[2] - 1.6 * n[0]  # h = (d − nx·x)/nz = −0.58 at x = −1.6
    return dataclasses.replace(model, ground=dataclasses.replace(model.ground, params=np.array([*n, d])))


def test_c_matches_numpy_on_a_tilted_plane():
    """On a sloped plane the C's shared normal (once a call) carries the ground rows at dt 0 and DT, the energy and
    the anchored walk's normals; the route agrees to round-off, and the same C with the shared normal's slope
    flipped (planted; m113's flat plane could not tell) does not."""
    model = _tilted(load_model("m113"))
    con = _product(model)
    _ground_routes_agree(model, con, "m113 on a tilted plane", 100, seed=23)
    e, e_a, loaded = compare_anchored(model, con, route, 100, seed=24)
    print(f"m113 on a tilted plane, anchored: worst {e:.1e} relative, anchors within {e_a:.1e} m over {loaded} "
          "loaded steps")
    assert loaded > 50 and e < ROUND_OFF and e_a < 1e-14
    bad = _planted_product(model, "double h[3] = {0.0, g->p[1], g->p[2]};", "double h[3] = {0.0, -g->p[1], g->p[2]};")
    for key in (f"ground dt={DT:g}", "anchored"):
        e_bad = worst_gap(model, bad, route, key)
        print(f"planted in the C, the plane's shared normal with its slope flipped: {key} worst {e_bad:.1e}")
        assert e_bad > 1e3 * ROUND_OFF
