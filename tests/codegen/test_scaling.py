"""A generator that scales (issue 18): the frame search's work grows linearly down a chain, it chooses as the
whole-model search did, and a function too long for gcc is emitted as stage functions that compute the same.

Deterministic: the work is counted in builder statements, never timed (the times are in docs/performance.md).
"""
import re

import numpy as np
import pytest

import mechdyn
from crosscheck import dense_compare as compare
from mechdyn.codegen import frames, schedule
from mechdyn.codegen.crba import mass_matrix
from mechdyn.codegen.expr import Builder
from mechdyn.codegen.generate import generate, passes
from mechdyn.codegen.kinematics import TreeKinematics
from mechdyn.core.model import Model
from mechdyn.core.sample import scaled_error
from mechdyn.core.parse import MODELS_DIR, load_model, parse
from mechdyn.core.sample import states

from ..conftest import make_chains

MODELS = sorted(p.stem for p in MODELS_DIR.glob("*.mech"))


def chain(n: int, floating: bool = False) -> Model:
    """A straight chain of n revolute-y links, 0.154 m apart (a track shoe's data), on the base or a floating hull."""
    text = ["gravity 0 0 -9.81"]
    parent = "base"
    if floating:
        text += ["body hull", "parent base", "joint floating", "xtree 0 0 0", "mass 500", "cg 0 0 0",
                 "inertia 50 80 90 0 0 0", "end"]
        parent = "hull"
    for i in range(n):
        text += [f"body s{i}", f"parent {parent}", "joint revolute y", f"xtree {0.154 if i else 0.0} 0 0",
                 "mass 18.02", "cg 0.077 0 0", "inertia 0.22 0.04 0.25 0 0 0", "end"]
        parent = f"s{i}"
    return parse("\n".join(text), name=f"{'f' if floating else ''}chain{n}")


def search_work(model, monkeypatch) -> tuple[tuple[float, ...], int]:
    """The shifts frames.shifts chooses, and the builder statements it emitted to choose them."""
    emitted = []

    class Counting(Builder):
        def cost(self, outputs, since):
            emitted.append(len(self))
            return super().cost(outputs, since)

    monkeypatch.setattr(frames, "Builder", Counting)
    return frames.shifts(model), sum(emitted)


def whole_model_shifts(model) -> tuple[float, ...]:
    """The search as it was before windows: every candidate counted on the whole slid model (the oracle)."""
    s = (0.0,) * model.nbody
    best = frames.cost(model)
    changed = True
    while changed:
        changed = False
        for i in frames.movable(model):
            here, s0 = frames.slide(model, s), s[i]
            for x in sorted(frames.candidates(here, i)):
                t = s[:i] + (s0 + x,) + s[i + 1:]
                if (k := frames.cost(frames.slide(model, t))) < best:
                    best, s, changed = k, t, True
    return s


@pytest.mark.parametrize("floating", [False, True])
def test_frame_search_work_is_linear_in_chain_length(floating, monkeypatch):
    """Each link's window is the same tree, so the statements the search emits grow by the same amount per link:
    exactly affine in the length. Counting the whole model for each link, as the search did before windows,
    grows by more for every link added (H alone is quadratic down a chain)."""
    work = {n: search_work(chain(n, floating), monkeypatch)[1] for n in (8, 16, 32)}
    whole = {}
    for n in (8, 16, 32):
        b = Builder()
        frames.tree_passes(b, TreeKinematics(b, chain(n, floating)))
        whole[n] = n * len(b)
    print(f"frame search statements ({'floating' if floating else 'fixed'} root): windows {work}; "
          f"the whole model once per link {whole}")
    assert work[32] - work[16] == 2 * (work[16] - work[8])
    assert whole[32] - whole[16] > 2 * (whole[16] - whole[8])


# The whole-model search is quadratic in the bodies, which is why the windows exist: alone it takes minutes on m113
# (153 bodies) and on twobands (127), and a minute on chain63 and band63. The generated shoe models are searched at
# the same shape, 16 shoes a chain or band (models/make_chains.py): a window sees RADIUS joints either side, so a
# 63-shoe chain's windows are a 16-shoe chain's, repeated, and twobands16 keeps the floating hull where its two
# closed bands meet it. m113's bands are those shoes on the same search, which band63, track_demo and twobands16
# cover.
SMALL = 16
SEARCHED_SMALLER = {"chain63": f"chain{SMALL}", "band63": f"band{SMALL}", "twobands": f"twobands{SMALL}", "m113": None}


