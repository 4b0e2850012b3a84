"""Sine and cosine of every joint angle in one batch, four lanes at a time.

libm's sincos, one call per angle, was the largest part of a three-link
chain's forward dynamics (the counts are in docs/performance.md). The
generated code instead collects the angles its kinematics needs and
evaluates them together in `md_sincos4`:

- reduction by pi/2, n = rint(2x/pi), r = x - n pi/2 in three parts
  (Cody & Waite), with pi/2's first two parts 33 bits long so that n times
  them is exact for |n| < 2^20;
- fdlibm's minimax polynomials for sin and cos on [-pi/4, pi/4] (absolute
  error below 2^-58 there), with the compensated 1 - z/2 of its cosine kernel;
- the quadrant n mod 4 chosen by bit masks, so the lanes never branch.

It is written in GCC's vector extensions (GCC and Clang), so a lane is a SIMD
lane wherever the target has them. Arguments beyond 1e5 in magnitude, where
the three-part reduction would lose digits, and infinities send the whole
batch of four to libm; a NaN stays NaN. The polynomials are evaluated by
Estrin's scheme, and the lanes stay in registers, because the trigonometry
heads the critical path of the whole function; it is always inlined, because
with two callers (fwd_dyn and its four-lane twin, simd.py) gcc would otherwise
call it, at a cost in instructions per fwd_dyn. tests/codegen/test_trig.py
measures the error against libm.
"""
from __future__ import annotations

import re

LANES = 4

VECTOR_TYPES = r"""
typedef double md_v4 __attribute__((vector_size(32)));
typedef long long md_i4 __attribute__((vector_size(32)));
"""

SINCOS_C = r"""
/* *s = sin(x), *c = cos(x), lane by lane (mechdyn/codegen/trig.py) */
static inline __attribute__((always_inline)) void md_sincos4(const md_v4 x, md_v4 *s, md_v4 *c)
{
    const md_i4 big = (md_v4)((md_i4)x & 0x7fffffffffffffffLL) > 1e5;
    if (big[0] | big[1] | big[2] | big[3]) {
        for (int k = 0; k < 4; ++k) { (*s)[k] = sin(x[k]); (*c)[k] = cos(x[k]); }
        return;
    }
    const md_v4 t = x * 0x1.45f306dc9c883p-1 + 0x1.8p52; /* 2/pi; the shift rounds to an integer */
    const md_i4 n = (md_i4)t;                          /* n mod 4 in the low bits */
    const md_v4 nf = t - 0x1.8p52;
    const md_v4 r = ((x - nf * 0x1.921fb544p0) - nf * 0x1.0b4611a6p-34) - nf * 2.02226624879595063154e-21;
    const md_v4 z = r * r, z2 = z * z, z4 = z2 * z2;   /* Estrin's scheme: a short dependency chain */
    const md_v4 ps = (-1.66666666666666324348e-01 + z * 8.33333333332248946124e-03)
                   + z2 * (-1.98412698298579493134e-04 + z * 2.75573137070700676789e-06)
                   + z4 * (-2.50507602534068634195e-08 + z * 1.58969099521155010221e-10);
    const md_v4 pc = (4.16666666666666019037e-02 + z * -1.38888888888741095749e-03)
                   + z2 * (2.48015872894767294178e-05 + z * -2.75573143513906633035e-07)
                   + z4 * (2.08757232129817482790e-09 + z * -1.13596475577881948265e-11);
    const md_v4 sr = r + (r * z) * ps;
    const md_v4 hz = 0.5 * z, w = 1.0 - hz;
    const md_v4 cr = w + (((1.0 - w) - hz) + z2 * pc);
    const md_i4 odd = (n & 1) != 0;                    /* odd quadrants swap sin and cos */
    const md_i4 si = ((md_i4)sr & ~odd) | ((md_i4)cr & odd);
    const md_i4 ci = ((md_i4)cr & ~odd) | ((md_i4)sr & odd);
    *s = (md_v4)(si ^ ((n & 2) << 62));                /* sin < 0 in quadrants 2, 3 */
    *c = (md_v4)(ci ^ (((n + 1) & 2) << 62));          /* cos < 0 in quadrants 1, 2 */
}
"""


def lane(k: int, prefix: str) -> str:
    """The C name of angle k's lane in the batch's vector `prefix` ("sn" or "cs"): LANE_NAME parses it back."""
    return f"{prefix}{k // LANES}[{k % LANES}]"


LANE_NAME = re.compile(r"\b(sn|cs)(\d+)\[(\d+)\]")  # prefix, vector, lane of a name made by lane()
LATENCY = 45  # cycles from the angles to md_sincos4's results: its longest chain, counted by hand for AMD Zen 3


def batch(args: list[str]) -> list[str]:
    """C statements that compute sin and cos of the C expressions `args` into lanes sn0[0], cs0[0], ..."""
    lines = []
    for v in range(0, len(args), LANES):
        chunk = args[v:v + LANES]
        chunk += ["0.0"] * (LANES - len(chunk))
        k = v // LANES
        lines += [f"md_v4 sn{k}, cs{k};", f"md_sincos4((md_v4){{{', '.join(chunk)}}}, &sn{k}, &cs{k});"]
    return lines
