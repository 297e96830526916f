"""Adjudication rules: plurality with a margin (the default) and strict majority, by hand and in a real store."""

import hashlib
import json

import orjson
import pytest

from annotate.adjudicate import (
    ADJUDICATOR,
    RULES,
    adjudicate,
    decide,
    decide_plurality_margin,
    decide_strict_majority,
)
from corpus import Corpus, ingest, init_corpus
from corpus.errors import UsageError
from corpus.labels import add_annotations, make_annotation, review_queue
from factories import attribution, session, write_jsonl
from toolkit.errors import ExitCode


def _labels(*votes):
    return {f"a{i}": v for i, v in enumerate(votes)}


@pytest.mark.parametrize("votes, plurality, strict", [
    # label, or the reason it goes to review, under plurality-margin-1 and strict-majority
    (("self", "self", "exogenous", "exogenous"), "tie", "tie"),
    (("self", "exogenous", "unsure"), "tie", "tie"),
    (("self", "self", "exogenous", "unsure"), "self", "no strict majority: 2 of 4"),  # 2 of 4
    (("self", "self", "exogenous", "exogenous", "unsure"), "tie", "tie"),  # 2-2-1 of 5
    (("self", "self", "self", "exogenous", "exogenous"), "self", "self"),  # 3 of 5
    (("self", "self", "self", "exogenous", "unsure"), "self", "self"),  # 3 of 5
    (("exogenous", "exogenous", "self"), "exogenous", "exogenous"),  # 2 of 3
    (("self", "self", "exogenous", "unsure", "unsure", "exogenous", "self"), "self", "no strict majority: 3 of 7"),
    (("self",), "self", "self"),
])
def test_plurality_margin_and_strict_majority_by_hand(votes, plurality, strict):
    for got, want in ((decide_plurality_margin(_labels(*votes), 1), plurality),
                      (decide_strict_majority(_labels(*votes)), strict)):
        assert (got.label or got.reason) == want
        assert (got.label is None) == (got.reason is not None)


def test_decisions_carry_the_votes_and_the_lead_and_decide_dispatches_by_rule():
    d = decide_strict_majority(_labels("self", "self", "exogenous", "unsure"))
    assert (d.label, d.margin, d.votes) == (None, 1, {"exogenous": 1, "self": 2, "unsure": 1})
    d = decide_plurality_margin(_labels("self", "self", "self", "exogenous", "exogenous"), 2)
    assert (d.label, d.margin, d.reason) == (None, 1, "margin 1 < 2")  # 3 of 5 is a majority, not a lead of 2
    assert decide(_labels("self", "self", "exogenous", "unsure")).label == "self"  # the default: plurality-margin
    assert decide(_labels("self", "self", "exogenous", "unsure"), "strict-majority").label is None
    with pytest.raises(UsageError):
        decide(_labels("self"), "majority")
    assert RULES == ("plurality-margin", "strict-majority")


@pytest.fixture()
def store(tmp_path):
    c = Corpus(init_corpus(tmp_path / "c"))
    recs = [session("s1", n_steps=4), *[attribution(f"s1.t{t}.attr", "s1", t, "self") for t in (1, 2, 3)]]
    ingest(c, [write_jsonl(tmp_path / "in.jsonl", recs)], progress=False)
    votes = {"s1.t1.attr": "self self exogenous unsure",  # 2 of 4
             "s1.t2.attr": "exogenous exogenous exogenous self self",  # 3 of 5
             "s1.t3.attr": "self self exogenous exogenous"}  # tie
    add_annotations(c, [make_annotation(target_kind="attribution", target_id=t, annotator_id=f"a{i}",
                                        value={"type": "attribution", "label": x}, created_at="2026-11-29T10:00:00Z",
                                        annotation_id=f"t-{t}-{i}")
                        for t, v in votes.items() for i, x in enumerate(v.split())])
    return c


