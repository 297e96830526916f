"""The 7f3a example: valid, ingestible, honest about being illustrative, and it holds the spec's two instances."""

from __future__ import annotations

import json

from corpus.ingest import ingest
from corpus.stats import corpus_stats
from corpus.store import Corpus
from tests_paths import EXAMPLE_7F3A, ROOT


def _records():
    return [json.loads(line) for line in EXAMPLE_7F3A.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_7f3a_ingests_and_is_marked_illustrative(corpus_dir):
    report = ingest(Corpus(corpus_dir), [EXAMPLE_7F3A], progress=False)
    recs = _records()
    assert sum(report.new.values()) == len(recs)
    s = corpus_stats(Corpus(corpus_dir))
    assert set(s["sessions_by_source_kind"]) == {"illustrative"}
    assert {"same_session_revision", "paired_session", "synthetic"} <= set(s["counterfactuals_by_origin"])
    assert s["within_synthetic_cap"]
    assert "illustrative" in (ROOT / "examples" / "README.md").read_text().lower()


def test_7f3a_holds_the_two_instances_the_spec_names():
    recs = _records()
    session = next(r for r in recs if r["kind"] == "session" and r["session_id"] == "7f3a")
    text = json.dumps(session)
    assert "2+2=2" in text and "2+2=4" in text
    assert "3:44" in text and "3:46" in text
    items = [r for r in recs if r["kind"] == "attribution" and r["session_id"] == "7f3a"]
    labels = {r["design_label"] for r in items}
    assert labels == {"self", "exogenous"}, "Track 3 needs both classes"
    assert any(r.get("endorsed") is False for r in items), "the demonstration-vs-endorsement item"
    phis = {r["phi"]["type"] for r in recs if r["kind"] == "counterfactual" and r.get("phi")}
    assert phis == {"distribution", "text"}
