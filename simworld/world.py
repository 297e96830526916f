"""The grid world: cells, walls, moves, drift, and episodes with a step budget.

The model of the world
----------------------
A :class:`Layout` is a W×H grid of cells named like a chess board: the column is a
letter (``A`` is the left-most column) and the row a number (``1`` is the bottom
row), so ``C3`` is column 3, row 3. Some cells may be walls. The agent stands on one
free cell and chooses one of five discrete actions, :data:`ACTIONS`:

* ``up`` raises the row number by one, ``down`` lowers it, ``left`` and ``right``
  change the column;
* ``wait`` stays put.

A move into a wall or off the grid is *blocked*: the agent stays where it is.

A :class:`StimulusSet` is a layout plus the way the environment itself changes
things: every step, after the agent's action, the **drift** (a gust of wind) fires
with probability ``drift`` and pushes the agent one cell in a direction drawn from
``wind``; a push into a wall or off the grid does nothing. So when the agent ends a
step closer to its goal, the cause can be its own move, the drift, or both, and the
outcome text ("you are now at D4, closer to the goal") reads the same in every
case: that is the raw material of Track 3's attribution items.

A :class:`GridWorld` runs one episode at a time: :meth:`GridWorld.reset` places the
agent on a start cell with a goal cell and a step budget; :meth:`GridWorld.step`
applies an action and the drift and returns a :class:`StepResult`. The episode ends
when the agent stands on the goal at the end of a step (reached) or when the budget
is spent (missed). Distances are shortest-path distances through free cells (the
Manhattan distance on a grid without walls).

Goals are only ever drawn from the *interior* free cells of a stimulus set
(:attr:`StimulusSet.goal_cells`); the border cells are never goals
(:attr:`StimulusSet.never_goal_cells`), which is what makes a goal there
out-of-distribution for a counterfactual.
"""

from __future__ import annotations

import random
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Literal

from simworld.render import LANGUAGES, render_observation, render_outcome

__all__ = [
    "ACTIONS",
    "MOVES",
    "Pos",
    "cell_name",
    "parse_cell",
    "Layout",
    "StimulusSet",
    "State",
    "StepResult",
    "GridWorld",
]

#: The discrete action space of every step, in a fixed order.
ACTIONS: tuple[str, ...] = ("up", "down", "left", "right", "wait")
#: The four moves as (column delta, row delta).
MOVES: dict[str, tuple[int, int]] = {"up": (0, 1), "down": (0, -1), "left": (-1, 0), "right": (1, 0)}

Pos = tuple[int, int]
Navigation = Literal["path", "direct"]

_COLUMNS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_CELL_RE = re.compile(r"^([A-Z])([1-9][0-9]?)$")


def cell_name(pos: Pos) -> str:
    """``(2, 2)`` -> ``"C3"``: column letter, then the 1-based row."""
    x, y = pos
    return f"{_COLUMNS[x]}{y + 1}"


def parse_cell(name: object) -> Pos | None:
    """``"C3"`` -> ``(2, 2)``; ``None`` for anything that is not a cell name (no bounds check)."""
    if not isinstance(name, str):
        return None
    return _parse_cell(name)


@lru_cache(maxsize=4096)
def _parse_cell(name: str) -> Pos | None:
    m = _CELL_RE.match(name)
    if m is None:
        return None
    return (ord(m.group(1)) - 65, int(m.group(2)) - 1)


