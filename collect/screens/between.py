"""Between sessions (and after the last one): how the session ended, and what comes next.

A screen to read: Enter (or Space) goes on only after :attr:`BetweenScreen.READ_SECONDS` on screen, so an Enter
pressed twice on the last move, or keys typed ahead, never skip it (keys typed before it appeared are set aside
by :mod:`collect.keys`)."""

from __future__ import annotations

import asyncio

from textual.app import ComposeResult
from textual.binding import Binding
from textual.markup import escape
from textual.widgets import Static

from collect.screens.base import CollectScreen

__all__ = ["BetweenScreen"]


class BetweenScreen(CollectScreen):
    KEYS = "read this first · ? help · Ctrl+Q leave"
    ARMED_KEYS = "Enter or Space go on · ? help · Ctrl+Q leave"
    BINDINGS = [Binding("enter,space", "go_on", "Go on")]
    #: How long the screen is shown before Enter goes on.
    READ_SECONDS = 1.0

    def __init__(self, finished: int, outcome: str) -> None:
        super().__init__()
        self.finished = finished
        self.outcome = outcome
        self.armed = asyncio.Event()  # set once Enter goes on

    def on_screen_resume(self) -> None:
        super().on_screen_resume()
        if not self.armed.is_set():
            self.set_timer(self.READ_SECONDS, self._arm)

    def _arm(self) -> None:
        self.armed.set()
        self.set_keys(self.ARMED_KEYS)

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
        if self.armed.is_set():
            self.app.go_on()
