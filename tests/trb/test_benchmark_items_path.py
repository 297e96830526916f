"""From benchmark items to G, as docs/guides/labs.md "From benchmark items to a scored run" shows it: suggestions
written for annotators, the continuation project on a real Label Studio server, two annotators' answers pulled as
Φ, a release that holds them in eval, and Track 1's G on them through ``trb run``.

The corpus also holds a lab's own human sessions with human-origin counterfactuals, as a real one would: the 3:1
synthetic:human cap is checked where the suggestions are ingested, and holds.
"""

from __future__ import annotations

import json

import duckdb
import pytest

from annotate.client import connect
from annotate.pull import pull
from annotate.push import push
from annotate.tasks import ITEM_KEY, cf_key
from corpus import Corpus, ingest, init_corpus
from factories import counterfactual, session, write_jsonl
from ls_server import signup
from pipeline.controls.turpin import load_items

pytestmark = [pytest.mark.label_studio, pytest.mark.timeout(600)]

N_ITEMS = 6


def _choice(value: str) -> list[dict]:
    return [{"from_name": "action", "to_name": "context", "type": "choices", "value": {"choices": [value]}}]


def test_benchmark_items_reach_g_through_the_continuation_project(ls_server, tmp_path, capsys):
    from engine_helpers import save_tiny_gpt2

    from corpus.cli import main as corpus_main
    from trb.cli import main as trb_main

    # the lab's corpus: its own sessions, each with a human-origin counterfactual (Φ from 8 annotators)
    c = Corpus(init_corpus(tmp_path / "corpus"))
    own = [session(f"lab{i}", subject=f"lab-subject-{i}") for i in range(2)]
    own += [counterfactual(f"lab{i}.t0.cf", f"lab{i}", 0) for i in range(2)]
    ingest(c, [write_jsonl(tmp_path / "lab.jsonl", own)], progress=False)

    # 1. the items, with one Turpin-style suggestion each, written for annotators (-o: no corpus, no cap)
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(i) + "\n" for i in load_items(N_ITEMS)), encoding="utf-8")
    suggestions = tmp_path / "suggestions.jsonl"
    assert corpus_main(["import", "mcq", str(items), "--dataset", "lab-quiz", "--revision", "1", "--licence",
                        "CC-BY-4.0", "--citation", "The lab's quiz", "--suggested-answers", "1",
                        "-o", str(suggestions)]) == 0
    # 2. ingested where the cap is checked: 6 synthetic vs 2 human-origin, within 3:1
    assert corpus_main(["ingest", "--corpus", str(c.dir), str(suggestions), "-q"]) == 0
    assert "warning" not in capsys.readouterr().err
    cfs = [json.loads(line) for line in suggestions.read_text().splitlines()]
    cfs = {r["cf_id"]: r for r in cfs if r["kind"] == "counterfactual"}
    sessions = {r["session_id"]: r for r in map(json.loads, suggestions.read_text().splitlines())
                if r["kind"] == "session"}
    assert len(cfs) == N_ITEMS

    # 3. the continuation project: the suggestions' Φ asked of annotators
    admin = connect(ls_server.url, ls_server.token, backoff=0.01)
    cont = push(c, admin, "continuation", title="lab quiz suggestions", where="origin = 'synthetic'")
    tasks = admin.task_keys(cont.project.id, ITEM_KEY)
    assert set(tasks) == {cf_key(cf) for cf in cfs}
    # 4. two annotators answer every task: one expects the suggested option, one the item's answer
    for name, pick in (("quiz.one@trb.test", "suggested"), ("quiz.two@trb.test", "answer")):
        annotator = connect(ls_server.url, signup(ls_server.url, ls_server.token, name), backoff=0.01)
        for cf_id, cf in cfs.items():
            label = (cf["r_prime"]["planned_next"] if pick == "suggested"
                     else sessions[cf["session_id"]]["steps"][0]["action"])
            annotator.create_annotation(tasks[cf_key(cf_id)], _choice(label))
    # 5. pulled: Φ(r') of each suggestion from the two annotators
    rep = pull(c, admin, title="lab quiz suggestions")
    assert rep.new == 2 * N_ITEMS

    # 6. a release holding them in eval (two annotators behind each Φ: --min-annotators 2, recorded)
    capsys.readouterr()
    assert corpus_main(["release", "--corpus", str(c.dir), "--version", "0.1.0", "--kind", "smoke",
                        "--split-fractions", "eval=1", "--min-annotators", "2", "-q"]) == 0
    release = c.dir / "releases" / "0.1.0"
    m = json.loads((release / "manifest.json").read_text())
    assert m["counts"]["counterfactuals"] == {"eval": N_ITEMS + 2}
    assert m["excluded"]["counterfactuals_lacking_phi_kept_out_of_eval"] == 0

    # 7. Track 1 through trb run: G on the suggestions, nothing pending
    model = save_tiny_gpt2(tmp_path / "model", [s["steps"][0]["observation"] for s in sessions.values()],
                           vocab_size=400, n_embd=32, n_layer=1, n_head=2, n_positions=1024)
    db = tmp_path / "results.duckdb"
    assert trb_main(["run", "--release", str(release), "--adapter", "proxy", "--model", str(model), "--baseline",
                     "lab-model", "--tracks", "1", "--results", str(db), "-q"]) == 0
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT item_id, metric, score, phi_n FROM item_scores WHERE track = '1'").fetchall()
    (timings,) = con.execute("SELECT timings FROM runs").fetchone()
    con.close()
    by_item = {r[0]: r for r in rows}
    for cf_id in cfs:
        _, metric, score, phi_n = by_item[cf_id]
        assert metric == "tv" and phi_n == 2 and 0.0 <= score <= 1.0  # G's items, Φ from the two annotators
    summary = json.loads(timings)["summary"]["1"]
    assert summary["scored"] == N_ITEMS + 2 and "phi_pending" not in summary
