"""The compiled forward dynamics of one model, called with numpy arrays.

    mdl = mechdyn.load("elbow")
    qdd = mdl.forward(q, qd, tau)                  # fext=None, act=None
    QDD = mdl.forward_batch(Q, QD, TAU)            # one C call over n states
    obs = mdl.observe(q, qd); i = mdl.find("poi", "tip")
    R, p, w, v = mdl.body_states(q, qd)            # every body's world pose and velocity

Every entry checks what it hands to C (shape, real dtype, in-place buffers,
integer ranges) and raises ValueError naming the argument, so that no input can
make the C code read or write outside a buffer.
"""
from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from mechdyn.codegen.build import build
from mechdyn.codegen.capi import BODY_ROW, DERIV_FUNCTION, FUNCTION
from mechdyn.codegen.stepper import SCHEMES
from mechdyn.core import motion
from mechdyn.core.loops import close_loops, project_qd, reach_fault
from mechdyn.core.model import Model
from mechdyn.core.motion import Motion
from mechdyn.core.params import declare, read_by_c
from mechdyn.imports import load_model
from mechdyn.parameters import Parameters

# | |Q| - 1 | allowed for a floating body's quaternion. The exact drift keeps mechdyn's own trajectories within
# ~1e-14 of unit norm (tests/test_api_safety.py measures it), and a quaternion off by 1e-9 scales its rotation
# matrix by no more than ~2e-9, so states from mechdyn pass and mistyped or unnormalized attitudes do not.
QUAT_TOL = 1e-9
FIND_KINDS = ("poi", "tsda", "rsda", "act")
_C_LONG_MAX = 2**63 - 1
_C_INT_MAX = 2**31 - 1
_F64 = np.dtype(np.float64)


