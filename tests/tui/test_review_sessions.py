"""The review app driven with Pilot: the session list, filters, paging, opening a session, counterfactuals, help."""

from __future__ import annotations

from textual.widgets import Checkbox, DataTable, Input, Select

from corpus.browse import SessionFilter, list_sessions
from corpus.store import Corpus
from review_helpers import drive, said, settle, status_text, store_rows, table_rows
from tui.app import ReviewApp
from tui.screens.counterfactuals import CounterfactualsScreen
from tui.screens.help import HelpScreen
from tui.screens.session import SessionScreen
from tui.screens.sessions import PAGE_SIZE, SessionsScreen
from tui.widgets.timeline import Timeline


def _notes(app) -> str:
    return said(app)  # notifications and the status line


def _ids(app) -> list[str]:
    return [r[0] for r in table_rows(app.screen.query_one("#table", DataTable))]


@drive
async def test_first_page_then_filters_search_and_paging(review_corpus):
    n = store_rows(review_corpus, "SELECT count(*) FROM sessions")[0][0]
    app = ReviewApp(review_corpus, reviewer="rev-1")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, SessionsScreen)
        assert _ids(app)[:3] == ["7f3a", "7f3a-pair", "sim-1-0000000"] and len(_ids(app)) == PAGE_SIZE
        assert f"1–{PAGE_SIZE} of {n} sessions" in status_text(app.screen)

        await pilot.press("right_square_bracket")
        await settle(pilot)
        expected = [r[0] for r in store_rows(review_corpus, "SELECT session_id FROM sessions ORDER BY 1")]
        assert _ids(app) == expected[PAGE_SIZE:2 * PAGE_SIZE]
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert _ids(app) == expected[:PAGE_SIZE]

        app.screen.query_one("#source_kind", Select).value = "illustrative"
        await settle(pilot)
        assert _ids(app) == ["7f3a", "7f3a-pair"]
        assert "1–2 of 2 sessions" in status_text(app.screen)

        await pilot.press("right_square_bracket")  # one page only: the key says so
        await pilot.pause()
        assert "already on the last page" in _notes(app)
        await pilot.press("t")  # a key of another screen says where it acts
        await pilot.pause()
        assert "t: nothing to do here; it shows the next track's worst items (results)" in _notes(app)

        await pilot.press("slash")
        assert app.screen.query_one("#search", Input).has_focus
        await pilot.press(*"3A-P")  # a substring of an id, any case
        await settle(pilot)
        assert _ids(app) == ["7f3a-pair"]
        await pilot.press("ctrl+a", "ctrl+k", *"K-JuM")  # an item id: the session, the match and its step
        await settle(pilot)
        table = app.screen.query_one("#table", DataTable)
        assert _ids(app) == ["7f3a"] and table_rows(table)[0][-1] == "t5 7f3a-attr-clock-jump"
        await pilot.press("ctrl+a", "ctrl+k", *"zq")  # nothing matches: the status names the filters
        await settle(pilot)
        assert _ids(app) == []
        assert status_text(app.screen) == "no sessions match: search 'zq', source illustrative"
        await pilot.press("enter", "escape", "enter")
        await pilot.pause()
        assert "no session to open: the list is empty" in _notes(app)

        await pilot.press("slash", "ctrl+a", "ctrl+k")  # clear the search
        app.screen.query_one("#source_kind", Select).clear()
        app.screen.query_one("#split", Select).value = "transfer"
        await settle(pilot)
        want = list_sessions(Corpus(review_corpus), SessionFilter(split="transfer"), limit=PAGE_SIZE)
        assert _ids(app) == [r.session_id for r in want.rows] and want.total > 0
        assert {r[2] for r in table_rows(app.screen.query_one("#table", DataTable))} == {"transfer"}

        app.screen.query_one("#split", Select).clear()
        box = app.screen.query_one("#disagree", Checkbox)
        assert str(box.render()).startswith("[ ] disagreement")  # the state reads without colour
        box.value = True
        await settle(pilot)
        assert _ids(app) == ["7f3a"] and str(box.render()).startswith("[x] disagreement")
        assert "(disagreement)" in status_text(app.screen)

        # at 80 columns ids and source kinds are whole (contexts give way); at 120 nothing is cut
        box.value = False
        await settle(pilot)
        rows = table_rows(app.screen.query_one("#table", DataTable))
        assert not any(c.endswith("…") for r in rows for c in r[:3]) and rows[0][1] == "illustrative"
        await pilot.resize_terminal(120, 36)
        await settle(pilot)
        rows = table_rows(app.screen.query_one("#table", DataTable))
        assert not any(c.endswith("…") for r in rows for c in r)
        assert "xfer-lab-c.open-8x8-windy.novice.de" in {r[3] for r in rows}


@drive
async def test_open_a_session_read_its_steps_and_counterfactuals(review_corpus):
    app = ReviewApp(review_corpus, reviewer="rev-1")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        sessions = app.screen
        table = sessions.query_one("#table", DataTable)
        assert table.has_focus and table.styles.outline_left[0] == "thick"  # the focused table shows it
        await pilot.press("down", "down", "enter")
        await settle(pilot)
        assert app.screen.session_id == "sim-1-0000000"
        await pilot.press("escape")  # back: the list refreshes and keeps its cursor
        await settle(pilot)
        assert app.screen is sessions and table.cursor_key() == "sim-1-0000000"
        await pilot.press("up", "up", "enter")  # 7f3a
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionScreen) and screen.session_id == "7f3a"
        timeline = screen.query_one(Timeline)
        assert timeline.row_count == 8 and timeline.selected_t == 0
        step = str(screen.query_one("#step").render())
        assert "demonstrate a false statement" in step and "[answer_2]" in step and "7f3a-attr-2plus2" in step
        assert "annotators disagree" in step

        await pilot.press("pagedown")  # PgDn scrolls the detail pane while the timeline keeps the focus
        await pilot.pause()
        detail = screen.query_one("#detail")
        assert detail.scroll_y > 0 and timeline.has_focus and timeline.selected_t == 0
        await pilot.press("pageup")
        await pilot.pause()
        assert detail.scroll_y == 0

        await pilot.press("down")
        await pilot.pause()
        assert timeline.selected_t == 1
        assert "endorses_last_output" in str(screen.query_one("#step").render())
        await pilot.press("i")  # no item at t=1: every key that cannot act says why
        await pilot.pause()
        assert "no attribution item at this step" in _notes(app)

        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, CounterfactualsScreen)
        text = "\n".join(str(s.render()) for s in app.screen.query("Static"))
        assert "7f3a-cf-syn-t1-adv" in text and "adversarial" in text and "0.75" in text and "◀ taken" in text
        assert "+ planned_next" in text and "answer_2" in text

        await pilot.press("escape")
        await pilot.press("m")  # the next step with an attribution item after t=1
        await pilot.pause()
        assert timeline.selected_t == 4

        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape", "escape")
        await pilot.pause()
        assert isinstance(app.screen, SessionsScreen)
