"""``trb-annotate push``: put the corpus's items into a Label Studio project, each once.

The project is found by title (made, with its labeling config, when missing). Items already
in it are found by the ``trb_item_id`` every task carries, so a re-run imports nothing twice
and a push cut off halfway completes the rest. Tasks go in batches; a batch whose request
failed in flight (it may have been committed) is re-checked against the project before it
is sent again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

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
    present = client.task_keys(project.id, ITEM_KEY) if not created else {}
    todo = [t for t in tasks if t[ITEM_KEY] not in present]
    report = PushReport(project, created, len(tasks), len(tasks) - len(todo), 0)
    bar = tqdm(total=len(todo), unit="task", desc="push", disable=None if progress else True, leave=False)
    try:
        for start in range(0, len(todo), batch_size):
            batch = todo[start:start + batch_size]
            for attempt in range(client.retries + 1):
                try:
                    report.task_ids += client.import_tasks(project.id, batch)
                    break
                except (LabelStudioUnreachable, LabelStudioFailed) as e:
                    if isinstance(e, LabelStudioFailed) and "HTTP 5" not in e.message or attempt == client.retries:
                        raise
                    client._sleep(client.backoff * 2 ** attempt)
                    present = client.task_keys(project.id, ITEM_KEY)  # the failed request may have gone in
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
