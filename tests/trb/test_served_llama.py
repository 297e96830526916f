"""The served adapter against a real llama.cpp server (llama-cpp-python[server]) serving SmolLM2-135M-Instruct.

The test setup starts ``python -m llama_cpp.server`` of ``.venv-llama`` (``make install-llama-server``)
on a free loopback port with SmolLM2's Q4_1 GGUF (tests/llama_server.py), waits until it answers
``/v1/models`` and kills it at teardown. The served adapter's action distributions are compared
with the transformers path (``ProxyAdapter`` on the same GGUF dequantised to float32 by ``trb
models fetch smollm2``) on the same prompts. They are not equal: llama.cpp computes with the
quantised Q4_1 weights (and prepends SmolLM2's BOS token, which the transformers path does not:
see tests/llama_server.py), so the tolerance is the one docs/guides/labs.md states, measured here:
``MAX_ABS_P`` on every action probability and ``MIN_ARGMAX_AGREEMENT`` of the argmax actions.
Then a small Track 1 run on the 7f3a example through ``trb run --adapter served`` (Track 3's emit_r is
held to the proxy's on the tiny served model of test_served_adapter.py; through llama-cpp-python each
echoed-log-probability request costs seconds on a CPU, so this file keeps to a handful of requests).

Slow; skipped where ``.venv-llama`` is missing (with the reason), except in CI, where that fails.
"""

from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("gguf")
pytest.importorskip("httpx")

from llama_server import MODEL_ALIAS, LlamaServer, missing_reason, smollm2_gguf  # noqa: E402
from tests_paths import EXAMPLE_7F3A  # noqa: E402

# SmolLM2 through llama.cpp and transformers on one CPU core each: minutes
pytestmark = [pytest.mark.llama, pytest.mark.smollm2, pytest.mark.timeout(600)]

#: The served (llama.cpp, Q4_1) and transformers (dequantised float32) action probabilities differ by at most this
#: (measured on these 6 cases, history 0: max 0.098, mean 0.068; twice the max for margin) ...
MAX_ABS_P = 0.2
#: ... and name the same most probable action at least this often (see docs/guides/labs.md, "The served adapter").
MIN_ARGMAX_AGREEMENT = 0.8  # measured 6 of 6; one disagreement in six allowed
N_CASES = 6


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    reason = missing_reason()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"CI runs the llama.cpp server tests: {reason}")
        pytest.skip(reason)
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with LlamaServer(smollm2_gguf(), log=log) as srv:
        yield srv


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    from engine_helpers import make_release

    return make_release(tmp_path_factory.mktemp("llama_release"), sessions=24, seed=5)


def test_served_scores_match_the_transformers_path_within_the_stated_tolerance(llama_server, smollm2_dir, release):
    from trb.adapters.proxy import ProxyAdapter
    from trb.adapters.served import ServedAdapter
    from trb.testing import _contexts

    cases, _ = _contexts(release, "eval", N_CASES)
    contexts, overrides = [c for c, _ in cases], [r for _, r in cases]
    # the served adapter has no tokenizer here, so it applies no chat template: the transformers path neither
    local = ProxyAdapter.load(smollm2_dir, device="cpu", history=0, chat_template="off")
    served = ServedAdapter.load(llama_server.url, history=0)
    try:
        assert served.spec()["server_models"] == [MODEL_ALIAS] and served.served_model == MODEL_ALIAS
        want, got = local.act_batch(contexts, overrides), served.act_batch(contexts, overrides)
    finally:
        served.close()
    diffs = [max(abs(w[a] - g[a]) for a in w) for w, g in zip(want, got)]
    agree = sum(max(w, key=w.get) == max(g, key=g.get) for w, g in zip(want, got)) / len(want)
    print(f"\nserved vs transformers on {len(want)} Track 1 cases: max |dp| {max(diffs):.4f}, "
          f"mean {sum(diffs) / len(diffs):.4f}, argmax agreement {agree:.3f}")
    assert len(want) == N_CASES
    assert max(diffs) <= MAX_ABS_P and agree >= MIN_ARGMAX_AGREEMENT


def _first_steps_of_7f3a(path, n_steps=2):
    """The 7f3a example cut to its first ``n_steps`` steps: its sessions' steps, the counterfactuals and
    attributions at those steps, and the annotations of those attributions (each llama-cpp-python request
    costs seconds on a CPU, so the run stays small)."""
    kept, attributions = [], set()
    for line in EXAMPLE_7F3A.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if rec["kind"] == "session":
            rec["steps"] = [s for s in rec["steps"] if s["t"] < n_steps]
        elif rec["kind"] in ("counterfactual", "attribution"):
            if rec["t"] >= n_steps:
                continue
            if rec["kind"] == "attribution":
                attributions.add(rec["item_id"])
        elif rec["kind"] == "annotation" and rec["target"]["id"] not in attributions:
            continue
        kept.append(rec)
    path.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
    return sum(r["kind"] == "counterfactual" for r in kept)


def test_track_1_on_the_7f3a_examples_first_steps_through_trb_run(llama_server, tmp_path, capsys):
    import duckdb

    from corpus import Corpus, ingest, init_corpus
    from corpus.release import cut_release
    from trb.cli import main

    n_cf = _first_steps_of_7f3a(tmp_path / "7f3a-first-steps.jsonl")
    assert n_cf == 4  # t=0: a revision, a paired session and a synthetic one; t=1: a synthetic one
    c = Corpus(init_corpus(tmp_path / "corpus"))
    ingest(c, [tmp_path / "7f3a-first-steps.jsonl"], progress=False)
    release = cut_release(c, "0.1.0", kind="smoke", split_fractions={"train": 0, "dev": 0, "eval": 1},
                          progress=False).directory
    db = tmp_path / "r.duckdb"
    # Track 1 with no reasoning scaffold and no earlier steps shown
    assert main(["run", "--release", str(release), "--adapter", "served", "--model", llama_server.url, "--baseline",
                 "smollm2-served", "--tracks", "1", "--scaffold", "none", "--history", "0", "--results", str(db),
                 "-q"]) == 0
    capsys.readouterr()
    con = duckdb.connect(str(db), read_only=True)
    spec, timings = con.execute("SELECT adapter_spec, timings FROM runs").fetchone()
    scores = con.execute("SELECT track, count(*), min(score), max(score) FROM item_scores GROUP BY track "
                         "ORDER BY track").fetchall()
    con.close()
    spec = json.loads(spec)
    assert spec["kind"] == "served" and spec["served_model"] == MODEL_ALIAS and spec["url"] == llama_server.url
    summary = json.loads(timings)["summary"]
    assert summary["1"]["scored"] > 0
    assert [t for t, *_ in scores] == ["1"] and all(n > 0 for _, n, *_ in scores)
