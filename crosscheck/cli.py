"""`crosscheck`: compare mechdyn's dynamics against independent routes.

    crosscheck dense <model> [--trials N] [--seed S] [--json]
"""
from __future__ import annotations

import argparse
import json
import sys

from crosscheck.checks import Check
from mechdyn.cliutil import EXIT_FAIL, EXIT_PASS, run
from mechdyn.core.parse import load_model


def _report(model_name: str, checks: list[Check], as_json: bool) -> int:
    """Print the checks (human lines or one JSON object) and return the exit code."""
    ok = all(c.passed for c in checks)
    if as_json:
        print(json.dumps({"model": model_name, "passed": ok} | {c.name: c.value for c in checks}
                         | {"checks": [c.as_dict() for c in checks]}, indent=2))
    else:
        for c in checks:
            print(f"{model_name}: {c.line()}")
        print(f"{model_name}: {'PASS' if ok else 'FAIL'}")
    return EXIT_PASS if ok else EXIT_FAIL


def cmd_dense(args: argparse.Namespace) -> int:
    """Run every dense-reference comparison that applies to the model."""
    from crosscheck.dense import compare
    from mechdyn.dynamics import Dynamics

    model = load_model(args.model)
    checks = [compare.rank_K(model, args.trials, args.seed)] if model.loops else []
    if checks and not checks[0].passed:  # A = K H⁻¹ Kᵀ is singular: nothing downstream can be meaningful
        return _report(model.name, checks, args.json)
    dyn = Dynamics(model)
    checks += [
        compare.crba_vs_aba(model, args.trials, args.seed),
        compare.gen_vs_dense(dyn, args.trials, args.seed),
        compare.observe_vs_dense(dyn, args.trials, args.seed),
        compare.find_roundtrip(dyn),
    ]
    return _report(model.name, checks, args.json)


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return n


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="crosscheck",
        description="Check mechdyn's forward dynamics against independent implementations. "
        "Exit status: 0 all checks pass, 1 a check failed, 2 bad input.",
    )
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    d = sub.add_parser(
        "dense",
        help="compare against the dense 6x6 RBDA reference",
        description="Compare on random states (q, qd, tau, fext, act; near the closure manifold, with a small "
        "tear, for loop models), as scaled errors "
        "|a-b|inf / max(1, |b|inf): crba_vs_aba, the dense CRBA route against the articulated-body "
        "algorithm (gate 1e-12); gen_vs_dense, the generated C against the dense reference "
        "(gate 1e-9, times (nv/64)^4 above 64 coordinates); observe_vs_dense, the generated "
        "observation function against the dense kinematics (gate 1e-12); find_roundtrip, "
        "every declared name through fwd_dyn_find (gate: no mismatch); rank_K (loop models), "
        "rank(K) = nc at every trial.",
    )
    d.add_argument("model", help="a model name in models/ (e.g. elbow) or a path to a .mech file")
    d.add_argument("--trials", type=positive_int, default=1000, help="random states to compare (default 1000)")
    d.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    d.add_argument("--json", action="store_true", help="print one JSON object of metrics instead of lines")
    d.set_defaults(func=cmd_dense)
    return p


def main(argv: list[str] | None = None) -> None:
    sys.exit(run(parser, argv))
