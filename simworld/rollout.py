"""Rolling a subject forward in a world: one episode, step by step.

Each step the subject states r_t (:meth:`Subject.report`), an optional ``steer``
hook may replace it (Track 5's r_t-steering, or an ablation that returns ``None``),
the action is drawn from the subject's policy given the r that acts, the world
steps, and the subject observes the result.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from simworld.subject import Subject, draw
from simworld.world import GridWorld, State, StepResult

__all__ = ["StepTrace", "rollout"]

Steer = Callable[[State, dict[str, Any]], Any]


@dataclass(frozen=True, slots=True)
class StepTrace:
    """One step of an episode."""

    state: State
    #: The observation text at ``state``.
    observation: str
    #: The r_t the subject stated.
    r_reported: dict[str, Any]
    #: The r that the action was drawn with (``r_reported`` unless steered).
    r: Any
    #: p(a | state, r), the distribution the action was drawn from.
    distribution: dict[str, float]
    action: str
    result: StepResult


def rollout(subject: Subject, world: GridWorld, rng: random.Random, *, steer: Steer | None = None) -> list[StepTrace]:
    """Run the episode ``world`` was reset to until it is done; return its steps.

    ``rng`` drives the subject (reports and action draws); the world draws its drift
    from its own ``rng`` (which may be the same generator).
    """
    state = world.state
    memory = subject.begin(state, rng)
    steps: list[StepTrace] = []
    while not world.done:
        obs = world.observation
        r_rep = subject.report(state, memory, rng)
        r = steer(state, r_rep) if steer is not None else r_rep
        dist = subject.action_distribution(state, r)
        action = draw(dist, rng)
        res = world.step(action)
        subject.observe(memory, res, rng)
        steps.append(StepTrace(state, obs, r_rep, r, dist, action, res))
        state = res.after
    return steps
