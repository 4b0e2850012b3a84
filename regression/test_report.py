"""`crosscheck report`: the page renders in headless Chromium, every plot decodes, failures come first."""
import base64
import io
import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from crosscheck.cli import parser as crosscheck_parser
from mechdyn.cliutil import run

from .history import GateRow, Run, write_run

CHROMIUM = shutil.which("chromium")
PNG = b"\x89PNG\r\n\x1a\n"
COMMITS = ["1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
           "3333333ccccccccccccccccccccccccccccccccc", "4444444ddddddddddddddddddddddddddddddddd+dirty"]
# (model, gate) -> metric per run, threshold; None: the gate did not run then
SERIES = {
    ("alpha", "gen_vs_dense"): ([3e-16, 5e-16, 4e-16, 6e-16], 1e-9),
    ("alpha", "reversibility"): ([1e-16, 2e-9, 1e-16, 2e-16], 1e-10),  # failed in run 1 only
    ("alpha", "find_roundtrip"): ([0.0, 0.0, 0.0, 0.0], 0.0),
    ("beta", "gen_vs_dense"): ([2e-15, 1e-15, 3e-15, 4e-8], 1e-9),  # fails in the latest run
    ("beta", "closure_drift"): ([2e-8, 3e-8, 2e-8, 2e-8], 1e-5),
    ("beta", "retired_gate"): ([0.5, 0.4, None, None], 1.0),  # not in the latest run, still plotted
}


def cli(*args: str) -> subprocess.CompletedProcess:
    script = Path(sys.executable).parent / "crosscheck"
    return subprocess.run([str(script) if script.exists() else "crosscheck", *args], capture_output=True, text=True,
                          timeout=300, check=False)


@pytest.fixture
def history(tmp_path) -> Path:
    """Four runs written through regression/history.py, the last with one failure."""
    db = tmp_path / "history.sqlite"
    for k, commit in enumerate(COMMITS):
        rows = [GateRow(m, g, v[k], thr, v[k] <= thr, f"regression/test_x.py::test_{g}[{m}]")
                for (m, g), (v, thr) in SERIES.items() if v[k] is not None]
        write_run(db, Run(f"run{k}", f"2026-03-0{k + 1}T12:00:00+00:00", commit, "ci: Test CPU, 2 cores",
                          "-n auto"), rows)
    return db


class Page(HTMLParser):
    """The summary table's rows and every <img> (src, alt) of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.imgs: list[dict] = []
        self._in_tbody = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.imgs.append(dict(attrs))
        elif tag == "tbody":
            self._in_tbody = True
        elif tag == "tr" and self._in_tbody:
            self.rows.append([])
        elif tag == "td" and self._in_tbody:
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "tbody":
            self._in_tbody = False
        elif tag == "td" and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def parse(text: str) -> Page:
    page = Page()
    page.feed(text)
    return page


# Injected into a copy of the page: records script and resource errors, and how many images decoded.
CHECKER = """<script>
window.__errors = [];
window.addEventListener("error", e => window.__errors.push(String(e.message || (e.target && e.target.src))), true);
window.addEventListener("load", () => document.body.setAttribute("data-check", JSON.stringify({
  imgs: document.images.length, errors: window.__errors,
  decoded: [...document.images].filter(i => i.complete && i.naturalWidth > 0).length})));
