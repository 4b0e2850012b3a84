"""Issue 16, items 2 and 3: no Python argument makes the C read or write outside a buffer, and inputs that used to
be accepted and then give garbage (non-unit quaternions, ignored fext rows, partial find names, complex arrays)
are refused; a held input beside a scheduled one is accepted."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import mechdyn
from mechdyn import bench
from mechdyn.dynamics import QUAT_TOL
from mechdyn.sim.run import simulate

ROOT = Path(__file__).resolve().parents[1]

# Each case: a label, a statement run in a child process, and a fragment its ValueError must contain. `d` is
# springpend (fext on pend1 only, 2 act slots, 3 POIs), `e` elbow (no fext, no act), `sat` satellite (floating bus).
CASES = [
    ("forward q too long", "d.forward(np.zeros(3), qd, tau)", "q has shape (3,), expected (2,)"),
    ("forward tau 2-D", "d.forward(q, qd, np.zeros((2, 1)))", "tau has shape (2, 1)"),
    ("forward fext flat", "d.forward(q, qd, tau, np.zeros(6))", "fext has shape (6,)"),
    ("forward act short", "d.forward(q, qd, tau, None, np.zeros(1))", "act has shape (1,), expected (2,)"),
    ("forward object dtype", "d.forward([None, None], qd, tau)", "q has dtype object"),
    ("forward string dtype", "d.forward(['1', '2'], qd, tau)", "q has dtype <U1"),
    ("forward ragged", "d.forward([[1.0], [1.0, 2.0]], qd, tau)", "q is not an array of numbers"),
    ("batch QD short", "d.forward_batch(np.zeros((5, 2)), np.zeros((4, 2)), np.zeros((5, 2)))",
     "QD has shape (4, 2), expected (5, 2)"),
    ("batch FEXT bodies", "d.forward_batch(Z5, Z5, Z5, np.zeros((5, 1, 6)))", "FEXT has shape (5, 1, 6)"),
    ("batch ACT flat", "d.forward_batch(Z5, Z5, Z5, None, np.zeros(5))", "ACT has shape (5,), expected (5, 2)"),
    ("batch Q 1-D", "d.forward_batch(np.zeros(2), Z5, Z5)", "Q has shape (2,)"),
    ("observe q short", "d.observe(np.zeros(1), qd)", "q has shape (1,)"),
    ("observe qd long", "d.observe(q, np.zeros(40))", "qd has shape (40,)"),
    ("drift q short", "d.drift(np.zeros(1), qd, 0.1)", "q has shape (1,)"),
    ("drift tau complex", "d.drift(q, qd, 1j)", "tau has dtype complex128"),
    ("find kind", "d.find('body', 'hook')", "unknown kind 'body'"),
    ("find bytes name", "d.find('poi', b'hook')", "expected a str"),
    ("step traj_q one row", "d.step(1, 100000, 0.0, 1e-3, *w(), T1, None, None, 1.0, 1, np.empty((1, 2)), "
     "np.empty((100000, 2)), np.zeros(1), np.empty(100000))", "traj_q has shape (1, 2), expected (100000 or more rows, 2)"),
    ("step traj_qd short", "d.step(1, 100000, 0.0, 1e-3, *w(), T1, None, None, 1.0, 10, np.empty((10000, 2)), "
     "np.empty((9999, 2)), np.zeros(1), np.empty(10000))", "traj_qd has shape (9999, 2), expected (10000 or more rows, 2)"),
    ("step traj_work short", "d.step(1, 100, 0.0, 1e-3, *w(), T1, None, None, 1.0, 1, np.empty((100, 2)), "
     "np.empty((100, 2)), np.zeros(1), np.empty(99))", "traj_work has shape (99,), expected (100 or more rows"),
    ("step work scalar", "d.step(1, 10, 0.0, 1e-3, *w(), T1, None, None, 1.0, 1, np.empty((10, 2)), "
     "np.empty((10, 2)), np.zeros(2), np.empty(10))", "work has shape (2,), expected (1,)"),
    ("step traj_q columns", "d.step(1, 10, 0.0, 1e-3, *w(), T1, None, None, 1.0, 1, np.empty((10, 1)), "
     "np.empty((10, 2)), np.zeros(1), np.empty(10))", "traj_q has shape (10, 1)"),
    ("step q strided", "d.step(1, 10, 0.0, 1e-3, np.zeros(4)[::2], qd.copy(), qd.copy(), T1, None, None, 1.0, 1, "
     "*traj(10))", "q must be a writeable C-contiguous float64"),
    ("step q read-only", "d.step(1, 10, 0.0, 1e-3, ro(np.zeros(2)), qd.copy(), qd.copy(), T1, None, None, 1.0, 1, "
     "*traj(10))", "q must be a writeable"),
    ("step qdd_prev float32", "d.step(1, 10, 0.0, 1e-3, q.copy(), qd.copy(), np.zeros(2, np.float32), T1, None, "
     "None, 1.0, 1, *traj(10))", "qdd_prev must be a writeable C-contiguous float64"),
    ("step empty schedule", "d.step(1, 10, 0.0, 1e-3, *w(), np.zeros((0, 2)), None, None, 1.0, 1, *traj(10))",
     "expected (nsched, 2) with nsched >= 1"),
    ("step fext shorter than tau", "d.step(1, 10, 0.0, 1e-3, *w(), np.zeros((3, 2)), np.zeros((1, 2, 6)), None, "
     "1e-3, 1, *traj(10))", "fext has shape (1, 2, 6), expected (3, 2, 6)"),
    ("step act shorter than tau", "d.step(1, 10, 0.0, 1e-3, *w(), np.zeros((3, 2)), None, np.zeros((1, 2)), "
     "1e-3, 1, *traj(10))", "act has shape (1, 2), expected (3, 2)"),
    ("step dt_sched negative", "d.step(1, 10, 0.0, 1e-3, *w(), np.zeros((3, 2)), None, None, -1e-3, 1, *traj(10))",
     "dt_sched is -0.001"),
    ("step dt_sched nan", "d.step(1, 10, 0.0, 1e-3, *w(), np.zeros((3, 2)), None, None, nan, 1, *traj(10))",
     "dt_sched is nan"),
    ("step stride 0", "d.step(1, 10, 0.0, 1e-3, *w(), T1, None, None, 1.0, 0, *traj(10))", "stride is 0"),
    ("step nsteps negative", "d.step(1, -5, 0.0, 1e-3, *w(), T1, None, None, 1.0, 1, *traj(10))", "nsteps is -5"),
    ("step nsteps float", "d.step(1, 2.5, 0.0, 1e-3, *w(), T1, None, None, 1.0, 1, *traj(10))", "nsteps is 2.5"),
    ("step scheme", "d.step(7, 10, 0.0, 1e-3, *w(), T1, None, None, 1.0, 1, *traj(10))", "scheme is 7"),
    ("step dt nan", "d.step(1, 10, 0.0, nan, *w(), T1, None, None, 1.0, 1, *traj(10))", "dt is nan"),
    ("simulate dt_sched negative", "simulate(d, q, qd, 0.1, 1e-3, tau=np.zeros((10, 2)), dt_sched=-1e-3)",
     "dt_sched is -0.001"),
    ("simulate dt_sched nan", "simulate(d, q, qd, 0.1, 1e-3, tau=np.zeros((10, 2)), dt_sched=nan)",
     "dt_sched is nan"),
    ("simulate dt_sched missing", "simulate(d, q, qd, 0.1, 1e-3, act=np.zeros((10, 2)))", "needs dt_sched"),
    ("simulate empty schedule", "simulate(d, q, qd, 0.1, 1e-3, tau=np.zeros((0, 2)), dt_sched=1e-2)",
     "nsched >= 1"),
    ("simulate lengths differ", "simulate(d, q, qd, 0.1, 1e-3, tau=np.zeros((10, 2)), act=np.zeros((7, 2)), "
     "dt_sched=1e-2)", "tau has 10, act has 7"),
    ("simulate stride 0", "simulate(d, q, qd, 0.1, 1e-3, stride=0)", "stride is 0"),
    ("simulate dt nan", "simulate(d, q, qd, 0.1, nan)", "dt is nan"),
    ("simulate T inf", "simulate(d, q, qd, float('inf'), 1e-3)", "T is inf"),
    ("simulate q0 short", "simulate(d, np.zeros(1), qd, 0.1, 1e-3)", "q0 has shape (1,)"),
    ("simulate tau complex", "simulate(d, q, qd, 0.1, 1e-3, tau=np.zeros(2, complex))", "tau has dtype complex128"),
    ("bench empty pool", "bench.time_per_call(d, np.zeros((0, 2)), np.zeros((0, 2)), np.zeros((0, 2)), "
     "np.zeros((0, 2, 6)), np.zeros((0, 2)), 100)", "no states"),
    ("bench ncalls 0", "bench.time_per_call(d, Z5, Z5, Z5, np.zeros((5, 2, 6)), Z5, 0)", "ncalls is 0"),
    ("bench FEXT missing", "bench.time_per_call(d, Z5, Z5, Z5, None, Z5, 100)", "FEXT is required"),
    ("bench TAU short", "bench.time_per_call(d, Z5, Z5, np.zeros((4, 2)), np.zeros((5, 2, 6)), Z5, 100)",
     "TAU has shape (4, 2)"),
    ("batched nrounds 0", "bench.time_per_state_batched(d, Z5, Z5, Z5, np.zeros((5, 2, 6)), Z5, 0)", "nrounds is 0"),
    ("batched empty pool", "bench.time_per_state_batched(d, np.zeros((0, 2)), np.zeros((0, 2)), np.zeros((0, 2)), "
     "np.zeros((0, 2, 6)), np.zeros((0, 2)), 1)", "no states"),
    ("batched ACT short", "bench.time_per_state_batched(d, Z5, Z5, Z5, np.zeros((5, 2, 6)), np.zeros((5, 1)), 1)",
     "ACT has shape (5, 1)"),
    ("elbow act given", "e.forward(np.zeros(6), np.zeros(6), np.zeros(6), None, np.zeros(1))",
     "act has shape (1,), expected (0,)"),
    ("satellite step q short", "sat.step(1, 10, 0.0, 1e-3, np.zeros(9), np.zeros(9), np.zeros(9), np.zeros((1, 9)), "
     "None, None, 1.0, 1, np.empty((10, 10)), np.empty((10, 9)), np.zeros(1), np.empty(10))", "q has shape (9,), expected (10,)"),
    # Dynamics.bodies and body_states (fwd_dyn_bodies)
    ("bodies q short", "d.bodies(np.zeros(1), qd)", "q has shape (1,), expected (2,)"),
    ("bodies q long", "d.bodies(np.zeros(3), qd)", "q has shape (3,), expected (2,)"),
    ("bodies qd long", "d.bodies(q, np.zeros(40))", "qd has shape (40,), expected (2,)"),
    ("bodies qd 2-D", "d.bodies(q, np.zeros((2, 1)))", "qd has shape (2, 1)"),
    ("bodies q complex", "d.bodies(q + 1j, qd)", "q has dtype complex128"),
    ("bodies qd object", "d.bodies(q, [None, None])", "qd has dtype object"),
    ("body_states q ragged", "d.body_states([[1.0], [1.0, 2.0]], qd)", "q is not an array of numbers"),
    ("satellite bodies q short", "sat.bodies(np.zeros(9), np.zeros(9))", "q has shape (9,), expected (10,)"),
    ("satellite bodies qd short", "sat.bodies(sat.model.q0(), np.zeros(3))", "qd has shape (3,), expected (9,)"),
]

CHILD = """
import sys
import numpy as np
import mechdyn
from mechdyn import bench
from mechdyn import bench
from mechdyn.sim.run import simulate

