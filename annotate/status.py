"""``trb-annotate status``: per project, its tasks, annotations, completion and annotators.

The annotations are read as a full ``pull`` reads them, through Label Studio's own export (a few requests of
500 task ids, two in flight), not by listing every task with every Data Manager field (about 3 ms a task).

Submissions are counted the way ``pull`` takes them (:func:`annotate.pull.classify`): a label
is a submission pull would store; every other one (empty, a note with no answer, malformed,
skipped) is counted apart and listed by task and annotator, so status and pull agree.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from annotate.client import LabelStudioClient
from annotate.pull import Unusable, all_annotated_tasks, classify, incomplete, reason_category, task_space, who
from annotate.tasks import KINDS
from corpus.store import Corpus

__all__ = ["ProjectStatus", "status"]


@dataclass
class ProjectStatus:
    project_id: int
    title: str
    kind: str
    overlap: int
    tasks: int
    annotations: int  # submissions that are labels (what pull stores)
    finished_tasks: int  # tasks with `overlap` labels
    completion: float | None  # finished_tasks / tasks
    annotators: list[str]  # corpus annotator ids (see annotate.pull.annotator_id)
    not_taken: dict[str, int] = field(default_factory=dict)  # why -> submissions that are not labels
    unusable: list[Unusable] = field(default_factory=list)  # each of them, by task and annotator
    incomplete: list[Unusable] = field(default_factory=list)  # labels missing an answer that applied (see pull)
    pulled: int | None = None  # with a corpus: its annotations (latest revisions) pulled from this project


def status(client: LabelStudioClient, *, title: str | None = None, corpus: Corpus | None = None,
           wait_seconds: float | None = None) -> list[ProjectStatus]:
    """The status of project ``title``, or of every project made by ``trb-annotate push``; with ``corpus``, also
    how many of each project's annotations are in it (what ``pull`` has brought so far)."""
    projects = [client.project(title)] if title else [p for p in client.projects() if p.kind in KINDS]
    users = client.users() if projects else {}
    out = []
    for p in projects:
        annotators = set()
        n = finished = 0
        bad: list[Unusable] = []
        partial: list[Unusable] = []
        for task in all_annotated_tasks(client, p):
            space = task_space(task)
            labels = 0
            for ann in task.get("annotations") or []:
                email, shown = who(ann, users)
                value, why = classify(p.kind or "attribution", ann, space)
                if value is None:
                    bad.append(Unusable(p.title, p.id, int(task["id"]), int(ann.get("id") or 0), shown, why))
                    continue
                labels += 1
                if incomplete(value):
                    partial.append(Unusable(p.title, p.id, int(task["id"]), int(ann.get("id") or 0), shown,
                                            incomplete(value)))
                if email:
                    annotators.add(shown)
            n += labels
            finished += labels >= p.overlap
        out.append(ProjectStatus(p.id, p.title, p.kind or "?", p.overlap, p.task_number, n, finished,
                                 (finished / p.task_number) if p.task_number else None, sorted(annotators),
                                 dict(Counter(reason_category(u.why) for u in bad)), bad, partial))
    if corpus is not None and out:
        with corpus.open(write=False, wait_seconds=wait_seconds, purpose="trb-annotate status") as con:
            pulled = dict(con.execute(
                "SELECT ls_project_id, count(DISTINCT ls_annotation_id) FROM store.annotations "
                "WHERE role = 'annotator' AND ls_project_id IN (SELECT unnest(?::BIGINT[])) GROUP BY 1",
                [[r.project_id for r in out]]).fetchall())
        for r in out:
            r.pulled = int(pulled.get(r.project_id, 0))
    return out
