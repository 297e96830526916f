"""Split discipline by subject: what a checkpoint trained on, and the check that it is not what is evaluated.

Every checkpoint the toolkit trains records ``trained_on``: the training release's
SHA and split, the number of its subjects, a digest of their ids and one short hash
per subject (the ids themselves stay in the release). Adapters put it in their spec
(``spec()["trained_on"]``); a third-party adapter may declare the same dict for its
own training data. ``trb run`` refuses to score a split that shares a subject with
it: a model evaluated on people it was trained on measures memory, not governance
(spec §5, "no track may be optimized on the eval split").

A subject's hash is ``sha256("trb-subject:" + subject_id)`` cut to 16 hex digits
(64 bits: no collision to expect below billions of subjects).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

from trb.errors import UsageError

__all__ = ["subject_hash", "trained_on", "split_subject_hashes", "check_disjoint", "SplitOverlap"]


class SplitOverlap(UsageError):
    """The evaluated split shares subjects with the split the model was trained on."""


def subject_hash(subject_id: str) -> str:
    return hashlib.sha256(f"trb-subject:{subject_id}".encode()).hexdigest()[:16]


def _digest(hashes: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(sorted(hashes)).encode()).hexdigest()


def split_subject_hashes(release, split: str) -> set[str]:
    """The hashes of every subject with a session in ``split`` of ``release`` (an open :class:`Release`)."""
    rows = release.rows("SELECT DISTINCT subject_id FROM sessions WHERE split = ? AND subject_id IS NOT NULL", [split])
    return {subject_hash(r["subject_id"]) for r in rows}


def trained_on(release, split: str = "train") -> dict:
    """The ``trained_on`` record of a checkpoint trained on ``split`` of ``release``."""
    hashes = sorted(split_subject_hashes(release, split))
    return {"release_sha": release.sha, "release_version": release.version, "split": split,
            "n_subjects": len(hashes), "subjects_digest": _digest(hashes), "subject_hashes": hashes}


def check_disjoint(record: Mapping | None, release, split: str, who: str) -> dict:
    """Refuse to evaluate ``split`` of ``release`` with a model whose ``trained_on`` ``record`` shares a subject.

    Returns what was checked (``{"checked": bool, ...}``), for the run record. A model
    that declares nothing is not checked (and the record says so).

    Raises:
        SplitOverlap: a subject of ``split`` is among the training subjects; or the record
            is malformed (a declaration that cannot be checked is not a declaration).
    """
    if record is None:
        return {"checked": False, "reason": f"{who} declares no training subjects (spec key trained_on)"}
    hashes = record.get("subject_hashes") if isinstance(record, Mapping) else None
    if not isinstance(hashes, list) or not all(isinstance(h, str) for h in hashes):
        raise SplitOverlap(f"{who}: its trained_on declaration has no subject_hashes list; it cannot be checked "
                           "against the evaluated split")
    if record.get("subjects_digest") not in (None, _digest(hashes)):
        raise SplitOverlap(f"{who}: its trained_on subject_hashes do not match their subjects_digest")
    evaluated = split_subject_hashes(release, split)
    shared = evaluated & set(hashes)
    if shared:
        raise SplitOverlap(
            f"{who} was trained on {len(shared)} of the {len(evaluated)} subjects of split {split!r} of release "
            f"{release.version} ({release.sha[:12]}) (trained on split {record.get('split')!r} of release "
            f"{str(record.get('release_sha'))[:12]}); scoring a model on subjects it was trained on measures memory, "
            "not governance: evaluate on a split it did not train on")
    return {"checked": True, "n_training_subjects": len(hashes), "n_evaluated_subjects": len(evaluated),
            "training_release_sha": record.get("release_sha"), "training_split": record.get("split")}
