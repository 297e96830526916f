"""A checkbox whose state reads in any theme and terminal: ``[x]`` when on, ``[ ]`` when off."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Checkbox

__all__ = ["StateCheckbox"]


class StateCheckbox(Checkbox):
    """A :class:`Checkbox` drawn as ``[x] label`` / ``[ ] label`` (the stock one differs only by a shade)."""

    DEFAULT_CSS = """
    StateCheckbox.-on > .toggle--label { text-style: bold; }
    """

    @property
    def _button(self) -> Content:
        return Content.styled("[x]", "bold green") if self.value else Content.styled("[ ]", "dim")
