"""Residual-stream access for Hugging Face causal LMs: read a layer's state, add a vector to it.

What proxy-tier grounding (Track 2 beyond the native tier) needs from any causal LM:

* :func:`decoder_layers`: the model's stack of decoder layers (the ``nn.ModuleList`` whose
  length is the config's number of hidden layers: ``model.transformer.h`` for GPT-2,
  ``model.model.layers`` for Llama and SmolLM2, and so on).
* :func:`last_states`: z of a prompt at layer L, the residual stream ENTERING decoder layer
  ``L`` (``hidden_states[L]``: the embeddings for L = 0) at the prompt's last token, for many
  prompts at once. (Entering, not leaving: after the last layer a position's state reaches
  only its own logits, so an injection there could never reach the tokens that follow.)
* :func:`add_at_first`: a context manager holding a forward pre-hook on decoder layer ``L``
  that adds ``vectors[b]`` to row b's input hidden state at the FIRST position fed in that
  forward pass (the state passed positionally or as ``hidden_states=``).
* :func:`score_injected`: the trials. A prompt's ids but its last are run once
  (:func:`~trb.adapters.lm_scoring.prefix_cache`, no injection); each trial then runs
  the last prompt id with its vector added at layer L, a suffix (``" goal="``) and the
  candidates packed behind it (:func:`~trb.adapters.lm_scoring.score_continuations` with
  ``prefix=``), so the injection reaches what follows only through the prompt's last
  position, where z was read. Every trial of a prompt (null, random, each concept, each
  strength) shares the prompt's cached ids: a trial costs its suffix and candidates and one
  token, not the prompt again.

No library beyond torch and transformers: a forward hook is all it takes, and it is
checked against a plain forward pass with the same addition in ``tests/trb/test_steering.py``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import torch

from toolkit.errors import ExitCode, ToolkitError
from trb.adapters.lm_scoring import _accepts, encode_request, prefix_cache, score_continuations

__all__ = ["decoder_layers", "last_states", "add_at_first", "score_injected", "SteeringError"]


class SteeringError(ToolkitError, ValueError):
    """The model's decoder layers cannot be found, or a layer index or vector does not fit."""

    exit_code = ExitCode.ADAPTER


def _n_layers(model) -> int | None:
    cfg = getattr(model, "config", None)
    for name in ("num_hidden_layers", "n_layer"):
        v = getattr(cfg, name, None)
        if isinstance(v, int):
            return v
    return None


def decoder_layers(model) -> torch.nn.ModuleList:
    """The decoder layers of ``model``: the one ``nn.ModuleList`` as long as the config's layer count.

    Raises:
        SteeringError: the config has no layer count, or no (or more than one) such list exists.
    """
    n = _n_layers(model)
    if n is None:
        raise SteeringError(f"{type(model).__name__}: its config names no number of hidden layers")
    found = [m for m in model.modules() if isinstance(m, torch.nn.ModuleList) and len(m) == n]
    if len(found) != 1:
        raise SteeringError(f"{type(model).__name__}: {len(found)} module lists of {n} layers; expected exactly one "
                            "(the decoder layers)")
    return found[0]


def _check_layer(model, layer: int) -> torch.nn.Module:
    layers = decoder_layers(model)
    if not 0 <= layer < len(layers):
        raise SteeringError(f"layer {layer} is not one of the model's decoder layers 0..{len(layers) - 1}")
    return layers[layer]


