"""Labels written by people and tools after ingest: annotations, adjudications, the review queue.

Every label is an ``annotation`` record (schema v1) written through :func:`corpus.ingest`,
so it is validated, content-hashed, conflict-checked and committed all or nothing like
any other record; nothing here writes the annotations table directly.

The decision on an attribution item (:func:`decisions_sql`, :func:`decide`): each
adjudicator or reviewer holds one *position*, the latest revision of their label on the
item. A position decides the item when it is an adjudicator's (a vote rule's outcome,
"unsure" included: releases leave such an item unlabelled) or a reviewer's ``self`` or
``exogenous``; a reviewer's ``unsure`` decides nothing, and neither does a withdrawal (an
undo, method :data:`UNDO_METHOD`, written as a new revision, since nothing is ever
deleted). The item's decision is the most recent deciding position; without one the item
is undecided (releases give it its design label). ``trb-review``, ``trb-corpus stats``
and releases all read this one rule.

The review queue holds items whose annotators disagree too much for an automatic
decision (``trb-annotate adjudicate`` puts them there). An item leaves the queue when a
decision on it is recorded after it was queued (an "unsure" reviewer label leaves it
there; an undo of the decision puts it back). The queue is a plain table in the store
(``review_queue``), made on first use; releases ignore it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone

import orjson

from corpus.ingest import IngestReport, ingest_records
from corpus.lock import LockWait
from corpus.store import Corpus

__all__ = ["QueueItem", "Position", "DECIDING_REVIEWER_LABELS", "UNDO_METHOD", "WITHDRAWN_NOTE", "decide", "decisions_sql", "now_iso",
           "make_annotation", "add_annotations", "enqueue_review", "review_queue"]

#: A reviewer's labels that decide an attribution item; a reviewer's "unsure" leaves it undecided.
DECIDING_REVIEWER_LABELS = ("self", "exogenous")
#: How an undo's note ends when it withdraws the reviewer's label (the reviewer then holds none on the item).
WITHDRAWN_NOTE = ": withdrawn"
#: The method of a reviewer record that undoes the reviewer's previous revision (a withdrawal when it
#: restores no decision).
UNDO_METHOD = "reviewer-undo"

_QUEUE_DDL = """
CREATE TABLE IF NOT EXISTS store.review_queue (
    target_kind VARCHAR NOT NULL,      -- attribution | counterfactual
    target_id VARCHAR NOT NULL,
    reason VARCHAR NOT NULL,           -- e.g. "tie", "margin 1 < 2"
    votes VARCHAR NOT NULL,            -- JSON object: value -> count (latest revision per annotator)
    annotators VARCHAR NOT NULL,       -- JSON object: annotator_id -> value
    margin INTEGER NOT NULL,           -- top count minus runner-up count
    queued_at VARCHAR NOT NULL,        -- ISO 8601 UTC
    queued_by VARCHAR NOT NULL         -- the tool and method that queued it
)"""


@dataclass(frozen=True)
class Position:
    """One adjudicator's or reviewer's label on an item (any revision); :func:`decide` reads them."""

    annotation_id: str
    annotator_id: str
    role: str
    method: str | None
    label: str | None
    created_at: str
    revision: int

    @property
    def decides(self) -> bool:
        """Whether this label, as its author's latest revision, decides the item."""
        if self.role == "adjudicator":
            return True
        return self.role == "reviewer" and self.label in DECIDING_REVIEWER_LABELS


def _when(created_at: str) -> datetime:
    return datetime.fromisoformat(created_at.replace("Z", "+00:00"))


def decide(labels: Iterable) -> Position | None:
    """The decision on one item from its labels (any objects with :class:`Position`'s fields; annotator
    labels are ignored), or None when it is undecided. The same rule as :func:`decisions_sql`."""
    latest: dict[tuple[str, str], Position] = {}
    for lb in labels:
        if lb.role not in ("adjudicator", "reviewer"):
            continue
        p = Position(lb.annotation_id, lb.annotator_id, lb.role, lb.method, lb.label, lb.created_at, lb.revision)
        key = (p.annotator_id, p.role)
        cur = latest.get(key)
        if cur is None or (p.revision, _when(p.created_at), p.annotation_id) > \
                (cur.revision, _when(cur.created_at), cur.annotation_id):
            latest[key] = p
    deciding = [p for p in latest.values() if p.decides]
    if not deciding:
        return None
    return max(deciding, key=lambda p: (_when(p.created_at), p.revision, p.annotation_id))


