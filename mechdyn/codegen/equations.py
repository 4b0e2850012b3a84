"""The equations fwd_dyn solves, emitted in pass order: kinematics, H or the articulated inertias, C, the
elements' forces, the loops' rows (generate.py solves them for qdd, derivs.py differentiates them)."""
from __future__ import annotations

from dataclasses import dataclass

from mechdyn.core.model import Model

from .aba import articulated_inertias
from .crba import mass_matrix
from .elements import element_forces
from .expr import Builder, Sym, Val
from .kinematics import TreeKinematics
from .loops import as_K, as_wrenches, loop_rows
from .ltdl import check_sparsity, expanded_parents
from .rnea import bias_force, body_forces


@dataclass
class System:
    """The equations fwd_dyn solves, as emitted: H qdd = rhs (route "crba"; `art`, the articulated inertias, and
    `bias`, the bodies' forces at qdd = 0, for route "aba"), and the loops' rows (K, k) with K qdd = k."""
    kin: TreeKinematics
    H: dict | None
    art: object
    bias: list
    rhs: list[Val]
    rows: list


def system(b: Builder, model: Model, route: str = "crba") -> System:
    """The kinematics, then H (route "crba") or the articulated inertias ("aba"), C, the elements' forces and the
    loops' rows, emitted into b in that order."""
    if not model.bands_expanded:
        raise NotImplementedError(f"{model.path}: track bands are parsed but not yet expanded into bodies")
    kin = TreeKinematics(b, model)
    H = art = None
    if route == "crba":
        H = mass_matrix(b, kin)
        check_sparsity(H, expanded_parents(model))
    else:
        art = articulated_inertias(b, kin)
    # The ABA route starts its backward pass with the bodies' forces at qdd = 0 instead of subtracting C.
    C = bias_force(b, kin) if route == "crba" else [0.0] * model.nv
    bias = body_forces(b, kin) if route == "aba" else []
    Q = element_forces(b, kin)
    rhs: list[Val] = [b.add(b.sub(Sym(f"tau[{i}]"), C[i]), Q.get(i, 0.0)) for i in range(model.nv)]
    rows = []
    for lp in model.loops:
        with b.at(model.path, lp.line, f"loop '{lp.name}'"):
            rows += loop_rows(b, kin, lp, as_wrenches if route == "aba" else as_K)
    return System(kin, H, art, bias, rhs, rows)
