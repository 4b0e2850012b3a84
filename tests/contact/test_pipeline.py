"""Contact from (q, qd): the generated fwd_dyn_bodies, then the producers, then fwd_dyn (docs/contact.md)."""
from __future__ import annotations

import numpy as np
import pytest

import mechdyn
from mechdyn.contact import contact_fext
from mechdyn.core.kinematics import forward_kinematics

from .conftest import TRACKED, contact


def rows(model, q, qd) -> np.ndarray:
    """Body rows from the tree kinematics (mechdyn.core), a route apart from the generated fwd_dyn_bodies."""
    k = forward_kinematics(model, q, qd)
    R = k.R
    return np.concatenate([R.reshape(-1, 9), k.p, np.einsum("nij,nj->ni", R, k.v[:, :3]),
                           np.einsum("nij,nj->ni", R, k.v[:, 3:])], axis=1)


@pytest.mark.parametrize("name", TRACKED)
def test_contact_from_q_through_the_generated_kinematics(name):
    dyn = mechdyn.load(name)
    con = contact(name)
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(20):
        q = dyn.model.q0()
        q[[i for i, b in zip(dyn.model.qidx, dyn.model.bodies) if b.joint == "revolute"]] += rng.normal(
            scale=0.002, size=sum(b.joint == "revolute" for b in dyn.model.bodies))
        qd = rng.normal(scale=0.3, size=dyn.nv)
        f = contact_fext(con, dyn, q, qd, 2e-5)
        ref = con.fext(rows(dyn.model, q, qd), 2e-5)
        worst = max(worst, float(np.abs(f - ref).max() / max(np.abs(ref).max(), 1e-300)))
        qdd = dyn.forward(q, qd, np.zeros(dyn.nv), f)
        assert np.isfinite(qdd).all()
    print(f"{name}: contact through fwd_dyn_bodies vs the tree kinematics' rows: {worst:.1e} relative")
    assert worst < 1e-9
