"""A small client for the Label Studio API: the calls ``trb-annotate`` needs, retried, with typed errors.

Settings come from ``LABEL_STUDIO_URL`` and ``LABEL_STUDIO_API_KEY`` (or arguments). The key
is only ever sent in the ``Authorization`` header: it is never written to disk, logged, or put
in an error message (:func:`annotate.errors.scrub` removes it from anything quoted). The URL is
shown, and stored, only as :func:`toolkit.urls.redact_url` gives it (``client.url``): no
``user:password@``, no ``?token=`` value; the secret parts are scrubbed from anything quoted too.
A key or URL that cannot be sent (a non-ASCII character, a space or newline in the key; a URL
that is not http(s)) is refused before any request, naming the variable, never the value.

Projects, imports and users go through ``label_studio_sdk`` (imported lazily: it takes about
2 s). Listing a project's tasks uses plain pages of JSON over the same API, because the SDK's
typed pager spends about four times as long building objects for a 10k-task project.

Transient failures (connection refused or reset, timeouts, HTTP 429 and 5xx) are retried with
exponential backoff (``TRB_LS_RETRIES`` times, default 4), all within one **deadline** per call
(``TRB_LS_DEADLINE`` seconds, default 45: every attempt's timeout and every wait together), so a
server that accepts connections and never answers fails within it, naming the URL, the request,
the seconds waited and the attempts made. A line on stderr says what is being waited for once a
call has taken 5 s, and before each retry once it has taken 1 s. What is left raises
:class:`LabelStudioUnreachable` or :class:`LabelStudioFailed`. A refused key raises
:class:`LabelStudioAuthFailed`; a bad setting :class:`MissingSetting` or :class:`BadSetting`.

Every answer is read strictly (:func:`toolkit.server_answers.decode`) and its shape checked
(:mod:`annotate.answer_shapes`) before anything reads a field of it: an answer that is not Label
Studio's (an HTML page, an empty body, JSON of another shape, a 200 carrying an error) raises
:class:`LabelStudioBadAnswer`, naming the server, the request and what came instead.
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

from annotate import answer_shapes as shape
from annotate.errors import (
    BadSetting,
    ConfigRejected,
    LabelStudioAuthFailed,
    LabelStudioBadAnswer,
    LabelStudioFailed,
    LabelStudioUnreachable,
    MissingSetting,
    ProjectNotFound,
    remember_secret,
    scrub,
)
from toolkit.server_answers import UnexpectedAnswer, decode
from toolkit.urls import header_value_problem, redact_url, url_secrets

__all__ = ["Project", "LabelStudioClient", "Attempts", "connect", "PAGE_SIZE", "PROJECT_SETTINGS",
           "DEFAULT_DEADLINE", "DEFAULT_RETRIES"]

T = TypeVar("T")
#: Tasks per page when listing a project.
PAGE_SIZE = 1000
#: Seconds one call may take in all, its retries and waits included (``TRB_LS_DEADLINE``).
DEFAULT_DEADLINE = 45.0
#: Retries of a call after a transient failure (``TRB_LS_RETRIES``).
DEFAULT_RETRIES = 4
_STILL_WAITING_S = 5.0  # a line on stderr once one attempt has waited this long
_RETRY_LINE_AFTER_S = 1.0  # a line before a retry once the call has taken this long (quick retries stay quiet)
_MIN_ATTEMPT_S = 0.5  # no retry is started with less time than this left before the deadline
_TRANSIENT_STATUS = {429, 500, 502, 503, 504}
#: The marker of a project made by trb-annotate, followed by its kind: in a comment of the labelling config
#: (never shown to anyone), or, for projects made before that, at the start of the description.
MARK = "trb-annotate kind="
#: The project fields trb-annotate sets, and push compares with what the toolkit would set.
PROJECT_SETTINGS = ("label_config", "expert_instruction", "show_instruction", "enable_empty_annotation",
                    "description", "show_skip_button")


@dataclass(frozen=True)
class Project:
    id: int
    title: str
    kind: str | None  # attribution | continuation, from the project's description; None if not ours
    overlap: int
    task_number: int
    settings: dict = field(default_factory=dict, compare=False)  # PROJECT_SETTINGS as the server has them
    created_at: str = ""  # as the server has it: with the id, what tells this project from a later one


def _env_number(name: str, default, *, whole: bool, what: str):
    """``$name`` as a whole number >= 0 (``whole``) or a finite number > 0; unset or empty: ``default``."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw) if whole else float(raw)
    except ValueError:
        value = None
    if value is None or (whole and value < 0) or (not whole and not (math.isfinite(value) and value > 0)):
        expected = "a whole number, 0 or more" if whole else "a number of seconds above 0"
        raise BadSetting(f"{name}={raw!r} is not {expected} ({what}; default {default:g})")
    return value


