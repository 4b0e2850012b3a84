"""Pass 4: generalized forces of the force elements.

A TSDA's force reaches the joints through its path-walk row: with ρ = p_B − p_A
and the spatial force T = [p × ρ; ρ] (the same for either anchor p, because
ρ × ρ = 0), row_j = ±Sⱼᵀ (X0ⱼ* T) for each joint on exactly one anchor's root
path (+ on B's, − on A's); joints on both paths move the two anchors alike and
get nothing. The generalized force is Q = −(f/l)·row. An RSDA is a torque on
its own joint coordinate.
"""
from __future__ import annotations

from dataclasses import dataclass

from mechdyn.core.model import BASE, Model, Tsda

from . import declared
from .expr import Builder, GenerationError, Sym, Val
from .kinematics import TreeKinematics
from .sspatial import Vec3, cross, vsub, xf_force


@dataclass(frozen=True)
class TsdaState:
    rho: Vec3  # p_B − p_A
    l: Val
    ldot: Val


def tsda_state(b: Builder, kin: TreeKinematics, e: Tsda) -> TsdaState:
    """Length and rate of a TSDA from its anchors' world positions and velocities."""
    pa, va = kin.model.pois[e.poi_a], kin.model.pois[e.poi_b]
    A, vA = kin.point(pa.body, [float(x) for x in pa.pos])
    B, vB = kin.point(va.body, [float(x) for x in va.pos])
    rho = vsub(b, B, A)
    l = b.sqrt(b.dot(rho, rho))
    if l == 0.0:  # the same point of one body, or of the base: the parser refuses it at the design pose
        raise GenerationError(kin.model.path, e.line, f"tsda '{e.name}' joins poi '{pa.name}' and poi '{va.name}', "
                              "which coincide in every pose; expected two points apart: a spring of zero length has "
                              "no direction")
    return TsdaState(rho, l, b.div(b.dot(rho, vsub(b, vB, vA)), l))


def act_value(slot: int, act: str) -> Val:
    return Sym(f"{act}[{slot}]") if slot >= 0 else 0.0


def path_row(b: Builder, kin: TreeKinematics, body_a: int, body_b: int, T: list[Val], F: int = BASE) -> dict[int, Val]:
    """{v slot: ±Sⱼᵀ Xⱼ* T} over the joints on exactly one of the two root paths, for T in frame F's coordinates
    and Xⱼ = X_{j←F}.

    A single-DOF joint reads one component of Xⱼ* T: a row of Xⱼ's rotation, three products. Below a
    floating body on the path, whose six entries need all of its X* T, the joint's is carried on instead
    (Xupⱼ* of the parent's): the one component that its own rotation leaves alone costs only the tree
    offset's few products."""
    model = kin.model
    on_a, on_b = set(model.support(body_a)), set(model.support(body_b))
    path = on_a ^ on_b
    Tx: dict[int, list[Val]] = {}
    row: dict[int, Val] = {}
    for j in sorted(path):
        p = model.bodies[j].parent
        carried = p in path and model.bodies[p].joint == "floating"
        Tx[j] = xf_force(b, kin.Xup[j], Tx[p]) if carried else xf_force(b, kin.relative(j, F), T)
        sign = 1.0 if j in on_b else -1.0
        for k, s in enumerate(kin.S[j]):
            row[model.vidx[j] + k] = b.mul(sign, b.dot(s, Tx[j]))
    return row


def element_forces(b: Builder, kin: TreeKinematics, act: str = "act") -> dict[int, Val]:
    """Q as {v slot: generalized force} over every TSDA and RSDA."""
    model: Model = kin.model
    Q: dict[int, Val] = {}

    def accumulate(slot: int, x: Val) -> None:
        Q[slot] = b.add(Q.get(slot, 0.0), x)

    for n, e in enumerate(model.tsdas):
        k, c, l0 = (declared.element(model, "tsda", n, x) for x in ("k", "c", "l0"))
        with b.at(model.path, e.line, f"tsda '{e.name}'"):
            st = tsda_state(b, kin, e)
            f = b.sum(b.mul(k, b.sub(st.l, l0)), b.mul(c, st.ldot), act_value(e.act, act))
            p = kin.point(model.pois[e.poi_b].body, [float(x) for x in model.pois[e.poi_b].pos])[0]
            T = cross(b, p, st.rho) + st.rho
            coef = b.neg(b.div(f, st.l))
            for slot, r in path_row(b, kin, model.pois[e.poi_a].body, model.pois[e.poi_b].body, T).items():
                accumulate(slot, b.mul(coef, r))
    for n, e in enumerate(model.rsdas):
        iq, iv = model.qidx[e.body], model.vidx[e.body]
        k, c, q0 = (declared.element(model, "rsda", n, x) for x in ("k", "c", "q0"))
        with b.at(model.path, e.line, f"rsda '{e.name}'"):
            tau = b.sum(b.mul(b.neg(k), b.sub(Sym(f"q[{iq}]"), q0)), b.mul(b.neg(c), kin.qd(iv)), act_value(e.act, act))
            accumulate(iv, tau)
    return Q
