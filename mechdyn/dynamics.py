"""The compiled forward dynamics of one model, called with numpy arrays.

    mdl = mechdyn.load("elbow")
    qdd = mdl.forward(q, qd, tau)                  # fext=None, act=None
    QDD = mdl.forward_batch(Q, QD, TAU)            # one C call over n states
    obs = mdl.observe(q, qd); i = mdl.find("poi", "tip")
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from mechdyn.codegen.build import build
from mechdyn.core.model import Model
from mechdyn.core.parse import load_model


class Dynamics:
    """A model with its generated, compiled forward dynamics."""

    def __init__(self, model: Model) -> None:
        self.model = model
        module, self.library = build(model)
        self._ffi, self._lib = module.ffi, module.lib
        lib = self._lib
        self.nq, self.nv, self.nact = lib.fwd_dyn_nq, lib.fwd_dyn_nv, lib.fwd_dyn_nact
        self.nbody, self.observe_len, self.flops = lib.fwd_dyn_nbody, lib.fwd_dyn_observe_len, lib.fwd_dyn_flops
        if (self.nq, self.nv, self.nbody) != (model.nq, model.nv, model.nbody):
            raise RuntimeError(f"compiled module {self.library} does not match model {model.name}")

    def __repr__(self) -> str:
        return f"<mechdyn.Dynamics {self.model.name}: nq {self.nq}, nv {self.nv}, nact {self.nact}>"

    # -- argument checking -------------------------------------------------
    def _arr(self, name: str, x, shape: tuple[int, ...], optional: bool = False):
        """x as a C-contiguous float64 array of exactly `shape`, and a cffi array over it (which keeps it alive)."""
        if x is None:
            if optional:
                return None, self._ffi.NULL
            raise ValueError(f"{name} is required")
        a = np.ascontiguousarray(x, dtype=np.float64)
        if a.shape != shape:
            raise ValueError(f"{name} has shape {a.shape}, expected {shape}")
        return a, self._ffi.from_buffer("double[]", a)

    def _fext_shape(self, n: int | None) -> tuple[int, ...]:
        return (self.nbody, 6) if n is None else (n, self.nbody, 6)

    def _states(self, Q, QD, TAU, FEXT, ACT, optional: bool) -> tuple[int, list]:
        """n, and n states' Q (n, nq), QD and TAU (n, nv), FEXT (n, nbody, 6), ACT (n, nact) as C arrays."""
        Q = np.asarray(Q)
        if Q.ndim != 2:
            raise ValueError(f"Q has shape {Q.shape}, expected (n, {self.nq})")
        n = Q.shape[0]
        return n, [self._arr("Q", Q, (n, self.nq))[1], self._arr("QD", QD, (n, self.nv))[1],
                   self._arr("TAU", TAU, (n, self.nv))[1],
                   self._arr("FEXT", FEXT, self._fext_shape(n), optional=optional)[1],
                   self._arr("ACT", ACT, (n, self.nact), optional=optional)[1]]

    # -- the generated functions -------------------------------------------
    def forward(self, q, qd, tau, fext=None, act=None) -> np.ndarray:
        """qdd for one state; fext is (nbody, 6) in base coordinates, act is (nact,)."""
        _, pq = self._arr("q", q, (self.nq,))
        _, pqd = self._arr("qd", qd, (self.nv,))
        _, ptau = self._arr("tau", tau, (self.nv,))
        _, pf = self._arr("fext", fext, self._fext_shape(None), optional=True)
        _, pa = self._arr("act", act, (self.nact,), optional=True)
        out = np.empty(self.nv)
        self._lib.fwd_dyn(pq, pqd, ptau, pf, pa, self._ffi.from_buffer("double[]", out))
        return out

    def forward_batch(self, Q, QD, TAU, FEXT=None, ACT=None) -> np.ndarray:
        """qdd for n states in one C call: Q (n, nq), QD and TAU (n, nv), FEXT (n, nbody, 6), ACT (n, nact)."""
        n, args = self._states(Q, QD, TAU, FEXT, ACT, optional=True)
        out = np.empty((n, self.nv))
        self._lib.fwd_dyn_batch(n, *args, self._ffi.from_buffer("double[]", out))
        return out

    def observe(self, q, qd) -> np.ndarray:
        """POI world position and velocity (6 each), then TSDA length and rate, then RSDA angle and rate."""
        _, pq = self._arr("q", q, (self.nq,))
        _, pqd = self._arr("qd", qd, (self.nv,))
        out = np.empty(self.observe_len)
        self._lib.fwd_dyn_observe(pq, pqd, self._ffi.from_buffer("double[]", out))
        return out

    def find(self, kind: str, name: str) -> int:
        """Index of `name` among the model's "poi", "tsda", "rsda" or "act" entries; -1 if unknown."""
        return int(self._lib.fwd_dyn_find(kind.encode(), name.encode()))

    def drift(self, q, qd, tau: float) -> np.ndarray:
        """q advanced by tau at constant qd with the generated integration rule (fwd_dyn_drift)."""
        out, pq = self._arr("q", np.array(q, dtype=np.float64), (self.nq,))
        _, pqd = self._arr("qd", qd, (self.nv,))
        self._lib.fwd_dyn_drift(pq, pqd, tau)
        return out

    def step(self, scheme: int, nsteps: int, t0: float, dt: float, q: np.ndarray, qd: np.ndarray, qdd_prev: np.ndarray,
             tau: np.ndarray, fext: np.ndarray | None, act: np.ndarray | None, dt_sched: float,
             stride: int, traj_q: np.ndarray, traj_qd: np.ndarray, work: np.ndarray,
             traj_work: np.ndarray) -> tuple[int, int]:
        """nsteps of fwd_dyn_sim from time t0 on (q, qd, qdd_prev) in place; inputs are (nsched, ...) schedules.

        work (1,) accumulates the dampers' dissipated work, and traj_work gets it at each recorded state.
        Returns the states recorded and the steps completed: fewer than nsteps if the state went non-finite."""
        n = tau.shape[0]
        ptr = lambda name, a, shape, opt=False: self._arr(name, a, shape, opt)[1]  # noqa: E731
        for name, a in (("q", q), ("qd", qd), ("qdd_prev", qdd_prev), ("traj_q", traj_q), ("traj_qd", traj_qd),
                        ("work", work), ("traj_work", traj_work)):
            if not (isinstance(a, np.ndarray) and a.dtype == np.float64 and a.flags.c_contiguous):
                raise ValueError(f"{name} must be a C-contiguous float64 array: it is written in place")
        done = self._ffi.new("long *")
        nrec = self._lib.fwd_dyn_sim(
            scheme, nsteps, t0, dt, ptr("q", q, (self.nq,)), ptr("qd", qd, (self.nv,)), ptr("qdd_prev", qdd_prev, (self.nv,)),
            n, dt_sched, ptr("tau", tau, (n, self.nv)), ptr("fext", fext, (n, self.nbody, 6), True),
            ptr("act", act, (n, self.nact), True), stride,
            ptr("traj_q", traj_q, traj_q.shape), ptr("traj_qd", traj_qd, traj_qd.shape),
            ptr("work", work, (1,)), ptr("traj_work", traj_work, traj_work.shape), done)
        return nrec, done[0]

    def time_per_call(self, Q, QD, TAU, FEXT, ACT, ncalls: int) -> tuple[float, float]:
        """Seconds per fwd_dyn call timed inside C over a pool of states, and the checksum."""
        n, args = self._states(Q, QD, TAU, FEXT, ACT, optional=False)
        chk = self._ffi.new("double *")
        return self._lib.fwd_dyn_bench(ncalls, n, *args, chk), chk[0]

    def time_per_state_batched(self, Q, QD, TAU, FEXT, ACT, nrounds: int) -> tuple[float, float]:
        """Seconds per state of fwd_dyn_batch (four states per SIMD pass) over `nrounds` passes through a pool of
        states, timed inside C, and the sum of the last pass's outputs."""
        n, args = self._states(Q, QD, TAU, FEXT, ACT, optional=False)
        out, chk = np.empty((n, self.nv)), self._ffi.new("double *")
        return self._lib.fwd_dyn_bench_batch(nrounds, n, *args, self._ffi.from_buffer("double[]", out), chk), chk[0]


def load(spec: str | os.PathLike | Model) -> Dynamics:
    """Compiled dynamics for a model given by name in models/, by path, or as a parsed Model."""
    return Dynamics(spec if isinstance(spec, Model) else load_model(Path(spec) if isinstance(spec, os.PathLike) else spec))
