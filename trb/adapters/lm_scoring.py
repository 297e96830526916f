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

How ``score_continuations`` works (a prefix KV cache shared by each context's
continuations, and batching across contexts):

1. Every request is tokenised (one batched tokenizer call for all contexts, one for all
   continuations).  Contexts with at least one non-empty continuation are sorted by
   token length, longest first, and cut into groups of at most ``max_batch_tokens``
   padded tokens (and at most ``max_contexts``).
2. Each group's contexts are run in one forward pass, **right-padded** (the attention
   mask hides the pads; real tokens keep positions ``0..P-1``), with ``use_cache=True``
   and ``logits_to_keep`` set to each row's last real position, so the vocabulary
   projection is computed once per context, not once per token.  That row's
   log-softmax scores every continuation's first token: one-token continuations need
   nothing more.
3. The group's continuations of two or more tokens, from all its contexts, are sorted by
   length (longest first) and scored in batches of ``batch_size`` rows: each batch gets
   a fresh ``DynamicCache`` holding, per row, the cached keys/values of that row's
   context (``index_select`` of the group's cache rows, cut to the batch's longest
   context; the group's cache is never mutated), and only the continuation tokens
   ``c[0..L-2]`` are fed, right-padded, with an attention mask covering the context's
   real tokens and the row's own tokens, and explicit ``position_ids`` starting at the
   context's length.  Pad keys in the cache sit *after* a row's real context and are
   masked, so each row attends to exactly ``context + its own continuation``.

Padding changes only the shapes of the matrix products, so results equal
``score_naive``'s to float rounding (≤ 1e-4 in the tests).

Prompts that later requests extend (``prefix_cache`` and ``prefix=``): a caller that
scores several requests growing one prompt (the proxy adapter fills the Reasoning slots
one after another, each prompt the last one plus a few tokens) runs the prompts forward
once with :func:`prefix_cache`, then passes ``prefix=(cache, rows)``. Each request's
context is still encoded whole; its ids up to the longest common token prefix with its
cached prompt (at most all but its last) are not run again: step 2 runs only the ids past
it, at their true positions, attending to the cached keys/values of that common part
(the attention mask hides the cached prompt's columns past it and its pads). Step 3 is
unchanged. The token ids scored are exactly those of ``score_naive``.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

import torch
from transformers import DynamicCache

__all__ = ["score_continuations", "score_naive", "encode_request", "ContextTooLong", "PrefixCache", "prefix_cache"]

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


def _row_cache(kv: list[tuple[torch.Tensor, torch.Tensor]], rows: torch.Tensor, length: int, config) -> DynamicCache:
    """A fresh DynamicCache whose row i holds cache row ``rows[i]`` of ``kv``, cut to ``length`` positions.

    When every row comes from one cache row, ``expand`` makes views (no copy); otherwise
    ``index_select`` copies.  ``DynamicLayer.update`` concatenates into new tensors, so the
    group's cache tensors are never written to.
    """
    B = int(rows.numel())
    if bool((rows == rows[0]).all()):
        r = int(rows[0])
        data = [(k[r : r + 1, :, :length].expand(B, -1, -1, -1), v[r : r + 1, :, :length].expand(B, -1, -1, -1))
                for k, v in kv]
    else:
        data = [(k[:, :, :length].index_select(0, rows), v[:, :, :length].index_select(0, rows)) for k, v in kv]
    return DynamicCache(ddp_cache_data=data, config=config)


def _accepts(model, name: str) -> bool:
    return name in inspect.signature(model.forward).parameters


def _groups(order: list[int], lengths: list[int], max_tokens: int, max_contexts: int) -> list[list[int]]:
    """Consecutive runs of ``order`` (longest first) whose padded size fits ``max_tokens`` (at least one each)."""
    groups: list[list[int]] = []
    cur: list[int] = []
    for i in order:
        width = lengths[cur[0]] if cur else lengths[i]  # the first is the longest
        if cur and ((len(cur) + 1) * width > max_tokens or len(cur) >= max_contexts):
            groups.append(cur)
            cur = []
        cur.append(i)
    if cur:
        groups.append(cur)
    return groups


def _encode_all(tokenizer, requests: list[Request]) -> list[tuple[list[int], list[list[int]]]]:
    """``encode_request`` for every request, with one batched tokenizer call per kind of text."""
    contexts = [c for c, _ in requests]
    conts = [t for _, cs in requests for t in cs]
    ctx_ids = tokenizer(contexts, add_special_tokens=False)["input_ids"] if contexts else []
    cont_ids = tokenizer(conts, add_special_tokens=False)["input_ids"] if conts else []
    out = []
    k = 0
    for ids, (_, cs) in zip(ctx_ids, requests):
        ids = list(ids) or [_start_id(tokenizer)]
        out.append((ids, [list(x) for x in cont_ids[k : k + len(cs)]]))
        k += len(cs)
    return out


#: Padded context tokens per forward pass in ``score_continuations`` (rows × longest context).
MAX_BATCH_TOKENS = 4096
#: Contexts per forward pass at most.
MAX_CONTEXTS = 32


class ContextTooLong(ValueError):
    """A request's context plus its longest continuation exceeds the model's positions."""

    def __init__(self, tokens: int, window: int):
        super().__init__(f"{tokens} tokens exceed the window of {window}")
        self.tokens = tokens
        self.window = window


class PrefixCache:
    """Prompts run forward once, whose keys/values later requests that extend them reuse.

    ``prefix_cache(model, tokenizer, prompts)`` runs ``prompts`` (encoded by the module's rule)
    in one right-padded forward pass and keeps every layer's keys and values. A later
    ``score_continuations(..., prefix=(cache, rows))`` scores request ``i`` as an extension
    of prompt ``rows[i]``: the request's context is still encoded whole (so its token ids
    are exactly those :func:`score_naive` uses), and only the ids past the longest common
    token prefix with that prompt (at least the last one) are run forward, attending to the
    prompt's cached keys/values for the common part. Results equal the uncached ones to float
    rounding. The caller bounds how many prompts one cache holds (they are one forward pass).
    """

    def __init__(self, ids: list[list[int]], kv: list[tuple[torch.Tensor, torch.Tensor]]):
        self.ids = ids
        self.kv = kv

    def __len__(self) -> int:
        return len(self.ids)

    def start(self, rows: Sequence[int], contexts: Sequence[list[int]]) -> tuple["_Prefilled", list[list[int]]]:
        """The cached part each context reuses (as a start for :func:`_prefill`) and the ids left to run."""
        reuse, rest = [], []
        for r, ctx in zip(rows, contexts):
            base = self.ids[r]
            n = 0
            limit = min(len(base), len(ctx) - 1)  # at least one id is run: its logits score what follows
            while n < limit and base[n] == ctx[n]:
                n += 1
            reuse.append(n)
            rest.append(ctx[n:])
        idx = torch.tensor(list(rows))
        width = max(reuse)
        kv = [(k[:, :, :width].index_select(0, idx.to(k.device)), v[:, :, :width].index_select(0, idx.to(v.device)))
              for k, v in self.kv]
        lengths = torch.tensor(reuse)
        mask = (torch.arange(width).unsqueeze(0) < lengths.unsqueeze(1)).long()
        return _Prefilled(kv=kv, cache=None, mask=mask, lengths=lengths, ends=lengths.clone(), last_logits=None), rest


@torch.inference_mode()
def prefix_cache(model, tokenizer, prompts: Sequence[str]) -> PrefixCache:
    """Run ``prompts`` forward in one pass and keep their keys/values (see :class:`PrefixCache`)."""
    ids = [ctx for ctx, _ in _encode_all(tokenizer, [(p, ()) for p in prompts])]
    pre = _prefill(model, ids, _model_device(model), _accepts(model, "logits_to_keep"), _cache_kwarg(model))
    return PrefixCache(ids, pre.kv)


class _Prefilled:
    """K token rows after one forward pass: the cache, where each row's real tokens are, and its next-token logits.

    ``mask`` (K, W) marks the columns of the cache holding a row's real tokens (a start's
    reused prefix, then its own ids; pads and unused prefix columns are 0); ``lengths`` is
    how many tokens each row holds (the position of its next token); ``ends`` the column
    after each row's last real token.
    """

    def __init__(self, *, kv, cache, mask, lengths, ends, last_logits):
        self.kv, self.cache, self.mask, self.lengths, self.ends, self.last_logits = (
            kv, cache, mask, lengths, ends, last_logits)


def _prefill(model, rows: list[list[int]], device, keep_arg: bool, cache_kw: str,
             start: _Prefilled | None = None) -> _Prefilled:
    """Run the token ``rows`` (each non-empty) forward in one right-padded pass, each after its ``start`` row if given.

    Real tokens of row i sit at positions ``start.lengths[i] + 0..len-1`` (0.. without a
    start); the attention mask hides pads and the start's unused columns.
    """
    K = len(rows)
    E = max(len(x) for x in rows)
    inp = torch.zeros((K, E), dtype=torch.long)
    own = torch.zeros((K, E), dtype=torch.long)
    for b, x in enumerate(rows):
        inp[b, : len(x)] = torch.tensor(x)
        own[b, : len(x)] = 1
    n = torch.tensor([len(x) for x in rows])
    before = start.lengths if start is not None else torch.zeros(K, dtype=torch.long)
    width = start.mask.shape[1] if start is not None else 0
    mask = own if start is None else torch.cat([start.mask, own], dim=1)
    pos = before.unsqueeze(1) + torch.arange(E).unsqueeze(0)
    last = (n - 1).unsqueeze(1)  # (K, 1): each row's last real token among the ids fed
    kwargs = {"logits_to_keep": last.to(device)} if keep_arg else {}
    if start is not None and width:
        kwargs[cache_kw] = DynamicCache(ddp_cache_data=start.kv, config=model.config)
    out = _forward(model, input_ids=inp.to(device), attention_mask=mask.to(device), position_ids=pos.to(device),
                   use_cache=True, **kwargs)
    logits = out.logits
    if logits.shape[1] == 1:
        last_logits = logits[:, 0]
    else:  # the model ignored logits_to_keep: pick the rows' last positions from the full logits
        last_logits = logits.gather(1, last.to(logits.device).unsqueeze(-1).expand(K, 1, logits.shape[-1]))[:, 0]
    cache = _cache_of(out)
    return _Prefilled(kv=_layer_kv(cache), cache=cache, mask=mask, lengths=before + n, ends=width + n,
                      last_logits=last_logits)


@torch.inference_mode()
def score_continuations(model, tokenizer, requests: list[Request], *, batch_size: int = 64,
                        max_batch_tokens: int = MAX_BATCH_TOKENS, max_contexts: int = MAX_CONTEXTS,
                        max_positions: int | None = None,
                        prefix: tuple[PrefixCache, Sequence[int]] | None = None) -> list[list[float]]:
    """Total log p(continuation | context) for every continuation, sharing each context's KV cache.

    Args:
        requests: ``(context, [continuation, ...])`` pairs (see the module docstring for tokenisation).
        batch_size: continuations of two or more tokens scored per forward pass.
        max_batch_tokens: padded context tokens per forward pass (contexts are batched up to it).
        max_contexts: contexts per forward pass at most.
        max_positions: the model's context window; a longer request raises before any pass.
        prefix: ``(cache, rows)``: request i extends prompt ``rows[i]`` of ``cache`` (:class:`PrefixCache`),
            whose keys/values it reuses for their common token prefix.
    Returns:
        One list of floats per request, in the order of its continuations.
    Raises:
        ContextTooLong: a context plus its longest continuation exceeds ``max_positions``.
    """
    if batch_size < 1 or max_batch_tokens < 1 or max_contexts < 1:
        raise ValueError("batch_size, max_batch_tokens and max_contexts must be >= 1")
    if prefix is not None and len(prefix[1]) != len(requests):
        raise ValueError(f"prefix rows: {len(prefix[1])} for {len(requests)} requests")
    device = _model_device(model)
    encoded = _encode_all(tokenizer, requests)
    if max_positions is not None:
        longest = max((len(ctx) + max((len(c) for c in conts), default=0) for ctx, conts in encoded), default=0)
        if longest > max_positions:
            raise ContextTooLong(longest, max_positions)
    results: list[list[float]] = [[0.0] * len(conts) for _, conts in encoded]
    lengths = [len(ctx) for ctx, _ in encoded]
    order = sorted((i for i, (_, conts) in enumerate(encoded) if any(conts)), key=lambda i: -lengths[i])
    keep_arg = _accepts(model, "logits_to_keep")
    cache_kw = _cache_kwarg(model)
    for group in _groups(order, lengths, max_batch_tokens, max_contexts):
        contexts = [encoded[i][0] for i in group]
        if prefix is None:
            pre = _prefill(model, contexts, device, keep_arg, cache_kw)
        else:
            start, rest = prefix[0].start([prefix[1][i] for i in group], contexts)
            pre = _prefill(model, rest, device, keep_arg, cache_kw, start)
        _score_group(model, group, encoded, results, pre, device, batch_size, cache_kw)
    return results


def _score_group(model, group, encoded, results, pre: _Prefilled, device, batch_size, cache_kw) -> None:
    first_logp = torch.log_softmax(pre.last_logits.float(), dim=-1).cpu()  # (K, V)
    kv, mask, lengths, ends = pre.kv, pre.mask, pre.lengths, pre.ends
    del pre

    multi: list[tuple[int, int, int]] = []  # (group row, request index, continuation index)
    for r, i in enumerate(group):
        scores = results[i]
        for j, ids in enumerate(encoded[i][1]):
            if len(ids) == 1:
                scores[j] = float(first_logp[r, ids[0]])
            elif len(ids) >= 2:
                multi.append((r, i, j))
    multi.sort(key=lambda x: -len(encoded[x[1]][1][x[2]]))
    for start in range(0, len(multi), batch_size):
        chunk = multi[start : start + batch_size]
        B = len(chunk)
        conts = [encoded[i][1][j] for _, i, j in chunk]
        rows = torch.tensor([r for r, _, _ in chunk])
        Pc = int(ends[rows].max())  # the chunk's last real column: keys past it are pads of every row
        Lmax = max(len(ids) for ids in conts) - 1  # tokens fed: c[0..L-2]
        fed = torch.zeros((B, Lmax), dtype=torch.long)
        targets = torch.zeros((B, Lmax), dtype=torch.long)
        tmask = torch.zeros((B, Lmax), dtype=torch.bool)
        amask = torch.zeros((B, Pc + Lmax), dtype=torch.long)
        amask[:, :Pc] = mask[rows, :Pc]
        for b, ids in enumerate(conts):
            n = len(ids) - 1
            fed[b, :n] = torch.tensor(ids[:-1])
            targets[b, :n] = torch.tensor(ids[1:])
            tmask[b, :n] = True
            amask[b, Pc : Pc + n] = 1
        pos = lengths[rows].unsqueeze(1) + torch.arange(Lmax).unsqueeze(0)
        cache = _row_cache(kv, rows.to(kv[0][0].device), Pc, model.config)
        out = _forward(model, input_ids=fed.to(device), attention_mask=amask.to(device), position_ids=pos.to(device),
                       use_cache=True, **{cache_kw: cache})
        logits = out.logits.float()  # (B, Lmax, V)
        lse = torch.logsumexp(logits, dim=-1)
        tok_logp = logits.gather(-1, targets.to(logits.device).unsqueeze(-1))[..., 0] - lse
        rest = (tok_logp.cpu() * tmask).sum(dim=1)
        for b, (r, i, j) in enumerate(chunk):
            results[i][j] = float(first_logp[r, conts[b][0]] + rest[b])
        del out, cache, logits, lse, tok_logp


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
