"""Record schema 1.1 is additive: 1.0 records, stores and releases stay what they were; 1.1 fields are checked."""

from __future__ import annotations

import hashlib
import json

import duckdb
import jsonschema
import orjson
import pyarrow.parquet as pq
import pytest

import schemas
from corpus.errors import RecordConflict
from corpus.ingest import ingest
from corpus.records import parse_record
from corpus.release import cut_release
from corpus.stats import corpus_stats
from corpus.store import STORE_FORMAT_VERSION, Corpus
from corpus.tables import ADDED_COLUMNS
from corpus.verify import verify_release
from factories import mutated, session, small_corpus, write_jsonl
from schemas.release_format import ADDED_COLUMNS as RELEASE_ADDED
from schemas.versions import SCHEMA_VERSION
from tests_paths import EXAMPLE_7F3A
from trb.releases import Release

DATASET = {"name": "BIG-Bench Hard", "revision": "v1", "citation": "Suzgun et al. 2022", "item": "date/0"}


def _mcq_session(**changes) -> dict:
    rec = session("q1", n_steps=1)
    rec["schema_version"] = "1.1"
    rec["source"] = {"kind": "published_dataset", "collector": "curator", "licence": "MIT", "dataset": DATASET}
    rec["steps"][0].update(action="A", action_space=["A", "B", "C"], action_texts=["42", "17", "none of these"])
    for path, value in changes.items():
        rec = mutated(rec, path, value)
    return rec


def _problems(rec) -> list[tuple[str, str]]:
    parsed = parse_record(orjson.dumps(rec))
    return [] if not isinstance(parsed, list) else parsed


def test_the_version_is_1_1_and_1_0_records_keep_their_canonical_form():
    assert SCHEMA_VERSION == "1.1" and schemas.SCHEMA_VERSION == "1.1"
    for line in EXAMPLE_7F3A.read_text().splitlines():
        parsed = parse_record(line.encode())
        doc = json.loads(parsed.canonical)
        assert doc["schema_version"] == 1
        if doc["kind"] == "session":  # no 1.1 key appears in a 1.0 record's canonical form (so its hash stays)
            assert set(doc["source"]) == {"kind", "collector", "consent_ref", "licence"}
            assert all(set(s) == {"t", "observation", "r", "action", "action_space", "outcome"} for s in doc["steps"])


def test_a_1_1_record_validates_against_the_published_json_schema_and_the_models():
    rec = _mcq_session()
    jsonschema.Draft202012Validator(schemas.load_schema("session")).validate(rec)
    assert _problems(rec) == []
    assert "TRB record schema 1.1" in schemas.load_schema("session")["$comment"]


@pytest.mark.parametrize("changes, pointer, message", [
    ({"steps/0/action_texts": ["42", "17"]}, "/steps/0/action_texts", "2 action_texts for 3 actions"),
    ({"steps/0/action_space": None, "steps/0/action": "42"}, "/steps/0/action_texts", "needs an action_space"),
    ({"schema_version": 1}, "/source/kind", "new in record schema 1.1"),
    ({"source/licence": None}, "/source/licence", "must state the dataset's licence"),
    ({"source/dataset": None}, "/source/dataset", "must name its dataset"),
    ({"source/kind": "human_session"}, "/source/dataset", "only for source kind 'published_dataset'"),
])
def test_the_1_1_rules(changes, pointer, message):
    problems = _problems(_mcq_session(**changes))
    assert any(p == pointer and message in m for p, m in problems), problems


def test_action_texts_in_a_record_that_says_1_0_is_refused():
    rec = session("s1")
    rec["steps"][0]["action_texts"] = ["go up", "go down", "go left", "go right", "stay"]
    assert _problems(rec) == [("/steps/0/action_texts", 'action_texts is new in record schema 1.1: the record must '
                                                        'say "schema_version": "1.1"')]
    rec["schema_version"] = "1.1"
    assert _problems(rec) == []


