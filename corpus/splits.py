"""Split assignment: by subject, deterministic for a salt, stable across releases.

A subject's split is fixed by ``u = int(sha256(f"{salt}:{subject_id}")[:16], 16) / 2**64``
(the rule is part of the release format, :func:`schemas.release_format.subject_split`, so the
engine's release check recomputes every session's split from the manifest's salt and fractions):
with the default fractions (``schemas.release_format.SPLIT_FRACTIONS``), ``train`` if u < 0.7,
``dev`` if u < 0.8, else ``eval``; other fractions (recorded in the manifest) cut
the same u at other edges. :func:`subject_split` is the rule; :func:`split_sql` is the
same rule as a DuckDB expression, generated from the same constants and edges (the
review app's browser computes splits in SQL), and a test holds the two together.
Sessions of a declared transfer context go to ``transfer``. With a parent release,
every subject that had a session in the parent's ``eval`` or ``transfer`` split
keeps that split, so nothing once held out is ever trained on.
"""

from __future__ import annotations

import pyarrow as pa

from schemas.release_format import SPLIT_FRACTIONS, SPLIT_HASH_DIGITS, SPLIT_HASH_SCALE, split_edges, subject_split

_HEX_DIGITS, _SCALE, _edges = SPLIT_HASH_DIGITS, SPLIT_HASH_SCALE, split_edges


def _u_of_hex(hex_digits: str) -> float:
    """A subject's u from its hex digits (what :func:`subject_split` cuts at the edges)."""
    return int(hex_digits, 16) / _SCALE

__all__ = ["DEFAULT_SALT", "HELD_OUT", "parse_fractions", "subject_split", "split_sql", "assign_subjects",
           "pinned_subjects"]

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


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _sql_double(x: float) -> str:
    """``x`` as a DuckDB DOUBLE, exactly: its repr cast once (a bare ``0.7`` is read as a DECIMAL first)."""
    return f"CAST('{float(x)!r}' AS DOUBLE)"


def _u_sql_of_hex(hex_expr: str) -> str:
    return f"(('0x' || {hex_expr})::UBIGINT::DOUBLE / {_sql_double(_SCALE)})"


def _split_sql_of_u(u_expr: str, fractions: dict[str, float]) -> str:
    edges, past = _edges(fractions)
    if not edges:
        return _sql_str(past)
    whens = " ".join(f"WHEN {u_expr} < {_sql_double(edge)} THEN {_sql_str(split)}" for split, edge in edges)
    return f"CASE {whens} ELSE {_sql_str(past)} END"


def split_sql(salt_expr: str, subject_expr: str, fractions: dict[str, float] = SPLIT_FRACTIONS) -> str:
    """:func:`subject_split` as a DuckDB SQL expression over the SQL expressions ``salt_expr`` and ``subject_expr``.

    ``split_sql("'trb-split-v1'", "s.subject_id")`` is the split of each row's subject, as
    ``subject_split("trb-split-v1", subject_id)`` gives it (a NULL subject: the last split).
    """
    digest = f"sha256({salt_expr} || ':' || {subject_expr})"
    return _split_sql_of_u(_u_sql_of_hex(f"substr({digest}, 1, {_HEX_DIGITS})"), fractions)


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
