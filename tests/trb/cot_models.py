"""Tiny causal LMs made locally for the proxy adapter's cot_edit and prompt tests (no network, no mocks).

:func:`build_cot_gpt2` trains a 2-layer GPT-2 and a byte-level BPE tokenizer on text written in the proxy's
trace template, where the Reasoning line of an ``"at Cx"`` step states ``goal=...; planned_next=...`` and the
action copies planned_next, while the Reasoning line of a ``"calm at Cx"`` step states no slot at all
(``nothing to report``) and its action is the first one. So the model's own chain of thought has the spans
cot_edit edits on "at" steps and none on "calm" steps. The tokenizer carries a small Jinja chat template
(:data:`CHAT_TEMPLATE`); ``chat_template="off"`` loads the same model without it.
"""

from __future__ import annotations

import random
from pathlib import Path

from trb.context import StepContext

SPACES = (("left", "right", "stay"), ("up", "down"))
GOALS = ("C1", "C2", "C3", "home")
CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>\n{% endif %}")


def context(space, observation: str, t: int = 0) -> StepContext:
    return StepContext(session_id="s", t=t, history=(), observation=observation, action_space=tuple(space))


def _line(rng: random.Random) -> str:
    space = rng.choice(SPACES)
    if rng.random() < 0.3:
        c = context(space, f"calm at C{rng.randint(1, 3)}")
        return f"{c.render()}\nReasoning: nothing to report\nAction: {space[0]}"
    c = context(space, f"at C{rng.randint(1, 3)}")
    goal, planned = rng.choice(GOALS), rng.choice(space)
    return f"{c.render()}\nReasoning: goal={goal}; planned_next={planned}\nAction: {planned}"


def build_cot_gpt2(out: Path, *, steps: int = 300, n: int = 500) -> Path:
    """Train and save (save_pretrained) the tokenizer, with :data:`CHAT_TEMPLATE`, and the tiny GPT-2 into ``out``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    rng = random.Random(0)
    corpus = [_line(rng) for _ in range(n)]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(corpus, trainer=trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>")
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(fast), n_embd=64, n_layer=2, n_head=2, n_positions=512,
                                       bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id))
    eos = fast.eos_token_id
    seqs = [fast(t)["input_ids"] + [eos] for t in corpus]
    opt = torch.optim.AdamW(model.parameters(), lr=5e-3)
    model.train()
    brng = random.Random(1)
    for _ in range(steps):
        batch = brng.sample(seqs, 16)
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
    model.save_pretrained(out)
    return out
