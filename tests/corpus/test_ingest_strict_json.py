"""Strict JSON everywhere a user's JSON is read: NaN, Infinity, -Infinity and numbers beyond a double (1e400) are
refused with their location, in a declared `number` extension slot as in `confidence` (never stored as null),
and so is a key repeated in one object; each refusal leaves the store byte-identical."""

from __future__ import annotations

import hashlib
import json

import pytest

from corpus.errors import ExitCode, InvalidInput
from corpus.ingest import ingest, ingest_records
from corpus.store import Corpus
from factories import session, store_rows, write_jsonl
from toolkit.strict_json import StrictJSONError, loads

PROVENANCE = ["--dataset", "BIG-Bench Hard", "--revision", "v1.0-test", "--licence", "MIT",
              "--citation", "Suzgun et al. (2022)"]


def _with_number_slot() -> dict:
    s = session("s1")
    s["r_extensions"] = {"score": {"type": "number", "description": "a number the agent reports"}}
    s["steps"][1]["r"]["ext"] = {"score": 0.25}
    return s


def _line(rec: dict, old: str, new: str) -> str:
    text = json.dumps(rec)
    assert text.count(old) == 1, (old, text)
    return text.replace(old, new)


def _sha(corpus_dir) -> str:
    return hashlib.sha256((corpus_dir / "corpus.duckdb").read_bytes()).hexdigest()


NON_FINITE = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1" + "0" * 400]


def test_the_strict_parser_locates_every_problem():
    assert loads(b'{"a": [1, 2.5, {"b": "x:y"}]}') == {"a": [1, 2.5, {"b": "x:y"}]}
    with pytest.raises(StrictJSONError) as e:
        loads('{"a": [1, {"b": NaN, "c": 1e400}], "d": {"k": 1, "k": 2}, "e": -Infinity}')
    assert [p for p, _ in e.value.problems] == ["/a/1/b", "/a/1/c", "/d/k", "/e"]
    msgs = dict(e.value.problems)
    assert msgs["/a/1/b"] == "NaN is not a JSON number: give a finite number"
    assert msgs["/a/1/c"].startswith("1e400 is beyond the range of a double")
    assert msgs["/d/k"].startswith("duplicate key 'k' (twice in one object)")
    # a repeated key spelt with an escape, and a key with a colon escaped (which must not hide a repeat)
    with pytest.raises(StrictJSONError, match="duplicate key 'a'"):
        loads(r'{"x": {"a": 1, "\u0061": 2}}')
    with pytest.raises(StrictJSONError, match="duplicate key 'k'"):
        loads(r'{"p\u003aq": 1, "k": 1, "k": 2}')
    assert loads(r'{"p\u003aq": 1, "k": 2}') == {"p:q": 1, "k": 2}
    # a pointer escapes ~ and /
    with pytest.raises(StrictJSONError) as e:
        loads('{"a/b": {"c~d": NaN}}')
    assert e.value.problems[0][0] == "/a~1b/c~0d"
    with pytest.raises(StrictJSONError, match="invalid JSON"):
        loads('{"a": 1,')


@pytest.mark.parametrize("token", NON_FINITE)
def test_a_non_finite_number_in_a_declared_number_slot_is_refused_with_its_place(corpus_dir, tmp_path, cli, token):
    f = write_jsonl(tmp_path / "s.jsonl", [_line(_with_number_slot(), '"score": 0.25', f'"score": {token}')])
    before = _sha(corpus_dir)
    code, out, err = cli("ingest", "--corpus", corpus_dir, "-q", f)
    assert code == ExitCode.INVALID and out == "" and "Traceback" not in err
    lines = err.strip().splitlines()
    assert lines[0].startswith(f"{f}:1: /steps/1/r/ext/score: ") and "finite number" in lines[0]
    assert lines[-1] == "1 problem(s) in 1 file(s); nothing was written" and len(lines) == 2
    assert _sha(corpus_dir) == before


@pytest.mark.parametrize("token", ["NaN", "Infinity", "1e400"])
def test_the_same_tokens_in_confidence_and_in_phi_are_refused_the_same_way(corpus_dir, tmp_path, cli, token):
    s = session("s1", n_steps=1)
    recs = [_line(s, '"confidence": 0.6', f'"confidence": {token}'),
            _line({"kind": "counterfactual", "cf_id": "c1", "session_id": "s1", "t": 0, "r_prime": {"goal": "x"},
                   "origin": "same_session_revision", "author": {"person_id": "p"},
                   "phi": {"type": "distribution", "probs": {"up": 1.0}}}, '"up": 1.0', f'"up": {token}')]
    f = write_jsonl(tmp_path / "s.jsonl", recs)
    code, _, err = cli("validate", "--corpus", corpus_dir, "-q", f)
    assert code == ExitCode.INVALID
    assert f"{f}:1: /steps/0/r/confidence: " in err and f"{f}:2: /phi/probs/up: " in err
    assert "dangling reference" not in err  # the refused session is not reported again as missing


