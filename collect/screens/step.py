"""One step: what the subject sees, what happened after the last move, their r_t, then their move."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.events import DescendantFocus
from textual.markup import escape
from textual.widgets import Static

from collect.screens.base import CollectScreen
from collect.widgets.r_form import RForm, hint_for
from schemas.errors import ToolkitError

__all__ = ["StepScreen"]


class StepScreen(CollectScreen):
    DEFAULT_CSS = """
    StepScreen #observation { height: auto; margin-top: 1; }
    StepScreen #outcome { height: auto; margin-top: 1; }
    StepScreen RForm { margin-top: 1; }
    """

    def __init__(self) -> None:
        super().__init__()
        c = self.app.collection
        self.session_index = c.index
        self.step_number = c.step_number
        steps = c.session.steps
        self.last = steps[-1] if steps else None

    def compose(self) -> ComposeResult:
        c = self.app.collection
        yield from self.compose_header()
        with VerticalScroll(id="body"):
            if self.last is not None:
                yield Static(f"[b]After your move ({escape(self.last['action'])})[/b]  "
                             f"{escape(self.last['outcome'])}", id="outcome")
            yield Static(f"[b]You see[/b]  {escape(c.observation)}", id="observation")
            prefill = {"goal": self.last["r"]["goal"]} if self.last is not None else {}
            yield RForm(c.action_space, ask_cause=self.last is not None, prefill=prefill, id="form")

    def on_mount(self) -> None:
        self.query_one(RForm).focus_first()

    @on(DescendantFocus)
    def _focused(self, event: DescendantFocus) -> None:
        self.set_keys(hint_for(event.widget) + " · Ctrl+Q leave")

    @on(RForm.Submitted)
    def _act(self, event: RForm.Submitted) -> None:
        app = self.app
        c = app.collection
        try:
            out = c.act(event.r, event.action)
        except ToolkitError as e:  # PersonalData and UsageError from the recorder: nothing was saved
            event.form.show_error(e.message)
            return
        if out.done:
            from collect.screens.between import BetweenScreen

            app.switch_screen(BetweenScreen(self.session_index, out.outcome))
        else:
            app.go_on()
