"""`mechdyn modes`: the table is modes()'s, the plot has one panel a mode, and failures are one line."""
from __future__ import annotations

import re
import struct

import numpy as np

import mechdyn
from mechdyn.cli import parser as mechdyn_main
from mechdyn.cliutil import EXIT_FAIL, EXIT_INPUT, EXIT_PASS, run
from mechdyn.linear import equilibrium, linearize, modes
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


def png_width(path) -> int:
    return struct.unpack(">I", path.read_bytes()[16:20])[0]


def test_the_plot_has_a_panel_per_mode(tmp_path):
    """Panels of 3.4 in at 110 dpi, up to four a row: pendulums' four modes make one row four panels wide."""
    dyn = mechdyn.load("pendulums")
    md = modes(linearize(dyn, equilibrium(dyn, dyn.model.q0()), np.zeros(dyn.nv)))
    assert len(md) == 4 and md.rigid.sum() == 1
    assert png_width(plot_modes(dyn, md, tmp_path / "p.png")) == round(4 * 3.4 * 110)


def test_no_equilibrium_exits_1_with_one_line(capsys):
    assert run(mechdyn_main, ["modes", "satellite"]) == EXIT_FAIL
    err = capsys.readouterr().err
    assert "no static equilibrium" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_unknown_held_body_exits_2(capsys):
    assert run(mechdyn_main, ["modes", "springpend", "--held", "pend3"]) == EXIT_INPUT
    assert "no body named 'pend3'" in capsys.readouterr().err
