"""The adjudication queue: items whose annotators disagree, their labels side by side, the reviewer decides.

The app decides attribution items (self / exogenous / unsure); counterfactual items
(Φ actions, continuations) on the queue are counted in the status line, not listed.

A decision is a ``reviewer`` annotation (method ``reviewer``) on the item; once it is
recorded the item leaves the queue (:func:`corpus.labels.review_queue`).
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
from corpus.labels import QueueItem, review_queue

__all__ = ["QueueScreen"]


def _votes(q: QueueItem) -> str:
    return " ".join(f"{k}:{v}" for k, v in sorted(q.votes.items(), key=lambda kv: (-kv[1], kv[0])))


class QueueScreen(Screen):
    DEFAULT_CSS = """
    QueueScreen #title { height: 1; background: $primary-background; padding: 0 1; }
    QueueScreen #queue { height: 1fr; }
    QueueScreen #side { height: 1fr; padding: 0 1; border-top: solid $primary; }
    QueueScreen #item { height: auto; }
    QueueScreen #status { height: 1; padding: 0 1; color: $text-muted; }
    """
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("s", "decide('self')", "Self"),
        Binding("e", "decide('exogenous')", "Exog."),
        Binding("u", "decide('unsure')", "Unsure"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.items: list[QueueItem] = []

    def compose(self) -> ComposeResult:
        yield Static("adjudication queue", id="title")
        yield DataTable(id="queue", cursor_type="row")
        with VerticalScroll(id="side"):
            yield Static("", id="item")
        yield Static("loading…", id="status")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#queue", DataTable)
        table.add_column("item", key="item", width=26)
        table.add_column("reason", key="reason", width=12)
        table.add_column("votes", key="votes", width=18)
        table.add_column("annotators", key="annotators")
        table.focus()
        self.load()

    @work(thread=True, exclusive=True, group="queue")
    def load(self) -> None:
        app = self.app
        try:
            pending = review_queue(app.corpus, wait_seconds=10)
        except Exception as e:  # noqa: BLE001
            app.call_from_thread(self.set_status, f"cannot read the queue: {getattr(e, 'message', e)}")
            return
        items = [q for q in pending if q.target_kind == "attribution"]
        app.call_from_thread(self.show, items, len(pending) - len(items))

    def show(self, items: list[QueueItem], n_other: int = 0) -> None:
        self.items = items
        table = self.query_one("#queue", DataTable)
        row = table.cursor_row
        table.clear()
        for q in items:
            ann = "  ".join(f"{a}={v}" for a, v in sorted(q.annotators.items()))
            table.add_row(q.target_id, q.reason, _votes(q), ann, key=q.target_id)
        if items:
            table.move_cursor(row=min(row, len(items) - 1))
        other = f" · {n_other} counterfactual item(s) are decided in Label Studio" if n_other else ""
        self.set_status(f"{len(items)} item(s) waiting for a reviewer · s/e/u decide · Enter open the trace{other}")
        self._show_item()

    def set_status(self, text: str) -> None:
        self.query_one("#status", Static).update(text)

    def current(self) -> QueueItem | None:
        table = self.query_one("#queue", DataTable)
        if not self.items or table.row_count == 0:
            return None
        return self.items[min(table.cursor_row, len(self.items) - 1)]

    @on(DataTable.RowHighlighted, "#queue")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_item()

    def _show_item(self) -> None:
        q = self.current()
        if q is None:
            self.query_one("#item", Static).update("the queue is empty")
            return
        self._load_item(q)

    @work(thread=True, exclusive=True, group="queue-item")
    def _load_item(self, q: QueueItem) -> None:
        try:
            labels = item_labels(self.app.corpus, q.target_id)
        except Exception:  # noqa: BLE001 - the side panel stays as it was
            return
        text = Text()
        text.append(f"{q.target_id}", style="bold")
        text.append(f"  queued {q.queued_at[:19]} by {q.queued_by} · margin {q.margin}\n", style="dim")
        for lb in labels:
            text.append(f"{lb.role:<11} {lb.annotator_id:<10} ", style="dim")
            text.append(lb.label or "—", style="bold")
            if lb.rationale:
                text.append(f" — {lb.rationale}", style="italic")
            text.append("\n")
        self.app.call_from_thread(self.query_one("#item", Static).update, text)

    @on(DataTable.RowSelected, "#queue")
    def _open(self, event: DataTable.RowSelected) -> None:
        self.open_trace(str(event.row_key.value))

    @work(thread=True, group="queue-open")
    def open_trace(self, item_id: str) -> None:
        where = locate_item(self.app.corpus, "attribution", item_id)
        if where is None:
            self.app.call_from_thread(self.set_status, f"no item {escape(item_id)} in this corpus")
            return
        self.app.call_from_thread(self.app.open_session, where[0], where[1])

    def action_decide(self, label: str) -> None:
        q = self.current()
        if q is None:
            self.set_status("the queue is empty")
            return
        self.app.label_item(q.target_id, label, done=lambda _ok: self.load())

    def action_back(self) -> None:
        self.app.pop_screen()
