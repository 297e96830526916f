"""trb-annotate against a real Label Studio server (started by the ``ls_server`` fixture).

Annotators are real users of that server, signed up through its invite link; each annotates
with their own token, so Label Studio records them as ``completed_by``.
"""

import pytest

from annotate.adjudicate import adjudicate
from annotate.agreement import agreement, krippendorff_alpha
from annotate.cli import main
from annotate.client import connect
from annotate.errors import (
    AnnotateExit,
    ConfigRejected,
    LabelStudioAuthFailed,
    LabelStudioUnreachable,
    ProjectNotFound,
)
from annotate.pull import annotator_id, pull
from annotate.push import push
from annotate.status import status
from annotate.tasks import ITEM_KEY, cf_key, item_key
from corpus import Corpus, ingest, init_corpus
from corpus.errors import ReleaseRefused
from corpus.labels import add_annotations, make_annotation, review_queue
from factories import attribution, counterfactual, session, write_jsonl
from ls_server import free_port, signup

pytestmark = pytest.mark.label_studio

EMAILS = ["ann.one@trb.test", "ann.two@trb.test", "ann.three@trb.test"]
EVAL_ONLY = {"train": 0.0, "dev": 0.0, "eval": 1.0}


@pytest.fixture(scope="module")
def tokens(ls_server):
    """Three annotators: e-mail -> their own API token."""
    return {e: signup(ls_server.url, ls_server.token, e) for e in EMAILS}


@pytest.fixture()
def admin(ls_server):
    return connect(ls_server.url, ls_server.token, backoff=0.01)


@pytest.fixture()
def corpus(tmp_path):
    c = Corpus(init_corpus(tmp_path / "c"))
    no_phi = counterfactual("s2.t0.rev", "s2", 0)
    del no_phi["phi"]
    recs = [session("s1"), session("s2", subject="subj-2"),
            attribution("A1", "s1", 1, "self"), attribution("A2", "s1", 2, "exogenous"),
            attribution("A3", "s2", 1, "self"), attribution("A4", "s2", 2, "self"),
            counterfactual("s1.t0.cf0", "s1", 0), no_phi]
    ingest(c, [write_jsonl(tmp_path / "in.jsonl", recs)], progress=False)
    return c


def _choice(name, value, to="session"):
    return {"from_name": name, "to_name": to, "type": "choices", "value": {"choices": [value]}}


