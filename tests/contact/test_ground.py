"""The ground's law (docs/contact.md, "The ground"): where its wrenches land, the terrains' gradients, vertical
and horizontal sweeps, passivity and the friction cone. Friction's implicit bound and the anchored law:
test_friction.py. The C against an independent NumPy route: test_route.py."""
from __future__ import annotations

import math

import numpy as np
import pytest

from mechdyn.contact import Contact
from mechdyn.core.parse import parse

from .conftest import TRACKED, contact, planted
from .states import design_rows, dissipated, perturbed

N_STATES = 1000
DT = 2e-5

GRID = """ground
  terrain grid -3 -2 0.5 0.5
{rows}  kn 2e5
  kt 2e5
  mu 0.8
end
"""


def with_ground(name: str, ground: str) -> Contact:
    """Model `name` with its ground block replaced by `ground`."""
    path = f"models/{name}.mech"
    text = open(path).read()
    i = text.index("\nground\n")
    j = text.index("\nend\n", i)
    return Contact(parse(text[: i + 1] + ground + text[j + 5:], path, name))


def grid_ground(seed: int = 0, z0: float = 0.0, bump: float = 0.03) -> str:
    """A 13 × 9 grid, 0.5 m apart, of random bumps of about `bump` metres about z0."""
    rng = np.random.default_rng(seed)
    rows = "".join("  heights " + " ".join(f"{z0 + h:.4f}" for h in rng.normal(scale=bump, size=13)) + "\n"
                   for _ in range(9))
    return GRID.format(rows=rows)


def padded(con: Contact) -> np.ndarray:
    return np.unique(con.ground.pad_body)


@pytest.mark.parametrize("name", TRACKED)
def test_ground_wrench_lands_only_on_padded_bodies(name):
    con = contact(name)
    rng = np.random.default_rng(0)
    X0 = design_rows(con.model)
    others = np.setdiff1d(np.arange(con.model.nbody), padded(con))
    loaded = 0
    for _ in range(N_STATES):
        f = con.ground_fext(perturbed(X0, rng, drop=0.003), DT)
        assert not f[others].any()
        loaded += np.count_nonzero(np.abs(f[:, 5]) > 0)
    print(f"{name}: ground wrenches on padded shoes only; {loaded / N_STATES:.1f} shoes loaded per state")
    assert loaded > N_STATES


@pytest.mark.parametrize("terrain", ["plane", "sine", "grid"])
def test_terrain_gradient_matches_central_differences(terrain):
    ground = {"plane": "ground\n  terrain plane 0.2 -0.1 1 0.03\n  kn 2e5\n  mu 0.8\nend\n",
              "sine": "ground\n  terrain sine 0.02 0.05 1.3 2.1\n  kn 2e5\n  mu 0.8\nend\n",
              "grid": grid_ground()}[terrain]
    con = with_ground("track_min", ground)
    rng = np.random.default_rng(1)
    h = 1e-6
    worst = 0.0
    for x, y in rng.uniform([-2.5, -1.5], [2.5, 1.5], size=(500, 2)):
        z, hx, hy = con.terrain(x, y)
        fx = (con.terrain(x + h, y)[0] - con.terrain(x - h, y)[0]) / (2 * h)
        fy = (con.terrain(x, y + h)[0] - con.terrain(x, y - h)[0]) / (2 * h)
        worst = max(worst, abs(fx - hx), abs(fy - hy))
    print(f"{terrain}: terrain gradient vs central differences {worst:.1e}")
    assert worst < 1e-7


def test_grid_interpolates_its_nodes_and_extends_by_its_edges():
    con = with_ground("track_min", grid_ground())
    H, (x0, y0, dx, dy) = con.model.ground.heights, con.model.ground.params
    for j in range(H.shape[0]):
        for i in range(H.shape[1]):
            assert con.terrain(x0 + i * dx, y0 + j * dy)[0] == pytest.approx(H[j, i], abs=1e-15)
    assert con.terrain(x0 - 5, y0 + 2 * dy)[0] == pytest.approx(H[2, 0], abs=1e-15)
    assert con.terrain(x0 - 5, y0 + 2 * dy)[1] == 0.0


def corner_sweep(con: Contact, path, n: int) -> np.ndarray:
    """The ground's wrench on a shoe, level as on a lower run (its frame the world's: pad down, rollers up),
    whose origin and velocity follow path(s) for s in [0, 1]."""
    s0 = int(con.ground.pad_body[0])
    X = design_rows(con.model)
    X[s0, :9] = np.eye(3).ravel()
    out = []
    for s in np.linspace(0.0, 1.0, n):
        X[s0, 9:12], X[s0, 15:18] = path(s)
        out.append(con.ground_fext(X, DT)[s0])
    return np.array(out)


def sweep_ratio(con: Contact, path) -> tuple[float, float]:
    """The largest step of the wrench along a sweep at n and 10n points, and their ratio."""
    coarse, fine = (np.abs(np.diff(corner_sweep(con, path, n), axis=0)).max() for n in (400, 4000))
    return fine, coarse / fine


