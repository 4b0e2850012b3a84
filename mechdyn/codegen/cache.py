"""The one compile cache of every C build: generated modules, the instruction-counting builds, the drivers and
the peers' timing programs.

An entry is a file in `cache_dir()` under a content-addressed name (the caller's key covers everything the
compiled file depends on), with a checksum file beside it recording its size and sha256. `entry` returns the
file when it matches its checksum file; otherwise it builds it under the entry's lock (one builder compiles, the
others wait and then find its file), in a private temporary directory, and publishes file and checksum with
atomic renames. Temporary directories that killed builders left behind are removed by the next builder.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path


from .flags import compiler_identity

ENTRY_PREFIXES = ("_mechdyn_", "mechdyn_")  # every entry's name starts with one: its leftovers are known by it


class BuildError(RuntimeError):
    """The C compiler rejected a source; the message carries its output."""


def cache_dir() -> Path:
    """$MECHDYN_CACHE, else $XDG_CACHE_HOME/mechdyn, else ~/.cache/mechdyn."""
    root = os.environ.get("MECHDYN_CACHE") or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mechdyn"
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def checksum_path(dest: Path) -> Path:
    """The file beside a published entry that records its size and sha256."""
    return dest.with_name(dest.name + ".sha256")


def sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def defect(dest: Path, name: str) -> str | None:
    """Why the entry at dest cannot be used as `name` (it is absent, or does not match its checksum file), or
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
    if sha256(dest) != digest:
        return "does not match the sha256 recorded when it was published"
    return None


@contextmanager
def lock(name: str) -> Iterator[None]:
    """The entry's build lock: one builder compiles; the others wait, then find its file."""
    with open(cache_dir() / f".{name}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def remove_leftovers(name: str) -> None:
    """Delete temporary build directories that killed builders left in the cache. Called with `name`'s lock held,
    so `name`'s own are dead; another entry's are removed only when its lock is free (no live builder)."""
    for tmp in cache_dir().glob(".*.*"):
        owner = tmp.name[1:].split(".")[0]  # the entry's name: tempfile's prefix is f".{name}."
        if not owner.startswith(ENTRY_PREFIXES) or not tmp.is_dir():  # not an entry's, or a lock file
            continue
        if owner == name:
            shutil.rmtree(tmp, ignore_errors=True)
            continue
        with open(cache_dir() / f".{owner}.lock", "w") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # being built right now
            shutil.rmtree(tmp, ignore_errors=True)


def publish(name: str, dest: Path, make: Callable[[Path], Path], failed: str | None = None,
            kind: str = "module") -> None:
    """Build the entry `name` at dest under its lock unless, once the lock is held, a valid one is there (and
    using it has not `failed`): `make(tmp)` writes the file into the private directory tmp and returns its path,
    which is published atomically at dest with its checksum file. An entry that is there but defective gets one
    warning line on stderr."""
    if not name.startswith(ENTRY_PREFIXES) or "." in name:
        raise ValueError(f"cache entry name {name!r} must start with one of {ENTRY_PREFIXES} and have no dot")
    with lock(name):
        remove_leftovers(name)
        why = f"cannot be imported ({failed})" if failed else defect(dest, name)
        if why is None:
            return
        if why != "absent":
            print(f"mechdyn: cached {kind} {dest} {why}; rebuilding it", file=sys.stderr)
        with tempfile.TemporaryDirectory(dir=dest.parent, prefix=f".{name}.") as tmp:
            out = make(Path(tmp))
            sums = Path(tmp) / "sha256"
            sums.write_text(f"{sha256(out)} {out.stat().st_size} {name}\n")
            # atomic publish: readers see the old files, none, or the whole new ones; one that catches the pair
            # between the two renames finds a mismatch and waits on the lock, which this builder holds
            os.replace(sums, checksum_path(dest))
            os.replace(out, dest)


def entry(name: str, dest: Path, make: Callable[[Path], Path], kind: str = "module") -> Path:
    """dest, built by `make` and published (see `publish`) unless it is there and matches its checksum file."""
    if defect(dest, name) is not None:
        publish(name, dest, make, kind=kind)
    return dest


def compiled(tag: str, source: str, suffix: str, cmd: Sequence[str], args: Sequence[str]) -> Path:
    """A program compiled once from `source` (a file ending in `suffix`) as `cmd SRC -o OUT args`, cached by the
    source, the compiler's identity, `cmd` and `args`."""
    cmd, args = list(cmd), list(args)
    key = hashlib.sha256("\0".join([source, compiler_identity(tuple(cmd)), *cmd, *args]).encode()).hexdigest()[:16]
    name = f"mechdyn_{tag}_{key}"

    def make(tmp: Path) -> Path:
        from tqdm import tqdm  # here: a warm cache never shows a bar

        src, out = tmp / f"{tag}{suffix}", tmp / tag
        src.write_text(source)
        full = [*cmd, str(src), "-o", str(out), *args]
        # a C++ program (Pinocchio's) takes minutes to compile on a busy machine: say so rather than sit silent
        with tqdm(total=1, desc=f"compiling the {tag} program (once; then cached)", leave=False, disable=None,
                  bar_format="{desc}"):
            res = subprocess.run(full, capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise BuildError(f"compiling the {tag} program failed:\n$ {shlex.join(full)}\n{res.stderr.strip()[-4000:]}")
        return out

    return entry(name, cache_dir() / name, make, kind="program")
