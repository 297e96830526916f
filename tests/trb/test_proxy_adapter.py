"""The proxy adapter on a tiny GPT-2 made and trained locally (no network, no mocks).

The tiny model is trained on text in the adapter's own prompt template, where the action
always copies planned_next, so editing the CoT span (r_override) must move p(action).
"""

from __future__ import annotations

import math
import os
import random

import pytest

# trains a tiny GPT-2 here (seconds of torch on the CPU)
pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from trb.adapters.lm_scoring import score_naive  # noqa: E402
from trb.adapters.proxy import TEMPLATE_VERSION, ProxyAdapter, format_r, parse_r  # noqa: E402
from trb.context import R_SLOTS, PastStep, StepContext  # noqa: E402
from trb.errors import AdapterError  # noqa: E402

SPACES = (("left", "right", "stay"), ("up", "down"), ("left", "right", "stay", "wait"))
GOALS = ("C1", "C2", "C3", "C4", "home")


def _context(rng: random.Random, space=None, with_history=None) -> StepContext:
    space = space or rng.choice(SPACES)
    hist = ()
    if with_history if with_history is not None else rng.random() < 0.5:
        past_space = rng.choice(SPACES)
        a = rng.choice(past_space)
        hist = (PastStep(t=0, observation=f"at C{rng.randint(1, 4)}", r=None, action=a,
                         action_space=past_space, outcome=rng.choice(("moved", "blocked"))),)
    return StepContext(session_id="s", t=len(hist), history=hist,
                       observation=f"at C{rng.randint(1, 4)}", action_space=space)


def _r(rng: random.Random, space) -> dict:
    return {"goal": rng.choice(GOALS), "planned_next": rng.choice(space),
            "caused_by_self": rng.randint(0, 10) / 10, "confidence": rng.randint(0, 10) / 10}


