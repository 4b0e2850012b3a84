"""`mechdyn`: inspect, generate, run and benchmark mechanisms.

    mechdyn info <model>
    mechdyn gen <model> [-o file.c]
    mechdyn bench <model> [--sim DT [--scheme galpha|hht [--newton N] [--verlet-dt DT]]] [--json]
    mechdyn export <model> [--urdf out.urdf] [--mjcf out.xml]
    mechdyn sim <model> [--time T] [--dt DT] [--scheme verlet|euler|galpha|hht] [--trace out.csv] [--stride N]
    mechdyn plot out.csv [-o dir] [--at T1,T2,...] [--band NAME]
    mechdyn modes <model> [--held SLOTS] [--at equilibrium|q0] [--plot modes.png]

These use the product alone. The harness's commands moved to `crosscheck` (issue 17): `crosscheck bench`
(beside the dense reference, or --peers), `crosscheck selftest`, `crosscheck report` and `crosscheck golden`;
`mechdyn bench --peers`, `mechdyn selftest`, `mechdyn report` and `mechdyn golden` only say so (exit 2).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from mechdyn.sweepcli import add_sweep_parser
from mechdyn.cliutil import (EXIT_FAIL, EXIT_PASS, MAX_STEPS, InputError, Parser, add_model_argument, atomic_write,
                             float_range, int_range, model_of, output_dir, output_file, positive_float, run, seed,
                             sim_steps, slope_degrees, table)
from mechdyn.core.errors import clip
from mechdyn.core.kinematics import forward_kinematics
from mechdyn.core.model import BASE, Model
from mechdyn.core.spatial import R_to_rpy

if TYPE_CHECKING:
    import pandas as pd

_IMPORTED = time.perf_counter()  # the fallback origin of the whole command's wall time


def _body_name(model: Model, i: int) -> str:
    return "base" if i == BASE else model.bodies[i].name


def joint_frames(model: Model) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each body's joint frame rotation (a floating body's attitude) and joint axis, in the base frame at the design
    pose."""
    kin = forward_kinematics(model, model.q0())
    out = []
    for i, b in enumerate(model.bodies):
        R = kin.R[i] if b.joint == "floating" else b.rot if b.parent == BASE else kin.R[b.parent] @ b.rot
        out.append((R, R @ b.axis))
    return out


def describe(model: Model) -> str:
    """A human summary of the model: sizes, bodies, loops, elements and declared parameters."""
    from mechdyn.core.params import values as params_values

    lines = [
        f"model {model.name} ({model.path})",
        f"  bodies {model.nbody}  nq {model.nq}  nv {model.nv}  nc {model.nc}  "
        f"mobility {model.mobility}  nact {model.nact}",
        f"  gravity {' '.join(f'{g:g}' for g in model.gravity)}  stab {model.stab:g} s",
        "",
    ]
    rows = {"body": [], "parent": [], "joint": [], "axis (base)": [], "frame rpy (base, deg)": [], "q": [], "v": [],
            "mass": [], "fext": []}
    bands = {t.first_shoe: t for t in model.tracks if t.expanded}
    frames = joint_frames(model)

    def span(first: int, last: int, idx: tuple[int, ...], width: list[int]) -> str:
        hi = idx[last] + width[last] - 1
        return f"{idx[first]}..{hi}" if hi > idx[first] else str(idx[first])

    i = 0
    while i < model.nbody:  # a band's shoes fold into one row: they are one block of the file
        t = bands.get(i)
        last = i + t.shoes - 1 if t else i
        b = model.bodies[i]
        rows["body"].append(f"{b.name}..{model.bodies[last].name}" if t else b.name)
        rows["parent"].append(_body_name(model, b.parent))
        rows["joint"].append(f"floating + {t.shoes - 1} revolute y" if t else f"{b.joint} {b.axis_text}".strip())
        R, a = frames[i]
        rows["axis (base)"].append("" if t or b.joint == "floating" else " ".join(f"{x:+.4f}" for x in a))
        rows["frame rpy (base, deg)"].append(
            "" if t else " ".join(f"{math.degrees(x):+.2f}" for x in R_to_rpy(R)))
        rows["q"].append(span(i, last, model.qidx, [x.nq for x in model.bodies]))
        rows["v"].append(span(i, last, model.vidx, [x.nv for x in model.bodies]))
        rows["mass"].append(f"{t.shoes} x {b.mass:g}" if t else f"{b.mass:g}")
        rows["fext"].append("yes" if b.fext else "")
        i = last + 1
    lines.append(table([dict(zip(rows, r)) for r in zip(*rows.values())]))
    sections = [
        ("loops", [f"{lp.name}: {lp.joint} {_body_name(model, lp.pred)} -> {_body_name(model, lp.succ)} (nc {lp.nc})"
                   for lp in model.loops]),
        ("points of interest", [f"{p.name}: on {_body_name(model, p.body)} at {' '.join(f'{x:g}' for x in p.pos)}"
                                for p in model.pois]),
        ("tsda", [f"{e.name}: {model.pois[e.poi_a].name} -- {model.pois[e.poi_b].name}  k {e.k:g}  c {e.c:g}  l0 {e.l0:g}"
                  + (f"  act[{e.act}]" if e.act >= 0 else "") for e in model.tsdas]),
        ("rsda", [f"{e.name}: joint of {model.bodies[e.body].name}  k {e.k:g}  c {e.c:g}  q0 {e.q0:g}"
                  + (f"  act[{e.act}]" if e.act >= 0 else "") for e in model.rsdas]),
        ("driver", [f"{d.name}: joint of {model.bodies[d.body].name}, {d.motion.describe()}  f'' in act[{d.act}]"
                    for d in model.drivers]),
        ("imported joints (limits, damping and friction: reported, not simulated; docs/import.md)",
         [f"{b.name}: {b.info.describe()}" for b in model.bodies if b.info is not None]),
        ("tracks", [_band_line(model, t) for t in model.tracks]),
        ("ground", [f"terrain {model.ground.terrain} {' '.join(f'{x:g}' for x in model.ground.params)}"]
         if model.ground else []),
        ("parameters (read at run time, set without a compile; docs/params.md)",
         [f"{p.name}: {' '.join(f'{x:g}' for x in params_values(model)[p.offset:p.offset + p.size])}"
          for p in model.params]),
    ]
    for title, items in sections:
        if items:
            lines += ["", f"{title}:"] + [f"  {it}" for it in items]
    lines.append("")
    lines.append(f"total mass {sum(b.mass for b in model.bodies):.6g} kg")
    return "\n".join(lines)


def _band_line(model: Model, t) -> str:
    """One track band: its shoes, linkLen beside the declared pitch, and its rollers."""
    rollers = ", ".join(_body_name(model, r.body) + (" end" if r.end else "") + (" drive" if r.drive else "")
                        + (f" {r.teeth} teeth" if r.teeth else "") for r in t.rollers)
    if not t.expanded:
        return f"{t.name}: {t.shoes} shoes on {_body_name(model, t.root)}, {len(t.rollers)} rollers ({rollers})"
    return (f"{t.name}: {t.shoes} shoes {model.bodies[t.first_shoe].name}..{model.bodies[t.first_shoe + t.shoes - 1].name}"
            f" on {_body_name(model, t.root)}, linkLen {t.link_len:.6g} m (declared pitch {t.pitch:g} m), "
            f"belt {t.perimeter:.6g} m around {len(t.rollers)} rollers ({rollers})")


def cmd_info(args: argparse.Namespace) -> int:
    """Print what the model declares, then (unless --no-route) the solve the generator takes for it."""
    model = model_of(args)
    print(describe(model), flush=True)
    if model.tracks or model.ground is not None:
        from mechdyn.contact import Contact
        from mechdyn.core.errors import MechError

        try:
            lines = Contact(model).describe().splitlines()
        except MechError as e:
            lines = [f"not available: {e}"]
        print("".join(f"contact: {ln}\n" for ln in lines), end="", flush=True)
    if not args.no_route:
        from mechdyn.codegen.generate import route

        if sys.stderr.isatty():
            print("counting the operations of both solve routes ...", file=sys.stderr, flush=True)
        print(f"solve: {route(model).describe(model)}")
    return EXIT_PASS


def cmd_gen(args: argparse.Namespace) -> int:
    """Write the generated C for a model (with --derivatives, its derivatives' translation unit)."""
    from mechdyn.codegen.generate import derivatives_unit, generate

    model = model_of(args)
    gen = derivatives_unit(model) if args.derivatives else generate(model)
    if args.output == "-":
        sys.stdout.write(gen.source)
    else:
        atomic_write(Path(args.output), gen.source)
        solve = gen.how if args.derivatives else f"solve: {gen.route.describe(gen.model)}"
        print(f"{args.output}: {gen.model.name}, nq {gen.model.nq}, nv {gen.model.nv}, {gen.flops} flops per "
              f"{'fwd_dyn_derivs' if args.derivatives else 'fwd_dyn'} call; {solve}")
    return EXIT_PASS


