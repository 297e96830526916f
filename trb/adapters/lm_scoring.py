"""Continuation log-likelihood scoring for causal LMs, with a shared prefix KV cache.

``score_continuations(model, tokenizer, requests)`` returns, for every
``(context, [continuation, ...])`` request, the total ``log p(continuation | context)``
of each continuation (natural log, summed over the continuation's tokens).
``score_naive`` computes the same quantities the plain way, one
``context + continuation`` forward pass at a time; it is the reference.

Tokenisation rule (shared by both functions, so their results are comparable):

* context ids      = ``tokenizer(context, add_special_tokens=False).input_ids``
* continuation ids = ``tokenizer(continuation, add_special_tokens=False).input_ids``
* the sequence scored is ``context ids + continuation ids``; only the continuation's
  ids are scored.  Context and continuation are encoded *separately*, so the
  boundary between them is always a token boundary (a BPE merge across the
  boundary is never made); put any separating space in the continuation, e.g.
  ``("The capital of France is", [" Paris", " Rome"])``.
* an empty context is replaced by one start token (``bos_token_id``, else
  ``eos_token_id``) so the first continuation token has something to be
  predicted from.  A continuation that encodes to no tokens scores ``0.0``.
* no truncation is done: context + continuation must fit the model's positions.

How ``score_continuations`` works: every context is run once with ``use_cache=True``.
Its last logits give the log-probability of every continuation's first token.
The continuations (sorted by token length, longest first, within the context) are
then scored in batches of ``batch_size``: each batch gets its own copy of the prefix
cache, expanded to the batch (a new ``DynamicCache`` built from the per-layer
key/value tensors; the context's cache is never mutated), and only the
continuation tokens ``c[0..L-2]`` are fed, right-padded, with an attention mask
covering prefix + continuation and explicit ``position_ids`` starting at the prefix
length.  One-token continuations need no forward pass beyond the context's.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

import torch
from transformers import DynamicCache

__all__ = ["score_continuations", "score_naive", "encode_request"]

Request = tuple[str, Sequence[str]]


def _start_id(tokenizer) -> int:
    for tid in (tokenizer.bos_token_id, tokenizer.eos_token_id):
        if tid is not None:
            return int(tid)
    raise ValueError("empty context and the tokenizer has neither a bos nor an eos token")


def _encode(tokenizer, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def encode_request(tokenizer, context: str, continuations: Sequence[str]) -> tuple[list[int], list[list[int]]]:
    """The tokenisation rule used by both scorers: (context ids, [continuation ids, ...])."""
    ctx = _encode(tokenizer, context)
    if not ctx:
        ctx = [_start_id(tokenizer)]
    return ctx, [_encode(tokenizer, c) for c in continuations]


def _model_device(model) -> torch.device:
    return next(model.parameters()).device


def _forward(model, **kwargs):
    return model(**kwargs, return_dict=True)


def _cache_kwarg(model) -> str:
    """transformers 5 names the KV cache argument ``cache``; older versions ``past_key_values``."""
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _cache_of(out):
    cache = getattr(out, "cache", None)
    if cache is None:
        cache = getattr(out, "past_key_values", None)
    if cache is None:
        raise RuntimeError("the model returned no KV cache with use_cache=True")
    return cache


def _layer_kv(cache) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per-layer (keys, values), each (1, heads, P, head_dim)."""
    if hasattr(cache, "layers"):
        return [(layer.keys, layer.values) for layer in cache.layers]
    return [(k, v) for k, v in cache]  # legacy tuple-of-tuples


def _expanded_cache(kv: list[tuple[torch.Tensor, torch.Tensor]], batch: int, config) -> DynamicCache:
    """A fresh DynamicCache holding the prefix for ``batch`` rows.

    ``expand`` makes views; ``DynamicLayer.update`` concatenates into new tensors, so
    the shared prefix tensors are never written to.
    """
    data = [(k.expand(batch, *k.shape[1:]), v.expand(batch, *v.shape[1:])) for k, v in kv]
    return DynamicCache(ddp_cache_data=data, config=config)


@torch.inference_mode()
def score_continuations(model, tokenizer, requests: list[Request], *, batch_size: int = 16) -> list[list[float]]:
    """Total log p(continuation | context) for every continuation, sharing each context's KV cache."""
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    device = _model_device(model)
    results: list[list[float]] = []
    for context, continuations in requests:
        ctx_ids, cont_ids = encode_request(tokenizer, context, continuations)
        scores = [0.0] * len(cont_ids)
        results.append(scores)
        if not any(cont_ids):
            continue
        P = len(ctx_ids)
        out = _forward(model, input_ids=torch.tensor([ctx_ids], device=device), use_cache=True)
        first_logp = torch.log_softmax(out.logits[0, -1].float(), dim=-1)  # (V,)
        kv = _layer_kv(_cache_of(out))
        del out

        # Continuations needing a forward pass (>= 2 tokens), longest first.
        multi = [i for i, ids in enumerate(cont_ids) if len(ids) >= 2]
        for i, ids in enumerate(cont_ids):
            if len(ids) == 1:
                scores[i] = float(first_logp[ids[0]])
        multi.sort(key=lambda i: -len(cont_ids[i]))
        for start in range(0, len(multi), batch_size):
            idx = multi[start : start + batch_size]
            B = len(idx)
            Lmax = max(len(cont_ids[i]) for i in idx) - 1  # tokens fed: c[0..L-2]
            inp = torch.zeros((B, Lmax), dtype=torch.long)
            mask = torch.zeros((B, P + Lmax), dtype=torch.long)
            mask[:, :P] = 1
            for r, i in enumerate(idx):
                fed = cont_ids[i][:-1]
                inp[r, : len(fed)] = torch.tensor(fed)
                mask[r, P : P + len(fed)] = 1
            pos = torch.arange(P, P + Lmax).unsqueeze(0).expand(B, Lmax)
            cache = _expanded_cache(kv, B, model.config)
            out = _forward(
                model,
                input_ids=inp.to(device),
                attention_mask=mask.to(device),
                position_ids=pos.to(device),
                **{_cache_kwarg(model): cache},
                use_cache=True,
            )
            logp = torch.log_softmax(out.logits.float(), dim=-1)  # (B, Lmax, V)
            for r, i in enumerate(idx):
                ids = cont_ids[i]
                targets = torch.tensor(ids[1:], device=logp.device)
                rest = logp[r, : len(ids) - 1].gather(-1, targets.unsqueeze(-1)).sum()
                scores[i] = float(first_logp[ids[0]] + rest)
            del out, cache, logp
    return results


@torch.inference_mode()
def score_naive(model, tokenizer, requests: list[Request]) -> list[list[float]]:
    """Reference: one (context + continuation) forward pass per pair, plain transformers."""
    device = _model_device(model)
    results: list[list[float]] = []
    for context, continuations in requests:
        ctx_ids, cont_ids = encode_request(tokenizer, context, continuations)
        P = len(ctx_ids)
        scores = []
        for ids in cont_ids:
            if not ids:
                scores.append(0.0)
                continue
            full = torch.tensor([ctx_ids + ids], device=device)
            logits = _forward(model, input_ids=full, use_cache=False).logits[0]
            logp = torch.log_softmax(logits[P - 1 : P - 1 + len(ids)].float(), dim=-1)
            targets = torch.tensor(ids, device=logp.device)
            scores.append(float(logp.gather(-1, targets.unsqueeze(-1)).sum()))
        results.append(scores)
    return results
