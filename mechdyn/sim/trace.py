"""Trace files: a trajectory as CSV, with a `#` preamble carrying what plots need.

    # mechdyn trace
    # model: satellite
    # scheme: verlet
    # dt: 0.001
    # gravity: 0 0 -9.81
    # floating: bus
    t,q:bus.qw,...,qd:bus.wx,...,energy,dissipated[,closure]

Column names say which body and coordinate each is, so a plot needs nothing
but the file. `energy` is E(t); `dissipated` the work the dampers dissipated
since t = 0, integrated at every step, so energy + dissipated is the balance.

A contact run (ContactRun, write_contact_trace) is traced as `# kind: contact`: the hull's q and its roll,
pitch and yaw, every recorded contact metric (AUX: the step's ground wrench, the penetrations with their
loaded counts, the contact potentials, the dissipated work), the energy terms, and the world position
`x:NAME`, `y:NAME`, `z:NAME` of the hull, every roller and every shoe. Its preamble carries what a side view
needs without the model: the vehicle's mass and weight, each band's shoes, rollers (radius, kind), link
length, pad and thickness, and the terrain (a plane's n and d, or a profile sampled under each band).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from mechdyn.blocks import each_block
from mechdyn.cliutil import atomic_write
from mechdyn.core.model import Model, Roller
from mechdyn.core.spatial import R_to_rpy

from .contact import AUX, STORED, ContactRun, ContactSim, Step, contact_periods
from .energy import mechanics, total_mass

if TYPE_CHECKING:
    import pandas as pd

FLOATING_Q = ("qw", "qx", "qy", "qz", "x", "y", "z")
FLOATING_V = ("wx", "wy", "wz", "vx", "vy", "vz")


def coordinate_names(model: Model) -> tuple[list[str], list[str]]:
    """Column names of q and qd: `q:<body>` for single-DOF joints, `q:<body>.<part>` for floating ones."""
    qn, vn = [], []
    for b in model.bodies:
        if b.joint == "floating":
            qn += [f"q:{b.name}.{c}" for c in FLOATING_Q]
            vn += [f"qd:{b.name}.{c}" for c in FLOATING_V]
        else:
            qn.append(f"q:{b.name}")
            vn.append(f"qd:{b.name}")
    return qn, vn


TRACE_ROWS = 2000  # a contact trace's rows, about: enough to see a settle, small enough to plot (m113: 153 bodies)
PROFILE_SAMPLES = 400  # terrain samples under each band, for a terrain that is not a plane
PROFILE_MARGIN = 1.0  # m beyond the band's travel either way


@dataclass(frozen=True)
class Trace:
    meta: dict[str, str]
    data: pd.DataFrame

    @property
    def kind(self) -> str:
        """"contact" for a contact run's trace, "tree" for write_trace's."""
        return self.meta.get("kind", "tree")


@dataclass(frozen=True)
class TraceRoller:
    name: str
    radius: float
    kind: str  # "end", "drive" or "face"


@dataclass(frozen=True)
class TraceBand:
    """One band's constants as a contact trace's preamble gives them."""
    name: str
    shoes: tuple[str, ...]  # in order round the loop
    rollers: tuple[TraceRoller, ...]
    link_len: float
    pad: tuple[float, float, float]  # z, lx, ly in the shoe frame
    thickness: float
    pin_axis: tuple[float, float, float]  # the shoes' y (pin) axis in the world at the first row
    profile: tuple[np.ndarray, np.ndarray] | None  # (x, h) under the band, for a terrain that is not a plane


def meta_floats(meta: dict[str, str], key: str, n: int | None = None) -> list[float]:
    """The preamble value `key` as floats (n of them when given); ValueError naming the key otherwise."""
    if key not in meta:
        raise ValueError(f"the trace's preamble has no '{key}' line")
    try:
        out = [float(x) for x in meta[key].split()]
    except ValueError:
        raise ValueError(f"the trace's preamble line '{key}' holds {meta[key]!r}; expected numbers") from None
    if n is not None and len(out) != n:
        raise ValueError(f"the trace's preamble line '{key}' has {len(out)} numbers; expected {n}")
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def trace_bands(tr: Trace) -> list[TraceBand]:
    """The bands of a contact trace's preamble; ValueError naming the first line missing or malformed."""
    out = []
    for name in tr.meta.get("bands", "").split():
        key = f"band.{name}"
        rollers = []
        for part in tr.meta.get(f"{key}.rollers", "").split(","):
            words = part.split()
            if len(words) != 3 or words[2] not in ("end", "drive", "face") or not _is_number(words[1]):
                raise ValueError(f"the trace's preamble line '{key}.rollers' has {part.strip()!r}; expected "
                                 "'NAME RADIUS end|drive|face' items separated by commas")
            rollers.append(TraceRoller(words[0], float(words[1]), words[2]))
        profile = None
        if f"{key}.profile.x" in tr.meta:
            x, h = (np.array(meta_floats(tr.meta, f"{key}.profile.{c}")) for c in "xh")
            if len(x) != len(h):
                raise ValueError(f"the trace's terrain profile under band '{name}' has {len(x)} x and {len(h)} h")
            profile = (x, h)
        shoes = tuple(tr.meta.get(f"{key}.shoes", "").split())
        if not shoes:
            raise ValueError(f"the trace's preamble has no shoes for band '{name}'; expected a '{key}.shoes: NAME ...' "
                             "line")
        out.append(TraceBand(name, shoes, tuple(rollers),
                             meta_floats(tr.meta, f"{key}.link_len", 1)[0],
                             tuple(meta_floats(tr.meta, f"{key}.pad", 3)),
                             meta_floats(tr.meta, f"{key}.thickness", 1)[0],
                             tuple(meta_floats(tr.meta, f"{key}.pin_axis", 3)), profile))
    return out


