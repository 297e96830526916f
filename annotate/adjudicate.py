"""``trb-annotate adjudicate``: turn agreeing annotators into labels, disagreement into a review queue.

Attribution items (``caused_by_self``): over the latest revision of each annotator's label (labels on items
of example sessions, source kind ``illustrative``, are not votes: :func:`annotate.agreement.latest_labels`),
an item with at least ``min_votes`` labels is decided by one of two rules (:data:`RULES`):

- ``plurality-margin`` (the default): the most frequent label wins when it leads the runner-up
  by at least ``margin`` votes (default 1), however small its share: 2 of 4 votes against 1
  and 1 wins. Method ``plurality-margin-<margin>``;
- ``strict-majority``: a label wins only with more than half of the votes (3 of 5 wins, 2 of 4
  does not). Method ``strict-majority``.

A winner gets an ``adjudicator`` annotation with its label (annotator ``trb-annotate``, the
method named above; ``endorsed`` by the majority of the winning voters who said, omitted on a
tie). Ties and items without a winner go to the review queue (:func:`corpus.labels.enqueue_review`),
which the review TUI works through; an item a person already decided (a reviewer, or an
adjudicator other than this tool) is left alone. A re-run with the same votes writes nothing new: an
adjudication's id is derived from the item, the method and the votes (labels written before the
rule was named, method ``majority-margin-<margin>``, count as the same plurality-margin decision).

Counterfactuals (``continuation``) are not decided by vote: Φ(r') is the distribution of
the annotators' action choices with their count (:func:`phi_from_annotations`), which is what
releases use for a counterfactual whose record has no Φ, and pool with a record's counted Φ
(see :mod:`corpus.release`).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field

import orjson

from annotate.agreement import example_label_count, latest_labels
from corpus.errors import UsageError
from corpus.labels import QueueItem, add_annotations, decisions_sql, enqueue_review, make_annotation, now_iso
from corpus.release import ANNOTATED_PHI_SQL
from corpus.store import Corpus

__all__ = ["ADJUDICATOR", "RULES", "Decision", "AdjudicateReport", "decide", "decide_plurality_margin",
           "decide_strict_majority", "adjudicate", "phi_from_annotations"]

ADJUDICATOR = "trb-annotate"
RULES = ("plurality-margin", "strict-majority")


@dataclass(frozen=True)
class Decision:
    label: str | None  # the winning label, or None when the item goes to review
    margin: int  # top count minus runner-up count
    votes: dict[str, int]
    reason: str | None  # why it goes to review ("tie", "margin 1 < 2", "no strict majority: 2 of 4")


def _ranked(labels: dict[str, str]) -> tuple[list[tuple[str, int]], int, dict[str, int]]:
    votes = Counter(labels.values())
    ranked = sorted(votes.items(), key=lambda kv: (-kv[1], kv[0]))
    lead = ranked[0][1] - (ranked[1][1] if len(ranked) > 1 else 0)
    return ranked, lead, dict(sorted(votes.items()))


def decide_plurality_margin(labels: dict[str, str], margin: int) -> Decision:
    """Plurality with a margin over one item's labels (annotator -> label): the top label wins when it
    leads the runner-up by at least ``margin`` votes."""
    ranked, lead, votes = _ranked(labels)
    if lead == 0:
        return Decision(None, 0, votes, "tie")
    if lead < margin:
        return Decision(None, lead, votes, f"margin {lead} < {margin}")
    return Decision(ranked[0][0], lead, votes, None)


def decide_strict_majority(labels: dict[str, str]) -> Decision:
    """Strict majority over one item's labels: a label wins only with more than half of the votes."""
    ranked, lead, votes = _ranked(labels)
    top, n = ranked[0][1], len(labels)
    if lead == 0:
        return Decision(None, 0, votes, "tie")
    if 2 * top <= n:
        return Decision(None, lead, votes, f"no strict majority: {top} of {n}")
    return Decision(ranked[0][0], lead, votes, None)


def decide(labels: dict[str, str], rule: str = "plurality-margin", margin: int = 1) -> Decision:
    """One item's decision by ``rule`` (one of :data:`RULES`; ``margin`` is plurality-margin's)."""
    if rule == "plurality-margin":
        return decide_plurality_margin(labels, margin)
    if rule == "strict-majority":
        return decide_strict_majority(labels)
    raise UsageError(f"--rule must be one of {', '.join(RULES)}, not {rule!r}")


@dataclass
class AdjudicateReport:
    method: str
    adjudicated: int = 0  # new adjudicator labels written
    unchanged: int = 0  # already adjudicated with the same votes
    queued: int = 0  # newly put on the review queue
    already_queued: int = 0
    reviewed: int = 0  # decided by a reviewer already: left alone
    incomplete: int = 0  # fewer than min_votes labels
    phi_items: int = 0  # counterfactuals with Φ from annotators
    example_labels: int = 0  # labels on items of example sessions (source kind illustrative): no votes
    decisions: dict[str, Decision] = field(default_factory=dict)

    def summary(self) -> str:
        return (f"adjudicate ({self.method}): {self.adjudicated} item(s) adjudicated, {self.unchanged} unchanged, "
                f"{self.queued} queued for review ({self.already_queued} already queued), {self.reviewed} decided by "
                f"a reviewer, {self.incomplete} with too few labels; Φ(r') from annotators for {self.phi_items} "
                "counterfactual(s)" + (f"; {self.example_labels} example label(s) (source kind illustrative) are "
                                       "not votes" if self.example_labels else ""))


