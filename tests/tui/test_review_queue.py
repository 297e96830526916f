"""The adjudication queue in the app: annotators side by side, the reviewer's decision, the jump to the trace."""

from __future__ import annotations

from textual.widgets import DataTable

from corpus.labels import QueueItem, add_annotations, enqueue_review, make_annotation, review_queue
from corpus.store import Corpus
from review_helpers import drive, settle, status_text, store_rows, table_rows
from tui.app import ReviewApp
from tui.screens.queue import QueueScreen
from tui.screens.session import SessionScreen
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
    app = ReviewApp(review_corpus, reviewer="cur-1")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, QueueScreen)
        rows = table_rows(screen.query_one("#queue", DataTable))
        assert [r[0] for r in rows] == items
        assert rows[0][3] == "ann-a=self  ann-b=exogenous"  # the annotators' labels side by side
        side = str(screen.query_one("#item").render())
        assert "ann-a" in side and "moved it myself" in side and "ann-b" in side

        await pilot.press("e")
        await pilot.pause()
        await pilot.press(*"wind moved it", "enter")
        await settle(pilot)
        assert store_rows(review_corpus, "SELECT annotator_id, method, label, rationale FROM annotations "
                                         "WHERE target_id = ? AND role = 'reviewer'", [items[0]]) == [
            ("cur-1", "reviewer", "exogenous", "wind moved it")]
        # the decided item left the queue, in the app and in the store
        assert [r[0] for r in table_rows(screen.query_one("#queue", DataTable))] == [items[1]]
        assert [q.target_id for q in review_queue(Corpus(review_corpus))] == [items[1]]
        assert "1 item(s) waiting" in status_text(screen)


@drive
async def test_enter_on_a_queue_item_opens_its_session_at_its_step(review_corpus):
    items = fill_queue(review_corpus)
    session_id, t = store_rows(review_corpus, "SELECT session_id, t FROM attribution WHERE item_id = ?", [items[0]])[0]
    app = ReviewApp(review_corpus, reviewer="cur-1")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, SessionScreen)
        assert app.screen.session_id == session_id and app.screen.query_one(Timeline).selected_t == t
        assert app.screen.current_item().item_id == items[0]