def _cli(capsys, monkeypatch, url, key, *args):
    monkeypatch.setenv("LABEL_STUDIO_URL", url)
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", key)
    monkeypatch.setenv("TRB_LS_RETRIES", "1")
    capsys.readouterr()
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_push_annotate_pull_agree_adjudicate_release(ls_server, tokens, admin, corpus, tmp_path):
    from corpus.release import cut_release

    rep = push(corpus, admin, "attribution", title="e2e caused_by_self")
    assert (rep.created_project, rep.imported, rep.project.overlap) == (True, 4, 3)
    cont = push(corpus, admin, "continuation", title="e2e continuation", where="phi_type IS NULL")
    assert cont.imported == 1
    # re-push: nothing twice
    again = push(corpus, admin, "attribution", title="e2e caused_by_self")
    assert (again.created_project, again.already, again.imported) == (False, 4, 0)
    keys = admin.task_keys(rep.project.id, ITEM_KEY)
    assert sorted(keys) == sorted(item_key("attribution", i) for i in ("A1", "A2", "A3", "A4"))  # opaque keys
    tasks = {i: keys[item_key("attribution", i)] for i in ("A1", "A2", "A3", "A4")}
    assert list(admin.task_keys(cont.project.id, ITEM_KEY)) == [cf_key("s2.t0.rev")]

    # A1: self x3; A2: exogenous, exogenous, self; A3: a three-way tie; A4: unsure x3
    votes = {"A1": ["self", "self", "self"], "A2": ["exogenous", "exogenous", "self"],
             "A3": ["self", "exogenous", "unsure"], "A4": ["unsure", "unsure", "unsure"]}
    ids = {}
    for i, email in enumerate(EMAILS):
        me = connect(ls_server.url, tokens[email], backoff=0.01)
        for item, labels in votes.items():
            result = [_choice("caused_by_self", labels[i])]
            if item == "A1":
                result.append(_choice("endorsed", "not endorsed" if i else "endorsed"))
            ids[(email, item)] = me.create_annotation(tasks[item], result)
        me.create_annotation(admin.task_keys(cont.project.id, ITEM_KEY)[cf_key("s2.t0.rev")],
                             [_choice("action", ["up", "up", "wait"][i], to="context")])

    st = {s.title: s for s in status(admin) if s.title.startswith("e2e")}
    assert (st["e2e caused_by_self"].tasks, st["e2e caused_by_self"].annotations) == (4, 12)
    assert st["e2e caused_by_self"].not_taken == {} and st["e2e caused_by_self"].unusable == []
    assert st["e2e caused_by_self"].completion == 1.0
    assert st["e2e caused_by_self"].annotators == sorted(annotator_id(e) for e in EMAILS)

    got = pull(corpus, admin, title="e2e caused_by_self")
    assert (got.seen, got.new, got.unchanged) == (12, 12, 0)
    assert pull(corpus, admin, title="e2e continuation").new == 3
    again = pull(corpus, admin)  # every project made by push: nothing new
    assert again.new == 0 and again.revised == 0 and again.unchanged >= 15
    with corpus.open(write=False) as con:
        rows = con.execute("SELECT annotator_id, label, endorsed, ls_project_id, ls_task_id, ls_annotation_id, "
                           "annotation_id, revision FROM store.annotations "
                           "WHERE target_id = 'A1' AND role = 'annotator' ORDER BY annotator_id").fetchall()
    by_who = {r[0]: r for r in rows}
    first = by_who[annotator_id(EMAILS[0])]  # completed_by is the user who annotated
    assert first[1:6] == ("self", True, rep.project.id, tasks["A1"], ids[(EMAILS[0], "A1")])
    assert first[6] == f"ls-{rep.project.id}-{ids[(EMAILS[0], 'A1')]}-r1"

    # an annotation changed in Label Studio becomes revision 2; revision 1 stays
    connect(ls_server.url, tokens[EMAILS[2]]).update_annotation(ids[(EMAILS[2], "A1")],
                                                                [_choice("caused_by_self", "exogenous")])
    changed = pull(corpus, admin, title="e2e caused_by_self")
    assert (changed.new, changed.revised) == (0, 1)
    with corpus.open(write=False) as con:
        revs = con.execute("SELECT revision, label FROM store.annotations WHERE ls_annotation_id = ? ORDER BY 1",
                           [ids[(EMAILS[2], "A1")]]).fetchall()
    assert revs == [(1, "self"), (2, "exogenous")]

    agree = agreement(corpus, reps=200)
    cbs = agree["caused_by_self"]
    who = [annotator_id(e) for e in EMAILS]
    expected = {"A1": ["self", "self", "exogenous"], **{k: v for k, v in votes.items() if k != "A1"}}
    assert cbs.alpha == pytest.approx(krippendorff_alpha({k: dict(zip(who, v)) for k, v in expected.items()}))
    assert sorted(d["target_id"] for d in cbs.disagreements) == ["A1", "A2", "A3"]
    assert len(cbs.kappa) == 3 and cbs.alpha_ci is not None
    assert agree["continuation"].disagreements == [{"target_id": "s2.t0.rev", "votes": {"up": 2, "wait": 1}}]
    # independence from the timestamps: the first annotator labelled every item before the others; the second
    # and third labelled each after another's label existed (the third's A1 revision too)
    assert [(i.annotator, i.labels, i.after_another) for i in cbs.independence] == sorted(
        [(who[0], 4, 0), (who[1], 4, 4), (who[2], 4, 4)])

    adj = adjudicate(corpus, margin=1)
    assert {t: d.label for t, d in adj.decisions.items()} == {"A1": "self", "A2": "exogenous", "A3": None,
                                                                "A4": "unsure"}
    assert [(q.target_id, q.reason) for q in review_queue(corpus)] == [("A3", "tie")]
    assert adjudicate(corpus, margin=1).adjudicated == 0  # nothing twice

    # The completeness gate sees the adjudicated labels: A4 was adjudicated "unsure", so it has no label
    with pytest.raises(ReleaseRefused) as refused:
        cut_release(corpus, "0.1.0", kind="smoke", out=tmp_path / "r0", progress=False, split_fractions=EVAL_ONLY,
                    min_annotators=3)
    [gate] = refused.value.failed
    assert gate.name == "completeness" and "A4" in gate.detail
    # a reviewer decides A4 (and A3, off the queue); the release then passes with adjudicated labels and Φ
    add_annotations(corpus, [make_annotation(target_kind="attribution", target_id=t, annotator_id="curator-1",
                                             role="reviewer", method="review", value={"type": "attribution",
                                                                                       "label": "self"})
                             for t in ("A3", "A4")])
    assert review_queue(corpus) == []
    # Φ of s2.t0.rev comes from the three annotators of this test: deliberately below the default minimum of 5
    r = cut_release(corpus, "0.1.0", kind="smoke", out=tmp_path / "r1", progress=False, split_fractions=EVAL_ONLY,
                    min_annotators=3)
    assert r.manifest["label_source"] == "adjudicated"
    import pyarrow.parquet as pq

    att = {row["item_id"]: row for row in pq.read_table(tmp_path / "r1" / "data" / "attribution").to_pylist()}
    assert {k: (v["label"], v["label_source"]) for k, v in att.items()} == {
        "A1": ("self", "adjudicated"), "A2": ("exogenous", "adjudicated"), "A3": ("self", "adjudicated"),
        "A4": ("self", "adjudicated")}
    cfs = {row["cf_id"]: row for row in pq.read_table(tmp_path / "r1" / "data" / "counterfactuals").to_pylist()}
    assert cfs["s2.t0.rev"]["phi_n"] == 3
    assert {p["action"]: p["p"] for p in cfs["s2.t0.rev"]["phi_probs"]} == pytest.approx({"up": 2 / 3, "wait": 1 / 3})


