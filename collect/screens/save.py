"""The end: every record of the run goes through the validated, all-or-nothing ingest; a busy corpus is shown
(who holds it), and the save can be retried; until it succeeds the answers stay in the draft."""

from __future__ import annotations

from collections import Counter

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.markup import escape
from textual.widgets import Static

from collect.screens.base import CollectScreen
from corpus.errors import CorpusBusy
from toolkit.errors import ToolkitError

__all__ = ["SaveScreen", "recorded_summary"]


def recorded_summary(records: list[dict]) -> list[str]:
    """What a run's records hold, as lines a subject can read."""
    kinds = Counter(r["kind"] for r in records)
    origins = Counter(r.get("origin") for r in records if r["kind"] == "counterfactual")
    steps = sum(len(r["steps"]) for r in records if r["kind"] == "session")
    return [f"{kinds['session']} sessions ({steps} steps: what you saw, said and did)",
            f"{origins['same_session_revision']} revised answers (same-session revisions)",
            f"{origins['paired_session']} paired-session counterfactuals (first steps of each pair)",
            f"{kinds['attribution']} attribution items (from the environment's ground truth)"]


class SaveScreen(CollectScreen):
    DEFAULT_CSS = """
    SaveScreen #status { height: auto; margin-top: 1; }
    SaveScreen #detail { height: auto; margin-top: 1; }
    """
    KEYS = "saving… · ? help"
    BINDINGS = [
        Binding("r", "retry", "Retry"),
        Binding("q,enter", "close", "Close"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.state = "saving"  # saving | waiting | saved | busy | failed
        self.states: list[str] = []  # every state shown, in order
        self.ingest_seconds: float | None = None

    def compose(self) -> ComposeResult:
        yield from self.compose_header()
        yield Static("", id="status")
        yield Static("", id="detail")

    def on_mount(self) -> None:
        self.save()

    def _show(self, state: str, status: str, detail: str = "", keys: str | None = None) -> None:
        self.state = state
        self.states.append(state)
        self.query_one("#status", Static).update(status)
        self.query_one("#detail", Static).update(detail)
        if keys is not None:
            self.set_keys(keys)
        self.refresh_progress()

    def save(self) -> None:
        self._show("saving", "[b]Saving your answers…[/b]", keys="saving… · ? help")
        self._save()

    @work(thread=True, exclusive=True, group="save")
    def _save(self) -> None:
        app = self.app
        c = app.collection
        try:
            records = c.records()
            report = c.finish(wait_seconds=app.lock_wait,
                              on_wait=lambda w: app.call_from_thread(self._waiting, str(w)))
        except CorpusBusy as e:
            app.call_from_thread(self._failed, e, True)
        except ToolkitError as e:
            app.call_from_thread(self._failed, e, False)
        else:
            app.call_from_thread(self._saved, records, report.seconds)

    def _waiting(self, message: str) -> None:
        self._show("waiting", "[b]Waiting for the corpus…[/b]", escape(message) +
                   "\n\nYour answers are safe in the draft meanwhile.", keys="waiting for the corpus · ? help")

    def _saved(self, records: list[dict], seconds: float) -> None:
        app = self.app
        self.ingest_seconds = seconds  # the ingest's own time (bench/collect.py reads it)
        app.saved = True
        lines = "\n".join(f"  • {line}" for line in recorded_summary(records))
        c = app.collection
        self._show("saved", "[b]Saved. Thank you![/b]",
                   f"Recorded as subject {escape(c.subject_id)} (consent {escape(app.study.consent_ref)}):\n{lines}"
                   f"\n\n[dim]Ingested in {seconds:.2f} s. You can close this window now.[/dim]",
                   keys="q or Enter close · ? help")

    def _failed(self, error: ToolkitError, busy: bool) -> None:
        note = escape(self.app.draft_note())
        if busy:
            self._show("busy", "[b]The corpus is busy: nothing was saved yet.[/b]",
                       f"{escape(error.message)}\n\n{note}\n\nPress r to try again.",
                       keys="r try again · q close (the draft is kept) · ? help")
        else:
            lines = "\n".join(escape(line) for line in error.lines()[:8])
            self._show("failed", "[b]The answers could not be saved: nothing was written.[/b]",
                       f"{lines}\n\n{note}", keys="r try again · q close (the draft is kept) · ? help")

    def action_retry(self) -> None:
        if self.state in ("busy", "failed"):
            self.save()

    def action_close(self) -> None:
        if self.state == "saved":
            self.app.exit(self.app.leave_outcome())
        elif self.state in ("busy", "failed"):
            from collect.app import Outcome

            c = self.app.collection
            self.app.exit(Outcome("unsaved", self.app.leave_outcome().message.replace("left at", "not saved at"),
                                  c.draft_id))

    @property
    def status_text(self) -> str:
        return str(self.query_one("#status", Static).render()) + "\n" + str(self.query_one("#detail", Static).render())
