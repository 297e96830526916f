"""synth keeps within the cap and is idempotent; publish fails cleanly offline."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from corpus.errors import ExitCode, PublishFailed
from corpus.ingest import ingest
from corpus.publish import publish_release
from corpus.release import cut_release
from corpus.stats import corpus_stats
from corpus.store import Corpus, init_corpus
from corpus.synth import GENERATOR_NAME, synthesize
from factories import counterfactual, session, small_corpus, write_jsonl


def _corpus(tmp_path, recs):
    c = Corpus(init_corpus(tmp_path / "c"))
    ingest(c, [write_jsonl(tmp_path / "in.jsonl", recs)], progress=False)
    return c


def test_synth_fills_exactly_up_to_the_cap_and_is_idempotent(tmp_path, cli):
    # s1: 3 steps with r, 1 human cf -> room for 3 synthetic; s2: 1 human + 2 synthetic -> room for 1
    recs = [session("s1"), session("s2", subject="u2"), counterfactual("h1", "s1", 0), counterfactual("h2", "s2", 0),
            counterfactual("y1", "s2", 1, origin="synthetic", probs={"up": 1.0}),
            counterfactual("y2", "s2", 2, origin="synthetic", probs={"up": 1.0})]
    c = _corpus(tmp_path, recs)
    code, _, err = cli("synth", "--corpus", c.dir, "--seed", "4", "--per-step", "2", "--adversarial", "--ood", "-q")
    assert code == 0 and "room for 4" in err and "12 asked for; 4 added" in err
    s = corpus_stats(c)
    assert s["counterfactuals_by_origin"]["synthetic"] == 2 + 4
    assert s["synthetic_to_human"] == 3.0 and s["within_synthetic_cap"]
    assert s["counterfactual_phi"]["lacking_phi"] == 4
    assert s["counterfactual_flags"]["adversarial"] >= 1 and s["counterfactual_flags"]["ood"] >= 1
    again = synthesize(c, seed=4, per_step=2, adversarial=True, ood=True, progress=False)
    assert again.capacity == 0 and again.added == 0


def test_synthetic_records_name_their_generator_and_perturb_a_slot(tmp_path):
    c = _corpus(tmp_path, [session("s1", n_steps=4), counterfactual("h1", "s1", 0), counterfactual("h2", "s1", 1)])
    synthesize(c, seed=9, per_step=1, progress=False)
    import duckdb

    con = duckdb.connect(str(c.db_path), read_only=True)
    rows = con.execute("SELECT c.generator_name, c.generator_seed, c.phi_type, c.rp_goal, c.rp_planned_next, "
                       "c.rp_confidence, s.r_goal, s.r_planned_next, s.r_confidence FROM counterfactuals c "
                       "JOIN steps s USING (session_id, t) WHERE origin = 'synthetic'").fetchall()
    con.close()
    assert len(rows) == 4  # 4 steps, room for 6
    for name, seed, phi, *rp_r in rows:
        assert (name, seed, phi) == (GENERATOR_NAME, 9, None)
        assert rp_r[:3] != rp_r[3:], "r' must differ from r_t"


def test_a_release_after_synth_keeps_phi_less_values_out_of_eval(tmp_path):
    recs = []
    for i in range(30):
        recs += [session(f"s{i}", subject=f"u{i}"), counterfactual(f"h{i}", f"s{i}", 0)]
    c = _corpus(tmp_path, recs)
    synthesize(c, seed=1, progress=False)
    m = cut_release(c, "0.1.0", kind="smoke", progress=False).manifest
    assert m["excluded"]["counterfactuals_lacking_phi_kept_out_of_eval"] > 0
    assert all(v["within_cap"] for v in m["synthetic"].values())


def test_publish_offline_fails_cleanly(tmp_path, cli, monkeypatch):
    c = _corpus(tmp_path, small_corpus())
    d = cut_release(c, "0.1.0", kind="smoke", progress=False).directory
    before = sorted(p.name for p in d.rglob("*"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, out, err = cli("publish", d, "--repo", "trace-ai/trb-smoke")
    assert code == ExitCode.PUBLISH_FAILED and out == "" and "offline" in err and "nothing was uploaded" in err
    with pytest.raises(PublishFailed):
        publish_release(d, "trace-ai/trb-smoke")
    # with the offline flag off, an unreachable hub is the same clean failure (a fresh process: the
    # hub library reads its settings at import)
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    env.update(HF_ENDPOINT="http://127.0.0.1:9", HF_TOKEN="hf_dummy_token_for_tests")
    p = subprocess.run([sys.executable, "-m", "corpus.cli", "publish", str(d), "--repo", "trace-ai/trb-smoke"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == ExitCode.PUBLISH_FAILED, p.stderr
    assert "cannot publish" in p.stderr and "hub.json was not written" in p.stderr and "Traceback" not in p.stderr
    assert "hf_dummy_token_for_tests" not in p.stderr
    assert sorted(x.name for x in d.rglob("*")) == before and not (d / "hub.json").exists()
    assert cli("verify", d)[0] == 0
