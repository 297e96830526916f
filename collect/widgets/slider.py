"""A probability slider: 0–100 % in 5 % steps with ←/→ (Home 0 %, End 100 %), its value always shown."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.binding import Binding
from textual.reactive import reactive
from textual.widget import Widget

__all__ = ["Slider", "STEP"]

#: One press of ←/→, as a probability.
STEP = 0.05
_CELLS = 20


class Slider(Widget, can_focus=True):
    """Unset (None) until the subject moves it: the first ←/→ sets 50 %; the value is a probability."""

    DEFAULT_CSS = """
    Slider { height: 1; width: 1fr; }
    """
    BINDINGS = [
        Binding("left", "move(-1)", "Less", show=False),
        Binding("right", "move(1)", "More", show=False),
        Binding("home", "set(0)", "0 %", show=False),
        Binding("end", "set(20)", "100 %", show=False),
        Binding("enter", "advance", "Go on", show=False),
    ]

    steps: reactive[int | None] = reactive(None)  # the value in 5 % steps, 0..20

    def __init__(self, *, low: str = "", high: str = "", value: float | None = None, id: str | None = None,
                 on_enter: Callable[[Slider], None] | None = None) -> None:
        super().__init__(id=id)
        self.on_enter = on_enter  # Enter: go on to the next field, called at once
        self.low, self.high = low, high
        self.set_reactive(Slider.steps, None if value is None else max(0, min(_CELLS, round(value / STEP))))

    @property
    def value(self) -> float | None:
        return None if self.steps is None else round(self.steps * STEP, 2)

    def render(self) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        if self.low:
            text.append(f"{self.low} ", style="dim")
        if self.steps is None:
            text.append("─" * (_CELLS + 1), style="dim")
        else:
            text.append("━" * self.steps, style="bold")
            text.append("●", style="bold")
            text.append("─" * (_CELLS - self.steps), style="dim")
        if self.high:
            text.append(f" {self.high}", style="dim")
        text.append("  not set: ←/→" if self.steps is None else f" {self.steps * 5:>3} %",
                    style="italic" if self.steps is None else "bold")
        return text

    def action_move(self, delta: int) -> None:
        self.steps = _CELLS // 2 if self.steps is None else max(0, min(_CELLS, self.steps + delta))

    def action_set(self, steps: int) -> None:
        self.steps = steps

    def action_advance(self) -> None:
        if self.on_enter is not None:
            self.on_enter(self)
