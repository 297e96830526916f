"""What the review app shows of a results store: runs with per-track scores, the worst items.

Headless (no ``textual``): reads ``results.duckdb`` through :class:`trb.results.ResultsStore`.
A run's figures come from :func:`trb.report.run_profile`, the same computation ``trb report``
uses, one per headline metric of the track registry (Track 1: G; Track 3: balanced accuracy),
so the app and the report cannot disagree. An item row names its session and step
(``session_id``, ``t``), which is where the app jumps.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["RunSummary", "WorstItem", "read_runs", "worst_items"]

#: The tracks the app lists worst-first.
WORST_TRACKS = ("1", "3")


@dataclass(frozen=True)
class Column:
    """One figure column of the runs table: a headline metric of the track registry."""

    key: str
    track: str
    title: str


def metric_columns() -> list[Column]:
    """The runs table's figure columns: every headline metric of the registered tracks, in registry order."""
    from trb.tracks.base import all_metrics

    return [Column(m.key, m.track, m.title) for m in all_metrics() if m.headline]


@dataclass(frozen=True)
class RunSummary:
    run_id: str
    created_at: str
    baseline: str | None
    adapter_tier: str | None
    release_version: str | None
    smoke_test: bool
    split: str | None
    tracks: dict[str, tuple[float | None, int]]  # headline metric key -> (the report's figure, items)
    notes: dict[str, str]  # metric key -> why there is no figure (not run, not applicable, undefined)


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
    """Every run in the store, oldest first, with each headline metric's figure as ``trb report`` computes it."""
    from trb.report import run_profile

    store = _store(path)
    keys = [c.key for c in metric_columns()]
    out = []
    for r in store.runs():
        profile = run_profile(store, r, n_resamples=0)
        tracks = {k: (profile[k]["score"], profile[k]["n_items"]) for k in keys
                  if k in profile and profile[k]["n_items"]}
        notes = {k: profile[k]["note"] for k in keys if k in profile and profile[k].get("note")}
        out.append(RunSummary(r["run_id"], r["created_at"], r["baseline"], r["adapter_tier"], r["release_version"],
                              bool(r["smoke_test"]), r["split"], tracks, notes))
    return out


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