d, e, sat = mechdyn.load("springpend"), mechdyn.load("elbow"), mechdyn.load("satellite")
nan = float("nan")
q, qd, tau, T1, Z5 = np.zeros(2), np.zeros(2), np.zeros(2), np.zeros((1, 2)), np.zeros((5, 2))
w = lambda: (np.zeros(2), np.zeros(2), np.zeros(2))  # fresh in-place q, qd, qdd_prev
traj = lambda n: (np.empty((n, 2)), np.empty((n, 2)), np.zeros(1), np.empty(n))  # traj_q, traj_qd, work, traj_work


def ro(a):
    a.flags.writeable = False
    return a


for label, code in CASES:
    print("START", label, flush=True)
    try:
        eval(code)
    except ValueError as exc:
        print("VALUEERROR", label, "|", str(exc).replace(chr(10), " "), flush=True)
    except Exception as exc:
        print("OTHER", label, "|", type(exc).__name__, exc, flush=True)
    else:
        print("ACCEPTED", label, flush=True)
"""


def test_every_entry_refuses_wrong_sizes_with_a_value_error_never_a_signal(tmp_path):
    """Each public entry, driven with wrong shapes, too-small buffers, wrong dtypes and out-of-range integers in a
    child process, raises a ValueError naming the argument: never a signal, never a heap-corruption abort."""
    script = tmp_path / "child.py"
    script.write_text(f"CASES = {[(label, code) for label, code, _ in CASES]!r}\n" + textwrap.dedent(CHILD))
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600)
    last = [ln for ln in res.stdout.splitlines() if ln.startswith("START")][-1:]
    assert res.returncode == 0, (f"child died with return code {res.returncode} (negative: a signal) during "
                                 f"{last}:\n{res.stderr[-2000:]}")
    assert "malloc(" not in res.stderr and "corrupted" not in res.stderr, res.stderr[-2000:]
    got = {ln.split(" ", 1)[1].split(" | ")[0]: ln for ln in res.stdout.splitlines() if not ln.startswith("START")}
    wrong = [f"{label}: {got.get(label, 'no outcome')} (wanted a ValueError containing {frag!r})"
             for label, _, frag in CASES if not got.get(label, "").startswith("VALUEERROR") or frag not in got[label]]
    assert not wrong, "\n".join(wrong)


# -- the C's own second line of defence -----------------------------------------------------------------------
def test_fwd_dyn_sim_clamps_the_schedule_index_on_both_sides():
    """fwd_dyn_sim called straight from C with a negative or NaN dt_sched holds sample 0 and with a time past the
    end holds the last, and reads none of the NaN guard rows placed before and after the schedule (on e292858 the
    index was clamped only from above, so a negative dt_sched read the guard row before sample 0)."""
    d = mechdyn.load("elbow")
    ffi, lib = d.ffi, d.lib
    nsched = 4
    guarded = np.full((nsched + 2, d.nv), np.nan)
    guarded[1:-1] = np.arange(nsched)[:, None] * np.ones(d.nv)  # sample s is the torque s on every joint
    sched = ffi.from_buffer("double[]", guarded) + d.nv  # row 1: sample 0

    def run(dt_sched: float, t0: float = 0.0, tau: np.ndarray | None = None) -> np.ndarray:
        q, qd, qdd = np.zeros(d.nq), np.zeros(d.nv), np.zeros(d.nv)
        tq, tqd = np.empty((50, d.nq)), np.empty((50, d.nv))
        args = [ffi.from_buffer("double[]", a) for a in (q, qd, qdd)]
        if tau is None:
            ptau, n = sched, nsched
        else:
            ptau, n = ffi.from_buffer("double[]", tau), 1
        work, tw = np.zeros(1), np.empty(50)
        lib.fwd_dyn_sim(1, 50, t0, 1e-3, *args, n, dt_sched, ptau, ffi.NULL, ffi.NULL, 1,
                        ffi.from_buffer("double[]", tq), ffi.from_buffer("double[]", tqd),
                        ffi.from_buffer("double[]", work), ffi.from_buffer("double[]", tw), ffi.new("long *"))
        return q

    first, last = run(1.0, tau=np.zeros(d.nv)), run(1.0, tau=np.full(d.nv, nsched - 1.0))
    for dt_sched in (-1e-3, -1e300, float("nan"), float("-inf")):
        got = run(dt_sched)
        assert np.all(np.isfinite(got)) and np.array_equal(got, first), dt_sched
    assert np.array_equal(run(1e-3, t0=10.0), last) and np.array_equal(run(float("inf"), t0=-1.0), first)
    assert np.array_equal(run(1e-300, t0=1.0), last)  # a quotient beyond a long's range lands on the last sample


# -- non-unit quaternions -------------------------------------------------------------------------------------
def _with_attitude(d, Q) -> np.ndarray:
    q = d.model.q0()
    q[d.model.qidx[0] : d.model.qidx[0] + 4] = Q
    return q


@pytest.mark.parametrize("Q", [[1.2, 1.6, 0, 0], [0, 0, 0, 0], [1 + 2 * QUAT_TOL, 0, 0, 0]])
def test_non_unit_quaternion_is_refused_naming_the_body(Q):
    sat = mechdyn.load("satellite")
    q, z = _with_attitude(sat, Q), np.zeros(sat.nv)
    norm = f"{np.linalg.norm(Q):.12g}"
    for call in (lambda: sat.forward(q, z, z), lambda: sat.observe(q, z), lambda: sat.drift(q, z, 0.1),
                 lambda: simulate(sat, q, z, 0.01, 1e-3)):
        with pytest.raises(ValueError, match=rf"floating body 'bus' .* has norm {norm}; expected a unit quaternion"):
            call()
    Qs = np.array([sat.model.q0()] * 4)
    Qs[2] = q
    with pytest.raises(ValueError, match=r"^Q\[2\]: the quaternion of floating body 'bus'"):
        sat.forward_batch(Qs, np.zeros((4, sat.nv)), np.zeros((4, sat.nv)))
    with pytest.raises(ValueError, match="floating body 'bus'"):
        sat.step(1, 10, 0.0, 1e-3, q.copy(), z.copy(), z.copy(), np.zeros((1, sat.nv)), None, None, 1.0, 1,
                 np.empty((10, sat.nq)), np.empty((10, sat.nv)), np.zeros(1), np.empty(10))


def test_the_stated_tolerance_is_the_boundary_and_the_old_garbage_is_large():
    """The [1.2, 1.6, 0, 0] of the issue changed qdd by tens against its normalization; QUAT_TOL/2 is accepted."""
    sat = mechdyn.load("satellite")
    z, qd = np.zeros(sat.nv), np.linspace(-1, 1, sat.nv)
    Q = np.array([1.0, 2.0, -0.5, 0.3])
    Q /= np.linalg.norm(Q)
    sat.forward(_with_attitude(sat, Q * (1 + QUAT_TOL / 2)), qd, z)
    with pytest.raises(ValueError):
        sat.forward(_with_attitude(sat, Q * (1 + 2 * QUAT_TOL)), qd, z)
    # what the refused input used to give: computed through the dense reference, which takes any quaternion
    from crosscheck.dense.loops import forward as dense_forward
    bad, good = _with_attitude(sat, [1.2, 1.6, 0, 0]), _with_attitude(sat, [0.6, 0.8, 0, 0])
    diff = np.max(np.abs(dense_forward(sat.model, bad, qd, z) - dense_forward(sat.model, good, qd, z)))
    print(f"\n|qdd([1.2, 1.6, 0, 0]) - qdd(normalized)| = {diff:.3g} (dense reference)")
    assert diff > 1.0


@pytest.mark.parametrize("name", ["satellite", "quartercar"])
def test_mechdyn_trajectories_keep_their_quaternions_well_inside_the_tolerance(name):
    """Every state recorded by simulate (both schemes, 20000 steps) is accepted again as input: the exact drift keeps
    | |Q| - 1 | at round-off, many orders below QUAT_TOL."""
    from mechdyn.sim.run import initial_state

    d = mechdyn.load(name)
    q0, qd0 = initial_state(d)
    slots = [i for b, i in zip(d.model.bodies, d.model.qidx) if b.joint == "floating"]
    worst = 0.0
    for scheme in ("verlet", "euler"):
        tr = simulate(d, q0, qd0 * 3, 20.0, 1e-3, scheme, stride=100)
        for i in slots:
            worst = max(worst, float(np.max(np.abs(np.linalg.norm(tr.q[:, i : i + 4], axis=1) - 1))))
        d.forward_batch(tr.q, tr.qd, np.zeros_like(tr.qd))  # the quaternion check passes on every state
        simulate(d, tr.q[-1], tr.qd[-1], 0.01, 1e-3, scheme)  # and a run restarts from the last
    print(f"\n{name}: max | |Q| - 1 | over 2 x 20000 steps = {worst:.2e} (QUAT_TOL {QUAT_TOL:g})")
    assert worst < QUAT_TOL / 1000


# -- fext on bodies that do not read it -----------------------------------------------------------------------
def test_fext_on_a_body_without_fext_1_is_refused_naming_it():
    """1000 N on elbow's flange used to change qdd by exactly 0; now every entry taking fext refuses it."""
    e = mechdyn.load("elbow")
    z = np.zeros(e.nv)
    f = np.zeros((e.nbody, 6))
    f[e.model.body_index("flange"), 5] = 1000.0
    msg = r"fext has nonzero rows for bodies flange, which do not declare `fext 1`.*declare `fext 1` on those bodies"
    with pytest.raises(ValueError, match=msg):
        e.forward(z, z, z, f)
    with pytest.raises(ValueError, match="FEXT has nonzero rows for bodies flange"):
        e.forward_batch(np.zeros((3, 6)), np.zeros((3, 6)), np.zeros((3, 6)), np.array([f * 0, f, f * 0]))
    with pytest.raises(ValueError, match="fext has nonzero rows for bodies flange"):
        simulate(e, z, z, 0.01, 1e-3, fext=f)
    with pytest.raises(ValueError, match="fext has nonzero rows for bodies flange"):
        simulate(e, z, z, 0.01, 1e-3, fext=np.array([f * 0, f]), dt_sched=5e-3)  # a later sample too
    with pytest.raises(ValueError, match="FEXT has nonzero rows"):
        bench.time_per_call(e, np.zeros((1, 6)), np.zeros((1, 6)), np.zeros((1, 6)), f[None], np.zeros((1, 0)), 10)
    assert np.array_equal(e.forward(z, z, z, f * 0), e.forward(z, z, z))  # zeros everywhere are fine