def connect(url: str | None = None, api_key: str | None = None, **kw) -> LabelStudioClient:
    """A client for ``url``/``api_key``, or ``LABEL_STUDIO_URL``/``LABEL_STUDIO_API_KEY`` from the environment.

    ``TRB_LS_RETRIES`` sets how many times a transient failure is retried (default 4);
    ``TRB_LS_DEADLINE`` the seconds one call may take in all (default 45). Raises
    :class:`MissingSetting` (a URL or key that is missing or cannot be sent) and :class:`BadSetting`.
    """
    url = url or os.environ.get("LABEL_STUDIO_URL")
    api_key = api_key or os.environ.get("LABEL_STUDIO_API_KEY")
    if not url:
        raise MissingSetting("LABEL_STUDIO_URL is not set (the Label Studio server, e.g. http://localhost:8080)")
    if not api_key:
        raise MissingSetting("LABEL_STUDIO_API_KEY is not set (your Label Studio access token)")
    if "retries" not in kw:
        kw["retries"] = _env_number("TRB_LS_RETRIES", DEFAULT_RETRIES, whole=True,
                                    what="how many times a failed Label Studio request is retried")
    if "deadline" not in kw:
        kw["deadline"] = _env_number("TRB_LS_DEADLINE", DEFAULT_DEADLINE, whole=False,
                                     what="the seconds one Label Studio call may take, retries included")
    return LabelStudioClient(url, api_key, **kw)


def _check_key(key: str) -> None:
    """Refuse a key an HTTP header cannot carry, naming the position of the first bad character (never the key)."""
    problem = header_value_problem(key)
    if problem:
        raise MissingSetting(f"LABEL_STUDIO_API_KEY has {problem}, which an HTTP header cannot carry; copy the "
                             "access token again from Label Studio (Account & Settings)")


def _check_url(url: str) -> None:
    import httpx

    shown = redact_url(url)
    try:
        parsed = httpx.URL(url)
        ok = parsed.scheme in ("http", "https") and bool(parsed.host)
    except (httpx.InvalidURL, ValueError, TypeError):
        ok = False
    if not ok:
        raise MissingSetting(f"LABEL_STUDIO_URL {shown!r} is not an http(s) URL of a server "
                             "(e.g. http://localhost:8080)")


def _status_and_detail(exc: BaseException) -> tuple[int | None, str]:
    """The HTTP status and the server's own words (never the headers: they can hold cookies)."""
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    if status is None and getattr(exc, "response", None) is not None:
        status = exc.response.status_code
        try:
            body = exc.response.json()
        except Exception:  # noqa: BLE001 - a non-JSON error page
            body = exc.response.text[:4000]  # cut after masking, below: a key cut in two would not be found
    detail = ""
    if isinstance(body, dict):
        detail = str(body.get("validation_errors") or body.get("detail") or body)
    elif body:
        detail = str(body)
    return status, scrub(detail)[:300]


def _is_validation_error(exc: BaseException) -> bool:
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and isinstance(exc, getattr(pydantic, "ValidationError", ()))


def _validation_problem(exc) -> str:
    """What the SDK's model found wrong in an answer, in words: the first fields by location, never their values."""
    errors = exc.errors(include_input=False)
    where = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ())) or 'the answer'}: {e.get('msg', '')}"
                      for e in errors[:3])
    return f"not Label Studio's ({len(errors)} field(s) do not fit: {where})"


