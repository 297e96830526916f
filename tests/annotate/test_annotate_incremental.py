"""Incremental ``trb-annotate pull`` against a real Label Studio server (on each back end, see ls_server).

Two copies of one corpus are pulled after each round of annotators' work: one incrementally (only the tasks
changed since the last pull are read), one in full (``full=True``, every task read). Their annotation rows must
be the same, round after round: new annotations, changed ones (a new revision), skips, a deleted annotation and
a deleted task; and a pull with nothing new reads nothing from the server.
"""

import shutil
import time

import pytest

from annotate.client import connect
from annotate.pull import pull
from annotate.push import push
from annotate.tasks import ITEM_KEY, item_key
from corpus import Corpus, ingest, init_corpus
from factories import attribution, session, write_jsonl
from ls_server import signup

pytestmark = pytest.mark.label_studio
#: Also on Label Studio served by two gunicorn worker processes (SQLite), as a team serves it: requests then run
#: side by side, and a pull's exports and listings interleave with the annotators' writes in other processes.
LS_SERVERS = ("sqlite-2-workers",)

EMAILS = ["inc.one@trb.test", "inc.two@trb.test", "inc.three@trb.test"]
ITEMS = [f"s{s}.t{t}.attr" for s in (1, 2) for t in range(1, 5)]
COLUMNS = ("annotation_id, target_id, annotator_id, value_type, label, endorsed, rationale, action, text, created_at, "
           "revision, ls_project_id, ls_task_id, ls_annotation_id")


@pytest.fixture(scope="module")
def annotators(ls_server):
    """e-mail -> a client with that annotator's own token."""
    return {e: connect(ls_server.url, signup(ls_server.url, ls_server.token, e), backoff=0.01) for e in EMAILS}


def _corpus(path):
    c = Corpus(init_corpus(path))
    recs = [session("s1", n_steps=6), session("s2", n_steps=6, subject="subj-2")]
    recs += [attribution(i, i.split(".")[0], int(i.split(".t")[1][0]), "self") for i in ITEMS]
    ingest(c, [write_jsonl(path.parent / f"{path.name}.jsonl", recs)], progress=False)
    return c


def _rows(c):
    with c.open(write=False) as con:
        return con.execute(f"SELECT {COLUMNS} FROM store.annotations WHERE role = 'annotator' "
                           "ORDER BY ls_annotation_id, revision").fetchall()


def _latest(c):
    with c.open(write=False) as con:
        return con.execute("SELECT ls_annotation_id, target_id, annotator_id, label, rationale FROM store.annotations "
                           "WHERE role = 'annotator' QUALIFY row_number() OVER (PARTITION BY ls_annotation_id "
                           "ORDER BY revision DESC) = 1 ORDER BY 1").fetchall()


def _label(value, note=None):
    out = [{"from_name": "caused_by_self", "to_name": "session", "type": "choices", "value": {"choices": [value]}}]
    if note:
        out.append({"from_name": "rationale", "to_name": "session", "type": "textarea", "value": {"text": [note]}})
    return out


