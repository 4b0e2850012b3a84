"""Compile generated C into a Python extension with cffi, through a content-addressed, verified cache.

The cache key covers the model's content (every field of every nested
dataclass, numbers by their exact bits; only provenance fields that never reach
the generated C are left out), the generator (its version and the source of the
codegen and core modules), cffi's version, and the compiler with its flags, so
two models that differ in anything the C sees compile to different modules and
equal ones share one. Builds happen in a private temporary directory and are
published with an atomic rename, together with a checksum file beside the
module; a load checks the module against it before dlopen (a truncated module
would die with SIGBUS) and rebuilds, with one warning line, a module that does
not match. A per-module lock makes concurrent builders of the same model
(pytest -n auto) compile it once, and lets a builder remove temporary
directories that killed builders left behind.
"""
from __future__ import annotations

import fcntl
import hashlib
import importlib.machinery
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from types import ModuleType

import cffi
from tqdm import tqdm

from mechdyn.core.fingerprint import PROVENANCE_FIELDS, fingerprint  # noqa: F401  (PROVENANCE_FIELDS: re-exported)
from mechdyn.core.model import Model

from .capi import CDEF
from .generate import GENERATOR_VERSION, generate

# -march=native includes AVX-512 where the CPU has it (docs/performance.md has what it buys); the instruction
# gate counts a build of its own with fixed portable flags instead (crosscheck/golden.py count_flags)
DEFAULT_CFLAGS = "-O2 -march=native -fno-math-errno"

class BuildError(RuntimeError):
    """The C compiler rejected generated code; the message carries its output."""


def cache_dir() -> Path:
    """$MECHDYN_CACHE, else $XDG_CACHE_HOME/mechdyn, else ~/.cache/mechdyn."""
    root = os.environ.get("MECHDYN_CACHE") or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mechdyn"
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def compiler() -> tuple[list[str], list[str]]:
    """The compiler command ($CC, default cc) and flags ($MECHDYN_CFLAGS)."""
    return shlex.split(os.environ.get("CC", "cc")), shlex.split(os.environ.get("MECHDYN_CFLAGS", DEFAULT_CFLAGS))


@cache
def _compiler_identity(cc: tuple[str, ...]) -> str:
    out = subprocess.run([*cc, "--version"], capture_output=True, text=True, check=False)
    return out.stdout.splitlines()[0] if out.stdout else " ".join(cc)


@cache
def _generator_fingerprint() -> str:
    """A hash of the code generator's own source and of the core modules it computes with (the Model, the loop
    closure), so any change to them invalidates the cache."""
    h = hashlib.sha256(GENERATOR_VERSION.encode())
    core = Path(__file__).parents[1] / "core"
    for f in sorted([*Path(__file__).parent.glob("*.py"), *core.glob("*.py")]):
        h.update(f.read_bytes())
    return h.hexdigest()


def cache_key(model: Model) -> str:
    cc, flags = compiler()
    h = hashlib.sha256()
    for part in (fingerprint(model), _generator_fingerprint(), cffi.__version__, _compiler_identity(tuple(cc)),
                 " ".join(flags)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:20]


def module_name(model: Model) -> str:
    safe = "".join(ch if ch.isalnum() else "_" for ch in model.name)
    return f"_mechdyn_{safe}_{cache_key(model)}"


def module_path(model: Model) -> Path:
    """Where `model`'s compiled module is (or would be) in the cache."""
    return _module_file(module_name(model))


def _module_file(name: str) -> Path:
    return cache_dir() / f"{name}{sysconfig.get_config_var('EXT_SUFFIX')}"


def checksum_path(dest: Path) -> Path:
    """The file beside a published module that records its size and sha256."""
    return dest.with_name(dest.name + ".sha256")


def _sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _defect(dest: Path, name: str) -> str | None:
    """Why the module at dest cannot be loaded as `name` (it is absent, or does not match its checksum file), or
    None when it is the file that was published. Checked before dlopen: a truncated module dies with SIGBUS."""
    try:
        size = dest.stat().st_size
    except FileNotFoundError:
        return "absent"
    try:
        digest, recorded_size, recorded_name = checksum_path(dest).read_text().split()
        recorded = int(recorded_size)
    except FileNotFoundError:
        return "has no checksum file"
    except ValueError:
        return "has an unreadable checksum file"
    if recorded_name != name:
        return f"has the checksum file of another module ({recorded_name})"
    if size != recorded:
        return f"is {size} bytes where {recorded} were published"
    if _sha256(dest) != digest:
        return "does not match the sha256 recorded when it was published"
    return None


