"""What both command-line tools share: model arguments and the exit-code contract.

Exit codes: 0 every check passed, 1 a check failed, 2 bad input (with one
`file:line: message` on stderr and no traceback).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from mechdyn.core.parse import MechError, ModelNotFound

EXIT_PASS, EXIT_FAIL, EXIT_INPUT = 0, 1, 2


class InputError(Exception):
    """Bad command-line input other than a model file error; printed as is."""


def run(parser: Callable[[], argparse.ArgumentParser], argv: list[str] | None) -> int:
    """Parse argv and run the chosen subcommand, turning input errors into one line on stderr and exit code 2."""
    try:
        args = parser().parse_args(argv)
        return args.func(args)
    except (MechError, ModelNotFound, InputError, NotImplementedError) as e:
        print(e, file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `mechdyn info x | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_PASS


def atomic_write(path: Path, text: str) -> None:
    """Write text to path so that readers see the old file or the whole new one, never a part."""
    fd, tmp = tempfile.mkstemp(dir=path.parent or ".", prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would hide a report from everyone else
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
