"""Agreement and adjudication on labels in a real corpus store (no Label Studio needed)."""

import json

import pytest

from annotate.adjudicate import ADJUDICATOR, adjudicate, decide_plurality_margin, phi_from_annotations
from annotate.agreement import agreement, bootstrap_alpha, cohen_kappa, krippendorff_alpha, project_agreement
from annotate.pull import annotator_id, parse_result
from annotate.tasks import action_label, cf_key, item_key, item_targets, render_tasks
from corpus import Corpus, ingest, init_corpus
from corpus.errors import ReleaseRefused
from corpus.labels import add_annotations, make_annotation, review_queue
from factories import attribution, counterfactual, session, write_jsonl
from toolkit.errors import ExitCode


def test_alpha_and_kappa_match_a_hand_worked_case():
    # Two coders, four items: A = a a b b, B = a b b b.
    # Coincidences (each pair weighted 1/(m_u - 1) = 1, both orders): o_aa = 2, o_ab = o_ba = 1, o_bb = 4;
    # n_a = 3, n_b = 5, n = 8. alpha = 1 - (n - 1) * (o_ab + o_ba) / (2 n_a n_b) = 1 - 7 * 2 / 30 = 16/30.
    units = {"u1": {"A": "a", "B": "a"}, "u2": {"A": "a", "B": "b"}, "u3": {"A": "b", "B": "b"},
             "u4": {"A": "b", "B": "b"}}
    assert krippendorff_alpha(units) == pytest.approx(16 / 30)
    # kappa: p_o = 3/4; A has a 2, b 2; B has a 1, b 3: p_e = (2*1 + 2*3)/16 = 1/2; kappa = (3/4 - 1/2)/(1/2) = 1/2.
    assert cohen_kappa(["a", "a", "b", "b"], ["a", "b", "b", "b"]) == pytest.approx(0.5)


def test_alpha_with_three_coders_and_missing_labels():
    # u1: a a a (m=3: 6 ordered pairs at 1/2 -> o_aa += 3); u2: a b (o_ab = o_ba = 1); u3: b b (o_bb += 2);
    # u4 has one label: not pairable, left out. n_a = 4, n_b = 3, n = 7:
    # alpha = 1 - 6 * 2 / (2 * 4 * 3) = 1/2.
    units = {"u1": {"A": "a", "B": "a", "C": "a"}, "u2": {"A": "a", "B": "b"}, "u3": {"B": "b", "C": "b"},
             "u4": {"C": "c"}}
    assert krippendorff_alpha(units) == pytest.approx(0.5)
    a = project_agreement("caused_by_self", units, reps=500, seed=1)
    assert (a.items, a.pairable_items, a.annotations) == (4, 3, 8)
    assert [d["target_id"] for d in a.disagreements] == ["u2"]
    assert {(k.a, k.b): k.n for k in a.kappa} == {("A", "B"): 2, ("A", "C"): 1, ("B", "C"): 2}
    # B and C agree on both shared items but only ever said... a then b: p_o = 1, p_e = 1/2 -> kappa 1.
    assert next(k.kappa for k in a.kappa if (k.a, k.b) == ("B", "C")) == pytest.approx(1.0)


def test_kappa_undefined_when_both_raters_use_one_category():
    assert cohen_kappa(["a", "a"], ["a", "a"]) is None


