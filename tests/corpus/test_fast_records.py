"""The ingest's fast path (msgspec) against the reference path (pydantic), independently.

On valid records both must give the same canonical form, hash, kind and id (and the store the same rows); on
invalid ones both must give the same problems, word for word. The fast path must also really be taken for the
ordinary valid records (else the first half would hold trivially).
"""

from __future__ import annotations

import json

import duckdb
import orjson
import pyarrow as pa
import pytest

from corpus.fast_records import fast_path, parse_record_fast
from corpus.ingest import validate
from corpus.records import ParsedRecord, parse_record
from corpus.store import Corpus
from corpus.tables import TABLES, ddl, expand
from factories import (
    DELETE,
    annotation,
    attribution,
    counterfactual,
    mutated,
    session,
    small_corpus,
    transfer_context,
    write_jsonl,
)
from tests_paths import EXAMPLE_7F3A

# ingests large or faulty inputs, several in worker processes (seconds per test)
pytestmark = pytest.mark.slow


def _examples() -> list[dict]:
    return [json.loads(x) for x in EXAMPLE_7F3A.read_text().splitlines() if x.strip()]


def _simulated(n: int = 40, seed: int = 5) -> list[dict]:
    from simworld import simulate

    return list(simulate(n_sessions=n, seed=seed))


def _edge_cases() -> list[dict]:
    """Hand-made valid records: unicode, absent and null optional fields, extension slots, every source kind,
    schema 1.1, every Φ and value type."""
    out = []
    s = session("u1")
    s["steps"][0]["observation"] = "Zürich → 東京 😀 \"quoted\" back\\slash tab\t nl\n nul\u0000 \u2028 \u007f é"
    s["steps"][0]["outcome"] = ""
    s["steps"][1]["r"] = None
    s["steps"][2]["r"] = {}
    s["steps"][2]["action_space"] = None
    s["steps"][2]["action"] = "free text: go where the ☀ is"
    out.append(s)
    s = session("u2", n_steps=2)
    s["r_extensions"] = {"mood": {"type": "string", "description": "how it feels"},
                         "temp": {"type": "number", "description": "°C"},
                         "ok": {"type": "boolean", "description": "fine?"}}
    s["steps"][0]["r"]["ext"] = {"mood": "Zürich 😀 \"q\" \\ \u0001", "temp": 3, "ok": True}
    s["steps"][1]["r"]["ext"] = {"temp": -2.5e-7, "mood": ""}
    s["steps"][1]["r"]["confidence"] = 1
    s["steps"][1]["r"]["caused_by_self"] = 0
    out.append(s)
    for kind in ("human_session", "model_rollout", "simulated", "illustrative"):
        out.append(session(f"k-{kind}", n_steps=1, source_kind=kind))
    s = session("k-pd", n_steps=2, source_kind="published_dataset")
    s["schema_version"] = "1.1"
    s["source"]["dataset"] = {"name": "BBH", "revision": "v1", "citation": "Suzgun et al. 2022", "item": "x/3"}
    s["steps"][0]["action_texts"] = ["a", "b", "c", "d", "e"]
    s["steps"][1]["action_texts"] = None
    out.append(s)
    s = session("tiny", n_steps=2)  # numbers DuckDB spells otherwise in a JSON column: staged as a document
    s["r_extensions"] = {"temp": {"type": "number", "description": "K"}}
    s["steps"][0]["r"]["ext"] = {"temp": 3e-6}
    s["steps"][1]["r"]["ext"] = {"temp": 1e-7}
    out.append(s)
    s = session("v11", n_steps=1)
    s["schema_version"] = "1.1"
    s["source"]["dataset"] = None
    out.append(s)
    s = session("v1", n_steps=1)
    s["schema_version"] = 1
    for k in ("consent_ref", "licence"):
        del s["source"][k]
    del s["steps"][0]["outcome"]
    del s["steps"][0]["action_space"]
    s["steps"][0]["action"] = "anything"
    out.append(s)
    s = session("explicit-nulls", n_steps=1)
    s["source"].update(consent_ref=None, licence=None)
    s["steps"][0].update(outcome=None, r={"goal": None, "planned_next": None, "caused_by_self": None,
                                          "confidence": None, "ext": None})
    s["r_extensions"] = {}
    out.append(s)
    c = counterfactual("c-text", origin="synthetic")
    c["phi"] = {"type": "text", "text": "then it goes left ←"}
    c["flags"] = {"adversarial": True}
    c["r_prime"] = {"caused_by_self": 1, "ext": {"x": "y", "n": 4, "b": False}}
    c["author"]["person_id"] = None
    out.append(c)
    c = counterfactual("c-null-phi")
    c["phi"] = None
    c["paired_session_id"] = None
    c["flags"] = {"adversarial": False, "ood": True}
    out.append(c)
    out.append(counterfactual("c-paired", origin="paired_session", probs={"up": 0.1, "down": 0.2, "left": 0.7}))
    c = counterfactual("c-seed", origin="synthetic")
    c["author"]["generator"]["seed"] = -(2**63)
    c["phi"]["probs"] = {"up": 1}
    c["phi"]["n"] = None
    out.append(c)
    a = attribution("at-1")
    a.update(endorsed=False, note="ñ note")
    out.append(a)
    out.append({**attribution("at-2"), "endorsed": None, "note": None, "schema_version": "1.1"})
    n = annotation("an-1")
    n["value"].update(endorsed=True, rationale="because ✓")
    n["label_studio"] = {"project_id": 1, "task_id": 2**62, "annotation_id": 0}
    out.append(n)
    n = annotation("an-2", "c-text")
    n.update(target={"kind": "counterfactual", "id": "c-text"}, role="adjudicator", method="majority",
             created_at="2026-01-02T03:04:05.123+01:00", revision=3)
    n["value"] = {"type": "continuation", "text": "it goes left", "rationale": None}
    out.append(n)
    n = annotation("an-3", "c-null-phi")
    n.update(target={"kind": "counterfactual", "id": "c-null-phi"}, role="reviewer", method="look")
    n["value"] = {"type": "action", "action": "up", "rationale": "r"}
    out.append(n)
    out.append(transfer_context("tc-1"))
    out.append({**transfer_context("tc-2"), "schema_version": 1})
    return out


