"""Declared parameters: the numbers of a model that stay free in its generated C (docs/params.md).

Every other number is folded into the C at generation time. A declared one is read at run time from the
parameter vector, so a new value takes effect on the next call without a compile. Which numbers are declared is
part of the model (and of its cache key); their values are not: the generator sees the model with them set to
NaN (`neutral`), so the C it writes cannot depend on them, and a place that read one instead of the parameter
would fold a NaN into the C, which the checks catch.

A parameter is named NAME.FIELD: a body's mass, cg (3 numbers) or inertia (6: Ixx Iyy Izz Ixy Ixz Iyz, about
the CG) or, in a tree, its joint frame's offset xtree (3, in the parent's frame), a tsda's k, c or l0, an rsda's
k, c or q0; a track's or the ground's contact kn, kt or mu (which the
contact's C reads from the model at run time: declared, they leave the cache key). The geometry (joint axes,
frames, offsets, points) stays folded: it decides the code's structure and the closed design pose.
"""
from __future__ import annotations

import dataclasses as dc
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from .model import Model

# field -> (the numbers it holds, what the format calls them, its unit)
BODY_FIELDS = {"mass": (1, "mass", "kg"), "cg": (3, "cg x y z", "m"),
               "inertia": (6, "inertia Ixx Iyy Izz Ixy Ixz Iyz", "kg m^2"), "xtree": (3, "joint frame offset", "m")}
ELEMENT_FIELDS = {"tsda": {"k": (1, "stiffness", "N/m"), "c": (1, "damping", "N s/m"), "l0": (1, "free length", "m")},
                  "rsda": {"k": (1, "stiffness", "N m/rad"), "c": (1, "damping", "N m s/rad"),
                           "q0": (1, "free angle", "rad")}}
# the contact's numbers: read by the contact's C from the model at run time, never by the generated C; declared,
# their values leave the cache key (a new ground stiffness no longer recompiles)
CONTACT_FIELDS = {"kn": (1, "normal stiffness", "N/m"), "kt": (1, "tangential stiffness", "N/m"),
                  "mu": (1, "friction coefficient", "")}
# a tire's numbers (mechdyn/contact/tires.py's TireParams), read from its data file by the contact, which
# registers TIRE_VALUE; declared, the value given replaces the file's (the law must use the number)
TIRE_FIELDS = ("r0", "width", "mu0", "rr", "dz", "d1", "d2", "r_bottom", "k_bottom", "pn", "pn_max", "kz", "cslip",
               "calpha", "umin", "umax")
TIRE_VALUE: dict[str, Callable[[Model, int, str], float]] = {}  # "read": (model, tire, field) -> the file's value
# what may not be a parameter, and why (a declaration naming one is refused with this)
FOLDED = {"axis": "a joint axis decides which products the code keeps",
          "joint": "a joint's kind decides the code's structure",
          "rpy": "a joint frame's rotation decides which products the code keeps",
          "quat": "a joint frame's rotation decides which products the code keeps",
          "parent": "the tree decides the code's structure"}
_INERTIA_SLOTS = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))


@dc.dataclass(frozen=True)
class Param:
    """One declared parameter: `kind` "body", "tsda" or "rsda", `index` into that tuple of the model, `field`,
    its slots [offset, offset + size) in the parameter vector. `turn` and `shift` say how the generator's frames
    (codegen/frames.py) re-express a body's cg, inertia and xtree: in the generated frames, cg = turnᵀ p − shift,
    inertia = turnᵀ I(p) turn, xtree = turnᵀ p − shift (turn the parent's)."""
    name: str
    kind: str
    index: int
    field: str
    offset: int
    size: int
    line: int = 0
    turn: np.ndarray = dc.field(default_factory=lambda: np.eye(3))
    shift: np.ndarray = dc.field(default_factory=lambda: np.zeros(3))


class ParamError(ValueError):
    """A parameter that cannot be declared or a value that cannot be set; the message names it and says why."""


