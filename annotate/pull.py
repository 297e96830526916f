"""``trb-annotate pull``: bring every Label Studio annotation into the corpus store.

Each annotation becomes an ``annotation`` record (role ``annotator``) written through
:func:`corpus.labels.add_annotations`, with the Label Studio project, task and annotation ids.
Its id is ``ls-<project>-<annotation>-r<revision>``. A re-pull adds nothing; an annotation
changed in Label Studio since it was pulled (its result differs from the latest revision
stored) becomes a new record with the next revision, dated by Label Studio's ``updated_at``;
the old one is kept.

Who annotated: the Label Studio user's e-mail is not stored (it is personal data and would
end up in releases). The annotator id is ``ls-`` followed by the first 12 hex digits of the
sha256 of the lower-cased e-mail (:func:`annotator_id`): stable across projects, servers and
re-pulls, and the same person on every server where they use the same e-mail.

What does not fit the labeling config (the server accepts anything) is skipped and counted:
a missing or unknown caused_by_self choice, an action outside the step's action space with
no written continuation, a task whose item is not in the corpus, a cancelled (skipped) task.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from tqdm import tqdm

from annotate.client import LabelStudioClient, Project
from annotate.tasks import ITEM_KEY, KINDS, item_targets
from corpus.errors import UsageError
from corpus.labels import add_annotations, make_annotation
from corpus.store import Corpus

__all__ = ["PullReport", "pull", "annotator_id", "parse_result", "ATTRIBUTION_LABELS"]

ATTRIBUTION_LABELS = ("self", "exogenous", "unsure")
_ENDORSED = {"endorsed": True, "not endorsed": False}


def annotator_id(email: str) -> str:
    """The corpus annotator id of a Label Studio user: ``ls-`` + sha256(lower-cased e-mail)[:12]."""
    return "ls-" + hashlib.sha256(email.strip().lower().encode()).hexdigest()[:12]


@dataclass
class PullReport:
    projects: list[str] = field(default_factory=list)
    seen: int = 0
    new: int = 0
    revised: int = 0
    unchanged: int = 0
    skipped: Counter = field(default_factory=Counter)

    def summary(self) -> str:
        skipped = sum(self.skipped.values())
        why = f" ({', '.join(f'{n} {k}' for k, n in sorted(self.skipped.items()))})" if skipped else ""
        return (f"pulled {', '.join(self.projects) or 'no project'}: {self.seen} annotation(s) seen, {self.new} new, "
                f"{self.revised} new revision(s), {self.unchanged} unchanged, {skipped} skipped{why}")


def _first(result: list[dict], name: str, key: str):
    for r in result or []:
        if r.get("from_name") == name:
            vals = (r.get("value") or {}).get(key) or []
            if vals:
                return vals[0]
    return None


def parse_result(kind: str, result: list[dict], action_space: list[str] | None) -> tuple[dict | None, str | None]:
    """(annotation value, None) from a Label Studio result, or (None, why it does not fit the config)."""
    if kind == "attribution":
        label = _first(result, "caused_by_self", "choices")
        if label not in ATTRIBUTION_LABELS:
            return None, "without a valid caused_by_self choice"
        value = {"type": "attribution", "label": label}
        endorsed = _first(result, "endorsed", "choices")
        if endorsed in _ENDORSED:
            value["endorsed"] = _ENDORSED[endorsed]
        rationale = _first(result, "rationale", "text")
        if isinstance(rationale, str) and rationale.strip():
            value["rationale"] = rationale.strip()
        return value, None
    action = _first(result, "action", "choices")
    if action is not None and action_space and action in action_space:
        return {"type": "action", "action": action}, None
    text = _first(result, "continuation", "text")
    if isinstance(text, str) and text.strip():
        return {"type": "continuation", "text": text.strip()}, None
    return None, "without an action from the step's space or a continuation"


def _key(value: dict) -> tuple:
    return (value["type"], value.get("label"), value.get("endorsed"), value.get("rationale"), value.get("action"),
            value.get("text"))


def _stored(con, project_id: int) -> dict[int, tuple[int, tuple]]:
    """Label Studio annotation id -> (latest revision stored, its value key)."""
    rows = con.execute("""
        SELECT ls_annotation_id, revision, value_type, label, endorsed, rationale, action, text
        FROM store.annotations WHERE ls_project_id = ? AND role = 'annotator'
        QUALIFY row_number() OVER (PARTITION BY ls_annotation_id ORDER BY revision DESC) = 1""",
                       [project_id]).fetchall()
    return {r[0]: (r[1], tuple(r[2:])) for r in rows}


def _projects(client: LabelStudioClient, title: str | None) -> list[Project]:
    if title:
        p = client.project(title)
        if p.kind not in KINDS:
            raise UsageError(f"project {title!r} was not made by trb-annotate push (its description does not say "
                             "its kind); nothing to pull")
        return [p]
    return [p for p in client.projects() if p.kind in KINDS]


def pull(
    corpus: Corpus,
    client: LabelStudioClient,
    *,
    title: str | None = None,
    progress: bool = False,
    wait_seconds: float | None = None,
) -> PullReport:
    """Pull the annotations of project ``title`` (default: every project made by push) into ``corpus``.

    All or nothing per pull: the records are written in one ingest. Raises the
    :mod:`annotate.errors` types, ProjectNotFound for an unknown title, and what
    :func:`corpus.labels.add_annotations` raises.
    """
    report = PullReport()
    projects = _projects(client, title)
    users = client.users() if projects else {}
    records: list[dict] = []
    with corpus.open(write=False, wait_seconds=wait_seconds, purpose="trb-annotate pull") as con:
        targets = {k: item_targets(con, k) for k in {p.kind for p in projects}}
        stored = {p.id: _stored(con, p.id) for p in projects}
    for p in projects:
        report.projects.append(f"{p.title!r} (id {p.id})")
        spec = KINDS[p.kind]
        bar = tqdm(unit="task", desc=f"pull {p.title}", disable=None if progress else True, leave=False)
        try:
            for task in client.annotated_tasks(p.id):
                bar.update(1)
                records += _task_records(task, p, spec.target_kind, targets[p.kind], users, stored[p.id], report)
        finally:
            bar.close()
    if records:
        add_annotations(corpus, records, wait_seconds=wait_seconds)
    return report


def _task_records(task: dict, p: Project, target_kind: str, targets: dict, users: dict[int, str],
                  stored: dict[int, tuple[int, tuple]], report: PullReport) -> Iterable[dict]:
    anns = task.get("annotations") or []
    key = (task.get("data") or {}).get(ITEM_KEY)
    for ann in anns:
        report.seen += 1
        if ann.get("was_cancelled"):
            report.skipped["cancelled"] += 1
            continue
        if key not in targets:
            report.skipped["for items not in the corpus"] += 1
            continue
        target_id, space = targets[key]
        value, why = parse_result(p.kind, ann.get("result") or [], space)
        if value is None:
            report.skipped[why] += 1
            continue
        who = ann.get("completed_by")
        email = who.get("email") if isinstance(who, dict) else users.get(who)
        if not email:
            report.skipped["by unknown users"] += 1
            continue
        ls_id = int(ann["id"])
        prev = stored.get(ls_id)
        if prev is None:
            rev, created = 1, ann.get("created_at")
        elif prev[1] == _key(value):
            report.unchanged += 1
            continue
        else:
            rev, created = prev[0] + 1, ann.get("updated_at") or ann.get("created_at")
        stored[ls_id] = (rev, _key(value))
        if rev == 1:
            report.new += 1
        else:
            report.revised += 1
        yield make_annotation(
            target_kind=target_kind, target_id=target_id, annotator_id=annotator_id(email), value=value,
            created_at=created, revision=rev, annotation_id=f"ls-{p.id}-{ls_id}-r{rev}",
            label_studio={"project_id": p.id, "task_id": int(task["id"]), "annotation_id": ls_id})
