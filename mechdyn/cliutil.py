"""What both command-line tools share: the parser, argument types, and the exit-code contract.

Exit codes: 0 every check passed, 1 a check failed, 2 bad input (with one
line on stderr, `file:line: message` for a model file, and no traceback).
"""
from __future__ import annotations

import argparse
import math
import os
import re
import sqlite3
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from mechdyn.core.errors import MechError, MechWarning, clip
from mechdyn.sim.limits import MAX_STEPS, step_count

if TYPE_CHECKING:
    from mechdyn.core.model import Model

EXIT_PASS, EXIT_FAIL, EXIT_INPUT = 0, 1, 2
MAX_MESSAGE = 300  # characters of an error line (a model file's: of its message, after `path:line: `); a 200 kB
# token in the input must not flood the terminal
MAX_TRIALS = 1_000_000  # validation states are all kept in memory, a few kB each for the largest models
MAX_SEED = 2**32 - 1


class InputError(Exception):
    """Bad command-line input other than a model file error; printed as is."""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are InputErrors, so that `run` prints them as its one line."""

    def error(self, message: str):  # argparse's own prints the usage block first, then exits
        raise InputError(f"{self.prog}: {message} (see {self.prog} --help)")


def one_line(message: str) -> str:
    """message on one line, cut to MAX_MESSAGE characters with an ellipsis."""
    text = re.sub(r"\s*\n\s*", " ", message.strip())
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE - 1] + "…"


def _describe(e: BaseException) -> str:
    """What run prints for an expected error: a model file's as `path:line: msg` in full (its msg is capped
    already, mechdyn.core.errors.capped, and a long path must not cut off what was expected), any other cut to
    MAX_MESSAGE characters by one_line."""
    if isinstance(e, MechError):
        return f"{clip(e.path, 300)}:{e.line}: {e.msg}"
    return one_line(_said(e))


def _said(e: BaseException) -> str:
    """An expected error other than a model file's, in words."""
    if isinstance(e, OSError) and e.filename is not None and e.strerror:
        return f"{e.filename}: {e.strerror}"  # not "[Errno 13] Permission denied: '...'"
    if isinstance(e, MemoryError):
        return "out of memory" + (f": {e}" if str(e) else "") + "; ask for less work (fewer trials, a larger step)"
    return str(e) or type(e).__name__


def run(parser: Callable[[], argparse.ArgumentParser], argv: list[str] | None) -> int:
    """Parse argv and run the chosen subcommand, turning input errors into one line on stderr and exit code 2.

    Expected errors: usage errors and InputError, a bad model (MechError and
    ModelNotFound are ValueErrors, as is every argument check of the library),
    unreadable or unwritable files (OSError), a damaged history (sqlite3.Error)
    and running out of memory. Anything else is a bug and keeps its traceback.
    Warnings are held back until the command ends: shown after it, unless it
    ended in an input error, whose one line replaces them (numpy's overflow
    warnings are then symptoms of the same bad input, printed before the diagnosis).
    """
    held: list[warnings.WarningMessage] = []
    show = True
    try:
        with warnings.catch_warnings(record=True) as held:
            try:
                args = parser().parse_args(argv)
                return args.func(args)
            except KeyboardInterrupt:
                return 130
            except BrokenPipeError:  # `mechdyn info x | head`: the reader left; say nothing more
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                return EXIT_PASS
            except (InputError, ValueError, NotImplementedError, OSError, sqlite3.Error, MemoryError) as e:
                show = False
                print(_describe(e), file=sys.stderr)
                return EXIT_INPUT
    finally:
        if show:
            for w in held:
                if issubclass(w.category, MechWarning):  # located in the model file, as its errors are
                    print(f"{w.filename}:{w.lineno}: warning: {w.message}", file=sys.stderr)
                else:
                    warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file, w.line)


MODEL_HELP = "a model name in models/, or a path to a .mech, .urdf or MJCF .xml file"


def add_model_argument(p: argparse.ArgumentParser, params: bool = True, **kw) -> None:
    """The positional model argument, the options an imported URDF takes, and (with `params`) --param."""
    p.add_argument("model", help=kw.pop("help", MODEL_HELP), **kw)
    g = p.add_argument_group("URDF import")
    g.add_argument("--floating", action="store_true", help="a free joint between the base and the URDF's root link")
    g.add_argument("--mimic", choices=("refuse", "free"), default="refuse",
                   help="a mimic joint: refuse the file (default), or import it as an independent joint, as "
                        "Pinocchio does")
    if not params:
        return
    pg = p.add_argument_group("parameters (docs/params.md)")
    pg.add_argument("--param", action="append", default=[], metavar="NAME.FIELD[=V]",
                    help="keep this number free in the generated C: a body's mass, cg or inertia (a tree's xtree), "
                         "a tsda's k, c or l0, an rsda's k, c or q0, a track's or the ground's kn, kt or mu, set "
                         "without a compile; =V gives its value (several numbers: comma-separated). Repeatable, e.g. "
                         "--param spring_FL.k=1.2e5 --param chassis.mass")


def load_model(spec: str, floating: bool = False, mimic: str = "refuse") -> Model:
    """mechdyn.core.parse.load_model, with a file that exists but cannot be read named in an InputError."""
    from mechdyn.imports import load_model as load

    try:
        return load(spec, floating, mimic)
    except OSError as e:
        raise InputError(f"{clip(spec, 200)}: cannot read the model file: {e.strerror or e}") from None


def model_of(args: argparse.Namespace) -> Model:
    """The model a command names (add_model_argument), loaded, with the parameters its --param options declare
    at the values they give."""
    model = load_model(args.model, getattr(args, "floating", False), getattr(args, "mimic", "refuse"))
    given = getattr(args, "param", [])
    return with_params(model, given) if given else model


