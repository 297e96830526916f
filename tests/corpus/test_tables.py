"""The normalised store holds records exactly: rows map back to each record's canonical form."""

from __future__ import annotations

import hashlib
import json

import duckdb
import orjson

from corpus.ingest import ingest
from corpus.records import parse_record
from corpus.store import Corpus
from corpus.tables import RECORD_TABLES, record_from_rows
from factories import small_corpus, write_jsonl
from tests_paths import EXAMPLE_7F3A


def _rows(con, sql, *args):
    cur = con.execute(sql, list(args))
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def test_every_record_round_trips_through_the_store(corpus_dir, tmp_path):
    from simworld import simulate

    recs = small_corpus() + [json.loads(x) for x in EXAMPLE_7F3A.read_text().splitlines() if x.strip()]
    recs += list(simulate(n_sessions=40, seed=11))
    f = write_jsonl(tmp_path / "all.jsonl", recs)
    ingest(Corpus(corpus_dir), [f], progress=False)
    con = duckdb.connect(str(corpus_dir / "corpus.duckdb"), read_only=True)
    checked = 0
    for rec in recs:
        parsed = parse_record(orjson.dumps(rec))
        table, key = RECORD_TABLES[rec["kind"]]
        (row,) = _rows(con, f"SELECT * FROM {table} WHERE {key} = ?", parsed.id)
        steps = _rows(con, "SELECT * FROM steps WHERE session_id = ? ORDER BY t", parsed.id) if rec["kind"] == "session" else None
        rebuilt = orjson.dumps(record_from_rows(rec["kind"], row, steps), option=orjson.OPT_SORT_KEYS)
        assert rebuilt == parsed.canonical, rec
        assert hashlib.sha256(rebuilt).hexdigest() == row["content_hash"]
        checked += 1
    con.close()
    assert checked == len(recs) and {r["kind"] for r in recs} == set(RECORD_TABLES)