def test_an_extension_slot_says_who_states_it_in_1_1_and_fast_and_reference_paths_agree():
    from corpus.fast_records import fast_path, parse_record_fast

    rec = session("s1")
    rec["r_extensions"] = {"hint": {"type": "string", "description": "What the user suggests.", "speaker": "user"}}
    # new in 1.1: a record that says 1.0 is refused, by the reference and the fast path alike
    assert _problems(rec) == [("/r_extensions/hint/speaker", "r_extensions.*.speaker is new in record schema 1.1: "
                                                            'the record must say "schema_version": "1.1"')]
    assert fast_path(orjson.dumps(rec)) is None
    rec["schema_version"] = "1.1"
    jsonschema.Draft202012Validator(schemas.load_schema("session")).validate(rec)
    ref, fast = parse_record(orjson.dumps(rec)), parse_record_fast(orjson.dumps(rec))
    assert fast.canonical == ref.canonical and b'"speaker":"user"' in ref.canonical
    # "agent", the default, is kept when written; an unknown speaker is refused; absent, the slot serialises as in 1.0
    rec["r_extensions"]["hint"]["speaker"] = "narrator"
    assert any(p == "/r_extensions/hint/speaker" for p, _ in _problems(rec))
    rec["r_extensions"]["hint"]["speaker"] = "agent"
    assert parse_record_fast(orjson.dumps(rec)).canonical == parse_record(orjson.dumps(rec)).canonical
    del rec["r_extensions"]["hint"]["speaker"]
    assert b"speaker" not in parse_record(orjson.dumps(rec)).canonical
    rec["r_extensions"]["hint"]["speaker"] = None  # an explicit null: left out of the canonical form, on both paths
    ref, fast = parse_record(orjson.dumps(rec)), parse_record_fast(orjson.dumps(rec))
    assert fast.canonical == ref.canonical and b"speaker" not in ref.canonical


def _downgrade_to_format_1(db) -> None:
    """Make the store what a toolkit before schema 1.1 wrote: no added columns, store format 1."""
    with duckdb.connect(str(db)) as con:
        for table, cols in ADDED_COLUMNS.items():
            for col, _ in cols:
                con.execute(f"ALTER TABLE {table} DROP COLUMN {col}")
        con.execute("UPDATE meta SET value = '1' WHERE key = 'store_format_version'")
        con.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")


def test_a_format_1_store_is_upgraded_on_open_and_its_records_are_unchanged(corpus_dir, tmp_path):
    f = write_jsonl(tmp_path / "old.jsonl", small_corpus())
    c = Corpus(corpus_dir)
    ingest(c, [f, EXAMPLE_7F3A], progress=False)
    _downgrade_to_format_1(corpus_dir / "corpus.duckdb")
    before = corpus_stats(c)  # a read: upgrades the store under the write lock first
    with duckdb.connect(str(corpus_dir / "corpus.duckdb"), read_only=True) as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'store_format_version'").fetchall() == \
            [(STORE_FORMAT_VERSION,)]
        hashes = dict(con.execute("SELECT session_id, content_hash FROM sessions").fetchall())
    report = ingest(c, [f, EXAMPLE_7F3A], progress=False)  # the same records: unchanged, not conflicts
    assert sum(report.new.values()) == 0 and sum(report.unchanged.values()) == before["records"]["session"] + \
        sum(v for k, v in before["records"].items() if k != "session")
    rec = parse_record(orjson.dumps(small_corpus()[1]))
    assert hashes[rec.id] == hashlib.sha256(rec.canonical).hexdigest()
    ingest(c, [write_jsonl(tmp_path / "new.jsonl", [_mcq_session()])], progress=False)  # 1.1 data now fits
    assert corpus_stats(c)["sessions_by_source_kind"]["published_dataset"] == 1


