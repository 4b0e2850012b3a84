"""Speed gates that cannot flake: counted, not timed.

- flops: the generated code's operation count (counted at generation time)
  may exceed the golden by 2 %; fewer passes with a note to lock in the gain.
- instructions: instructions per `fwd_dyn` call, counted by callgrind over a
  fixed pool of stored states on a build with fixed portable flags (never the
  production flags or the host's CPU), may exceed the golden by 5 % when
  counted with the same toolchain; with another toolchain the gate passes with
  a visible re-baseline message (printed, and a warning in the pytest summary),
  or fails with $MECHDYN_REQUIRE_TOOLCHAIN=1, as on CI.

Planted regressions (extra work in the generated code) must trip both gates,
the instruction gate against an unplanted build counted in the same run;
repeated measurements must give identical counts and verdicts.
"""
import os
import shlex
import warnings
from dataclasses import replace

import pytest

from crosscheck import golden
from mechdyn.codegen import crba, flags
from mechdyn.codegen import expr
from mechdyn.codegen import equations
from mechdyn.codegen.build import compiler, module_name
from mechdyn.codegen.sspatial import rbi_apply, xf_motion
from mechdyn.core.model import BASE
from mechdyn.core.parse import load_model
from mechdyn.dynamics import Dynamics

from .conftest import dynamics

REPEATS = 10
REPEAT_MODELS = ["elbow", "hmmwv"]
PLANT_MODEL = "elbow"


def need_counting() -> None:
    """Skip, saying why, where instructions cannot be counted; fail instead on CI, which must count."""
    why = golden.counting_unavailable()
    if why and os.environ.get(golden.REQUIRE_TOOLCHAIN) == "1":
        pytest.fail(f"{why}; {golden.REQUIRE_TOOLCHAIN}=1: the instruction gates must run")
    if why:
        pytest.skip(why)


def stored(name: str) -> golden.Golden:
    g = golden.load_for(dynamics(name))
    if g is None:
        pytest.fail(f"no golden results for {name}: create them with `{golden.update_command(name)}`")
    return g


def test_flops(model_name, gate):
    dyn = dynamics(model_name)
    g = golden.load_for(dyn)
    gate(model_name, golden.flops_check(model_name, dyn.flops, g) if g
         else golden.missing(model_name, "flops", golden.FLOPS_SLACK))


def test_instructions(model_name, gate):
    need_counting()
    g = golden.load_for(dynamics(model_name))
    if g is None:
        gate(model_name, golden.missing(model_name, "instructions", golden.INSTRUCTIONS_SLACK))
        return
    check = golden.instructions_gate(load_model(model_name), g)
    if golden.rebaselined(check):
        warnings.warn(f"{model_name}: {check.note}", stacklevel=1)
    gate(model_name, check)


@pytest.mark.parametrize("name", REPEAT_MODELS)
def test_instructions_deterministic(name):
    """Ten counts of the same build on the same states: identical figures, identical verdicts."""
    need_counting()
    g = stored(name)
    model = load_model(name)
    counts = [golden.measure(model, g) for _ in range(REPEATS)]
    figures = {m.instructions for m in counts}
    verdicts = {golden.instructions_check(name, m, g).passed for m in counts}
    print(f"{name}: {REPEATS} callgrind counts: {sorted(figures)} instructions/call; verdicts {sorted(verdicts)}")
    assert len(figures) == 1, figures
    assert len(verdicts) == 1, verdicts


def test_toolchain_change_rebaselines_visibly(monkeypatch):
    """A golden counted with another compiler is not compared: the check passes but says so (off CI)."""
    monkeypatch.delenv(golden.REQUIRE_TOOLCHAIN, raising=False)
    g = stored("elbow")
    other = replace(g, toolchain={**g.toolchain, "compiler": "cc (Other) 99.1"})
    m = golden.Measurement(2 * g.instructions, 60, g.toolchain)
    check = golden.instructions_check("elbow", m, other)
    assert check.passed and golden.rebaselined(check)
    assert "compiler changed from 'cc (Other) 99.1' to" in check.note
    assert "`crosscheck golden --update elbow`" in check.note and check.note in check.line()
    assert not golden.instructions_check("elbow", m, g).passed  # the same count against its own toolchain fails


