"""fwd_dyn_batch4: the straight-line dynamics over four states at once, one state per SIMD lane.

The generated function is one operation per line on named temporaries, with
no branches, so running it on four states is a change of type: every
`double` temporary becomes an `md_v4` (GCC vector extensions), every input
slot a vector gathered from the four states, each angle's sine and cosine one
`md_sincos4` call, and each output a scatter. Constants broadcast. The
arithmetic, and so the result in every lane, is the scalar function's; the
throughput per state is what changes. `fwd_dyn_batch` runs whole groups of
four through it and the rest through `fwd_dyn`.

A body longer than schedule.SPLIT statements, in either function, is emitted
as stage functions (schedule.stages), called in order from the exported one:
gcc's time on one straight-line function grows quadratically with its length.
The stages share the angles' sines and cosines through the array md_sc and the
temporaries that cross a cut through the workspace md_w, both on the caller's
stack; each stage gathers its own inputs. They are kept out of line
(noinline), or gcc would inline each one into its single caller and allocate
registers over the whole body again.
"""
from __future__ import annotations

import re

from mechdyn.core.model import Model

from . import declared, schedule
from .capi import FUNCTION
from .trig import LANE_NAME, LANES
from .trig import batch as sincos_batch

SQRT_C = r"""
/* lane-wise square root */
static inline md_v4 md_sqrt4(md_v4 x)
{
    for (int k = 0; k < 4; ++k) x[k] = sqrt(x[k]);
    return x;
}
"""

INPUTS = ("q", "qd", "tau", "fext", "act")  # fwd_dyn's input arrays, in argument order
_INPUT = re.compile(rf"\b({'|'.join(INPUTS)})\[(\d+)\]")
_STORE = re.compile(r"^(\w+(?:\[\d+\])?) = (.*);$")
_QDD = re.compile(r"^qdd\[(\d+)\]$")
_REACTION = re.compile(r"^r\[\d+\]$")  # a driven model's reactions: fwd_dyn_react's output, which the batch drops
_ANGLE = re.compile(r"\b(sn|cs)_(\d+)\b")  # an angle's sine or cosine vector in fwd_dyn_batch4
_PARAM = re.compile(rf"\b{declared.P}\[\d+\]")  # a declared parameter: the same in every lane
_ARGS = "q, qd, tau, fext, act, qdd"
_PARAMS = ("const double *q, const double *qd, const double *tau, const double *fext, const double *act, "
           "double *qdd")


def strides(model: Model) -> dict[str, int]:
    """Each input's doubles per state. The seam tests replace to plant a lane mix-up."""
    return dict(zip(INPUTS, (model.nq, model.nv, model.nv, 6 * model.nbody, model.nact)))


def _vector_text(text: str) -> str:
    """A scalar expression over inputs and trig lanes, rewritten over their vectors."""
    text = _INPUT.sub(lambda m: f"v_{m[1]}_{m[2]}", text)
    text = _PARAM.sub(lambda m: f"(md_zero4 + {m[0]})", text)  # broadcast: a temporary of parameters alone is a vector
    text = LANE_NAME.sub(lambda m: f"{m[1]}_{int(m[2]) * LANES + int(m[3])}", text)
    return text.replace("sqrt(", "md_sqrt4(")


def staged(lines: list[str]) -> bool:
    """Whether a body of `lines` statements is emitted as stage functions."""
    return len(lines) > schedule.SPLIT


def _vector_line(model: Model, text: str) -> str:
    """One of fwd_dyn's statements over the four states' vectors."""
    store = _STORE.match(text)
    if text.startswith("const double "):  # a temporary
        return "const md_v4 " + _vector_text(text[len("const double "):])
    if store and _REACTION.match(store[1]):  # read, so its statements stay as in fwd_dyn_react (same stages)
        return f"(void)({_vector_text(store[2])});"
    if store:  # an output goes to each state's slot; any other store is made lane after lane, as 4 calls would
        qdd = _QDD.match(store[1])
        targets = [f"qdd[{k * model.nv + int(qdd[1])}]" if qdd else store[1] for k in range(LANES)]
        lanes = " ".join(f"{t} = o[{k}];" for k, t in enumerate(targets))
        return f"{{ const md_v4 o = md_zero4 + ({_vector_text(store[2])}); {lanes} }}"
    return text  # a declaration


def _gathers(model: Model, texts: list[str]) -> tuple[list[str], set[str]]:
    """The four states' vectors of each input slot the scalar `texts` read, and the inputs read."""
    stride = strides(model)
    used = sorted({(m[1], int(m[2])) for text in texts for m in _INPUT.finditer(text)})
    return ([f"const md_v4 v_{name}_{i} = {{{', '.join(f'{name}[{k * stride[name] + i}]' for k in range(LANES))}}};"
             for name, i in used], {name for name, _ in used})


def _stage_header(name: str, ctype: str, params: str = _PARAMS) -> str:
    """A stage function's declarator: out of line, and hidden, so that it may sit in another translation unit of
    the same module (generate.py's parts)."""
    return (f"__attribute__((noinline, visibility(\"hidden\"))) void {name}({params},\n"
            f"        const md_v4 *md_sc, {ctype} *md_w)")


def _stage_function(name: str, ctype: str, stage: schedule.Stage, lines: list[str], params: str = _PARAMS,
                    args: str = _ARGS) -> str:
    """One stage: its imports from the workspace, its statements `lines`, its exports."""
    slot = {t: f"md_w[{k}]" for t, k in stage.imports}  # read where used: loaded late, not held or spilled
    body = [schedule.TEMP.sub(lambda m: slot.get(m[0], m[0]), ln) for ln in lines] if slot else list(lines)
    body += [f"md_w[{k}] = {t};" for t, k in stage.exports]
    silence = " ".join(f"(void){a};" for a in (*args.split(", "), "md_sc", "md_w"))
    indent = "".join(f"    {ln}\n" for ln in [silence, *body])
    return f"{_stage_header(name, ctype, params)}\n{{\n{indent}}}\n"


