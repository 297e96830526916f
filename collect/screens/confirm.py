"""A yes/no question over the current screen (leave the study, skip a revision): ``y`` yes, ``n``/Esc no."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.markup import escape
from textual.screen import ModalScreen
from textual.widgets import Static

from collect.keys import ShownScreen

__all__ = ["ConfirmScreen"]


class ConfirmScreen(ShownScreen, ModalScreen[bool]):
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical { width: 70; max-width: 100%; height: auto; max-height: 100%;
                               border: round $warning; background: $surface; padding: 0 1; }
    ConfirmScreen Static { height: auto; }
    ConfirmScreen #confirm-keys { margin-top: 1; text-style: bold; }
    """
    BINDINGS = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(self, question: str, detail: str = "", *, yes: str = "yes", no: str = "no") -> None:
        super().__init__()
        self.question, self.detail, self.yes, self.no = question, detail, yes, no

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"[b]{escape(self.question)}[/b]")
            if self.detail:
                yield Static(escape(self.detail), id="confirm-detail")
            yield Static(f"y  {escape(self.yes)}     n or Esc  {escape(self.no)}", id="confirm-keys")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
