"""The session list: filters, search by id prefix, one page at a time from DuckDB."""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Checkbox, DataTable, Footer, Input, Select, Static

from corpus.browse import LABEL_STATUSES, SessionFilter, SessionPage, facets, list_sessions

__all__ = ["SessionsScreen", "PAGE_SIZE"]

PAGE_SIZE = 50
_FILTERS = ("source_kind", "split", "context_id", "label_status")
_PROMPTS = {"source_kind": "source", "split": "split", "context_id": "context", "label_status": "labels"}


class SessionsScreen(Screen):
    """Every session of the corpus, filtered and paged; Enter opens one."""

    DEFAULT_CSS = """
    SessionsScreen #title { height: 1; background: $primary-background; padding: 0 1; }
    SessionsScreen .bar { height: 1; }
    SessionsScreen #search { width: 1fr; }
    SessionsScreen #disagree { width: auto; }
    SessionsScreen Select { width: 1fr; }
    SessionsScreen #table { height: 1fr; }
    SessionsScreen #status { height: 1; padding: 0 1; color: $text-muted; }
    """

    BINDINGS = [
        Binding("slash", "search", "Search"),
        Binding("right_square_bracket,pagedown", "page(1)", "Next page", key_display="]"),
        Binding("left_square_bracket,pageup", "page(-1)", "Prev page", key_display="["),
        Binding("a", "queue", "Queue"),
        Binding("R", "results", "Results"),
        Binding("escape", "focus_table", "Table", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.session_filter = SessionFilter()
        self.page_offset = 0
        self.page: SessionPage | None = None
        self._facets_loaded = False
        self._generation = 0  # a page from an older request is dropped

    def compose(self) -> ComposeResult:
        yield Static("trb-review", id="title")
        with Horizontal(classes="bar"):
            yield Input(placeholder="/ search session id prefix", id="search", compact=True)
            yield Checkbox("disagreement", id="disagree", compact=True)
        with Horizontal(classes="bar"):
            for name in _FILTERS:
                yield Select([], prompt=_PROMPTS[name], id=name, compact=True)
        yield DataTable(id="table", cursor_type="row")
        yield Static("loading…", id="status")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#table", DataTable)
        table.add_column("session", key="session", width=15)
        table.add_column("source", key="source", width=10)
        table.add_column("split", key="split", width=8)
        table.add_column("context", key="context", width=12)
        table.add_column("steps", key="steps", width=5)
        table.add_column("items", key="items", width=5)
        table.add_column("todo", key="todo", width=4)
        table.add_column("dis", key="dis", width=3)
        self.query_one("#title", Static).update(self.app.title_line())
        table.focus()
        self.load_page()
        self.load_facets()

    def on_screen_resume(self) -> None:
        if self.page is not None:  # back from a session or the queue: labels may have changed the counts
            self.load_page()

    # -- data --------------------------------------------------------------------------------------

    def load_page(self) -> None:
        self._generation += 1
        self._load_page(self._generation, self.session_filter, self.page_offset)

    @work(thread=True, group="sessions-page")
    def _load_page(self, generation: int, flt: SessionFilter, offset: int) -> None:
        app = self.app
        try:
            page = list_sessions(app.corpus, flt, offset=offset, limit=PAGE_SIZE, rule=app.split_rule)
        except Exception as e:  # noqa: BLE001 - shown, never a crash
            app.call_from_thread(self.set_status, f"cannot read the corpus: {getattr(e, 'message', e)}")
            return
        app.call_from_thread(self.show_page, page, generation)

    @work(thread=True, exclusive=True, group="sessions-facets")
    def load_facets(self) -> None:
        try:
            values = facets(self.app.corpus)
        except Exception:  # noqa: BLE001 - filters stay empty; the list still works
            return
        self.app.call_from_thread(self._fill_filters, values)

    def _fill_filters(self, values: dict[str, list[str]]) -> None:
        for name in _FILTERS:
            opts = values.get(name, list(LABEL_STATUSES) if name == "label_status" else [])
            self.query_one(f"#{name}", Select).set_options([(v, v) for v in opts])
        self._facets_loaded = True

    def show_page(self, page: SessionPage, generation: int | None = None) -> None:
        if generation is not None and generation != self._generation:
            return
        self.page = page
        table = self.query_one("#table", DataTable)
        table.clear()
        for r in page.rows:
            table.add_row(r.session_id, r.source_kind, r.split, r.context_id, r.n_steps, r.n_items or "",
                          r.n_unlabelled or "", r.n_disagreements or "", key=r.session_id)
        pages = max(1, -(-page.total // PAGE_SIZE))
        first = page.offset + 1 if page.rows else 0
        self.set_status(f"{first}–{page.offset + len(page.rows)} of {page.total:,} sessions · "
                        f"page {page.offset // PAGE_SIZE + 1}/{pages} · {self.app.split_rule_note}")

    def set_status(self, text: str) -> None:
        self.query_one("#status", Static).update(text)

    # -- filters -----------------------------------------------------------------------------------

    def _refilter(self, **change) -> None:
        values = {**self.session_filter.__dict__, **change}
        self.session_filter = SessionFilter(**values)
        self.page_offset = 0
        self.load_page()

    @on(Select.Changed)
    def _select_changed(self, event: Select.Changed) -> None:
        value = None if event.value is Select.NULL else str(event.value)
        if getattr(self.session_filter, event.select.id) != value:
            self._refilter(**{event.select.id: value})

    @on(Checkbox.Changed, "#disagree")
    def _disagree_changed(self, event: Checkbox.Changed) -> None:
        self._refilter(has_disagreement=event.value)

    @on(Input.Changed, "#search")
    def _search_changed(self, event: Input.Changed) -> None:
        self._refilter(search=event.value.strip())

    @on(Input.Submitted, "#search")
    def _search_done(self, event: Input.Submitted) -> None:
        self.query_one("#table", DataTable).focus()

    # -- actions -----------------------------------------------------------------------------------

    def action_search(self) -> None:
        self.query_one("#search", Input).focus()

    def action_focus_table(self) -> None:
        self.query_one("#table", DataTable).focus()

    def action_page(self, delta: int) -> None:
        if self.page is None:
            return
        new = self.page_offset + delta * PAGE_SIZE
        if 0 <= new < max(self.page.total, 1):
            self.page_offset = new
            self.load_page()

    @on(DataTable.RowSelected, "#table")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        self.app.open_session(event.row_key.value)

    def action_queue(self) -> None:
        self.app.open_queue()

    def action_results(self) -> None:
        self.app.open_results()