def _prototypes(name: str, ctype: str, nstages: int, params: str = _PARAMS) -> str:
    """The declarations of a function's stages, for its caller."""
    return "".join(f"{_stage_header(f'{name}{n}', ctype, params)};\n" for n in range(nstages))


def _calls(name: str, ctype: str, sc: list[str], nstages: int, nslots: int, args: str = _ARGS) -> list[str]:
    """The caller's statements: the sines and cosines `sc` in md_sc, the workspace, the stages in order."""
    shared = [f"const md_v4 md_sc[{len(sc)}] = {{{', '.join(sc)}}};" if sc else "const md_v4 *const md_sc = 0;",
              f"{ctype} md_w[{max(nslots, 1)}];"]
    return shared + [f"{name}{n}({args}, md_sc, md_w);" for n in range(nstages)]


def forward_stages(angles: list[str], lines: list[str], name: str = "fwd_dyn_stage", params: str = _PARAMS,
                   args: str = _ARGS, size: int | None = None) -> tuple[list[str], str, list[str]]:
    """fwd_dyn's (or, given their `name`, `params` and `args`, another scalar function's) stage functions of `size`
    statements (default schedule.STAGE, read at the call), one text each, their prototypes, and the caller's
    statements that call them after the sincos batch."""
    parts, nslots = schedule.stages(lines, schedule.STAGE if size is None else size)
    lane = lambda m: f"md_sc[{2 * int(m[2]) + (m[1] == 'cs')}][{m[3]}]"  # noqa: E731
    funcs = ["\n" + _stage_function(f"{name}{n}", "double", st, [LANE_NAME.sub(lane, t) for t in st.lines],
                                    params, args) for n, st in enumerate(parts)]
    sc = [f"{p}{k}" for k in range((len(angles) + LANES - 1) // LANES) for p in ("sn", "cs")]
    return (funcs, _prototypes(name, "double", len(parts), params),
            sincos_batch(angles) + _calls(name, "double", sc, len(parts), nslots, args))


def batch4_function(model: Model, lines: list[str], angles: list[str]) -> tuple[str, str]:
    """fwd_dyn_batch4: fwd_dyn's statements `lines` (without their sincos batch) over four consecutive states;
    and its stage functions ("" unless it is staged), which it follows with their prototypes."""
    gathers, read = _gathers(model, [*lines, *angles])
    head = []
    for k, arg in enumerate(angles):
        head += [f"md_v4 sn_{k}, cs_{k};", f"md_sincos4({_vector_text(arg)}, &sn_{k}, &cs_{k});"]
    funcs = ""
    if staged(lines):
        parts, nslots = schedule.stages(lines, schedule.STAGE)
        angle = lambda m: f"md_sc[{2 * int(m[2]) + (m[1] == 'cs')}]"  # noqa: E731
        for n, st in enumerate(parts):
            own, _ = _gathers(model, st.lines)
            vector = [_ANGLE.sub(angle, _vector_line(model, t)) for t in st.lines]
            funcs += "\n" + _stage_function(f"fwd_dyn_batch4_stage{n}", "md_v4", st,
                                           ["const md_v4 md_zero4 = {0.0, 0.0, 0.0, 0.0};", *own, *vector])
        gathers, _ = _gathers(model, angles)  # the stages gather their own
        sc = [f"{p}_{k}" for k in range(len(angles)) for p in ("sn", "cs")]
        body = _calls("fwd_dyn_batch4_stage", "md_v4", sc, len(parts), nslots)
        protos = _prototypes("fwd_dyn_batch4_stage", "md_v4", len(parts))
    else:
        body, protos = [_vector_line(model, t) for t in lines], ""
    unused = [f"(void){name};" for name in strides(model) if name not in read]
    indent = "".join(f"    {ln}\n" for ln in unused + gathers + head + body)
    return funcs, (f"{protos}/* fwd_dyn over the four states at q, q + nq, q + 2 nq, q + 3 nq (and likewise for every argument) */\n"
            f"static void fwd_dyn_batch4(const double *q, const double *qd, const double *tau, const double *fext,\n"
            f"                           const double *act, double *qdd)\n{{\n"
            f"    const md_v4 md_zero4 = {{0.0, 0.0, 0.0, 0.0}};\n{indent}}}\n")


def batch_function(model: Model) -> str:
    """fwd_dyn_batch: groups of four states through fwd_dyn_batch4, the remainder through fwd_dyn."""
    nq, nv, nf, na = model.nq, model.nv, 6 * model.nbody, model.nact
    return f"""
{FUNCTION['fwd_dyn_batch'].header()}
{{
    static const double fext_zero[{LANES * nf}] = {{0}}, act_zero[{LANES * max(na, 1)}] = {{0}};
    int k = 0;
    for (; k + {LANES} <= n; k += {LANES})
        fwd_dyn_batch4(q + (long)k * {nq}, qd + (long)k * {nv}, tau + (long)k * {nv},
                       fext ? fext + (long)k * {nf} : fext_zero, act ? act + (long)k * {na} : act_zero, qdd + (long)k * {nv});
    for (; k < n; ++k)
        fwd_dyn(q + (long)k * {nq}, qd + (long)k * {nv}, tau + (long)k * {nv},
                fext ? fext + (long)k * {nf} : 0, act ? act + (long)k * {na} : 0, qdd + (long)k * {nv});
}}
"""
