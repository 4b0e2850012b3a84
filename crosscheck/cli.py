"""`crosscheck`: compare mechdyn's dynamics against independent routes.

    crosscheck dense <model> [--trials N] [--seed S] [--json]
    crosscheck chrono <model> [--trials N] [--seed S] [--sim T DT] [--body NAME] [--json]
    crosscheck pinocchio <model> [--derivatives] [--trials N] [--seed S] [--json]
    crosscheck mujoco <model> [--linearize [--eps E]] [--trials N] [--seed S] [--json]
    crosscheck bench <model> [--peers [--derivatives]] [--unturned] [--repeats N] [--json]
    crosscheck bench --peers [--derivatives] --robots [--repeats N] [--json]
    crosscheck suspension [MODEL] [--travel M] [--points N] [--plot FILE] [--old-axes] [--json]
    crosscheck chrono-rig [--inputs FILE] [--time T] [--dt DT] [--plot PNG] [--json]
    crosscheck chrono-tire [--tire tmeasy|fiala|both] [--quick] [--plot-dir DIR] [--json]
    crosscheck chrono-drive [--plot PNG] [--json]
    crosscheck randmodel SEED [--bodies N] [--floating] [--loops N] [--aligned] [-o FILE]
    crosscheck selftest
    crosscheck report [--history DB] [--since COMMIT] [--factor F] [-o report.html]
    crosscheck golden [--derivatives] [--update] <model>... | --all

The last four are the harness's commands that `mechdyn` had before issue 17 (`mechdyn bench --peers`,
`mechdyn selftest`, `mechdyn report`, `mechdyn golden`); `mechdyn bench` times the generated code alone.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from crosscheck.checks import Check
from crosscheck.report import DEFAULT_FACTOR
from mechdyn.cliutil import (EXIT_FAIL, EXIT_PASS, InputError, Parser, add_model_argument, atomic_write, float_range,
                             int_range, load_model, model_of, output_dir, output_file, positive_float, run, seed, sim_steps, trials)
from mechdyn.core.errors import clip, listed


def _report(model_name: str, checks: list[Check], as_json: bool, extra: dict | None = None) -> int:
    """Print the checks (human lines or one JSON object, with `extra`'s keys) and return the exit code."""
    ok = all(c.passed for c in checks)
    if as_json:
        print(json.dumps({"model": model_name, "passed": ok} | {c.name: c.value for c in checks} | (extra or {})
                         | {"checks": [c.as_dict() for c in checks]}, indent=2))
    else:
        for c in checks:
            print(f"{model_name}: {c.line()}")
        print(f"{model_name}: {'PASS' if ok else 'FAIL'}")
    return EXIT_PASS if ok else EXIT_FAIL


def cmd_dense(args: argparse.Namespace) -> int:
    """Run every dense-reference comparison that applies to the model."""
    from crosscheck import dense_compare as compare
    from mechdyn.dynamics import Dynamics

    model = model_of(args)
    checks = [compare.rank_K(model, args.trials, args.seed)] if model.loops else []
    if checks and not checks[0].passed:  # A = K H⁻¹ Kᵀ is singular: nothing downstream can be meaningful
        return _report(model.name, checks, args.json)
    dyn = Dynamics(model, progress=True)
    checks += [
        compare.crba_vs_aba(model, args.trials, args.seed),
        compare.gen_vs_dense(dyn, args.trials, args.seed),
        compare.observe_vs_dense(dyn, args.trials, args.seed),
        compare.find_roundtrip(dyn),
    ]
    return _report(model.name, checks, args.json)


SIM_T, SIM_DT = 0.25, 2e-5  # the plain form's trajectory comparison (hmmwv: about 15 s of Chrono steps)


def cmd_chrono(args: argparse.Namespace) -> int:
    """The Project Chrono cross-check: qd = dq/dt, accelerations against dense and generated, trajectories."""
    from crosscheck.chrono import require_pychrono

    require_pychrono()  # without it: one line saying how to get it, exit 2
    from crosscheck.chrono import checks, sim
    from mechdyn.dynamics import Dynamics

    model = model_of(args)
    if args.body is not None and args.body not in [b.name for b in model.bodies]:
        raise InputError(f"{model.name} has no body '{clip(args.body)}'; its bodies: "
                         f"{listed((b.name for b in model.bodies), 8)}")
    dyn = Dynamics(model, progress=True)
    if model.ground is not None and not args.json:
        print(f"{model.name}: note: the ground block ({model.path}:{model.ground.line}) is left out on both sides: "
              "fwd_dyn has no contact forces, so the bands fall free")
    if args.sim is None and (args.scheme != "euler" or args.alpha is not None):
        raise InputError("--scheme and --alpha choose the --sim comparison's integrators: add --sim T DT")
    if args.alpha is not None and args.scheme != "hht":
        raise InputError("--alpha is HHT's: add --scheme hht")
    args.alpha = sim.HHT_ALPHA if args.alpha is None else args.alpha
    if args.scheme == "hht" and model.rsdas:
        raise InputError(f"--scheme hht: {model.name}'s rsda elements ({listed(e.name for e in model.rsdas)}) are "
                         "torques written into Chrono before each step and held over it, a first-order force: the "
                         "pair could not be second order; compare them with --scheme euler")
    if args.sim is None:
        return _report(model.name, checks.run_all(model, dyn, args.trials, args.seed, SIM_T, SIM_DT, progress=True),
                       args.json)
    T, dt = args.sim
    if dt > T:
        raise InputError(f"--sim {T:g} {dt:g}: expected DT <= T")
    sim_steps(T, dt / 2, "--sim T", "DT/2")  # the comparison also steps at DT/2
    if args.scheme == "hht":
        dyn.derivatives_lib  # the iteration matrix's module, built before the stepping is timed
    run_dt, run_dt2 = sim.compare(model, dyn, T, dt, args.seed, progress=True, scheme=args.scheme, alpha=args.alpha)
    if not args.json:
        body = model.body_index(args.body) if args.body else sim.default_body(model, run_dt)
        pair = (f"generalized-alpha at alpha_m 0, alpha_f {-args.alpha:g}) vs Chrono (HHT, alpha {args.alpha:g})"
                if args.scheme == "hht" else "semi-implicit Euler) vs Chrono (Euler implicit linearized)")
        print(f"{model.name}: generated dynamics ({pair}, "
              f"T={T:g} dt={dt:g}, origin of {model.bodies[body].name} (m); gap = worse of position (m) and "
              f"attitude (rad) over all bodies")
        print("\n".join(sim.table(model, run_dt, body)))
        if model.drivers:
            print(f"{model.name}: the drivers' reactions (N or N m), each driver "
                  f"{sim.SIM_AMPLITUDE:g} m or rad at {sim.SIM_HZ:g} Hz blended in over {sim.SIM_BLEND:g} s; "
                  "scaled gap = |generated - Chrono| / max(1, largest generated reaction)")
            print("\n".join(sim.react_table(model, run_dt)))
        print(f"{model.name}: stepping took {run_dt.seconds_chrono:.1f} + {run_dt2.seconds_chrono:.1f} s in Chrono, "
              f"{run_dt.seconds_gen:.2f} + {run_dt2.seconds_gen:.2f} s in the generated code")
    return _report(model.name, checks.sim_checks(model, run_dt, run_dt2, T, args.scheme), args.json)


def _trials(args: argparse.Namespace, flag: bool, default: int, flag_default: int) -> int:
    """--trials, else the subcommand's default: a smaller one when `flag` chose the costlier comparison."""
    if args.trials is not None:
        return args.trials
    return flag_default if flag else default


PIN_TRIALS, PIN_DERIV_TRIALS = 1000, 50  # a derivatives trial is dearer: nv columns, and force elements' stencils


def cmd_pinocchio(args: argparse.Namespace) -> int:
    """Pinocchio's forward dynamics of the exported URDF against the generated C and the dense reference, or
    (--derivatives) its computeABADerivatives against the generated derivatives."""
    from crosscheck.pinocchio import compare, derivatives
    from mechdyn.dynamics import Dynamics

    model = model_of(args)
    n = _trials(args, args.derivatives, PIN_TRIALS, PIN_DERIV_TRIALS)
    if args.derivatives:
        if reason := derivatives.why_not(model):  # before compiling anything
            raise InputError(f"crosscheck pinocchio --derivatives: {reason}")
        check, blocks = derivatives.derivs_vs_generated(Dynamics(model, progress=True), n, args.seed)
        return _report(model.name, [check], args.json, {"blocks": blocks})
    checks = [compare.accel_vs_generated(Dynamics(model, progress=True), n, args.seed),
              compare.accel_vs_dense(model, n, args.seed)]
    return _report(model.name, checks, args.json)


MJ_TRIALS, MJ_LIN_TRIALS = 1000, 20  # each linearization trial steps MuJoCo 4 nv + 2 (nact + nv) times


def cmd_mujoco(args: argparse.Namespace) -> int:
    """MuJoCo's forward dynamics of the exported MJCF against the generated C (tree models), or (--linearize)
    its mjd_transitionFD against the generated derivatives carried through the same Euler step."""
    from crosscheck.mujoco import linearize, why_not
    from crosscheck.mujoco.compare import accel_vs_generated
    from mechdyn.dynamics import Dynamics

    model = model_of(args)
    if args.eps is not None and not args.linearize:
        raise InputError("crosscheck mujoco --eps: the step of --linearize's differences; add --linearize")
    n = _trials(args, args.linearize, MJ_TRIALS, MJ_LIN_TRIALS)
    if args.linearize:
        if reason := linearize.covered(model):
            raise InputError(f"crosscheck mujoco --linearize: {reason}")
        agreement = linearize.compare(Dynamics(model, progress=True), n, args.seed,
                                      eps=linearize.EPS if args.eps is None else args.eps)
        return _report(model.name, agreement.checks(), args.json, agreement.figures())
    if reason := why_not(model):
        raise InputError(f"crosscheck mujoco: {reason}; crosscheck pinocchio covers loop models")
    return _report(model.name, [accel_vs_generated(Dynamics(model, progress=True), n, args.seed)], args.json)


def cmd_bench(args: argparse.Namespace) -> int:
    """Time the generated forward dynamics beside the dense reference, or (--peers) beside Pinocchio and MuJoCo,
    or (--peers --derivatives) the generated derivatives beside Pinocchio's."""
    from crosscheck.bench import bench_dense, bench_derivatives, bench_peers, spanning_tree
    from crosscheck.pinocchio.derivatives import why_not
    from mechdyn.dynamics import Dynamics

    if args.robots:
        return _bench_robots(args)
    if args.model is None:
        raise InputError("bench: name a model, or add --peers --robots")
    model = model_of(args)
    if args.unturned:
        from crosscheck.randmodel import unturned

        model = unturned(model)
    if args.derivatives and not args.peers:
        raise InputError("bench --derivatives: times the derivatives beside Pinocchio's; add --peers")
    if args.derivatives and (reason := why_not(spanning_tree(model))):
        raise InputError(f"bench --peers --derivatives: {reason}")
    dyn = Dynamics(model, progress=True)
    if args.derivatives:
        res = bench_derivatives(dyn, repeats=args.repeats)
    else:
        res = bench_peers(dyn, repeats=args.repeats) if args.peers else bench_dense(dyn, repeats=args.repeats)
    print(json.dumps(res.as_dict(), indent=2) if args.json else "\n".join(res.lines()))
    return EXIT_PASS


def _bench_robots(args: argparse.Namespace) -> int:
    """bench --peers [--derivatives] --robots: the robots of example-robot-data one after the other (the arms
    only with --derivatives), as the rows of docs/performance.md's table."""
    from crosscheck.bench import (DERIVS_TABLE_HEADER, ROBOTS, ROBOTS_HEADER, bench_derivatives, bench_peers,
                                  robot_flags, robot_row, robots_dir)
    from mechdyn.dynamics import Dynamics

    if not args.peers or args.model is not None or args.unturned or args.floating or args.mimic != "refuse":
        raise InputError("bench --robots: takes --peers [--derivatives] [--repeats N] [--json] and no model")
    try:
        root = robots_dir()
    except FileNotFoundError as e:
        raise InputError(str(e)) from None
    rows: list[dict] = []
    if not args.json:
        print(DERIVS_TABLE_HEADER if args.derivatives else ROBOTS_HEADER, flush=True)
    for label, path, floating, mimic in ROBOTS:
        if args.derivatives and floating:
            continue
        dyn = Dynamics(load_model(str(root / path), floating, mimic), progress=True)
        if args.derivatives:
            res = bench_derivatives(dyn, repeats=args.repeats)
            line = res.table_row().replace(f"| {res.model} |", f"| {label} |", 1)
        else:
            res = bench_peers(dyn, repeats=args.repeats)
            line = robot_row(label, res)
        rows.append(res.as_dict() | {"robot": label, "args": robot_flags(path, floating, mimic)})
        if not args.json:
            print(line, flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))
    return EXIT_PASS