def with_params(model: Model, given: list[str]) -> Model:
    """`model` with the --param options `given` (NAME.FIELD or NAME.FIELD=V) declared and set, or InputError
    naming the option at fault."""
    from mechdyn.core import params as P

    split = [g.partition("=") for g in given]
    try:
        model = P.declare(model, [name for name, _, _ in split])
    except P.ParamError as e:
        raise InputError(f"--param: {e}") from None
    x = P.values(model)
    for (name, eq, text), p in zip(split, model.params[len(model.params) - len(split):]):
        if not eq:
            continue
        try:
            v = [float(t) for t in text.split(",")]
        except ValueError:
            raise InputError(f"--param {name}={text}: expected numbers, comma-separated for a cg or an "
                             "inertia") from None
        if len(v) != p.size:
            raise InputError(f"--param {name}={text}: {name} holds {p.size} numbers, got {len(v)}")
        x[p.offset:p.offset + p.size] = v
    try:
        return P.with_values(model, x)
    except P.ParamError as e:
        raise InputError(f"--param: {e}") from None


def _number(text: str, kind: type, expected: str) -> float | int:
    try:
        return kind(text)
    except (ValueError, OverflowError):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None


def int_range(lo: int, hi: int) -> Callable[[str], int]:
    """argparse type: an integer in [lo, hi]."""
    def parse(text: str) -> int:
        expected = f"a positive integer up to {hi:,}" if lo == 1 else f"an integer from {lo} to {hi:,}"
        n = _number(text, int, expected)
        if not lo <= n <= hi:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text}")
        return n
    parse.__name__ = f"integer from {lo} to {hi}"
    return parse


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0."""
    x = _number(text, float, "a finite number > 0")
    if not (x > 0 and math.isfinite(x)):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text}")
    return x


def float_range(lo: float, hi: float, what: str) -> Callable[[str], float]:
    """argparse type: `what`, a number in [lo, hi]."""
    expected = f"{what} from {lo:g} to {hi:g}"

    def parse(text: str) -> float:
        x = _number(text, float, expected)
        if not lo <= x <= hi:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text}")
        return x
    parse.__name__ = expected
    return parse


def slope_degrees(text: str) -> float:
    """argparse type: a slope in degrees, in [0, 60] (0: none; past 60 a tracked vehicle tips before it slides)."""
    x = _number(text, float, "a slope in degrees from 0 to 60")
    if not 0.0 <= x <= 60.0:
        raise argparse.ArgumentTypeError(f"expected a slope in degrees from 0 to 60, got {text}")
    return x


trials = int_range(1, MAX_TRIALS)
seed = int_range(0, MAX_SEED)


def sim_steps(T: float, dt: float, t_flag: str, dt_flag: str) -> int:
    """The number of steps of T seconds at dt (both finite and positive); InputError past MAX_STEPS."""
    try:
        return step_count(T, dt)
    except ValueError:
        raise InputError(f"{t_flag} {T:g} at {dt_flag} {dt:g} would take {T / dt:.3g} steps; at most {MAX_STEPS:.0e} "
                         f"are allowed (a larger {dt_flag} or a shorter {t_flag})") from None


def output_file(text: str) -> str:
    """argparse type: a file we can create or replace, checked before any work is done.

    A symlink is judged by its target; an existing device or pipe (/dev/stdout) only needs to be writable,
    since it is written into, never replaced."""
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a directory; expected a file name")
    if os.path.exists(text) and not os.path.isfile(text):
        if not os.access(text, os.W_OK):
            raise argparse.ArgumentTypeError(f"cannot write {text}: no write permission")
        return text
    parent = Path(os.path.realpath(text)).parent
    if not parent.is_dir():
        what = "is not a directory" if parent.exists() else "does not exist"
        raise argparse.ArgumentTypeError(f"cannot write {text}: directory {parent} {what}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"cannot write {text}: no write permission in {parent}")
    return text


def output_dir(text: str) -> str:
    """argparse type: a directory that exists, or one that can be made (its nearest existing ancestor is a directory)."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} exists and is not a directory")
    ancestor = next(p for p in (path, *path.parents) if p.exists())
    if not ancestor.is_dir():
        raise argparse.ArgumentTypeError(f"cannot make directory {text}: {ancestor} is not a directory")
    return text


def table(rows: list[dict[str, object]]) -> str:
    """Rows of one set of keys as a text table: a header of the keys, every column right-aligned to its widest."""
    cols = {k: [k, *(str(r[k]) for r in rows)] for k in rows[0]}
    width = {k: max(map(len, c)) for k, c in cols.items()}
    return "\n".join(" ".join(cols[k][i].rjust(width[k]) for k in cols) for i in range(len(rows) + 1))


def atomic_write(path: Path, data: str | bytes | Iterable[bytes | memoryview], mode: int | None = None) -> None:
    """Write data (text, bytes, or bytes-like parts written one after another as the iterable yields them,
    unjoined) to path so that readers see the old file or the whole new one, never a part.

    A symlink's target is replaced, not the link; a device or pipe (/dev/null, /dev/stdout) is written
    into, since replacing it would put a regular file in its place. The new file gets `mode`, by default
    0666 less the umask (mkstemp's 0600 would hide a report from everyone else)."""
    binary = not isinstance(data, str)
    parts = [data] if isinstance(data, (str, bytes)) else data
    if path.exists() and not path.is_file():
        with open(path, "wb" if binary else "w") as f:
            f.writelines(parts)
        return
    path = Path(os.path.realpath(path))
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb" if binary else "w") as f:
            f.writelines(parts)
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
