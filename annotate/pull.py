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

Nothing an annotator typed is dropped silently. A note beside a chosen action (or typed into
the continuation box of a step with an action list) is kept as the label's ``rationale``. What
cannot be a label (the server accepts anything) is not taken, and every such submission is
listed by project, task and annotator with the reason (:attr:`PullReport.unusable`): an empty
submission, a note with no answer, no or an unknown caused_by_self choice, an action outside the
step's list, text written on a step with an action list but no action chosen, a task whose item
is not in the corpus, a submission the annotator skipped. ``trb-annotate status`` counts them the
same way (:func:`classify`).

Every row records where it came from: its Label Studio project, task and annotation ids, and
as its source the server, the project and the time of the pull (:func:`source_name`).

Incremental: a ledger per project, ``<corpus>/.trb-annotate/pull-<server>-<project>.json``, holds
what was read (per task, its annotation ids: taken, or [annotator, why not]) and a high-water
mark, the server's clock when the pull began less :data:`OVERLAP_SECONDS`. The next pull lists
only the tasks whose ``updated_at`` is at or after the mark (Label Studio moves it whenever an
annotation of the task is created, changed or deleted), reads them through Label Studio's own
export by task id, and checks the rest against the server in one request (the annotations it
counts in the tasks not changed since the mark must be those the ledger holds; otherwise every
task's count is compared and the ones that differ are read). An annotation deleted on the server
is reported (:attr:`PullReport.deleted`); its rows stay in the corpus, which never deletes a label.
No ledger, a foreign or unreadable one, or one naming annotations the corpus lacks: every task is
read. The ledger is written only once the pull's rows are in the corpus.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from tqdm import tqdm

from annotate.client import LabelStudioClient, Project
from annotate.tasks import ITEM_KEY, KINDS, item_targets
from corpus.errors import UsageError
from corpus.ingest import IngestReport
from corpus.labels import add_annotations, make_annotation, now_iso
from corpus.store import Corpus
from toolkit.urls import redact_url

__all__ = ["PullReport", "Unusable", "incomplete", "NO_ENDORSEMENT", "all_annotated_tasks", "pull", "annotator_id", "parse_result", "classify", "reason_category", "task_space", "who",
           "ATTRIBUTION_LABELS",
           "SKIPPED"]

ATTRIBUTION_LABELS = ("self", "exogenous", "unsure")
#: Seconds before the server's clock at a pull's start from which the next pull lists tasks again (an annotation
#: saved just before a listing may be committed just after it; Label Studio commits each save on its own).
OVERLAP_SECONDS = 10
#: Tasks per export request (their ids go in the query string; Django refuses more than 1,000 fields).
EXPORT_CHUNK = 500
#: Export requests under way at once during a pull.
EXPORTS_IN_FLIGHT = 2
LEDGER_VERSION = 1
#: Why a submission the annotator skipped (Label Studio's Skip) is not taken.
SKIPPED = "skipped by the annotator (Skip)"
_ENDORSED = {"endorsed": True, "not endorsed": False}
#: Why a label is incomplete: "the agent" without question 2 (Label Studio's UI requires it since config v3).
NO_ENDORSEMENT = "'the agent' without an answer to question 2 (endorsed?): stored without its endorsement"


def incomplete(value: dict) -> str | None:
    """Why a label that can be stored still lacks an answer to a question that applied (None: complete)."""
    if value.get("type") == "attribution" and value.get("label") == "self" and "endorsed" not in value:
        return NO_ENDORSEMENT
    return None


def annotator_id(email: str) -> str:
    """The corpus annotator id of a Label Studio user: ``ls-`` + sha256(lower-cased e-mail)[:12]."""
    return "ls-" + hashlib.sha256(email.strip().lower().encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Unusable:
    """A submission pull could not turn into a label: where it is, who made it, and why."""

    project: str  # the project's title
    project_id: int
    task_id: int
    annotation_id: int
    annotator: str  # the corpus annotator id, or "user <id>" when the user is unknown
    why: str

    def line(self) -> str:
        return (f"project {self.project!r} (id {self.project_id}), task {self.task_id}, annotation "
                f"{self.annotation_id}, annotator {self.annotator}: {self.why}")


@dataclass
class PullReport:
    projects: list[str] = field(default_factory=list)
    seen: int = 0
    new: int = 0
    revised: int = 0
    unchanged: int = 0
    skipped: Counter = field(default_factory=Counter)  # why -> how many submissions were not taken
    unusable: list[Unusable] = field(default_factory=list)  # every one of them, by task and annotator
    incomplete: list[Unusable] = field(default_factory=list)  # stored, but a question that applied is unanswered
    notes_kept: int = 0  # notes typed beside an answer (any project), stored by this pull as the rationale
    fetched: int = 0  # annotations read from the server by this pull (the rest are as the ledger has them)
    full: list[int] = field(default_factory=list)  # projects read in full (no usable ledger, or full=True)
    reconciled: list[int] = field(default_factory=list)  # projects whose ledger disagreed with the server's counts
    deleted: list[tuple[str, int, int, int]] = field(default_factory=list)  # (project, id, task, annotation) gone
    source: dict[int, str] = field(default_factory=dict)  # project id -> the source its rows record
    ingest: IngestReport | None = None  # the ingest that wrote the new rows (None when nothing was new)

    def summary(self) -> str:
        skipped = sum(self.skipped.values())
        why = f" ({', '.join(f'{n} {k}' for k, n in sorted(self.skipped.items()))})" if skipped else ""
        notes = f", {self.notes_kept} note(s) kept as rationale" if self.notes_kept else ""
        read = f"{self.fetched} read from the server" + (
            f", {len(self.full)} project(s) in full" if self.full else "") + (
            f", {len(self.reconciled)} project(s) re-checked task by task" if self.reconciled else "")
        gone = f", {len(self.deleted)} deleted on the server since pulled (kept)" if self.deleted else ""
        gone += f", {len(self.incomplete)} stored incomplete (listed below)" if self.incomplete else ""
        return (f"pulled {', '.join(self.projects) or 'no project'}: {self.seen} annotation(s) seen ({read}), "
                f"{self.new} new, {self.revised} new revision(s), {self.unchanged} unchanged{notes}{gone}, "
                f"{skipped} not taken{why}")

    def lines(self) -> list[str]:
        """The summary, then one line for every submission not taken (what to fix in Label Studio)."""
        out = [self.summary()]
        warning = self.ingest.cap_warning() if self.ingest is not None else None
        if warning:  # annotators' continuations are human-origin: say how far the corpus still is from the cap
            out.append(warning)
        if self.unusable:
            out.append("not taken (fix or delete them in Label Studio, then pull again):")
            out += [f"  {u.line()}" for u in self.unusable]
        if self.incomplete:
            out.append("stored, but incomplete (made through the API or a project older than labelling config v3, "
                       "whose UI did not require question 2; complete them in Label Studio, then pull again):")
            out += [f"  {u.line()}" for u in self.incomplete]
        if self.deleted:
            out.append("deleted in Label Studio since they were pulled (their rows stay in the corpus, which never "
                       "deletes a label; a reviewer's label can overrule them):")
            out += [f"  project {t!r} (id {p}), task {task}, annotation {a}" for t, p, task, a in self.deleted]
        return out


def _texts(result: list[dict], name: str) -> list[str]:
    """Every non-blank text of the TextArea ``name``, stripped."""
    out = []
    for r in result or []:
        if r.get("from_name") == name:
            for text in (r.get("value") or {}).get("text") or []:
                if isinstance(text, str) and text.strip():
                    out.append(text.strip())
    return out


def _first(result: list[dict], name: str, key: str):
    for r in result or []:
        if r.get("from_name") == name:
            vals = (r.get("value") or {}).get(key) or []
            if vals:
                return vals[0]
    return None


def parse_result(kind: str, result: list[dict], action_space: list[str] | None) -> tuple[dict | None, str | None]:
    """(annotation value, None) from a Label Studio result, or (None, why it cannot be a label).

    Nothing typed is dropped: a note (or continuation text) beside a chosen action is kept as the
    value's ``rationale``; text on a step with an action list and no action chosen is not a label
    (the annotator answered the wrong question) and is reported, never stored as a continuation.
    """
    if not result:
        return None, "empty submission (nothing answered)"
    if kind == "attribution":
        label = _first(result, "caused_by_self", "choices")
        if label is None:
            return None, "no answer to 'who caused this outcome?' (only other fields filled in)"
        if label not in ATTRIBUTION_LABELS:
            return None, f"unknown caused_by_self choice {label!r}"
        value = {"type": "attribution", "label": label}
        endorsed = _first(result, "endorsed", "choices")
        if endorsed in _ENDORSED:
            value["endorsed"] = _ENDORSED[endorsed]
        rationale = _texts(result, "rationale")
        if rationale:
            value["rationale"] = "\n".join(rationale)
        return value, None
    action = _first(result, "action", "choices")
    texts, notes = _texts(result, "continuation"), _texts(result, "note")
    if action_space:
        if action is None:
            if texts:
                return None, "text written on a step with an action list, but no action chosen"
            return None, "a note, but no action chosen" if notes else "empty submission (nothing answered)"
        if action not in action_space:
            return None, f"action {action!r} is not in the step's action list"
        value = {"type": "action", "action": action}
        if texts or notes:
            value["rationale"] = "\n".join(texts + notes)
        return value, None
    if action is not None:
        return None, f"action {action!r} chosen on an open-ended step (it has no action list)"
    if not texts:
        return None, "a note, but no continuation written" if notes else "empty submission (nothing answered)"
    value = {"type": "continuation", "text": "\n".join(texts)}
    if notes:
        value["rationale"] = "\n".join(notes)
    return value, None


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


def reason_category(why: str) -> str:
    """A reason without the values it quotes, for counting: "action 'x' is not ..." -> "action … is not ..."."""
    return re.sub(r"'[^']*'|\"[^\"]*\"", "…", why)


def task_space(task: dict) -> list[str] | None:
    """The action list a task showed (from its data), or None for an open-ended step."""
    options = (task.get("data") or {}).get("action_options") or []
    return [o["value"] if isinstance(o, dict) else str(o) for o in options] or None


def classify(kind: str, ann: dict, space: list[str] | None) -> tuple[dict | None, str | None]:
    """What one submission is: (value, None), or (None, why it is not taken). Pull and status share it."""
    if ann.get("was_cancelled"):
        return None, SKIPPED
    return parse_result(kind, ann.get("result") or [], space)


def who(ann: dict, users: dict[int, str]) -> tuple[str | None, str]:
    """(e-mail or None, the annotator as reports show them: the corpus id, or "user <id>" when unknown)."""
    c = ann.get("completed_by")
    email = c.get("email") if isinstance(c, dict) else users.get(c)
    if email:
        return email, annotator_id(email)
    return None, f"user {c.get('id') if isinstance(c, dict) else c}"


def source_name(client: LabelStudioClient, p: Project, at: str) -> str:
    """What the rows of one pull from project ``p`` record as their source."""
    # never a user:password or a ?token= from the URL (client.url is already shown so; redacted again for a client
    # made some other way)
    return f"label-studio {redact_url(client.url)} project {p.id} {p.title!r}, pull {at}"


class _Ledger:
    """What pull has read from one project (see the module docstring): per task, its annotations (id -> None when
    taken, else [annotator, why not taken]) and the time from which the next pull lists tasks again."""

    def __init__(self, corpus_dir: Path, url: str, project: Project):
        server = hashlib.sha256(url.rstrip("/").encode()).hexdigest()[:12]
        self.path = Path(corpus_dir) / ".trb-annotate" / f"pull-{server}-{project.id}.json"
        self.project = project
        self.since: datetime | None = None
        self.tasks: dict[int, dict[int, list | None]] = {}

    def load(self, stored: dict[int, tuple[int, tuple]]) -> str | None:
        """Read the ledger; None when it can be used, else why not (then the pull reads every task)."""
        try:
            # not strict_json: pull's own ledger, checked against the project before it is used
            d = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return "no ledger of an earlier pull"
        except (OSError, ValueError):
            return "the ledger of the last pull is unreadable"
        if d.get("version") != LEDGER_VERSION or d.get("project_created_at") != self.project.created_at:
            return "the ledger is of another project or format"
        tasks = {int(t): {int(a): v for a, v in anns.items()} for t, anns in (d.get("tasks") or {}).items()}
        if any(int(a) not in stored for anns in tasks.values() for a, v in anns.items() if v is None):
            return "the corpus lacks annotations the ledger says were pulled"
        self.tasks = tasks
        self.since = datetime.fromisoformat(d["since"]) if d.get("since") else None
        return None if self.since is not None else "no high-water mark"

    def counted(self, skip: set[int] = frozenset()) -> int:
        """Annotations the ledger holds outside tasks ``skip``, skipped ones (Label Studio's Skip) not counted."""
        return sum(1 for t, anns in self.tasks.items() if t not in skip for v in anns.values()
                   if v is None or v[1] != SKIPPED)

    def write(self, since: datetime) -> None:
        try:
            self.path.parent.mkdir(exist_ok=True)
            tmp = self.path.with_suffix(f".tmp-{os.getpid()}")
            tmp.write_text(json.dumps({
                "version": LEDGER_VERSION, "project_id": self.project.id, "project_created_at": self.project.created_at,
                "since": since.isoformat(),
                "tasks": {str(t): {str(a): v for a, v in anns.items()} for t, anns in self.tasks.items()}}),
                encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError:  # a read-only corpus directory: no ledger, the next pull reads every task
            pass


def _every_task(client: LabelStudioClient, p: Project, ledger: _Ledger | None) -> list[list[int]]:
    """The task ids a full pull exports, in chunks: the ids from the project's first task to its last (a project's
    tasks are mostly consecutive; the export skips ids that are not its own, or have no annotation), unless they
    are spread over more than twice as many ids as it has tasks: then its tasks, listed. Each task the ledger knew
    is among them (it was deleted, or emptied, when the export leaves it out)."""
    span = client.task_id_span(p.id)
    if span is None:
        ids = []
    elif span[1] - span[0] + 1 <= max(2 * p.task_number, EXPORT_CHUNK):
        ids = list(range(span[0], span[1] + 1))
    else:
        ids = [t for t, _, n in client.task_stamps(p.id) if n]
    if ledger is not None:
        known = set(ids)
        ids += [t for t in ledger.tasks if t not in known]
    return [ids[i:i + EXPORT_CHUNK] for i in range(0, len(ids), EXPORT_CHUNK)]


def _exported(client: LabelStudioClient, project_id: int, chunks: list[list[int]]) -> Iterator[tuple[list[int], list]]:
    """(chunk, its exported tasks) for every chunk, in order, with up to :data:`EXPORTS_IN_FLIGHT` exports under
    way while the caller reads one (the server prepares the next while this process parses)."""
    with ThreadPoolExecutor(max_workers=EXPORTS_IN_FLIGHT, thread_name_prefix="trb-pull") as ex:
        ahead = deque(ex.submit(client.export_tasks, project_id, c) for c in chunks[:EXPORTS_IN_FLIGHT])
        for i, chunk in enumerate(chunks):
            tasks = ahead.popleft().result()
            if i + EXPORTS_IN_FLIGHT < len(chunks):
                ahead.append(ex.submit(client.export_tasks, project_id, chunks[i + EXPORTS_IN_FLIGHT]))
            yield chunk, tasks


def all_annotated_tasks(client: LabelStudioClient, p: Project) -> Iterator[dict]:
    """Every task of project ``p`` that has annotations, with them, as Label Studio's export gives them (what a
    full pull reads; ``trb-annotate status`` reads the same)."""
    for _, tasks in _exported(client, p.id, _every_task(client, p, None)):
        yield from tasks


def pull(
    corpus: Corpus,
    client: LabelStudioClient,
    *,
    title: str | None = None,
    progress: bool = False,
    wait_seconds: float | None = None,
    full: bool = False,
    overlap_seconds: float = OVERLAP_SECONDS,
) -> PullReport:
    """Pull the annotations of project ``title`` (default: every project made by push) into ``corpus``.

    Incremental (see the module docstring): only the tasks changed since the last pull are read, unless
    ``full`` (every task is read; the ledger still tells what was deleted on the server since). The next pull
    lists the tasks changed from ``overlap_seconds`` before this one started (by the server's clock).
    All or nothing per pull: the records are written in one ingest; each row records its project
    and this pull as its source. Every submission not taken is listed in ``report.unusable``.
    Raises the :mod:`annotate.errors` types, ProjectNotFound for an unknown title, and what
    :func:`corpus.labels.add_annotations` raises.
    """
    report = PullReport()
    projects = _projects(client, title)
    users = client.users() if projects else {}
    at = now_iso()
    records: dict[str, list[dict]] = {}
    with corpus.open(write=False, wait_seconds=wait_seconds, purpose="trb-annotate pull") as con:
        targets = {k: item_targets(con, k) for k in {p.kind for p in projects}}
        stored = {p.id: _stored(con, p.id) for p in projects}
    ledgers = []
    for p in projects:
        report.projects.append(f"{p.title!r} (id {p.id})")
        spec = KINDS[p.kind]
        name = report.source[p.id] = source_name(client, p, at)
        ledger = _Ledger(corpus.dir, client.url, p)
        why_full = ledger.load(stored[p.id])
        # the next pull lists the tasks changed from a little before now (server clock): an annotation saved just
        # before this listing may commit just after it
        mark = client.server_time() - timedelta(seconds=overlap_seconds)
        since = None if full or why_full else ledger.since
        if since is None:
            report.full.append(p.id)
            chunks = _every_task(client, p, ledger)
        else:
            # checked against the server: the tasks not listed hold what the ledger says they hold. Counted before
            # the listing, so a task annotated in between is listed (and counted at its ledger's number): with
            # annotators at work the count lies between the ledger's for the tasks not listed and that plus the
            # ledger's for the tasks listed; a task deleted, or a ledger out of step, falls outside
            before = client.annotations_before(p.id, since)
            fetch = [t for t, _, _ in client.task_stamps(p.id, since)]
            listed = set(fetch)
            low = ledger.counted(listed)
            if not low <= before <= ledger.counted():
                report.reconciled.append(p.id)
                every = {t: n for t, _, n in client.task_stamps(p.id)}
                fetch += [t for t, n in every.items() if t not in listed and n != len(ledger.tasks.get(t, {}))]
                fetch += [t for t in ledger.tasks if t not in every and t not in listed]
            chunks = [fetch[i:i + EXPORT_CHUNK] for i in range(0, len(fetch), EXPORT_CHUNK)]
        listed_now = {t for c in chunks for t in c}
        bar = tqdm(total=len(listed_now), unit="task", desc=f"pull {p.title}", disable=None if progress else True,
                   leave=False)
        try:
            for chunk, tasks in _exported(client, p.id, chunks):
                got = {int(t["id"]): t for t in tasks}
                for tid in chunk:
                    task = got.get(tid) or {"id": tid, "annotations": []}
                    before = ledger.tasks.pop(tid, {})
                    now: dict[int, list | None] = {}
                    recs = list(_task_records(task, p, spec.target_kind, targets[p.kind], users, stored[p.id],
                                              report, now))
                    report.fetched += len(task.get("annotations") or [])
                    for aid in before.keys() - now.keys():
                        report.deleted.append((p.title, p.id, tid, aid))
                    if now:
                        ledger.tasks[tid] = now
                    if recs:
                        records.setdefault(name, []).extend(recs)
                bar.update(len(chunk))
        finally:
            bar.close()
        for tid, anns in ledger.tasks.items():  # what was not read again: as the last pull left it
            if tid in listed_now:
                continue
            for aid, v in anns.items():
                report.seen += 1
                if v is None:
                    report.unchanged += 1
                else:
                    report.skipped[reason_category(v[1])] += 1
                    report.unusable.append(Unusable(p.title, p.id, tid, aid, v[0], v[1]))
        ledgers.append((ledger, mark))
    if records:
        report.ingest = add_annotations(corpus, records, wait_seconds=wait_seconds)
    for ledger, mark in ledgers:  # only once the rows are in the corpus
        ledger.write(mark)
    return report


def _task_records(task: dict, p: Project, target_kind: str, targets: dict, users: dict[int, str],
                  stored: dict[int, tuple[int, tuple]], report: PullReport,
                  ledger: dict[int, list | None]) -> Iterable[dict]:
    anns = task.get("annotations") or []
    key = (task.get("data") or {}).get(ITEM_KEY)
    for ann in anns:
        report.seen += 1
        email, shown = who(ann, users)
        target = targets.get(key)
        value, why = classify(p.kind, ann, target[1] if target else None)
        if value is not None and target is None:
            value, why = None, "its item is not in this corpus"
        if value is not None and not email:
            value, why = None, "made by a user the server does not list"
        if value is None:
            report.skipped[reason_category(why)] += 1
            report.unusable.append(Unusable(p.title, p.id, int(task["id"]), int(ann.get("id") or 0), shown, why))
            ledger[int(ann.get("id") or 0)] = [shown, why]
            continue
        target_id = target[0]
        ls_id = int(ann["id"])
        if incomplete(value):
            report.incomplete.append(Unusable(p.title, p.id, int(task["id"]), ls_id, shown, incomplete(value)))
        ledger[ls_id] = None
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
        if value.get("rationale"):  # a note beside any answer (attribution or continuation) stored by this pull
            report.notes_kept += 1
        yield make_annotation(
            target_kind=target_kind, target_id=target_id, annotator_id=annotator_id(email), value=value,
            created_at=created, revision=rev, annotation_id=f"ls-{p.id}-{ls_id}-r{rev}",
            label_studio={"project_id": p.id, "task_id": int(task["id"]), "annotation_id": ls_id})
