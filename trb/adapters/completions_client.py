"""A small client for an OpenAI-compatible ``/v1/completions`` endpoint (vLLM, llama.cpp's server, others).

What the served-model adapter (:mod:`trb.adapters.served`) asks of a server, and nothing more:

* **Prompt log-probabilities** (:meth:`CompletionsClient.score`): one request per
  (prompt, continuation) with ``echo=True, logprobs=1, max_tokens=1, temperature=0`` on the
  text ``prompt + continuation``; the answer's ``choices[0].logprobs`` gives each echoed token's
  ``token_logprobs`` and ``text_offset``. ``max_tokens`` is 1, not 0: llama.cpp's server reads
  0 as "no limit", and vLLM refuses 0 in some versions; the one generated token starts at or
  after the end of the text and is dropped.

  **The boundary rule.** The continuation's log-likelihood is the sum of the log-probabilities
  of the tokens whose text *ends* after the prompt: token i spans ``[text_offset[i],
  text_offset[i+1])`` (the last echoed token ends at the end of the text), and it is counted
  when that end is past ``len(prompt)``. A token that straddles the boundary (it begins in the
  prompt and ends in the continuation, when the server's tokenizer merges across it) is
  therefore counted with the continuation: its probability depends on the continuation's first
  characters, and the prompt's own tokens, shared by every candidate continuation, are then
  left out alike. Where the tokenizer splits at the boundary (a continuation starting with a
  space after ``"Action:"``, a value after ``"="``: the usual case) the tokens are exactly the
  continuation's, as in :func:`trb.adapters.lm_scoring.score_continuations`.

  **Special tokens.** A prompt written with a chat template holds special tokens as text
  (``<|im_start|>``); llama.cpp's server parses them as special tokens and echoes them as no text
  at all, so its offsets count the prompt without them. Given the special tokens' texts
  (``special_texts``, from the served model's tokenizer), the rule is applied in the server's
  coordinates: the prompt without them, when the echoed tokens spell exactly that; a server that
  echoes special tokens as their text is read as before. Echoed tokens that spell neither are an
  error (the continuation cannot be located), never a silently misplaced score.
* **Greedy generation** (:meth:`CompletionsClient.generate`): ``temperature=0, max_tokens=N``
  (and ``stop`` strings when given); the text of ``choices[0]``.

Requests run concurrently on a thread pool of ``max_in_flight`` workers: at most that many
requests are in flight at once (:meth:`map`). A request that fails with a connection error, a
timeout, 429 or a 5xx status is retried, at most ``max_attempts`` attempts in all, after
``backoff * 2**k`` seconds (k = 0, 1, ...; a ``Retry-After`` header of at most 30 s is honoured
when longer), all within ``deadline`` seconds per request (default 300: each attempt's timeout
is cut to what is left; the ``/models`` check at load has at most 30 s, so a server that
accepts connections and never answers is reported within that); then an
:class:`~trb.errors.AdapterError` names the URL, the status and the server's message, or the
seconds waited and the attempts made. A line on stderr announces each retry once a request has
taken a second. Other 4xx answers are not retried.

The API key is read only from the environment variable ``api_key_env`` (default
``TRB_API_KEY``) and sent as ``Authorization: Bearer <key>``; a server that needs none is
sent none. It is never stored in a spec, an error message or a log line (error messages show
the server's reply with the key masked, should a server echo it); a key an HTTP header cannot
carry (a non-ASCII character, a space or newline) is refused by position. A URL carrying
credentials (``http://user:password@host``, ``?api_key=``) is refused, without repeating them
(:func:`toolkit.urls.redact_url`), and so is any other query string or fragment (it would not
be sent).
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit, urlunsplit

from toolkit.credentials import mask_credentials
from toolkit.server_answers import UnexpectedAnswer, decode, expect
from toolkit.urls import has_credentials, header_value_problem, redact_url
from trb.errors import AdapterError

__all__ = ["CompletionsClient", "DEFAULT_API_KEY_ENV", "DEFAULT_MAX_IN_FLIGHT", "DEFAULT_MAX_ATTEMPTS",
           "DEFAULT_DEADLINE_S", "PROBE_DEADLINE_S", "continuation_logprob", "public_url"]

DEFAULT_API_KEY_ENV = "TRB_API_KEY"
DEFAULT_MAX_IN_FLIGHT = 8
DEFAULT_MAX_ATTEMPTS = 5
DEFAULT_BACKOFF_S = 0.5
DEFAULT_TIMEOUT_S = 120.0
#: Seconds one request may take in all, its attempts and the waits between them included.
DEFAULT_DEADLINE_S = 300.0
#: The most the ``/models`` check at load may take (a live server answers it at once).
PROBE_DEADLINE_S = 30.0
_MIN_ATTEMPT_S = 0.5  # no retry is started with less time than this left
_RETRY_LINE_AFTER_S = 1.0  # a retry is announced on stderr once the request has taken this long
_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_MAX_RETRY_AFTER_S = 30.0


def public_url(url: str) -> str:
    """``url`` without credentials (user:password@ is dropped), query or fragment; no trailing slash.

    Raises ValueError for a URL that does not parse (a bad port, an unclosed IPv6 bracket)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def _without(text: str, specials: Sequence[str]) -> str:
    for s in sorted(specials, key=len, reverse=True):
        text = text.replace(s, "")
    return text


