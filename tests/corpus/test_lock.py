"""Two processes on one corpus: the second waits (bounded, naming the holder); nothing is lost."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from corpus.errors import CorpusBusy
from corpus.ingest import ingest
from corpus.lock import CorpusLock
from corpus.stats import corpus_stats
from corpus.store import Corpus
from factories import session, store_counts, write_jsonl

HOLDER = textwrap.dedent("""
    import sys, time
    from corpus.lock import CorpusLock
    with CorpusLock(sys.argv[1], exclusive=True, purpose="test holder"):
        print("held", flush=True)
        time.sleep(float(sys.argv[2]))
""")


def _hold(corpus_dir, seconds: float) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(corpus_dir), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    return p


def test_second_writer_waits_for_the_first_and_both_land(corpus_dir, tmp_path, capsys):
    holder = _hold(corpus_dir, 1.5)
    f = write_jsonl(tmp_path / "a.jsonl", [session("s1")])
    started = time.monotonic()
    report = ingest(Corpus(corpus_dir), [f], progress=False, wait_seconds=30)
    messages = capsys.readouterr().err.splitlines()
    waited = time.monotonic() - started
    holder.wait(timeout=10)
    assert report.new["session"] == 1 and waited >= 1.0
    assert len(messages) == 1 and f"pid {holder.pid}" in messages[0] and "test holder" in messages[0]
    assert store_counts(corpus_dir)["sessions"] == 1


def test_wait_is_bounded_and_names_the_holder(corpus_dir, tmp_path):
    holder = _hold(corpus_dir, 20)
    try:
        f = write_jsonl(tmp_path / "a.jsonl", [session("s1")])
        with pytest.raises(CorpusBusy) as e:
            ingest(Corpus(corpus_dir), [f], progress=False, wait_seconds=0.5)
        assert f"pid {holder.pid}" in e.value.message and "nothing was changed" in e.value.message
        with pytest.raises(CorpusBusy):
            corpus_stats(Corpus(corpus_dir), wait_seconds=0.3)  # a reader waits for a writer too
    finally:
        holder.kill()
        holder.wait()
    assert store_counts(corpus_dir)["sessions"] == 0


def test_concurrent_ingests_from_two_processes_lose_nothing(corpus_dir, tmp_path):
    files = []
    for i in range(2):
        recs = [session(f"p{i}-s{j}", subject=f"subj-{i}-{j}") for j in range(200)]
        files.append(write_jsonl(tmp_path / f"p{i}.jsonl", recs))
    env = {**os.environ, "TRB_LOCK_WAIT": "60"}
    procs = [subprocess.Popen([sys.executable, "-m", "corpus.cli", "ingest", "-q", "--corpus", str(corpus_dir), str(f)],
                              env=env, stderr=subprocess.PIPE, text=True) for f in files]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    assert [code for code, _ in results] == [0, 0], results
    counts = store_counts(corpus_dir)
    assert counts["sessions"] == 400 and counts["steps"] == 1200 and counts["ingests"] == 2


def test_readers_share_the_corpus(corpus_dir):
    with CorpusLock(corpus_dir, exclusive=False, wait_seconds=0):
        assert corpus_stats(Corpus(corpus_dir), wait_seconds=0)["records"]["session"] == 0
