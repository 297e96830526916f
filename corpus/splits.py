"""Split assignment: by subject, deterministic for a salt, stable across releases.

A subject's split is fixed by ``u = int(sha256(f"{salt}:{subject_id}")[:16], 16) / 2**64``:
with the default fractions (``schemas.release_format.SPLIT_FRACTIONS``), ``train`` if u < 0.7,
``dev`` if u < 0.8, else ``eval``; other fractions (recorded in the manifest) cut
the same u at other edges.
Sessions of a declared transfer context go to ``transfer``. With a parent release,
every subject that had a session in the parent's ``eval`` or ``transfer`` split
keeps that split, so nothing once held out is ever trained on.
"""

from __future__ import annotations

import hashlib

import pyarrow as pa

from schemas.release_format import SPLIT_FRACTIONS

__all__ = ["DEFAULT_SALT", "HELD_OUT", "parse_fractions", "subject_split", "assign_subjects", "pinned_subjects"]

DEFAULT_SALT = "trb-split-v1"
HELD_OUT = ("eval", "transfer")


def parse_fractions(text: str) -> dict[str, float]:
    """``"train=0.7,dev=0.1,eval=0.2"`` as a dict; the shares must be >= 0 and sum to 1."""
    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.partition("=")
        name = name.strip()
        if name not in SPLIT_FRACTIONS:
            raise ValueError(f"unknown split {name!r} in split fractions (use {', '.join(SPLIT_FRACTIONS)})")
        try:
            out[name] = float(value)
        except ValueError:
            raise ValueError(f"split fraction {part!r} is not split=number") from None
        if not 0.0 <= out[name] <= 1.0:
            raise ValueError(f"split fraction {part!r} is outside [0, 1]")
    if abs(sum(out.values()) - 1.0) > 1e-9:
        raise ValueError(f"split fractions sum to {sum(out.values()):g}, not 1")
    return {k: out.get(k, 0.0) for k in SPLIT_FRACTIONS}


def subject_split(salt: str, subject_id: str, fractions: dict[str, float] = SPLIT_FRACTIONS) -> str:
    """The in-distribution split of ``subject_id`` under ``salt``."""
    u = int(hashlib.sha256(f"{salt}:{subject_id}".encode()).hexdigest()[:16], 16) / 2**64
    edge = 0.0
    last = None
    for split, share in fractions.items():
        if share <= 0:
            continue
        edge += share
        last = split
        if u < edge:
            return split
    return last or "train"


def assign_subjects(subjects: list[str], salt: str, pinned: dict[str, str] | None = None,
                    fractions: dict[str, float] = SPLIT_FRACTIONS) -> pa.Table:
    """``(subject_id, split)`` for every subject; ``pinned`` subjects keep their parent's held-out split."""
    pinned = pinned or {}
    splits = [pinned.get(s) or subject_split(salt, s, fractions) for s in subjects]
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
