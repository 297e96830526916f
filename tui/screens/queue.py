"""The review queue: every undecided attribution item that needs a person, why, and what the subject saw.

What fills it (:func:`tui.queue_view.review_items`): items whose annotators tie, items
``trb-annotate adjudicate`` queued for a disagreement, items someone marked unsure (an
annotator, or a reviewer pressing ``u`` here or from the trace), and items no one has
labelled. ``f`` shows one reason at a time (then all again); the title line counts each,
and an empty queue (or filter) says why it is empty. The pane below shows the item's step:
what the subject saw, their r_t, the action and its outcome, and every label on it.

Counterfactual items (Φ actions, continuations) on the queue are counted in the status
line, not listed: they are decided in Label Studio. A decision is a ``reviewer``
annotation on the item; a deciding label (self or exogenous) takes it off the queue, an
"unsure" keeps it there (as unsure). After a label the cursor moves on to the next item.
The queue reloads whenever the screen comes back (an item decided from its trace is
gone), keeping the cursor on the item it was on.
"""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.markup import escape
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from corpus.browse import item_labels, locate_item
from corpus.labels import decide
from corpus.review import describe_position
from tui.queue_view import REASON_TEXT, REASONS, QueueEntry, ReviewQueue, empty_reason, review_items
from tui.screens.session import label_lines
from tui.widgets.fit_table import Col, FitTable

__all__ = ["QueueScreen", "FILTERS"]

#: The outcome and what the subject saw are in the pane below, whole (a column of them would be cut).
_COLUMNS = (Col("item", "item"), Col("t", "t"), Col("reason", "reason"), Col("design", "design", drop=1),
            Col("votes", "votes", flex=True, min=9))
_LABEL = Binding.Group("Decide")
#: What ``f`` steps through: every reason, then one reason at a time.
FILTERS: tuple[str | None, ...] = (None, *REASONS)


def _one_line(s: str | None) -> str:
    return " ".join((s or "").split())


def r_line(r: dict | None) -> str:
    """r_t at the item's step as one line (``—`` for a step without one)."""
    if r is None:
        return "— (no r_t at this step)"
    return " · ".join(f"{k.replace('_', ' ')} {'—' if v is None else v}" for k, v in r.items())


