"""Building a model's module (mechdyn/codegen/build.py): loaded from the cache without recompiling, one module for
concurrent builders, the compiler's message on an error, a key that covers the model's text."""
import multiprocessing as mp

import numpy as np
import pytest

import mechdyn
import mechdyn.codegen.build as build
from mechdyn.core.parse import load_model, parse


def test_second_load_does_not_recompile(fresh_cache, monkeypatch):
    mechdyn.load("threelink")
    calls = []
    monkeypatch.setattr(build, "compile_module", lambda *a: calls.append(a))
    mechdyn.load("threelink")
    assert not calls


def _load_in_child(name: str) -> list[float]:
    d = mechdyn.load(name)
    return d.forward(np.full(d.nq, 0.3), np.ones(d.nv), np.zeros(d.nv)).tolist()


def test_concurrent_builders_share_one_cache(fresh_cache):
    ctx = mp.get_context("spawn")  # children inherit MECHDYN_CACHE through the environment
    with ctx.Pool(4) as pool:
        results = pool.map(_load_in_child, ["stanford"] * 8)
    assert all(r == results[0] for r in results)
    assert len(list(fresh_cache.glob("_mechdyn_stanford_*.so"))) == 1  # and its checksum file beside it
    assert not [p for p in fresh_cache.glob(".*") if not p.name.endswith(".lock")]  # no temporary left behind


def test_compile_error_shows_the_compiler_message(fresh_cache, monkeypatch):
    import mechdyn.codegen.generate as gen
    real = gen.generate
    monkeypatch.setattr(gen, "generate", lambda m: gen.Generated(m, real(m).source + "\nthis is not C;\n", real(m).ops, 0, real(m).route))
    with pytest.raises(build.BuildError, match="error"):
        mechdyn.load("gantry")


def test_cache_key_covers_model_text():
    a = load_model("threelink")
    b = parse(a.source.replace("9.81", "9.80"), path=a.path, name=a.name)
    assert build.cache_key(a) != build.cache_key(b)
