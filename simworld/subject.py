"""The simulated subject: a policy that acts *through* its stated self-representation r_t.

The model of the subject
------------------------
Every step the subject states r_t in the four schema slots:

* ``goal``: the cell it says it is heading for (normally the task's goal; a
  subject may misremember it as a neighbouring cell and later correct itself);
* ``planned_next``: the action it says it will take (usually a move that brings it
  closer to its stated goal, kept from the previous step with some momentum, or
  ``wait`` when it hesitates);
* ``caused_by_self``: its belief that the latest outcome was its own doing
  (``None`` at the first step);
* ``confidence``: how sure it is of reaching the goal in the steps left (falls
  after the drift surprises it).

Then it acts by the policy

    p(a | state, r) = ε/|A| + (1-ε) · [w_plan·1{a = r.planned_next}
                                      + w_goal·G(a; state, r.goal)
                                      + h·1{a = wait}] / (w_plan + w_goal + h)

with ``h = w_hesitate · (1 - r.confidence)`` and ``G`` uniform over the moves that
bring the agent closer to ``r.goal`` (as its kind of navigator sees it; ``wait``
when it stands on ``r.goal``). A slot that is absent or unusable drops its term
(``r = None`` leaves only the uniform noise). Because the action is drawn from
this policy with r_t substituted, r_t *governs* the action: clamping r_t := r'
changes the distribution exactly as :meth:`Subject.action_distribution` says,
which is what Φ(r') in the recordings is.

A :class:`Population` fixes the mean weights and how the subject attributes
outcomes: ``careful`` subjects follow their plan, hesitate when unsure and are
well calibrated; ``impulsive`` ones act noisily, navigate straight at the goal
(walking into walls) and attribute poorly; ``overclaiming`` ones claim credit
whenever the outcome improved, whoever caused it; ``novice`` (transfer contexts
only) sits in between. Each :class:`Subject` jitters its population's weights.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from simworld.world import ACTIONS, Pos, State, StepResult, cell_name, parse_cell

__all__ = ["Population", "POPULATIONS", "Subject", "Memory", "slot", "draw"]

_ACTION_SET = frozenset(ACTIONS)
_N = len(ACTIONS)


@dataclass(frozen=True)
class Population:
    """Mean parameters of a subject population."""

    name: str
    description: str
    w_plan: float
    w_goal: float
    w_hesitate: float
    epsilon: float
    navigation: Literal["path", "direct"]
    #: ``calibrated``: belief tracks the true cause; ``overclaiming``: claims credit for every improvement.
    attribution: Literal["calibrated", "overclaiming"]
    #: 0 = belief ignores the true cause, 1 = belief is 0.95 / 0.05 for self / exogenous.
    attribution_skill: float
    attribution_noise: float
    #: Probability that r_t is recorded at a step (the subject always has one; it is not always reported).
    report_rate: float
    #: Probability that the subject revises r_t at a step (a same-session revision r').
    revision_rate: float
    #: Probability of starting with a misremembered goal (a neighbouring goal cell).
    goal_confusion: float
    #: Probability of keeping the previous action as the plan when it still brings the agent closer.
    momentum: float
    #: Added to the stated confidence.
    confidence_bias: float
    #: Confidence is multiplied by this after the drift moved the agent.
    surprise_factor: float
    #: Probability scale of planning ``wait`` when unsure (times 1 - confidence).
    plan_wait: float


POPULATIONS: dict[str, Population] = {
    p.name: p
    for p in (
        Population(
            "careful", "follows its stated plan, hesitates when unsure, attributes outcomes well",
            w_plan=2.0, w_goal=1.0, w_hesitate=1.5, epsilon=0.06, navigation="path",
            attribution="calibrated", attribution_skill=0.85, attribution_noise=0.07,
            report_rate=0.95, revision_rate=0.3, goal_confusion=0.05, momentum=0.6,
            confidence_bias=0.0, surprise_factor=0.6, plan_wait=0.5,
        ),
        Population(
            "impulsive", "acts noisily and straight at the goal (into walls), attributes poorly",
            w_plan=1.0, w_goal=0.6, w_hesitate=0.3, epsilon=0.3, navigation="direct",
            attribution="calibrated", attribution_skill=0.4, attribution_noise=0.15,
            report_rate=0.8, revision_rate=0.15, goal_confusion=0.1, momentum=0.8,
            confidence_bias=0.1, surprise_factor=0.9, plan_wait=0.15,
        ),
        Population(
            "overclaiming", "claims credit whenever the outcome improves, whoever caused it",
            w_plan=1.6, w_goal=1.0, w_hesitate=0.8, epsilon=0.1, navigation="path",
            attribution="overclaiming", attribution_skill=0.7, attribution_noise=0.08,
            report_rate=0.9, revision_rate=0.25, goal_confusion=0.05, momentum=0.6,
            confidence_bias=0.15, surprise_factor=0.85, plan_wait=0.3,
        ),
        Population(
            "novice", "new to the task: plans loosely, navigates straight at the goal, attributes moderately",
            w_plan=1.2, w_goal=1.2, w_hesitate=1.0, epsilon=0.15, navigation="direct",
            attribution="calibrated", attribution_skill=0.6, attribution_noise=0.15,
            report_rate=0.85, revision_rate=0.3, goal_confusion=0.15, momentum=0.5,
            confidence_bias=-0.1, surprise_factor=0.7, plan_wait=0.4,
        ),
    )
}


def slot(r: Any, name: str) -> Any:
    """Slot ``name`` of an r snapshot given as a mapping, an object with attributes, or None."""
    if r is None:
        return None
    if isinstance(r, Mapping):
        return r.get(name)
    return getattr(r, name, None)


def _clip(x: float, lo: float, hi: float) -> float:
    return lo if x < lo else hi if x > hi else x


@dataclass(slots=True)
class Memory:
    """What a subject carries from step to step within an episode."""

    goal_belief: Pos
    last_action: str | None = None
    #: Belief that the latest outcome was self-caused (reported as caused_by_self).
    belief: float | None = None
    #: The drift moved the agent on the latest step.
    surprised: bool = False


@dataclass(frozen=True)
class Subject:
    """One simulated person: a population's parameters, jittered, and a pseudonymous id."""

    subject_id: str
    population: Population
    w_plan: float
    w_goal: float
    w_hesitate: float
    epsilon: float
    language: str = "en"

    @classmethod
    def from_population(
        cls, subject_id: str, population: Population | str, rng: random.Random | None = None, language: str = "en"
    ) -> Subject:
        """A subject of ``population``; with ``rng``, its weights are jittered (individual differences)."""
        pop = POPULATIONS[population] if isinstance(population, str) else population
        if rng is None:
            return cls(subject_id, pop, pop.w_plan, pop.w_goal, pop.w_hesitate, pop.epsilon, language)
        j = lambda: math.exp(rng.gauss(0.0, 0.15))  # noqa: E731
        return cls(
            subject_id, pop, pop.w_plan * j(), pop.w_goal * j(), pop.w_hesitate * j(),
            _clip(pop.epsilon * math.exp(rng.gauss(0.0, 0.2)), 0.01, 0.5), language,
        )

    @property
    def navigation(self) -> str:
        return self.population.navigation

    # -- the policy -------------------------------------------------------------------

    def action_distribution(self, state: State, r: Any) -> dict[str, float]:
        """p(a | state, r) over :data:`ACTIONS`, exactly (sums to 1 up to float rounding).

        ``r`` is an r snapshot (mapping or object with slots ``goal``, ``planned_next``,
        ``confidence``) or ``None``; a confidence outside [0, 1] is clipped into it.
        Only ``state.layout`` and ``state.pos`` are used: the subject heads for the goal
        it *states*, not the task's.
        """
        if type(r) is dict:
            plan, goal_name, conf = r.get("planned_next"), r.get("goal"), r.get("confidence")
        else:
            plan, goal_name, conf = slot(r, "planned_next"), slot(r, "goal"), slot(r, "confidence")
        eps = self.epsilon
        base = eps / _N
        probs = dict.fromkeys(ACTIONS, base)
        wp = self.w_plan if type(plan) is str and plan in _ACTION_SET else 0.0
        goal = parse_cell(goal_name)
        improving = state.layout.improving_actions(state.pos, goal, self.population.navigation) if goal else None
        wg = self.w_goal if improving is not None else 0.0
        if (type(conf) is float or type(conf) is int) and conf == conf:  # a number, not NaN
            h = self.w_hesitate * (1.0 - (0.0 if conf < 0.0 else 1.0 if conf > 1.0 else conf))
        else:
            h = 0.0
        total = wp + wg + h
        if total <= 0.0:
            return dict.fromkeys(ACTIONS, 1.0 / _N)
        k = (1.0 - eps) / total
        if wp:
            probs[plan] += k * wp
        if wg:
            if improving:
                share = k * wg / len(improving)
                for a in improving:
                    probs[a] += share
            else:
                probs["wait"] += k * wg
        if h:
            probs["wait"] += k * h
        return probs

    def sample_action(self, state: State, r: Any, rng: random.Random) -> str:
        """Draw an action from :meth:`action_distribution`."""
        return draw(self.action_distribution(state, r), rng)

    # -- the self-representation ------------------------------------------------------

    def begin(self, state: State, rng: random.Random) -> Memory:
        """Memory at the start of an episode (possibly with a misremembered goal)."""
        goal = state.goal
        if rng.random() < self.population.goal_confusion:
            near = [
                q for q in (state.layout.next_pos(goal, a) for a in ACTIONS[:4])
                if q != goal and q != state.pos and not state.layout.on_border(q)
            ]
            if near:
                goal = near[rng.randrange(len(near))]
        return Memory(goal_belief=goal)

    def _toward(self, state: State, goal: Pos) -> tuple[str, ...]:
        return state.layout.improving_actions(state.pos, goal, self.population.navigation) or ()

    def report(self, state: State, memory: Memory, rng: random.Random) -> dict[str, Any]:
        """The subject's r_t at ``state``: a dict with the four core slots."""
        pop = self.population
        goal = memory.goal_belief
        layout = state.layout
        if pop.navigation == "path":
            dist = layout.distances(goal).get(state.pos, 0)
        else:
            dist = abs(goal[0] - state.pos[0]) + abs(goal[1] - state.pos[1])
        margin = state.steps_left - dist
        conf = 1.0 / (1.0 + math.exp(-0.5 * margin)) + pop.confidence_bias
        if memory.surprised:
            conf *= pop.surprise_factor
        conf = round(_clip(conf + rng.gauss(0.0, 0.05), 0.05, 0.99), 2)
        toward = self._toward(state, goal)
        if not toward:
            plan = "wait"
        elif rng.random() < pop.plan_wait * (1.0 - conf):
            plan = "wait"
        elif memory.last_action in toward and rng.random() < pop.momentum:
            plan = memory.last_action
        else:
            plan = toward[rng.randrange(len(toward))]
        return {"goal": cell_name(goal), "planned_next": plan, "caused_by_self": memory.belief, "confidence": conf}

    def observe(self, memory: Memory, result: StepResult, rng: random.Random) -> None:
        """Update memory after a step: the caused_by_self belief, surprise, goal correction."""
        pop = self.population
        cause = result.cause
        if pop.attribution == "overclaiming" and result.improved:
            b = 0.9 + rng.gauss(0.0, pop.attribution_noise)
        else:
            target = 0.95 if cause == "self" else 0.05 if cause == "exogenous" else 0.5
            b = 0.5 + pop.attribution_skill * (target - 0.5) + rng.gauss(0.0, pop.attribution_noise)
        memory.belief = round(_clip(b, 0.01, 0.99), 2)
        memory.surprised = result.exogenous
        memory.last_action = result.action
        if memory.goal_belief != result.after.goal and rng.random() < 0.2:
            memory.goal_belief = result.after.goal

    def revise(self, state: State, r: Mapping[str, Any], rng: random.Random) -> dict[str, Any] | None:
        """The subject's own revision of r_t at ``state`` (differs from ``r``), or None.

        A subject that misstated its goal corrects it (and re-plans); otherwise it
        re-plans to another sensible action or revises its confidence.
        """
        true_goal = cell_name(state.goal)
        out = dict(r)
        if r.get("goal") != true_goal:
            toward = self._toward(state, state.goal)
            out["goal"] = true_goal
            out["planned_next"] = toward[rng.randrange(len(toward))] if toward else "wait"
            return out
        g = parse_cell(r.get("goal"))
        sensible = set(self._toward(state, g)) if g else set()
        sensible.add("wait")
        alternatives = [a for a in ACTIONS if a in sensible and a != r.get("planned_next")]
        conf = r.get("confidence")
        if alternatives and (conf is None or rng.random() < 0.6):
            out["planned_next"] = alternatives[rng.randrange(len(alternatives))]
            return out
        if conf is None:
            return None
        delta = rng.uniform(0.2, 0.4)
        new = conf - delta if conf - delta >= 0.05 else conf + delta
        out["confidence"] = round(_clip(new, 0.05, 0.99), 2)
        return out if out["confidence"] != conf else None


def draw(probs: Mapping[str, float], rng: random.Random) -> str:
    """One draw from a distribution over actions (in the mapping's order)."""
    u = rng.random()
    acc = 0.0
    last = None
    for a, p in probs.items():
        acc += p
        last = a
        if u < acc:
            return a
    return last
