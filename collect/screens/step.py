"""One step: a map of the grid (walls, where you are, the goal, where you were), what the last move and the wind
did, what the subject sees, their r_t, then their move."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.events import DescendantFocus
from textual.markup import escape
from textual.widgets import Static

from collect.recorder import AnswersRefused, RInput
from collect.screens.base import CollectScreen
from collect.widgets.grid_map import GridMap, move_text
from collect.widgets.r_form import RForm, hint_for
from toolkit.errors import ToolkitError

__all__ = ["StepScreen"]


class StepScreen(CollectScreen):
    DEFAULT_CSS = """
    StepScreen #seen { height: auto; margin-top: 1; }
    StepScreen #texts { height: auto; width: 1fr; }
    StepScreen #observation { height: auto; }
    StepScreen #outcome { height: auto; }
    StepScreen #moved { height: auto; }
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

    def _moved_text(self) -> str:
        if self.last is None:
            return ""
        return escape(move_text(self.last.get("seen"), self.last["action"], self.last.get("cause"),
                                self.app.collection.observation_data))

    def compose(self) -> ComposeResult:
        c = self.app.collection
        yield from self.compose_header()
        with VerticalScroll(id="body"):
            with Horizontal(id="seen"):
                yield GridMap(id="map")
                with Vertical(id="texts"):
                    yield Static(self._outcome_text(), id="outcome")
                    yield Static(self._moved_text(), id="moved")
                    yield Static(f"[b]You see[/b]  {escape(c.observation)}", id="observation")
            prefill = {"goal": self.last["r"]["goal"]} if self.last is not None else {}
            yield RForm(c.action_space, ask_cause=self.last is not None, prefill=prefill, id="form",
                        on_submit=self._act)

    def _show_seen(self) -> None:
        c = self.app.collection
        self.query_one(GridMap).show(c.observation_data, self.last["seen"]["cell"] if self.last and
                                     (self.last.get("seen") or {}).get("cell") else None)
        for wid, shown in (("#outcome", self.last is not None), ("#moved", bool(self._moved_text()))):
            w = self.query_one(wid)
            if w.display != shown:  # (a change of display lays the screen out again)
                w.display = shown

    def on_mount(self) -> None:
        self._show_seen()
        self.query_one(RForm).focus_first()

    def next_step(self) -> None:
        """The next step of the same session, on this screen: the map, the outcome, what the subject sees, an empty
        form. Keys typed before it is drawn are set aside (the subject has not seen the new step yet)."""
        self.app.keys.hold()
        self._take_step()
        self.query_one("#outcome", Static).update(self._outcome_text())
        self.query_one("#moved", Static).update(self._moved_text())
        self.query_one("#observation", Static).update(f"[b]You see[/b]  {escape(self.app.collection.observation)}")
        self._show_seen()
        self.query_one(RForm).reset(ask_cause=True, prefill={"goal": self.last["r"]["goal"]})
        self.refresh_progress()
        self.query_one("#body").scroll_home(animate=False)
        self.call_after_refresh(self.app.keys.shown)

    @on(DescendantFocus)
    def _focused(self, event: DescendantFocus) -> None:
        self.set_keys(hint_for(self.app.focused) + " · Ctrl+Q leave")

    def _act(self, form: RForm, r: RInput, action: str | None) -> None:
        app = self.app
        c = app.collection
        try:
            out = c.act(r, action, require_cause=form.ask_cause)
        except AnswersRefused as e:  # every problem at once; nothing was saved
            form.show_problems(list(e.problems))
            return
        except ToolkitError as e:
            form.show_problems([])
            form.query_one("#error", Static).update(f"✗ {escape(e.message)}")
            return
        if out.done:
            from collect.screens.between import BetweenScreen

            app.switch_screen(BetweenScreen(self.session_index, out.outcome))
        else:
            self.next_step()  # the same screen, refilled: quicker than a new one (bench/collect.py)
