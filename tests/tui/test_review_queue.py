"""The adjudication queue in the app: the item's step and votes, the reviewer's decision (or not), undo, the trace."""

from __future__ import annotations

from corpus.labels import UNDO_METHOD, QueueItem, add_annotations, enqueue_review, make_annotation, review_queue
from corpus.store import Corpus
from review_helpers import drive, settle, status_text, store_rows, table_rows
from tui.app import ReviewApp
from tui.screens.queue import QueueScreen
from tui.screens.session import SessionScreen
from tui.widgets.fit_table import FitTable
from tui.widgets.timeline import Timeline


def fill_queue(corpus_dir) -> list[str]:
    """Two simulated items, each labelled differently by two annotators, queued as ties (fixed times)."""
    c = Corpus(corpus_dir)
    items = [r[0] for r in store_rows(corpus_dir, "SELECT item_id FROM attribution WHERE session_id LIKE 'sim-%' "
                                                  "ORDER BY item_id LIMIT 2")]
    anns, queue = [], []
    for i, item in enumerate(items):
        anns.append(make_annotation(target_kind="attribution", target_id=item, annotator_id="ann-a",
                                    value={"type": "attribution", "label": "self", "rationale": "moved it myself"},
                                    created_at=f"2026-11-01T10:0{i}:00.000Z"))
        anns.append(make_annotation(target_kind="attribution", target_id=item, annotator_id="ann-b",
                                    value={"type": "attribution", "label": "exogenous"},
                                    created_at=f"2026-11-01T10:0{i}:30.000Z"))
        queue.append(QueueItem("attribution", item, "tie", {"self": 1, "exogenous": 1},
                               {"ann-a": "self", "ann-b": "exogenous"}, 0, f"2026-11-02T09:00:0{i}.000Z",
                               "trb-annotate adjudicate (test)"))
    add_annotations(c, anns)
    assert enqueue_review(c, queue) == 2
    return items


@drive
async def test_adjudicate_a_queue_item(review_corpus):
    items = fill_queue(review_corpus)
    where = {i: store_rows(review_corpus, "SELECT a.t, a.design_label, s.outcome FROM attribution a JOIN steps s "
                                         "USING (session_id, t) WHERE a.item_id = ?", [i])[0] for i in items}
    app = ReviewApp(review_corpus, reviewer="cur-1")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, QueueScreen)
        table = screen.query_one("#queue", FitTable)
        rows = table_rows(table)
        # the step, its design label and outcome beside the votes (uncut at 80 columns where there is room)
        t, design, outcome = where[items[0]]
        assert rows[0][:4] == [items[0], str(t), design, "exogenous:1 self:1"]
        assert outcome.startswith(rows[0][4].rstrip("…"))
        side = str(screen.query_one("#item").render())
        assert "ann-a" in side and "moved it myself" in side and "ann-b" in side and f"t = {t}" in side

        await pilot.press("u")  # unsure decides nothing: the item stays, the cursor moves on
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        assert [r[0] for r in table_rows(table)] == items and table.cursor_key() == items[1]
        assert [q.target_id for q in review_queue(Corpus(review_corpus))] == items

        await pilot.press("e")
        await pilot.pause()
        await pilot.press(*"wind", "enter")
        await settle(pilot)
        assert store_rows(review_corpus, "SELECT annotator_id, method, label, rationale FROM annotations "
                                         "WHERE target_id = ? AND role = 'reviewer'", [items[1]]) == [
            ("cur-1", "reviewer", "exogenous", "wind")]
        # the decided item left the queue, in the app and in the store
        assert [r[0] for r in table_rows(table)] == [items[0]]
        assert [q.target_id for q in review_queue(Corpus(review_corpus))] == [items[0]]
        assert "1 item(s) waiting" in status_text(screen)

        await pilot.press("z")  # undo the decision just made: the item is back, under the cursor
        await pilot.pause()
        await pilot.press("y")
        await settle(pilot)
        assert [r[0] for r in table_rows(table)] == items and table.cursor_key() == items[1]
        assert [q.target_id for q in review_queue(Corpus(review_corpus))] == items
        assert store_rows(review_corpus, "SELECT revision, label, method FROM annotations WHERE target_id = ? "
                                         "AND role = 'reviewer' ORDER BY revision", [items[1]]) == [
            (1, "exogenous", "reviewer"), (2, "unsure", UNDO_METHOD)]

        # Enter opens the item's session at its step; decided there, it is gone from the queue on return
        session_id, t = store_rows(review_corpus, "SELECT session_id, t FROM attribution WHERE item_id = ?",
                                   [items[1]])[0]
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, SessionScreen)
        assert app.screen.session_id == session_id and app.screen.query_one(Timeline).selected_t == t
        assert app.screen.current_item().item_id == items[1]
        await pilot.press("s")
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen and [r[0] for r in table_rows(table)] == [items[0]]
        assert "1 item(s) waiting" in status_text(screen)
        await pilot.resize_terminal(120, 36)  # with room, the outcome is whole
        await settle(pilot)
        assert table_rows(table)[0][4] == where[items[0]][2]
