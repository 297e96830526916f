"""Projects people can use without a briefing, updated only by an explicit step, and pulls that lose nothing
(against a real Label Studio server started by the ``ls_server`` fixture)."""

import json
from pathlib import Path

import httpx
import pytest

from annotate.client import connect
from annotate.pull import NO_ENDORSEMENT, annotator_id, pull
from annotate.push import CHANGE_LOG, ProjectOutdated, push
from annotate.status import status
from annotate.tasks import ITEM_KEY, cf_key, instructions, item_key, label_config
from corpus import Corpus, ingest, init_corpus
from factories import attribution, counterfactual, session, write_jsonl
from ls_server import signup

pytestmark = pytest.mark.label_studio

OLD_CONFIG = (Path(__file__).parent / "data" / "attribution-config-v1.xml").read_text()


@pytest.fixture(scope="module")
def annotator(ls_server):
    return connect(ls_server.url, signup(ls_server.url, ls_server.token, "proj.annotator@trb.test"), backoff=0.01)


@pytest.fixture()
def admin(ls_server):
    return connect(ls_server.url, ls_server.token, backoff=0.01)


@pytest.fixture()
def corpus(tmp_path):
    c = Corpus(init_corpus(tmp_path / "c"))
    recs = [session("s1", n_steps=4), attribution("PA1", "s1", 1, "self"), attribution("PA2", "s1", 2, "exogenous"),
            counterfactual("p.t0.cf", "s1", 0), counterfactual("p.t1.cf", "s1", 1)]  # ids no other test uses
    ingest(c, [write_jsonl(tmp_path / "in.jsonl", recs)], progress=False)
    return c


def _raw(ls_server, method, path, body=None):
    r = httpx.request(method, ls_server.url + path, json=body, timeout=30,
                      headers={"Authorization": f"Token {ls_server.token}"})
    r.raise_for_status()
    return r.json()


def _choice(name, value, to="session"):
    return {"from_name": name, "to_name": to, "type": "choices", "value": {"choices": [value]}}


def _text(name, value, to="session"):
    return {"from_name": name, "to_name": to, "type": "textarea", "value": {"text": [value]}}


def test_a_new_project_has_instructions_refuses_empty_submissions_and_says_its_kind_quietly(ls_server, admin,
                                                                                          corpus):
    rep = push(corpus, admin, "attribution", title="briefed attribution")
    got = _raw(ls_server, "GET", f"/api/projects/{rep.project.id}")
    assert got["show_instruction"] is True and got["enable_empty_annotation"] is False
    assert got["expert_instruction"] == instructions("attribution")
    for needed in ("The agent", "Something outside the agent", "Can't tell", "7f3a", "Label All Tasks",
                   "Compare All", "Endorse"):
        assert needed.lower() in got["expert_instruction"].lower(), needed
    # the card shows a sentence, not a machine marker; the kind lives in a comment of the labelling config
    assert "trb-annotate kind=" not in got["description"] and "Who caused" in got["description"]
    assert got["label_config"].strip() == label_config("attribution").strip()
    assert admin.project_by_id(rep.project.id).kind == "attribution"
    cont = push(corpus, admin, "continuation", title="briefed continuation")
    text = _raw(ls_server, "GET", f"/api/projects/{cont.project.id}")["expert_instruction"]
    assert "predict, do not judge" in text.lower() and "as the agent would say" in text.lower()


