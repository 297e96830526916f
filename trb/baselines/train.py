"""Train an LM baseline (instruct-base or cot-sft) on a release's train split, from scratch, on CPU.

A byte-level BPE tokenizer is trained with ``tokenizers`` on the train split's text,
then a small GPT-2-style causal LM (about the native references' parameter count) is
trained on the (prompt, target) pairs of :mod:`trb.baselines.examples`, with the loss on
the target tokens only. Both are saved with ``save_pretrained`` into one directory that
:meth:`trb.adapters.proxy.ProxyAdapter.load` reads offline, with ``trb-baseline.json``
(variant, the proxy scaffold for each baseline, release SHA, seed, settings, losses).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from trb.baselines.examples import BASELINE_RUNS, TRAINED_VARIANTS, training_pairs
from trb.errors import UsageError
from trb.numerics import describe
from trb.releases import Release
from trb.subjects import trained_on

__all__ = ["BaselineSettings", "train_baseline", "BASELINE_FILE"]

BASELINE_FILE = "trb-baseline.json"
TRB_VERSION = "0.1"
EOS = "<|endoftext|>"


@dataclass
class BaselineSettings:
    """Tokenizer, architecture and optimisation settings (the same for both variants)."""

    #: Earlier steps shown in each prompt (the proxy adapter's ``history``; None: all).
    #: 0: the current step only. Short prompts buy optimizer steps: at 8 epochs over 1,000
    #: simulated sessions (about 2,700 steps) cot-sft learns to act on its Reasoning line
    #: (planned_next became the argmax in every case checked); at 2 epochs it had not. With 1
    #: (the previous step too) one LM's training took 6.7 min instead of 2 on this machine,
    #: past the demo's budget. The proxy adapter's emit_r shows at least the last completed
    #: step whatever the window, so Track 3 always shows the step it attributes.
    history: int | None = 0
    vocab_size: int = 2048
    n_embd: int = 128
    n_layer: int = 2
    n_head: int = 4
    batch_size: int = 16
    lr: float = 3e-3
    warmup_steps: int = 30
    weight_decay: float = 0.01
    epochs: int = 8
    #: Weight of the action's tokens in the loss, against 1 for each reasoning token: the
    #: action is one or two tokens after some twenty of reasoning.
    action_weight: float = 5.0
    #: Share of train sessions held out of the gradient to report a validation loss (stable hash).
    validation_fraction: float = 0.1
    #: At most this many train pairs are used (a stable random subset); None: all.
    max_pairs: int | None = None


def _held_out(session_id: str, fraction: float) -> bool:
    h = int.from_bytes(hashlib.blake2b(session_id.encode(), digest_size=8).digest(), "big")
    return (h % 10_000) < fraction * 10_000


def _train_tokenizer(texts, vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[EOS], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=EOS, eos_token=EOS, pad_token=EOS)


_ACTION = "Action:"


def _encode(tok, prompt: str, target: str) -> tuple[list[int], int, int]:
    """Token ids of prompt + target, the prompt's length and the action's length.

    The target's action (what follows its last ``"Action:"``) is tokenised on its own,
    as the proxy adapter scores it: a continuation of a prompt ending in ``"Action:"``.
    """
    cut = target.rfind(_ACTION)
    head, action = (target[:cut + len(_ACTION)], target[cut + len(_ACTION):]) if cut >= 0 else ("", target)
    ids = lambda text: list(tok(text, add_special_tokens=False)["input_ids"]) if text else []  # noqa: E731
    p, h, a = ids(prompt), ids(head), ids(action)
    return p + h + a, len(p), len(a)


def _batches(items: list[tuple[list[int], int, int]], batch_size: int, rng: random.Random) -> list[list[int]]:
    """Indices grouped by similar length (little padding), batches in random order."""
    order = sorted(range(len(items)), key=lambda i: (len(items[i][0]), rng.random()))
    batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    rng.shuffle(batches)
    return batches


def _tensors(torch, items, idx, pad: int, action_weight: float = 1.0):
    """input ids, labels (-100 outside the target), attention mask and per-token loss weights."""
    L = max(len(items[i][0]) for i in idx)
    ids = torch.full((len(idx), L), pad, dtype=torch.long)
    labels = torch.full((len(idx), L), -100, dtype=torch.long)
    mask = torch.zeros((len(idx), L), dtype=torch.long)
    weights = torch.zeros((len(idx), L))
    for row, i in enumerate(idx):
        seq, n_prompt, n_action = items[i]
        ids[row, :len(seq)] = torch.tensor(seq)
        labels[row, n_prompt:len(seq)] = torch.tensor(seq[n_prompt:])
        mask[row, :len(seq)] = 1
        weights[row, n_prompt:len(seq)] = 1.0
        weights[row, len(seq) - n_action:len(seq)] = action_weight
    return ids, labels, mask, weights


def _token_losses(torch, model, ids, labels, mask):
    """Per-position cross-entropy of the next token (0 where there is no label), shape (B, L-1)."""
    logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1]
    tgt = labels[:, 1:]
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1),
                                             ignore_index=-100, reduction="none").view(tgt.shape)


def _mean_loss(torch, model, items, batch_size: int, pad: int) -> float | None:
    if not items:
        return None
    total, n = 0.0, 0
    model.eval()
    with torch.inference_mode():
        for start in range(0, len(items), batch_size):
            idx = list(range(start, min(start + batch_size, len(items))))
            ids, labels, mask, _ = _tensors(torch, items, idx, pad)
            total += float(_token_losses(torch, model, ids, labels, mask).sum())
            n += int((labels[:, 1:] != -100).sum())
    model.train()
    return total / max(n, 1)


def train_baseline(release_dir: str | os.PathLike, variant: str, out_dir: str | os.PathLike, *, seed: int = 0,
                   settings: BaselineSettings | None = None, progress: bool = True) -> dict:
    """Train ``variant`` (``instruct-base`` or ``cot-sft``) on the train split of ``release_dir`` into ``out_dir``.

    Writes a Hugging Face model directory (config.json, model.safetensors, tokenizer files)
    and ``trb-baseline.json``. The directory is written under a temporary name and renamed
    at the end: an interrupted training leaves no half-written model.

    Returns:
        The contents of ``trb-baseline.json`` plus ``path``.
    Raises:
        UsageError: unknown variant, ``out_dir`` not empty, or no trainable step in the train split.
        ReleaseError: the release cannot be read.
    """
    if variant not in TRAINED_VARIANTS:
        raise UsageError(f"unknown baseline variant {variant!r}; expected one of {', '.join(TRAINED_VARIANTS)} "
                         "(cot-prompted uses instruct-base's weights)")
    s = settings or BaselineSettings()
    if s.epochs < 1:
        raise UsageError(f"epochs must be at least 1, got {s.epochs}")
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"{out} is not empty; give a new or empty output directory")
    started = time.perf_counter()
    rel = Release(release_dir)
    try:
        pairs = training_pairs(rel, variant, history=s.history)
        release = {"sha": rel.sha, "version": rel.version, "kind": rel.kind, "smoke_test": rel.smoke_test}
        subjects = trained_on(rel, "train")
    finally:
        rel.close()
    if not pairs:
        raise UsageError(f"{release_dir}: the train split has no step with a discrete action to train on")
    rng = random.Random(seed)
    if s.max_pairs is not None and len(pairs) > s.max_pairs:
        pairs = sorted(rng.sample(pairs, s.max_pairs))

    import torch
    from tqdm.auto import tqdm
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    tok = _train_tokenizer((p + t for _, p, t in pairs), s.vocab_size)
    fit = [_encode(tok, p, t) for sid, p, t in pairs if not _held_out(sid, s.validation_fraction)]
    val = [_encode(tok, p, t) for sid, p, t in pairs if _held_out(sid, s.validation_fraction)]
    longest = max(len(x[0]) for x in fit + val)
    # Room for prompts longer than any train one (other sessions; a Reasoning line the instruct
    # base never saw, tokenised byte by byte): twice the longest, at least 1024 positions.
    n_positions = max(1024, int(math.ceil(longest * 2 / 256) * 256))
    pad = tok.pad_token_id
    config = GPT2Config(vocab_size=len(tok), n_embd=s.n_embd, n_layer=s.n_layer, n_head=s.n_head,
                        n_positions=n_positions, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                        pad_token_id=pad)
    model = GPT2LMHeadModel(config)
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=s.lr, weight_decay=s.weight_decay)
    steps_per_epoch = math.ceil(len(fit) / s.batch_size)
    total_steps = steps_per_epoch * s.epochs

    def lr_at(step: int) -> float:  # linear warm-up, then cosine to a tenth
        if step < s.warmup_steps:
            return s.lr * (step + 1) / s.warmup_steps
        frac = (step - s.warmup_steps) / max(1, total_steps - s.warmup_steps)
        return s.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, frac))))

    epochs = []
    step = 0
    initial_validation_loss = _mean_loss(torch, model, val, 32, pad)
    model.train()
    bar = tqdm(total=total_steps, unit="batch", desc=f"train {variant}", disable=None if progress else True,
               file=sys.stderr)
    for epoch in range(s.epochs):
        running, n_tok = 0.0, 0
        for idx in _batches(fit, s.batch_size, rng):
            for g in opt.param_groups:
                g["lr"] = lr_at(step)
            ids, labels, mask, weights = _tensors(torch, fit, idx, pad, s.action_weight)
            w = weights[:, 1:]
            loss = (_token_losses(torch, model, ids, labels, mask) * w).sum() / w.sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            k = float(w.sum())
            running += float(loss.detach()) * k
            n_tok += k
            step += 1
            bar.update(1)
            bar.set_postfix(loss=f"{running / max(n_tok, 1):.3f}")
        epochs.append({"epoch": epoch + 1, "train_loss": running / max(n_tok, 1),  # weighted, per token
                       "validation_loss": _mean_loss(torch, model, val, 32, pad)})
    bar.close()
    model.eval()

    weights, scaffolds = variant, {b: sc for b, (v, sc) in BASELINE_RUNS.items() if v == variant}
    record = {
        "format": "trb-baseline",
        "format_version": 1,
        "trb_version": TRB_VERSION,
        "variant": weights,
        "serves_baselines": scaffolds,  # baseline -> proxy scaffold to run it with
        "prompt": {"history": s.history, "template": "trb.adapters.proxy.ProxyAdapter.prompt"},
        "seed": seed,
        "release": release,
        "trained_on": subjects,
        "training": {
            "split": "train",
            "objective": "next-token cross-entropy on the target tokens only (action tokens weighted "
                         "by settings.action_weight); validation_loss unweighted, per target token",
            "target": ("the action" if variant == "instruct-base" else "the reasoning line (r_t) and the action"),
            "settings": asdict(s),
            "n_train_pairs": len(fit),
            "n_validation_pairs": len(val),
            "n_train_tokens": sum(len(x[0]) for x in fit),
            "initial_validation_loss": initial_validation_loss,
            "epochs": epochs,
            "wall_s": round(time.perf_counter() - started, 2),
            "numerics": describe(),  # the CPU kernels and threads it was trained with (trb.numerics)
        },
        "model": {"class": "GPT2LMHeadModel", "n_parameters": n_params, "n_positions": n_positions,
                  "vocab_size": len(tok)},
    }
    tmp = out.parent / f".{out.name}.partial-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        (tmp / BASELINE_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        if out.exists():
            out.rmdir()  # empty (checked above)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {**record, "path": str(out)}