def cmd_suspension(args: argparse.Namespace) -> int:
    """Sweep the quarter car and Chrono::Vehicle's HMMWV double wishbone through their travel and compare."""
    import numpy as np

    from crosscheck.chrono.vehicle import chrono_sweep, require_vehicle
    from crosscheck.suspension import FIELDS, GATES, UNITS, differences, mechdyn_sweep, old_axes, plot

    model = model_of(args)
    require_vehicle()  # before the work: exit 2 with the remedy
    if args.old_axes:
        model = old_axes(model)
    travel = np.linspace(-args.travel, args.travel, args.points)
    ours, theirs = mechdyn_sweep(model, travel), chrono_sweep(travel)
    diff = differences(ours, theirs)
    ok = all(diff[f] <= GATES[f] for f in FIELDS)
    if args.plot:
        plot([ours, theirs], args.plot, f"{model.name}{' (upper arms on x)' if args.old_axes else ''} against "
             "Chrono::Vehicle's HMMWV front-left double wishbone, chassis held")
    if args.json:
        print(json.dumps({"model": model.name, "passed": ok, "old_axes": args.old_axes, "travel": args.travel,
                          "points": args.points, "largest": diff, "gates": GATES}, indent=2))
    else:
        for f in FIELDS:
            print(f"{model.name}: {f}: largest |mechdyn - Chrono::Vehicle| over +-{args.travel:g} m = "
                  f"{diff[f]:.3e} {UNITS[f]} (gate {GATES[f]:g}) {'PASS' if diff[f] <= GATES[f] else 'FAIL'}")
        if args.plot:
            print(f"{model.name}: curves in {args.plot}")
        print(f"{model.name}: {'PASS' if ok else 'FAIL'}")
    return EXIT_PASS if ok else EXIT_FAIL


