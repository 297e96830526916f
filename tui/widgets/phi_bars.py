"""Φ(r') as a small bar chart: one bar per action, the humans' share of it."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

__all__ = ["PhiBars", "phi_bars_text"]

_EIGHTHS = " ▏▎▍▌▋▊▉"


def _bar(p: float, width: int) -> str:
    cells = max(0.0, min(1.0, p)) * width
    full = int(cells)
    rest = int(round((cells - full) * 8))
    if rest == 8:
        full, rest = full + 1, 0
    return ("█" * full + (_EIGHTHS[rest] if rest else "")).ljust(width)


def phi_bars_text(probs: dict[str, float] | None, *, width: int = 20, taken: str | None = None,
                  planned: str | None = None) -> Text:
    """Bars for ``probs`` (largest first); ``taken`` (the action the agent took) is marked ``◀ taken``.

    ``planned`` (r'.planned_next) is marked ``← r'``.
    """
    text = Text()
    if not probs:
        text.append("Φ not collected", style="dim italic")
        return text
    name_w = max(len(a) for a in probs)
    for i, (action, p) in enumerate(sorted(probs.items(), key=lambda kv: (-kv[1], kv[0]))):
        if i:
            text.append("\n")
        text.append(f"{action:<{name_w}} ", style="bold" if action == planned else "")
        text.append(_bar(p, width), style="green")
        text.append(f" {p:4.2f}")
        if action == planned:
            text.append("  ← r'", style="cyan")
        if action == taken:
            text.append("  ◀ taken", style="yellow")
    return text


class PhiBars(Static):
    """A Static that shows one Φ distribution as bars."""

    DEFAULT_CSS = "PhiBars { height: auto; }"

    def __init__(self, probs: dict[str, float] | None, *, taken: str | None = None, planned: str | None = None,
                 width: int = 20, **kw):
        super().__init__(phi_bars_text(probs, width=width, taken=taken, planned=planned), **kw)
