"""Results (``--results FILE``): runs with the registry's figures, then one list of worst items at a time.

The runs table shows each headline metric of the track registry, the figure ``trb report``
prints, under its profile-vector entry (G, ground, attr, viab, nav), with its item count
where the row has room (the figure alone where it has not: every headline stays on screen
at 80 columns); a proxy adapter's Track 2 figure reads "proxy …" (proxy-tier grounding:
spec §3 defines Track 2 on native models only). The pane below shows every metric of the
highlighted run under its full title, with the report's flags and Track 2's strength.
The worst items are one track's items of one metric (``t`` goes to the next list),
lowest score first, a page at a time (``]`` / ``[``); on an item the pane shows what it
was scored on: Track 1's model distribution beside Φ(r′), with r′'s planned action and
the action taken marked, the score and TV; Track 3's label, prediction and belief.
Enter on an item opens its session at its step.
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

from trb.report import format_score
from tui.results_view import (
    ItemList,
    RunSummary,
    WorstItem,
    WorstPage,
    cached_runs,
    is_kept,
    item_lists,
    list_runs,
    metric_columns,
    worst_items,
)
from tui.widgets.fit_table import Alt, Col, FitTable
from tui.widgets.phi_bars import compare_bars_text

__all__ = ["ResultsScreen", "PAGE_SIZE"]

PAGE_SIZE = 50
_RUN_COLUMNS = (Col("run", "run", flex=True, min=8, drop=3), Col("baseline", "baseline", flex=True, min=8), Col("split", "split"),
                Col("tier", "tier", drop=2), Col("release", "release", drop=1))
_PAGE = Binding.Group("Page")
_DETAIL = Binding.Group("Detail")


def _score(entry: tuple[float | None, int] | None, label: str | None = None) -> Alt | str:
    """The report's figure (same rounding as ``trb report``) with its item count, and the figure alone for a
    narrow table; a labelled figure (proxy-tier grounding) says "proxy" before it."""
    if not entry or entry[0] is None:
        return "—"
    figure = format_score({"score": entry[0]})
    if label:
        figure = f"{label.split('-')[0]} {figure}"  # "proxy-tier grounding": "proxy 0.612"
    return Alt(f"{figure} (n={entry[1]})", figure)  # n without separators: narrower


def _figure_title(f) -> str:
    """A figure's title in the pane: the registry's, or its label with the title's gloss (proxy-tier grounding)."""
    if not f.label:
        return f.title
    gloss = f.title.partition(" (")[2]
    return f"{f.label} ({gloss}" if gloss else f.label


def _worst_columns(lst: ItemList) -> list[Col]:
    cols = [Col("score", "score")]
    if lst.metric == "tv":
        cols.append(Col("tv", "TV"))
    cols += [Col("item", "item", flex=True, min=12), Col("session", "session", flex=True, min=8), Col("t", "t")]
    if lst.track == "3":
        cols += [Col("label", "label"), Col("pred", "predicted"), Col("belief", "belief", drop=1)]
    elif lst.metric == "tv":
        cols.append(Col("origin", "origin", flex=True, min=6, drop=1))
    return cols


def _num(x: float | None, fmt: str = ".3f") -> str:
    return "—" if x is None else format(x, fmt)


def _worst_cells(lst: ItemList, it: WorstItem) -> list[str]:
    cells = [_num(it.score)]
    if lst.metric == "tv":
        cells.append(_num(None if it.score is None else 1.0 - it.score))
    cells += [it.item_id, it.session_id, "" if it.t is None else str(it.t)]
    if lst.track == "3":
        cells += [it.label or "", it.predicted or "—", _num(it.belief, ".2f")]
    elif lst.metric == "tv":
        cells.append(it.origin or "")
    return cells


