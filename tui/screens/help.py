"""The help screen (`?`): every key of the app."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

__all__ = ["HelpScreen", "HELP_TEXT"]

HELP_TEXT = """\
[b]trb-review keys[/b]   (a key that cannot act here says why)

[b]everywhere[/b] ? help · Esc back · q or Ctrl+Q quit · Tab next widget
[b]sessions[/b]   ↑↓ move · Enter open · ] / \\[ page · Tab filters
           / search ids: session, item or counterfactual,
             any part, any case · a queue · R results
[b]session[/b]    ↑↓ step · PgDn/PgUp scroll the detail · i next item
           m next marked step · c the step's counterfactuals
           s self · e exogenous · u unsure · z undo your label
[b]queue[/b]      ↑↓ item · s / e / u decide · z undo · Enter trace
           f one reason at a time: tie · disagreement ·
             unsure · unlabelled (the queue holds each
             undecided item that is tied, unsure or unlabelled)
[b]results[/b]    ↑↓ run or item · Tab switch table · t next list
           ] / \\[ page · PgDn / PgUp scroll the detail
           Enter on a worst item: its session and step

[b]labels[/b]     self / exogenous decide an item; unsure does not
           (it stays undecided, and queued). Replacing a
           decision asks first (y). Each label is your next
           revision, with its time; z undoes one with a new
           revision: nothing is deleted; undoing your
           first label leaves the item as it was (◇).
list:      items: attribution items · todo unlabelled · dis disagree
timeline:  ◇ design label only  ◆ annotated  ✔ decided
           red: annotators disagree\
"""


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 74; max-width: 100%; height: auto; max-height: 100%;
                                  border: round $accent; background: $surface; padding: 0 1; }
    """
    BINDINGS = [Binding("escape,question_mark,q", "close", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(HELP_TEXT)

    def action_close(self) -> None:
        self.dismiss(None)
