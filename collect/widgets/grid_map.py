"""A small text map of a grid environment's state: walls, where the subject is, the goal, where they were before
the last move; and, beside it, what that move and the wind did ("The wind pushed you up: C2 → C3").

Drawn from the environment's structured observation (``observation_data``: ``grid`` "WxH", ``cell``, ``goal``,
``walls``; cells named like a chess board, row 1 at the bottom). An environment without it gets no map.
"""

from __future__ import annotations

import re

from rich.text import Text
from textual.widgets import Static

__all__ = ["GridMap", "grid_of", "move_text", "draw_map"]

_CELL = re.compile(r"^([A-Z])([1-9][0-9]?)$")
_MOVES = {"up": (0, 1), "down": (0, -1), "left": (-1, 0), "right": (1, 0)}
_DIRECTION = {v: k for k, v in _MOVES.items()}
LEGEND = "● you  ◎ goal  ■ wall  ○ before"


def _pos(cell: str) -> tuple[int, int] | None:
    m = _CELL.match(cell or "")
    return None if m is None else (ord(m.group(1)) - 65, int(m.group(2)) - 1)


def _name(pos: tuple[int, int]) -> str:
    return f"{chr(65 + pos[0])}{pos[1] + 1}"


def grid_of(data: dict | None) -> tuple[int, int, set[tuple[int, int]]] | None:
    """(width, height, walls) of a grid observation, or None when ``data`` describes no grid."""
    if not isinstance(data, dict):
        return None
    m = re.match(r"^(\d+)x(\d+)$", str(data.get("grid", "")))
    if m is None or _pos(data.get("cell")) is None or _pos(data.get("goal")) is None:
        return None
    walls = {p for p in (_pos(w) for w in data.get("walls") or ()) if p is not None}
    return int(m.group(1)), int(m.group(2)), walls


def draw_map(data: dict, before: str | None = None) -> Text:
    """The grid, row numbers on the left, column letters on top; ● the subject, ◎ the goal, ■ walls, ○ ``before``."""
    width, height, walls = grid_of(data)
    here, goal, was = _pos(data["cell"]), _pos(data["goal"]), _pos(before) if before else None
    text = Text(no_wrap=True)
    text.append("   " + " ".join(chr(65 + x) for x in range(width)) + "\n", style="dim")
    for y in reversed(range(height)):
        text.append(f"{y + 1:>2} ", style="dim")
        for x in range(width):
            p = (x, y)
            if p == here:
                text.append("●", style="bold")
            elif p == goal:
                text.append("◎", style="bold")
            elif p in walls:
                text.append("■")
            elif p == was:
                text.append("○")
            else:
                text.append("·", style="dim")
            if x < width - 1:
                text.append(" ")
        text.append("\n")
    text.append(LEGEND, style="dim")
    return text


def move_text(seen: dict | None, action: str, cause: str | None, now: dict | None) -> str:
    """What the last move and the wind did, from the grid observations before (``seen``) and after (``now``) it and
    the environment's cause of the change (``self``, ``exogenous``, ``both``, ``none``); "" when not a grid."""
    if grid_of(seen) is None or grid_of(now) is None:
        return ""
    width, height, walls = grid_of(seen)
    before, after = _pos(seen["cell"]), _pos(now["cell"])
    d = _MOVES.get(action)
    moved_to = before
    if d is not None:
        nxt = (before[0] + d[0], before[1] + d[1])
        if 0 <= nxt[0] < width and 0 <= nxt[1] < height and nxt not in walls:
            moved_to = nxt
    if d is None:
        mine = f"Your move: {action}; you stayed at {_name(before)}."
    elif moved_to == before:
        mine = f"Your move: {action}, blocked by a wall or the edge; you stayed at {_name(before)}."
    else:
        mine = f"Your move: {action}, {_name(before)} → {_name(moved_to)}."
    push = (after[0] - moved_to[0], after[1] - moved_to[1])
    if cause in ("exogenous", "both") and push in _DIRECTION:
        wind = f"Then the wind pushed you {_DIRECTION[push]}: {_name(moved_to)} → {_name(after)}."
    elif after == moved_to:
        wind = "The wind did not move you."
    else:
        wind = f"Then something moved you to {_name(after)}."
    return f"{mine} {wind}"


class GridMap(Static):
    """The map of the current step (hidden when the environment's observation describes no grid)."""

    DEFAULT_CSS = """
    GridMap { width: auto; height: auto; margin-right: 2; }
    """

    def show(self, data: dict | None, before: str | None = None) -> None:
        grid = grid_of(data)
        if self.display != (grid is not None):
            self.display = grid is not None
        if grid is not None:
            self.update(draw_map(data, before))
