"""The native adapter (tier "native"): the two-hook contract, batching, load errors, and do(r_t := r')."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("torch")

from trb.adapters.base import Adapter, check_distribution  # noqa: E402
from trb.adapters.native import NativeAdapter  # noqa: E402
from trb.context import PastStep, StepContext  # noqa: E402
from trb.errors import AdapterError  # noqa: E402
from trb.reference import train_reference  # noqa: E402
from trb.reference.model import file_sha256  # noqa: E402
from trb.releases import Release  # noqa: E402

# trains native reference models on a simulated release
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    from corpus import Corpus, ingest, init_corpus
    from corpus.release import cut_release
    from corpus.simulate import write_simulation

    tmp = tmp_path_factory.mktemp("native-release")
    write_simulation(tmp / "sim.jsonl", n_sessions=240, seed=5, progress=False)
    c = Corpus(init_corpus(tmp / "corpus"))
    ingest(c, [tmp / "sim.jsonl"], progress=False)
    return Path(cut_release(c, "0.1.0", kind="smoke", progress=False).directory)


@pytest.fixture(scope="module")
def model_dirs(release, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("native-models")
    for v in ("ablation", "full"):
        train_reference(release, v, out / v, seed=0, progress=False)
    return {v: out / v for v in ("ablation", "full")}


@pytest.fixture(scope="module")
def full(model_dirs) -> NativeAdapter:
    return NativeAdapter.load(model_dirs["full"])


@pytest.fixture(scope="module")
def contexts(release) -> list[StepContext]:
    """Eval contexts: every step of the first sessions, plus the context after each session's last step."""
    rel = Release(release)
    out = []
    for i, s in enumerate(rel.sessions(split="eval")):
        if i == 12:
            break
        out.extend(s.context(t) for t in range(len(s.steps)))
        out.append(s.context_after(len(s.steps) - 1))  # open-ended: no observation, no action space
    return out


def _acting(contexts):
    return [c for c in contexts if c.action_space]


ODD_OVERRIDES = [
    {},
    {"planned_next": "fly", "goal": "ZZ99"},  # an action outside the space, a goal never seen
    {"confidence": 7.0, "caused_by_self": -3},  # out of range: clipped
    {"confidence": float("nan"), "caused_by_self": None},  # unusable: absent
    {"goal": "C3", "planned_next": "up", "caused_by_self": 0.2, "confidence": 0.9, "ext": {"mood": "calm"}},
]


# -- the contract --------------------------------------------------------------------


def test_is_a_native_adapter_with_a_reproducible_spec(full, model_dirs, release):
    assert isinstance(full, Adapter)
    assert full.tier == "native"
    spec = full.spec()
    json.dumps(spec)
    manifest = json.loads((release / "manifest.json").read_text())
    assert spec["kind"] == "native" and spec["variant"] == "full" and spec["seed"] == 0
    assert spec["path"] == str(model_dirs["full"])
    assert spec["sha256"] == file_sha256(model_dirs["full"] / "model.safetensors")
    assert spec["release_sha"] == manifest["release_sha"] and spec["trb_version"] == "0.1"
    assert NativeAdapter.load(spec["path"]).spec() == spec
    assert NativeAdapter.load(model_dirs["ablation"]).spec()["variant"] == "ablation"


def test_act_returns_exactly_the_action_space_summing_to_one(full, contexts):
    for c in _acting(contexts):
        for r in [None, *ODD_OVERRIDES]:
            p = full.act(c, r_override=r)
            assert list(p) == list(c.action_space)
            assert all(v >= 0 for v in p.values()) and math.isclose(sum(p.values()), 1.0, abs_tol=1e-9)
            check_distribution(p, c.action_space, "native")


def test_works_on_any_release_text_and_action_strings(full, contexts):
    """Not only simworld: another language, other action strings, a longer space."""
    past = PastStep(0, "東京駅にいます。", None, "待つ", ("進む", "待つ"), "何も起きなかった。")
    space = ("進む", "待つ", "戻る", "電話する", "質問する", "寝る")
    c = StepContext("other-1", 1, (past,), "次はどうしますか？", space, language="ja")
    p = full.act(c)
    assert list(p) == list(c.action_space) and math.isclose(sum(p.values()), 1.0, abs_tol=1e-9)
    r = full.emit_r(c)
    assert r["planned_next"] in c.action_space and 0 <= r["confidence"] <= 1 and 0 <= r["caused_by_self"] <= 1
    p2 = full.act(c, r_override={"planned_next": "寝る", "goal": "家"})
    assert list(p2) == list(c.action_space)
    assert full.act_batch([c, contexts[0]], [None, None]) == [p, full.act(contexts[0])]


