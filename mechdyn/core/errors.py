"""The two ways a `.mech` input is reported: an error that stops the load, a warning that does not."""
from __future__ import annotations

from typing import Any


class MechError(ValueError):
    """A bad `.mech` input; `str(e)` is `path:line: msg`."""

    def __init__(self, path: str, line: int, msg: str) -> None:
        super().__init__(f"{path}:{line}: {msg}")
        self.path, self.line, self.msg = path, line, msg

    def __reduce__(self) -> tuple[Any, ...]:
        # the default rebuilds from self.args (the formatted string), which
        # breaks unpickling in worker processes
        return type(self), (self.path, self.line, self.msg)


class MechWarning(UserWarning):
    """A model that loads but is probably not what its author meant, issued with warnings.warn_explicit at the
    file and line it concerns (the CLI prints it as `path:line: warning: msg`)."""