def _valid() -> list[dict]:
    return small_corpus() + _examples() + _simulated() + _edge_cases()


def _same(line: bytes):
    """Both paths on ``line``: what the reference gives, after checking the fast path gives the same."""
    ref = parse_record(line)
    fast = parse_record_fast(line)
    if isinstance(ref, ParsedRecord):
        assert not isinstance(fast, list), (line, fast)
        assert (fast.kind, fast.id, fast.canonical, fast.sha256) == (ref.kind, ref.id, ref.canonical, ref.sha256), line
        assert fast.n_steps == (len(ref.model.steps) if ref.kind == "session" else 0)
    else:
        assert fast == ref, line
    return ref


def _spellings(rec: dict) -> list[bytes]:
    """The same record written several ways (compact, spaced, keys reversed, ASCII-escaped)."""
    def rev(node):
        if isinstance(node, dict):
            return {k: rev(node[k]) for k in reversed(list(node))}
        if isinstance(node, list):
            return [rev(v) for v in node]
        return node

    return [orjson.dumps(rec), json.dumps(rec, indent=None, separators=(" , ", " : ")).encode(),
            json.dumps(rev(rec), ensure_ascii=False).encode()]


def test_valid_records_have_the_same_canonical_form_and_hash_on_both_paths():
    recs = _valid()
    assert {r["kind"] for r in recs} == {"session", "counterfactual", "attribution", "annotation", "transfer_context"}
    taken = 0
    for rec in recs:
        for line in _spellings(rec):
            assert isinstance(_same(line), ParsedRecord), (line, parse_record(line))
            taken += fast_path(line) is not None
    # every valid record here is one the fast path takes itself (none needs the reference path)
    assert taken == 3 * len(recs)


def _left_to_the_reference_path() -> list[bytes]:
    """Valid lines the fast path leaves to the reference path."""
    s = session("big", n_steps=1)
    s["r_extensions"] = {"temp": {"type": "number", "description": "K"}}
    s["steps"][0]["r"]["ext"] = {"temp": 1.5e20}  # orjson writes 1.5e+20, msgspec 1.5e20
    c = counterfactual("c-esc")
    escaped = orjson.dumps(c).replace(b'"goal":"C3"', b'"goal":"C\\u003a3"')  # an escaped colon
    return [orjson.dumps(s), escaped]