def moved(old: str, new: str) -> InputError:
    """The one line a harness command that left the product's CLI prints (exit 2), naming its new command."""
    return InputError(f"'mechdyn {old}' moved to the verification harness: run 'crosscheck {new}'")


REFRESH_HELP = ("galpha/hht on a model with contact: rebuild the iteration matrix (by differences) at least every K "
                "steps; 1 builds it fresh every step (default: when Newton slows, or every 50 steps with --newton)")
ACCURACY_STEP = 0.0  # `bench --sim` given without DT (no DT can be 0): the contact step chosen by accuracy


def cmd_bench(args: argparse.Namespace) -> int:
    """Time the generated forward dynamics alone (fwd_dyn and fwd_dyn_batch), or with --sim the stepping loop: a
    tree model's Verlet stepping, a model with contact its contact stepping loop."""
    from mechdyn.bench import bench, bench_contact_implicit, bench_contact_sim, bench_implicit, bench_sim
    from mechdyn.dynamics import Dynamics

    if args.contact and args.sim is not None:
        raise InputError("bench: --contact times the contact producers beside fwd_dyn and does not combine with "
                         "--sim; run them one at a time")
    if args.peers:  # before any work: the side-by-side benchmark is the harness's
        given = [args.model] + (["--repeats", str(args.repeats)] if args.repeats != 7 else []) + ["--json"] * args.json
        raise moved("bench --peers", shlex.join(["bench", "--peers", *given]))
    model = model_of(args)
    contact = bool(model.tracks) or model.ground is not None
    if args.scheme != "verlet" and args.sim in (None, ACCURACY_STEP):
        raise InputError("bench: --scheme times the implicit stepping at a step you choose: give --sim DT (with "
                         "contact, Verlet is timed beside it at the accuracy step)")
    if args.verlet_dt is not None and (args.scheme == "verlet" or not contact):
        raise InputError("bench: --verlet-dt sets Verlet's step beside an implicit scheme on a model with contact: "
                         "add --scheme galpha (or hht) and a model with a band or a ground")
    if args.newton is not None and args.scheme == "verlet":
        raise InputError("bench: --newton N is the implicit schemes' real-time mode: add --scheme galpha or hht")
    if args.refresh is not None and (args.scheme == "verlet" or not contact):
        raise InputError("bench: --refresh K sets how often the contact loop's implicit step rebuilds its matrix: "
                         "add --scheme galpha (or hht) and a model with a band or a ground")
    if args.sim == ACCURACY_STEP and not contact:
        raise InputError(f"bench: --sim without DT takes the contact step chosen by accuracy, and '{model.name}' "
                         "has no band and no ground; give --sim DT")
    dyn = Dynamics(model, progress=True)
    from mechdyn.sim.implicit import NewtonFailed
    from mechdyn.sim.run import SimulationDiverged

    try:
        if args.sim is not None and contact and args.scheme != "verlet":
            from mechdyn.sim.implicit import Implicit

            opts = Implicit(iterations=args.newton, refresh=args.refresh).checked()
            res = bench_contact_implicit(dyn, args.sim, args.scheme, opts,
                                         verlet_dt=args.verlet_dt, repeats=args.repeats)
        elif args.sim is not None and model.tires and not model.tracks:
            from mechdyn.bench import bench_vehicle

            res = bench_vehicle(dyn, dt=None if args.sim == ACCURACY_STEP else args.sim, repeats=args.repeats)
        elif args.sim is not None and contact:
            res = bench_contact_sim(dyn, None if args.sim == ACCURACY_STEP else args.sim, repeats=args.repeats)
        elif args.sim is not None and args.scheme != "verlet":
            from mechdyn.sim.implicit import Implicit

            res = bench_implicit(dyn, args.sim, args.scheme, Implicit(iterations=args.newton).checked(),
                                 repeats=args.repeats)
        elif args.sim is not None:
            res = bench_sim(dyn, args.sim)
        else:
            res = bench(dyn, repeats=args.repeats)
    except (SimulationDiverged, NewtonFailed) as e:
        print(f"bench: {e}; a smaller --sim DT may keep it finite", file=sys.stderr)
        return EXIT_FAIL
    if not args.contact:
        print(json.dumps(res.as_dict(), indent=2) if args.json else "\n".join(res.lines()))
        return EXIT_PASS
    from mechdyn.contact import Contact
    from mechdyn.contact.bench import bench_contact

    con = bench_contact(Contact(dyn.model), repeats=args.repeats)
    if args.json:
        print(json.dumps(res.as_dict() | {"contact": con.as_dict()}, indent=2))
    else:
        print("\n".join([*res.lines(), *con.lines(res.ns_per_call)]))
    return EXIT_PASS


def cmd_export(args: argparse.Namespace) -> int:
    """Write the model as URDF and/or MJCF, and say what each format could not express."""
    from mechdyn.export import export_mjcf, export_urdf

    if not (args.urdf or args.mjcf):
        raise InputError("nothing to write: give --urdf FILE and/or --mjcf FILE")
    model = model_of(args)
    for path, export in ((args.urdf, export_urdf), (args.mjcf, export_mjcf)):
        if path:
            ex = export(model)
            atomic_write(Path(path), ex.text)
            print(ex.message(path))
    return EXIT_PASS


def cmd_import(args: argparse.Namespace) -> int:
    """Write a URDF or MJCF file as a .mech file (its sources named in comments) and summarize the model."""
    from mechdyn.imports import import_text, is_foreign

    if not is_foreign(args.model):
        raise InputError(f"{clip(args.model, 200)}: expected a .urdf, or an MJCF .xml or .mjcf file")
    if not Path(args.model).is_file():
        raise InputError(f"{clip(args.model, 200)}: no such file")
    model, text = import_text(args.model, args.floating, args.mimic)
    atomic_write(Path(args.output), text)
    print(f"wrote {args.output}: {model.nbody} bodies, nq {model.nq}, nv {model.nv}, {len(model.pois)} points "
          f"(the merged links' frames), total mass {sum(b.mass for b in model.bodies):.6g} kg")
    return EXIT_PASS


def _process_seconds() -> float:
    """Wall seconds since this process started (from /proc on Linux), else since this module was imported."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime: ticks after boot
        return time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return time.perf_counter() - _IMPORTED


def after_settle(args: argparse.Namespace, dyn, settled, implicit=None) -> tuple[list, list[str], list]:
    """The runs that continue from a settle (settled.state) at its step: their gates, notes and runs (each a
    ContactRun), printed after the settle's. The slope hold on --slope DEG (default 15, 0: none) with anchored
    friction and the regularized control (or the one --fric names), for --hold-time s; with --drive, the flat
    coast and the climb up --slope (or 15°). The hold steps with the settle's scheme (`implicit`: its settings)."""
    from mechdyn.sim.drive import climb, coast
    from mechdyn.sim.slope import hold

    q, qd = settled.state
    dt = settled.step.dt
    gates, notes, runs = [], [], []
    if dyn.model.tires and not dyn.model.tracks:  # a car on tires: its statics, not the tracks' hold and drive
        from mechdyn.sim.manoeuvres import statics
        from mechdyn.sim.vehicle import Vehicle

        gates += list(statics(Vehicle(dyn, dt=dt)).gates)
        notes.append("on tires: the statics above (braked, settled again); the slope hold and --drive are the "
                     "tracked vehicles'; `--manoeuvre` drives this one (docs/manoeuvres.md)")
        return gates, notes, runs
    if args.slope:
        for fric in [args.fric] if args.fric else ["anchor", "reg"]:
            h = hold(dyn, q, qd, args.slope, fric, T=args.hold_time, dt=dt, progress=True, scheme=args.scheme,
                     implicit=implicit)
            gates += h.gates
            runs += [h.run, h.tail]
            notes.append(f"hold, {fric} friction, on {args.slope:g}°: {_simulated(h.run):.3g} s stepped in "
                         f"{h.run.seconds:.3g} s (real-time factor {_simulated(h.run) / h.run.seconds:.3g}); the "
                         f"energy budget's worst single-step rise {h.rise:.3g} J (bound {h.rise_bound:.3g} J, "
                         "reported)")
            if args.trace and fric == (args.fric or "anchor"):
                from mechdyn.sim.contact import ContactSim
                from mechdyn.sim.trace import write_contact_trace

                path = Path(args.trace).with_name(Path(args.trace).stem + "_hold.csv")
                write_contact_trace(path, ContactSim(dyn, model=h.tilted.model), h.run,
                                    meta={"run": f"hold on {args.slope:g} deg, {fric} friction"})
                notes.append(f"trace {path}")
    if args.drive:
        c = coast(dyn, q, qd, dt=dt)
        up = climb(dyn, q, qd, args.slope or 15.0, dt=dt)
        gates += [*c.gates, *up.gates]
        runs += [c.run, *up.runs.values()]
        notes.append(f"drive: coasting at {c.speed:.3g} m/s after {c.torque:.4g} N·m per sprocket; up "
                     f"{args.slope or 15.0:g}° T0 = {up.torque:.4g} N·m per sprocket, the ground's force up the slope "
                     f"{up.tractive:.5g} N (M·g·sin θ = n·T0/R holds it; reported)")
    return gates, notes, runs