def test_fext_on_a_declared_body_is_used_and_only_the_others_are_named():
    d = mechdyn.load("springpend")  # pend1 declares fext 1, pend2 does not
    z = np.zeros(d.nv)
    f = np.zeros((d.nbody, 6))
    f[0] = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]
    assert not np.allclose(d.forward(z, z, z, f), d.forward(z, z, z))
    f[1, 0] = np.nan  # a NaN is not zero either
    with pytest.raises(ValueError, match=r"bodies pend2, which do not declare `fext 1`.*springpend\.mech"):
        d.forward(z, z, z, f)


# -- find ------------------------------------------------------------------------------------------------------
def test_find_refuses_unknown_kinds_and_matches_whole_names():
    d = mechdyn.load("springpend")
    assert (d.find("poi", "hook"), d.find("poi", "tip2"), d.find("act", "torsion")) == (0, 2, 1)
    for name in ("hook\0junk", "hoo", "hookx", "", "HOOK"):
        assert d.find("poi", name) == -1, name
    with pytest.raises(ValueError, match="unknown kind 'body'; expected one of poi, tsda, rsda, act"):
        d.find("body", "flange")
    # the C function: -2 for an unknown kind, -1 for a known kind without the name (elbow has no POIs at all)
    e = mechdyn.load("elbow")
    assert d.lib.fwd_dyn_find(b"body", b"hook") == -2 and d.lib.fwd_dyn_find(b"poi", b"hoo") == -1
    assert e.lib.fwd_dyn_find(b"poi", b"x") == -1 and e.lib.fwd_dyn_find(b"bogus", b"x") == -2


