"""The served-model adapter: a model behind an OpenAI-compatible completions endpoint (TRB spec §2, tier "proxy").

vLLM, llama.cpp's server (``python -m llama_cpp.server``) and others serve ``/v1/completions``.
This adapter is the proxy adapter (:mod:`trb.adapters.proxy`) with the model behind HTTP:
the same prompts, the same Reasoning span holding r (and the same user's turn holding the slots a user
says), the same emit_r modes and the same do(r') edit of that span, the same template versions. Only the backend differs:

* actions and continuations are scored from the server's **prompt log-probabilities**
  (``echo=True, logprobs=1``; :func:`trb.adapters.completions_client.continuation_logprob`
  states the rule at a token straddling the prompt/continuation boundary);
* emit_r's greedy spans (``goal``, free_cot) are **generated** at temperature 0;
* the batched hooks (``act_batch``, ``emit_r_batch``) send their requests concurrently,
  at most ``max_in_flight`` at once; ``emit_r_batch`` (prompt_fill) fills the slots slot by
  slot across all contexts, every slot's requests in flight together (the proxy's torch
  prefix cache has no HTTP counterpart: the server's own prompt cache, if it has one, does
  that work);
* failures are retried with exponential backoff (connection errors, 429, 5xx), all within a
  deadline per request (``deadline``, default 300 s; the ``/models`` check at load at most 30 s),
  then an AdapterError names the URL and status, or the seconds waited;
* the API key comes only from the environment variable named by ``api_key_env``
  (default ``TRB_API_KEY``) and is never in the spec, an error or a log.

Capabilities: those of the proxy adapter (batched act and emit, continuation scoring, emit
counters, the no-r_t ablation) **except activation access**: there is no residual stream
over HTTP, so Track 2 is "not applicable (needs activation_access)" through this adapter.

A server computes with its own weights and tokenizer: llama.cpp serves a GGUF's quantised
weights, so its scores differ from the transformers path on the dequantised model by the
quantisation error (the README states the tolerance measured on SmolLM2-135M Q4_1).
llama.cpp's server must be started with ``--kv_overrides tokenizer.ggml.add_bos_token=bool:true``
for a GGUF that does not add a BOS token (SmolLM2's): llama-cpp-python aligns echoed prompt
log-probabilities one token off otherwise (llama-cpp-python issue #1983).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from trb.adapters.capabilities import BatchedAct, BatchedEmit, ContinuationScoring, EmitCounters, RAblation
from trb.adapters.completions_client import (
    DEFAULT_API_KEY_ENV,
    DEFAULT_DEADLINE_S,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_IN_FLIGHT,
    CompletionsClient,
)
from trb.adapters.proxy import (
    ACTION_SCORES,
    CHAT_TEMPLATES,
    DIRECT_TEMPLATE_VERSION,
    INTERVENTIONS,
    MODES,
    PROMPT_FORMATS,
    R_PLACEMENT,
    SCAFFOLDS,
    TEMPLATE_VERSION,
    ProxyAdapter,
    _check_options,
)
from trb.adapters.registry import AdapterKind, AdapterOption
from trb.context import StepContext
from trb.errors import AdapterError

__all__ = ["ServedAdapter", "ADAPTER"]

_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json", "merges.txt",
                    "tokenizer.model", "chat_template.jinja")


def _tokenizer_digest(d: Path) -> tuple[str, list[str]]:
    h = hashlib.sha256()
    names = []
    for name in _TOKENIZER_FILES:
        f = d / name
        if f.is_file():
            h.update(name.encode() + b"\0" + f.read_bytes() + b"\0")
            names.append(name)
    if not names:
        raise AdapterError(f"{d}: no tokenizer files here (tokenizer.json, tokenizer_config.json, ...)")
    return h.hexdigest(), names


class ServedAdapter(ProxyAdapter):
    """A model behind an OpenAI-compatible ``/v1/completions`` endpoint, with the proxy adapter's prompts.

    Attributes (beside the proxy adapter's mode, scaffold, history and emit counters):
        client: the :class:`~trb.adapters.completions_client.CompletionsClient`.
        served_model: the model name sent with each request (None: the server's default).
        server_models: the model ids the server listed at ``/models`` when loaded.
    """

    tier = "proxy"
    capabilities = (BatchedAct, BatchedEmit, ContinuationScoring, EmitCounters, RAblation)

    def __init__(self, client: CompletionsClient, *, served_model: str | None, server_models: list[str],
                 tokenizer_dir: Path | None = None, tokenizer=None, mode: str = "prompt_fill", scaffold: str = "cot",
                 history: int | None = None, intervention: str = "template", chat_template: str = "auto",
                 prompt_format: str = "auto", action_score: str = "sum"):
        if action_score == "mean" and tokenizer is None:
            raise AdapterError("action_score=mean counts each action's tokens: name the served model's tokenizer "
                               "directory with --tokenizer DIR")
        super().__init__(None, tokenizer, path=None, sha256="", hashed=[], mode=mode, scaffold=scaffold,
                         history=history, intervention=intervention, chat_template=chat_template,
                         prompt_format=prompt_format, action_score=action_score)
        self.client = client
        if tokenizer is not None:  # a chat template's prompt holds them as text (completions_client, "Special tokens")
            client.special_texts = tuple(dict.fromkeys(
                [str(t) for t in getattr(tokenizer, "all_special_tokens", ()) or ()]
                + [str(t) for t in (getattr(tokenizer, "added_tokens_decoder", None) or {}).values()
                   if getattr(t, "special", False)]))
        self.served_model = served_model
        self.server_models = list(server_models)
        self.tokenizer_dir = tokenizer_dir
        self.tokenizer_sha256, self.tokenizer_hashed = (_tokenizer_digest(tokenizer_dir) if tokenizer_dir
                                                        else (None, []))

    @classmethod
    def load(cls, url: str, *, served_model: str | None = None, tokenizer: str | None = None,
             mode: str = "prompt_fill", scaffold: str = "cot", history: int | None = None,
             max_in_flight: int = DEFAULT_MAX_IN_FLIGHT, max_attempts: int = DEFAULT_MAX_ATTEMPTS,
             backoff: float = 0.5, timeout: float = 120.0, api_key_env: str = DEFAULT_API_KEY_ENV,
             intervention: str = "template", chat_template: str = "auto", prompt_format: str = "auto",
             action_score: str = "sum", deadline: float = DEFAULT_DEADLINE_S) -> ServedAdapter:
        """Connect to the server at ``url`` (``http://host:port/v1``) and check that it answers ``/models``.

        Args:
            url: the API root of an OpenAI-compatible server.
            served_model: the model name the server expects; None: the one model it lists
                (an error if it lists several).
            tokenizer: a local Hugging Face tokenizer directory for the served model (optional;
                loaded offline and its files' sha256 recorded in the spec).
            mode, scaffold, history, intervention, prompt_format, action_score: as for
                :class:`~trb.adapters.proxy.ProxyAdapter` (``action_score="mean"`` needs ``tokenizer``).
            chat_template: ``"auto"`` applies the tokenizer's chat template when ``tokenizer`` is given and
                has one (without a tokenizer no chat template is known: prompts are sent as the plain
                templates); ``"off"`` never does.
            max_in_flight: requests in flight at most; max_attempts, backoff, timeout: the retry policy;
                deadline: the seconds one request may take in all (the ``/models`` check: at most 30).
            api_key_env: the environment variable holding the API key.
        Raises:
            AdapterError: a bad option, a server that does not answer (after the retries), a
                model name it does not list, or an unreadable tokenizer.
        """
        _check_options(mode=mode, scaffold=scaffold, intervention=intervention, chat_template=chat_template,
                       prompt_format=prompt_format, action_score=action_score)
        client = CompletionsClient(url, served_model, max_in_flight=max_in_flight, max_attempts=max_attempts,
                                   backoff=backoff, timeout=timeout, api_key_env=api_key_env, deadline=deadline)
        try:
            listed = client.models()
            if served_model is None:
                if len(listed) > 1:
                    raise AdapterError(f"{client.url} serves {len(listed)} models ({', '.join(listed[:5])}); "
                                       "name one with --served-model")
                served_model = listed[0] if listed else None
                client.model = served_model
            elif listed and served_model not in listed:
                raise AdapterError(f"{client.url} does not serve {served_model!r} (it lists {', '.join(listed[:5])})")
            tok_dir, tok = None, None
            if tokenizer is not None:
                tok_dir = Path(tokenizer)
                if not tok_dir.is_dir():
                    raise AdapterError(f"{tok_dir}: no tokenizer directory here")
                try:
                    from transformers import AutoTokenizer

                    tok = AutoTokenizer.from_pretrained(tok_dir, local_files_only=True)
                except Exception as e:
                    raise AdapterError(f"{tok_dir}: could not load the tokenizer offline: {type(e).__name__}: {e}") from e
            return cls(client, served_model=served_model, server_models=listed, tokenizer_dir=tok_dir, tokenizer=tok,
                       mode=mode, scaffold=scaffold, history=history, intervention=intervention,
                       chat_template=chat_template, prompt_format=prompt_format, action_score=action_score)
        except BaseException:
            client.close()
            raise

    def close(self) -> None:
        """Close the HTTP connections and the request threads."""
        self.client.close()

    def spec(self) -> dict:
        return {
            "kind": "served",
            "url": self.client.url,
            "served_model": self.served_model,
            "server_models": self.server_models,
            "tokenizer": str(self.tokenizer_dir) if self.tokenizer_dir else None,
            "tokenizer_sha256": self.tokenizer_sha256,
            "mode": self.mode,
            "scaffold": self.scaffold,
            "history": self.history,
            "template_version": TEMPLATE_VERSION if self.scaffold == "cot" else DIRECT_TEMPLATE_VERSION,
            "intervention": self.intervention,
            "chat_template": self.chat_template,
            "chat_template_applied": self.chat_applied,
            "chat_template_sha256": self.chat_template_sha256,
            "prompt_format": self.prompt_format,
            "prompt_templates": self._template_versions(),
            "r_placement": dict(R_PLACEMENT),
            "action_score": self.action_score,
            "scoring": "prompt log-probabilities (echo=True, logprobs=1); greedy generation at temperature 0",
        }

    # -- the proxy adapter's backend, over HTTP -----------------------------------------

    def _score(self, requests, prefix=None):
        """Summed log-likelihoods of each request's continuations (``prefix``, a torch cache, is not used)."""
        return self.client.score(requests)

    def _window(self) -> int | None:
        return None  # the server refuses a prompt past its context (HTTP 400, an AdapterError)

    def _greedy(self, prompt: str, max_new_tokens: int) -> str:
        return self.client.generate(prompt, max_new_tokens)

    def _greedy_batch(self, prompts: Sequence[str], max_new_tokens: int, stop=None, prefix=None) -> list[str]:
        """``[self._greedy(p, max_new_tokens) for p in prompts]``, concurrently (the caller cuts the text as ever)."""
        return self.client.generate_many(list(prompts), max_new_tokens)

    def _emit_fill_batch(self, contexts: list[StepContext]) -> list[dict]:
        """prompt_fill over many contexts: slot by slot, each slot's requests for every context in flight together."""
        bases = [self._emit_base(c) + " " for c in contexts]
        rs: list[dict] = [{} for _ in contexts]
        self._fill_group(list(contexts), bases, rs, None)
        return rs

    # activation access is not declared: no residual stream over HTTP
    def activation_sites(self):
        raise AdapterError("the served adapter has no activation access (no residual stream over HTTP)")


def _load(model: str, **options) -> ServedAdapter:
    return ServedAdapter.load(model, **options)


#: The registry entry (entry point ``trb.adapters: served``).
ADAPTER = AdapterKind(
    name="served", tier="proxy", load=_load, accepts=("url",),
    summary="a model behind an OpenAI-compatible completions endpoint (vLLM, llama.cpp's server): the proxy "
            "adapter's prompts, scored from prompt log-probabilities",
    model_help="the server's API root, e.g. http://127.0.0.1:8000/v1",
    capabilities=("batched_act", "batched_emit", "continuation_scoring", "emit_counters", "r_ablation"),
    # runs recorded before r_placement had no user-spoken slot: every slot was the agent's, as this places them
    spec_added={"r_placement": dict(R_PLACEMENT)},
    options=(
        AdapterOption("served_model", "the model name the server expects (default: the one model it lists)"),
        AdapterOption("tokenizer", "a local Hugging Face tokenizer directory of the served model (its sha256 is "
                                   "recorded)"),
        AdapterOption("mode", "how r is elicited (default prompt_fill)", choices=MODES, flag="--elicit"),
        AdapterOption("scaffold", "act through the CoT span holding r (cot, the default) or with no reasoning "
                                  "scaffold (none)", choices=SCAFFOLDS),
        AdapterOption("history", "earlier steps shown in each prompt (default: all)", type=int),
        AdapterOption("intervention", "how do(r') reaches the prompt: template (default) or cot_edit (the "
                                      "model's own chain of thought, generated by the server, its spans edited)",
                      choices=INTERVENTIONS),
        AdapterOption("chat_template", "auto (default: the --tokenizer's chat template when it has one) or off",
                      choices=CHAT_TEMPLATES),
        AdapterOption("prompt_format", "auto (default), trace or qa", choices=PROMPT_FORMATS),
        AdapterOption("action_score", "sum (default) or mean (per token; needs --tokenizer)", choices=ACTION_SCORES),
        AdapterOption("max_in_flight", f"requests in flight at most (default {DEFAULT_MAX_IN_FLIGHT})", type=int),
        AdapterOption("max_attempts", f"attempts per request before failing (default {DEFAULT_MAX_ATTEMPTS})",
                      type=int),
        AdapterOption("deadline", f"seconds one request may take in all, retries included (default "
                                  f"{DEFAULT_DEADLINE_S:g}; the /models check at load at most 30)", type=float),
        AdapterOption("api_key_env", f"the environment variable holding the API key (default {DEFAULT_API_KEY_ENV}; "
                                     "the key itself is never an option)"),
    ),
)
