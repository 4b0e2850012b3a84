"""The compile cache: keyed on the model's content, verified before it is loaded, rebuilt when it is damaged, free of
killed builders' leftovers, and showing a cold build's progress on a terminal.

Damage is planted in child processes: a truncated module dlopened without a check dies with SIGBUS, which would
take pytest down with it.
"""
from __future__ import annotations

import dataclasses
import fcntl
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import mechdyn
import mechdyn.codegen.build as build
import mechdyn.codegen.cache as compile_cache
import mechdyn.codegen.flags as flags
from crosscheck.dense_compare import gen_gate
from crosscheck.dense.loops import forward as dense_forward
from mechdyn.codegen.generate import generate
from mechdyn.core.model import Model
from mechdyn.core.parse import load_model
from mechdyn.core.sample import random_state, scaled_error
from tests.conftest import in_pty

ROOT = Path(__file__).resolve().parents[2]
LOOPZOO = str(ROOT / "tests" / "data" / "loopzoo.mech")


# -- the key: the model's content ------------------------------------------------
def _replace_body(model: Model, name: str, **changes) -> Model:
    i = model.body_index(name)
    bodies = list(model.bodies)
    bodies[i] = dataclasses.replace(bodies[i], **changes)
    return dataclasses.replace(model, bodies=tuple(bodies))


def _sweep() -> list[tuple[str, Model]]:
    elbow, sp = load_model("elbow"), load_model("springpend")
    ua, fa = elbow.bodies[elbow.body_index("upper_arm")], elbow.bodies[elbow.body_index("forearm")]
    return [
        ("elbow", elbow),
        ("elbow upper_arm mass x2", _replace_body(elbow, "upper_arm", mass=2 * ua.mass)),
        ("elbow forearm inertia x3", _replace_body(elbow, "forearm", inertia=3 * fa.inertia)),
        ("elbow forearm xtree x 0.6", _replace_body(elbow, "forearm", xtree=fa.xtree + [0.6 - fa.xtree[0], 0, 0])),
        ("elbow gravity sideways", dataclasses.replace(elbow, gravity=np.array([0.0, 4.0, -3.7]))),
        ("springpend", sp),
        ("springpend tsda k x4", dataclasses.replace(sp, tsdas=(dataclasses.replace(sp.tsdas[0], k=800.0),))),
        ("springpend rsda k /4", dataclasses.replace(sp, rsdas=(dataclasses.replace(sp.rsdas[0], k=5.0),))),
    ]


def test_models_changed_in_python_get_their_own_module(fresh_cache):
    """A parameter sweep built with dataclasses.replace: each point's compiled qdd is the dense reference's for that
    point (with the source text as the key, every point ran the first point's module)."""
    rng = np.random.default_rng(16)
    seen: dict[str, np.ndarray] = {}
    for label, model in _sweep():
        dyn = mechdyn.load(model)
        s = random_state(model, np.random.default_rng(0))  # the same state at every point of a model's sweep
        got = dyn.forward(s.q, s.qd, s.tau, s.fext, s.act)
        err = scaled_error(got, dense_forward(model, s.q, s.qd, s.tau, s.fext, s.act))
        print(f"{label}: qdd {np.array2string(got, precision=3)}, scaled error against dense {err:.1e}")
        assert err < gen_gate(model), label
        for _ in range(3):  # and at a few more states
            s2 = random_state(model, rng)
            assert scaled_error(dyn.forward(s2.q, s2.qd, s2.tau, s2.fext, s2.act),
                                dense_forward(model, s2.q, s2.qd, s2.tau, s2.fext, s2.act)) < gen_gate(model), label
        assert not any(o.shape == got.shape and np.allclose(got, o) for o in seen.values()), f"{label}: changed nothing"
        seen[label] = got
    assert len(list(fresh_cache.glob("*.so"))) == len(seen)


def _variants(x: object, where: str) -> Iterator[tuple[str, object]]:
    """Every copy of x with one leaf changed by the least amount its type allows (a float by one ulp)."""
    if dataclasses.is_dataclass(x):
        for f in dataclasses.fields(x):
            if f.init and f.name not in build.PROVENANCE_FIELDS:
                for w, v in _variants(getattr(x, f.name), f"{where}.{f.name}"):
                    yield w, dataclasses.replace(x, **{f.name: v})
    elif isinstance(x, bool):
        yield where, not x
    elif isinstance(x, int):
        yield where, x + 1
    elif isinstance(x, float):
        yield where, float(np.nextafter(x, np.inf))
    elif isinstance(x, str):
        yield where, x + "_"
    elif isinstance(x, tuple):
        for k, item in enumerate(x):
            for w, v in _variants(item, f"{where}[{k}]"):
                yield w, (*x[:k], v, *x[k + 1:])
    elif isinstance(x, np.ndarray):
        for k in np.ndindex(x.shape):
            v = x.copy()
            v[k] = np.nextafter(v[k], np.inf)
            yield f"{where}{list(k)}", v
    else:
        assert x is None, f"{where}: {type(x).__name__}"


