"""``trb-annotate status``: per project, its tasks, annotations, completion and annotators."""

from __future__ import annotations

from dataclasses import dataclass

from annotate.client import LabelStudioClient
from annotate.pull import annotator_id
from annotate.tasks import KINDS

__all__ = ["ProjectStatus", "status"]


@dataclass
class ProjectStatus:
    project_id: int
    title: str
    kind: str
    overlap: int
    tasks: int
    annotations: int  # submitted, not skipped
    finished_tasks: int  # tasks with `overlap` annotations
    completion: float | None  # finished_tasks / tasks
    annotators: list[str]  # corpus annotator ids (see annotate.pull.annotator_id)


def status(client: LabelStudioClient, *, title: str | None = None) -> list[ProjectStatus]:
    """The status of project ``title``, or of every project made by ``trb-annotate push``."""
    projects = [client.project(title)] if title else [p for p in client.projects() if p.kind in KINDS]
    users = client.users() if projects else {}
    out = []
    for p in projects:
        who = set()
        n = finished = 0
        for task in client.annotated_tasks(p.id):
            done = [a for a in task.get("annotations") or [] if not a.get("was_cancelled")]
            n += len(done)
            finished += len(done) >= p.overlap
            for ann in done:
                c = ann.get("completed_by")
                email = c.get("email") if isinstance(c, dict) else users.get(c)
                if email:
                    who.add(annotator_id(email))
        out.append(ProjectStatus(p.id, p.title, p.kind or "?", p.overlap, p.task_number, n, finished,
                                 (finished / p.task_number) if p.task_number else None, sorted(who)))
    return out