def test_find_roundtrip_check_fails_on_a_planted_prefix_match(monkeypatch):
    """The crosscheck's find_roundtrip trips when find goes back to passing a NUL-tailed name through to C."""
    from crosscheck.dense_compare import find_roundtrip

    d = mechdyn.load("springpend")
    assert find_roundtrip(d).value == 0
    monkeypatch.setattr(d, "find", lambda kind, name: int(d.lib.fwd_dyn_find(kind.encode(), name.encode())))
    assert find_roundtrip(d).value == 2  # the NUL-tailed name is found, the bogus kind returns instead of raising


# -- complex arrays -----------------------------------------------------------------------------------------------
def test_complex_arrays_are_refused_not_truncated():
    d = mechdyn.load("springpend")
    z = np.zeros(d.nv)
    for call, name in ((lambda: d.forward(z, z, z + 1j), "tau"), (lambda: d.forward(z + 0j, z, z), "q"),
                       (lambda: d.forward(z, z, z, None, np.zeros(2, complex)), "act"),
                       (lambda: d.forward_batch(np.zeros((2, 2)), np.zeros((2, 2)) * 1j, np.zeros((2, 2))), "QD"),
                       (lambda: d.observe(z, [1j, 0]), "qd"),
                       (lambda: simulate(d, z, z, 0.01, 1e-3, act=np.ones((3, 2)) * 1j, dt_sched=1e-3), "act")):
        with pytest.raises(ValueError, match=rf"^{name} has dtype complex128; expected real numbers"):
            call()
    assert d.forward(np.array([True, False]), [1, 2], np.zeros(2, np.int32)).dtype == np.float64  # these convert


