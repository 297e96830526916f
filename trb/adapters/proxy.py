"""The proxy adapter: any Hugging Face causal LM behind the two-hook contract (TRB spec §2, tier "proxy").

A proxy model has no explicit r_t pathway: its r_t is elicited from a chain-of-thought span written in the
schema's slots, and the intervention do(r_t := r') edits that span. The prompt specification (templates,
history window, emit_r's two modes, batching, the no-r_t ablation, chat template and option texts, action
scores, the cot_edit intervention, re-creating older runs) is docs/methodology/proxy-prompt.md.

torch and transformers are imported when a model is loaded, not when this module is imported.

Why this module is long: one class, :class:`ProxyAdapter`, implements every capability of the proxy tier (act,
emit_r and their batched forms, continuation scoring, the no-r_t ablation, activation access, cot_edit) over one
loaded model, its tokenizer, its prompt template and its counters; each capability reads and updates that same
state, so cutting the class into modules would hand the state around rather than make any part readable alone.
The prompt specification it implements is docs/methodology/proxy-prompt.md.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from toolkit import strict_json
from toolkit.hashing import sha256_file
from trb.adapters.base import check_act_batch
from trb.adapters.capabilities import (
    ActivationAccess,
    BatchedAct,
    BatchedEmit,
    ContinuationScoring,
    CoTEdit,
    EmitCounters,
    RAblation,
    injection_vectors,
)
from trb.adapters.cot_spans import edit_cot
from trb.adapters.registry import AdapterKind, AdapterOption
from trb.adapters.templates import PROMPT_FORMATS, R_PLACEMENT, TEMPLATES, TRACE, PromptTemplate, choose_template
from trb.context import R_SLOTS, StepContext
from trb.errors import AdapterError

__all__ = ["ProxyAdapter", "ADAPTER", "parse_r", "format_r", "TEMPLATE_VERSION", "DIRECT_TEMPLATE_VERSION", "SCAFFOLDS",
           "PROB_SLOTS", "PROB_CANDIDATES", "INTERVENTIONS", "CHAT_TEMPLATES", "ACTION_SCORES", "PROMPT_FORMATS",
           "R_PLACEMENT", "COT_EDIT_OUTCOMES"]

TEMPLATE_VERSION = "trb-proxy-cot-1"
DIRECT_TEMPLATE_VERSION = "trb-proxy-direct-1"
MODES = ("prompt_fill", "free_cot")
SCAFFOLDS = ("cot", "none")
#: How do(r_t := r') reaches the prompt: r' written as the Reasoning line, or the model's own CoT edited.
INTERVENTIONS = ("template", "cot_edit")
#: cot_edit: what became of an item's r' (:attr:`trb.adapters.cot_spans.CotEdit.outcome`).
COT_EDIT_OUTCOMES = ("edited", "unchanged", "span_missing")
#: Apply the tokenizer's chat template when it has one (auto), or never (off).
CHAT_TEMPLATES = ("auto", "off")
#: An action's score: the summed log-likelihood of its tokens, or their mean (length-normalised).
ACTION_SCORES = ("sum", "mean")
PROB_SLOTS = ("caused_by_self", "confidence")
PROB_CANDIDATES = tuple(i / 10 for i in range(11))
GOAL_MAX_TOKENS = 8
FREE_COT_MAX_TOKENS = 64
#: Batched greedy decoding: prompts per forward pass at most ...
GREEDY_BATCH_CONTEXTS = 64
#: ... and padded tokens per forward pass (rows x (longest prompt + tokens to generate)).
GREEDY_BATCH_TOKENS = 16384
#: emit_r_batch (prompt_fill) groups contexts by their base prompt's tokens plus this many for the slots filled after it.
_FILL_SLACK_TOKENS = 32
_DTYPES = ("float32", "bfloat16", "float16")

# One "slot = value" pair; the value runs to the next ';' or line end.
_PAIR = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*=\s*([^;\n]*)")
# A probability written as a plain decimal number (no sign, no exponent).
_NUMBER = re.compile(r"^(?:\d+(?:\.\d*)?|\.\d+)$")
# A goal or action value: non-empty, no '=' (a glued-on next pair), no control characters.
_TOKEN_VALUE = re.compile(r"^[^=\x00-\x1f]+$")


def n_parameters(model) -> int | None:
    """The number of parameters of a torch module (None for a model that is not one)."""
    params = getattr(model, "parameters", None)
    if params is None:
        return None
    return int(sum(p.numel() for p in params()))


def _fmt_value(slot: str, v) -> str:
    if slot in PROB_SLOTS or isinstance(v, float):
        return f"{float(v):.2f}"
    return str(v)


def format_r(r: Mapping | None) -> str:
    """The Reasoning line's slot text for r (without the ``"Reasoning:"`` label)."""
    if not r:
        return ""
    parts = [f"{s}={_fmt_value(s, r[s])}" for s in R_SLOTS if r.get(s) is not None]
    for k, v in sorted((r.get("ext") or {}).items()):
        parts.append(f"{k}={v}")
    return "; ".join(parts)


def _parse_prob(raw: str) -> float | None:
    if not _NUMBER.match(raw):
        return None
    v = float(raw)
    return v if 0.0 <= v <= 1.0 else None


def _parse_text(raw: str) -> str | None:
    return raw if raw and _TOKEN_VALUE.match(raw) else None


def parse_r(text: str, action_space: Sequence[str] | None = None) -> tuple[dict, list[str]]:
    """Strictly parse schema slots out of a chain of thought.

    Looks for ``slot=value`` pairs (whitespace around ``=`` and ``;`` is ignored; a value
    runs to the next ``;`` or line end). Probabilities must be plain decimals in [0, 1];
    ``goal`` / ``planned_next`` must be non-empty and contain no ``=``; ``planned_next``
    must be in ``action_space`` when one is given. A slot given twice with different values
    is ambiguous. Anything else is missing: never clipped, never defaulted.

    Returns:
        ``(r, missing)``: r holds only the slots that parsed; missing lists the others,
        in schema order.
    """
    found: dict[str, list[str]] = {}
    for m in _PAIR.finditer(text or ""):
        key = m.group(1)
        if key in R_SLOTS:
            found.setdefault(key, []).append(m.group(2).strip())
    r: dict = {}
    missing: list[str] = []
    for slot in R_SLOTS:
        raws = found.get(slot)
        value = None
        if raws and len(set(raws)) == 1:
            raw = raws[0]
            if slot in PROB_SLOTS:
                value = _parse_prob(raw)
            else:
                value = _parse_text(raw)
                if slot == "planned_next" and value is not None and action_space and value not in action_space:
                    value = None
        if value is None:
            missing.append(slot)
        else:
            r[slot] = value
    return r, missing


