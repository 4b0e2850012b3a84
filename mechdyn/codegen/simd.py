"""fwd_dyn_batch4: the straight-line dynamics over four states at once, one state per SIMD lane.

The generated function is one operation per line on named temporaries, with
no branches, so running it on four states is a change of type: every
`double` temporary becomes an `md_v4` (GCC vector extensions), every input
slot a vector gathered from the four states, each angle's sine and cosine one
`md_sincos4` call, and each output a scatter. Constants broadcast. The
arithmetic, and so the result in every lane, is the scalar function's; the
throughput per state is what changes. `fwd_dyn_batch` runs whole groups of
four through it and the rest through `fwd_dyn`.
"""
from __future__ import annotations

import re

from mechdyn.core.model import Model

from .capi import FUNCTION
from .trig import LANE_NAME, LANES

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


def strides(model: Model) -> dict[str, int]:
    """Each input's doubles per state. The seam tests replace to plant a lane mix-up."""
    return dict(zip(INPUTS, (model.nq, model.nv, model.nv, 6 * model.nbody, model.nact)))


def _vector_text(text: str) -> str:
    """A scalar expression over inputs and trig lanes, rewritten over their vectors."""
    text = _INPUT.sub(lambda m: f"v_{m[1]}_{m[2]}", text)
    text = LANE_NAME.sub(lambda m: f"{m[1]}_{int(m[2]) * LANES + int(m[3])}", text)
    return text.replace("sqrt(", "md_sqrt4(")


def batch4_function(model: Model, lines: list[str], angles: list[str]) -> str:
    """fwd_dyn_batch4: fwd_dyn's statements `lines` (without their sincos batch) over four consecutive states."""
    stride = strides(model)
    used = sorted({(m[1], int(m[2])) for text in (*lines, *angles) for m in _INPUT.finditer(text)})
    body = [f"const md_v4 v_{name}_{i} = {{{', '.join(f'{name}[{k * stride[name] + i}]' for k in range(LANES))}}};"
            for name, i in used]
    for k, arg in enumerate(angles):
        body += [f"md_v4 sn_{k}, cs_{k};", f"md_sincos4({_vector_text(arg)}, &sn_{k}, &cs_{k});"]
    for text in lines:
        store = _STORE.match(text)
        if text.startswith("const double "):  # a temporary
            body.append("const md_v4 " + _vector_text(text[len("const double "):]))
        elif store:  # an output goes to each state's slot; any other store is made lane after lane, as 4 calls would
            qdd = _QDD.match(store[1])
            targets = [f"qdd[{k * model.nv + int(qdd[1])}]" if qdd else store[1] for k in range(LANES)]
            lanes = " ".join(f"{t} = o[{k}];" for k, t in enumerate(targets))
            body.append(f"{{ const md_v4 o = md_zero4 + ({_vector_text(store[2])}); {lanes} }}")
        else:  # a declaration
            body.append(text)
    unused = [f"(void){name};" for name in stride if name not in {n for n, _ in used}]
    indent = "".join(f"    {ln}\n" for ln in unused + body)
    return (f"/* fwd_dyn over the four states at q, q + nq, q + 2 nq, q + 3 nq (and likewise for every argument) */\n"
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