def _raised_reading_an_answer(exc: BaseException) -> bool:
    """Whether ``exc`` (a TypeError, KeyError...) was raised inside the SDK's code (where it reads an answer into its
    models), not in this module's."""
    if not isinstance(exc, (TypeError, KeyError, AttributeError, IndexError, ValueError)):
        return False
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and "label_studio_sdk" in tb.tb_frame.f_code.co_filename.replace("\\", "/").split("/")


def _stderr_line(line: str) -> None:
    print(scrub(line), file=sys.stderr, flush=True)


class Attempts:
    """One call's attempts against its deadline: each attempt's timeout, whether to retry, what to say.

    Made by :meth:`LabelStudioClient.attempts`; a caller that retries by itself (``push``, whose
    imports must be re-listed before a retry) shares one between its attempts.
    """

    def __init__(self, client: LabelStudioClient, what: str, request: str):
        self.client, self.what, self.request = client, what, request
        self.start = time.monotonic()
        self.n = 1  # the attempt under way (1-based)

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def left(self) -> float:
        return self.client.deadline - self.elapsed()

    def timeout(self) -> float:
        """The timeout of the attempt about to start: the client's, cut to what is left of the deadline."""
        return max(min(self.client.timeout, self.left()), 0.05)

    def watch(self):
        """A context: while one attempt runs past 5 s, one line on stderr says what is being waited for."""
        c = self.client
        line = (f"waiting for Label Studio at {c.url} to answer {self.request} ({self.what}): attempt {self.n} of "
                f"{c.retries + 1}, gives up after {c.deadline:g} s (TRB_LS_DEADLINE)")
        return _Watch(line, c.notify, _STILL_WAITING_S)

    def again(self, reason: str) -> bool:
        """After a transient failure: wait and return True if another attempt fits (retries and deadline)."""
        c = self.client
        if self.n > c.retries:
            return False
        wait = c.backoff * 2 ** (self.n - 1)
        if self.left() < wait + _MIN_ATTEMPT_S:
            return False
        if self.elapsed() + wait >= _RETRY_LINE_AFTER_S:
            c.notify(f"Label Studio at {c.url}: {reason} on {self.request} ({self.what}), attempt {self.n} of "
                     f"{c.retries + 1} after {self.elapsed():.1f} s; retrying in {wait:g} s (gives up after "
                     f"{c.deadline:g} s)")
        c._sleep(wait)
        self.n += 1
        return True

    def unreachable(self, exc: BaseException) -> LabelStudioUnreachable:
        """The error for a call that got no answer: a timeout names the deadline, anything else the server."""
        import httpx

        c = self.client
        tries = f"{self.n} attempt{'s' if self.n != 1 else ''}"
        if isinstance(exc, httpx.TimeoutException):
            return LabelStudioUnreachable(
                f"Label Studio at {c.url} did not answer {self.request} ({self.what}) within {self.elapsed():.0f} s "
                f"({tries}, {type(exc).__name__}; TRB_LS_DEADLINE={c.deadline:g} s); is the server overloaded "
                "or hung?")
        return LabelStudioUnreachable(
            f"cannot reach Label Studio at {c.url} ({self.what}: {type(exc).__name__}"
            f"{', after ' + tries if self.n > 1 else ''}); is the server running?")


class _Watch:
    def __init__(self, line: str, notify: Callable[[str], None], after: float):
        self._timer = threading.Timer(after, notify, (line,))
        self._timer.daemon = True

    def __enter__(self):
        self._timer.start()
        return self

    def __exit__(self, *exc):
        self._timer.cancel()


