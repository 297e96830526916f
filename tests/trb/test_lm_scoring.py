"""Continuation scoring with a shared prefix KV cache equals plain one-pair-at-a-time scoring.

A tiny GPT-2 and byte-level BPE tokenizer are made locally (no network), saved, and
reloaded through the Auto classes with HF_HUB_OFFLINE=1.
"""

from __future__ import annotations

import os
import random
import time

import pytest

# trains a tiny GPT-2 here (seconds of torch on the CPU)
pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from trb.adapters.lm_scoring import encode_request, score_continuations, score_naive  # noqa: E402

WORDS = (
    "the a cat dog bird sat ran on under mat roof tree quickly slowly red blue green "
    "small big house river over near and then it was very happy today morning"
).split()
SENTENCE = "the quick brown fox jumps over the lazy dog"


def _corpus(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14))) for _ in range(n)]
    return lines + [SENTENCE] * 50


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import AutoModelForCausalLM, AutoTokenizer, GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    d = tmp_path_factory.mktemp("tiny_lm")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(_corpus(2000), trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>")
    fast.save_pretrained(d)

    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(fast),
        n_embd=64,
        n_layer=2,
        n_head=2,
        n_positions=256,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
    )
    model = GPT2LMHeadModel(config)
    # A few training steps on a repeated sentence so the model has preferences.
    ids = torch.tensor([fast(SENTENCE)["input_ids"]] * 8)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(40):
        loss = model(input_ids=ids, labels=ids).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.save_pretrained(d)

    old = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        m = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32)
        t = AutoTokenizer.from_pretrained(d)
    finally:
        if old is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = old
    m.eval()
    return m, t


def _requests(tokenizer, n_ctx: int = 8, n_cont: int = 10, seed: int = 1):
    rng = random.Random(seed)
    reqs = []
    for _ in range(n_ctx):
        ctx = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))
        conts = [" " + rng.choice(WORDS) for _ in range(3)]  # mostly one token
        conts += [" " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 9))) for _ in range(n_cont - 3)]
        reqs.append((ctx, conts))
    reqs.append(("", [" the", " the cat sat", "x"]))  # empty context → start token
    return reqs


def test_packed_scoring_equals_naive(tiny_lm):
    model, tok = tiny_lm
    reqs = _requests(tok)
    lengths = {len(ids) for _, conts in reqs for ids in encode_request(tok, "x", conts)[1]}
    assert 1 in lengths and max(lengths) >= 5, lengths

    t0 = time.perf_counter()
    ref = score_naive(model, tok, reqs)
    t_naive = time.perf_counter() - t0
    n_pairs = sum(len(c) for _, c in reqs)
    worst = 0.0
    for bs in (1, 3, 16):
        t0 = time.perf_counter()
        got = score_continuations(model, tok, reqs, max_batch_tokens=bs * 64, max_scored_positions=bs * 8)
        dt = time.perf_counter() - t0
        assert [len(g) for g in got] == [len(c) for _, c in reqs]
        for g_row, r_row in zip(got, ref):
            for g, r in zip(g_row, r_row):
                assert g < 0 and abs(g - r) < 1e-4, (bs, g, r)
                worst = max(worst, abs(g - r))
        print(
            f"budget {bs}: {n_pairs} pairs, naive {t_naive:.3f}s, shared {dt:.3f}s, "
            f"naive/shared = {t_naive / dt:.2f}"
        )
    print(f"max |delta log p| = {worst:.2e}")


def test_hand_check_against_one_logits_tensor(tiny_lm):
    model, tok = tiny_lm
    ctx, cont = "the cat sat on", " the red mat quickly"
    ctx_ids, (cont_ids,) = encode_request(tok, ctx, [cont])
    assert len(cont_ids) >= 3
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ctx_ids + cont_ids])).logits[0]
    logp = torch.log_softmax(logits, dim=-1)
    P = len(ctx_ids)
    expected = sum(float(logp[P - 1 + j, t]) for j, t in enumerate(cont_ids))
    (got,) = score_continuations(model, tok, [(ctx, [cont])])[0]
    assert abs(got - expected) < 1e-4


def test_a_continuation_scores_alike_alone_or_packed_with_others(tiny_lm):
    """Packed behind one context, continuations never see each other: each scores as it does alone."""
    model, tok = tiny_lm
    ctx = "the dog ran over the"
    conts = [" river and then", " big house near the tree", " cat", " green roof"]
    together = score_continuations(model, tok, [(ctx, conts)], max_scored_positions=1)[0]
    alone = [score_continuations(model, tok, [(ctx, [c])])[0][0] for c in conts]
    for a, b in zip(together, alone):
        assert abs(a - b) < 1e-4


def test_trained_sentence_is_more_likely(tiny_lm):
    model, tok = tiny_lm
    (good, bad), = score_continuations(
        model, tok, [("the quick brown fox", [" jumps over the lazy dog", " sat under the blue roof"])]
    )
    assert good > bad


