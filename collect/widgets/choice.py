"""A choice among a few options (an action space), made by key: a digit picks one, ←/→ move, Enter goes on."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.binding import Binding
from textual.reactive import reactive
from textual.widget import Widget

__all__ = ["ChoiceBar", "MAX_OPTIONS"]

#: Options beyond nine have no digit key; they are reached with ←/→.
MAX_OPTIONS = 9


class ChoiceBar(Widget, can_focus=True):
    """``1 up  2 down  3 left …``: nothing chosen until the subject presses a digit or an arrow."""

    DEFAULT_CSS = """
    ChoiceBar { height: 1; width: 1fr; }
    """
    BINDINGS = [
        Binding("left", "move(-1)", "Previous", show=False),
        Binding("right", "move(1)", "Next", show=False),
        Binding("enter", "advance", "Go on", show=False),
        *(Binding(str(k), f"pick({k - 1})", f"Choose {k}", show=False) for k in range(1, MAX_OPTIONS + 1)),
    ]

    value: reactive[str | None] = reactive(None)

    def __init__(self, options: list[str], *, value: str | None = None, id: str | None = None,
                 on_enter: Callable[[ChoiceBar], None] | None = None) -> None:
        super().__init__(id=id)
        self.on_enter = on_enter  # Enter: go on to the next field (or act, on the last one), called at once
        self.options = list(options)
        self.set_reactive(ChoiceBar.value, value if value in self.options else None)

    def render(self) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        for i, option in enumerate(self.options):
            key = str(i + 1) if i < MAX_OPTIONS else "·"
            chosen = option == self.value
            text.append(f"{key} ", style="bold" if not chosen else "bold reverse")
            text.append(option, style="reverse" if chosen else "")
            if i < len(self.options) - 1:
                text.append("  ")
        if self.value is None:
            text.append("  —", style="dim")
        return text

    def action_pick(self, index: int) -> None:
        if 0 <= index < len(self.options):
            self.value = self.options[index]

    def action_move(self, delta: int) -> None:
        if self.value is None:
            self.value = self.options[0 if delta > 0 else -1]
            return
        i = self.options.index(self.value)
        self.value = self.options[(i + delta) % len(self.options)]

    def action_advance(self) -> None:
        if self.on_enter is not None:
            self.on_enter(self)