def test_vertical_sweep_through_the_surface():
    """A shoe moving down through the ground at 0.1 m/s, from 5 mm above to 20 mm in: the largest step of
    its wrench shrinks with the sweep's step (no jump at touch-down), and stays within its stiffness bound."""
    con = contact("m113")
    s0 = int(con.ground.pad_body[0])
    p0 = design_rows(con.model)[s0, 9:12]
    z_touch = -0.58 - float(con.model.tracks[0].pad[0])  # the pin height at which the pad touches m113's ground
    path = lambda s: (np.array([p0[0], p0[1], z_touch + 0.005 - 0.025 * s]), np.array([0.0, 0.0, -0.1]))  # noqa
    step, ratio = sweep_ratio(con, path)
    g = con.ground
    bound = 4 * (g.kn + g.cg / con.law.ramp_depth * 0.1) * 0.025 / 4000 * 3
    print(f"m113 vertical sweep: largest wrench step {step:.3g} (bound {bound:.3g}), {ratio:.1f}x smaller at 10x")
    assert step <= bound and ratio > 5


@pytest.mark.parametrize("terrain", ["sine", "grid"])
def test_horizontal_sweep_across_the_terrain(terrain):
    """A shoe sliding 4 m over the terrain at a constant 8 mm depth: its wrench changes smoothly (a normal that
    snapped at a cell edge would show as a step that does not shrink)."""
    con = with_ground("track_min", grid_ground() if terrain == "grid"
                      else "ground\n  terrain sine 0.0 0.02 0.9 1.7\n  kn 2e5\n  mu 0.8\nend\n")
    step, ratio = sweep_ratio(con, lambda s: shoe_over(con, -2.0 + 4.0 * s))
    print(f"{terrain}: horizontal sweep's largest wrench step {step:.3g}, {ratio:.1f}x smaller at 10x")
    assert ratio > 5


def shoe_over(con: Contact, x: float) -> tuple[np.ndarray, np.ndarray]:
    """The first padded shoe's origin 8 mm into the terrain below its pad's centre at (x, 0.1), moving +x."""
    t = con.model.tracks[0]
    cx = 0.5 * t.link_len
    h = con.terrain(x + cx, 0.1)[0]
    return np.array([x, 0.1, h - 0.008 - float(t.pad[0])]), np.array([0.3, 0.0, 0.0])


def test_a_bilinear_grid_is_caught_by_the_horizontal_sweep():
    old = "ground_cr(t, cx, dcx);\n        ground_cr(s, cy, dcy);"
    new = ("cx[0] = cx[3] = dcx[0] = dcx[3] = cy[0] = cy[3] = dcy[0] = dcy[3] = 0.0;\n"
           "        cx[1] = 1.0 - t, cx[2] = t, dcx[1] = -1.0, dcx[2] = 1.0;\n"
           "        cy[1] = 1.0 - s, cy[2] = s, dcy[1] = -1.0, dcy[2] = 1.0;")
    good = with_ground("track_min", grid_ground())
    bad = Contact(good.model, module=planted(old, new))
    assert sweep_ratio(bad, lambda s: shoe_over(bad, -2.0 + 4.0 * s))[1] < 3


@pytest.mark.parametrize("name", TRACKED)
@pytest.mark.parametrize("dt", [0.0, DT])
def test_ground_damper_and_friction_are_passive(name, dt):
    con = contact(name)
    rng = np.random.default_rng(2)
    X0 = design_rows(con.model)
    worst = max(dissipated(con.ground_fext, perturbed(X0, rng, drop=0.003), dt) for _ in range(N_STATES))
    print(f"{name} dt {dt:g}: ground's velocity-dependent power at most {worst:.1e} of its terms' magnitude")
    assert worst < 1e-12


def point_force(con: Contact, p, u, m: float, dt: float, anchor=None) -> np.ndarray:
    ffi = con.ffi
    F = ffi.new("double[3]")
    a = ffi.NULL if anchor is None else ffi.from_buffer("double[]", anchor)
    con.lib.md_ground_point(con._ground_c, ffi.from_buffer("double[]", np.asarray(p, float)),
                            ffi.from_buffer("double[]", np.asarray(u, float)), m, dt, a, F)
    return np.array(ffi.unpack(F, 3))


