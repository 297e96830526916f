"""A yes/no step before a label that replaces or withdraws a decision, and before an undo: ``y`` goes on."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.markup import escape
from textual.screen import ModalScreen
from textual.widgets import Static

__all__ = ["ConfirmScreen"]


class ConfirmScreen(ModalScreen[bool]):
    """Dismisses with True on ``y``, False on ``n`` or Escape; Enter alone does not confirm (it says so)."""

    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical { width: 72; max-width: 95%; height: auto; border: round $warning;
                               background: $surface; padding: 0 1; }
    ConfirmScreen Static { height: auto; }
    ConfirmScreen #question { text-style: bold; color: $warning; }
    ConfirmScreen #keys { color: $text-muted; }
    """
    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No"),
                Binding("enter", "enter", show=False)]

    def __init__(self, question: str, body: str) -> None:
        super().__init__()
        self.question = question
        self.body = body

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(escape(self.question), id="question")
            yield Static(escape(self.body), id="body")
            yield Static("y yes, go on · n or Esc no (nothing is written)", id="keys")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)

    def action_enter(self) -> None:
        self.app.notify("press y to go on, n or Esc to cancel", severity="warning", timeout=3)
