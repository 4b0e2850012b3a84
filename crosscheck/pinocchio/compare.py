"""Comparisons that `crosscheck pinocchio` runs, each returning a Check."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from tqdm import tqdm

from crosscheck.checks import Check
from crosscheck.dense import forward_model as dense_forward
from mechdyn.core.fingerprint import fingerprint
from mechdyn.core.model import Model
from mechdyn.core.sample import State, scaled_error, states
from mechdyn.dynamics import Dynamics

from . import PinModel, build, build_from_file, forward

GATE_TREE = 1e-9  # two different tree algorithms (Pinocchio's ABA, mechdyn's CRBA + LᵀDL) on O(1)-conditioned trees
GATE_LOOP = 1e-8  # the KKT system is a second, differently conditioned route through A = K H⁻¹ Kᵀ

_drawn: dict[tuple[str, int, int], list[State]] = {}
_built: dict[tuple[str, str], PinModel] = {}


def gate(model: Model) -> float:
    return GATE_LOOP if model.loops else GATE_TREE


def pin_model(model: Model) -> PinModel:
    """The Pinocchio model of `model`, built once per process: for a model imported from a URDF file, Pinocchio's
    own parse of that file (build_from_file), else of mechdyn's URDF export (build)."""
    imported = model.path.lower().endswith(".urdf") and Path(model.path).is_file()
    key = (fingerprint(model), model.path if imported else "")  # the content: a model changed in Python gets its own
    if key not in _built:
        _built[key] = build_from_file(model, model.path) if imported else build(model)
    return _built[key]


def trial_states(model: Model, trials: int, seed: int) -> list[State]:
    """Random states for a tree; for a loop model, states closed and velocity-consistent (tear 0), where the
    Baumgarte terms vanish, so the KKT system and mechdyn solve the same equations."""
    key = (fingerprint(model), trials, seed)
    if key not in _drawn:
        _drawn[key] = list(tqdm(states(model, trials, seed, tear=0.0), total=trials, desc=f"states for {model.name}",
                                unit="state", leave=False, disable=None))
    return _drawn[key]


def _worst(model: Model, trials: int, seed: int, other: Callable[[State], np.ndarray], desc: str) -> tuple[float, int]:
    pm = pin_model(model)
    worst, at = 0.0, -1
    for k, s in enumerate(tqdm(trial_states(model, trials, seed), desc=desc, unit="state", leave=False, disable=None)):
        e = scaled_error(forward(pm, s.q, s.qd, s.tau, s.fext, s.act), other(s))
        if e > worst or at < 0:
            worst, at = e, k
    return worst, at


def _what(model: Model) -> str:
    if model.loops:
        return "closed consistent states, KKT on Pinocchio's crba, rnea, frame Jacobians and classical accelerations"
    return "random states, Pinocchio's ABA"


NOTE = ("a failure in both accel_vs_generated and accel_vs_dense points at the convention maps "
        "(mechdyn/export/urdf.py: quaternion order, [w; v] vs [v; w], [n; f] vs [f; n]) or the URDF export; "
        "in accel_vs_generated alone, at the generated code")


def accel_vs_generated(dyn: Dynamics, trials: int = 1000, seed: int = 0) -> Check:
    """Pinocchio's forward dynamics of the exported URDF against the generated C."""
    model = dyn.model
    worst, at = _worst(model, trials, seed, lambda s: dyn.forward(s.q, s.qd, s.tau, s.fext, s.act), "pinocchio vs generated")
    c = Check("accel_vs_generated", worst, gate(model),
              f"{trials} trials ({_what(model)}), max scaled |qdd_pinocchio - qdd_generated| (worst at trial {at})")
    return c if c.passed else Check(c.name, c.value, c.threshold, c.detail, NOTE)


def accel_vs_dense(model: Model, trials: int = 1000, seed: int = 0) -> Check:
    """Pinocchio's forward dynamics of the exported URDF against the dense reference."""
    worst, at = _worst(model, trials, seed, lambda s: dense_forward(model, s.q, s.qd, s.tau, s.fext, s.act),
                       "pinocchio vs dense")
    c = Check("accel_vs_dense", worst, gate(model),
              f"{trials} trials ({_what(model)}), max scaled |qdd_pinocchio - qdd_dense| (worst at trial {at})")
    return c if c.passed else Check(c.name, c.value, c.threshold, c.detail, NOTE)
