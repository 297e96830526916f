"""trb run / query / report on a real simulated release, through the docs' own example adapter."""

from __future__ import annotations

import json
import re

import duckdb
import pytest

from tests_paths import ROOT
from toolkit.errors import ExitCode


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    from corpus import Corpus, ingest, init_corpus
    from corpus.release import cut_release
    from corpus.simulate import write_simulation

    tmp = tmp_path_factory.mktemp("rel")
    write_simulation(tmp / "sim.jsonl", n_sessions=120, seed=4, progress=False)
    c = Corpus(init_corpus(tmp / "corpus"))
    ingest(c, [tmp / "sim.jsonl"], progress=False)
    return cut_release(c, "0.1.0", kind="smoke", progress=False).directory


def _readme_adapter():
    """The documentation's example adapter (docs/examples/adapter/, docs/extending/adapter.md), imported from its
    file; its run script (which tests/test_docs.py runs) ends by running the tracks."""
    import importlib.util

    example = ROOT / "docs" / "examples" / "adapter"
    assert re.search(r"^    run = run_tracks\(", (example / "run_my_adapter.py").read_text(encoding="utf-8"), re.M)
    spec = importlib.util.spec_from_file_location("my_lab_adapter", example / "my_lab_adapter" / "__init__.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.MyAdapter


def test_the_readme_adapter_runs_and_its_scores_are_right(release, tmp_path):
    from trb.run import RunSpec, run_tracks

    adapter = _readme_adapter()("ckpt/")
    results = tmp_path / "results.duckdb"
    run = run_tracks(RunSpec(release, baseline="my-model", results=results), adapter, progress=False)
    assert run["smoke_test"] is True and run["adapter_tier"] == "proxy" and len(run["release_sha"]) == 64
    con = duckdb.connect()
    n_cf = con.execute(f"SELECT count(*) FROM read_parquet('{release}/data/counterfactuals/eval-*.parquet') "
                       "WHERE phi_type = 'distribution'").fetchone()[0]
    n_attr = con.execute(f"SELECT count(*) FROM read_parquet('{release}/data/attribution/eval-*.parquet') "
                         "WHERE label IN ('self', 'exogenous')").fetchone()[0]
    assert run["summary"]["1"]["scored"] == n_cf > 0 and run["summary"]["3"]["scored"] == n_attr > 0
    # Track 1 by hand for every item: the adapter puts weight 3 on r'.planned_next, 1 elsewhere (5 actions)
    rows = con.execute(f"SELECT cf_id, rp_planned_next, phi_probs FROM read_parquet('{release}/data/counterfactuals/"
                       "eval-*.parquet') WHERE phi_type = 'distribution'").fetchall()
    expected = {}
    for cf_id, plan, probs in rows:
        phi = {d["action"]: d["p"] for d in probs}
        p = {a: (3 / 7 if a == plan else 1 / 7) for a in ("up", "down", "left", "right", "wait")}
        expected[cf_id] = 1 - 0.5 * sum(abs(p[a] - phi.get(a, 0.0)) for a in p)
    got = dict(duckdb.connect(str(results), read_only=True).execute(
        "SELECT item_id, score FROM item_scores WHERE track = '1'").fetchall())
    assert got.keys() == expected.keys()
    assert max(abs(got[k] - expected[k]) for k in got) < 1e-9
    # Track 3: the adapter always says 0.7 -> predicts self for every item
    preds = duckdb.connect(str(results), read_only=True).execute(
        "SELECT DISTINCT predicted FROM item_scores WHERE track = '3'").fetchall()
    assert preds == [("self",)]


def test_cli_query_and_report_formats(release, tmp_path, capsys):
    from trb.cli import main
    from trb.run import RunSpec, run_tracks

    results = tmp_path / "results.duckdb"
    adapter = _readme_adapter()("ckpt/")
    run_tracks(RunSpec(release, baseline="my-model", results=results), adapter, progress=False)
    assert main(["query", "SELECT baseline, adapter_tier, smoke_test FROM runs", "--results", str(results),
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"baseline": "my-model", "adapter_tier": "proxy",
                                                    "smoke_test": True}]
    # the store's JSON columns come back as objects, not JSON text inside JSON
    sql = ("SELECT item_id, detail, detail AS detail_text, adapter_spec FROM item_scores JOIN runs USING (run_id) "
           "WHERE track = '1' ORDER BY item_id LIMIT 2")
    assert main(["query", sql, "--results", str(results), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    raw = duckdb.connect(str(results), read_only=True).execute(sql).fetchall()
    assert len(rows) == 2 and [r["item_id"] for r in rows] == [r[0] for r in raw]
    for got, (_, detail, _, spec) in zip(rows, raw):
        assert isinstance(got["detail"], dict) and got["detail"] == json.loads(detail)
        assert got["detail_text"] == detail  # renamed: not a store JSON column, left as the text it is
        assert isinstance(got["adapter_spec"], dict) and got["adapter_spec"] == json.loads(spec)
    assert not (tmp_path / "results.duckdb.lock").exists()  # no lock file left beside the store
    assert main(["report", "--results", str(results), "--format", "json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["smoke_test"] is True and rep["baselines"][0]["name"] == "my-model"
    assert set(rep["baselines"][0]["tracks"]) >= {"1", "3"} and rep["delta_gov"] is None
    md_path = tmp_path / "out" / "report.md"
    md_path.parent.mkdir()
    assert main(["report", "--results", str(results), "-o", str(md_path)]) == 0
    md = md_path.read_text()
    assert "SMOKE TEST" in md and "(report.png)" in md and (md_path.parent / "report.png").is_file()
    assert main(["query", "SELECT nope FROM runs", "--results", str(results)]) == ExitCode.RESULTS
    assert "nope" in capsys.readouterr().err


@pytest.mark.e2e
@pytest.mark.timeout(1500)  # the whole pipeline as `make demo` runs it (531 s in the suite beside the other worker)
def test_demo_end_to_end_shows_a_governance_gap(tmp_path, capsys):
    """`trb-demo` exactly as `make demo` runs it (seed 1, 500 sessions): every stage, a smoke-labelled report, Δgov
    with a CI above 0, and the conclusions the README and docs/demo-conclusions.md quote, regenerated from this
    fresh run (with the seeds' stability, docs/data/demo-stability.json, written by `make demo-conclusions`):
    a difference fails the test."""
    from pipeline.cli import main as demo_main
    from pipeline.conclusions import render_blocks
    from trb.cli import main
    from trb.report.conclusions import quoted_block

    work = tmp_path / "demo"
    assert demo_main(["--workdir", str(work), "--seed", "1", "-q"]) == 0
    md = capsys.readouterr().out
    found = json.loads((work / "conclusions.json").read_text(encoding="utf-8"))
    stable = json.loads((ROOT / "docs" / "data" / "demo-stability.json").read_text(encoding="utf-8"))
    assert stable["seeds"][0] == 1 and found["header"]["seed"] == 1
    # on the pinned CPU numerics the docs' figures were made on (trb/numerics.py), whatever the machine
    assert found["numerics"]["cpu_capability"] == "AVX2" and found["numerics"]["threads"] == 1
    for path, block in render_blocks(found, stable).items():
        assert quoted_block(path) == block, f"{path.name}: the quoted conclusions differ from a fresh `make demo`" \
                                            " (run `make demo-conclusions`)"
    # each conclusion's outcome at seed 1 is the one the stability file recorded for seed 1
    for row in found["rows"]:
        assert stable["rows"][row["id"]]["outcomes"]["1"] == row["verdict"].split(";")[0].split("(")[0].strip()
    assert md.startswith("# TRB report") and "SMOKE TEST" in md and "Δgov" in md
    for path in ("corpus/corpus.duckdb", "corpus/releases/0.1.0/manifest.json", "models/trace-full/model.safetensors",
                 "models/trace-ablation/config.json", "results.duckdb", "report.md", "report.png"):
        assert (work / path).exists(), path
    assert main(["report", "--results", str(work / "results.duckdb"), "--format", "json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    tiers = {b["name"]: b["adapter_tier"] for b in rep["baselines"]}
    assert rep["smoke_test"] is True and tiers == {  # the five spec baselines, 1-3 proxy and 4-5 native (§4)
        "instruct-base": "proxy", "cot-prompted": "proxy", "cot-sft": "proxy",
        "trace-ablation": "native", "trace-full": "native"}
    assert [row.split(" | ")[0].lstrip("| ") for row in md.splitlines() if row.startswith("| ") and (
            " | eval | proxy | " in row or " | eval | native | " in row)] == [
        "instruct-base", "cot-prompted", "cot-sft", "trace-ablation", "trace-full"]
    for path in ("models/instruct-base/trb-baseline.json", "models/cot-sft/model.safetensors"):
        assert (work / path).exists(), path
    assert rep["delta_gov"]["ci_low"] > 0
    assert [(b["name"], b["split"]) for b in rep["baselines"]] == [
        (n, s) for s in ("eval", "transfer") for n in tiers]  # a transfer-split run per baseline (Track 6)
    evals = [b for b in rep["baselines"] if b["split"] == "eval"]
    for b in evals:  # Tracks 4 and 5 ran on every baseline, on the built-in task set's held-out seeds
        assert b["tracks"]["nav"]["n_sessions"] == 12 and b["tracks"]["nav-cg2"]["n_sessions"] == 9, b["name"]
        assert b["tracks"]["viab-full"]["n_items"] == b["tracks"]["viab-abl"]["n_items"] == 12, b["name"]
        viab = b["tracks"]["viab"]  # the ratio of the two completion rates, or why there is none (0 completed)
        assert viab["score"] is not None or "undefined" in viab.get("note", ""), b["name"]
    # spec §4: the five baselines at the same model size (within ±15% of each other), each row saying its size
    sizes = [b["n_parameters"] for b in evals]
    assert all(sizes) and max(sizes) <= 1.15 * min(sizes), sizes
    assert all(b["split_check"]["checked"] for b in evals)  # each model's training subjects checked
    assert [t["split"] for t in rep["tables"]] == ["eval", "transfer"]
    table = rep["tables"][0]
    assert [c["comparison"].split(" ")[0] for c in table["pass_bars"]][:3] == ["G(trace-full)", "Track", "Δgov"]
    # Track 2 on every baseline under the demo's budget (proxy-tier grounding on the LM baselines), Track 6 from
    # the transfer runs, and the six-entry profile vector with the profile plot
    for b in rep["baselines"]:
        g = b["tracks"]["ground"]
        if g["score"] is None:  # a model none of whose concept directions are separable has no headline, and says so
            assert "undefined: no concept left for the headline" in g.get("note", ""), b["name"]
            continue
        inside = g["ci_low"] <= g["score"] <= g["ci_high"]  # or the report says it is not (a biased statistic)
        assert g["n_sessions"] > 0 and (inside or any("point outside its interval" in f for f in g["flags"])), b["name"]
    assert {b["name"] for b in rep["baselines"] if b["tracks"]["ground"]["score"] is not None} >= {
        "trace-full", "trace-ablation"}  # the native tier's grounding has its figure
    vec = {p["name"]: p["vector"] for p in rep["profile_vectors"]}
    assert set(vec) == set(tiers) and all(len(v) == 6 for v in vec.values())
    assert all(v["trans"]["figures"] for v in vec.values())
    assert (work / "report-profiles.png").is_file() and "(report-profiles.png)" in md
    assert "proxy-tier grounding" in md
    assert demo_main(["--workdir", str(work)]) == ExitCode.USAGE  # never overwrites


def test_trb_run_through_the_proxy_adapter_on_a_local_causal_lm(release, tmp_path, capsys):
    """`trb run --adapter proxy` on a tiny GPT-2 made here and loaded through the real loading code."""
    from engine_helpers import make_tiny_lm

    from trb.cli import main

    model_dir = make_tiny_lm(release, tmp_path / "tiny-lm")
    results = tmp_path / "results.duckdb"
    code = main(["run", "--release", str(release), "--adapter", "proxy", "--model", str(model_dir), "--baseline",
                 "cot-prompted", "--tracks", "1", "--results", str(results), "-q"])
    out, err = capsys.readouterr()
    assert code == 0, err
    run_id = out.strip().splitlines()[-1]
    con = duckdb.connect(str(results), read_only=True)
    tier, spec, n = con.execute("SELECT adapter_tier, adapter_spec, n_items FROM runs WHERE run_id = ?", [run_id]).fetchone()
    scores = [r[0] for r in con.execute("SELECT score FROM item_scores WHERE run_id = ?", [run_id]).fetchall()]
    assert tier == "proxy" and json.loads(spec)["kind"] == "proxy" and len(json.loads(spec)["sha256"]) == 64
    assert n == len(scores) > 0 and all(0.0 <= s <= 1.0 for s in scores)