def test_an_old_project_is_refused_until_push_update_brings_it_up_to_date_and_logs_it(ls_server, admin, annotator,
                                                                                      corpus):
    # a project as trb-annotate 0.1 made it: the old config, the kind in the description, plain item ids as keys
    old = _raw(ls_server, "POST", "/api/projects", {
        "title": "old attribution", "label_config": OLD_CONFIG, "maximum_annotations": 3,
        "description": "trb-annotate kind=attribution (made by trb-annotate; do not edit)"})
    _raw(ls_server, "POST", f"/api/projects/{old['id']}/import",
         [{"data": {ITEM_KEY: "PA1", "t": 1, "session_text": "Step 1 ...", "outcome": "moved to B3"}}])
    [task_id] = admin.task_keys(old["id"], ITEM_KEY).values()
    annotator.create_annotation(task_id, [_choice("caused_by_self", "self")])

    with pytest.raises(ProjectOutdated) as refused:
        push(corpus, admin, "attribution", title="old attribution")
    assert "--update" in refused.value.message and "label_config" in refused.value.message
    assert admin.project_by_id(old["id"]).task_number == 1  # nothing was pushed

    rep = push(corpus, admin, "attribution", title="old attribution", update=True)
    assert set(rep.updated_fields) >= {"label_config", "expert_instruction", "show_instruction",
                                       "enable_empty_annotation", "description"}
    assert (rep.rerendered, rep.already, rep.imported) == (1, 1, 1)  # PA1 re-rendered in place, PA2 added
    keys = admin.task_keys(old["id"], ITEM_KEY)
    assert sorted(keys) == sorted(item_key("attribution", i) for i in ("PA1", "PA2"))  # no answer-naming key left
    assert keys[item_key("attribution", "PA1")] == task_id  # the same task, annotations kept
    got = _raw(ls_server, "GET", f"/api/projects/{old['id']}")
    assert got["enable_empty_annotation"] is False and got["expert_instruction"] == instructions("attribution")
    [entry] = [json.loads(line) for line in (corpus.dir / CHANGE_LOG).read_text().splitlines()]
    assert entry["project_id"] == old["id"] and entry["tasks_rerendered"] == 1
    assert set(entry["fields"]) == set(rep.updated_fields) and entry["fields"]["label_config"]["old"] != \
        entry["fields"]["label_config"]["new"]
    # up to date now: a plain push works and changes nothing; the annotation made on the old task pulls to PA1
    again = push(corpus, admin, "attribution", title="old attribution")
    assert (again.imported, again.updated_fields, again.rerendered) == (0, [], 0)
    got = pull(corpus, admin, title="old attribution")
    assert got.new == 1
    with corpus.open(write=False) as con:
        assert con.execute("SELECT target_id, label FROM store.annotations").fetchall() == [("PA1", "self")]
    # made under the old config, whose UI did not require question 2: stored, and never silently: pull and status
    # name it by task and annotator
    [missing] = got.incomplete
    assert (missing.task_id, missing.annotator, missing.why) == (task_id, annotator_id("proj.annotator@trb.test"),
                                                                 NO_ENDORSEMENT)
    assert "1 stored incomplete" in got.summary() and any(f"task {task_id}," in line for line in got.lines())
    [st] = [r for r in status(admin) if r.project_id == old["id"]]
    assert [u.task_id for u in st.incomplete] == [task_id]


def test_pull_lists_every_submission_it_cannot_take_keeps_notes_and_records_its_source(ls_server, admin, annotator,
                                                                                       corpus):
    att = push(corpus, admin, "attribution", title="lossless attribution")
    cont = push(corpus, admin, "continuation", title="lossless continuation")
    a_keys, c_keys = admin.task_keys(att.project.id, ITEM_KEY), admin.task_keys(cont.project.id, ITEM_KEY)
    a1, a2 = a_keys[item_key("attribution", "PA1")], a_keys[item_key("attribution", "PA2")]
    c0, c1 = c_keys[cf_key("p.t0.cf")], c_keys[cf_key("p.t1.cf")]
    empty = annotator.create_annotation(a1, [])  # the API takes what the UI refuses
    note_only = annotator.create_annotation(a2, [_text("rationale", "could not decide")])
    beside = annotator.create_annotation(c0, [_choice("action", "up", to="context"),
                                              _text("continuation", "it said it would go up", to="context")])
    text_no_action = annotator.create_annotation(c1, [_text("continuation", "goes up", to="context")])
    skipped = annotator.http.post(f"/api/tasks/{c1}/annotations/", json={"result": [], "was_cancelled": True})
    skipped = skipped.raise_for_status().json()["id"]

    rep_a = pull(corpus, admin, title="lossless attribution")
    rep = pull(corpus, admin, title="lossless continuation")
    assert (rep_a.seen, rep_a.new, rep.seen, rep.new, rep.notes_kept) == (2, 0, 3, 1, 1)
    got = {(u.project_id, u.task_id, u.annotation_id): u.why for u in rep_a.unusable + rep.unusable}
    assert got == {
        (att.project.id, a1, empty): "empty submission (nothing answered)",
        (att.project.id, a2, note_only): "no answer to 'who caused this outcome?' (only other fields filled in)",
        (cont.project.id, c1, text_no_action): "text written on a step with an action list, but no action chosen",
        (cont.project.id, c1, skipped): "skipped by the annotator (Skip)"}
    assert {u.annotator for u in rep_a.unusable + rep.unusable} == {annotator_id("proj.annotator@trb.test")}
    assert sum(rep_a.skipped.values()) == 2 and sum(rep.skipped.values()) == 2
    lines = rep_a.lines() + rep.lines()
    assert len(lines) == 8 and all(f"task {t}," in "".join(lines) for t in (a1, a2, c1))
    assert "2 not taken" in rep_a.summary() and "1 note(s) kept as rationale" in rep.summary()
    # status counts the same submissions the same way
    st = {s.project_id: s for s in status(admin)}
    assert (st[att.project.id].annotations, sum(st[att.project.id].not_taken.values())) == (0, 2)
    assert (st[cont.project.id].annotations, sum(st[cont.project.id].not_taken.values())) == (1, 2)
    assert {(u.task_id, u.annotation_id) for pid in (att.project.id, cont.project.id)
            for u in st[pid].unusable} == {k[1:] for k in got}  # (other tests' projects share the server)
    with corpus.open(write=False) as con:
        row = con.execute("SELECT target_id, action, rationale, src_file, ls_project_id, ls_annotation_id "
                          "FROM store.annotations").fetchall()
    [(target, action, rationale, source, project, ls_id)] = row
    assert (target, action, rationale, project, ls_id) == ("p.t0.cf", "up", "it said it would go up",
                                                           cont.project.id, beside)
    assert source == rep.source[cont.project.id] and source.startswith(f"label-studio {ls_server.url} project "
                                                                        f"{cont.project.id} 'lossless continuation'")
    assert ".jsonl" not in source  # never the temporary file it went through