def _target(model: Model, name: str) -> tuple[str, int, str, int]:
    """(kind, index, field, size) of NAME.FIELD in `model`, or ParamError saying what exists."""
    owner, dot, field = name.rpartition(".")
    if not dot or not owner:
        raise ParamError(f"parameter '{name}': expected NAME.FIELD, e.g. upper_arm.mass or spring.k")
    bodies = {b.name: i for i, b in enumerate(model.bodies)}
    elements = {"tsda": {e.name: i for i, e in enumerate(model.tsdas)},
                "rsda": {e.name: i for i, e in enumerate(model.rsdas)}}
    tracks = {t.name: i for i, t in enumerate(model.tracks)}
    tires = {t.name: i for i, t in enumerate(model.tires)}
    if owner in tires:
        used = TIRE_VALUE["fields"](model, tires[owner]) if "fields" in TIRE_VALUE else TIRE_FIELDS
        if field not in used:
            raise ParamError(f"parameter '{name}': the law of tire '{owner}' reads {', '.join(used)}, not {field} "
                             "(docs/tires.md)")
        return "tire", tires[owner], field, 1
    if owner == "ground" and model.ground is not None or owner in tracks:
        kind, index = ("ground", 0) if owner == "ground" else ("track", tracks[owner])
        if field not in CONTACT_FIELDS:
            raise ParamError(f"parameter '{name}': a {kind}'s parameters are {', '.join(CONTACT_FIELDS)}")
        if getattr(_owner_of(model, kind, index), field) is None:
            raise ParamError(f"parameter '{name}': {owner} gives no {field} (its default is derived); write one to "
                             "make it a parameter")
        return kind, index, field, 1
    if owner in bodies:
        kind, index, fields = "body", bodies[owner], BODY_FIELDS
    elif owner in elements["tsda"] or owner in elements["rsda"]:
        kind = "tsda" if owner in elements["tsda"] else "rsda"
        index, fields = elements[kind][owner], ELEMENT_FIELDS[kind]
    else:
        raise ParamError(f"parameter '{name}': no body, tsda, rsda, track, tire or ground is named '{owner}'")
    if field in FOLDED:
        raise ParamError(f"parameter '{name}': the {field} cannot be a parameter: {FOLDED[field]}")
    if field not in fields:
        raise ParamError(f"parameter '{name}': a {kind} has no parameter '{field}'; expected one of "
                         f"{', '.join(fields)}")
    if field == "xtree" and (model.loops or model.tracks):
        raise ParamError(f"parameter '{name}': a joint frame's offset in a model with loops moves its closed design "
                         "pose, by which the generated solve orders its elimination; it is a parameter of a tree")
    if field == "xtree" and model.bodies[index].joint == "floating":
        raise ParamError(f"parameter '{name}': a floating body's xtree is its design-pose position, its q0, not a "
                         "number of the dynamics")
    if kind == "body" and field != "xtree" and model.bodies[index].mass == 0:
        raise ParamError(f"parameter '{name}': body '{owner}' is massless, and a massless body's structure is "
                         "folded away; give it a mass to make its numbers parameters")
    return kind, index, field, fields[field][0]


def declare(model: Model, names: Iterable[str], lines: Sequence[int] | None = None) -> Model:
    """`model` with the parameters `names` declared after those it has (ParamError for a bad or repeated name)."""
    names = list(names)
    lines = list(lines) if lines is not None else [0] * len(names)
    params = list(model.params)
    offset = sum(p.size for p in params)
    seen = {p.name for p in params}
    for name, line in zip(names, lines):
        if name in seen:
            raise ParamError(f"parameter '{name}' is declared twice")
        kind, index, field, size = _target(model, name)
        params.append(Param(name, kind, index, field, offset, size, line))
        offset, seen = offset + size, seen | {name}
    return dc.replace(model, params=tuple(params))


def _owner_of(model: Model, kind: str, index: int):
    return model.ground if kind == "ground" else getattr(model, _FIELD_OF[kind])[index]


_FIELD_OF = {"body": "bodies", "tsda": "tsdas", "rsda": "rsdas", "track": "tracks"}


def _owner(model: Model, p: Param):
    return _owner_of(model, p.kind, p.index)


def _read(model: Model, p: Param) -> np.ndarray:
    """p's numbers as the model holds them (a tire's: the value given, or its data file's)."""
    if p.kind == "tire":
        given = dict(model.tires[p.index].given)
        if p.field in given:
            return np.array([given[p.field]])
        if "read" not in TIRE_VALUE:
            raise ParamError(f"parameter '{p.name}': a tire's values are read by mechdyn.contact, not imported")
        return np.array([TIRE_VALUE["read"](model, p.index, p.field)])
    x = getattr(_owner(model, p), p.field)
    if p.field == "inertia":
        return np.array([x[i][j] for i, j in _INERTIA_SLOTS], dtype=float)
    return np.atleast_1d(np.asarray(x, dtype=float)).copy()


def _written(p: Param, x: np.ndarray):
    """p's numbers in the form its field holds them."""
    if p.field == "inertia":
        I = np.zeros((3, 3))
        for v, (i, j) in zip(x, _INERTIA_SLOTS):
            I[i, j] = I[j, i] = v
        return I
    return x.copy() if p.size > 1 else float(x[0])


def declarable(model: Model) -> list[str]:
    """Every NAME.FIELD that may be declared on `model` (a massless body's and a track shoe's numbers excepted:
    the first is folded away, the second is the band's; joint frame offsets in a tree only)."""
    shoes = {i for t in model.tracks if t.expanded for i in range(t.first_shoe, t.first_shoe + t.shoes)}
    out = [f"{b.name}.{f}" for i, b in enumerate(model.bodies) if b.mass > 0 and i not in shoes for f in BODY_FIELDS
           if f != "xtree"]
    if not (model.loops or model.tracks):
        out += [f"{b.name}.xtree" for b in model.bodies if b.joint != "floating"]
    for kind, items in (("tsda", model.tsdas), ("rsda", model.rsdas)):
        out += [f"{e.name}.{f}" for e in items for f in ELEMENT_FIELDS[kind]]
    out += [f"{t.name}.{f}" for t in model.tracks for f in CONTACT_FIELDS if getattr(t, f) is not None]
    if model.ground is not None:
        out += [f"ground.{f}" for f in CONTACT_FIELDS if getattr(model.ground, f) is not None]
    used = TIRE_VALUE.get("fields")
    out += [f"{t.name}.{f}" for i, t in enumerate(model.tires) for f in (used(model, i) if used else TIRE_FIELDS)]
    return out


