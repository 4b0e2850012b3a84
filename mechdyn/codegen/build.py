"""Compile generated C into a Python extension with cffi, through the content-addressed, verified compile cache.

The cache key covers the model's content (every field of every nested
dataclass, numbers by their exact bits; only provenance fields that never reach
the generated C are left out), the generator (its version and the source of the
codegen and core modules), cffi's version, and the compiler with its flags, so
two models that differ in anything the C sees compile to different modules and
equal ones share one. The cache itself (mechdyn.codegen.cache) builds in a
private temporary directory under a per-module lock and publishes with an
atomic rename, together with a checksum file beside the module; a load checks
the module against it before dlopen (a truncated module would die with SIGBUS)
and rebuilds, with one warning line, a module that does not match or that
fails to import. The flags are the production ones (mechdyn.codegen.flags)
unless the caller passes others, as the instruction-counting build does.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import shlex
import subprocess
import sysconfig
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import cffi

from mechdyn.core.fingerprint import PROVENANCE_FIELDS, fingerprint  # noqa: F401  (PROVENANCE_FIELDS: re-exported)
from mechdyn.core.model import Model

from . import cache as _cache
from . import declared
from .cache import BuildError, cache_dir, checksum_path  # noqa: F401  (re-exported: the build's public names)
from .flags import DEFAULT_CFLAGS, compiler, compiler_identity  # noqa: F401  (re-exported)
from .capi import CDEF, DERIV_CDEF, DRIVEN_CDEF, GENERATOR_VERSION

if TYPE_CHECKING:
    from tqdm import tqdm

# a model's translation units: the derivatives are compiled apart, when asked for, by the cheaper route or by the
# route named (derivatives-straight, derivatives-loop: the tests' second route)
UNITS = ("dynamics", "derivatives", "derivatives-straight", "derivatives-loop")


def _unit(unit: str) -> tuple:
    """(its generator, its cffi declarations) of a translation unit (looked up at the call, so the seam tests'
    replaced generate is the one used). The generator is imported here, on a cache miss: a warm load never
    needs it."""
    from . import generate as gen

    if unit.startswith("derivatives"):
        route = _route(unit)
        return (lambda m: gen.derivatives_unit(m, route)), DERIV_CDEF
    return gen.generate, CDEF


def _route(unit: str) -> str | None:
    """The derivatives route a unit names (None: the cheaper one)."""
    return unit.partition("-")[2] or None


def _tag(unit: str) -> str:
    """A unit's part of its module's name."""
    return "" if not unit.startswith("derivatives") else "_derivs" + (f"_{_route(unit)}" if _route(unit) else "")


@cache
def _generator_fingerprint() -> str:
    """A hash of the code generator's own source and of the core modules it computes with (the Model, the loop
    closure), so any change to them invalidates the cache."""
    h = hashlib.sha256(GENERATOR_VERSION.encode())
    core = Path(__file__).parents[1] / "core"
    for f in sorted([*Path(__file__).parent.glob("*.py"), *Path(__file__).parent.glob("*.c"), *core.glob("*.py")]):
        h.update(f.read_bytes())
    return h.hexdigest()


def _flags(cflags: Sequence[str] | None) -> list[str]:
    return compiler()[1] if cflags is None else list(cflags)


def cache_key(model: Model, cflags: Sequence[str] | None = None) -> str:
    """The content address of `model` compiled with `cflags` (default: the production flags): which of its numbers
    are declared parameters, not their values."""
    cc, flags = compiler()[0], _flags(cflags)
    h = hashlib.sha256()
    for part in (fingerprint(model, values=False), _generator_fingerprint(), cffi.__version__, compiler_identity(tuple(cc)),
                 " ".join(flags)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:20]


def module_name(model: Model, cflags: Sequence[str] | None = None, unit: str = "dynamics") -> str:
    safe = "".join(ch if ch.isalnum() else "_" for ch in model.name)
    return f"_mechdyn_{safe}{_tag(unit)}_{cache_key(model, cflags)}"


def module_path(model: Model, cflags: Sequence[str] | None = None, unit: str = "dynamics") -> Path:
    """Where `model`'s compiled module (`unit`: one of UNITS) is (or would be) in the cache."""
    return _module_file(module_name(model, cflags, unit))


def _module_file(name: str) -> Path:
    return cache_dir() / f"{name}{sysconfig.get_config_var('EXT_SUFFIX')}"