RIG_PLOT = Path(__file__).resolve().parents[1] / "docs" / "img" / "chrono_rig_hmmwv.png"  # the repository's


DRIVE_PLOT = Path(__file__).resolve().parents[1] / "docs" / "img" / "drive_vs_chrono.png"


def cmd_chrono_drive(args: argparse.Namespace) -> int:
    """hmmwv_road against Chrono::Vehicle's HMMWV on the turn, the braking and the lane change: the gates and one
    picture; exit 1 if a gate fails."""
    from crosscheck.chrono.drive_compare import SPEEDS, compare, steer_line
    from crosscheck.chrono.vehicle import require_vehicle
    from mechdyn.dynamics import Dynamics

    require_vehicle()  # before the work: exit 2 with the remedy
    checks, ours, theirs, pic = compare(Dynamics(load_model("hmmwv_road"), progress=True), Path(args.plot or DRIVE_PLOT))
    if args.json:
        print(json.dumps({"checks": [c.as_dict() for c in checks], "plot": str(pic),
                          "lane_realtime_factor": {"mechdyn": ours.lane_rtf, "chrono": theirs.lane_rtf}}, indent=2))
    else:
        print(f"chrono-drive: R 50 m at {', '.join(f'{v:g}' for v in SPEEDS)} m/s (mechdyn/Chrono): "
              + steer_line(ours, theirs))
        print(f"chrono-drive: lane change, whole run on the wall clock: mechdyn real-time factor {ours.lane_rtf:.3g}, "
              f"Chrono {theirs.lane_rtf:.3g}")
        for c in checks:
            print(f"{'PASS' if c.passed else 'FAIL'} {c.name}: {c.value:.3g} (gate {c.threshold:g}): {c.detail}")
        print(f"chrono-drive: picture {pic}")
    return EXIT_PASS if all(c.passed for c in checks) else EXIT_FAIL


def cmd_chrono_tire(args: argparse.Namespace) -> int:
    """mechdyn's tire laws against Chrono's own on Chrono's wheel test rig, at the rig's states: the worst error of
    each force and moment, the gate where the equations are the same; exit 1 if a gate fails."""
    import numpy as np

    from crosscheck.chrono.tire_rig import (COMPONENTS, PLAIN_BOUND, cached_sweep, camber_single_point, full_sweep,
                                            law_errors, mechdyn_law, plot, quick_sweep)
    from crosscheck.chrono.vehicle import vehicle_modules

    vehicle_modules()  # before the work: exit 2 with the remedy
    ok, out = True, {}
    for tire in ("tmeasy", "fiala") if args.tire == "both" else (args.tire,):
        samples = cached_sweep(tire, quick_sweep() if args.quick else full_sweep())
        e = law_errors(samples)
        odd = camber_single_point(samples)
        plain, camber = e[~odd].max(axis=0), e[odd].max(axis=0) if odd.any() else np.zeros(6)
        ok &= bool(plain.max() < PLAIN_BOUND)
        path = plot(samples, Path(args.plot_dir or ".") / f"chrono_tire_{tire}.png", mechdyn_law(samples))
        out[tire] = {"samples": len(samples.rows), "plain": dict(zip(COMPONENTS, plain.tolist())),
                     "camber_single_point": dict(zip(COMPONENTS, camber.tolist())), "plot": str(path)}
        if not args.json:
            print(f"chrono-tire: {tire}: {int((~odd).sum())} rig states, worst of each scaled by the load: "
                  + ", ".join(f"{c} {v:.2e}" for c, v in zip(COMPONENTS, plain))
                  + f" (gate {PLAIN_BOUND:g}); single-point camber ({int(odd.sum())} states, Chrono's frame not a "
                  f"rotation; not gated): worst {camber.max():.2e}")
            print(f"chrono-tire: picture {path}")
    if args.json:
        print(json.dumps(out, indent=2))
    return EXIT_PASS if ok else EXIT_FAIL