class Layout:
    """A W×H grid with walls: which cells are free, where each action leads, distances."""

    def __init__(self, width: int, height: int, walls: Iterable[str | Pos] = ()) -> None:
        if not (1 <= width <= 26 and 1 <= height <= 99):
            raise ValueError(f"grid must be 1..26 wide and 1..99 high, got {width}x{height}")
        self.width = width
        self.height = height
        wall_set = set()
        for w in walls:
            pos = parse_cell(w) if isinstance(w, str) else tuple(w)
            if pos is None or not self.in_bounds(pos):
                raise ValueError(f"wall {w!r} is not a cell of a {width}x{height} grid")
            wall_set.add(pos)
        self.walls: frozenset[Pos] = frozenset(wall_set)
        #: Free cells in reading order (row 1 first, then by column).
        self.cells: tuple[Pos, ...] = tuple(
            (x, y) for y in range(height) for x in range(width) if (x, y) not in self.walls
        )
        self._free = frozenset(self.cells)
        # where each action leads from each free cell (the same cell when blocked or waiting)
        self._next: dict[Pos, dict[str, Pos]] = {}
        for pos in self.cells:
            row = {}
            for a in ACTIONS:
                dx, dy = MOVES.get(a, (0, 0))
                nxt = (pos[0] + dx, pos[1] + dy)
                row[a] = nxt if nxt in self._free else pos
            self._next[pos] = row
        self._dist: dict[Pos, dict[Pos, int]] = {}
        self._improving: dict[tuple[Pos, Pos, str], tuple[str, ...]] = {}

    def __repr__(self) -> str:
        walls = ",".join(sorted(cell_name(w) for w in self.walls))
        return f"Layout({self.width}x{self.height}, walls=[{walls}])"

    def in_bounds(self, pos: Pos) -> bool:
        return 0 <= pos[0] < self.width and 0 <= pos[1] < self.height

    def is_free(self, pos: Pos) -> bool:
        return pos in self._free

    def on_border(self, pos: Pos) -> bool:
        return pos[0] in (0, self.width - 1) or pos[1] in (0, self.height - 1)

    def next_pos(self, pos: Pos, action: str) -> Pos:
        """Where ``action`` takes the agent from free cell ``pos`` (``pos`` itself when blocked)."""
        return self._next[pos][action]

    def blocked(self, pos: Pos, action: str) -> bool:
        """True for a move that a wall or the grid's edge stops."""
        return action != "wait" and self._next[pos][action] == pos

    def distances(self, goal: Pos) -> dict[Pos, int]:
        """Shortest-path distance to ``goal`` from every free cell that can reach it (BFS, cached)."""
        d = self._dist.get(goal)
        if d is None:
            d = {}
            if goal in self._free:
                d[goal] = 0
                queue = deque([goal])
                while queue:
                    p = queue.popleft()
                    dp = d[p] + 1
                    for q in self._next[p].values():
                        if q not in d:
                            d[q] = dp
                            queue.append(q)
            self._dist[goal] = d
        return d

    def distance(self, a: Pos, b: Pos) -> int | None:
        """Shortest-path distance between free cells, ``None`` when unreachable."""
        return self.distances(b).get(a)

    def improving_actions(self, pos: Pos, goal: Pos, navigation: Navigation = "path") -> tuple[str, ...] | None:
        """The moves that bring the agent closer to ``goal``, as a navigator of this kind sees it.

        ``path``: moves that lower the shortest-path distance (never into a wall).
        ``direct``: moves that lower the Manhattan distance, walls ignored (so they can
        be blocked). ``()`` when the agent already stands on ``goal``; ``None`` when
        ``goal`` is no goal for this navigator (off the grid; for ``path`` also a wall
        or unreachable).
        """
        key = (pos, goal, navigation)
        hit = self._improving.get(key)
        if hit is not None or key in self._improving:
            return hit
        res: tuple[str, ...] | None
        if navigation == "path":
            d = self.distances(goal) if goal in self._free else {}
            here = d.get(pos)
            if here is None:
                res = None
            else:
                nxt = self._next[pos]
                res = tuple(a for a in ACTIONS[:4] if d.get(nxt[a], here) < here)
        elif navigation == "direct":
            if not self.in_bounds(goal):
                res = None
            else:
                gx, gy = goal
                x, y = pos
                res = tuple(
                    a for a in ACTIONS[:4]
                    if abs(gx - x - MOVES[a][0]) + abs(gy - y - MOVES[a][1]) < abs(gx - x) + abs(gy - y)
                )
        else:
            raise ValueError(f"unknown navigation {navigation!r}")
        self._improving[key] = res
        return res

    def is_connected(self) -> bool:
        return not self.cells or len(self.distances(self.cells[0])) == len(self.cells)