def test_records_the_fast_path_leaves_to_the_reference_path_are_still_the_same():
    for line in _left_to_the_reference_path():
        assert fast_path(line) is None
        assert isinstance(_same(line), ParsedRecord)


def _walk(node, path=()):
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _walk(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, (*path, i))


_set, _DEL = mutated, DELETE
_WRONG = [None, "", "x", "bad id!", "C3\n", "٣", 0, -1, 1, 2, 1.5, -0.5, 2**31, 2**63, True, False, [], ["up"], {},
          {"x": 1}, "bogus", 1e300]


def _mutations(rec: dict):
    """Invalid (and some valid) variants of ``rec``: every value replaced by values of other types and ranges, every
    key removed, an unknown key in every object."""
    for path, value in _walk(rec):
        if path:
            yield _set(rec, path, _DEL)
            for w in _WRONG:
                if w != value or type(w) is not type(value):
                    yield _set(rec, path, w)
        if isinstance(value, dict):
            yield _set(rec, (*path, "zz_extra"), 1) if path else {**rec, "zz_extra": 1}


def _textual(line: bytes) -> list[bytes]:
    """Mutations only a JSON text can carry: non-finite numbers, a number a double holds as 0, a repeated key, broken
    JSON."""
    out = [line.replace(b'"kind"', b'"kind":"x","kind"', 1), line[:-1], line + b"x", b"[" + line + b"]", b"17",
           b'"s"', b"null"]
    for tok in (b"NaN", b"-Infinity", b"1e400", b"1" + b"0" * 400, b"1e-400", b"2.5e-320"):  # 2.5e-320: a double
        for key in (b'"confidence":', b'"t":', b'"caused_by_self":', b'"seed":', b'"temp":'):
            i = line.find(key)
            if i >= 0:
                j = i + len(key)
                k = j
                while k < len(line) and line[k:k + 1] not in (b",", b"}"):
                    k += 1
                out.append(line[:j] + tok + line[k:])
    for key in (b'"goal":', b'"up":', b'"observation":', b'"collector":', b'"mood":'):
        i = line.find(key)
        if i >= 0:
            out.append(line[:i] + key + b'"dup",' + line[i:])  # the same key twice in one object
    return out


def _bases() -> list[dict]:
    edge = _edge_cases()
    sim = _simulated(3, seed=2)
    return (small_corpus()[:4] + [small_corpus()[4], small_corpus()[5], small_corpus()[6], small_corpus()[8]]
            + edge + [r for r in sim if r["kind"] != "session"][:6] + [r for r in sim if r["kind"] == "session"][:1]
            + _examples()[:3])


def test_invalid_mutations_get_the_same_problems_on_both_paths():
    refused = accepted = 0
    for rec in _bases():
        for mutant in _mutations(rec):
            line = json.dumps(mutant, ensure_ascii=False).encode()
            out = _same(line)
            refused += isinstance(out, list)
            accepted += isinstance(out, ParsedRecord)
        for line in _textual(orjson.dumps(rec)):
            out = _same(line)
            refused += isinstance(out, list)
            accepted += isinstance(out, ParsedRecord)
    assert refused > 3000 and accepted > 100, (refused, accepted)


@pytest.mark.parametrize("mutation", [
    ("steps/1/t", 5), ("steps/0/action", "fly"), ("steps/0/action_space", ["up", "up"]),
    ("schema_version", "1.1"), ("source/kind", "published_dataset"),
])
def test_single_record_rules_refuse_alike(mutation):
    path, value = mutation
    s = session("r1")
    parts = [int(p) if p.isdigit() else p for p in path.split("/")]
    line = orjson.dumps(_set(s, parts, value))
    _same(line)


