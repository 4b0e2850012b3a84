"""Shared fixtures: the model set is discovered from models/, never listed by hand."""
import fcntl
import importlib.util
import os
import struct
import subprocess
import termios
from pathlib import Path

MODELS_DIR = Path(__file__).resolve().parents[1] / "models"
MODELS = sorted(p.stem for p in MODELS_DIR.glob("*.mech"))


def make_chains():
    """models/make_chains.py as a module (models/ is not a package): the long-chain models' text, any length."""
    spec = importlib.util.spec_from_file_location("make_chains", MODELS_DIR / "make_chains.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def critical_path(name: str) -> int:
    """The latency-weighted longest path through the model's fwd_dyn as emitted (its frames slid), in cycles
    after the sincos batch."""
    from mechdyn.codegen import frames, schedule
    from mechdyn.codegen.generate import dynamics_builder
    from mechdyn.core.parse import load_model

    model = load_model(name)
    stmts = dynamics_builder(frames.slide(model, frames.shifts(model))).live()
    return max(schedule.heights(stmts, schedule.readers(stmts)))


def in_pty(argv: list[str], env: dict[str, str] | None = None, cols: int = 120) -> tuple[int, str]:
    """Run argv with a pseudo-terminal of `cols` columns as its stdin, stdout and stderr; its exit code and output."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, cols, 0, 0))  # tqdm draws nothing at width 0
    p = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, close_fds=True, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return p.wait(timeout=600), b"".join(chunks).decode("utf-8", "replace")
