"""The native reference models (baselines 4 and 5): split discipline, reproducibility, and the governance gap.

One simulated smoke release is built per module with the real corpus pipeline
(simulate -> ingest -> cut_release), and both variants are trained on it once.
"""

from __future__ import annotations

import json
import math
import random
import shutil
from pathlib import Path

import duckdb
import pytest

# trains native reference models on a simulated release
pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")
from safetensors.torch import load_file  # noqa: E402

from trb.adapters.native import NativeAdapter  # noqa: E402
from trb.errors import UsageError  # noqa: E402
from trb.reference import train_reference  # noqa: E402
from trb.reference.model import file_sha256, save_checkpoint  # noqa: E402
from trb.releases import Release  # noqa: E402

N_SESSIONS = 300


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    from corpus import Corpus, ingest, init_corpus
    from corpus.release import cut_release
    from corpus.simulate import write_simulation

    tmp = tmp_path_factory.mktemp("ref-release")
    write_simulation(tmp / "sim.jsonl", n_sessions=N_SESSIONS, seed=1, progress=False)
    c = Corpus(init_corpus(tmp / "corpus"))
    ingest(c, [tmp / "sim.jsonl"], progress=False)
    return Path(cut_release(c, "0.1.0", kind="smoke", progress=False).directory)


@pytest.fixture(scope="module")
def models(release, tmp_path_factory) -> dict[str, dict]:
    out = tmp_path_factory.mktemp("ref-models")
    return {v: train_reference(release, v, out / v, seed=0, progress=False) for v in ("ablation", "full")}


def _parquet(release: Path, config: str) -> str:
    return str(release / "data" / config / "*.parquet")


def _tv_score(p: dict, phi: dict) -> float:
    return 1.0 - 0.5 * sum(abs(p.get(a, 0.0) - phi.get(a, 0.0)) for a in set(p) | set(phi))


# -- split discipline ------------------------------------------------------------------


def test_training_record_counts_are_the_train_split(release, models):
    """The counts in config.json equal the train split's, counted here with plain DuckDB over the parquet."""
    con = duckdb.connect()
    q = lambda sql: con.execute(sql).fetchone()[0]  # noqa: E731
    sessions = q(f"SELECT count(*) FROM read_parquet('{_parquet(release, 'sessions')}') WHERE split = 'train'")
    steps = q(f"SELECT count(*) FROM read_parquet('{_parquet(release, 'steps')}') WHERE split = 'train'")
    with_r = q(f"SELECT count(*) FROM read_parquet('{_parquet(release, 'steps')}') WHERE split = 'train' AND has_r")
    cfs = q(f"SELECT count(*) FROM read_parquet('{_parquet(release, 'counterfactuals')}') WHERE split = 'train'")
    cfs_dist = q(f"SELECT count(*) FROM read_parquet('{_parquet(release, 'counterfactuals')}') "
                 "WHERE split = 'train' AND phi_type = 'distribution'")
    all_sessions = q(f"SELECT count(*) FROM read_parquet('{_parquet(release, 'sessions')}')")
    assert 0 < sessions < all_sessions  # the release has other splits, so the equalities below can fail
    manifest = json.loads((release / "manifest.json").read_text())
    for variant, rec in models.items():
        n = rec["training"]["n_train"]
        assert (n["sessions"], n["steps"], n["steps_with_r"], n["counterfactuals"],
                n["counterfactuals_with_distribution"]) == (sessions, steps, with_r, cfs, cfs_dist), variant
        assert n["fit_step_items"] + n["validation_step_items"] == steps  # every simworld step acts
        assert rec["training"]["split"] == "train"
        assert rec["release"]["sha"] == manifest["release_sha"] and rec["release"]["version"] == "0.1.0"
        assert rec["trb_version"] == "0.1" and rec["variant"] == variant and rec["seed"] == 0
    # the ablation never sees a counterfactual; the full model uses every train one with a distribution
    assert models["ablation"]["training"]["n_train"]["counterfactuals_used"] == 0
    full = models["full"]["training"]["n_train"]
    assert full["counterfactuals_used"] == cfs_dist == full["fit_counterfactuals"] + full["validation_counterfactuals"]
    assert models["ablation"]["training"]["objective"] == "L_trace + L_selfrep"
    assert models["full"]["training"]["objective"] == "L_trace + L_selfrep + L_gov"