def searched(name: str) -> Model:
    """A model of models/ by name, or one of SEARCHED_SMALLER's stand-ins, written by models/make_chains.py."""
    mc = make_chains()
    texts = {f"chain{SMALL}": lambda: mc.chain_text(SMALL), f"band{SMALL}": lambda: mc.chain_text(SMALL, closed=True),
             f"twobands{SMALL}": lambda: mc.twobands_text(SMALL)}
    return parse(texts[name](), name=name) if name in texts else load_model(name)


@pytest.mark.parametrize("name", sorted({SEARCHED_SMALLER.get(n, n) for n in MODELS} - {None}))
def test_window_search_chooses_no_worse_than_the_whole_model_search(name):
    """On every model in models/ (the generated shoe models at their shape, smaller: SEARCHED_SMALLER), the shifts chosen
    on windows cost no more operations (of the tree's passes, counted on the whole model) than those the
    whole-model search chose; today they are the same shifts."""
    model = searched(name)
    local, whole = frames.shifts(model), whole_model_shifts(model)
    print(f"{name}: window {frames.cost(frames.slide(model, local))}, whole {frames.cost(frames.slide(model, whole))}")
    assert frames.cost(frames.slide(model, local)) <= frames.cost(frames.slide(model, whole))
    assert local == whole


def test_a_window_too_small_is_caught():
    """A window of 2 joints misses how a forearm shift reaches the elbow's shoulder, and the comparison with the
    whole-model search above catches the worse choice."""
    model = load_model("elbow")
    narrow = frames.shifts(model, radius=2)
    kept, whole = frames.cost(frames.slide(model, narrow)), frames.cost(frames.slide(model, whole_model_shifts(model)))
    print(f"elbow, radius 2: {kept} operations, whole-model search {whole}")
    assert kept > whole


def test_counted_passes_are_a_parameter():
    """The search counts what `counted` returns: counting nothing leaves every frame where it is (ties stay),
    counting H alone still moves the arm's frames (H carries the CG and the joint offsets)."""
    model = load_model("elbow")
    calls = []

    def nothing(b, kin):
        calls.append(kin.model.nbody)
        return []

    assert frames.shifts(model, counted=nothing) == (0.0,) * model.nbody
    assert calls and max(calls) < model.nbody + 2  # windows, not the whole model over and over
    h_only = frames.shifts(model, counted=lambda b, kin: list(mass_matrix(b, kin).values()))
    assert any(h_only)


def test_window_is_local():
    """A link's window down a 63-link chain holds the 7 links within 3 joints and the floating stand-in for the
    link above them; the moved link's index in it is the 4th link's."""
    model = chain(63)
    win, k = frames.window(model, 30)
    assert [b.name for b in win.bodies] == [f"s{i}" for i in range(26, 34)]
    assert win.bodies[0].joint == "floating" and win.bodies[0].parent == -1
    assert k == 4 and win.bodies[k].name == "s30"


def staged_lines(source: str, name: str) -> list[int]:
    """The statements of each stage function `name`N of a translation unit, leaving out its workspace traffic
    and the line that silences its parameters."""
    bodies = re.findall(rf"void {name}\d+\(.*?\)\n\{{\n(.*?)\n\}}\n", source, flags=re.S)
    return [sum("md_w[" not in ln and "(void)" not in ln for ln in body.split("\n")) for body in bodies]


def fwd_dyn_lines(model: Model) -> list[str]:
    """fwd_dyn's scheduled statements, as the C emission gets them."""
    return passes(model).body


def test_stages_carry_every_crossing_temporary():
    """Cut into stages, each temporary read in a later stage is exported where it is defined and imported where
    it is read, and no slot is overwritten while a later stage still has to read it; slots are reused, so the
    workspace is smaller than the number of values that cross a cut."""
    parts, nslots = schedule.stages(fwd_dyn_lines(chain(12)), 300)
    assert len(parts) > 3 and 0 < nslots < sum(len(st.exports) for st in parts)
    check_stages(parts)