@pytest.mark.parametrize("spec", ["springpend", LOOPZOO])
def test_every_field_reaches_the_key(spec):
    """Each number, name and flag of the model changed alone (floats by one ulp) gives a key of its own."""
    model = load_model(spec)
    keys = {build.cache_key(model): "the model"}
    n = 0
    for where, variant in _variants(model, "model"):
        key = build.cache_key(variant)
        assert key not in keys, f"{where} changed and the key did not (same as {keys[key]})"
        keys[key] = where
        n += 1
    print(f"{model.name}: {n} one-leaf variants, {n} distinct keys")
    assert n > 50


def _relocated(x: object) -> object:
    """x with every provenance field changed: another path, other source text, every line number moved."""
    if dataclasses.is_dataclass(x):
        changes = {f.name: _relocated(getattr(x, f.name)) for f in dataclasses.fields(x) if f.init}
        for f in dataclasses.fields(x):
            if f.name == "line":
                changes["line"] = getattr(x, "line") + 100
            elif f.name in ("path", "source"):
                changes[f.name] = "# moved and reformatted\n" + getattr(x, f.name)
        return dataclasses.replace(x, **changes)
    if isinstance(x, tuple):
        return tuple(_relocated(v) for v in x)
    return x


@pytest.mark.parametrize("spec", ["elbow", "springpend", "quartercar", "satellite", LOOPZOO])
def test_provenance_never_reaches_the_generated_code(spec):
    """The fields the key leaves out (path, source, line) do not change the generated C, so equal models moved or
    reformatted share one module rightly."""
    model = load_model(spec)
    moved = _relocated(model)
    assert moved.path != model.path and moved.bodies[0].line != model.bodies[0].line
    assert build.cache_key(moved) == build.cache_key(model)
    assert generate(moved).source == generate(model).source


def test_equal_models_share_one_module(fresh_cache):
    a, b = load_model("springpend"), load_model("springpend")
    assert a is not b and build.module_path(a) == build.module_path(b)
    assert mechdyn.load(a).library == mechdyn.load(b).library
    assert len(list(fresh_cache.glob("*.so"))) == 1


def test_a_field_of_unknown_type_fails_loudly():
    model = load_model("springpend")
    bad = _replace_body(model, "pend2", mass={"kg": 1.884})
    with pytest.raises(ValueError, match=r"model\.bodies\[1\]\.mass is a dict"):
        build.cache_key(bad)


# -- verification and rebuild ------------------------------------------------------
CHILD = """
import sys, numpy as np, mechdyn
from crosscheck.dense.loops import forward
from mechdyn.core.sample import random_state, scaled_error
d = mechdyn.load(sys.argv[1])
s = random_state(d.model, np.random.default_rng(0))
err = scaled_error(d.forward(s.q, s.qd, s.tau, s.fext, s.act), forward(d.model, s.q, s.qd, s.tau, s.fext, s.act))
print(f"{d.library} {err:.1e}")
sys.exit(0 if err < 1e-9 else 3)
"""


def _child(cache: Path, model: str, script: str = CHILD) -> subprocess.CompletedProcess:
    env = {**os.environ, "MECHDYN_CACHE": str(cache), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", script, model], env=env, capture_output=True, text=True,
                          timeout=300)


def _load_ok(cache: Path, model: str) -> list[str]:
    """Load `model` in a fresh process; it must exit 0 (no signal) with the dense reference's qdd. Its stderr lines."""
    res = _child(cache, model)
    assert res.returncode == 0, f"exit {res.returncode} (a negative one is a signal)\n{res.stdout}{res.stderr}"
    return res.stderr.splitlines()


def _truncate(p: Path, other: Path) -> None:
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _empty(p: Path, other: Path) -> None:
    p.write_bytes(b"")


def _garbage(p: Path, other: Path) -> None:
    p.write_bytes(np.random.default_rng(1).bytes(p.stat().st_size))


def _other_module(p: Path, other: Path) -> None:
    p.write_bytes(other.read_bytes())


def _other_module_and_checksum(p: Path, other: Path) -> None:
    p.write_bytes(other.read_bytes())
    build.checksum_path(p).write_bytes(build.checksum_path(other).read_bytes())


