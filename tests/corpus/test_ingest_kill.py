"""Fault injection: `trb-corpus ingest` SIGKILLed at random points (a fixed seed) leaves a store that opens and is
either unchanged or complete, never partial; the next ingest after a kill completes it."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from corpus.ingest import ingest
from corpus.stats import corpus_stats
from corpus.store import Corpus, init_corpus
from factories import small_corpus, write_jsonl
from tests_paths import ROOT

SESSIONS = 1000
KILLS = 12
SEED = 18


def _counts(d: Path) -> tuple[int, ...]:
    """Records by kind and steps, as the toolkit reads them: opening the store is part of the check."""
    s = corpus_stats(Corpus(d), wait_seconds=5)
    return tuple(sorted(s["records"].items()))


def _ingest_cmd(d: Path, f: Path) -> list[str]:
    return [sys.executable, "-m", "corpus.cli", "ingest", "-q", "--corpus", str(d), str(f)]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """A simulated input of SESSIONS sessions, a base corpus holding other records, and the base's and the
    complete store's counts (after one uninterrupted ingest, timed)."""
    from corpus.simulate import write_simulation

    tmp = tmp_path_factory.mktemp("kill")
    f = tmp / "sim.jsonl"
    write_simulation(f, n_sessions=SESSIONS, seed=7, progress=False)
    base = Corpus(init_corpus(tmp / "base"))
    ingest(base, [write_jsonl(tmp / "small.jsonl", small_corpus())], progress=False)
    full = tmp / "full"
    shutil.copytree(base.dir, full)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    subprocess.run(_ingest_cmd(full, f), env=env, check=True, stderr=subprocess.DEVNULL)
    seconds = time.monotonic() - started
    return {"file": f, "base": base.dir, "env": env, "seconds": seconds,
            "unchanged": _counts(base.dir), "complete": _counts(full)}


@pytest.mark.e2e
def test_random_sigkills_leave_the_store_unchanged_or_complete(setup, tmp_path):
    unchanged, complete = setup["unchanged"], setup["complete"]
    assert dict(complete)["session"] == dict(unchanged)["session"] + SESSIONS
    rng = random.Random(SEED)
    delays = sorted(rng.uniform(0.1, 1.1 * setup["seconds"]) for _ in range(KILLS))
    outcomes = []
    for i, delay in enumerate(delays):
        d = tmp_path / f"round{i:02d}"
        shutil.copytree(setup["base"], d)
        p = subprocess.Popen(_ingest_cmd(d, setup["file"]), env=setup["env"], stderr=subprocess.DEVNULL,
                             start_new_session=True)
        time.sleep(delay)
        killed = p.poll() is None
        if killed:
            os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        now = _counts(d)
        state = "unchanged" if now == unchanged else "complete" if now == complete else "partial"
        outcomes.append((round(delay, 2), killed, state))
        assert state != "partial", f"kill at {delay:.2f} s left a partial store: {now} (outcomes: {outcomes})"
        assert not list(d.glob(".ingest-*")), "the killed ingest's scratch space survived the next open"
        if i % 4 == 0 or i == KILLS - 1:  # the next ingest after a kill completes the store
            subprocess.run(_ingest_cmd(d, setup["file"]), env=setup["env"], check=True, stderr=subprocess.DEVNULL)
            assert _counts(d) == complete
    assert sum(killed for _, killed, _ in outcomes) >= KILLS // 2, f"most kills came too late: {outcomes}"
