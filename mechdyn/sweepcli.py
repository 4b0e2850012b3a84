"""`mechdyn sweep`: a grid or a Monte Carlo sample of a model's parameters on Dask, one Parquet table, pictures
(mechdyn/sweep.py does the work; docs/sweep.md)."""
from __future__ import annotations

import argparse
import re
import sys
import textwrap
import time
from pathlib import Path

from mechdyn.cliutil import EXIT_FAIL, EXIT_PASS, InputError, add_model_argument, int_range, load_model, output_file

_AXIS = re.compile(r"^(?P<name>[^=~]+)(?P<op>[=~])(?P<spec>.+)$")
_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"


def parse_axis(text: str) -> tuple[str, str, object]:
    """`--param` text as (name, "grid", values) for NAME=v1,v2,... or NAME=lo:hi:n, or (name, "dist", (kind, a,
    b)) for NAME~normal:mean:sd or NAME~uniform:lo:hi; InputError naming the text otherwise."""
    m = _AXIS.match(text.strip())
    form = ("expected NAME=v1,v2,..., NAME=lo:hi:n, NAME~normal:mean:sd or NAME~uniform:lo:hi, e.g. "
            "spring_FL.k=1e5:2e5:5")
    if not m:
        raise InputError(f"sweep --param {text}: {form}")
    name, op, spec = m["name"].strip(), m["op"], m["spec"].strip()
    if op == "~":
        kind, _, rest = spec.partition(":")
        nums = rest.split(":")
        if kind not in ("normal", "uniform") or len(nums) != 2 or not all(re.fullmatch(_NUM, x) for x in nums):
            raise InputError(f"sweep --param {text}: {form}")
        a, b = map(float, nums)
        if (kind == "normal" and not b > 0) or (kind == "uniform" and not b > a):
            raise InputError(f"sweep --param {text}: expected a normal's sd > 0, a uniform's lo < hi")
        return name, "dist", (kind, a, b)
    if re.fullmatch(rf"{_NUM}:{_NUM}:\d+", spec):
        lo, hi, n = spec.split(":")
        if int(n) < 1:
            raise InputError(f"sweep --param {text}: a range of no points; expected lo:hi:n with n >= 1")
        return name, "grid", [float(lo)] if int(n) == 1 else \
            [float(lo) + (float(hi) - float(lo)) * k / (int(n) - 1) for k in range(int(n))]
    vals = spec.split(",")
    if not all(re.fullmatch(_NUM, v.strip()) for v in vals):
        raise InputError(f"sweep --param {text}: {form}")
    return name, "grid", [float(v) for v in vals]


