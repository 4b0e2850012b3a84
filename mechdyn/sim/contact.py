"""Stepping a model with its contact in C (step.c; docs/simulation.md): the step chosen by accuracy, the gains
ramped in, sprocket brakes, anchored or regularized ground friction, and every recorded row's contact metrics.

    sim = ContactSim(dyn)                          # Contact built on the loop's module
    dt = accuracy_step(sim.contact).dt             # 90 samples per contact period
    run = sim.run(q0, qd0, T=4.0, dt=dt)           # ContactRun: t, q, qd and the recorded metrics
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from tqdm import tqdm

from mechdyn.codegen.stepper import SCHEMES
from mechdyn.contact.law import ContactLaw
from mechdyn.contact.params import PIN_TOOTH
from mechdyn.contact.producers import Contact
from mechdyn.core.model import Model
from mechdyn.dynamics import Dynamics, integer, real_array, real_scalar

from . import implicit as imp
from . import native
from .drivers import DriverSet
from .run import IMPLICIT, SimulationDiverged, Trajectory, _schedules, driver_records, step_count

SAMPLES = 90  # steps per contact period (docs/simulation.md "The step")
RAMP_GROUND = 0.02  # s over which the ground's gains ramp in from q0
RAMP_BAND = 0.0  # the band's are not ramped: the model's tensioners push at full preload from t = 0
BRAKE_PERIODS = 2.0  # the brake's period, in contact periods
BRAKE_ZETA = 1.0  # the brake's damping, as a fraction of critical on the sprocket alone
GALPHA = 2  # step.c's scheme number of the implicit schemes (galpha and hht differ in their parameters alone)

# the columns of step.c's recorded rows (MD_AUX)
AUX = ("work", "wx", "wy", "wz", "fx", "fy", "fz", "jmx", "jmy", "jmz", "jx", "jy", "jz", "pin_depth", "pins",
       "face_depth", "faces", "ground_depth", "corners", "u_band", "u_ground", "u_anchor", "u_brake", "crush",
       "work_contact", "u_tire")
STORED = ("u_band", "u_ground", "u_anchor", "u_brake", "u_tire")  # the AUX columns of energy the contact stores
STAGES = ("kinematics", "band", "ground", "dynamics", "integration", "tires")


class _NoBar:
    """tqdm's interface, doing nothing: the progress bar of a run that shows none."""

    def __init__(self, **_) -> None:
        pass

    def __enter__(self) -> "_NoBar":
        return self

    def __exit__(self, *_) -> None:
        return None

    def update(self, _n: int) -> None:
        return None


@dataclass(frozen=True)
class Step:
    """The step chosen by accuracy: `samples` per contact period, the shortest period of the contact laws, or
    for a tire's slip law SLIP_STEPS per its time constant (`period` is then that time constant) when shorter."""
    dt: float
    period: float  # s
    samples: int
    what: str  # which law's period it is

    def describe(self) -> str:
        per = "time constant" if self.what.startswith(SLIP) else "contact period"
        return (f"dt {self.dt:.4g} s: {self.samples} samples per {per} {1e3 * self.period:.3g} ms "
                f"({self.what})")


SLIP = "tire slip"
SLIP_STEPS = 2  # steps per time constant of a tire's slip law: its damping explicit, well inside stability


def contact_periods(con: Contact) -> dict[str, float]:
    """2π·√(m/kn) of each contact law: a band's shoe on its kn, the ground's pad corner on its kn, a tire's wheel
    on its vertical stiffness."""
    out = {f"band {b.track.name}: shoe {b.track.mass:g} kg on kn {b.kn:g}": 2 * math.pi * math.sqrt(b.track.mass / b.kn)
           for b in con.bands}
    if con.ground is not None and len(con.ground.corner_mass):
        m = float(con.ground.corner_mass.min())
        out[f"ground: pad corner {m:g} kg on kn {con.ground.kn:g}"] = 2 * math.pi * math.sqrt(m / con.ground.kn)
    for t in con.tires:
        m, k = con.model.bodies[t.body].mass, t.vertical_force(1e-3) / 1e-3
        out[f"tire {t.name}: wheel {m:g} kg on {k:.4g} N/m"] = 2 * math.pi * math.sqrt(m / k)
    return out