def test_bootstrap_ci_is_seeded_and_brackets_alpha():
    units = {f"u{i}": {"A": "ab"[i % 2], "B": "ab"[(i // 3) % 2], "C": "ab"[i % 2]} for i in range(40)}
    alpha = krippendorff_alpha(units)
    boot = bootstrap_alpha(units, reps=400, seed=3)
    lo, hi = boot.ci
    assert lo < alpha < hi and (boot.resamples, boot.undefined, boot.sessions) == (400, 0, 40)
    assert bootstrap_alpha(units, reps=400, seed=3) == boot


def test_plurality_with_a_margin():
    assert decide_plurality_margin({"a": "self", "b": "self", "c": "self"}, 2).label == "self"
    d = decide_plurality_margin({"a": "self", "b": "self", "c": "exogenous"}, 2)
    assert (d.label, d.margin, d.reason) == (None, 1, "margin 1 < 2")
    assert decide_plurality_margin({"a": "self", "b": "self", "c": "exogenous"}, 1).label == "self"
    d = decide_plurality_margin({"a": "self", "b": "exogenous", "c": "unsure"}, 1)
    assert (d.label, d.reason, d.votes) == (None, "tie", {"exogenous": 1, "self": 1, "unsure": 1})


def test_label_studio_results_map_to_annotation_values_and_bad_ones_are_refused():
    res = [{"from_name": "caused_by_self", "value": {"choices": ["exogenous"]}},
           {"from_name": "endorsed", "value": {"choices": ["not endorsed"]}},
           {"from_name": "rationale", "value": {"text": [" the clock was reset "]}}]
    assert parse_result("attribution", res, None) == (
        {"type": "attribution", "label": "exogenous", "endorsed": False, "rationale": "the clock was reset"}, None)
    assert parse_result("attribution", [{"from_name": "caused_by_self", "value": {"choices": ["maybe"]}}], None)[0] is None
    assert parse_result("continuation", [{"from_name": "action", "value": {"choices": ["up"]}}], ["up", "down"]) == (
        {"type": "action", "action": "up"}, None)
    assert parse_result("continuation", [{"from_name": "action", "value": {"choices": ["fly"]}}], ["up"])[0] is None
    assert parse_result("continuation", [{"from_name": "continuation", "value": {"text": ["I look again"]}}], None) == (
        {"type": "continuation", "text": "I look again"}, None)
    # nothing typed is dropped: a note beside an action is kept as its rationale ...
    note = {"from_name": "continuation", "value": {"text": [" it was told to go up "]}}
    assert parse_result("continuation", [{"from_name": "action", "value": {"choices": ["up"]}}, note], ["up"]) == (
        {"type": "action", "action": "up", "rationale": "it was told to go up"}, None)
    # ... and text without an action on a step with a list is not a continuation: it is reported
    value, why = parse_result("continuation", [note], ["up", "down"])
    assert value is None and why == "text written on a step with an action list, but no action chosen"
    assert parse_result("continuation", [], ["up"]) == (None, "empty submission (nothing answered)")
    assert parse_result("attribution", [{"from_name": "rationale", "value": {"text": ["hm"]}}], None)[1] == \
        "no answer to 'who caused this outcome?' (only other fields filled in)"
    assert annotator_id("Ann@Example.com") == annotator_id("ann@example.com ")
    assert "@" not in annotator_id("ann@example.com")


@pytest.fixture()
def labelled(tmp_path):
    """s1 (3 steps) with two attribution items and two counterfactuals, one lacking Φ."""
    c = Corpus(init_corpus(tmp_path / "c"))
    cf_open = counterfactual("s1.t1.syn", "s1", 1, origin="synthetic")
    del cf_open["phi"]
    recs = [session("s1"), session("s2", subject="subj-2"), attribution("s1.t1.attr", "s1", 1, "self"),
            attribution("s1.t2.attr", "s1", 2, "exogenous"), counterfactual("s1.t0.cf0", "s1", 0),
            counterfactual("s2.t0.cf0", "s2", 0), counterfactual("s2.t1.cf0", "s2", 1), cf_open]
    ingest(c, [write_jsonl(tmp_path / "in.jsonl", recs)], progress=False)
    return c


def _ann(target, who, label, kind="attribution", t="2026-11-29T10:00:00Z", rev=1):
    value = {"type": "attribution", "label": label} if kind == "attribution" else {"type": "action", "action": label}
    return make_annotation(target_kind=kind, target_id=target, annotator_id=who, value=value, created_at=t,
                           revision=rev, annotation_id=f"t-{target}-{who}-{rev}")


def test_tasks_show_the_session_and_hide_where_r_prime_came_from(labelled):
    with labelled.open(write=False) as con:
        att = render_tasks(con, "attribution")
        cont = render_tasks(con, "continuation", where="origin = 'synthetic'")
        targets = item_targets(con, "attribution")
    # opaque keys for every item kind: the item ids ("...attr", "...syn") appear nowhere in the task data
    assert [t["trb_item_id"] for t in att] == [item_key("attribution", "s1.t1.attr"),
                                               item_key("attribution", "s1.t2.attr")]
    assert all("attr" not in json.dumps(t) and "exogenous" not in json.dumps(t) for t in att)
    assert targets[att[0]["trb_item_id"]] == ("s1.t1.attr", None) == targets["s1.t1.attr"]  # old plain keys still map
    first = att[0]
    # steps numbered as people count them, with the total; the session stops at the action of step t,
    # whose outcome is shown once, beside the question
    assert first["step_label"] == "2 of 3" and first["language"] == "English (en)"
    assert "Step 1 of 3" in first["session_text"] and "Step 2 of 3" in first["session_text"]
    assert "Step 3" not in first["session_text"] and "moved to B3" not in first["session_text"]
    assert first["outcome"] == "moved to B3"
    # r_t one slot a line under readable names; the agent's credit belief is not called caused_by_self
    assert "\n  Goal: C3\n  Plans to do next: right\n  Its belief that it caused the previous outcome: 50%\n" \
           "  Confidence: 60%\n" in first["session_text"]
    assert "caused_by_self" not in first["session_text"]
    # what came after (for endorsement) shows the next step without the agent's later self-report
    assert "Step 3 of 3" in first["after_text"] and "moved to B4" in first["after_text"]
    assert "belief that it caused" not in first["after_text"] and "self-report at this step" not in first["after_text"]
    assert att[1]["after_text"] == "(the session ends with this outcome)"
    [task] = cont
    assert task["trb_item_id"] == cf_key("s1.t1.syn")
    assert "syn" not in json.dumps(task) and "origin" not in json.dumps(task)
    assert task["r_prime_text"] == "Goal: C3\nPlans to do next: up"
    assert [o["value"] for o in task["action_options"]] == ["up", "down", "left", "right", "wait"]
    assert task["action_options"][0] == {"value": "up", "html": "up"}  # no tooltip: it would cover the question
    assert "step 1: you are at B2" in task["context_text"] and "moved to B3" not in task["context_text"]
    assert task["step_label"] == "2 of 3" and not task["open_ended"]


def test_readable_action_names_and_languages():
    assert action_label("ask_clarification") == "ask clarification"


def test_agreement_reads_latest_revisions(labelled):
    add_annotations(labelled, [
        _ann("s1.t1.attr", "a1", "self"), _ann("s1.t1.attr", "a2", "exogenous"),
        _ann("s1.t1.attr", "a2", "self", t="2026-11-29T11:00:00Z", rev=2),  # a2 changed their mind
        _ann("s1.t2.attr", "a1", "exogenous"), _ann("s1.t2.attr", "a2", "exogenous")])
    res = agreement(labelled, reps=200)
    a = res["caused_by_self"]
    # a2's latest says self: both items agree (self/self, exogenous/exogenous): alpha = kappa = 1
    assert a.annotations == 4 and a.disagreements == [] and a.alpha == pytest.approx(1.0)
    assert [(k.a, k.b, k.n, k.kappa) for k in a.kappa] == [("a1", "a2", 2, 1.0)]
    assert "continuation" not in res


def test_adjudicate_labels_pluralities_queues_ties_and_is_idempotent(labelled):
    add_annotations(labelled, [
        _ann("s1.t1.attr", "a1", "self"), _ann("s1.t1.attr", "a2", "self"), _ann("s1.t1.attr", "a3", "exogenous"),
        _ann("s1.t2.attr", "a1", "self"), _ann("s1.t2.attr", "a2", "exogenous"), _ann("s1.t2.attr", "a3", "unsure")])
    r = adjudicate(labelled, margin=1)
    assert (r.adjudicated, r.queued) == (1, 1)
    with labelled.open(write=False) as con:
        rows = con.execute("SELECT target_id, label, method, annotator_id FROM store.annotations "
                           "WHERE role = 'adjudicator'").fetchall()
    assert rows == [("s1.t1.attr", "self", "plurality-margin-1", ADJUDICATOR)]
    [q] = review_queue(labelled)
    assert (q.target_id, q.reason, q.votes, q.annotators) == (
        "s1.t2.attr", "tie", {"exogenous": 1, "self": 1, "unsure": 1},
        {"a1": "self", "a2": "exogenous", "a3": "unsure"})
    again = adjudicate(labelled, margin=1)
    assert (again.adjudicated, again.unchanged, again.queued, again.already_queued) == (0, 1, 0, 1)
    # with margin 2 the 2-1 item goes to review too
    assert adjudicate(labelled, margin=2).queued == 1
    assert {q.target_id: q.reason for q in review_queue(labelled)}["s1.t1.attr"] == "margin 1 < 2"


def test_release_takes_phi_from_annotators_for_a_counterfactual_without_one(labelled, tmp_path):
    from corpus.release import cut_release

    eval_only = {"train": 0.0, "dev": 0.0, "eval": 1.0}
    first = cut_release(labelled, "0.1.0", kind="smoke", out=tmp_path / "r0", progress=False,
                        split_fractions=eval_only)
    assert first.manifest["excluded"]["counterfactuals_lacking_phi_kept_out_of_eval"] == 1
    add_annotations(labelled, [_ann("s1.t1.syn", "a1", "up", "counterfactual"),
                               _ann("s1.t1.syn", "a2", "up", "counterfactual"),
                               _ann("s1.t1.syn", "a3", "wait", "counterfactual")])
    assert phi_from_annotations(labelled) == {
        "s1.t1.syn": {"type": "distribution", "probs": {"up": 2 / 3, "wait": 1 / 3}, "n": 3}}
    # three annotators, deliberately few: below the default minimum of 5, so this release states 3
    with pytest.raises(ReleaseRefused) as refused:
        cut_release(labelled, "0.2.0", kind="smoke", out=tmp_path / "r1", progress=False, split_fractions=eval_only)
    assert [g.name for g in refused.value.failed] == ["min_annotators"] and "s1.t1.syn (n=3)" in \
        refused.value.failed[0].detail and not (tmp_path / "r1").exists()
    r = cut_release(labelled, "0.2.0", kind="smoke", out=tmp_path / "r1", progress=False, split_fractions=eval_only,
                    min_annotators=3)
    assert r.manifest["phi_annotators"]["min_annotators"] == 3
    import pyarrow.parquet as pq

    rows = {row["cf_id"]: row for row in pq.read_table(
        next((tmp_path / "r1" / "data" / "counterfactuals").glob("eval-*.parquet"))).to_pylist()}
    assert rows["s1.t1.syn"]["phi_type"] == "distribution" and rows["s1.t1.syn"]["phi_n"] == 3
    assert {p["action"]: p["p"] for p in rows["s1.t1.syn"]["phi_probs"]} == pytest.approx({"up": 2 / 3, "wait": 1 / 3})
    assert rows["s1.t0.cf0"]["phi_n"] == 8  # a record's own Φ is kept
    assert r.manifest["excluded"]["counterfactuals_lacking_phi_kept_out_of_eval"] == 0
    assert "annotators' action choices" in (tmp_path / "r1" / "README.md").read_text()
    again = cut_release(labelled, "0.3.0", kind="smoke", out=tmp_path / "r2", progress=False,
                        split_fractions=eval_only, min_annotators=3)
    assert again.manifest["release_sha"] == r.manifest["release_sha"]


def test_cli_agreement_and_adjudicate_print_data_on_stdout(labelled, capsys):
    from annotate.cli import main

    add_annotations(labelled, [
        _ann("s1.t1.attr", "a1", "self"), _ann("s1.t1.attr", "a2", "self"), _ann("s1.t1.attr", "a3", "exogenous"),
        _ann("s1.t2.attr", "a1", "exogenous"), _ann("s1.t2.attr", "a2", "exogenous"),
        _ann("s1.t2.attr", "a3", "exogenous")])
    capsys.readouterr()
    assert main(["agreement", "--corpus", str(labelled.dir), "--json", "--bootstrap", "100"]) == 0
    out = json.loads(capsys.readouterr().out)
    # 2 items x 3 coders: u1 = self self exo, u2 = exo exo exo. By hand:
    # u1 (m=3): ordered pairs (s,s) 2, (s,e) 2, (e,s) 2, weight 1/2 -> o_ss = 1, o_se = 1, o_es = 1;
    # u2: 6 (e,e) pairs at 1/2 -> o_ee = 3. n_s = 2, n_e = 4, n = 6: alpha = 1 - 5 * 2 / (2 * 2 * 4) = 3/8.
    assert out["caused_by_self"]["alpha"] == pytest.approx(3 / 8)
    assert out["caused_by_self"]["disagreements"] == [{"target_id": "s1.t1.attr", "votes": {"exogenous": 1, "self": 2}}]
    assert main(["adjudicate", "--corpus", str(labelled.dir), "--margin", "2", "--json"]) == 0
    captured = capsys.readouterr()
    decisions = json.loads(captured.out)["decisions"]
    assert decisions["s1.t2.attr"]["label"] == "exogenous" and decisions["s1.t1.attr"]["review"] == "margin 1 < 2"
    assert "1 item(s) adjudicated" in captured.err and "1 queued for review" in captured.err
    assert main(["agreement", "--corpus", str(labelled.dir / "nope")]) == ExitCode.NOT_FOUND  # the corpus exit code
