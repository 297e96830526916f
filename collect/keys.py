"""The subject's keys, applied one at a time, in the order they were typed.

Textual hands a key to the focused widget's own message queue and reads the next key at once; a
widget's answer to Enter (move on to the next field) is itself a message, and ``focus()`` is
deferred to the app's queue. So keys typed faster than those messages travel (a burst: a fast
typist, a paste, a browser sending several keys in one packet) reached the field the subject had
just left: the "4" meant for the plan was typed into the goal, a "?" opened the help and the
rest of the answer was lost.

:class:`KeyRouter` takes every key the app receives and applies it in the app's own task, to the
end, before it reads the next: a printable character goes into the focused text field, any other
key runs the bindings from the focused widget up (the widgets' Enter moves focus synchronously,
:func:`focus_now`). When the app starts to change screen or to show a new step, keys are held
until the new content has been drawn; then a key typed *before* that change began (typed ahead,
waiting in the queue: the subject cannot have seen what it would answer) is set aside, and the
screen says how many; a key typed since is applied as usual. So a screen that needs reading is
never skipped or answered by keys typed ahead.
"""

from __future__ import annotations

from collections import deque
from time import monotonic

from textual import events
from textual.widget import Widget
from textual.widgets import Input

__all__ = ["KeyRouter", "ShownScreen", "focus_now"]


def focus_now(widget: Widget) -> None:
    """Focus ``widget`` now (Textual's ``focus()`` waits for the app's queue, behind keys already typed)."""
    widget.screen.set_focus(widget)


class KeyRouter:
    """The app's keys, one at a time: ``take`` each key event; ``hold`` before new content, ``shown`` after it."""

    def __init__(self, app) -> None:
        self.app = app
        self._held: deque[events.Key] = deque()
        self._holding = 0
        self._cut = 0.0  # keys made before this moment were typed before the last new content began to be shown
        self.applied = 0
        self.set_aside = 0  # keys typed ahead of new content, over the whole run

    async def take(self, event: events.Key) -> None:
        if self._holding or self._held:
            self._held.append(event)
            return
        await self._apply(event)

    def hold(self) -> None:
        """New content is coming (a screen, a step): keep the keys until :meth:`shown`; those typed before now
        will be set aside."""
        if not self._holding:
            self._cut = monotonic()
        self._holding += 1

    def shown(self) -> None:
        """The new content has been drawn: the keys held are released (those typed before the change set aside)."""
        if not self._holding:
            return
        self._holding -= 1
        if not self._holding:
            self.app.call_later(self._release)

    async def _release(self) -> None:
        dropped = 0
        while self._held and not self._holding:
            event = self._held.popleft()
            if event.time < self._cut:
                dropped += 1
                continue
            await self._apply(event)
        if dropped:
            self.set_aside += dropped
            note = getattr(self.app.screen, "keys_set_aside", None)
            if note is not None:
                note(dropped)

    async def _apply(self, event: events.Key) -> None:
        app = self.app
        if not app.screen_stack:  # the app is closing
            return
        if event.time < self._cut:  # typed before the content now shown began to be shown
            self.set_aside += 1
            note = getattr(app.screen, "keys_set_aside", None)
            if note is not None:
                note(1)
            return
        self.applied += 1
        app.app_focus = True
        applied = getattr(app.screen, "key_applied", None)
        if applied is not None:
            applied()
        if await app._check_bindings(event.key, priority=True):  # Ctrl+Q, F1
            return
        focused = app.focused
        if isinstance(focused, Input) and event.is_printable and event.character:
            selection = focused.selection
            if selection.is_empty:
                focused.insert_text_at_cursor(event.character)
            else:
                focused.replace(event.character, *selection)
            return
        await app._check_bindings(event.key)  # from the focused widget up to the app


class ShownScreen:
    """A screen mix-in: the app holds the keys while it is pushed or switched to (``releases_keys``); once it has
    been drawn, they are released (``on_screen_resume``)."""

    releases_keys = True

    def on_screen_resume(self) -> None:
        self.call_after_refresh(self.app.keys.shown)
