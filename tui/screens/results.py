"""Results (``--results FILE``): runs with their per-track scores, then the run's worst items.

Enter on an item opens its session at its step.
"""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from trb.report import format_score
from tui.results_view import RunSummary, WorstItem, metric_columns, read_runs, worst_items

__all__ = ["ResultsScreen"]


def _score(entry: tuple[float | None, int] | None) -> str:
    """The report's figure (same rounding as ``trb report``) and its item count."""
    if not entry or entry[0] is None:
        return "—"
    return f"{format_score({'score': entry[0]})} (n={entry[1]})"  # n without separators: it fits at 80 columns


class ResultsScreen(Screen):
    DEFAULT_CSS = """
    ResultsScreen #title { height: 1; background: $primary-background; padding: 0 1; }
    ResultsScreen #runs { height: 7; }
    ResultsScreen #worst { height: 1fr; border-top: solid $primary; }
    ResultsScreen #status { height: 1; padding: 0 1; color: $text-muted; }
    """
    BINDINGS = [Binding("escape", "back", "Back"), Binding("tab", "switch", "Switch table")]

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[RunSummary] = []
        self.items: list[WorstItem] = []

    def compose(self) -> ComposeResult:
        yield Static(f"results {self.app.results.name}", id="title")
        yield DataTable(id="runs", cursor_type="row")
        yield DataTable(id="worst", cursor_type="row")
        yield Static("loading…", id="status")
        yield Footer()

    def on_mount(self) -> None:
        runs = self.query_one("#runs", DataTable)
        for name, w in (("run", 8), ("baseline", 12), ("split", 5), ("tier", 6), ("release", 6)):
            runs.add_column(name, key=name, width=w)
        for col in metric_columns():  # one per headline metric of the track registry: "T1 G", "T3 BA"
            runs.add_column(f"T{col.track} {col.title.split()[-1]}", key=col.key, width=14)
        worst = self.query_one("#worst", DataTable)
        for name, w in (("trk", 3), ("score", 6), ("item", 22), ("session", 16), ("t", 3), ("label", 9), ("pred", 9)):
            worst.add_column(name, key=name, width=w)
        runs.focus()
        self.load_runs()

    @work(thread=True, exclusive=True, group="runs")
    def load_runs(self) -> None:
        try:
            runs = read_runs(self.app.results)
        except Exception as e:  # noqa: BLE001
            self.app.call_from_thread(self.set_status, f"cannot read {self.app.results}: {e}")
            return
        self.app.call_from_thread(self.show_runs, runs)

    def show_runs(self, runs: list[RunSummary]) -> None:
        self.runs = runs
        if any(r.smoke_test for r in runs):
            self.query_one("#title", Static).update(f"results {self.app.results.name} · * SMOKE TEST: not a TRB score")
        table = self.query_one("#runs", DataTable)
        table.clear()
        for r in runs:
            smoke = "*" if r.smoke_test else ""  # the title line says what * means
            table.add_row(r.run_id[:8], (r.baseline or "—") + smoke, r.split or "—", r.adapter_tier or "—",
                          r.release_version or "—", *[_score(r.tracks.get(c.key)) for c in metric_columns()],
                          key=r.run_id)
        if runs:
            self.load_worst(runs[0].run_id)
        else:
            self.set_status("no runs in this results store")

    @on(DataTable.RowHighlighted, "#runs")
    def _run_changed(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value:
            self.load_worst(str(event.row_key.value))

    @work(thread=True, exclusive=True, group="worst")
    def load_worst(self, run_id: str) -> None:
        try:
            items = worst_items(self.app.results, run_id)
        except Exception as e:  # noqa: BLE001
            self.app.call_from_thread(self.set_status, f"cannot read {self.app.results}: {e}")
            return
        self.app.call_from_thread(self.show_worst, run_id, items)

    def show_worst(self, run_id: str, items: list[WorstItem]) -> None:
        self.items = items
        table = self.query_one("#worst", DataTable)
        table.clear()
        for i, it in enumerate(items):
            table.add_row(it.track, "—" if it.score is None else f"{it.score:.3f}", it.item_id, it.session_id,
                          "" if it.t is None else str(it.t), it.label or "", it.predicted or "", key=str(i))
        self.set_status(f"run {run_id[:10]}: {len(items)} worst Track 1/3 item(s), lowest score first · "
                        "Tab to the items, Enter opens the trace")

    def set_status(self, text: str) -> None:
        self.query_one("#status", Static).update(text)

    @on(DataTable.RowSelected, "#worst")
    def _open(self, event: DataTable.RowSelected) -> None:
        item = self.items[int(event.row_key.value)]
        self.app.open_session(item.session_id, item.t)

    def action_switch(self) -> None:
        runs, worst = self.query_one("#runs", DataTable), self.query_one("#worst", DataTable)
        (worst if runs.has_focus else runs).focus()

    def action_back(self) -> None:
        self.app.pop_screen()
