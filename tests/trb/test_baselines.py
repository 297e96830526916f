"""Spec baselines 1–3: LM baselines trained here on a release's train split, run through the proxy adapter."""

from __future__ import annotations

import json
import math

import pytest

from trb.adapters.proxy import DIRECT_TEMPLATE_VERSION, TEMPLATE_VERSION, ProxyAdapter, format_r
from trb.baselines import BASELINE_RUNS, BaselineSettings, train_baseline, training_pairs
from trb.errors import UsageError
from trb.releases import Release

# trains the LM baselines on a simulated release
pytestmark = pytest.mark.slow

SMALL = dict(n_embd=64, n_layer=2, n_head=2, vocab_size=1024, batch_size=16, lr=3e-3, warmup_steps=10, history=1)


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    from corpus import Corpus, ingest, init_corpus
    from corpus.release import cut_release
    from corpus.simulate import write_simulation

    tmp = tmp_path_factory.mktemp("blrel")
    write_simulation(tmp / "sim.jsonl", n_sessions=150, seed=11, progress=False)
    c = Corpus(init_corpus(tmp / "corpus"))
    ingest(c, [tmp / "sim.jsonl"], progress=False)
    return cut_release(c, "0.1.0", kind="smoke", progress=False).directory


@pytest.fixture(scope="module")
def models(release, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("blmodels")
    out = {}
    for variant in ("instruct-base", "cot-sft"):
        out[variant] = train_baseline(release, variant, tmp / variant, seed=3, progress=False,
                                      settings=BaselineSettings(**SMALL, epochs=3, max_pairs=300))
    return out


def test_training_text_is_exactly_what_the_proxy_adapter_scores(release):
    rel = Release(release)
    try:
        sessions = {s.session_id: s for s in rel.sessions(split="train")}
        n_steps = sum(1 for s in sessions.values() for st in s.steps if st["action_space"])
        for variant, scaffold in (("instruct-base", "none"), ("cot-sft", "cot")):
            pairs = training_pairs(rel, variant, history=1)
            assert len(pairs) == n_steps > 0  # every train step with an action space, nothing from eval
            assert {sid for sid, _, _ in pairs} <= set(sessions)
            sid, prompt, target = pairs[7]
            sess = sessions[sid]
            t = next(t for t, _ in enumerate(sess.steps) if sess.context(t).render(last=1) in prompt
                     and prompt.startswith(sess.context(t).render(last=1)))
            c, action, r_t = sess.context(t), sess.steps[t]["action"], sess.recorded_r(t)
            assert prompt + target == ProxyAdapter.prompt(c, r_t, scaffold, 1) + " " + action
        # by hand, for cot-sft: the reasoning line holds r_t's slots, then the recorded action
        assert target == f" {format_r(r_t)}\nAction: {action}" and "planned_next=" in target
        assert prompt.endswith("\nReasoning:") and "Action:" not in prompt.split("\n")[-2]
    finally:
        rel.close()


def test_trained_baseline_is_a_loadable_hf_model_with_its_provenance(release, models):
    rel = Release(release)
    sha = rel.sha
    rel.close()
    for variant, rec in models.items():
        saved = json.loads(rec and open(f"{rec['path']}/trb-baseline.json").read())
        assert saved["release"]["sha"] == sha and saved["training"]["split"] == "train"
        assert saved["serves_baselines"] == {b: sc for b, (v, sc) in BASELINE_RUNS.items() if v == variant}
        assert saved["prompt"]["history"] == 1 and saved["model"]["n_parameters"] > 0
        losses = saved["training"]["epochs"]
        assert len(losses) == 3 and all(math.isfinite(e["train_loss"]) for e in losses)
        # it learned: the held-out target loss fell to well under half the untrained model's
        before = saved["training"]["initial_validation_loss"]
        assert before > 0.8 * math.log(saved["model"]["vocab_size"])  # untrained: about a uniform guess
        assert losses[-1]["validation_loss"] < 0.5 * before
        assert losses[-1]["train_loss"] < losses[0]["train_loss"]
        a = ProxyAdapter.load(rec["path"])
        assert a.history == 1 and a.spec()["history"] == 1  # the window the model was trained with


def _eval_contexts(release, n=40):
    rel = Release(release)
    try:
        out = []
        for s in rel.sessions(split="eval"):
            out += [s.context(t) for t in range(len(s.steps)) if s.steps[t]["action_space"] and s.steps[t]["has_r"]]
            if len(out) >= n:
                break
        return out[:n]
    finally:
        rel.close()


def test_instruct_base_without_scaffold_ignores_r_and_with_cot_it_does_not(release, models):
    ctxs = _eval_contexts(release, 12)
    none = ProxyAdapter.load(models["instruct-base"]["path"], scaffold="none")
    cot = ProxyAdapter.load(models["instruct-base"]["path"], scaffold="cot")
    assert none.spec()["template_version"] == DIRECT_TEMPLATE_VERSION
    assert cot.spec()["template_version"] == TEMPLATE_VERSION
    for c in ctxs:
        space = c.action_space
        r1, r2 = {"confidence": 0.5, "planned_next": space[0]}, {"confidence": 0.5, "planned_next": space[-1]}
        assert none.act(c, r1) == none.act(c, r2) == none.act(c)  # no span to edit: r' cannot enter
        p1, p2 = cot.act(c, r1), cot.act(c, r2)
        assert set(p1) == set(space) and abs(sum(p1.values()) - 1) < 1e-6
        assert p1 != p2  # the Reasoning line is in the prompt
    assert none.emit_count == 0  # acting without a scaffold never needs the model's own r


def test_train_baseline_refuses_a_used_directory_and_a_bad_variant(release, tmp_path):
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "keep.txt").write_text("mine")
    with pytest.raises(UsageError, match="not empty"):
        train_baseline(release, "cot-sft", tmp_path / "used", settings=BaselineSettings(**SMALL, max_pairs=20))
    assert (tmp_path / "used" / "keep.txt").read_text() == "mine"
    with pytest.raises(UsageError, match="cot-prompted uses instruct-base"):
        train_baseline(release, "cot-prompted", tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_trb_train_baseline_cli_then_trb_run_proxy(release, tmp_path, capsys):
    import duckdb

    from trb.cli import main

    out = tmp_path / "ib"
    assert main(["train-baseline", "--release", str(release), "--variant", "instruct-base", "-o", str(out),
                 "--max-pairs", "60", "--epochs", "1", "--history", "0", "-q"]) == 0
    cap = capsys.readouterr()
    assert cap.out.strip() == str(out) and "serves instruct-base (--scaffold none), cot-prompted (--scaffold cot)" in cap.err
    assert json.loads((out / "trb-baseline.json").read_text())["prompt"]["history"] == 0
    assert not list(tmp_path.glob(".ib.partial-*"))
    results = tmp_path / "r.duckdb"
    assert main(["run", "--release", str(release), "--adapter", "proxy", "--model", str(out), "--scaffold", "none",
                 "--baseline", "instruct-base", "--tracks", "1", "--results", str(results), "-q"]) == 0
    spec = json.loads(duckdb.connect(str(results), read_only=True).execute("SELECT adapter_spec FROM runs").fetchone()[0])
    assert spec["scaffold"] == "none" and spec["history"] == 0


def test_a_prompt_longer_than_the_context_window_is_a_clear_error(release, models):
    from trb.errors import AdapterError

    adapter = ProxyAdapter.load(models["cot-sft"]["path"], history=None)  # every earlier step: too long
    c = next(c for c in reversed(_eval_contexts(release, 200)) if c.t >= 9)
    adapter.model.config.n_positions = 64  # the window this check reads; the model's tables are untouched
    with pytest.raises(AdapterError, match=r"exceeds the model's context window of 64 .*--history"):
        adapter.act(c, {"planned_next": c.action_space[0]})


def test_the_demos_second_training_process_trains_the_same_model_bit_for_bit(release, tmp_path):
    """`make demo` trains instruct-base in a spawned process beside cot-sft (pipeline.demo._TrainBeside): on the
    pinned numerics and one thread its weights are byte for byte those of the same training in this process."""
    import os

    from pipeline.demo import _TrainBeside
    from trb.numerics import pinned_threads

    if (os.cpu_count() or 1) < 2:
        pytest.skip("one CPU: the demo trains both LM baselines in its own process")
    settings = BaselineSettings(**SMALL, epochs=1, max_pairs=120)
    beside = _TrainBeside("instruct-base", release, tmp_path / "beside", 5, settings)
    assert beside.running
    with pinned_threads():
        train_baseline(release, "instruct-base", tmp_path / "here", seed=5, progress=False, settings=settings)
    assert beside.wait() == tmp_path / "beside" and beside.seconds > 0
    here, there = (tmp_path / d / "model.safetensors" for d in ("here", "beside"))
    assert here.read_bytes() == there.read_bytes()
