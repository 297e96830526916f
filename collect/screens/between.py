"""Between sessions (and after the last one): how the session ended, and what comes next."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.markup import escape
from textual.widgets import Static

from collect.screens.base import CollectScreen

__all__ = ["BetweenScreen"]


class BetweenScreen(CollectScreen):
    KEYS = "Enter or Space go on · ? help · Ctrl+Q leave"
    BINDINGS = [Binding("enter,space", "go_on", "Go on")]

    def __init__(self, finished: int, outcome: str) -> None:
        super().__init__()
        self.finished = finished
        self.outcome = outcome

    def next_text(self) -> str:
        c = self.app.collection
        if c.collecting:
            before, now = c.sessions[self.finished], c.session
            if now.pair == before.pair:
                return (f"Next: session {c.index + 1} of {len(c.sessions)}. It starts from the [b]same place[/b] as "
                        "the one you just finished, with [b]another goal[/b].")
            return f"Next: session {c.index + 1} of {len(c.sessions)}, a new walk."
        n = len(c.revision_items())
        if n:
            return (f"Every session is done. Next: a look back at {n} of your steps; for each you may say what "
                    "you would have done had you planned otherwise.")
        return "Every session is done. Next: saving your answers."

    def compose(self) -> ComposeResult:
        c = self.app.collection
        yield from self.compose_header()
        yield Static(f"\n[b]Session {self.finished + 1} of {len(c.sessions)} is over.[/b]\n\n"
                     f"[b]After your last move[/b]  {escape(self.outcome)}\n\n{self.next_text()}\n\n"
                     "Press Enter to go on.", id="body")

    def action_go_on(self) -> None:
        self.app.go_on()
