"""Eval engine cost: `python bench/engine.py [--sessions 2000,10000] [--repeats 3]`.

1. Engine overhead: `run_tracks` on a smoke release of each size, with each native
   reference model, against its named peer, the bare adapter calls it makes (the
   same batched `act_batch` / `emit_r_batch` calls on the same prebuilt contexts,
   timed alone). Each repeat times one run and then its peer, side by side in this
   process, after a full garbage collection; the table gives the medians of the
   times and of the per-repeat ratios, in wall time and in this process's CPU time
   (on a shared machine the CPU ratio is the steadier figure). Goal: ≤ 1.5×.
2. The results store at scale: 1M item scores written with `ResultsStore.record_run`
   (file size per 1M items), and the latency of the report's queries on them
   (`build_report`, which reads the items and bootstraps by session).

The models are trained once, on the first release, for a few epochs (`--epochs`),
and score every size: the engine's overhead and the model's cost per item do not
depend on how well the model learned, nor on which release it learned from. Torch
runs on one thread (`--torch-threads`), so the peer does not change speed with the
load on the machine's other cores.
"""

from __future__ import annotations

import argparse
import gc
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
    """A smoke release of ``sessions`` simulated sessions under ``work`` (reused if already cut there)."""
    from corpus import Corpus, ingest, init_corpus
    from corpus.release import cut_release
    from corpus.simulate import write_simulation

    done = work / "corpus" / "releases" / "0.1.0"
    if (done / "manifest.json").is_file():
        return done
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    write_simulation(work / "sim.jsonl", n_sessions=sessions, seed=seed, progress=False)
    c = Corpus(init_corpus(work / "corpus"))
    ingest(c, [work / "sim.jsonl"], progress=False)
    (work / "sim.jsonl").unlink()
    return cut_release(c, "0.1.0", kind="smoke", progress=False).directory


def _bare(adapter, release_dir: Path) -> tuple[float, float, int]:
    """The adapter calls a run makes, on prebuilt items, timed alone: (wall s, CPU s, items)."""
    from trb.releases import Release
    from trb.tracks.track1 import BATCH, track1_items
    from trb.tracks.track3 import track3_items

    rel = Release(release_dir)
    t1 = [i for i in track1_items(rel, "eval") if i.phi_type == "distribution" and i.context.action_space]
    t3 = list(track3_items(rel, "eval"))
    rel.close()
    gc.collect()
    c0, t0 = time.process_time(), time.perf_counter()
    for k in range(0, len(t1), BATCH):
        chunk = t1[k:k + BATCH]
        adapter.act_batch([i.context for i in chunk], [i.r_prime for i in chunk])
    for k in range(0, len(t3), BATCH):
        adapter.emit_r_batch([i.context for i in t3[k:k + BATCH]])
    return time.perf_counter() - t0, time.process_time() - c0, len(t1) + len(t3)


def _run(adapter, release_dir: Path, results: Path, baseline: str) -> tuple[float, float, dict]:
    """One `trb run` of Tracks 1 and 3 into a fresh results store: (wall s, CPU s, run row)."""
    from trb.run import run_tracks

    gc.collect()
    c0, t0 = time.process_time(), time.perf_counter()
    run = run_tracks(release_dir, adapter, baseline=baseline, results=results, progress=False)
    return time.perf_counter() - t0, time.process_time() - c0, run


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


def _overhead(args, work: Path) -> None:
    import torch

    from trb.adapters.native import NativeAdapter
    from trb.reference.train import train_reference

    torch.set_num_threads(args.torch_threads)
    sizes = [int(s) for s in args.sessions.split(",")]
    releases = {n: _release(work / f"sessions-{n}", n, args.seed) for n in sizes}
    adapters = {}
    for variant in args.models.split(","):
        ckpt = work / f"trace-{variant}"
        if not (ckpt / "config.json").is_file():
            train_reference(releases[sizes[0]], variant, ckpt, seed=args.seed, epochs=args.epochs, progress=False)
        adapters[variant] = NativeAdapter.load(ckpt)
    print(f"# engine overhead: {os.cpu_count()} cores, python {sys.version.split()[0]}, torch {torch.__version__} "
          f"on {args.torch_threads} thread(s); smoke releases; median of {args.repeats}")
    print("| sessions | model | items | trb run s | bare adapter calls s | run / bare | run / bare (CPU) "
          "| engine µs/item | items/s (run) |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        for variant, adapter in adapters.items():
            _bare(adapter, releases[n])  # warm: imports, caches, the model's first calls
            runs, bares, ratios, cpu_ratios = [], [], [], []
            for i in range(args.repeats):
                wall, cpu, run = _run(adapter, releases[n], work / f"results-{n}-{variant}-{i}.duckdb",
                                      f"trace-{variant}")
                bare_wall, bare_cpu, items = _bare(adapter, releases[n])
                runs.append(wall)
                bares.append(bare_wall)
                ratios.append(wall / bare_wall)
                cpu_ratios.append(cpu / bare_cpu)
            wall, bare = statistics.median(runs), statistics.median(bares)
            print(f"| {n:,} | trace-{variant} | {run['n_items']:,} | {wall:.2f} | {bare:.2f} | "
                  f"{statistics.median(ratios):.2f}x | {statistics.median(cpu_ratios):.2f}x | "
                  f"{(wall - bare) / run['n_items'] * 1e6:.0f} | {run['n_items'] / wall:,.0f} |", flush=True)


def _store(args, work: Path) -> None:
    from trb.report import build_report
    from trb.results import ResultsStore

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", default="2000,10000", help="release sizes, comma-separated (default 2000,10000)")
    ap.add_argument("--models", default="ablation,full", help="reference variants, comma-separated")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=3, help="training epochs of the reference models (default 3)")
    ap.add_argument("--torch-threads", type=int, default=1)
    ap.add_argument("--items", type=int, default=1_000_000, help="item scores for the results-store part (0: skip)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", type=Path, default=None,
                    help="keep releases and models here and reuse them on the next call (default: a temporary folder)")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    work = args.work or Path(tempfile.mkdtemp(prefix="trb-bench-engine-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        _overhead(args, work)
        if args.items:
            _store(args, work)
    finally:
        for p in work.glob("*.duckdb*"):
            p.unlink()
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