def test_a_release_without_the_added_columns_still_loads_and_verifies(corpus_dir, tmp_path):
    ingest(Corpus(corpus_dir), [write_jsonl(tmp_path / "s.jsonl", small_corpus())], progress=False)
    r = cut_release(Corpus(corpus_dir), "0.1.0", kind="smoke", progress=False)
    # rewrite it as a release cut before schema 1.1: no added columns, manifest schema_version 1
    manifest = json.loads((r.directory / "manifest.json").read_text())
    for config, cols in RELEASE_ADDED.items():
        for path in sorted((r.directory / "data" / config).glob("*.parquet")):
            pq.write_table(pq.read_table(path).drop_columns(list(cols)), path)
            entry = next(e for e in manifest["files"] if e["path"] == path.relative_to(r.directory).as_posix())
            entry["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
            entry["bytes"] = path.stat().st_size
    croissant = json.loads((r.directory / "croissant.json").read_text())
    shas = {e["path"]: e["sha256"] for e in manifest["files"]}
    for obj in croissant["distribution"]:
        if obj.get("contentUrl") in shas:
            obj["sha256"] = shas[obj["contentUrl"]]
    (r.directory / "croissant.json").write_text(json.dumps(croissant))
    entry = next(e for e in manifest["files"] if e["path"] == "croissant.json")
    entry["sha256"] = hashlib.sha256((r.directory / "croissant.json").read_bytes()).hexdigest()
    entry["bytes"] = (r.directory / "croissant.json").stat().st_size
    manifest["schema_version"] = 1
    manifest["format_version"] = 1  # cut before manifests bound their claims too (format 2's claims_sha256)
    del manifest["claims_sha256"]
    (r.directory / "manifest.json").write_text(json.dumps(manifest))
    assert verify_release(r.directory)["release_sha"] == r.manifest["release_sha"]  # null added columns: same SHA
    rel = Release(r.directory)
    try:
        sessions = list(rel.sessions())
        assert sessions and all(s.context(0).action_texts is None for s in sessions)
        assert all(step["action_texts"] is None for s in sessions for step in s.steps)
    finally:
        rel.close()


def _keyed_format_2(db) -> None:
    """Make the store what a toolkit before store format 3 wrote: each record table with its primary key."""
    from corpus.tables import RECORD_TABLES, TABLES

    with duckdb.connect(str(db)) as con:
        for table, key in RECORD_TABLES.values():
            cols = ", ".join(f"{c} {t}" for c, t in TABLES[table])
            con.execute(f"CREATE TABLE {table}_old AS SELECT * FROM {table}")
            con.execute(f"DROP TABLE {table}")
            con.execute(f"CREATE TABLE {table} ({cols}, PRIMARY KEY ({key}))")
            con.execute(f"INSERT INTO {table} SELECT * FROM {table}_old")
            con.execute(f"DROP TABLE {table}_old")
        con.execute("UPDATE meta SET value = '2' WHERE key = 'store_format_version'")


def _keys(db) -> list:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT table_name FROM duckdb_constraints() WHERE constraint_type = 'PRIMARY KEY' "
                           "AND table_name NOT IN ('meta', 'ingests')").fetchall()


def _all_rows(db) -> dict:
    from corpus.tables import TABLES

    with duckdb.connect(str(db), read_only=True) as con:
        return {t: sorted(map(repr, con.execute(f"SELECT * FROM {t}").fetchall())) for t in TABLES}


def test_a_keyed_format_2_store_is_copied_into_unkeyed_tables_on_open_and_nothing_changes(corpus_dir, tmp_path):
    # store format 3: no primary keys, whose indexes DuckDB must hold in memory (1M sessions ran the commit out of
    # TRB_DUCKDB_MEMORY); a store made before is rebuilt without them the first time it is opened
    db = corpus_dir / "corpus.duckdb"
    f = write_jsonl(tmp_path / "s.jsonl", small_corpus())
    c = Corpus(corpus_dir)
    ingest(c, [f, EXAMPLE_7F3A], progress=False)
    assert _keys(db) == []  # a new store has none
    rows = _all_rows(db)
    _keyed_format_2(db)
    assert len(_keys(db)) == 5 and _all_rows(db) == rows
    before = corpus_stats(c)  # a read: upgrades first, under the write lock
    assert _keys(db) == [] and _all_rows(db) == rows and corpus_stats(c) == before
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'store_format_version'").fetchall() == \
            [(STORE_FORMAT_VERSION,)] == [("3",)]
    # ids stay unique without the keys: the same records again are unchanged, a changed one is a conflict
    report = ingest(c, [f, EXAMPLE_7F3A], progress=False)
    assert sum(report.new.values()) == 0
    assert _all_rows(db) == rows
    changed = small_corpus()
    changed[1]["steps"][0]["observation"] += " (changed)"
    with pytest.raises(RecordConflict) as e:
        ingest(c, [write_jsonl(tmp_path / "changed.jsonl", changed)], progress=False)
    assert [(p.line, p.pointer) for p in e.value.problems] == [(2, "/session_id")]
    assert "is in the corpus with different content" in e.value.problems[0].message
    assert _all_rows(db) == rows