def test_incremental_pulls_give_the_rows_of_full_pulls_round_after_round(ls_server, annotators, tmp_path):
    admin = connect(ls_server.url, ls_server.token, backoff=0.01)
    inc, full = _corpus(tmp_path / "inc"), _corpus(tmp_path / "full")
    title = "incremental pull"
    rep = push(inc, admin, "attribution", title=title, overlap=3)
    assert rep.imported == len(ITEMS)
    keys = admin.task_keys(rep.project.id, ITEM_KEY)
    task = {i: keys[item_key("attribution", i)] for i in ITEMS}
    one, two, three = (annotators[e] for e in EMAILS)

    def both(expect_fetched=None):
        # the server's clock (its Date header) has a resolution of a second: what was changed before this pull is
        # then older than the mark the next pull reads from (with no overlap, overlap_seconds=0)
        time.sleep(1.1)
        a = pull(inc, admin, title=title, overlap_seconds=0)
        b = pull(full, admin, title=title, full=True, overlap_seconds=0)
        assert _rows(inc) == _rows(full)
        assert (a.new, a.revised, len(a.deleted)) == (b.new, b.revised, len(b.deleted))
        assert sorted(u.line() for u in a.unusable) == sorted(u.line() for u in b.unusable)  # still listed
        if expect_fetched is not None:
            assert a.fetched == expect_fetched
        return a, b

    first, _ = both()
    assert first.full == [rep.project.id] and first.new == 0  # no ledger yet: read in full, nothing there
    both(expect_fetched=0)  # nothing new: nothing read

    # round 1: the first annotator labels five items
    ids = {(one, i): one.create_annotation(task[i], _label("self")) for i in ITEMS[:4] + ITEMS[6:7]}
    a, _ = both()
    assert (a.new, a.fetched, a.full) == (5, 5, [])
    # round 2: the second labels five, the first changes one (a new revision), the third skips one
    ids |= {(two, i): two.create_annotation(task[i], _label("exogenous", note=f"n {i}")) for i in ITEMS[1:6]}
    one.update_annotation(ids[(one, ITEMS[0])], _label("unsure"))
    three.http.post(f"/api/tasks/{task[ITEMS[7]]}/annotations/", json={"result": [], "was_cancelled": True})
    a, _ = both()
    assert (a.new, a.revised, a.unchanged) == (5, 1, 4) and len(a.unusable) == 1
    assert (a.seen, a.fetched) == (11, 10)  # the task nobody touched was not read again
    # round 3: an annotation deleted, a task (with its annotations) deleted, one more changed, one new
    admin.sdk.annotations.delete(id=ids[(two, ITEMS[1])])
    admin.sdk.tasks.delete(id=task[ITEMS[2]])
    two.update_annotation(ids[(two, ITEMS[3])], _label("self", note="on reflection"))
    three.create_annotation(task[ITEMS[5]], _label("self"))
    a, b = both()
    gone = {ids[(two, ITEMS[1])], ids[(one, ITEMS[2])], ids[(two, ITEMS[2])]}
    assert {d[3] for d in a.deleted} == gone == {d[3] for d in b.deleted}
    assert a.reconciled == [rep.project.id]  # the deleted task is found by checking counts against the server
    assert (a.new, a.revised) == (1, 1)
    assert gone <= {r[13] for r in _rows(inc)}  # deleted on the server: the corpus keeps the rows it pulled
    # and the latest revision of each annotation the server still has is what a fresh full pull finds
    fresh = _corpus(tmp_path / "fresh")
    pull(fresh, admin, title=title)
    assert [r for r in _latest(inc) if r[0] not in gone] == _latest(fresh)

    quiet, _ = both(expect_fetched=0)  # nothing new: nothing read, everything still counted and listed
    assert quiet.seen == len([r for r in _latest(inc) if r[0] not in gone]) + 1 and len(quiet.unusable) == 1


def test_a_lost_or_foreign_ledger_means_a_full_pull_never_a_wrong_one(ls_server, annotators, tmp_path):
    admin = connect(ls_server.url, ls_server.token, backoff=0.01)
    c = _corpus(tmp_path / "c")
    title = "ledger lost"
    rep = push(c, admin, "attribution", title=title)
    tid = admin.task_keys(rep.project.id, ITEM_KEY)[item_key("attribution", ITEMS[0])]
    annotators[EMAILS[0]].create_annotation(tid, _label("self"))
    assert pull(c, admin, title=title, overlap_seconds=0).new == 1
    ledgers = list((c.dir / ".trb-annotate").glob("pull-*.json"))
    assert len(ledgers) == 1
    ledgers[0].write_text("{not json", encoding="utf-8")
    again = pull(c, admin, title=title, overlap_seconds=0)
    assert again.full == [rep.project.id] and (again.new, again.unchanged) == (0, 1)
    ledgers[0].unlink()
    assert pull(c, admin, title=title).full == [rep.project.id]
    # a corpus restored from before a pull (its rows gone, the ledger kept) is pulled in full again
    fresh = _corpus(tmp_path / "restored")
    (fresh.dir / ".trb-annotate").mkdir()
    shutil.copy(ledgers[0], fresh.dir / ".trb-annotate" / ledgers[0].name)
    got = pull(fresh, admin, title=title)
    assert got.full == [rep.project.id] and got.new == 1 and _rows(fresh) == _rows(c)


def test_cli_pull_says_how_it_read_and_full_reads_every_task(ls_server, annotators, tmp_path, capsys, monkeypatch):
    from annotate.cli import main

    admin = connect(ls_server.url, ls_server.token, backoff=0.01)
    c = _corpus(tmp_path / "c")
    rep = push(c, admin, "attribution", title="cli incremental")
    tid = admin.task_keys(rep.project.id, ITEM_KEY)[item_key("attribution", ITEMS[1])]
    annotators[EMAILS[1]].create_annotation(tid, _label("exogenous"))
    monkeypatch.setenv("LABEL_STUDIO_URL", ls_server.url)
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", ls_server.token)

    def run(*args):
        capsys.readouterr()
        code = main(["pull", "--corpus", str(c.dir), "--project", "cli incremental", "-q", *args])
        out, err = capsys.readouterr()
        assert code == 0 and out == ""  # stdout is data: the summary goes to stderr
        return err

    assert "1 annotation(s) seen (1 read from the server, 1 project(s) in full), 1 new" in run()
    assert "1 project(s) in full), 0 new" in run("--full")
    again = run()
    assert "0 new" in again and "in full" not in again
