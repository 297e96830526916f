"""`trb run`: drive one adapter through the tracks on a release and record every item score."""

from __future__ import annotations

import json
import os
import random
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

from tqdm import tqdm

from trb.errors import UsageError
from trb.releases import Release
from trb.tracks.timing import AdapterTimer
from trb.tracks.track1 import score_track1, track1_items
from trb.tracks.track3 import score_track3, track3_items

__all__ = ["ADAPTERS", "BASELINES", "TRACKS", "run_tracks", "load_adapter", "TOOLKIT_VERSION"]

TOOLKIT_VERSION = "0.1.0"
#: Baseline names used everywhere (spec §4): 1-3 through the proxy adapter, 4-5 through the native one.
BASELINES = ("instruct-base", "cot-prompted", "cot-sft", "trace-ablation", "trace-full")
TRACKS = ("1", "3")


ADAPTERS = ("native", "proxy")


def load_adapter(kind: str, model: str | os.PathLike, **options):
    """The adapter of ``kind`` for the checkpoint at ``model`` (proxy options: gguf_file, dtype, device, mode, scaffold)."""
    if kind == "native":
        from trb.adapters.native import NativeAdapter

        return NativeAdapter.load(model)
    if kind == "proxy":
        from trb.adapters.proxy import ProxyAdapter

        return ProxyAdapter.load(model, **{k: v for k, v in options.items() if v is not None})
    raise UsageError(f"unknown adapter {kind!r} (available: {', '.join(ADAPTERS)})")


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    try:
        import numpy as np

        np.random.seed(seed % 2**32)
    except ImportError:  # pragma: no cover - numpy is a dependency
        pass
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)


def _count(release: Release, track: str, split: str) -> int:
    if track == "1" and "counterfactuals" in release.configs:
        return release.rows("SELECT count(*) AS n FROM counterfactuals WHERE split = ? AND phi_type IS NOT NULL",
                            [split])[0]["n"]
    if track == "3" and "attribution" in release.configs:
        return release.rows("SELECT count(*) AS n FROM attribution WHERE split = ? AND label IN ('self', 'exogenous')",
                            [split])[0]["n"]
    return 0


def _emit_counts(adapter) -> dict | None:
    """An adapter's emit_r counters (``emit_count``, ``missing_counts``: the proxy adapter keeps them), or None."""
    missing = getattr(adapter, "missing_counts", None)
    calls = getattr(adapter, "emit_count", None)
    if missing is None or calls is None:
        return None
    return {"calls": int(calls), "missing": {str(k): int(v) for k, v in dict(missing).items()}}


def run_tracks(release_dir: str | os.PathLike, adapter, *, baseline: str, tracks: tuple[str, ...] = TRACKS,
               split: str = "eval", results: str | os.PathLike = "results.duckdb", seed: int = 0,
               progress: bool = True) -> dict:
    """Run ``tracks`` of ``release_dir`` through ``adapter``; record one run row and its item scores.

    Returns the run row (with ``run_id``), plus ``summary``: items scored and skipped per track.
    For an adapter that counts its emit_r calls and missing slots (the proxy adapter), the run's
    ``timings`` JSON also holds ``emit_r``: ``{"calls": n, "missing": {slot: n}}`` for this run alone.
    """
    from trb.results import ResultsStore

    bad = [t for t in tracks if t not in TRACKS]
    if bad:
        raise UsageError(f"track(s) {bad} are not available yet (available: {', '.join(TRACKS)})")
    release = Release(release_dir)
    _seed_everything(seed)
    emit_before = _emit_counts(adapter)
    timer = AdapterTimer()
    started = time.perf_counter()
    rows: list[dict] = []
    summary: dict[str, dict] = {}
    per_track_s: dict[str, float] = {}
    total = sum(_count(release, t, split) for t in tracks)
    bar = tqdm(total=total, unit="item", desc=f"{baseline} on {release.version}", disable=None if progress else True,
               leave=False)
    try:
        for track in tracks:
            t0 = time.perf_counter()
            if track == "1":
                r, s = score_track1(adapter, track1_items(release, split), timer, progress=bar.update)
            else:
                r, s = score_track3(adapter, track3_items(release, split), timer, progress=bar.update)
            rows += r
            summary[track] = s
            per_track_s[track] = time.perf_counter() - t0
    finally:
        bar.close()
        release.close()
    wall = time.perf_counter() - started
    emit = _emit_counts(adapter)
    if emit is not None and emit_before is not None:  # this run's share of the adapter's counters
        emit = {"calls": emit["calls"] - emit_before["calls"],
                "missing": {s: n - emit_before["missing"].get(s, 0) for s, n in emit["missing"].items()}}
    run = {
        "run_id": uuid.uuid4().hex,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "trb_version": release.manifest.get("trb_version", "0.1"),
        "release_sha": release.sha, "release_version": release.version, "release_kind": release.kind,
        "smoke_test": release.smoke_test, "baseline": baseline, "adapter_tier": adapter.tier,
        "adapter_spec": json.dumps(adapter.spec(), sort_keys=True), "seed": seed, "tracks": list(tracks),
        "split": split, "synthetic_share": release.synthetic_share,
        "timings": json.dumps({"wall_s": wall, "adapter_s": timer.seconds, "adapter_calls": timer.calls,
                               "per_track_s": per_track_s, "summary": summary,
                               **({"emit_r": emit} if emit is not None else {})}, sort_keys=True),
        "toolkit_version": TOOLKIT_VERSION, "n_items": len(rows),
    }
    for row in rows:
        row["run_id"] = run["run_id"]
    ResultsStore(Path(results)).record_run(run, rows)
    return {**run, "summary": summary}
