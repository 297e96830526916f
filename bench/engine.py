"""Eval engine cost: `python bench/engine.py [--sessions 2000] [--repeats 3]`.

1. Engine overhead: `run_tracks` on a smoke release with each native reference
   model, against its named peer, the bare adapter calls it makes (the same
   batched `act_batch` / `emit_r_batch` calls on the same prebuilt contexts, timed
   alone). Reports the wall-time ratio (goal ≤ 1.2×) and items/s, median of repeats.
2. The results store at scale: 1M item scores written with `ResultsStore.record_run`
   (file size per 1M items), and the latency of the report's queries on them
   (`build_report`, which reads the items and bootstraps by session).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _release(work: Path, sessions: int, seed: int) -> Path:
    from corpus import Corpus, ingest, init_corpus
    from corpus.release import cut_release
    from corpus.simulate import write_simulation

    write_simulation(work / "sim.jsonl", n_sessions=sessions, seed=seed, progress=False)
    c = Corpus(init_corpus(work / "corpus"))
    ingest(c, [work / "sim.jsonl"], progress=False)
    return cut_release(c, "0.1.0", kind="smoke", progress=False).directory


def _bare(adapter, release_dir: Path) -> tuple[float, int]:
    """The adapter calls a run makes, on prebuilt items, timed alone."""
    from trb.releases import Release
    from trb.tracks.track1 import BATCH, track1_items
    from trb.tracks.track3 import track3_items

    rel = Release(release_dir)
    t1 = [i for i in track1_items(rel, "eval") if i.phi_type == "distribution"]
    t3 = list(track3_items(rel, "eval"))
    rel.close()
    t0 = time.perf_counter()
    for k in range(0, len(t1), BATCH):
        chunk = t1[k:k + BATCH]
        adapter.act_batch([i.context for i in chunk], [i.r_prime for i in chunk])
    for k in range(0, len(t3), BATCH):
        adapter.emit_r_batch([i.context for i in t3[k:k + BATCH]])
    return time.perf_counter() - t0, len(t1) + len(t3)


def _fake_items(n: int, run_id: str, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    items = []
    for i in range(n):
        track1 = i % 10 != 0
        sid = f"sim-1-{i // 20:07d}"
        items.append({
            "run_id": run_id, "track": "1" if track1 else "3", "metric": "tv" if track1 else "attribution",
            "item_id": f"{sid}.t{i % 20}.cf{i}", "session_id": sid, "t": i % 20, "split": "eval",
            "context_id": "open-7x7-calm.careful.en", "score": rng.random(),
            "label": None if track1 else rng.choice(["self", "exogenous"]),
            "predicted": None if track1 else rng.choice(["self", "exogenous"]),
            "belief": None if track1 else rng.random(), "origin": rng.choice(["synthetic", "paired_session"]) if track1 else None,
            "adversarial": False if track1 else None, "ood": False if track1 else None,
            "detail": '{"p":{"down":0.1,"left":0.1,"right":0.6,"up":0.1,"wait":0.1},"phi":{"right":0.8,"wait":0.2},"tv":0.2}',
        })
    return items


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--items", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from trb.adapters.native import NativeAdapter
    from trb.reference.train import train_reference
    from trb.report import build_report
    from trb.results import ResultsStore
    from trb.run import run_tracks

    work = Path(tempfile.mkdtemp(prefix="trb-bench-engine-"))
    try:
        rel = _release(work, args.sessions, args.seed)
        print(f"# engine benchmark: {os.cpu_count()} cores, python {sys.version.split()[0]}, smoke release of "
              f"{args.sessions:,} simulated sessions, median of {args.repeats}")
        print("| model | items | trb run s | bare adapter calls s | run / bare | items/s (run) |")
        print("|---|---:|---:|---:|---:|---:|")
        for variant in ("ablation", "full"):
            ckpt = work / f"trace-{variant}"
            train_reference(rel, variant, ckpt, seed=args.seed, progress=False)
            adapter = NativeAdapter.load(ckpt)
            runs, bares = [], []
            for i in range(args.repeats):
                t0 = time.perf_counter()
                r = run_tracks(rel, adapter, baseline=f"trace-{variant}", results=work / f"r{i}.duckdb",
                               progress=False)
                runs.append(time.perf_counter() - t0)
                bare_s, n = _bare(adapter, rel)
                bares.append(bare_s)
            wall, bare = statistics.median(runs), statistics.median(bares)
            print(f"| trace-{variant} | {r['n_items']:,} | {wall:.2f} | {bare:.2f} | {wall / bare:.2f}x | "
                  f"{r['n_items'] / wall:,.0f} |", flush=True)

        store = ResultsStore(work / "big.duckdb")
        run_id = uuid.uuid4().hex
        items = _fake_items(args.items, run_id)
        t0 = time.perf_counter()
        store.record_run({"run_id": run_id, "created_at": "2026-11-29T00:00:00+00:00", "trb_version": "0.1",
                          "release_sha": "0" * 64, "release_version": "0.1.0", "release_kind": "smoke",
                          "smoke_test": True, "baseline": "trace-full", "adapter_tier": "native",
                          "adapter_spec": "{}", "seed": 0, "tracks": ["1", "3"], "split": "eval",
                          "synthetic_share": 0.5, "timings": "{}", "toolkit_version": "0.1.0", "n_items": args.items},
                         items)
        write_s = time.perf_counter() - t0
        del items
        size_mb = (work / "big.duckdb").stat().st_size / 1e6
        lat = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            build_report(store, n_resamples=2000)
            lat.append(time.perf_counter() - t0)
        print(f"\nresults store: {args.items:,} item scores written in {write_s:.1f} s; file {size_mb:.0f} MB "
              f"({size_mb * 1e6 / args.items:.0f} bytes/item); report over them: median {statistics.median(lat):.2f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