@pytest.mark.parametrize("terrain", ["plane", "sine"])
def test_ground_friction_cone_and_tangency(terrain):
    """The normal force computed here from the law's formula (f = max(0, kn·g + cg·ramp(g)·ġ) along
    m = (−hx, −hy, 1)), and what the C returns beyond it, the friction: in the tangent plane, inside the cone."""
    ground = ("ground\n  terrain plane 0.25 0.1 1 0.0\n  kn 2e5\n  mu 0.8\nend\n" if terrain == "plane"
              else "ground\n  terrain sine 0.0 0.05 1.1 1.9\n  kn 2e5\n  mu 0.8\nend\n")
    con = with_ground("track_min", ground)
    g, ramp = con.ground, con.law.ramp_depth
    rng = np.random.default_rng(3)
    worst_cone = worst_tan = 0.0
    for _ in range(2000):
        x, y = rng.uniform(-2, 2, 2)
        h, hx, hy = con.terrain(x, y)
        p, u = np.array([x, y, h - rng.uniform(1e-5, 0.02)]), rng.normal(scale=0.5, size=3)
        gap = h - p[2]  # as the C forms it
        m = np.array([-hx, -hy, 1.0])
        damper = g.cg * min(1.0, gap / ramp) * (hx * u[0] + hy * u[1] - u[2])
        f, terms = max(0.0, g.kn * gap + damper), g.kn * gap + abs(damper)  # terms: what f's round-off is of
        for dt in (0.0, DT):
            ft = point_force(con, p, u, 4.5, dt) - f * m
            n = m / np.linalg.norm(m)
            if f > 0:
                worst_cone = max(worst_cone, np.linalg.norm(ft) / (g.mu * f * np.linalg.norm(m)))
            worst_tan = max(worst_tan, abs(ft @ n) / (terms * np.linalg.norm(m)))
    print(f"{terrain}: ground friction at most {worst_cone:.6f} of the cone, its normal part {worst_tan:.1e} of "
          "the normal law's terms")
    assert worst_cone < 1.0 and worst_tan < 1e-12


def test_a_friction_with_a_normal_part_is_caught():
    con = with_ground("track_min", "ground\n  terrain plane 0.25 0.1 1 0.0\n  kn 2e5\n  mu 0.8\nend\n")
    bad = Contact(con.model, module=planted("for (int k3 = 0; k3 < 3; ++k3) ft[k3] = -k * ut[k3];",
                                            "for (int k3 = 0; k3 < 3; ++k3) ft[k3] = -k * u[k3];"))
    h, hx, hy = bad.terrain(0.3, 0.2)
    u = np.array([0.1, 0.2, -0.3])
    F = point_force(bad, [0.3, 0.2, h - 0.01], u, 4.5, 0.0)
    m = np.array([-hx, -hy, 1.0])
    f = bad.ground.kn * 0.01 + bad.ground.cg * (hx * u[0] + hy * u[1] - u[2])
    assert abs((F - f * m) @ m) / np.linalg.norm(m) > 1e-3 * f


def test_realized_damping_ratio():
    """The ground damper is sized on the model's mass over a quarter of its corners; print the ratio realized
    where the design pose, sunk by the static deflection, loads the lower runs."""
    for name in TRACKED:
        con = contact(name)
        sink = sum(b.mass for b in con.model.bodies) * 9.81 / (con.ncorner / 4 * con.ground.kn)
        X = design_rows(con.model)
        X[:, 11] -= sink
        zeta = con.ground_zeta(X)
        print(f"{name}: ground ζ {con.law.zeta_ground:g} designed, {zeta:.3f} realized with the vehicle sunk "
              f"{sink * 1e3:.1f} mm (cg {con.ground.cg:.0f} N·s/m)")
        assert 0 < zeta


@pytest.mark.parametrize("terrain", ["plane", "sine", "grid"])
def test_broadphase_is_bitwise_all_corners(terrain):
    """Skipping the shoes whose origin is out of reach gives the same bits as evaluating every corner, anchors
    included, at states where many shoes are near the surface."""
    ground = {"plane": None, "sine": "ground\n  terrain sine -0.56 0.02 0.9 1.7\n  kn 2e5\n  mu 0.8\nend\n",
              "grid": grid_ground(z0=-0.58, bump=0.01)}[terrain]  # rougher grids bound the slope past any skip
    fast = contact("m113") if ground is None else with_ground("m113", ground)
    slow = Contact(fast.model, broadphase=False)
    rng = np.random.default_rng(6)
    X0 = design_rows(fast.model)
    skipped = 0
    a_fast, a_slow = np.zeros((fast.ncorner, 4)), np.zeros((fast.ncorner, 4))
    for _ in range(200):
        X = perturbed(X0, rng, drop=0.003)
        assert fast.ground_fext(X, DT).tobytes() == slow.ground_fext(X, DT).tobytes()
        assert fast.ground_fext(X, DT, a_fast).tobytes() == slow.ground_fext(X, DT, a_slow).tobytes()
        assert a_fast.tobytes() == a_slow.tobytes() and fast.ground_energy(X) == slow.ground_energy(X)
        g = fast.ground
        gap = np.array([fast.terrain(*X[b, 9:11])[0] - X[b, 11] for b in g.pad_body])
        skipped += int(np.count_nonzero(gap < -g.reach))
    print(f"m113 on {terrain}: broadphase skips {skipped / 200:.0f} of {len(fast.ground.pad_body)} shoes per state, "
          f"reach {fast.ground.reach * 1e3:.1f} mm, bitwise equal to all corners")
    assert skipped > 0


def test_a_broadphase_too_short_is_caught():
    fast = contact("m113")
    short = Contact(fast.model)
    short._ground_c.reach = 0.01  # shorter than the pad's reach: touching corners get skipped
    slow = Contact(fast.model, broadphase=False)
    rng = np.random.default_rng(6)
    X0 = design_rows(fast.model)
    assert any(short.ground_fext(X, DT).tobytes() != slow.ground_fext(X, DT).tobytes()
               for X in (perturbed(X0, rng, drop=0.003) for _ in range(20)))