def test_required_toolchain_fails_an_incomparable_golden(monkeypatch):
    """On CI ($MECHDYN_REQUIRE_TOOLCHAIN=1) a golden from another toolchain fails, naming what changed."""
    g = stored("elbow")
    other = replace(g, toolchain={**g.toolchain, "valgrind": "valgrind-9.9"})
    m = golden.Measurement(g.instructions, 60, g.toolchain)
    monkeypatch.setenv(golden.REQUIRE_TOOLCHAIN, "1")
    check = golden.instructions_check("elbow", m, other)
    print(check.line())
    assert not check.passed and golden.rebaselined(check)
    assert "valgrind changed from 'valgrind-9.9' to" in check.note and "MECHDYN_REQUIRE_TOOLCHAIN=1" in check.note
    assert golden.instructions_check("elbow", m, g).passed  # a comparable golden is still compared


def test_counting_flags_resolve_without_the_host():
    """The counting flags name a fixed target: the compiler proper gets them as given, reading no cpuid."""
    cc = tuple(compiler()[0])
    counting = tuple(flags.counting())
    assert "-march=native" not in counting and "-mtune=native" not in counting
    opts = golden.resolved_options(cc, counting)
    if not golden.toolchain()["target"].startswith("x86_64") or not opts or "-target-cpu" in opts:
        pytest.skip(f"this check reads gcc's cc1 options on x86-64; {golden.toolchain()['compiler']} "
                    f"({golden.toolchain()['target']}) gave {opts}")
    print(f"{shlex.join(counting)} -> cc1 gets {shlex.join(opts)}")
    assert opts and set(opts) <= set(counting), opts
    assert golden.toolchain()["target"].endswith(" ".join(opts))
    native = golden.resolved_options(cc, ("-O2", "-march=native"))  # what the check catches: host expansion
    assert not set(native) <= {"-O2", "-march=native"}, native


@pytest.mark.parametrize("production", ["-O2 -march=x86-64-v2 -fno-math-errno", "-O1"])
def test_count_ignores_production_flags(production, monkeypatch):
    """Other production flags ($MECHDYN_CFLAGS): the same counting build, count and toolchain; gate compared."""
    need_counting()
    g = stored("elbow")
    model = load_model("elbow")
    default = golden.measure(model, g)
    default_lib, default_prod = golden.measurement_build(model).library, module_name(model)
    monkeypatch.setenv("MECHDYN_CFLAGS", production)
    assert module_name(model) != default_prod  # the production build is another one now
    counted = golden.measure(model, g)
    check = golden.instructions_check("elbow", counted, g)
    print(f"MECHDYN_CFLAGS={production!r}: {check.line()}")
    assert (counted.instructions, counted.toolchain) == (default.instructions, default.toolchain)
    assert golden.measurement_build(model).library == default_lib
    assert not golden.rebaselined(check) and check.passed
    assert compiler()[1] == shlex.split(production)  # the counting build left the production flags alone


def test_a_cpu_without_x86_64_v3_cannot_count(monkeypatch, tmp_path):
    """A CPU that cannot run the counting build is refused with the reason, before any build runs under valgrind."""
    if flags.counting() != list(flags.COUNT_FLAGS_X86_64) or golden.valgrind() is None:
        pytest.skip(f"needs valgrind and the x86-64 counting flags; have {flags.counting()}")
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2 popcnt avx xsave\n")
    monkeypatch.setattr(golden, "CPUINFO", cpuinfo)
    why = golden.counting_unavailable()
    print(why)
    assert why and "lacks avx2 bmi1 bmi2 f16c fma abm movbe of x86-64-v3" in why
    with pytest.raises(golden.CountingUnavailable, match="lacks avx2"):
        golden.measure(load_model("elbow"), stored("elbow"))
    monkeypatch.setenv(golden.REQUIRE_TOOLCHAIN, "1")
    with pytest.raises(pytest.fail.Exception, match="lacks avx2.*the instruction gates must run"):
        need_counting()  # on CI the instruction tests fail here rather than skip


