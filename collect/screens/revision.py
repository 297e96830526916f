"""A same-session revision: one of the study's chosen steps, what the subject said and did there; a revised r′
and the move it would have led to, or Esc to skip the step."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.events import DescendantFocus
from textual.markup import escape
from textual.widgets import Static

from collect.recorder import AnswersRefused, RInput
from collect.screens.base import CollectScreen
from collect.widgets.grid_map import GridMap
from collect.widgets.r_form import RForm, hint_for

__all__ = ["RevisionScreen", "said_text"]


def _pct(p: float | None) -> str:
    return "—" if p is None else f"{round(p * 100)} %"


def said_text(r: dict) -> str:
    parts = [f"goal [b]{escape(r['goal'])}[/b]", f"plan [b]{escape(r['planned_next'])}[/b]"]
    if r.get("caused_by_self") is not None:
        parts.append(f"last change yours [b]{_pct(r['caused_by_self'])}[/b]")
    parts.append(f"sure [b]{_pct(r['confidence'])}[/b]")
    return " · ".join(parts)


class RevisionScreen(CollectScreen):
    DEFAULT_CSS = """
    RevisionScreen #where { height: auto; margin-top: 1; text-style: bold; }
    RevisionScreen #then { height: auto; }
    RevisionScreen #then-texts { height: auto; width: 1fr; }
    RevisionScreen .then { height: auto; }
    RevisionScreen #prompt { height: auto; margin-top: 1; }
    RevisionScreen RForm { margin-top: 1; }
    """
    BINDINGS = [Binding("escape", "skip", "Skip")]

    def __init__(self, item: tuple[int, int]) -> None:
        super().__init__()
        self.item = item
        self.context = self.app.collection.revision_context(item)

    def compose(self) -> ComposeResult:
        x = self.context
        yield from self.compose_header()
        with VerticalScroll(id="body"):
            yield Static(f"Looking back: session {x['session']} of {x['sessions']}, step {x['step']} of "
                         f"{x['steps']}", id="where")
            with Horizontal(id="then"):
                yield GridMap(id="map")  # where the subject stood then (the grid's environments)
                with Vertical(id="then-texts"):
                    yield Static(f"[b]You saw[/b]   {escape(x['observation'])}", classes="then", id="saw")
                    yield Static(f"[b]You said[/b]  {said_text(x['r'])}", classes="then", id="said")
                    yield Static(f"[b]You did[/b]   {escape(x['action'])} → {escape(x['outcome'])}", classes="then",
                                 id="did")
            yield Static("Had you planned otherwise here, what would you have done? Change your answers below, "
                         "then choose the move you would then have made. [dim](Esc: skip this step)[/dim]",
                         id="prompt")
            yield RForm(x["action_space"], ask_cause=x["step"] > 1, revision=True, prefill=x["r"], id="form",
                        on_submit=self._revise)

    def on_mount(self) -> None:
        self.query_one(GridMap).show(self.context.get("seen"))
        self.query_one(RForm).focus_first()

    @on(DescendantFocus)
    def _focused(self, event: DescendantFocus) -> None:
        self.set_keys(hint_for(self.app.focused).replace("do it", "save") + " · Esc skip")

    def _revise(self, form: RForm, r: RInput, action: str | None) -> None:
        try:
            self.app.collection.revise(self.item, r, action, require_cause=form.ask_cause)
        except AnswersRefused as e:  # every problem at once; nothing was saved
            form.show_problems(list(e.problems))
            return
        self.app.go_on()

    def action_skip(self) -> None:
        from collect.screens.confirm import ConfirmScreen

        def answer(skip: bool | None) -> None:
            if skip:
                self.app.collection.revise(self.item, None)
                self.app.go_on()

        self.app.push_screen(ConfirmScreen(f"Skip step {self.context['step']} of session {self.context['session']}?",
                                           "Nothing is revised for this step.", yes="skip it", no="back"), answer)
