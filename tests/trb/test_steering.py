"""Residual-stream injection for any causal LM (proxy-tier grounding): checked against a plain forward pass.

Tiny GPT-2 and Llama models on a locally trained tokenizer (the fixtures of test_lm_scoring).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests.trb import test_lm_scoring as _lm  # noqa: E402
from trb.adapters.lm_scoring import encode_request  # noqa: E402
from trb.adapters.steering import (  # noqa: E402
    SteeringError,
    add_at_first,
    decoder_layers,
    last_states,
    score_injected,
)

tiny_lm, tiny_llama = _lm.tiny_lm, _lm.tiny_llama  # the module fixtures of test_lm_scoring
PROMPT = "the cat sat on the mat and then it"
CANDIDATES = [" ran", " was very happy", " sat under the blue roof", " quickly"]


def _plain(model, tok, prompt, suffix, candidates, layer, vector):
    """log p(candidate | prompt + suffix), one full forward pass each, ``vector`` added to ``layer``'s input at the
    prompt's last id."""
    at = len(encode_request(tok, prompt, [])[0]) - 1
    ctx, conts = encode_request(tok, prompt + suffix, candidates)
    P = len(ctx)
    block = decoder_layers(model)[layer]

    def hook(_m, args, kwargs):  # the layer's input hidden state, at the prompt's last id
        h = (args[0] if args else kwargs["hidden_states"]).clone()
        h[:, at] += torch.as_tensor(vector, dtype=h.dtype)
        return ((h, *args[1:]), kwargs) if args else (args, {**kwargs, "hidden_states": h})

    handle = block.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        scores = []
        with torch.no_grad():
            for ids in conts:
                logits = model(input_ids=torch.tensor([ctx + ids])).logits[0]
                logp = torch.log_softmax(logits[P - 1: P - 1 + len(ids)].double(), dim=-1)
                scores.append(float(logp.gather(-1, torch.tensor(ids).unsqueeze(-1)).sum()))
        return scores
    finally:
        handle.remove()


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_injected_trials_equal_a_plain_forward_pass_with_the_same_addition(arch, tiny_lm, tiny_llama):
    """Trials of two prompts (one with a suffix read after the injection), null and injected, in chunks."""
    model, tok = tiny_lm if arch == "gpt2" else tiny_llama
    size = model.config.hidden_size
    rng = np.random.default_rng(0)
    direction = rng.normal(size=size)
    other = "a big dog ran over the"
    rows = [(PROMPT, "", CANDIDATES), (PROMPT, "", CANDIDATES), (PROMPT, "", CANDIDATES),
            (other, " river and", CANDIDATES[:2]), (other, " river and", CANDIDATES[:2]), (PROMPT, "", CANDIDATES)]
    vectors = np.stack([np.zeros(size), 4.0 * direction, -4.0 * direction, np.zeros(size), 4.0 * direction,
                        rng.normal(size=size) * 2])
    hooks = {i: len(b._forward_hooks) for i, b in enumerate(decoder_layers(model))}
    for layer in (0, 1):
        for chunk, prompts in ((1024, 16), (4, 16), (32, 1)):
            got = score_injected(model, tok, rows, layer, vectors, chunk=chunk, prompts=prompts)
            assert [len(g) for g in got] == [len(c) for _, _, c in rows]
            for t, ((prompt, suffix, cands), v) in enumerate(zip(rows, vectors)):
                want = _plain(model, tok, prompt, suffix, cands, layer, v)
                assert np.max(np.abs(np.subtract(got[t], want))) < 1e-4, (arch, layer, chunk, prompts, t)
        # the injection reaches what follows, through the suffix too, from every layer (z enters the layer)
        assert np.max(np.abs(np.subtract(got[1], got[0]))) > 1e-3
        assert np.max(np.abs(np.subtract(got[4], got[3]))) > 1e-3
    # no hook is left behind: a plain call afterwards is un-injected
    assert {i: len(b._forward_hooks) for i, b in enumerate(decoder_layers(model))} == hooks


def test_last_states_are_the_hidden_state_entering_the_layer_at_the_last_token(tiny_lm):
    model, tok = tiny_lm
    prompts = [PROMPT, "a big dog", "the bird sat on the roof near the river today"]
    z = last_states(model, tok, prompts, 1, batch=2)  # run shortest first, two passes, padded rows
    both = last_states(model, tok, prompts, [0, 1], tokens=1)  # one pass a prompt, both layers from each
    for i, p in enumerate(prompts):
        ids = encode_request(tok, p, [])[0]
        with torch.no_grad():
            hs = model(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states
        assert np.max(np.abs(z[i] - hs[1][0, -1].double().numpy())) < 1e-5  # back in the caller's order
        for n in (0, 1):
            assert np.max(np.abs(both[n][i] - hs[n][0, -1].double().numpy())) < 1e-5


def test_prompts_are_grouped_shortest_first_under_a_row_and_token_budget():
    from trb.adapters.steering import _length_groups

    # lengths 5, 3, 9, 3, 4 -> order 1, 3, 4, 0, 2; at most 3 rows and 12 padded slots a group
    assert _length_groups([5, 3, 9, 3, 4], 3, 12) == [[1, 3, 4], [0], [2]]
    assert _length_groups([5, 3, 9, 3, 4], 2, 100) == [[1, 3], [4, 0], [2]]
    assert _length_groups([20, 2], 4, 10) == [[1], [0]]  # too long for the budget: a group alone
    with pytest.raises(SteeringError, match="at least 1"):
        last_states(None, None, ["x"], 0, tokens=0)


def test_bad_layers_and_shapes_are_refused_and_the_hook_is_removed_on_error(tiny_lm):
    model, tok = tiny_lm
    hooks = len(decoder_layers(model)[0]._forward_hooks)
    z = np.zeros((1, model.config.hidden_size))
    with pytest.raises(SteeringError, match="not one of the model's decoder layers 0..1"):
        score_injected(model, tok, [(PROMPT, "", CANDIDATES)], 2, z)
    with pytest.raises(SteeringError, match="does not fit"):
        with add_at_first(model, 0, torch.zeros((3, model.config.hidden_size))):
            model(input_ids=torch.tensor([[1, 2, 3]]))
    assert len(decoder_layers(model)[0]._forward_hooks) == hooks
    with pytest.raises(SteeringError, match="no candidate"):
        score_injected(model, tok, [(PROMPT, "", [])], 0, z)
    with pytest.raises(SteeringError, match="one row per trial"):
        score_injected(model, tok, [(PROMPT, "", CANDIDATES)] * 2, 0, z)
    with pytest.raises(SteeringError, match="merges with the prompt's last token"):
        score_injected(model, tok, [("the cat sat on the ma", "t", CANDIDATES)], 0, z)
