"""The expression builder (mechdyn/codegen/expr.py): folding and sharing."""
from mechdyn.codegen.expr import Builder, Sym


def test_folding_and_sharing():
    b = Builder()
    x, y = Sym("x[0]"), Sym("x[1]")
    assert b.mul(0.0, x) == 0.0 and b.mul(1.0, x) == x and b.add(x, 0.0) == x
    assert b.mul(-1.0, x) == -x
    assert b.sub(x, y) == -b.sub(y, x)  # a-b and b-a share one temporary
    assert b.add(x, y) is b.add(y, x)
    assert b.mul(b.mul(x, 0.5), 2.0) == x  # constant chains fold
    b.store("out[0]", b.add(b.mul(x, y), b.mul(y, x)))
    lines, ops = b.finish()
    assert ops["*"] == 1 and ops["+"] == 1, lines  # x*y emitted once; dead temporaries dropped
