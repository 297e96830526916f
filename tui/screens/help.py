"""The help screen (`?`): every key of the app."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

__all__ = ["HelpScreen", "HELP_TEXT"]

HELP_TEXT = """\
[b]trb-review keys[/b]

[b]everywhere[/b]   ? help   Esc back   Ctrl+Q quit
[b]sessions[/b]     ↑↓ move   Enter open   / search id prefix
             ] / \\[ next / previous page   Tab filters
             a adjudication queue   R results (with --results)
[b]session[/b]      ↑↓ step   i next item at step   m next marked step
             s self   e exogenous   u unsure  (then a note, Enter)
             c counterfactuals of the step
[b]queue[/b]        ↑↓ item   s / e / u decide (method reviewer)
             Enter open the item's session at its step
[b]results[/b]      ↑↓ run or item   Tab switch table
             Enter on a worst item: its session and step

list:     items attribution items · todo unlabelled · dis disagree
timeline: ◇ design label only  ◆ annotated  ✔ adjudicated
          red: annotators disagree\
"""


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 72; max-width: 100%; height: auto; max-height: 100%;
                                  border: round $accent; background: $surface; padding: 0 1; }
    """
    BINDINGS = [Binding("escape,question_mark,q", "close", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(HELP_TEXT)

    def action_close(self) -> None:
        self.dismiss(None)