def decisions_sql(schema: str = "store", *, where: str = "") -> str:
    """A query of every decided attribution item: ``target_id, annotation_id, annotator_id, role, method,
    label, created_at, revision`` (the deciding label; see the module docstring). One row per item.

    ``where``: an extra condition on the annotations read (e.g. ``target_id IN (…)``)."""
    extra = f" AND ({where})" if where else ""
    return f"""
        SELECT target_id, annotation_id, annotator_id, role, method, label, created_at, revision FROM (
            SELECT target_id, annotation_id, annotator_id, role, method, label, created_at, revision
            FROM {schema}.annotations
            WHERE target_kind = 'attribution' AND value_type = 'attribution' AND role IN ('adjudicator', 'reviewer'){extra}
            QUALIFY row_number() OVER (PARTITION BY target_id, annotator_id, role
                                       ORDER BY revision DESC, created_at::TIMESTAMPTZ DESC, annotation_id DESC) = 1)
        WHERE role = 'adjudicator' OR label IN ({", ".join(f"'{v}'" for v in DECIDING_REVIEWER_LABELS)})
        QUALIFY row_number() OVER (PARTITION BY target_id
                                   ORDER BY created_at::TIMESTAMPTZ DESC, revision DESC, annotation_id DESC) = 1"""


def now_iso() -> str:
    """The current UTC time as the schema's ``created_at`` form (milliseconds, ``Z``)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def make_annotation(
    *,
    target_kind: str,
    target_id: str,
    annotator_id: str,
    value: dict,
    role: str = "annotator",
    method: str | None = None,
    created_at: str | None = None,
    revision: int = 1,
    label_studio: dict | None = None,
    annotation_id: str | None = None,
) -> dict:
    """An annotation record (a dict in schema-v1 form; validated when written).

    Without ``annotation_id`` one is derived from target, annotator, role, time and
    revision, so the same call at the same time gives the same id.
    """
    created_at = created_at or now_iso()
    if annotation_id is None:
        digest = hashlib.sha256(
            f"{target_kind}\0{target_id}\0{annotator_id}\0{role}\0{created_at}\0{revision}".encode()
        ).hexdigest()[:16]
        annotation_id = f"ann-{role}-{digest}"
    rec = {
        "kind": "annotation",
        "schema_version": 1,
        "annotation_id": annotation_id,
        "target": {"kind": target_kind, "id": target_id},
        "annotator_id": annotator_id,
        "role": role,
        "value": value,
        "created_at": created_at,
        "revision": revision,
    }
    if method is not None:
        rec["method"] = method
    if label_studio is not None:
        rec["label_studio"] = label_studio
    return rec


def add_annotations(
    corpus: Corpus,
    records: Iterable[dict] | Mapping[str, Iterable[dict]],
    *,
    source: str | None = None,
    wait_seconds: float | None = None,
    on_wait: Callable[[LockWait], None] | None = None,
    progress: bool = False,
) -> IngestReport:
    """Write annotation records into the corpus, all or none (through :func:`corpus.ingest`, in one ingest).

    The store records where each row came from: ``source`` names the records (default
    ``<annotations>``); ``records`` may also map such names to their records (a pull from
    several Label Studio projects). Line numbers count within each source.

    Raises what ingest raises: InvalidInput (the records, located as ``<source>:N``),
    RecordConflict (an id already stored with other content), CorpusBusy.
    Re-adding identical records is a no-op ("unchanged").
    """
    batches = dict(records) if isinstance(records, Mapping) else {source or "<annotations>": records}
    return ingest_records(corpus, batches, progress=progress, wait_seconds=wait_seconds, on_wait=on_wait)


@dataclass(frozen=True)
class QueueItem:
    target_kind: str
    target_id: str
    reason: str
    votes: dict[str, int]
    annotators: dict[str, str]
    margin: int
    queued_at: str
    queued_by: str
    resolved: bool = field(default=False)


def _has_queue(con) -> bool:
    return bool(con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'store' AND table_name = 'review_queue'"
    ).fetchone()[0])


def enqueue_review(
    corpus: Corpus,
    items: Iterable[QueueItem],
    *,
    wait_seconds: float | None = None,
    on_wait: Callable[[LockWait], None] | None = None,
) -> int:
    """Put items on the review queue (one transaction). An item already pending is not queued twice.

    Returns how many were added.
    """
    items = list(items)
    with corpus.open(write=True, wait_seconds=wait_seconds, on_wait=on_wait,
                     purpose="review queue") as con:
        con.execute(_QUEUE_DDL)
        pending = {(q.target_kind, q.target_id) for q in _pending(con, include_resolved=False)}
        rows = [
            [q.target_kind, q.target_id, q.reason, orjson.dumps(q.votes, option=orjson.OPT_SORT_KEYS).decode(),
             orjson.dumps(q.annotators, option=orjson.OPT_SORT_KEYS).decode(), q.margin, q.queued_at, q.queued_by]
            for q in items if (q.target_kind, q.target_id) not in pending
        ]
        con.execute("BEGIN TRANSACTION")
        try:
            if rows:
                con.executemany("INSERT INTO store.review_queue VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    return len(rows)


def _pending(con, *, include_resolved: bool, target_kind: str | None = None) -> list[QueueItem]:
    if not _has_queue(con):
        return []
    where = [] if target_kind is None else [f"q.target_kind = '{target_kind}'"]
    # an attribution item is resolved by a decision (decisions_sql) made after it was queued; a
    # counterfactual item (decided in Label Studio) by any adjudicator or reviewer label after that
    sql = f"""
        WITH decided AS ({decisions_sql()})
        SELECT q.*, CASE WHEN q.target_kind = 'attribution' THEN EXISTS (
            SELECT 1 FROM decided d WHERE d.target_id = q.target_id
              AND d.created_at::TIMESTAMPTZ >= q.queued_at::TIMESTAMPTZ)
        ELSE EXISTS (
            SELECT 1 FROM store.annotations n
            WHERE n.target_kind = q.target_kind AND n.target_id = q.target_id
              AND n.role IN ('adjudicator', 'reviewer')
              AND n.created_at::TIMESTAMPTZ >= q.queued_at::TIMESTAMPTZ) END AS resolved
        FROM store.review_queue q
        {'WHERE ' + ' AND '.join(where) if where else ''}
        QUALIFY row_number() OVER (PARTITION BY q.target_kind, q.target_id ORDER BY q.queued_at DESC) = 1
        ORDER BY q.queued_at, q.target_kind, q.target_id"""
    out = []
    for kind, tid, reason, votes, annotators, margin, queued_at, queued_by, resolved in con.execute(sql).fetchall():
        if resolved and not include_resolved:
            continue
        # not strict_json: the corpus store's own JSON column, written by the toolkit after ingest's strict read
        out.append(QueueItem(kind, tid, reason, orjson.loads(votes), orjson.loads(annotators), margin,
                             queued_at, queued_by, bool(resolved)))
    return out


def review_queue(
    corpus: Corpus,
    *,
    include_resolved: bool = False,
    target_kind: str | None = None,
    wait_seconds: float | None = None,
) -> list[QueueItem]:
    """The items waiting for a reviewer, oldest first (with ``include_resolved``, decided ones too)."""
    if target_kind not in (None, "attribution", "counterfactual"):
        raise ValueError(f"target_kind must be attribution or counterfactual, not {target_kind!r}")
    with corpus.open(write=False, wait_seconds=wait_seconds, purpose="review queue") as con:
        return _pending(con, include_resolved=include_resolved, target_kind=target_kind)
