"""`mechdyn modes`: the table is modes()'s, the plot has one panel a mode, and failures are one line."""
from __future__ import annotations

import re
import numpy as np
import pytest

import mechdyn
from mechdyn.cli import parser as mechdyn_main
from mechdyn.cliutil import EXIT_FAIL, EXIT_INPUT, EXIT_PASS, run
from mechdyn.linear import EquilibriumError, equilibrium, linearize, modes
from mechdyn.linear import plot
from mechdyn.linear.plot import plot_modes


def table(out: str) -> list[list[str]]:
    lines = out.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.split()[:2] == ["mode", "f"])
    return [ln.split() for ln in lines[head + 1:] if re.match(r"\s*\d+\s", ln)]


def test_springpend_table_is_the_api_modes(capsys):
    assert run(mechdyn_main, ["modes", "springpend"]) == EXIT_PASS
    out = capsys.readouterr().out
    dyn = mechdyn.load("springpend")
    md = modes(linearize(dyn, equilibrium(dyn, dyn.model.q0()), np.zeros(dyn.nv)))
    rows = table(out)
    assert [float(r[1]) for r in rows] == [float(f"{f:.6g}") for f in md.frequency]
    assert [float(r[2]) for r in rows] == [float(f"{z:.4g}") for z in md.damping]
    residual = float(re.search(r"max \|qdd\| (\S+)", out).group(1))
    assert residual <= 1e-10


def test_quartercar_on_its_post_plots_its_one_mode(capsys, tmp_path):
    png = tmp_path / "qc.png"
    assert run(mechdyn_main, ["modes", "quartercar", "--held", "post", "--plot", str(png)]) == EXIT_PASS
    out = capsys.readouterr().out
    assert "held post" in out and "free coordinates 1" in out and str(png) in out
    rows = table(out)
    assert len(rows) == 1 and 1.0 < float(rows[0][1]) < 1.3  # the sprung mass's heave on the suspension
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_plot_has_a_panel_per_mode(tmp_path, monkeypatch):
    """pendulums' four modes: four panels with axes on (one row of four), each with its displaced pose (red)
    away from the rest pose (grey) by a visible amount."""
    dyn = mechdyn.load("pendulums")
    md = modes(linearize(dyn, equilibrium(dyn, dyn.model.q0()), np.zeros(dyn.nv)))
    assert len(md) == 4 and md.rigid.sum() == 1
    figures = []
    monkeypatch.setattr(plot.plt, "close", figures.append)  # keep the figure plot_modes closes
    assert plot_modes(dyn, md, tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    panels = [ax for ax in figures[0].axes if ax.axison]
    assert len(panels) == 4
    for ax in panels:
        rest = [ln.get_xydata() for ln in ax.lines if ln.get_color() == "0.55"]
        moved = [ln.get_xydata() for ln in ax.lines if ln.get_color() == "tab:red"]
        assert rest and len(moved) == len(rest)
        shift = max(float(np.max(np.abs(a - b))) for a, b in zip(moved, rest))
        assert shift > 0.01 * np.ptp(np.vstack(rest), axis=0).max()


def test_no_free_coordinate_skips_the_plot_with_a_note(capsys, tmp_path):
    png = tmp_path / "g.png"
    assert run(mechdyn_main, ["modes", "gantry", "--held", "0,1,2", "--plot", str(png)]) == EXIT_PASS
    out = capsys.readouterr().out
    assert "no free coordinates" in out and "no plot written" in out and not png.exists()


def test_a_plot_whose_loops_do_not_close_exits_1(capsys, tmp_path, monkeypatch):
    """Planted: close_loops failing inside the plot (a displaced pose off the manifold): exit 1, one line."""
    def torn(model, q, held=(), tol=1e-12, maxit=50):
        raise EquilibriumError("loop 'planted' does not close")

    monkeypatch.setattr(plot, "close_loops", torn)
    assert run(mechdyn_main, ["modes", "fourbar", "--plot", str(tmp_path / "f.png")]) == EXIT_FAIL
    err = capsys.readouterr().err
    assert "loop 'planted' does not close" in err and len(err.strip().splitlines()) == 1


INVERTED = """gravity 0 0 -9.81
body stick
  parent base
  joint revolute y
  xtree 0 0 0
  mass 2
  cg 0 0 0.5
  inertia 0.05 0.05 0.01 0 0 0
end
"""


def test_an_unstable_equilibrium_gets_a_saddle_note(capsys, tmp_path):
    """An inverted pendulum balanced upright (q0 is an equilibrium): its one mode is unstable, f = √(m g l / I)/2π
    of its negative stiffness, and the note says so."""
    path = tmp_path / "inverted.mech"
    path.write_text(INVERTED)
    assert run(mechdyn_main, ["modes", str(path)]) == EXIT_PASS
    out = capsys.readouterr().out
    rows = table(out)
    assert len(rows) == 1 and rows[0][3] == "unstable"
    assert float(rows[0][1]) == float(f"{np.sqrt(2 * 9.81 * 0.5 / (0.05 + 2 * 0.25)) / (2 * np.pi):.6g}")
    assert "note: 1 of 1 modes unstable" in out and "saddle" in out


def test_a_stable_equilibrium_has_no_saddle_note(capsys):
    assert run(mechdyn_main, ["modes", "threelink"]) == EXIT_PASS
    assert "unstable" not in capsys.readouterr().out


def test_no_equilibrium_exits_1_with_one_line(capsys):
    assert run(mechdyn_main, ["modes", "satellite"]) == EXIT_FAIL
    err = capsys.readouterr().err
    assert "no static equilibrium" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_unknown_held_body_exits_2(capsys):
    assert run(mechdyn_main, ["modes", "springpend", "--held", "pend3"]) == EXIT_INPUT
    assert "no body named 'pend3'" in capsys.readouterr().err


def test_a_displacement_the_loops_cannot_follow_is_drawn_smaller(monkeypatch):
    """A drawn pose the loops cannot close onto (a vehicle's suspension displaced too far) is retried at half the
    displacement until they close, and the fraction is reported; past plot.HALVINGS it fails as before."""
    dyn = mechdyn.load("fourbar")
    lin = linearize(dyn, dyn.model.q0(), np.zeros(dyn.nv))
    real = plot.close_loops

    def reach(limit):
        def closing(model, q, held=(), **kw):
            if np.max(np.abs(q - lin.q)) > limit:
                raise EquilibriumError("planted: too far to close")
            return real(model, q, held, **kw)
        return closing

    shape = np.full(dyn.nv, 0.1)
    monkeypatch.setattr(plot, "close_loops", reach(0.03))
    poses, scale = plot._displaced(dyn.model, lin, shape)
    assert scale == 0.25 and len(poses) == 2
    monkeypatch.setattr(plot, "close_loops", reach(1e-9))
    with pytest.raises(EquilibriumError, match="too far"):
        plot._displaced(dyn.model, lin, shape)
