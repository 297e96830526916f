"""A corridor of cells c0 … c{length-1}: walk to the goal cell with left, right or wait; a gust may push you.

A task table: ``start`` and ``goal`` cells (``"c2"``), ``paired_goal`` (optional), ``length`` (cells, 3 to 20),
``budget`` (steps, 1 to 50) and ``gust`` (the probability of a push to the right each step, default 0).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from environments import StepOutcome

__all__ = ["Corridor", "ENVIRONMENT"]

ACTIONS = ("left", "right", "wait")


def _cell(value) -> int | None:
    if isinstance(value, str) and value[:1] == "c" and value[1:].isdigit():
        return int(value[1:])
    return None


class _Episode:
    def __init__(self, length: int, pos: int, target: set[int], budget: int, gust: float, rng: random.Random):
        self.length, self.pos, self.target, self.budget, self.gust, self.rng = length, pos, target, budget, gust, rng
        self.t = 0

    @property
    def observation(self) -> str:
        return f"You are at c{self.pos} of a corridor c0-c{self.length - 1}; {self.budget - self.t} step(s) left."

    @property
    def observation_data(self) -> dict:
        return {"cell": f"c{self.pos}", "t": self.t, "steps_left": self.budget - self.t}

    @property
    def action_space(self) -> list[str]:
        return list(ACTIONS)

    @property
    def target_reached(self) -> bool:
        return self.pos in self.target

    @property
    def done(self) -> bool:
        return self.target_reached or self.t >= self.budget

    def toward(self, cells: Sequence[str]) -> tuple[str, ...]:
        goals = [c for c in map(_cell, cells) if c is not None]
        if not goals or self.pos in goals:
            return ()
        nearest = min(goals, key=lambda c: abs(c - self.pos))
        return ("right",) if nearest > self.pos else ("left",)

    def step(self, action: str) -> StepOutcome:
        before = self.pos
        moved = {"left": -1, "right": 1}.get(action, 0)
        self.pos = min(max(self.pos + moved, 0), self.length - 1)
        mine = self.pos != before
        pushed = self.rng.random() < self.gust and self.pos < self.length - 1
        if pushed:
            self.pos += 1
        self.t += 1
        cause = "both" if mine and pushed else "self" if mine else "exogenous" if pushed else "none"
        return StepOutcome(outcome=f"You are at c{self.pos}.", cause=cause, done=self.done,
                           reached=self.target_reached)


class Corridor:
    name = "corridor"
    languages = ("en",)

    def check_task(self, task: Mapping) -> list[tuple[str, str]]:
        problems = []
        length = task.get("length")
        if not isinstance(length, int) or isinstance(length, bool) or not 3 <= length <= 20:
            return [("length", f"expected a whole number of cells from 3 to 20, got {length!r}")]
        for key in ("start", "goal", "paired_goal"):
            if key == "paired_goal" and key not in task:
                continue
            c = _cell(task.get(key))
            if c is None or not 0 <= c < length:
                problems.append((key, f"expected a cell c0 to c{length - 1}, got {task.get(key)!r}"))
        if task.get("goal") == task.get("start"):
            problems.append(("goal", "the goal must differ from the start"))
        budget = task.get("budget")
        if not isinstance(budget, int) or isinstance(budget, bool) or not 1 <= budget <= 50:
            problems.append(("budget", f"expected a whole number of steps from 1 to 50, got {budget!r}"))
        gust = task.get("gust", 0)
        if not isinstance(gust, (int, float)) or isinstance(gust, bool) or not 0 <= gust <= 1:
            problems.append(("gust", f"expected a probability from 0 to 1, got {gust!r}"))
        unknown = sorted(set(task) - {"id", "start", "goal", "paired_goal", "length", "budget", "gust"})
        return problems + [(k, "unknown key for the corridor environment") for k in unknown]

    def goals(self, task: Mapping) -> tuple[str, str | None]:
        return task["goal"], task.get("paired_goal")

    def start(self, task: Mapping, *, goal: str, seed: int, language: str,
              target: Sequence[str] | None = None) -> _Episode:
        cells = {_cell(c) for c in (target or [goal])}
        return _Episode(task["length"], _cell(task["start"]), cells, task["budget"], float(task.get("gust", 0)),
                        random.Random(seed))

    def check_region(self, task: Mapping, cells: Sequence[str]) -> str | None:
        if isinstance(cells, str) or not cells:
            return "expected a non-empty list of cells"
        for c in cells:
            if _cell(c) is None or not 0 <= _cell(c) < task.get("length", 0):
                return f"expected cells c0 to c{task.get('length', 0) - 1}, got {c!r}"
            if c == task.get("start"):
                return f"the target region must not hold the start cell {c}"
        return None


ENVIRONMENT = Corridor()
