"""The engine as registries: tracks, declared adapter capabilities, the adapter registry, runs per split,
re-creating a run, the manifest check before scoring, and the conformance suite over every registered adapter."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest
from engine_helpers import make_reference, make_release, make_tiny_lm

from trb.adapters.capabilities import BatchedAct, RAblation, bind
from trb.errors import AdapterError, CheckFailed, ReleaseError, UsageError

# trains native reference models on a simulated release
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    return make_release(tmp_path_factory.mktemp("engine-rel"))


@pytest.fixture(scope="module")
def native_dir(release, tmp_path_factory) -> Path:
    return make_reference(release, tmp_path_factory.mktemp("ref") / "full")


@pytest.fixture(scope="module")
def lm_dir(release, tmp_path_factory) -> Path:
    return make_tiny_lm(release, tmp_path_factory.mktemp("lm") / "tiny")


class Follower:
    """Puts 0.6 on r.planned_next; counts how its hooks are called."""

    tier = "native"

    def __init__(self):
        self.single = 0
        self.batched = 0

    def spec(self):
        return {"kind": "follower"}

    def emit_r(self, context):
        return {"planned_next": context.action_space[0] if context.action_space else None, "caused_by_self": 0.6}

    def act(self, context, r_override=None):
        self.single += 1
        r = r_override or self.emit_r(context)
        rest = 0.4 / len(context.action_space)
        return {a: rest + (0.6 if a == r.get("planned_next") else 0.0) for a in context.action_space}

    def act_batch(self, contexts, r_overrides=None):  # present, but only used when declared
        self.batched += 1
        return [self.act(c, r) for c, r in zip(contexts, r_overrides or [None] * len(contexts))]


class DeclaredFollower(Follower):
    capabilities = (BatchedAct,)


# -- declared capabilities ---------------------------------------------------------------------------


def test_capabilities_are_declared_not_probed(release, tmp_path):
    from trb.run import RunSpec, run_tracks

    undeclared, declared = Follower(), DeclaredFollower()
    assert bind(undeclared).capabilities == frozenset() and bind(declared).capabilities == {"batched_act"}
    a = run_tracks(RunSpec(release, baseline="u", tracks=("1",), results=tmp_path / "r.duckdb"),
                   undeclared, progress=False)
    b = run_tracks(RunSpec(release, baseline="d", tracks=("1",), results=tmp_path / "r.duckdb"),
                   declared, progress=False)
    # act_batch never called when not declared: every do(r') and each step's act(c_t) and do(r_t) came one by one
    calls = json.loads(a["timings"])["adapter_calls"]
    assert undeclared.batched == 0 and undeclared.single == calls > a["n_items"] > 0
    assert declared.batched > 0 and declared.single == calls  # the same calls, made through act_batch
    assert json.loads(b["timings"])["capabilities"] == ["batched_act"]


@pytest.mark.parametrize("broken, message", [
    (type("NoAct", (), {"tier": "proxy", "spec": lambda s: {}, "emit_r": lambda s, c: {}}), "needs a method act"),
    (type("BadTier", (Follower,), {"tier": "oracle"}), "tier must be"),
    (type("Unknown", (Follower,), {"capabilities": ("telepathy",)}), "unknown capability 'telepathy'"),
    (type("Liar", (Follower,), {"capabilities": (RAblation,)}), "declares r_ablation but has no method act_ablated"),
])
def test_a_capability_declared_but_missing_is_refused_at_load(broken, message):
    with pytest.raises(AdapterError, match=message):
        bind(broken())


# -- the track registry ------------------------------------------------------------------------------


class _NeedsAblation:
    """A throw-away track that needs the r-ablation capability (as Tracks 4 and 5 will)."""

    id = "94"
    name = "test-viability"
    section = "test"
    needs = (RAblation,)
    columns = ()

    def __init__(self, n: int = 5):
        from trb.tracks.base import Metric

        self.n = n
        self.metrics = (Metric("94", "94", "ratio", "Track 94 — test", "a test figure"),)

    def count(self, release, split):
        return self.n

    def items(self, release, split):
        return iter(())

    def score(self, adapter, items, timer=None, progress=None):
        return [], {"scored": 0}

    def aggregate(self, metric, columns, **kw):
        raise ValueError("never scored")


@pytest.fixture
def ablation_track():
    from trb.tracks.base import register_track, unregister_track

    track = register_track(_NeedsAblation())
    yield track
    unregister_track(track.id)


def test_a_track_the_adapter_cannot_run_is_not_applicable_everywhere(release, tmp_path, ablation_track, capsys):
    from trb.report import build_report, render_html, render_markdown
    from trb.results import ResultsStore
    from trb.run import RunSpec, run_tracks

    results = tmp_path / "r.duckdb"
    run = run_tracks(RunSpec(release, baseline="trace-full", tracks=("1", "94"), results=results),
                     DeclaredFollower(), progress=False)
    assert run["summary"]["94"] == {"status": "not_applicable", "needs": ["r_ablation"]}
    rep = build_report(ResultsStore(results), n_resamples=20)
    entry = rep["baselines"][0]["tracks"]["94"]
    assert entry["score"] is None and entry["not_applicable"] and entry["note"] == "not applicable (needs r_ablation)"
    assert "not applicable (needs r_ablation)" in render_markdown(rep)
    assert "not applicable (needs r_ablation)" in render_html(rep)
    # the results store's columns and the report's metrics come from the registry
    from trb.tracks.base import all_metrics
    assert "94" in [m.key for m in all_metrics()]
    with pytest.raises(UsageError, match="no requested track can run"):
        run_tracks(RunSpec(release, baseline="x", tracks=("94",), results=results), DeclaredFollower(), progress=False)


def _counts(release) -> dict:
    """Track 1 and Track 3 items per split, counted from the release's parquet files (not through the tracks)."""
    import duckdb

    con = duckdb.connect()
    out = {}
    for s in ("train", "dev", "eval", "transfer"):
        d = Path(release) / "data"
        cf = list((d / "counterfactuals").glob(f"{s}-*.parquet"))
        at = list((d / "attribution").glob(f"{s}-*.parquet"))
        out[s] = {
            "1": con.execute(f"SELECT count(*) FROM read_parquet({[str(f) for f in cf]}) WHERE phi_type IS NOT NULL")
            .fetchone()[0] if cf else 0,
            "3": con.execute(f"SELECT count(*) FROM read_parquet({[str(f) for f in at]}) "
                             "WHERE label IN ('self', 'exogenous')").fetchone()[0] if at else 0}
    return out