def add_sweep_parser(sub) -> None:
    """`mechdyn sweep`'s parser."""
    from mechdyn.cli import add_rig_inputs  # here: cli imports this module

    s = sub.add_parser("sweep", help="run a grid or a Monte Carlo sample of a model's parameters on Dask, into "
                                     "one table with pictures",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="\n\n".join(textwrap.fill(p, 79) for p in (
                           "Declare the swept numbers as parameters (docs/params.md), compile the model once, and "
                           "run every point of the grid (every combination of the --param values) or of a Monte "
                           "Carlo sample (--samples N, each --param drawn from its distribution): a shaker-rig run "
                           "(--rig with the rig's input options, as `mechdyn rig`; the ride figures), the modes "
                           "about the static equilibrium (--modes; frequencies and damping ratios), or a model with "
                           "a ground's settle (--sim; every gate's value and verdict).",
                           "The points run on Dask: a local cluster of every core by default (--workers N), or the "
                           "cluster whose scheduler is at --scheduler ADDRESS. Each worker loads the model once; "
                           "only parameter vectors go out and rows come back. Rows go into one Parquet table "
                           "(--out), written as they arrive; a failed point is a row with its error, and a sweep "
                           "started again on its table skips the points already there. --plot PREFIX draws the "
                           "figures against the parameters (a carpet plot for two).")),
                       epilog="examples:\n"
                       "  mechdyn sweep quartercar --param spring.k=1.2e5:2.2e5:6 --param shock.c=1500,3000,4500 \\\n"
                       "      --rig --sine 0.01 1.5 --time 5 --plot qc\n"
                       "  mechdyn sweep hmmwv --param spring_FL.k=1e5:3e5:100 --rig --road C --speed 20 --time 5\n"
                       "  mechdyn sweep hmmwv --samples 200 --param spring_FL.k~normal:2e5:1e4 \\\n"
                       "      --param chassis.mass~uniform:2000:2400 --rig --road C --speed 20 --time 5\n"
                       "  mechdyn sweep quartercar --param sprung.mass=400:600:5 --modes 3\n"
                       "  mechdyn sweep track_min --param ground.kn=2e5,4e5,8e5 --sim 2\n"
                       "  mechdyn sweep hmmwv --param spring_FL.k=1e5,2e5 --rig --sine 0.01 1 \\\n"
                       "      --scheduler tcp://10.0.0.5:8786")
    add_model_argument(s, params=False)
    s.add_argument("--param", action="append", default=[], metavar="AXIS", required=True,
                   help="a swept number (a body's mass, an element's k, c, l0 or q0) and its values: "
                        "NAME=v1,v2,... or NAME=lo:hi:n for a grid, NAME~normal:mean:sd or NAME~uniform:lo:hi "
                        "with --samples. Repeatable")
    s.add_argument("--samples", type=int_range(1, 10**7), metavar="N", help="a Monte Carlo sample of N points "
                   "(every --param a distribution)")
    s.add_argument("--sample-seed", type=int, default=0, metavar="S", help="the sample's random seed (default 0)")
    s.add_argument("--road-seeds", type=int_range(1, 10**6), metavar="K", help="with --rig --road: every grid "
                   "point on K roads (seeds 0..K-1); a sample draws one seed per point")
    what = s.add_mutually_exclusive_group(required=True)
    what.add_argument("--rig", action="store_true", help="a shaker-rig run per point (the rig's options below)")
    what.add_argument("--modes", nargs="?", const=6, type=int_range(1, 1000), metavar="N",
                      help="the first N modes about the static equilibrium per point (default 6)")
    what.add_argument("--sim", nargs="?", const=4.0, type=float, metavar="T",
                      help="a model with a ground: its settle from the design pose at rest for T s (default 4) at "
                           "--dt (default: the contact's accuracy step); every gate's value and verdict")
    s.add_argument("--held", nargs="+", default=(), metavar="NAME", help="with --modes: coordinates held fixed")
    s.add_argument("--out", metavar="FILE.parquet", type=output_file, help="the table (default sweep-MODEL.parquet)")
    s.add_argument("--plot", metavar="PREFIX", help="write the figures against the parameters as PREFIX-*.png")
    s.add_argument("--workers", type=int_range(1, 4096), metavar="N", help="local worker processes (default: "
                   "every core)")
    s.add_argument("--serial", action="store_true", help="run the points in this process, one after another")
    s.add_argument("--scheduler", metavar="ADDRESS", help="a running Dask scheduler, e.g. tcp://10.0.0.5:8786")
    add_rig_inputs(s.add_argument_group("rig input (with --rig; as mechdyn rig) and step (--rig, --sim)"), dt=None)
    s.set_defaults(func=cmd_sweep)


