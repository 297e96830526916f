"""Ingest throughput and memory: `python bench/ingest.py [--sizes 10000,100000] [--repeats 3]`.

For each size, simulates that many sessions once, then ingests the file into a
fresh corpus `--repeats` times, each in its own process (so peak RSS is that
run's own), and prints the median steps/s and the median peak RSS. The named
peer, run on the same file in the same run, is DuckDB's own `read_json` bulk load
into a table (no validation, no checks): the ratio says what validation and the
all-or-nothing checks cost.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD_INGEST = """
import json, resource, sys, time
from corpus.ingest import ingest
from corpus.store import Corpus, init_corpus
d = init_corpus(sys.argv[1])
t0 = time.perf_counter()
r = ingest(Corpus(d), [sys.argv[2]], progress=False)
dt = time.perf_counter() - t0
print(json.dumps({"seconds": dt, "steps": r.steps, "records": r.records,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "worker_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""

CHILD_PEER = """
import duckdb, json, resource, sys, time
t0 = time.perf_counter()
con = duckdb.connect(sys.argv[1], config={"memory_limit": "1GB", "threads": 2})
con.execute("CREATE TABLE raw AS SELECT * FROM read_json(?, format='newline_delimited', "
            "columns={'kind': 'VARCHAR', 'session_id': 'VARCHAR', 'steps': 'JSON[]'}, ignore_errors=true)", [sys.argv[2]])
n = con.execute("SELECT coalesce(sum(len(steps)), 0) FROM raw WHERE kind = 'session'").fetchone()[0]
con.close()
dt = time.perf_counter() - t0
print(json.dumps({"seconds": dt, "steps": int(n), "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _child(code: str, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from corpus.simulate import write_simulation

    work = Path(args.workdir or tempfile.mkdtemp(prefix="trb-bench-ingest-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"# ingest benchmark: {os.cpu_count()} cores, python {sys.version.split()[0]}, "
          f"median of {args.repeats} runs, each run in its own process", flush=True)
    print("| sessions | steps | records | input MB | simulate s | ingest s | steps/s | records/s | peak RSS MB "
          "(main) | peak RSS MB (largest parse worker) | peer read_json s | ingest/peer time |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    for n in [int(x) for x in args.sizes.split(",")]:
        data = work / f"sim-{n}.jsonl"
        t0 = time.perf_counter()
        write_simulation(data, n_sessions=n, seed=args.seed, progress=False)
        sim_s = time.perf_counter() - t0
        runs, peers = [], []
        for i in range(args.repeats):
            corpus = work / f"corpus-{n}-{i}"
            shutil.rmtree(corpus, ignore_errors=True)
            runs.append(_child(CHILD_INGEST, str(corpus), str(data)))
            shutil.rmtree(corpus, ignore_errors=True)
            peer_db = work / f"peer-{n}-{i}.duckdb"
            peer_db.unlink(missing_ok=True)
            peers.append(_child(CHILD_PEER, str(peer_db), str(data)))
            peer_db.unlink(missing_ok=True)
        sec = statistics.median(r["seconds"] for r in runs)
        rss = statistics.median(r["rss_mb"] for r in runs)
        wrss = statistics.median(r["worker_rss_mb"] for r in runs)
        psec = statistics.median(p["seconds"] for p in peers)
        steps, records = runs[0]["steps"], runs[0]["records"]
        assert peers[0]["steps"] == steps, (peers[0], runs[0])
        row = (n, steps, records, data.stat().st_size / 1e6, sim_s, sec, steps / sec, records / sec, rss, wrss,
               psec, sec / psec)
        rows.append(row)
        print("| {:,} | {:,} | {:,} | {:.0f} | {:.1f} | {:.2f} | {:,.0f} | {:,.0f} | {:.0f} | {:.0f} | {:.2f} | "
              "{:.1f}x |".format(*row), flush=True)
        data.unlink()
    if len(rows) >= 2:
        small, big = rows[0], rows[-1]
        print(f"\nmemory: main-process peak RSS {big[8]:.0f} MB at {big[0]:,} sessions vs {small[8]:.0f} MB at "
              f"{small[0]:,} ({big[8] / small[8]:.2f}x for {big[0] / small[0]:.0f}x the input)")
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