class QueueScreen(Screen):
    DEFAULT_CSS = """
    QueueScreen #title { height: auto; max-height: 2; background: $primary-background; padding: 0 1; }
    QueueScreen #queue { height: 1fr; }
    QueueScreen #side { height: 1fr; padding: 0 1; border-top: solid $primary; }
    QueueScreen #item { height: auto; }
    QueueScreen #status { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
    """
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("s", "decide('self')", "self", group=_LABEL),
        Binding("e", "decide('exogenous')", "exogenous", group=_LABEL),
        Binding("u", "decide('unsure')", "unsure", group=_LABEL),
        Binding("z", "undo", "Undo"),
        Binding("f", "filter", "Filter"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.queue: ReviewQueue | None = None
        self.filter: str | None = None  # a reason of REASONS; None: every reason
        self._next: str | None = None  # after a label: the item the cursor moves on to
        self.last_labelled: str | None = None  # the item labelled last from this screen (what z undoes)
        self.labels: dict[str, list] = {}  # item id -> its labels as the side panel shows them
        self._told: str | None = None  # what a label's write said, kept in the status line after the reload

    @property
    def items(self) -> list[QueueEntry]:
        """The entries listed (those of the filter)."""
        return self.queue.of(self.filter) if self.queue is not None else []

    def compose(self) -> ComposeResult:
        yield Static("queue", id="title")
        yield FitTable(_COLUMNS, id="queue", empty_enter="the queue is empty: no trace to open")
        with VerticalScroll(id="side", classes="pane"):
            yield Static("", id="item")
        yield Static("loading…", id="status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#queue", FitTable).focus()
        self.load()

    def on_screen_resume(self) -> None:
        self.load()  # back from a trace: an item decided there has left the queue

    @work(thread=True, exclusive=True, group="queue")
    def load(self) -> None:
        app = self.app
        try:
            queue = review_items(app.corpus, wait_seconds=10)
        except Exception as e:  # noqa: BLE001
            app.call_from_thread(self.set_status, f"cannot read the queue: {getattr(e, 'message', e)}")
            return
        app.call_from_thread(self.show, queue)

    def show(self, queue: ReviewQueue) -> None:
        self.queue = queue
        self.labels = {}  # read again: they may have changed
        self._fill()

    def _fill(self) -> None:
        queue, items = self.queue, self.items
        table = self.query_one("#queue", FitTable)
        rows = [(e.item_id, [e.item_id, str(e.t), e.reason, e.design_label, e.why]) for e in items]
        keep, self._next = self._next, None
        table.fill(rows, keep=keep)
        counts = " · ".join(f"{r} {queue.counts[r]:,}" for r in REASONS)
        shown = "all" if self.filter is None else self.filter
        capped = [r for r in REASONS if queue.shown_limit and queue.totals.get(r, 0) > queue.shown_limit]
        cap = f" · first {queue.shown_limit:,} of each shown" if capped else ""
        self.query_one("#title", Static).update(
            f"[b]queue[/b] · {counts} · f filter: [b]{shown}[/b]{cap}")
        other = (f" · {queue.n_other} counterfactual item(s) are decided in Label Studio" if queue.n_other else "")
        if queue.n_examples:
            other += f" · {queue.n_examples} example item(s) (illustrative sessions) are never queued"
        told = "" if self._told is None else escape(self._told) + " · "  # until the next label, or a trace
        if items:
            what = "" if self.filter is None else f" ({REASON_TEXT[self.filter]})"
            self.set_status(f"{told}{len(items):,} item(s) waiting{what} · s/e/u decide · z undo · "
                            f"Enter: the trace{other}")
        else:
            self.set_status(told + escape(empty_reason(queue, self.filter)) + other)
        self._show_item()

    def set_status(self, text: str) -> None:
        self.query_one("#status", Static).update(text)

    def current(self) -> QueueEntry | None:
        key = self.query_one("#queue", FitTable).cursor_key()
        return next((q for q in self.items if q.item_id == key), None)

    @on(DataTable.RowHighlighted, "#queue")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_item()

    def _show_item(self) -> None:
        q = self.current()
        if q is None:
            self.query_one("#item", Static).update(
                "" if self.queue is None else escape(empty_reason(self.queue, self.filter)))
            return
        self._load_item(q)

    @work(thread=True, exclusive=True, group="queue-item")
    def _load_item(self, q: QueueEntry) -> None:
        try:
            labels = item_labels(self.app.corpus, q.item_id)
        except Exception:  # noqa: BLE001 - the side panel stays as it was
            return
        self.app.call_from_thread(self.labels.__setitem__, q.item_id, labels)
        self.app.call_from_thread(self.query_one("#item", Static).update, self.item_text(q, labels))

    def item_text(self, q: QueueEntry, labels: list) -> Text:
        text = Text()
        text.append(q.item_id, style="bold")
        text.append(f"  {q.reason}: {REASON_TEXT[q.reason]} · {q.why}\n", style="yellow")
        if q.queued is not None:
            text.append(f"queued {q.queued.queued_at[:19].replace('T', ' ')} by {q.queued.queued_by}"
                        f" · {q.queued.reason}\n", style="dim")
        text.append(f"session {q.session_id} · t = {q.t} · design label {q.design_label}\n", style="dim")
        text.append("saw      ", style="bold")
        text.append(f"{_one_line(q.observation) or '—'}\n")
        text.append("r_t      ", style="bold")
        text.append(f"{r_line(q.r)}\n")
        text.append("did      ", style="bold")
        text.append(f"{q.action or '—'}")
        text.append(f" → {_one_line(q.outcome) or '—'}\n", style="italic")
        decision = decide(labels)
        if decision is not None:
            text.append(f"decided: {describe_position(decision, self.app.reviewer)}\n", style="green")
        if labels:
            label_lines(text, labels, indent="")
        else:
            text.append("no label on it yet\n", style="dim")
        return text

    @on(DataTable.RowSelected, "#queue")
    def _open(self, event: DataTable.RowSelected) -> None:
        self.open_trace(str(event.row_key.value))

    def action_filter(self) -> None:
        """The next reason's items (then all again)."""
        self.filter = FILTERS[(FILTERS.index(self.filter) + 1) % len(FILTERS)]
        if self.queue is not None:
            self._fill()

    @work(thread=True, group="queue-open")
    def open_trace(self, item_id: str) -> None:
        self._told = None  # labels made from the trace say so there
        where = locate_item(self.app.corpus, "attribution", item_id)
        if where is None:
            self.app.call_from_thread(self.app.cannot, f"no item {escape(item_id)} in this corpus")
            return
        self.app.call_from_thread(self.app.open_session, where[0], where[1])

    def _after_label(self, item_id: str):
        def done(saved: bool) -> None:
            if saved:  # move on: to the item after this one (it may itself have left the queue)
                self.last_labelled = item_id
                keys = [q.item_id for q in self.items]
                i = keys.index(item_id) if item_id in keys else -1
                self._next = keys[i + 1] if 0 <= i < len(keys) - 1 else None
            self._told = self.app.label_log[-1] if self.app.label_log else None
            self.load()
        return done

    def action_decide(self, label: str) -> None:
        self._told = None
        q = self.current()
        if q is None:
            self.app.cannot("nothing to decide: " + (empty_reason(self.queue, self.filter) if self.queue
                                                     else "the queue is still loading"))
            return
        self.app.label_item(q.item_id, label, labels=self.labels.get(q.item_id),
                            done=self._after_label(q.item_id))

    def action_undo(self) -> None:
        """Undo the label made last from this screen (the item may have left the queue), else the reviewer's
        latest label on the item under the cursor."""
        self._told = None
        q = self.current()
        target = self.last_labelled or (q.item_id if q is not None else None)
        if target is None:
            self.app.cannot("nothing to undo: no label was made here, and the queue is empty")
            return

        def done(saved: bool) -> None:
            if saved:
                self._next = target
            self._told = self.app.label_log[-1] if self.app.label_log else None
            self.load()

        self.app.undo_item(target, labels=self.labels.get(target), done=done)

    def action_back(self) -> None:
        self.app.pop_screen()