def test_emit_r_reports_schema_slots(full, contexts):
    vocab = set(full.config["architecture"]["goal_vocab"])
    for c in contexts:
        r = full.emit_r(c)
        assert set(r) == {"goal", "planned_next", "caused_by_self", "confidence"}
        assert r["goal"] in vocab
        assert 0.0 <= r["confidence"] <= 1.0
        if c.action_space:
            assert r["planned_next"] in c.action_space
        else:
            assert r["planned_next"] is None
        # nothing to attribute before the first outcome
        assert (r["caused_by_self"] is None) == (not c.history)
        if c.history:
            assert 0.0 <= r["caused_by_self"] <= 1.0


def test_batched_hooks_equal_single_hooks(full, contexts):
    acting = _acting(contexts)
    overrides = [None if i % 3 == 0 else ODD_OVERRIDES[i % len(ODD_OVERRIDES)] for i in range(len(acting))]
    assert full.act_batch(acting, overrides) == [full.act(c, r_override=r) for c, r in zip(acting, overrides)]
    assert full.act_batch(acting) == [full.act(c) for c in acting]
    assert full.emit_r_batch(contexts) == [full.emit_r(c) for c in contexts]


def test_acting_without_override_acts_through_the_own_self_report(full, contexts):
    for c in _acting(contexts):
        assert full.act(c) == full.act(c, r_override=full.emit_r(c))


def test_open_ended_step_and_bad_override_raise_adapter_error(full, contexts):
    open_ended = [c for c in contexts if c.action_space is None]
    assert open_ended
    with pytest.raises(AdapterError, match="open-ended"):
        full.act(open_ended[0])
    with pytest.raises(AdapterError, match="open-ended"):
        full.act(open_ended[0], r_override={"planned_next": "up"})
    with pytest.raises(AdapterError, match="open-ended"):
        full.act_batch([_acting(contexts)[0], open_ended[0]], [None, None])
    with pytest.raises(AdapterError, match="r_override"):
        full.act(_acting(contexts)[0], r_override="up")
    with pytest.raises(AdapterError):
        full.act_batch(_acting(contexts)[:2], [None])


# -- load errors -----------------------------------------------------------------------


