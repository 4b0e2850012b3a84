"""M against the dense reference's mass matrix projected onto N, and K's symmetry at conservative equilibria: two
properties of the reduction that share nothing with its formulas. Each shown once to fail on a planted bug."""
from __future__ import annotations

import numpy as np
import pytest

import mechdyn
from crosscheck.dense.crba import mass_matrix
from mechdyn.core.integrate import retract
from mechdyn.linear import Linear, close_loops, equilibrium, linearize
from tests.linear.models import quartercar_with_tire
from tests.linear.planted import rebuilt


def mass_error(lin: Linear) -> float:
    """|M - Nᵀ H N| relative, H from crosscheck.dense's CRBA (no generated code)."""
    want = lin.N.T @ mass_matrix(lin.model, lin.q) @ lin.N
    return float(np.max(np.abs(lin.M - want)) / np.max(np.abs(want)))


@pytest.mark.parametrize("name, held", [("fourbar", ()), ("quartercar", ("post",)), ("springpend", ("pend1",)),
                                        ("satellite", ()), ("rrrs", ())])
def test_mass_matrix_is_the_dense_crba_on_the_tangent_space(name, held):
    """M = inv(N_Kᵀ dtau N_K) projected on W for loops, inv(dtau) for trees: the generated constrained inverse's
    structure (dtau = N_K (N_Kᵀ H N_K)⁻¹ N_Kᵀ) against the dense H, at a random closed configuration."""
    dyn = mechdyn.load(name)
    model = dyn.model
    q = close_loops(model, retract(model, model.q0(), 0.2 * np.random.default_rng(5).standard_normal(model.nv)),
                    ())
    lin = linearize(dyn, q, np.zeros(dyn.nv), held=held)
    err = mass_error(lin)
    print(f"{name}: M against Nᵀ H_dense N {err:.1e} relative")
    assert err <= 1e-12


def test_mass_check_catches_an_identity_mass():
    dyn = mechdyn.load("fourbar")
    assert mass_error(rebuilt(linearize(dyn, dyn.model.q0(), np.zeros(dyn.nv)), M=np.eye(1))) > 0.1


def asymmetry(K: np.ndarray) -> float:
    return float(np.max(np.abs(K - K.T)) / np.max(np.abs(K)))


@pytest.mark.parametrize("name", ["threelink", "elbow", "quartercar_tire"])
def test_stiffness_is_symmetric_at_a_conservative_equilibrium(name):
    """Springs and gravity only (quartercar_tire's damper does not enter K): K is the potential's Hessian on the
    tangent space, symmetric, loops' geometric stiffness included."""
    dyn = mechdyn.load(quartercar_with_tire() if name == "quartercar_tire" else name)
    q = equilibrium(dyn, dyn.model.q0())
    lin = linearize(dyn, q, np.zeros(dyn.nv))
    assert lin.K.shape[0] >= 2
    print(f"{name}: |K - Kᵀ| / |K| {asymmetry(lin.K):.1e}")
    assert asymmetry(lin.K) <= 1e-12


def test_symmetry_check_catches_a_stiffness_without_the_mass_matrix(monkeypatch):
    """Planted inside linearize: the derivatives' dtau replaced by the identity, so linearize's K = -H dq loses
    its H (K = -dq) and the check sees the asymmetry."""
    dyn = mechdyn.load("threelink")
    q = equilibrium(dyn, dyn.model.q0())
    real = dyn.derivatives
    monkeypatch.setattr(dyn, "derivatives", lambda *a, **k: real(*a, **k)._replace(dtau=np.eye(dyn.nv)))
    lin = linearize(dyn, q, np.zeros(dyn.nv))
    assert np.array_equal(lin.K, -lin.derivatives.dq)  # the plant reached K
    assert asymmetry(lin.K) > 0.1