@pytest.fixture(scope="module")
def tiny_llama(tiny_lm):
    """A random tiny Llama (rotary positions, grouped-query attention) on the same tokenizer."""
    from transformers import LlamaConfig, LlamaForCausalLM

    _, tok = tiny_lm
    torch.manual_seed(1)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                         bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    return LlamaForCausalLM(config).eval(), tok


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_batching_across_contexts_equals_naive_whatever_the_grouping(arch, tiny_lm, tiny_llama):
    """Contexts of different lengths share forward passes (right-padded); scores do not depend on the grouping."""
    model, tok = tiny_lm if arch == "gpt2" else tiny_llama
    reqs = _requests(tok, n_ctx=12, n_cont=9, seed=5)
    reqs.append(("the cat", []))  # no continuation: an empty row, no forward pass
    reqs.append(("the dog", ["", " sat"]))  # an empty continuation scores 0.0
    ref = score_naive(model, tok, reqs)
    assert ref[-2] == [] and ref[-1][0] == 0.0
    ctx_lengths = {len(encode_request(tok, c, [])[0]) for c, _ in reqs}
    assert len(ctx_lengths) >= 5  # really different lengths in one group
    for max_tokens, max_contexts, bs in ((1, 32, 4), (40, 3, 2), (4096, 32, 16), (4096, 32, 64)):
        got = score_continuations(model, tok, reqs, max_scored_positions=bs, max_batch_tokens=max_tokens,
                                  max_contexts=max_contexts)
        assert [len(g) for g in got] == [len(r) for r in ref]
        worst = max(abs(g - r) for gr, rr in zip(got, ref) for g, r in zip(gr, rr))
        assert worst < 1e-4, (arch, max_tokens, max_contexts, bs, worst)
    with pytest.raises(ValueError):
        score_continuations(model, tok, reqs, max_batch_tokens=0)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_requests_extending_cached_prompts_score_as_if_run_whole(arch, tiny_lm, tiny_llama):
    """prefix=(cache, rows): a request reuses its prompt's keys/values and scores exactly as without them.

    The mix: requests that extend their prompt by words (the common case), whose first ids
    differ from the prompt's last ones (a BPE merge across the join), that equal their prompt
    (its last id must still run), that share nothing with it, and rows used twice or not at all.
    """
    from trb.adapters.lm_scoring import prefix_cache

    model, tok = tiny_lm if arch == "gpt2" else tiny_llama
    rng = random.Random(11)
    prompts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 10))) for _ in range(7)]
    cache = prefix_cache(model, tok, prompts)
    assert len(cache) == 7
    rows = [0, 1, 2, 3, 3, 5, 6, 0]  # row 4 unused, rows 0 and 3 twice
    contexts = [prompts[0] + " the cat sat on",
                prompts[1] + "s",  # glued to the last word: the join is inside a token
                prompts[2],  # the prompt itself
                prompts[3] + " and then",
                prompts[3] + " quickly",
                "green house",  # shares nothing with prompt 5
                prompts[6] + " ",
                prompts[0] + " red"]
    reqs = [(c, [" " + rng.choice(WORDS) for _ in range(2)]
             + [" " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6))) for _ in range(4)])
            for c in contexts]
    ref = score_naive(model, tok, reqs)
    # a BPE merge across the join really happens for some request: it cannot reuse all of its prompt's ids
    joins = [(encode_request(tok, c, [])[0], encode_request(tok, prompts[r], [])[0]) for c, r in zip(contexts, rows)]
    assert any(ctx[:len(base)] != base for ctx, base in joins)
    for max_tokens, max_contexts, bs in ((4096, 32, 16), (30, 2, 3)):
        got = score_continuations(model, tok, reqs, max_scored_positions=bs, max_batch_tokens=max_tokens,
                                  max_contexts=max_contexts, prefix=(cache, rows))
        worst = max(abs(g - r) for gr, rr in zip(got, ref) for g, r in zip(gr, rr))
        assert worst < 1e-4, (arch, max_tokens, max_contexts, bs, worst)
    # the cached prompts were not changed by being extended: scoring again gives the same
    again = score_continuations(model, tok, reqs, prefix=(cache, rows))
    assert again == score_continuations(model, tok, reqs, prefix=(cache, rows))
    with pytest.raises(ValueError, match="prefix rows"):
        score_continuations(model, tok, reqs, prefix=(cache, rows[:-1]))


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_default_pass_budget_cuts_ragged_rows_and_scores_as_naive(arch, tiny_lm, tiny_llama, monkeypatch):
    """Without prefix the default budget is PASS_TOKENS: rows are cut into small passes at ragged lengths.

    A context longer than the budget is a pass of its own; the others share passes up to the
    budget (the batch boundaries fall between rows of different lengths); one-token and
    multi-token continuations; every score equals the naive one.
    """
    import trb.adapters.lm_scoring as lm_scoring

    model, tok = tiny_lm if arch == "gpt2" else tiny_llama
    monkeypatch.setattr(lm_scoring, "PASS_TOKENS", 48)
    rng = random.Random(7)
    reqs = _requests(tok, n_ctx=10, n_cont=6, seed=9)
    long_ctx = " ".join(rng.choice(WORDS) for _ in range(60))
    reqs.append((long_ctx, [" cat", " the red mat", " quickly and then the dog ran"]))
    assert len(encode_request(tok, long_ctx, [])[0]) > 48
    groups: list[list[int]] = []
    got = score_continuations(model, tok, reqs, before_group=lambda g: groups.append(g))
    ref = score_naive(model, tok, reqs)
    worst = max(abs(g - r) for gr, rr in zip(got, ref) for g, r in zip(gr, rr))
    assert worst < 1e-4, (arch, worst)
    assert [len(reqs) - 1] in groups  # the long context alone
    assert any(len(g) > 1 for g in groups) and len(groups) >= 3
    assert sorted(i for g in groups for i in g) == list(range(len(reqs)))