def cmd_chrono_rig(args: argparse.Namespace) -> int:
    """Chrono::Vehicle's HMMWV suspension test rig and `mechdyn rig hmmwv --chrono` on the same data file, side by
    side (with mechdyn's quartercar and Chrono's pushrod rig): a report (exit 0 once all ran), not a gate."""
    import numpy as np

    from crosscheck.chrono.rig import INPUTS, SIDES, all_rigs, plot
    from crosscheck.chrono.vehicle import data_dir, require_vehicle
    from mechdyn.core.parse import load_model as load

    require_vehicle()  # before the work: exit 2 with the remedy
    inputs = Path(args.inputs) if args.inputs else data_dir() / INPUTS
    if not inputs.is_file():
        raise InputError(f"--inputs {clip(str(inputs))}: no such file: expected Chrono's suspension test rig data "
                         "file (rows: time, steering, left and right post per axle)")
    sim_steps(args.time, args.dt, "--time", "--dt")
    series = all_rigs(inputs, args.time, args.dt)
    spring = next(e for e in load("hmmwv").tsdas if e.name == "spring_FL")  # mechdyn's linear law, every front spring
    figures = {}
    for r in series:
        ti = r.input_time
        at0 = int(np.argmin(np.abs(ti)))
        for side in SIDES:
            if side not in r.travel:
                continue
            top = int(np.argmax(r.spring[side]))
            figures[f"{r.name}: front {side}"] = {
                "travel at file t=0, mm": 1e3 * r.travel[side][at0],
                "travel min, mm": 1e3 * r.travel[side].min(), "travel max, mm": 1e3 * r.travel[side].max(),
                "file time of travel max, s": float(ti[np.argmax(r.travel[side])]),
                "spring at file t=0, kN": 1e-3 * r.spring[side][at0],
                "spring max, kN": 1e-3 * r.spring[side][top],
                "spring length there, mm": 1e3 * r.length[side][top],
                "linear law at that length, kN": 1e-3 * spring.k * (spring.l0 - r.length[side][top]),
                "actuated top at file t=0, mm": 1e3 * r.post[side][at0],
                "actuated top min, mm": 1e3 * r.post[side].min(), "actuated top max, mm": 1e3 * r.post[side].max(),
            }
    path = plot(series, args.plot or RIG_PLOT,
                f"{inputs.name}: mechdyn rig hmmwv (whole vehicle on four tire rods, held in the plane by restraints, linear springs) "
                "and quartercar (sprung mass on a vertical slider) vs Chrono::Vehicle's HMMWV_ST_front rigs (chassis "
                "fixed, cubic springs): pushrod (spindles driven, its inverted post sign undone), platform (TMeasy "
                "tires, as its demo)")
    if args.json:
        print(json.dumps({"inputs": str(inputs), "time": args.time, "dt": args.dt, "plot": str(path),
                          "figures": figures}, indent=2))
        return EXIT_PASS
    print(f"chrono-rig: {inputs}: {args.time:g} s of the file's time (mechdyn at {args.dt:g} s, verlet; Chrono at "
          "its demo's 1e-3 s, 0.5 s more for its ride-height ramp); times are the file's (Chrono's rig time less its "
          "0.5 s delay); heights in the chassis frame, the actuated top being the post's or (pushrod) the spindle's")
    for key, fig in figures.items():
        print(f"{key}:")
        print("".join(f"  {n} {v:.4g};" for n, v in fig.items()))
    print(f"chrono-rig: picture {path}")
    return EXIT_PASS


def cmd_randmodel(args: argparse.Namespace) -> int:
    """Write a random mechanism with turned joint frames and axes in any direction (crosscheck/randmodel.py)."""
    from crosscheck.randmodel import Spec, random_mech

    text = random_mech(args.seed, Spec(bodies=args.bodies, floating=args.floating, loops=args.loops,
                                       aligned=args.aligned))
    if args.output:
        atomic_write(Path(args.output), text)
        print(f"{args.output}: random mechanism, seed {args.seed}, {args.bodies} bodies")
    else:
        sys.stdout.write(text)
    return EXIT_PASS


def cmd_selftest(args: argparse.Namespace) -> int:
    """Plant known bugs one at a time and show the gates catch each."""
    from crosscheck.selftest import selftest

    outcomes, control = selftest()
    bad_control = [r for r in control if not r[3]]
    for r in control:
        print(f"clean copy: {r[0]} = {r[1]:.3e} (gate {r[2]:.0e}) {'PASS' if r[3] else 'FAIL'}")
    for o in outcomes:
        print(f"{'caught ' if o.caught else 'ESCAPED'} {o.mutation}: {o.detail}")
    caught = sum(o.caught for o in outcomes)
    print(f"caught {caught} of {len(outcomes)} planted bugs")
    if bad_control:
        print("selftest: the clean copy fails its gates, so 'caught' proves nothing", file=sys.stderr)
        return EXIT_FAIL
    return EXIT_PASS if caught == len(outcomes) else EXIT_FAIL


def commit_prefix(text: str) -> str:
    """argparse type: the start of a commit id, 4 to 40 hex digits."""
    if not re.fullmatch(r"[0-9a-fA-F]{4,40}", text):
        raise argparse.ArgumentTypeError(f"expected the start of a commit id (4 to 40 hex digits), got {text!r}")
    return text.lower()


def move_factor(text: str) -> float:
    """argparse type: a finite factor > 1 (at 1 every unmoved gate would count as moved)."""
    x = positive_float(text)
    if not x > 1:
        raise argparse.ArgumentTypeError(f"expected a factor > 1, got {text}")
    return x


def cmd_report(args: argparse.Namespace) -> int:
    """Draw the gate history as one self-contained HTML page: the suite's grid, what changed, trends on a click."""
    from crosscheck.report import compare, history_path, load_history, plural, render, short_commit

    hist = load_history(history_path(args.history))
    comparisons = compare(hist, args.since, args.factor)
    page = render(hist, comparisons, args.factor)
    atomic_write(Path(args.output), page)
    run, latest = hist.latest, hist.gates[hist.gates["index"] == hist.latest["index"]]
    changed = "; ".join(f"{plural(len(c.changes), 'change')} since {c.title}" for c in comparisons)
    print(f"{args.output}: {plural(len(hist.runs), 'run')} from {hist.path}; latest {run.started} at "
          f"{short_commit(run.commit_id)} on {run.machine}: {plural(len(latest), 'gate')}, "
          f"{int((~latest.passed).sum())} failed; {changed or 'no earlier run on this machine'}; "
          f"{len(page.encode()) / 1000:.0f} kB")
    return EXIT_PASS


