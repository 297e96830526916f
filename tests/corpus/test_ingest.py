"""Ingest: all or nothing, idempotent, conflicts never overwrite, every bad input located."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import duckdb
import pytest

from corpus.errors import ExitCode, InvalidInput, RecordConflict
from corpus.ingest import ingest
from corpus.store import Corpus
from factories import (
    DELETE,
    annotation,
    attribution,
    counterfactual,
    mutated,
    session,
    small_corpus,
    store_counts,
    write_jsonl,
)

# ingests large or faulty inputs, several in worker processes (seconds per test)
pytestmark = pytest.mark.slow


def test_ingest_writes_every_record_and_step(corpus_dir, tmp_path):
    recs = small_corpus()
    f = write_jsonl(tmp_path / "in.jsonl", recs)
    report = ingest(Corpus(corpus_dir), [f], progress=False)
    assert sum(report.new.values()) == len(recs) and sum(report.unchanged.values()) == 0
    counts = store_counts(corpus_dir)
    assert counts["sessions"] == 2 and counts["steps"] == 3 + 4
    assert counts["counterfactuals"] == 3 and counts["attribution"] == 2
    assert counts["annotations"] == 2 and counts["transfer_contexts"] == 1
    con = duckdb.connect(str(corpus_dir / "corpus.duckdb"), read_only=True)
    row = con.execute("SELECT r_confidence, action_space, src_line FROM steps JOIN sessions USING (session_id) "
                      "WHERE session_id = 's2' AND t = 3").fetchone()
    gen, probs = con.execute("SELECT [generator_name, generator_version, generator_seed::VARCHAR], phi_probs "
                             "FROM counterfactuals WHERE cf_id = 's1.t0.cf1'").fetchone()
    con.close()
    assert row == (0.6, ["up", "down", "left", "right", "wait"], 3)
    assert gen == ["slot-perturb", "1", "7"]
    assert json.loads(probs) == {"down": 0.5, "up": 0.5}


def test_reingest_is_a_noop_reported_as_unchanged(corpus_dir, tmp_path, cli):
    f = write_jsonl(tmp_path / "in.jsonl", small_corpus())
    assert cli("ingest", "--corpus", corpus_dir, "-q", f)[0] == 0
    before = store_counts(corpus_dir)
    code, out, err = cli("ingest", "--corpus", corpus_dir, "-q", f)
    assert code == 0 and out == ""
    assert "0 new, 10 unchanged" in err
    after = store_counts(corpus_dir)
    assert after["ingests"] == before["ingests"] + 1
    assert {k: v for k, v in after.items() if k != "ingests"} == {k: v for k, v in before.items() if k != "ingests"}


def test_same_content_spelled_differently_is_unchanged(corpus_dir, tmp_path):
    s = session()
    f1 = write_jsonl(tmp_path / "a.jsonl", [s])
    ingest(Corpus(corpus_dir), [f1], progress=False)
    # key order, whitespace, 1 vs 1.0, an explicit default: the same record
    s2 = mutated(s, "steps/0/r/confidence", 0.6)
    s2["steps"][0]["r"]["ext"] = None
    s2 = dict(reversed(list(s2.items())))
    f2 = tmp_path / "b.jsonl"
    f2.write_text(json.dumps(s2, indent=None, separators=(" , ", " : ")) + "\n")
    report = ingest(Corpus(corpus_dir), [f2], progress=False)
    assert report.unchanged["session"] == 1 and report.new["session"] == 0


def test_conflict_names_both_hashes_and_writes_nothing(corpus_dir, tmp_path, cli):
    ingest(Corpus(corpus_dir), [write_jsonl(tmp_path / "a.jsonl", [session()])], progress=False)
    before = store_counts(corpus_dir)
    changed = mutated(session(), "steps/1/observation", "something else")
    f = write_jsonl(tmp_path / "b.jsonl", [session("s9", subject="x"), changed])
    with pytest.raises(RecordConflict) as e:
        ingest(Corpus(corpus_dir), [f], progress=False)
    (p,) = e.value.problems
    assert (p.file, p.line, p.pointer) == (str(f), 2, "/session_id")
    assert "stored sha256:" in p.message and "this one sha256:" in p.message
    assert store_counts(corpus_dir) == before  # s9 was valid, but nothing is written
    code, _, err = cli("ingest", "--corpus", corpus_dir, "-q", f)
    assert code == ExitCode.CONFLICT and "conflict: session 's1'" in err


def test_all_or_nothing_across_files(corpus_dir, tmp_path):
    good = write_jsonl(tmp_path / "good.jsonl", small_corpus())
    bad = write_jsonl(tmp_path / "bad.jsonl", [session("s3"), mutated(session("s4"), "steps/2/r/confidence", 2)])
    before = store_counts(corpus_dir)
    with pytest.raises(InvalidInput):
        ingest(Corpus(corpus_dir), [good, bad], progress=False)
    assert store_counts(corpus_dir) == before


def test_references_across_files_and_to_the_store(corpus_dir, tmp_path):
    sessions = write_jsonl(tmp_path / "s.jsonl", [session()])
    cfs = write_jsonl(tmp_path / "c.jsonl", [counterfactual()])
    # the counterfactual first, its session in a later file: one ingest resolves it
    assert ingest(Corpus(corpus_dir), [cfs, sessions], progress=False).new["counterfactual"] == 1
    # an attribution item for a session already in the store
    later = write_jsonl(tmp_path / "a.jsonl", [attribution(), annotation()])
    assert ingest(Corpus(corpus_dir), [later], progress=False).new["annotation"] == 1


def test_gzip_input(corpus_dir, tmp_path):
    f = tmp_path / "in.jsonl.gz"
    with gzip.open(f, "wt", encoding="utf-8") as g:
        for rec in small_corpus():
            g.write(json.dumps(rec) + "\n")
    assert sum(ingest(Corpus(corpus_dir), [f], progress=False).new.values()) == 10


def _bad_cases():
    s = session()
    return {
        "invalid JSON": ([b'{"kind": "session", "session_id": "s1",'], 1, "", "invalid JSON"),
        "wrong type": ([mutated(s, "steps/1/t", "1")], 1, "/steps/1/t", "valid integer"),
        "missing required field": ([mutated(s, "context", DELETE)], 1, "/context", "required field is missing"),
        "unknown r_t slot": ([mutated(s, "steps/2/r/mood", "calm")], 1, "/steps/2/r/mood", "unknown r_t slot 'mood'"),
        "undeclared extension slot": ([mutated(s, "steps/0/r/ext", {"mood": "calm"})], 1, "/steps/0/r/ext/mood",
                                      "not declared in r_extensions"),
        "duplicate ids": ([s, session("s2"), session("s1", subject="other")], 3, "/session_id",
                          "duplicate session id 's1' in this ingest (first at"),
        "non-contiguous steps": ([mutated(s, "steps/2/t", 5)], 1, "/steps/2/t",
                                 "expected 2 (steps are numbered contiguously from 0), got 5"),
        "confidence above 1": ([mutated(s, "steps/1/r/confidence", 1.7)], 1, "/steps/1/r/confidence",
                               "1.7 is greater than the maximum of 1"),
        "caused_by_self below 0": ([mutated(s, "steps/0/r/caused_by_self", -0.2)], 1, "/steps/0/r/caused_by_self",
                                   "-0.2 is less than the minimum of 0"),
        "dangling counterfactual": ([s, counterfactual("c9", "s7", 0)], 2, "/session_id",
                                    "dangling reference: session 's7'"),
        "counterfactual on a missing step": ([s, counterfactual("c9", "s1", 3)], 2, "/t",
                                             "session 's1' has no step 3 (it has steps 0..2)"),
        "phi not summing to 1": ([s, counterfactual(probs={"up": 0.5, "down": 0.4})], 2, "/phi/probs",
                                 "probabilities sum to 0.9, expected 1"),
        "phi action outside the space": ([s, counterfactual(probs={"up": 0.5, "fly": 0.5})], 2, "/phi/probs",
                                         "actions ['fly'] are not in step 0's action space"),
        "action outside its space": ([mutated(s, "steps/0/action", "jump")], 1, "/steps/0/action",
                                     "'jump' is not in the step's action_space"),
        "synthetic without generator": ([s, mutated(counterfactual(), "origin", "synthetic")], 2, "/author",
                                        "must name its generator"),
        "attribution of a step without outcome": ([mutated(s, "steps/1/outcome", None), attribution()], 2, "/t",
                                                  "has no outcome"),
        "annotation of a missing item": ([s, annotation(target_id="nope")], 2, "/target/id",
                                         "dangling reference: attribution 'nope'"),
        "unknown kind": ([{"kind": "trace"}], 1, "", "kind 'trace' is not one of"),
        "not an object": ([b"[1, 2, 3]"], 1, "", "must be a JSON object"),
        "non-UTF-8 bytes": ([json.dumps(s).encode().replace(b"B1", b"B\xff1")], 1, "", "not valid UTF-8: byte 0xff"),
    }


@pytest.mark.parametrize("case", list(_bad_cases()))
def test_bad_input_is_located_and_changes_nothing(case, corpus_dir, tmp_path, cli):
    lines, line_no, pointer, text = _bad_cases()[case]
    f = write_jsonl(tmp_path / "bad.jsonl", lines)
    before = store_counts(corpus_dir)
    code, out, err = cli("ingest", "--corpus", corpus_dir, "-q", f)
    assert code == ExitCode.INVALID and out == ""
    prefix = f"{f}:{line_no}: {pointer}: " if pointer else f"{f}:{line_no}: "
    assert any(line.startswith(prefix) and text in line for line in err.splitlines()), err
    assert err.rstrip().endswith("nothing was written")
    assert store_counts(corpus_dir) == before
    assert cli("validate", "--corpus", corpus_dir, "-q", f)[0] == ExitCode.INVALID


def test_empty_file_is_an_error(corpus_dir, tmp_path, cli):
    f = tmp_path / "empty.jsonl"
    f.write_bytes(b"")
    before = store_counts(corpus_dir)
    code, _, err = cli("ingest", "--corpus", corpus_dir, "-q", f)
    assert code == ExitCode.INVALID and f"{f}: empty file" in err
    assert store_counts(corpus_dir) == before


def test_every_problem_is_reported_not_just_the_first(tmp_path, cli):
    s = session()
    f = write_jsonl(tmp_path / "bad.jsonl", [
        mutated(s, "steps/0/r/confidence", 3), session("s2"), b"{oops", mutated(session("s3"), "subject_id", DELETE)])
    code, _, err = cli("validate", "-q", f)
    assert code == ExitCode.INVALID
    located = [line for line in err.splitlines() if line.startswith(str(f))]
    assert [line.split(":")[1] for line in located] == ["1", "3", "4"]


def test_validate_writes_nothing_and_checks_against_the_corpus(corpus_dir, tmp_path, cli):
    ingest(Corpus(corpus_dir), [write_jsonl(tmp_path / "s.jsonl", [session()])], progress=False)
    before = store_counts(corpus_dir)
    cf = write_jsonl(tmp_path / "c.jsonl", [counterfactual()])
    code, out, err = cli("validate", "--corpus", corpus_dir, "-q", cf)
    assert code == 0 and out == "" and "nothing written" in err
    assert store_counts(corpus_dir) == before
    # without the corpus the session is unknown
    code, _, err = cli("validate", "-q", cf)
    assert code == ExitCode.INVALID and "dangling reference: session 's1'" in err
    assert not list(corpus_dir.glob(".ingest-*")), "scratch files left behind"


def test_a_50_mb_line_is_refused_with_bounded_memory(corpus_dir, tmp_path):
    """The reader never holds more than the line cap; the error names the line and its size."""
    big = tmp_path / "big.jsonl"
    with open(big, "wb") as f:
        f.write(json.dumps(session("ok")).encode() + b"\n")
        f.write(b'{"kind": "session", "session_id": "huge", "observation": "' + b"x" * (50 * 1024 * 1024) + b'"}\n')
        f.write(json.dumps(session("ok2", subject="s2")).encode() + b"\n")
    small = write_jsonl(tmp_path / "small.jsonl", [session("ok")])
    script = (
        "import resource, sys\n"
        "from corpus.ingest import ingest\nfrom corpus.store import Corpus\nfrom corpus.errors import InvalidInput\n"
        "try:\n    ingest(Corpus(sys.argv[1]), [sys.argv[2]], progress=False)\n"
        "except InvalidInput as e:\n    print('\\n'.join(map(str, e.problems)))\n"
        "print('RSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )

    def run(corpus, path):
        out = subprocess.run([sys.executable, "-c", script, str(corpus), str(path)], capture_output=True,
                             text=True, check=True).stdout
        return out, int(out.rsplit("RSS", 1)[1])

    from corpus.store import init_corpus

    _, base_kb = run(init_corpus(tmp_path / "baseline"), small)
    out, big_kb = run(corpus_dir, big)
    assert f"{big}:2: line is 52,428,8" in out and "longer than the limit of 16,777,216 bytes" in out
    assert (big_kb - base_kb) < 40 * 1024, f"reading a 50 MB line grew RSS by {(big_kb - base_kb) / 1024:.0f} MB"
    assert store_counts(corpus_dir)["sessions"] == 0
