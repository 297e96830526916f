"""What every screen of the subject app has: the progress header on top, the keys of the moment at the bottom;
keys are held while it appears and released once it is drawn (:class:`collect.keys.ShownScreen`)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Static

from collect.keys import ShownScreen

__all__ = ["CollectScreen"]


class CollectScreen(ShownScreen, Screen):
    """A screen with ``#progress`` (the app's progress line) and ``#keys`` (set with :meth:`set_keys`)."""

    KEYS = ""

    def compose_header(self) -> ComposeResult:
        yield Static(self.app.progress_line(), id="progress")
        yield Static(self.KEYS, id="keys", markup=False)

    def set_keys(self, text: str) -> None:
        self._keys = text
        self.query_one("#keys", Static).update(text)

    def keys_set_aside(self, n: int) -> None:
        """Say (on the keys line, until the next change of field) that ``n`` keys typed before this was shown
        were not used."""
        keys = getattr(self, "_keys", self.KEYS)
        self.query_one("#keys", Static).update(f"✗ {n} key{'s' if n != 1 else ''} typed before this appeared "
                                               f"{'were' if n != 1 else 'was'} not used · {keys}")

    def refresh_progress(self) -> None:
        self.query_one("#progress", Static).update(self.app.progress_line())

    @property
    def keys_text(self) -> str:
        return str(self.query_one("#keys", Static).render())