def check_stages(parts: list[schedule.Stage]) -> None:
    """Run the stages' slot traffic: every read finds the value it names, and every temporary a stage uses is
    defined in it or imported."""
    slots: dict[int, str] = {}
    for st in parts:
        for t, k in st.imports:
            assert slots.get(k) == t, f"slot {k} holds {slots.get(k)}, not {t}"
        have = {t for t, _ in st.imports}
        for text in st.lines:
            d = re.match(r"const double (t\d+) = ", text)
            used = set(re.findall(r"\bt\d+\b", text)) - {d[1] if d else ""}
            assert used <= have, sorted(used - have)[:3]
            if d:
                have.add(d[1])
        for t, k in st.exports:
            slots[k] = t


def test_planted_early_slot_reuse_is_caught(monkeypatch):
    """A slot handed out again one stage before its last reader reads it (the allocator's release off by one)
    is caught by the slot traffic check."""
    parts, _ = schedule.stages(fwd_dyn_lines(chain(12)), 300)
    # the planted bug: the last export of stage 1 written into the slot of an import stage 2 still reads
    late = next(k for t, k in parts[2].imports if any(k == kk for tt, kk in parts[0].exports))
    t, _ = parts[1].exports[-1]
    planted = [parts[0], schedule.Stage(parts[1].lines, parts[1].imports, parts[1].exports[:-1] + [(t, late)]),
               *parts[2:]]
    with pytest.raises(AssertionError):
        check_stages(planted)


@pytest.fixture
def staged(monkeypatch, tmp_path):
    """Generation with functions of more than 200 statements emitted as stages of 150, in a private cache."""
    monkeypatch.setenv("MECHDYN_CACHE", str(tmp_path))
    monkeypatch.setattr(schedule, "SPLIT", 200)
    monkeypatch.setattr(schedule, "STAGE", 150)


@pytest.mark.parametrize("name", ["elbow", "satellite", "fourbar", "halfcar"])
def test_staged_build_computes_the_same(name, staged):
    """Emitted as stage functions (fwd_dyn and its four-lane twin), a model's generated code (trees, and loops
    through the KKT route) still agrees with the dense reference, and its batch with its single calls; no stage holds more than STAGE statements besides
    its workspace traffic."""
    model = load_model(name)
    src = generate(model).source
    fwd, b4 = staged_lines(src, "fwd_dyn_stage"), staged_lines(src, "fwd_dyn_batch4_stage")
    assert len(fwd) > 2 and len(b4) == len(fwd) and max(fwd) <= schedule.STAGE
    print(f"{name}: fwd_dyn in {len(fwd)} stages of at most {max(fwd)} statements")
    dyn = mechdyn.load(model)
    err = compare.gen_vs_dense(dyn, 50).value
    print(f"{name} staged: gen_vs_dense = {err:.3e}")
    assert err < compare.gen_gate(model)
    sts = list(states(model, 8, 1))
    Q, QD, TAU = (np.stack([getattr(st, f) for st in sts]) for f in ("q", "qd", "tau"))
    single = np.stack([dyn.forward(q, qd, tau) for q, qd, tau in zip(Q, QD, TAU)])
    # state by state, scaled as every other comparison (an entry far below its state's largest carries that one's
    # rounding: driven halfcar's 0.17 m/s² differs by 2e-13 where its state reaches 72)
    err = max(scaled_error(b, a) for b, a in zip(dyn.forward_batch(Q, QD, TAU), single))
    print(f"{name} staged: batch against single calls {err:.1e} scaled")
    assert err <= 1e-14


def test_planted_wrong_slot_trips_the_dense_gate(staged, monkeypatch):
    """A stage that reads one crossing temporary from the wrong workspace slot is caught by gen_vs_dense."""
    real = schedule.stages

    def planted(lines, size):
        parts, n = real(lines, size)
        st = next(st for st in parts if len(st.imports) > 1)
        (t0, k0), (t1, k1), *rest = st.imports
        st.imports[:] = [(t0, k1), (t1, k0), *rest]
        return parts, n

    monkeypatch.setattr(schedule, "stages", planted)
    err = compare.gen_vs_dense(mechdyn.load(load_model("elbow")), 50).value
    print(f"planted slot swap: gen_vs_dense = {err:.3e}")
    assert err > 1e-3
