"""corpus.browse and corpus.review on a real store: pages, filters, splits, one session in full, safe label writes."""

from __future__ import annotations

import pytest

from corpus.browse import SessionFilter, facets, list_sessions, locate_item, session_detail, split_rule
from corpus.labels import UNDO_METHOD, add_annotations, make_annotation
from corpus.review import item_state, label_effect, review_label, reviewer_id, save_label, undo_record
from corpus.splits import subject_split
from corpus.stats import corpus_stats
from corpus.store import Corpus
from review_helpers import store_rows


def _all_ids(c: Corpus, flt: SessionFilter | None = None) -> list[str]:
    out, offset = [], 0
    while True:
        page = list_sessions(c, flt, offset=offset, limit=17)
        out += [r.session_id for r in page.rows]
        offset += 17
        if offset >= page.total:
            return out


def test_pages_cover_every_session_once_in_id_order(review_corpus):
    c = Corpus(review_corpus)
    ids = _all_ids(c)
    expected = [r[0] for r in store_rows(review_corpus, "SELECT session_id FROM sessions ORDER BY 1")]
    assert ids == expected
    page = list_sessions(c, offset=17, limit=17)
    assert page.total == len(expected) and len(page.rows) == 17 and page.rows[0].session_id == expected[17]


def test_filters_by_source_context_and_id_search(review_corpus):
    c = Corpus(review_corpus)
    assert _all_ids(c, SessionFilter(source_kind="illustrative")) == ["7f3a", "7f3a-pair"]
    # search: a case-insensitive substring of the session id, or of an item or counterfactual id in it
    assert _all_ids(c, SessionFilter(search="3A-PAIR")) == ["7f3a-pair"]
    pair = list_sessions(c, SessionFilter(search="pair")).rows  # 7f3a through its paired-session counterfactuals
    assert [(r.session_id, r.match_id, r.match_t) for r in pair] == [("7f3a", "7f3a-cf-pair-t0", 0),
                                                                     ("7f3a-pair", None, None)]
    assert _all_ids(c, SessionFilter(search="-0000001")) == ["sim-1-0000001"]
    hit = list_sessions(c, SessionFilter(search="Clock-JUMP")).rows
    assert [(r.session_id, r.match_id, r.match_t) for r in hit] == [("7f3a", "7f3a-attr-clock-jump", 5)]
    cf = store_rows(review_corpus, "SELECT cf_id, session_id, t FROM counterfactuals WHERE session_id LIKE 'sim-%' "
                                   "ORDER BY cf_id DESC LIMIT 1")[0]
    hit = list_sessions(c, SessionFilter(search=cf[0].upper())).rows
    assert [(r.session_id, r.match_id, r.match_t) for r in hit] == [(cf[1], cf[0], cf[2])]
    assert list_sessions(c, SessionFilter(search="7f3a")).rows[0].match_id is None  # the session id matched
    assert list_sessions(c, SessionFilter(search="no such thing")).total == 0
    ctx = store_rows(review_corpus, "SELECT context_id, count(*) FROM sessions WHERE source_kind = 'simulated' "
                                    "GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1")[0]
    assert len(_all_ids(c, SessionFilter(context_id=ctx[0]))) == ctx[1]
    assert ctx[0] in facets(c)["context_id"]


def test_split_is_the_release_rule_for_every_session(review_corpus):
    c = Corpus(review_corpus)
    transfer_ctx = {r[0] for r in store_rows(review_corpus, "SELECT context_id FROM transfer_contexts")}
    sessions = store_rows(review_corpus, "SELECT session_id, subject_id, context_id FROM sessions")
    want = {sid: "transfer" if ctx in transfer_ctx else subject_split("trb-split-v1", subj)
            for sid, subj, ctx in sessions}
    got = {r.session_id: r.split for r in list_sessions(c, limit=1000).rows}
    assert got == want
    for split in ("train", "dev", "eval", "transfer"):
        assert sorted(_all_ids(c, SessionFilter(split=split))) == sorted(s for s, sp in want.items() if sp == split)
    assert split_rule(c).release is None