def test_a_valid_number_slot_is_stored_as_the_number(corpus_dir, tmp_path):
    ingest(Corpus(corpus_dir), [write_jsonl(tmp_path / "s.jsonl", [_with_number_slot()])], progress=False)
    (ext,) = store_rows(corpus_dir, "SELECT r_ext FROM steps WHERE session_id = 's1' AND t = 1")[0]
    assert json.loads(ext) == {"score": 0.25}


@pytest.mark.parametrize("old, new, pointer", [
    ('"subject_id": "subj-1"', '"subject_id": "subj-1", "subject_id": "subj-2"', "/subject_id"),
    ('"collector": "lab-a"', '"collector": "lab-a", "collector": "lab-b"', "/source/collector"),
    ('"score": 0.25', '"score": 0.25, "score": 0.5', "/steps/1/r/ext/score"),
    ('"score": 0.25', '"score": 0.25, "\\u0073core": 0.5', "/steps/1/r/ext/score"),
])
def test_a_repeated_key_is_refused_with_the_key_and_its_place(corpus_dir, tmp_path, cli, old, new, pointer):
    f = write_jsonl(tmp_path / "s.jsonl", [_with_number_slot(), _line(_with_number_slot(), old, new)])
    before = _sha(corpus_dir)
    code, _, err = cli("ingest", "--corpus", corpus_dir, "-q", f)
    key = pointer.rsplit("/", 1)[1]
    assert code == ExitCode.INVALID
    assert f"{f}:2: {pointer}: duplicate key '{key}' (twice in one object)" in err
    assert _sha(corpus_dir) == before


def test_records_made_in_memory_with_nan_are_refused_not_stored_as_null(corpus_dir):
    s = _with_number_slot()
    s["steps"][1]["r"]["ext"]["score"] = float("nan")
    with pytest.raises(InvalidInput) as e:
        ingest_records(Corpus(corpus_dir), {"trb-collect study X": [s]}, progress=False)
    (p,) = e.value.problems
    assert (p.file, p.line, p.pointer) == ("trb-collect study X", 1, "/steps/1/r/ext/score")
    assert store_rows(corpus_dir, "SELECT count(*) FROM sessions") == [(0,)]


def test_the_mcq_importer_refuses_non_finite_numbers_and_repeated_keys(corpus_dir, tmp_path, cli):
    items = tmp_path / "items.jsonl"
    items.write_text('{"id": 1, "question": "2+2?", "options": ["4", "5"], "answer": "4", "answer": "5"}\n'
                     '{"id": NaN, "question": "3+3?", "options": ["6", "7"], "answer": "6"}\n')
    code, _, err = cli("import", "mcq", "--corpus", corpus_dir, *PROVENANCE, "-q", items)
    assert code == ExitCode.INVALID and "Traceback" not in err
    assert f"{items}:1: /answer: duplicate key 'answer'" in err and f"{items}:2: /id: NaN is not a JSON number" in err


@pytest.mark.parametrize("name, text, where", [
    ("side.json", '{"dataset": "BBH", "revision": "v1", "revision": "v2", "licence": "MIT", "citation": "x"}',
     ": /revision: duplicate key 'revision'"),
    ("side.json", '{"dataset": "BBH", "revision": Infinity, "licence": "MIT", "citation": "x"}',
     ": /revision: Infinity is not a JSON number"),
    ("side.toml", 'dataset = "BBH"\nrevision = nan\nlicence = "MIT"\ncitation = "x"\n', ": not valid TOML: nan is not"),
])
def test_a_sidecar_with_a_non_finite_number_or_a_repeated_key_is_refused(corpus_dir, tmp_path, cli, name, text,
                                                                          where):
    side = tmp_path / name
    side.write_text(text)
    items = write_jsonl(tmp_path / "items.jsonl", [{"id": 1, "question": "2+2?", "options": ["4", "5"],
                                                     "answer": "4"}])
    code, _, err = cli("import", "mcq", "--corpus", corpus_dir, "--sidecar", side, "-q", items)
    assert code == ExitCode.INVALID and f"{side}{where}" in err and "Traceback" not in err