def slip_constants(con: Contact, speed: float = 0.0) -> dict[str, float]:
    """Each TMeasy tire's slip time constant at the lowest rolling speed `speed` m/s of a run: its wheel's spin
    inertia over the damping the law puts on it, from the slip law (dfx0 at twice the nominal load times R² over
    the speed, no less than its blend's start fr_begin) once it is in (speed >= fr_begin), else from the bristle
    (sigma1·R²)."""
    out = {}
    for t in con.tires:
        if t.law != 0:
            continue
        b = con.model.bodies[t.body]
        inertia = float(b.axis @ b.inertia @ b.axis)
        c = t.curve[1] * t.r0**2 / speed if speed >= t.fr_begin else t.sigma1 * t.r0**2
        out[f"{SLIP} {t.name} at {speed:g} m/s: spin {inertia:g} kg·m² on {c:.4g} N·m·s"] = inertia / c
    return out


def accuracy_step(con: Contact, samples: int = SAMPLES, speed: float = 0.0) -> Step:
    """The step of `samples` per contact period (the shortest of contact_periods), or of SLIP_STEPS per a tire's
    slip time constant at the run's lowest rolling speed `speed` (slip_constants) when that is shorter."""
    periods = contact_periods(con)
    if not periods:
        raise ValueError(f"model '{con.model.name}' has no band, ground pad or tire: no contact period to choose a "
                         "step by")
    samples = integer("samples", samples, 1)
    what, period = min(periods.items(), key=lambda kv: kv[1])
    step = Step(period / samples, period, samples, what)
    for what, tau in slip_constants(con, real_scalar("speed", speed)).items():
        if tau / SLIP_STEPS < step.dt:
            step = Step(tau / SLIP_STEPS, tau, SLIP_STEPS, what)
    return step


@dataclass(frozen=True)
class Brake:
    """A torsional spring-damper locking a joint at q0: torque −k·(q − q0) − c·qd on it."""
    body: int
    q0: float
    k: float
    c: float


def sprocket_brakes(con: Contact, q: np.ndarray, period: float) -> tuple[Brake, ...]:
    """A brake on every drive sprocket's joint, locked at its angle in q, whose period on the sprocket's own axle
    inertia is BRAKE_PERIODS contact periods, damped at BRAKE_ZETA."""
    model, out = con.model, []
    for b in con.bands:
        for r in b.rollers:
            if r.kind != PIN_TOOTH:
                continue
            body = model.bodies[r.body]
            a = body.axis  # the sprocket's inertia about its own joint axis through its origin
            inertia = float(a @ body.inertia @ a + body.mass * (body.cg @ body.cg - (a @ body.cg) ** 2))
            k = inertia * (2 * math.pi / (BRAKE_PERIODS * period)) ** 2
            out.append(Brake(r.body, float(q[model.qidx[r.body]]), k, 2 * BRAKE_ZETA * math.sqrt(k * inertia)))
    return tuple(out)


@dataclass(frozen=True)
class ContactRun(Trajectory):
    """A Trajectory with the recorded contact metrics: aux[:, AUX.index(name)], by name through `col`."""
    aux: np.ndarray = field(default_factory=lambda: np.zeros((0, len(AUX))))  # (n, len(AUX))
    seconds: float = 0.0  # wall time of the stepping calls
    stages: dict[str, float] = field(default_factory=dict)  # seconds per stage, when timed

    def col(self, name: str) -> np.ndarray:
        return self.aux[:, AUX.index(name)]