def test_split_follows_the_latest_release(review_corpus):
    """After a release with another salt, the app shows each session's split in that release."""
    import pyarrow.parquet as pq

    from corpus.release import cut_release

    c = Corpus(review_corpus)
    # a reviewer's "unsure" decides nothing (the item keeps its design label); an undone override leaves the
    # adjudicator's decision standing
    assert save_label(c, review_label("7f3a-attr-clock-jump", "unsure", "rev-9")).saved
    over = review_label("7f3a-attr-2plus2", "exogenous", "rev-9")
    assert save_label(c, over).saved
    assert save_label(c, undo_record(item_state(c, "7f3a-attr-2plus2", "rev-9"))[0]).saved
    res = cut_release(c, "0.1.0", kind="smoke", salt="other-salt", progress=False)
    attr = pq.read_table(res.directory / "data" / "attribution", columns=["item_id", "label", "label_source"])
    labels = {i: (lab, src) for i, lab, src in zip(*(attr.column(k).to_pylist() for k in attr.column_names))}
    assert labels["7f3a-attr-clock-jump"] == ("exogenous", "design")
    assert labels["7f3a-attr-2plus2"] == ("self", "adjudicated")
    released = {}
    for f in (res.directory / "data" / "sessions").glob("*.parquet"):
        t = pq.read_table(f, columns=["session_id", "split"])
        released.update(zip(t.column("session_id").to_pylist(), t.column("split").to_pylist()))
    rule = split_rule(c)
    assert rule.release == "0.1.0" and rule.salt == "other-salt"
    got = {r.session_id: r.split for r in list_sessions(c, limit=1000).rows}
    assert got == released


def test_label_status_and_disagreement_filters(review_corpus):
    c = Corpus(review_corpus)
    # 7f3a: the 2plus2 item is adjudicated (its annotators split 2:1); the others are annotated, all agreeing
    assert _all_ids(c, SessionFilter(label_status="adjudicated")) == ["7f3a"]
    assert _all_ids(c, SessionFilter(has_disagreement=True)) == ["7f3a"]
    unlabelled = sorted(r[0] for r in store_rows(review_corpus, "SELECT DISTINCT session_id FROM attribution WHERE "
                                                                "item_id NOT IN (SELECT target_id FROM annotations)"))
    assert _all_ids(c, SessionFilter(label_status="design_label_only")) == unlabelled
    sim_item, sim_session = store_rows(review_corpus, "SELECT item_id, session_id FROM attribution "
                                                      "WHERE session_id LIKE 'sim-%' ORDER BY 1 LIMIT 1")[0]
    # two annotators agree: annotated, no disagreement; one revises to differ: a disagreement
    add_annotations(c, [
        make_annotation(target_kind="attribution", target_id=sim_item, annotator_id="a1",
                        value={"type": "attribution", "label": "self"}, created_at="2026-01-01T00:00:00.000Z"),
        make_annotation(target_kind="attribution", target_id=sim_item, annotator_id="a2",
                        value={"type": "attribution", "label": "self"}, created_at="2026-01-01T00:00:01.000Z"),
    ])
    assert sim_session in _all_ids(c, SessionFilter(label_status="annotated"))
    assert sim_session not in _all_ids(c, SessionFilter(has_disagreement=True))
    add_annotations(c, [make_annotation(target_kind="attribution", target_id=sim_item, annotator_id="a2",
                                        value={"type": "attribution", "label": "exogenous"}, revision=2,
                                        created_at="2026-01-01T00:00:02.000Z")])
    assert _all_ids(c, SessionFilter(has_disagreement=True)) == ["7f3a", sim_session]
    row = next(r for r in list_sessions(c, SessionFilter(search=sim_session)).rows if r.session_id == sim_session)
    assert row.n_disagreements == 1
    # the status counts agree with trb-corpus stats
    stats = corpus_stats(c)["attribution_label_status"]
    assert stats.get("adjudicated") == 1


