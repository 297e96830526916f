"""simworld: the simulated task world the TRB toolkit trains and tests on.

A subject walks a small grid toward a goal cell while a drift (wind) sometimes
pushes it; every step it states its self-representation r_t (goal, planned_next,
caused_by_self, confidence) and acts through a policy that depends on r_t, so
clamping r_t := r' changes its action distribution in a known, exact way.
:func:`simulate` records many such episodes as schema-v1 JSONL records (sessions,
counterfactuals with exact Φ(r'), attribution items, transfer contexts);
:class:`GridWorld` and :class:`Subject` can also be used directly, to roll a
subject or a model forward (Tracks 4 and 5).

Modules: :mod:`simworld.world` (grid, drift, episodes), :mod:`simworld.subject`
(the policy and self-reports), :mod:`simworld.rollout` (one episode),
:mod:`simworld.counterfactuals` (synthetic r', Φ), :mod:`simworld.contexts`
(stimulus sets, populations, languages, transfer contexts), :mod:`simworld.render`
(texts in each language), :mod:`simworld.recording` (the corpus).
Pure Python: imports only the standard library and :mod:`schemas`.
"""

from simworld.contexts import (
    IN_DISTRIBUTION_LANGUAGES,
    IN_DISTRIBUTION_POPULATIONS,
    IN_DISTRIBUTION_STIMULI,
    STIMULUS_SETS,
    TRANSFER_CONTEXTS,
    TransferSpec,
    context_id,
)
from simworld.counterfactuals import SYNTHETIC_KINDS, SyntheticR, phi, synthesize
from simworld.recording import (
    COLLECTOR,
    GENERATOR_NAME,
    GENERATOR_VERSION,
    LICENCE,
    SELF_ITEM_RATE,
    SYNTHETIC_CAP,
    WORLD_VERSION,
    CorpusPlan,
    PairPlan,
    session_id,
    simulate,
    transfer_context_records,
)
from simworld.render import LANGUAGES, render_observation, render_outcome
from simworld.rollout import StepTrace, rollout
from simworld.subject import POPULATIONS, Memory, Population, Subject, draw, slot
from simworld.world import (
    ACTIONS,
    MOVES,
    GridWorld,
    Layout,
    State,
    StepResult,
    StimulusSet,
    cell_name,
    parse_cell,
)

__all__ = [
    # world
    "ACTIONS", "MOVES", "Layout", "StimulusSet", "State", "StepResult", "GridWorld", "cell_name", "parse_cell",
    # subject
    "Population", "POPULATIONS", "Subject", "Memory", "slot", "draw",
    # rollout
    "StepTrace", "rollout",
    # counterfactuals
    "SYNTHETIC_KINDS", "SyntheticR", "synthesize", "phi",
    # contexts
    "STIMULUS_SETS", "IN_DISTRIBUTION_STIMULI", "IN_DISTRIBUTION_POPULATIONS", "IN_DISTRIBUTION_LANGUAGES",
    "TransferSpec", "TRANSFER_CONTEXTS", "context_id",
    # render
    "LANGUAGES", "render_observation", "render_outcome",
    # recording
    "WORLD_VERSION", "GENERATOR_NAME", "GENERATOR_VERSION", "COLLECTOR", "LICENCE", "SELF_ITEM_RATE",
    "SYNTHETIC_CAP", "CorpusPlan", "PairPlan", "session_id", "transfer_context_records", "simulate",
]
