"""Compile generated C into a Python extension with cffi, through a content-addressed cache.

The cache key covers the model text, the generator (its version and the
source of every codegen module), and the compiler with its flags, so a second
load of the same model never recompiles. Builds happen in a private temporary
directory and are published with an atomic rename, so a reader never sees a
half-written module; a per-module lock makes concurrent builders of the same
model (pytest -n auto) compile it once.
"""
from __future__ import annotations

import fcntl
import hashlib
import importlib.machinery
import importlib.util
import os
import shlex
import subprocess
import sysconfig
import tempfile
from functools import cache
from pathlib import Path
from types import ModuleType

import cffi

from mechdyn.core.model import Model

from .generate import CDEF, GENERATOR_VERSION, Generated, generate

# -march=native includes AVX-512 where the CPU has it (bintree 193 -> 171 ns here); the instruction
# gate counts a build of its own with fixed portable flags instead (mechdyn/golden.py count_flags)
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
    """A hash of the code generator's own source, so any change to it invalidates the cache."""
    h = hashlib.sha256(GENERATOR_VERSION.encode())
    for f in sorted(Path(__file__).parent.glob("*.py")):
        h.update(f.read_bytes())
    return h.hexdigest()


def cache_key(model: Model) -> str:
    cc, flags = compiler()
    h = hashlib.sha256()
    for part in (model.source, _generator_fingerprint(), _compiler_identity(tuple(cc)), " ".join(flags)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:20]


def module_name(model: Model) -> str:
    safe = "".join(ch if ch.isalnum() else "_" for ch in model.name)
    return f"_mechdyn_{safe}_{cache_key(model)}"


def _compile(gen: Generated, name: str, dest: Path) -> None:
    """Emit the cffi wrapper around the generated code, compile it, and publish it atomically at dest."""
    cc, flags = compiler()
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=f".{name}.") as tmp:
        ffi = cffi.FFI()
        ffi.cdef(CDEF)
        ffi.set_source(name, gen.source, compiler_verbose=False)
        csrc = Path(tmp) / f"{name}.c"
        ffi.emit_c_code(str(csrc))
        out = Path(tmp) / dest.name
        cmd = [*cc, *flags, "-fPIC", "-shared", f"-I{sysconfig.get_paths()['include']}", str(csrc), "-o", str(out), "-lm"]
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise BuildError(f"compiling model '{gen.model.name}' failed:\n$ {shlex.join(cmd)}\n{res.stderr.strip()}")
        os.replace(out, dest)  # atomic publish: readers see the old file, none, or the whole new one


def build(model: Model) -> tuple[ModuleType, Path]:
    """The compiled extension module for `model`, from the cache when present; and its path."""
    name = module_name(model)
    dest = cache_dir() / f"{name}{sysconfig.get_config_var('EXT_SUFFIX')}"
    if not dest.exists():
        with open(cache_dir() / f".{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one builder compiles; the others wait, then find it
            if not dest.exists():
                _compile(generate(model), name, dest)
    loader = importlib.machinery.ExtensionFileLoader(name, str(dest))
    spec = importlib.util.spec_from_file_location(name, dest, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module, dest

