"""Twenty annotators at once, each a real Label Studio user with its own token, while pull runs again and again
(tests/load_annotators.py; on each back end): afterwards nothing is lost and nothing is duplicated."""

import pytest

from annotate.client import connect
from annotate.push import push
from annotate.tasks import ITEM_KEY
from corpus import Corpus, ingest, init_corpus
from factories import attribution, session, write_jsonl
from load_annotators import check, run_load

pytestmark = pytest.mark.label_studio
#: Also on Label Studio served by two gunicorn worker processes (SQLite), as a team serves it: requests then run
#: side by side, and a pull's exports and listings interleave with the annotators' writes in other processes.
LS_SERVERS = ("sqlite-2-workers",)


def test_twenty_annotators_while_pull_runs_lose_nothing_and_duplicate_nothing(ls_server, tmp_path):
    c = Corpus(init_corpus(tmp_path / "c"))
    recs = [session(f"s{s}", n_steps=6, subject=f"subj-{s}") for s in range(4)]
    recs += [attribution(f"s{s}.t{t}.attr", f"s{s}", t, "self") for s in range(4) for t in range(1, 6)]
    ingest(c, [write_jsonl(tmp_path / "in.jsonl", recs)], progress=False)
    admin = connect(ls_server.url, ls_server.token, backoff=0.01)
    rep = push(c, admin, "attribution", title="load test", overlap=20)
    tasks = sorted(admin.task_keys(rep.project.id, ITEM_KEY).values())
    result = run_load(ls_server.url, ls_server.token, c, "load test", tasks, annotators=20, per_annotator=4,
                      change_every=2, prefix=f"load-{ls_server.backend}")
    assert result.failed == [] and result.pull_errors == []
    assert len(result.created) == 80 and result.changed == 40
    assert len(result.pulls) >= 1  # pulls ran while the annotators worked
    assert check(c, admin, rep.project.id, result) == []