def test_load_errors_are_adapter_errors(model_dirs, tmp_path):
    with pytest.raises(AdapterError, match="no reference model directory"):
        NativeAdapter.load(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(AdapterError, match="no config.json"):
        NativeAdapter.load(tmp_path / "empty")

    def broken(name: str, edit) -> Path:
        d = tmp_path / name
        shutil.copytree(model_dirs["full"], d)
        edit(d)
        return d

    def write_config(d: Path, change) -> None:
        cfg = json.loads((d / "config.json").read_text())
        change(cfg)
        (d / "config.json").write_text(json.dumps(cfg))

    cases = {
        "not strict JSON": broken("badjson", lambda d: (d / "config.json").write_text("{nope")),
        "not a reference model config": broken("format", lambda d: write_config(d, lambda c: c.update(format="x"))),
        "format_version": broken("version", lambda d: write_config(d, lambda c: c.update(format_version=99))),
        "do not fit the architecture": broken(
            "arch", lambda d: write_config(d, lambda c: c["architecture"].update(hidden=64))),
        "cannot read the weights": broken(
            "corrupt", lambda d: (d / "model.safetensors").write_bytes((d / "model.safetensors").read_bytes()[:100])),
        "no model.safetensors": broken("noweights", lambda d: (d / "model.safetensors").unlink()),
    }
    for message, d in cases.items():
        with pytest.raises(AdapterError, match=message) as e:
            NativeAdapter.load(d)
        assert str(d) in e.value.message


# -- do(r_t := r') ---------------------------------------------------------------------


def _tv(p: dict, q: dict) -> float:
    return 0.5 * sum(abs(p[a] - q[a]) for a in p)


def test_override_is_a_real_intervention_on_the_full_model(full, contexts):
    """Setting planned_next := a raises p(a) over setting it to any other action, in every context checked.

    Measured here: the smallest rise is about 0.24, the mean about 0.43; we require > 0 everywhere and a mean
    above 0.2 (in Φ the rise is the plan term's share of the policy, about 0.4–0.55 in simworld's populations).
    """
    acting = _acting(contexts)[:30]
    rises = []
    for c in acting:
        own = full.emit_r(c)
        under = {a: full.act(c, r_override={**own, "planned_next": a}) for a in c.action_space}
        for a in c.action_space:
            for b in c.action_space:
                if b != a:
                    rises.append(under[a][a] - under[b][a])
        # changing r' changes the action distribution
        assert _tv(under[c.action_space[0]], under[c.action_space[1]]) > 0.05
    assert min(rises) > 0, min(rises)
    assert sum(rises) / len(rises) > 0.2, sum(rises) / len(rises)


def test_goal_and_confidence_slots_act_on_the_full_model(full, contexts):
    acting = _acting(contexts)[:30]
    goal_moves, conf_moves = [], []
    vocab = full.config["architecture"]["goal_vocab"]
    for c in acting:
        own = full.emit_r(c)
        other_goal = next(g for g in vocab if g != own["goal"])
        goal_moves.append(_tv(full.act(c, r_override={**own, "goal": other_goal}), full.act(c, r_override=own)))
        low = full.act(c, r_override={**own, "confidence": 0.05})
        high = full.act(c, r_override={**own, "confidence": 0.99})
        if "wait" in c.action_space:
            conf_moves.append(low["wait"] - high["wait"])
    # measured here: mean TV 0.11 when only the goal changes
    assert sum(goal_moves) / len(goal_moves) > 0.02
    # simworld subjects hesitate (wait) when unsure; the full model learned the direction from L_gov (on this
    # small release the effect is small, about +0.02 p(wait); on ~1000 sessions about +0.15)
    assert len(conf_moves) == len(acting)
    assert sum(d > 0 for d in conf_moves) >= 0.8 * len(conf_moves) and sum(conf_moves) > 0


def test_ablation_is_the_same_interface(model_dirs, contexts):
    ablation = NativeAdapter.load(model_dirs["ablation"])
    c = _acting(contexts)[1]
    p = ablation.act(c, r_override={"planned_next": "left"})
    assert list(p) == list(c.action_space)
    assert ablation.act(c) == ablation.act(c, r_override=ablation.emit_r(c))


# -- import hygiene --------------------------------------------------------------------


def test_trb_does_not_import_corpus_and_torch_is_lazy(model_dirs, contexts):
    code = f"""
import sys
import trb.adapters.native
assert "torch" not in sys.modules, "importing the adapter module must not import torch"
from trb.adapters.native import NativeAdapter
from trb.context import StepContext
a = NativeAdapter.load({str(model_dirs['full'])!r})
c = StepContext("s", 0, (), "You are at B2. Your goal is D4.", ("up", "down", "left", "right", "wait"))
a.act(c); a.emit_r(c)
import trb.reference.train
bad = sorted(m for m in sys.modules if m.split(".")[0] in ("corpus", "simworld", "textual"))
assert not bad, bad
print("ok")
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"


def test_only_earlier_self_reports_are_an_input(full, contexts):
    """c_t holds no r_t to read; the earlier steps' self-reports are part of it (blanking them may change things,
    but the context of step t never holds a step at or after t)."""
    for c in _acting(contexts)[:20]:
        assert not hasattr(c, "r") and all(s.t < c.t for s in c.history)
        blank = replace(c, history=tuple(replace(s, r=None) for s in c.history))
        assert set(full.act(blank)) == set(c.action_space)  # still a valid input without any self-report


def test_the_no_r_ablation_zeroes_the_r_pathway(full, contexts):
    """act_ablated is e(r) := 0: exactly act with an empty r, whatever the r-head reports; and it changes what
    the governed model (trained with L_gov) does."""
    from trb.adapters.capabilities import bind

    steps = [c for c in contexts if c.action_space][:40]
    assert "r_ablation" in bind(full).capabilities
    ablated = full.act_ablated_batch(steps)
    assert ablated == [full.act_ablated(c) for c in steps]
    assert ablated == full.act_batch(steps, [{} for _ in steps])
    own = full.act_batch(steps)
    tv = [0.5 * sum(abs(p[a] - q[a]) for a in p) for p, q in zip(own, ablated)]
    assert sum(tv) / len(tv) > 0.05  # the governed model acts on its r: cutting it moves the action
    # no r slot reaches the action: a different r' changes act but never act_ablated
    r_other = {"goal": "A1", "planned_next": steps[0].action_space[0], "confidence": 0.1}
    assert full.act(steps[0], r_other) != full.act_ablated(steps[0])
