"""The adjudication queue: items whose annotators disagree, their labels side by side, the reviewer decides.

The app decides attribution items (self / exogenous / unsure); counterfactual items
(Φ actions, continuations) on the queue are counted in the status line, not listed.

A decision is a ``reviewer`` annotation (method ``reviewer``) on the item; once a
deciding label (self or exogenous) is recorded the item leaves the queue
(:func:`corpus.labels.review_queue`); an "unsure" leaves it there. After a label the
cursor moves on to the next item. The queue reloads whenever the screen comes back
(an item decided from its trace is gone), keeping the cursor on the item it was on.
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

from corpus.browse import ItemContext, item_contexts, item_labels, locate_item
from corpus.labels import QueueItem, decide, review_queue
from corpus.review import describe_position
from tui.screens.session import label_lines
from tui.widgets.fit_table import Col, FitTable

__all__ = ["QueueScreen"]

_COLUMNS = (Col("item", "item"), Col("t", "t"), Col("design", "design"), Col("votes", "votes", flex=True, min=9),
            Col("outcome", "outcome", flex=True, min=10))
_LABEL = Binding.Group("Decide")


def _votes(q: QueueItem) -> str:
    return " ".join(f"{k}:{v}" for k, v in sorted(q.votes.items(), key=lambda kv: (-kv[1], kv[0])))


def _one_line(s: str | None) -> str:
    return " ".join((s or "").split())


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
        Binding("s", "decide('self')", "self", group=_LABEL),
        Binding("e", "decide('exogenous')", "exogenous", group=_LABEL),
        Binding("u", "decide('unsure')", "unsure", group=_LABEL),
        Binding("z", "undo", "Undo"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.items: list[QueueItem] = []
        self.contexts: dict[str, ItemContext] = {}
        self._next: str | None = None  # after a label: the item the cursor moves on to
        self.last_labelled: str | None = None  # the item labelled last from this screen (what z undoes)
        self.labels: dict[str, list] = {}  # item id -> its labels as the side panel shows them

    def compose(self) -> ComposeResult:
        yield Static("adjudication queue", id="title")
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
            pending = review_queue(app.corpus, wait_seconds=10)
            items = [q for q in pending if q.target_kind == "attribution"]
            contexts = item_contexts(app.corpus, [q.target_id for q in items])
        except Exception as e:  # noqa: BLE001
            app.call_from_thread(self.set_status, f"cannot read the queue: {getattr(e, 'message', e)}")
            return
        app.call_from_thread(self.show, items, len(pending) - len(items), contexts)

    def show(self, items: list[QueueItem], n_other: int = 0, contexts: dict[str, ItemContext] | None = None) -> None:
        self.items = items
        self.labels = {}  # read again: they may have changed
        self.contexts = contexts or {}
        table = self.query_one("#queue", FitTable)
        rows = []
        for q in items:
            ctx = self.contexts.get(q.target_id)
            rows.append((q.target_id, [q.target_id, "" if ctx is None else str(ctx.t),
                                       "" if ctx is None else ctx.design_label, _votes(q),
                                       "" if ctx is None else _one_line(ctx.outcome)]))
        keep, self._next = self._next, None
        table.fill(rows, keep=keep)
        other = f" · {n_other} counterfactual item(s) are decided in Label Studio" if n_other else ""
        if items:
            self.set_status(f"{len(items)} item(s) waiting for a reviewer · s/e/u decide · z undo · "
                            f"Enter open the trace{other}")
        else:
            self.set_status(f"the queue is empty: no attribution item waits for a reviewer{other}")
        self._show_item()

    def set_status(self, text: str) -> None:
        self.query_one("#status", Static).update(text)

    def current(self) -> QueueItem | None:
        key = self.query_one("#queue", FitTable).cursor_key()
        return next((q for q in self.items if q.target_id == key), None)

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
        self.app.call_from_thread(self.labels.__setitem__, q.target_id, labels)
        ctx = self.contexts.get(q.target_id)
        text = Text()
        text.append(f"{q.target_id}", style="bold")
        text.append(f"  queued {q.queued_at[:19].replace('T', ' ')} by {q.queued_by} · {q.reason}\n", style="dim")
        if ctx is not None:
            text.append(f"session {ctx.session_id} · t = {ctx.t} · design label {ctx.design_label} · "
                        f"action {ctx.action}\n")
            text.append(f"outcome  {_one_line(ctx.outcome)}\n", style="italic")
        decision = decide(labels)
        if decision is not None:
            text.append(f"decided: {describe_position(decision, self.app.reviewer)}\n", style="green")
        label_lines(text, labels, indent="")
        self.app.call_from_thread(self.query_one("#item", Static).update, text)

    @on(DataTable.RowSelected, "#queue")
    def _open(self, event: DataTable.RowSelected) -> None:
        self.open_trace(str(event.row_key.value))

    @work(thread=True, group="queue-open")
    def open_trace(self, item_id: str) -> None:
        where = locate_item(self.app.corpus, "attribution", item_id)
        if where is None:
            self.app.call_from_thread(self.app.cannot, f"no item {escape(item_id)} in this corpus")
            return
        self.app.call_from_thread(self.app.open_session, where[0], where[1])

    def _after_label(self, item_id: str):
        def done(saved: bool) -> None:
            if saved:  # move on: to the item after this one (it may itself have left the queue)
                self.last_labelled = item_id
                keys = [q.target_id for q in self.items]
                i = keys.index(item_id) if item_id in keys else -1
                self._next = keys[i + 1] if 0 <= i < len(keys) - 1 else None
            self.load()
        return done

    def action_decide(self, label: str) -> None:
        q = self.current()
        if q is None:
            self.app.cannot("the queue is empty: nothing to decide")
            return
        self.app.label_item(q.target_id, label, labels=self.labels.get(q.target_id),
                            done=self._after_label(q.target_id))

    def action_undo(self) -> None:
        """Undo the label made last from this screen (the item may have left the queue), else the reviewer's
        latest label on the item under the cursor."""
        q = self.current()
        target = self.last_labelled or (q.target_id if q is not None else None)
        if target is None:
            self.app.cannot("nothing to undo: no label was made here, and the queue is empty")
            return

        def done(saved: bool) -> None:
            if saved:
                self._next = target
            self.load()

        self.app.undo_item(target, labels=self.labels.get(target), done=done)

    def action_back(self) -> None:
        self.app.pop_screen()
