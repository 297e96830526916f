"""Eval engine cost: `python bench/engine.py [--sessions 2000,10000] [--repeats 3]`.

1. Engine overhead: `run_tracks` on a smoke release of each size, with each native
   reference model, against its named peer, the bare adapter calls it makes (every
   batched `act_batch` / `emit_r_batch` call of one recorded run, replayed on the
   same contexts and overrides, timed alone). Each repeat times one run and then its peer, side by side in this
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


class _Recorder:
    """Wraps an adapter and records every batched call a run makes to it (and answers through it)."""

    def __init__(self, adapter):
        from trb.adapters.capabilities import BatchedAct, BatchedEmit

        self.adapter = adapter
        self.tier = adapter.tier
        self.capabilities = (BatchedAct, BatchedEmit)
        self.calls: list[tuple[str, list, list | None]] = []

    def spec(self) -> dict:
        return self.adapter.spec()

    def act(self, context, r_override=None):
        return self.act_batch([context], [r_override])[0]

    def emit_r(self, context):
        return self.emit_r_batch([context])[0]

    def act_batch(self, contexts, r_overrides=None):
        self.calls.append(("act", list(contexts), list(r_overrides or [None] * len(contexts))))
        return self.adapter.act_batch(contexts, r_overrides)

    def emit_r_batch(self, contexts):
        self.calls.append(("emit", list(contexts), None))
        return self.adapter.emit_r_batch(contexts)


def _recorded_calls(adapter, release_dir: Path, work: Path) -> list:
    """The batched adapter calls `trb run` makes on this release, in order (recorded from one real run)."""
    from trb.run import RunSpec, run_tracks

    rec = _Recorder(adapter)
    run_tracks(RunSpec(release_dir, baseline="recording", results=work / f"recording-{uuid.uuid4().hex}.duckdb",
                       tracks=("1", "3")), rec, progress=False)
    return rec.calls


def _bare(adapter, calls: list) -> tuple[float, float]:
    """The adapter calls a run makes, replayed alone on the same contexts: (wall s, CPU s)."""
    gc.collect()
    c0, t0 = time.process_time(), time.perf_counter()
    for kind, contexts, overrides in calls:
        if kind == "act":
            adapter.act_batch(contexts, overrides)
        else:
            adapter.emit_r_batch(contexts)
    return time.perf_counter() - t0, time.process_time() - c0


def _run(adapter, release_dir: Path, results: Path, baseline: str) -> tuple[float, float, dict]:
    """One `trb run` of Tracks 1 and 3 into a fresh results store: (wall s, CPU s, run row)."""
    from trb.run import RunSpec, run_tracks

    gc.collect()
    c0, t0 = time.process_time(), time.perf_counter()
    run = run_tracks(RunSpec(release_dir, baseline=baseline, results=results, tracks=("1", "3")),
                     adapter, progress=False)
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
            calls = _recorded_calls(adapter, releases[n], work)  # also warms imports, caches, the model
            _bare(adapter, calls)
            runs, bares, ratios, cpu_ratios = [], [], [], []
            for i in range(args.repeats):
                wall, cpu, run = _run(adapter, releases[n], work / f"results-{n}-{variant}-{i}.duckdb",
                                      f"trace-{variant}")
                bare_wall, bare_cpu = _bare(adapter, calls)
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
