"""Runners side by side: `python bench/runners.py [--sessions 4000] [--workers 2] [--repeats 3]`.

On one smoke release and one native reference model (trained here, one epoch), Tracks 1 and 3 of the eval
split are run:

1. by the local runner (the peer);
2. by the Ray runner on a local cluster of ``--workers`` CPUs started once for the bench (`ray start --head`),
   ``--workers`` actors;
3. by the local runner storing parts every 0.5 s, SIGKILLed once a third of the item scores are stored, then resumed
   with `trb run --resume`: the total wall time of both against an uninterrupted run, and the item scores
   compared.

Every figure is a median of ``--repeats`` runs in subprocesses (the CLI, as a user runs it), with the item
scores of every run checked equal to the first local run's. Torch runs one thread per process.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "trb"))
sys.path.insert(0, str(ROOT / "tests"))


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            "OMP_NUM_THREADS": "1", "RAY_USAGE_STATS_ENABLED": "0"}


def _cli(args: list[str], **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import sys; from trb.cli import main; sys.exit(main(sys.argv[1:]))",
                             *args], env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def _timed(args: list[str]) -> float:
    t0 = time.perf_counter()
    p = _cli(args)
    out, err = p.communicate()
    if p.returncode != 0:
        raise SystemExit(f"trb {' '.join(args[:3])} failed: {err[-2000:]}")
    return time.perf_counter() - t0


def _scores(results: Path) -> list[tuple]:
    import duckdb

    con = duckdb.connect(str(results), read_only=True)
    try:
        return con.execute("SELECT track, metric, item_id, score, detail FROM item_scores ORDER BY rowid").fetchall()
    finally:
        con.close()


def _stored(results: Path) -> int:
    """Item scores stored so far, read through the store's lock (as `trb query` does)."""
    from trb.results import ResultsError, ResultsStore

    if not results.exists():
        return 0
    try:
        return ResultsStore(results, create=False).query("SELECT count(*) FROM item_scores")[1][0][0]
    except ResultsError:
        return 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=4000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--work", type=Path, default=None)
    args = ap.parse_args()
    from engine_helpers import make_reference, make_release

    work = args.work or Path(tempfile.mkdtemp(prefix="trb-bench-runners-"))
    release = work / "rel" / "corpus" / "releases" / "0.1.0"
    if not (release / "manifest.json").is_file():
        release = make_release(work / "rel", sessions=args.sessions, seed=11)
    model = work / "ref"
    if not (model / "config.json").is_file():
        make_reference(release, model)
    base = ["run", "--release", str(release), "--adapter", "native", "--model", str(model), "--baseline",
            "trace-full", "--tracks", "1,3", "-q"]
    ray_bin = Path(sys.executable).with_name("ray")
    temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    port = _free_port()
    subprocess.run([str(ray_bin), "start", "--head", "--num-cpus", str(args.workers), "--num-gpus", "0", "--port",
                    str(port), "--node-ip-address", "127.0.0.1", "--include-dashboard", "false", "--temp-dir", temp,
                    "--disable-usage-stats"], check=True, env=_env(), capture_output=True, timeout=180)
    try:
        local, ray, resumed, reference = [], [], [], None
        for i in range(args.repeats):
            r = work / f"local-{i}.duckdb"
            local.append(_timed([*base, "--results", str(r)]))
            reference = reference or _scores(r)
            assert _scores(r) == reference, "a local run differs"
            r = work / f"ray-{i}.duckdb"
            ray.append(_timed([*base, "--results", str(r), "--runner", "ray", "--address", f"127.0.0.1:{port}",
                               "--workers", str(args.workers)]))
            assert _scores(r) == reference, "a Ray run's item scores differ from the local runner's"
            r = work / f"resumed-{i}.duckdb"
            t0 = time.perf_counter()
            p = _cli([*base, "--results", str(r), "--flush-seconds", "0.5"])
            while _stored(r) < len(reference) // 3 and p.poll() is None:
                time.sleep(0.05)
            p.send_signal(signal.SIGKILL)
            p.wait()
            from trb.results import ResultsStore

            unfinished_runs = ResultsStore(r, create=False).unfinished_runs()
            if not unfinished_runs:
                raise SystemExit("the run finished before the kill landed: use more --sessions")
            (unfinished,) = unfinished_runs
            stored = unfinished["n_stored"]
            _timed(["run", "--resume", unfinished["run_id"], "--results", str(r), "-q"])
            resumed.append(time.perf_counter() - t0)
            assert _scores(r) == reference, "a resumed run's item scores differ from an uninterrupted one's"
        n = len(reference)
        print(f"# runners: {args.sessions:,} sessions, {n:,} item scores (Tracks 1 and 3, eval), {os.cpu_count()} cores; "
              f"median of {args.repeats}; every run's item scores equal")
        print("| runner | wall s | items/s | vs local |")
        print("|---|---:|---:|---:|")
        lm = statistics.median(local)
        for name, xs in (("local", local), (f"ray, {args.workers} workers (cluster already up)", ray),
                         ("local, SIGKILL a third of the way + `--resume`", resumed)):
            m = statistics.median(xs)
            print(f"| {name} | {m:.1f} | {n / m:,.0f} | {m / lm:.2f}x |")
        print(f"(last kill: {stored:,} of {n:,} item scores were stored when it landed)")
    finally:
        subprocess.run([str(ray_bin), "stop", "--force"], env=_env(), capture_output=True, timeout=120)
        shutil.rmtree(temp, ignore_errors=True)
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
