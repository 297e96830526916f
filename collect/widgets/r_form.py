"""The r_t form: goal, planned next, caused_by_self (not at a session's first step), confidence, then the action.

Enter (or Tab) goes from field to field; Enter on the action submits. The form only gathers
what the subject entered; the recorder checks it (PII, ranges, the action space) and the
screen shows its refusal here, on the field it names.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, Static

from collect.recorder import RInput
from collect.widgets.choice import ChoiceBar
from collect.widgets.field import AnswerInput
from collect.widgets.slider import Slider

__all__ = ["RForm", "FIELD_OF_MESSAGE"]

#: A recorder message starts with the field it is about; the form's widget for it.
FIELD_OF_MESSAGE = (("goal", "goal"), ("planned", "planned"), ("caused_by_self", "cause"), ("confidence", "confidence"),
                    ("action", "action"), ("revised", "goal"))


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

    class Submitted(Message):
        def __init__(self, form: RForm, r: RInput, action: str | None) -> None:
            super().__init__()
            self.form, self.r, self.action = form, r, action

    def __init__(self, action_space: list[str] | None, *, ask_cause: bool, revision: bool = False,
                 prefill: dict | None = None, id: str | None = None) -> None:
        super().__init__(id=id)
        self.action_space = action_space
        self.ask_cause = ask_cause
        self.revision = revision
        self.prefill = prefill or {}

    def _choice(self, wid: str, value: str | None) -> Widget:
        if self.action_space is None:
            return AnswerInput(value=value or "", placeholder="type it", id=wid, compact=True)
        return ChoiceBar(self.action_space, value=value, id=wid)

    def compose(self) -> ComposeResult:
        p = self.prefill
        rev = self.revision
        with Horizontal(classes="row", id="row-goal"):
            yield Static("Revised goal" if rev else "What are you trying to do?", classes="label")
            yield AnswerInput(value=p.get("goal") or "", placeholder="say it in a few words", id="goal", compact=True)
        with Horizontal(classes="row", id="row-planned"):
            yield Static("Revised plan (next move)" if rev else "What will you do next?", classes="label")
            yield self._choice("planned", p.get("planned_next"))
        with Horizontal(classes="row", id="row-cause"):  # shown only where asked (not at a first step)
            yield Static("Revised: last change yours?" if rev else "Was the last change your doing?",
                         classes="label")
            yield Slider(low="no", high="yes", value=p.get("caused_by_self"), id="cause")
        with Horizontal(classes="row", id="row-confidence"):
            yield Static("Revised: how sure?" if rev else "How sure are you it will work?", classes="label")
            yield Slider(low="not", high="sure", value=p.get("confidence"), id="confidence")
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
        goal = self.query_one("#goal", Input)
        goal.value = self.prefill.get("goal") or ""
        for wid in ("planned", "action"):
            w = self.query_one(f"#{wid}")
            w.value = "" if isinstance(w, Input) else None
        self.query_one("#cause", Slider).steps = None
        self.query_one("#confidence", Slider).steps = None
        self.focus_first()

    # ------------------------------------------------------------------ moving through the fields
    def fields(self) -> list[Widget]:
        return [self.query_one(f"#{w}") for w in ("goal", "planned", "cause", "confidence", "action")
                if w != "cause" or self.ask_cause]

    def focus_first(self) -> None:
        self.fields()[0].focus()

    def _advance(self, widget: Widget) -> None:
        fields = self.fields()
        i = fields.index(widget)
        if i == len(fields) - 1:
            self.submit()
        else:
            fields[i + 1].focus()

    @on(Input.Submitted)
    def _input_done(self, event: Input.Submitted) -> None:
        event.stop()
        self._advance(event.input)

    @on(ChoiceBar.Advance)
    def _bar_done(self, event: ChoiceBar.Advance) -> None:
        event.stop()
        self._advance(event.bar)

    @on(Slider.Advance)
    def _slider_done(self, event: Slider.Advance) -> None:
        event.stop()
        self._advance(event.slider)

    # ------------------------------------------------------------------ values, errors
    def _value(self, wid: str):
        w = self.query_one(f"#{wid}")
        return w.value

    def values(self) -> tuple[RInput, str | None]:
        cause = self._value("cause") if self.ask_cause else None
        return RInput(goal=self._value("goal"), planned_next=self._value("planned"),
                      confidence=self._value("confidence"), caused_by_self=cause), self._value("action")

    def submit(self) -> None:
        if self.ask_cause and self._value("cause") is None:
            self.show_error("caused_by_self: say whether the last change was your own doing (←/→ on the slider)")
            return
        r, action = self.values()
        self.post_message(self.Submitted(self, r, action))

    def show_error(self, message: str) -> None:
        """Show a refusal on the field it names (and focus that field): nothing was saved."""
        for row in self.query(".row"):
            row.remove_class("-invalid")
        for prefix, wid in FIELD_OF_MESSAGE:
            if message.startswith(prefix) and (wid != "cause" or self.ask_cause):
                self.query_one(f"#row-{wid}").add_class("-invalid")
                self.query_one(f"#{wid}").focus()
                break
        self.query_one("#error", Static).update(f"✗ {message} — nothing was saved")

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
        return "type · Enter next · Tab/Shift+Tab fields · ? help"
    return "Tab fields"