def test_fewer_flops_pass_with_a_note():
    g = stored("elbow")
    check = golden.flops_check("elbow", g.flops - 10, g)
    assert check.passed and "lock in the gain with `crosscheck golden --update elbow`" in check.note
    assert not golden.flops_check("elbow", int(g.flops * 1.03), g).passed
    assert golden.flops_check("elbow", int(g.flops * 1.015), g).passed


# -- planted regressions ----------------------------------------------------------
def mass_matrix_with_upper(b: expr.Builder, kin) -> dict:
    """The real CRBA, plus the upper triangle of H computed again by another route and stored.

    H[j, i] = (X_{j→i} S_j) · (Ic_i S_i): the ancestor's axis moved down to body i
    with motion transforms (new products, not shared with the lower triangle's
    force transforms), stored into a volatile scratch array so the compiler must
    compute it. The physics is unchanged, so only the speed gates can see it.
    """
    H = crba.mass_matrix(b, kin)
    model = kin.model
    Ic = crba.composite_inertias(b, kin)
    upper = []
    for i in range(model.nbody):
        for s in kin.S[i]:
            F = rbi_apply(b, Ic[i], s)
            path, j = [], i  # bodies from i up to (not including) the ancestor j
            while model.bodies[j].parent != BASE:
                path.append(j)
                j = model.bodies[j].parent
                for sc in kin.S[j]:
                    m = sc
                    for k in reversed(path):
                        m = xf_motion(b, kin.Xup[k], m)
                    upper.append(b.dot(m, F))
    b.stmt(f"static volatile double H_upper[{max(len(upper), 1)}];")
    for k, x in enumerate(upper):
        b.store(f"H_upper[{k}]", x)
    return H


def emit_without_hash_consing(self, key, text, op, *uses):
    """Builder.emit that never reuses a temporary: every repeated subexpression is recomputed."""
    s = expr.Sym(f"{self.prefix}{len(self._stmts)}")
    self._table[key] = s
    self._stmts.append((s.name, f"const double {s.name} = {text};", op,
                        tuple(u.name for u in uses if isinstance(u, expr.Sym))))
    return s


# (where, what, replacement, whether the instruction gate must trip too). Without
# hash-consing the generator emits repeated subexpressions (the flop gate sees
# them), but gcc's own CSE merges identical expressions again: on elbow the
# count fell by 0.8 %, so only the flop gate is asserted for that plant.
PLANTS = {
    "upper_triangle": (equations, "mass_matrix", mass_matrix_with_upper, True),
    "no_hash_consing": (expr.Builder, "emit", emit_without_hash_consing, False),
}


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_planted_regression_trips_speed_gates(plant, monkeypatch, tmp_path):
    """The flop gate against the golden; the instruction gate against the unplanted build counted here, in
    this run, on the same states with the same toolchain, so it is always compared, on any machine."""
    g = stored(PLANT_MODEL)
    target, attr, replacement, trips_instructions = PLANTS[plant]
    count = trips_instructions and not golden.counting_unavailable()
    base = golden.measure(load_model(PLANT_MODEL), g) if count else None
    monkeypatch.setattr(target, attr, replacement)
    monkeypatch.setenv("MECHDYN_CACHE", str(tmp_path))  # the planted build must not enter the real cache
    model = load_model(PLANT_MODEL)
    dyn = Dynamics(model)
    assert str(dyn.library).startswith(str(tmp_path))
    assert golden.qdd_check(dyn, g).passed, "the plant changed the physics; it should only add work"
    flops = golden.flops_check(PLANT_MODEL, dyn.flops, g)
    print(f"planted {plant}: {flops.line()}")
    assert not flops.passed
    if not trips_instructions:
        return
    if base is None:
        need_counting()  # skips (fails on CI) saying why, after the flop gate has run
    planted = golden.measure(model, g)
    unplanted = replace(g, instructions=base.instructions, toolchain=base.toolchain)
    instr = golden.instructions_check(PLANT_MODEL, planted, unplanted)
    print(f"planted {plant}: {instr.line()} (vs the unplanted build's {base.instructions:.1f})")
    assert not golden.rebaselined(instr), instr.note
    assert not instr.passed
