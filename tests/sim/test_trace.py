"""Contact traces (mechdyn/sim/trace.py) and their plots (mechdyn/sim/plot.py): a short track_min run traced, read
back column by column against the run, its preamble against the model, and the side view drawn and refused."""
import dataclasses
import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from mechdyn.cli import parser as mechdyn_main
from mechdyn.cliutil import run as run_cli
from mechdyn.core.model import Ground
from mechdyn.dynamics import Dynamics
from mechdyn.core.parse import load_model
from mechdyn.sim.contact import AUX, ContactSim, accuracy_step
from mechdyn.sim.energy import energy_terms
from mechdyn.sim.plot import PlotRequestError, _pads, _terrain_line, plot_trace
from mechdyn.sim.run import simulate
from mechdyn.sim.trace import Trace, read_trace, trace_bands, trace_stride, write_contact_trace, write_trace

T = 0.06  # s: the ground's ramp (0.02 s) and the band's first loading, a few hundred steps


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """track_min from q0 at rest for T at the accuracy step, traced: (sim, step, run, trace path, Trace)."""
    dyn = Dynamics(load_model("track_min"))
    sim = ContactSim(dyn)
    step = accuracy_step(sim.contact)
    r = sim.run(dyn.model.q0(), np.zeros(dyn.nv), T, step.dt, stride=3)
    path = tmp_path_factory.mktemp("trace") / "track_min.csv"
    write_contact_trace(path, sim, r, step, {"note": "test"})
    return sim, step, r, path, read_trace(path)


