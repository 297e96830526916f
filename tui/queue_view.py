"""What fills the review queue: every undecided attribution item that needs a person, with the reason.

Headless (no ``textual``). An attribution item waits for a reviewer while it is undecided
(:func:`corpus.labels.decide`: no adjudicator label, no reviewer's self or exogenous) and
one of these holds, the first that applies being its reason:

- ``tie``: its annotators' latest labels tie (two or more annotators, the top labels level),
  or ``trb-annotate adjudicate`` queued it as a tie;
- ``disagreement``: ``trb-annotate adjudicate`` queued it for another reason (a margin too small);
- ``unsure``: someone's latest label on it is "unsure" (an annotator's, or a reviewer's
  pressed ``u``, in the queue or from the trace);
- ``unlabelled``: no one has labelled it (a reviewer's label withdrawn by an undo counts as none).

Each entry carries what the reviewer needs beside the votes: what the subject saw at the
step (the observation), their r_t (goal, planned next, caused by self, confidence), the
action and its outcome.

Items of example sessions (source kind ``illustrative``, such as the packaged 7f3a, which the annotators'
instructions cite) are never queued and their labels are no votes, as in ``trb-annotate agreement`` and
``adjudicate``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from annotate.tasks import example_items_sql
from corpus.browse import item_is_withdrawn_sql
from corpus.labels import QueueItem, decisions_sql, review_queue
from corpus.store import Corpus

__all__ = ["REASONS", "REASON_TEXT", "QueueEntry", "ReviewQueue", "review_items", "empty_reason"]

#: The reasons an item is on the queue, in the order they are listed.
REASONS = ("tie", "disagreement", "unsure", "unlabelled")
#: What each reason means, as the app says it.
REASON_TEXT = {
    "tie": "annotators' labels tie",
    "disagreement": "annotators disagree (queued by trb-annotate adjudicate)",
    "unsure": "someone's latest label is unsure",
    "unlabelled": "no one has labelled it",
}


@dataclass(frozen=True)
class QueueEntry:
    item_id: str
    reason: str  # one of REASONS
    why: str  # one line: the votes, who was unsure, or "no label yet"
    votes: dict[str, int]
    session_id: str
    t: int
    design_label: str
    observation: str | None
    r: dict[str, object] | None  # r_t's slots at the step (None: the step has no r_t)
    action: str | None
    outcome: str | None
    queued: QueueItem | None = None  # the row trb-annotate adjudicate queued, if it did


@dataclass(frozen=True)
class ReviewQueue:
    entries: list[QueueEntry]
    counts: dict[str, int]  # reason -> items
    n_items: int  # attribution items in the corpus
    n_decided: int
    n_other: int  # counterfactual items queued (decided in Label Studio)
    shown_limit: int | None = None
    totals: dict[str, int] = field(default_factory=dict)  # reason -> items before the limit
    n_examples: int = 0  # items of example sessions (source kind illustrative): never queued, their labels no votes

    def of(self, reason: str | None) -> list[QueueEntry]:
        return [e for e in self.entries if reason is None or e.reason == reason]


def _positions_sql() -> str:
    """Everyone's latest label per attribution item (annotators, adjudicators, reviewers), withdrawn ones left out."""
    return f"""
        SELECT target_id, annotator_id, role, label FROM (
            SELECT target_id, annotator_id, role, method, label, rationale FROM store.annotations
            WHERE target_kind = 'attribution' AND value_type = 'attribution'
            QUALIFY row_number() OVER (PARTITION BY target_id, annotator_id, role
                                       ORDER BY revision DESC, created_at::TIMESTAMPTZ DESC, annotation_id DESC) = 1)
        WHERE NOT ({item_is_withdrawn_sql()})"""


def _tied(votes: Counter) -> bool:
    top = votes.most_common(2)
    return sum(votes.values()) >= 2 and len(top) == 2 and top[0][1] == top[1][1]


