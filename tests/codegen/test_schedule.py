"""The statement scheduler (mechdyn/codegen/schedule.py): a valid order, long chains first, live values bounded."""
import random

import pytest

import mechdyn
from mechdyn.codegen import schedule
from mechdyn.codegen.build import BuildError
from mechdyn.codegen.expr import Builder, Sym
from mechdyn.codegen.schedule import REGISTERS, Stmt
from mechdyn.core.parse import load_model
from tests.conftest import critical_path


def _respects_dependencies(stmts: list[Stmt], order: list[int]) -> bool:
    seen: set[str] = set()
    names = {s.name for s in stmts if s.name}
    for k in order:
        if any(u in names and u not in seen for u in stmts[k].uses):
            return False
        if stmts[k].name:
            seen.add(stmts[k].name)
    return sorted(order) == list(range(len(stmts)))


def test_random_dags_are_scheduled_in_a_valid_order():
    rng = random.Random(3)
    for trial in range(50):
        stmts: list[Stmt] = []
        for k in range(rng.randint(1, 400)):
            uses = tuple(f"t{rng.randrange(k)}" for _ in range(rng.randint(0, 2))) if k else ()
            stmts.append(Stmt(f"t{k}", rng.choice("+-*/"), uses) if rng.random() < 0.9 else Stmt(None, "", uses))
        assert _respects_dependencies(stmts, schedule.schedule(stmts)), f"trial {trial}"


@pytest.mark.parametrize("name", ["elbow", "satellite", "halfcar"])
def test_model_functions_are_scheduled_in_a_valid_order(name):
    from mechdyn.codegen.crba import mass_matrix
    from mechdyn.codegen.kinematics import TreeKinematics
    from mechdyn.codegen.rnea import bias_force
    model = load_model(name)
    b = Builder()
    kin = TreeKinematics(b, model)
    for (i, j), x in mass_matrix(b, kin).items():
        b.store(f"H[{i}][{j}]", x)
    for i, x in enumerate(bias_force(b, kin)):
        b.store(f"C[{i}]", x)
    stmts = b.live()
    assert _respects_dependencies(stmts, schedule.schedule(stmts))


def test_a_division_chain_starts_before_independent_work():
    """A chain of divisions (the factorization's pivots) emitted after a block of independent products: the
    scheduler starts the chain first, so the products fill its latency."""
    stmts = [Stmt(f"p{k}", "*", ("x",)) for k in range(30)] + [Stmt(None, "", (f"p{k}",)) for k in range(30)]
    chain = [Stmt("d0", "/", ("y",))] + [Stmt(f"d{k}", "/", (f"d{k - 1}",)) for k in range(1, 6)] + [Stmt(None, "", ("d5",))]
    stmts += chain
    order = schedule.schedule(stmts)
    first_div = order.index(60)
    print(f"the first division is scheduled at position {first_div} of {len(stmts)} (emitted at 60)")
    assert first_div == 0


def test_live_values_stay_near_the_register_budget():
    """Forty values, each consumed by its own store: emitted all definitions first (forty live at once), the
    scheduler interleaves the stores once REGISTERS values are live."""
    stmts = [Stmt(f"v{k}", "*", ("x",)) for k in range(40)] + [Stmt(None, "", (f"v{k}",)) for k in range(40)]
    order = schedule.schedule(stmts)
    live = peak = 0
    for k in order:
        live += 1 if stmts[k].name else -1
        peak = max(peak, live)
    print(f"peak live values {peak} (emitted order: 40; budget {REGISTERS})")
    assert peak <= REGISTERS + 1


def test_large_functions_keep_the_emitted_order():
    stmts = [Stmt(f"t{k}", "/", (f"t{k - 1}",) if k else ()) for k in range(schedule.WHOLE + 1)]
    assert schedule.schedule(stmts) == list(range(len(stmts)))


def test_planted_scheduler_ignoring_dependencies_is_refused(tmp_path, monkeypatch):
    """A scheduler that ignores dependencies (here, the emitted order reversed): the C compiler refuses the use
    of a temporary before its definition, so the module is never built."""
    monkeypatch.setenv("MECHDYN_CACHE", str(tmp_path))
    monkeypatch.setattr(schedule, "schedule", lambda stmts: list(range(len(stmts) - 1, -1, -1)))
    with pytest.raises(BuildError, match="undeclared"):
        mechdyn.load(load_model("threelink"))


def test_sum_adds_the_late_term_last():
    """Builder.sum pairs the earliest-ready terms first: a term at the end of a chain of products waits for one
    addition, where a left fold would have made it wait for three."""
    b = Builder()
    late = b.mul(b.mul(b.mul(Sym("q[0]"), Sym("q[1]")), Sym("q[2]")), Sym("q[3]"))  # ready at cycle 9
    s = b.sum(late, Sym("x[0]"), Sym("x[1]"), Sym("x[2]"))
    assert b.ready(s) == b.ready(late) + schedule.LATENCY["+"]
    b.store("out", s)
    *_, last_sum, _ = b.live()
    assert last_sum.name == s.name and late.name in last_sum.uses


def test_planted_left_fold_lengthens_thecritical_path(monkeypatch):
    """The sums (Builder.sum, the LᵀDL's and the KKT solve's collected terms) shorten elbow's longest chain;
    a planted left fold in Builder.sum puts the Newton–Euler result back at the head of the solve's chains
    (141 -> 151 cycles when written)."""
    huffman = critical_path("elbow")

    def left_fold(self, *xs):
        acc = 0.0
        for x in xs:
            acc = self.add(acc, x)
        return acc

    monkeypatch.setattr(Builder, "sum", left_fold)
    folded = critical_path("elbow")
    print(f"elbow's critical path: {huffman} cycles with Builder.sum, {folded} with a left fold")
    assert folded >= huffman + 3 * schedule.LATENCY["+"]