def test_an_interrupted_push_completes_on_rerun_without_duplicates(ls_server, admin, tmp_path):
    c = Corpus(init_corpus(tmp_path / "c"))
    recs = [session("s1", n_steps=8)] + [attribution(f"s1.t{t}.attr", "s1", t) for t in range(7)]
    ingest(c, [write_jsonl(tmp_path / "in.jsonl", recs)], progress=False)

    def cut(n):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        push(c, admin, "attribution", title="interrupted push", batch_size=3, on_batch=cut)
    p = admin.project("interrupted push")
    assert len(admin.task_keys(p.id, ITEM_KEY)) == 3
    rep = push(c, admin, "attribution", title="interrupted push", batch_size=3)
    assert (rep.already, rep.imported) == (3, 4)
    assert admin.project_by_id(p.id).task_number == 7
    keys = admin.task_keys(p.id, ITEM_KEY)
    every = sorted(item_key("attribution", f"s1.t{t}.attr") for t in range(7))
    assert sorted(keys) == every
    # push's ledger of what it imported is checked against the server: a task deleted there is pushed again
    admin.sdk.tasks.delete(id=keys[item_key("attribution", "s1.t4.attr")])
    rep = push(c, admin, "attribution", title="interrupted push", batch_size=3)
    assert (rep.already, rep.imported) == (6, 1)
    assert sorted(admin.task_keys(p.id, ITEM_KEY)) == every
    assert push(c, admin, "attribution", title="interrupted push").imported == 0


