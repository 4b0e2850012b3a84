"""The contact benchmark (mechdyn/contact/bench.py) runs, checks that its loop computes the producers, and reports
what it timed; `mechdyn bench --contact` prints it beside fwd_dyn."""
from __future__ import annotations

import numpy as np

from mechdyn.contact.bench import POOL, bench_contact, pool

from .conftest import contact


def test_bench_contact_reports_both_producers():
    con = contact("track_min")
    r = bench_contact(con, repeats=1, seconds=0.01)
    assert r.band_ns > 0 and r.ground_ns > 0
    assert r.band_pairs == 3 * 16 and r.corners == con.ncorner == 64
    assert 0 < r.corners_loaded <= r.corners and 0 < r.band_loaded <= r.band_pairs
    X = pool(con)
    assert X.shape == (POOL, con.model.nbody, 18) and np.isfinite(X).all()


def test_cli_bench_contact():
    from tests.test_cli import cli
    out = cli("mechdyn", "bench", "track_min", "--contact", "--repeats", "1")
    assert out.returncode == 0, out.stderr
    assert "bench: band" in out.stdout and "bench: ground" in out.stdout and "generated dynamics" in out.stdout


def test_cli_bench_contact_refuses_sim():
    from tests.test_cli import cli
    out = cli("mechdyn", "bench", "track_min", "--contact", "--sim", "1e-4")
    assert out.returncode == 2 and "does not combine with --sim" in out.stderr and "Traceback" not in out.stderr
