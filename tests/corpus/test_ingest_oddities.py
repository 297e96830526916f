"""Ingest oddities a JSON parser lets through, refused with their FILE:LINE and pointer, the store untouched: a
number literal that is not zero but a double holds as 0 (``1e-400``), two actions of one action space that read
alike after Unicode NFKC (``ﬁle`` and ``file``, full-width letters, an invisible character), and an
``r_extensions`` slot named like a core slot of r_t (after NFKC and case folding, ``Goal``, ``planned-next``)."""

from __future__ import annotations

import hashlib
import json

import pytest

from corpus.errors import ExitCode
from corpus.fast_records import fast_path
from corpus.records import ParsedRecord, parse_record
from factories import session, write_jsonl


def _sha(corpus_dir) -> str:
    return hashlib.sha256((corpus_dir / "corpus.duckdb").read_bytes()).hexdigest()


def _with_number_slot(value: str) -> str:
    s = session("s1")
    s["r_extensions"] = {"score": {"type": "number", "description": "a number the agent reports"}}
    s["steps"][1]["r"]["ext"] = {"score": 0.25}
    return json.dumps(s).replace('"score": 0.25', f'"score": {value}')


def _space(actions: list[str]) -> str:
    s = session("s1", n_steps=1)
    s["steps"][0].update(action_space=actions, action=actions[0])
    return json.dumps(s, ensure_ascii=False)


def _extension(name: str) -> str:
    s = session("s1", n_steps=1)
    s["r_extensions"] = {name: {"type": "string", "description": "a slot"}}
    return json.dumps(s)


#: (line, pointer, words of the message) -> refused
ODDITIES = {
    "1e-400": (_with_number_slot("1e-400"), "/steps/1/r/ext/score", "1e-400 is too small for a double"),
    "-2.5E-330": (_with_number_slot("-2.5E-330"), "/steps/1/r/ext/score", "-2.5E-330 is too small"),
    "0.(400 zeros)1": (_with_number_slot("0." + "0" * 400 + "1"), "/steps/1/r/ext/score", "too small for a double"),
    "1e-0400 in confidence": (json.dumps(session("s1", n_steps=1)).replace('"confidence": 0.6', '"confidence": 1e-0400'),
                              "/steps/0/r/confidence", "stored as 0"),
    "ligature fi": (_space(["\ufb01le", "file", "edit"]), "/steps/0/action_space/1",
                    "'file' reads as 'ﬁle' (action 0) after Unicode NFKC"),
    "full-width A": (_space(["A", "B", "\uff21"]), "/steps/0/action_space/2", "reads as 'A' (action 0)"),
    "an invisible character": (_space(["up", "u\u200bp", "down"]), "/steps/0/action_space/1", "reads as 'up'"),
    "slot Goal": (_extension("Goal"), "/r_extensions/Goal", "named like the core slot 'goal'"),
    "slot planned-next": (_extension("planned-next"), "/r_extensions/planned-next", "core slot 'planned_next'"),
    "slot CONFIDENCE": (_extension("CONFIDENCE"), "/r_extensions/CONFIDENCE", "core slot 'confidence'"),
    "slot caused.by.self": (_extension("caused.by.self"), "/r_extensions/caused.by.self", "'caused_by_self'"),
    "slot Ext": (_extension("Ext"), "/r_extensions/Ext", "core slot 'ext'"),
}


@pytest.mark.parametrize("name", ODDITIES)
def test_each_oddity_is_refused_alike_on_both_paths(name):
    line, pointer, words = ODDITIES[name]
    assert fast_path(line.encode()) is None  # the fast path leaves it to the reference path, which words it
    problems = parse_record(line.encode())
    assert isinstance(problems, list) and [p for p, _ in problems] == [pointer], problems
    assert words in problems[0][1]


def test_an_ingest_of_the_oddities_names_each_file_line_and_field_and_writes_nothing(corpus_dir, tmp_path, cli):
    lines = [line for line, _, _ in ODDITIES.values()]
    f = write_jsonl(tmp_path / "odd.jsonl", lines)
    before = _sha(corpus_dir)
    code, out, err = cli("ingest", "--corpus", corpus_dir, "-q", f)
    assert code == ExitCode.INVALID and out == "" and "Traceback" not in err
    got = err.strip().splitlines()
    for n, (_, pointer, words) in enumerate(ODDITIES.values(), 1):
        assert any(g.startswith(f"{f}:{n}: {pointer}: ") and words in g for g in got), (n, pointer, got)
    assert _sha(corpus_dir) == before


def test_near_misses_are_accepted_and_stored_as_written():
    """A tiny number a double holds (a subnormal), a literal zero with any exponent, distinct actions in any
    script, and extension slots whose names only contain a core slot's."""
    for line in (_with_number_slot("2.5e-320"), _with_number_slot("0e-999"), _with_number_slot("-0.0E-500"),
                 _space(["A", "a", "\u0410", "file", "fil"]), _extension("goal_score"), _extension("my_confidence")):
        parsed = parse_record(line.encode())
        assert isinstance(parsed, ParsedRecord), (line, parsed)
    assert parse_record(_with_number_slot("2.5e-320").encode()).model.steps[1].r.ext["score"] == 2.5e-320
