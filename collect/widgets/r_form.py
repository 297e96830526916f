"""The r_t form: goal, planned next, caused_by_self (not at a session's first step), confidence, then the action.

Enter (or Tab) goes from field to field; Enter on the action submits. The form only gathers
what the subject entered; the recorder checks it (personal data, ranges, the action space) and
the screen shows every problem at once here, each row it names marked. Enter moves focus at
once (:func:`collect.keys.focus_now`) and the submission is a call, not a message, so keys typed
right after it go where the subject meant them.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.markup import escape
from textual.widget import Widget
from textual.widgets import Input, Static

from collect.keys import focus_now
from collect.recorder import AnswerProblem, RInput
from collect.widgets.choice import ChoiceBar
from collect.widgets.field import AnswerInput
from collect.widgets.slider import Slider

__all__ = ["RForm", "FIELDS"]

#: The form's fields, in order (the ids of their widgets, and the fields of :class:`AnswerProblem`).
FIELDS = ("goal", "planned", "cause", "confidence", "action")


class RForm(Vertical):
    """One step's self-report and action, or (``revision=True``) a revised r′ and the action it would lead to."""

    DEFAULT_CSS = """
    RForm { height: auto; }
    RForm .row { height: 1; border-left: blank; }
    RForm .row:focus-within { border-left: thick $accent; background: $boost; }
    RForm .row.-invalid { border-left: thick $error; }
    RForm .label { width: 33; color: $text-muted; }
    RForm .row:focus-within .label { color: $text; text-style: bold; }
    RForm Input { width: 1fr; }
    RForm #error { height: auto; color: $error; padding: 0 1; }
    """

    def __init__(self, action_space: list[str] | None, *, ask_cause: bool, revision: bool = False,
                 prefill: dict | None = None, id: str | None = None,
                 on_submit: Callable[[RForm, RInput, str | None], None] | None = None) -> None:
        super().__init__(id=id)
        self.on_submit = on_submit  # Enter on the move: called at once with the answers
        self.action_space = action_space
        self.ask_cause = ask_cause
        self.revision = revision
        self.prefill = prefill or {}

    def _choice(self, wid: str, value: str | None) -> Widget:
        if self.action_space is None:
            return AnswerInput(value=value or "", placeholder="type it", id=wid, compact=True, on_enter=self._advance)
        return ChoiceBar(self.action_space, value=value, id=wid, on_enter=self._advance)

    def compose(self) -> ComposeResult:
        p = self.prefill
        rev = self.revision
        with Horizontal(classes="row", id="row-goal"):
            yield Static("Revised goal" if rev else "What are you trying to do?", classes="label")
            yield AnswerInput(value=p.get("goal") or "", placeholder="say it in a few words", id="goal", compact=True,
                              on_enter=self._advance)
        with Horizontal(classes="row", id="row-planned"):
            yield Static("Revised plan (next move)" if rev else "What will you do next?", classes="label")
            yield self._choice("planned", p.get("planned_next"))
        with Horizontal(classes="row", id="row-cause"):  # shown only where asked (not at a first step)
            yield Static("Revised: last change yours?" if rev else "Was the last change your doing?",
                         classes="label")
            yield Slider(low="no", high="yes", value=p.get("caused_by_self"), id="cause", on_enter=self._advance)
        with Horizontal(classes="row", id="row-confidence"):
            yield Static("Revised: how sure?" if rev else "How sure are you it will work?", classes="label")
            yield Slider(low="not", high="sure", value=p.get("confidence"), id="confidence", on_enter=self._advance)
        with Horizontal(classes="row", id="row-action"):
            yield Static("Then you would do" if rev else "Now act: your move", classes="label")
            yield self._choice("action", None)
        yield Static("", id="error")

    def on_mount(self) -> None:
        self.query_one("#row-cause").display = self.ask_cause

    def reset(self, *, ask_cause: bool, prefill: dict | None = None) -> None:
        """Empty the form for the next step (the goal from ``prefill``), focus its first field."""
        self.ask_cause = ask_cause
        self.prefill = prefill or {}
        self.clear_error()
        self.query_one("#row-cause").display = ask_cause
        self.query_one("#goal", AnswerInput).set_answer(self.prefill.get("goal") or "")
        for wid in ("planned", "action"):
            w = self.query_one(f"#{wid}")
            if isinstance(w, AnswerInput):
                w.set_answer("")
            else:
                w.value = None
        self.query_one("#cause", Slider).steps = None
        self.query_one("#confidence", Slider).steps = None
        self.focus_first()

    # ------------------------------------------------------------------ moving through the fields
    def fields(self) -> list[Widget]:
        return [self.query_one(f"#{w}") for w in ("goal", "planned", "cause", "confidence", "action")
                if w != "cause" or self.ask_cause]

    def focus_first(self) -> None:
        focus_now(self.fields()[0])

    def _advance(self, widget: Widget) -> None:
        fields = self.fields()
        i = fields.index(widget)
        if i == len(fields) - 1:
            self.submit()
        else:
            focus_now(fields[i + 1])

    # ------------------------------------------------------------------ values, errors
    def _value(self, wid: str):
        w = self.query_one(f"#{wid}")
        return w.value

    def values(self) -> tuple[RInput, str | None]:
        cause = self._value("cause") if self.ask_cause else None
        return RInput(goal=self._value("goal"), planned_next=self._value("planned"),
                      confidence=self._value("confidence"), caused_by_self=cause), self._value("action")

    def submit(self) -> None:
        r, action = self.values()
        if self.on_submit is not None:
            self.on_submit(self, r, action)

    def show_problems(self, problems: list[AnswerProblem]) -> None:
        """Show every problem at once, mark each row it names and focus the first: nothing was saved."""
        self.clear_error()
        rows = [p.field for p in problems if p.field in FIELDS and (p.field != "cause" or self.ask_cause)]
        for wid in rows:
            self.query_one(f"#row-{wid}").add_class("-invalid")
        if rows:
            focus_now(self.query_one(f"#{min(rows, key=FIELDS.index)}"))
        lines = [f"✗ {escape(p.message)}" for p in problems]
        self.query_one("#error", Static).update("\n".join(lines) + "\n[dim]Nothing was saved; correct "
                                                 f"{'these' if len(lines) > 1 else 'this'} and press Enter on the "
                                                 "move again.[/dim]")

    def clear_error(self) -> None:
        for row in self.query(".row"):
            row.remove_class("-invalid")
        self.query_one("#error", Static).update("")

    @property
    def error_text(self) -> str:
        return str(self.query_one("#error", Static).render())


def hint_for(widget: Widget | None) -> str:
    """The keys of the focused field, for the screen's key line."""
    if isinstance(widget, ChoiceBar):
        last = widget.id == "action"
        digits = f"1–{min(len(widget.options), 9)}"
        return f"{digits} or ←/→ choose · Enter {'do it' if last else 'next'} · Tab/Shift+Tab fields"
    if isinstance(widget, Slider):
        return "←/→ 5 % · Home 0 % · End 100 % · Enter next · Tab/Shift+Tab fields"
    if isinstance(widget, Input):
        return "type · Enter next · Tab/Shift+Tab fields · F1 help"
    return "Tab fields"
