"""Φ(r') as a small bar chart: one bar per action, the humans' share of it."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

__all__ = ["PhiBars", "compare_bars_text", "phi_bars_text"]

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


def compare_bars_text(model: dict[str, float] | None, phi: dict[str, float] | None, *, width: int = 14,
                      planned: str | None = None, taken: str | None = None) -> Text:
    """The model's distribution beside Φ(r′), one row per action (by Φ, largest first): two bars and their
    values; r′'s planned action is marked ``← r′``, the action the agent took ``◀ taken``."""
    text = Text()
    model, phi = model or {}, phi or {}
    actions = sorted({*model, *phi}, key=lambda a: (-phi.get(a, 0.0), -model.get(a, 0.0), a))
    if not actions:
        text.append("no distributions recorded for this item", style="dim italic")
        return text
    name_w = max(6, *(len(a) for a in actions))
    text.append(f"{'action':<{name_w}} {'model p(·|do(r′))':<{width + 5}}  {'Φ(r′), humans':<{width + 5}}\n",
                style="bold")
    for i, a in enumerate(actions):
        if i:
            text.append("\n")
        text.append(f"{a:<{name_w}} ", style="bold" if a == planned else "")
        p = model.get(a)
        text.append(_bar(p or 0.0, width), style="magenta")
        text.append(f" {p:4.2f}" if p is not None else "    —")
        text.append("  ")
        q = phi.get(a)
        text.append(_bar(q or 0.0, width), style="green")
        text.append(f" {q:4.2f}" if q is not None else "    —")
        if a == planned:
            text.append("  ← r′", style="cyan")
        if a == taken:
            text.append("  ◀ taken", style="yellow")
    return text
