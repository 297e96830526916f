"""Proxy-tier grounding: any causal LM behind ActivationAccess (residual stream, injection at the prompt's last token).

A 1-layer GPT-2 made locally on a small smoke release. Track 2 end to end on the proxy tier runs
under a trial budget (``trb run --grounding-contexts N``): a fixed sample of N step contexts per
split, recorded with the run and re-applied by ``trb rerun``.
"""

from __future__ import annotations

import numpy as np
import pytest

# a tiny LM made here learns concept directions
pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from engine_helpers import make_release, make_tiny_lm  # noqa: E402

from trb.adapters.lm_scoring import score_naive  # noqa: E402
from trb.adapters.proxy import ProxyAdapter  # noqa: E402
from trb.errors import AdapterError  # noqa: E402
from trb.grounding import learn_concepts, save_concepts  # noqa: E402
from trb.releases import Release  # noqa: E402


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return make_release(tmp_path_factory.mktemp("pg-release"), sessions=60, seed=5)


@pytest.fixture(scope="module")
def adapter(release, tmp_path_factory):
    return ProxyAdapter.load(make_tiny_lm(release, tmp_path_factory.mktemp("pg") / "lm"), device="cpu")


def _contexts(release, n=12):
    from trb.tracks.track2 import track2_items

    rel = Release(release)
    try:
        return [it.context for it in list(track2_items(rel, "eval"))[:n]]
    finally:
        rel.close()


