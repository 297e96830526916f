"""Track 3 — self-attribution (the false-credit test), spec §3.

After each attribution item's outcome, ``emit_r`` gives the agent's caused_by_self
belief; thresholded at 0.5 it predicts ``self`` or ``exogenous``, scored against
the item's label by balanced accuracy. A belief the adapter did not report is
recorded as ``missing`` and counts as wrong (never a silent default).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import orjson
import pyarrow as pa

from trb.adapters.capabilities import bind
from trb.context import StepContext
from trb.releases import Release
from trb.stats import balanced_accuracy_by_session
from trb.tracks.base import Column, ItemRow, Metric, register_track
from trb.tracks.timing import AdapterTimer

__all__ = ["TRACK", "Track3", "Track3Item", "track3_items", "score_track3", "THRESHOLD"]

THRESHOLD = 0.5
BATCH = 256


@dataclass
class Track3Item:
    item_id: str
    session_id: str
    t: int
    split: str
    context_id: str | None
    context: StepContext
    label: str  # "self" or "exogenous"


def track3_items(release: Release, split: str = "eval") -> Iterator[Track3Item]:
    """Every attribution item of ``split`` with a self/exogenous label, with the context after its outcome."""
    if "attribution" not in release.configs:
        return
    rows = release.rows("SELECT item_id, session_id, t, label FROM attribution WHERE split = ? "
                        "AND label IN ('self', 'exogenous') ORDER BY session_id, t, item_id", [split])
    for sess, sess_rows in release.with_sessions(rows):
        for row in sess_rows:
            yield Track3Item(row["item_id"], sess.session_id, row["t"], sess.split, sess.context_id,
                             sess.context_after(row["t"]), row["label"])


def score_track3(adapter, items: Iterable[Track3Item], timer: AdapterTimer | None = None,
                 progress=None) -> tuple[list[ItemRow], dict]:
    bound = bind(adapter)
    timer = timer or AdapterTimer()
    rows: list[ItemRow] = []
    missing = 0
    pending: list[Track3Item] = []

    def flush() -> None:
        nonlocal missing
        if not pending:
            return
        with timer.timed(len(pending)):
            rs = bound.emit_many([i.context for i in pending])
        for item, r in zip(pending, rs):
            belief = (r or {}).get("caused_by_self")
            if belief is None:
                predicted = "missing"
                missing += 1
            else:
                predicted = "self" if float(belief) >= THRESHOLD else "exogenous"
            rows.append({"track": "3", "metric": "attribution", "item_id": item.item_id, "session_id": item.session_id,
                         "t": item.t, "split": item.split, "context_id": item.context_id,
                         "score": 1.0 if predicted == item.label else 0.0, "label": item.label,
                         "predicted": predicted, "belief": None if belief is None else float(belief),
                         "detail": orjson.dumps({"r": r}, option=orjson.OPT_SORT_KEYS, default=str).decode()})
        if progress is not None:
            progress(len(pending))
        pending.clear()

    for item in items:
        pending.append(item)
        if len(pending) >= BATCH:
            flush()
    flush()
    return rows, {"scored": len(rows), "missing_belief": missing}


class Track3:
    """Track 3 on the registry: balanced accuracy of the caused_by_self attribution."""

    id = "3"
    name = "self-attribution"
    section = "TRB spec §3, Track 3 (the false-credit test)"
    needs: tuple[type, ...] = ()
    metrics = (
        Metric("3", "3", "attribution", "Track 3 — attribution BA",
               "balanced accuracy of caused_by_self attribution (belief ≥ 0.5 predicts self)",
               headline=True, bounds=(0.0, 1.0), chance=0.5),
    )
    columns = (
        Column("label", pa.string(), "VARCHAR", "Track 3: the item's label (self or exogenous)"),
        Column("predicted", pa.string(), "VARCHAR", "Track 3: self, exogenous, or missing"),
        Column("belief", pa.float64(), "DOUBLE", "Track 3: the caused_by_self belief emitted"),
    )

    def count(self, release: Release, split: str) -> int:
        if "attribution" not in release.configs:
            return 0
        return release.rows("SELECT count(*) AS n FROM attribution WHERE split = ? AND label IN ('self', 'exogenous')",
                            [split])[0]["n"]

    def items(self, release: Release, split: str) -> Iterator[Track3Item]:
        return track3_items(release, split)

    def score(self, adapter, items, timer=None, progress=None):
        return score_track3(adapter, items, timer, progress)

    def aggregate(self, metric: Metric, columns, *, n_resamples: int, confidence: float, seed: int):
        return balanced_accuracy_by_session(columns["label"], columns["predicted"], columns["session_id"],
                                            n_resamples=n_resamples, confidence=confidence, seed=seed)


TRACK = register_track(Track3())