def real_array(name: str, x, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """x as a C-contiguous float64 array, of exactly `shape` if given; ValueError naming `name` otherwise.

    Real numbers only: bool and integer arrays convert, but complex (the imaginary part would be dropped),
    object and string arrays are refused."""
    if type(x) is np.ndarray and x.dtype is _F64 and x.flags.c_contiguous:  # the hot path: nothing to convert
        a = x
    else:
        try:
            a = np.asarray(x)
        except (ValueError, TypeError) as e:  # ragged nesting and the like
            raise ValueError(f"{name} is not an array of numbers ({e}); expected float64"
                             + (f" of shape {shape}" if shape is not None else "")) from None
        if a.dtype.kind not in "biuf":
            raise ValueError(f"{name} has dtype {a.dtype}; expected real numbers (float64; bool and int convert)"
                             + (f" of shape {shape}" if shape is not None else ""))
        a = np.asarray(a, dtype=np.float64)
        if not a.flags.c_contiguous:
            a = np.ascontiguousarray(a)
    if shape is not None and a.shape != shape:
        raise ValueError(f"{name} has shape {a.shape}, expected {shape}")
    return a


def real_scalar(name: str, x) -> float:
    """x as a float (a finite real number); ValueError naming `name` otherwise."""
    v = float(real_array(name, x, ()))
    if not math.isfinite(v):
        raise ValueError(f"{name} is {v}, expected a finite number")
    return v


def integer(name: str, x, least: int, most: int = _C_LONG_MAX) -> int:
    """x as an int in [least, most] (the range the C parameter takes); ValueError naming `name` otherwise."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        raise ValueError(f"{name} is {x!r} ({type(x).__name__}), expected an integer >= {least}")
    if not least <= x <= most:
        raise ValueError(f"{name} is {x}, expected an integer in [{least}, {most}]")
    return int(x)


class BodyStates(NamedTuple):
    """Every body's pose and velocity in base (world) coordinates, as Dynamics.body_states returns them: views
    into the (nbody, 18) rows of Dynamics.bodies, in the model's body frames (docs/conventions.md)."""
    R: np.ndarray  # (nbody, 3, 3) body-to-world rotation: its columns are the body's axes
    p: np.ndarray  # (nbody, 3) the body frame's origin
    w: np.ndarray  # (nbody, 3) the body's angular velocity
    v: np.ndarray  # (nbody, 3) the velocity of the body frame's origin point


class Derivatives(NamedTuple):
    """qdd and its derivatives at one state (docs/derivatives.md); row i of each block is the derivative of qdd[i].
    dq is on the tangent: a floating body's six columns are δ = [δφ; δp] in its own axes, q ∘ exp(δ)."""
    qdd: np.ndarray  # (nv,)
    dq: np.ndarray  # (nv, nv)
    dqd: np.ndarray  # (nv, nv)
    dtau: np.ndarray  # (nv, nv): H⁻¹, or the constrained inverse with loops
    dact: np.ndarray  # (nv, nact)
    dfext: np.ndarray  # (nv, nbody, 6), zero on the bodies that do not read fext


class Dynamics:
    """A model with its generated, compiled forward dynamics."""

    def __init__(self, model: Model, progress: bool = False, cflags: Sequence[str] | None = None) -> None:
        """With `progress`, a model not yet in the compile cache shows its build stages on a terminal's stderr.
        `cflags`: the compiler flags of the build (default: the production ones, mechdyn.codegen.flags)."""
        self.model = model
        self._progress, self._cflags, self._derivs = progress, cflags, None
        module, self.library = build(model, progress, cflags)
        self._ffi, self._lib = module.ffi, module.lib
        self._params = Parameters(self)
        lib = self._lib
        self.nq, self.nv, self.nact = lib.fwd_dyn_nq, lib.fwd_dyn_nv, lib.fwd_dyn_nact
        self.nbody, self.observe_len, self.flops = lib.fwd_dyn_nbody, lib.fwd_dyn_observe_len, lib.fwd_dyn_flops
        if (self.nq, self.nv, self.nbody, lib.fwd_dyn_bodies_len) != (model.nq, model.nv, model.nbody,
                                                                      BODY_ROW * model.nbody):
            raise RuntimeError(f"compiled module {self.library} does not match model {model.name}")
        floating = [(b.name, i) for b, i in zip(model.bodies, model.qidx) if b.joint == "floating"]
        self._quat_bodies = floating
        self._quat_slots = np.array([i + k for _, i in floating for k in range(4)], dtype=np.intp)
        self._no_fext = np.array([i for i, b in enumerate(model.bodies) if not b.fext], dtype=np.intp)
        runs: list[list[int]] = []  # the byte ranges of those bodies' rows in one (nbody, 6) float64 array, merged
        for i in self._no_fext:
            if runs and runs[-1][1] == 48 * i:
                runs[-1][1] += 48
            else:
                runs.append([48 * i, 48 * (i + 1)])
        self._no_fext_runs, self._zero_fext_bytes = [(lo, hi) for lo, hi in runs], bytes(48 * model.nbody)
        self.ndriver = lib.fwd_dyn_ndriver if model.drivers else 0
        if self.ndriver != len(model.drivers):
            raise RuntimeError(f"compiled module {self.library} does not match model {model.name}'s drivers")
        self._motions = [d.motion for d in model.drivers]
        self._reached: dict[int, tuple[float, float]] = {}  # per driver: the offsets whose loops were seen to close

    @property
    def ffi(self):
        """The compiled module's cffi FFI, for calling the generated C directly (codegen/capi.py's table)."""
        return self._ffi

    @property
    def lib(self):
        """The compiled module's C functions and constants, unchecked: every argument is the caller's to get right
        (the methods below check them). Asking for it sets this model's parameter values in the calling thread
        (bind)."""
        self._params.bind(self._ffi, self._lib)
        return self._lib

    @property
    def params(self) -> Parameters:
        """The declared parameters (docs/params.md): their names and values, which may be set without a compile."""
        return self._params

    def bind(self) -> None:
        """Set this model's parameter values in the calling thread's copy of the generated C's (each module has
        one per thread), as every call through `lib` does: C code that calls the generated functions by address
        (address()) calls this first. Nothing to do for a model without parameters."""
        self._params.bind(self._ffi, self._lib)
        if self._derivs is not None:
            self._params.bind(self._derivs.ffi, self._derivs.lib)

    def __repr__(self) -> str:
        return f"<mechdyn.Dynamics {self.model.name}: nq {self.nq}, nv {self.nv}, nact {self.nact}>"

    # -- argument checking -------------------------------------------------
    def _arr(self, name: str, x, shape: tuple[int, ...], optional: bool = False, inplace: bool = False,
             min_rows: bool = False):
        """x as a C-contiguous float64 array of exactly `shape`, and a cffi array over it (which keeps it alive).

        `inplace`: C writes into x, so it must already be a writeable C-contiguous float64 ndarray (no copy).
        `min_rows`: shape[0] is the least number of rows, as for a buffer C fills only partly."""
        if x is None:
            if optional:
                return None, self._ffi.NULL
            raise ValueError(f"{name} is required: expected shape {shape}")
        if inplace:
            if not (isinstance(x, np.ndarray) and x.dtype == np.float64 and x.flags.c_contiguous
                    and x.flags.writeable):
                raise ValueError(f"{name} must be a writeable C-contiguous float64 numpy array of shape {shape}: "
                                 f"it is written in place")
            a = x
        else:
            a = real_array(name, x)
        if a.shape != shape and not (min_rows and a.ndim == len(shape) and a.shape[1:] == shape[1:]
                                     and a.shape[0] >= shape[0]):
            want = f"({shape[0]} or more rows, {', '.join(map(str, shape[1:]))})" if min_rows else str(shape)
            raise ValueError(f"{name} has shape {a.shape}, expected {want}")
        return a, self._ffi.from_buffer("double[]", a)

    def _fext_shape(self, n: int | None) -> tuple[int, ...]:
        return (self.nbody, 6) if n is None else (n, self.nbody, 6)

    def _check_quaternions(self, name: str, q: np.ndarray) -> None:
        """Each floating body's quaternion in q (..., nq) has | |Q| - 1 | <= QUAT_TOL (NaN is let through)."""
        if not self._quat_bodies:
            return
        if q.ndim == 1:
            x = q.tolist()  # forward's hot path: plain floats are faster than numpy on a few 4-vectors
            if not any(abs(math.hypot(*x[s:s + 4]) - 1.0) > QUAT_TOL for _, s in self._quat_bodies):
                return
        Q = q[..., self._quat_slots].reshape(*q.shape[:-1], len(self._quat_bodies), 4)
        norm = np.sqrt(np.einsum("...i,...i", Q, Q))
        bad = np.abs(norm - 1.0) > QUAT_TOL
        if bad.any():
            *state, j = (int(i) for i in np.argwhere(bad)[0])
            body, slot = self._quat_bodies[j]
            at = f"{name}[{state[0]}]" if state else name
            raise ValueError(f"{at}: the quaternion of floating body '{body}' ({name} slots {slot}..{slot + 3}) has "
                             f"norm {norm[(*state, j)]:.12g}; expected a unit quaternion (| |Q| - 1 | <= {QUAT_TOL:g}):"
                             f" normalize it")

    def _check_fext(self, name: str, f: np.ndarray) -> None:
        """No nonzero row in f (..., nbody, 6) on a body without `fext 1`: the dynamics would ignore it."""
        if not self._no_fext.size:
            return
        if f.ndim == 2:  # one state, on the hot path: those rows' bytes against +0.0's (a -0.0 falls through)
            b, z = f.tobytes(), self._zero_fext_bytes
            if len(self._no_fext) == self.nbody:
                if b == z:
                    return
            elif all(b[lo:hi] == z[lo:hi] for lo, hi in self._no_fext_runs):
                return
        if not np.count_nonzero(f.take(self._no_fext, axis=-2)):
            return
        bodies = [self.model.bodies[j].name for j in self._no_fext if np.count_nonzero(f[..., j, :])]
        raise ValueError(f"{name} has nonzero rows for bodies {', '.join(bodies)}, which do not declare `fext 1`, so "
                         f"the dynamics would ignore them: declare `fext 1` on those bodies in {self.model.path}")

    def _states(self, Q, QD, TAU, FEXT, ACT, optional: bool) -> tuple[int, list]:
        """n, and n states' Q (n, nq), QD and TAU (n, nv), FEXT (n, nbody, 6), ACT (n, nact) as C arrays."""
        n, checked = self._checked_states(Q, QD, TAU, FEXT, ACT, optional)
        return n, [p for _, p in checked]

    def _checked_states(self, Q, QD, TAU, FEXT, ACT, optional: bool) -> tuple[int, list]:
        """n, and the five (array, C array) pairs of _states (None and NULL for an omitted optional one)."""
        Q = real_array("Q", Q)
        if Q.ndim != 2:
            raise ValueError(f"Q has shape {Q.shape}, expected (n, {self.nq})")
        n = integer("the number of states n", Q.shape[0], 0, _C_INT_MAX)
        q = self._arr("Q", Q, (n, self.nq))
        self._check_quaternions("Q", Q)
        f = self._arr("FEXT", FEXT, self._fext_shape(n), optional=optional)
        if f[0] is not None:
            self._check_fext("FEXT", f[0])
        return n, [q, self._arr("QD", QD, (n, self.nv)), self._arr("TAU", TAU, (n, self.nv)), f,
                   self._arr("ACT", ACT, (n, self.nact), optional=optional)]

    def check_states(self, Q, QD, TAU, FEXT=None, ACT=None, required: bool = False) -> list[np.ndarray | None]:
        """Q, QD, TAU, FEXT, ACT of n states checked as forward_batch checks them, as C-contiguous float64 arrays
        (None for an omitted FEXT or ACT; with `required`, omitting them is refused too): for C code of one's own
        that reads them, as the benchmark's timing loops do (mechdyn/bench.py)."""
        return [a for a, _ in self._checked_states(Q, QD, TAU, FEXT, ACT, optional=not required)[1]]

    def _state(self, q, qd, tau, fext, act) -> tuple:
        """One state's q, qd, tau, fext, act as C arrays, checked as forward documents (NULL for an omitted fext
        or act)."""
        qa, pq = self._arr("q", q, (self.nq,))
        self._check_quaternions("q", qa)
        _, pqd = self._arr("qd", qd, (self.nv,))
        _, ptau = self._arr("tau", tau, (self.nv,))
        fa, pf = self._arr("fext", fext, self._fext_shape(None), optional=True)
        if fa is not None:
            self._check_fext("fext", fa)
        _, pa = self._arr("act", act, (self.nact,), optional=True)
        return pq, pqd, ptau, pf, pa

    def address(self, function: str) -> int:
        """The address of the generated C function `function` (one of codegen/capi.py's table), for C code of
        one's own that calls it directly, as the benchmark's timing loops do (mechdyn/bench.py)."""
        if function in DERIV_FUNCTION:  # the derivatives' module, built on first use
            lib, ffi = self.derivatives_lib, self._derivs.ffi
        elif function in FUNCTION:
            lib, ffi = self.lib, self._ffi
        else:
            raise ValueError(f"unknown function {function!r}; expected one of {', '.join([*FUNCTION, *DERIV_FUNCTION])}")
        self.bind()
        return int(ffi.cast("uintptr_t", ffi.addressof(lib, function)))

    # -- the generated functions -------------------------------------------
    def forward(self, q, qd, tau, fext=None, act=None) -> np.ndarray:
        """qdd for one state; fext is (nbody, 6) in base coordinates, act is (nact,).

        Refused with ValueError: wrong shapes, non-real dtypes, a floating body's quaternion off unit norm by more
        than QUAT_TOL, and a nonzero fext row on a body that does not declare `fext 1`."""
        pq, pqd, ptau, pf, pa = self._state(q, qd, tau, fext, act)
        out = np.empty(self.nv)
        self.lib.fwd_dyn(pq, pqd, ptau, pf, pa, self._ffi.from_buffer("double[]", out))
        return out

    def react(self, q, qd, tau, fext=None, act=None) -> tuple[np.ndarray, np.ndarray]:
        """A driven model's qdd and its drivers' reactions (ndriver,): the generalized force each driver exerts on
        its coordinate (N or N m). act carries each driver's prescribed acceleration in its slot (drive)."""
        if not self.ndriver:
            raise ValueError(f"model '{self.model.name}' has no driver; expected a model with 'driver' blocks")
        pq, pqd, ptau, pf, pa = self._state(q, qd, tau, fext, act)
        out, r = np.empty(self.nv), np.empty(self.ndriver)
        self.lib.fwd_dyn_react(pq, pqd, ptau, pf, pa, *(self._ffi.from_buffer("double[]", x) for x in (out, r)))
        return out, r

    # -- drivers -------------------------------------------------------------
    @property
    def motions(self) -> dict[str, Motion]:
        """Each driver's current motion, by name (set_motion replaces one)."""
        return {d.name: m for d, m in zip(self.model.drivers, self._motions)}

    def set_motion(self, name: str, m: Motion) -> None:
        """Drive `name` by motion `m` from now on, without regenerating C. Refused (ValueError) for an unknown
        driver, and for a motion out of its joint's reach (the loops cannot close at either end of its range)."""
        try:
            k = self.model.driver_index(name)
        except KeyError:
            names = ", ".join(d.name for d in self.model.drivers) or "(none)"
            raise ValueError(f"model '{self.model.name}' has no driver '{name}'; its drivers: {names}") from None
        if not isinstance(m, Motion):
            raise ValueError(f"expected a mechdyn.core.motion.Motion for driver '{name}', got {type(m).__name__}")
        if self.model.loops:
            offsets = motion.reach(m)
            lo, hi = self._reached.get(k, (0.0, 0.0))
            if not lo <= min(offsets) <= max(offsets) <= hi:  # the check closes the loops at the motion's extremes
                why = reach_fault(self.model, self.model.q0(), self.model.driven,
                                  self.model.qidx[self.model.drivers[k].body], offsets)
                if why:
                    raise ValueError(f"driver '{name}' ({m.describe()}) is out of its joint's reach: {why}")
                self._reached[k] = (min(lo, *offsets), max(hi, *offsets))
        self._motions[k] = m

    def drive(self, t) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each driver's offset from the design pose, rate and acceleration at time t: three (ndriver,) arrays."""
        t = real_scalar("t", t)
        f = np.array([motion.evaluate(m, t) for m in self._motions]).reshape(-1, 3)
        return f[:, 0].copy(), f[:, 1].copy(), f[:, 2].copy()

    def driven_state(self, q, qd, t: float = 0.0, act=None,
                     close: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(q, qd, act) at time t with each driven coordinate, rate and act slot set by its schedule, and the other
        coordinates moved onto the loops (nearest in velocity space, the driven ones held). close=False leaves
        them: for a state the stepping itself reached at t, already on its schedule and its loops."""
        m = self.model
        q = np.array(real_array("q", q, (self.nq,)))
        qd = np.array(real_array("qd", qd, (self.nv,)))
        act = np.zeros(self.nact) if act is None else np.array(real_array("act", act, (self.nact,)))
        f, fd, fdd = self.drive(t)
        q0 = m.q0()
        for d, x, xd, xdd in zip(m.drivers, f, fd, fdd):
            q[m.qidx[d.body]], qd[m.vidx[d.body]], act[d.act] = q0[m.qidx[d.body]] + x, xd, xdd
        if m.loops and close:
            q = close_loops(m, q, m.driven)
            qd = project_qd(m, q, qd, held=m.driven)
        return q, qd, act

    def forward_batch(self, Q, QD, TAU, FEXT=None, ACT=None) -> np.ndarray:
        """qdd for n states in one C call: Q (n, nq), QD and TAU (n, nv), FEXT (n, nbody, 6), ACT (n, nact);
        checked as in forward, a bad quaternion named by its state index."""
        n, args = self._states(Q, QD, TAU, FEXT, ACT, optional=True)
        out = np.empty((n, self.nv))
        self.lib.fwd_dyn_batch(n, *args, self._ffi.from_buffer("double[]", out))
        return out

    @property
    def derivatives_lib(self):
        """The derivatives' compiled module's C functions and constants (codegen/capi.py's DERIV table), built on
        first use: a translation unit of its own (derivs.py)."""
        if self._derivs is None:
            module, _ = build(self.model, self._progress, self._cflags, unit="derivatives")
            if (module.lib.fwd_dyn_derivs_nv, module.lib.fwd_dyn_derivs_nact) != (self.nv, self.nact):
                raise RuntimeError(f"compiled derivatives module does not match model {self.model.name}")
            self._derivs = module
        self._params.bind(self._derivs.ffi, self._derivs.lib)
        return self._derivs.lib

    @property
    def derivatives_flops(self) -> int:
        """Arithmetic operations per fwd_dyn_derivs call (the forward pass's included), counted at generation time."""
        return self.derivatives_lib.fwd_dyn_derivs_flops

    def _blocks(self, n: int | None) -> list[np.ndarray]:
        lead = () if n is None else (n,)
        nv = self.nv
        return [np.empty((*lead, nv)), np.empty((*lead, nv, nv)), np.empty((*lead, nv, nv)),
                np.empty((*lead, nv, nv)), np.empty((*lead, nv, self.nact)), np.empty((*lead, nv, self.nbody, 6))]

    def derivatives(self, q, qd, tau, fext=None, act=None) -> Derivatives:
        """qdd and its derivatives with respect to q (on the tangent), qd, tau, act and fext at one state, from
        the generated fwd_dyn_derivs; the arguments as forward takes and checks them."""
        lib = self.derivatives_lib
        pq, pqd, ptau, pf, pa = self._state(q, qd, tau, fext, act)
        out = self._blocks(None)
        lib.fwd_dyn_derivs(pq, pqd, ptau, pf, pa, *(self._ffi.from_buffer("double[]", x) for x in out))
        return Derivatives(*out)

    def param_derivatives(self, q, qd, tau, fext=None, act=None) -> tuple[np.ndarray, np.ndarray]:
        """qdd and ∂qdd/∂p (nv, nparam), its derivatives along the declared parameters' slots (params.labels), at
        one state, from the generated fwd_dyn_dparams; ValueError for a model that declares none."""
        if not len(self._params):
            raise ValueError(f"model '{self.model.name}' declares no parameters: load it with params=[...] or a "
                             "'param NAME.FIELD' statement (docs/params.md)")
        if not read_by_c(self.model):
            raise ValueError(f"model '{self.model.name}': the generated dynamics read none of its parameters (the "
                             "contact's and the tires' act through fext), so ∂qdd/∂p at a given fext is zero")
        lib = self.derivatives_lib
        if not lib.fwd_dyn_dparams_ops:
            raise ValueError(f"model '{self.model.name}': ∂qdd/∂p by the straight-line route would exceed its "
                             "operation limit, so fwd_dyn_dparams was not built; the other derivatives are there")
        pq, pqd, ptau, pf, pa = self._state(q, qd, tau, fext, act)
        qdd, dp = np.empty(self.nv), np.empty((self.nv, self._params.values.size))
        lib.fwd_dyn_dparams(pq, pqd, ptau, pf, pa, *(self._ffi.from_buffer("double[]", x) for x in (qdd, dp)))
        return qdd, dp

    def derivatives_batch(self, Q, QD, TAU, FEXT=None, ACT=None) -> Derivatives:
        """derivatives at n states in one C call, each block with a leading axis of n; checked as forward_batch."""
        lib = self.derivatives_lib
        n, args = self._states(Q, QD, TAU, FEXT, ACT, optional=True)
        out = self._blocks(n)
        lib.fwd_dyn_derivs_batch(n, *args, *(self._ffi.from_buffer("double[]", x) for x in out))
        return Derivatives(*out)

    def observe(self, q, qd) -> np.ndarray:
        """POI world position and velocity (6 each), then TSDA length and rate, then RSDA angle and rate."""
        qa, pq = self._arr("q", q, (self.nq,))
        self._check_quaternions("q", qa)
        _, pqd = self._arr("qd", qd, (self.nv,))
        out = np.empty(self.observe_len)
        self.lib.fwd_dyn_observe(pq, pqd, self._ffi.from_buffer("double[]", out))
        return out

    def bodies(self, q, qd) -> np.ndarray:
        """Every body's world pose and velocity, (nbody, 18): row i is body i's R (9, row-major, body to world),
        p (its frame's origin), w (its angular velocity) and v (its origin's velocity), all in base coordinates
        (fwd_dyn_bodies; docs/conventions.md). Refused as in observe: wrong shapes, non-real dtypes, a quaternion
        off unit norm."""
        qa, pq = self._arr("q", q, (self.nq,))
        self._check_quaternions("q", qa)
        _, pqd = self._arr("qd", qd, (self.nv,))
        out = np.empty((self.nbody, BODY_ROW))
        self.lib.fwd_dyn_bodies(pq, pqd, self._ffi.from_buffer("double[]", out))
        return out

    def body_states(self, q, qd) -> BodyStates:
        """bodies(q, qd) split into R (nbody, 3, 3), p, w and v (nbody, 3 each): views into one array."""
        out = self.bodies(q, qd)
        return BodyStates(out[:, :9].reshape(self.nbody, 3, 3), out[:, 9:12], out[:, 12:15], out[:, 15:])

    def find(self, kind: str, name: str) -> int:
        """Index of the entry called `name` among the model's `kind` ("poi", "tsda", "rsda" or "act"), or -1 if
        there is none (as fwd_dyn_find returns). The name must match whole; an unknown kind raises ValueError."""
        if kind not in FIND_KINDS:
            raise ValueError(f"unknown kind {kind!r}; expected one of {', '.join(FIND_KINDS)}")
        if not isinstance(name, str):
            raise ValueError(f"name is {name!r} ({type(name).__name__}), expected a str")
        if "\0" in name:  # C would see only the part before the NUL
            return -1
        return int(self._lib.fwd_dyn_find(kind.encode(), name.encode()))

    def drift(self, q, qd, tau: float) -> np.ndarray:
        """q advanced by tau at constant qd with the generated integration rule (fwd_dyn_drift)."""
        out, pq = self._arr("q", np.array(real_array("q", q)), (self.nq,))  # a copy: C writes into it
        self._check_quaternions("q", out)
        _, pqd = self._arr("qd", qd, (self.nv,))
        self._lib.fwd_dyn_drift(pq, pqd, real_scalar("tau", tau))
        return out

    def check_schedule(self, tau, fext=None, act=None, dt_sched: float = 1.0) -> tuple:
        """Input schedules for stepping in C, checked: tau (nsched, nv), fext (nsched, nbody, 6) and act (nsched,
        nact) share one nsched >= 1, fext's rows as forward checks them; dt_sched must be finite, and > 0 when
        nsched > 1. Returns nsched, dt_sched and the three as C-contiguous float64 arrays (None for an omitted
        fext or act), for fwd_dyn_sim (step) and the implicit stepper alike."""
        nsched = np.shape(tau)[0] if np.ndim(tau) == 2 else 0
        if nsched < 1:
            raise ValueError(f"tau has shape {np.shape(tau)}, expected (nsched, {self.nv}) with nsched >= 1")
        nsched = integer("nsched (the schedule's length)", nsched, 1, _C_INT_MAX)
        dt_sched = real_scalar("dt_sched", dt_sched)
        if nsched > 1 and dt_sched <= 0:
            raise ValueError(f"dt_sched is {dt_sched}, expected > 0 for a schedule of {nsched} samples")
        ta, _ = self._arr("tau", tau, (nsched, self.nv))
        fa, _ = self._arr("fext", fext, (nsched, self.nbody, 6), optional=True)
        if fa is not None:
            self._check_fext("fext", fa)
        aa, _ = self._arr("act", act, (nsched, self.nact), optional=True)
        return nsched, dt_sched, ta, fa, aa

    def step(self, scheme: int, nsteps: int, t0: float, dt: float, q: np.ndarray, qd: np.ndarray, qdd_prev: np.ndarray,
             tau: np.ndarray, fext: np.ndarray | None, act: np.ndarray | None, dt_sched: float,
             stride: int, traj_q: np.ndarray, traj_qd: np.ndarray, work: np.ndarray,
             traj_work: np.ndarray) -> tuple[int, int]:
        """nsteps of fwd_dyn_sim from time t0 on (q, qd, qdd_prev) in place; inputs are (nsched, ...) schedules.

        q, qd, qdd_prev, traj_q and traj_qd are written in place: writeable C-contiguous float64 arrays, the
        trajectory buffers with at least nsteps // stride rows. tau (nsched, nv), fext (nsched, nbody, 6) and act
        (nsched, nact) share one nsched >= 1; dt_sched must be finite and > 0 when nsched > 1. work (1,)
        accumulates the dampers' dissipated work in place, and traj_work (at least nsteps // stride rows) gets it
        at each recorded state. Returns the states recorded and the steps completed: fewer than nsteps if the
        state went non-finite."""
        if scheme not in SCHEMES.values():
            raise ValueError(f"scheme is {scheme!r}, expected one of {sorted(SCHEMES.values())} ({SCHEMES})")
        if self.ndriver:
            raise ValueError(f"model '{self.model.name}' is driven: fwd_dyn_sim cannot evaluate its drivers' motions; "
                             "step it with mechdyn.sim.run.simulate, which steps drivers in C (step.c, galpha.c)")
        nsteps, stride = integer("nsteps", nsteps, 0), integer("stride", stride, 1)
        t0, dt = real_scalar("t0", t0), real_scalar("dt", dt)
        nsched, dt_sched, tau, fext, act = self.check_schedule(tau, fext, act, dt_sched)
        ptau, pf, pa = (self._ffi.NULL if x is None else self._ffi.from_buffer("double[]", x) for x in (tau, fext, act))
        _, pq = self._arr("q", q, (self.nq,), inplace=True)
        self._check_quaternions("q", q)
        _, pqd = self._arr("qd", qd, (self.nv,), inplace=True)
        _, pqdd = self._arr("qdd_prev", qdd_prev, (self.nv,), inplace=True)
        nrec = nsteps // stride  # the rows fwd_dyn_sim writes
        _, ptq = self._arr("traj_q", traj_q, (nrec, self.nq), inplace=True, min_rows=True)
        _, ptqd = self._arr("traj_qd", traj_qd, (nrec, self.nv), inplace=True, min_rows=True)
        _, pw = self._arr("work", work, (1,), inplace=True)
        _, ptw = self._arr("traj_work", traj_work, (nrec,), inplace=True, min_rows=True)
        done = self._ffi.new("long *")
        nrec = self.lib.fwd_dyn_sim(scheme, nsteps, t0, dt, pq, pqd, pqdd, nsched, dt_sched, ptau, pf, pa, stride,
                                     ptq, ptqd, pw, ptw, done)
        return nrec, done[0]


def load(spec: str | os.PathLike | Model, progress: bool = False, floating: bool = False,
         mimic: str = "refuse", params: Sequence[str] = ()) -> Dynamics:
    """Compiled dynamics for a model given by name in models/, by path (a .mech, URDF or MJCF file), or as a parsed
    Model; `progress` as for Dynamics; `floating` (a free joint at a URDF's root link) and `mimic` ("refuse" or
    "free" for a URDF's mimic joints) as for mechdyn.imports.import_model. `params`: more numbers to keep free
    (NAME.FIELD, docs/params.md), after those the file declares."""
    model = spec if isinstance(spec, Model) else load_model(Path(spec) if isinstance(spec, os.PathLike) else spec,
                                                           floating, mimic)
    if params:
        model = declare(model, [params] if isinstance(params, str) else params)
    return Dynamics(model, progress)
