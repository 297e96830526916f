"""The split rule is one definition: split_sql (run in DuckDB) gives every subject the split subject_split gives it."""

from __future__ import annotations

import hashlib
import math
import random

import duckdb
import pyarrow as pa
import pytest

from corpus.splits import DEFAULT_SALT, _u_of_hex, _u_sql_of_hex, split_sql, subject_split
from schemas.release_format import SPLIT_FRACTIONS

_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789-_:'\" é漢🙂"

FRACTIONS = [
    dict(SPLIT_FRACTIONS),
    {"train": 0.1, "dev": 0.2, "eval": 0.7},  # 0.1 + 0.2 = 0.30000000000000004: a 17-digit edge
    {"train": 0.0, "dev": 0.5, "eval": 0.5},  # a split with no share is skipped
    {"train": 1.0, "dev": 0.0, "eval": 0.0},
    {"train": 0.0, "dev": 0.0, "eval": 1.0},
    {"train": 0.33, "dev": 0.33, "eval": 0.33},  # edges sum short of 1: u past them goes to the last split
    {"train": 0.0, "dev": 0.0, "eval": 0.0},  # no share at all: train, as subject_split says
]


def _subjects(rng: random.Random, n: int) -> list[str]:
    return ["".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 24))) for _ in range(n)]


@pytest.fixture(scope="module")
def con():
    c = duckdb.connect()
    yield c
    c.close()


def _sql_splits(con, pairs: list[tuple[str, str | None]], fractions: dict[str, float]) -> list[str]:
    con.register("t", pa.table({"i": pa.array(range(len(pairs)), pa.int32()),
                                "salt": pa.array([s for s, _ in pairs], pa.string()),
                                "subject_id": pa.array([x for _, x in pairs], pa.string())}))
    try:
        sql = f"SELECT {split_sql('t.salt', 't.subject_id', fractions)} FROM t ORDER BY i"
        return [r[0] for r in con.execute(sql).fetchall()]
    finally:
        con.unregister("t")


@pytest.mark.parametrize("fractions", FRACTIONS, ids=lambda f: ",".join(f"{k}={v:g}" for k, v in f.items()))
def test_sql_and_python_give_every_subject_the_same_split(con, fractions):
    rng = random.Random(20240611)
    salts = [DEFAULT_SALT, "", "o'brien", "salt:with:colons", "é"] + _subjects(rng, 5)
    pairs = [(rng.choice(salts), s) for s in _subjects(rng, 3000)]
    want = [subject_split(salt, subject, fractions) for salt, subject in pairs]
    assert _sql_splits(con, pairs, fractions) == want
    if fractions == SPLIT_FRACTIONS:
        assert set(want) == {"train", "dev", "eval"}


def test_a_subject_exactly_on_an_edge_falls_on_the_same_side_in_both(con):
    """Edges placed exactly at a subject's u (u < edge is false) and one float above it (true)."""
    rng = random.Random(7)
    for subject in _subjects(rng, 40):
        u = _u_of_hex(hashlib.sha256(f"{DEFAULT_SALT}:{subject}".encode()).hexdigest()[:16])
        for edge in (u, math.nextafter(u, 2.0), math.nextafter(u, -1.0)):
            fractions = {"train": edge, "dev": 1.0 - edge, "eval": 0.0}
            want = subject_split(DEFAULT_SALT, subject, fractions)
            assert want == ("train" if u < edge else "dev")
            assert _sql_splits(con, [(DEFAULT_SALT, subject)], fractions) == [want], (subject, u, edge)


@pytest.mark.parametrize("hex_digits", ["0000000000000000", "0000000000000001", "ffffffffffffffff", "8000000000000000",
                                        "001fffffffffffff", "0020000000000001", "0020000000000003", "b333333333333333",
                                        "cccccccccccccccc", "fffffffffffffbff", "fffffffffffffc00"])
def test_u_is_the_same_float_in_sql_and_python(con, hex_digits):
    """Rounding the 64-bit integer to a double: the same in DuckDB as in Python, halfway cases included."""
    assert con.execute(f"SELECT {_u_sql_of_hex(repr(hex_digits))}").fetchall()[0][0] == _u_of_hex(hex_digits)


def test_a_null_subject_gets_the_last_split_in_sql(con):
    assert _sql_splits(con, [(DEFAULT_SALT, None)], dict(SPLIT_FRACTIONS)) == ["eval"]
