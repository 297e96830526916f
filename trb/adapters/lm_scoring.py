"""Continuation log-likelihood scoring for causal LMs: each context run once for all its continuations.

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

How ``score_continuations`` works (each context run once for all its continuations,
packed into its row, and batching across contexts):

1. Every request is tokenised (one batched tokenizer call for all contexts, one for all
   continuations).  A context's row is its ids followed, one after another, by the ids
   ``c[0..L-2]`` of each of its continuations of two or more tokens (what must be run to
   score ``c[1..L-1]``).  Rows with at least one non-empty continuation are sorted by
   that packed length, longest first, and cut into groups of at most ``max_batch_tokens``
   padded tokens, ``max_contexts`` rows and ``max_scored_positions`` kept logits.
2. Each group is ONE forward pass, right-padded, with explicit ``position_ids`` and a 4-D
   attention mask: a context id attends to the context ids before it; a continuation id
   to the whole context and to the ids of its own continuation before it, never to
   another continuation's; every continuation's positions start at the context's length
   ``P``. So each continuation sees exactly ``context + its own prefix`` at the positions
   it would have alone.  ``logits_to_keep`` keeps only the context's last position (which
   scores every continuation's first token: one-token continuations need nothing more)
   and the packed ids' positions, so the vocabulary projection is computed for those only.
3. ``log p(c) = log p(c[0] | context) + sum_t log p(c[t] | context, c[<t])`` from the
   kept log-softmaxes.

Padding and packing change only the shapes of the matrix products, so results equal
``score_naive``'s to float rounding (≤ 1e-4 in the tests, for GPT-2 and Llama).
A model must honour a custom 4-D attention mask and ``position_ids`` (transformers'
attention models do: a 4-D mask is used as given).

Prompts that later requests extend (``prefix_cache`` and ``prefix=``): a caller that
scores several requests growing one prompt (the proxy adapter fills the Reasoning slots
one after another, each prompt the last one plus a few tokens) runs the prompts forward
once with :func:`prefix_cache`, then passes ``prefix=(cache, rows)``. Each request's
context is still encoded whole; its ids up to the longest common token prefix with its
cached prompt (at most all but its last) are not run again: step 2 runs only the ids past
it (and the packed continuations), at their true positions, attending to the cached
keys/values of that common part (the mask hides the cached prompt's columns past it and
its pads). The token ids scored are exactly those of ``score_naive``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

import torch
from transformers import DynamicCache

from toolkit.errors import ExitCode, ToolkitError

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


def _encode_unique(tokenizer, texts: list[str]) -> list[list[int]]:
    """The ids of each text, each distinct text tokenised once (requests repeat their contexts and candidates)."""
    if not texts:
        return []
    uniq = list(dict.fromkeys(texts))
    ids = dict(zip(uniq, tokenizer(uniq, add_special_tokens=False)["input_ids"]))
    return [ids[t] for t in texts]


def _encode_all(tokenizer, requests: list[Request]) -> list[tuple[list[int], list[list[int]]]]:
    """``encode_request`` for every request, with one batched tokenizer call per kind of text."""
    contexts = [c for c, _ in requests]
    conts = [t for _, cs in requests for t in cs]
    ctx_ids = _encode_unique(tokenizer, contexts)
    cont_ids = _encode_unique(tokenizer, conts)
    out = []
    k = 0
    for ids, (_, cs) in zip(ctx_ids, requests):
        ids = list(ids) or [_start_id(tokenizer)]
        out.append((ids, [list(x) for x in cont_ids[k : k + len(cs)]]))
        k += len(cs)
    return out


#: Padded tokens per forward pass in ``score_continuations`` (rows × longest packed row) when every context is
#: run whole. Small passes are the fast ones on a CPU: with 4096, float32 SmolLM2-135M took 1.5x the time of 512
#: and the tiny GPT-2 of the bench 1.15x (one thread; their activations then no longer stay in the caches), and a
#: row longer than this is a pass of its own (issue 19, bench/README.md).
PASS_TOKENS = 512
#: Padded tokens per forward pass with ``prefix=`` (rows × longest packed row, counting the cached part, of which
#: only the ids past it run) and per prompt group of the proxy adapter's ``prefix_cache`` calls.
MAX_BATCH_TOKENS = 4096
#: Contexts per forward pass at most.
MAX_CONTEXTS = 32
#: Positions whose logits one forward pass keeps, at most (rows x positions x vocabulary floats).
MAX_SCORED_POSITIONS = 2048


class ContextTooLong(ToolkitError, ValueError):
    """A request's context plus its longest continuation exceeds the model's positions."""

    exit_code = ExitCode.ADAPTER

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

    def start(self, rows: Sequence[int], contexts: Sequence[list[int]]) -> tuple[_Prefilled, list[list[int]]]:
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
        return _Prefilled(kv=kv, cache=None, mask=mask, lengths=lengths, last_logits=None), rest


@torch.inference_mode()
def prefix_cache(model, tokenizer, prompts: Sequence[str], *, drop_last: bool = False) -> PrefixCache:
    """Run ``prompts`` forward in one pass and keep their keys/values (see :class:`PrefixCache`).

    ``drop_last``: cache each prompt's ids but its last (a prompt needs at least two), so a
    request extending the prompt runs the prompt's last id again, first among the ids it feeds
    (where :func:`trb.adapters.steering.add_at_first` adds a vector).
    """
    ids = [ctx for ctx, _ in _encode_all(tokenizer, [(p, ()) for p in prompts])]
    if drop_last:
        if any(len(x) < 2 for x in ids):
            raise ValueError("drop_last needs prompts of at least two tokens")
        ids = [x[:-1] for x in ids]
    pre = _prefill(model, ids, _model_device(model), _accepts(model, "logits_to_keep"), _cache_kwarg(model))
    return PrefixCache(ids, pre.kv)


class _Prefilled:
    """K token rows after one forward pass: the cache, where each row's real tokens are, and its next-token logits.

    ``mask`` (K, W) marks the columns of the cache holding a row's real tokens (a start's
    reused prefix, then its own ids; pads and unused prefix columns are 0); ``lengths`` is
    how many tokens each row holds (the position of its next token).
    """

    def __init__(self, *, kv, cache, mask, lengths, last_logits):
        self.kv, self.cache, self.mask, self.lengths, self.last_logits = kv, cache, mask, lengths, last_logits


def _forward_kept(model, inp, mask, pos, keep, start: _Prefilled | None, device, keep_arg: bool, cache_kw: str, *,
                  use_cache: bool):
    """One forward pass (after ``start``'s cached columns, if any); the logits at ``keep`` (K, M) positions of each row."""
    kwargs = {"logits_to_keep": keep.to(device)} if keep_arg else {}
    if start is not None and start.mask.shape[1]:
        kwargs[cache_kw] = DynamicCache(ddp_cache_data=start.kv, config=model.config)
    out = _forward(model, input_ids=inp.to(device), attention_mask=mask.to(device), position_ids=pos.to(device),
                   use_cache=use_cache, **kwargs)
    logits = out.logits
    if not (keep_arg and logits.shape[1] == keep.shape[1]):  # all positions came back: pick the kept ones
        logits = logits.gather(1, keep.to(logits.device).unsqueeze(-1).expand(*keep.shape, logits.shape[-1]))
    return out, logits


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
    mask = own if start is None else torch.cat([start.mask, own], dim=1)
    pos = before.unsqueeze(1) + torch.arange(E).unsqueeze(0)
    last = (n - 1).unsqueeze(1)  # (K, 1): each row's last real token among the ids fed
    out, logits = _forward_kept(model, inp, mask, pos, last, start, device, keep_arg, cache_kw, use_cache=True)
    last_logits = logits[:, 0]
    cache = _cache_of(out)
    return _Prefilled(kv=_layer_kv(cache), cache=cache, mask=mask, lengths=before + n, last_logits=last_logits)


@torch.inference_mode()
def score_continuations(model, tokenizer, requests: list[Request], *, max_batch_tokens: int | None = None,
                        max_contexts: int = MAX_CONTEXTS, max_scored_positions: int = MAX_SCORED_POSITIONS,
                        max_positions: int | None = None,
                        prefix: tuple[PrefixCache, Sequence[int]] | None = None,
                        before_group: Callable[[list[int]], None] | None = None) -> list[list[float]]:
    """Total log p(continuation | context) for every continuation, each context run once for all of its continuations.

    Args:
        requests: ``(context, [continuation, ...])`` pairs (see the module docstring for tokenisation).
        max_batch_tokens: padded tokens per forward pass (a row is a context and its packed continuations);
            default :data:`PASS_TOKENS`, or :data:`MAX_BATCH_TOKENS` with ``prefix``.
        max_contexts: contexts per forward pass at most.
        max_scored_positions: positions whose next-token logits one forward pass computes, at most
            (unless one context alone needs more): it bounds the logits tensor, rows x vocabulary.
        max_positions: the model's context window; a longer request raises before any pass.
        prefix: ``(cache, rows)``: request i extends prompt ``rows[i]`` of ``cache`` (:class:`PrefixCache`),
            whose keys/values it reuses for their common token prefix.
        before_group: called with the request indices of each forward pass, in the order of its rows, just
            before the pass (a forward hook that treats rows differently learns which row is which).
    Returns:
        One list of floats per request, in the order of its continuations.
    Raises:
        ContextTooLong: a context plus its longest continuation exceeds ``max_positions``.
    """
    if max_batch_tokens is None:
        max_batch_tokens = PASS_TOKENS if prefix is None else MAX_BATCH_TOKENS
    if max_batch_tokens < 1 or max_contexts < 1 or max_scored_positions < 1:
        raise ValueError("max_batch_tokens, max_contexts and max_scored_positions must be >= 1")
    if prefix is not None and len(prefix[1]) != len(requests):
        raise ValueError(f"prefix rows: {len(prefix[1])} for {len(requests)} requests")
    device = _model_device(model)
    encoded = _encode_all(tokenizer, requests)
    if max_positions is not None:
        longest = max((len(ctx) + max((len(c) for c in conts), default=0) for ctx, conts in encoded), default=0)
        if longest > max_positions:
            raise ContextTooLong(longest, max_positions)
    results: list[list[float]] = [[0.0] * len(conts) for _, conts in encoded]
    packed = [len(ctx) + sum(len(c) - 1 for c in conts if len(c) >= 2) for ctx, conts in encoded]
    scored = [1 + sum(len(c) - 1 for c in conts if len(c) >= 2) for _, conts in encoded]
    order = sorted((i for i, (_, conts) in enumerate(encoded) if any(conts)), key=lambda i: -packed[i])
    keep_arg = _accepts(model, "logits_to_keep")
    cache_kw = _cache_kwarg(model)
    for group in _packed_groups(order, packed, scored, max_batch_tokens, max_contexts, max_scored_positions):
        contexts = [encoded[i][0] for i in group]
        if prefix is None:
            start, rest = None, contexts
        else:
            start, rest = prefix[0].start([prefix[1][i] for i in group], contexts)
        if before_group is not None:
            before_group(list(group))
        _score_packed(model, [encoded[i][1] for i in group], rest, start, [results[i] for i in group], device,
                      keep_arg, cache_kw)
    return results


def _packed_groups(order, packed, scored, max_tokens: int, max_contexts: int, max_scored: int) -> list[list[int]]:
    """Consecutive runs of ``order`` (longest first) within the budgets: padded tokens, contexts, kept positions.

    A row's packed length is its context plus its packed continuation ids; its kept positions
    are one plus those ids (rows are padded to the group's most). A context that alone exceeds
    a budget is a group of its own.
    """
    groups: list[list[int]] = []
    cur: list[int] = []
    most = 0
    for i in order:
        width = packed[cur[0]] if cur else packed[i]  # the first is the longest
        m = max(most, scored[i])
        if cur and ((len(cur) + 1) * width > max_tokens or len(cur) >= max_contexts or (len(cur) + 1) * m > max_scored):
            groups.append(cur)
            cur, m = [], scored[i]
        cur.append(i)
        most = m
    if cur:
        groups.append(cur)
    return groups


def _score_packed(model, conts: list[list[list[int]]], rest: list[list[int]], start: _Prefilled | None,
                  results: list[list[float]], device, keep_arg: bool, cache_kw: str) -> None:
    """Score every continuation of K contexts in one forward pass, writing into ``results``.

    Row r holds the context's ids still to run (``rest[r]``, after its ``start`` prefix),
    then, packed one after another, every continuation c of two or more tokens as its ids
    ``c[0..L-2]``. A 4-D attention mask lets a context id see the start's reused columns and
    the context ids before it; a continuation id sees those, the whole context and the ids of
    its own continuation before it: never another continuation. Position ids restart at the
    context's length for every continuation, so each is scored as if it alone followed.
    """
    K = len(rest)
    W = start.mask.shape[1] if start is not None else 0
    before = start.lengths.tolist() if start is not None else [0] * K
    rows, positions, segments, plans, keeps = [], [], [], [], []
    for r in range(K):
        ids, e = list(rest[r]), len(rest[r])
        P = before[r] + e  # the context's length: every continuation starts at this position
        pos, seg = list(range(before[r], P)), [0] * e
        plan, keep = [], [e - 1]  # logits kept: the context's last id, then every packed id
        for j, c in enumerate(conts[r]):
            if len(c) >= 2:
                n = len(c) - 1
                plan.append((j, len(keep), n))
                keep.extend(range(len(ids), len(ids) + n))
                ids.extend(c[:-1])
                pos.extend(range(P, P + n))
                seg.extend([j + 1] * n)
        rows.append(ids), positions.append(pos), segments.append(seg), plans.append(plan), keeps.append(keep)
    E, M = max(map(len, rows)), max(map(len, keeps))
    inp = torch.zeros((K, E), dtype=torch.long)
    pos = torch.zeros((K, E), dtype=torch.long)
    seg = torch.full((K, E), -1, dtype=torch.long)  # -1: a pad
    keep = torch.zeros((K, M), dtype=torch.long)
    for r in range(K):
        n = len(rows[r])
        inp[r, :n], pos[r, :n], seg[r, :n] = torch.tensor(rows[r]), torch.tensor(positions[r]), torch.tensor(segments[r])
        keep[r, : len(keeps[r])] = torch.tensor(keeps[r])
        keep[r, len(keeps[r]):] = keeps[r][0]
    q, k = seg.unsqueeze(2), seg.unsqueeze(1)  # (K, E, 1), (K, 1, E)
    causal = torch.ones((E, E), dtype=torch.bool).tril()
    own = causal & (k >= 0) & ((k == 0) | (k == q))
    own |= torch.eye(E, dtype=torch.bool) & (q < 0)  # a pad attends to itself only (never to nothing)
    if start is not None and W:
        seen = torch.cat([start.mask.bool().unsqueeze(1).expand(K, E, W) & (q >= 0), own], dim=2)
    else:
        seen = own
    dtype = next(model.parameters()).dtype
    mask = torch.zeros(seen.shape, dtype=dtype).masked_fill(~seen, torch.finfo(dtype).min).unsqueeze(1)
    out, logits = _forward_kept(model, inp, mask, pos, keep, start, device, keep_arg, cache_kw, use_cache=False)
    logp = torch.log_softmax(logits.float(), dim=-1).cpu()  # (K, M, V)
    del out, logits
    for r in range(K):
        scores, first = results[r], logp[r, 0]
        for j, c in enumerate(conts[r]):
            if len(c) == 1:
                scores[j] = float(first[c[0]])
        for j, at, n in plans[r]:
            c = conts[r][j]
            tail = logp[r, at : at + n].gather(-1, torch.tensor(c[1:]).unsqueeze(-1)).sum()
            scores[j] = float(first[c[0]] + tail)


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