def review_items(corpus: Corpus, *, limit: int | None = 2000, wait_seconds: float | None = None) -> ReviewQueue:
    """Every undecided attribution item that waits for a reviewer, by reason (:data:`REASONS`), then by when it
    was queued (queued items) or where it is (session, step). ``limit`` caps the entries listed per reason (the
    counts stay whole)."""
    queued_all = review_queue(corpus, wait_seconds=wait_seconds)
    queued = {q.target_id: q for q in queued_all if q.target_kind == "attribution"}
    n_other = len(queued_all) - len(queued)
    with corpus.open(write=False, wait_seconds=10 if wait_seconds is None else wait_seconds,
                     purpose="review queue") as con:
        examples = {r[0] for r in con.execute(example_items_sql("attribution")).fetchall()}
        items = [row for row in con.execute("SELECT item_id, session_id, t, design_label FROM store.attribution "
                                            "ORDER BY session_id, t, item_id").fetchall() if row[0] not in examples]
        decided = {r[0] for r in con.execute(f"SELECT target_id FROM ({decisions_sql()})").fetchall()}
        positions: dict[str, list[tuple[str, str, str]]] = {}
        for target, who, role, label in con.execute(_positions_sql()).fetchall():
            positions.setdefault(target, []).append((who, role, label))
        picked: list[tuple[str, str, str, dict[str, int]]] = []
        totals: Counter = Counter()
        for item_id, _session, _t, _design in items:
            if item_id in decided:
                continue
            mine = positions.get(item_id, [])
            votes = Counter(label for _, role, label in mine if role == "annotator" and label)
            q = queued.get(item_id)
            unsure = sorted(who for who, _, label in mine if label == "unsure")
            if (q is not None and q.reason == "tie") or _tied(votes):
                reason, why = "tie", " ".join(f"{k}:{v}" for k, v in sorted(votes.items(), key=lambda kv: (-kv[1], kv[0])))
            elif q is not None:
                reason, why = "disagreement", f"{q.reason}: " + " ".join(f"{k}:{v}" for k, v in sorted(q.votes.items()))
            elif unsure:
                reason, why = "unsure", "unsure: " + ", ".join(unsure)
            elif not mine:
                reason, why = "unlabelled", "no label yet"
            else:
                continue
            totals[reason] += 1
            if limit is None or totals[reason] <= limit:
                picked.append((item_id, reason, why, dict(votes)))
        ids = [p[0] for p in picked]
        ctx = {}
        if ids:
            for row in con.execute(
                    "SELECT a.item_id, a.session_id, a.t, a.design_label, st.observation, st.has_r, st.r_goal, "
                    "st.r_planned_next, st.r_caused_by_self, st.r_confidence, st.action, st.outcome "
                    "FROM store.attribution a LEFT JOIN store.steps st ON st.session_id = a.session_id AND st.t = a.t "
                    "WHERE a.item_id IN (SELECT unnest(?))", [ids]).fetchall():
                ctx[row[0]] = row[1:]
    entries = []
    for item_id, reason, why, votes in picked:
        session_id, t, design, obs, has_r, goal, planned, cbs, conf, action, outcome = ctx[item_id]
        r = ({"goal": goal, "planned_next": planned, "caused_by_self": cbs, "confidence": conf}
             if has_r else None)
        entries.append(QueueEntry(item_id, reason, why, votes, session_id, t, design, obs, r, action, outcome,
                                  queued.get(item_id)))
    order = {r: i for i, r in enumerate(REASONS)}
    qorder = {k: i for i, k in enumerate(queued)}  # queued items: oldest first, as the queue lists them
    entries.sort(key=lambda e: (order[e.reason], qorder.get(e.item_id, len(qorder))))  # stable: then by place
    return ReviewQueue(entries, {r: totals[r] for r in REASONS}, len(items), len(decided & {i[0] for i in items}),
                       n_other, limit, dict(totals), len(examples))


def empty_reason(queue: ReviewQueue, reason: str | None) -> str:
    """Why the queue (or its ``reason`` part) is empty, in one line. Items of example sessions (source kind
    illustrative: the annotators' instructions cite them) are never queued; the line says how many there are."""
    if queue.n_items == 0:
        what = ("has only example items (illustrative sessions), which are never queued" if queue.n_examples
                else "has no attribution items (ingest sessions with outcomes first)")
        return f"the queue is empty: this corpus {what}"
    if reason is not None and any(queue.counts.values()):
        others = ", ".join(f"{n} {r}" for r, n in queue.counts.items() if n)
        return f"no item here is {reason} ({REASON_TEXT[reason]}); other reasons hold {others}: f changes the filter"
    return (f"the queue is empty: all {queue.n_items} attribution item(s) are decided ({queue.n_decided}) or "
            "labelled by annotators who agree; none is unlabelled, unsure or tied")
