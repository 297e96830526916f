"""The scale figure: `python bench/scale.py [--sizes 100000,1000000] [--workers 2] [--work DIR]`.

For each size N, end to end through the command-line tools, as a user runs them, each stage in its own process:

1. ``trb-corpus simulate --sessions N`` (the input; timed, but not part of the pipeline a lab runs);
2. ``trb-corpus ingest`` into a new corpus;
3. ``trb-corpus release --kind smoke`` (a SMOKE TEST release: simulated data);
4. ``trb run --tracks 1 --runner ray --workers W`` on the release's eval split, with a native reference model
   (trace-full) trained once, before any timing, on a small release of the same simulated world (a fixed model,
   so every size is scored by the same one); Ray starts its own local cluster of W CPUs for the run (no
   ``--address``), so the cluster's start is part of the stage;
5. ``trb report`` (md) of the results store.

Per stage: wall time, and peak resident memory sampled every 0.2 s over the stage's whole process tree (the
sum over its processes: for the Ray stage the driver, the raylet, the GCS and the actors), and of its largest
single process. Then, per stage, how each grew from the smallest size to the largest: the ratio of times and of
peak memory against the ratio of sizes (10x for 100k -> 1M). Figures go to stdout as a markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "trb"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))  # before tests/, whose corpus/ and trb/ folders would shadow the packages

_SAMPLE_S = 0.2


def _env(home: Path) -> dict:
    # Ray starting a cluster of its own leaves ~/.ray/auth_token, which later clusters refuse: a HOME of the bench's.
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            "OMP_NUM_THREADS": "1", "RAY_USAGE_STATS_ENABLED": "0", "HOME": str(home)}


class _TreeMemory:
    """Peak RSS of a process and all its descendants, sampled in a thread until :meth:`stop`."""

    def __init__(self, pid: int):
        self.root = psutil.Process(pid)
        self.peak_sum = 0
        self.peak_one = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                procs = [self.root, *self.root.children(recursive=True)]
            except psutil.NoSuchProcess:
                return
            rss = []
            for p in procs:
                try:
                    rss.append(p.memory_info().rss)
                except psutil.Error:
                    pass
            if rss:
                self.peak_sum = max(self.peak_sum, sum(rss))
                self.peak_one = max(self.peak_one, max(rss))
            self._stop.wait(_SAMPLE_S)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _stage(name: str, argv: list[str], env: dict, log: Path) -> dict:
    """Run one stage's command, timing it and sampling its process tree's memory; a failure stops the bench."""
    t0 = time.perf_counter()
    with open(log, "w") as err:
        p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
        mem = _TreeMemory(p.pid)
        out, _ = p.communicate()
        mem.stop()
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"stage {name} failed (exit {p.returncode}): {log.read_text()[-3000:]}")
    return {"stage": name, "wall_s": wall, "peak_tree_mb": mem.peak_sum / 2**20, "peak_one_mb": mem.peak_one / 2**20,
            "stdout": out}


def _tool(module: str) -> list[str]:
    return [sys.executable, "-c", f"import sys; from {module} import main; sys.exit(main(sys.argv[1:]))"]


def _dir_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def _one_size(n: int, work: Path, model: Path, workers: int, env: dict) -> tuple[list[dict], dict]:
    d = work / f"n{n}"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    sim, corpus, results = d / "sim.jsonl", d / "corpus", d / "results.duckdb"
    subprocess.run([*_tool("corpus.cli"), "init", str(corpus)], env=env, check=True, capture_output=True)
    stages = [_stage("simulate", [*_tool("corpus.cli"), "simulate", "--sessions", str(n), "--seed", "1", "-o", str(sim),
                                  "-q"], env, d / "simulate.log")]
    stages.append(_stage("ingest", [*_tool("corpus.cli"), "ingest", "--corpus", str(corpus), str(sim), "-q"], env,
                         d / "ingest.log"))
    stages.append(_stage("release", [*_tool("corpus.cli"), "release", "--corpus", str(corpus), "--version", "0.1.0",
                                     "--kind", "smoke", "-q"], env, d / "release.log"))
    release = corpus / "releases" / "0.1.0"
    stages.append(_stage(f"trb run (Track 1, ray, {workers} workers)",
                         [*_tool("trb.cli"), "run", "--release", str(release), "--adapter", "native", "--model",
                          str(model), "--baseline", "trace-full", "--tracks", "1", "--runner", "ray", "--workers",
                          str(workers), "--results", str(results), "-q"], env, d / "run.log"))
    stages.append(_stage("trb report", [*_tool("trb.cli"), "report", "--results", str(results), "--format", "md",
                                        "-o", str(d / "report.md")], env, d / "report.log"))
    manifest = json.loads((release / "manifest.json").read_text())
    import duckdb

    con = duckdb.connect(str(results), read_only=True)
    items = con.execute("SELECT count(*) FROM item_scores").fetchone()[0]
    con.close()
    report = (d / "report.md").read_text()
    if "SMOKE TEST" not in report.upper():
        raise SystemExit("the report of a simulated release does not say SMOKE TEST")
    facts = {"sessions": n, "input_mb": sim.stat().st_size / 2**20, "steps": None,
             "release_sha": manifest.get("release_sha") or manifest.get("sha"), "release_mb": _dir_mb(release),
             "counts": manifest.get("counts"), "item_scores": items}
    sim.unlink()  # gigabytes at 1M; the corpus and release stay for inspection until the work folder goes
    return stages, facts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000,1000000", help="comma-separated session counts, smallest first")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--model-sessions", type=int, default=4000, help="sessions of the small release the model learns")
    ap.add_argument("--work", type=Path, default=None, help="keep everything here (default: a temporary folder)")
    args = ap.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    work = args.work or Path(tempfile.mkdtemp(prefix="trb-bench-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    home = work / "home"
    home.mkdir(exist_ok=True)
    env = _env(home)
    from engine_helpers import make_reference, make_release

    model = work / "model"
    if not (model / "config.json").is_file():
        small = make_release(work / "model-release", sessions=args.model_sessions, seed=7)
        make_reference(small, model)
    rows, facts = {}, {}
    try:
        for n in sizes:
            print(f"# {n:,} sessions ...", file=sys.stderr, flush=True)
            rows[n], facts[n] = _one_size(n, work, model, args.workers, env)
            for s in rows[n]:
                print(f"  {s['stage']}: {s['wall_s']:.1f} s, peak {s['peak_tree_mb']:.0f} MB (tree), "
                      f"{s['peak_one_mb']:.0f} MB (largest process)", file=sys.stderr, flush=True)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"# scale: {os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB; "
          f"SMOKE TEST releases (simulated sessions); Track 1 with the Ray runner, {args.workers} workers")
    print("| sessions | input MB | release MB | release SHA | eval item scores |")
    print("|---:|---:|---:|---|---:|")
    for n in sizes:
        f = facts[n]
        print(f"| {n:,} | {f['input_mb']:,.0f} | {f['release_mb']:,.0f} | `{str(f['release_sha'])[:12]}` | "
              f"{f['item_scores']:,} |")
    print()
    print("| sessions | stage | wall s | peak RSS MB (tree) | peak RSS MB (largest process) |")
    print("|---:|---|---:|---:|---:|")
    for n in sizes:
        for s in rows[n]:
            print(f"| {n:,} | {s['stage']} | {s['wall_s']:.1f} | {s['peak_tree_mb']:,.0f} | {s['peak_one_mb']:,.0f} |")
    if len(sizes) > 1:
        lo, hi = sizes[0], sizes[-1]
        print()
        print(f"Growth from {lo:,} to {hi:,} sessions ({hi / lo:.0f}x the input):")
        print()
        print("| stage | time ratio | peak memory ratio (tree) |")
        print("|---|---:|---:|")
        for a, b in zip(rows[lo], rows[hi]):
            print(f"| {a['stage']} | {b['wall_s'] / a['wall_s']:.1f}x | {b['peak_tree_mb'] / a['peak_tree_mb']:.2f}x |")


if __name__ == "__main__":
    main()