def test_session_detail_holds_steps_slots_items_and_counterfactuals(review_corpus):
    c = Corpus(review_corpus)
    d = session_detail(c, "7f3a")
    assert [s.t for s in d.steps] == list(range(8))
    assert d.steps[1].r.ext == {"endorses_last_output": False} and d.steps[1].action == "answer_4"
    item = next(i for i in d.items if i.item_id == "7f3a-attr-2plus2")
    assert item.t == 0 and item.status == "adjudicated" and item.disagreement
    assert [(lb.annotator_id, lb.label) for lb in item.labels if lb.role == "annotator"] == \
        [("ann-01", "self"), ("ann-02", "self"), ("ann-03", "exogenous")]
    cf = d.counterfactuals[1][0]
    assert cf.origin == "synthetic" and cf.adversarial and cf.phi_probs == {"answer_2": 0.25, "answer_4": 0.75}
    assert cf.author == "trb-synth-perturb@0.1.0 seed 7302"
    n_cf = store_rows(review_corpus, "SELECT count(*) FROM counterfactuals WHERE session_id = '7f3a'")[0][0]
    assert sum(len(v) for v in d.counterfactuals.values()) == n_cf
    assert session_detail(c, "no-such-session") is None
    assert locate_item(c, "attribution", "7f3a-attr-clock-jump") == ("7f3a", 5)
    assert locate_item(c, "attribution", "nope") is None


def test_reviewer_label_is_written_with_id_time_and_note(review_corpus):
    c = Corpus(review_corpus)
    rec = review_label("7f3a-attr-clock-jump", "unsure", "rev-9", note="  operator log missing ")
    out = save_label(c, rec)
    assert out.saved and out.attempts == 1
    row = store_rows(review_corpus, "SELECT annotator_id, role, method, label, rationale, created_at FROM annotations "
                                    "WHERE annotation_id = ?", [rec["annotation_id"]])[0]
    assert row[:5] == ("rev-9", "reviewer", "reviewer", "unsure", "operator log missing")
    assert row[5] == rec["created_at"]
    assert save_label(c, rec).saved  # the same record again is a no-op, not an error
    with pytest.raises(ValueError):
        review_label("x", "maybe", "rev-9")
    bad = save_label(c, review_label("no-such-item", "self", "rev-9"))
    assert not bad.saved and bad.message.startswith("NOT saved")


def _mine(corpus_dir, item_id, reviewer):
    return store_rows(corpus_dir, "SELECT revision, label, method, created_at FROM annotations WHERE target_id = ? "
                                  "AND annotator_id = ? AND role = 'reviewer' ORDER BY revision", [item_id, reviewer])


