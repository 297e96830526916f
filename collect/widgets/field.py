"""A one-line text answer: every printable character is typed into it (``?`` too: help is F1 there), a prefilled
answer is never selected (the cursor goes to its end, so a stray key adds to it instead of replacing it), and
Enter calls the form at once (``on_enter``), not through a message that keys typed meanwhile would overtake."""

from __future__ import annotations

from collections.abc import Callable

from textual.widgets import Input

__all__ = ["AnswerInput"]


class AnswerInput(Input):
    def __init__(self, *args, on_enter: Callable[[AnswerInput], None] | None = None, **kwargs) -> None:
        kwargs.setdefault("select_on_focus", False)
        super().__init__(*args, **kwargs)
        self.on_enter = on_enter

    def on_mount(self) -> None:
        self.cursor_position = len(self.value)

    def set_answer(self, value: str) -> None:
        """Replace the answer (a prefill), the cursor at its end, nothing selected."""
        self.value = value
        self.cursor_position = len(value)

    async def action_submit(self) -> None:
        if self.on_enter is None:
            await super().action_submit()
        else:
            self.on_enter(self)
