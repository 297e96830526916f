"""The review queue in the app: what fills it (ties, disagreements, unsure, unlabelled), a filter per reason, why an
empty queue is empty, the item's step (what the subject saw, their r_t) and votes, the reviewer's decision, undo."""

from __future__ import annotations

from corpus.labels import UNDO_METHOD, QueueItem, add_annotations, enqueue_review, make_annotation, review_queue
from corpus.store import Corpus
from review_helpers import drive, open_queue, settle, status_text, store_rows, table_rows
from tui.app import ReviewApp
from tui.queue_view import review_items
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
        screen = await open_queue(pilot)
        assert isinstance(screen, QueueScreen)
        table = screen.query_one("#queue", FitTable)
        # the ties come first, then every unlabelled item; f shows the ties alone
        assert [r[0] for r in table_rows(table)[:2]] == items and table_rows(table)[2][2] == "unlabelled"
        await pilot.press("f")
        await settle(pilot)
        assert screen.filter == "tie" and [r[0] for r in table_rows(table)] == items
        rows = {k: v for k, v in zip(table.shown_columns(), table_rows(table)[0])}
        # the step, the reason and the votes; the outcome in the pane below
        t, design, outcome = where[items[0]]
        assert [rows["item"], rows["t"], rows["reason"], rows["votes"]] == [items[0], str(t), "tie",
                                                                         "exogenous:1 self:1"]
        side = str(screen.query_one("#item").render())
        assert "ann-a" in side and "moved it myself" in side and "ann-b" in side and f"t = {t}" in side
        assert " ".join(outcome.split()) in " ".join(side.split())

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
        assert str(screen.query_one("#title").render()).startswith("queue · tie 1 ·")

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
        await pilot.resize_terminal(120, 36)  # with room, every column shows
        await settle(pilot)
        assert table.shown_columns() == ["item", "t", "reason", "design", "votes"]
        assert dict(zip(table.shown_columns(), table_rows(table)[0]))["design"] == where[items[0]][1]


def _rows(table) -> list[dict[str, str]]:
    return [dict(zip(table.shown_columns(), r)) for r in table_rows(table)]


async def _filter(pilot, screen, reason) -> None:
    """Press f until the queue shows ``reason`` (None: every reason)."""
    for _ in range(6):
        if screen.filter == reason:
            return
        await pilot.press("f")
        await settle(pilot)
    raise AssertionError(f"f never reached {reason}")


@drive
async def test_ties_disagreements_unsure_and_unlabelled_items_all_reach_the_queue(review_corpus):
    ties = fill_queue(review_corpus)
    c = Corpus(review_corpus)
    split, unsure = [r[0] for r in store_rows(review_corpus, "SELECT item_id FROM attribution WHERE session_id LIKE "
                                                           "'sim-%' ORDER BY item_id LIMIT 2 OFFSET 2")]
    # a 2:1 split adjudicate queued for its margin; an annotator unsure on another item
    add_annotations(c, [make_annotation(target_kind="attribution", target_id=split, annotator_id=who,
                                        value={"type": "attribution", "label": label},
                                        created_at=f"2026-11-01T11:0{i}:00.000Z")
                        for i, (who, label) in enumerate((("ann-a", "self"), ("ann-b", "self"), ("ann-c", "exogenous")))]
                    + [make_annotation(target_kind="attribution", target_id=unsure, annotator_id="ann-a",
                                       value={"type": "attribution", "label": "unsure"},
                                       created_at="2026-11-01T12:00:00.000Z")])
    assert enqueue_review(c, [QueueItem("attribution", split, "margin 1 < 2", {"self": 2, "exogenous": 1},
                                        {"ann-a": "self", "ann-b": "self", "ann-c": "exogenous"}, 1,
                                        "2026-11-02T09:01:00.000Z", "trb-annotate adjudicate (test)")]) == 1
    expected = review_items(c)
    assert {e.item_id: e.reason for e in expected.entries if e.reason != "unlabelled"} == {
        ties[0]: "tie", ties[1]: "tie", split: "disagreement", unsure: "unsure"}
    n_items = store_rows(review_corpus, "SELECT count(*) FROM attribution")[0][0]
    assert expected.counts["unlabelled"] == n_items - 4 - 3  # 7f3a's three items are examples: never queued
    assert expected.n_examples == 3

    app = ReviewApp(review_corpus, reviewer="cur-1")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_queue(pilot)
        table = screen.query_one("#queue", FitTable)
        title = str(screen.query_one("#title").render())
        assert (f"tie 2 · disagreement 1 · unsure 1 · unlabelled {expected.counts['unlabelled']}" in title
                and "f filter: all" in title)
        assert [r["reason"] for r in _rows(table)][:4] == ["tie", "tie", "disagreement", "unsure"]
        for reason, ids in (("tie", ties), ("disagreement", [split]), ("unsure", [unsure])):
            await _filter(pilot, screen, reason)
            assert [r["item"] for r in _rows(table)] == ids and f"f filter: {reason}" in str(
                screen.query_one("#title").render())
        assert _rows(table)[0]["votes"] == "unsure: ann-a"
        await _filter(pilot, screen, "disagreement")
        assert _rows(table)[0]["votes"] == "margin 1 < 2: exogenous:1 self:2"

        # the unlabelled items, and in the pane what the subject saw at the step and their r_t
        await _filter(pilot, screen, "unlabelled")
        rows = _rows(table)
        assert len(rows) == expected.counts["unlabelled"] and {r["reason"] for r in rows} == {"unlabelled"}
        with_r = {r[0]: r[1:] for r in store_rows(
            review_corpus, "SELECT a.item_id, s.observation, s.r_goal, s.r_planned_next, s.r_confidence FROM "
                           "attribution a JOIN steps s USING (session_id, t) WHERE s.has_r")}
        at = next(i for i, r in enumerate(rows) if r["item"] in with_r)  # a step with r_t (some have none)
        first = rows[at]["item"]
        table.move_cursor(row=at)
        await settle(pilot)
        obs, goal, planned, conf = with_r[first]
        side = " ".join(str(screen.query_one("#item").render()).split())
        assert f"saw {' '.join(obs.split())}" in side
        assert f"r_t goal {goal} · planned next {planned}" in side and f"confidence {conf}" in side
        assert "no label on it yet" in side

        # u from the trace: the item leaves "unlabelled" for "unsure"
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, SessionScreen) and app.screen.current_item().item_id == first
        await pilot.press("u")
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen and first not in [r["item"] for r in _rows(table)]
        await _filter(pilot, screen, "unsure")
        assert [(r["item"], r["votes"]) for r in _rows(table)] == [(unsure, "unsure: ann-a"), (first, "unsure: cur-1")]


