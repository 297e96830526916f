"""The grid world (:mod:`simworld`) as an environment: walk to a goal cell while a drift sometimes pushes you.

A task table: ``stimulus`` (a stimulus set of :data:`simworld.STIMULUS_SETS`), ``start`` and
``goal`` cells (e.g. ``"B2"``), ``paired_goal`` (the second session's goal, same start),
``budget`` (steps), and optionally ``drift`` (the probability of a push each step, overriding
the stimulus set's; 0 turns it off). Actions: up, down, left, right, wait.

It offers the optional ``resume`` hook (:mod:`environments.base`): an episode rebuilt at a recorded step from
that step's observation text alone (Track 4's interventions).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from environments.base import StepOutcome
from simworld import STIMULUS_SETS
from simworld.render import LANGUAGES, parse_observation
from simworld.world import ACTIONS, GridWorld, cell_name, parse_cell

__all__ = ["GridEnvironment", "ENVIRONMENT"]


class _GridEpisode:
    def __init__(self, world: GridWorld):
        self.world = world

    @property
    def observation(self) -> str:
        return self.world.observation

    @property
    def observation_data(self) -> dict:
        st = self.world.state
        return {"cell": st.cell, "goal": st.goal_cell, "t": st.t, "budget": st.budget, "steps_left": st.steps_left,
                "distance": st.distance, "grid": f"{self.world.layout.width}x{self.world.layout.height}",
                "walls": sorted(cell_name(w) for w in self.world.layout.walls),
                "target": sorted(cell_name(c) for c in self.world.target)}

    @property
    def action_space(self) -> list[str]:
        return list(ACTIONS)

    @property
    def target_reached(self) -> bool:
        return self.world.state.pos in self.world.target

    def toward(self, cells) -> tuple[str, ...]:
        layout, pos = self.world.layout, self.world.state.pos
        best = None
        for c in cells:
            d = layout.distances(parse_cell(c))
            if pos in d and (best is None or d[pos] < best[0]):
                best = (d[pos], d)
        if best is None or best[0] == 0:
            return ()
        here, d = best
        return tuple(a for a in ACTIONS[:4] if d.get(layout.next_pos(pos, a), here) < here)

    @property
    def done(self) -> bool:
        return self.world.done

    def step(self, action: str) -> StepOutcome:
        r = self.world.step(action)
        return StepOutcome(outcome=r.outcome, cause=r.cause, done=r.done, reached=r.reached)


class GridEnvironment:
    name = "grid"
    languages = LANGUAGES

    def check_task(self, task: Mapping) -> list[tuple[str, str]]:
        problems = []
        stim = task.get("stimulus")
        if stim not in STIMULUS_SETS:
            problems.append(("stimulus", f"expected one of {', '.join(sorted(STIMULUS_SETS))}, got {stim!r}"))
            return problems
        layout = STIMULUS_SETS[stim].layout
        cells = {}
        for key in ("start", "goal", "paired_goal"):
            value = task.get(key)
            if value is None and key == "paired_goal":
                continue
            pos = parse_cell(value) if isinstance(value, str) else None
            if pos is None or not layout.is_free(pos):
                problems.append((key, f"expected a free cell of {stim} (e.g. \"B2\"), got {value!r}"))
            else:
                cells[key] = pos
        for key in ("goal", "paired_goal"):
            if key in cells and cells[key] == cells.get("start"):
                problems.append((key, "the goal must differ from the start"))
        if "goal" in cells and cells.get("paired_goal") == cells["goal"]:
            problems.append(("paired_goal", "the paired goal must differ from the goal"))
        budget = task.get("budget")
        if not isinstance(budget, int) or isinstance(budget, bool) or not 1 <= budget <= 100:
            problems.append(("budget", f"expected a whole number of steps from 1 to 100, got {budget!r}"))
        drift = task.get("drift")
        if drift is not None and (not isinstance(drift, (int, float)) or isinstance(drift, bool)
                                  or not 0 <= drift <= 1):
            problems.append(("drift", f"expected a probability from 0 to 1, got {drift!r}"))
        unknown = sorted(set(task) - {"id", "stimulus", "start", "goal", "paired_goal", "budget", "drift"})
        problems += [(k, "unknown key for the grid environment") for k in unknown]
        return problems

    def goals(self, task: Mapping) -> tuple[str, str | None]:
        return task["goal"], task.get("paired_goal")

    def start(self, task: Mapping, *, goal: str, seed: int, language: str,
              target: Sequence[str] | None = None) -> _GridEpisode:
        world = GridWorld(STIMULUS_SETS[task["stimulus"]], rng=random.Random(seed), language=language,
                          drift=task.get("drift"))
        world.reset(task["start"], goal, task["budget"], target=target)
        return _GridEpisode(world)

    def resume(self, stimulus_set: str | None, language: str | None, observation: str | None,
               seed: int) -> _GridEpisode | None:
        """The episode at a recorded step, rebuilt from the step's observation text (the environment's own
        rendering, :func:`simworld.render.parse_observation`): step n of the budget, the cell, the goal; the drift
        is the stimulus set's, drawn from ``random.Random(seed)``; the steps left are budget − n + 1, and the
        target is the goal. None when the step is not one of this environment's: an unknown stimulus set or
        language, or a text that is no grid observation of that stimulus set (an open-ended step's, say)."""
        stim = STIMULUS_SETS.get(stimulus_set) if isinstance(stimulus_set, str) else None
        if stim is None or language not in LANGUAGES:
            return None
        seen = parse_observation(observation, language, stim.layout)
        if seen is None:
            return None
        pos, goal = parse_cell(seen["pos"]), parse_cell(seen["goal"])
        n, budget = seen["n"], seen["budget"]
        if (pos is None or goal is None or pos == goal or not stim.layout.is_free(pos)
                or not stim.layout.is_free(goal) or not 1 <= n <= budget):
            return None
        world = GridWorld(stim, rng=random.Random(seed), language=language)
        world.reset(pos, goal, budget, t=n - 1)
        return _GridEpisode(world)

    def check_region(self, task: Mapping, cells: Sequence[str]) -> str | None:
        stim = STIMULUS_SETS.get(task.get("stimulus"))
        if stim is None:
            return "the task's stimulus set is unknown"
        if isinstance(cells, str) or not cells:
            return "expected a non-empty list of cells"
        for c in cells:
            pos = parse_cell(c) if isinstance(c, str) else None
            if pos is None or not stim.layout.is_free(pos):
                return f"expected free cells of {stim.name} (e.g. \"B2\"), got {c!r}"
            if c == task.get("start"):
                return f"the target region must not hold the start cell {c}"
        return None


#: The entry point ``trb.environments: grid`` (pyproject.toml): loaded by the registry like a lab's environment.
ENVIRONMENT = GridEnvironment()
