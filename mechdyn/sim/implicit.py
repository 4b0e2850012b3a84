"""The implicit generalized-α integrator (docs/implicit.md): Arnold and Brüls' form, a floating body on SE(3),
Newton on the exact iteration matrix from the generated derivatives, stepped in C (galpha.c).

    from mechdyn.sim.implicit import Implicit
    tr = simulate(dyn, q0, qd0, T=1.0, dt=1e-3, scheme="galpha", implicit=Implicit(rho_inf=0.8))
    tr.newton.iterations / tr.newton.steps     # Newton corrections per step

Two modes: to a tolerance (Newton until the velocity change is below `tol`; an adaptive step with `adaptive`),
or the real-time mode, `iterations=N`: exactly N corrections every step, every step the same instructions.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType

import numpy as np

from mechdyn.codegen.build import build_source
from mechdyn.contact.native import api

_SOURCE = Path(__file__).parent / "galpha.c"
STATS = 8  # galpha.c's MD_GA_STATS


@dataclass(frozen=True)
class Scheme:
    """Generalized-α's four parameters (Chung and Hulbert's names): second order when γ = ½ + α_f − α_m."""
    alpha_m: float
    alpha_f: float
    beta: float
    gamma: float

    @classmethod
    def galpha(cls, rho_inf: float) -> Scheme:
        """The parameters that damp ω h → ∞ to the spectral radius ρ∞ in [0, 1] and keep second order with the
        least low-frequency damping (Chung and Hulbert 1993)."""
        if not 0.0 <= rho_inf <= 1.0:
            raise ValueError(f"rho_inf is {rho_inf}, expected a spectral radius in [0, 1]")
        am, af = (2 * rho_inf - 1) / (rho_inf + 1), rho_inf / (rho_inf + 1)
        gamma = 0.5 + af - am
        return cls(am, af, 0.25 * (gamma + 0.5) ** 2, gamma)

    @classmethod
    def hht(cls, alpha: float) -> Scheme:
        """HHT-α, α in [−1/3, 0] (Hilber, Hughes, Taylor 1977; Chrono's sign): α_m = 0, α_f = −α, γ = ½ − α,
        β = (1 − α)²/4; its ρ∞ is (1 + α)/(1 − α)."""
        if not -1.0 / 3.0 <= alpha <= 0.0:
            raise ValueError(f"alpha is {alpha}, expected HHT's alpha in [-1/3, 0]")
        return cls(0.0, -alpha, 0.25 * (1 - alpha) ** 2, 0.5 - alpha)


REFRESH_FIXED = 50  # steps between the contact loop's matrices in the real-time mode (docs/implicit.md)


@dataclass(frozen=True)
class Implicit:
    """How the implicit schemes step. `rho_inf` sets "galpha", `alpha` sets "hht"; `scheme`, if given, overrides
    both (a test's planted parameters). `iterations`: exactly that many Newton corrections per step (the
    real-time mode), or None: corrections until |γ′h Δqdd|∞ <= tol (1 + |qd|∞), at most max_iter. `adaptive`:
    the step follows the local error estimate h² (β − 1/6) Δqdd within rtol, atol (per coordinate, atol + rtol
    |Δ_i|), landing on every multiple of dt; dt is then the output interval. `refresh` (the contact loop only,
    whose matrix is built by differences and kept across steps): rebuild it at least every `refresh` steps (0:
    only when Newton slows; None: 0 to a tolerance, REFRESH_FIXED in the real-time mode, which never sees Newton
    slow)."""
    rho_inf: float = 0.8
    alpha: float = -0.1
    iterations: int | None = None
    tol: float = 1e-10
    max_iter: int = 25
    adaptive: bool = False
    rtol: float = 1e-6
    atol: float = 1e-9
    dt_min: float = 1e-12
    dt_max: float = math.inf
    refresh: int | None = None
    scheme: Scheme | None = None

    def parameters(self, name: str) -> Scheme:
        """The scheme's parameters for `name` ("galpha" or "hht")."""
        if self.scheme is not None:
            return self.scheme
        return Scheme.galpha(self.rho_inf) if name == "galpha" else Scheme.hht(self.alpha)

    def checked(self) -> Implicit:
        """Itself, or ValueError naming the setting that cannot run."""
        if self.iterations is not None and not (isinstance(self.iterations, int) and 1 <= self.iterations <= 1000):
            raise ValueError(f"iterations is {self.iterations!r}, expected None or an int in [1, 1000]")
        if not (isinstance(self.max_iter, int) and 1 <= self.max_iter <= 1000):
            raise ValueError(f"max_iter is {self.max_iter!r}, expected an int in [1, 1000]")
        if self.iterations is not None and self.adaptive:
            raise ValueError("an adaptive step needs Newton to converge: give iterations=None with adaptive=True")
        for k in ("tol", "rtol", "atol", "dt_min"):
            if not (math.isfinite(getattr(self, k)) and getattr(self, k) > 0):
                raise ValueError(f"{k} is {getattr(self, k)!r}, expected finite and > 0")
        if self.refresh is not None and not (isinstance(self.refresh, int) and self.refresh >= 0):
            raise ValueError(f"refresh is {self.refresh!r}, expected None or an int >= 0")
        if self.iterations is not None and self.refresh == 0:
            raise ValueError("the real-time mode never sees Newton slow, so its kept matrix must be rebuilt on a "
                             "schedule: give refresh > 0 (or None)")
        if not self.dt_max > self.dt_min:
            raise ValueError(f"dt_max {self.dt_max} must exceed dt_min {self.dt_min}")
        return self


@dataclass(frozen=True)
class NewtonStats:
    """What the implicit stepper did over a run."""
    steps: int        # steps accepted
    iterations: int   # Newton corrections in them
    most: int         # the most corrections in one step
    rejected: int     # steps rejected by the error estimate (adaptive)
    h_min: float      # the smallest step accepted (s)
    h_max: float      # the largest (s)
    last_change: float  # the largest last correction |γ′h Δqdd|∞ of a step: what a fixed count leaves
    matrices: int = 0   # iteration matrices built by differences (the contact loop's)

    @property
    def per_step(self) -> float:
        """Newton corrections per accepted step."""
        return self.iterations / max(self.steps, 1)

    def __add__(self, later: NewtonStats) -> NewtonStats:
        """The stats of this run followed by `later` (a run that continues it); a run of no steps adds none."""
        if not later.steps or not self.steps:
            return later if not self.steps else self
        return NewtonStats(self.steps + later.steps, self.iterations + later.iterations, max(self.most, later.most),
                           self.rejected + later.rejected, min(self.h_min, later.h_min), max(self.h_max, later.h_max),
                           max(self.last_change, later.last_change), self.matrices + later.matrices)


def compile(text: str | None = None) -> ModuleType:  # noqa: A001  (the module's verb)
    """The cffi module of galpha.c's text (a test's planted copy; the product's where None)."""
    from .drivers import motion_source  # here: drivers.py imports dynamics, which this module's users import first

    text = _SOURCE.read_text() if text is None else text
    motion = motion_source()
    (decl,) = api(text)
    (motion_api,) = api(motion)
    return build_source("galpha", motion_api + decl, motion + "\n" + text)


@cache
def module() -> ModuleType:
    """The product's implicit stepper."""
    return compile()


class Stepper:
    """A model's plant for galpha.c: its joints' layout and the generated functions' addresses (the
    derivatives' module built on first use; refused past its size limit)."""

    def __init__(self, dyn, mod: ModuleType | None = None) -> None:
        self.dyn, self.mod = dyn, module() if mod is None else mod
        ffi = self.mod.ffi
        p = ffi.new("md_ga_plant *")
        self._keep = fill_layout(ffi, p, dyn)
        p.derivs = ffi.cast("md_ga_derivs_fn", dyn.address("fwd_dyn_derivs"))
        p.power = ffi.cast("md_ga_power_fn", dyn.address("fwd_dyn_power"))
        self.plant = p

    def options(self, name: str, opts: Implicit):
        """galpha.c's md_ga_opts for scheme `name` with `opts`."""
        return fill_options(self.mod.ffi.new("md_ga_opts *"), name, opts)


def fill_layout(ffi, p, dyn) -> list:
    """galpha.c's md_ga_plant p (of any module that compiled galpha.c) given dyn's sizes and its joints' layout
    for q ∘ exp(Δ): each joint floating or not, its q and qd slots. Returns the arrays p points into, for the
    caller to keep alive."""
    model = dyn.model
    kinds = [int(b.joint == "floating") for b in model.bodies]
    keep = [ffi.new("int[]", x or [0]) for x in (kinds, list(model.qidx), list(model.vidx))]
    p.nq, p.nv, p.nbody, p.nact, p.njoint = dyn.nq, dyn.nv, dyn.nbody, dyn.nact, len(kinds)
    p.kind, p.iq, p.iv = keep
    return keep


def fill_options(o, name: str, opts: Implicit):
    """galpha.c's md_ga_opts o (a cffi struct of any module that compiled galpha.c) filled for scheme `name` with
    `opts`; o."""
    s = opts.parameters(name)
    o.alpha_m, o.alpha_f, o.beta, o.gamma = s.alpha_m, s.alpha_f, s.beta, s.gamma
    o.max_iter = opts.iterations if opts.iterations is not None else opts.max_iter
    o.fixed, o.tol, o.adaptive = int(opts.iterations is not None), opts.tol, int(opts.adaptive)
    o.rtol, o.atol, o.dt_min, o.dt_max = opts.rtol, opts.atol, opts.dt_min, min(opts.dt_max, 1e300)
    return o


def start(dyn, q: np.ndarray, qd: np.ndarray, tau, fext, act) -> tuple[np.ndarray, np.ndarray]:
    """A run's starting true and pseudo-accelerations: both f(q, qd) (Arnold and Brüls' consistent start; a
    pseudo-acceleration started anywhere else lags the true one by a geometric tail, α_m / (α_m − 1) a step)."""
    qdd = dyn.forward(q, qd, tau, fext, act)
    return qdd, qdd.copy()


def stats(raw: np.ndarray) -> NewtonStats:
    """galpha.c's stats array as NewtonStats."""
    return NewtonStats(int(raw[0]), int(raw[1]), int(raw[2]), int(raw[3]), float(raw[4]), float(raw[5]),
                       float(raw[7]), int(raw[8]) if len(raw) > STATS else 0)


class NewtonFailed(RuntimeError):
    """Newton did not converge at a fixed step (or the adaptive step fell below dt_min): `t` is where the
    failing step started, `trajectory` the states recorded before it."""

    def __init__(self, model: str, t: float, why: str, trajectory) -> None:
        super().__init__(f"{model}: the implicit step from t = {t:.6g} s failed: {why}")
        self.t, self.trajectory = t, trajectory


WHY = {2: "Newton did not converge within max_iter corrections (a smaller dt, or a larger max_iter)",
       3: "the adaptive step fell below dt_min", 4: "out of memory"}