def _corpus(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        c = _context(rng)
        r = _r(rng, c.action_space)
        out.append(ProxyAdapter.prompt(c, r) + " " + r["planned_next"])
    return out


def _build_model(d, steps=None):
    """Train and save the tiny tokenizer + GPT-2 into directory d."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    corpus = _corpus(600)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>")
    fast.save_pretrained(d)

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(fast), n_embd=64, n_layer=2, n_head=2, n_positions=256,
                        bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id)
    model = GPT2LMHeadModel(config)
    eos = fast.eos_token_id
    seqs = [fast(t)["input_ids"] + [eos] for t in corpus]
    opt = torch.optim.AdamW(model.parameters(), lr=5e-3)
    model.train()
    rng = random.Random(1)
    for _ in range(steps or STEPS):
        batch = rng.sample(seqs, 16)
        L = max(map(len, batch))
        ids = torch.full((len(batch), L), eos)
        labels = torch.full((len(batch), L), -100)
        for i, s in enumerate(batch):
            ids[i, :len(s)] = torch.tensor(s)
            labels[i, :len(s)] = torch.tensor(s)
        loss = model(input_ids=ids, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    model.save_pretrained(d)
    return d


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """The tiny GPT-2, trained once per test run for this file and test_proxy_batched.py (read-only)."""
    from shared import built_once

    return built_once(tmp_path_factory, "tiny_proxy_lm", _build_model)


STEPS = 400


@pytest.fixture(scope="module")
def adapter(model_dir):
    old = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        yield ProxyAdapter.load(model_dir, device="cpu")
    finally:
        if old is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = old


def _contexts(n: int, seed: int = 7) -> list[StepContext]:
    rng = random.Random(seed)
    return [_context(rng) for _ in range(n)]


def test_act_is_a_distribution_over_the_action_space(adapter):
    for c in _contexts(6):
        p = adapter.act(c)
        assert list(p) == list(c.action_space)
        assert all(v >= 0 for v in p.values())
        assert abs(sum(p.values()) - 1) < 1e-9
        p2 = adapter.act(c, r_override={"planned_next": c.action_space[0], "confidence": 0.5})
        assert set(p2) == set(c.action_space) and abs(sum(p2.values()) - 1) < 1e-9


def test_act_batch_equals_act(adapter):
    cs = _contexts(5, seed=11)
    rng = random.Random(3)
    overrides = [None, _r(rng, cs[1].action_space), None, {"planned_next": cs[3].action_space[-1]}, {}]
    # act_batch scores all prompts in shared (padded) forward passes: equal to act up to float rounding.
    def same(xs, ys):
        return len(xs) == len(ys) and all(list(x) == list(y) and max(abs(x[a] - y[a]) for a in x) < 1e-6
                                          for x, y in zip(xs, ys))

    batch = adapter.act_batch(cs, overrides)
    single = [adapter.act(c, r_override=r) for c, r in zip(cs, overrides)]
    assert same(batch, single)
    assert same(adapter.act_batch(cs), [adapter.act(c) for c in cs])
    with pytest.raises(AdapterError):
        adapter.act_batch(cs, overrides[:2])


def test_r_override_is_an_intervention(adapter):
    """Writing planned_next=a into the CoT span raises p(a), on the trained tiny model."""
    rng = random.Random(5)
    cs = _contexts(8, seed=21)
    raised = 0
    total = 0
    for c in cs:
        base = _r(rng, c.action_space)
        ps = {a: adapter.act(c, r_override={**base, "planned_next": a}) for a in c.action_space}
        for a in c.action_space:
            for b in c.action_space:
                if a != b:
                    total += 1
                    raised += ps[a][a] > ps[b][a]
        # the planned action is the most likely one
        for a in c.action_space:
            assert max(ps[a], key=ps[a].get) == a, (c, a, ps[a])
    assert raised == total


def test_score_continuation_equals_naive(adapter):
    rng = random.Random(9)
    for c in _contexts(3, seed=31):
        r = _r(rng, c.action_space)
        for text in ("right", " stay put", "go to C3 then wait"):
            got = adapter.score_continuation(c, text, r_override=r)
            cont = text if text.startswith(" ") else " " + text
            ref = score_naive(adapter.model, adapter.tokenizer, [(ProxyAdapter.prompt(c, r), [cont])])[0][0]
            assert got < 0 and abs(got - ref) < 1e-4
        # without an override the model's own r fills the span
        own = adapter.emit_r(c)
        got = adapter.score_continuation(c, "left")
        ref = score_naive(adapter.model, adapter.tokenizer, [(ProxyAdapter.prompt(c, own), [" left"])])[0][0]
        assert abs(got - ref) < 1e-4
    # an open-ended step can still be scored (Track 1's text continuations)
    open_c = StepContext(session_id="s", t=0, history=(), observation="at C1", action_space=None)
    assert adapter.score_continuation(open_c, "walk", r_override={"goal": "C2"}) < 0


def test_parse_r_hand_cases():
    r, missing = parse_r("goal=C3; planned_next=right; caused_by_self=0.40; confidence=0.80")
    assert r == {"goal": "C3", "planned_next": "right", "caused_by_self": 0.4, "confidence": 0.8}
    assert missing == []
    r, missing = parse_r("goal=C3; planned_next=right; caused_by_self=1.7; confidence=0.8")
    assert "caused_by_self" not in r and missing == ["caused_by_self"]
    r, missing = parse_r("confidence=-0.2; caused_by_self=high")
    assert r == {} and missing == list(R_SLOTS)
    r, missing = parse_r("I think I should probably go left, fairly sure.")
    assert r == {} and missing == list(R_SLOTS)
    r, missing = parse_r("")
    assert r == {} and missing == list(R_SLOTS)
    r, missing = parse_r("  goal =  C3 ;planned_next=  left  ;  confidence = 1 \n junk")
    assert r == {"goal": "C3", "planned_next": "left", "confidence": 1.0} and missing == ["caused_by_self"]
    # planned_next must be an action of the step; a conflicting repeat is ambiguous
    r, missing = parse_r("planned_next=fly; goal=C1", action_space=("left", "right"))
    assert r == {"goal": "C1"} and "planned_next" in missing
    r, missing = parse_r("goal=C1; goal=C2; confidence=0.5")
    assert r == {"confidence": 0.5} and "goal" in missing
    r, missing = parse_r("goal=; confidence=0.5e1; caused_by_self=1.")
    assert r == {"caused_by_self": 1.0} and missing == ["goal", "planned_next", "confidence"]
    # the template's own format round-trips
    full = {"goal": "home", "planned_next": "up", "caused_by_self": 0.25, "confidence": 1.0}
    assert parse_r(format_r(full))[0] == full


def _valid(r: dict, c: StepContext) -> None:
    assert set(r) <= set(R_SLOTS)
    if "planned_next" in r:
        assert r["planned_next"] in c.action_space
    for s in ("caused_by_self", "confidence"):
        if s in r:
            assert isinstance(r[s], float) and 0.0 <= r[s] <= 1.0 and math.isfinite(r[s])
    if "goal" in r:
        assert isinstance(r["goal"], str) and r["goal"] and ";" not in r["goal"] and "\n" not in r["goal"]


def test_emit_r_prompt_fill(adapter):
    before = adapter.emit_count, dict(adapter.missing_counts)
    cs = _contexts(4, seed=41)
    for c in cs:
        r = adapter.emit_r(c)
        _valid(r, c)
        # action-space and probability slots are always elicited in prompt_fill mode
        assert {"planned_next", "caused_by_self", "confidence"} <= set(r)
    assert adapter.emit_count - before[0] == len(cs)
    # every absent slot was counted
    assert set(adapter.missing_counts) == set(R_SLOTS)
    assert adapter.missing_counts["planned_next"] == before[1]["planned_next"]


def test_emit_r_free_cot_counts_missing(model_dir):
    a = ProxyAdapter.load(model_dir, mode="free_cot", device="cpu")
    assert a.spec()["mode"] == "free_cot"
    cs = _contexts(5, seed=51)
    absent = {s: 0 for s in R_SLOTS}
    for c in cs:
        r = a.emit_r(c)
        _valid(r, c)
        assert isinstance(a.last_cot, str)
        assert r == parse_r(a.last_cot, c.action_space)[0]
        for s in R_SLOTS:
            absent[s] += s not in r
    assert a.emit_count == len(cs)
    assert dict(a.missing_counts) == absent
    # the trained model writes the template's slots, so most of them parse
    assert sum(absent.values()) < len(cs) * len(R_SLOTS)
    # actions the model never saw: the planned_next it writes is not one of them -> missing, counted, no crash
    unseen = StepContext(session_id="s", t=0, history=(), observation="at C2", action_space=("north", "south"))
    r = a.emit_r(unseen)
    _valid(r, unseen)
    assert "planned_next" not in r and "planned_next=" in a.last_cot
    assert a.missing_counts["planned_next"] == absent["planned_next"] + 1
    assert a.emit_count == len(cs) + 1


def test_open_ended_act_and_bad_paths(adapter, tmp_path):
    open_c = StepContext(session_id="s", t=0, history=(), observation="at C1", action_space=None)
    with pytest.raises(AdapterError, match="open-ended"):
        adapter.act(open_c)
    with pytest.raises(AdapterError, match="no model directory"):
        ProxyAdapter.load(tmp_path / "nope")
    with pytest.raises(AdapterError, match="config.json"):
        ProxyAdapter.load(tmp_path)
    with pytest.raises(AdapterError, match="GGUF"):
        ProxyAdapter.load(tmp_path, gguf_file="missing.gguf")
    with pytest.raises(AdapterError, match="dtype"):
        ProxyAdapter.load(tmp_path, dtype="int3")
    with pytest.raises(AdapterError, match="mode"):
        ProxyAdapter.load(tmp_path, mode="telepathy")
    # an open-ended step still gets an r (planned_next greedy-decoded, then validated)
    r = adapter.emit_r(open_c)
    assert set(r) <= set(R_SLOTS)


def test_spec_has_weights_sha256(adapter, model_dir):
    import hashlib

    s = adapter.spec()
    assert s["kind"] == "proxy" and s["template_version"] == TEMPLATE_VERSION
    assert s["dtype"] == "float32" and s["mode"] == "prompt_fill" and s["gguf_file"] is None
    assert s["sha256"] == hashlib.sha256((model_dir / "model.safetensors").read_bytes()).hexdigest()
    assert s["sha256_of"] == ["model.safetensors"]
    assert adapter.tier == "proxy"


def test_bfloat16_load(model_dir):
    a = ProxyAdapter.load(model_dir, dtype="bfloat16", device="cpu")
    assert next(a.model.parameters()).dtype == torch.bfloat16
    c = _contexts(1, seed=61)[0]
    p = a.act(c, r_override={"planned_next": c.action_space[0]})
    assert abs(sum(p.values()) - 1) < 1e-9


def test_emit_r_shows_the_attributed_step_whatever_the_window(model_dir, monkeypatch):
    """caused_by_self is about the last completed step's outcome: emit_r's prompts hold that step even at a window
    of 0, while act keeps the window the model was trained with (Track 3 sees what it attributes)."""
    a = ProxyAdapter.load(model_dir, device="cpu", history=0)
    assert a.history == 0 and a.emit_history == 1
    c = _context(random.Random(3), with_history=True)
    last = c.history[-1]
    prompts: list[str] = []
    score, greedy = a._score, a._greedy
    monkeypatch.setattr(a, "_score", lambda reqs: (prompts.extend(p for p, _ in reqs), score(reqs))[1])
    monkeypatch.setattr(a, "_greedy", lambda p, n: (prompts.append(p), greedy(p, n))[1])
    a.emit_r(c)
    assert prompts and all(f"Step {last.t}: {last.observation}" in p and f"Action: {last.action}" in p
                           and f"Outcome: {last.outcome}" in p for p in prompts)
    prompts.clear()
    a.act(c, {"planned_next": c.action_space[0]})
    assert prompts and all(f"Step {last.t}:" not in p for p in prompts)