def _server_coordinates(logprobs: dict, text: str, boundary: int, specials: Sequence[str]) -> tuple[str, int]:
    """``(text, boundary)`` in the coordinates of the server's offsets (see "Special tokens" above)."""
    present = [s for s in specials if s and s in text]
    if not present:
        return text, boundary
    tokens = logprobs.get("tokens")
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
        raise AdapterError("the prompt holds special tokens as text and the server's answer has no echoed tokens "
                           "to locate the continuation by")
    spelled = "".join(tokens)
    if spelled.startswith(text):
        return text, boundary
    stripped = _without(text, present)
    if spelled.startswith(stripped):
        return stripped, len(_without(text[:boundary], present))
    raise AdapterError("the server's echoed tokens spell neither the prompt nor the prompt without its special tokens "
                       f"({', '.join(present)}): the continuation cannot be located")


def continuation_logprob(logprobs: dict, text: str, boundary: int, specials: Sequence[str] = ()) -> float:
    """The summed log-probability of the tokens of ``text`` ending after ``boundary`` (see the module docstring).

    ``logprobs`` is a completions choice's ``logprobs`` for ``echo=True`` on ``text`` (tokens
    past the end of ``text``, i.e. generated ones, are ignored). ``specials``: the texts of the model's special
    tokens, when the prompt may hold them (a chat template).
    Raises:
        AdapterError: the answer has no offsets or log-probabilities, or a continuation token has none; the
            echoed tokens cannot be aligned with a prompt that holds special tokens.
    """
    text, boundary = _server_coordinates(logprobs, text, boundary, specials)
    try:
        offsets = [int(o) for o in logprobs["text_offset"]]
        values = list(logprobs["token_logprobs"])
    except (KeyError, TypeError, ValueError) as e:
        raise AdapterError(f"the server's answer has no echoed prompt log-probabilities ({type(e).__name__}: {e}); "
                           "it must support echo=True with logprobs") from e
    if len(offsets) != len(values):
        raise AdapterError(f"the server's answer has {len(offsets)} text offsets for {len(values)} token "
                           "log-probabilities")
    if not all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in values):
        raise AdapterError("the server's answer has a token log-probability that is not a number")
    echoed = [i for i, o in enumerate(offsets) if o < len(text)]
    if not echoed or len(echoed) != (echoed[-1] + 1):
        raise AdapterError("the server did not echo the prompt's tokens (echo=True is needed for scoring)")
    total = 0.0
    n = 0
    for i in echoed:
        end = offsets[i + 1] if i + 1 < len(echoed) else len(text)
        if end <= boundary:
            continue
        v = values[i]
        if v is None:
            raise AdapterError("the server gave no log-probability for a token of the continuation "
                               "(the continuation starts the text?)")
        total += float(v)
        n += 1
    if n == 0:
        raise AdapterError("no token of the continuation was found in the server's echoed tokens")
    return total


