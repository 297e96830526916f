"""The session list: filters, search over session, item and counterfactual ids, one page at a time from DuckDB.

The list keeps its cursor when it refreshes (on return from a session or the queue,
whose labels may change its counts), and says which filters are on when nothing matches.
"""

from __future__ import annotations

import asyncio

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.markup import escape
from textual.screen import Screen
from textual.widgets import Checkbox, DataTable, Footer, Input, Select, Static

from corpus.browse import LABEL_STATUSES, SessionFilter, SessionPage, facets, list_sessions
from tui.widgets.fit_table import Col, FitTable
from tui.widgets.state_checkbox import StateCheckbox

__all__ = ["SessionsScreen", "PAGE_SIZE"]

PAGE_SIZE = 50
#: Seconds the search waits after a keystroke before it queries (typing a word makes one query, not one per letter).
SEARCH_DELAY = 0.15
_FILTERS = ("source_kind", "split", "context_id", "label_status")
_PROMPTS = {"source_kind": "source", "split": "split", "context_id": "context", "label_status": "labels"}
_COLUMNS = (Col("session", "session"), Col("source", "source", flex=True, min=8),
            Col("split", "split"), Col("context", "context", flex=True, min=8), Col("steps", "steps"),
            Col("items", "items"), Col("todo", "todo"), Col("dis", "dis"))
#: With a search: the item or counterfactual id it matched in the session (blank: the session id matched); the
#: context gives way to it when the row does not fit.
_MATCH = Col("match", "match")
_SEARCH_COLUMNS = tuple(Col(c.key, c.label, flex=True, min=8, drop=1) if c.key == "context" else c
                        for c in _COLUMNS) + (_MATCH,)


def filter_note(flt: SessionFilter) -> str:
    """The active filters in words ("" when none)."""
    parts = [f"{_PROMPTS[name]} {getattr(flt, name).replace('_', ' ')}" for name in _FILTERS if getattr(flt, name)]
    if flt.has_disagreement:
        parts.append("disagreement")
    if flt.search:
        parts.insert(0, f"search {flt.search!r}")
    return ", ".join(parts)


class SessionsScreen(Screen):
    """Every session of the corpus, filtered and paged; Enter opens one."""

    DEFAULT_CSS = """
    SessionsScreen #title { height: auto; max-height: 2; background: $primary-background; padding: 0 1; }
    SessionsScreen .bar { height: 1; }
    SessionsScreen #search { width: 1fr; }
    SessionsScreen #disagree { width: auto; }
    SessionsScreen Select { width: 1fr; }
    SessionsScreen #table { height: 1fr; }
    SessionsScreen #status { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
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
            yield Input(placeholder="/ search ids: session, item, counterfactual", id="search", compact=True)
            yield StateCheckbox("disagreement", id="disagree", compact=True)
        with Horizontal(classes="bar"):
            for name in _FILTERS:
                yield Select([], prompt=_PROMPTS[name], id=name, compact=True)
        yield FitTable(_COLUMNS, id="table", empty_enter="no session to open: the list is empty (see the filters)")
        yield Static("loading…", id="status")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#table", FitTable)
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
        table = self.query_one("#table", FitTable)
        searching = bool(self.session_filter.search)
        specs = list(_SEARCH_COLUMNS if searching else _COLUMNS)
        if table.specs != specs:
            table.set_columns(specs)
        rows = []
        for r in page.rows:
            cells = [r.session_id, r.source_kind, r.split, r.context_id, str(r.n_steps), str(r.n_items or ""),
                     str(r.n_unlabelled or ""), str(r.n_disagreements or "")]
            if searching:
                cells.append(f"t{r.match_t} {r.match_id}" if r.match_id else "")
            rows.append((r.session_id, cells))
        table.fill(rows)
        if page.total == 0:
            note = filter_note(self.session_filter)
            self.set_status(f"no sessions match: {escape(note)}" if note else "this corpus has no sessions")
            return
        pages = max(1, -(-page.total // PAGE_SIZE))
        first = page.offset + 1 if page.rows else 0
        note = filter_note(self.session_filter)
        self.set_status(f"{first}–{page.offset + len(page.rows)} of {page.total:,} sessions"
                        f"{' (' + escape(note) + ')' if note else ''} · page {page.offset // PAGE_SIZE + 1}/{pages}"
                        f" · {self.app.split_rule_note}")

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
        self._search_soon(event.value.strip())

    @work(exclusive=True, group="sessions-search")
    async def _search_soon(self, term: str) -> None:
        """Search once typing pauses: each keystroke cancels the search the one before it scheduled."""
        await asyncio.sleep(SEARCH_DELAY)
        if term != self.session_filter.search:
            self._refilter(search=term)

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
        else:
            self.app.cannot("already on the first page" if delta < 0 else "already on the last page")

    @on(DataTable.RowSelected, "#table")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        row = next((r for r in self.page.rows if r.session_id == event.row_key.value), None) if self.page else None
        self.app.open_session(event.row_key.value, row.match_t if row is not None else None)


    def action_queue(self) -> None:
        self.app.open_queue()

    def action_results(self) -> None:
        self.app.open_results()