def test_rule_breaking_records_refuse_alike():
    cases = []
    c = counterfactual()
    c["author"] = {"person_id": "p", "generator": {"name": "g", "version": "1", "seed": 1}}
    cases.append(c)
    cases.append({**counterfactual(origin="synthetic"), "author": {"person_id": "p"}})
    cases.append({**counterfactual(), "author": {"generator": {"name": "g", "version": "1", "seed": 1}}})
    cases.append({**counterfactual(), "paired_session_id": "s2"})
    cases.append({**counterfactual(origin="paired_session"), "paired_session_id": None})
    cases.append(counterfactual(probs={"up": 0.5, "down": 0.4}))
    a = annotation()
    a["value"] = {"type": "action", "action": "up"}
    cases.append(a)
    cases.append({**annotation(), "method": "majority"})
    cases.append({**annotation(), "role": "adjudicator"})
    a = annotation()
    a["target"] = {"kind": "counterfactual", "id": "c"}
    cases.append(a)
    s = session("x", n_steps=1)
    s["steps"][0]["action_texts"] = ["a", "b", "c", "d", "e"]  # a 1.1 field in a 1.0 record
    cases.append(s)
    s = {**session("x", n_steps=1), "schema_version": "1.1"}
    s["steps"][0]["action_texts"] = ["a"]
    cases.append(s)
    s = {**session("x", n_steps=1), "schema_version": "1.1"}
    s["steps"][0].update(action_texts=["a"], action_space=None)
    cases.append(s)
    s = session("x", n_steps=1)
    s["source"]["dataset"] = None
    cases.append(s)
    s = session("x", n_steps=1)
    s["source"]["dataset"] = {"name": "a", "revision": "b", "citation": "c"}
    cases.append(s)
    s = {**session("x", n_steps=1, source_kind="published_dataset"), "schema_version": "1.1"}
    s["source"]["licence"] = "  "
    cases.append(s)
    s = session("x", n_steps=1)
    s["r_extensions"] = {"temp": {"type": "number", "description": "K"}}
    s["steps"][0]["r"]["ext"] = {"temp": "hot"}
    cases.append(s)
    s = session("x", n_steps=1)
    s["steps"][0]["r"]["ext"] = {"undeclared": 1}
    cases.append(s)
    s = session("x", n_steps=1)
    s["steps"][0].update(action_space=["\ufb01le", "file"], action="file")  # alike after NFKC
    cases.append(s)
    s = session("x", n_steps=1)
    s["r_extensions"] = {"Planned-Next": {"type": "string", "description": "named like a core slot"}}
    cases.append(s)
    for rec in cases:
        out = _same(orjson.dumps(rec))
        assert isinstance(out, list) and out, rec


def _reference_rows(con, lines: list[bytes], src_file: str) -> None:
    """Stage ``lines`` through the reference path as the ingest staged them before the fast path (canonical
    documents that DuckDB expands), into schema ``ref``."""
    con.execute("CREATE SCHEMA ref")
    for stmt in ddl("ref"):
        con.execute(stmt)
    parsed = [parse_record(x) for x in lines]
    raw = pa.table({"kind": [p.kind for p in parsed], "id": [p.id for p in parsed],
                    "content_hash": [p.sha256 for p in parsed], "src_file": [src_file] * len(parsed),
                    "src_line": pa.array(range(1, len(parsed) + 1), pa.int64()),
                    "doc": [p.canonical.decode() for p in parsed]})
    con.register("_raw", raw)
    expand(con, "ref", "_raw")
    con.unregister("_raw")


@pytest.mark.parametrize("block_bytes", [None, 600])
def test_the_store_rows_are_the_same_on_both_paths(corpus_dir, tmp_path, monkeypatch, block_bytes):
    import functools
    import importlib

    from corpus.ingest import ingest
    from corpus.jsonl import read_blocks

    if block_bytes:  # blocks of a line or two: many chunks of staged rows appended to each table's staged file
        monkeypatch.setattr(importlib.import_module("corpus.ingest"), "read_blocks",
                            functools.partial(read_blocks, block_bytes=block_bytes))

    recs = small_corpus() + _examples() + _simulated() + [
        r for r in _edge_cases() if r["kind"] in ("session", "attribution", "transfer_context")]
    recs.append(counterfactual("c-tiny", probs={"up": 0.999998, "down": 2e-6}))
    recs.append(counterfactual("c-three", probs={"up": 0.5, "down": 0.25, "wait": 0.25}))
    lines = [orjson.dumps(r) for r in recs] + _left_to_the_reference_path()
    f = write_jsonl(tmp_path / "in.jsonl", lines)
    report = ingest(Corpus(corpus_dir), [f], progress=False)
    assert sum(report.new.values()) == len(lines)
    con = duckdb.connect()
    con.execute(f"ATTACH '{corpus_dir / 'corpus.duckdb'}' AS store (READ_ONLY)")
    _reference_rows(con, lines, str(f))
    for table, cols in TABLES.items():
        names = ", ".join(c for c, _ in cols if c != "ingest_id")
        ref = con.execute(f"SELECT {names} FROM ref.{table} ORDER BY ALL").fetchall()
        stored = con.execute(f"SELECT {names} FROM store.{table} ORDER BY ALL").fetchall()
        assert stored == ref, table
        assert ref, table
    con.close()