@contextmanager
def _module_lock(name: str) -> Iterator[None]:
    """The module's build lock: one builder compiles; the others wait, then find its module."""
    with open(cache_dir() / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _remove_leftovers(name: str) -> None:
    """Delete temporary build directories that killed builders left in the cache. Called with `name`'s lock held,
    so `name`'s own are dead; another module's are removed only when its lock is free (no live builder)."""
    for tmp in cache_dir().glob("._mechdyn_*.*"):
        if not tmp.is_dir():  # a lock file
            continue
        owner = tmp.name[1:].split(".")[0]  # the module name: tempfile's prefix is f".{name}."
        if owner == name:
            shutil.rmtree(tmp, ignore_errors=True)
            continue
        with open(cache_dir() / f".{owner}.lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # being built right now
            shutil.rmtree(tmp, ignore_errors=True)


def _compile(what: str, source: str, name: str, dest: Path, bar: tqdm, cdef: str = CDEF) -> None:
    """Emit the cffi wrapper (declared by `cdef`) around the C `source` (`what` it is, for an error), compile it,
    and publish it atomically at dest together with its checksum file."""
    cc, flags = compiler()
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=f".{name}.") as tmp:
        ffi = cffi.FFI()
        ffi.cdef(cdef)
        ffi.set_source(name, source, compiler_verbose=False)
        csrc = Path(tmp) / f"{name}.c"
        ffi.emit_c_code(str(csrc))
        out = Path(tmp) / dest.name
        cmd = [*cc, *flags, "-fPIC", "-shared", f"-I{sysconfig.get_paths()['include']}", str(csrc), "-o", str(out), "-lm"]
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
            while True:
                try:
                    _, err = proc.communicate(timeout=0.5)
                    break
                except subprocess.TimeoutExpired:
                    bar.refresh()  # the elapsed time keeps counting through a long compile
        if proc.returncode != 0:
            raise BuildError(f"compiling {what} failed:\n$ {shlex.join(cmd)}\n{err.strip()}")
        sums = Path(tmp) / "sha256"
        sums.write_text(f"{_sha256(out)} {out.stat().st_size} {name}\n")
        # atomic publish: readers see the old files, none, or the whole new ones; one that catches the pair
        # between the two renames finds a mismatch and waits on the lock, which this builder holds
        os.replace(sums, checksum_path(dest))
        os.replace(out, dest)


def _rebuild(model: Model, name: str, dest: Path, progress: bool, failed: str | None = None) -> None:
    """Compile `model` into dest under its lock unless, once the lock is held, a valid module is there (and
    importing it has not `failed`); a module that is there but defective gets one warning line on stderr."""
    with _module_lock(name):
        _remove_leftovers(name)
        defect = f"cannot be imported ({failed})" if failed else _defect(dest, name)
        if defect is None:
            return
        if defect != "absent":
            print(f"mechdyn: cached module {dest} {defect}; rebuilding it", file=sys.stderr)
        # the stage and its elapsed time only: the two stages' lengths differ from model to model, so no ETA
        with tqdm(total=2, desc=f"{model.name}: generating C", bar_format="{desc} ({elapsed})", leave=False,
                  disable=None if progress else True) as bar:
            gen = generate(model)
            bar.update(1)
            bar.set_description_str(f"{model.name}: compiling {len(gen.source) // 1000} kB of C", refresh=False)
            _compile(f"model '{model.name}'", gen.source, name, dest, bar)
            bar.update(1)


def _import(name: str, path: str) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def build(model: Model, progress: bool = False) -> tuple[ModuleType, Path]:
    """The compiled extension module for `model`, from the cache when it is there and intact; and its path.
    With `progress`, a cold build shows its stages on a terminal's stderr."""
    name = module_name(model)
    dest = _module_file(name)
    if _defect(dest, name) is not None:
        _rebuild(model, name, dest, progress)
    try:
        return _import(name, str(dest)), dest
    except ImportError as e:
        failed = str(e)
    _rebuild(model, name, dest, progress, failed)
    # dlopen matches an already-opened library by its path string before looking at the file, so the rebuilt
    # module is opened through a path spelled differently ("/./") to reach the new file
    return _import(name, f"{dest.parent}/./{dest.name}"), dest


def build_source(tag: str, cdef: str, source: str) -> ModuleType:
    """A cffi extension compiled from C `source` that is not a model's (the benchmark's timing loops,
    mechdyn/bench.py), declared by `cdef`, through the same cache, lock and publish as the models' modules; keyed
    by the text, cffi and the compiler with its flags."""
    cc, flags = compiler()
    h = hashlib.sha256()
    for part in (tag, cdef, source, cffi.__version__, _compiler_identity(tuple(cc)), " ".join(flags)):
        h.update(part.encode())
        h.update(b"\0")
    name = f"_mechdyn_{tag}_{h.hexdigest()[:20]}"
    dest = _module_file(name)
    if _defect(dest, name) is not None:
        with _module_lock(name):
            _remove_leftovers(name)
            if _defect(dest, name) is not None:
                with tqdm(disable=True) as bar:
                    _compile(f"the {tag} module", source, name, dest, bar, cdef)
    return _import(name, str(dest))
