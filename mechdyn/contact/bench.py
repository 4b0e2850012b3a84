"""Benchmark of the contact producers: md_band_fext and md_ground_fext timed in a C loop (docs/performance.md).

The pool is POOL body-row states near contact: the design pose sunk by the ground's static deflection, every
body nudged by 3 mm and 5 mrad and moving at ~0.1 m/s, so that pins on the end rollers, faces under the road
wheels and most of the lower runs' pads are loaded (the report gives how many). Each timed call zeroes fext
first, as a caller would. The loop's checksum is checked against the same states through Contact.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from functools import cache
from types import ModuleType

import numpy as np
from scipy.spatial.transform import Rotation

from mechdyn.codegen.build import build_source
from mechdyn.core.kinematics import forward_kinematics

from . import native
from .params import FACE
from .producers import ROW, Contact

POOL = 64

TIMING_C = native.source() + r"""
#include <string.h>
#include <time.h>

/* Seconds per call of the band (which 0) or the ground (1) producer over `ncalls` calls cycling through npool
 * body-row states of nbody rows; each call starts from a zeroed fext. The sum of fext's entries over the calls
 * goes to *checksum, so the calls cannot be optimized away. */
double md_time_contact(int which, const md_band *bands, int nband, const md_ground *ground, int nbody, int npool,
                       const double *X, long ncalls, double *fext, double *torque, double *checksum)
{
    double sum = 0.0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long c = 0; c < ncalls; ++c) {
        const double *Xc = X + (c % npool) * 18L * nbody;
        memset(fext, 0, sizeof(double) * 6 * nbody);
        if (which == 0) md_band_fext(bands, nband, Xc, 0.0, fext, torque);
        else md_ground_fext(ground, Xc, 0.0, 0, fext);
        sum += fext[(c * 7) % (6 * nbody)];
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *checksum = sum;
    return ((t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec)) / (double)ncalls;
}
"""


@cache
def timing_module() -> ModuleType:
    """The producers and their timing loop, compiled once (then from the module cache)."""
    extra = re.search(r"^double md_time_contact\([^)]*\)", TIMING_C, re.M)[0] + ";\n"
    return build_source("contact_timing", native.cdef(native.source()) + extra, TIMING_C)


def pool(con: Contact, seed: int = 0) -> np.ndarray:
    """(POOL, nbody, 18) body rows near contact (the module docstring)."""
    m = con.model
    k = forward_kinematics(m, m.q0())
    X0 = np.zeros((m.nbody, ROW))
    X0[:, :9], X0[:, 9:12] = k.R.reshape(-1, 9), k.p
    if con.ground is not None:
        X0[:, 11] -= sum(b.mass for b in m.bodies) * 9.81 / (con.ncorner / 4 * con.ground.kn)
    rng = np.random.default_rng(seed)
    out = np.repeat(X0[None], POOL, axis=0)
    for X in out:
        turn = Rotation.from_rotvec(rng.normal(scale=0.005, size=(m.nbody, 3))).as_matrix()
        X[:, :9] = np.einsum("nij,njk->nik", turn, X[:, :9].reshape(-1, 3, 3)).reshape(-1, 9)
        X[:, 9:12] += rng.normal(scale=0.003, size=(m.nbody, 3))
        X[:, 12:] = rng.normal(scale=0.1, size=(m.nbody, 6))
    return out


@dataclass(frozen=True)
class ContactBench:
    model: str
    band_ns: float  # per call
    band_pairs: int  # candidate pairs per call: every end roller and road wheel with every shoe of its band
    band_loaded: float  # of which penetrating (pins inside the roller's circle, wheels below a face), on average
    ground_ns: float
    corners: int
    corners_loaded: float

    def as_dict(self) -> dict:
        return asdict(self)

    def lines(self, dynamics_ns: float | None = None) -> list[str]:
        out = [f"bench: band     {self.band_ns:10.1f} ns/call  {self.band_pairs} pairs, "
               f"{self.band_ns / max(self.band_pairs, 1):.1f} ns/pair ({self.band_loaded:.0f} penetrating)",
               f"bench: ground   {self.ground_ns:10.1f} ns/call  {self.corners} pad corners, "
               f"{self.ground_ns / max(self.corners, 1):.1f} ns/corner ({self.corners_loaded:.0f} penetrating)"]
        if dynamics_ns:
            out.append(f"bench: both producers {(self.band_ns + self.ground_ns) / dynamics_ns:.2f}x the generated "
                       f"dynamics' {dynamics_ns:.1f} ns/call")
        return out


def _pairs_in(con: Contact, X: np.ndarray) -> int:
    """Band pairs penetrating at X: pins inside their end roller's circle, road wheels below a face plane."""
    n = 0
    for b in con.bands:
        S = X[b.first_shoe:b.first_shoe + b.nshoe]
        for r in b.rollers:
            Xr = X[r.body]
            if r.kind == FACE:  # the axle in each shoe's frame, over the face's weighted span
                a = np.einsum("sji,sj->si", S[:, :9].reshape(-1, 3, 3), Xr[9:12] - S[:, 9:12])
                on = (a[:, 0] > -b.face_fade) & (a[:, 0] < b.link_len + b.face_fade)
                n += int(np.count_nonzero(on & (r.radius - (a[:, 2] - b.face_z) > 0)))
            else:  # each pin in the roller's frame
                d = (S[:, 9:12] - Xr[9:12]) @ Xr[:9].reshape(3, 3)
                n += int(np.count_nonzero(np.hypot(d[:, 0], d[:, 2]) < r.radius))
    return n


def bench_contact(con: Contact, repeats: int = 7, seconds: float = 0.2, seed: int = 0) -> ContactBench:
    """ns per call of each producer (min over repeats) on the pool, after checking the loop computes them."""
    X = pool(con, seed)
    mod = timing_module()
    ffi, lib = mod.ffi, mod.lib
    twin = Contact(con.model, con.law, module=mod)  # the structs, built for the timing module's own types
    m = con.model
    fext, torque, chk = np.zeros((m.nbody, 6)), np.zeros(max(1, twin.nroller)), ffi.new("double *")
    args = (twin._bands_c, len(twin.bands), twin._ground_c, m.nbody, POOL, ffi.from_buffer("double[]", X))
    out = (ffi.from_buffer("double[]", fext), ffi.from_buffer("double[]", torque), chk)

    def timed(which: int, ncalls: int) -> tuple[float, float]:
        t = lib.md_time_contact(which, *args, ncalls, *out)
        return t, chk[0]

    result = {}
    for which, produce in ((0, con.band_fext), (1, con.ground_fext)):
        want = sum(produce(X[c % POOL]).ravel()[(c * 7) % (6 * m.nbody)] for c in range(2 * POOL))
        got = timed(which, 2 * POOL)[1]
        if abs(got - want) > 1e-9 * max(1.0, abs(want)):
            raise RuntimeError(f"the contact timing loop computed checksum {got!r} where Contact gives {want!r}")
        per = timed(which, 1000)[0]
        n = max(1000, int(seconds / max(per, 1e-9)))
        result[which] = min(timed(which, n)[0] for _ in range(repeats)) * 1e9
    loads = [(_pairs_in(con, x), con.loaded_corners(x)) for x in X]
    pairs = sum(len(b.rollers) * b.nshoe for b in con.bands)
    return ContactBench(m.name, result[0], pairs, float(np.mean([a for a, _ in loads])), result[1], con.ncorner,
                        float(np.mean([c for _, c in loads])))
