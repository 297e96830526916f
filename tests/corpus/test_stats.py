"""stats: counts checked against an independent count of the input."""

from __future__ import annotations

import json
from collections import Counter

from corpus.ingest import ingest
from corpus.stats import corpus_stats
from corpus.store import Corpus
from factories import counterfactual, session, small_corpus, write_jsonl


def test_stats_match_an_independent_count(corpus_dir, tmp_path, cli):
    recs = small_corpus()
    ingest(Corpus(corpus_dir), [write_jsonl(tmp_path / "in.jsonl", recs)], progress=False)
    code, out, err = cli("stats", "--corpus", corpus_dir, "--json")
    assert code == 0 and err == ""
    s = json.loads(out)  # stdout is data
    kinds = Counter(r["kind"] for r in recs)
    assert s["records"] == {k: kinds.get(k, 0) for k in s["records"]}
    assert s["steps"]["total"] == sum(len(r["steps"]) for r in recs if r["kind"] == "session")
    origins = Counter(r["origin"] for r in recs if r["kind"] == "counterfactual")
    assert s["counterfactuals_by_origin"] == dict(origins)
    assert s["synthetic_to_human"] == origins["synthetic"] / (origins["same_session_revision"] + origins["paired_session"])
    assert s["synthetic_share"] == 1 / 3 and s["within_synthetic_cap"] is True
    # s1.t1.attr has two annotator labels, s2.t3.attr none
    assert s["attribution_label_status"] == {"annotated": 1, "design_label_only": 1}
    assert s["sessions_by_source_kind"] == {"human_session": 2}


def test_ratio_over_the_cap_is_flagged(corpus_dir, tmp_path, cli):
    recs = [session()] + [counterfactual(f"c{i}", origin="synthetic", probs={"up": 1.0}) for i in range(4)]
    recs.append(counterfactual("h1"))
    ingest(Corpus(corpus_dir), [write_jsonl(tmp_path / "in.jsonl", recs)], progress=False)
    s = corpus_stats(Corpus(corpus_dir))
    assert s["synthetic_to_human"] == 4.0 and s["within_synthetic_cap"] is False
    code, out, _ = cli("stats", "--corpus", corpus_dir)
    assert code == 0 and "4.00:1 (4 synthetic / 1 human), OVER the 3:1 cap" in out


def test_stats_on_a_missing_corpus_is_a_clear_error(tmp_path, cli):
    code, out, err = cli("stats", "--corpus", tmp_path / "nope")
    assert code == 5 and out == "" and "no corpus at" in err and "trb-corpus init" in err


def test_steps_with_r_t_count_only_what_was_reported(corpus_dir, tmp_path, cli):
    """An r_t recorded empty (an imported benchmark item's ``{}``, every slot null, blank text) is not an r_t."""
    s = session("s1", n_steps=5)
    s["steps"][1]["r"] = {}
    s["steps"][2]["r"] = {"goal": None, "planned_next": None, "caused_by_self": None, "confidence": None}
    s["steps"][3]["r"] = {"goal": "  ", "planned_next": ""}
    s["steps"][4]["r"] = None  # not recorded
    ingest(Corpus(corpus_dir), [write_jsonl(tmp_path / "in.jsonl", [s])], progress=False)
    assert corpus_stats(Corpus(corpus_dir))["steps"] == {"total": 5, "with_r": 1, "with_empty_r": 3}
    code, out, _ = cli("stats", "--corpus", corpus_dir)
    assert code == 0
    assert [ln.split() for ln in out.splitlines() if "(steps with r_t" in ln] == [
        ["(steps", "with", "r_t", "reported)", "1"], ["(steps", "with", "r_t", "recorded", "empty)", "3"]]