def test_z_is_the_residual_stream_entering_the_layer_at_the_last_token_of_emit_rs_prompt(adapter, release):
    cs = _contexts(release)
    (site,) = adapter.activation_sites()  # one layer: its middle, quarter and three quarters coincide
    z = adapter.read_activations(cs, site)
    for i, c in enumerate(cs[:4]):
        ids = adapter.tokenizer(adapter._emit_base(c), add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            hs = adapter.model(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states
        assert np.max(np.abs(z[i] - hs[0][0, -1].double().numpy())) < 1e-5  # entering layer 0: the embeddings
    with pytest.raises(AdapterError, match="unknown activation site"):
        adapter.read_activations(cs, "layers.7")


def test_uninjected_slot_distribution_is_the_softmax_of_the_plain_scores(adapter, release):
    cs = [c for c in _contexts(release) if c.action_space][:5]
    d = adapter.model.config.n_embd
    got = adapter.slot_probs_injected(cs, "planned_next", "layers.0", np.zeros(d), 0.0)
    for c, dist in zip(cs, got):
        prompt = adapter._emit_base(c) + " planned_next="
        (scores,) = score_naive(adapter.model, adapter.tokenizer, [(prompt, [a + ";" for a in c.action_space])])
        p = np.exp(np.asarray(scores) - max(scores))
        p /= p.sum()
        assert list(dist) == list(c.action_space) and np.max(np.abs(np.asarray(list(dist.values())) - p)) < 1e-5
    # an injection moves the distribution; a wrong shape or a goal slot without directions is refused
    # (a random direction: a constant vector would vanish in the next LayerNorm)
    moved = adapter.slot_probs_injected(cs, "planned_next", "layers.0", np.random.default_rng(0).normal(size=d), 8.0)
    assert max(abs(m[a] - g[a]) for m, g in zip(moved, got) for a in g) > 1e-6  # well above float32 rounding
    with pytest.raises(AdapterError, match="injection vectors have shape"):
        adapter.slot_probs_injected(cs, "planned_next", "layers.0", np.zeros(d + 1), 1.0)
    with pytest.raises(AdapterError, match="no distribution"):
        adapter.slot_probs_injected(cs, "confidence", "layers.0", np.zeros(d), 1.0)


def test_concept_directions_are_learned_through_the_capability_and_stored_beside_the_weights(adapter, release):
    rel = Release(release)
    try:
        dirs = learn_concepts(adapter, rel)
    finally:
        rel.close()
    assert dirs.record["split"] == "train" and dirs.record["model_sha256"] == adapter.sha256
    assert {c["slot"] for c in dirs.record["concepts"]} == {"goal", "planned_next"}
    save_concepts(dirs, adapter.path)
    assert adapter.concept_directions().record == dirs.record
    # with directions, the goal slot has values: the concepts' goals, a distribution over them
    (c,) = _contexts(release, 1)
    (dist,) = adapter.slot_probs_injected([c], "goal", "layers.0", np.zeros(adapter.model.config.n_embd), 0.0)
    goals = [x["value"] for x in dirs.record["concepts"] if x["slot"] == "goal"]
    assert list(dist) == goals and abs(sum(dist.values()) - 1.0) < 1e-9


def test_without_directions_track2_is_not_applicable_and_the_other_tracks_run(release, tmp_path):
    from engine_helpers import make_tiny_lm

    from trb.run import RunSpec, run_tracks

    bare = ProxyAdapter.load(make_tiny_lm(release, tmp_path / "lm"), device="cpu")
    assert bare.concept_directions() is None
    run = run_tracks(RunSpec(release, baseline="cot-prompted", tracks=("2", "3"), results=tmp_path / "r.duckdb"),
                     bare, progress=False)
    assert run["summary"]["2"]["status"] == "not_applicable" and "trb concepts" in run["summary"]["2"]["reason"]
    assert run["summary"]["3"]["scored"] > 0


def test_proxy_track2_end_to_end_under_a_trial_budget_through_the_cli(release, tmp_path, capsys):
    """trb concepts --adapter proxy, then trb run --tracks 2 --grounding-contexts N; the budget is the same sample
    for every model, recorded, and trb rerun reproduces every trial."""
    import duckdb

    from trb.cli import main
    from trb.results import ResultsStore

    lm = make_tiny_lm(release, tmp_path / "lm")
    assert main(["concepts", str(lm), "--release", str(release), "--adapter", "proxy"]) == 0
    assert "(proxy; sites layers.0)" in capsys.readouterr().out
    db = tmp_path / "r.duckdb"
    args = ["run", "--release", str(release), "--adapter", "proxy", "--model", str(lm), "--baseline", "cot-prompted",
            "--tracks", "2", "--results", str(db), "-q", "--grounding-concepts", "3", "--grounding-contexts", "2"]
    assert main(args) == 0
    (run,) = ResultsStore(db).runs()
    assert run["timings"]["track_options"] == {"2": {"max_contexts": 2, "max_concepts": 3}}
    assert run["timings"]["summary"]["2"]["options"] == {"max_contexts": 2, "max_concepts": 3}
    assert run["adapter_tier"] == "proxy"
    con = duckdb.connect(str(db), read_only=True)
    per_split = dict(con.execute("SELECT split, count(DISTINCT session_id || '/' || t) FROM item_scores WHERE track = '2' "
                                 "GROUP BY split").fetchall())
    conds = {r[0] for r in con.execute("SELECT DISTINCT condition FROM item_scores WHERE track = '2'").fetchall()}
    # at most 3 concepts of each slot per context (each with its zero null, and 4 strengths x injected, random)
    most = con.execute("SELECT max(n) FROM (SELECT count(DISTINCT concept) AS n FROM item_scores WHERE track = '2' "
                       "GROUP BY session_id, t, split_part(concept, '=', 1))").fetchone()[0]
    per_trial = con.execute("SELECT DISTINCT count(*) FROM item_scores WHERE track = '2' "
                            "GROUP BY session_id, t, concept").fetchall()
    con.close()
    rel = Release(release)
    has_dev = "dev" in rel.splits
    rel.close()
    assert per_split == ({"eval": 2, "dev": 2} if has_dev else {"eval": 2}) and conds == {"zero", "injected", "random"}
    assert most == 3 and per_trial == [(9,)]
    # the sample is fixed: the smallest item-id hashes of each split, whatever the model
    from trb.tracks.track2 import track2_items

    rel = Release(release)
    try:
        budget = [it.item_id for it in track2_items(rel, "eval", max_contexts=2)]
        every = [it.item_id for it in track2_items(rel, "eval")]
    finally:
        rel.close()
    assert len(budget) == (4 if has_dev else 2) and set(budget) < set(every) and budget == [i for i in every if i in set(budget)]
    # trb rerun re-creates the same budget and reproduces every trial
    assert main(["rerun", run["run_id"], "--results", str(db)]) == 0
    assert "reproduced" in capsys.readouterr().out
    # a bad budget is a usage error before any scoring; options for a track not run are refused
    assert main(args[:-1] + ["0"]) == 2
    from trb.errors import UsageError
    from trb.run import RunSpec, run_tracks

    with pytest.raises(UsageError, match="track 2, which this run does not include"):
        run_tracks(RunSpec(release, baseline="x", tracks=("3",), results=tmp_path / "x.duckdb",
                           track_options={"2": {"max_contexts": 3}}), ProxyAdapter.load(lm), progress=False)
    with pytest.raises(UsageError, match="no option 'contexts'"):
        run_tracks(RunSpec(release, baseline="x", tracks=("2",), results=tmp_path / "x.duckdb",
                           track_options={"2": {"contexts": 3}}), ProxyAdapter.load(lm), progress=False)
