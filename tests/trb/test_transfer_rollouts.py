"""Track 6 over Tracks 4 and 5: transfer tasks in task sets, rollouts on the release's transfer contexts, and Track
6's figures, rules and coverage for them: a real release, the real engine (run_tracks, RunSpec), a real DuckDB
results store and a scripted grid adapter (engine_helpers.GridSteerer)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from environments.tasksets import TaskSetInvalid, default_taskset, parse_taskset
from environments.transfer_tasks import transfer_section
from simworld.contexts import TRANSFER_CONTEXTS
from trb.errors import UsageError
from trb.report import build_report, render_markdown
from trb.results import ResultsStore
from trb.run import RunSpec, run_tracks
from trb.tracks.base import metric_by_key
from trb.transfer import anti_goodhart

CONTEXTS = sorted(c.context_id for c in TRANSFER_CONTEXTS)
V2 = Path(__file__).parents[2] / "environments" / "tasksets" / "grid-rollouts-v2.toml"
WEAK = "xfer-lab-b.maze-9x9-gusty.careful.it"


# -- task sets ------------------------------------------------------------------------------------


def test_v2_holds_v1_unchanged_plus_the_generated_transfer_tasks():
    v1, v2 = default_taskset("grid-rollouts-v1.toml"), default_taskset()
    assert v2.version == "2" and v2.contexts() == CONTEXTS and v2.seeds["transfer"] == 4
    assert V2.read_text().endswith(transfer_section())  # the file is what the seeded generator makes
    in_dist = [t for t in v2.tasks if t.context is None]
    assert in_dist == list(v1.tasks)
    # v1's tasks keep v1's episodes (seed_version), so eval runs of v1 and v2 roll the same ones
    assert all(v1.seeds_for(a, "eval") == v2.seeds_for(b, "eval") for a, b in zip(v1.tasks, in_dist))
    for t in v2.tasks:
        if t.context is None:
            assert v2.seeds_for(t, "transfer") == [] and len(v2.seeds_for(t, "eval")) == 4
        else:
            assert v2.seeds_for(t, "eval") == [] and v2.seeds_for(t, "train") == []
            seeds = v2.seeds_for(t, "transfer")
            assert len(seeds) == 4 and all(s.text.startswith("trb-rollout:grid-rollouts:1:transfer:") for s in seeds)
            assert t.language == t.context.rsplit(".", 1)[1] and t.table["stimulus"] in t.context


def test_for_release_keeps_the_release_contexts_and_names_those_without_tasks():
    ts = default_taskset().for_release([CONTEXTS[0], "xfer-lab-z.maze-9x9-gusty.careful.fr"])
    assert ts.sha == default_taskset().sha
    cov = ts.describe()["transfer"]
    assert cov["without_tasks"] == ["xfer-lab-z.maze-9x9-gusty.careful.fr"]
    assert cov["not_in_release"] == CONTEXTS[1:]
    rolled = {t.context for t in ts.tasks if ts.seeds_for(t, "transfer")}
    assert rolled == {CONTEXTS[0]}


@pytest.mark.parametrize("edit, where", [
    (("transfer = 4  #", "transfer = 0  #"), "seeds.transfer: missing or 0: the set has transfer tasks"),
    ((f'context = "{WEAK}"', 'context = "lab b"'), "viability[12].context: expected a transfer context id"),
    ((f'context = "{WEAK}"', 'context = "xfer-lab-b.maze-9x9-gusty.careful.xx"'),
     "viability[12].language: missing, and the context id's last part 'xx'"),
])
def test_a_bad_transfer_task_names_file_line_and_key(edit, where):
    text = V2.read_text().replace(*edit, 1)
    with pytest.raises(TaskSetInvalid) as e:
        parse_taskset(text.encode(), "v2.toml")
    assert any(p.startswith("v2.toml:") and where in p for p in e.value.problems), e.value.problems
    line = next(p for p in e.value.problems if where in p).split(":")[1]
    assert line.isdigit()


def test_transfer_seeds_without_a_transfer_task_are_refused():
    v1 = (Path(__file__).parents[2] / "environments" / "tasksets" / "grid-rollouts-v1.toml").read_text()
    with pytest.raises(TaskSetInvalid, match="problem") as e:
        parse_taskset(v1.replace("train = 2", "train = 2\ntransfer = 3").encode(), "x.toml")
    assert any("seeds.transfer: no task declares a context" in p for p in e.value.problems)


# -- runs and Track 6 -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    from engine_helpers import make_release

    return make_release(tmp_path_factory.mktemp("xrel"), sessions=120)


@pytest.fixture(scope="module")
def store(release, tmp_path_factory):
    """trace-full (its r_t governs everywhere) and cot-sft (its r_t governs nothing on WEAK), eval and transfer."""
    from engine_helpers import GridSteerer

    path = tmp_path_factory.mktemp("xres") / "results.duckdb"
    for name, agent in (("trace-full", GridSteerer()), ("cot-sft", GridSteerer({WEAK}))):
        for split in ("eval", "transfer"):
            run_tracks(RunSpec(release, baseline=name, tracks=("4", "5"), split=split, results=path,
                               trained_by="Lab A"), agent, progress=False)
    return ResultsStore(path)


def test_a_transfer_run_of_tracks_4_and_5_rolls_each_release_context(store):
    run = next(r for r in store.runs() if r["split"] == "transfer" and r["baseline"] == "trace-full")
    assert run["timings"]["summary"]["4"]["episodes"] == 3 * 4 * 4 * 2  # contexts × tasks × seeds × conditions
    rows = store.items(run["run_id"]).to_pylist()
    # Track 4 also acts the transfer split's Track 1 interventions through (their rows: metric "intervention"),
    # each in its recorded session's own context
    acted = [r for r in rows if r["metric"] == "intervention"]
    assert acted and {r["context_id"] for r in acted} <= set(CONTEXTS)
    by = {}
    for r in rows:
        if r["metric"] != "intervention":
            by.setdefault((r["track"], r["context_id"]), set()).add(r["item_id"].split("/")[0])
    assert sorted({c for _, c in by}) == CONTEXTS
    for (_track, ctx), tasks in by.items():  # each context's rows come from its own tasks only
        prefix = "x" + ctx.split(".")[0].removeprefix("xfer-lab-")
        assert all(t.startswith(prefix) for t in tasks) and len(tasks) == 4
    assert all(r["split"] == "transfer" for r in rows)
    info = run["taskset"] if isinstance(run["taskset"], dict) else json.loads(run["taskset"])
    assert info["transfer"]["without_tasks"] == [] and info["transfer"]["release_contexts"] == CONTEXTS
    # the eval run of the same task set rolls no transfer task
    ev = next(r for r in store.runs() if r["split"] == "eval" and r["baseline"] == "trace-full")
    assert {r["context_id"] for r in store.items(ev["run_id"]).to_pylist()}.isdisjoint(CONTEXTS)


def test_track6_gives_tracks_4_and_5_with_their_rules(store):
    rep = build_report(store, n_resamples=300, seed=2)
    vec = {p["name"]: p["vector"]["trans"] for p in rep["profile_vectors"]}
    for name in ("trace-full", "cot-sft"):
        entry = vec[name]
        assert entry["covers"] == ["4", "5"] and entry["complete"] is False
        assert set(entry["missing"]) == {"1", "2", "3"}
        for key in ("viab", "nav"):
            f = entry["figures"][key]
            assert f["status"] == "ok" and [c["context_id"] for c in f["contexts"]] == CONTEXTS
            assert f["drop"]["ci_low"] is not None and f["min"]["ci_low"] is not None
            assert f["anti_goodhart"]["verdict"] == "not applicable"  # a ratio, a difference: no 0–1 rule
            assert f["collapse"]["against"]["value"] == (1.0 if key == "viab" else 0.0)
    for key in ("viab", "nav"):
        weak = vec["cot-sft"]["figures"][key]
        assert weak["collapse"]["collapsed"] is True and weak["collapse"]["contexts"] == [WEAK]
        assert weak["min"]["context_id"] == WEAK
        assert vec["trace-full"]["figures"][key]["collapse"]["collapsed"] is False
    md = render_markdown(rep)
    assert "Track 4 — viability (completion ratio) | cot-sft" in md and f"COLLAPSED on {WEAK}" in md
    assert "incomplete: Track 1: not run on the transfer split" in md


def test_the_anti_goodhart_rule_never_reads_a_ratio_or_a_lift():
    drop = {"value": 3.0, "ci_low": 2.0, "ci_high": 4.0}
    entry = {"eval": {"score": 5.0, "ci_low": 4.0, "ci_high": 6.0}, "drop": drop, "min": {"context_id": "c"},
             "contexts": [{"context_id": "c", "score": 2.0, "drop": drop}]}  # the per-context drop the rule reads
    for key in ("viab", "nav"):
        assert anti_goodhart(entry, metric_by_key(key))["flagged"] is False
    assert anti_goodhart(entry, metric_by_key("1"))["flagged"] is True  # a 0–1 figure: the same numbers flag


def test_a_transfer_run_without_tasks_for_the_release_contexts_is_an_error(release, tmp_path):
    from engine_helpers import GridSteerer

    results = tmp_path / "r.duckdb"
    other = V2.read_text().replace("xfer-lab-", "xfer-lab-elsewhere-")
    path = tmp_path / "other.toml"
    path.write_text(other)
    for tasks in (default_taskset("grid-rollouts-v1.toml"), str(path)):
        with pytest.raises(UsageError, match="no .*task for any of the release's transfer contexts"):
            run_tracks(RunSpec(release, baseline="x", tracks=("4", "5"), split="transfer", results=results,
                               trained_by="Lab A", tasks=tasks), GridSteerer(), progress=False)
    assert not results.exists() or not ResultsStore(results).runs()


def test_a_release_context_without_tasks_is_named_in_the_run_and_the_report(release, tmp_path):
    from engine_helpers import GridSteerer

    text = V2.read_text()
    head, _, tail = text.partition("# -- transfer tasks")
    kept = [b for b in tail.split("\n\n") if WEAK not in b]
    path = tmp_path / "partial.toml"
    path.write_text(head + "# -- transfer tasks" + "\n\n".join(kept))
    results = tmp_path / "r.duckdb"
    for split in ("eval", "transfer"):
        run_tracks(RunSpec(release, baseline="trace-full", tracks=("4",), split=split, results=results,
                           trained_by="Lab A", tasks=str(path)), GridSteerer(), progress=False)
    rep = build_report(ResultsStore(results), n_resamples=200)
    f = rep["profile_vectors"][0]["vector"]["trans"]["figures"]["viab"]
    assert f["contexts_without_tasks"] == [WEAK] and WEAK not in [c["context_id"] for c in f["contexts"]]
    assert f"{WEAK}: no rollout task in the task set (not scored)" in render_markdown(rep)
