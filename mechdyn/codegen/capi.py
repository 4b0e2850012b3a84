"""The generated C API, declared once: every exported function and constant of a model's translation unit.

The table below is the only place the API is written. generate.py and
stepper.py take each exported definition's header from `Function.header`
and each constant's definition from `Constant.definition`, and build.py hands
`CDEF` (one declaration per entry, with its comment) to cffi, so the
prototypes the compiler checks the bodies against and the ones cffi calls
through are the same text. docs/generator.md shows the declarations.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

GENERATOR_VERSION = "14"  # bump whenever the emitted code changes for the same model


@dataclass(frozen=True)
class Function:
    name: str
    returns: str  # the C return type
    params: tuple[str, ...]  # C parameter declarations, "const double *q"
    comment: str  # one line: what it computes
    breaks: tuple[int, ...] = ()  # the parameters that start a new line of the definition's header

    def header(self) -> str:
        """The definition's header in the translation unit: `returns name(params)`, broken before `breaks`,
        continuation lines aligned under the first parameter."""
        lead = f"{self.returns} {self.name}("
        lines, start = [], 0
        for end in (*self.breaks, len(self.params)):
            lines.append(", ".join(self.params[start:end]))
            start = end
        return lead + (",\n" + " " * len(lead)).join(lines) + ")"

    def declaration(self) -> str:
        """The prototype on one line, with its comment: what cffi is given."""
        return f"{self.returns} {self.name}({', '.join(self.params)});  /* {self.comment} */"


@dataclass(frozen=True)
class Constant:
    name: str
    type: str  # the C type of the const object
    comment: str

    def definition(self, value: int) -> str:
        """The constant's definition in the translation unit."""
        return f"const {self.type} {self.name} = {value};"

    def declaration(self) -> str:
        return f"const {self.type} {self.name};  /* {self.comment} */"


BODY_ROW = 18  # doubles per body in fwd_dyn_bodies' out: R (9, row-major, body to world), p, w, v

_STATE = ("const double *q", "const double *qd", "const double *tau", "const double *fext", "const double *act")

CONSTANTS = (
    Constant("fwd_dyn_nq", "int", "position coordinates (a floating body has 7: quaternion, then position)"),
    Constant("fwd_dyn_nv", "int", "velocity coordinates, the length of qd, tau and qdd"),
    Constant("fwd_dyn_nact", "int", "act slots, the length of act"),
    Constant("fwd_dyn_nbody", "int", "bodies: fext is nbody rows of 6 (moment, then force)"),
    Constant("fwd_dyn_observe_len", "int", "the length of fwd_dyn_observe's obs"),
    Constant("fwd_dyn_bodies_len", "int", f"the length of fwd_dyn_bodies' out: {BODY_ROW} per body"),
    Constant("fwd_dyn_flops", "long", "arithmetic operations per fwd_dyn call, counted at generation time"),
)

FUNCTIONS = (
    Function("fwd_dyn", "void", (*_STATE, "double *qdd"),
             "qdd at one state; fext (nbody x 6) and act may be NULL"),
    Function("fwd_dyn_batch", "void", ("int n", *_STATE, "double *qdd"),
             "qdd at n states, rows after rows, four per SIMD pass; fext and act may be NULL"),
    Function("fwd_dyn_observe", "void", ("const double *q", "const double *qd", "double *obs"),
             "POI positions and velocities, TSDA l and l', RSDA q and q' into obs[observe_len]"),
    Function("fwd_dyn_bodies", "void", ("const double *q", "const double *qd", "double *out"),
             f"every body's world pose and velocity: nbody rows of {BODY_ROW}, R (9, row-major, body to world), "
             "p, w, v"),
    Function("fwd_dyn_find", "int", ("const char *kind", "const char *name"),
             "a name's index among kind \"poi\" \"tsda\" \"rsda\" \"act\"; -1 no such name, -2 no such kind"),
    Function("fwd_dyn_drift", "void", ("double *q", "const double *qd", "double tau"),
             "q advanced in place by tau at constant qd, exactly (a floating body's attitude by its exponential)"),
    Function("fwd_dyn_power", "void", ("const double *q", "const double *qd", "double *p"),
             "p[0] = the power the model's dampers dissipate at (q, qd): the TSDAs' c l'^2 and the RSDAs' c q'^2"),
    Function("fwd_dyn_sim", "long",
             ("int scheme", "long nsteps", "double t0", "double dt", "double *q", "double *qd", "double *qdd_prev",
              "int nsched", "double dt_sched", "const double *tau", "const double *fext", "const double *act",
              "long stride", "double *traj_q", "double *traj_qd", "double *work", "double *traj_work", "long *done"),
             "nsteps of Euler (0) or Verlet (1) in place, every stride-th state recorded; returns the states recorded",
             breaks=(7, 12)),
)

