"""Split assignment: by subject, deterministic for a salt, stable across releases.

A subject's split is fixed by ``u = int(sha256(f"{salt}:{subject_id}")[:16], 16) / 2**64``:
``train`` if u < 0.7, ``dev`` if u < 0.8, else ``eval`` (``corpus.layout.SPLIT_FRACTIONS``).
Sessions of a declared transfer context go to ``transfer``. With a parent release,
every subject that had a session in the parent's ``eval`` or ``transfer`` split
keeps that split, so nothing once held out is ever trained on.
"""

from __future__ import annotations

import hashlib

import pyarrow as pa

from corpus.layout import SPLIT_FRACTIONS

__all__ = ["DEFAULT_SALT", "HELD_OUT", "subject_split", "assign_subjects", "pinned_subjects"]

DEFAULT_SALT = "trb-split-v1"
HELD_OUT = ("eval", "transfer")


def subject_split(salt: str, subject_id: str) -> str:
    """The in-distribution split of ``subject_id`` under ``salt``."""
    u = int(hashlib.sha256(f"{salt}:{subject_id}".encode()).hexdigest()[:16], 16) / 2**64
    edge = 0.0
    for split, share in SPLIT_FRACTIONS.items():
        edge += share
        if u < edge:
            return split
    return list(SPLIT_FRACTIONS)[-1]


def assign_subjects(subjects: list[str], salt: str, pinned: dict[str, str] | None = None) -> pa.Table:
    """``(subject_id, split)`` for every subject; ``pinned`` subjects keep their parent's held-out split."""
    pinned = pinned or {}
    splits = [pinned.get(s) or subject_split(salt, s) for s in subjects]
    return pa.table({"subject_id": pa.array(subjects, pa.string()), "split": pa.array(splits, pa.string())})


def pinned_subjects(parent_sessions: pa.Table) -> dict[str, str]:
    """Subjects with a session in the parent's ``eval`` split: they stay in ``eval``.

    (Transfer sessions stay in ``transfer`` through their context; the split gate
    checks that every session held out in the parent is still held out.)
    """
    out: dict[str, str] = {}
    for subject, split in zip(parent_sessions.column("subject_id").to_pylist(), parent_sessions.column("split").to_pylist()):
        if split == "eval":
            out[subject] = "eval"
    return out
