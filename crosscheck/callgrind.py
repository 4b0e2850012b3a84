"""The one callgrind runner: run a program under valgrind's callgrind and read the instructions it counted.

Both instruction counts of the harness go through `count`: the regression gates' (crosscheck/golden.py, which
counts inside fwd_dyn from the call of a marker function on, `--zero-before`) and the side-by-side benchmark's
(crosscheck/bench.py, which counts inside each engine's timed loop, `--collect-atstart=no`).
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm


# The opening both call drivers share (crosscheck/golden.py DRIVER_C, crosscheck/bench.py GEN_DRIVER): open a
# compiled mechdyn module and read its fwd_dyn and sizes.
MODULE_DRIVER_C = r"""#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

/* The module is a cffi extension for Python: its Python entry points bind lazily and are never called here, and
 * its one data reference into libpython resolves at dlopen against this definition (drivers link with -rdynamic). */
char _Py_NoneStruct[64];

/* fwd_dyn of the module at path, with its sizes nq, nv, nbody, nact in size[]; exit 3 when any is missing */
static void *md_open(const char *path, long size[4])
{
    static const char *names[4] = {"fwd_dyn_nq", "fwd_dyn_nv", "fwd_dyn_nbody", "fwd_dyn_nact"};
    void *h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    void *f = h ? dlsym(h, "fwd_dyn") : 0;
    if (!f) { fprintf(stderr, "%s: %s\n", path, dlerror()); exit(3); }
    for (int k = 0; k < 4; ++k) {
        const int *p = (const int *)dlsym(h, names[k]);
        if (!p) { fprintf(stderr, "%s: %s\n", names[k], dlerror()); exit(3); }
        size[k] = *p;
    }
    return f;
}
"""


def valgrind() -> str | None:
    """The valgrind executable, or None where it is not installed."""
    return shutil.which("valgrind")


@dataclass(frozen=True)
class Count:
    instructions: int  # inside the toggled function and its callees
    stdout: str  # the program's output


def count(cmd: list, function: str, zero_before: str | None = None, timeout: float | None = 600) -> Count:
    """Run cmd under callgrind, collecting only inside `function` and its callees (`--toggle-collect`).

    `zero_before`: also discard what was counted before the first call of that function (`--zero-before`), as
    the golden's call driver does to leave out its warm-up pass; without it, collection is off at the start
    (`--collect-atstart=no`). $VALGRIND_OPTS is not passed on: the figures must not depend on it.
    Raises RuntimeError where valgrind is missing, fails, or counts nothing."""
    vg = valgrind()
    if vg is None:
        raise RuntimeError("valgrind not found: apt-get install valgrind")
    cmd = [str(c) for c in cmd]
    env = {k: v for k, v in os.environ.items() if k != "VALGRIND_OPTS"}
    with tempfile.TemporaryDirectory(prefix="mechdyn-callgrind.") as tmp:
        out = Path(tmp) / "callgrind.out"
        start = [f"--zero-before={zero_before}"] if zero_before else ["--collect-atstart=no"]
        full = [vg, "--tool=callgrind", f"--callgrind-out-file={out}", *start, f"--toggle-collect={function}", *cmd]
        with tqdm(total=1, desc=f"counting instructions under callgrind: {Path(cmd[0]).name}", leave=False,
                  disable=None, bar_format="{desc}"):
            res = subprocess.run(full, capture_output=True, text=True, check=False, env=env,
                                 timeout=timeout)
        if res.returncode != 0:
            raise RuntimeError(f"callgrind failed (exit {res.returncode}):\n$ {shlex.join(full)}\n"
                               f"{res.stderr.strip()[-3000:]}")
        totals = [ln for ln in out.read_text().splitlines() if ln.startswith(("summary:", "totals:"))]
    if not totals or int(totals[0].split()[1]) <= 0:
        raise RuntimeError(f"callgrind counted no instructions in {function}:\n$ {shlex.join(full)}")
    return Count(int(totals[0].split()[1]), res.stdout)
