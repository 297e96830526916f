"""The subject id: a pseudonym made at random; the experimenter may type the one they assigned. Never a name."""

from __future__ import annotations

from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.markup import escape
from textual.widgets import Input, Static

from collect.keys import focus_now
from collect.recorder import Collection, new_subject_id
from collect.screens.base import CollectScreen
from collect.widgets.field import AnswerInput
from toolkit.errors import ToolkitError

__all__ = ["SubjectScreen"]


class SubjectScreen(CollectScreen):
    DEFAULT_CSS = """
    SubjectScreen #id-row { height: 1; margin: 1 0; border-left: thick $accent; background: $boost; }
    SubjectScreen #id-row Static { width: 14; }
    SubjectScreen #subject { width: 1fr; }
    SubjectScreen #error { height: auto; color: $error; }
    """
    KEYS = "Enter start · type another id · Ctrl+Q leave (nothing recorded) · F1 help"

    def __init__(self, *, consent: bool) -> None:
        super().__init__()
        self.consent = consent
        self.starting = False

    def compose(self) -> ComposeResult:
        yield from self.compose_header()
        with Vertical(id="body"):
            yield Static("\nYou are recorded under a [b]pseudonymous subject id[/b], never under your name. "
                         "One was made at random for you below.\n\n[dim]Experimenter: if you assigned this "
                         "subject an id, type it instead (letters, digits, . _ -). Never type a name or an "
                         "e-mail address.[/dim]")
            with Horizontal(id="id-row"):
                yield Static("Subject id")
                yield AnswerInput(value=self.app.subject_id or new_subject_id(), id="subject", compact=True,
                                  on_enter=self._submit, select_on_focus=True)  # typing replaces the random id
            yield Static("", id="error")

    def on_mount(self) -> None:
        focus_now(self.query_one("#subject", Input))

    def _submit(self, field: Input) -> None:
        if self.starting:
            return
        self.starting = True
        self.app.keys.hold()  # until the first step is drawn, or the refusal
        self.query_one("#error", Static).update("[dim]starting…[/dim]")
        self._start(field.value)

    @work(thread=True, exclusive=True, group="start")
    def _start(self, subject_id: str) -> None:
        app = self.app
        try:
            c = Collection.start(app.study, app.corpus, consent=self.consent, subject_id=subject_id,
                                 context_id=app.context_id, browser=app.browser)
        except ToolkitError as e:
            app.call_from_thread(self._refused, e.message)
        else:
            app.call_from_thread(self._started, c)

    def _started(self, collection: Collection) -> None:
        self.app.started(collection)  # on to the first step (its screen holds the keys until drawn)
        self.app.keys.shown()  # this screen's own hold (from Enter) ends

    def _refused(self, message: str) -> None:
        self.starting = False
        self.query_one("#error", Static).update(f"✗ {escape(message)}")
        focus_now(self.query_one("#subject", Input))
        self.call_after_refresh(self.app.keys.shown)
