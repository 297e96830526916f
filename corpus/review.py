"""A reviewer's label, written so it is never lost: retried while another process holds the corpus.

Headless (the review TUI calls it from a worker thread). The label is one ``annotation``
record (role ``reviewer``, method ``reviewer``) written through
:func:`corpus.labels.add_annotations`, so it is validated and committed all or nothing.
Its id and time are fixed before the first attempt, so a retry after a failure writes
the same record (or finds it already stored: "unchanged").

A reviewer's labels on one item are revisions 1, 2, …: each new label is the next
revision (:func:`item_state` reads where the item stands and what the next revision is).
Before a label is written, :func:`label_effect` says what it will do to the item's
decision (:func:`corpus.labels.decide`): decide it, leave it undecided ("unsure"), or
replace a decision someone (or the reviewer) made, which the app confirms first. An undo
(:func:`undo_record`) is one more revision, method :data:`~corpus.labels.UNDO_METHOD`,
restoring the reviewer's previous revision, or withdrawing the reviewer's position when
the undone label was the first: nothing is deleted.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Callable
from dataclasses import dataclass

from corpus.errors import CorpusBusy
from corpus.labels import (
    DECIDING_REVIEWER_LABELS,
    UNDO_METHOD,
    WITHDRAWN_NOTE,
    Position,
    add_annotations,
    decide,
    make_annotation,
    now_iso,
)
from corpus.lock import LockWait
from corpus.store import Corpus
from toolkit.errors import ToolkitError

__all__ = ["ATTRIBUTION_LABELS", "SaveOutcome", "ItemState", "LabelEffect", "reviewer_id", "review_label",
           "item_state", "state_from_labels", "label_effect", "undo_record", "describe_position", "save_label"]

#: Keyboard labels of an attribution item.
ATTRIBUTION_LABELS = ("self", "exogenous", "unsure")
#: Seconds one attempt waits for the corpus lock, and attempts before giving up (about a minute in all).
ATTEMPT_WAIT_SECONDS = 2.0
MAX_ATTEMPTS = 30


def reviewer_id(explicit: str | None = None) -> str:
    """``--reviewer`` if given, else ``$TRB_REVIEWER``, else the OS user name."""
    if explicit:
        return explicit
    env = os.environ.get("TRB_REVIEWER")
    if env:
        return env
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (a bare container)
        return f"uid-{os.getuid()}"


def review_label(item_id: str, label: str, reviewer: str, *, note: str = "",
                 target_kind: str = "attribution", created_at: str | None = None, revision: int = 1,
                 method: str = "reviewer") -> dict:
    """The annotation record of a reviewer's label on an attribution item (note in ``value.rationale``).

    ``revision`` is the reviewer's revision on the item (:attr:`ItemState.next_revision`)."""
    if label not in ATTRIBUTION_LABELS:
        raise ValueError(f"label must be one of {', '.join(ATTRIBUTION_LABELS)}, not {label!r}")
    if revision < 1:
        raise ValueError(f"revision must be at least 1, not {revision}")
    value: dict = {"type": "attribution", "label": label}
    if note.strip():
        value["rationale"] = note.strip()
    return make_annotation(target_kind=target_kind, target_id=item_id, annotator_id=reviewer, value=value,
                           role="reviewer", method=method, created_at=created_at or now_iso(), revision=revision)


def describe_position(p: Position, reviewer: str | None = None) -> str:
    """``exogenous by trb-annotate (adjudicator, plurality-margin-1, rev 1, 2026-11-02 09:00:00Z)``."""
    who = "you" if p.annotator_id == reviewer and p.role == "reviewer" else p.annotator_id
    how = p.role if p.method in (None, "reviewer") else f"{p.role}, {p.method}"
    return f"{p.label} by {who} ({how}, rev {p.revision}, {short_time(p.created_at)})"


def short_time(created_at: str) -> str:
    """A record's time as the app shows it: to the second, UTC, ``2026-11-02 09:00:00Z``."""
    from datetime import datetime, timezone

    try:
        when = datetime.fromisoformat(created_at.replace("Z", "+00:00"))
    except ValueError:
        return created_at
    if when.tzinfo is None:
        return when.strftime("%Y-%m-%d %H:%M:%S")
    return when.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


@dataclass(frozen=True)
class ItemState:
    """Where one attribution item stands for one reviewer."""

    item_id: str
    reviewer: str
    labels: list  # every adjudicator and reviewer label on the item, oldest first (ItemLabel)
    decision: Position | None  # what stands now (None: undecided)

    @property
    def mine(self) -> list:
        """This reviewer's reviewer labels, by revision."""
        return sorted((lb for lb in self.labels if lb.role == "reviewer" and lb.annotator_id == self.reviewer),
                      key=lambda lb: (lb.revision, lb.created_at, lb.annotation_id))

    @property
    def next_revision(self) -> int:
        return max((lb.revision for lb in self.mine), default=0) + 1


def item_state(corpus: Corpus, item_id: str, reviewer: str, *, wait_seconds: float | None = None) -> ItemState | None:
    """The item's labels and decision, read from the corpus (None: it has no attribution item ``item_id``)."""
    from corpus.browse import item_labels, locate_item

    if locate_item(corpus, "attribution", item_id, wait_seconds=wait_seconds) is None:
        return None
    return state_from_labels(item_id, reviewer, item_labels(corpus, item_id, wait_seconds=wait_seconds))


def state_from_labels(item_id: str, reviewer: str, labels: list) -> ItemState:
    """The item's state from its labels as already read (:class:`corpus.browse.ItemLabel`, any role)."""
    labels = [lb for lb in labels if lb.role in ("adjudicator", "reviewer")]
    return ItemState(item_id, reviewer, labels, decide(labels))


