"""Accuracy gates against the dense reference, on every model."""
import math

from crosscheck import dense_compare as compare
from mechdyn.core.model import Model
from mechdyn.core.parse import load_model

from .conftest import dynamics

TRIALS = 1000
COORDINATE_SAMPLES = 32_000  # TRIALS states of 32 coordinates


def trials(model: Model) -> int:
    """TRIALS random states, or on a model past 32 coordinates enough that the states hold COORDINATE_SAMPLES
    coordinates: m113 191, twobands 243, band63 and chain63 508, track_demo 582, hmmwv_pitman 728, hmmwv 745
    (docs/verification.md, "The tiers").

    The generated code is straight-line: its only branches on the state are the sines' large-argument
    reduction and a spring's zero-length guard, and every coordinate's angle and rate is drawn afresh in every
    state. So a wrong term shows at almost every state, and what needs many draws is the coverage of angles
    and rates, which grows with trials × nv.
    """
    return min(TRIALS, math.ceil(COORDINATE_SAMPLES / model.nv))


def test_crba_vs_aba(model_name, gate):
    model = load_model(model_name)
    gate(model_name, compare.crba_vs_aba(model, trials(model)))


def test_gen_vs_dense(model_name, gate):
    dyn = dynamics(model_name)
    gate(model_name, compare.gen_vs_dense(dyn, trials(dyn.model)))


def test_observe_vs_dense(model_name, gate):
    dyn = dynamics(model_name)
    gate(model_name, compare.observe_vs_dense(dyn, trials(dyn.model)))


def test_find_roundtrip(model_name, gate):
    gate(model_name, compare.find_roundtrip(dynamics(model_name)))


def test_rank_K(loop_model_name, gate):
    model = load_model(loop_model_name)
    gate(loop_model_name, compare.rank_K(model, trials(model)))
