"""The subject's app (``trb-collect run``; a browser gets the same app through ``trb-collect serve``).

A Textual UI over one :class:`~collect.recorder.Collection`: every rule (consent first, the
PII scan, the action space, drafts, the all-or-nothing ingest) is the recorder's; the screens
show what it asks and what it refuses. The screens, in order:

consent (``y`` agrees, ``n``/``q`` leaves: nothing recorded) → subject id (made at random; the
experimenter may type one) → one screen per step (the observation, the outcome of the last
step, the r_t form, the action) with a screen between sessions → the revisions (the study's
chosen steps) → save (the ingest; a busy corpus is shown and can be retried).

A header shows where the subject is (session k of m · step i of n, or revision k of n); F1 (anywhere) or
``?`` (outside a text field: in one, ``?`` is typed like any character) lists every key; Ctrl+Q leaves,
keeping the answers so far as a draft that ``--resume`` picks up.

Every key goes through one :class:`~collect.keys.KeyRouter`: applied in the order typed, each to the end
before the next (a burst loses nothing); keys typed before a new screen or step was drawn are set aside.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual import events
from textual.app import App
from textual.binding import Binding
from textual.markup import escape
from textual.screen import Screen

from collect.keys import KeyRouter
from collect.recorder import Collection, check_subject_id
from collect.study import Study
from corpus.store import Corpus

__all__ = ["CollectApp", "Outcome", "run_app"]


@dataclass(frozen=True)
class Outcome:
    """How the app ended: ``declined`` (no consent), ``left`` (before the start: nothing recorded; or mid-run:
    a draft kept), ``saved`` (ingested), ``unsaved`` (the save failed: the draft is kept)."""

    status: str
    message: str
    draft_id: str | None = None


class CollectApp(App[Outcome]):
    """``CollectApp(study, corpus).run()``: one subject's run of ``study`` into ``corpus``.

    ``resume`` is a draft id (``trb-collect drafts``): the run goes on where the draft stopped, without
    asking for consent again. ``lock_wait`` bounds how long the save waits for a busy corpus
    (default ``TRB_LOCK_WAIT``).

    Raises (at construction, before anything is shown):
        DraftError: ``resume`` names no draft, or one made under another version of the study file.
        InvalidInput: ``context_id`` is not one of the study's contexts.
    """

    TITLE = "trb-collect"
    ENABLE_COMMAND_PALETTE = False  # every action has a key (see ?)
    BINDINGS = [
        Binding("f1", "help", "Help", priority=True),  # even in a text field
        Binding("question_mark", "help", "Help"),  # a text field takes "?" as a character first
        Binding("ctrl+q", "leave", "Leave", priority=True),
    ]
    CSS = """
    Screen { layout: vertical; }
    #progress { height: 1; background: $primary-background; padding: 0 1; }
    #keys { dock: bottom; height: 1; background: $panel; color: $text; padding: 0 1; }
    #body { height: 1fr; padding: 0 1; }
    .dim { color: $text-muted; }
    """

    def __init__(self, study: Study, corpus: Corpus, *, subject_id: str | None = None, context_id: str | None = None,
                 resume: str | None = None, lock_wait: float | None = None, browser: str | None = None) -> None:
        super().__init__()
        self.study = study
        self.corpus = corpus.require()
        if subject_id is not None:
            check_subject_id(subject_id)  # an e-mail or a phone number is refused now, before consent is asked
        self.subject_id = subject_id
        self.context_id = context_id
        study.context(context_id)  # an unknown context is refused now, not after consent
        self.lock_wait = lock_wait
        self.collection: Collection | None = Collection.resume(corpus, resume, study) if resume else None
        self.resumed_from = resume
        self.saved = False
        self.keys = KeyRouter(self)
        self.browser = browser  # trb-collect serve: the browser's cookie; its unfinished run is offered back

    # ------------------------------------------------------------------ keys and screens
    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded:
            await self.keys.take(event)  # in order, each to the end (collect.keys)
            return
        await super().on_event(event)

    def push_screen(self, screen, *args, **kwargs):
        if getattr(screen, "releases_keys", False):
            self.keys.hold()  # released when the screen has been drawn (collect.keys.ShownScreen)
        return super().push_screen(screen, *args, **kwargs)

    def switch_screen(self, screen):
        if getattr(screen, "releases_keys", False) and screen is not self.screen:
            self.keys.hold()
        return super().switch_screen(screen)

    # ------------------------------------------------------------------ where the subject is
    def progress_line(self) -> str:
        """What the header says: the study, where the subject is in it, and the two keys always there."""
        c = self.collection
        if c is None:
            where = "before the study: consent and subject id"
        elif c.collecting:
            where = c.progress()
        else:
            todo = c.revision_items()
            total = len(c.revisions) + len(todo)
            where = (f"all {len(c.sessions)} sessions done · revision {len(c.revisions) + 1} of {total}" if todo
                     else f"all {len(c.sessions)} sessions done · {'saved' if self.saved else 'saving'}")
        return f"[b]{escape(self.study.id)}[/b] │ [b]{escape(where)}[/b] │ F1 help · Ctrl+Q leave"

    def next_screen(self) -> Screen:
        """The screen for where the run stands: a step, a revision, or the save."""
        from collect.screens.revision import RevisionScreen
        from collect.screens.save import SaveScreen
        from collect.screens.step import StepScreen

        c = self.collection
        if c.collecting:
            return StepScreen()
        items = c.revision_items()
        if items:
            return RevisionScreen(items[0])
        return SaveScreen()

    def go_on(self) -> None:
        self.switch_screen(self.next_screen())

    def on_mount(self) -> None:
        from collect.screens.consent import ConsentScreen

        if self.collection is None:
            left = self.browser_draft()
            if left is not None:
                from collect.screens.returning import ReturnScreen

                self.push_screen(ReturnScreen(left))
            else:
                self.push_screen(ConsentScreen())
        else:
            self.push_screen(self.next_screen())
            self.notify(f"resumed draft {self.resumed_from}: {self.collection.progress()}", timeout=6)

    def browser_draft(self):
        """The latest unfinished run of this study made in this browser (``browser``), or None."""
        from collect.recorder import list_drafts

        if self.browser is None:
            return None
        mine = [d for d in list_drafts(self.corpus) if d.browser == self.browser and d.study_id == self.study.id]
        return mine[-1] if mine else None

    def started(self, collection: Collection) -> None:
        """The subject agreed and has an id: the run exists (its draft is written); on to the first step."""
        self.collection = collection
        self.tell_experimenter(f"subject {collection.subject_id} started study {self.study.id}: draft "
                               f"{collection.draft_id} ({self._commands(collection)})")
        self.go_on()

    def _commands(self, c: Collection) -> str:
        return (f"resume it with `trb-collect run {self.study.path} --corpus {self.corpus.dir} --resume {c.draft_id}`, "
                f"or discard it with `trb-collect drafts --corpus {self.corpus.dir} discard {c.draft_id}`")

    def tell_experimenter(self, line: str) -> None:
        """Under ``trb-collect serve`` (Textual's web driver), a line for the server's log at once (the app's stderr
        goes there; a line written only at the end can be lost when a tab closes abruptly). In a terminal nothing:
        the screen is the subject's, and the end is reported on stderr once the app has closed."""
        import os

        if "web_driver" in os.environ.get("TEXTUAL_DRIVER", ""):
            os.write(2, f"trb-collect: {line}\n".encode())

    # ------------------------------------------------------------------ leaving
    def draft_note(self) -> str:
        """What the subject is told about their answers when leaving (or when the save fails): in their words; the
        experimenter's commands go to stderr (:meth:`leave_outcome`; in a browser, the server's log)."""
        return ("Your answers so far are kept safe, but they are not added to the study until you finish. If you "
                "leave now, the experimenter can let you carry on later from where you stopped.")

    def leave_outcome(self) -> Outcome:
        c = self.collection
        if c is None:
            return Outcome("left", "left before the study started: nothing was recorded")
        if self.saved:
            return Outcome("saved", f"saved subject {c.subject_id}'s run of study {self.study.id}", c.draft_id)
        return Outcome("left", f"left at {c.progress()}: the answers so far are kept as draft {c.draft_id} beside "
                               f"the corpus (not ingested); {self._commands(c)}", c.draft_id)

    def action_leave(self) -> None:
        from collect.screens.confirm import ConfirmScreen

        if isinstance(self.screen, ConfirmScreen):
            return
        if self.collection is None or self.saved:
            self.exit(self.leave_outcome())
            return

        def answer(leave: bool | None) -> None:
            if leave:
                self.exit(self.leave_outcome())

        self.push_screen(ConfirmScreen("Leave the study now?", self.draft_note(), yes="leave", no="stay"), answer)

    def action_help(self) -> None:
        from collect.screens.help import HelpScreen

        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss(None)
        else:
            self.push_screen(HelpScreen())


def run_app(study: Study, corpus: Corpus, *, subject_id: str | None = None, context_id: str | None = None,
            resume: str | None = None, browser: str | None = None) -> None:
    """Run the app in this terminal; how it ended goes to stderr as one line (the experimenter's: under
    ``trb-collect serve``, the server's log)."""
    import sys

    app = CollectApp(study, corpus, subject_id=subject_id, context_id=context_id, resume=resume, browser=browser)
    outcome = app.run() or app.leave_outcome()  # None: closed from outside (a browser tab, a signal)
    print(f"trb-collect: {outcome.message}", file=sys.stderr)