@torch.inference_mode()
def last_states(model, tokenizer, prompts: Sequence[str], layer: int | Sequence[int], *,
                batch: int = 16, tokens: int = 1024) -> np.ndarray | dict[int, np.ndarray]:
    """z at ``layer`` of each prompt: the residual stream entering decoder layer ``layer`` at its last token.

    Returns a float64 array of shape (len(prompts), hidden size), in the order of ``prompts``, or,
    for a sequence of layers, one such array per layer from the same forward passes. No logits
    but the last position's.

    Prompts are run shortest first, in right-padded groups (the last token's state does not see
    the pads) of at most ``batch`` prompts and ``tokens`` padded token slots, one prompt alone
    when it is longer. On a CPU a wide padded group costs more than its prompts run one by one
    (the attention mask and scores grow with rows × length²): SmolLM2's 16 z prompts of 116–868
    tokens took 49 s in one group and 19 s in groups of two (bench/grounding.py).
    """
    if batch < 1 or tokens < 1:
        raise SteeringError(f"batch and tokens must be at least 1, got {batch} and {tokens}")
    layers = [layer] if isinstance(layer, int) else list(layer)
    for n in layers:
        _check_layer(model, n)
    device = next(model.parameters()).device
    keep = {"logits_to_keep": 1} if _accepts(model, "logits_to_keep") else {}
    size = getattr(model.config, "hidden_size", None) or getattr(model.config, "n_embd", 0)
    out = {n: np.zeros((len(prompts), size)) for n in layers}
    ids = [encode_request(tokenizer, p, [])[0] for p in prompts]
    for group in _length_groups([len(x) for x in ids], batch, tokens):
        E = len(ids[group[-1]])  # shortest first: the group's last is its longest
        inp = torch.zeros((len(group), E), dtype=torch.long)
        mask = torch.zeros((len(group), E), dtype=torch.long)
        for b, i in enumerate(group):
            inp[b, : len(ids[i])] = torch.tensor(ids[i])
            mask[b, : len(ids[i])] = 1
        res = model(input_ids=inp.to(device), attention_mask=mask.to(device), output_hidden_states=True,
                    return_dict=True, **keep)
        last = torch.tensor([len(ids[i]) - 1 for i in group])
        for n in layers:
            hidden = res.hidden_states[n]
            out[n][group] = hidden[torch.arange(len(group), device=hidden.device), last.to(hidden.device)].double().cpu().numpy()
    return out[layer] if isinstance(layer, int) else out


def _length_groups(lengths: Sequence[int], batch: int, tokens: int) -> list[list[int]]:
    """Indices in order of length (ties by index), cut into groups of at most ``batch`` rows and ``tokens`` padded slots.

    A group's padded size is its row count times its longest length; a row longer than ``tokens`` is a group alone.
    """
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    groups: list[list[int]] = []
    for i in order:
        g = groups[-1] if groups else None
        if g is not None and len(g) < batch and (len(g) + 1) * lengths[i] <= tokens:
            g.append(i)
        else:
            groups.append([i])
    return groups


@contextmanager
def add_at_first(model, layer: int, vectors: torch.Tensor) -> Iterator[dict]:
    """While active, decoder layer ``layer`` gets ``vectors[b]`` added to row b of its input at the first position fed.

    ``vectors`` is (rows, hidden size). The block yields a dict whose ``"vectors"`` entry may be
    replaced between forward passes (e.g. by the rows of the next pass); every pass must have as
    many rows as the current vectors. The hook is removed on leaving the block, also on an error.
    """
    module = _check_layer(model, layer)
    if vectors.ndim != 2:
        raise SteeringError(f"vectors must be (rows, hidden size), got shape {tuple(vectors.shape)}")
    current = {"vectors": vectors}

    def hook(_module, args, kwargs):
        vecs = current["vectors"]
        hidden = args[0] if args else kwargs.get("hidden_states")
        if hidden is None:
            raise SteeringError(f"decoder layer {layer} was called without a hidden state to add to")
        if hidden.shape[0] != vecs.shape[0] or hidden.shape[-1] != vecs.shape[1]:
            raise SteeringError(f"layer {layer} input {tuple(hidden.shape)} does not fit vectors {tuple(vecs.shape)}")
        hidden = hidden.clone()
        hidden[:, 0] = hidden[:, 0] + vecs.to(hidden.dtype).to(hidden.device)
        if args:
            return (hidden, *args[1:]), kwargs
        return args, {**kwargs, "hidden_states": hidden}

    handle = module.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        yield current
    finally:
        handle.remove()