def _no_checksum(p: Path, other: Path) -> None:
    build.checksum_path(p).unlink()


def _not_an_extension(p: Path, other: Path) -> None:
    """A shared library that dlopen accepts, with a checksum file that matches it, but no PyInit_ function: only
    the import itself can find this out."""
    src = p.parent / "plain.c"
    src.write_text("int mechdyn_not_an_extension = 1;\n")
    subprocess.run([*build.compiler()[0], "-shared", "-fPIC", str(src), "-o", str(p)], check=True)
    name = p.name.split(".")[0]
    build.checksum_path(p).write_text(f"{compile_cache.sha256(p)} {p.stat().st_size} {name}\n")


DAMAGE = [_truncate, _empty, _garbage, _other_module, _other_module_and_checksum, _no_checksum, _not_an_extension]


@pytest.fixture(scope="module")
def damage_cache(tmp_path_factory) -> Path:
    """A cache holding springpend's and elbow's modules, built once for all the damage tests."""
    cache = tmp_path_factory.mktemp("damage")
    assert _load_ok(cache, "springpend") == [] and _load_ok(cache, "elbow") == []
    return cache


@pytest.mark.parametrize("damage", DAMAGE, ids=lambda f: f.__name__.strip("_"))
def test_damaged_module_is_rebuilt_with_one_warning(damage_cache, damage):
    (mod,) = damage_cache.glob("_mechdyn_springpend_*.so")
    (other,) = damage_cache.glob("_mechdyn_elbow_*.so")
    damage(mod, other)
    lines = _load_ok(damage_cache, "springpend")
    print(*lines, sep="\n")
    assert len(lines) == 1 and lines[0].startswith(f"mechdyn: cached module {mod} ") and "rebuilding it" in lines[0]
    assert _load_ok(damage_cache, "springpend") == []  # the rebuilt module verifies: no warning the next time


def test_planted_skipped_verification_is_caught(damage_cache, monkeypatch):
    """The damage test can fail: with the check before dlopen turned off, a truncated module kills the loader."""
    (mod,) = damage_cache.glob("_mechdyn_springpend_*.so")
    _truncate(mod, mod)
    script = "import mechdyn.codegen.cache as c; c.defect = lambda dest, name: None\n" + CHILD
    res = _child(damage_cache, "springpend", script)
    print(f"unchecked truncated module: exit {res.returncode}")
    assert res.returncode != 0
    assert _load_ok(damage_cache, "springpend")  # repaired, with its warning, for the tests after this one


# -- leftovers of killed builders --------------------------------------------------
def _kill_mid_compile(cache: Path, model: str) -> Path:
    """Start a cold build of `model` in a child, SIGKILL it while the compiler runs; the temporary it left."""
    env = {**os.environ, "MECHDYN_CACHE": str(cache), "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", f"import mechdyn; mechdyn.load({model!r})"], env=env)
    deadline = time.monotonic() + 120
    while not (tmps := [p for p in cache.glob(f"._mechdyn_{model}_*.*") if list(p.glob("*.c"))]):
        assert proc.poll() is None and time.monotonic() < deadline, "the build ended before it could be killed"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    (tmp,) = tmps
    assert tmp.is_dir() and not list(cache.glob(f"_mechdyn_{model}_*.so"))
    return tmp