def test_a_pull_into_a_corpus_over_the_cap_says_how_many_human_counterfactuals_are_still_needed(ls_server, admin,
                                                                                                annotator, tmp_path):
    c = Corpus(init_corpus(tmp_path / "over"))
    recs = [session("cap1", n_steps=4), counterfactual("cap.t0.cf", "cap1", 0)]
    recs += [counterfactual(f"cap.t1.syn{i}", "cap1", 1, origin="synthetic") for i in range(5)]
    ingest(c, [write_jsonl(tmp_path / "over.jsonl", recs)], progress=False)
    cont = push(c, admin, "continuation", title="over-the-cap continuation", where="cf_id = 'cap.t0.cf'")
    task = admin.task_keys(cont.project.id, ITEM_KEY)[cf_key("cap.t0.cf")]
    annotator.create_annotation(task, [_choice("action", "up", to="context")])

    rep = pull(c, admin, title="over-the-cap continuation")
    assert rep.new == 1 and rep.ingest is not None
    # 5 synthetic vs 1 human-origin: over 3:1; the pull says so with the figures a curator acts on
    warning = [line for line in rep.lines() if line.startswith("warning:")]
    assert len(warning) == 1 and "5 synthetic vs 1 human-origin" in warning[0] and \
        "1 more human-origin counterfactual(s) are needed" in warning[0]
    nothing_new = pull(c, admin, title="over-the-cap continuation")  # nothing written: nothing to warn about
    assert nothing_new.ingest is None and not any(line.startswith("warning:") for line in nothing_new.lines())


def test_push_update_rerenders_an_example_task_an_older_toolkit_pushed_and_pushes_no_new_one(ls_server, admin,
                                                                                                tmp_path):
    from corpus.examples import example_path

    c = Corpus(init_corpus(tmp_path / "ex"))
    ingest(c, [example_path("7f3a"), write_jsonl(tmp_path / "in.jsonl", [session("s9"),
                                                                          attribution("s9.t1.attr", "s9", 1)])],
           progress=False)
    # as trb-annotate 0.1 pushed it: an example item as a task, "What came next" with the agent's next self-report
    old = _raw(ls_server, "POST", "/api/projects", {
        "title": "old example attribution", "label_config": OLD_CONFIG, "maximum_annotations": 3,
        "description": "trb-annotate kind=attribution (made by trb-annotate; do not edit)"})
    _raw(ls_server, "POST", f"/api/projects/{old['id']}/import", [{"data": {
        ITEM_KEY: "7f3a-attr-2plus2", "t": 1, "session_text": "Step 1 ...", "outcome": "2+2=2",
        "after_text": "Step 2 of 8\nIts self-report at this step (r_t):\n  Endorses last output: no"}}])
    rep = push(c, admin, "attribution", title="old example attribution", update=True)
    assert (rep.rerendered, rep.imported, rep.examples) == (1, 1, 3)  # re-rendered; s9's item added, no example
    data = {d[ITEM_KEY]: d for _, d in admin.tasks_data(old["id"])}
    assert sorted(data) == sorted([item_key("attribution", "7f3a-attr-2plus2"), item_key("attribution", "s9.t1.attr")])
    after = data[item_key("attribution", "7f3a-attr-2plus2")]["after_text"]
    assert "Step 2 of 8" in after and "Endorses last output" not in after and "self-report at this step" not in after
