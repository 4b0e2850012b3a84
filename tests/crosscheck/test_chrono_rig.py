"""crosscheck chrono-rig: Chrono::Vehicle's HMMWV suspension test rig beside mechdyn's rig (a report). The data file
transform is plain numpy; the rigs skip, saying why, without pychrono with Chrono::Vehicle and its data."""
import numpy as np
import pytest

from crosscheck.chrono import PychronoMissing
from mechdyn.sim.road import read_chrono_rig_inputs


def _vehicle_reason() -> str | None:
    from crosscheck.chrono.vehicle import require_vehicle

    try:
        require_vehicle()
    except PychronoMissing as e:
        return str(e)
    return None


REASON = _vehicle_reason()
needs_vehicle = pytest.mark.skipif(REASON is not None, reason=REASON or "")


def test_transformed_inputs(tmp_path):
    from crosscheck.chrono.rig import transformed_inputs

    src = tmp_path / "in.dat"
    src.write_text("0 0.1 0 0 0 0\n1 0.2 0.5 -0.25 0.125 1\n2 0 0 0 0 0\n")
    d = read_chrono_rig_inputs(src)
    n = read_chrono_rig_inputs(transformed_inputs(src, tmp_path / "n.dat", negate=True))
    s = read_chrono_rig_inputs(transformed_inputs(src, tmp_path / "s.dat", swap=True))
    assert np.array_equal(n.time, d.time) and np.array_equal(n.steering, d.steering)
    assert np.array_equal(n.left, -d.left) and np.array_equal(n.right, -d.right)
    assert np.array_equal(s.left, d.right) and np.array_equal(s.right, d.left)


@needs_vehicle
def test_chrono_platform_rig_moves_its_posts_against_the_input():
    """What docs/verification.md reports of Chrono's platform rig: the front-left input rises to +1 (x 0.15 m) at
    the file's t = 2 s and the post goes down by 0.15 m; the TMeasy tires see a ground at z = 0, so the wheels do
    not follow the posts at all."""
    from crosscheck.chrono.rig import chrono_rig

    r = chrono_rig(T=3.0)
    k0, k2 = (int(np.argmin(np.abs(r.input_time - t))) for t in (0.0, 2.0))
    assert r.post["left"][k2] - r.post["left"][k0] == pytest.approx(-0.15, abs=2e-3)
    assert abs(r.post["right"][k2] - r.post["right"][k0]) < 1e-3
    assert abs(r.travel["left"][k2] - r.travel["left"][k0]) < 1e-3 and r.travel["left"][k0] > 0.15
