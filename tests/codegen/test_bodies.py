"""fwd_dyn_bodies (Dynamics.bodies, Dynamics.body_states): every body's world pose and velocity, in the model's own
body frames, against the dense reference's forward kinematics (mechdyn.core.kinematics, which shares nothing
with the generator but the Model); planted bugs (the generator's slid frames, a transposed R) are caught; and its
arguments are checked as observe's are."""
import re

import numpy as np
import pytest

import mechdyn
from mechdyn.codegen import generate as gen
from mechdyn.core.kinematics import forward_kinematics
from mechdyn.core.parse import load_model
from mechdyn.core.sample import random_state, scaled_error
from mechdyn.dynamics import QUAT_TOL, Dynamics

from tests.conftest import MODELS

NSTATES = 50
TOL = 1e-12  # scaled error (sample.scaled_error): round-off down the longest chain is far below it


def worst_errors(dyn: Dynamics, n: int = NSTATES, seed: int = 20) -> dict[str, float]:
    """The largest scaled error of R, p, w and v from Dynamics.body_states against the dense kinematics, over n
    random states (any q: the kinematics of a loop model's spanning tree needs no closure)."""
    rng = np.random.default_rng(seed)
    worst = dict.fromkeys("Rpwv", 0.0)
    for _ in range(n):
        st = random_state(dyn.model, rng)
        kin = forward_kinematics(dyn.model, st.q, st.qd)
        want = {"R": kin.R, "p": kin.p, "w": np.einsum("bij,bj->bi", kin.R, kin.v[:, :3]),
                "v": np.einsum("bij,bj->bi", kin.R, kin.v[:, 3:])}
        got = dyn.body_states(st.q, st.qd)._asdict()
        for k in worst:
            worst[k] = max(worst[k], scaled_error(got[k], want[k]))
    return worst


@pytest.mark.parametrize("name", MODELS)
def test_bodies_match_the_dense_kinematics(name):
    """At 50 random states of every model, each body's R, p, w and v agree with the dense reference to round-off."""
    worst = worst_errors(mechdyn.load(name))
    print(f"\n{name}: worst scaled error " + ", ".join(f"{k} {e:.2g}" for k, e in worst.items()))
    assert max(worst.values()) < TOL, worst


def test_row_layout_and_view():
    """bodies() is (nbody, 18) rows of R (row-major), p, w, v; body_states() views the same numbers; and the
    constant fwd_dyn_bodies_len is 18 nbody."""
    d = mechdyn.load("satellite")
    st = random_state(d.model, np.random.default_rng(3))
    out = d.bodies(st.q, st.qd)
    R, p, w, v = d.body_states(st.q, st.qd)
    assert out.shape == (d.nbody, 18) and d.lib.fwd_dyn_bodies_len == 18 * d.nbody
    assert np.array_equal(out[:, :9], R.reshape(d.nbody, 9)) and np.array_equal(out[:, 9:], np.hstack([p, w, v]))
    assert not any(x.flags.owndata for x in (R, p, w, v))  # views, as documented, not copies
    # the floating bus: R is the quaternion's rotation, p its position, w = R ω and v = R v_body from qd
    Q, r = st.q[:4], st.q[4:7]
    wq, x, y, z = Q
    R0 = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - wq * z), 2 * (x * z + wq * y)],
                   [2 * (x * y + wq * z), 1 - 2 * (x * x + z * z), 2 * (y * z - wq * x)],
                   [2 * (x * z - wq * y), 2 * (y * z + wq * x), 1 - 2 * (x * x + y * y)]])
    assert np.allclose(R[0], R0, atol=1e-14) and np.allclose(p[0], r, atol=1e-14)
    assert np.allclose(w[0], R0 @ st.qd[:3], atol=1e-13) and np.allclose(v[0], R0 @ st.qd[3:6], atol=1e-13)


# -- planted bugs -------------------------------------------------------------------------------------------------
def _transposed(lines: list[str]) -> list[str]:
    """fwd_dyn_bodies' statements with each row's R stored column-major: E = Rᵀ where R belongs."""
    def swap(m: re.Match) -> str:
        i, k = divmod(int(m[1]), 18)
        return f"out[{18 * i + 3 * (k % 3) + k // 3 if k < 9 else 18 * i + k}]"
    return [re.sub(r"\bout\[(\d+)\]", swap, ln) for ln in lines]


@pytest.mark.parametrize("plant", ["slid frames", "transposed R"])
def test_planted_bug_is_caught(plant, fresh_cache, monkeypatch):
    """fwd_dyn_bodies built on the slid model fwd_dyn is built on (elbow's frames move), or with R transposed,
    fails the comparison with the dense kinematics by far more than round-off."""
    real = gen.bodies_body
    monkeypatch.setattr(gen, "bodies_body", (lambda m: real(gen.slid(m)[1])) if plant == "slid frames"
                        else (lambda m: (lambda lines, ops: (_transposed(lines), ops))(*real(m))))
    model = load_model("elbow")
    assert any(gen.slid(model)[0])  # elbow has slid frames, so the first plant changes something
    worst = worst_errors(Dynamics(model), n=5)
    print(f"\nplanted {plant}: worst scaled error " + ", ".join(f"{k} {e:.2g}" for k, e in worst.items()))
    assert max(worst.values()) > 1e-3, worst


# -- argument checks (the wrong shapes and dtypes: tests/test_api_safety.py, with every other entry) ------------
@pytest.mark.parametrize("Q", [[1.2, 1.6, 0, 0], [0, 0, 0, 0], [1 + 2 * QUAT_TOL, 0, 0, 0]])
def test_non_unit_quaternion_is_refused_naming_the_body(Q):
    """A floating body's quaternion off unit norm is refused, as forward and observe refuse it."""
    sat = mechdyn.load("satellite")
    q, z = sat.model.q0(), np.zeros(sat.nv)
    q[:4] = Q
    for call in (lambda: sat.bodies(q, z), lambda: sat.body_states(q, z)):
        with pytest.raises(ValueError, match=rf"floating body 'bus' .* has norm {np.linalg.norm(Q):.12g}; "
                                             "expected a unit quaternion"):
            call()


def test_what_the_quaternion_check_keeps_out():
    """Unchecked (the C entry called directly), the quaternion [1.2, 1.6, 0, 0] gives the bus a 'rotation' that is
    not one: the check refuses it rather than return it."""
    sat = mechdyn.load("satellite")
    q, z = sat.model.q0(), np.zeros(sat.nv)
    q[:4] = [1.2, 1.6, 0, 0]
    out = np.empty((sat.nbody, 18))
    sat.lib.fwd_dyn_bodies(sat.ffi.from_buffer("double[]", q), sat.ffi.from_buffer("double[]", z),
                           sat.ffi.from_buffer("double[]", out))
    R = out[0, :9].reshape(3, 3)
    assert np.max(np.abs(R.T @ R - np.eye(3))) > 1.0
