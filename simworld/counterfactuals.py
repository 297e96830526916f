"""Synthetic counterfactual values r' (slot perturbations) and Φ(r').

A synthetic r' copies r_t and perturbs slots in one of five ways
(:data:`SYNTHETIC_KINDS`):

* ``plan_swap``: ``planned_next`` becomes another action that does not lead away
  from the stated goal;
* ``plan_away`` (adversarial): ``planned_next`` becomes a move that leads *away*
  from the stated goal, stated with high confidence: an r' built to mislead;
* ``goal_shift``: ``goal`` becomes another goal cell of the stimulus set, with
  ``planned_next`` re-planned toward it;
* ``goal_ood`` (out-of-distribution): ``goal`` becomes a border cell, where no
  session's goal ever lies, with ``planned_next`` re-planned toward it;
* ``confidence_shift``: ``confidence`` moves by at least 0.25.

Φ(r') is the subject's own policy with r' clamped in place of r_t at that state
(:func:`phi`), exact, not sampled.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from simworld.subject import Subject
from simworld.world import ACTIONS, State, StimulusSet, cell_name, parse_cell

__all__ = ["SYNTHETIC_KINDS", "SyntheticR", "synthesize", "phi"]

#: Kind -> probability of being drawn.
SYNTHETIC_KINDS: dict[str, float] = {
    "plan_swap": 0.25,
    "plan_away": 0.2,
    "goal_shift": 0.25,
    "goal_ood": 0.15,
    "confidence_shift": 0.15,
}
_KIND_CDF: tuple[tuple[float, str], ...] = tuple(zip(accumulate(SYNTHETIC_KINDS.values()), SYNTHETIC_KINDS))


@dataclass(frozen=True, slots=True)
class SyntheticR:
    r_prime: dict[str, Any]
    kind: str
    adversarial: bool
    ood: bool


def _toward(state: State, goal) -> list[str]:
    return list(state.layout.improving_actions(state.pos, goal, "path") or ())


def synthesize(
    state: State, r: Mapping[str, Any], stimulus: StimulusSet, rng: random.Random, kind: str | None = None
) -> SyntheticR:
    """A synthetic r' for ``r`` at ``state``; ``kind`` is drawn from :data:`SYNTHETIC_KINDS` unless given."""
    if kind is None:
        u = rng.random()
        kind = next((k for c, k in _KIND_CDF if u < c), _KIND_CDF[-1][1])
    elif kind not in SYNTHETIC_KINDS:
        raise ValueError(f"unknown synthetic kind {kind!r}")
    out = dict(r)
    layout = state.layout
    goal = parse_cell(r.get("goal"))
    plan = r.get("planned_next")
    dist = layout.distances(goal) if goal is not None and layout.is_free(goal) else None
    here = dist.get(state.pos) if dist else None

    if kind == "plan_away" and here is not None:
        away = [a for a in ACTIONS[:4] if dist.get(layout.next_pos(state.pos, a), here) > here and a != plan]
        if away:
            out["planned_next"] = away[rng.randrange(len(away))]
            out["confidence"] = round(rng.uniform(0.85, 0.99), 2)
            return SyntheticR(out, kind, True, False)
        kind = "plan_swap"
    elif kind == "plan_away":
        kind = "plan_swap"

    if kind == "plan_swap":
        if here is not None:
            options = [a for a in ACTIONS if a != plan and dist.get(layout.next_pos(state.pos, a), here) <= here]
        else:
            options = [a for a in ACTIONS if a != plan]
        if not options:
            options = [a for a in ACTIONS if a != plan]
        out["planned_next"] = options[rng.randrange(len(options))]
        return SyntheticR(out, kind, False, False)

    if kind in ("goal_shift", "goal_ood"):
        pool = stimulus.goal_cells if kind == "goal_shift" else stimulus.never_goal_cells
        choices = [p for p in pool if p != goal and p != state.pos]
        new = choices[rng.randrange(len(choices))]
        toward = _toward(state, new)
        out["goal"] = cell_name(new)
        out["planned_next"] = toward[rng.randrange(len(toward))] if toward else "wait"
        return SyntheticR(out, kind, False, kind == "goal_ood")

    # confidence_shift
    conf = r.get("confidence")
    while True:
        new_conf = round(rng.uniform(0.05, 0.99), 2)
        if conf is None or abs(new_conf - conf) >= 0.25:
            break
    out["confidence"] = new_conf
    return SyntheticR(out, "confidence_shift", False, False)


def phi(subject: Subject, state: State, r_prime: Any) -> dict[str, Any]:
    """Φ(r') as a schema-v1 distribution: the subject's policy with r' clamped in at ``state``."""
    return {"type": "distribution", "probs": subject.action_distribution(state, r_prime), "n": None}
