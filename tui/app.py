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
from corpus.review import (
    ItemState,
    LabelEffect,
    SaveOutcome,
    item_state,
    label_effect,
    review_label,
    save_label,
    state_from_labels,
    undo_record,
)
from corpus.store import Corpus

__all__ = ["ReviewApp", "KEY_USES"]

#: The app's keys and where they act: a key pressed where nothing binds it says so (not silence).
KEY_USES = {
    "s": "labels an item self (session, queue)",
    "e": "labels an item exogenous (session, queue)",
    "u": "labels an item unsure (session, queue)",
    "z": "undoes your latest label on an item (session, queue)",
    "i": "goes to the next item at the step (session)",
    "m": "goes to the next step with an item (session)",
    "c": "shows the step's counterfactuals (session)",
    "a": "opens the review queue (sessions list)",
    "f": "shows one reason of the review queue at a time (queue)",
    "R": "opens the results (sessions list, with --results)",
    "t": "shows the next track's worst items (results)",
    "right_square_bracket": "goes to the next page (sessions list, results)",
    "left_square_bracket": "goes to the previous page (sessions list, results)",
    "slash": "searches the ids (sessions list)",
    "pagedown": "scrolls a detail pane (session, results, counterfactuals)",
    "pageup": "scrolls a detail pane (session, results, counterfactuals)",
}