</script>"""


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", "--disable-dev-shm-usage",
                           "--no-first-run", f"--user-data-dir={tmp_path / 'chromium-profile'}",
                           "--enable-logging=stderr", "--v=0", *args],
                          capture_output=True, text=True, timeout=120, check=False)


def console_errors(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ":CONSOLE" in ln or "Uncaught" in ln]


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_report_renders_in_chromium(history, tmp_path):
    out = tmp_path / "report.html"
    r = cli("report", "--history", str(history), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"{out}: 4 runs") and "5 gates, 1 failed; 6 trend plots" in r.stdout, r.stdout
    text = out.read_text()

    # self-contained: every src and href is an embedded PNG or an anchor in the page
    refs = re.findall(r'\b(?:src|href)="([^"]*)"', text)
    assert refs and all(u.startswith(("data:image/png;base64,", "#")) for u in refs), refs
    assert "http://" not in text and "https://" not in text

    # the latest run's table: failures first, then by model and gate
    page = parse(text)
    assert [row[:2] for row in page.rows] == [["beta", "gen_vs_dense"], ["alpha", "find_roundtrip"],
                                              ["alpha", "gen_vs_dense"], ["alpha", "reversibility"],
                                              ["beta", "closure_drift"]]
    assert page.rows[0][2:] == ["4.000e-08", "1e-09", "FAIL"] and {r[4] for r in page.rows[1:]} == {"PASS"}

    # one plot per (model, gate) ever recorded, each a real PNG, its alt naming model and gate
    assert len(page.imgs) == len(SERIES)
    for img, (model, gate) in zip(page.imgs, sorted(SERIES)):
        assert img["alt"].startswith(f"{model} {gate}:"), img["alt"]
        data = base64.b64decode(img["src"].removeprefix("data:image/png;base64,"), validate=True)
        assert data.startswith(PNG)
        assert Image.open(io.BytesIO(data)).size == (400, 250)

    # Chromium: the page (with the checker injected) loads every image and raises no error
    checked = tmp_path / "checked.html"
    checked.write_text(text.replace("<head>", "<head>" + CHECKER, 1))
    r = chromium(tmp_path, "--dump-dom", checked.as_uri())
    assert r.returncode == 0, r.stderr[-2000:]
    dom = parse(r.stdout)
    m = re.search(r'data-check="([^"]*)"', r.stdout)
    assert m, r.stdout[:500]
    check = json.loads(m.group(1).replace("&quot;", '"'))
    assert check == {"imgs": len(SERIES), "decoded": len(SERIES), "errors": []}, check
    assert [row[:2] for row in dom.rows][0] == ["beta", "gen_vs_dense"]
    assert not console_errors(r.stderr), console_errors(r.stderr)

    # Chromium: a screenshot of the page as written, not blank, the failure in red above the fold
    shot = tmp_path / "report.png"
    r = chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,2000", out.as_uri())
    assert r.returncode == 0 and shot.is_file(), r.stderr[-2000:]
    assert not console_errors(r.stderr), console_errors(r.stderr)
    px = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    assert px.shape == (2000, 1280, 3)
    assert (px.min(axis=2) < 200).mean() > 0.01  # ink on at least 1% of the page
    assert len(np.unique(px.reshape(-1, 3), axis=0)) > 100  # text and plots, not a flat fill
    red = (px[..., 0] > 150) & (px[..., 1] < 80) & (px[..., 2] < 80)
    assert red.sum() > 50  # the FAIL verdict, the table cell, the failing plot's frame and cross


def test_report_input_errors(tmp_path, capsys):
    missing = tmp_path / "none.sqlite"
    assert run(crosscheck_parser, ["report", "--history", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{missing}: no gate history here") and err.count("\n") == 1
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    assert run(crosscheck_parser, ["report", "--history", str(empty)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{empty}: the gate history is empty") and err.count("\n") == 1
    junk = tmp_path / "junk.sqlite"
    junk.write_text("not sqlite\n" * 100)
    assert run(crosscheck_parser, ["report", "--history", str(junk)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{junk}: not a gate history") and err.count("\n") == 1
    assert not (tmp_path / "report.html").exists()


def test_report_from_environment(history, tmp_path, monkeypatch, capsys):
    """Without --history the file comes from $MECHDYN_HISTORY; the log axis and the legend's FAIL appear."""
    monkeypatch.setenv("MECHDYN_HISTORY", str(history))
    out = tmp_path / "r.html"
    assert run(crosscheck_parser, ["report", "-o", str(out)]) == 0
    assert f"from {history}" in capsys.readouterr().out
    assert out.read_text().count('<figure id="plot-beta-gen_vs_dense" class="fail">') == 1