# A driven model's (driven.py) further API: fwd_dyn is fwd_dyn_react with its reactions dropped.
DRIVEN_CONSTANTS = (
    Constant("fwd_dyn_ndriver", "int", "drivers: the length of fwd_dyn_react's r; act slot of driver k's f'' "
                                       "is fwd_dyn_find(\"act\", its name)"),
)
DRIVEN_FUNCTIONS = (
    Function("fwd_dyn_react", "void", (*_STATE, "double *qdd", "double *r"),
             "fwd_dyn, and r[ndriver]: the generalized force each driver exerts on its coordinate"),
)

# The derivatives' module (derivs.py), a translation unit of its own, compiled when they are first asked for.
_BLOCKS = ("double *qdd", "double *dq", "double *dqd", "double *dtau", "double *dact", "double *dfext")

DERIV_CONSTANTS = (
    Constant("fwd_dyn_derivs_nv", "int", "velocity coordinates: every block has nv rows"),
    Constant("fwd_dyn_derivs_nact", "int", "act slots: the columns of dact"),
    Constant("fwd_dyn_derivs_nbody", "int", "bodies: dfext has 6 nbody columns"),
    Constant("fwd_dyn_derivs_flops", "long", "arithmetic operations per fwd_dyn_derivs call (fwd_dyn's included)"),
    Constant("fwd_dyn_derivs_loops", "int", "1: the loop route (loops over the tree's tables); 0: straight-line"),
)

DERIV_FUNCTIONS = (
    Function("fwd_dyn_derivs", "void", (*_STATE, *_BLOCKS),
             "qdd and its derivatives, row-major, row i that of qdd[i]: dq (nv x nv, on the tangent), dqd (nv x nv), "
             "dtau (nv x nv), dact (nv x nact), dfext (nv x 6 nbody); fext and act may be NULL", breaks=(5,)),
    Function("fwd_dyn_derivs_batch", "void", ("int n", *_STATE, *_BLOCKS),
             "fwd_dyn_derivs at n states, each input and block after the one before; fext and act may be NULL",
             breaks=(6,)),
)

# A model with declared parameters (declared.py): their sensitivities, in the derivatives' module.
PARAM_FUNCTION = Function("fwd_dyn_dparams", "void", (*_STATE, "double *qdd", "double *dparam"),
                          "qdd and dparam (nv x nparam, row-major): its derivatives along the declared parameters; "
                          "fext and act may be NULL")

FUNCTION = {f.name: f for f in (*FUNCTIONS, *DRIVEN_FUNCTIONS)}
CONSTANT = {c.name: c for c in (*CONSTANTS, *DRIVEN_CONSTANTS)}
DERIV_FUNCTION = {f.name: f for f in DERIV_FUNCTIONS}
DERIV_CONSTANT = {c.name: c for c in DERIV_CONSTANTS}

CDEF = "\n".join(x.declaration() for x in (*CONSTANTS, *FUNCTIONS)) + "\n"
DRIVEN_CDEF = "\n".join(x.declaration() for x in (*DRIVEN_CONSTANTS, *DRIVEN_FUNCTIONS)) + "\n"
DERIV_CDEF = "\n".join(x.declaration() for x in (*DERIV_CONSTANTS, *DERIV_FUNCTIONS)) + "\n"

# an exported (not static) definition's header in emitted C: return type, name, parameters, then the body's brace
_DEFINITION = re.compile(r"^(?!static\b)(\w+) (fwd_dyn\w*)\(([^)]*)\)\n\{", re.M)
_CONST = re.compile(r"^const (\w+) (fwd_dyn\w*) = ", re.M)


def exported(source: str) -> tuple[dict[str, tuple[str, tuple[str, ...]]], dict[str, str]]:
    """The exported functions (name: return type, parameters) and constants (name: type) defined in emitted C,
    read back from its text: what a test compares with the table."""
    funcs = {m[2]: (m[1], tuple(" ".join(p.split()) for p in m[3].split(","))) for m in _DEFINITION.finditer(source)}
    return funcs, {m[2]: m[1] for m in _CONST.finditer(source)}
