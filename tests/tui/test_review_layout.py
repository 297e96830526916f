"""Every screen at 120×36 shows its text whole (no cell cut, no line past its box); at 80×24 a cut cell ends in "…"
and its key column stays whole; q quits (a text field keeps its q); every run fits the runs table at 120×36."""

from __future__ import annotations

import pytest
from textual.containers import ScrollableContainer
from textual.widgets import Footer, Static

from review_helpers import drive, settle, store_rows, table_rows
from test_review_queue import fill_queue
from test_review_results import ITEMS, RUN, make_results
from trb.results import ResultsStore
from tui.app import ReviewApp
from tui.screens.note import NoteScreen
from tui.widgets.fit_table import FitTable
from tui.widgets.timeline import Timeline

# drives the review app over simulated corpora and runs (seconds per test)
pytestmark = pytest.mark.slow

#: The key column of each table: never cut, at any size.
KEY_COLUMN = {"table": "session", "timeline": "t", "queue": "item", "runs": "baseline", "worst": "item"}


def cut_text(screen) -> list[str]:
    """What the screen shows cut: table cells elided with …, columns hidden for room, and text lines of a box
    (title, status line, list line) that do not fit its height (a scrollable pane is read by scrolling).

    The session's timeline is a list of previews: its action and outcome cells are as wide as the left column
    lets them be, and :func:`timeline_whole_in_pane` checks that each one cut is whole in the step's pane."""
    cut = []
    for table in screen.query(FitTable):
        if not table.display or table.region.width == 0 or isinstance(table, Timeline):
            continue
        hidden = [c.key for c in table.specs if c.key not in table.shown_columns()]
        if hidden:
            cut.append(f"#{table.id}: columns hidden for room: {hidden}")
        for row in table_rows(table):
            cut += [f"#{table.id}: {cell!r} cut" for cell in row if cell.endswith("…")]
    for w in screen.query(Static):
        if isinstance(w, Footer) or any(isinstance(a, ScrollableContainer) for a in w.ancestors):
            continue
        if not w.display or w.region.width == 0:
            continue
        need = w.get_content_height(w.size, w.app.size, w.content_region.width)
        if need > w.content_region.height:
            cut.append(f"#{w.id}: {need} line(s) of text in {w.content_region.height}: {str(w.render())[:60]!r}")
    return cut


async def timeline_whole_in_pane(pilot, screen) -> list[str]:
    """Each step whose action or outcome the timeline cuts: selected, its step pane shows them whole."""
    missing = []
    timeline = screen.query_one(Timeline)
    keep = timeline.selected_t
    for key, cells in [(r[0], r) for r in table_rows(timeline)]:
        if not any(c.endswith("…") for c in cells):
            continue
        timeline.select_step(int(key))
        await settle(pilot)
        pane = " ".join(str(screen.query_one("#step").render()).split())
        step = next(s for s in screen.detail.steps if s.t == int(key))
        missing += [f"t={key}: {text[:40]!r}" for text in (step.action, step.outcome)
                    if text and " ".join(text.split()) not in pane]
    timeline.select_step(keep)
    await settle(pilot)
    return missing


def elided_readably(screen) -> list[str]:
    """At 80×24: a cell is whole or ends in …; the key column of every table is whole."""
    bad = []
    for table in screen.query(FitTable):
        if not table.display or table.row_count == 0:
            continue
        shown = table.shown_columns()
        key = KEY_COLUMN.get(table.id)
        if key is not None and key not in shown:
            bad.append(f"#{table.id}: its key column {key} is hidden")
            continue
        for row in table_rows(table):
            cell = dict(zip(shown, row)).get(key, "")
            if cell.endswith("…"):
                bad.append(f"#{table.id}: key {cell!r} cut")
    return bad


async def _screens(app, pilot):
    """Visit each screen; yield (name, screen) with its data shown."""
    await settle(pilot)
    yield "sessions", app.screen
    await pilot.press("enter")
    await settle(pilot)
    app.screen.query_one(Timeline).select_step(5)
    await settle(pilot)
    yield "session", app.screen
    await pilot.press("c")
    await settle(pilot)
    yield "counterfactuals", app.screen
    await pilot.press("escape", "escape")
    await settle(pilot)
    await pilot.press("a")
    await settle(pilot)
    yield "queue", app.screen
    await pilot.press("escape")
    await settle(pilot)
    await pilot.press("R")
    await settle(pilot)
    yield "results", app.screen
    await pilot.press("tab")
    await settle(pilot)
    yield "results, worst items", app.screen
    await pilot.press("question_mark")
    await settle(pilot)
    yield "help", app.screen


@drive
async def test_nothing_is_cut_at_120x36_and_cells_elide_readably_at_80x24(review_corpus, tmp_path):
    fill_queue(review_corpus)
    path = make_results(tmp_path / "results.duckdb")
    for size in ((120, 36), (80, 24)):
        app = ReviewApp(review_corpus, results=path, reviewer="rev-1")
        async with app.run_test(size=size) as pilot:
            seen = []
            async for name, screen in _screens(app, pilot):
                seen.append(name)
                if size == (120, 36):
                    assert cut_text(screen) == [], name
                    if name == "session":
                        assert await timeline_whole_in_pane(pilot, screen) == []
                else:
                    assert elided_readably(screen) == [], name
            assert len(seen) == 7


@drive
async def test_every_run_shows_at_120x36(review_corpus, tmp_path):
    path = make_results(tmp_path / "results.duckdb")
    store = ResultsStore(path)
    for i in range(5):  # ten runs in all, as make demo leaves
        store.record_run({**RUN, "run_id": f"run-x-{i:04d}", "created_at": f"2026-11-26T10:0{i}:00+00:00"}, ITEMS)
    app = ReviewApp(review_corpus, results=path, reviewer="rev-1")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        runs = app.screen.query_one("#runs", FitTable)
        assert runs.row_count == 10 and runs.content_region.height >= 11  # the header and every run
        assert "10 run(s)" in str(app.screen.query_one("#title").render())
    async with ReviewApp(review_corpus, results=path, reviewer="rev-1").run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        runs = pilot.app.screen.query_one("#runs", FitTable)
        # at 80×24 the table scrolls, with its scrollbar showing
        assert runs.content_region.height < 11 and runs.show_vertical_scrollbar


@drive
async def test_q_quits_and_a_text_field_keeps_its_q(review_corpus):
    app = ReviewApp(review_corpus, reviewer="rev-1")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        app.screen.query_one(Timeline).select_step(5)
        await settle(pilot)
        await pilot.press("u")
        await pilot.pause()
        assert isinstance(app.screen, NoteScreen)
        await pilot.press(*"quite", "enter")  # typed in the note: saved as typed, nothing quits
        await settle(pilot)
        assert app.is_running and not isinstance(app.screen, NoteScreen)
        assert store_rows(review_corpus, "SELECT rationale FROM annotations WHERE annotator_id = 'rev-1'") == [
            ("quite",)]
        assert "q" in app.screen.active_bindings and app.screen.active_bindings["q"].binding.show  # in the footer
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0 and not app.is_running
