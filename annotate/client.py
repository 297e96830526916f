"""A small client for the Label Studio API: the calls ``trb-annotate`` needs, retried, with typed errors.

Settings come from ``LABEL_STUDIO_URL`` and ``LABEL_STUDIO_API_KEY`` (or arguments). The key
is only ever sent in the ``Authorization`` header: it is never written to disk, logged, or put
in an error message (:func:`annotate.errors.scrub` removes it from anything quoted).

Projects, imports and users go through ``label_studio_sdk`` (imported lazily: it takes about
2 s). Listing a project's tasks uses plain pages of JSON over the same API, because the SDK's
typed pager spends about four times as long building objects for a 10k-task project.

Transient failures (connection refused or reset, timeouts, HTTP 429 and 5xx) are retried with
exponential backoff; what is left raises :class:`LabelStudioUnreachable` or
:class:`LabelStudioFailed`. A refused key raises :class:`LabelStudioAuthFailed`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from annotate.errors import (
    ConfigRejected,
    LabelStudioAuthFailed,
    LabelStudioFailed,
    LabelStudioUnreachable,
    MissingSetting,
    ProjectNotFound,
    remember_secret,
    scrub,
)

__all__ = ["Project", "LabelStudioClient", "connect", "PAGE_SIZE", "PROJECT_SETTINGS"]

T = TypeVar("T")
#: Tasks per page when listing a project.
PAGE_SIZE = 1000
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


def connect(url: str | None = None, api_key: str | None = None, **kw) -> LabelStudioClient:
    """A client for ``url``/``api_key``, or ``LABEL_STUDIO_URL``/``LABEL_STUDIO_API_KEY`` from the environment.

    ``TRB_LS_RETRIES`` sets how many times a transient failure is retried (default 4).
    """
    url = url or os.environ.get("LABEL_STUDIO_URL")
    api_key = api_key or os.environ.get("LABEL_STUDIO_API_KEY")
    if not url:
        raise MissingSetting("LABEL_STUDIO_URL is not set (the Label Studio server, e.g. http://localhost:8080)")
    if not api_key:
        raise MissingSetting("LABEL_STUDIO_API_KEY is not set (your Label Studio access token)")
    if "retries" not in kw and os.environ.get("TRB_LS_RETRIES"):
        kw["retries"] = int(os.environ["TRB_LS_RETRIES"])
    return LabelStudioClient(url, api_key, **kw)


def _status_and_detail(exc: BaseException) -> tuple[int | None, str]:
    """The HTTP status and the server's own words (never the headers: they can hold cookies)."""
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    if status is None and getattr(exc, "response", None) is not None:
        status = exc.response.status_code
        try:
            body = exc.response.json()
        except Exception:  # noqa: BLE001 - a non-JSON error page
            body = exc.response.text[:200]
    detail = ""
    if isinstance(body, dict):
        detail = str(body.get("validation_errors") or body.get("detail") or body)
    elif body:
        detail = str(body)
    return status, scrub(detail)[:300]


