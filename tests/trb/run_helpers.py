"""Shared by the resumable-run tests (local and Ray): a release and a native reference model, `trb run`'s
arguments, a run's item scores read with plain DuckDB, and SIGKILL once a number of parts is stored."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb

from tests_paths import ROOT

PART_ITEMS = 3
CLI = "import sys; from trb.cli import main; sys.exit(main(sys.argv[1:]))"


def env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def run_args(release, model, results, *extra) -> list[str]:
    return ["run", "--release", str(release), "--adapter", "native", "--model", str(model), "--baseline",
            "trace-full", "--tracks", "1,3", "--results", str(results), "--part-items", str(PART_ITEMS),
            "--flush-seconds", "0", "-q", *extra]


def scores(results: Path, run_id: str) -> list[tuple]:
    """Every item score of a run, in stored order, as plain tuples (read with plain DuckDB)."""
    con = duckdb.connect(str(results), read_only=True)
    try:
        cols = [r[0] for r in con.execute("SELECT column_name FROM information_schema.columns WHERE "
                                          "table_name = 'item_scores' AND column_name <> 'run_id' "
                                          "ORDER BY ordinal_position").fetchall()]
        return con.execute(f"SELECT {', '.join(cols)} FROM item_scores WHERE run_id = ? ORDER BY rowid",
                           [run_id]).fetchall()
    finally:
        con.close()


def start(args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CLI, *args], env=env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def stored_parts(results: Path) -> int:
    """The parts stored in ``results`` so far, read through the store's own lock (a plain DuckDB connection
    would hold DuckDB's file lock and make the writer fail, which is not what a user's reader does)."""
    from trb.results import ResultsError, ResultsStore

    if not results.exists():
        return 0
    try:
        _, rows = ResultsStore(results, create=False).query("SELECT count(*) FROM run_parts")
    except ResultsError:  # a store made a moment ago, not yet upgraded
        return 0
    return rows[0][0]


def kill_after(proc: subprocess.Popen, results: Path, parts: int, timeout: float = 240) -> None:
    """SIGKILL ``proc`` once ``results`` holds at least ``parts`` stored parts."""
    deadline = time.monotonic() + timeout
    while stored_parts(results) < parts:
        assert proc.poll() is None, f"the run ended before it was killed: {proc.stderr.read()}"
        assert time.monotonic() < deadline, "no part was stored in time"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