@dataclass(frozen=True, eq=False)
class StimulusSet:
    """A layout and its drift: one stimulus set of the simulated task world."""

    name: str
    description: str
    layout: Layout
    #: Probability that the drift fires on a step.
    drift: float
    #: Push direction -> probability (up, down, left, right; sums to 1).
    wind: dict[str, float]
    #: Inclusive range of start-to-goal path distances the recorder draws.
    start_distance: tuple[int, int] = (6, 9)
    #: Inclusive range of step budgets the recorder draws.
    budget: tuple[int, int] = (8, 14)

    def __post_init__(self) -> None:
        if not 0.0 <= self.drift <= 1.0:
            raise ValueError(f"{self.name}: drift must be a probability")
        if set(self.wind) != set(MOVES) or abs(sum(self.wind.values()) - 1.0) > 1e-9:
            raise ValueError(f"{self.name}: wind must give a probability to each of {sorted(MOVES)}, summing to 1")
        if not self.layout.is_connected():
            raise ValueError(f"{self.name}: the free cells must be connected")

    @cached_property
    def goal_cells(self) -> tuple[Pos, ...]:
        """The cells goals are drawn from: free cells off the border."""
        return tuple(p for p in self.layout.cells if not self.layout.on_border(p))

    @cached_property
    def never_goal_cells(self) -> tuple[Pos, ...]:
        """Free cells that are never goals (the border): a goal there is out-of-distribution."""
        return tuple(p for p in self.layout.cells if self.layout.on_border(p))

    @cached_property
    def _wind_cdf(self) -> tuple[tuple[float, str], ...]:
        acc, out = 0.0, []
        for d in ACTIONS[:4]:
            acc += self.wind[d]
            out.append((acc, d))
        return tuple(out)

    def draw_wind(self, rng: random.Random) -> str:
        u = rng.random()
        for c, d in self._wind_cdf:
            if u < c:
                return d
        return self._wind_cdf[-1][1]

    @cached_property
    def _tasks(self) -> tuple[tuple[Pos, tuple[Pos, ...]], ...]:
        lo, hi = self.start_distance
        goals = self.goal_cells
        out = []
        for s in self.layout.cells:
            ok = tuple(g for g in goals if lo <= (self.layout.distance(s, g) or -1) <= hi)
            if len(ok) >= 2:
                out.append((s, ok))
        if not out:
            raise ValueError(f"{self.name}: no start cell has two goals at distance {lo}..{hi}")
        return tuple(out)

    def sample_task(self, rng: random.Random, n_goals: int = 1) -> tuple[Pos, tuple[Pos, ...]]:
        """A start cell and ``n_goals`` (1 or 2) distinct goal cells at a start distance in range."""
        if n_goals not in (1, 2):
            raise ValueError("n_goals must be 1 or 2")
        start, goals = self._tasks[rng.randrange(len(self._tasks))]
        picked = rng.sample(goals, n_goals)
        return start, tuple(picked)

    def sample_budget(self, rng: random.Random) -> int:
        lo, hi = self.budget
        return rng.randint(lo, hi)


@dataclass(frozen=True, slots=True)
class State:
    """What the agent is in at the start of a step: where it stands, its goal, the budget."""

    layout: Layout
    pos: Pos
    goal: Pos
    t: int
    budget: int

    @property
    def cell(self) -> str:
        return cell_name(self.pos)

    @property
    def goal_cell(self) -> str:
        return cell_name(self.goal)

    @property
    def steps_left(self) -> int:
        return self.budget - self.t

    @property
    def distance(self) -> int:
        """Shortest-path distance from the agent to its goal."""
        return self.layout.distances(self.goal)[self.pos]


@dataclass(frozen=True, slots=True)
class StepResult:
    """What one step did: the action's effect, the drift's, the outcome and the next observation."""

    action: str
    before: State
    after: State
    #: The agent's own action moved it (a move that was not blocked).
    moved_by_self: bool
    #: The action was a move that a wall or the edge stopped.
    blocked: bool
    #: Direction of the drift push that moved the agent this step, or None.
    drift: str | None
    distance_before: int
    distance_after: int
    #: The agent stands in the target region (the goal cell unless reset() was given another target).
    reached: bool
    done: bool
    #: Plain-text outcome (the context's language): position and whether closer.
    outcome: str
    #: Plain-text observation of ``after``.
    observation: str

    @property
    def exogenous(self) -> bool:
        """An exogenous change happened: the drift moved the agent."""
        return self.drift is not None

    @property
    def improved(self) -> bool:
        return self.distance_after < self.distance_before

    @property
    def cause(self) -> Literal["self", "exogenous", "both", "none"]:
        """Who moved the agent this step."""
        if self.moved_by_self:
            return "both" if self.drift is not None else "self"
        return "exogenous" if self.drift is not None else "none"


