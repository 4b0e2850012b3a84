"""The two ways a `.mech` input is reported: an error that stops the load, a warning that does not; and the
cap on what either says, so that a 200 kB token or a list of every name never floods a message."""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

MAX_MSG = 300  # characters of a message, its `path:line: ` excluded: what a person reads on one line
MAX_WORD = 80  # characters of one whitespace-free word (an echoed token, a name): longer ones are clipped


def clip(word: str, width: int = MAX_WORD) -> str:
    """`word` as a message shows it: whole up to `width` characters, else its start and end around the count
    of characters left out ('mmmm…[199,950 more]…mmm'), so a quoted token keeps its quotes."""
    head, tail = width * 2 // 3, width // 6
    cut = f"{word[:head]}…[{len(word) - head - tail:,} more]…{word[-tail:]}"
    return word if len(word) <= width or len(cut) >= len(word) else cut


def listed(items: Iterable[Any], first: int = 5, sep: str = ", ") -> str:
    """The first `first` items joined by `sep`, then 'and N others': a list of every name (every body of a
    168-body model, every model file) cut to what a person reads."""
    items = [str(x) for x in items]
    shown = sep.join(clip(x, 40) for x in items[:first])
    more = len(items) - first
    return f"{shown} and {more} other{'s' if more > 1 else ''}" if more > 0 else shown


def capped(msg: str) -> str:
    """msg on one line in at most MAX_MSG characters: each word longer than MAX_WORD clipped (clip), shorter
    still if the message does not fit, and as a last resort the whole cut in its middle (its start says what is
    wrong, its end what was expected)."""
    words = " ".join(msg.split())
    for width in (MAX_WORD, MAX_WORD // 2):
        text = re.sub(r"\S{%d,}" % (width + 1), lambda m: clip(m.group(), width), words)
        if len(text) <= MAX_MSG:
            return text
    tail = MAX_MSG // 3
    return f"{text[:MAX_MSG - tail - 3]} … {text[-tail:]}"


class MechError(ValueError):
    """A bad `.mech` input; `str(e)` is `path:line: msg`, msg capped to MAX_MSG characters (capped)."""

    def __init__(self, path: str, line: int, msg: str) -> None:
        msg = capped(msg)
        super().__init__(f"{path}:{line}: {msg}")
        self.path, self.line, self.msg = path, line, msg

    def __reduce__(self) -> tuple[Any, ...]:
        # the default rebuilds from self.args (the formatted string), which
        # breaks unpickling in worker processes
        return type(self), (self.path, self.line, self.msg)


class MechWarning(UserWarning):
    """A model that loads but is probably not what its author meant, issued with warnings.warn_explicit at the
    file and line it concerns (the CLI prints it as `path:line: warning: msg`)."""
