"""What the review app shows of a results store: runs with per-track scores, the worst items.

Headless (no ``textual``): reads ``results.duckdb`` through :class:`trb.results.ResultsStore`.
An item row names its session and step (``session_id``, ``t``), which is where the app jumps.
Track 1 items are counterfactuals (``item_id`` = ``cf_id``, score = 1 − TV against Φ);
Track 3 items are attribution items (score 1 right, 0 wrong).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["RunSummary", "WorstItem", "read_runs", "worst_items"]

#: The tracks the app lists worst-first.
WORST_TRACKS = ("1", "3")


@dataclass(frozen=True)
class RunSummary:
    run_id: str
    created_at: str
    baseline: str | None
    adapter_tier: str | None
    release_version: str | None
    smoke_test: bool
    tracks: dict[str, tuple[float | None, int]]  # track -> (mean score, items)


@dataclass(frozen=True)
class WorstItem:
    run_id: str
    track: str
    metric: str
    item_id: str
    session_id: str
    t: int | None
    score: float | None
    label: str | None
    predicted: str | None


def _store(path: str | os.PathLike):
    from trb.results import ResultsStore

    return ResultsStore(path)


def read_runs(path: str | os.PathLike) -> list[RunSummary]:
    """Every run in the store, oldest first, with each track's mean item score and item count."""
    store = _store(path)
    _, rows = store.query(
        "SELECT r.run_id, r.created_at, r.baseline, r.adapter_tier, r.release_version, coalesce(r.smoke_test, false), "
        "i.track, avg(i.score), count(i.item_id) "
        "FROM runs r LEFT JOIN item_scores i USING (run_id) "
        "GROUP BY ALL ORDER BY r.created_at, r.run_id, i.track")
    out: dict[str, RunSummary] = {}
    for run_id, created, baseline, tier, version, smoke, track, mean, n in rows:
        s = out.setdefault(run_id, RunSummary(run_id, created, baseline, tier, version, bool(smoke), {}))
        if track is not None:
            s.tracks[track] = (mean, n)
    return list(out.values())


def worst_items(path: str | os.PathLike, run_id: str, *, limit: int = 100) -> list[WorstItem]:
    """The run's Track 1 and Track 3 items, lowest score first (Track 1 before Track 3 on ties), at most ``limit``."""
    store = _store(path)
    rid = run_id.replace("'", "''")
    tracks = ", ".join(f"'{t}'" for t in WORST_TRACKS)
    _, rows = store.query(
        "SELECT run_id, track, metric, item_id, session_id, t, score, label, predicted FROM item_scores "
        f"WHERE run_id = '{rid}' AND track IN ({tracks}) AND score IS NOT NULL "
        f"ORDER BY score, track, item_id LIMIT {int(limit)}")
    return [WorstItem(*r) for r in rows]