# -- a held input beside a scheduled one ------------------------------------------------------------------------
def test_held_input_beside_a_scheduled_one_is_accepted_and_held():
    d = mechdyn.load("springpend")
    q0, z = np.array([0.3, -0.2]), np.zeros(d.nv)
    tau = np.array([[1.0, 0.0], [0.0, -2.0], [0.5, 0.5]])
    act = np.array([3.0, -1.0])
    fext = np.zeros((d.nbody, 6))
    fext[0, 3] = 4.0
    held_act = simulate(d, q0, z, 0.05, 1e-3, tau=tau, act=act, fext=fext, dt_sched=0.01)
    explicit = simulate(d, q0, z, 0.05, 1e-3, tau=tau, act=np.tile(act, (3, 1)), fext=np.array([fext] * 3),
                        dt_sched=0.01)
    assert np.array_equal(held_act.q, explicit.q) and np.array_equal(held_act.qd, explicit.qd)
    assert not np.array_equal(held_act.q, simulate(d, q0, z, 0.05, 1e-3, tau=tau, dt_sched=0.01).q)  # act acts
    held_tau = simulate(d, q0, z, 0.05, 1e-3, tau=tau[0], act=np.array([act, -act]), dt_sched=0.02)
    explicit = simulate(d, q0, z, 0.05, 1e-3, tau=np.array([tau[0]] * 2), act=np.array([act, -act]), dt_sched=0.02)
    assert np.array_equal(held_tau.q, explicit.q)
    with pytest.raises(ValueError, match="scheduled inputs must have the same number of samples: tau has 3, act has 2"):
        simulate(d, q0, z, 0.05, 1e-3, tau=tau, act=np.array([act, -act]), dt_sched=0.01)


