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
from toolkit.errors import ToolkitError

__all__ = ["StepScreen"]


class StepScreen(CollectScreen):
    DEFAULT_CSS = """
    StepScreen #observation { height: auto; margin-top: 1; }
    StepScreen #outcome { height: auto; margin-top: 1; }
    StepScreen RForm { margin-top: 1; }
    """

    def __init__(self) -> None:
        super().__init__()
        self._take_step()

    def _take_step(self) -> None:
        c = self.app.collection
        self.session_index = c.index
        self.step_number = c.step_number
        steps = c.session.steps
        self.last = steps[-1] if steps else None

    def _outcome_text(self) -> str:
        if self.last is None:
            return ""
        return f"[b]After your move ({escape(self.last['action'])})[/b]  {escape(self.last['outcome'])}"

    def compose(self) -> ComposeResult:
        c = self.app.collection
        yield from self.compose_header()
        with VerticalScroll(id="body"):
            yield Static(self._outcome_text(), id="outcome")
            yield Static(f"[b]You see[/b]  {escape(c.observation)}", id="observation")
            prefill = {"goal": self.last["r"]["goal"]} if self.last is not None else {}
            yield RForm(c.action_space, ask_cause=self.last is not None, prefill=prefill, id="form")

    def on_mount(self) -> None:
        self.query_one("#outcome").display = self.last is not None
        self.query_one(RForm).focus_first()

    def next_step(self) -> None:
        """The next step of the same session, on this screen: the outcome, what the subject sees, an empty form."""
        self._take_step()
        outcome = self.query_one("#outcome", Static)
        outcome.update(self._outcome_text())
        outcome.display = True
        self.query_one("#observation", Static).update(f"[b]You see[/b]  {escape(self.app.collection.observation)}")
        self.query_one(RForm).reset(ask_cause=True, prefill={"goal": self.last["r"]["goal"]})
        self.refresh_progress()
        self.query_one("#body").scroll_home(animate=False)

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
            self.next_step()  # the same screen, refilled: quicker than a new one (bench/collect.py)
