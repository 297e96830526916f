"""What every screen of the subject app has: the progress header on top, the keys of the moment at the bottom."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Static

__all__ = ["CollectScreen"]


class CollectScreen(Screen):
    """A screen with ``#progress`` (the app's progress line) and ``#keys`` (set with :meth:`set_keys`)."""

    KEYS = ""

    def compose_header(self) -> ComposeResult:
        yield Static(self.app.progress_line(), id="progress")
        yield Static(self.KEYS, id="keys", markup=False)

    def set_keys(self, text: str) -> None:
        self.query_one("#keys", Static).update(text)

    def refresh_progress(self) -> None:
        self.query_one("#progress", Static).update(self.app.progress_line())

    @property
    def keys_text(self) -> str:
        return str(self.query_one("#keys", Static).render())
