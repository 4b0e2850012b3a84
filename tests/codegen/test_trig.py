"""The batched sine and cosine of the generated code (mechdyn/codegen/trig.py) against libm."""
from __future__ import annotations

import importlib.util
import math

import cffi
import numpy as np
import pytest

from mechdyn.codegen import trig
from mechdyn.codegen.build import compiler

WRAPPER = """
void sincos_n(long n, const double *x, double *s, double *c)
{
    for (long k = 0; k < n; k += 4) {
        md_v4 v, sv, cv;
        memcpy(&v, x + k, sizeof v);
        md_sincos4(v, &sv, &cv);
        memcpy(s + k, &sv, sizeof sv);
        memcpy(c + k, &cv, sizeof cv);
    }
}
"""


def compiled(source: str, tmp_path, name: str):
    """md_sincos4 from `source`, built with the generated code's compiler flags, as sincos(x) -> (s, c)."""
    _, flags = compiler()
    ffi = cffi.FFI()
    ffi.cdef("void sincos_n(long n, const double *x, double *s, double *c);")
    ffi.set_source(name, "#include <math.h>\n#include <string.h>\n" + trig.VECTOR_TYPES + source + WRAPPER,
                   extra_compile_args=flags, libraries=["m"])
    spec = importlib.util.spec_from_file_location(name, ffi.compile(tmpdir=str(tmp_path)))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def sincos(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        m = len(x)
        x = np.concatenate([x, np.zeros(-m % 4)])  # whole lanes
        s, c = np.empty_like(x), np.empty_like(x)
        buf = lambda a: module.ffi.from_buffer("double[]", a)  # noqa: E731
        module.lib.sincos_n(len(x), buf(x), buf(s), buf(c))
        return s[:m], c[:m]
    return sincos


def angles() -> np.ndarray:
    """Joint angles as a simulation meets them, and the reduction's hard cases."""
    rng = np.random.default_rng(0)
    k = np.arange(-20000, 20001)
    near = (k * (math.pi / 2))[:, None] + np.array([-1e-9, -1e-15, 0.0, 1e-15, 1e-9])  # next to multiples of pi/2
    return np.concatenate([rng.uniform(-math.pi, math.pi, 200_000), rng.uniform(-1e5, 1e5, 200_000),
                           near.ravel(), [0.0, -0.0, 1e-300, -1e-300, 1e-8, math.pi / 4, -math.pi / 4, 1e5, -1e5]])


@pytest.fixture(scope="module")
def fast(tmp_path_factory):
    return compiled(trig.SINCOS_C, tmp_path_factory.mktemp("trig"), "_md_trig_ok")


def test_within_one_ulp_of_libm(fast):
    x = angles()
    s, c = fast(x)
    # |sin|, |cos| <= 1: an absolute error below 2^-52 is within one ulp of 1 (and of libm's result)
    assert np.max(np.abs(s - np.sin(x))) <= 2.0**-52
    assert np.max(np.abs(c - np.cos(x))) <= 2.0**-52
    small = np.abs(x) < math.pi / 4  # no reduction: relative accuracy, down to subnormal-free tiny angles
    assert np.max(np.abs(s[small] - np.sin(x[small])) / np.maximum(np.abs(np.sin(x[small])), 1e-300)) <= 2.0**-52


def test_large_and_special_arguments_fall_back_to_libm(fast):
    x = np.array([1e5 * (1 + 2**-52), -3e7, 1e300, 123456789.0])
    s, c = fast(x)
    assert np.array_equal(s, np.sin(x)) and np.array_equal(c, np.cos(x))
    s, c = fast(np.array([np.inf, -np.inf, np.nan, 0.5]))
    assert np.isnan(s[:3]).all() and np.isnan(c[:3]).all() and s[3] == np.sin(0.5)


@pytest.mark.parametrize("plant, original", [
    ("(((n + 1) & 2) << 62)", "((n & 2) << 62)"),             # cos sign taken from sin's quadrants
    ("((md_i4)sr & ~odd) | ((md_i4)cr & odd)", "(md_i4)sr"),  # odd quadrants not swapped
    ("- nf * 0x1.0b4611a6p-34", ""),                           # pi/2's second part dropped
])
def test_planted_bugs_are_caught(plant, original, tmp_path):
    assert plant in trig.SINCOS_C
    broken = compiled(trig.SINCOS_C.replace(plant, original), tmp_path, f"_md_trig_bad{abs(hash(plant)) % 10**6}")
    x = angles()
    s, c = broken(x)
    assert max(np.max(np.abs(s - np.sin(x))), np.max(np.abs(c - np.cos(x)))) > 2.0**-52
