"""The review app: sessions, one session, counterfactuals, labelling, the adjudication queue, results.

All corpus reads and writes go through :mod:`corpus.browse`, :mod:`corpus.labels` and
:mod:`corpus.review` in worker threads; the app never holds the corpus between calls.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.markup import escape

from corpus.browse import split_rule
from corpus.review import SaveOutcome, review_label, save_label
from corpus.store import Corpus

__all__ = ["ReviewApp"]


class ReviewApp(App):
    """``ReviewApp(corpus_dir, results=None, reviewer="me").run()``."""

    TITLE = "trb-review"
    ENABLE_COMMAND_PALETTE = False  # every action has a key (see ?); the footer needs the room at 80 columns
    BINDINGS = [
        Binding("question_mark", "help", "Help"),
        Binding("ctrl+q", "quit", "Quit", priority=True),
    ]

    def __init__(self, corpus_dir: str | os.PathLike, *, results: str | os.PathLike | None = None,
                 reviewer: str, attempt_wait: float | None = None, max_attempts: int | None = None) -> None:
        super().__init__()
        self.corpus = Corpus(corpus_dir).require()
        self.results = Path(results) if results is not None else None
        self.reviewer = reviewer
        self.split_rule = split_rule(self.corpus)
        self.split_rule_note = ("splits from release " + self.split_rule.release) if self.split_rule.release \
            else "splits: default rule (no release yet)"
        self._save_kw = {k: v for k, v in (("attempt_wait", attempt_wait), ("max_attempts", max_attempts))
                         if v is not None}
        #: every state a label write went through, newest last (what the status line showed)
        self.label_log: list[str] = []
        self._quit_anyway = False

    def title_line(self) -> str:
        return (f"[b]trb-review[/b] · corpus {escape(self.corpus.dir.name)} · reviewer {escape(self.reviewer)}"
                f"{' · results ' + escape(self.results.name) if self.results else ''} · ? help")

    def on_mount(self) -> None:
        from tui.screens.sessions import SessionsScreen

        self.push_screen(SessionsScreen())

    # -- navigation --------------------------------------------------------------------------------

    def open_session(self, session_id: str, t: int | None = None) -> None:
        from tui.screens.session import SessionScreen

        self.push_screen(SessionScreen(session_id, t))

    def open_queue(self) -> None:
        from tui.screens.queue import QueueScreen

        self.push_screen(QueueScreen())

    def open_results(self) -> None:
        if self.results is None:
            self.notify("no results store: start trb-review with --results FILE", severity="warning")
            return
        from tui.screens.results import ResultsScreen

        self.push_screen(ResultsScreen())

    def pending_labels(self) -> int:
        """Label writes still in flight (saving, or waiting for the corpus)."""
        return sum(1 for w in self.workers if w.group == "labels" and w.is_running)

    async def action_quit(self) -> None:
        pending = self.pending_labels()
        if pending and not self._quit_anyway:
            self._quit_anyway = True
            self.notify(f"{pending} label(s) are still being saved; wait for 'saved', or press Ctrl+Q again "
                        "to quit without them", severity="warning", timeout=10)
            return
        self.exit()

    def action_help(self) -> None:
        from tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    # -- labelling ---------------------------------------------------------------------------------

    def label_item(self, item_id: str, label: str, *, done: Callable[[bool], None] | None = None) -> None:
        """Ask for a note, then write the reviewer's label in a worker (retried while the corpus is busy)."""
        from tui.screens.note import NoteScreen

        def got_note(note: str | None) -> None:
            if note is None:
                self._label_state("cancelled: nothing was saved")
                return
            record = review_label(item_id, label, self.reviewer, note=note)
            self._label_state(f"saving {label} on {item_id}…")
            self._write_label(record, done)

        self.push_screen(NoteScreen(label, item_id), got_note)

    @work(thread=True, group="labels")
    def _write_label(self, record: dict, done: Callable[[bool], None] | None) -> None:
        outcome = save_label(self.corpus, record, on_state=lambda msg: self.call_from_thread(self._label_state, msg),
                             **self._save_kw)
        self.call_from_thread(self._label_done, outcome, done)

    def _label_state(self, message: str) -> None:
        self.label_log.append(message)
        setter = getattr(self.screen, "set_status", None)
        if setter is not None:
            setter(escape(message))

    def _label_done(self, outcome: SaveOutcome, done: Callable[[bool], None] | None) -> None:
        self._quit_anyway = False
        self._label_state(outcome.message)
        self.notify(escape(outcome.message), severity="information" if outcome.saved else "error",
                    timeout=4 if outcome.saved else 30)
        if done is not None:
            done(outcome.saved)
