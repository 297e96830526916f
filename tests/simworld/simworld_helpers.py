"""An independent re-implementation of the world's geometry, and the corpus the simworld tests share."""

from __future__ import annotations

import re
from collections import deque

SEED = 2026
N = 300

CELL = re.compile(r"\b([A-Z])([0-9]{1,2})\b")
ACTIONS = ("up", "down", "left", "right", "wait")
DELTA = {"up": (0, 1), "down": (0, -1), "left": (-1, 0), "right": (1, 0), "wait": (0, 0)}


def cell(name: str) -> tuple[int, int]:
    return (ord(name[0]) - 65, int(name[1:]) - 1)


def cells_in(text: str) -> list[tuple[int, int]]:
    """Every cell name in a text, in order, as (column, row) from 0."""
    return [(ord(c) - 65, int(r) - 1) for c, r in CELL.findall(text)]


def free(stim, pos) -> bool:
    lay = stim.layout
    return 0 <= pos[0] < lay.width and 0 <= pos[1] < lay.height and pos not in lay.walls


def move(stim, pos, action):
    """Where ``action`` takes the agent (itself when blocked), computed here, not by simworld."""
    dx, dy = DELTA[action]
    nxt = (pos[0] + dx, pos[1] + dy)
    return nxt if free(stim, nxt) else pos


def bfs(stim, goal) -> dict:
    dist = {goal: 0}
    q = deque([goal])
    while q:
        p = q.popleft()
        for a in ACTIONS[:4]:
            n = move(stim, p, a)
            if n not in dist:
                dist[n] = dist[p] + 1
                q.append(n)
    return dist
