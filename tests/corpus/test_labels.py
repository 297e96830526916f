"""corpus.labels: annotations written after ingest, and the review queue."""

import time

import pytest

from corpus import Corpus, InvalidInput, RecordConflict, ingest, init_corpus
from corpus.labels import QueueItem, add_annotations, enqueue_review, make_annotation, now_iso, review_queue
from tests_paths import EXAMPLE_7F3A


@pytest.fixture()
def corpus_7f3a(tmp_path):
    c = Corpus(init_corpus(tmp_path / "c"))
    ingest(c, [EXAMPLE_7F3A], progress=False)
    return c


def _count(c, sql):
    with c.open(write=False) as con:
        return con.execute(sql).fetchone()[0]


def test_add_annotation_is_stored_once_and_idempotent(corpus_7f3a):
    c = corpus_7f3a
    before = _count(c, "SELECT count(*) FROM store.annotations")
    rec = make_annotation(target_kind="attribution", target_id="7f3a-attr-2plus2", annotator_id="curator-1",
                          role="reviewer", method="reviewer",
                          value={"type": "attribution", "label": "exogenous", "rationale": "demonstration"})
    assert add_annotations(c, [rec]).new["annotation"] == 1
    assert add_annotations(c, [rec]).unchanged["annotation"] == 1
    assert _count(c, "SELECT count(*) FROM store.annotations") == before + 1
    with c.open(write=False) as con:
        row = con.execute("SELECT annotator_id, role, method, label, rationale FROM store.annotations "
                          "WHERE annotation_id = ?", [rec["annotation_id"]]).fetchone()
    assert row == ("curator-1", "reviewer", "reviewer", "exogenous", "demonstration")


def test_bad_annotation_and_conflict_write_nothing(corpus_7f3a):
    c = corpus_7f3a
    before = _count(c, "SELECT count(*) FROM store.annotations")
    good = make_annotation(target_kind="attribution", target_id="7f3a-attr-2plus2", annotator_id="a1",
                           value={"type": "attribution", "label": "self"})
    bad = make_annotation(target_kind="attribution", target_id="no-such-item", annotator_id="a1",
                          value={"type": "attribution", "label": "maybe"})
    with pytest.raises(InvalidInput) as err:
        add_annotations(c, [good, bad])
    assert any("/value" in p.pointer or "label" in p.message for p in err.value.problems)
    assert _count(c, "SELECT count(*) FROM store.annotations") == before
    add_annotations(c, [good])
    changed = dict(good, value={"type": "attribution", "label": "unsure"})
    with pytest.raises(RecordConflict):
        add_annotations(c, [changed])


def test_queue_pending_until_a_reviewer_label_after_queueing(corpus_7f3a):
    c = corpus_7f3a
    assert review_queue(c) == []
    item = QueueItem("attribution", "7f3a-attr-2plus2", "tie", {"self": 1, "exogenous": 1},
                     {"a1": "self", "a2": "exogenous"}, 0, now_iso(), "test")
    assert enqueue_review(c, [item]) == 1
    assert enqueue_review(c, [item]) == 0  # already pending
    assert [q.target_id for q in review_queue(c)] == ["7f3a-attr-2plus2"]
    assert review_queue(c, target_kind="counterfactual") == []
    time.sleep(0.002)
    add_annotations(c, [make_annotation(target_kind="attribution", target_id="7f3a-attr-2plus2",
                                        annotator_id="rev", role="reviewer", method="reviewer",
                                        value={"type": "attribution", "label": "self"})])
    assert review_queue(c) == []
    done = review_queue(c, include_resolved=True)
    assert len(done) == 1 and done[0].resolved and done[0].votes == {"self": 1, "exogenous": 1}