def _copy_release(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _reseal(d: Path) -> Release:
    """Rewrite the manifest's file list to the files now present, and open the release unchecked: the engine refuses
    a release whose rows differ from its manifest, and these tests change the rows on purpose."""
    import json

    from toolkit.hashing import sha256_file

    manifest = json.loads((d / "manifest.json").read_text())
    manifest["files"] = [{**f, "sha256": sha256_file(d / f["path"]), "bytes": (d / f["path"]).stat().st_size}
                         for f in manifest["files"] if (d / f["path"]).is_file()]
    (d / "manifest.json").write_text(json.dumps(manifest))
    return Release(d, check_files=False)


def test_other_splits_do_not_reach_training(release, tmp_path):
    """Deleting every dev/eval/transfer parquet file leaves the trained weights bit-identical, while changing
    the train counterfactuals does change them (so the comparison can see a change in the data)."""
    pruned = _copy_release(release, tmp_path / "pruned")
    removed = [p for p in pruned.glob("data/*/*.parquet") if not p.name.startswith("train-")]
    assert any(p.name.startswith("eval-") for p in removed)
    for p in removed:
        p.unlink()
    base = train_reference(release, "full", tmp_path / "m-base", seed=0, epochs=2, progress=False)
    again = train_reference(_reseal(pruned), "full", tmp_path / "m-pruned", seed=0, epochs=2, progress=False)
    assert base["sha256"] == again["sha256"]
    assert base["training"]["n_train"] == again["training"]["n_train"]

    # a change to the *train* counterfactuals (Φ made uniform) must show up in the weights
    altered = _copy_release(release, tmp_path / "altered")
    (cf_file,) = altered.glob("data/counterfactuals/train-*.parquet")
    con = duckdb.connect()
    con.execute(f"""COPY (SELECT * REPLACE (list_transform(phi_probs, lambda x: {{'action': x.action, 'p': 0.2}})
                              AS phi_probs) FROM read_parquet('{cf_file}'))
                    TO '{cf_file}.new' (FORMAT parquet)""")
    Path(f"{cf_file}.new").replace(cf_file)
    changed = train_reference(_reseal(altered), "full", tmp_path / "m-altered", seed=0, epochs=2, progress=False)
    assert changed["sha256"] != base["sha256"]


def test_same_seed_same_weights_other_seed_other_weights(release, tmp_path):
    a = train_reference(release, "ablation", tmp_path / "a", seed=3, epochs=2, progress=False)
    b = train_reference(release, "ablation", tmp_path / "b", seed=3, epochs=2, progress=False)
    c = train_reference(release, "ablation", tmp_path / "c", seed=4, epochs=2, progress=False)
    wa, wb, wc = (load_file(str(tmp_path / d / "model.safetensors")) for d in "abc")
    assert wa.keys() == wb.keys()
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    assert a["sha256"] == b["sha256"] != c["sha256"]
    assert a["training"]["losses_per_epoch"] == b["training"]["losses_per_epoch"]


def test_save_load_round_trip_gives_identical_outputs(release, models, tmp_path):
    src = NativeAdapter.load(models["full"]["path"])
    assert src.sha256 == models["full"]["sha256"] == file_sha256(Path(models["full"]["path"]) / "model.safetensors")
    copy_dir = tmp_path / "copy"
    src_model = NativeAdapter.load(models["full"]["path"]).model.float()  # back to the stored dtype
    sha = save_checkpoint(src_model, src.config, copy_dir)
    assert sha == src.sha256  # the same tensors, byte for byte
    dst = NativeAdapter.load(copy_dir)
    rel = Release(release)
    contexts = [s.context(t) for s in rel.sessions(split="eval") for t in range(len(s.steps))][:200]
    overrides = [None if i % 2 else {"goal": "C3", "planned_next": "up", "caused_by_self": 0.3, "confidence": 0.9}
                 for i in range(len(contexts))]
    assert src.act_batch(contexts, overrides) == dst.act_batch(contexts, overrides)
    assert src.emit_r_batch(contexts) == dst.emit_r_batch(contexts)


def test_config_records_architecture_and_training(models):
    for variant, rec in models.items():
        cfg = json.loads((Path(rec["path"]) / "config.json").read_text())
        assert cfg["format"] == "trb-reference-model" and cfg["format_version"] == 1
        arch = cfg["architecture"]
        assert arch["context_buckets"] > 0 and arch["string_buckets"] > 0 and arch["goal_vocab"]
        assert cfg["features"]["hash"] == "blake2b-64"
        t = cfg["training"]
        assert t["wall_time_s"] > 0 and t["epochs_run"] == len(t["losses_per_epoch"]) >= t["epoch_kept"] >= 1
        assert all(math.isfinite(e["trace_nll"]) for e in t["losses_per_epoch"])
        assert ("gov_kl" in t["losses_per_epoch"][0]) == (variant == "full")
    # same architecture and size for both variants
    a, f = (json.loads((Path(models[v]["path"]) / "config.json").read_text()) for v in ("ablation", "full"))
    assert a["architecture"] == f["architecture"]
    assert a["training"]["n_parameters"] == f["training"]["n_parameters"]


def test_bad_variant_and_epochs_are_usage_errors(release, tmp_path):
    with pytest.raises(UsageError, match="variant"):
        train_reference(release, "gov-only", tmp_path / "x", progress=False)
    with pytest.raises(UsageError, match="epochs"):
        train_reference(release, "full", tmp_path / "x", epochs=0, progress=False)


# -- the governance gap ------------------------------------------------------------------


def _eval_items(release: Path):
    """(session_id, context, r', Φ) for every eval counterfactual with a distribution, read with DuckDB here."""
    con = duckdb.connect()
    rows = con.execute(f"""
        SELECT session_id, t, rp_goal, rp_planned_next, rp_caused_by_self, rp_confidence, phi_probs
        FROM read_parquet('{_parquet(release, 'counterfactuals')}')
        WHERE split = 'eval' AND phi_type = 'distribution' ORDER BY cf_id""").fetchall()
    rel = Release(release)
    sessions = {s.session_id: s for s in rel.sessions(split="eval")}
    items = []
    for sid, t, goal, plan, cbs, conf, phi in rows:
        r = {"goal": goal, "planned_next": plan, "caused_by_self": cbs, "confidence": conf}
        items.append((sid, sessions[sid].context(t), r, {d["action"]: d["p"] for d in phi}))
    return items


def test_full_beats_ablation_on_heldout_track1(release, models):
    """Δgov = G(full) − G(ablation) on the eval split, G = mean 1 − TV(act(c_t, r'), Φ(r')).

    Margin: on this release (300 sessions, seed 1) Δ measures about 0.22 (G ≈ 0.85 vs 0.64) with a
    session-bootstrap 95% CI about ±0.02 wide. We require Δ ≥ 0.05 — under a quarter of the measured gap, yet
    several CI widths above 0 — and the bootstrap lower bound above 0, the spec's pass bar for the governance gap.
    The ablation must also be a trained model, not a strawman: its factual next-action NLL beats uniform.
    """
    items = _eval_items(release)
    assert len(items) > 200
    scores = {}
    for v in ("ablation", "full"):
        ad = NativeAdapter.load(models[v]["path"])
        ps = ad.act_batch([c for _, c, _, _ in items], [r for _, _, r, _ in items])
        scores[v] = [_tv_score(p, phi) for p, (_, _, _, phi) in zip(ps, items)]
    g_full = sum(scores["full"]) / len(items)
    g_abl = sum(scores["ablation"]) / len(items)
    delta = [f - a for f, a in zip(scores["full"], scores["ablation"])]
    by_session: dict[str, list[float]] = {}
    for (sid, *_), d in zip(items, delta):
        by_session.setdefault(sid, []).append(d)
    sids = sorted(by_session)
    rng = random.Random(0)
    boots = []
    for _ in range(1000):
        draw = [d for s in (rng.choice(sids) for _ in sids) for d in by_session[s]]
        boots.append(sum(draw) / len(draw))
    boots.sort()
    assert g_full - g_abl >= 0.05, (g_full, g_abl)
    assert boots[25] > 0, (g_full, g_abl, boots[25])
    uniform = sum(_tv_score({a: 1 / len(c.action_space) for a in c.action_space}, phi)
                  for _, c, _, phi in items) / len(items)
    assert g_full > uniform + 0.1, (g_full, uniform)

    ablation = NativeAdapter.load(models["ablation"]["path"])
    rel = Release(release)
    steps = [(s.context(t), s.steps[t]["action"]) for s in rel.sessions(split="eval") for t in range(len(s.steps))]
    probs = ablation.act_batch([c for c, _ in steps])
    nll = -sum(math.log(p[a]) for p, (_, a) in zip(probs, steps)) / len(steps)
    assert nll < math.log(5) - 0.05, nll


def test_progress_goes_to_stderr(release, tmp_path, capsys):
    train_reference(release, "ablation", tmp_path / "p", seed=0, epochs=1, progress=True)
    out, err = capsys.readouterr()
    assert out == ""
    assert "training ablation" in err