def _simulated(run) -> float:
    """The simulated seconds a run stepped."""
    return float(run.t[-1] - run.t[0])


def cmd_sim_contact(args: argparse.Namespace, model: Model, t_start: float, startup: float, implicit=None) -> int:
    """Settle a model with contact (a band or a ground) from its design pose at rest and print its gates; exit 1
    if one fails or the state went non-finite (or Newton failed). t_start, startup: as cmd_sim measures them,
    before loading; `implicit`: the implicit scheme's settings."""
    from mechdyn.dynamics import Dynamics
    from mechdyn.sim.gate import all_passed
    from mechdyn.sim.contact import SAMPLES
    from mechdyn.sim.implicit import NewtonFailed
    from mechdyn.sim.run import SimulationDiverged
    from mechdyn.sim.settle import settle

    T = 4.0 if args.time is None else args.time
    if args.seed is not None:
        raise InputError("sim: --seed is not available for a model with contact: the settle starts from the design "
                         "pose at rest")
    if args.slope and not args.hold_time > 2.0:
        raise InputError(f"sim: the hold's gate reads its last 2 s; --hold-time must exceed 2, got {args.hold_time:g}")
    dyn = Dynamics(model, progress=True)
    t_load = time.perf_counter()
    try:
        res = settle(dyn, T, dt=args.dt, samples=args.samples or SAMPLES, stride=args.stride, scheme=args.scheme,
                     progress=True, implicit=implicit)
    except NewtonFailed as e:
        print(f"sim: {e}", file=sys.stderr)
        return EXIT_FAIL
    except SimulationDiverged as e:
        print(f"sim: {e}; a smaller --dt (or more --samples) may keep it finite", file=sys.stderr)
        return EXIT_FAIL
    except ValueError as e:  # the settle's own argument checks (T against its windows, a stride too long)
        raise InputError(f"sim: {model.name}: {e}") from None
    nsteps = round(res.run.t[-1] / res.step.dt)
    origin = "--dt" if args.dt is not None else "the accuracy step"
    steps = (f"{args.scheme} adaptive steps, {nsteps} outputs" if implicit is not None and implicit.adaptive
             else f"{nsteps} {args.scheme} steps")
    print(f"sim: {model.name}: settle of {res.run.t[-1]:.4g} s from the design pose at rest, {steps} at {origin}: "
          f"{res.step.describe()}")
    for g in res.gates:
        print(g.line())
    for n in res.notes:
        print(f"sim: {n}")
    if res.run.newton is not None:
        print(newton_line(res.run.newton, implicit) + " (the settle)")
    if args.trace:
        from mechdyn.sim.trace import trace_stride, write_contact_trace

        write_contact_trace(Path(args.trace), res.sim, res.every(trace_stride(nsteps)), res.step)
        print(f"sim: trace {args.trace}")
    try:
        more, notes, runs = after_settle(args, dyn, res, implicit)
    except NewtonFailed as e:
        print(f"sim: after the settle: {e}", file=sys.stderr)
        return EXIT_FAIL
    except SimulationDiverged as e:
        print(f"sim: after the settle: {e}; a smaller --dt (or more --samples) may keep it finite", file=sys.stderr)
        return EXIT_FAIL
    for g in more:
        print(g.line())
    for n in notes:
        print(f"sim: {n}")
    gates = res.gates + more
    t_end = time.perf_counter()
    settle_s, simulated = res.stepping, float(res.run.t[-1])
    stepping = settle_s + sum(r.seconds for r in runs)
    simulated_all = simulated + sum(_simulated(r) for r in runs)
    wall = startup + (t_end - t_start)
    print(f"sim: stepping: the settle {settle_s:.3g} s ({nsteps / settle_s:.3g} steps/s, real-time factor "
          f"{simulated / settle_s:.3g})" + (f", all {simulated_all:.4g} s simulated {stepping:.3g} s (real-time "
                                             f"factor {simulated_all / stepping:.3g})" if runs else "")
          + f"; {wall:.3g} s wall in all (real-time factor {simulated_all / wall:.3g}): start-up {startup:.3g} s, "
          f"load/compile {t_load - t_start:.3g} s, stepping {stepping:.3g} s, recording, gates"
          f"{' and traces' if args.trace else ''} {t_end - t_load - stepping:.3g} s")
    ok = all_passed(gates)
    print(f"sim: {model.name}: {'all' if ok else 'not all'} {len(gates)} gates passed")
    return EXIT_PASS if ok else EXIT_FAIL


MANOEUVRES = ("brake", "turn", "lane", "all")


def cmd_manoeuvre(args: argparse.Namespace, model: Model) -> int:
    """Settle a model on its tires and run --manoeuvre: straight-line braking, the constant-radius turn, ISO
    3888-1's lane change, or all three; print each gate and draw each picture; exit 1 if a gate fails."""
    from mechdyn.dynamics import Dynamics
    from mechdyn.sim import manoeuvres as mv
    from mechdyn.sim.gate import all_passed
    from mechdyn.sim.vehicle import Vehicle, circle, iso3888
    from mechdyn.sim.vehicleplot import manoeuvre_figure, understeer_figure

    dyn = Dynamics(model, progress=True)
    out = Path(args.plot_dir or ".")
    which = MANOEUVRES[:-1] if args.manoeuvre == "all" else (args.manoeuvre,)
    speeds = {"brake": 1.0, "turn": 4.0, "lane": args.speed or 15.0}  # each run's lowest rolling speed
    gates, names = [], None
    for w in which:
        car = Vehicle(dyn, speed=speeds[w], dt=args.dt)
        names = [model.bodies[b].name for b in car.layout.wheels]
        st = mv.statics(car)
        if w == which[0]:
            gates += list(st.gates)
        start = time.perf_counter()
        if w == "brake":
            r = mv.straight_brake(car, speed=args.speed or 20.0)
            print(f"sim: {model.name}: brake from {r.speed:.3g} m/s to rest in {r.distance:.4g} m, {r.time:.3g} s "
                  f"(mean deceleration {r.speed / r.time:.3g} m/s²), dt {car.dt:.3g} s")
            pic = manoeuvre_figure(r.log, f"{model.name}: accelerate, cruise, brake to rest", out / f"{model.name}_brake.png", names)
        elif w == "turn":
            r = mv.constant_radius(car)
            for p in r.points:
                print(f"sim: {model.name}: R {r.radius:g} m at {p.speed:.3g} m/s: yaw rate {p.yaw_rate:.4g} rad/s, "
                      f"a_y {p.ay:.4g} m/s², roll {math.degrees(p.roll):.3g} deg, net steer "
                      f"{math.degrees(p.delta):.4g} deg")
            log = r.logs[-1]
            pic = manoeuvre_figure(log, f"{model.name}: constant radius {r.radius:g} m at {r.points[-1].speed:.3g} m/s",
                                   out / f"{model.name}_turn.png", names,
                                   ref=circle(r.radius, float(log["x"][0]), float(log["y"][0])))
            print(f"sim: picture {understeer_figure(r, out / f'{model.name}_understeer.png')}")
        else:
            r = mv.lane_change(car, speed=args.speed or 15.0)
            if r.log is not None:
                print(f"sim: {model.name}: ISO 3888-1 lane change at {r.speed:g} m/s: the cg's largest distance from "
                      f"the centreline {r.deviation:.3g} m; {r.log['t'][-1] - r.log['t'][0]:.3g} s stepped in "
                      f"{r.seconds:.3g} s (real-time factor {(r.log['t'][-1] - r.log['t'][0]) / r.seconds:.3g}, the "
                      f"stepping), dt {car.dt:.3g} s")
                pic = manoeuvre_figure(r.log, f"{model.name}: ISO 3888-1 double lane change at {r.speed:g} m/s",
                                       out / f"{model.name}_lane.png", names, ref=iso3888(r.lanes),
                                       cones=list(r.lanes))
            else:
                pic = None
        gates += list(r.gates)
        if pic:
            print(f"sim: picture {pic} ({time.perf_counter() - start:.3g} s)")
    for g in gates:
        print(g.line())
    ok = all_passed(gates)
    print(f"sim: {model.name}: {'all' if ok else 'not all'} {len(gates)} gates passed")
    return EXIT_PASS if ok else EXIT_FAIL


