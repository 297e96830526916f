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

    _keys: str | None = None
    _note = ""

    def set_keys(self, text: str) -> None:
        self._keys = text
        self.query_one("#keys", Static).update(self._note + text)

    def keys_set_aside(self, n: int) -> None:
        """Say on the keys line, until the next key is applied, that ``n`` keys typed before this was shown were
        not used."""
        self._note = f"✗ {n} key{'s' if n != 1 else ''} typed before this appeared {'were' if n != 1 else 'was'} not used · "
        self.set_keys(self.KEYS if self._keys is None else self._keys)

    def key_applied(self) -> None:
        if self._note:
            self._note = ""
            self.set_keys(self.KEYS if self._keys is None else self._keys)

    def refresh_progress(self) -> None:
        self.query_one("#progress", Static).update(self.app.progress_line())

    @property
    def keys_text(self) -> str:
        return str(self.query_one("#keys", Static).render())
