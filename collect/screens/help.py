"""The help screen (F1 anywhere; ``?`` outside a text field): every key of the subject app."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from collect.keys import ShownScreen

__all__ = ["HelpScreen", "HELP_TEXT"]

HELP_TEXT = """\
[b]trb-collect keys[/b]

[b]everywhere[/b]  F1 help (or ? outside a text field: in one,
            ? is typed) · Ctrl+Q leave (your answers so far
            are kept; nothing is added half)
[b]consent[/b]     ↑↓ PgUp PgDn read · y I agree · n or q no
[b]subject id[/b]  type to change it · Enter start
[b]a step[/b]      Tab / Shift+Tab or Enter: field to field
            goal: type it · plan and move: 1–5 or ←/→
            sliders: ←/→ 5 % · Home 0 % · End 100 %
            Enter on your move: do it; every problem
            with your answers is listed at once
[b]between[/b]     Enter or Space go on (after a moment to read)
[b]revisions[/b]   the same fields: your revised answers and the
            move you would then make · Enter on it saves
            Esc skip the step
[b]save[/b]        r retry when the corpus was busy · q close

The header always says where you are: session k of m,
step i of n, or revision k of n.\
"""


class HelpScreen(ShownScreen, ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 64; max-width: 100%; height: auto; max-height: 100%;
                                  border: round $accent; background: $surface; padding: 0 1; }
    """
    BINDINGS = [Binding("escape,question_mark,q,f1", "close", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(HELP_TEXT + "\n\n[dim]Esc, F1, ? or q closes this[/dim]")

    def action_close(self) -> None:
        self.dismiss(None)
