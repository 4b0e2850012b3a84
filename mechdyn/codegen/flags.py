"""Which compiler and flags each kind of C build gets: the one place that decides them.

- production: the generated modules that `Dynamics` loads, with $MECHDYN_CFLAGS or DEFAULT_CFLAGS;
- counting: the build whose instructions the regression gates count under callgrind, with flags fixed per target
  architecture whatever $MECHDYN_CFLAGS says (-march=native depends on the host CPU, and valgrind cannot decode
  the AVX-512 code it emits where the CPU has it);
- drivers: the small C programs that dlopen a compiled module and call into it (callgrind's call driver, the
  generated code's timing loop);
- peer programs: the Pinocchio (C++) and MuJoCo (C) timing programs of the side-by-side benchmark.

Builds take their flags as an argument (`mechdyn.codegen.build.build(model, cflags=...)`); nothing swaps the
environment variable.
"""
from __future__ import annotations

import os
import platform
import shlex
import subprocess
from functools import cache

# -march=native includes AVX-512 where the CPU has it (docs/performance.md has what it buys); the instruction
# gate counts a build of its own with fixed portable flags instead (counting())
DEFAULT_CFLAGS = "-O2 -march=native -fno-math-errno"
# instructions are counted on a build for a fixed target, never -march=native (see crosscheck/golden.py)
COUNT_FLAGS_X86_64 = ("-O2", "-march=x86-64-v3", "-mtune=generic", "-fno-math-errno")
COUNT_FLAGS_OTHER = ("-O2", "-fno-math-errno")  # the compiler's default target: fixed by the compiler alone
DRIVER_FLAGS = ("-O1", "-rdynamic", "-ldl")  # -rdynamic: the driver provides the module's one libpython symbol
PEER_CXXFLAGS = ("-std=c++17", "-O3", "-march=native", "-fno-math-errno", "-DNDEBUG")  # Pinocchio's timing program
PEER_CFLAGS = ("-O2",)  # MuJoCo's timing program


def cc() -> list[str]:
    """The C compiler command: $CC, default cc."""
    return shlex.split(os.environ.get("CC", "cc"))


def cxx() -> list[str]:
    """The C++ compiler command: $CXX, default c++."""
    return shlex.split(os.environ.get("CXX", "c++"))


def production() -> list[str]:
    """The generated modules' flags: $MECHDYN_CFLAGS, else DEFAULT_CFLAGS."""
    return shlex.split(os.environ.get("MECHDYN_CFLAGS", DEFAULT_CFLAGS))


def compiler() -> tuple[list[str], list[str]]:
    """The compiler command ($CC, default cc) and the production flags ($MECHDYN_CFLAGS)."""
    return cc(), production()


@cache
def compiler_identity(cmd: tuple[str, ...]) -> str:
    """The first line of `cmd --version`: which compiler this is (part of every cache key)."""
    out = subprocess.run([*cmd, "--version"], capture_output=True, text=True, check=False)
    return out.stdout.splitlines()[0] if out.stdout else " ".join(cmd)


@cache
def target_machine(cmd: tuple[str, ...]) -> str:
    """The compiler's target triple (its --version line does not name it)."""
    out = subprocess.run([*cmd, "-dumpmachine"], capture_output=True, text=True, check=False)
    return out.stdout.strip() or "unknown"


def counting() -> list[str]:
    """The flags of the build whose instructions are counted: fixed per target architecture, never the host's."""
    return list(COUNT_FLAGS_X86_64 if target_machine(tuple(cc())).startswith("x86_64") else COUNT_FLAGS_OTHER)


def no_avx512() -> list[str]:
    """-mno-avx512f on x86-64 (valgrind cannot decode AVX-512 instructions), nothing elsewhere."""
    return ["-mno-avx512f"] if platform.machine() in ("x86_64", "AMD64") else []


def driver() -> list[str]:
    """The flags of a driver program that dlopens a compiled module."""
    return list(DRIVER_FLAGS)


def peer_cxx() -> list[str]:
    """Pinocchio's timing program, timed and counted in one build: so no AVX-512, which valgrind cannot decode
    (turning it off made no difference to Pinocchio's ABA beyond noise; docs/performance.md)."""
    return [*PEER_CXXFLAGS, *no_avx512()]


def peer_c() -> list[str]:
    """MuJoCo's timing program."""
    return list(PEER_CFLAGS)