def write_trace(path: Path, model: Model, t, Q, QD, energy, dissipated, closure, meta: dict[str, str]) -> None:
    """Write a trace atomically (readers never see half a file)."""
    qn, vn = coordinate_names(model)
    cols = {"t": t} | dict(zip(qn, np.asarray(Q).T)) | dict(zip(vn, np.asarray(QD).T))
    cols |= {"energy": energy, "dissipated": dissipated} | ({} if closure is None else {"closure": closure})
    head = {"model": model.name, "gravity": " ".join(f"{g:g}" for g in model.gravity),
            "floating": " ".join(b.name for b in model.bodies if b.joint == "floating")} | meta
    atomic_write(path, trace_bytes(head, cols))


def trace_bytes(head: dict[str, str], cols: dict[str, np.ndarray]) -> Iterator[bytes | memoryview]:
    """A trace file, in parts to write one after another as they come: the `# mechdyn trace` preamble of `head`
    and the header line, then the rows of `cols` in blocks, each number as the shortest text that reads back to
    the same double.

    Arrow's CSV writer formats the numbers in C++ (a row loop in Python, or printf's %.17g, costs more than the
    stepping that made them), in row blocks on as many threads as this process may use (blocks.each_block): the
    writer releases the GIL, formatting is the bulk of a trace's cost, and a block is written while the threads
    format the next."""
    text = "# mechdyn trace\n" + "".join(f"# {k}: {v}\n" for k, v in head.items()) + ",".join(cols) + "\n"
    block = np.vstack([np.asarray(v, dtype=float) for v in cols.values()])  # a row of the block per column
    yield text.encode()
    yield from map(memoryview, each_block(lambda a, b: _csv_rows(block[:, a:b]), block.shape[1], per_thread=2))


def _csv_rows(block: np.ndarray) -> pa.Buffer:
    """The CSV rows (no header) of the columns that are block's rows (each contiguous: a C-ordered block's rows,
    or a slice of them along its columns)."""
    # from the columns' buffers, not pa.array: that asks pandas whether it was handed a Series, importing it
    columns = [pa.Array.from_buffers(pa.float64(), block.shape[1], [None, pa.py_buffer(np.ascontiguousarray(c))])
               for c in block]
    out = pa.BufferOutputStream()
    pacsv.write_csv(pa.Table.from_arrays(columns, names=[str(k) for k in range(len(columns))]), out,
                    pacsv.WriteOptions(include_header=False))
    return out.getvalue()


def read_trace(path: Path) -> Trace:
    """A trace file's preamble and columns."""
    meta = {}
    with open(path) as f:
        for line in f:
            if not line.startswith("#"):
                break
            if ":" in line:
                k, v = line[1:].split(":", 1)
                meta[k.strip()] = v.strip()
    if "model" not in meta:
        raise ValueError(f"{path}:1: not a mechdyn trace; expected a '# model: NAME' preamble line")
    import pandas as pd  # here: writing a trace never needs it

    return Trace(meta, pd.read_csv(path, comment="#"))


