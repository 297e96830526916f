"""A reviewer's label, written so it is never lost: retried while another process holds the corpus.

Headless (the review TUI calls it from a worker thread). The label is one ``annotation``
record (role ``reviewer``, method ``reviewer``) written through
:func:`corpus.labels.add_annotations`, so it is validated and committed all or nothing.
Its id and time are fixed before the first attempt, so a retry after a failure writes
the same record (or finds it already stored: "unchanged").
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Callable
from dataclasses import dataclass

from corpus.errors import CorpusBusy, CorpusError
from corpus.labels import add_annotations, make_annotation, now_iso
from corpus.lock import LockWait
from corpus.store import Corpus

__all__ = ["ATTRIBUTION_LABELS", "SaveOutcome", "reviewer_id", "review_label", "save_label"]

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
                 target_kind: str = "attribution", created_at: str | None = None) -> dict:
    """The annotation record of a reviewer's decision on an attribution item (note in ``value.rationale``)."""
    if label not in ATTRIBUTION_LABELS:
        raise ValueError(f"label must be one of {', '.join(ATTRIBUTION_LABELS)}, not {label!r}")
    value: dict = {"type": "attribution", "label": label}
    if note.strip():
        value["rationale"] = note.strip()
    return make_annotation(target_kind=target_kind, target_id=item_id, annotator_id=reviewer, value=value,
                           role="reviewer", method="reviewer", created_at=created_at or now_iso())


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
        except CorpusError as e:
            return SaveOutcome(False, attempt, f"NOT saved: {label} on {target}: {e.message}", record["annotation_id"])
        except Exception as e:  # noqa: BLE001 - whatever happened, the reviewer must hear it was not saved
            return SaveOutcome(False, attempt, f"NOT saved: {label} on {target}: {type(e).__name__}: {e}",
                               record["annotation_id"])
        return SaveOutcome(True, attempt, f"saved: {label} on {target} by {record['annotator_id']}",
                           record["annotation_id"])
    return SaveOutcome(False, max_attempts,
                       f"NOT saved: {label} on {target}: the corpus stayed busy for "
                       f"{max_attempts * attempt_wait:g} s; press the key again to retry", record["annotation_id"])