def test_an_invalid_file_is_reported_as_the_reference_path_words_it(tmp_path):
    lines = []
    for rec in _bases()[:12]:
        lines += [json.dumps(m, ensure_ascii=False).encode() for m in list(_mutations(rec))[::7]]
        lines += _textual(orjson.dumps(rec))[::2]
    f = write_jsonl(tmp_path / "bad.jsonl", lines)
    from corpus.errors import InvalidInput

    with pytest.raises(InvalidInput) as e:
        validate([f], progress=False, max_problems=100_000)
    got = [(p.line, p.pointer, p.message) for p in e.value.problems]
    want = []
    for number, line in enumerate(lines, 1):
        ref = parse_record(line)
        if isinstance(ref, list):
            want += [(number, pointer, message) for pointer, message in ref]
    # the ingest adds the cross-record problems (duplicates, references) after the single-record ones
    assert [g for g in got if g in set(want)] == want
    assert len(want) > 200


def test_a_record_ingested_by_the_reference_path_is_unchanged_on_the_fast_path(corpus_dir, tmp_path):
    from corpus.ingest import ingest

    # the edge cases without their counterfactuals and annotations of them (some point at steps they do not fit)
    recs = small_corpus() + [r for r in _edge_cases() if r["kind"] in ("session", "attribution", "transfer_context")]
    f = write_jsonl(tmp_path / "in.jsonl", recs)
    first = ingest(Corpus(corpus_dir), [f], progress=False)
    # the hashes the store keeps are the reference path's
    con = duckdb.connect(str(corpus_dir / "corpus.duckdb"), read_only=True)
    stored = dict(con.execute("SELECT session_id, content_hash FROM sessions").fetchall())
    con.close()
    for rec in recs:
        if rec["kind"] == "session":
            assert stored[rec["session_id"]] == parse_record(orjson.dumps(rec)).sha256
    again = ingest(Corpus(corpus_dir), [f], progress=False)
    assert sum(again.new.values()) == 0 and sum(again.unchanged.values()) == sum(first.new.values())


def test_json_spellings_are_read_alike():
    """Escapes, surrogates, number spellings, integer bounds, byte order marks and padding."""
    s = orjson.dumps(session("x", n_steps=1))
    c = orjson.dumps(counterfactual(origin="synthetic"))
    cases = [s.replace(b'"C3"', x) for x in (b'"\\ud800"', b'"\\ud83d\\ude00"', b'"a\\/b\\u0000"', b'"\xc3\xa9"')]
    cases += [s.replace(b'"confidence":0.6', b'"confidence":' + x)
              for x in (b"-0.0", b"6E-1", b"0.6e0", b"1e-400", b"0.60000000000000000000000001", b"1", b"00.6")]
    cases += [s.replace(b'"t":0', b'"t":' + x) for x in (b"-0", b"0.0", b"1e0")]
    cases += [b"\xef\xbb\xbf" + s, s + b"   ", b"  " + s]
    cases += [c.replace(b'"seed":7', b'"seed":' + x) for x in (b"9223372036854775807", b"9223372036854775808",
                                                               b"-9223372036854775809", b"7.0")]
    cases += [c.replace(b'"n":8', b'"n":' + x) for x in (b"2147483648", b"true")]
    outcomes = [isinstance(_same(line), ParsedRecord) for line in cases]
    assert any(outcomes) and not all(outcomes)