def _weights_digest(d: Path, gguf_file: str | None) -> tuple[str, list[str]]:
    """sha256 of the single weights file, or of config.json + the shard index for a sharded checkpoint."""
    if gguf_file:
        return sha256_file(d / gguf_file), [gguf_file]
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (d / name).is_file():
            return sha256_file(d / name), [name]
    for index in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        if (d / index).is_file():
            h = hashlib.sha256()
            names = []
            for name in ("config.json", index):
                if (d / name).is_file():
                    sha256_file(d / name, h)
                    names.append(name)
            return h.hexdigest(), names
    raise AdapterError(f"{d}: no weights file found (model.safetensors, pytorch_model.bin, a shard index or a GGUF file)")


class ProxyAdapter:
    """A Hugging Face causal LM whose chain-of-thought span carries r_t (see the module docstring).

    Attributes:
        tier: always ``"proxy"``.
        mode: ``"prompt_fill"`` or ``"free_cot"`` (how emit_r elicits r).
        scaffold: ``"cot"`` (act through the Reasoning span) or ``"none"`` (act with no reasoning).
        history: how many earlier steps the prompts show (None: all).
        missing_counts: per slot, how many emit_r calls could not elicit it.
        emit_count: how many emit_r calls were made.
        last_cot: the last free_cot generation (for inspection), else None.
    """

    tier = "proxy"
    capabilities = (BatchedAct, BatchedEmit, ContinuationScoring, EmitCounters, RAblation, ActivationAccess)

    def __init__(self, model, tokenizer, *, path: Path, sha256: str, hashed: list[str],
                 gguf_file: str | None = None, dtype: str = "float32", mode: str = "prompt_fill",
                 scaffold: str = "cot", history: int | None = None, intervention: str = "template",
                 chat_template: str = "auto", prompt_format: str = "auto", action_score: str = "sum"):
        _check_options(mode=mode, scaffold=scaffold, intervention=intervention, chat_template=chat_template,
                       prompt_format=prompt_format, action_score=action_score)
        self.model = model
        self.tokenizer = tokenizer
        self.path = path
        self.sha256 = sha256
        self.hashed = hashed
        self.gguf_file = gguf_file
        self.dtype = dtype
        self.mode = mode
        self.scaffold = scaffold
        if history is not None and history < 0:
            raise AdapterError(f"history must be a number of steps >= 0, got {history}")
        self.history = history
        #: emit_r's window: at least the last completed step, whose outcome caused_by_self is about.
        self.emit_history = None if history is None else max(history, 1)
        #: What the weights were trained on (``trb.subjects.trained_on``), when the model directory says.
        self.trained_on: dict | None = None
        self.missing_counts: Counter = Counter({s: 0 for s in R_SLOTS})
        self.emit_count = 0
        self.last_cot: str | None = None
        self.intervention = intervention
        self.chat_template = chat_template
        self.prompt_format = prompt_format
        self.action_score = action_score
        raw_chat = getattr(tokenizer, "chat_template", None)
        #: whether prompts go through the tokenizer's chat template (``chat_template="auto"`` and it has one)
        self.chat_applied = chat_template == "auto" and bool(raw_chat)
        self.chat_template_sha256 = (hashlib.sha256((raw_chat if isinstance(raw_chat, str) else json.dumps(
            raw_chat, sort_keys=True)).encode("utf-8")).hexdigest() if self.chat_applied else None)
        #: cot_edit: the model's own chain of thought per emit_r base prompt (greedy, so one per prompt)
        self._own_cots: dict[str, str] = {}
        #: cot_edit: edits made (one per context given a non-empty r' in an act call), then each distinct item
        #: (base prompt, r') once by its outcome, and per slot the items whose span was not found
        self.cot_edit_counts = {"calls": 0, "items": Counter(dict.fromkeys(COT_EDIT_OUTCOMES, 0)),
                                "slots_missing": Counter({s: 0 for s in R_SLOTS})}
        self._cot_items: set[tuple[str, str]] = set()
        #: cot_edit: what the last act_batch did to each context's chain of thought (None: no edit asked)
        self.last_cot_edits: list[dict | None] = []
        if intervention == "cot_edit":
            self.capabilities = type(self).capabilities + (CoTEdit,)

    @classmethod
    def load(cls, path: str | os.PathLike, *, gguf_file: str | None = None, dtype: str = "float32",
             device: str | None = None, mode: str = "prompt_fill", scaffold: str = "cot",
             history: int | None = None, intervention: str = "template", chat_template: str | None = None,
             prompt_format: str | None = None, action_score: str = "sum") -> ProxyAdapter:
        """Load a local model directory (AutoModelForCausalLM + AutoTokenizer), offline.

        Args:
            path: a model directory, or a ``.gguf`` file (then ``gguf_file`` is its name).
            gguf_file: the name of a GGUF file inside ``path`` (transformers' ``gguf_file=``).
            dtype: ``"float32"``, ``"bfloat16"`` or ``"float16"``.
            device: a torch device; None picks ``"cuda"`` when available, else ``"cpu"``.
            mode: emit_r's mode, ``"prompt_fill"`` or ``"free_cot"``.
            scaffold: ``"cot"`` (the default) or ``"none"`` (no reasoning scaffold; spec baseline 1).
            history: earlier steps shown in prompts (None: all; default: the model directory's
                ``trb-baseline.json`` ``prompt.history`` when there is one).
            intervention: ``"template"`` (r' written as the Reasoning line) or ``"cot_edit"`` (the model's own
                chain of thought edited and truncated).
            chat_template: ``"auto"`` (the tokenizer's chat template when it has one) or ``"off"``. None:
                ``"off"`` for a model trained by ``trb baselines`` (its ``trb-baseline.json``: it was trained on
                plain trace prompts), else ``"auto"``.
            prompt_format: ``"auto"``, ``"trace"`` or ``"qa"`` (:mod:`trb.adapters.templates`). None: ``"trace"``
                for a model trained by ``trb baselines``, else ``"auto"``.
            action_score: ``"sum"`` or ``"mean"`` (log-likelihood per token of an action).
        Raises:
            AdapterError: missing path, an unknown option value, missing torch/transformers, or a load failure.
        """
        if dtype not in _DTYPES:
            raise AdapterError(f"unknown dtype {dtype!r}; expected one of {_DTYPES}")
        baseline = (Path(path) if Path(path).is_dir() else Path(path).parent) / "trb-baseline.json"
        if chat_template is None:
            chat_template = "off" if baseline.is_file() else "auto"
        if prompt_format is None:
            prompt_format = "trace" if baseline.is_file() else "auto"
        _check_options(mode=mode, scaffold=scaffold, intervention=intervention, chat_template=chat_template,
                       prompt_format=prompt_format, action_score=action_score)
        p = Path(path)
        if p.is_file() and p.suffix == ".gguf" and gguf_file is None:
            p, gguf_file = p.parent, p.name
        if not p.is_dir():
            raise AdapterError(f"{p}: no model directory here (a local Hugging Face model directory or a .gguf file)")
        if gguf_file is not None and not (p / gguf_file).is_file():
            raise AdapterError(f"{p / gguf_file}: GGUF file not found")
        if gguf_file is None and not (p / "config.json").is_file():
            raise AdapterError(f"{p}: no config.json (not a Hugging Face model directory)")
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as e:
            raise AdapterError(f"the proxy adapter needs torch and transformers ({e})") from e
        sha, hashed = _weights_digest(p, gguf_file)
        trained_on = None
        if (p / "trb-baseline.json").is_file():
            try:
                record = strict_json.loads((p / "trb-baseline.json").read_bytes())
                if history is None:
                    history = record["prompt"]["history"]
                trained_on = record.get("trained_on")
            except (OSError, ValueError, KeyError, TypeError) as e:
                raise AdapterError(f"{p / 'trb-baseline.json'}: unreadable ({type(e).__name__}: {e})") from e
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        extra = {"gguf_file": gguf_file} if gguf_file else {}
        try:
            tok = AutoTokenizer.from_pretrained(p, local_files_only=True, **extra)
            model = AutoModelForCausalLM.from_pretrained(p, local_files_only=True, dtype=getattr(torch, dtype),
                                                         **extra)
            model.to(device)
        except Exception as e:  # transformers raises many kinds (OSError, ValueError, ...)
            raise AdapterError(f"{p}: could not load the model/tokenizer offline: {type(e).__name__}: {e}") from e
        model.eval()
        adapter = cls(model, tok, path=p, sha256=sha, hashed=hashed, gguf_file=gguf_file, dtype=dtype, mode=mode,
                      scaffold=scaffold, history=history, intervention=intervention, chat_template=chat_template,
                      prompt_format=prompt_format, action_score=action_score)
        adapter.trained_on = trained_on
        return adapter

    def spec(self) -> dict:
        return {
            "kind": "proxy",
            "path": str(self.path),
            "sha256": self.sha256,
            "sha256_of": list(self.hashed),
            "gguf_file": self.gguf_file,
            "dtype": self.dtype,
            "mode": self.mode,
            "scaffold": self.scaffold,
            "history": self.history,
            "template_version": TEMPLATE_VERSION if self.scaffold == "cot" else DIRECT_TEMPLATE_VERSION,
            "model_class": type(self.model).__name__,
            "n_parameters": n_parameters(self.model),
            "trained_on": self.trained_on,
            "intervention": self.intervention,
            "chat_template": self.chat_template,
            "chat_template_applied": self.chat_applied,
            "chat_template_sha256": self.chat_template_sha256,
            "prompt_format": self.prompt_format,
            "prompt_templates": self._template_versions(),
            "r_placement": dict(R_PLACEMENT),
            "action_score": self.action_score,
        }

    def _template_versions(self) -> dict[str, str]:
        """The templates this adapter's prompts can use, name -> version."""
        names = ("trace", "qa") if self.prompt_format == "auto" else (self.prompt_format,)
        return {n: TEMPLATES[n].version for n in names}

    def cot_edit_stats(self) -> dict:
        """cot_edit's counters (capability ``cot_edit``): ``{"calls": n, "items": {"edited": n, "unchanged": n,
        "span_missing": n}, "slots_missing": {slot: n}}``.

        ``calls``: edits made (each context given a non-empty r' in an act or score call). ``items``: each distinct
        item (its prompt before the reasoning, and r') counted once, by outcome: *edited* when a span of one of
        its slots now states r''s value instead of another; *unchanged* when every span found already stated
        r''s value (a replacement by the same value is not an edit); *span_missing* when no span was found.
        ``slots_missing``: per slot, the items whose r' gives it and whose span was not found."""
        c = self.cot_edit_counts
        return {"calls": c["calls"], "items": dict(c["items"]), "slots_missing": dict(c["slots_missing"])}

    def cot_edits(self) -> list[dict | None]:
        """What the last ``act_batch`` did to each context's chain of thought (capability ``cot_edit``)."""
        return list(self.last_cot_edits)

    def emit_stats(self) -> dict:
        """``{"calls": emit_count, "missing": missing_counts}`` (capability ``emit_counters``)."""
        return {"calls": self.emit_count, "missing": dict(self.missing_counts)}

    # -- prompts ---------------------------------------------------------------------

    @staticmethod
    def prompt(context: StepContext, r: Mapping | None, scaffold: str = "cot", history: int | None = None) -> str:
        """The act/score prompt: rendered context, the Reasoning line holding r, then ``"Action:"``.

        With ``scaffold="none"`` there is no Reasoning line and r is not used; ``history``
        keeps only the last that many earlier steps. This is the ``trace`` template with no chat
        template (what ``trb train-baseline`` trains on); :meth:`act_prompt` is the prompt of an
        adapter's own options.
        """
        if scaffold == "none":
            return f"{context.render(last=history)}\nAction:"
        slots = format_r(r)
        reasoning = "Reasoning: " + slots if slots else "Reasoning:"
        return f"{context.render(last=history)}\n{reasoning}\nAction:"

    def _template(self, context: StepContext) -> PromptTemplate:
        return choose_template(self.prompt_format, context)

    def _head(self, context: StepContext, history: int | None, said: Sequence[tuple[str, object]] = ()) -> str:
        """What precedes the reasoning cue: ``{user}\n``, or the chat template's rendering of the user
        message ``{user}\n\n{instructions}`` with the generation prompt (the assistant turn begins next).
        ``{user}`` ends with what a user says (``said``, from :meth:`StepContext.split_r`), a line each."""
        template = self._template(context)
        user = template.user_with(context, history, said)
        if not self.chat_applied:
            return user + "\n"
        try:
            return self.tokenizer.apply_chat_template(
                [{"role": "user", "content": user + "\n\n" + template.instructions}], tokenize=False,
                add_generation_prompt=True)
        except Exception as e:
            raise AdapterError(f"proxy model: its chat template failed: {type(e).__name__}: {e}") from e

    def act_prompt(self, context: StepContext, r: Mapping | None) -> str:
        """The act/score prompt of this adapter (template, chat template, scaffold, history) with r' written
        as the reasoning line (the ``template`` intervention; see the module docstring), except the slots a
        user says (``context.user_slots``), written in the user's turn (:data:`R_PLACEMENT`), with or without
        a reasoning scaffold."""
        template = self._template(context)
        own, said = context.split_r(r)
        head = self._head(context, self.history, said)
        if self.scaffold == "none":
            return head + template.action_cue
        return head + _reasoning_line(template, format_r(own)) + "\n" + template.action_cue

    def _action_scores(self, requests) -> list[list[float]]:
        """Each request's continuation scores: summed log-likelihoods (``action_score="sum"``) or their
        mean per token (``"mean"``; a continuation of no tokens scores 0.0)."""
        scores = self._score(requests)
        if self.action_score == "sum":
            return scores
        lengths = self._continuation_lengths([c for _, conts in requests for c in conts])
        out, k = [], 0
        for row in scores:
            out.append([s / n if n else 0.0 for s, n in zip(row, lengths[k:k + len(row)])])
            k += len(row)
        return out

    def _continuation_lengths(self, continuations: Sequence[str]) -> list[int]:
        """How many tokens each continuation is scored over (lm_scoring's rule: encoded on its own)."""
        if not continuations:
            return []
        return [len(x) for x in self.tokenizer(list(continuations), add_special_tokens=False)["input_ids"]]

    def _score(self, requests, prefix=None):
        from trb.adapters.lm_scoring import ContextTooLong, score_continuations

        # Past its window a model fails, or (rotary positions) silently degrades: refuse first.
        try:
            return score_continuations(self.model, self.tokenizer, requests, max_positions=self._window(),
                                       prefix=prefix)
        except ContextTooLong as e:
            raise _window_error(f"a prompt of {e.tokens} tokens", e.window) from e
        except Exception as e:
            raise AdapterError(f"proxy model failed while scoring: {type(e).__name__}: {e}") from e

    def _window(self) -> int | None:
        cfg = getattr(self.model, "config", None)
        for name in ("n_positions", "max_position_embeddings"):
            v = getattr(cfg, name, None)
            if isinstance(v, int):
                return v
        return None

    def _check_generation_window(self, prompt_tokens: int, max_new_tokens: int) -> None:
        window = self._window()
        if window is not None and prompt_tokens + max_new_tokens > window:
            raise _window_error(f"a prompt of {prompt_tokens} tokens plus {max_new_tokens} to generate", window)

    def _greedy(self, prompt: str, max_new_tokens: int) -> str:
        import torch

        from trb.adapters.lm_scoring import encode_request

        ids, _ = encode_request(self.tokenizer, prompt, [])
        self._check_generation_window(len(ids), max_new_tokens)
        device = next(self.model.parameters()).device
        inp = torch.tensor([ids], device=device)
        pad = self.tokenizer.pad_token_id
        if pad is None:
            pad = self.tokenizer.eos_token_id
        try:
            with torch.inference_mode():
                out = self.model.generate(input_ids=inp, attention_mask=torch.ones_like(inp),
                                          max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=pad)
        except Exception as e:
            raise AdapterError(f"proxy model failed while generating: {type(e).__name__}: {e}") from e
        return self.tokenizer.decode(out[0, len(ids):].tolist(), skip_special_tokens=True)

    def _plain_greedy_eos(self) -> tuple[bool, frozenset[int]]:
        """(whether ``generate(do_sample=False)`` is plain greedy argmax for this model, its eos ids)."""
        gc = getattr(self.model, "generation_config", None)
        if gc is None:
            return False, frozenset()
        for name, neutral in _GREEDY_NEUTRAL.items():
            v = getattr(gc, name, None)
            if v is None or v in neutral or (isinstance(v, (list, tuple, dict, set)) and not v):
                continue
            return False, frozenset()
        eos = gc.eos_token_id
        if eos is None:
            return True, frozenset()
        return True, frozenset(int(x) for x in (eos if isinstance(eos, (list, tuple)) else [eos]))

    def _greedy_batch(self, prompts: Sequence[str], max_new_tokens: int, stop=None, prefix=None) -> list[str]:
        """``[self._greedy(p, max_new_tokens) for p in prompts]``, in padded batches with a KV cache.

        ``stop(text)`` (optional) says that a row's decoded text already holds everything its
        caller keeps (the delimiter that ends it): the row stops generating there. The caller's
        cut of the shorter text is the same as of the full one, since a token never changes
        the decoded text before it. ``prefix=(cache, rows)``: prompt i extends prompt ``rows[i]``
        of a :class:`~trb.adapters.lm_scoring.PrefixCache`, whose keys/values it reuses.
        """
        if not prompts:
            return []
        plain, eos = self._plain_greedy_eos()
        if not plain:  # generate() does more than argmax for this model: keep its exact semantics
            return [self._greedy(p, max_new_tokens) for p in prompts]
        from trb.adapters.lm_scoring import _groups, _start_id

        start = None
        ids = []
        for row in self.tokenizer(list(prompts), add_special_tokens=False)["input_ids"]:
            row = list(row)
            if not row:  # encode_request's rule for an empty prompt
                start = _start_id(self.tokenizer) if start is None else start
                row = [start]
            ids.append(row)
        self._check_generation_window(max(map(len, ids)), max_new_tokens)
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        out = [""] * len(ids)
        for group in _groups(order, [len(x) + max_new_tokens for x in ids], GREEDY_BATCH_TOKENS,
                             GREEDY_BATCH_CONTEXTS):
            start = None
            rows = [ids[i] for i in group]
            if prefix is not None:
                start, rows = prefix[0].start([prefix[1][i] for i in group], rows)
            try:
                texts = self._decode_group(rows, max_new_tokens, eos, stop, start)
            except AdapterError:
                raise
            except Exception as e:
                raise AdapterError(f"proxy model failed while generating: {type(e).__name__}: {e}") from e
            for i, text in zip(group, texts):
                out[i] = text
        return out

    def _decode_group(self, rows: list[list[int]], max_new_tokens: int, eos: frozenset[int], stop,
                      start=None) -> list[str]:
        import torch

        from trb.adapters.lm_scoring import _accepts, _cache_kwarg, _cache_of, _forward, _prefill

        model = self.model
        device = next(model.parameters()).device
        K = len(rows)
        cache_kw = _cache_kwarg(model)
        gen: list[list[int]] = [[] for _ in rows]
        done = [False] * K
        with torch.inference_mode():
            # right-padded (after a reused prefix, if any): real tokens keep their positions, pads are masked
            pre = _prefill(model, rows, device, _accepts(model, "logits_to_keep"), cache_kw, start)
            cache, mask, P, step_logits = pre.cache, pre.mask.to(device), pre.lengths, pre.last_logits
            del pre
            for step in range(max_new_tokens):
                nxt = step_logits.float().argmax(dim=-1).tolist()
                for b in range(K):
                    if done[b]:
                        continue
                    gen[b].append(int(nxt[b]))
                    if nxt[b] in eos or (stop is not None and stop(self._decode(gen[b]))):
                        done[b] = True
                if all(done) or step == max_new_tokens - 1:
                    break
                # each row's new token sits at its own position P + step (pads between are masked)
                mask = torch.cat([mask, torch.ones((K, 1), dtype=mask.dtype, device=device)], dim=1)
                out = _forward(model, input_ids=torch.tensor(nxt, device=device).unsqueeze(1), attention_mask=mask,
                               position_ids=(P + step).unsqueeze(1).to(device), use_cache=True, **{cache_kw: cache})
                cache = _cache_of(out)
                step_logits = out.logits[:, -1]
        return [self._decode(g) for g in gen]

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    # -- emit_r ----------------------------------------------------------------------

    def emit_r(self, context: StepContext) -> dict:
        """The model's r at this step, as schema slots (only those it produced validly; see the module docstring)."""
        r = self._emit_free(context) if self.mode == "free_cot" else self._emit_fill(context)
        return self._count(r)

    def emit_r_batch(self, contexts: Sequence[StepContext]) -> list[dict]:
        """``[emit_r(c) for c in contexts]`` computed in batches, with the same counters (see the module docstring)."""
        contexts = list(contexts)
        if not contexts:
            return []
        rs = self._emit_free_batch(contexts) if self.mode == "free_cot" else self._emit_fill_batch(contexts)
        return [self._count(r) for r in rs]

    def _count(self, r: dict) -> dict:
        self.emit_count += 1
        for slot in R_SLOTS:
            if r.get(slot) is None:
                r.pop(slot, None)
                self.missing_counts[slot] += 1
        return r

    def _emit_base(self, context: StepContext) -> str:
        return self._head(context, self.emit_history) + self._template(context).reasoning_cue

    def _emit_free(self, context: StepContext) -> dict:
        cot = _first_line(self._greedy(self._emit_base(context), FREE_COT_MAX_TOKENS))
        self.last_cot = cot
        r, _ = parse_r(cot, context.action_space)
        return r

    def _emit_free_batch(self, contexts: list[StepContext]) -> list[dict]:
        texts = self._greedy_batch([self._emit_base(c) for c in contexts], FREE_COT_MAX_TOKENS, stop=_line_done)
        rs = []
        for c, text in zip(contexts, texts):
            self.last_cot = _first_line(text)
            rs.append(parse_r(self.last_cot, c.action_space)[0])
        return rs

    def _emit_fill(self, context: StepContext) -> dict:
        base = self._emit_base(context) + " "
        r: dict = {}

        def prefix(slot: str) -> str:
            return _fill_prefix(base, r, slot)

        for slot in R_SLOTS:
            delim = _delim(slot)
            if slot == "goal" or (slot == "planned_next" and not context.action_space):
                value = _span_value(self._greedy(prefix(slot), GOAL_MAX_TOKENS))
            elif slot == "planned_next":
                space = list(context.action_space)
                value = _argmax_action(space, self._score([(prefix(slot), [a + delim for a in space])])[0])
            else:
                value = _expected_prob(self._score([(prefix(slot), [c + delim for c in _PROB_TEXTS])])[0])
            if value is not None:
                r[slot] = value
        return r

    def _emit_fill_batch(self, contexts: list[StepContext]) -> list[dict]:
        """prompt_fill over many contexts: group by group, each group's prompts run once and extended slot by slot."""
        from trb.adapters.lm_scoring import MAX_BATCH_TOKENS, MAX_CONTEXTS, _groups, prefix_cache

        bases = [self._emit_base(c) + " " for c in contexts]
        rs: list[dict] = [{} for _ in contexts]
        lengths = [len(x) for x in self.tokenizer(bases, add_special_tokens=False)["input_ids"]]
        self._check_generation_window(max(lengths), GOAL_MAX_TOKENS)
        order = sorted(range(len(contexts)), key=lambda i: -lengths[i])
        # room for the slots filled after the prompt (a Reasoning line is some twenty tokens)
        for group in _groups(order, [n + _FILL_SLACK_TOKENS for n in lengths], MAX_BATCH_TOKENS, MAX_CONTEXTS):
            try:
                cache = prefix_cache(self.model, self.tokenizer, [bases[i] for i in group])
            except Exception as e:
                raise AdapterError(f"proxy model failed while scoring: {type(e).__name__}: {e}") from e
            self._fill_group([contexts[i] for i in group], [bases[i] for i in group], [rs[i] for i in group], cache)
        return rs

    def _fill_group(self, contexts: list[StepContext], bases: list[str], rs: list[dict], cache) -> None:
        """Fill ``rs`` slot by slot; every prompt extends its context's base prompt, held in ``cache``."""
        everyone = range(len(contexts))
        for slot in R_SLOTS:
            delim = _delim(slot)
            values: dict[int, object] = {}
            if slot == "goal":
                decoded, scored = list(everyone), []
            elif slot == "planned_next":
                decoded = [i for i in everyone if not contexts[i].action_space]
                scored = [i for i in everyone if contexts[i].action_space]
            else:
                decoded, scored = [], list(everyone)
            if decoded:
                texts = self._greedy_batch([_fill_prefix(bases[i], rs[i], slot) for i in decoded], GOAL_MAX_TOKENS,
                                           stop=_span_done, prefix=(cache, decoded))
                values.update((i, _span_value(t)) for i, t in zip(decoded, texts))
            if scored and slot == "planned_next":
                spaces = {i: list(contexts[i].action_space) for i in scored}
                requests = [(_fill_prefix(bases[i], rs[i], slot), [a + delim for a in spaces[i]]) for i in scored]
                values.update((i, _argmax_action(spaces[i], s))
                              for i, s in zip(scored, self._score(requests, prefix=(cache, scored))))
            elif scored:
                requests = [(_fill_prefix(bases[i], rs[i], slot), [c + delim for c in _PROB_TEXTS]) for i in scored]
                values.update((i, _expected_prob(s)) for i, s in zip(scored, self._score(requests, prefix=(cache, scored))))
            for i, value in values.items():
                if value is not None:
                    rs[i][slot] = value

    # -- act -------------------------------------------------------------------------

    def act(self, context: StepContext, r_override: dict | None = None) -> dict[str, float]:
        """``{action: p}`` over exactly ``context.action_space``; with ``r_override`` the CoT span holds r'.

        Raises:
            AdapterError: the step is open-ended, repeats an action, or the model fails.
        """
        return self.act_batch([context], [r_override])[0]

    def act_batch(self, contexts: Sequence[StepContext],
                  r_overrides: Sequence[dict | None] | None = None) -> list[dict[str, float]]:
        """``[act(c, r) for c, r in zip(contexts, r_overrides)]`` in one scoring call (equal within float rounding, ~1e-7)."""
        r_overrides = check_act_batch(contexts, r_overrides, "proxy model")
        prompts = self._act_prompts(list(contexts), list(r_overrides))
        requests = [(p, [self._template(c).continuation(a) for a in c.action_space]) for c, p in zip(contexts, prompts)]
        out = []
        for c, scores in zip(contexts, self._action_scores(requests)):
            out.append(dict(zip(c.action_space, _softmax(scores))))
        return out

    def _act_prompts(self, contexts: list[StepContext], r_overrides: list[dict | None]) -> list[str]:
        """Each context's act prompt under its override (None: the model's own r, or its own CoT)."""
        if self.scaffold == "cot" and self.intervention == "cot_edit":
            return self._cot_edit_prompts(contexts, r_overrides)
        rs = list(r_overrides)
        if self.scaffold == "cot":  # the model's own r where no override is given, elicited in one batch
            own = [i for i, r in enumerate(rs) if r is None]
            for i, r in zip(own, self.emit_r_batch([contexts[i] for i in own]) if own else []):
                rs[i] = r
        return [self.act_prompt(c, r) for c, r in zip(contexts, rs)]

    def own_cots(self, contexts: Sequence[StepContext], said: Sequence[Sequence[tuple[str, object]]] | None = None
                 ) -> list[str]:
        """cot_edit: the model's own chain of thought for each context, greedy after emit_r's base prompt (at most
        ``FREE_COT_MAX_TOKENS`` tokens, the first line, as free_cot writes it), generated once per prompt. With
        ``said`` (per context, what a user says: :meth:`StepContext.split_r`) the base prompt's user turn ends
        with it: the model reasons having read it."""
        said = said if said is not None else [()] * len(contexts)
        bases = [self._cot_base(c, s) for c, s in zip(contexts, said)]
        todo = list(dict.fromkeys(b for b in bases if b not in self._own_cots))
        for b, text in zip(todo, self._greedy_batch(todo, FREE_COT_MAX_TOKENS, stop=_line_done)):
            self._own_cots[b] = _first_line(text)
        return [self._own_cots[b] for b in bases]

    def _cot_base(self, context: StepContext, said: Sequence[tuple[str, object]] = ()) -> str:
        """cot_edit's prompt before the chain of thought: emit_r's base prompt, its user turn ending with ``said``."""
        return self._head(context, self.emit_history, said) + self._template(context).reasoning_cue

    def _cot_edit_prompts(self, contexts: list[StepContext], r_overrides: list[dict | None]) -> list[str]:
        """cot_edit's act prompts; records each context's edit in ``last_cot_edits`` and counts it.

        The slots of r' a user says (``context.user_slots``) are not edited: they are written in the user's turn,
        before the model's own chain of thought (which it writes having read them); every other slot of r' (the
        agent's, extension slots included) is edited in that chain of thought."""
        split = [c.split_r(r) for c, r in zip(contexts, r_overrides)]
        need = [i for i, (r, (own, said)) in enumerate(zip(r_overrides, split)) if r is None or format_r(own) or said]
        cots = dict(zip(need, self.own_cots([contexts[i] for i in need], [split[i][1] for i in need])
                        if need else []))
        prompts, edits = [], []
        for i, (c, r) in enumerate(zip(contexts, r_overrides)):
            template = self._template(c)
            own, said = split[i]
            base = self._cot_base(c, said)
            if i not in cots:  # an r' with no slot: the empty reasoning span (the no-r_t ablation)
                prompts.append(base + "\n" + template.action_cue)
                edits.append(None)
                continue
            text = cots[i]
            record = None
            if r is not None:
                record = self._edit_record(c, base, own or {}, said, cots[i])
                text = record["text"]
            prompts.append(base + (" " + text if text else "") + "\n" + template.action_cue)
            edits.append(record)
        self.last_cot_edits = edits
        return prompts

    def _edit_record(self, c: StepContext, base: str, own: Mapping, said, cot: str) -> dict:
        """Edit ``cot`` to the agent's slots ``own`` of r', count the call and (once per item) its outcome."""
        replacements = {s: _fmt_value(s, own[s]) for s in R_SLOTS if own.get(s) is not None}
        replacements.update((k, str(v)) for k, v in sorted((own.get("ext") or {}).items()) if v is not None)
        values = {"planned_next": tuple(c.action_space or ()),
                  "goal": tuple(dict.fromkeys(str(p.r["goal"]) for p in c.history
                                              if p.r and p.r.get("goal") is not None))}
        e = edit_cot(cot, replacements, values)
        counts = self.cot_edit_counts
        counts["calls"] += 1
        key = (base, json.dumps(replacements, sort_keys=True))
        if key not in self._cot_items:
            self._cot_items.add(key)
            counts["items"][e.outcome] += 1
            for slot in e.missing:
                counts["slots_missing"][slot] += 1
        return {"own_cot": cot, "text": e.text if e.edited else cot, "outcome": e.outcome, "edited": bool(e.edited),
                "edited_slots": list(e.edited), "unchanged_slots": list(e.unchanged), "span_missing": list(e.missing),
                "user_turn": [str(v) for _, v in said]}

    def act_ablated(self, context: StepContext) -> dict[str, float]:
        """The no-r_t ablation: act with an empty reasoning span (``act(context, r_override={})``; never emit_r).

        With ``scaffold="none"`` there is no span, and this is ``act(context)``.
        Raises:
            AdapterError: as ``act``.
        """
        return self.act_ablated_batch([context])[0]

    def act_ablated_batch(self, contexts: Sequence[StepContext]) -> list[dict[str, float]]:
        """``[act_ablated(c) for c in contexts]`` in one scoring call."""
        contexts = list(contexts)
        return self.act_batch(contexts, [{} for _ in contexts])

    def score_continuation(self, context: StepContext, text: str, r_override: dict | None = None) -> float:
        """``log p(text | prompt(context, r))`` (natural log), r = r_override or the model's own emit_r."""
        cont = text if text[:1].isspace() else " " + text
        return float(self._score([(self._act_prompts([context], [r_override])[0], [cont])])[0][0])


    # -- activation access (proxy-tier grounding, Track 2 beyond the native tier) -------------

    def activation_sites(self) -> tuple[str, ...]:
        """Residual-stream sites ``"layers.N"`` (the state entering decoder layer N): the middle layer first (the
        default), then the layers at a quarter and three quarters of the depth."""
        from trb.adapters.steering import SteeringError, decoder_layers

        try:
            n = len(decoder_layers(self.model))
        except SteeringError as e:
            raise AdapterError(f"proxy model: no activation sites: {e}") from e
        return tuple(f"layers.{i}" for i in dict.fromkeys((n // 2, n // 4, (3 * n) // 4)))

    def _site_layer(self, site: str) -> int:
        if site not in self.activation_sites():
            raise AdapterError(f"unknown activation site {site!r} of the proxy model "
                               f"(sites: {', '.join(self.activation_sites())})")
        return int(site.split(".", 1)[1])

    def _z_prompt(self, context: StepContext) -> str:
        """Where z is read and injected: the last token of emit_r's base prompt (``{render}\nReasoning:``)."""
        return self._emit_base(context)

    def read_activations(self, contexts: Sequence[StepContext], site: str) -> np.ndarray:
        """z at ``site``: the residual stream entering that decoder layer at the last token of emit_r's base
        prompt, (len(contexts), hidden size), float64.

        One forward pass gives every site: the others are kept for the next call on the same contexts (the
        same objects), as learning concept directions asks for each site in turn."""
        from trb.adapters.steering import last_states

        layer = self._site_layer(site)
        kept = getattr(self, "_states", None)
        if kept is not None and len(kept[0]) == len(contexts) and all(a is b for a, b in zip(kept[0], contexts)):
            return kept[1][layer]
        layers = [self._site_layer(s) for s in self.activation_sites()]
        try:
            states = last_states(self.model, self.tokenizer, [self._z_prompt(c) for c in contexts], layers)
        except Exception as e:
            raise AdapterError(f"proxy model failed while reading activations: {type(e).__name__}: {e}") from e
        self._states = (list(contexts), states)
        return states[layer]

    def _goal_values(self) -> list[str]:
        dirs = self.concept_directions()
        if dirs is None:
            raise AdapterError("the proxy model states goals in free text: its goal values are those of its concept "
                               "directions, and it has none (make them with trb concepts)")
        return [c["value"] for c in dirs.record["concepts"] if c["slot"] == "goal"]

    def slot_probs_injected(self, contexts: Sequence[StepContext], slot: str, site: str, vectors,
                            strength: float) -> list[dict[str, float]]:
        """The report's distribution over ``slot``'s values with ``strength * vector`` added to z at ``site``.

        The prompt is emit_r's base prompt, z its last token; after the injection the model reads
        ``" {slot}="`` and each value is scored as ``value + ";"`` (as prompt_fill scores a slot), the
        distribution being the softmax of those log-likelihoods. Values: the step's actions for
        ``planned_next`` (none on an open-ended step: ``{}``), the concept directions' goal values for ``goal``.
        """
        from trb.adapters.steering import SteeringError, score_injected

        if slot not in ("goal", "planned_next"):
            raise AdapterError(f"slot {slot!r} has no distribution to read (slots: goal, planned_next)")
        layer = self._site_layer(site)
        d = int(getattr(self.model.config, "hidden_size", 0) or getattr(self.model.config, "n_embd", 0))
        v = injection_vectors(vectors, strength, len(contexts), d, site)
        delim = _delim(slot)
        goals = self._goal_values() if slot == "goal" else None  # the same for every context
        values = [goals if goals is not None else list(c.action_space) for c in contexts]
        todo = [i for i, vals in enumerate(values) if vals]
        rows = [(self._z_prompt(contexts[i]), f" {slot}=", [x + delim for x in values[i]]) for i in todo]
        out: list[dict[str, float]] = [{} for _ in contexts]
        if not rows:
            return out
        try:
            scores = score_injected(self.model, self.tokenizer, rows, layer, v[todo] * float(strength),
                                    max_positions=self._window())
        except SteeringError as e:
            raise AdapterError(f"proxy model: {e}") from e
        except Exception as e:
            raise AdapterError(f"proxy model failed while scoring injected trials: {type(e).__name__}: {e}") from e
        for i, sc in zip(todo, scores):
            out[i] = dict(zip(values[i], _softmax(sc)))
        return out

    def z_signature(self) -> dict:
        """What z depends on besides the weights (recorded with concept directions; others are refused): the
        prompt z is read at, i.e. how many earlier steps emit_r's base prompt shows."""
        z = {"site_kind": "residual stream entering decoder layer N, last token of emit_r's base prompt",
             "emit_history": self.emit_history}
        if self.chat_applied or self.prompt_format != "trace":  # the base prompt is not the trace template's alone
            z["prompt"] = {"prompt_templates": self._template_versions(), "chat_template_sha256":
                           self.chat_template_sha256}
        return z

    def concept_directions(self):
        """The concept directions stored in ``<model>/concepts`` (:func:`trb.grounding.load_concepts`), or None.
        Read once and kept until the files change (Track 2 asks for them per context)."""
        from trb.grounding import CONCEPTS_DIR, load_concepts

        record = self.path / CONCEPTS_DIR / "concepts.json"
        try:
            stamp = record.stat().st_mtime_ns
        except OSError:
            stamp = None
        cached = getattr(self, "_concepts", None)
        if cached is None or cached[0] != stamp:
            dirs = load_concepts(self.path, expect_sha256=self.sha256, expect_z=self.z_signature())
            self._concepts = cached = (stamp, dirs)
        return cached[1]


def _window_error(what: str, window: int) -> AdapterError:
    return AdapterError(f"{what} exceeds the model's context window of {window} "
                        "(show fewer earlier steps with --history N)")


#: generation-config fields that make ``generate(do_sample=False)`` more than greedy argmax decoding, with their
#: neutral values (None, or an empty list, is always neutral). A model with another value is decoded one prompt
#: at a time by ``generate``.
_GREEDY_NEUTRAL: dict[str, tuple] = {
    "num_beams": (1,), "num_beam_groups": (1,), "penalty_alpha": (), "dola_layers": (), "guidance_scale": (1.0,),
    "repetition_penalty": (1.0,), "encoder_repetition_penalty": (1.0,), "no_repeat_ngram_size": (0,),
    "encoder_no_repeat_ngram_size": (0,), "bad_words_ids": (), "force_words_ids": (), "sequence_bias": (),
    "min_length": (0,), "min_new_tokens": (0,), "forced_bos_token_id": (), "forced_eos_token_id": (),
    "suppress_tokens": (), "begin_suppress_tokens": (), "forced_decoder_ids": (),
    "exponential_decay_length_penalty": (), "stop_strings": (), "max_time": (), "watermarking_config": (),
    "prompt_lookup_num_tokens": (), "assistant_early_exit": (), "custom_generate": (), "constraints": (),
    "token_healing": (False,), "num_return_sequences": (1,),
}


_PROB_TEXTS = tuple(f"{v:.2f}" for v in PROB_CANDIDATES)


def _delim(slot: str) -> str:
    """What follows a slot's value in the Reasoning line: ``";"``, or a newline after the last slot."""
    return "\n" if slot == R_SLOTS[-1] else ";"


def _fill_prefix(base: str, r: Mapping, slot: str) -> str:
    """prompt_fill's prompt for ``slot``: base, the slots filled so far, then ``slot=``."""
    done = format_r(r)
    return base + (done + "; " if done else "") + slot + "="


def _check_options(**given) -> None:
    allowed = {"mode": MODES, "scaffold": SCAFFOLDS, "intervention": INTERVENTIONS, "chat_template": CHAT_TEMPLATES,
               "prompt_format": PROMPT_FORMATS, "action_score": ACTION_SCORES}
    for name, value in given.items():
        if value not in allowed[name]:
            what = {"mode": "proxy mode", "scaffold": "proxy scaffold"}.get(name, f"proxy {name}")
            raise AdapterError(f"unknown {what} {value!r}; expected one of {allowed[name]}")


def _reasoning_line(template: PromptTemplate, slots: str) -> str:
    return template.reasoning_cue + (" " + slots if slots else "")


def _span_done(text: str) -> bool:
    return ";" in text or "\n" in text


def _span_value(text: str) -> str | None:
    """A greedy-decoded slot value: the text up to the first ``;`` or newline, stripped (None if malformed)."""
    return _parse_text(re.split(r"[;\n]", text, maxsplit=1)[0].strip())


def _line_done(text: str) -> bool:
    return "\n" in text.lstrip()


def _first_line(text: str) -> str:
    """free_cot's chain of thought: the generation up to the first newline after some text."""
    stripped = text.lstrip()
    cut = stripped.find("\n")
    return stripped if cut < 0 else stripped[:cut]


def _argmax_action(space: list[str], scores: Sequence[float]) -> str:
    return space[max(range(len(space)), key=lambda i: scores[i])]


def _expected_prob(scores: Sequence[float]) -> float | None:
    """The expectation of the candidates ``0.00 .. 1.00`` under the softmax of their scores (None if not finite)."""
    w = _softmax(scores)
    value = float(sum(p * v for p, v in zip(w, PROB_CANDIDATES)))
    return min(1.0, max(0.0, value)) if math.isfinite(value) else None  # float rounding only


def _softmax(scores: Sequence[float]) -> list[float]:
    m = max(scores)
    e = [math.exp(s - m) for s in scores]
    z = sum(e)
    return [x / z for x in e]


def _load(model: str, **options) -> ProxyAdapter:
    return ProxyAdapter.load(model, **options)


#: The registry entry (entry point ``trb.adapters: proxy``).
ADAPTER = AdapterKind(
    name="proxy", tier="proxy", load=_load, accepts=("path",),
    summary="any local Hugging Face causal LM: r elicited from its chain of thought, do(r') edits that span",
    model_help="a local Hugging Face model directory, or a .gguf file",
    capabilities=("batched_act", "batched_emit", "continuation_scoring", "emit_counters", "r_ablation",
                  "activation_access"),  # and cot_edit, declared by an adapter loaded with --intervention cot_edit
    spec_added={"intervention": "template", "chat_template": "off", "chat_template_applied": False,
                "chat_template_sha256": None, "prompt_format": "trace",
                "prompt_templates": {"trace": TRACE.version}, "action_score": "sum",
                # runs recorded before r_placement had no user-spoken slot (schema 1.1's speaker): every slot
                # was the agent's, which is what this placement writes for them
                "r_placement": dict(R_PLACEMENT)},
    options=(
        AdapterOption("dtype", "weights dtype (default float32)", choices=_DTYPES),
        AdapterOption("mode", "how r is elicited (default prompt_fill)", choices=MODES, flag="--elicit"),
        AdapterOption("scaffold", "act through the CoT span holding r (cot, the default) or with no reasoning "
                                  "scaffold (none: spec baseline 1, instruct base)", choices=SCAFFOLDS),
        AdapterOption("history", "earlier steps shown in each prompt (default: the model's trb-baseline.json, "
                                 "else all)", type=int),
        AdapterOption("device", "torch device (default cuda when available, else cpu)"),
        AdapterOption("intervention", "how do(r') reaches the prompt: template (default; r' written as the "
                                      "Reasoning line) or cot_edit (the model's own chain of thought, its spans "
                                      "stating r' edited, truncated after the last)", choices=INTERVENTIONS,
                      spec_default="template"),
        AdapterOption("chat_template", "auto (default: the tokenizer's chat template when it has one) or off",
                      choices=CHAT_TEMPLATES, spec_default="off"),
        AdapterOption("prompt_format", "auto (default: qa for one-step items whose actions carry texts, else "
                                       "trace), trace or qa", choices=PROMPT_FORMATS, spec_default="trace"),
        AdapterOption("action_score", "sum (default: summed log-likelihood of an action's tokens) or mean "
                                      "(per token, length-normalised)", choices=ACTION_SCORES, spec_default="sum"),
    ),
)
