"""``trb-annotate push``: put the corpus's items into a Label Studio project, each once.

The project is found by title (made, with its labeling config, when missing). Items already
in it are found by the ``trb_item_id`` every task carries, so a re-run imports nothing twice
and a push cut off halfway completes the rest. Tasks go in batches; a batch whose request
failed in flight (it may have been committed) is re-checked against the project before it
is sent again.

Listing a project's item ids costs the server about 0.5 ms a task, so push keeps a ledger of
what it imported: ``<corpus>/.trb-annotate/<server>-<project>.json`` (item keys, the task
count and the last task id; no key, no URL, only a hash of the URL without its credentials). A re-push trusts the ledger
only when the server still has exactly that many tasks and that last task id (one small
request); otherwise (tasks added, deleted, or a push cut off mid-request) it lists the project.
The ledger is a cache: deleting it costs one listing, never a duplicate.

A project whose labelling config, instructions or settings are not this toolkit's (made by an
older version, or edited by hand) is not pushed to: :class:`ProjectOutdated` says what differs.
``push --update`` is the explicit step that brings it up to date in place: it sets the project's
fields, re-renders the data of every task already in it (the same items, now shown the current
way, with opaque keys), and appends what it changed to ``<corpus>/.trb-annotate/changes.jsonl``
(time, server hash, project, the fields changed with sha256 digests of old and new, tasks
re-rendered). Label Studio itself refuses a config that annotations already made do not fit.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from tqdm import tqdm

from annotate.client import PROJECT_SETTINGS, LabelStudioClient, Project
from annotate.errors import LabelStudioFailed, LabelStudioUnreachable
from annotate.tasks import (
    EXAMPLE_SOURCE_KINDS,
    ITEM_KEY,
    KINDS,
    example_items,
    item_targets,
    project_settings,
    render_tasks,
)
from corpus.errors import UsageError
from corpus.store import Corpus
from schemas.versions import TOOLKIT_VERSION

__all__ = ["PushReport", "push", "ensure_project", "outdated_fields", "ProjectOutdated", "BATCH_SIZE",
           "CHANGE_LOG"]

BATCH_SIZE = 500
#: Where push --update logs what it changed, under the corpus directory.
CHANGE_LOG = Path(".trb-annotate") / "changes.jsonl"


class ProjectOutdated(UsageError):
    """The project's config, instructions or settings are not this toolkit's; push --update updates them."""


@dataclass
class PushReport:
    project: Project
    created_project: bool
    items: int  # items selected in the corpus
    already: int  # of those, already in the project
    imported: int
    task_ids: list[int] = field(default_factory=list)
    updated_fields: list[str] = field(default_factory=list)  # push --update: the project fields changed
    rerendered: int = 0  # push --update: tasks whose data was re-rendered
    examples: int = 0  # items of example sessions in the corpus: never pushed (the instructions' examples)

    def summary(self) -> str:
        made = "created" if self.created_project else "found"
        updated = (f"; updated in place: {', '.join(self.updated_fields) or 'no field'} changed, "
                   f"{self.rerendered} task(s) re-rendered (logged in {CHANGE_LOG})"
                   if self.updated_fields or self.rerendered else "")
        examples = (f"; {self.examples} example item(s) never pushed (source kind "
                    f"{' or '.join(EXAMPLE_SOURCE_KINDS)}: the instructions' examples)" if self.examples else "")
        return (f"project {self.project.title!r} (id {self.project.id}, {made}): {self.items} item(s) selected, "
                f"{self.already} already there, {self.imported} imported{updated}{examples}")


def ensure_project(client: LabelStudioClient, kind: str, title: str | None = None,
                   overlap: int = 3) -> tuple[Project, bool]:
    """The project for ``kind`` titled ``title`` (default: the kind's title): found, or made. (project, created)."""
    spec = KINDS[kind]
    title = title or spec.default_title
    p = client.find_project(title)
    if p is not None:
        if p.kind is None:
            raise UsageError(f"project {title!r} was not made by trb-annotate (its labelling config does not say "
                             "its kind); choose another --project")
        if p.kind != kind:
            raise UsageError(f"project {title!r} holds {p.kind} tasks, not {kind}; choose another --project")
        return p, False
    return client.create_project(title, kind, project_settings(kind), overlap), True


def _norm(value):
    return "\n".join(line.rstrip() for line in value.strip().splitlines()) if isinstance(value, str) else value


def outdated_fields(project: Project) -> list[str]:
    """The project fields whose value on the server is not what this toolkit sets for the project's kind."""
    want = project_settings(project.kind)
    return [k for k in PROJECT_SETTINGS if _norm(project.settings.get(k)) != _norm(want[k])]


def push(
    corpus: Corpus,
    client: LabelStudioClient,
    kind: str,
    *,
    title: str | None = None,
    overlap: int = 3,
    where: str | None = None,
    batch_size: int = BATCH_SIZE,
    progress: bool = False,
    wait_seconds: float | None = None,
    on_batch: Callable[[int], None] | None = None,
    update: bool = False,
) -> PushReport:
    """Import the items of ``kind`` (filtered by ``where``) that ``title``'s project lacks.

    ``update``: first bring a project made by an older toolkit (or edited by hand) up to date in place
    (see the module docstring); without it such a project raises :class:`ProjectOutdated`.
    ``on_batch(n_imported_so_far)`` is called after every batch (tests use it to cut a push off).
    Raises UsageError (bad kind, --where or overlap) and the :mod:`annotate.errors` types.
    """
    if kind not in KINDS:
        raise UsageError(f"--kind {kind!r} is not attribution or continuation")
    if overlap < 1:
        raise UsageError(f"--overlap must be at least 1, not {overlap}")
    with corpus.open(write=False, wait_seconds=wait_seconds, purpose="trb-annotate push") as con:
        tasks = render_tasks(con, kind, where)
        targets = item_targets(con, kind)
        every = render_tasks(con, kind, examples=True) if update else tasks  # the tasks already there, as now
        examples = len(example_items(con, kind))
    project, created = ensure_project(client, kind, title, overlap)
    report = PushReport(project, created, len(tasks), 0, 0, examples=examples)
    ledger = _Ledger(corpus.dir, client.url, project.id)
    if not created:
        stale = outdated_fields(project)
        if update:
            _update(corpus, client, project, every, targets, stale, report, progress)
            ledger.invalidate()
        elif stale:
            raise ProjectOutdated(
                f"project {project.title!r} (id {project.id}) was made by another version of trb-annotate or edited "
                f"by hand: its {', '.join(stale)} differ(s) from this toolkit's. Nothing was pushed. Re-run with "
                f"--update to update it in place (its tasks are re-rendered; the change is logged in "
                f"{corpus.dir / CHANGE_LOG})")
    if created:
        ledger.reset([], 0, 0)
    elif not ledger.valid(client):
        present = client.task_keys(project.id, ITEM_KEY)
        total, last = client.nth_task(project.id, 1)
        if total > 0:
            total, last = client.nth_task(project.id, total)
        ledger.reset(list(present), max(total, 0), last or 0)
    present = {targets[k][0] for k in ledger.keys if k in targets}  # items, whichever key their task carries
    todo = [t for t in tasks if targets[t[ITEM_KEY]][0] not in present]
    report.already = len(tasks) - len(todo)
    bar = tqdm(total=len(todo), unit="task", desc="push", disable=None if progress else True, leave=False)
    try:
        for start in range(0, len(todo), batch_size):
            batch = todo[start:start + batch_size]
            # one deadline (TRB_LS_DEADLINE) for the batch's tries and the waits between them
            attempts = client.attempts(f"import {len(batch)} task(s) into project {project.id}",
                                       f"POST /api/projects/{project.id}/import")
            while True:
                try:
                    ids = client.import_tasks(project.id, batch, attempts=attempts)
                    report.task_ids += ids
                    ledger.add([t[ITEM_KEY] for t in batch], ids)
                    break
                except (LabelStudioUnreachable, LabelStudioFailed) as e:
                    refused = isinstance(e, LabelStudioFailed) and "HTTP 5" not in e.message
                    reason = "no answer" if isinstance(e, LabelStudioUnreachable) else "a server error"
                    if refused or not attempts.again(reason):
                        raise
                    present = client.task_keys(project.id, ITEM_KEY)  # the failed request may have gone in
                    ledger.invalidate()
                    batch = [t for t in batch if t[ITEM_KEY] not in present]
                    if not batch:
                        break
            report.imported += len(batch)
            bar.update(len(batch))
            if on_batch is not None:
                on_batch(report.imported)
    finally:
        bar.close()
    return report


def _update(corpus: Corpus, client: LabelStudioClient, project: Project, tasks: list[dict], targets: dict,
            stale: list[str], report: PushReport, progress: bool) -> None:
    """push --update: the project's fields, then the data of its tasks, then one line in the change log."""
    before = dict(project.settings)
    if stale:
        want = project_settings(project.kind)
        client.update_project(project.id, project.kind, {k: want[k] for k in stale})
    by_item = {targets[t[ITEM_KEY]][0]: t for t in tasks}
    changed = []
    for task_id, data in client.tasks_data(project.id):
        target = targets.get(str(data.get(ITEM_KEY)))
        new = by_item.get(target[0]) if target else None
        if new is not None and new != data:
            changed.append((task_id, new))
    bar = tqdm(total=len(changed), unit="task", desc="re-render", disable=None if progress else True, leave=False)
    try:
        for task_id, data in changed:
            client.update_task_data(task_id, data)
            report.rerendered += 1
            bar.update(1)
    finally:
        bar.close()
    report.updated_fields = list(stale)
    if not stale and not changed:
        return
    digest = lambda v: None if v is None else hashlib.sha256(json.dumps(v).encode()).hexdigest()[:16]  # noqa: E731
    entry = {"at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
             "server": hashlib.sha256(client.url.rstrip("/").encode()).hexdigest()[:12],
             "project_id": project.id, "title": project.title, "kind": project.kind,
             "toolkit": TOOLKIT_VERSION,
             "fields": {k: {"old": digest(before.get(k)), "new": digest(project_settings(project.kind)[k])}
                        for k in stale},
             "tasks_rerendered": report.rerendered}
    path = Path(corpus.dir) / CHANGE_LOG
    path.parent.mkdir(exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")


class _Ledger:
    """What push imported into one project (see the module docstring). Never trusted blindly."""

    def __init__(self, corpus_dir: Path, url: str, project_id: int):
        server = hashlib.sha256(url.rstrip("/").encode()).hexdigest()[:12]
        self.path = Path(corpus_dir) / ".trb-annotate" / f"{server}-{project_id}.json"
        self.project_id = project_id
        self.keys: set[str] = set()
        self.task_number = 0
        self.last_task_id = 0

    def valid(self, client: LabelStudioClient) -> bool:
        try:
            # not strict_json: push's own ledger, checked against the server before it is used
            d = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        n, last = int(d.get("task_number", -1)), d.get("last_task_id")
        if n < 1:
            return False
        total, at_n = client.nth_task(self.project_id, n)
        if total != n or at_n != last:
            return False
        self.keys, self.task_number, self.last_task_id = set(d.get("keys") or []), n, last
        return True

    def reset(self, keys: list[str], task_number: int, last_task_id: int) -> None:
        self.keys, self.task_number, self.last_task_id = set(keys), task_number, last_task_id
        self._write()

    def add(self, keys: list[str], task_ids: list[int]) -> None:
        self.keys.update(keys)
        self.task_number += len(task_ids)
        self.last_task_id = max([self.last_task_id, *task_ids])
        self._write()

    def invalidate(self) -> None:
        self.path.unlink(missing_ok=True)

    def _write(self) -> None:
        try:
            self.path.parent.mkdir(exist_ok=True)
            tmp = self.path.with_suffix(f".tmp-{os.getpid()}")
            tmp.write_text(json.dumps({"project_id": self.project_id, "task_number": self.task_number,
                                       "last_task_id": self.last_task_id, "keys": sorted(self.keys)}),
                           encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError:  # a read-only corpus directory: no ledger, the next push lists the project
            pass
