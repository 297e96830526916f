"""The ingest's parsing processes (large inputs) against the same ingest in one process.

A worker reads its block of a plain file itself (the main process sends where the block is, not its
bytes) and writes the block's rows to staged files of its own, which the main process's DuckDB reads
at the end; a gzip file's blocks are still sent. Whatever the path, the store must get the same rows,
an invalid file the same problems at the same lines, and no staged file may be left behind.
"""

from __future__ import annotations

import functools
import gzip
import importlib
import json

import duckdb
import pytest

from corpus.errors import InvalidInput
from corpus.ingest import ingest, validate
from corpus.jsonl import read_blocks
from corpus.store import Corpus, init_corpus
from corpus.tables import TABLES
from factories import write_jsonl

INGEST = importlib.import_module("corpus.ingest")


def _lines(n_sessions: int = 60) -> list[bytes]:
    from simworld import simulate

    return [json.dumps(r, ensure_ascii=False).encode() for r in simulate(n_sessions=n_sessions, seed=11)]


def _small_blocks(monkeypatch) -> None:
    # blocks of a few lines: many tasks per worker, blocks cut mid-file at every kind of record
    monkeypatch.setattr(INGEST, "read_blocks", functools.partial(read_blocks, block_bytes=5_000))


def _rows(corpus_dir) -> dict[str, list[tuple]]:
    con = duckdb.connect()
    con.execute(f"ATTACH '{corpus_dir / 'corpus.duckdb'}' AS store (READ_ONLY)")
    try:
        return {t: con.execute(f"SELECT * FROM store.{t} ORDER BY ALL").fetchall() for t in TABLES}
    finally:
        con.close()


def _ingest(tmp_path, name: str, path, workers: int, monkeypatch):
    monkeypatch.setenv("TRB_INGEST_WORKERS", str(workers))
    corpus_dir = init_corpus(tmp_path / name)
    report = ingest(Corpus(corpus_dir), [path], progress=False, names={str(path): "in.jsonl"})
    return corpus_dir, report


@pytest.mark.parametrize("gz", [False, True])
def test_workers_store_the_same_rows_as_one_process(tmp_path, monkeypatch, gz):
    _small_blocks(monkeypatch)
    lines = _lines()
    path = tmp_path / ("in.jsonl.gz" if gz else "in.jsonl")
    if gz:
        with gzip.open(path, "wb") as f:
            f.write(b"\n".join(lines) + b"\n")
    else:
        write_jsonl(path, lines)
    alone, r1 = _ingest(tmp_path, "alone", path, 0, monkeypatch)
    workers, r2 = _ingest(tmp_path, "workers", path, 2, monkeypatch)
    assert (r1.records, r1.steps, dict(r1.new)) == (r2.records, r2.steps, dict(r2.new))
    assert r1.records == len(lines)
    one, two = _rows(alone), _rows(workers)
    for table in TABLES:
        assert two[table] == one[table], table
    assert one["sessions"] and one["steps"] and one["counterfactuals"]
    for d in (alone, workers):  # the scratch folder, staged files and all, is gone
        assert not list(d.glob(".ingest-*")), list(d.iterdir())


def test_workers_report_the_same_problems_at_the_same_lines(tmp_path, monkeypatch):
    _small_blocks(monkeypatch)
    lines = _lines(30)
    bad = {7: b'{"kind": "session", "session_id": "x"', 40: b'{"kind": "counterfactual"}',
           len(lines) - 2: b"not json at all", 120: "é".encode("latin-1")}
    for at, line in sorted(bad.items(), reverse=True):
        lines.insert(at, line)
    path = write_jsonl(tmp_path / "bad.jsonl", lines)
    found = []
    for workers in (0, 2):
        monkeypatch.setenv("TRB_INGEST_WORKERS", str(workers))
        with pytest.raises(InvalidInput) as e:
            validate([path], progress=False)
        found.append([(p.line, p.pointer, p.message) for p in e.value.problems])
    assert found[0] == found[1]
    assert {line for line, _, _ in found[1]} >= {lines.index(b) + 1 for b in bad.values()}


def test_a_file_that_changes_under_a_worker_is_an_error_not_other_records(tmp_path):
    lines = _lines(5)
    path = write_jsonl(tmp_path / "in.jsonl", lines)
    blocks = list(read_blocks(path, block_bytes=2_000))
    later = blocks[1]
    assert later.start > 0 and path.read_bytes()[later.start:later.start + len(later.data)] == later.data
    path.write_bytes(path.read_bytes()[:later.start + 10])  # cut short after the main process read the block
    chunk = INGEST._parse_range("in.jsonl", str(path), later.first, later.start, len(later.data), 1 << 20)
    assert chunk.records == 0
    assert chunk.problems == [(later.first, "", "the file changed while it was being read: run the command "
                                                "again once nothing is writing it")]
