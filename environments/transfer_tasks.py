"""How the built-in task set's transfer tasks were made (``environments/tasksets/grid-rollouts-v2.toml``).

v2 is v1's in-distribution tasks unchanged, plus, for each simulated transfer context
(:data:`simworld.contexts.TRANSFER_CONTEXTS`), :data:`PER_CONTEXT` viability and navigation tasks on the
context's held-out stimulus set, in its language, drawn with the fixed seed ``"trb-taskset:grid-rollouts:2"``
(``random.Random`` of the seed string and the context id). No loop tasks: CG-2 is not a headline figure, and
Track 6 re-reads headline figures. Run ``python -m environments.transfer_tasks`` to print the transfer section;
a test checks that the shipped file holds exactly it.
"""

from __future__ import annotations

import random

from simworld.contexts import STIMULUS_SETS, TRANSFER_CONTEXTS
from simworld.world import cell_name

__all__ = ["PER_CONTEXT", "SEED", "transfer_section"]

#: Viability and navigation tasks per transfer context.
PER_CONTEXT = 4
SEED = "trb-taskset:grid-rollouts:2"


def _pick(rng: random.Random, stim, lo: int, hi: int, avoid=()) -> tuple:
    """A (start, goal) pair of free cells whose path distance is in [lo, hi]."""
    cells = sorted(stim.layout.cells)
    while True:
        start, goal = rng.choice(cells), rng.choice(cells)
        d = stim.layout.distances(goal).get(start)
        if d is not None and lo <= d <= hi and goal not in avoid and start not in avoid:
            return start, goal, d


def _tasks(spec, rng: random.Random) -> list[str]:
    stim = STIMULUS_SETS[spec.stimulus]
    lo, hi = stim.start_distance
    prefix = spec.key.removeprefix("xfer-lab-")
    out = []
    for i in range(PER_CONTEXT):
        start, goal, d = _pick(rng, stim, max(3, lo - 2), hi - 2)
        budget = min(stim.budget[1], d + rng.randint(2, 4))
        out.append("\n".join(["[[viability]]", f'id = "x{prefix}-v{i + 1:02d}"', f'context = "{spec.context_id}"',
                              f'stimulus = "{spec.stimulus}"', f'start = "{cell_name(start)}"',
                              f'goal = "{cell_name(goal)}"', f"budget = {budget}"]))
    for i in range(PER_CONTEXT):
        start, goal, d = _pick(rng, stim, max(3, lo - 2), hi - 2)
        dist = stim.layout.distances
        free = [c for c, dd in dist(start).items() if 3 <= dd <= d + 1 and c != goal and dist(goal).get(c, 0) >= 3]
        target = rng.choice(sorted(free))
        budget = min(stim.budget[1], dist(target)[start] + rng.randint(2, 4))
        out.append("\n".join(["[[navigation]]", f'id = "x{prefix}-n{i + 1:02d}"', f'context = "{spec.context_id}"',
                              f'stimulus = "{spec.stimulus}"', f'start = "{cell_name(start)}"',
                              f'goal = "{cell_name(goal)}"', f'target = ["{cell_name(target)}"]',
                              f"budget = {budget}"]))
    return out


def transfer_section() -> str:
    """The transfer tasks of grid-rollouts v2, as TOML text (deterministic)."""
    blocks = []
    for spec in TRANSFER_CONTEXTS:
        blocks += _tasks(spec, random.Random(f"{SEED}:{spec.context_id}"))
    return "\n\n".join(blocks) + "\n"


if __name__ == "__main__":  # pragma: no cover
    print(transfer_section(), end="")