class LabelStudioClient:
    """The Label Studio calls of ``trb-annotate``. Every method raises only :mod:`annotate.errors` types.

    ``retries`` extra attempts after a transient failure, waiting ``backoff`` × 2^k seconds, all
    within ``deadline`` seconds per call; ``timeout`` caps one attempt. ``notify`` gets the
    progress lines (default: stderr). ``url`` is the server as it may be shown (no credentials).
    """

    def __init__(self, url: str, api_key: str, *, retries: int = DEFAULT_RETRIES, backoff: float = 0.5,
                 timeout: float = 120.0, deadline: float = DEFAULT_DEADLINE,
                 sleep: Callable[[float], None] = time.sleep, notify: Callable[[str], None] | None = None):
        remember_secret(api_key)
        for secret in url_secrets(url):
            remember_secret(secret)
        _check_url(url)
        _check_key(api_key)
        if retries < 0 or not backoff >= 0 or not timeout > 0 or not (deadline > 0 and math.isfinite(deadline)):
            raise BadSetting(f"retries must be >= 0 (not {retries}), backoff >= 0 (not {backoff}), timeout > 0 "
                             f"(not {timeout}) and deadline a number of seconds > 0 (not {deadline})")
        self._endpoint = url.rstrip("/")  # what requests go to; never shown
        self.url = redact_url(self._endpoint)
        self._key = api_key
        self.retries, self.backoff, self.timeout, self.deadline = int(retries), backoff, timeout, float(deadline)
        self._sleep = sleep
        self.notify = notify or _stderr_line
        self._sdk = None
        self._http = None

    # ---------------------------------------------------------------- plumbing
    @property
    def sdk(self):
        if self._sdk is None:
            try:
                from label_studio_sdk import LabelStudio
            except ImportError as e:  # pragma: no cover - it is a dependency
                raise LabelStudioFailed("label-studio-sdk is not installed: pip install 'label-studio-sdk>=2.1,<3'") from e
            # no retries of its own: every call is retried here, within the deadline
            self._sdk = LabelStudio(base_url=self._endpoint, api_key=self._key, timeout=self.timeout, max_retries=0)
        return self._sdk

    @property
    def http(self):
        if self._http is None:
            import httpx

            scheme = "Bearer" if self._key.count(".") == 2 else "Token"  # a JWT personal token, else a legacy one
            self._http = httpx.Client(base_url=self._endpoint, headers={"Authorization": f"{scheme} {self._key}"},
                                      timeout=self.timeout)
        return self._http

    def close(self) -> None:
        if self._http is not None:
            self._http.close()

    def attempts(self, what: str, request: str) -> Attempts:
        """A fresh deadline for one call: ``what`` it does (for messages), the ``request`` (``GET /api/...``)."""
        return Attempts(self, what, request)

    @staticmethod
    def _options(timeout: float) -> dict:
        """The SDK's per-request options: this attempt's timeout, no retries of its own."""
        return {"timeout_in_seconds": timeout, "max_retries": 0}

    def call(self, what: str, fn: Callable[[float], T], *, retry: bool = True, request: str = "",
             attempts: Attempts | None = None) -> T:
        """``fn(timeout)`` with retries on transient failures within the deadline; every failure becomes a typed
        error naming ``what``. ``fn`` is given each attempt's timeout in seconds."""
        import httpx

        attempts = attempts or self.attempts(what, request or what)
        while True:
            try:
                with attempts.watch():
                    return fn(attempts.timeout())
            except httpx.TransportError as e:
                if retry and attempts.again(type(e).__name__):
                    continue
                raise attempts.unreachable(e) from None
            except UnexpectedAnswer as e:
                raise self.bad_answer(attempts, e.why) from None
            except Exception as e:  # noqa: BLE001 - translated below, or re-raised
                if _is_validation_error(e):  # the SDK could not read the answer as the model it expects
                    raise self.bad_answer(attempts, _validation_problem(e)) from None
                if _raised_reading_an_answer(e):  # the SDK's unchecked models choke on JSON of another shape
                    raise self.bad_answer(attempts, f"JSON of another shape than Label Studio's (the SDK could not "
                                                    f"read it: {type(e).__name__})") from None
                status, detail = _status_and_detail(e)
                if status is None:
                    raise
                if 200 <= status < 300:  # the SDK got a 2xx whose body is not JSON
                    raise self.bad_answer(attempts, f"not JSON ({detail[:120]!r})") from None
                if status in _TRANSIENT_STATUS and retry and attempts.again(f"HTTP {status}"):
                    continue
                if status in (401, 403):
                    raise LabelStudioAuthFailed(
                        f"Label Studio at {self.url} refused the API key (HTTP {status}) while trying to {what}; "
                        "check LABEL_STUDIO_API_KEY") from None
                raise LabelStudioFailed(f"Label Studio at {self.url} could not {what} (HTTP {status} on "
                                        f"{attempts.request}): {detail}") from None

    def bad_answer(self, attempts: Attempts, why: str) -> LabelStudioBadAnswer:
        """The error for an answer to ``attempts.request`` that is not what it expects (``why``)."""
        return LabelStudioBadAnswer(f"Label Studio at {self.url} gave an unexpected answer to {attempts.request} "
                                    f"({attempts.what}): {why}; is LABEL_STUDIO_URL the Label Studio server?")

    def _get_json(self, what: str, path: str, params: dict | list | None = None,
                  check: Callable[[Any], T] = shape.json_object) -> T:
        """``GET path``, its answer read strictly and passed through ``check`` (an :mod:`annotate.answer_shapes`
        function; what it raises becomes :class:`LabelStudioBadAnswer`)."""
        def go(timeout: float):
            r = self.http.get(path, params=params, timeout=timeout)
            r.raise_for_status()
            return check(decode(r.content, r.headers.get("content-type")))

        return self.call(what, go, request=f"GET {path}")

    # ---------------------------------------------------------------- the API
    def check(self) -> dict:
        """Who the key belongs to (``id``, ``email``): proves the server is up and the key is good."""
        return self._get_json("check the API key", "/api/current-user/whoami")

    @staticmethod
    def _project(p: dict) -> Project:
        """A project from its JSON. The kind comes from the labelling config's marker comment (projects made
        before the config carried it say their kind in the description)."""
        kind = None
        config = p.get("label_config") or ""
        if MARK in config:  # the config's comment: <!-- trb-annotate kind=attribution: ... -->
            kind = (config.split(MARK, 1)[1].split(":")[0].split() or [None])[0]
        desc = p.get("description") or ""
        if kind is None and desc.startswith(MARK):
            kind = (desc[len(MARK):].split() or [None])[0]
        settings = {k: p.get(k) for k in PROJECT_SETTINGS}
        return Project(id=int(p["id"]), title=p["title"], kind=kind, overlap=p.get("maximum_annotations") or 1,
                       task_number=p.get("task_number") or 0, settings=settings, created_at=p.get("created_at") or "")

    def projects(self) -> list[Project]:
        """Every project the key can see."""
        out, page = [], 1
        while True:
            results, more = self._get_json("list projects", "/api/projects", {"page_size": 100, "page": page},
                                           check=shape.projects_page)
            out += [self._project(p) for p in results]
            if not more:
                return out
            page += 1

    def find_project(self, title: str) -> Project | None:
        found = [p for p in self.projects() if p.title == title]
        return found[0] if found else None

    def project(self, title: str) -> Project:
        """The project titled ``title``; :class:`ProjectNotFound` if there is none."""
        p = self.find_project(title)
        if p is None:
            raise ProjectNotFound(f"no Label Studio project titled {title!r} at {self.url}")
        return p

    def project_by_id(self, project_id: int) -> Project:
        return self._project(self._get_json(f"read project {project_id}", f"/api/projects/{project_id}",
                                            check=shape.project))

    def _send_json(self, what: str, method: str, path: str, body: dict, *, retry: bool = True,
                   check: Callable[[Any], T] = shape.json_object) -> T:
        def go(timeout: float):
            r = self.http.request(method, path, json=body, timeout=timeout)
            r.raise_for_status()
            return check(decode(r.content, r.headers.get("content-type")))

        return self.call(what, go, retry=retry, request=f"{method} {path}")

    def create_project(self, title: str, kind: str, settings: dict, overlap: int) -> Project:
        """A new project with ``settings`` (labelling config, instructions, ...), asking ``overlap`` annotators
        per task. Raises :class:`ConfigRejected` when the server refuses the labelling config."""
        try:
            p = self._send_json(f"create project {title!r}", "POST", "/api/projects",
                                {"title": title, "maximum_annotations": overlap, "overlap_cohort_percentage": 100,
                                 **settings}, retry=False, check=shape.project)
        except LabelStudioFailed as e:
            if "label_config" in e.message:
                raise ConfigRejected(f"Label Studio at {self.url} rejected the {kind} labeling config: "
                                     + e.message.split("): ", 1)[-1]) from None
            raise
        return self._project(p)

    def update_project(self, project_id: int, kind: str, settings: dict) -> Project:
        """Change a project's ``settings`` in place. Raises :class:`ConfigRejected` when the server refuses the
        labelling config (for one, when annotations already made do not fit it)."""
        try:
            p = self._send_json(f"update project {project_id}", "PATCH", f"/api/projects/{project_id}", settings,
                                check=shape.project)
        except LabelStudioFailed as e:
            if "label_config" in e.message:
                raise ConfigRejected(f"Label Studio at {self.url} rejected the {kind} labeling config for project "
                                     f"{project_id}: " + e.message.split("): ", 1)[-1]) from None
            raise
        return self._project(p)

    def tasks_data(self, project_id: int) -> Iterator[tuple[int, dict]]:
        """(task id, task data) for every task of the project."""
        for task in self._pages(project_id, {"include": "id,data"}, "list tasks"):
            yield int(task["id"]), task.get("data") or {}

    def update_task_data(self, task_id: int, data: dict) -> None:
        self._send_json(f"update task {task_id}", "PATCH", f"/api/tasks/{task_id}", {"data": data})

    def task_keys(self, project_id: int, key: str) -> dict[str, int]:
        """``data[key]`` -> task id for every task of the project (the first task, if a key repeats)."""
        out: dict[str, int] = {}
        for task in self._pages(project_id, {"include": "id,data"}, "list tasks"):
            k = (task.get("data") or {}).get(key)
            if k is not None:
                out.setdefault(str(k), task["id"])
        return out

    def nth_task(self, project_id: int, n: int) -> tuple[int, int | None]:
        """(tasks in the project, id of its n-th task in id order, or None past the end): one small request."""
        try:
            j = self._get_json(f"list tasks of project {project_id}", "/api/tasks",
                               {"project": project_id, "page_size": 1, "page": max(n, 1), "include": "id"},
                               check=lambda j: (shape.tasks_page(j), shape.task_count(j, "total")))
        except LabelStudioFailed as e:
            if "HTTP 404" in e.message and not isinstance(e, LabelStudioBadAnswer):
                return -1, None
            raise
        tasks, total = j
        return total, (tasks[0]["id"] if tasks and n >= 1 else None)

    def server_time(self) -> datetime:
        """The server's clock now (its ``Date`` header, to the second, UTC): what ``updated_at`` is measured by."""
        def go(timeout: float):
            r = self.http.get("/health", timeout=timeout)
            r.raise_for_status()
            return r.headers.get("date")

        date = self.call("read the server's clock", go, request="GET /health")
        try:
            return parsedate_to_datetime(date).astimezone(timezone.utc)
        except (TypeError, ValueError):
            raise LabelStudioBadAnswer(f"Label Studio at {self.url} gave an unexpected answer to GET /health (read the "
                                       f"server's clock): no usable Date header ({date!r})") from None

    def task_stamps(self, project_id: int, since: datetime | None = None) -> Iterator[tuple[int, str, int]]:
        """(task id, ``updated_at``, annotations incl. skipped ones) of every task of the project, or of those
        updated at or after ``since`` (Label Studio's Data Manager filter ``filter:tasks:updated_at``, which an
        annotation created, changed or deleted moves: the server sets the task's ``updated_at`` then), oldest first."""
        params = {"include": "id,updated_at,total_annotations,cancelled_annotations"}
        if since is not None:
            params["query"] = json.dumps({"filters": {"conjunction": "and", "items": [
                {"filter": "filter:tasks:updated_at", "operator": "greater_or_equal", "type": "Datetime",
                 "value": since.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")}]},
                "ordering": ["tasks:updated_at"]})
        for t in self._pages(project_id, params, "list tasks"):
            yield (int(t["id"]), str(t.get("updated_at") or ""),
                   int(t.get("total_annotations") or 0) + int(t.get("cancelled_annotations") or 0))

    def task_id_span(self, project_id: int) -> tuple[int, int] | None:
        """(first, last) task id of the project, or None when it has no task: two small requests."""
        ends = []
        for order in ("tasks:id", "-tasks:id"):
            tasks = self._get_json(f"list tasks of project {project_id}", "/api/tasks",
                                   {"project": project_id, "page_size": 1, "include": "id",
                                    "query": json.dumps({"ordering": [order]})}, check=shape.tasks_page)
            if not tasks:
                return None
            ends.append(int(tasks[0]["id"]))
        return min(ends), max(ends)

    def annotations_before(self, project_id: int, since: datetime) -> int:
        """How many annotations (skipped ones not counted) the tasks last updated before ``since`` hold: one small
        request (the task list's ``total_annotations``, over the same Data Manager filter)."""
        query = json.dumps({"filters": {"conjunction": "and", "items": [
            {"filter": "filter:tasks:updated_at", "operator": "less", "type": "Datetime",
             "value": since.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")}]}})
        return self._get_json(f"count annotations of project {project_id}", "/api/tasks",
                              {"project": project_id, "page_size": 1, "include": "id", "query": query},
                              check=lambda j: shape.task_count(j, "total_annotations"))

    def export_tasks(self, project_id: int, task_ids: list[int]) -> list[dict]:
        """The annotated tasks among ``task_ids``, with every annotation, as Label Studio's own JSON export gives
        them (one export request for these ids; a task without annotations is not in the answer)."""
        if not task_ids:
            return []
        return self._get_json(f"export {len(task_ids)} task(s) of project {project_id}",
                              f"/api/projects/{project_id}/export",
                              [("exportType", "JSON"), *(("ids[]", str(i)) for i in task_ids)],
                              check=shape.exported_tasks)

    def _pages(self, project_id: int, params: dict, what: str) -> Iterator[dict]:
        page = 1
        while True:
            try:
                tasks = self._get_json(f"{what} of project {project_id}", "/api/tasks",
                                       {"project": project_id, "page_size": PAGE_SIZE, "page": page, **params},
                                       check=shape.tasks_page)
            except LabelStudioFailed as e:
                if "HTTP 404" in e.message and page > 1 and not isinstance(e, LabelStudioBadAnswer):  # past the end
                    return
                raise
            yield from tasks
            if len(tasks) < PAGE_SIZE:
                return
            page += 1

    def import_tasks(self, project_id: int, tasks: list[dict], *, attempts: Attempts | None = None) -> list[int]:
        """Import ``tasks`` (task data dicts) in one request; the new task ids.

        Not retried here: a request that timed out may have been committed, so the caller
        re-lists the project before trying again (see :func:`annotate.push.push`), within the
        deadline of ``attempts`` (its own :meth:`attempts`, shared between its tries).
        """
        what = f"import {len(tasks)} task(s) into project {project_id}"
        attempts = attempts or self.attempts(what, f"POST /api/projects/{project_id}/import")
        return self.call(what, lambda t: shape.import_ids(self.sdk.projects.import_tasks(
            id=project_id, request=[{"data": t} for t in tasks], return_task_ids=True,
            request_options=self._options(t)), len(tasks)), retry=False, attempts=attempts)

    def users(self) -> dict[int, str]:
        """User id -> e-mail, for every user of the organisation."""
        return self.call("list users", lambda t: shape.users(self.sdk.users.list(request_options=self._options(t))),
                         request="GET /api/users")

    def create_annotation(self, task_id: int, result: list[dict]) -> int:
        """Annotate a task as the key's user; the annotation id (used by tests and the bench)."""
        return self.call(f"annotate task {task_id}",
                         lambda t: shape.annotation_id(self.sdk.annotations.create(
                             id=task_id, result=result, request_options=self._options(t))),
                         retry=False, request=f"POST /api/tasks/{task_id}/annotations")

    def update_annotation(self, annotation_id: int, result: list[dict]) -> None:
        self.call(f"update annotation {annotation_id}",
                  lambda t: self.sdk.annotations.update(id=annotation_id, result=result,
                                                        request_options=self._options(t)),
                  retry=False, request=f"PATCH /api/annotations/{annotation_id}")