def cmd_sim(args: argparse.Namespace) -> int:
    """Simulate a model and summarize (optionally writing a trace); exit 1 if the state went non-finite. A model
    with contact is settled instead (cmd_sim_contact)."""
    import numpy as np

    from mechdyn.dynamics import Dynamics
    from mechdyn.sim.energy import energy_balance, mechanics
    from mechdyn.sim.energy import module as mechanics_module
    from mechdyn.sim.implicit import NewtonFailed
    from mechdyn.sim.run import SimulationDiverged, initial_state, simulate

    if args.trace:  # the CSV writer's imports (pyarrow) belong to the start-up, as every other import does
        from mechdyn.sim.trace import write_trace

    t_start = time.perf_counter()
    startup = _process_seconds()  # interpreter, imports and argument parsing, before this command's own work
    model = model_of(args)
    implicit = _implicit_options(args)
    if args.manoeuvre:
        if not model.tires:
            raise InputError(f"sim: --manoeuvre drives a model on tires; '{model.name}' has none")
        return cmd_manoeuvre(args, model)
    if model.tracks or model.ground is not None:
        if implicit is not None and args.drive:
            raise InputError(f"sim: --scheme {args.scheme} runs a model with contact through the settle and the "
                             "hold: --drive steps with verlet or euler")
        return cmd_sim_contact(args, model, t_start, startup, implicit)
    if args.samples is not None:
        raise InputError("sim: --samples chooses the step of a model with contact; give a tree model's step by --dt")
    args.time = 1.0 if args.time is None else args.time
    args.dt = 1e-3 if args.dt is None else args.dt
    if args.dt > args.time:
        raise InputError(f"expected --dt <= --time, got --time {args.time:g} --dt {args.dt:g}")
    nsteps = sim_steps(args.time, args.dt, "--time", "--dt")
    if args.stride is not None and args.stride > nsteps:
        raise InputError(f"--stride {args.stride} is more than the run's {nsteps} steps: nothing but the start "
                         "would be recorded, and the drift measured over no step")
    dyn = Dynamics(model, progress=True)
    if args.seed is None:
        q0, qd0 = model.q0(), np.zeros(model.nv)
    else:
        q0, qd0 = initial_state(dyn, args.seed)
    stride = args.stride or max(1, nsteps // 2000)  # about 2000 rows, whatever dt is
    mechanics_module()  # the compiled modules are loaded with the model's, not in the stepping or post-processing
    if implicit is not None:  # the stepper's and the iteration matrix's modules built here, not in the stepping time
        from mechdyn.sim.implicit import module

        module()
        dyn.derivatives_lib
    t_load = time.perf_counter()
    try:
        tr = simulate(dyn, q0, qd0, args.time, args.dt, args.scheme, stride=stride, progress=True, implicit=implicit)
    except SimulationDiverged as e:
        print(f"sim: {e}; nothing written (a smaller --dt may keep it finite)", file=sys.stderr)
        return EXIT_FAIL
    except NewtonFailed as e:
        print(f"sim: {e}; nothing written", file=sys.stderr)
        return EXIT_FAIL
    t_step = time.perf_counter()
    mech = mechanics(model, tr.q, tr.qd)
    with np.errstate(over="ignore", invalid="ignore"):  # a non-finite balance is reported below, once
        E, B = energy_balance(model, tr.t, tr.q, tr.qd, tr.dissipated, mech=mech)
        if tr.work_driver is not None:  # a driven model: what the drivers put in is not a drift
            B = B - tr.work_driver
    bad = np.flatnonzero(~np.isfinite(B))
    if bad.size:
        k = int(bad[0]) * stride
        print(f"sim: {model.name}: the energy is not finite at step {k} (t = {k * args.dt:.6g} s), though the state "
              "is (a mass, inertia or stiffness too large for double precision?); nothing written", file=sys.stderr)
        return EXIT_FAIL
    closure = np.abs(mech.closure).max(axis=1) if model.loops else None
    if args.trace:
        write_trace(Path(args.trace), model, tr.t, tr.q, tr.qd, E, tr.dissipated, closure,
                    {"scheme": args.scheme, "dt": f"{args.dt:g}", "stride": str(stride), "steps": str(nsteps)})
    t_end = time.perf_counter()
    load, stepping, post = t_load - t_start, t_step - t_load, t_end - t_step
    drift = float(np.max(np.abs(B - B[0])))
    extra = f", max closure error {closure.max():.2e}" if closure is not None else ""
    steps = (f"{args.scheme} adaptive steps, {nsteps} outputs every {args.dt:g} s" if implicit and implicit.adaptive
             else f"{nsteps} {args.scheme} steps of {args.dt:g} s")
    print(f"sim: {model.name}: {steps} ({nsteps * args.dt:.6g} s), energy drift {drift:.3e} J "
          f"(E + dissipated work - E(0), over {len(tr.t)} rows){extra}" + (f"; trace {args.trace}" if args.trace else ""))
    taken = tr.newton.steps if tr.newton is not None else nsteps
    print(f"sim: stepping {stepping:.3g} s ({taken / stepping:.3g} steps/s, real-time factor "
          f"{nsteps * args.dt / stepping:.3g}); {startup + (t_end - t_start):.3g} s wall in all: start-up {startup:.3g} s, "
          f"load/compile {load:.3g} s, stepping {stepping:.3g} s, post-processing (energy"
          f"{', closure' if closure is not None else ''}{', trace' if args.trace else ''}) {post:.3g} s")
    if tr.newton is not None:
        print(newton_line(tr.newton, implicit))
    return EXIT_PASS


def newton_line(n, implicit) -> str:
    """sim's summary of an implicit run's NewtonStats n, run with settings `implicit`."""
    steps = f"{n.steps} steps from {n.h_min:.3g} to {n.h_max:.3g} s, {n.rejected} rejected; " if implicit.adaptive else ""
    mode = (f"exactly {implicit.iterations} a step (the real-time mode), the last correction at most "
            f"{n.last_change:.2e} (velocity)" if implicit.iterations else f"{n.per_step:.3g} a step, at most {n.most}")
    matrices = f"; {n.matrices} iteration matrices built by differences" if n.matrices else ""
    return f"sim: Newton: {steps}{n.iterations} corrections, {mode}{matrices}"


def _implicit_options(args: argparse.Namespace):
    """The implicit schemes' settings from sim's flags (None for an explicit scheme); flags that belong to an
    implicit scheme given with an explicit one, or to the other implicit scheme, are refused."""
    from mechdyn.sim.implicit import Implicit

    flags = ("--rho-inf", "--alpha", "--newton", "--rtol", "--atol", "--refresh")
    given = {f: getattr(args, f.strip("-").replace("-", "_")) for f in flags}
    given = {f: v for f, v in given.items() if v is not None}
    if args.adaptive:
        given["--adaptive"] = True
    if args.scheme not in ("galpha", "hht"):
        if given:
            raise InputError(f"sim: {', '.join(given)} belong to the implicit schemes; add --scheme galpha (or hht)")
        return None
    wrong = "--alpha" if args.scheme == "galpha" else "--rho-inf"
    if wrong in given:
        raise InputError(f"sim: {wrong} is not a setting of --scheme {args.scheme} (galpha takes --rho-inf, hht --alpha)")
    if args.newton is not None and args.adaptive:
        raise InputError("sim: --newton N fixes the corrections of a fixed step; --adaptive needs Newton to converge")
    for tol in ("--rtol", "--atol"):
        if tol in given and not args.adaptive:
            raise InputError(f"sim: {tol} is the adaptive step's tolerance: add --adaptive")
    opts = Implicit(iterations=args.newton, adaptive=args.adaptive)
    for flag, key in (("--rho-inf", "rho_inf"), ("--alpha", "alpha"), ("--rtol", "rtol"), ("--atol", "atol"),
                      ("--refresh", "refresh")):
        if flag in given:
            opts = replace(opts, **{key: given[flag]})
    return opts.checked()


def _first_non_number(column: pd.Series) -> str:
    import pandas as pd

    return column[pd.to_numeric(column, errors="coerce").isna() & column.notna()].iloc[0]


def _times(text: str) -> list[float]:
    """argparse type of plot --at: comma-separated finite times in s."""
    out = []
    for part in text.split(","):
        try:
            x = float(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected times in s separated by commas (0,4), got {part!r}") from None
        if not math.isfinite(x):
            raise argparse.ArgumentTypeError(f"expected finite times in s, got {part!r}")
        out.append(x)
    return out


def cmd_plot(args: argparse.Namespace) -> int:
    """Plot a trace file's time histories (and a contact trace's side view)."""
    import pandas as pd

    from mechdyn.sim.plot import PlotRequestError, plot_trace
    from mechdyn.sim.trace import read_trace

    path = Path(args.trace)
    if not path.is_file():
        raise InputError(f"{path}: no such trace file; expected the CSV that 'mechdyn sim --trace' wrote")
    try:
        tr = read_trace(path)
    except ValueError as e:  # pandas' tokenizer errors do not say which file
        raise InputError(str(e) if str(e).startswith(str(path)) else f"{path}: not a mechdyn trace: {e}") from None
    text = [c for c in tr.data.columns if not pd.api.types.is_numeric_dtype(tr.data[c])]
    why = ("no rows" if tr.data.empty else "no t column" if "t" not in tr.data.columns
           else f"column {text[0]} holds {_first_non_number(tr.data[text[0]])!r}" if text else "")
    if why:  # plotting would fail deep in matplotlib, or draw text as categories
        raise InputError(f"{path}: not a mechdyn trace: {why}; expected the CSV that 'mechdyn sim --trace' wrote")
    try:
        files = plot_trace(tr, Path(args.output) if args.output else path.parent, args.at, args.band)
    except PlotRequestError as e:
        raise InputError(f"{path}: {e}") from None
    except ValueError as e:
        raise InputError(f"{path}: not a mechdyn trace: {e}; expected the CSV that 'mechdyn sim --trace' wrote") from None
    for f in files:
        print(f)
    return EXIT_PASS


def _held(text: str) -> list[str]:
    """--held: comma-separated velocity slots and/or body names."""
    items = [t.strip() for t in text.split(",")]
    if not all(items):
        raise argparse.ArgumentTypeError(f"expected comma-separated velocity slots or body names, got {text!r}")
    return items


def cmd_modes(args: argparse.Namespace) -> int:
    """Static equilibrium (or q0), the linearized system there and its modes as a table, a note when some are
    unstable; --plot draws them (skipped with a note when there is none). Exit 1 if no equilibrium is found, the
    modes do not split one per free coordinate, or the plot's displaced poses do not close their loops."""
    import numpy as np

    from mechdyn.dynamics import Dynamics
    from mechdyn.linear import EquilibriumError, coordinate_names, equilibrium, held_slots, linearize, modes

    model = model_of(args)
    if model.tracks or model.ground is not None:
        raise InputError(f"modes: {model.name} has contact (a band or a ground), which has no derivatives here")
    if args.frf:
        from mechdyn.sim.rig import RigError, layout

        try:
            layout(model)
        except RigError as e:
            raise InputError(f"modes --frf: {e}") from None
        if args.at != "equilibrium":
            raise InputError("modes --frf: the frequency response is taken about the static equilibrium; drop --at")
    try:
        held = held_slots(model, args.held or ())
    except ValueError as e:
        raise InputError(f"modes: {e}") from None
    dyn = Dynamics(model, progress=True)
    names = coordinate_names(model)
    q0 = model.q0()
    if args.at == "equilibrium":
        try:
            q = equilibrium(dyn, q0, held=held)
        except EquilibriumError as e:
            print(f"mechdyn modes: {e}", file=sys.stderr)
            return EXIT_FAIL
    else:
        q = q0
    lin = linearize(dyn, q, np.zeros(model.nv), held=held)
    try:
        md = modes(lin)
    except ValueError as e:  # the eigenvalues do not make one mode per free coordinate
        print(f"mechdyn modes: {e}", file=sys.stderr)
        return EXIT_FAIL
    moved = np.abs(lin.q - q0)
    worst = int(np.argmax(np.abs(lin.qdd)))
    print(f"model {model.name}: nv {model.nv}, {model.nc} closure rows, "
          + (f"held {', '.join(names[h] for h in held)}, " if held else "")
          + (f"driven {', '.join(d.name for d in model.drivers)}, " if model.drivers else "")
          + f"free coordinates {lin.M.shape[0]}")
    print(f"{'equilibrium' if args.at == 'equilibrium' else 'at q0'}: max |qdd| {np.max(np.abs(lin.qdd)):.3e}"
          f" (slot {worst} {names[worst]}); q moved from q0 by at most {np.max(moved, initial=0.0):.4g}")
    rows = []
    for i in range(len(md)):
        shape = md.shapes[i]
        top = np.argsort(-np.abs(shape))[:3]
        dominant = ", ".join(f"{names[j]} {shape[j]:+.2f}" for j in top if abs(shape[j]) >= 0.1)
        kind = "rigid" if md.rigid[i] else "unstable" if md.unstable[i] else "overdamped" if md.damping[i] > 1 else ""
        rows.append({"mode": i + 1, "f [Hz]": "-" if md.rigid[i] else f"{md.frequency[i]:.6g}",
                     "zeta": "-" if md.rigid[i] else f"{md.damping[i]:.4g}" if abs(md.damping[i]) >= 1e-9 else "0", "kind": kind,
                     "dominant coordinates": dominant})
    if rows:
        print(table(rows))
    else:
        print("no free coordinates: nothing moves")
    unstable = int(np.count_nonzero(md.unstable))
    if unstable:
        where = "equilibrium" if args.at == "equilibrium" else "q"
        print(f"note: {unstable} of {len(md)} modes unstable: this {where} is a saddle of the potential, "
              "not a stable rest pose")
    if args.frf:
        _frf(dyn, q, md, args)
    if args.plot and not len(md):
        print(f"note: no plot written ({args.plot}): no mode to draw")
    elif args.plot:
        from mechdyn.linear.plot import plot_modes

        try:
            print(plot_modes(dyn, md, Path(args.plot)))
        except EquilibriumError as e:  # a shape's displaced pose whose loops do not close
            print(f"mechdyn modes: plot: {e}", file=sys.stderr)
            return EXIT_FAIL
    return EXIT_PASS


RIG_TIME = {"sine": 10.0, "road": 20.0}  # s of a rig run when --time is not given (a sweep: its time and 1 s more)


def _rig_input(args: argparse.Namespace):
    """The rig input the options ask for (exactly one of --sine, --sweep, --bump, --road, --chrono)."""
    from mechdyn.sim.rig import Input

    given = [k for k in ("sine", "sweep", "bump", "road", "chrono") if getattr(args, k) is not None]
    if len(given) != 1:
        raise InputError("rig: expected exactly one input: --sine, --sweep, --bump, --road or --chrono"
                         + (f" (got {', '.join('--' + g for g in given)})" if given else ""))
    kind = given[0]
    if kind in ("bump", "road") and not (args.speed is not None and args.speed > 0):
        raise InputError(f"rig: --{kind} needs --speed V > 0 (m/s), got {args.speed}")
    common = {"blend": args.blend, "mode": args.mode}
    if kind == "sine":
        a, f = args.sine
        return Input("sine", amplitude=a, f0=f, **common)
    if kind == "sweep":
        a, f0, f1, d = args.sweep
        return Input("sweep", amplitude=a, f0=f0, f1=f1, sweep_time=d, log=args.log, **common)
    if kind == "bump":
        h, length = args.bump
        return Input("bump", height=h, length=length, speed=args.speed, at=args.at, **common)
    if kind == "road":
        return Input("road", road_class=args.road, speed=args.speed, seed=args.seed, **common)
    return Input("chrono", path=args.chrono, **common)


RIG_DT = 1e-3  # s: the rig's default step


def add_rig_inputs(p: argparse.ArgumentParser, dt: float | None = RIG_DT) -> None:
    """The rig's input options (_rig_input reads them), its duration and its step (default `dt`): `mechdyn rig`'s
    and `mechdyn sweep --rig`'s."""
    p.add_argument("--sine", nargs=2, type=float, metavar=("A", "F"), help="a sine of amplitude A m at F Hz")
    p.add_argument("--sweep", nargs=4, type=float, metavar=("A", "F0", "F1", "T"),
                   help="a sine of amplitude A m swept from F0 to F1 Hz over T s (linear; --log: geometric)")
    p.add_argument("--log", action="store_true", help="sweep the frequency geometrically")
    p.add_argument("--bump", nargs=2, type=float, metavar=("H", "L"), help="a half-cosine bump H m high, L m long")
    p.add_argument("--road", metavar="CLASS", help="an ISO 8608 road of class A (smoothest) to H")
    p.add_argument("--chrono", metavar="FILE", help="Project Chrono's suspension test rig data file")
    p.add_argument("--speed", type=float, metavar="V", help="m/s over the bump or road")
    p.add_argument("--seed", type=int, default=0, help="the road's random seed (default 0)")
    p.add_argument("--at", type=float, default=1.0, metavar="T", help="s when the front wheels reach the bump (1)")
    p.add_argument("--mode", choices=["heave", "pitch", "roll", "warp"], default="heave",
                   help="how a sine or sweep phases the posts (default heave: all together)")
    p.add_argument("--blend", type=float, default=0.5, metavar="T", help="s over which the input enters from "
                   "rest (default 0.5)")
    p.add_argument("--time", type=float, metavar="T", help="s to run (default: sine 10, sweep its time + 1, bump "
                   "past the rear wheels + 3, road 20, chrono 10)")
    p.add_argument("--dt", type=float, default=dt, help=f"the step, s (default {RIG_DT:g}"
                   + ("; a sweep's --sim: the contact's accuracy step)" if dt is None else ")"))


def rig_plan(args: argparse.Namespace, model: Model, command: str):
    """The rig's layout of `model`, the input its options ask for, and the run's duration (--time, or the input's
    own: a sweep's time + 1 s, past a bump's rear wheels + 3 s, RIG_TIME's); InputError naming `command` for a
    model that cannot stand on the rig."""
    from mechdyn.sim import rig

    try:
        lay = rig.layout(model)
    except rig.RigError as e:
        raise InputError(f"{command}: {e}") from None
    inp = _rig_input(args)
    T = args.time if args.time is not None else (inp.sweep_time + 1.0 if inp.kind == "sweep" else
                                                 inp.at + (lay.wheelbase + inp.length) / inp.speed + 3.0
                                                 if inp.kind == "bump" else RIG_TIME.get(inp.kind, 10.0))
    return lay, inp, T


def cmd_rig(args: argparse.Namespace) -> int:
    """A shaker-rig run (mechdyn/sim/rig.py): the model from its static equilibrium on the posts, shaken by one
    input; prints the ride figures, writes the pictures (and the records as CSV). A sweep is measured against the
    linear H(jω) too. Exit 1 if the state goes non-finite."""
    from mechdyn.dynamics import Dynamics
    from mechdyn.sim import rig
    from mechdyn.sim.run import SimulationDiverged

    model = model_of(args)
    lay, inp, T = rig_plan(args, model, "rig")
    sim_steps(T, args.dt, "--time", "--dt")
    try:
        motions = rig.motions_for(lay, inp, T)
    except (rig.RigError, ValueError, OSError) as e:
        raise InputError(f"rig: {e}") from None
    dyn = Dynamics(model, progress=True)
    try:
        for name, m in motions.items():
            dyn.set_motion(name, m)
    except ValueError as e:
        raise InputError(f"rig: {e}") from None
    q0 = rig.start_state(dyn)
    t0 = time.perf_counter()
    try:
        rr = rig.run(dyn, {}, T, args.dt, args.scheme, q0=q0, stride=args.stride, progress=True)
    except SimulationDiverged as e:
        print(f"rig: {e}; nothing written (a smaller --dt may keep it finite)", file=sys.stderr)
        return EXIT_FAIL
    records = time.perf_counter() - t0 - rr.seconds
    nsteps = int(round(T / args.dt))
    print(f"rig: {model.name}: {inp.kind} input on {', '.join(p.driver for p in lay.posts)}"
          + (f" and {lay.steer}" if lay.steer and inp.kind == "chrono" else "")
          + f"; {nsteps} {args.scheme} steps of {args.dt:g} s ({T:g} s): stepping {rr.seconds:.3g} s "
          f"({1e6 * rr.seconds / max(nsteps, 1):.3g} us a step, real-time factor {T / rr.seconds:.3g}), "
          f"records {records:.3g} s")
    figures = rr.figures()
    print(table([{"figure": k, "value": f"{v:.4g}"} for k, v in figures.items()]))
    if args.out:
        rr.records.to_csv(args.out, index=False)
        print(f"records: {args.out}")
    if args.plot:
        from mechdyn.sim import rigplot

        prefix = Path(args.plot)
        written = [rigplot.plot_histories(rr, prefix.with_name(prefix.name + "-histories.png")),
                   rigplot.plot_spectrum(rr, prefix.with_name(prefix.name + "-psd.png"))]
        if inp.kind == "sweep":
            written.append(_rig_sweep(dyn, lay, rr, inp, q0, prefix.with_name(prefix.name + "-transmissibility.png")))
        print("pictures: " + ", ".join(map(str, written)))
    return EXIT_PASS


def _rig_sweep(dyn, lay, rr, inp, q0, out: Path) -> Path:
    """The sweep's measured transmissibility beside the linear H(jω), the modes marked; prints the largest
    difference between them away from the sweep's ends."""
    import numpy as np

    from mechdyn.linear import linearize, modes
    from mechdyn.linear.frf import base_excitation, frequency_response
    from mechdyn.sim import rig, rigplot

    lo, hi = sorted((inp.f0, inp.f1))
    freq = np.geomspace(lo * 1.5, hi / 1.5, 40)  # away from the sweep's ends
    columns = ["heave", f"travel_{lay.posts[0].driver}", f"post_{lay.posts[0].driver}"]
    m = dyn.motions[lay.posts[0].driver]
    measured = rig.sweep_transmissibility(rr, m, columns, freq)
    be = base_excitation(dyn, q0, rig.signs(lay, inp.mode))
    ride = rig.Ride(dyn, lay)
    H = frequency_response(dyn, be, ride, freq)[:, [ride.names.index(c) for c in columns]]
    H = H * rig.signs(lay, inp.mode)[lay.posts[0].driver]  # per m of the first post's motion
    err = np.abs(measured - H) / np.abs(H)
    print(f"sweep against linear H(jw), {freq[0]:.3g} to {freq[-1]:.3g} Hz: largest relative difference "
          + ", ".join(f"{c} {e:.2%}" for c, e in zip(columns, err.max(axis=0))))
    md = modes(linearize(dyn, q0, np.zeros(dyn.nv)))
    return rigplot.plot_transmissibility(freq, measured, H, columns, md.frequency[~md.rigid], out)


MOVED = {"selftest": "plant known bugs and show the gates catch every one",
         "report": "draw the gate history as a self-contained HTML page",
         "golden": "show or re-record models' golden results and speed figures"}


FRF_BAND = (0.1, 50.0)  # Hz: the band of modes --frf's picture and table


def _frf(dyn, q, md, args: argparse.Namespace) -> None:
    """modes --frf: the frequency response from the posts' motion (--input phasing) to the ride quantities,
    chassis accelerations included: each one's peak over FRF_BAND, and the Bode picture."""
    import numpy as np

    from mechdyn.linear.frf import base_excitation, frequency_response
    from mechdyn.sim import rig, rigplot

    lay = rig.layout(dyn.model)
    be = base_excitation(dyn, q, rig.signs(lay, args.input))
    ride = rig.Ride(dyn, lay)
    freq = np.geomspace(*FRF_BAND, 400)
    H = frequency_response(dyn, be, ride, freq)
    w2 = (2 * np.pi * freq) ** 2
    acc = {"heave_acc": -w2 * H[:, 0], "pitch_acc": -w2 * H[:, 1], "roll_acc": -w2 * H[:, 2]}
    names = [*ride.names, *acc]
    H = np.column_stack([H, *acc.values()])
    rows = []
    for k, name in enumerate(names):
        i = int(np.argmax(np.abs(H[:, k])))
        rows.append({"output": name, "peak |H| per m": f"{abs(H[i, k]):.4g}", "at [Hz]": f"{freq[i]:.3g}",
                     "|H| at 1 Hz": f"{abs(np.interp(1.0, freq, np.abs(H[:, k]))):.4g}"})
    print(f"frequency response per m of {args.input} post motion ({', '.join(p.driver for p in lay.posts)}), "
          f"{FRF_BAND[0]:g} to {FRF_BAND[1]:g} Hz:")
    print(table(rows))
    shown = [k for k, n in enumerate(names) if (n in ("heave_acc", "pitch_acc", "roll_acc")
                                                or n.startswith(("travel_", "post_"))) and np.abs(H[:, k]).max() > 0]
    print(rigplot.plot_bode(freq, H[:, shown], [names[k] for k in shown], md.frequency[~md.rigid], Path(args.frf)))


def cmd_moved(args: argparse.Namespace) -> int:
    """A harness command that left mechdyn: say where it went, with the arguments given."""
    raise moved(args.cmd, shlex.join([args.cmd, *args.rest]))


def _output_or_stdout(text: str) -> str:
    """argparse type of gen -o: "-" or an output_file."""
    return text if text == "-" else output_file(text)


def parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="mechdyn",
        description="Specialized multibody forward dynamics. Models are named by a file path "
        "or by their name in models/ (e.g. elbow). Exit status: 0 success, 1 a check failed, 2 bad input.",
    )
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    i = sub.add_parser("info", help="print a model's bodies, joints, sizes, loops and elements",
                       description="Print a model's bodies, joints, coordinate slots, nq/nv, loops and force elements, "
                       "and the solve fwd_dyn takes for it: the CRBA with a sparse LᵀDL (or the KKT system, with "
                       "loops) or the articulated-body algorithm (method 2, with loops), whichever counts fewer "
                       "operations, with both counts. Counting runs the generator's passes (seconds on the largest "
                       "models; no compile; --no-route skips it).")
    add_model_argument(i)
    i.add_argument("--no-route", action="store_true", help="skip the solve route (and its operation counts)")
    i.set_defaults(func=cmd_info)
    g = sub.add_parser("gen", help="write the generated C for a model",
                       description="Write the specialized C translation unit that mechdyn compiles for a model, or "
                       "with --derivatives the one of its derivatives (fwd_dyn_derivs: qdd and its derivatives with "
                       "respect to q, qd, tau, act and fext; docs/derivatives.md).",
                       epilog="examples:\n  mechdyn gen elbow -o elbow.c\n  mechdyn gen --derivatives quartercar "
                       "-o quartercar_derivs.c", formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_argument(g)
    g.add_argument("--derivatives", action="store_true", help="the derivatives' translation unit instead")
    g.add_argument("-o", "--output", default="-", type=_output_or_stdout, help="output file (default: standard output)")
    g.set_defaults(func=cmd_gen)
    b = sub.add_parser("bench", help="time the generated forward dynamics",
                       description="Time fwd_dyn in a C loop over a pool of 256 random states (minimum over "
                       "repeats, with a running checksum), and fwd_dyn_batch on the same states. Reports ns/call, "
                       "ns/state batched and the generated code's flop count. The same beside the dense reference: "
                       "crosscheck bench MODEL; beside Pinocchio and MuJoCo: crosscheck bench --peers MODEL.",
                       epilog="examples:\n  mechdyn bench hmmwv\n  mechdyn bench elbow --sim 1e-3\n"
                       "  mechdyn bench m113 --sim              # the contact loop at the accuracy step, by stage\n"
                       "  mechdyn bench hmmwv --sim 1e-3 --scheme galpha --newton 2\n"
                       "  mechdyn bench m113 --sim 1.2e-3 --scheme galpha --newton 3 --verlet-dt 3.28e-4\n"
                       "                                        # each at its largest step that passes the gates\n"
                       "  mechdyn bench m113 --sim 1.2e-3 --scheme galpha --newton 2 --refresh 1 --verlet-dt 3.28e-4\n"
                       "                                        # the iteration matrix fresh every step",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_argument(b)
    b.add_argument("--repeats", type=int_range(1, 1000), default=7, help="timed repeats; the minimum is reported (default 7)")
    b.add_argument("--sim", type=positive_float, metavar="DT", nargs="?", const=ACCURACY_STEP,
                   help="instead, time stepping at step DT. A model with contact: its contact stepping loop, a settle "
                   "from q0 at rest (1 s after a 0.1 s lead-in), the real-time factor, us per step and the split into "
                   "kinematics, band, ground, dynamics and integration; DT defaults to the step chosen by accuracy. A "
                   "tree model: Verlet in C (fwd_dyn_sim) against the same loop driven from Python one forward() "
                   "call at a time (DT required)")
    b.add_argument("--scheme", choices=["verlet", "galpha", "hht"], default="verlet", help="with --sim DT: time "
                   "the implicit stepper (us per step, Newton corrections per step, the real-time factor) beside "
                   "Verlet in one run: on a model without contact Verlet at the same DT, on a model with contact "
                   "the settle, Verlet at its accuracy step")
    b.add_argument("--newton", type=int_range(1, 1000), metavar="N", help="with --scheme: exactly N corrections "
                   "a step (the real-time mode) instead of Newton to its tolerance")
    b.add_argument("--refresh", type=int_range(1, MAX_STEPS), metavar="K", help=REFRESH_HELP)
    b.add_argument("--verlet-dt", type=positive_float, metavar="DT", help="with --scheme on a model with contact: "
                   "Verlet's step beside it (default: the accuracy step), e.g. its largest step that passes the "
                   "settle's gates")
    b.add_argument("--peers", action="store_true", help="moved: crosscheck bench --peers MODEL (this says so, "
                   "exit 2)")
    b.add_argument("--contact", action="store_true", help="also time the band and ground contact producers (a "
                   "tracked model) in a C loop, per call and per pair or pad corner, beside fwd_dyn")
    b.add_argument("--json", action="store_true", help="print one JSON object")
    b.set_defaults(func=cmd_bench)
    e = sub.add_parser("export", help="write a model as URDF and/or MJCF",
                       description="Write the model as URDF (its spanning tree: links, revolute, prismatic and "
                       "floating joints) and/or MJCF (bodies and joints, tendons for tsda, joint springs for rsda, "
                       "motors for inputs, equality constraints for spherical and distance loops), with masses, CGs, "
                       "inertias and offsets written exactly, and list what the format could not express "
                       "(each item with its line).")
    add_model_argument(e)
    e.add_argument("--urdf", metavar="FILE", type=output_file, help="write URDF to FILE")
    e.add_argument("--mjcf", metavar="FILE", type=output_file, help="write MJCF to FILE")
    e.set_defaults(func=cmd_export)
    im = sub.add_parser("import", help="write a URDF or MJCF file as a .mech file",
                        description="Read a URDF (yourdfpy over a strict XML parse) or an MJCF file (MuJoCo's own "
                        "compiler) and write the .mech file it becomes: links on fixed joints merged into the moving "
                        "link they hang from, their frames kept as points, every body's sources named in comments, "
                        "joint limits, damping and friction kept for `mechdyn info` (docs/import.md). Every command "
                        "that takes a model also takes the URDF or MJCF file itself.",
                        epilog="examples:\n  mechdyn import panda.urdf -o panda.mech --mimic free\n"
                               "  mechdyn import go2.urdf -o go2.mech --floating\n"
                               "  mechdyn info go2.urdf --floating\n  mechdyn bench ur5_robot.urdf",
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_argument(im, help="the .urdf, or MJCF .xml, file to read")
    im.add_argument("-o", "--output", metavar="FILE.mech", type=output_file, required=True,
                    help="write the .mech text to FILE.mech")
    im.set_defaults(func=cmd_import)
    s = sub.add_parser("sim", help="simulate a model in C and summarize the run (a tracked model: settle and gate it)",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="\n\n".join(textwrap.fill(p, 79) for p in (
                           "Step the generated dynamics in C from the design pose at rest (or a seeded random "
                           "state), report steps, the energy drift (the largest change over the recorded rows of "
                           "kinetic + gravitational + spring energy plus the work the dampers dissipated, integrated "
                           "in C at every step, so the stride does not change it) and the loop closure error for "
                           "loop models; then the stepping time with its real-time factor, and the whole command's "
                           "wall time split into start-up, load/compile, stepping and post-processing. Inputs are "
                           "held at zero. Exit status 1, with the step and time, if the state goes non-finite (no "
                           "trace is written then).",
                           "A model with contact (a band or a ground) is settled instead: from the design pose at "
                           "rest, the ground's gains ramped in over 0.02 s, --time s (default 4) on its ground at "
                           "the step chosen by accuracy (--samples per contact period, default 90; --dt overrides), "
                           "the contact in the C loop, the first and last 0.5 s recorded at every step. Each gate is "
                           "printed with its figure (crush, load, momentum, energy, energy_net, period2: "
                           "docs/simulation.md \"The settle\"), then the stepping time and the real-time factors of "
                           "the stepping loop alone and of the whole command. Exit status 1 if a gate fails.")),
                       epilog="examples:\n  mechdyn sim satellite --time 1 --dt 1e-3 --trace s.csv\n"
                       "  mechdyn sim hmmwv --scheme galpha --rho-inf 0.6 --dt 2e-3 --seed 1\n"
                       "  mechdyn sim elbow --scheme hht --alpha -0.2 --newton 3    # real time: 3 corrections a step\n"
                       "  mechdyn sim satellite --scheme galpha --adaptive --rtol 1e-8 --dt 0.01\n"
                       "  mechdyn sim m113                    # the 4 s settle, the 8 s hold on 15 deg, their gates\n"
                       "  mechdyn sim m113 --scheme galpha --dt 1.2e-3    # the same, implicit, 6.4x the step\n"
                       "  mechdyn sim m113 --scheme galpha --adaptive --rtol 1e-3 --atol 1e-6 --dt 7.5e-4\n"
                       "  mechdyn sim m113 --slope 20 --fric reg --trace m113.csv\n"
                       "  mechdyn sim track_demo --drive --slope 10\n"
                       "  mechdyn sim track_min --samples 180 --time 2\n"
                       "  mechdyn sim hmmwv_road              # settle on the tires: the settle's gates and the statics\n"
                       "  mechdyn sim hmmwv_road --manoeuvre all --plot-dir pics    # brake, turn, lane change")
    add_model_argument(s)
    s.add_argument("--time", type=positive_float, help="simulated time in s (default 1; with contact, 4)")
    s.add_argument("--dt", type=positive_float, help="step in s (default 1e-3; with contact, the accuracy step)")
    s.add_argument("--samples", type=int_range(1, 10**6), help="with contact: steps per contact period that "
                   "choose the step (default 90)")
    s.add_argument("--scheme", choices=["verlet", "euler", "galpha", "hht"], default="verlet",
                   help="Stormer-Verlet (2nd order, default), semi-implicit Euler (1st order), or the implicit "
                   "generalized-alpha (2nd order, numerical damping of the highest frequencies: docs/implicit.md) "
                   "and its HHT-alpha setting")
    s.add_argument("--rho-inf", type=float_range(0.0, 1.0, "a spectral radius"), metavar="R",
                   help="galpha: the spectral radius at infinite frequency, 1 no damping, 0 the most (default 0.8)")
    s.add_argument("--alpha", type=float_range(-1 / 3, 0.0, "HHT's alpha"), metavar="A",
                   help="hht: alpha in [-1/3, 0] (default -0.1)")
    s.add_argument("--newton", type=int_range(1, 1000), metavar="N", help="galpha/hht: exactly N Newton corrections "
                   "every step, no convergence test: the real-time mode (default: corrections until the velocity "
                   "change is below 1e-10 of the velocity scale)")
    s.add_argument("--refresh", type=int_range(1, MAX_STEPS), metavar="K", help=REFRESH_HELP)
    s.add_argument("--adaptive", action="store_true", help="galpha/hht: adapt the step to the local error "
                   "estimate (--dt is then the output interval)")
    s.add_argument("--rtol", type=float_range(1e-14, 1.0, "a relative tolerance"), help="with --adaptive: the local "
                   "error's relative tolerance (default 1e-6)")
    s.add_argument("--atol", type=float_range(1e-15, 1.0, "an absolute tolerance"), help="with --adaptive: the local "
                   "error's absolute tolerance, m or rad (default 1e-9; about 1e-6 for the tracked vehicles)")
    s.add_argument("--trace", metavar="FILE.csv", type=output_file, help="write t, q, qd, energy (and closure) to a CSV file")
    s.add_argument("--stride", type=int_range(1, MAX_STEPS), help="record every N-th step (default: about 2000 rows)")
    s.add_argument("--seed", type=seed, help="start from a seeded random state (closed and velocity-consistent "
                   "for loop models) instead of the design pose at rest")
    s.add_argument("--slope", type=slope_degrees, default=15.0, metavar="DEG", help="with contact: after the "
                   "settle, park the vehicle on DEG degrees, sprockets braked, and gate the patch's slip (default 15; "
                   "0: no hold)")
    s.add_argument("--fric", choices=["anchor", "reg"], help="with contact: the hold's ground friction, anchored "
                   "(the hold gate) or regularized (the control that must slide); default both")
    s.add_argument("--hold-time", type=positive_float, default=8.0, metavar="T", help="with contact: the hold's "
                   "length in s (default 8; the gate reads the last 2 s)")
    s.add_argument("--drive", action="store_true", help="with contact: after the settle, also drive: a sprocket "
                   "torque schedule on the flat (track speed against omega R, coasting) and up --slope (tractive "
                   "force against T/R)")
    s.add_argument("--manoeuvre", choices=MANOEUVRES, help="a model on tires: settle, then straight-line "
                   "acceleration and braking to rest ('brake'), the constant-radius turn at several speeds ('turn'), "
                   "ISO 3888-1's double lane change ('lane'), or all three; prints their gates and draws pictures "
                   "(docs/manoeuvres.md)")
    s.add_argument("--speed", type=positive_float, metavar="V", help="with --manoeuvre: the braking run's top speed "
                   "(default 20 m/s) and the lane change's (default 15 m/s)")
    s.add_argument("--plot-dir", metavar="DIR", type=output_dir, help="with --manoeuvre: where the pictures go "
                   "(default: the current directory)")
    s.set_defaults(func=cmd_sim)
    pl = sub.add_parser("plot", help="draw a trace's time histories (and a tracked vehicle's side view) as PNG files",
                        description="Draw a trace written by 'mechdyn sim --trace' as PNG files: joint "
                        "coordinates and rates, each floating body's position, path and velocities, and the "
                        "energy change (and loop closure error). A contact run's trace ('# kind: contact'): the "
                        "hull's height and pitch, the vertical ground force against the weight, the penetrations "
                        "with their loaded counts and the energy terms in one figure, and a side view of the "
                        "vehicle in another: one band's shoes pin to pin, its rollers as circles of their radius, "
                        "the terrain under it, one panel per time of --at. Prints the files written.")
    pl.add_argument("trace", help="the trace CSV")
    pl.add_argument("-o", "--output", metavar="DIR", type=output_dir, help="directory for the PNGs (default: beside the trace)")
    pl.add_argument("--at", metavar="T1,T2,...", type=_times, help="a contact trace: the side view's times in s, each "
                    "drawn at the nearest recorded row (default: the first row and the last)")
    pl.add_argument("--band", metavar="NAME", help="a contact trace: the band whose x-z plane the side view shows "
                    "(default: the first)")
    pl.set_defaults(func=cmd_plot)
    mo = sub.add_parser("modes", help="find the static equilibrium and print (and draw) the linearized modes",
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        description="\n\n".join(textwrap.fill(p, 79) for p in (
                            "Find a static equilibrium by Newton on qdd = 0 with the generated derivatives (from "
                            "the design pose; loops kept closed, --held coordinates kept), linearize there and print "
                            "the residual max |qdd| and the modes, one per free coordinate, each a pair of eigenvalues "
                            "(complex conjugates, or two real ones when overdamped): undamped natural frequency "
                            "sqrt(|l1 l2|)/2pi in Hz, damping ratio zeta = -(l1 + l2)/(2 sqrt(|l1 l2|)) (above 1: "
                            "overdamped), and the coordinates the mode shape moves most (largest +1). Rigid-body "
                            "modes have no frequency. A note says how many modes are unstable (a saddle, not a "
                            "stable rest pose); --plot is skipped with a note when no coordinate is free. A floating "
                            "body's coordinates are name.rx/ry/rz (rotation about its own axes) and name.x/y/z. "
                            "Derivatives compile on first use (seconds for small models, minutes for the whole vehicles). "
                            "Exit status 1 if no equilibrium is found or the plot's displaced poses do not close.",)),
                        epilog="examples:\n  mechdyn modes springpend\n"
                        "  mechdyn modes quartercar --held post --plot quartercar-modes.png\n"
                        "  mechdyn modes pendulums --at q0\n"
                        "  mechdyn modes hmmwv --frf hmmwv-frf.png --input pitch")
    add_model_argument(mo)
    mo.add_argument("--held", metavar="SLOTS", type=_held, help="comma-separated velocity slots or body names whose "
                    "coordinates are held (e.g. a vehicle's shaker posts): fixed in the equilibrium, dropped from the "
                    "modes, their reactions taken up")
    mo.add_argument("--at", choices=["equilibrium", "q0"], default="equilibrium",
                    help="linearize at the static equilibrium (default) or at the design pose q0 as it is")
    mo.add_argument("--plot", metavar="FILE.png", type=output_file, help="draw every mode shape into FILE.png: the "
                    "bodies at equilibrium and displaced both ways, one panel a mode")
    mo.add_argument("--frf", metavar="FILE.png", type=output_file, help="a model with driven shaker posts (docs/rig.md): "
                    "the frequency response from the posts' motion to the chassis's accelerations, each wheel's "
                    "travel, every spring and shock force and every post's force, printed and drawn (Bode) into FILE.png")
    mo.add_argument("--input", choices=["heave", "pitch", "roll", "warp"], default="heave",
                    help="--frf: how the posts move together (default heave)")
    mo.set_defaults(func=cmd_modes)
    r = sub.add_parser("rig", help="shake a driven vehicle model on its posts and print its ride figures",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="\n\n".join(textwrap.fill(p, 79) for p in (
                           "Put a model whose shaker posts are driven (quartercar, halfcar, hmmwv, hmmwv_pitman; "
                           "docs/rig.md) on a four-post rig: start from its static equilibrium on the posts, shake "
                           "it with one input, and print the ride figures (RMS chassis heave acceleration, each "
                           "post's peak and RMS dynamic load). The input is a sine or a swept sine on every post "
                           "(--mode: heave, pitch, roll or warp phasing), a half-cosine bump, an ISO 8608 road of "
                           "class A to H (left and right tracks independent, the rear wheels on the front's road "
                           "one wheelbase later), or Project Chrono's rig data file (ST_inputs.dat: posts times "
                           "0.15 m, steering times the rack's 87 mm). Every input blends in from rest (--blend). "
                           "--plot PREFIX writes PREFIX-histories.png and PREFIX-psd.png, and for a sweep "
                           "PREFIX-transmissibility.png: the measured transmissibility beside the linear H(jw) "
                           "(derivatives compile on first use), the modes marked.",)),
                       epilog="examples:\n  mechdyn rig quartercar --sine 0.02 1.5 --plot qc\n"
                       "  mechdyn rig hmmwv --road C --speed 20 --seed 1 --plot road-c\n"
                       "  mechdyn rig hmmwv --sweep 0.005 0.3 25 120 --log --plot sweep\n"
                       "  mechdyn rig hmmwv --bump 0.1 0.5 --speed 5\n"
                       "  mechdyn rig hmmwv --chrono ../shared/data/chrono-vehicle/hmmwv/suspensionTest/ST_inputs.dat")
    add_model_argument(r)
    add_rig_inputs(r)
    r.add_argument("--stride", type=int, default=1, help="record every stride-th step (default 1)")
    r.add_argument("--scheme", choices=["verlet", "euler", "galpha", "hht"], default="verlet",
                   help="the stepper (default verlet)")
    r.add_argument("--plot", metavar="PREFIX", help="write the pictures as PREFIX-*.png")
    r.add_argument("--out", metavar="FILE.csv", type=output_file, help="write the records as CSV")
    r.set_defaults(func=cmd_rig)
    add_sweep_parser(sub)
    for name, what in MOVED.items():  # each says where it went (exit 2), whatever the arguments
        m = sub.add_parser(name, help=f"moved: crosscheck {name} ({what})", add_help=False, prefix_chars="\0",
                           description=f"Moved to the verification harness: crosscheck {name}.")
        m.add_argument("rest", nargs="*", help="the arguments, passed on to the message")
        m.set_defaults(func=cmd_moved)
    return p


def main(argv: list[str] | None = None) -> None:
    sys.exit(run(parser, argv))


if __name__ == "__main__":
    main()