@drive
async def test_an_empty_queue_says_why(tmp_path):
    from corpus.ingest import ingest
    from corpus.store import init_corpus
    from factories import like_7f3a, write_jsonl

    # 7f3a's records as a real (simulated) session with its labels: one item decided, two whose annotators agree
    real = write_jsonl(tmp_path / "real.jsonl", like_7f3a(annotations=True))
    d = init_corpus(tmp_path / "corpus")
    ingest(Corpus(d), [real], progress=False)
    app = ReviewApp(d, reviewer="cur-1")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_queue(pilot)
        assert screen.query_one("#queue", FitTable).row_count == 0
        assert status_text(screen) == ("the queue is empty: all 3 attribution item(s) are decided (1) or labelled "
                                       "by annotators who agree; none is unlabelled, unsure or tied")
        await pilot.press("s")
        await pilot.pause()
        assert "nothing to decide: the queue is empty" in status_text(screen)


def test_example_items_are_never_queued_and_their_labels_are_no_votes(tmp_path):
    """The packaged 7f3a is an example (source kind illustrative): the annotators' instructions cite it, so its
    items are not queued for a curator and its invented annotators' labels are not votes; the line says so."""
    from corpus.ingest import ingest
    from corpus.store import init_corpus
    from tests_paths import EXAMPLE_7F3A
    from tui.queue_view import empty_reason

    d = init_corpus(tmp_path / "corpus")
    ingest(Corpus(d), [EXAMPLE_7F3A], progress=False)
    queue = review_items(Corpus(d))
    assert (queue.entries, queue.n_items, queue.n_examples) == ([], 0, 3)
    assert empty_reason(queue, None) == ("the queue is empty: this corpus has only example items (illustrative "
                                         "sessions), which are never queued")


@drive
async def test_an_empty_filter_names_the_reasons_that_hold_items(review_corpus):
    app = ReviewApp(review_corpus, reviewer="cur-1")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_queue(pilot)
        n = review_items(Corpus(review_corpus)).counts["unlabelled"]
        await _filter(pilot, screen, "tie")
        assert screen.query_one("#queue", FitTable).row_count == 0
        assert status_text(screen) == (f"no item here is tie (annotators' labels tie); other reasons hold {n} "
                                       "unlabelled: f changes the filter · 3 example item(s) (illustrative "
                                       "sessions) are never queued")


@drive
async def test_undo_of_a_first_label_leaves_the_item_as_it_was(review_corpus):
    """An unlabelled item decided from the queue, then undone: unlabelled again (◇ on its trace), said as an undo."""
    app = ReviewApp(review_corpus, reviewer="cur-1")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_queue(pilot)
        table = screen.query_one("#queue", FitTable)
        item = _rows(table)[0]["item"]
        await pilot.press("s")
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        assert item not in [r["item"] for r in _rows(table)]
        assert status_text(screen).startswith(f"saved: self on {item} by cur-1, revision 1 · ")
        await pilot.press("z")
        await pilot.pause()
        await pilot.press("y")
        await settle(pilot)
        assert status_text(screen).startswith(f"undone: your revision 1 (self) on {item}, saved as revision 2 · ")
        assert not app._notifications  # said in the status line: nothing covers the table or the status line
        assert _rows(table)[0] == {**_rows(table)[0], "item": item, "reason": "unlabelled", "votes": "no label yet"}
        assert table.cursor_key() == item
        await pilot.press("enter")
        await settle(pilot)
        session = app.screen
        assert isinstance(session, SessionScreen) and session.current_item().item_id == item
        t = session.query_one(Timeline).selected_t
        assert str(session.query_one(Timeline).get_row(str(t))[1]) == "◇"
        assert session.current_item().status == "design_label_only"