def compile_module(what: str, source: str, cdef: str, name: str, tmp: Path, filename: str, flags: list[str],
                   bar: tqdm, parts: int = 1) -> Path:
    """Emit the cffi wrapper (declared by `cdef`) around the C `source` (`what` it is, for an error) and compile it
    into tmp/filename. A source in `parts` (generate.part) is compiled one part per translation unit, all at
    once, the wrapper with part 0, and linked: gcc is single-threaded, and a staged model's parts are long. The
    seam tests replace to count compilations."""
    cc = compiler()[0]
    ffi = cffi.FFI()
    ffi.cdef(cdef)
    ffi.set_source(name, source, compiler_verbose=False)
    csrc = tmp / f"{name}.c"
    ffi.emit_c_code(str(csrc))
    out = tmp / filename
    common = [*cc, *flags, "-fPIC", f"-I{sysconfig.get_paths()['include']}"]
    if parts == 1:
        _run(what, [[*common, "-shared", str(csrc), "-o", str(out), "-lm"]], bar)
        return out
    plain = tmp / f"{name}_parts.c"
    plain.write_text(source)
    objs = [tmp / f"{name}_{k}.o" for k in range(parts)]
    _run(what, [[*common, "-DMD_PART=0", "-c", str(csrc), "-o", str(objs[0])]]
         + [[*common, f"-DMD_PART={k}", "-c", str(plain), "-o", str(objs[k])] for k in range(1, parts)], bar)
    _run(what, [[*cc, *flags, "-shared", *map(str, objs), "-o", str(out), "-lm"]], bar)
    return out


def _run(what: str, cmds: list[list[str]], bar: tqdm) -> None:
    """Run the compiler commands side by side, refreshing the progress bar's clock; a failure names `what` and
    the command."""
    procs = [(cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)) for cmd in cmds]
    failed = None
    for cmd, proc in procs:
        while True:
            try:
                _, err = proc.communicate(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                bar.refresh()  # the elapsed time keeps counting through a long compile
        if proc.returncode != 0 and failed is None:
            failed = f"compiling {what} failed:\n$ {shlex.join(cmd)}\n{err.strip()}"
    if failed:
        raise BuildError(failed)


def _rebuild(model: Model, name: str, dest: Path, flags: list[str], progress: bool, failed: str | None = None,
             unit: str = "dynamics") -> None:
    """Compile `model`'s `unit` into the cache at dest unless, once its lock is held, a valid module is there (and
    importing it has not `failed`)."""
    emit, cdef = _unit(unit)
    if unit == "dynamics" and model.drivers:
        cdef += DRIVEN_CDEF
    cdef += declared.cdef(model, "fwd_dyn" if unit == "dynamics" else "fwd_dyn_derivs")
    what = f"model '{model.name}'" + ("" if unit == "dynamics" else f" ({unit})")

    def make(tmp: Path) -> Path:
        from tqdm import tqdm

        # the stage and its elapsed time only: the two stages' lengths differ from model to model, so no ETA
        with tqdm(total=2, desc=f"{model.name}: generating C", bar_format="{desc} ({elapsed})", leave=False,
                  disable=None if progress else True) as bar:
            gen = emit(model)
            bar.update(1)
            bar.set_description_str(f"{model.name}: compiling {len(gen.source) // 1000} kB of C", refresh=False)
            out = compile_module(what, gen.source, cdef, name, tmp, dest.name, flags, bar, gen.parts)
            bar.update(1)
        return out

    _cache.publish(name, dest, make, failed)


def _import(name: str, path: str) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def build(model: Model, progress: bool = False, cflags: Sequence[str] | None = None,
          unit: str = "dynamics") -> tuple[ModuleType, Path]:
    """The compiled extension module of `model`'s `unit` (one of UNITS), from the cache when it is there and
    intact; and its path. With `progress`, a cold build shows its stages on a terminal's stderr. `cflags`: the
    compiler flags (default: the production ones, mechdyn.codegen.flags.production)."""
    flags = _flags(cflags)
    name = module_name(model, flags, unit)
    dest = _module_file(name)
    if _cache.defect(dest, name) is not None:
        _rebuild(model, name, dest, flags, progress, unit=unit)
    try:
        return _import(name, str(dest)), dest
    except ImportError as e:
        failed = str(e)
    _rebuild(model, name, dest, flags, progress, failed, unit)
    # dlopen matches an already-opened library by its path string before looking at the file, so the rebuilt
    # module is opened through a path spelled differently ("/./") to reach the new file
    return _import(name, f"{dest.parent}/./{dest.name}"), dest


def build_source(tag: str, cdef: str, source: str) -> ModuleType:
    """A cffi extension compiled from C `source` that is not a model's (the benchmark's timing loops,
    mechdyn/bench.py), declared by `cdef`, through the same cache as the models' modules; keyed by the text,
    cffi and the compiler with the production flags."""
    cc, flags = compiler()[0], _flags(None)
    h = hashlib.sha256()
    for part in (tag, cdef, source, cffi.__version__, compiler_identity(tuple(cc)), " ".join(flags)):
        h.update(part.encode())
        h.update(b"\0")
    name = f"_mechdyn_{tag}_{h.hexdigest()[:20]}"
    dest = _module_file(name)
    if _cache.defect(dest, name) is not None:
        def make(tmp: Path) -> Path:
            from tqdm import tqdm

            with tqdm(disable=True) as bar:
                return compile_module(f"the {tag} module", source, cdef, name, tmp, dest.name, flags, bar)

        _cache.publish(name, dest, make)
    return _import(name, str(dest))