def _adjudicated(corpus):
    with corpus.open(write=False) as con:
        return con.execute("SELECT target_id, label, method FROM store.annotations WHERE role = 'adjudicator' "
                           "ORDER BY 1, 3").fetchall()


def test_strict_majority_in_the_store(store):
    r = adjudicate(store, rule="strict-majority")
    assert (r.method, r.adjudicated, r.queued) == ("strict-majority", 1, 2)
    assert _adjudicated(store) == [("s1.t2.attr", "exogenous", "strict-majority")]
    assert {q.target_id: q.reason for q in review_queue(store)} == {
        "s1.t1.attr": "no strict majority: 2 of 4", "s1.t3.attr": "tie"}
    again = adjudicate(store, rule="strict-majority")
    assert (again.adjudicated, again.unchanged, again.already_queued) == (0, 1, 2)
    with pytest.raises(UsageError, match="--margin"):
        adjudicate(store, rule="strict-majority", margin=2)


def test_plurality_margin_is_the_default_and_names_itself(store):
    r = adjudicate(store)
    assert (r.method, r.adjudicated, r.queued) == ("plurality-margin-1", 2, 1)
    assert _adjudicated(store) == [("s1.t1.attr", "self", "plurality-margin-1"),
                                   ("s1.t2.attr", "exogenous", "plurality-margin-1")]
    assert "adjudicate (plurality-margin-1)" in r.summary()


def test_labels_written_under_the_old_name_count_as_the_same_decision(store):
    # before the rule had its name, adjudications said method majority-margin-1, with ids from that name
    labels = {"a0": "self", "a1": "self", "a2": "exogenous", "a3": "unsure"}
    old_id = "adj-" + hashlib.sha256(orjson.dumps(["s1.t1.attr", "majority-margin-1",
                                                   sorted(labels.items())])).hexdigest()[:20]
    add_annotations(store, [make_annotation(
        target_kind="attribution", target_id="s1.t1.attr", annotator_id=ADJUDICATOR, role="adjudicator",
        value={"type": "attribution", "label": "self"}, method="majority-margin-1", created_at="2026-11-29T11:00:00Z",
        annotation_id=old_id)])
    r = adjudicate(store, margin=1)
    assert (r.adjudicated, r.unchanged) == (1, 1)  # s1.t2 is new; s1.t1 was decided already
    assert [m for t, _, m in _adjudicated(store) if t == "s1.t1.attr"] == ["majority-margin-1"]


def test_cli_rule_option(store, capsys):
    from annotate.cli import main

    capsys.readouterr()
    assert main(["adjudicate", "--corpus", str(store.dir), "--rule", "strict-majority", "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["method"] == "strict-majority"
    assert out["decisions"]["s1.t1.attr"]["review"] == "no strict majority: 2 of 4"
    assert "adjudicate (strict-majority)" in captured.err
    assert main(["adjudicate", "--corpus", str(store.dir), "--rule", "strict-majority", "--margin", "2"]) == (
        ExitCode.USAGE)
    assert main(["adjudicate", "--corpus", str(store.dir), "--rule", "majority"]) == ExitCode.USAGE


def test_a_reviewers_unsure_decides_nothing_so_the_vote_still_decides_but_a_reviewers_label_stands(store):
    def review(target, label, at):
        return make_annotation(target_kind="attribution", target_id=target, annotator_id="cur-1", role="reviewer",
                               method="review", value={"type": "attribution", "label": label}, created_at=at)

    add_annotations(store, [review("s1.t1.attr", "unsure", "2026-11-29T12:00:00Z"),
                            review("s1.t2.attr", "self", "2026-11-29T12:00:01Z")])
    r = adjudicate(store)
    assert r.reviewed == 1  # s1.t2: the reviewer's "self" stands against the votes for exogenous
    assert _adjudicated(store) == [("s1.t1.attr", "self", "plurality-margin-1")]  # s1.t1: "unsure" decided nothing