def run_text(run: RunSummary) -> Text:
    """Every figure of one run, under the registry's titles, as ``trb report`` computes them."""
    text = Text()
    text.append(f"run {run.run_id}", style="bold")
    text.append(f" · {run.baseline or '—'} · {run.adapter_tier or '—'} tier · release {run.release_version or '—'}"
                f" · split {run.split or '—'} · {run.created_at[:19].replace('T', ' ')}\n", style="dim")
    if run.smoke_test:
        text.append("SMOKE TEST: not a TRB score\n", style="bold red")
    if not run.figures:
        text.append("its figures are being computed…", style="dim italic")
        return text
    width = max((len(_figure_title(f)) for f in run.figures), default=10)
    said: set[str] = set()  # a flag two figures share (Track 2's identifiability) is said once
    for f in run.figures:
        text.append(f"{_figure_title(f):<{width}}  ", style="bold" if f.headline else "")
        if f.score is None:
            text.append(f"—  {f.note or ''}\n", style="dim")
            continue
        text.append(f"{format_score({'score': f.score})}", style="bold" if f.headline else "")
        text.append(f"  n={f.n_items:,}\n", style="dim")
        lines = list(f.details)
        if f.label:  # proxy-tier grounding, said once: what it is and why it stands apart
            lines.append(f"{f.label}: this toolkit's extension (spec §3 defines Track 2 on native models only); "
                         "never compared with native-tier grounding")
        for line in lines:
            if line not in said:
                said.add(line)
                text.append(f"  {line}\n", style="dim")
        for flag in f.flags:
            if flag not in said:
                said.add(flag)
                text.append(f"  ⚠ {flag}\n", style="red")
    text.append("point values, as trb report computes them; its intervals come from a session bootstrap",
                style="dim italic")
    return text


def item_text(lst: ItemList, it: WorstItem, planned: str | None, taken: str | None, corpus_note: str = "") -> Text:
    """What one item was scored on."""
    text = Text()
    text.append(it.item_id, style="bold")
    text.append(f" · session {it.session_id} t = {it.t} · ", style="dim")
    text.append(f"score {_num(it.score)}", style="bold")
    d = it.detail or {}
    if lst.metric == "tv":
        tv = d.get("tv", None if it.score is None else 1.0 - it.score)
        text.append(f" · TV {_num(tv)}", style="bold")
        if it.origin:
            text.append(f" · {it.origin}", style="dim")
        text.append("\n")
        if "p" in d or "phi" in d:
            text.append_text(compare_bars_text(d.get("p"), d.get("phi"), planned=planned, taken=taken))
        else:
            text.append("this item's record holds no distributions (its run stored no detail)", style="dim italic")
    elif lst.track == "3":
        text.append(f" · label {it.label or '—'} · predicted {it.predicted or '—'} · belief {_num(it.belief, '.2f')}\n")
        r = d.get("r")
        if isinstance(r, dict):
            text.append("r emitted: ", style="dim")
            text.append(", ".join(f"{k}={v}" for k, v in r.items()))
    else:
        text.append("\n")
        for k, v in d.items():
            text.append(f"{k}: {v}\n", style="dim")
    if corpus_note:
        text.append(f"\n{corpus_note}", style="dim italic")
    return text