def test_every_column_is_what_the_run_holds(traced):
    """The CSV's text reads back to the run's own doubles: q, the recorded metrics, the world positions, and the
    derived columns against routes of their own (the quaternion, the numeric kinematics)."""
    sim, _, r, _, tr = traced
    dyn, model, df = sim.dyn, sim.dyn.model, tr.data
    hull = model.bodies[0]
    assert hull.name == "hull" and tr.meta["hull"] == "hull"
    names = [b.name for b in model.bodies]  # the hull, the 3 rollers, the 16 shoes: every body of track_min
    expected = ["t", *(f"q:hull.{c}" for c in ("qw", "qx", "qy", "qz", "x", "y", "z")), "roll", "pitch", "yaw",
                *AUX, "kinetic", "potential", "energy", *(f"{c}:{n}" for n in names for c in "xyz")]
    assert list(df.columns) == expected
    assert len(df) == len(r.t) > 60
    np.testing.assert_array_equal(df["t"], r.t)
    for k, c in enumerate(("qw", "qx", "qy", "qz", "x", "y", "z")):
        np.testing.assert_array_equal(df[f"q:hull.{c}"], r.q[:, k])
    for name in AUX:
        np.testing.assert_array_equal(df[name], r.col(name))
    X = np.array([dyn.bodies(q, qd) for q, qd in zip(r.q, r.qd)])  # the generated kinematics: the other route
    for i, n in enumerate(names):
        for k, c in enumerate("xyz"):
            np.testing.assert_allclose(df[f"{c}:{n}"], X[:, i, 9 + k], rtol=0, atol=1e-12)
    # roll, pitch, yaw from the quaternion in q, not from the generated kinematics the writer read
    rpy = Rotation.from_quat(r.q[:, [1, 2, 3, 0]]).as_euler("ZYX", degrees=True)[:, ::-1]
    np.testing.assert_allclose(df[["roll", "pitch", "yaw"]].to_numpy(), rpy, atol=1e-9)
    assert np.ptp(df["pitch"]) > 1e-4  # the run pitches the hull: the check above is not of zeros
    terms = np.array([energy_terms(model, q, qd)[:2] for q, qd in zip(r.q, r.qd)])
    # the trace's vectorized energy (energy.mechanics) against energy_terms' per-state route
    np.testing.assert_allclose(df["kinetic"], terms[:, 0], rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(df["potential"], terms[:, 1], rtol=1e-12, atol=1e-9)
    stored = sum(r.col(c) for c in ("u_band", "u_ground", "u_anchor", "u_brake"))
    np.testing.assert_allclose(df["energy"], terms.sum(axis=1) + stored, rtol=1e-12, atol=1e-9)
    assert df["fz"].iloc[-1] > 0 and df["corners"].iloc[-1] > 0  # the ground carries load by the end


def test_the_preamble_is_the_model(traced):
    sim, step, r, _, tr = traced
    model, m = sim.dyn.model, tr.meta
    assert tr.kind == "contact" and m["model"] == "track_min" and m["note"] == "test"
    mass = sum(b.mass for b in model.bodies)
    assert float(m["mass"]) == mass and math.isclose(mass, 200 + 27.68 + 25.76 + 35.56 + 16 * 18.02, rel_tol=1e-14)
    assert float(m["weight"]) == mass * 9.81
    assert [float(g) for g in m["gravity"].split()] == list(model.gravity)
    assert float(m["dt"]) == r.dt == step.dt and m["scheme"] == "verlet" and m["stride"] == "3"
    assert m["samples"] == "90" and m["step"] == step.describe()
    assert m["terrain"] == "plane" and [float(v) for v in m["terrain.params"].split()] == [0, 0, 1, 0.0319]
    (band,) = trace_bands(tr)
    track = model.tracks[0]
    assert band.name == "band" and band.shoes == tuple(f"band.s{k:02d}" for k in range(16))
    assert [(x.name, x.radius, x.kind) for x in band.rollers] == [("sprocket", 0.172, "drive"), ("idler", 0.172, "end"),
                                                                  ("wheel", 0.2, "face")]
    assert band.link_len == track.link_len and band.pad == (-0.03, 0.11, 0.19) and band.thickness == 0.03
    assert band.profile is None and band.pin_axis == (0.0, -1.0, 0.0)


def test_the_pads_drawn_are_where_the_shoe_frames_put_them(traced):
    """The side view's pads, found from the pins alone, against each shoe's frame: its origin plus R·(L/2, 0, pad z).
    A planted error, the pin axis flipped (the pads drawn inside the loop), is caught."""
    sim, _, r, _, tr = traced
    (band,) = trace_bands(tr)
    X = sim.dyn.bodies(r.q[-1], r.qd[-1])
    shoes = range(sim.contact.bands[0].first_shoe, sim.contact.bands[0].first_shoe + 16)
    truth = np.array([X[s, 9:12] + X[s, :9].reshape(3, 3) @ np.array([band.link_len / 2, 0, band.pad[0]])
                      for s in shoes])[:, [0, 2]]

    def centres(b):
        pins = np.array([[tr.data[f"x:{s}"].iloc[-1], tr.data[f"z:{s}"].iloc[-1]] for s in b.shoes])
        x, z = _pads(b, np.vstack([pins, pins[:1]]))
        return np.column_stack([x, z]).reshape(-1, 3, 2)[:, :2].mean(axis=1)

    err = np.abs(centres(band) - truth).max(axis=1)
    print(f"pad centres off the shoe frames by {err[:-1].max():.2g} m, the closing shoe's by {err[-1]:.2g} m")
    assert err[:-1].max() < 1e-12
    # the last shoe's chord closes the loop through the point-on-line joint, a little off the shoe's own x axis
    assert err[-1] < 1e-5
    flipped = dataclasses.replace(band, pin_axis=(0.0, 1.0, 0.0))
    assert np.abs(centres(flipped) - truth).max() > 0.05


def test_the_terrain_line_is_the_contact_terrain(traced):
    """A plane tilted 15° about y (a slope run's terrain), traced and drawn: the side view's line is the height the
    contact reads; and a grid terrain is traced as a profile sampled under the band."""
    sim, step, r, path, _ = traced
    dyn, model = sim.dyn, sim.dyn.model
    th = math.radians(15)
    slope = dataclasses.replace(model, ground=dataclasses.replace(model.ground, params=np.array(
        [-math.sin(th), 0.0, math.cos(th), 0.0319])))
    xs = -2.0 + 0.25 * np.arange(17)  # a grid of waves along x, level along y (the band is at y = 0)
    heights = np.tile(0.0319 - 0.015 * (1 + np.sin(math.pi * xs)), (5, 1))
    wavy = dataclasses.replace(model, ground=Ground("grid", np.array([-2.0, -1.0, 0.25, 0.5]), 2e5, 2e5, 0.8, 0,
                                                    heights))
    for m, kind in ((slope, "plane"), (wavy, "grid")):
        s = ContactSim(dyn, model=m)
        run = s.run(model.q0(), np.zeros(dyn.nv), 10 * step.dt, step.dt)
        out = path.with_name(f"{kind}.csv")
        write_contact_trace(out, s, run, step)
        tr = read_trace(out)
        (band,) = trace_bands(tr)
        assert tr.meta["terrain"] == kind
        x = np.linspace(-1.5, 1.5, 31)
        if kind == "grid":
            assert band.profile is not None and len(band.profile[0]) == 400
            x = np.linspace(band.profile[0][0], band.profile[0][-1], 31)
        got = _terrain_line(tr, band, x, 0.0)
        want = np.array([s.contact.terrain(v, 0.0)[0] for v in x])
        np.testing.assert_allclose(got, want, atol=1e-12 if kind == "plane" else 1e-5)
        assert np.ptp(want) > 0.01  # neither line is flat
        files = plot_trace(tr, out.parent / kind)
        assert all(f.stat().st_size > 10_000 for f in files)


def test_the_side_view_and_histories_draw(traced, tmp_path):
    _, _, r, _, tr = traced
    files = plot_trace(tr, tmp_path, at=[0.0, T / 2, T])
    assert [f.name for f in files] == ["track_min_history.png", "track_min_side_band.png"]
    for f in files:
        assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f.stat().st_size > 20_000


def test_a_trace_without_a_shoe_column_is_refused_by_name(traced, tmp_path):
    """A planted error: the trace lost one shoe's columns. The plot names the first missing one, before drawing."""
    _, _, _, _, tr = traced
    cut = Trace(tr.meta, tr.data.drop(columns=["x:band.s07", "y:band.s07", "z:band.s07"]))
    with pytest.raises(ValueError, match=r"no column 'x:band.s07' \(and 2 more\)"):
        plot_trace(cut, tmp_path / "cut")
    assert not (tmp_path / "cut").exists()


def test_requests_that_do_not_fit_the_trace(traced, tmp_path):
    _, _, _, _, tr = traced
    with pytest.raises(PlotRequestError, match="no band 'left'; expected one of band"):
        plot_trace(tr, tmp_path, band="left")
    with pytest.raises(PlotRequestError, match=r"--at 5 is outside the trace's times 0 \.\. "):
        plot_trace(tr, tmp_path, at=[0.0, 5.0])


def test_read_trace_reads_both_kinds(traced, tmp_path):
    dyn = Dynamics(load_model("elbow"))
    tree = simulate(dyn, dyn.model.q0(), np.zeros(dyn.nv), 0.01, 1e-3)
    path = tmp_path / "tree.csv"
    write_trace(path, dyn.model, tree.t, tree.q, tree.qd, np.zeros(len(tree.t)), tree.dissipated, None, {})
    assert read_trace(path).kind == "tree" and traced[4].kind == "contact"
    with pytest.raises(PlotRequestError, match="--at and --band draw a contact run's side view"):
        plot_trace(read_trace(path), tmp_path, at=[0.0])


def test_the_stride_gives_about_2000_rows():
    assert trace_stride(21345) == 10 and trace_stride(100) == 1 and 2000 <= 21345 // trace_stride(21345) + 1 < 2200


def test_plot_command(traced, tmp_path, capsys):
    _, _, _, path, _ = traced
    assert run_cli(mechdyn_main, ["plot", str(path), "--at", "0,0.03", "--band", "band", "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out.split()
    assert out == [str(tmp_path / "track_min_history.png"), str(tmp_path / "track_min_side_band.png")]
    assert run_cli(mechdyn_main, ["plot", str(path), "--band", "left", "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}: the trace has no band 'left'") and "not a mechdyn trace" not in err
    assert run_cli(mechdyn_main, ["plot", str(path), "--at", "0,x"]) == 2
    assert "expected times in s separated by commas" in capsys.readouterr().err


def test_a_damaged_preamble_is_an_input_error(traced, tmp_path, capsys):
    """A planted error: the trace lost its band's pad line, or a roller's radius is text. The plot says which
    line, exit 2, nothing drawn."""
    _, _, _, path, _ = traced
    text = path.read_text()
    for bad, needle in ((r"# band.band.pad: [^\n]*\n", "no 'band.band.pad' line"),
                        (r"sprocket 0.172 drive", "has 'sprocket x drive'")):
        damaged = tmp_path / "damaged.csv"
        damaged.write_text(re.sub(bad, "" if "pad" in bad else "sprocket x drive", text, count=1))
        assert damaged.read_text() != text
        assert run_cli(mechdyn_main, ["plot", str(damaged), "-o", str(tmp_path / "png")]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"{damaged}: not a mechdyn trace: ") and needle in err, err
        assert not (tmp_path / "png").exists()


def test_a_tilted_run_is_drawn_on_its_slope(traced, tmp_path):
    """track_min at q0 tilted 15° about y with its plane (slope.tilt), traced: the hull pitches 15°, the preamble
    holds the rotated plane, and in the side view the pads' ground faces sit on the terrain line (the design
    pose's lowest corner is 0.03 mm above the level ground; rotated rigidly, the gap is the same, measured
    along the normal). A planted error, the trace given the level plane, puts the pads off the line drawn."""
    from mechdyn.sim.slope import tilt

    sim, step, _, _, _ = traced
    dyn, model = sim.dyn, sim.dyn.model
    tilted = tilt(model, model.q0(), np.zeros(dyn.nv), 15.0)
    s = ContactSim(dyn, model=tilted.model)
    r = s.run(tilted.q, tilted.qd, 10 * step.dt, step.dt)
    path = tmp_path / "tilted.csv"
    write_contact_trace(path, s, r, step)
    tr = read_trace(path)
    assert [float(v) for v in tr.meta["terrain.params"].split()] == list(tilted.model.ground.params)
    assert abs(tr.data["pitch"].iloc[0] - 15.0) < 1e-12 and abs(tr.data["roll"].iloc[0]) < 1e-12
    (band,) = trace_bands(tr)

    def lowest_gap(t: Trace) -> float:
        pins = np.array([[t.data[f"x:{n}"].iloc[0], t.data[f"z:{n}"].iloc[0]] for n in band.shoes])
        x, z = _pads(band, np.vstack([pins, pins[:1]]))
        ok = np.isfinite(x)
        return float(np.min((z[ok] - _terrain_line(t, band, x[ok], 0.0)) * math.cos(math.radians(15))))

    assert 0.0 <= lowest_gap(tr) < 1e-4
    level = dict(tr.meta, **{"terrain.params": " ".join(map(str, model.ground.params))})
    planted = lowest_gap(Trace(level, tr.data))
    assert not 0.0 <= planted < 1e-4, planted  # 11 mm into the level plane: the vehicle drawn off its terrain
    files = plot_trace(tr, tmp_path / "png", at=[0.0])
    assert all(f.stat().st_size > 10_000 for f in files)


def test_the_text_reads_back_to_the_same_doubles(tmp_path, monkeypatch):
    """Arrow's text (the shortest that reads back) against the old route, pandas' %.17g: 20000 rows of random bit
    patterns and the special values read back bit for bit, on one thread and on four row blocks."""
    import pandas as pd

    import mechdyn.blocks

    rng = np.random.default_rng(5)
    bits = rng.integers(0, 2**64, size=(20000, 4), dtype=np.uint64, endpoint=False)
    A = bits.view(np.float64).copy()
    A[:8, 0] = [np.nan, np.inf, -np.inf, -0.0, 0.0, 5e-324, np.finfo(float).max, 0.1]
    model = load_model("elbow")
    cols = {"t": A[:, 0], "energy": A[:, 1], "dissipated": A[:, 2], "closure": A[:, 3]}
    old = tmp_path / "old.csv"
    old.write_text(pd.DataFrame(cols).to_csv(index=False, float_format="%.17g"))
    for cores in ({0}, {0, 1, 2, 3}):
        monkeypatch.setattr(mechdyn.blocks.os, "sched_getaffinity", lambda pid, c=cores: c)
        path = tmp_path / f"new{len(cores)}.csv"
        Q, QD = np.zeros((len(A), model.nq)), np.zeros((len(A), model.nv))
        write_trace(path, model, cols["t"], Q, QD, cols["energy"], cols["dissipated"], cols["closure"], {})
        got = read_trace(path).data
        for k, name in enumerate(cols):
            x, y, nan = got[name].to_numpy(), A[:, k], np.isnan(A[:, k])  # a NaN's payload is not kept
            assert np.array_equal(np.isnan(x), nan) and np.array_equal(x[~nan].view(np.uint64), y[~nan].view(np.uint64))
            assert np.array_equal(x, pd.read_csv(old)[name], equal_nan=True), name
        assert np.signbit(got["t"][3])  # −0 kept
