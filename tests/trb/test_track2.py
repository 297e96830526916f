"""Track 2 (grounding by concept injection) on the native tier: directions, trials, AUC, strength choice."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from engine_helpers import make_release  # noqa: E402

from trb.adapters.native import NativeAdapter  # noqa: E402
from trb.errors import AdapterError, UsageError  # noqa: E402
from trb.grounding import detection_auc_by_session, load_concepts, write_concepts  # noqa: E402
from trb.reference import train_reference  # noqa: E402

# trains native reference models on a simulated release
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    return make_release(tmp_path_factory.mktemp("t2-release"), sessions=120, seed=7)


@pytest.fixture(scope="module")
def models(release, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("t2-models")
    for v in ("full", "ablation"):
        train_reference(release, v, out / v, seed=0, epochs=1, progress=False)
    return {v: out / v for v in ("full", "ablation")}


def test_detection_auc_matches_sklearn():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(3)
    n = 400
    scores = np.round(rng.random(n), 2)  # ties on purpose
    injected = rng.random(n) < 0.5
    scores[injected] += 0.1
    sessions = rng.integers(0, 20, n).astype(str)
    est = detection_auc_by_session(scores, injected, ["c"] * n, sessions, n_resamples=200)
    assert est.value == pytest.approx(roc_auc_score(injected, scores), abs=1e-12)
    assert est.ci_low < est.value < est.ci_high
    strata = rng.integers(0, 3, n)
    want = np.mean([roc_auc_score(injected[strata == k], scores[strata == k]) for k in range(3)])
    assert detection_auc_by_session(scores, injected, strata, sessions, n_resamples=0).value == \
        pytest.approx(want, abs=1e-12)
    with pytest.raises(ValueError):
        detection_auc_by_session(scores, np.ones(n, bool), strata, sessions)


def _pair_auc(scores, injected, sessions, counts) -> float:
    """The AUC under session counts by enumerating pairs: k_i * k_j across sessions, k_i within one."""
    num = den = 0.0
    for a in np.flatnonzero(injected):
        for b in np.flatnonzero(~injected):
            ka, kb = counts[sessions[a]], counts[sessions[b]]
            w = ka if sessions[a] == sessions[b] else ka * kb
            num += w * (1.0 if scores[a] > scores[b] else 0.5 if scores[a] == scores[b] else 0.0)
            den += w
    return num / den


def test_detection_auc_interval_weighs_within_session_pairs_once_per_copy():
    """Each step's injected trial and its null share a context: the resample must not count those pairs twice
    as often as the point estimate does, or the interval sits above the value (seen before: 0.552 [0.558, 0.639])."""
    rng = np.random.default_rng(11)
    k, steps = 10, 6
    sessions = np.repeat([f"s{i}" for i in range(k)], 2 * steps)
    base = np.repeat(rng.normal(size=k * steps), 2)  # a step's pair shares its context's level
    injected = np.tile([True, False], k * steps)
    scores = np.round(base + np.where(injected, 0.15, 0.0) + rng.normal(scale=0.05, size=base.size), 3)
    est = detection_auc_by_session(scores, injected, ["c"] * scores.size, sessions, n_resamples=400, seed=4)
    assert est.ci_low <= est.value <= est.ci_high
    # the interval is the percentile interval of the pair-enumerated AUC under the same draws
    names = sorted(set(sessions.tolist()))
    draws = np.random.default_rng(4).multinomial(k, np.full(k, 1.0 / k), size=400)
    dist = [_pair_auc(scores, injected, sessions, dict(zip(names, d))) for d in draws]
    assert (est.ci_low, est.ci_high) == pytest.approx(tuple(np.quantile(dist, [0.025, 0.975])), abs=1e-9)


def test_directions_are_stored_with_the_checkpoint_and_rewritten_atomically(models, release, tmp_path):
    d = models["full"] / "concepts"
    rec = json.loads((d / "concepts.json").read_text())
    adapter = NativeAdapter.load(models["full"])
    assert rec["split"] == "train" and rec["model_sha256"] == adapter.sha256
    assert rec["release"]["sha"] == adapter.config["release"]["sha"]
    assert set(rec["sites"]) == {"h", "embed"} and all(c["n_with"] >= 5 for c in rec["concepts"])
    assert {c["slot"] for c in rec["concepts"]} == {"goal", "planned_next"}
    before = {f.name: f.read_bytes() for f in d.iterdir()}
    write_concepts(models["full"], release)  # deterministic: byte-identical
    assert {f.name: f.read_bytes() for f in d.iterdir()} == before
    # another checkpoint's directions are refused, not silently used
    copy = tmp_path / "m"
    shutil.copytree(models["ablation"], copy)
    shutil.rmtree(copy / "concepts")
    shutil.copytree(d, copy / "concepts")
    with pytest.raises(AdapterError, match="re-make them"):
        NativeAdapter.load(copy).concept_directions()
    # a release the model was not trained on is refused and leaves the old directions in place
    other = make_release(tmp_path / "other", sessions=40, seed=11)
    with pytest.raises(UsageError, match="trained on release"):
        write_concepts(models["full"], other)
    assert {f.name: f.read_bytes() for f in d.iterdir()} == before
    assert not [p for p in models["full"].iterdir() if p.name.startswith(".concepts")]


def _profile(results: Path):
    from trb.report import run_profile
    from trb.results import ResultsStore

    store = ResultsStore(results)
    run = store.runs()[-1]
    return run, run_profile(store, run, n_resamples=500), store.items(run["run_id"]).to_pylist()


@pytest.fixture(scope="module")
def runs(models, release, tmp_path_factory) -> dict[str, Path]:
    """Track 2 run once on each model (the tests below read these stores)."""
    from trb.run import RunSpec, run_tracks

    out = tmp_path_factory.mktemp("t2-runs")
    for v in ("full", "ablation"):
        run_tracks(RunSpec(release, baseline=v, tracks=("2",), results=out / f"{v}.duckdb"),
                   NativeAdapter.load(models[v]), progress=False)
    return {v: out / f"{v}.duckdb" for v in ("full", "ablation")}


def test_track2_runs_full_vs_ablation_reproducibly(models, release, runs, tmp_path, capsys):
    from trb.run import RunSpec, run_tracks

    figs = {}
    for v in ("full", "ablation"):
        run, prof, items = _profile(runs[v])
        g, gr = prof["ground"], prof["ground-rand"]
        figs[v] = (g, gr)
        assert g["score"] > 0.5 and g["ci_low"] <= g["score"] <= g["ci_high"]
        assert g["strength"]["split"] == "dev" and g["strength"]["strength"] in (1.0, 2.0, 4.0, 8.0)
        assert set(g["sweep"]) == {"h", "embed"} and g["per_concept"]
        assert {r["split"] for r in items} == {"eval", "dev"}
        assert {r["condition"] for r in items} == {"injected", "zero", "random"}
        # the eval figure uses eval trials only: eval rows = n_sessions of the eval split
        assert g["n_sessions"] == len({r["session_id"] for r in items if r["split"] == "eval"})
    # reproducible bit for bit
    run_tracks(RunSpec(release, baseline="full", tracks=("2",), results=tmp_path / "again.duckdb"),
               NativeAdapter.load(models["full"]), progress=False)
    _, prof2, items2 = _profile(tmp_path / "again.duckdb")
    _, prof1, items1 = _profile(runs["full"])
    assert [(r["item_id"], r["score"]) for r in items1] == [(r["item_id"], r["score"]) for r in items2]
    assert prof1["ground"]["score"] == prof2["ground"]["score"]
    with capsys.disabled():
        for v, (g, gr) in figs.items():
            print(f"\n{v}: ground {g['score']:.3f} [{g['ci_low']:.3f}, {g['ci_high']:.3f}]  ground-rand "
                  f"{gr['score']:.3f} [{gr['ci_low']:.3f}, {gr['ci_high']:.3f}] strength {g['strength']['strength']}")


def test_strength_choice_ignores_eval(runs):
    from trb.tracks.track2 import choose_strength

    _, _, items = _profile(runs["full"])
    cols = {k: np.asarray([r[k] for r in items], dtype=object) for k in ("split", "site_rank", "condition", "strength",
                                                                          "score", "concept", "session_id",
                                                                          "cos_max")}
    cols["strength"] = cols["strength"].astype(float)
    cols["score"] = cols["score"].astype(float)
    before = choose_strength(cols)
    ev = cols["split"] == "eval"
    cols["score"] = np.where(ev, np.random.default_rng(0).random(ev.size), cols["score"])
    assert choose_strength(cols) == before


def test_not_applicable_without_activation_access(release, models, tmp_path):
    from trb.run import RunSpec, run_tracks

    class NoAccess:
        tier = "native"

        def __init__(self):
            self._a = NativeAdapter.load(models["full"])

        def spec(self):
            return self._a.spec()

        def emit_r(self, c):
            return self._a.emit_r(c)

        def act(self, c, r_override=None):
            return self._a.act(c, r_override)

    run = run_tracks(RunSpec(release, baseline="x", tracks=("2", "3"), results=tmp_path / "r.duckdb"),
                     NoAccess(), progress=False)
    assert run["summary"]["2"] == {"status": "not_applicable", "needs": ["activation_access"]}


def test_calibration_separates_grounded_from_ungrounded(release):
    from trb.calibrate_grounding import GroundedAgent, run_grounding_calibration

    rows, reasons = run_grounding_calibration(release, n_resamples=300)
    by = {r["agent"]: r["figures"] for r in rows}
    assert not reasons, reasons
    assert by["grounded"]["ground"].ci_low > 0.5
    assert by["ungrounded"]["ground"].value == pytest.approx(0.5)
    # the check can fail: an "ungrounded" slot filled by a grounded agent is caught
    rows, reasons = run_grounding_calibration(release, n_resamples=100,
                                              agents={"ungrounded": GroundedAgent(release, 0)})
    assert any("ungrounded" in r for r in reasons)


def test_load_concepts_absent_is_none(tmp_path):
    assert load_concepts(tmp_path) is None


def test_trb_concepts_rewrites_the_directions_and_refuses_another_release(models, release, tmp_path, capsys):
    from trb.cli import main

    d = models["ablation"] / "concepts"
    before = {f.name: f.read_bytes() for f in d.iterdir()}
    assert main(["concepts", str(models["ablation"]), "--release", str(release)]) == 0
    assert "concept directions for" in capsys.readouterr().out
    assert {f.name: f.read_bytes() for f in d.iterdir()} == before  # the same checkpoint and release: same bytes
    other = make_release(tmp_path / "other", sessions=40, seed=12)
    code = main(["concepts", str(models["ablation"]), "--release", str(other)])
    assert code != 0 and "trained on release" in capsys.readouterr().err
    assert {f.name: f.read_bytes() for f in d.iterdir()} == before


def test_a_step_budget_learns_from_a_fixed_hash_sample_of_the_train_steps(models, release, tmp_path, capsys):
    """``trb concepts --max-steps N``: the N train steps with the smallest sample hash, recorded; the same
    directions as learning from exactly those steps."""
    from trb.cli import main
    from trb.grounding import _recorded, _step_key, learn_concepts, learn_concepts_from
    from trb.releases import Release

    adapter = NativeAdapter.load(models["full"])
    rel = Release(release)
    steps = [(f"{s.session_id}/{t}", s.context(t), s.recorded_r(t)) for s in rel.sessions(split="train")
             for t in range(len(s.steps))]
    steps = [x for x in steps if _recorded(x[2], "goal") or _recorded(x[2], "planned_next")]
    n = 150
    assert len(steps) > n
    picked = sorted(steps, key=lambda x: _step_key(x[0]))[:n]
    picked = [x for x in steps if x in picked]  # release order
    want = learn_concepts_from(adapter, [x[1] for x in picked],
                               [{s: _recorded(x[2], s) for s in ("goal", "planned_next")} for x in picked],
                               release={"sha": rel.sha, "version": rel.version})
    got = learn_concepts(adapter, rel, max_steps=n)
    assert got.record["n_steps"] == n
    assert got.record["sample"]["max_steps"] == n and got.record["sample"]["of"] == len(steps)
    assert "smallest first" in got.record["sample"]["rule"]
    assert set(got.vectors) == set(want.vectors)
    for k, v in want.vectors.items():
        np.testing.assert_allclose(got.vectors[k], v, rtol=0, atol=1e-12)
    full = learn_concepts(adapter, rel)
    assert "sample" not in full.record and full.record["n_steps"] == len(steps)
    assert any(np.max(np.abs(full.vectors[k] - got.vectors[k])) > 1e-6 for k in got.vectors)  # a sample, not all
    with pytest.raises(UsageError, match="max_steps must be a positive integer"):
        learn_concepts(adapter, rel, max_steps=0)
    rel.close()

    # through the CLI, on a copy (the module's models stay as trained)
    copy = tmp_path / "full"
    shutil.copytree(models["full"], copy)
    assert main(["concepts", str(copy), "--release", str(release), "--max-steps", str(n)]) == 0
    assert f"from {n} of {len(steps)} steps of the train split" in capsys.readouterr().out
    on_disk = load_concepts(copy)
    assert on_disk.record["sample"] == got.record["sample"]
    for k, v in got.vectors.items():
        np.testing.assert_array_equal(on_disk.vectors[k], v)
