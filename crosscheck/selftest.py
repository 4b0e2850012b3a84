"""Mutation self-test: plant known bugs in a scratch copy of the source and show the gates catch each.

Every mutation is a textual edit of one line of a copy of the package (so it
proves that a change *to the source* is caught, not a monkeypatch); the gate
then runs in a fresh interpreter on that copy with its own module cache. A
clean copy runs first and must pass every gate, or "caught" would mean nothing.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
COPY = ("mechdyn", "crosscheck", "models")


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str  # relative to the repository root
    old: str  # must occur exactly once
    new: str
    gates: tuple[str, ...]  # gate snippets run on the mutated copy (see GATES)


# the gate snippets: each prints a JSON list of [name, value, threshold, passed]
GATES = {
    "gen_vs_dense:elbow": "from crosscheck.dense_compare import gen_vs_dense; c = [gen_vs_dense(load('elbow'), 200)]",
    "gen_vs_dense:threelink": "from crosscheck.dense_compare import gen_vs_dense; c = [gen_vs_dense(load('threelink'), 200)]",
    "gen_vs_dense:fourbar": "from crosscheck.dense_compare import gen_vs_dense; c = [gen_vs_dense(load('fourbar'), 200)]",
    "gen_vs_dense:springpend": "from crosscheck.dense_compare import gen_vs_dense; c = [gen_vs_dense(load('springpend'), 200)]",
    "drift:satellite": "from crosscheck.trajectory import order_gate, reversibility; d = load('satellite'); "
                       "c = [reversibility(d), order_gate(d, 'verlet')]",
}

MUTATIONS = (
    Mutation("E = R instead of Rᵀ in a joint transform", "mechdyn/codegen/kinematics.py",
             "E[i][i], E[j][j], E[i][j], E[j][i] = c, c, s, -s", "E[i][i], E[j][j], E[i][j], E[j][i] = c, c, -s, s",
             ("gen_vs_dense:elbow",)),
    Mutation("flipped sign of the spatial inertia's lower-left block", "mechdyn/codegen/sspatial.py",
             "vsub(b, scale(b, I.m, v), cross(b, I.h, w))", "vadd(b, scale(b, I.m, v), cross(b, I.h, w))",
             ("gen_vs_dense:threelink",)),
    Mutation("dropped loop-Jacobian entry", "mechdyn/codegen/loops.py",
             "return [(path_row(b, kin, lp.pred, lp.succ, T, G), k) for T, G, k in rows]",
             "return [(dict(list(path_row(b, kin, lp.pred, lp.succ, T, G).items())[1:]), k) for T, G, k in rows]",
             ("gen_vs_dense:fourbar",)),
    Mutation("spring-damper force with the wrong sign", "mechdyn/codegen/elements.py",
             "coef = b.neg(b.div(f, st.l))", "coef = b.div(f, st.l)", ("gen_vs_dense:springpend",)),
    Mutation("first-order quaternion drift", "mechdyn/codegen/stepper.py",
             "    quat_mul(q, e, Qnew);",
             "    double w4[4] = {0.0, qd[0], qd[1], qd[2]}, n = 0.0;\n    quat_mul(q, w4, Qnew);\n"
             "    for (int i = 0; i < 4; ++i) { Qnew[i] = q[i] + 0.5 * tau * Qnew[i]; n += Qnew[i] * Qnew[i]; }\n"
             "    for (int i = 0; i < 4; ++i) Qnew[i] /= sqrt(n);",
             ("drift:satellite",)),
    Mutation("dropped gravity term", "mechdyn/codegen/rnea.py",
             "g0: Vec3 = [-float(g) for g in kin.model.gravity]", "g0: Vec3 = [0.0, 0.0, 0.0]",
             ("gen_vs_dense:threelink",)),
)


@dataclass(frozen=True)
class Outcome:
    mutation: str
    caught: bool
    detail: str


def scratch_copy(dest: Path) -> None:
    """A copy of the package and models, without caches. The seam tests replace to skip the copy."""
    for part in COPY:
        shutil.copytree(ROOT / part, dest / part, ignore=shutil.ignore_patterns("__pycache__", "*.so"))


def apply_mutation(dest: Path, m: Mutation) -> None:
    """Plant mutation `m` in the copy at `dest`. The seam tests replace to plant nothing."""
    path = dest / m.file
    text = path.read_text()
    if text.count(m.old) != 1:
        raise RuntimeError(f"selftest mutation '{m.name}' no longer applies: {m.file} must contain its target "
                           f"exactly once (found {text.count(m.old)}); update crosscheck/selftest.py")
    path.write_text(text.replace(m.old, m.new))


def run_gates(dest: Path, gates: tuple[str, ...]) -> list[list]:
    """Run gate snippets in a fresh interpreter on the copy; [[name, value, threshold, passed], ...],
    each name prefixed with the model, e.g. "satellite: reversibility". The seam tests replace to skip the gates."""
    results = []
    env = os.environ | {"PYTHONPATH": str(dest), "MECHDYN_CACHE": str(dest / ".cache")}
    for g in gates:
        code = (f"import json; from mechdyn import load; {GATES[g]}; "
                "print(json.dumps([[x.name, x.value, x.threshold, x.passed] for x in c]))")
        r = subprocess.run([sys.executable, "-c", code], cwd=dest, env=env, capture_output=True, text=True, check=False)
        if r.returncode != 0:  # a crash on the mutant counts as caught, but say how
            results.append([f"{g} crashed ({(r.stderr.strip().splitlines() or ['?'])[-1]})", float("inf"), 0.0, False])
            continue
        model = g.split(":")[1]
        results += [[f"{model}: {name}", *rest] for name, *rest in json.loads(r.stdout.strip().splitlines()[-1])]
    return results


def selftest(progress: bool = True) -> tuple[list[Outcome], list[list]]:
    """Every mutation's outcome, and the clean copy's gate results (which must all pass)."""
    all_gates = tuple(dict.fromkeys(g for m in MUTATIONS for g in m.gates))
    with tempfile.TemporaryDirectory(prefix="mechdyn-selftest-") as tmp:
        outcomes = []
        # one step for the clean copy (every gate, the longest step) and one per planted bug
        with tqdm(total=1 + len(MUTATIONS), desc="selftest: clean copy", unit="run", leave=False,
                  disable=None if progress else True) as bar:
            clean = Path(tmp) / "clean"
            scratch_copy(clean)
            control = run_gates(clean, all_gates)
            bar.update()
            for m in MUTATIONS:
                bar.set_description(f"selftest: {m.name}")
                dest = Path(tmp) / f"m{len(outcomes)}"
                scratch_copy(dest)
                apply_mutation(dest, m)
                res = run_gates(dest, m.gates)
                caught = any(not r[3] for r in res)
                detail = "; ".join(f"{r[0]} = {r[1]:.3e} (gate {r[2]:.0e})" for r in res)
                outcomes.append(Outcome(m.name, caught, detail))
                bar.update()
    return outcomes, control