def _endorsed(con, target: str, annotators: list[str]) -> bool | None:
    rows = con.execute("""
        SELECT endorsed FROM store.annotations
        WHERE target_kind = 'attribution' AND target_id = ? AND role = 'annotator' AND value_type = 'attribution'
          AND annotator_id IN (SELECT unnest(?::VARCHAR[]))
        QUALIFY row_number() OVER (PARTITION BY annotator_id
                                   ORDER BY revision DESC, created_at DESC, annotation_id DESC) = 1""",
                       [target, annotators]).fetchall()
    said = Counter(r[0] for r in rows if r[0] is not None)
    if not said or said[True] == said[False]:
        return None
    return said[True] > said[False]


def phi_from_annotations(corpus: Corpus, *, wait_seconds: float | None = None) -> dict[str, dict]:
    """cf_id -> Φ(r') from its annotators' action choices: ``{"type": "distribution", "probs", "n"}``."""
    with corpus.open(write=False, wait_seconds=wait_seconds, purpose="trb-annotate phi") as con:
        rows = con.execute(ANNOTATED_PHI_SQL + " ORDER BY cf_id").fetchall()
    # not strict_json: the corpus store's own JSON column, written by the toolkit after ingest's strict read
    return {cf: {"type": t, "probs": orjson.loads(p), "n": n} for cf, t, p, n in rows}


def _adjudication_id(target: str, method: str, labels: dict[str, str]) -> str:
    return "adj-" + hashlib.sha256(orjson.dumps([target, method, sorted(labels.items())])).hexdigest()[:20]


def adjudicate(corpus: Corpus, *, rule: str = "plurality-margin", margin: int | None = None, min_votes: int = 3,
               wait_seconds: float | None = None) -> AdjudicateReport:
    """Adjudicate every attribution item with labels by ``rule`` (see the module docstring).

    ``margin`` belongs to plurality-margin (default 1); giving one with strict-majority is a UsageError.
    """
    if rule not in RULES:
        raise UsageError(f"--rule must be one of {', '.join(RULES)}, not {rule!r}")
    if rule == "strict-majority" and margin is not None:
        raise UsageError("--margin belongs to --rule plurality-margin, not strict-majority")
    margin = 1 if margin is None else margin
    if margin < 1:
        raise UsageError(f"--margin must be at least 1, not {margin}")
    if min_votes < 1:
        raise UsageError(f"--min-votes must be at least 1, not {min_votes}")
    method = f"plurality-margin-{margin}" if rule == "plurality-margin" else rule
    legacy = f"majority-margin-{margin}" if rule == "plurality-margin" else None  # its earlier name
    report = AdjudicateReport(method)
    records, queue = [], []
    now = now_iso()
    with corpus.open(write=False, wait_seconds=wait_seconds, purpose="trb-annotate adjudicate") as con:
        units = latest_labels(con, "attribution", "attribution", "label")  # example items' labels are no votes
        report.example_labels = example_label_count(con, "attribution", "attribution", "label")
        # decided by a person (corpus.labels' rule: a reviewer's "unsure" or a withdrawn label decides nothing)
        reviewed = {r[0] for r in con.execute(
            f"SELECT target_id FROM ({decisions_sql()}) WHERE role = 'reviewer' OR annotator_id <> ?",
            [ADJUDICATOR]).fetchall()}
        existing = {r[0] for r in con.execute(
            "SELECT annotation_id FROM store.annotations WHERE role = 'adjudicator' AND annotator_id = ?",
            [ADJUDICATOR]).fetchall()}
        for target, labels in units.items():
            if target in reviewed:
                report.reviewed += 1
                continue
            if len(labels) < min_votes:
                report.incomplete += 1
                continue
            d = decide(labels, rule, margin)
            report.decisions[target] = d
            if d.label is None:
                queue.append(QueueItem("attribution", target, d.reason, d.votes, dict(sorted(labels.items())),
                                       d.margin, now, f"trb-annotate adjudicate {method}"))
                continue
            ann_id = _adjudication_id(target, method, labels)
            if ann_id in existing or (legacy and _adjudication_id(target, legacy, labels) in existing):
                report.unchanged += 1
                continue
            value = {"type": "attribution", "label": d.label}
            endorsed = _endorsed(con, target, [a for a, v in labels.items() if v == d.label])
            if endorsed is not None:
                value["endorsed"] = endorsed
            records.append(make_annotation(target_kind="attribution", target_id=target, annotator_id=ADJUDICATOR,
                                           value=value, role="adjudicator", method=method, created_at=now,
                                           annotation_id=ann_id))
        report.phi_items = con.execute(f"SELECT count(*) FROM ({ANNOTATED_PHI_SQL})").fetchone()[0]
    if records:
        add_annotations(corpus, records, wait_seconds=wait_seconds)
        report.adjudicated = len(records)
    if queue:
        report.queued = enqueue_review(corpus, queue, wait_seconds=wait_seconds)
        report.already_queued = len(queue) - report.queued
    return report