def test_reviewer_labels_are_revisions_and_unsure_decides_nothing(review_corpus):
    """clock-jump: annotated, undecided. A reviewer's unsure leaves it so; exogenous decides it (revision 2)."""
    c = Corpus(review_corpus)
    item = "7f3a-attr-clock-jump"
    st = item_state(c, item, "rev-9")
    assert st.decision is None and st.next_revision == 1
    eff = label_effect(st, "unsure")
    assert not eff.needs_confirm and eff.message.startswith("unsure does not decide the item (revision 1)")
    assert save_label(c, review_label(item, "unsure", "rev-9", revision=eff.revision)).saved
    st = item_state(c, item, "rev-9")
    assert st.decision is None and st.next_revision == 2
    assert next(i for i in session_detail(c, "7f3a").items if i.item_id == item).status == "annotated"
    assert corpus_stats(c)["attribution_label_status"]["adjudicated"] == 1  # 2plus2 only
    # the list filters read the same rule: a simulated session whose one label is a reviewer's unsure
    sim_item, sim_session = store_rows(review_corpus, "SELECT item_id, session_id FROM attribution "
                                                      "WHERE session_id LIKE 'sim-%' ORDER BY 1 LIMIT 1")[0]
    assert save_label(c, review_label(sim_item, "unsure", "rev-9")).saved
    assert sim_session in _all_ids(c, SessionFilter(label_status="annotated"))
    assert sim_session not in _all_ids(c, SessionFilter(label_status="adjudicated"))

    eff = label_effect(st, "exogenous")
    assert not eff.needs_confirm and eff.message.startswith("exogenous decides the item (revision 2)")
    out = save_label(c, review_label(item, "exogenous", "rev-9", revision=eff.revision))
    assert out.saved and out.message == f"saved: exogenous on {item} by rev-9, revision 2"
    mine = _mine(review_corpus, item, "rev-9")
    assert [(r, lab) for r, lab, _, _ in mine] == [(1, "unsure"), (2, "exogenous")] and mine[0][3] < mine[1][3]
    st = item_state(c, item, "rev-9")
    assert (st.decision.label, st.decision.annotator_id, st.decision.revision) == ("exogenous", "rev-9", 2)
    assert corpus_stats(c)["attribution_label_status"]["adjudicated"] == 2  # 2plus2 and now clock-jump

    # another reviewer's self would override it: the effect says so and asks for a confirmation
    other = label_effect(item_state(c, item, "rev-8"), "self")
    assert other.needs_confirm and "replacing the decision exogenous by rev-9 (reviewer, rev 2, " in other.message
    # rev-8's unsure leaves rev-9's decision standing: nothing to confirm
    assert not label_effect(item_state(c, item, "rev-8"), "unsure").needs_confirm


def test_an_undo_is_a_new_revision_and_restores_the_decision_before(review_corpus):
    """2plus2 is adjudicated self by cur-01. A reviewer overrides it, undoes that (a withdrawal), undoes again."""
    c = Corpus(review_corpus)
    item = "7f3a-attr-2plus2"
    with pytest.raises(LookupError, match="no label on 7f3a-attr-2plus2 to undo"):
        undo_record(item_state(c, item, "rev-9"))
    st = item_state(c, item, "rev-9")
    assert (st.decision.label, st.decision.annotator_id) == ("self", "cur-01")
    assert not label_effect(st, "unsure").needs_confirm  # the adjudication stands
    eff = label_effect(st, "exogenous")
    assert eff.needs_confirm and "replacing the decision self by cur-01 (adjudicator, majority vote" in eff.message
    assert save_label(c, review_label(item, "exogenous", "rev-9", revision=eff.revision)).saved

    rec, eff = undo_record(item_state(c, item, "rev-9"))
    assert (rec["revision"], rec["value"]["label"], rec["method"]) == (2, "unsure", UNDO_METHOD)
    assert rec["value"]["rationale"] == "undo of revision 1 (exogenous): withdrawn"
    assert eff.needs_confirm and "so self by cur-01" in eff.message
    assert save_label(c, rec).saved
    st = item_state(c, item, "rev-9")
    assert (st.decision.label, st.decision.annotator_id) == ("self", "cur-01")
    assert [(r, lab) for r, lab, _, _ in _mine(review_corpus, item, "rev-9")] == [(1, "exogenous"), (2, "unsure")]

    rec, _ = undo_record(st)  # undoing the undo brings revision 1's label back, as revision 3
    assert (rec["revision"], rec["value"]["label"]) == (3, "exogenous")
    assert save_label(c, rec).saved
    assert item_state(c, item, "rev-9").decision.label == "exogenous"
    # append-only: every record is still there
    assert len(_mine(review_corpus, item, "rev-9")) == 3
    assert store_rows(review_corpus, "SELECT count(*) FROM annotations WHERE target_id = ? AND role = 'adjudicator'",
                      [item]) == [(1,)]


def test_reviewer_id_comes_from_option_then_env_then_user(monkeypatch):
    monkeypatch.setenv("TRB_REVIEWER", "env-rev")
    assert reviewer_id("opt-rev") == "opt-rev"
    assert reviewer_id(None) == "env-rev"
    monkeypatch.delenv("TRB_REVIEWER")
    assert reviewer_id(None)
