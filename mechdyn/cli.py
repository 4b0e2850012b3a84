"""`mechdyn`: inspect, generate, run and benchmark mechanisms.

    mechdyn info <model>
    mechdyn gen <model> [-o file.c]
    mechdyn bench <model> [--json]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from mechdyn.cliutil import EXIT_PASS, atomic_write, run
from mechdyn.core.model import BASE, Model
from mechdyn.core.parse import load_model

AXES = "xyz"


def _body_name(model: Model, i: int) -> str:
    return "base" if i == BASE else model.bodies[i].name


def describe(model: Model) -> str:
    """A human summary of the model: sizes, bodies, loops and elements."""
    lines = [
        f"model {model.name} ({model.path})",
        f"  bodies {model.nbody}  nq {model.nq}  nv {model.nv}  nc {model.nc}  "
        f"mobility {model.mobility}  nact {model.nact}",
        f"  gravity {' '.join(f'{g:g}' for g in model.gravity)}  stab {model.stab:g} s",
        "",
    ]
    bodies = pd.DataFrame(
        {
            "body": [b.name for b in model.bodies],
            "parent": [_body_name(model, b.parent) for b in model.bodies],
            "joint": [b.joint + ("" if b.axis < 0 else " " + AXES[b.axis]) for b in model.bodies],
            "q": [f"{i}..{i + b.nq - 1}" if b.nq > 1 else str(i) for b, i in zip(model.bodies, model.qidx)],
            "v": [f"{i}..{i + b.nv - 1}" if b.nv > 1 else str(i) for b, i in zip(model.bodies, model.vidx)],
            "mass": [b.mass for b in model.bodies],
            "fext": ["yes" if b.fext else "" for b in model.bodies],
        }
    )
    lines.append(bodies.to_string(index=False))
    sections = [
        ("loops", [f"{lp.name}: {lp.joint} {_body_name(model, lp.pred)} -> {_body_name(model, lp.succ)} (nc {lp.nc})"
                   for lp in model.loops]),
        ("points of interest", [f"{p.name}: on {_body_name(model, p.body)} at {' '.join(f'{x:g}' for x in p.pos)}"
                                for p in model.pois]),
        ("tsda", [f"{e.name}: {model.pois[e.poi_a].name} -- {model.pois[e.poi_b].name}  k {e.k:g}  c {e.c:g}  l0 {e.l0:g}"
                  + (f"  act[{e.act}]" if e.act >= 0 else "") for e in model.tsdas]),
        ("rsda", [f"{e.name}: joint of {model.bodies[e.body].name}  k {e.k:g}  c {e.c:g}  q0 {e.q0:g}"
                  + (f"  act[{e.act}]" if e.act >= 0 else "") for e in model.rsdas]),
        ("tracks", [f"{t.name}: {t.shoes} shoes on {_body_name(model, t.root)}, {len(t.rollers)} rollers"
                    for t in model.tracks]),
        ("ground", [f"terrain {model.ground.terrain} {' '.join(f'{x:g}' for x in model.ground.params)}"]
         if model.ground else []),
    ]
    for title, items in sections:
        if items:
            lines += ["", f"{title}:"] + [f"  {it}" for it in items]
    lines.append("")
    lines.append(f"total mass {sum(b.mass for b in model.bodies):.6g} kg")
    return "\n".join(lines)


def cmd_info(args: argparse.Namespace) -> int:
    """Print what the model declares."""
    print(describe(load_model(args.model)))
    return EXIT_PASS


def cmd_gen(args: argparse.Namespace) -> int:
    """Write the generated C for a model."""
    from mechdyn.codegen.generate import generate

    gen = generate(load_model(args.model))
    if args.output == "-":
        sys.stdout.write(gen.source)
    else:
        atomic_write(Path(args.output), gen.source)
        print(f"{args.output}: {gen.model.name}, nq {gen.model.nq}, nv {gen.model.nv}, {gen.flops} flops per call")
    return EXIT_PASS


def cmd_bench(args: argparse.Namespace) -> int:
    """Time the generated forward dynamics against the dense reference."""
    from mechdyn.bench import bench, machine
    from mechdyn.dynamics import Dynamics

    res = bench(Dynamics(load_model(args.model)), repeats=args.repeats)
    if args.json:
        print(json.dumps(res.as_dict(), indent=2))
    else:
        print(f"bench: {res.model} (nq {res.nq}, nv {res.nv}) on {machine()}")
        print(f"bench: generated  {res.ns_per_call:10.1f} ns/call  {res.flops} flops  {res.gflops:.2f} GFLOP/s")
        print(f"bench: dense      {res.dense_ns_per_call:10.1f} ns/call  (numpy 6x6 reference)")
        print(f"bench: speedup    {res.speedup:10.1f}x")
    return EXIT_PASS


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mechdyn",
        description="Specialized multibody forward dynamics. Models are named by a file path "
        "or by their name in models/ (e.g. elbow). Exit status: 0 success, 1 a check failed, 2 bad input.",
    )
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    i = sub.add_parser("info", help="print a model's bodies, joints, sizes, loops and elements",
                       description="Print a model's bodies, joints, coordinate slots, nq/nv, loops and force elements.")
    i.add_argument("model", help="a model name in models/ or a path to a .mech file")
    i.set_defaults(func=cmd_info)
    g = sub.add_parser("gen", help="write the generated C for a model",
                       description="Write the specialized C translation unit that mechdyn compiles for a model.")
    g.add_argument("model", help="a model name in models/ or a path to a .mech file")
    g.add_argument("-o", "--output", default="-", help="output file (default: standard output)")
    g.set_defaults(func=cmd_gen)
    b = sub.add_parser("bench", help="time the generated forward dynamics",
                       description="Time fwd_dyn in a C loop over a pool of 256 random states (minimum over "
                       "repeats, with a running checksum), and the dense reference on the same states. Reports "
                       "ns/call, the speedup and the generated code's flop count.")
    b.add_argument("model", help="a model name in models/ or a path to a .mech file")
    b.add_argument("--repeats", type=int, default=7, help="timed repeats; the minimum is reported (default 7)")
    b.add_argument("--json", action="store_true", help="print one JSON object")
    b.set_defaults(func=cmd_bench)
    return p


def main(argv: list[str] | None = None) -> None:
    sys.exit(run(parser, argv))