def cmd_golden(args: argparse.Namespace) -> int:
    """Show models' golden results and speed figures, or (re)write them with --update."""
    from tqdm import tqdm

    from crosscheck import golden

    if bool(args.all) == bool(args.model):
        raise InputError("name one or more models, or pass --all (not both)")
    status = EXIT_PASS
    d = args.derivatives
    names = (golden.derivative_models() if d else golden.models()) if args.all else args.model
    update, stored, describe = ((golden.update_derivatives, golden.stored_derivatives, golden.describe_derivatives)
                                if d else (golden.update, golden.stored, golden.describe))
    # updating compiles each model and counts its instructions under callgrind (or, with --derivatives, compiles
    # its derivatives module): seconds to minutes apiece
    bar = tqdm(names, desc="golden --update", unit="model", leave=False, disable=None if args.update else True)
    for name in bar:
        bar.set_postfix_str(name)
        g = update(name) if args.update else stored(name)
        if g is None:
            tqdm.write(f"{'derivatives golden' if d else 'golden'} {name}: none; create it with "
                       f"`{golden.update_command(name, d)}`", file=sys.stdout)
            status = EXIT_FAIL
        else:
            tqdm.write(describe(g), file=sys.stdout)
    return status


class _Formatter(argparse.HelpFormatter):
    """argparse's wrapping, but text with its own line breaks (the examples) is printed as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def comparison(sub, name: str, example: str, default_trials: int | str, trials_help: str, func,
               **kw) -> argparse.ArgumentParser:
    """A comparison subcommand with the arguments every one takes: model, --trials, --seed, --json. A str
    default_trials is only described: the command picks the number (None when --trials is not given)."""
    c = sub.add_parser(name, formatter_class=_Formatter, **kw)
    add_model_argument(c, help=f"a model name in models/ (e.g. {example}), or a path to a .mech, .urdf or MJCF .xml file")
    c.add_argument("--trials", type=trials, default=None if isinstance(default_trials, str) else default_trials,
                   help=f"{trials_help} (default {default_trials})")
    c.add_argument("--seed", type=seed, default=0, help="random seed (default 0)")
    c.add_argument("--json", action="store_true", help="print one JSON object of metrics instead of lines")
    c.set_defaults(func=func)
    return c


def parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="crosscheck",
        description="Check mechdyn's forward dynamics against independent implementations, benchmark it beside "
        "them, and keep its gates (goldens, gate history, self-test). "
        "Exit status: 0 all checks pass, 1 a check failed, 2 bad input.",
    )
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    comparison(
        sub, "dense", "elbow", 1000, "random states to compare", cmd_dense,
        help="compare against the dense 6x6 RBDA reference",
        description="Compare on random states (q, qd, tau, fext, act; near the closure manifold, with a small "
        "tear, for loop models), as scaled errors "
        "|a-b|inf / max(1, |b|inf): crba_vs_aba, the dense CRBA route against the articulated-body "
        "algorithm (gate 1e-12, times (depth/8)^4 past a chain 8 coordinates deep); gen_vs_dense, the "
        "generated C against the dense reference (gate 1e-9, times (depth/64)^4 past 64 coordinates deep; "
        "depth: the coordinates on the longest path from a body to the base); observe_vs_dense, the generated "
        "observation function against the dense kinematics (gate 1e-12); find_roundtrip, "
        "every declared name through fwd_dyn_find (gate: no mismatch); rank_K (loop models), "
        "rank(K) = nc at every trial.",
    )

    c = comparison(
        sub, "chrono", "hmmwv", 200, "states for qd and accelerations", cmd_chrono,
        help="compare against Project Chrono (needs pychrono)",
        description="Rebuild the model in Project Chrono (maximal coordinates, its own joints, solver and "
        "integrator) and compare: qd_consistency, qd = dq/dt (the velocity mapping against finite differences "
        "of the position mapping; gate 1e-8, a sign inversion shows as 2.0); accel_vs_dense and "
        "accel_vs_generated, qdd from Chrono's exact acceleration-level KKT solve against the dense reference "
        "and the generated C on staged then random states (closed ones for loop models; gate 1e-8); "
        "sim_gap_dt, sim_gap_dt2 and sim_ratio, the generated dynamics (semi-implicit Euler) and Chrono "
        f"stepped side by side from one state at DT and DT/2 (default T={SIM_T:g} DT={SIM_DT:g}): the worse "
        "of position (m) and attitude (rad) per body, gate 1e-2, and a ratio of 2.0 +- 0.2 (first-order "
        "truncation; 4.0 +- 0.4 where the two schemes agree to first order, or both gaps at round-off). "
        "With --scheme hht the pair is the generalized-alpha stepper at HHT's setting against Chrono's HHT, "
        "both second order: the ratio must be 4.0 +- 0.4. "
        "A driven model's driven joints are Chrono motors (ChLinkMotorLinearPosition, ChLinkMotorRotationAngle) "
        "whose functions evaluate the drivers' motions: on its states each driver follows a sine through the "
        "state's coordinate and rate, and react_vs_dense and react_vs_generated compare the drivers' reactions "
        "with the motors' (gate 1e-8); in its trajectories every driver follows a sine of 0.01 m or rad at 2 Hz "
        "blended in over 0.5 s, and react_gap_dt, react_gap_dt2 and react_ratio compare the reactions along "
        "them (gate 1e-2, ratio as above). "
        "Needs pychrono: conda env create -f environment.yml.",
        epilog="examples:\n  crosscheck chrono slidercrank\n  crosscheck chrono hmmwv --sim 0.25 2e-5\n"
        "  crosscheck chrono quartercar --sim 1 2e-5   # the shaker post's sine, past its blend\n"
        "  crosscheck chrono satellite --sim 0.5 1e-3 --scheme hht --alpha -0.2",
    )
    c.add_argument("--sim", nargs=2, type=positive_float, metavar=("T", "DT"),
                   help="run only the trajectory comparison, for T seconds at step DT (and DT/2), and print "
                   "the trajectory table")
    c.add_argument("--body", metavar="NAME", help="the body the --sim table follows (default: the one whose "
                   "origin travels farthest)")
    c.add_argument("--scheme", choices=["euler", "hht"], default="euler", help="with --sim: the pair of "
                   "integrators, semi-implicit Euler against Chrono's Euler implicit linearized (default; first "
                   "order), or the generalized-alpha stepper at HHT's setting against Chrono's HHT (second order: "
                   "the gap must fall by 4.0 +- 0.4 per halving)")
    c.add_argument("--alpha", type=float_range(-1 / 3, 0.0, "HHT's alpha"), help="with --scheme hht: alpha on "
                   "both sides (default -0.1)")

    c = comparison(
        sub, "pinocchio", "satellite", f"{PIN_TRIALS}; {PIN_DERIV_TRIALS} with --derivatives",
        "random states to compare", cmd_pinocchio,
        help="compare against Pinocchio on the exported URDF",
        description="Load the model's URDF export in Pinocchio and compare qdd, as scaled errors, with "
        "accel_vs_generated (the generated C) and accel_vs_dense (the dense reference). Tree models: Pinocchio's "
        "ABA on random states (q, qd, tau, fext, act), with the state, torques and fext mapped between conventions "
        "and force elements applied as generalized forces from Pinocchio's frame Jacobians; gate 1e-9. Loop models: "
        "the acceleration-level KKT system built from Pinocchio's mass matrix, bias forces, frame Jacobians and "
        "classical frame accelerations, at states closed in position and velocity (Baumgarte terms vanish); "
        "gate 1e-8. With --derivatives, instead derivs_vs_pinocchio: Pinocchio's computeABADerivatives (with "
        "the terms for base-fixed fext rows and force elements that its ABA does not hold) against the generated "
        "fwd_dyn_derivs, the worst block (qdd, dq, dqd, dtau, dact, dfext) at the worst state, gate 1e-9 "
        "(docs/derivatives.md); tree models of any size, loop models exit 2.",
        epilog="examples:\n  crosscheck pinocchio satellite\n  crosscheck pinocchio springpend --derivatives\n"
        "  crosscheck pinocchio stanford --derivatives --trials 200 --json\n",
    )
    c.add_argument("--derivatives", action="store_true", help="compare the derivatives of qdd instead of qdd")

    c = comparison(
        sub, "mujoco", "elbow", f"{MJ_TRIALS}; {MJ_LIN_TRIALS} with --linearize", "random states to compare",
        cmd_mujoco,
        help="compare against MuJoCo on the exported MJCF (tree models)",
        description="Load the model's MJCF export in MuJoCo (contacts off, no armature, damping or limits; "
        "tendon and joint springs for force elements, motors for inputs) and compare mj_forward's qacc, mapped to "
        "mechdyn's coordinates, with the generated C on random states (q, qd, tau, fext as xfrc_applied, act as "
        "ctrl): accel_vs_generated, gate 1e-9. Loop models exit 2: MuJoCo's equality constraints are soft. "
        "With --linearize, instead MuJoCo's mjd_transitionFD (centered differences of one semi-implicit Euler "
        "step, h = 1e-3, with a motor on every dof) against the generated derivatives carried through the same "
        "step: linearize_pos and linearize_vel, the worst scaled error of the position rows of [A B] and of the "
        "velocity rows of [A - I B] / h, each as a share of its state's gate (the differences' rounding at step "
        "--eps; gate 1); tree models of any size, loop models exit 2.",
        epilog="examples:\n  crosscheck mujoco elbow\n  crosscheck mujoco satellite --linearize\n"
        "  crosscheck mujoco stanford --linearize --trials 50 --eps 1e-5 --json\n",
    )
    c.add_argument("--linearize", action="store_true", help="compare the transition Jacobians instead of qdd")
    c.add_argument("--eps", type=positive_float, metavar="E", help="with --linearize, MuJoCo's centered-difference "
                   "step (default 1e-6)")
    b = sub.add_parser("bench", help="time the generated forward dynamics beside the dense reference or the peers",
                       formatter_class=_Formatter,
                       epilog="examples:\n  crosscheck bench elbow\n  crosscheck bench --peers stanford\n"
                       "  R=$(python -c 'import importlib.metadata as m; print(m.distribution(\"example-robot-data\")"
                       ".locate_file(\"cmeel.prefix/share/example-robot-data/robots\"))')\n"
                       "  crosscheck bench --peers $R/talos_data/robots/talos_reduced.urdf --floating --mimic free\n"
                       "  crosscheck bench --peers --robots          # docs/performance.md's real-robot table\n"
                       "  crosscheck bench --peers --derivatives --robots   # the arms' derivatives\n",
                       description="Time fwd_dyn in a C loop over a pool of 256 random states (minimum over "
                       "repeats, with a running checksum), fwd_dyn_batch, and the dense reference on the same "
                       "states. Reports ns/call, the speedup and the generated code's flop count (mechdyn bench: "
                       "the generated code alone).")
    add_model_argument(b, nargs="?")
    b.add_argument("--repeats", type=int_range(1, 1000), default=7, help="timed repeats; the minimum is reported (default 7)")
    b.add_argument("--peers", action="store_true", help="instead, time the generated code, Pinocchio's ABA "
                   "(exported URDF) and MuJoCo's mj_forward (exported MJCF) side by side, each in a compiled loop "
                   "over the same 256 states, with instructions per call counted by callgrind; for a loop model, also "
                   "the generated spanning tree, and Pinocchio with the loops closed (computeAllTerms, the closure "
                   "rows, forwardDynamics with J and gamma)")
    b.add_argument("--derivatives", action="store_true", help="with --peers, time the generated derivatives "
                   "(fwd_dyn_derivs) and Pinocchio's computeABADerivatives side by side instead (a loop model: its "
                   "spanning tree), "
                   "each in a compiled loop over the same 256 states with a checksum check, with instructions per "
                   "call, the derivatives' cost over fwd_dyn's and their agreement with Pinocchio")
    b.add_argument("--robots", action="store_true", help="with --peers and no model, the ten robots of the PyPI "
                   "package example-robot-data one after the other (Panda, UR5, xArm7, Kinova on fixed bases; Solo12, "
                   "ANYmal C, Go2, Talos reduced and full, G1 floating; mimic joints free), printed as the rows of "
                   "docs/performance.md's table; with --derivatives, the four arms' derivatives")
    b.add_argument("--unturned", action="store_true", help="bench the model with every body frame turned onto "
                   "the base's axes at the design pose (crosscheck/randmodel.py unturned): the same mechanism "
                   "written without turned joint frames, the baseline of a turned-frame model's figures")
    b.add_argument("--json", action="store_true", help="print one JSON object")
    b.set_defaults(func=cmd_bench)
    su = sub.add_parser("suspension", formatter_class=_Formatter,
                        help="the quarter car's geometry against Chrono::Vehicle's own HMMWV double wishbone",
                        description="Hold the chassis and move the front-left wheel centre through its travel, "
                        "quasi-statically, in mechdyn's quarter car (its loops closed by Gauss-Newton) and in "
                        "Chrono::Vehicle's HMMWV built from the same JSON files by Chrono's own vehicle code (a "
                        "motor along z on each spindle, Chrono's position assembly). Compare, as functions of "
                        "travel: camber and toe (gate 1e-3 deg), the spring and shock lengths and the wheel "
                        "centre's x and y (gate 1e-5 m), the largest difference over the sweep. Needs pychrono "
                        "with Chrono::Vehicle (exit 2 without). Definitions: crosscheck/suspension.py.",
                        epilog="examples:\n  crosscheck suspension\n  crosscheck suspension --plot camber_toe.png\n"
                        "  crosscheck suspension --old-axes   # the upper arms on x: fails\n"
                        "  crosscheck suspension --travel 0.08 --points 81 --json\n")
    su.add_argument("model", nargs="?", default="quartercar", help="a quarter car with bodies sprung and wheel and "
                    "tsdas spring and shock (default quartercar)")
    su.add_argument("--travel", type=float_range(1e-3, 0.2, "the travel"), default=0.1,
                    help="wheel travel each way, m (default 0.1)")
    su.add_argument("--points", type=int_range(3, 1001), default=41, help="points over the sweep (default 41)")
    su.add_argument("--plot", type=output_file, metavar="PNG", help="draw both engines' curves into this file")
    su.add_argument("--old-axes", action="store_true", help="turn the upper arms about x, as the models did before "
                    "joint axes could point anywhere (the gate must fail)")
    su.add_argument("--json", action="store_true", help="print one JSON object")
    su.set_defaults(func=cmd_suspension)
    cr = sub.add_parser("chrono-rig", formatter_class=_Formatter,
                        help="Chrono::Vehicle's own HMMWV suspension test rig beside mechdyn rig hmmwv --chrono (a "
                        "report)",
                        description="Run Chrono::Vehicle's HMMWV front suspension test rig from "
                        "hmmwv/suspensionTest/HMMWV_ST_front.json (its chassis fixed, axle 0 tested, the steering "
                        "included, ChSuspensionTestRigDataDriver on the data file) twice: as a platform rig with "
                        "TMeasy tires (ChSuspensionTestRigPlatform, Chrono's demo) and as a pushrod rig "
                        "(ChSuspensionTestRigPushrod, the spindles driven) on the file with its post columns negated, "
                        "which undoes the rig's inverted post sign; and `mechdyn rig hmmwv --chrono FILE` (the whole "
                        "vehicle free on four posts from its static equilibrium, rigid tire rods, linear springs) and "
                        "`mechdyn rig quartercar --chrono FILE` (the front-left corner; again on the file's right "
                        "column for the front right). Print per front wheel: the wheel travel (the wheel centre's "
                        "height relative to the chassis above its design value), the coil spring's force "
                        "(compression positive) against mechdyn's linear law at the same length, and the actuated "
                        "top's height, at the file's time 0 and at their extremes; draw travel and spring force over "
                        "time in one picture. A report, not a gate: the rigs differ by design "
                        "(docs/verification.md, \"Chrono::Vehicle's rig\"). Exit 0 once all four ran; 2 without "
                        "pychrono with Chrono::Vehicle or its data. Chrono's side is defined in "
                        "crosscheck/chrono/rig.py.",
                        epilog="examples:\n  crosscheck chrono-rig\n"
                        "  crosscheck chrono-rig --plot docs/img/chrono_rig_hmmwv.png\n"
                        "  crosscheck chrono-rig --inputs ../shared/data/chrono-vehicle/hmmwv/suspensionTest/"
                        "ST_inputs.dat --time 8 --json\n")
    cr.add_argument("--inputs", metavar="FILE", help="the rig data file (default Chrono's hmmwv/suspensionTest/"
                    "ST_inputs.dat under the vehicle data directory)")
    cr.add_argument("--time", type=positive_float, default=8.0, metavar="T",
                    help="s of the data file's time to run the rigs (default 8; Chrono runs 0.5 s more for its "
                    "ride-height ramp)")
    cr.add_argument("--dt", type=positive_float, default=1e-3, metavar="DT",
                    help="mechdyn's step, s (default 1e-3, as mechdyn rig; Chrono takes its demo's 1e-3)")
    cr.add_argument("--plot", type=output_file, metavar="PNG",
                    help="the picture (default docs/img/chrono_rig_hmmwv.png in this repository)")
    cr.add_argument("--json", action="store_true", help="print one JSON object of the figures")
    ct = sub.add_parser("chrono-tire", formatter_class=_Formatter,
                        help="mechdyn's TMeasy and Fiala tires against Chrono's own on Chrono's wheel test rig",
                        description="Run Chrono::Vehicle's ChWheelTestRig with Chrono's HMMWV TMeasy and Fiala "
                        "tires (models/data/hmmwv/tire) over a sweep of slip ratio, slip angle, camber, normal load "
                        "and four-point contact, sample the wheel's state and the tire's forces in steady operation, "
                        "and evaluate mechdyn's law at exactly those states (crosscheck/chrono/tire_rig.py). Prints "
                        "the worst error of Fx, Fy, Fz, Mx, My, Mz scaled by the load, gated at 1e-9 where the "
                        "equations are the same; the single-point camber states, whose Chrono contact frame is not a "
                        "rotation, are reported (docs/tires.md). The sweep is cached. Exit 1 if a gate fails, 2 "
                        "without pychrono with Chrono::Vehicle.",
                        epilog="examples:\n  crosscheck chrono-tire\n  crosscheck chrono-tire --tire fiala --quick\n"
                        "  crosscheck chrono-tire --plot-dir docs/img --json\n")
    ct.add_argument("--tire", choices=["tmeasy", "fiala", "both"], default="both")
    ct.add_argument("--quick", action="store_true", help="six rig cases per tire instead of the full sweep's 84")
    ct.add_argument("--plot-dir", metavar="DIR", type=output_dir, help="where the pictures go (default: here)")
    ct.add_argument("--json", action="store_true", help="print one JSON object of the figures")
    ct.set_defaults(func=cmd_chrono_tire)
    cd = sub.add_parser("chrono-drive", formatter_class=_Formatter,
                        help="hmmwv_road against Chrono::Vehicle's HMMWV on the turn, braking and lane change",
                        description="Drive Chrono::Vehicle's HMMWV (HMMWV_Vehicle.json, TMeasy tires, rigid "
                        "terrain, Chrono's path and speed controllers; crosscheck/chrono/hmmwv_drive.py) and "
                        "mechdyn's hmmwv_road through the same constant-radius turn (R 50 m at 5 to 12.5 m/s), the "
                        "same full braking from 20 m/s and the same ISO 3888-1 lane change at 15 m/s. Gates: each "
                        "one's yaw rate over v/R and lateral acceleration over v²/R against the other's (2 %), the "
                        "stopping distance at the same onset speed (5 %), the roll gradient (60 %: linear against "
                        "cubic springs). Prints the steady figures and both lane changes' real-time factors, and "
                        "draws one picture. Exit 1 if a gate fails, 2 without pychrono with Chrono::Vehicle.",
                        epilog="examples:\n  crosscheck chrono-drive\n  crosscheck chrono-drive --plot drive.png --json\n")
    cd.add_argument("--plot", type=output_file, metavar="PNG",
                    help="the picture (default docs/img/drive_vs_chrono.png in this repository)")
    cd.add_argument("--json", action="store_true", help="print one JSON object")
    cd.set_defaults(func=cmd_chrono_drive)
    cr.set_defaults(func=cmd_chrono_rig)
    rm = sub.add_parser("randmodel", formatter_class=_Formatter,
                        help="write a random mechanism with turned joint frames (the frames' checks run these)",
                        description="Write the .mech text of a random mechanism: each joint frame turned by a random "
                        "rpy or quat, each axis one of x, y, z, -x, -y, -z or an oblique vector, random masses, "
                        "CGs and inertias, a tsda between consecutive bodies' points, two rsda. --aligned writes "
                        "the same topology and masses with no rotation and every axis +z. Loops close at the "
                        "design pose (spherical from the base to a leaf, distance between leaves).",
                        epilog="examples:\n  crosscheck randmodel 3 --bodies 12 -o turned12.mech\n"
                        "  crosscheck bench --peers turned12.mech\n"
                        "  crosscheck randmodel 3 --bodies 12 --aligned -o aligned12.mech\n"
                        "  crosscheck randmodel 5 --floating --loops 2 | mechdyn info /dev/stdin\n")
    rm.add_argument("seed", type=seed, help="the random seed")
    rm.add_argument("--bodies", type=int_range(1, 500), default=6, help="bodies (default 6)")
    rm.add_argument("--floating", action="store_true", help="a floating root body (default: fixed to the base)")
    rm.add_argument("--loops", type=int_range(0, 50), default=0, help="loop closures (default 0)")
    rm.add_argument("--aligned", action="store_true", help="no turned frames, every axis +z")
    rm.add_argument("-o", "--output", type=output_file, help="write to this file (default: standard output)")
    rm.set_defaults(func=cmd_randmodel)
    st = sub.add_parser("selftest", help="plant known bugs and show the gates catch every one",
                        description="Copy the package to a scratch directory, plant each known bug in turn (E = R "
                        "instead of its transpose, the inertia's lower-left sign, a dropped loop-Jacobian entry, a "
                        "spring-damper sign, a first-order quaternion drift, a dropped gravity term), run the gates "
                        "that should catch it in a fresh interpreter, and report. A clean copy must pass first. "
                        "Exit status 0 only if every planted bug is caught.")
    st.set_defaults(func=cmd_selftest)
    r = sub.add_parser("report", help="draw the gate history as one self-contained HTML page",
                       formatter_class=_Formatter,
                       description="Write one HTML page (no network, no other file) from the gate history that every "
                       "regression run appends to: a grid of the latest run, models by gates, each cell coloured by "
                       "its margin log10(metric / threshold) on one scale, failures red, worst first; what changed "
                       "against the previous run on the same machine (and --since a commit): gates whose margin "
                       "moved by more than --factor, that started or stopped failing, appeared or went missing; and "
                       "a gate's trend over the runs on a click. The history is --history, else $MECHDYN_HISTORY, "
                       "else $XDG_DATA_HOME/mechdyn/history.sqlite (~/.local/share/mechdyn/history.sqlite). Exit "
                       "status 0 when the page was written, whatever the gates' verdicts.",
                       epilog="examples:\n"
                       "  crosscheck report                              # report.html from the default history\n"
                       "  crosscheck report --since 3d61df5              # also: what changed since that commit\n"
                       "  crosscheck report --factor 3 -o /tmp/gates.html  # list smaller moves\n"
                       "  crosscheck report --history /tmp/h.sqlite      # another history\n")
    r.add_argument("--history", metavar="DB", help="the history SQLite file (default: as above)")
    r.add_argument("--since", metavar="COMMIT", type=commit_prefix,
                   help="also compare the latest run with the last earlier run at this commit (a prefix of its id, "
                   "4 hex digits or more; on the latest run's machine if one ran there)")
    r.add_argument("--factor", type=move_factor, default=DEFAULT_FACTOR,
                   help="list a gate whose margin moved by more than this factor (default 10: a decade; reruns "
                   "repeat the metrics exactly, and round-off reordered by a code change moves them by less)")
    r.add_argument("-o", "--output", default="report.html", type=output_file, help="output file (default: report.html)")
    r.set_defaults(func=cmd_report)
    gd = sub.add_parser("golden", help="show or re-record models' golden results and speed figures",
                        description="The golden of a model (regression/golden/<model>.npz): 20 stored input "
                        "states with the generated qdd and observe outputs there, the flop count per call, and "
                        "the instructions per fwd_dyn call counted by callgrind with the toolchain they were "
                        "counted with. The regression gates compare against it and never write it. Without "
                        "--update, print what is stored (exit status 1 if a golden is missing).")
    gd.add_argument("model", nargs="*", help="model names in models/ or paths to .mech files")
    gd.add_argument("--all", action="store_true", help="every model in models/")
    gd.add_argument("--update", action="store_true", help="re-sample the states, run the generated code and "
                    "count flops and instructions, and write the golden (atomically)")
    gd.add_argument("--derivatives", action="store_true", help="the derivatives' golden instead "
                    "(regression/golden/derivatives/<model>.npz): fwd_dyn_derivs' blocks at the golden's first "
                    "states and their flop count; --all: every model")
    gd.set_defaults(func=cmd_golden)
    return p


def main(argv: list[str] | None = None) -> None:
    sys.exit(run(parser, argv))


if __name__ == "__main__":
    main()