def score_injected(model, tokenizer, rows: Sequence[tuple[str, str, Sequence[str]]], layer: int,
                   vectors: np.ndarray | torch.Tensor, *, chunk: int = 1024, prompts: int = 16,
                   max_positions: int | None = None) -> list[list[float]]:
    """log p(candidate | prompt + suffix) for each trial row, with the row's vector added to z at ``layer``.

    Row t is ``(prompt, suffix, candidates)`` and ``vectors[t]``: z is the residual stream entering
    decoder layer ``layer`` at the prompt's LAST token; the vector is added there and only there,
    then the suffix (e.g. ``" goal="``) and each candidate are read as the model goes on, seeing
    the injection through that position. A zero vector is the null trial. Each returned row
    equals a plain forward pass over prompt + suffix + candidate with the same addition at the
    prompt's last position (to float rounding; tested).

    The prompts but their last ids are run once per chunk of consecutive rows (at most ``chunk``
    rows and ``prompts`` distinct prompts, which bounds the cached keys and values) and shared by
    every trial of the same prompt in it (:func:`~trb.adapters.lm_scoring.prefix_cache` with
    ``drop_last``); a trial runs the prompt's last id, its suffix and its packed candidates. So
    give a prompt's trials consecutively (Track 2 does): each prompt is then run once.

    Raises:
        SteeringError: a bad layer, vectors of the wrong shape, a row without candidates, a prompt
            under two tokens, or a suffix that merges with the prompt's last token.
    """
    vecs = vectors if torch.is_tensor(vectors) else torch.as_tensor(np.asarray(vectors, dtype=np.float64))
    if vecs.ndim != 2 or len(vecs) != len(rows):
        raise SteeringError(f"vectors must be (rows, hidden size) with one row per trial: got {tuple(vecs.shape)} "
                            f"for {len(rows)} trials")
    _check_layer(model, layer)
    if chunk < 1 or prompts < 1:
        raise SteeringError(f"chunk and prompts must be at least 1, got {chunk} and {prompts}")
    out: list[list[float]] = []
    for start, stop in _chunks([p for p, _, _ in rows], chunk, prompts):
        part = rows[start:stop]
        prompts = list(dict.fromkeys(p for p, _, _ in part))
        index = {p: i for i, p in enumerate(prompts)}
        requests = []
        checked: set[tuple[str, str]] = set()  # a prompt's trials share its checks (one tokenisation each)
        for prompt, suffix, candidates in part:
            if not candidates:
                raise SteeringError("a trial has no candidate to score")
            if (prompt, suffix) not in checked:
                base = encode_request(tokenizer, prompt, [])[0]
                if len(base) < 2:
                    raise SteeringError("a prompt must have at least two tokens (its last one carries the injection)")
                if encode_request(tokenizer, prompt + suffix, [])[0][: len(base)] != base:
                    raise SteeringError(f"the suffix {suffix!r} merges with the prompt's last token: z would move")
                checked.add((prompt, suffix))
            requests.append((prompt + suffix, list(candidates)))
        cache = prefix_cache(model, tokenizer, prompts, drop_last=True)  # without the injection
        mine = vecs[start:stop]
        with add_at_first(model, layer, mine) as current:
            # each row feeds its prompt's last id first (where the hook adds), then its suffix and packed
            # candidates; before each pass the hook is handed that pass's rows' vectors, in its row order
            out.extend(score_continuations(
                model, tokenizer, requests, max_positions=max_positions,
                prefix=(cache, [index[p] for p, _, _ in part]),
                before_group=lambda group, mine=mine, current=current: current.update(
                    vectors=mine[torch.tensor(group)])))
    return out


def _chunks(prompts: Sequence[str], rows: int, distinct: int) -> list[tuple[int, int]]:
    """[start, stop) runs of consecutive rows: at most ``rows`` rows and ``distinct`` distinct prompts each."""
    out, start, seen = [], 0, set()
    for i, p in enumerate(prompts):
        if i - start >= rows or (p not in seen and len(seen) >= distinct):
            out.append((start, i))
            start, seen = i, set()
        seen.add(p)
    if start < len(prompts):
        out.append((start, len(prompts)))
    return out