def cmd_sweep(args: argparse.Namespace) -> int:
    """The sweep: its points, its run (mechdyn.sweep.run), a summary of the table, and the pictures."""
    from mechdyn import sweep
    from mechdyn.core import params as P

    try:
        import dask.distributed  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError as e:
        raise InputError(f"sweep: {e.name} is not installed; pip install 'mechdyn[sweep]' (Dask and pyarrow)") from None

    model = load_model(args.model, args.floating, args.mimic)
    axes = [parse_axis(t) for t in args.param]
    names = tuple(a[0] for a in axes)
    if len(set(names)) != len(names):
        raise InputError(f"sweep: a --param names a number twice: {', '.join(names)}")
    try:
        declared = P.declare(model, names)
    except P.ParamError as e:
        raise InputError(f"sweep --param: {e}") from None
    vector = [p.name for p in declared.params if p.size != 1]
    if vector:
        raise InputError(f"sweep --param {vector[0]}: a sweep moves single numbers (a mass, an element's k, c, l0 "
                         "or q0), not a cg's or an inertia's several")
    if args.samples is not None:
        grid_axes = [a[0] for a in axes if a[1] != "dist"]
        if grid_axes:
            raise InputError(f"sweep --samples: every --param needs a distribution (NAME~normal:mean:sd or "
                             f"NAME~uniform:lo:hi); {grid_axes[0]} gives values")
    elif any(a[1] == "dist" for a in axes):
        raise InputError("sweep: a --param with a distribution (~) needs --samples N")
    if args.rig:
        from mechdyn.cli import RIG_DT, rig_plan

        _, inp, T = rig_plan(args, model, "sweep --rig")
        analysis = sweep.Rig(inp, T, args.dt or RIG_DT)
        road = inp.kind == "road"
    elif args.sim is not None:
        if model.ground is None:
            raise InputError(f"sweep --sim: model '{model.name}' has no ground to settle on; --rig or --modes run "
                             "a model without contact")
        if not args.sim > 0:
            raise InputError(f"sweep --sim T: expected T > 0, got {args.sim:g}")
        analysis, road = sweep.Settle(args.sim, args.dt), False
    else:
        analysis, road = sweep.Modes(args.modes, tuple(args.held)), False
    if args.road_seeds is not None and not road:
        raise InputError("sweep: --road-seeds K needs --rig with --road CLASS")
    try:
        if args.samples is not None:
            points = sweep.sample({a[0]: a[2] for a in axes}, args.samples, args.sample_seed, road_seeds=road)
        else:
            points = sweep.grid({a[0]: a[2] for a in axes}, range(args.road_seeds) if args.road_seeds else
                                (args.seed if road else 0,))
    except ValueError as e:
        raise InputError(f"sweep: {e}") from None
    job = sweep.Job(args.model, names, analysis, args.floating, args.mimic)
    out = Path(args.out or f"sweep-{model.name}.parquet")
    where = "in this process" if args.serial else (f"on the Dask scheduler at {args.scheduler}" if args.scheduler
                                                   else f"on a local Dask cluster of {args.workers or 'every core'}")
    print(f"sweep: {model.name}: {len(points)} point{'s' if len(points) != 1 else ''} of {', '.join(names)}, "
          f"{'a rig run' if args.rig else f'a {args.sim:g} s settle' if args.sim else f'{args.modes} modes'} each, "
          f"{where}; table {out}")
    start = time.perf_counter()
    try:
        table = sweep.run(job, points, out, workers=0 if args.serial else args.workers, scheduler=args.scheduler,
                          progress=True)
    except ConnectionError as e:
        raise InputError(f"sweep --scheduler: {e}") from None
    except ValueError as e:  # another sweep's table
        raise InputError(f"sweep --out: {e}") from None
    wall = time.perf_counter() - start
    failed = table[table["status"] != sweep.STATUS_OK]
    print(f"sweep: {len(table)} rows ({len(failed)} failed) in {wall:.3g} s wall, "
          f"{table['seconds'].sum():.3g} s in the points; {out}")
    for _, r in failed.head(5).iterrows():
        print(f"  point {int(r['point'])} failed: {r['error']}", file=sys.stderr)
    print(summary(table, names))
    if args.plot:
        from mechdyn.sweepplot import plot

        print("pictures: " + ", ".join(map(str, plot(table, names, Path(args.plot), args.samples is not None))))
    return EXIT_FAIL if len(failed) == len(table) else EXIT_PASS


def summary(table, names: tuple[str, ...]) -> str:
    """Each figure's least, median and largest value over the points that ran, and where its extremes are."""
    import pandas as pd

    ok = table[table["status"] == "ok"]
    figures = [c for c in ok.columns if c not in (*names, "point", "seed", "status", "error", "seconds")]
    rows = []
    for f in figures:
        col = ok[f].astype(float)
        if col.notna().any():
            lo, hi = ok.loc[col.idxmin()], ok.loc[col.idxmax()]
            at = lambda r: ", ".join(f"{n}={r[n]:.4g}" for n in names)  # noqa: E731
            rows.append({"figure": f, "least": f"{col.min():.4g}", "median": f"{col.median():.4g}",
                         "largest": f"{col.max():.4g}", "least at": at(lo), "largest at": at(hi)})
    return pd.DataFrame(rows).to_string(index=False) if rows else "no point ran"

