"""A `trb run` killed at a random point is never reported as a finished result, and the store stays readable.

A run's row is stored first as running, its item scores part by part, and it is marked complete at the
end (trb/results.py, trb/parts.py), so a process killed while it scores, or while it records, leaves whole
runs and at most one unfinished run: `trb query`, `trb report` and the runs list read the store, every
listed run has all its item scores, every other item score belongs to a run listed as unfinished, and the
next run records normally. Real processes, real SIGKILLs, at random delays into a process that runs and
records one run after another (so kills land in scoring and in recording); alternately into a new
store (made in a scratch file and renamed into place) and one that already holds runs.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from tests_paths import ROOT
from toolkit.errors import ExitCode

CHILD = """
import sys
from engine_helpers import PlanFollower
from trb.run import RunSpec, run_tracks

def Adapter():
    return PlanFollower("kill-test")

while True:
    run = run_tracks(RunSpec(sys.argv[1], baseline="kill-test", results=sys.argv[2], tracks=("1", "3")), Adapter(),
                     progress=False)
    print(run["run_id"], flush=True)
"""


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    from engine_helpers import make_release

    return make_release(tmp_path_factory.mktemp("rel"), sessions=60, seed=3)


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), str(ROOT / "tests" / "trb"),
                                                                      os.environ.get("PYTHONPATH")]))}


def _whole_runs(results: Path) -> list[str]:
    """The runs the store lists, each checked to have every item score it counts (read with plain DuckDB)."""
    from trb.results import ResultsStore

    store = ResultsStore(results, create=False)
    runs, unfinished = store.runs(), store.unfinished_runs()
    con = duckdb.connect(str(results), read_only=True)
    try:
        have = dict(con.execute("SELECT run_id, count(*) FROM item_scores GROUP BY 1").fetchall())
    finally:
        con.close()
    assert set(have) <= {r["run_id"] for r in runs + unfinished}, "item scores of a run that is not listed"
    assert not {r["run_id"] for r in runs} & {r["run_id"] for r in unfinished}
    for r in runs:
        assert have.get(r["run_id"], 0) == r["n_items"] > 0, f"run {r['run_id']} is listed but not whole"
    return [r["run_id"] for r in runs]


@pytest.mark.e2e
def test_sigkill_at_random_points_of_trb_run_leaves_whole_runs_only(release, tmp_path, capsys):
    from trb.cli import main

    seed = int(os.environ.get("TRB_FAULT_SEED", time.time_ns() % 1_000_000))
    rng = random.Random(seed)
    t0 = time.perf_counter()
    first = subprocess.run([sys.executable, "-c", CHILD.replace("while True:", "for _ in range(1):"), str(release),
                            str(tmp_path / "timing.duckdb")], env=_env(), capture_output=True, text=True, timeout=600)
    one = time.perf_counter() - t0
    assert first.returncode == 0, first.stderr
    recorded = {0: [], 1: []}
    for k in range(6):
        results = tmp_path / f"results-{k % 2}.duckdb"
        proc = subprocess.Popen([sys.executable, "-c", CHILD, str(release), str(results)], env=_env(),
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        delay = rng.uniform(0.3, 2.5 * one)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        printed = proc.stdout.read().split()
        proc.wait()
        where = f"(TRB_FAULT_SEED={seed}, kill {k} after {delay:.2f} s; one run takes {one:.2f} s)"
        if not results.exists():
            assert not printed, where  # a run reported finished is in the store
            continue
        listed = _whole_runs(results)
        assert set(recorded[k % 2]) | set(printed) <= set(listed), f"{where}: a finished run was lost"
        recorded[k % 2] = listed
        capsys.readouterr()
        assert main(["query", "SELECT count(*) AS n FROM runs WHERE status = 'complete'", "--results", str(results),
                     "--json"]) == 0, where
        assert json.loads(capsys.readouterr().out) == [{"n": len(listed)}], where
        if listed:
            assert main(["report", "--results", str(results), "--format", "json"]) == 0, where
            capsys.readouterr()
        else:  # only the killed run, unfinished: never reported as a result
            assert main(["report", "--results", str(results), "--format", "json"]) == ExitCode.RESULTS, where
            assert "unfinished" in capsys.readouterr().err, where
    for k in (0, 1):  # the next run records normally and nothing the killed ones staged is left beside the store
        results = tmp_path / f"results-{k}.duckdb"
        before = _whole_runs(results) if results.exists() else []
        done = subprocess.run([sys.executable, "-c", CHILD.replace("while True:", "for _ in range(1):"), str(release),
                               str(results)], env=_env(), capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        assert len(_whole_runs(results)) == len(before) + 1
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_the_scratch_file_of_a_run_killed_while_it_made_the_store_is_removed_by_the_next(release, tmp_path):
    """A new store is made in ``.NAME.init-PID-*`` and renamed into place; a kill before the rename leaves it."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    stale = [tmp_path / f".results.duckdb.init-{p.pid}-0badc0de", tmp_path / f".results.duckdb.init-{p.pid}-0badc0de.wal"]
    for s in stale:
        s.write_bytes(b"half a store")
    done = subprocess.run([sys.executable, "-c", CHILD.replace("while True:", "for _ in range(1):"), str(release),
                           str(tmp_path / "results.duckdb")], env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert not any(s.exists() for s in stale) and len(_whole_runs(tmp_path / "results.duckdb")) == 1