class ContactSim:
    """A compiled model and its contact, stepped together in C. Holds the state the runs carry on: the ground's
    anchors (anchored friction) and the ground impulse."""

    def __init__(self, dyn: Dynamics, model: Model | None = None, law: ContactLaw | None = None,
                 anchored: bool = False, ramp_ground: float = RAMP_GROUND, ramp_band: float = RAMP_BAND,
                 predictor: bool = False,
                 module=None) -> None:
        """`model`: the model the contact reads (its ground, e.g. a rotated terrain; dyn.model by default; same
        bodies). `anchored`: the ground's anchored friction. `ramp_ground`, `ramp_band`: s over which each producer's wrenches
        are ramped in from t = 0 (0: none). `predictor`: Verlet's velocity predictor (off on contact models: docs/simulation.md).
        `module`: the loop compiled over other contact C (a test's planted copy)."""
        model = model or dyn.model
        if model.nbody != dyn.nbody or [b.name for b in model.bodies] != [b.name for b in dyn.model.bodies]:
            raise ValueError(f"the contact model '{model.name}' does not have the bodies of '{dyn.model.name}'")
        self.dyn, self.module = dyn, module or native.module()
        self.ffi, self.lib = self.module.ffi, self.module.lib
        self.contact = Contact(model, law, module=self.module)
        self.ramp_ground, self.ramp_band = real_scalar("ramp_ground", ramp_ground), real_scalar("ramp_band", ramp_band)
        self.predictor = bool(predictor)
        self._anchors = np.zeros((self.contact.ncorner, 4)) if anchored else None
        self._impulse, self._work_contact = np.zeros(6), np.zeros(1)
        self._tire_state = np.zeros(max(2, 2 * self.contact.ntire))  # the tires' bristles (tire.c), carried
        self._brakes: tuple[Brake, ...] = ()
        ffi, lib = self.ffi, dyn.lib
        plant = ffi.new("md_plant *")
        plant.nq, plant.nv, plant.nbody, plant.nact = dyn.nq, dyn.nv, dyn.nbody, dyn.nact
        for f in ("fwd_dyn", "bodies", "drift", "power"):
            name = "fwd_dyn" if f == "fwd_dyn" else f"fwd_dyn_{f}"
            setattr(plant, f, ffi.cast({"fwd_dyn": "md_dyn_fn", "drift": "md_drift_fn"}.get(f, "md_rows_fn"),
                                       dyn.address(name)))
        self._plant, self._lib_keep = plant, lib  # the generated module, alive while its functions are pointed at
        self._ga_end = None  # the last implicit run's end: (q, qd, its true acceleration, scheme, settings)
        self._end: tuple[np.ndarray, np.ndarray, float] | None = None  # the last run's end: q, qd, t
        self._ga = self._implicit_state()
        self._work = {k: np.zeros(n) for k, n in (("X", 18 * dyn.nbody), ("fext", 6 * dyn.nbody), ("fband", 6 * dyn.nbody),
                                                  ("Xs", 18 * dyn.nbody), ("fstat", 6 * dyn.nbody),
                                                  ("astat", max(1, 4 * self.contact.ncorner)),
                                                  ("torque", max(1, self.contact.nroller)), ("tau", dyn.nv),
                                                  ("qdd", dyn.nv), ("qdm", dyn.nv))}

    def _implicit_state(self):
        """galpha.c's md_implicit for this model: the joints' layout, the carried state's arrays (kept alive on
        self)."""
        ffi, nv = self.ffi, self.dyn.nv
        self._ga_arrays = {"acc": np.zeros(nv), "wrench": np.zeros(12), "J": np.zeros(nv * nv),
                           "anchors0": np.zeros(max(1, 4 * self.contact.ncorner)),
                           "tires0": np.zeros(max(2, 2 * self.contact.ntire)), "stats": np.zeros(imp.STATS + 1)}
        self._ga_piv = ffi.new("int[]", nv)
        G = ffi.new("md_implicit *")
        self._ga_layout = imp.fill_layout(ffi, G.plant, self.dyn)
        for k, a in self._ga_arrays.items():
            setattr(G, k, ffi.from_buffer("double[]", a))
        G.piv = self._ga_piv
        return G

    @property
    def anchors(self) -> np.ndarray | None:
        """The ground's anchored-friction state (ncorner, 4) the runs carry on (None: regularized friction): a
        copy."""
        return None if self._anchors is None else self._anchors.copy()

    @property
    def tire_state(self) -> np.ndarray:
        """The tires' bristles (ntire, 2) the runs carry on (tire.c): a copy."""
        return self._tire_state[: 2 * self.contact.ntire].reshape(-1, 2).copy()

    @property
    def impulse(self) -> np.ndarray:
        """The ground's impulse (6: moment about the world origin, force) accumulated over every run so far."""
        return self._impulse.copy()

    @property
    def work_contact(self) -> float:
        """The contact's dissipated work accumulated over the runs with `dissipation` so far, J."""
        return float(self._work_contact[0])

    @property
    def brakes(self) -> tuple[Brake, ...]:
        """The brakes the runs apply (set_brakes checks and sets them)."""
        return self._brakes

    def set_brakes(self, brakes: tuple[Brake, ...]) -> None:
        """Brake these joints from the next run on (() releases them)."""
        for b in brakes:
            if not (0 <= b.body < self.dyn.nbody and self.dyn.model.bodies[b.body].joint in ("revolute", "prismatic")):
                raise ValueError(f"a brake needs a revolute or prismatic joint; body {b.body} is not one")
            if not all(math.isfinite(x) for x in (b.q0, b.k, b.c)) or b.k < 0 or b.c < 0:
                raise ValueError(f"brake on body {b.body}: expected finite q0 and k, c >= 0, got {b}")
        self._brakes = tuple(brakes)
        self.restart()

    def restart(self) -> None:
        """The next implicit run starts afresh, its accelerations computed at its start, even where the last one
        ended (as it does after new brakes or an explicit run, which change what was carried)."""
        self._ga_end = None

    def _scene(self):
        ffi, con = self.ffi, self.contact
        sc = ffi.new("md_scene *")
        sc.bands, sc.nband = con._bands_c, len(con.bands)
        sc.ground = con._ground_c if con.ground is not None else ffi.NULL
        sc.anchors = ffi.NULL if self._anchors is None else ffi.from_buffer("double[]", self._anchors)
        sc.tires, sc.ntire, sc.mu_road = con._tires_c, con.ntire, con.mu_road
        sc.tire_state = ffi.from_buffer("double[]", self._tire_state)
        brakes = ffi.new("md_brake[]", max(1, len(self.brakes)))
        m = self.dyn.model
        for c, b in zip(brakes, self.brakes):
            c.iq, c.iv, c.q0, c.k, c.c = m.qidx[b.body], m.vidx[b.body], b.q0, b.k, b.c
        sc.brakes, sc.nbrake = brakes, len(self.brakes)
        sc.ramp_ground, sc.ramp_band, sc.predictor = self.ramp_ground, self.ramp_band, int(self.predictor)
        for k, a in self._work.items():
            setattr(sc, k, ffi.from_buffer("double[]", a))
        return sc, brakes

    def run(self, q0, qd0, T: float, dt: float, scheme: str = "verlet", stride: int = 1, t0: float = 0.0,
            tau=None, act=None, dt_sched: float | None = None, progress: bool = False,
            timed: bool = False, dissipation: bool = False, implicit: imp.Implicit | None = None) -> ContactRun:
        """Step from (q0, qd0) at time t0 for T seconds, recording the start and every stride-th step with its
        contact metrics (AUX). tau (nv,) and act (nact,) held, or schedules dt_sched apart as in simulate.
        `timed`: split the stepping time into STAGES (clock reads each stage: a little slower). `dissipation`:
        integrate the contact's dissipated power at every step into the work_contact column (the producers run
        twice a step). The implicit schemes ("galpha", "hht") take their settings from `implicit`; adaptive, dt
        is the interval of the output times, each landed on, and a row's wrench is its last step's. A run that
        starts where the last one of the same scheme and settings ended carries its accelerations (and its
        adaptive step) on. Raises SimulationDiverged if the state goes non-finite, NewtonFailed if Newton fails
        or the adaptive step falls below dt_min."""
        dyn = self.dyn
        if scheme not in SCHEMES and scheme not in IMPLICIT:
            raise ValueError(f"unknown scheme {scheme!r}; expected one of {', '.join([*SCHEMES, *IMPLICIT])}")
        if scheme in IMPLICIT:
            implicit = (implicit or imp.Implicit()).checked()
        elif implicit is not None:
            raise ValueError(f"implicit settings were given for the explicit scheme {scheme!r}")
        else:
            self.restart()  # it moves the anchors and the state on without the implicit run's accelerations
        T, dt, t0 = real_scalar("T", T), real_scalar("dt", dt), real_scalar("t0", t0)
        stride = integer("stride", stride, 1)
        if dt <= 0 or T < 0:
            raise ValueError(f"expected dt > 0 and T >= 0; got dt {dt}, T {T}")
        nsteps = step_count(T, dt)
        nsched, (tau_s, _, act_s) = _schedules(dyn, tau, None, act)
        if nsched > 1 and not (dt_sched is not None and real_scalar("dt_sched", dt_sched) > 0):
            raise ValueError(f"a scheduled input ({nsched} samples) needs dt_sched > 0")
        q = np.array(real_array("q0", q0, (dyn.nq,)))
        qd = np.array(real_array("qd0", qd0, (dyn.nv,)))
        dyn._check_quaternions("q0", q)
        nrec = nsteps // stride
        drv, act0 = None, None if act_s is None else act_s[0]
        if dyn.ndriver:  # each run packs the motions as they are now (Dynamics.set_motion)
            q, qd, act0 = self._driven_start(q, qd, t0, act0)
            drv = DriverSet(dyn, self.ffi)
            self._plant.drv = self._ga.plant.drv = drv.struct
        Q, QD, A = np.empty((nrec + 1, dyn.nq)), np.empty((nrec + 1, dyn.nv)), np.zeros((nrec + 1, len(AUX)))
        Q[0], QD[0] = q, qd
        R = driver_records(dyn, drv, q, qd, tau_s[0], None, act0, nrec)
        A[0] = self.metrics(q, qd)
        qdd_prev = self._first_qdd(q, qd, tau_s[0], act0, dt, t0) if self.predictor \
            else np.zeros(dyn.nv)
        work, done_c, timers = np.zeros(1), self.ffi.new("long *"), np.zeros(len(STAGES))
        sc, keep = self._scene()
        sc.dissipation = int(bool(dissipation))
        if scheme in IMPLICIT:
            qdd_prev = self._implicit(sc, scheme, implicit, q, qd)
        ffi = self.ffi
        buf = lambda a: ffi.from_buffer("double[]", a)  # noqa: E731
        chunk = max(stride, (nsteps // 100) // stride * stride) if progress else max(nsteps, 1)
        done, rec, seconds = 0, 1, 0.0
        bar_kind = tqdm if progress else _NoBar  # a disabled tqdm still costs its construction, per call
        with bar_kind(total=nsteps, desc=f"sim {dyn.model.name}", unit="step", unit_scale=True, leave=False) as bar:
            while done < nsteps:
                n = min(chunk, nsteps - done)
                start = time.perf_counter()
                if drv:
                    drv.record(R[rec:])
                dyn.bind()  # the generated functions it calls by address read this thread's parameter values
                got = self.lib.md_sim_contact(
                    self._plant, sc, SCHEMES.get(scheme, GALPHA), n, t0 + done * dt, dt, buf(q), buf(qd), buf(qdd_prev),
                    nsched, dt_sched if nsched > 1 else 1.0, buf(tau_s),
                    ffi.NULL if act_s is None else buf(act_s), stride, buf(Q[rec:]), buf(QD[rec:]), buf(A[rec:]),
                    buf(work), buf(self._impulse), buf(self._work_contact), done_c,
                    buf(timers) if timed else ffi.NULL)
                if scheme in IMPLICIT:
                    self._ga_end = (q.copy(), qd.copy(), qdd_prev.copy(), scheme, implicit)
                seconds += time.perf_counter() - start
                rec += got
                done += done_c[0]
                bar.update(done_c[0])
                if done_c[0] < n:
                    part = self._result(rec, stride, dt, scheme, t0, Q, QD, A, seconds, timers, timed, R)
                    if scheme in IMPLICIT and self._ga.status == 4:
                        raise MemoryError(f"{dyn.model.name}: the implicit step's workspace could not be allocated")
                    if scheme in IMPLICIT and self._ga.status > 1:
                        raise imp.NewtonFailed(dyn.model.name, t0 + done * dt, imp.WHY[self._ga.status], part)
                    raise SimulationDiverged(dyn.model.name, done + 1, t0 + (done + 1) * dt, part)
        del keep
        out = self._result(rec, stride, dt, scheme, t0, Q, QD, A, seconds, timers, timed, R)
        self._end = (out.q[-1].copy(), out.qd[-1].copy(), float(out.t[-1]))
        return out

    def _driven_start(self, q: np.ndarray, qd: np.ndarray, t0: float, act0):
        """The run's start on its drivers' schedules (Dynamics.driven_state). A start where the last run ended, at
        its end time and with the schedules continuing through it, is the stepping's own state: its loops are
        not closed again (a NumPy Newton solve, milliseconds a call) but left as one long run leaves them."""
        q1, qd1, act0 = self.dyn.driven_state(q, qd, t0, act0, close=False)
        end = self._end
        on = lambda a, b: np.abs(a - b).max(initial=0.0) <= 1e-12 * max(1.0, np.abs(b).max(initial=0.0))  # noqa: E731
        if end is not None and end[2] == t0 and np.array_equal(end[0], q) and np.array_equal(end[1], qd) \
                and on(q1, q) and on(qd1, qd):
            return q1, qd1, act0
        return self.dyn.driven_state(q, qd, t0, act0)

    def _implicit(self, sc, scheme: str, opts: imp.Implicit, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        """Hand the scene the implicit scheme's settings and carried state (md_implicit); the true acceleration it
        starts from: the last run's, when this one starts where that ended, else computed by the loop at (q, qd)."""
        nv, G = self.dyn.nv, self._ga
        o = imp.fill_options(G.opts, scheme, opts)
        G.refresh = opts.refresh if opts.refresh is not None else (imp.REFRESH_FIXED if o.fixed else 0)
        G.since = -1
        end = self._ga_end
        carried = (end is not None and end[3:] == (scheme, opts) and np.array_equal(end[0], q)
                   and np.array_equal(end[1], qd))
        G.started = int(carried)
        stats = self._ga_arrays["stats"]
        proposal = stats[6] if carried and opts.adaptive else 0.0
        stats[:] = 0.0
        stats[6] = proposal
        sc.ga = G
        return end[2].copy() if carried else np.zeros(nv)

    def _first_qdd(self, q, qd, tau, act, dt, t0) -> np.ndarray:
        """qdd at the start, with the contact there (ramped as the loop ramps it, the anchors left untouched, the
        brakes on): Verlet's first predictor, as simulate starts fwd_dyn_sim's."""
        con, X = self.contact, self.dyn.bodies(q, qd)
        t = t0 + 0.5 * dt  # Verlet's force time in the first step (the predictor is Verlet's)
        ramp = lambda r: min(1.0, t / r) if r > 0 else 1.0  # noqa: E731  (step.c sim_ramp)
        fext = ramp(self.ramp_band) * con.band_fext(X, dt)
        if con.ground is not None:
            anchors = self.anchors  # a copy: this evaluation must not drag the run's anchors
            fext += ramp(self.ramp_ground) * con.ground_fext(X, dt, anchors)
        tau = np.array(tau, dtype=float)
        for b in self.brakes:
            iq, iv = self.dyn.model.qidx[b.body], self.dyn.model.vidx[b.body]
            tau[iv] -= b.k * (q[iq] - b.q0) + b.c * qd[iv]
        return self.dyn.forward(q, qd, tau, fext, act)

    def _result(self, rec, stride, dt, scheme, t0, Q, QD, A, seconds, timers, timed, R=None) -> ContactRun:
        newton = imp.stats(self._ga_arrays["stats"]) if scheme in IMPLICIT else None
        return ContactRun(t0 + np.arange(rec) * stride * dt, Q[:rec], QD[:rec], dt, scheme, A[:rec, 0], newton,
                          None if R is None else R[:rec, :-1], None if R is None else R[:rec, -1], aux=A[:rec], seconds=seconds, stages=dict(zip(STAGES, timers.tolist())) if timed else {})

    def metrics(self, q, qd) -> np.ndarray:
        """The AUX row at (q, qd) with no step taken: no work, wrench or impulse but the carried impulse."""
        con, X = self.contact, self.dyn.bodies(q, qd)
        out = np.zeros(len(AUX))
        out[7:13] = self._impulse
        out[24] = self._work_contact[0]
        ffi = self.ffi
        d = np.zeros(5)
        self.lib.md_band_depth(con._bands_c, len(con.bands), ffi.from_buffer("double[]", X), ffi.from_buffer("double[]", d))
        out[13:17], out[23] = d[:4], d[4]
        if con.ground is not None:
            g = np.zeros(2)
            self.lib.md_ground_depth(con._ground_c, ffi.from_buffer("double[]", X), ffi.from_buffer("double[]", g))
            out[17:19] = g
            out[20] = con.ground_energy(X)
            if self._anchors is not None:
                out[21] = self.lib.md_ground_anchor_energy(con._ground_c, ffi.from_buffer("double[]", X),
                                                           ffi.from_buffer("double[]", self._anchors))
        out[19] = con.band_energy(X)
        out[22] = sum(0.5 * b.k * (q[self.dyn.model.qidx[b.body]] - b.q0) ** 2 for b in self.brakes)
        return out
