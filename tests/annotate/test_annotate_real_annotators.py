"""Agreement and adjudication count only real annotators: the packaged 7f3a example's invented annotators (its
sessions' source kind is ``illustrative``) are kept apart from α, κ, independence and votes; question 2
(endorsement) has its own α, κ and disagreement list (a real corpus store; no Label Studio needed)."""

import pytest

from annotate.adjudicate import adjudicate
from annotate.agreement import agreement
from annotate.cli import main
from corpus import Corpus, ingest, init_corpus
from corpus.examples import example_path
from corpus.labels import add_annotations, make_annotation
from factories import attribution, session, write_jsonl

A, B = "ls-aaaaaaaaaaaa", "ls-bbbbbbbbbbbb"


def _label(target, who, label, endorsed=None, at="2026-12-01T10:00:00Z"):
    value = {"type": "attribution", "label": label}
    if endorsed is not None:
        value["endorsed"] = endorsed
    return make_annotation(target_kind="attribution", target_id=target, annotator_id=who, value=value,
                           created_at=at, annotation_id=f"t-{target}-{who}")


@pytest.fixture()
def team(tmp_path):
    """The 7f3a example (3 items, 9 invented labels) and a two-person team: A labels first, B after."""
    c = Corpus(init_corpus(tmp_path / "c"))
    recs = [session("s1", n_steps=4), attribution("s1.t1.attr", "s1", 1), attribution("s1.t2.attr", "s1", 2)]
    ingest(c, [example_path("7f3a"), write_jsonl(tmp_path / "in.jsonl", recs)], progress=False)
    add_annotations(c, {"team": [
        # an example item labelled by the team too (pushed by an older toolkit): A says "unsure"
        _label("7f3a-attr-2plus2", A, "unsure"),
        _label("s1.t1.attr", A, "self", True), _label("s1.t1.attr", B, "self", False, at="2026-12-01T11:00:00Z"),
        _label("s1.t2.attr", A, "self", True), _label("s1.t2.attr", B, "self", True, at="2026-12-01T11:00:00Z")]})
    return c


def test_agreement_counts_the_team_not_the_examples_and_covers_endorsement(team):
    result = agreement(team, reps=50)
    cbs, endorsed = result["caused_by_self"], result["endorsed"]
    assert cbs.annotators == [A, B]  # not 5: the example's ann-01..03 are not annotators
    # every label on an example item is kept apart, the team's "unsure" on it too (an example is never a task now)
    assert cbs.example_labels == 10 and cbs.items == 2 and cbs.annotations == 4
    # independence: A labelled first everywhere (the example's labels of August do not make A "after another")
    assert [(i.annotator, i.labels, i.after_another) for i in cbs.independence] == [(A, 2, 0), (B, 2, 2)]
    # question 2: one agreement, one disagreement, listed
    assert endorsed.annotators == [A, B] and endorsed.items == 2 and endorsed.annotations == 4
    assert endorsed.disagreements == [{"target_id": "s1.t1.attr", "votes": {"endorsed": 1, "not endorsed": 1}}]
    assert [(k.a, k.b, k.n) for k in endorsed.kappa] == [(A, B, 2)]
    assert endorsed.example_labels == 6  # the example's labels that answered question 2 (2 items x 3)


def test_example_votes_never_outvote_a_real_annotator(team):
    report = adjudicate(team, min_votes=1)
    # 7f3a-attr-2plus2: the example's three votes are not counted (no 3-1 over A's "unsure"): it is not decided
    assert set(report.decisions) == {"s1.t1.attr", "s1.t2.attr"}
    assert report.example_labels == 10 and "10 example label(s) (source kind illustrative) are not votes" in \
        report.summary()
    with team.open(write=False) as con:
        assert con.execute("SELECT count(*) FROM store.annotations WHERE role = 'adjudicator' AND "
                           "annotator_id = 'trb-annotate' AND target_id LIKE '7f3a%'").fetchone()[0] == 0


def test_cli_agreement_says_what_it_left_out_and_prints_the_endorsement_line(team, capsys):
    assert main(["agreement", "--corpus", str(team.dir), "--bootstrap", "20"]) == 0
    out = capsys.readouterr().out
    assert "caused_by_self: " in out and "2 annotator(s)" in out
    assert "10 example label(s) (source kind illustrative) left out" in out
    assert "endorsed: alpha (nominal)" in out and "disagreement s1.t1.attr: endorsed 1, not endorsed 1" in out