class LabelStudioClient:
    """The Label Studio calls of ``trb-annotate``. Every method raises only :mod:`annotate.errors` types.

    ``retries`` extra attempts after a transient failure, waiting ``backoff`` × 2^k seconds.
    """

    def __init__(self, url: str, api_key: str, *, retries: int = 4, backoff: float = 0.5, timeout: float = 120.0,
                 sleep: Callable[[float], None] = time.sleep):
        remember_secret(api_key)
        self.url = url.rstrip("/")
        self._key = api_key
        self.retries, self.backoff, self.timeout, self._sleep = retries, backoff, timeout, sleep
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
            self._sdk = LabelStudio(base_url=self.url, api_key=self._key, timeout=self.timeout)
        return self._sdk

    @property
    def http(self):
        if self._http is None:
            import httpx

            scheme = "Bearer" if self._key.count(".") == 2 else "Token"  # a JWT personal token, else a legacy one
            self._http = httpx.Client(base_url=self.url, headers={"Authorization": f"{scheme} {self._key}"},
                                      timeout=self.timeout)
        return self._http

    def close(self) -> None:
        if self._http is not None:
            self._http.close()

    def pause(self, attempt: int) -> None:
        """Wait before retry number ``attempt + 1``: ``backoff`` × 2^attempt seconds."""
        self._sleep(self.backoff * 2 ** attempt)

    def call(self, what: str, fn: Callable[[], T], *, retry: bool = True) -> T:
        """``fn()`` with retries on transient failures; every failure becomes a typed error naming ``what``."""
        import httpx

        attempt = 0
        while True:
            try:
                return fn()
            except httpx.TransportError as e:
                if retry and attempt < self.retries:
                    self.pause(attempt)
                    attempt += 1
                    continue
                raise LabelStudioUnreachable(
                    f"cannot reach Label Studio at {self.url} ({what}: {type(e).__name__}"
                    f"{', after ' + str(attempt + 1) + ' attempts' if attempt else ''}); is the server running?"
                ) from None
            except Exception as e:  # noqa: BLE001 - translated below, or re-raised
                status, detail = _status_and_detail(e)
                if status is None:
                    raise
                if status in _TRANSIENT_STATUS and retry and attempt < self.retries:
                    self.pause(attempt)
                    attempt += 1
                    continue
                if status in (401, 403):
                    raise LabelStudioAuthFailed(
                        f"Label Studio at {self.url} refused the API key (HTTP {status}) while trying to {what}; "
                        "check LABEL_STUDIO_API_KEY") from None
                raise LabelStudioFailed(f"Label Studio at {self.url} could not {what} (HTTP {status}): {detail}") from None

    def _get_json(self, what: str, path: str, params: dict | None = None) -> Any:
        def go():
            r = self.http.get(path, params=params)
            r.raise_for_status()
            return r.json()

        return self.call(what, go)

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
            kind = config.split(MARK, 1)[1].split(":")[0].split()[0]
        desc = p.get("description") or ""
        if kind is None and desc.startswith(MARK) and len(desc) > len(MARK):
            kind = desc[len(MARK):].split()[0]
        settings = {k: p.get(k) for k in PROJECT_SETTINGS}
        return Project(id=int(p["id"]), title=p["title"], kind=kind, overlap=p.get("maximum_annotations") or 1,
                       task_number=p.get("task_number") or 0, settings=settings)

    def projects(self) -> list[Project]:
        """Every project the key can see."""
        out, page = [], 1
        while True:
            j = self._get_json("list projects", "/api/projects", {"page_size": 100, "page": page})
            results = j["results"] if isinstance(j, dict) else j
            out += [self._project(p) for p in results]
            if not isinstance(j, dict) or not j.get("next"):
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
        return self._project(self._get_json(f"read project {project_id}", f"/api/projects/{project_id}"))

    def _send_json(self, what: str, method: str, path: str, body: dict, *, retry: bool = True) -> Any:
        def go():
            r = self.http.request(method, path, json=body)
            r.raise_for_status()
            return r.json()

        return self.call(what, go, retry=retry)

    def create_project(self, title: str, kind: str, settings: dict, overlap: int) -> Project:
        """A new project with ``settings`` (labelling config, instructions, ...), asking ``overlap`` annotators
        per task. Raises :class:`ConfigRejected` when the server refuses the labelling config."""
        try:
            p = self._send_json(f"create project {title!r}", "POST", "/api/projects",
                                {"title": title, "maximum_annotations": overlap, "overlap_cohort_percentage": 100,
                                 **settings}, retry=False)
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
            p = self._send_json(f"update project {project_id}", "PATCH", f"/api/projects/{project_id}", settings)
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
                               {"project": project_id, "page_size": 1, "page": max(n, 1), "include": "id"})
        except LabelStudioFailed as e:
            if "HTTP 404" in e.message:
                return -1, None
            raise
        tasks = j.get("tasks") or []
        return int(j.get("total", -1)), (tasks[0]["id"] if tasks and n >= 1 else None)

    def annotated_tasks(self, project_id: int) -> Iterator[dict]:
        """Every task of the project that has annotations, with them (``fields=all``), page by page."""
        yield from self._pages(project_id, {"fields": "all", "only_annotated": "true"}, "list annotations")

    def _pages(self, project_id: int, params: dict, what: str) -> Iterator[dict]:
        page = 1
        while True:
            try:
                j = self._get_json(f"{what} of project {project_id}", "/api/tasks",
                                   {"project": project_id, "page_size": PAGE_SIZE, "page": page, **params})
            except LabelStudioFailed as e:
                if "HTTP 404" in e.message and page > 1:  # past the last page
                    return
                raise
            tasks = j["tasks"] if isinstance(j, dict) else j
            yield from tasks
            if len(tasks) < PAGE_SIZE:
                return
            page += 1

    def import_tasks(self, project_id: int, tasks: list[dict]) -> list[int]:
        """Import ``tasks`` (task data dicts) in one request; the new task ids.

        Not retried here: a request that timed out may have been committed, so the caller
        re-lists the project before trying again (see :func:`annotate.push.push`).
        """
        r = self.call(f"import {len(tasks)} task(s) into project {project_id}",
                      lambda: self.sdk.projects.import_tasks(id=project_id, request=[{"data": t} for t in tasks],
                                                             return_task_ids=True), retry=False)
        return list(r.task_ids or [])

    def users(self) -> dict[int, str]:
        """User id -> e-mail, for every user of the organisation."""
        return self.call("list users", lambda: {u.id: u.email for u in self.sdk.users.list()})

    def create_annotation(self, task_id: int, result: list[dict]) -> int:
        """Annotate a task as the key's user; the annotation id (used by tests and the bench)."""
        return self.call(f"annotate task {task_id}",
                         lambda: self.sdk.annotations.create(id=task_id, result=result).id, retry=False)

    def update_annotation(self, annotation_id: int, result: list[dict]) -> None:
        self.call(f"update annotation {annotation_id}",
                  lambda: self.sdk.annotations.update(id=annotation_id, result=result), retry=False)