READ_BY_C = ("body", "tsda", "rsda")  # the kinds the generated C reads; the others the contact's C, from the model


def read_by_c(model: Model) -> bool:
    """Whether the generated C reads any of the model's declared parameters (then it holds the vector)."""
    return any(p.kind in READ_BY_C for p in model.params)


def size(model: Model) -> int:
    """The length of the model's parameter vector."""
    return sum(p.size for p in model.params)


def values(model: Model) -> np.ndarray:
    """The parameter vector of `model`'s declared parameters, at the values the model holds."""
    return np.concatenate([_read(model, p) for p in model.params]) if model.params else np.zeros(0)


def labels(model: Model) -> list[str]:
    """One label per slot of the parameter vector: the name, and for a cg or inertia the component."""
    out = []
    for p in model.params:
        comps = ("x", "y", "z") if p.field == "cg" else ("Ixx", "Iyy", "Izz", "Ixy", "Ixz", "Iyz") \
            if p.field == "inertia" else ("",)
        out += [f"{p.name}[{c}]" if c else p.name for c in comps]
    return out


def _replace_field(model: Model, p: Param, value) -> Model:
    if p.kind == "tire":
        tires = list(model.tires)
        given = {**dict(tires[p.index].given), p.field: float(value)}
        tires[p.index] = dc.replace(tires[p.index], given=tuple(sorted(given.items())))
        return dc.replace(model, tires=tuple(tires))
    if p.kind == "ground":
        return dc.replace(model, ground=dc.replace(model.ground, **{p.field: value}))
    kind = _FIELD_OF[p.kind]
    items = list(getattr(model, kind))
    items[p.index] = dc.replace(items[p.index], **{p.field: value})
    return dc.replace(model, **{kind: tuple(items)})


def with_values(model: Model, x) -> Model:
    """`model` holding the parameter values x (its declarations kept), or ParamError naming the first value out
    of its kind's bounds or an inertia that is not one."""
    x = np.asarray(x, dtype=float)
    if x.shape != (size(model),):
        raise ParamError(f"model '{model.name}': {x.shape} parameter values; expected ({size(model)},): "
                         f"{', '.join(labels(model)) or 'no parameters declared'}")
    for p in model.params:
        v = x[p.offset:p.offset + p.size]
        problem = check(p, v)
        if problem:
            raise ParamError(f"model '{model.name}': parameter '{p.name}' = {_shown(v)}: {problem}")
        model = _replace_field(model, p, _written(p, v))
    return model


def _shown(v: np.ndarray) -> str:
    return " ".join(f"{x:.6g}" for x in v)


def check(p: Param, v: np.ndarray) -> str | None:
    """Why the values v cannot be parameter p's (None when they can)."""
    if not np.all(np.isfinite(v)):
        return "expected finite values"
    if p.field == "mass" and not v[0] > 0:
        return "expected a mass > 0 (a parameter's body keeps its mass)"
    if p.field in ("k", "c") and not v[0] >= 0:
        return f"expected a {'stiffness' if p.field == 'k' else 'damping'} >= 0"
    if p.field in ("kn", "kt") and not v[0] > 0:
        return "expected a contact stiffness > 0"
    if p.field == "mu" and not v[0] >= 0:
        return "expected a friction coefficient >= 0"
    if p.kind == "tire" and not v[0] > 0 and p.field not in ("rr", "d2", "k_bottom", "r_bottom"):
        return f"expected a tire's {p.field} > 0"
    if p.kind == "tire" and not v[0] >= 0:
        return f"expected a tire's {p.field} >= 0"
    if p.field == "l0" and not v[0] >= 0:
        return "expected a free length >= 0"
    if p.field == "inertia":
        I = _written(p, v)
        lam = np.linalg.eigvalsh(I)
        if not lam[0] > 1e-12 * abs(lam[2]):
            return f"not positive definite (principal moments {_shown(lam)}); expected all principal moments > 0"
        if not lam[0] + lam[1] >= lam[2] * (1 - 1e-9):
            return (f"violates the triangle inequality (principal moments {_shown(lam)}); expected each principal "
                    "moment <= the sum of the other two")
    return None


def neutral(model: Model) -> Model:
    """`model` with every declared parameter's numbers NaN: what the generator and the cache key see (a tire's
    are neither's: the tires never reach the C)."""
    for p in model.params:
        if p.kind != "tire":
            model = _replace_field(model, p, _written(p, np.full(p.size, np.nan)))
    return model


def on(model: Model, kind: str, index: int, field: str) -> Param | None:
    """The parameter declared on that field, or None."""
    for p in model.params:
        if (p.kind, p.index, p.field) == (kind, index, field):
            return p
    return None