def test_unknown_track_and_split_are_usage_errors(release, tmp_path):
    from trb.run import RunSpec, run_tracks

    with pytest.raises(UsageError, match="track '9' is not available"):
        run_tracks(RunSpec(release, baseline="x", tracks=("9",), results=tmp_path / "r.duckdb"),
                   Follower(), progress=False)
    with pytest.raises(UsageError, match=r"has no split 'holdout'; its splits: train, dev, eval") as e:
        run_tracks(RunSpec(release, baseline="x", split="holdout", results=tmp_path / "r.duckdb", tracks=("1", "3")),
                   Follower(), progress=False)
    n = _counts(release)
    assert str(e.value).endswith("splits with items: " + "; ".join(
        f"{s} (" + ", ".join(f"track {t}: {n[s][t]}" for t in ("1", "3") if n[s][t]) + ")"
        for s in ("train", "dev", "eval", "transfer") if n[s]["1"] or n[s]["3"]))
    assert not (tmp_path / "r.duckdb").exists()


def test_a_split_with_no_items_is_an_error_not_zero_items(release, tmp_path):
    from trb.run import NothingToScore, RunSpec, run_tracks
    from trb.tracks.base import register_track, unregister_track

    class Empty(_NeedsAblation):
        id = "95"
        needs = ()

        def __init__(self):
            from trb.tracks.base import Metric

            self.n = 0
            self.metrics = (Metric("95", "95", "x", "Track 95 — empty", "nothing"),)

    register_track(Empty())
    try:
        with pytest.raises(NothingToScore, match=r"split 'eval' .* has nothing to score for track\(s\) 95: track 95: "
                                                 r"no items in split 'eval'; splits with items: none$"):
            run_tracks(RunSpec(release, baseline="x", tracks=("95",), results=tmp_path / "r.duckdb"),
                       Follower(), progress=False)
    finally:
        unregister_track("95")


# -- the release is checked against its manifest before scoring --------------------------------------