def test_killed_builds_leave_nothing_behind(fresh_cache):
    tmp = _kill_mid_compile(fresh_cache, "elbow")
    print(f"killed build left {sum(f.stat().st_size for f in tmp.iterdir())} bytes in {tmp.name}")
    # a builder of another model clears it (elbow's lock is free: its builder is dead) ...
    busy = fresh_cache / "._mechdyn_busy_0123.abcd"  # ... but not one whose lock a live builder holds
    busy.mkdir()
    with open(fresh_cache / "._mechdyn_busy_0123.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert _load_ok(fresh_cache, "springpend") == []
        assert not tmp.exists() and busy.is_dir()
    # and a killed build of the model itself is cleared by its next build, as is busy's now that its lock is free
    tmp = _kill_mid_compile(fresh_cache, "elbow")
    assert _load_ok(fresh_cache, "elbow") == []
    assert not tmp.exists() and not busy.exists()
    assert not [p for p in fresh_cache.glob(".*") if not p.name.endswith(".lock")]


# -- one cache for every C build -------------------------------------------------
HELLO = '#include <stdio.h>\nint main(void) { puts("hello from the cache"); return 0; }\n'


def test_programs_share_the_cache_and_its_verification(fresh_cache, capsys):
    """A program (the call driver, the peers' timing programs) is compiled once into the same cache as the modules,
    published with its checksum file, and rebuilt with one warning line when it no longer matches it."""
    exe = compile_cache.compiled("hello", HELLO, ".c", flags.cc(), ["-O1"])
    run = lambda: subprocess.run([exe], capture_output=True, text=True, check=True).stdout  # noqa: E731
    assert run() == "hello from the cache\n" and compile_cache.defect(exe, exe.name) is None
    built = exe.stat().st_mtime_ns
    assert compile_cache.compiled("hello", HELLO, ".c", flags.cc(), ["-O1"]) == exe and exe.stat().st_mtime_ns == built
    assert compile_cache.compiled("hello", HELLO, ".c", flags.cc(), ["-O2"]) != exe  # the flags are in the key
    capsys.readouterr()
    _truncate(exe, exe)
    assert compile_cache.compiled("hello", HELLO, ".c", flags.cc(), ["-O1"]) == exe
    warned = capsys.readouterr().err.splitlines()
    assert len(warned) == 1 and warned[0].startswith(f"mechdyn: cached program {exe} is ") and run()
    with pytest.raises(build.BuildError, match="compiling the broken program failed"):
        compile_cache.compiled("broken", "int main(void) { return }\n", ".c", flags.cc(), [])
    assert not [p for p in fresh_cache.glob(".*") if not p.name.endswith(".lock")]  # no temporary left


def test_flags_are_an_argument_not_the_environment(fresh_cache, monkeypatch):
    """The counting build passes its flags to the build: its own module, and $MECHDYN_CFLAGS never touched."""
    monkeypatch.delenv("MECHDYN_CFLAGS", raising=False)
    model = load_model("springpend")
    counted = mechdyn.Dynamics(model, cflags=flags.counting())
    production = mechdyn.Dynamics(model)
    assert "MECHDYN_CFLAGS" not in os.environ
    assert counted.library == build.module_path(model, flags.counting()) != production.library
    assert production.library == build.module_path(model) and flags.production() == flags.DEFAULT_CFLAGS.split()


# -- progress of a cold build ------------------------------------------------------
PROGRESS = "import sys, mechdyn; mechdyn.load(sys.argv[1], progress={})"


def _stderr_on_tty(cache: Path, script: str) -> str:
    env = {**os.environ, "MECHDYN_CACHE": str(cache), "PYTHONPATH": str(ROOT)}
    rc, shown = in_pty([sys.executable, "-c", script, "elbow"], env=env, cols=100)
    assert rc == 0, shown
    return shown


def test_cold_load_shows_its_stages_on_a_terminal(tmp_path):
    shown = _stderr_on_tty(tmp_path / "a", PROGRESS.format(True))
    print(repr(shown[-300:]))
    assert "elbow: generating C (" in shown and re.search(r"elbow: compiling \d+ kB of C \(", shown)
    assert _stderr_on_tty(tmp_path / "a", PROGRESS.format(True)) == ""  # warm: nothing to show
    assert _stderr_on_tty(tmp_path / "b", PROGRESS.format(False)) == ""  # not asked for
    res = _child(tmp_path / "c", "elbow", PROGRESS.format(True))  # asked for, but stderr is a pipe (a log)
    assert res.returncode == 0 and res.stderr == ""


def test_crosscheck_caches_see_python_changes():
    """The cross-checks' per-process caches (Pinocchio models, drawn states) are keyed on the content too: a model
    changed in Python is compared as it is, not as the model it was made from."""
    pytest.importorskip("pinocchio", reason="pinocchio not installed: the Pinocchio cross-check cache is not exercised")
    from crosscheck import dense_compare
    from crosscheck.pinocchio import compare as pin_compare

    elbow = load_model("elbow")
    heavier = _replace_body(elbow, "upper_arm", mass=2 * elbow.bodies[1].mass)
    for model in (elbow, heavier):
        for check in (pin_compare.accel_vs_dense(model, 20), pin_compare.accel_vs_generated(mechdyn.load(model), 20)):
            print(f"{model.bodies[1].mass} kg upper arm: {check.name} {check.value:.1e}")
            assert check.passed
    fourbar = load_model("fourbar")
    moved = dataclasses.replace(fourbar, loops=(dataclasses.replace(
        fourbar.loops[0], anchor_succ=fourbar.loops[0].anchor_succ + [0.0, 0.0, 0.01]),))
    a, b = (list(dense_compare.random_states(m, 3, 0, "")) for m in (fourbar, moved))
    assert not np.array_equal(a[0].q, b[0].q)