class GridWorld:
    """One episode at a time in a stimulus set: ``reset`` then ``step`` until ``done``.

    ``rng`` draws the drift (pass the session's generator for reproducible runs);
    ``language`` is the language of the observation and outcome texts; ``drift``
    overrides the stimulus set's drift probability (0 turns it off).
    """

    def __init__(
        self,
        stimulus: StimulusSet,
        *,
        rng: random.Random | None = None,
        language: str = "en",
        drift: float | None = None,
    ) -> None:
        if language not in LANGUAGES:
            raise ValueError(f"unsupported language {language!r}; one of {LANGUAGES}")
        self.stimulus = stimulus
        self.layout = stimulus.layout
        self.rng = rng if rng is not None else random.Random(0)
        self.language = language
        self.drift = stimulus.drift if drift is None else float(drift)
        self._state: State | None = None
        self.target: frozenset[Pos] = frozenset()
        self._done = True
        self.observation: str = ""

    @property
    def state(self) -> State:
        if self._state is None:
            raise RuntimeError("call reset() first")
        return self._state

    @property
    def done(self) -> bool:
        return self._done

    def _pos(self, cell: str | Pos, what: str) -> Pos:
        pos = parse_cell(cell) if isinstance(cell, str) else tuple(cell)
        if pos is None or not self.layout.is_free(pos):
            raise ValueError(f"{what} {cell!r} is not a free cell of {self.stimulus.name}")
        return pos

    def reset(self, start: str | Pos, goal: str | Pos, budget: int,
              target: Iterable[str | Pos] | None = None, t: int = 0) -> State:
        """Start an episode at ``start`` with ``goal`` and ``budget`` steps; return the first state.

        ``t`` (default 0) starts it part-way, at step ``t`` (0-based) of the budget with ``budget - t`` steps left:
        an episode resumed at a recorded step (:meth:`environments.grid.GridEnvironment.resume`).

        ``target`` (cells) is the region whose reaching ends the episode (default: the goal cell alone).
        A target other than the goal is what a rollout steers toward (Track 5): the observation still
        names the goal, and reaching the goal then does not end the episode.
        """
        s, g = self._pos(start, "start"), self._pos(goal, "goal")
        if s == g:
            raise ValueError("start and goal must differ")
        if not isinstance(budget, int) or budget < 1:
            raise ValueError("budget must be a positive int")
        if not isinstance(t, int) or not 0 <= t < budget:
            raise ValueError(f"the start step must be from 0 to budget - 1 ({budget - 1}), got {t!r}")
        self.target = frozenset([g]) if target is None else frozenset(self._pos(c, "target") for c in target)
        if not self.target or s in self.target:
            raise ValueError("the target region must be non-empty and must not hold the start")
        self._state = State(self.layout, s, g, t, budget)
        self._done = False
        self.observation = render_observation(self._state, self.language)
        return self._state

    def step(self, action: str) -> StepResult:
        """Apply ``action``, then the drift; return what happened."""
        if self._done:
            raise RuntimeError("the episode is over; call reset()")
        before = self._state
        nxt = self.layout._next[before.pos]
        try:
            pos = nxt[action]
        except KeyError:
            raise ValueError(f"unknown action {action!r}; one of {ACTIONS}") from None
        moved = pos != before.pos
        blocked = action != "wait" and not moved
        drift = None
        if self.rng.random() < self.drift:
            d = self.stimulus.draw_wind(self.rng)
            pushed = self.layout._next[pos][d]
            if pushed != pos:
                pos, drift = pushed, d
        dist = self.layout.distances(before.goal)
        d0, d1 = dist[before.pos], dist[pos]
        t = before.t + 1
        after = State(self.layout, pos, before.goal, t, before.budget)
        reached = pos in self.target
        done = reached or t >= before.budget
        outcome = render_outcome(
            self.language, cell_name(pos), d0, d1,
            moved=pos != before.pos, reached=pos == before.goal, out_of_budget=done and not reached,
        )
        self._state, self._done = after, done
        self.observation = render_observation(after, self.language)
        return StepResult(
            action, before, after, moved, blocked, drift, d0, d1, reached, done, outcome, self.observation
        )