@pytest.mark.parametrize("damage", ["change", "delete", "add"])
def test_a_tampered_or_incomplete_release_is_refused(release, tmp_path, damage, capsys):
    from trb.cli import main

    copy = tmp_path / "rel"
    shutil.copytree(release, copy)
    shard = sorted((copy / "data" / "counterfactuals").glob("eval-*.parquet"))[0]
    if damage == "change":
        data = bytearray(shard.read_bytes())
        data[len(data) // 2] ^= 0xFF
        shard.write_bytes(bytes(data))
    elif damage == "delete":
        shard.unlink()
    else:
        shutil.copy(shard, shard.with_name("eval-99999-of-99999.parquet"))
    code = main(["run", "--release", str(copy), "--adapter", "native", "--model", str(copy), "--baseline", "x",
                 "--results", str(tmp_path / "r.duckdb")])
    err = capsys.readouterr().err
    assert code == int(ReleaseError.exit_code), err
    assert "differ from its manifest" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    want = {"change": "sha256", "delete": "missing", "add": "not listed in the manifest"}[damage]
    assert want in err
    assert not (tmp_path / "r.duckdb").exists()


# -- the adapter registry, re-creating a run ---------------------------------------------------------


def test_the_registry_lists_the_builtins_with_their_options(capsys):
    from trb.adapters.registry import available_adapters
    from trb.cli import main

    kinds = available_adapters()
    assert {"native", "proxy"} <= set(kinds)
    assert main(["adapters", "--json"]) == 0
    listed = {a["name"]: a for a in json.loads(capsys.readouterr().out)["adapters"]}
    assert listed["proxy"]["capabilities"] == ["batched_act", "batched_emit", "continuation_scoring", "emit_counters",
                                              "r_ablation", "activation_access"]
    assert listed["native"]["capabilities"] == ["batched_act", "batched_emit", "r_ablation", "activation_access"]
    assert {o["flag"] for o in listed["proxy"]["options"]} == {"--dtype", "--elicit", "--scaffold", "--history",
                                                               "--device", "--intervention", "--chat-template",
                                                               "--prompt-format", "--action-score"}
    assert listed["native"]["options"] == [] and listed["native"]["accepts"] == ["path"]


def test_an_option_of_another_adapter_or_a_model_it_does_not_accept_is_a_usage_error(release, native_dir, tmp_path,
                                                                                      capsys):
    from trb.cli import main

    base = ["run", "--release", str(release), "--adapter", "native", "--baseline", "x", "--results",
            str(tmp_path / "r.duckdb")]
    assert main(base + ["--model", str(native_dir), "--dtype", "float16"]) == int(UsageError.exit_code)
    assert "adapter native takes no option(s) dtype" in capsys.readouterr().err
    assert main(base + ["--model", "https://example.invalid/v1"]) == int(UsageError.exit_code)
    assert "adapter native accepts an existing path" in capsys.readouterr().err


def test_rerun_recreates_the_adapter_and_reproduces_every_item(release, native_dir, tmp_path, capsys):
    from trb.cli import main

    results = tmp_path / "r.duckdb"
    assert main(["run", "--release", str(release), "--adapter", "native", "--model", str(native_dir),
                 "--baseline", "trace-full", "--results", str(results), "-q"]) == 0
    run_id = capsys.readouterr().out.strip()
    spec = json.loads(duckdb.connect(str(results), read_only=True).execute(
        "SELECT adapter_spec FROM runs").fetchone()[0])
    assert spec["adapter"] == "native" and spec["model"] == str(native_dir) and spec["options"] == {}
    assert main(["rerun", run_id, "--results", str(results), "--json", "-q"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["reproduced"] and out["n_equal"] == out["n_items"] > 0 and out["max_abs_diff"] == 0
    assert main(["rerun", run_id, "--results", str(results), "--record", "-q"]) == 0
    assert duckdb.connect(str(results), read_only=True).execute("SELECT count(*) FROM runs").fetchone()[0] == 2
    capsys.readouterr()
    # the checkpoint changed since the run: refused, not silently re-scored
    changed = tmp_path / "changed"
    shutil.copytree(native_dir, changed)
    con = duckdb.connect(str(results))
    con.execute("UPDATE runs SET adapter_spec = replace(adapter_spec, ?, ?)", [str(native_dir), str(changed)])
    con.close()
    weights = changed / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0x01
    weights.write_bytes(bytes(data))
    assert main(["rerun", run_id, "--results", str(results), "-q"]) == int(AdapterError.exit_code)
    assert "differs from the recorded one" in capsys.readouterr().err


def test_a_proxy_run_recorded_before_the_prompt_options_reruns_as_it_was_made(release, lm_dir, tmp_path, capsys):
    """A spec without intervention/chat_template/prompt_format/action_score (and their spec keys) was made with
    template/off/trace/sum: rerun passes those (the options' spec_default), not the new defaults."""
    from trb.adapters.proxy import ADAPTER
    from trb.adapters.registry import load_adapter
    from trb.cli import main

    chat = tmp_path / "chat-lm"  # the same weights, with a chat template the new default (auto) would apply
    shutil.copytree(lm_dir, chat)
    config = json.loads((chat / "tokenizer_config.json").read_text())
    config["chat_template"] = "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"
    (chat / "tokenizer_config.json").write_text(json.dumps(config))
    assert load_adapter("proxy", chat, device="cpu").spec()["chat_template_applied"] is True
    results = tmp_path / "r.duckdb"
    assert main(["run", "--release", str(release), "--adapter", "proxy", "--model", str(chat), "--device", "cpu",
                 "--chat-template", "off", "--prompt-format", "trace", "--tracks", "1", "--baseline", "old",
                 "--results", str(results), "-q"]) == 0
    run_id = capsys.readouterr().out.strip()
    con = duckdb.connect(str(results))
    spec = json.loads(con.execute("SELECT adapter_spec FROM runs").fetchone()[0])
    assert spec["chat_template"] == "off" and spec["intervention"] == "template" and spec["action_score"] == "sum"
    old = {k: v for k, v in spec.items() if k not in ADAPTER.spec_added}  # the format before these options
    old["options"] = {"device": "cpu"}
    con.execute("UPDATE runs SET adapter_spec = ?", [json.dumps(old, sort_keys=True)])
    con.close()
    assert main(["rerun", run_id, "--results", str(results), "--json", "-q"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["reproduced"] and out["n_equal"] == out["n_items"] > 0 and out["max_abs_diff"] == 0


def test_a_proxy_run_with_the_default_prompt_options_reruns_as_it_was_made(release, lm_dir, tmp_path, capsys):
    """A new run with the prompt options at their defaults passes none of them, so its options record none, but
    its spec has their keys: rerun must re-create it with the defaults (chat template applied), never with the
    values that re-create older runs (spec_default: off/trace)."""
    from trb.cli import main

    chat = tmp_path / "chat-lm"  # a tokenizer with a chat template: the default (auto) applies it
    shutil.copytree(lm_dir, chat)
    config = json.loads((chat / "tokenizer_config.json").read_text())
    config["chat_template"] = "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"
    (chat / "tokenizer_config.json").write_text(json.dumps(config))
    (chat / "trb-baseline.json").unlink(missing_ok=True)  # a trb-trained model defaults to off/trace
    results = tmp_path / "r.duckdb"
    assert main(["run", "--release", str(release), "--adapter", "proxy", "--model", str(chat), "--device", "cpu",
                 "--tracks", "1", "--baseline", "new", "--results", str(results), "-q"]) == 0
    run_id = capsys.readouterr().out.strip()
    con = duckdb.connect(str(results), read_only=True)
    spec = json.loads(con.execute("SELECT adapter_spec FROM runs").fetchone()[0])
    con.close()
    assert spec["options"] == {"device": "cpu"}
    assert spec["chat_template"] == "auto" and spec["chat_template_applied"] is True
    assert main(["rerun", run_id, "--results", str(results), "--json", "-q"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["reproduced"] and out["n_equal"] == out["n_items"] > 0 and out["max_abs_diff"] == 0


def test_a_run_of_an_adapter_object_cannot_be_recreated_by_name(release, tmp_path):
    from trb.run import RunSpec, rerun, run_tracks

    run = run_tracks(RunSpec(release, baseline="x", tracks=("3",), results=tmp_path / "r.duckdb"),
                     Follower(), progress=False)
    with pytest.raises(UsageError, match="not loaded from the adapter registry"):
        rerun(run["run_id"], results=tmp_path / "r.duckdb", progress=False)


# -- runs per (baseline, split) -----------------------------------------------------------------------


def test_splits_are_never_mixed_and_delta_gov_is_held_out_only(release, tmp_path):
    from trb.report import build_report, render_html, render_json, render_markdown
    from trb.results import ResultsStore
    from trb.run import RunSpec, run_tracks

    results = tmp_path / "r.duckdb"

    class Weaker(Follower):
        def act(self, context, r_override=None):
            p = super().act(context, r_override)
            return {a: 0.5 * v + 0.5 / len(p) for a, v in p.items()}

    for split in ("train", "eval"):
        run_tracks(RunSpec(release, baseline="trace-full", split=split, results=results, allow_train_split=True),
                   Follower(), progress=False)
        run_tracks(RunSpec(release, baseline="trace-ablation", split=split, results=results, allow_train_split=True),
                   Weaker(), progress=False)
    rep = build_report(ResultsStore(results), n_resamples=50)
    assert rep["splits"] == ["eval", "train"]
    assert [(t["split"], [b["name"] for b in t["baselines"]]) for t in rep["tables"]] == [
        ("eval", ["trace-ablation", "trace-full"]), ("train", ["trace-ablation", "trace-full"])]
    for table in rep["tables"]:
        assert {b["split"] for b in table["baselines"]} == {table["split"]}
    assert rep["delta_gov"]["splits"] == ["eval"] and rep["delta_gov"]["value"] > 0
    train = rep["tables"][1]
    assert train["delta_gov"] is None and "held-out splits only" in train["delta_gov_note"]
    md = render_markdown(rep)
    assert "## Split eval (held out)" in md and "## Split train (not held out" in md
    for line in md.splitlines():
        if line.startswith("| trace-"):
            assert line.split(" | ")[1] in ("eval", "train")
    assert "Split train (not held out" in render_html(rep)
    assert json.loads(render_json(rep))["tables"][1]["split"] == "train"

    # only train runs: no Δgov at all, and the report says why
    only_train = tmp_path / "t.duckdb"
    run_tracks(RunSpec(release, baseline="trace-full", split="train", results=only_train, allow_train_split=True),
               Follower(), progress=False)
    run_tracks(RunSpec(release, baseline="trace-ablation", split="train", results=only_train, allow_train_split=True),
               Weaker(), progress=False)
    rep = build_report(ResultsStore(only_train), n_resamples=20)
    assert rep["delta_gov"] is None and "held-out" in rep["delta_gov_note"]


# -- the conformance suite ----------------------------------------------------------------------------


def _kinds_with_models(native_dir, lm_dir, served_url=None):
    return {"native": native_dir, "proxy": lm_dir, "served": served_url}


#: options a kind is checked with (the served adapter acts with no scaffold, so its check sends few requests;
#: its cot path is held to the proxy's in test_served_adapter.py)
_KIND_OPTIONS = {"served": {"scaffold": "none"}}


def test_every_registered_adapter_passes_the_conformance_suite(release, native_dir, lm_dir):
    from completions_server import CompletionsServer

    from trb.adapters.registry import available_adapters
    from trb.run import load_adapter
    from trb.testing import assert_conformance

    with CompletionsServer(lm_dir) as server:  # the served adapter's model: the tiny LM over HTTP on loopback
        models = _kinds_with_models(native_dir, lm_dir, server.url)
        assert set(available_adapters()) <= set(models), "a registered adapter has no model to check it on here"
        for kind, model in models.items():
            adapter = load_adapter(kind, model, **_KIND_OPTIONS.get(kind, {}))
            report = assert_conformance(adapter, release, max_items=6)
            names = {c.name for c in report.checks}
            assert {"contract", "spec", "act_distribution", "act_deterministic", "override_is_local",
                    "emit_r_slots", "batched_act"} <= names, kind
            if kind == "native":
                assert "batched_emit" in names
            else:
                assert "continuation_scoring" in names


class Sticky(Follower):
    """Breaks the contract: an override persists into later calls, and the batched hook disagrees."""

    capabilities = (BatchedAct,)

    def __init__(self):
        super().__init__()
        self.last = None

    def act(self, context, r_override=None):
        self.last = r_override or self.last
        return super().act(context, self.last)

    def act_batch(self, contexts, r_overrides=None):
        return [{a: 1.0 / len(c.action_space) for a in c.action_space} for c in contexts]


def test_the_conformance_suite_fails_an_adapter_that_breaks_the_contract(release, capsys):
    from trb.testing import assert_conformance, check_adapter

    report = check_adapter(Sticky(), release, max_items=8)
    failed = {c.name for c in report.failed}
    assert {"override_is_local", "batched_act"} <= failed and not report.passed
    assert "conformance FAILED" in report.render()
    with pytest.raises(CheckFailed, match="override_is_local"):
        assert_conformance(Sticky(), release, max_items=8)

    class WrongSpace(Follower):
        def act(self, context, r_override=None):
            return {"teleport": 1.0}

    assert "act_distribution" in {c.name for c in check_adapter(WrongSpace(), release, max_items=4).failed}
    assert check_adapter(Follower(), release, max_items=8).passed


# -- split discipline -----------------------------------------------------------------------------------


def test_the_train_split_needs_the_flag_and_is_bannered(release, tmp_path):
    from trb.errors import UsageError
    from trb.report import build_report, render_markdown
    from trb.results import ResultsStore
    from trb.run import RunSpec, run_tracks

    store = tmp_path / "r.duckdb"
    with pytest.raises(UsageError, match="--allow-train-split"):
        run_tracks(RunSpec(release, baseline="f", tracks=("1",), split="train", results=store),
                   Follower(), progress=False)
    assert not store.exists()  # refused before anything was scored or written
    r = run_tracks(RunSpec(release, baseline="f", tracks=("1",), split="train", results=store, allow_train_split=True),
                   Follower(), progress=False)
    assert json.loads(r["timings"])["split_check"]["checked"] is False
    rep = build_report(ResultsStore(store), n_resamples=0)
    (table,) = rep["tables"]
    assert table["split"] == "train" and "TRAIN SPLIT" in table["banner"] and table["delta_gov"] is None
    assert "> **TRAIN SPLIT" in render_markdown(rep, None)


class Trained(Follower):
    def __init__(self, trained_on):
        super().__init__()
        self.trained_on = trained_on

    def spec(self):
        return {"kind": "trained-follower", "trained_on": self.trained_on}


def test_a_model_trained_on_the_evaluated_subjects_is_refused(release, tmp_path):
    from trb.releases import Release
    from trb.run import RunSpec, run_tracks
    from trb.subjects import SplitOverlap, subject_hash, trained_on

    rel = Release(release)
    try:
        on_train, on_eval = trained_on(rel, "train"), trained_on(rel, "eval")
        eval_ids = [r["subject_id"] for r in rel.rows("SELECT DISTINCT subject_id FROM sessions WHERE split = 'eval'")]
    finally:
        rel.close()
    assert on_eval["subject_hashes"] == sorted(subject_hash(s) for s in eval_ids) and on_eval["n_subjects"] > 0
    assert not set(on_train["subject_hashes"]) & set(on_eval["subject_hashes"])  # the release's split is by subject
    store = tmp_path / "r.duckdb"
    leaky = dict(on_train, subject_hashes=sorted(on_train["subject_hashes"] + on_eval["subject_hashes"][:1]))
    leaky.pop("subjects_digest")
    with pytest.raises(SplitOverlap, match=r"trained on 1 of the \d+ subjects of split 'eval'"):
        run_tracks(RunSpec(release, baseline="t", tracks=("1",), results=store), Trained(leaky), progress=False)
    with pytest.raises(SplitOverlap, match="no subject_hashes"):
        run_tracks(RunSpec(release, baseline="t", tracks=("1",), results=store),
                   Trained({"release_sha": "x"}), progress=False)
    assert not store.exists()
    ok = run_tracks(RunSpec(release, baseline="t", tracks=("1",), results=store), Trained(on_train), progress=False)
    check = json.loads(ok["timings"])["split_check"]
    assert check["checked"] is True and check["n_training_subjects"] == on_train["n_subjects"]
    plain = run_tracks(RunSpec(release, baseline="f", tracks=("1",), results=store), Follower(), progress=False)
    assert json.loads(plain["timings"])["split_check"]["checked"] is False  # declared nothing: said so, not passed


def test_checkpoints_the_toolkit_trains_declare_their_training_subjects(release, native_dir):
    from trb.adapters.native import NativeAdapter
    from trb.releases import Release
    from trb.subjects import trained_on

    spec = NativeAdapter.load(native_dir).spec()
    rel = Release(release)
    try:
        assert spec["trained_on"] == trained_on(rel, "train")
    finally:
        rel.close()
    assert spec["n_parameters"] == sum(p.numel() for p in NativeAdapter.load(native_dir).model.parameters())