def trace_stride(nsteps: int) -> int:
    """The stride that records about TRACE_ROWS rows of a run of nsteps."""
    return max(1, nsteps // TRACE_ROWS)


def _num(v: float) -> str:
    """A number as the shortest text that reads back to the same double."""
    return repr(float(v))


def _nums(vs) -> str:
    return " ".join(_num(v) for v in vs)


def roller_kind(r: Roller) -> str:
    """As its `roller` line declares it: "drive" (an end pulley that drives), "end" (an end pulley) or "face" (a
    road wheel, on the shoes' faces)."""
    return "face" if not r.end else "drive" if r.drive else "end"


def hull_of(model: Model) -> int:
    """The vehicle's root body: the first band's root, else the first floating body."""
    if model.tracks:
        return model.tracks[0].root
    floating = [i for i, b in enumerate(model.bodies) if b.joint == "floating"]
    if not floating:
        raise ValueError(f"model '{model.name}' has no floating body: a contact trace follows a hull")
    return floating[0]


def _terrain_meta(sim: ContactSim, X: np.ndarray) -> dict[str, str]:
    """The terrain the contact read: a plane's n and d, or a profile sampled under each band along its travel."""
    g = sim.contact.model.ground
    if g is None:
        return {"terrain": "none"}
    out = {"terrain": g.terrain, "terrain.params": _nums(g.params)}
    if g.terrain == "plane":
        return out
    for b in sim.contact.bands:
        shoes = np.arange(b.first_shoe, b.first_shoe + b.nshoe)
        x, y = X[:, shoes, 9], float(X[:, shoes, 10].mean())
        xs = np.linspace(x.min() - PROFILE_MARGIN, x.max() + PROFILE_MARGIN, PROFILE_SAMPLES)
        out[f"band.{b.track.name}.profile.x"] = _nums(xs)
        out[f"band.{b.track.name}.profile.h"] = _nums(sim.contact.terrain(v, y)[0] for v in xs)
    return out


def contact_trace_frame(sim: ContactSim, run: ContactRun, step: Step | None = None,
                        meta: dict[str, str] | None = None) -> tuple[dict[str, str], dict[str, np.ndarray]]:
    """The preamble and columns of a contact run's trace (write_contact_trace writes them).

    The run's own rows (its stride: about 2000 rows is the caller's choice of stride). `step`: how dt was chosen
    (accuracy_step's), printed with it; without it the preamble gives dt as samples of the shortest contact period.
    `meta`: more preamble lines. The energy columns and the bodies' positions come from the numeric kinematics
    (energy.mechanics), not the generated code."""
    dyn, model = sim.dyn, sim.dyn.model
    if run.q.shape[1:] != (dyn.nq,) or run.aux.shape[1:] != (len(AUX),):
        raise ValueError(f"the run has q of shape {run.q.shape} and aux {run.aux.shape}; expected (n, {dyn.nq}) "
                         f"and (n, {len(AUX)}) for model '{model.name}'")
    hull = hull_of(model)
    mech = mechanics(model, run.q, run.qd, poses=True)
    X = mech.poses  # (n, nbody, 18): R row-major, the origin, ω, v
    qn, _ = coordinate_names(model)
    h = model.qidx[hull]
    cols: dict[str, np.ndarray] = {"t": run.t}
    cols |= {qn[h + k]: run.q[:, h + k] for k in range(model.bodies[hull].nq)}
    rpy = np.degrees(R_to_rpy(X[:, hull, :9].reshape(-1, 3, 3)))
    cols |= {"roll": rpy[:, 0], "pitch": rpy[:, 1], "yaw": rpy[:, 2]}
    cols |= {name: run.aux[:, k] for k, name in enumerate(AUX)}
    cols["kinetic"], cols["potential"] = mech.kinetic, mech.potential
    cols["energy"] = mech.kinetic + mech.potential + sum(cols[c] for c in STORED)
    bands = sim.contact.bands
    traced = [hull, *(r.body for b in bands for r in b.rollers),
              *(s for b in bands for s in range(b.first_shoe, b.first_shoe + b.nshoe))]
    for i in traced:
        for k, c in enumerate("xyz"):
            cols[f"{c}:{model.bodies[i].name}"] = X[:, i, 9 + k]
    mass = total_mass(model)
    periods = contact_periods(sim.contact)
    what, period = min(periods.items(), key=lambda kv: kv[1]) if periods else ("no contact", float("nan"))
    head = {"kind": "contact", "model": model.name, "gravity": _nums(model.gravity),
            "hull": model.bodies[hull].name,
            "mass": _num(mass), "weight": _num(mass * float(np.linalg.norm(model.gravity))),
            "scheme": run.scheme, "dt": _num(run.dt),
            "stride": str(int(round((run.t[1] - run.t[0]) / run.dt))) if len(run.t) > 1 else "1",
            "step": step.describe() if step is not None
            else f"given: {period / run.dt:.4g} samples per contact period {1e3 * period:.3g} ms ({what})",
            "samples": f"{step.samples if step is not None else period / run.dt:.6g}",
            "bands": " ".join(b.track.name for b in bands)}
    for b in bands:
        t, key = b.track, f"band.{b.track.name}"
        head[f"{key}.shoes"] = " ".join(model.bodies[s].name for s in range(b.first_shoe, b.first_shoe + b.nshoe))
        head[f"{key}.rollers"] = ", ".join(f"{model.bodies[r.body].name} {_num(r.radius)} {roller_kind(r)}"
                                           for r in t.rollers)
        head[f"{key}.link_len"] = _num(b.link_len)
        head[f"{key}.pad"] = _nums(t.pad) if t.pad is not None else "nan nan nan"
        head[f"{key}.thickness"] = _num(t.thickness if t.thickness is not None else float("nan"))
        head[f"{key}.pin_axis"] = _nums(X[0, b.first_shoe, :9].reshape(3, 3)[:, 1])  # a side view's pad side
    head |= _terrain_meta(sim, X)
    return head | (meta or {}), cols


def write_contact_trace(path: Path, sim: ContactSim, run: ContactRun, step: Step | None = None,
                        meta: dict[str, str] | None = None) -> None:
    """Write a contact run's trace atomically (contact_trace_frame's preamble and columns)."""
    atomic_write(path, trace_bytes(*contact_trace_frame(sim, run, step, meta)))
