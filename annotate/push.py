"""``trb-annotate push``: put the corpus's items into a Label Studio project, each once.

The project is found by title (made, with its labeling config, when missing). Items already
in it are found by the ``trb_item_id`` every task carries, so a re-run imports nothing twice
and a push cut off halfway completes the rest. Tasks go in batches; a batch whose request
failed in flight (it may have been committed) is re-checked against the project before it
is sent again.

Listing a project's item ids costs the server about 0.5 ms a task, so push keeps a ledger of
what it imported: ``<corpus>/.trb-annotate/<server>-<project>.json`` (item keys, the task
count and the last task id; no key, no URL, only a hash of it). A re-push trusts the ledger
only when the server still has exactly that many tasks and that last task id (one small
request); otherwise (tasks added, deleted, or a push cut off mid-request) it lists the project.
The ledger is a cache: deleting it costs one listing, never a duplicate.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from annotate.client import LabelStudioClient, Project
from annotate.errors import LabelStudioFailed, LabelStudioUnreachable
from annotate.tasks import ITEM_KEY, KINDS, label_config, render_tasks
from corpus.errors import UsageError
from corpus.store import Corpus

__all__ = ["PushReport", "push", "ensure_project", "BATCH_SIZE"]

BATCH_SIZE = 500


@dataclass
class PushReport:
    project: Project
    created_project: bool
    items: int  # items selected in the corpus
    already: int  # of those, already in the project
    imported: int
    task_ids: list[int] = field(default_factory=list)

    def summary(self) -> str:
        made = "created" if self.created_project else "found"
        return (f"project {self.project.title!r} (id {self.project.id}, {made}): {self.items} item(s) selected, "
                f"{self.already} already there, {self.imported} imported")


def ensure_project(client: LabelStudioClient, kind: str, title: str | None = None,
                   overlap: int = 3) -> tuple[Project, bool]:
    """The project for ``kind`` titled ``title`` (default: the kind's title): found, or made. (project, created)."""
    spec = KINDS[kind]
    title = title or spec.default_title
    p = client.find_project(title)
    if p is not None:
        if p.kind is not None and p.kind != kind:
            raise UsageError(f"project {title!r} holds {p.kind} tasks, not {kind}; choose another --project")
        return p, False
    return client.create_project(title, kind, label_config(kind), overlap), True


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
) -> PushReport:
    """Import the items of ``kind`` (filtered by ``where``) that ``title``'s project lacks.

    ``on_batch(n_imported_so_far)`` is called after every batch (tests use it to cut a push off).
    Raises UsageError (bad kind, --where or overlap) and the :mod:`annotate.errors` types.
    """
    if kind not in KINDS:
        raise UsageError(f"--kind {kind!r} is not attribution or continuation")
    if overlap < 1:
        raise UsageError(f"--overlap must be at least 1, not {overlap}")
    with corpus.open(write=False, wait_seconds=wait_seconds, purpose="trb-annotate push") as con:
        tasks = render_tasks(con, kind, where)
    project, created = ensure_project(client, kind, title, overlap)
    ledger = _Ledger(corpus.dir, client.url, project.id)
    if created:
        ledger.reset([], 0, 0)
    elif not ledger.valid(client):
        present = client.task_keys(project.id, ITEM_KEY)
        total, last = client.nth_task(project.id, 1)
        if total > 0:
            total, last = client.nth_task(project.id, total)
        ledger.reset(list(present), max(total, 0), last or 0)
    present = ledger.keys
    todo = [t for t in tasks if t[ITEM_KEY] not in present]
    report = PushReport(project, created, len(tasks), len(tasks) - len(todo), 0)
    bar = tqdm(total=len(todo), unit="task", desc="push", disable=None if progress else True, leave=False)
    try:
        for start in range(0, len(todo), batch_size):
            batch = todo[start:start + batch_size]
            for attempt in range(client.retries + 1):
                try:
                    ids = client.import_tasks(project.id, batch)
                    report.task_ids += ids
                    ledger.add([t[ITEM_KEY] for t in batch], ids)
                    break
                except (LabelStudioUnreachable, LabelStudioFailed) as e:
                    refused = isinstance(e, LabelStudioFailed) and "HTTP 5" not in e.message
                    if refused or attempt == client.retries:
                        raise
                    client.pause(attempt)
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