@dataclass(frozen=True)
class LabelEffect:
    """What writing ``label`` (by ``state.reviewer``) does to the item's decision."""

    label: str
    revision: int
    before: Position | None
    after: Position | None
    needs_confirm: bool  # it replaces or withdraws a decision
    message: str  # one line: does it decide the item, and what it replaces


def label_effect(state: ItemState, label: str, *, method: str = "reviewer",
                 created_at: str | None = None) -> LabelEffect:
    """What a new label (written at ``created_at``, default now) would do to the item's decision.

    ``needs_confirm`` when a standing decision would end up with another outcome: another
    label, or none (the app asks before writing such a label)."""
    new = Position("(new)", state.reviewer, "reviewer", method, label, created_at or now_iso(), state.next_revision)
    before, after = state.decision, decide([*state.labels, new])
    rev = f"revision {new.revision}"

    def d(p: Position) -> str:
        return describe_position(p, state.reviewer)

    what = label
    if method == UNDO_METHOD:
        what = f"the undo (back to {label})" if label in DECIDING_REVIEWER_LABELS else "the undo (a withdrawal)"
    if after is not None and after.annotation_id == new.annotation_id:
        if before is None:
            msg = f"{what} decides the item ({rev}); a queued item leaves the review queue"
        elif before.label == label:
            msg = f"{what} decides the item ({rev}); it was already {d(before)}"
        else:
            msg = f"{what} decides the item ({rev}), replacing the decision {d(before)}"
    elif after is None and before is None:
        msg = (f"{what} does not decide the item ({rev}): it stays undecided (a queued item stays in the review "
               "queue; a release gives it its design label)")
    elif after is None:
        msg = f"{what} does not decide the item ({rev}); it withdraws the decision {d(before)}: the item becomes undecided"
    elif before is not None and before.annotation_id == after.annotation_id:
        msg = f"{what} does not decide the item ({rev}): the decision {d(after)} stands"
    else:
        msg = f"{what} does not decide the item ({rev}); it withdraws {d(before)}, so {d(after)} stands again"
    needs_confirm = before is not None and (after is None or after.label != before.label)
    return LabelEffect(label, new.revision, before, after, needs_confirm, msg)


def undo_record(state: ItemState, *, created_at: str | None = None) -> tuple[dict, LabelEffect]:
    """The record that undoes the reviewer's latest label on the item, and its effect.

    It is the next revision (method :data:`~corpus.labels.UNDO_METHOD`): it restores the
    label of the revision before the latest one, or, when the latest is the reviewer's
    first, withdraws the position ("unsure", which decides nothing). Raises LookupError
    when the reviewer has no label on the item.
    """
    mine = state.mine
    if not mine:
        raise LookupError(f"you ({state.reviewer}) have no label on {state.item_id} to undo")
    last = mine[-1]
    restore = mine[-2].label if len(mine) >= 2 else "unsure"
    # back to a revision that was itself a withdrawal: withdrawn again (the reviewer holds no label)
    back_to_none = len(mine) >= 2 and mine[-2].method == UNDO_METHOD and \
        (mine[-2].rationale or "").endswith(WITHDRAWN_NOTE)
    note = (f"undo of revision {last.revision} ({last.label}): back to revision {mine[-2].revision}"
            if len(mine) >= 2 else f"undo of revision {last.revision} ({last.label})")
    if len(mine) < 2 or back_to_none:
        note += WITHDRAWN_NOTE
    created_at = created_at or now_iso()
    effect = label_effect(state, restore, method=UNDO_METHOD, created_at=created_at)
    record = review_label(state.item_id, restore, state.reviewer, note=note, created_at=created_at,
                          revision=state.next_revision, method=UNDO_METHOD)
    return record, effect


@dataclass(frozen=True)
class SaveOutcome:
    saved: bool
    attempts: int
    message: str
    annotation_id: str


def save_label(
    corpus: Corpus,
    record: dict,
    *,
    on_state: Callable[[str], None] = lambda _msg: None,
    attempt_wait: float = ATTEMPT_WAIT_SECONDS,
    max_attempts: int = MAX_ATTEMPTS,
) -> SaveOutcome:
    """Write ``record``; while the corpus is busy, say so through ``on_state`` and try again.

    Returns whether it was saved, and a one-line message for the user either way.
    Never raises for a busy corpus or a refused record: the outcome says it was not saved.
    """
    target = record["target"]["id"]
    label = record["value"].get("label")
    attempt = 0

    def waiting(notice: LockWait) -> None:  # the lock says who holds the corpus when an attempt has to wait
        who = notice.holder.describe()
        on_state(f"waiting for the corpus, held by {who}; attempt {attempt}/{max_attempts}")

    for attempt in range(1, max_attempts + 1):
        try:
            add_annotations(corpus, [record], wait_seconds=attempt_wait, on_wait=waiting)
        except CorpusBusy:
            continue
        except ToolkitError as e:
            return SaveOutcome(False, attempt, f"NOT saved: {label} on {target}: {e.message}", record["annotation_id"])
        except Exception as e:  # noqa: BLE001 - whatever happened, the reviewer must hear it was not saved
            return SaveOutcome(False, attempt, f"NOT saved: {label} on {target}: {type(e).__name__}: {e}",
                               record["annotation_id"])
        return SaveOutcome(True, attempt, f"saved: {label} on {target} by {record['annotator_id']}, "
                           f"revision {record.get('revision', 1)}", record["annotation_id"])
    return SaveOutcome(False, max_attempts,
                       f"NOT saved: {label} on {target}: the corpus stayed busy for "
                       f"{max_attempts * attempt_wait:g} s; press the key again to retry", record["annotation_id"])