class ReviewApp(App):
    """``ReviewApp(corpus_dir, results=None, reviewer="me").run()``."""

    TITLE = "trb-review"
    ENABLE_COMMAND_PALETTE = False  # every action has a key (see ?); the footer needs the room at 80 columns
    # where the keys go: the focused table has a bar on its left and a lit header; the focused input,
    # select or checkbox a lit background
    CSS = """
    DataTable { outline-left: blank; }
    DataTable:focus { outline-left: thick $accent; }
    DataTable:focus > .datatable--header { background: $accent 45%; text-style: bold; }
    VerticalScroll.pane { outline-left: blank; }
    VerticalScroll.pane:focus { outline-left: thick $accent; }
    Input:focus, Select:focus > SelectCurrent, Checkbox:focus { background: $accent 35%; }
    """
    BINDINGS = [
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit", "Quit"),  # not while typing: a text field takes the q
        Binding("ctrl+q", "quit", "Quit", priority=True, show=False),  # the title line and help say it
    ]

    def __init__(self, corpus_dir: str | os.PathLike, *, results: str | os.PathLike | None = None,
                 reviewer: str, attempt_wait: float | None = None, max_attempts: int | None = None,
                 prefetch_results: bool = True) -> None:
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
        #: with --results: the runs' figures are read (from the cache) or computed in the background from the start,
        #: so the results screen finds them ready; how they were got ("computed", "cache"), once done
        self.prefetch_results = prefetch_results and self.results is not None
        self.results_prefetched: str | None = None

    def title_line(self) -> str:
        return (f"[b]trb-review[/b] · ? help · q quit · corpus {escape(self.corpus.dir.name)} · "
                f"reviewer {escape(self.reviewer)}{' · results ' + escape(self.results.name) if self.results else ''}")

    def on_mount(self) -> None:
        from tui.screens.sessions import SessionsScreen

        self.push_screen(SessionsScreen())
        if self.prefetch_results:
            self._prefetch_results()

    @work(thread=True, group="results-prefetch", exit_on_error=False)
    def _prefetch_results(self) -> None:
        from tui.results_view import cached_runs

        try:
            _, self.results_prefetched = cached_runs(self.results)
        except Exception:  # noqa: BLE001 - the results screen reads the store again and says what is wrong
            self.results_prefetched = None

    # -- navigation --------------------------------------------------------------------------------

    def open_session(self, session_id: str, t: int | None = None) -> None:
        from tui.screens.session import SessionScreen

        self.push_screen(SessionScreen(session_id, t))

    def open_queue(self) -> None:
        from tui.screens.queue import QueueScreen

        self.push_screen(QueueScreen())

    def open_results(self) -> None:
        if self.results is None:
            self.cannot("no results store: start trb-review with --results FILE")
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
            self.cannot(f"{pending} label(s) are still being saved; wait for 'saved', or press q again "
                        "to quit without them")
            return
        self.exit()

    def action_help(self) -> None:
        from tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def on_key(self, event) -> None:
        """A key of the app pressed where nothing binds it: say what it does and where (typing is left alone)."""
        from textual.screen import ModalScreen
        from textual.widgets import Input

        use = KEY_USES.get(event.key)
        if use is None or isinstance(self.screen, ModalScreen) or isinstance(self.focused, Input):
            return
        if event.key in self.screen.active_bindings:
            return
        self.cannot(f"{event.character or event.key}: nothing to do here; it {use} · ? help")

    def cannot(self, message: str) -> None:
        """A key that cannot act here: say why, in the screen's status line where it has one (a notification,
        which covers part of the screen for a moment, only where it has none)."""
        self.say(message, warning=True)

    def say(self, message: str, *, warning: bool = False) -> None:
        """One line for the user: the screen's status line where it has one (nothing covered), else a short
        notification."""
        setter = getattr(self.screen, "set_status", None)
        if setter is not None:
            setter(("⚠ " if warning else "") + escape(message))
        else:
            self.notify(escape(message), severity="warning" if warning else "information", timeout=3)

    # -- labelling ---------------------------------------------------------------------------------

    def label_item(self, item_id: str, label: str, *, labels: list | None = None,
                   done: Callable[[bool], None] | None = None) -> None:
        """Label ``item_id``: confirm first if the label would replace a decision, ask for a note, then write
        the label in a worker (retried while the corpus is busy) as the reviewer's next revision.

        ``labels``: the item's labels as the screen shows them (what the confirmation and the revision
        number are worked out from, at once, even while another process holds the corpus); without them
        they are read first. ``done(saved)`` is called after the write."""
        if labels is not None:
            self._ask_label(state_from_labels(item_id, self.reviewer, labels), label, done)
        else:
            self._prepare(item_id, label, done)

    def undo_item(self, item_id: str, *, labels: list | None = None,
                  done: Callable[[bool], None] | None = None) -> None:
        """Undo the reviewer's latest label on ``item_id`` (after a confirmation): a new revision."""
        if labels is not None:
            self._undo(state_from_labels(item_id, self.reviewer, labels), done)
        else:
            self._prepare(item_id, None, done)

    @work(thread=True, group="label-prep")
    def _prepare(self, item_id: str, label: str | None, done: Callable[[bool], None] | None) -> None:
        self.call_from_thread(self._label_state, f"reading the labels on {item_id}…")
        try:
            state = item_state(self.corpus, item_id, self.reviewer)
        except Exception as e:  # noqa: BLE001 - shown, never a crash
            self.call_from_thread(self.cannot, f"cannot read {item_id}: {getattr(e, 'message', e)}")
            return
        if state is None:
            self.call_from_thread(self.cannot, f"no attribution item {item_id} in this corpus")
        elif label is None:
            self.call_from_thread(self._undo, state, done)
        else:
            self.call_from_thread(self._ask_label, state, label, done)

    def _undo(self, state: ItemState, done: Callable[[bool], None] | None) -> None:
        try:
            record, effect = undo_record(state)
        except LookupError as e:
            self.cannot(f"nothing to undo: {e}")
            return
        self._confirm_undo(state, record, effect, done)

    def _ask_label(self, state: ItemState, label: str, done: Callable[[bool], None] | None) -> None:
        from tui.screens.confirm import ConfirmScreen
        from tui.screens.note import NoteScreen

        effect = label_effect(state, label)

        def got_note(note: str | None) -> None:
            if note is None:
                self._label_state("cancelled: nothing was saved")
                return
            record = review_label(state.item_id, effect.label, self.reviewer, note=note, revision=effect.revision)
            self._label_state(f"saving {effect.label} on {state.item_id}…")
            self._write_label(record, effect, done)

        def confirmed(yes: bool | None) -> None:
            if not yes:
                self._label_state("cancelled: nothing was saved")
                return
            self.push_screen(NoteScreen(effect.label, state.item_id, effect.message), got_note)

        if effect.needs_confirm:
            self.push_screen(ConfirmScreen(f"override the decision on {state.item_id}?", effect.message), confirmed)
        else:
            self.push_screen(NoteScreen(effect.label, state.item_id, effect.message), got_note)

    def _confirm_undo(self, state: ItemState, record: dict, effect: LabelEffect,
                      done: Callable[[bool], None] | None) -> None:
        from tui.screens.confirm import ConfirmScreen

        last = state.mine[-1]

        def confirmed(yes: bool | None) -> None:
            if not yes:
                self._label_state("cancelled: nothing was saved")
                return
            self._label_state(f"saving the undo on {state.item_id}…")
            self._write_label(record, effect, done, undone=f"your revision {last.revision} ({last.label}) on "
                                                           f"{state.item_id}")

        self.push_screen(ConfirmScreen(
            f"undo your revision {last.revision} ({last.label}) on {state.item_id}?",
            f"{record['value']['rationale']}; recorded as revision {record['revision']}, nothing is deleted. "
            f"{effect.message}"), confirmed)

    @work(thread=True, group="labels")
    def _write_label(self, record: dict, effect: LabelEffect, done: Callable[[bool], None] | None,
                     undone: str | None = None) -> None:
        outcome = save_label(self.corpus, record, on_state=lambda msg: self.call_from_thread(self._label_state, msg),
                             **self._save_kw)
        self.call_from_thread(self._label_done, outcome, effect, done, undone)

    def _label_state(self, message: str) -> None:
        self.label_log.append(message)
        setter = getattr(self.screen, "set_status", None)
        if setter is not None:
            setter(escape(message))

    def _label_done(self, outcome: SaveOutcome, effect: LabelEffect, done: Callable[[bool], None] | None,
                    undone: str | None = None) -> None:
        """After a write: the status line says what was saved (an undo as an undo: what it undid), a failure also
        as a notification that stays until read (nothing else covers the screen)."""
        self._quit_anyway = False
        if outcome.saved and undone is not None:
            message = f"undone: {undone}, saved as revision {effect.revision}"
        else:
            message = outcome.message
        self._label_state(message)
        if not outcome.saved:
            self.notify(escape(message), severity="error", timeout=30)
        if done is not None:
            done(outcome.saved)