class CompletionsClient:
    """An OpenAI-compatible completions endpoint at ``base_url`` (``http://host:port/v1``).

    Args:
        base_url: the API root; requests go to ``{base_url}/completions`` and ``{base_url}/models``.
        model: the model name the server expects in each request (None: the server's only/default model).
        max_in_flight: at most this many requests at once (>= 1).
        max_attempts: attempts per request before giving up (>= 1).
        backoff: seconds before the first retry; doubled at each retry.
        timeout: seconds per attempt (cut to what is left of ``deadline``).
        api_key_env: the environment variable holding the API key (read here, once; absent or empty: no key).
        deadline: seconds one request may take in all, its attempts and waits included (> 0).
    Raises:
        AdapterError: a bad option, URL or key, or httpx missing.
    """

    def __init__(self, base_url: str, model: str | None = None, *, max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
                 max_attempts: int = DEFAULT_MAX_ATTEMPTS, backoff: float = DEFAULT_BACKOFF_S,
                 timeout: float = DEFAULT_TIMEOUT_S, api_key_env: str = DEFAULT_API_KEY_ENV,
                 deadline: float = DEFAULT_DEADLINE_S):
        try:
            import httpx
        except ImportError as e:
            raise AdapterError(f"the served adapter needs httpx (pip install httpx; make install does) ({e})") from e
        shown = redact_url(str(base_url))
        if not str(base_url).startswith(("http://", "https://")):
            raise AdapterError(f"{shown}: not an http(s) URL")
        if max_in_flight < 1 or max_attempts < 1 or backoff < 0 or timeout <= 0:
            raise AdapterError("max_in_flight and max_attempts must be >= 1, backoff >= 0 and timeout > 0")
        if not (isinstance(deadline, (int, float)) and math.isfinite(deadline) and deadline > 0):
            raise AdapterError(f"deadline must be a number of seconds > 0, not {deadline!r}")
        if has_credentials(base_url):
            raise AdapterError(f"{shown}: credentials in the URL are refused; put the API key in the "
                               f"environment variable {api_key_env}")
        try:
            url = public_url(str(base_url))
            query = urlsplit(str(base_url)).query
        except ValueError as e:
            raise AdapterError(f"{shown}: not a valid URL ({e})") from None
        if query or "#" in str(base_url):
            raise AdapterError(f"{shown}: a query string or fragment in the URL would not be sent (requests go to "
                               "<URL>/completions and <URL>/models); give the API root alone, e.g. "
                               "http://127.0.0.1:8000/v1")
        self._httpx = httpx
        self.url = url
        self.model = model
        #: The served model's special tokens as text (set by the served adapter from its tokenizer): see the
        #: module docstring, "Special tokens".
        self.special_texts: tuple[str, ...] = ()
        self.max_in_flight = int(max_in_flight)
        self.max_attempts = int(max_attempts)
        self.backoff = float(backoff)
        self.timeout = float(timeout)
        self.deadline = float(deadline)
        self.api_key_env = api_key_env
        key = os.environ.get(api_key_env) or None
        problem = header_value_problem(key) if key else None
        if problem:
            raise AdapterError(f"the API key in ${api_key_env} has {problem}, which an HTTP header cannot carry; "
                               "set it again")
        self._key = key  # never leaves this object except in the Authorization header
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(base_url=self.url, headers=headers, timeout=timeout,
                                    limits=httpx.Limits(max_connections=self.max_in_flight,
                                                        max_keepalive_connections=self.max_in_flight))
        self._pool = ThreadPoolExecutor(max_workers=self.max_in_flight, thread_name_prefix="trb-served")
        self._lock = threading.Lock()
        #: requests sent (attempts included) and retries made, for inspection
        self.requests = 0
        self.retries = 0

    # -- plumbing --------------------------------------------------------------------

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self._client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _mask(self, text: str) -> str:
        """``text`` with the key (where it stands as a value) and every credential it quotes masked."""
        return mask_credentials(text, [self._key] if self._key else [])

    def _notify(self, line: str) -> None:
        print(self._mask(line), file=sys.stderr, flush=True)

    def _request(self, method: str, path: str, payload: dict | None = None, *, deadline: float | None = None) -> dict:
        """One request with retries, all within ``deadline`` seconds (default: the client's); the decoded JSON."""
        httpx = self._httpx
        where = f"{self.url}{path}"
        deadline = self.deadline if deadline is None else min(deadline, self.deadline)
        start = time.monotonic()
        last = ""
        for attempt in range(self.max_attempts):
            wait = self.backoff * (2 ** attempt)
            with self._lock:
                self.requests += 1
            left = deadline - (time.monotonic() - start)
            try:
                resp = self._client.request(method, path, json=payload, timeout=max(min(self.timeout, left), 0.05))
            except (httpx.TransportError, httpx.TimeoutException) as e:
                last = f"{type(e).__name__}: {self._mask(str(e))}"
            else:
                if resp.status_code < 400:
                    try:
                        return decode(resp.content, resp.headers.get("content-type"))
                    except UnexpectedAnswer as e:
                        raise self._unexpected(method, path, e.why) from None
                body = self._mask(" ".join(resp.text[:2000].split()))[:300]  # masked, then cut
                last = f"HTTP {resp.status_code}: {body}"
                if resp.status_code not in _RETRY_STATUS:
                    raise AdapterError(f"{where}: HTTP {resp.status_code} ({body or resp.reason_phrase}) on {method} "
                                       f"{path}")
                after = resp.headers.get("retry-after")
                try:
                    wait = max(wait, min(float(after), _MAX_RETRY_AFTER_S)) if after else wait
                except ValueError:
                    pass
            if attempt + 1 < self.max_attempts:
                elapsed = time.monotonic() - start
                if elapsed + wait + _MIN_ATTEMPT_S > deadline:
                    raise AdapterError(f"{where}: no answer within {deadline:g} s ({method} {path}: {attempt + 1} "
                                       f"attempt(s) in {elapsed:.0f} s, the deadline for one request); last: {last}")
                with self._lock:
                    self.retries += 1
                if elapsed + wait >= _RETRY_LINE_AFTER_S:
                    self._notify(f"{where}: {last[:120]}; retrying in {wait:g} s (attempt {attempt + 2} of "
                                 f"{self.max_attempts}, gives up after {deadline:g} s)")
                time.sleep(wait)
        raise AdapterError(f"{where}: failed after {self.max_attempts} attempt(s); last: {last}")

    def _unexpected(self, method: str, path: str, why: str) -> AdapterError:
        """The error for an answer that is not what ``method path`` expects: the server, the call and ``why``."""
        return AdapterError(self._mask(f"{self.url}{path}: unexpected answer to {method} {path}: {why}"))

    def map(self, fn: Callable, items: Iterable) -> list:
        """``[fn(x) for x in items]`` with at most ``max_in_flight`` running at once. The first error is raised once
        the requests under way have ended; those not yet started are cancelled (a server whose answers are wrong is
        not asked again and again, nor waited for, after the error is known)."""
        items = list(items)
        if len(items) <= 1 or self.max_in_flight == 1:
            return [fn(x) for x in items]
        futures = [self._pool.submit(fn, x) for x in items]
        try:
            return [f.result() for f in futures]
        except BaseException:
            for f in futures:
                f.cancel()
            raise

    # -- the endpoint ----------------------------------------------------------------

    def models(self) -> list[str]:
        """The model ids the server lists at ``/models`` (within at most 30 s: what load checks first)."""
        data = self._request("GET", "/models", deadline=PROBE_DEADLINE_S)
        models = data.get("data") if isinstance(data, dict) else None
        try:
            expect(isinstance(models, list) and all(isinstance(m, dict) and isinstance(m.get("id"), str)
                                                    for m in models),
                   data, "a list of models ('data', each with an 'id')")
        except UnexpectedAnswer as e:
            raise self._unexpected("GET", "/models", e.why) from None
        return [m["id"] for m in models]

    def _completion(self, payload: dict) -> dict:
        if self.model is not None:
            payload = {"model": self.model, **payload}
        data = self._request("POST", "/completions", payload)
        choices = data.get("choices") if isinstance(data, dict) else None
        try:
            expect(isinstance(choices, list) and bool(choices) and isinstance(choices[0], dict), data,
                   "a completion ('choices', a list of objects)")
        except UnexpectedAnswer as e:
            raise self._unexpected("POST", "/completions", e.why) from None
        return choices[0]

    def logprob(self, prompt: str, continuation: str) -> float:
        """``log p(continuation | prompt)`` from the server's echoed prompt log-probabilities (natural log)."""
        text = prompt + continuation
        choice = self._completion({"prompt": text, "echo": True, "logprobs": 1, "max_tokens": 1,
                                   "temperature": 0.0})
        lp = choice.get("logprobs")
        if not isinstance(lp, dict) or not lp:
            raise self._unexpected("POST", "/completions", "no logprobs in the answer (the server must support "
                                   "echo=True with logprobs; llama.cpp's needs logits_all)")
        try:
            return continuation_logprob(lp, text, len(prompt), self.special_texts)
        except AdapterError as e:
            raise self._unexpected("POST", "/completions", e.message) from None

    def score(self, requests: Sequence[tuple[str, Sequence[str]]]) -> list[list[float]]:
        """For each ``(prompt, [continuation, ...])``, the continuations' log-likelihoods (all requests concurrent)."""
        flat = [(p, c) for p, conts in requests for c in conts]
        values = iter(self.map(lambda pc: self.logprob(*pc), flat))
        return [[next(values) for _ in conts] for _, conts in requests]

    def generate(self, prompt: str, max_tokens: int, stop: Sequence[str] | None = None) -> str:
        """Greedy generation (temperature 0) of at most ``max_tokens`` tokens after ``prompt``."""
        payload = {"prompt": prompt, "max_tokens": int(max_tokens), "temperature": 0.0}
        if stop:
            payload["stop"] = list(stop)
        choice = self._completion(payload)
        text = choice.get("text")
        if not isinstance(text, str):
            raise self._unexpected("POST", "/completions", "an answer without text (choices[0].text)")
        return text

    def generate_many(self, prompts: Sequence[str], max_tokens: int, stop: Sequence[str] | None = None) -> list[str]:
        """``[generate(p, max_tokens, stop) for p in prompts]``, concurrently."""
        return self.map(lambda p: self.generate(p, max_tokens, stop), prompts)