def test_cli_push_status_and_pull(ls_server, corpus, capsys, monkeypatch):
    code, out, err = _cli(capsys, monkeypatch, ls_server.url, ls_server.token, "push", "--kind", "attribution",
                          "--corpus", corpus.dir, "--project", "cli project", "--overlap", "2", "-q")
    assert code == 0 and "4 imported" in err and out == ""
    code, out, err = _cli(capsys, monkeypatch, ls_server.url, ls_server.token, "status", "--project", "cli project")
    assert code == 0 and "4 task(s), 0 label(s)" in out and "overlap 2" in out and "pulled" not in out
    admin = connect(ls_server.url, ls_server.token, backoff=0.01)
    [project] = [p for p in admin.projects() if p.title == "cli project"]
    task = admin.task_keys(project.id, ITEM_KEY)[item_key("attribution", "A1")]
    admin.create_annotation(task, [_choice("caused_by_self", "self"), _choice("endorsed", "endorsed")])
    # status takes --corpus like the other subcommands, and says what the corpus holds of each project
    code, out, err = _cli(capsys, monkeypatch, ls_server.url, ls_server.token, "status", "--project", "cli project",
                          "--corpus", corpus.dir)
    assert code == 0 and "4 task(s), 1 label(s)" in out and "; 0 pulled into the corpus" in out
    code, out, err = _cli(capsys, monkeypatch, ls_server.url, ls_server.token, "pull", "--corpus", corpus.dir,
                          "--project", "cli project", "-q")
    assert code == 0 and "1 new" in err
    code, out, err = _cli(capsys, monkeypatch, ls_server.url, ls_server.token, "status", "--project", "cli project",
                          "--corpus", corpus.dir)
    assert code == 0 and "; 1 pulled into the corpus" in out


def test_errors_are_one_line_with_an_exit_code_and_never_show_the_key(ls_server, admin, corpus, capsys,
                                                                      monkeypatch):
    bad = "wrong-key-0123456789abcdef"
    with pytest.raises(LabelStudioAuthFailed):
        push(corpus, connect(ls_server.url, bad), "attribution", title="never made")
    code, out, err = _cli(capsys, monkeypatch, ls_server.url, bad, "push", "--kind", "attribution",
                          "--corpus", corpus.dir, "-q")
    assert code == AnnotateExit.AUTH and len(err.strip().splitlines()) == 1 and "refused the API key" in err
    assert bad not in err + out

    down = f"http://127.0.0.1:{free_port()}"
    slept = []
    with pytest.raises(LabelStudioUnreachable):
        connect(down, ls_server.token, retries=3, backoff=0.01, sleep=slept.append).check()
    assert slept == [0.01, 0.02, 0.04]  # transient failures are retried with backoff
    code, out, err = _cli(capsys, monkeypatch, down, ls_server.token, "status")
    assert code == AnnotateExit.UNREACHABLE and "cannot reach Label Studio" in err
    assert len(err.strip().splitlines()) == 1 and ls_server.token not in err

    with pytest.raises(ProjectNotFound):
        pull(corpus, admin, title="no such project")
    code, out, err = _cli(capsys, monkeypatch, ls_server.url, ls_server.token, "pull", "--corpus", corpus.dir,
                          "--project", "no such project")
    assert code == AnnotateExit.PROJECT_NOT_FOUND and "no such project" in err

    with pytest.raises(ConfigRejected) as rejected:
        admin.create_project("bad config", "attribution",
                             {"label_config": "<View><Choices name='x' toName='nowhere'/></View>"}, 3)
    assert "labeling config" in rejected.value.message and admin.find_project("bad config") is None
    code, out, err = _cli(capsys, monkeypatch, ls_server.url, ls_server.token, "push", "--kind", "continuation",
                          "--corpus", corpus.dir, "--where", "no_such_column = 1")
    assert code == 2 and "--where" in err