# -- shapes and the batch (moved from the generator's tests) -------------------------
def test_api_shapes_and_batch():
    d = mechdyn.load("springpend")
    rng = np.random.default_rng(0)
    n = 5
    Q, QD, TAU = rng.normal(size=(n, d.nq)), rng.normal(size=(n, d.nv)), rng.normal(size=(n, d.nv))
    F, A = rng.normal(size=(n, d.nbody, 6)), rng.normal(size=(n, d.nact))
    F[:, [i for i, b in enumerate(d.model.bodies) if not b.fext]] = 0.0  # loads there are refused
    batch = d.forward_batch(Q, QD, TAU, F, A)
    single = np.array([d.forward(Q[k], QD[k], TAU[k], F[k], A[k]) for k in range(n)])
    assert np.array_equal(batch, single)
    assert np.array_equal(d.forward(Q[0], QD[0], TAU[0]), d.forward(Q[0], QD[0], TAU[0], np.zeros((d.nbody, 6)), np.zeros(d.nact)))
    with pytest.raises(ValueError, match=r"q has shape \(3,\), expected \(2,\)"):
        d.forward(np.zeros(3), QD[0], TAU[0])
    with pytest.raises(ValueError, match="fext has shape"):
        d.forward(Q[0], QD[0], TAU[0], fext=np.zeros(6))
    assert d.forward(Q[0].astype(np.float32), QD[0].tolist(), TAU[0]).dtype == np.float64  # converted, not rejected
    assert d.find("poi", "tip2") == 2 and d.find("act", "torsion") == 1 and d.find("rsda", "nope") == -1
    assert d.observe(Q[0], QD[0]).shape == (d.observe_len,)