class ResultsScreen(Screen):
    DEFAULT_CSS = """
    ResultsScreen #title { height: auto; max-height: 2; background: $primary-background; padding: 0 1; }
    ResultsScreen #runs { height: auto; max-height: 40%; scrollbar-size-vertical: 1; }
    ResultsScreen #list { height: 1; padding: 0 1; background: $primary-background; }
    ResultsScreen #worst { height: 1fr; }
    ResultsScreen #detail { height: 9; padding: 0 1; border-top: solid $primary; }
    ResultsScreen #pane { height: auto; }
    ResultsScreen #status { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
    """
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("tab", "switch", "Table"),
        Binding("t", "next_list", "Next track"),
        Binding("right_square_bracket", "page(1)", "next", key_display="]", group=_PAGE),
        Binding("left_square_bracket", "page(-1)", "previous", key_display="[", group=_PAGE),
        Binding("pagedown", "scroll_detail(1)", "down", key_display="PgDn", group=_DETAIL, priority=True),
        Binding("pageup", "scroll_detail(-1)", "up", key_display="PgUp", group=_DETAIL, priority=True),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[RunSummary] = []
        self.run_id: str | None = None
        self.lists: list[ItemList] = []
        self.list_index = 0
        self.page: WorstPage | None = None
        self.runs_source: str | None = None

    @property
    def items(self) -> list[WorstItem]:
        return self.page.items if self.page is not None else []

    @property
    def current_list(self) -> ItemList | None:
        return self.lists[self.list_index] if self.lists else None

    def compose(self) -> ComposeResult:
        yield Static(f"results {escape(self.app.results.name)}", id="title")
        cols = [Col(c.key, c.short) for c in metric_columns()]  # the registry's headline metrics, by their entry
        yield FitTable([*_RUN_COLUMNS, *cols], id="runs", empty_enter="no runs in this results store")
        yield Static("", id="list")
        yield FitTable([Col("item", "item")], id="worst", empty_enter="no items in this list")
        with VerticalScroll(id="detail", classes="pane"):
            yield Static("", id="pane")
        yield Static("computing the runs' figures (once per store; then read back from the cache)…", id="status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#runs", FitTable).focus()
        self.load_runs()

    # -- runs ----------------------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="runs")
    def load_runs(self) -> None:
        def progress(done: int, runs: list[RunSummary]) -> None:  # the runs at once, their figures as they come
            self.app.call_from_thread(self.show_runs, runs, None)
            if done < len(runs):
                self.app.call_from_thread(
                    self.set_status, f"computing the runs' figures: {done} of {len(runs)} done (once per store: "
                    "a second open reads them back)…")

        try:
            if not is_kept(self.app.results):  # the runs at once; their figures when ready (the app's prefetch may
                self.app.call_from_thread(self.show_runs, list_runs(self.app.results), None)  # be computing them)
                self.app.call_from_thread(self.set_status, "computing the runs' figures (once per store: a second "
                                          "open reads them back)…")
            runs, source = cached_runs(self.app.results, on_progress=progress)
        except Exception as e:  # noqa: BLE001
            self.app.call_from_thread(self.set_status, f"cannot read {self.app.results}: {e}")
            return
        self.app.call_from_thread(self.show_runs, runs, source)

    def show_runs(self, runs: list[RunSummary], source: str | None = "computed") -> None:
        """The runs table; ``source`` None while figures are still being computed (their cells read …)."""
        first = not self.runs
        self.runs = runs
        # computed, or read back (memory, cache: the store has not changed since); None: still computing
        self.runs_source = source
        title = [f"results {escape(self.app.results.name)}", f"{len(runs)} run(s)"]
        if any(r.smoke_test for r in runs):
            title.append("* SMOKE TEST: not a TRB score")
        self.query_one("#title", Static).update(" · ".join(title))
        table = self.query_one("#runs", FitTable)
        rows = []
        for r in runs:
            smoke = "*" if r.smoke_test else ""  # the title line says what * means
            figures = [_score(r.tracks.get(c.key), r.labels.get(c.key)) if r.figures else "…"
                       for c in metric_columns()]
            run = Alt(r.run_id, r.run_id[:8]) if len(r.run_id) > 12 else r.run_id  # a uuid: its prefix, as git's
            rows.append((r.run_id, [run, (r.baseline or "—") + smoke, r.split or "—", r.adapter_tier or "—",
                                    r.release_version or "—", *figures]))
        table.fill(rows)
        if not runs:
            self.set_status("no runs in this results store")
        elif not first:
            self._show_pane()
        if runs and source is not None:
            if self.page is not None:
                self._page_status()  # the page came first: it says where the figures came from now
            else:
                self.set_status(f"{len(runs)} run(s), {self.source_note()} · Tab to the items, Enter opens the trace")

    def source_note(self) -> str:
        """Where the runs' figures came from: computed now, or read back (the store is unchanged since)."""
        if self.runs_source is None:
            return "figures still being computed"
        if self.runs_source == "computed":
            return "figures computed"
        if self.runs_source == "memory":
            return "figures computed once for this store (kept)"
        return "figures read back from the cache (the store is unchanged)"

    def current_run(self) -> RunSummary | None:
        key = self.query_one("#runs", FitTable).cursor_key()
        return next((r for r in self.runs if r.run_id == key), None)

    @on(DataTable.RowHighlighted, "#runs")
    def _run_changed(self, event: DataTable.RowHighlighted) -> None:
        run_id = event.row_key.value
        if run_id and run_id != self.run_id:
            self.run_id = run_id
            self.load_lists(run_id)
        self._show_pane()

    @on(DataTable.RowSelected, "#runs")
    def _run_selected(self, event: DataTable.RowSelected) -> None:
        self.app.cannot("Enter opens an item's trace: Tab to the worst items first")

    # -- worst items ---------------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="worst")
    def load_lists(self, run_id: str) -> None:
        try:
            lists = item_lists(self.app.results, run_id)
        except Exception as e:  # noqa: BLE001
            self.app.call_from_thread(self.set_status, f"cannot read {self.app.results}: {e}")
            return
        self.app.call_from_thread(self._lists_loaded, run_id, lists)

    def _lists_loaded(self, run_id: str, lists: list[ItemList]) -> None:
        if run_id != self.run_id:
            return
        keep = self.current_list
        self.lists = lists
        same = [i for i, lst in enumerate(lists) if keep and (lst.track, lst.metric) == (keep.track, keep.metric)]
        self.list_index = same[0] if same else 0
        self.load_page(0)

    def load_page(self, offset: int) -> None:
        lst = self.current_list
        if lst is None:
            self.page = None
            self.query_one("#worst", FitTable).set_columns([Col("item", "item")])
            self.query_one("#list", Static).update("no scored items in this run")
            self.set_status(f"run {self.run_id[:10]}: no scored items" if self.run_id else "")
            self._show_pane()
            return
        self._load_page(self.run_id, lst, offset)

    @work(thread=True, exclusive=True, group="worst-page")
    def _load_page(self, run_id: str, lst: ItemList, offset: int) -> None:
        try:
            page = worst_items(self.app.results, run_id, track=lst.track, metric=lst.metric, offset=offset,
                               limit=PAGE_SIZE)
        except Exception as e:  # noqa: BLE001
            self.app.call_from_thread(self.set_status, f"cannot read {self.app.results}: {e}")
            return
        self.app.call_from_thread(self.show_page, run_id, lst, page)

    def show_page(self, run_id: str, lst: ItemList, page: WorstPage) -> None:
        if run_id != self.run_id or lst != self.current_list:
            return
        self.page = page
        table = self.query_one("#worst", FitTable)
        cols = _worst_columns(lst)
        if [c.key for c in table.specs] != [c.key for c in cols]:
            table.set_columns(cols)
        table.fill([(str(page.offset + i), _worst_cells(lst, it)) for i, it in enumerate(page.items)],
                   keep=str(page.offset))
        pages = max(1, -(-page.total // PAGE_SIZE))
        first = page.offset + 1 if page.items else 0
        others = " · t: next list" if len(self.lists) > 1 else ""
        self.query_one("#list", Static).update(
            f"[b]{escape(self.list_title(lst))}[/b] · worst first: {first}–{page.offset + len(page.items)} of {page.total:,} "
            f"· page {page.offset // PAGE_SIZE + 1}/{pages}{others}")
        self._page_status()
        self._show_pane()

    def _page_status(self) -> None:
        self.set_status(f"run {(self.run_id or '')[:10]} · Tab to the items, Enter opens the trace · "
                        f"{self.source_note()}")

    def list_title(self, lst: ItemList) -> str:
        """The list's title: the registry's metric, or the run's label for it (a proxy adapter's Track 2 items are
        proxy-tier grounding, never Track 2's native-tier grounding)."""
        run = next((r for r in self.runs if r.run_id == self.run_id), None)
        f = next((f for f in run.figures if f.key == lst.key), None) if run is not None else None
        return _figure_title(f) if f is not None and f.label else lst.title

    def current_item(self) -> WorstItem | None:
        key = self.query_one("#worst", FitTable).cursor_key()
        if key is None or self.page is None:
            return None
        i = int(key) - self.page.offset
        return self.page.items[i] if 0 <= i < len(self.page.items) else None

    @on(DataTable.RowHighlighted, "#worst")
    def _item_changed(self, event: DataTable.RowHighlighted) -> None:
        self._show_pane()

    def on_descendant_focus(self) -> None:
        self._show_pane()

    def _show_pane(self) -> None:
        """The pane below: the highlighted item when the items have the focus, else the highlighted run."""
        if self.query_one("#worst", FitTable).has_focus:
            it, lst = self.current_item(), self.current_list
            if it is not None and lst is not None:
                self._load_item(lst, it)
                return
        run = self.current_run()
        self.query_one("#pane", Static).update(run_text(run) if run is not None else "")

    @work(thread=True, exclusive=True, group="worst-item")
    def _load_item(self, lst: ItemList, it: WorstItem) -> None:
        planned = taken = None
        note = ""
        if lst.metric == "tv" or lst.track == "1":
            try:
                from corpus.browse import session_detail

                detail = session_detail(self.app.corpus, it.session_id, rule=self.app.split_rule)
            except Exception:  # noqa: BLE001 - the scores still show
                detail = None
            cf = None
            if detail is not None:
                cf = next((c for c in detail.counterfactuals.get(it.t, []) if c.cf_id == it.item_id), None)
                step = next((s for s in detail.steps if s.t == it.t), None)
                taken = step.action if step is not None else None
            if cf is not None:
                planned = cf.r_prime.planned_next
            else:
                note = "r′ is not in this corpus: its planned action is not marked"
        self.app.call_from_thread(self.query_one("#pane", Static).update, item_text(lst, it, planned, taken, note))

    # -- keys ----------------------------------------------------------------------------------------

    def set_status(self, text: str) -> None:
        self.query_one("#status", Static).update(text)

    @on(DataTable.RowSelected, "#worst")
    def _open(self, event: DataTable.RowSelected) -> None:
        item = self.current_item()
        if item is not None:
            self.app.open_session(item.session_id, item.t)

    def action_switch(self) -> None:
        runs, worst = self.query_one("#runs", FitTable), self.query_one("#worst", FitTable)
        (worst if runs.has_focus else runs).focus()

    def action_next_list(self) -> None:
        if len(self.lists) < 2:
            self.app.cannot("this run has one list of scored items: no other track to show" if self.lists
                            else "this run has no scored items")
            return
        self.list_index = (self.list_index + 1) % len(self.lists)
        self.load_page(0)

    def action_page(self, delta: int) -> None:
        if self.page is None:
            self.app.cannot("no list of items to page")
            return
        new = self.page.offset + delta * PAGE_SIZE
        if 0 <= new < self.page.total:
            self._load_page(self.run_id, self.current_list, new)
        else:
            self.app.cannot("already on the first page" if delta < 0 else "already on the last page")

    def action_scroll_detail(self, direction: int) -> None:
        pane = self.query_one("#detail", VerticalScroll)
        if direction > 0:
            pane.scroll_page_down(animate=False)
        else:
            pane.scroll_page_up(animate=False)

    def action_back(self) -> None:
        self.app.pop_screen()
