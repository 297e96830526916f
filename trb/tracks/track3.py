"""Track 3 — self-attribution (the false-credit test), spec §3.

After each attribution item's outcome, ``emit_r`` gives the agent's caused_by_self
belief; thresholded at 0.5 it predicts ``self`` or ``exogenous``, scored against
the item's label by balanced accuracy. A belief the adapter did not report is
recorded as ``missing`` and counts as wrong (never a silent default).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import orjson
import pyarrow as pa

from trb.adapters.capabilities import bind
from trb.beliefs import belief_distribution, brier_by_session, calibration_by_session, one_class, roc_auc_by_session
from trb.releases import Release
from trb.stats import balanced_accuracy_by_session
from trb.tracks.base import Column, ItemRow, Metric, StepItem
from trb.tracks.timing import AdapterTimer

__all__ = ["TRACK", "Track3", "Track3Item", "track3_items", "score_track3", "THRESHOLD"]

THRESHOLD = 0.5
BATCH = 256


@dataclass
class Track3Item(StepItem):
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
        Metric("3-auc", "3", "attribution", "Track 3 — belief ROC AUC",
               "ROC AUC of the caused_by_self beliefs for self vs exogenous (threshold-free; a missing belief "
               "counts as 0.5)", requires="belief", headline=False, bounds=(0.0, 1.0), chance=0.5),
        Metric("3-brier", "3", "attribution", "Track 3 — Brier score",
               "mean (belief − 1{self})² (lower is better; 0.25 for a constant 0.5)", requires="belief",
               headline=False, bounds=(0.0, 1.0)),
        Metric("3-ece", "3", "attribution", "Track 3 — calibration error",
               "expected calibration error of the beliefs over 10 equal-width bins (lower is better)",
               requires="belief", headline=False, bounds=(0.0, 1.0)),
        Metric("3-self", "3", "attribution", "Track 3 — share of beliefs ≥ 0.5",
               "share of reported beliefs at or above the 0.5 threshold (1 or 0: one class predicted for every item)",
               requires="belief", headline=False, bounds=(0.0, 1.0)),
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

    #: Why an item of the split is not scored, in words (the run's ``skipped`` counters).
    reasons = {"label_pending": "an attribution item without a self or exogenous label (label pending)"}

    def _unlabelled(self, release: Release, split: str) -> int:
        if "attribution" not in release.configs:
            return 0
        return int(release.rows("SELECT count(*) AS n FROM attribution WHERE split = ? AND label IS DISTINCT FROM "
                                "'self' AND label IS DISTINCT FROM 'exogenous'", [split])[0]["n"])

    def pending(self, release: Release, split: str) -> dict[str, int]:
        """The split's attribution items without a label: ``{"label pending": n}`` (empty when none)."""
        n = self._unlabelled(release, split)
        return {"label pending": n} if n else {}

    def left_out(self, release: Release, split: str) -> dict[str, int]:
        """Items of the split the work list leaves out, by reason (counted in the run's ``skipped``)."""
        n = self._unlabelled(release, split)
        return {"label_pending": n} if n else {}

    def empty_reason(self, release: Release, split: str) -> str:
        """Why ``split`` has no labelled attribution item, in words."""
        if "attribution" not in release.configs:
            return "the release has no attribution items"
        n = self._unlabelled(release, split)
        if n:
            return f"{n:,} attribution item(s) in split {split!r}, none labelled self or exogenous (label pending)"
        return f"no attribution items in split {split!r}"

    def items(self, release: Release, split: str) -> Iterator[Track3Item]:
        return track3_items(release, split)

    def score(self, adapter, items, timer=None, progress=None):
        return score_track3(adapter, items, timer, progress)

    def aggregate(self, metric: Metric, columns, *, n_resamples: int, confidence: float, seed: int):
        opts = {"n_resamples": n_resamples, "confidence": confidence, "seed": seed}
        labels, sessions = columns["label"], columns["session_id"]
        beliefs = _beliefs(columns)
        if metric.key == "3":
            return balanced_accuracy_by_session(labels, columns["predicted"], sessions, **opts)
        if metric.key == "3-auc":
            return roc_auc_by_session(labels, beliefs, sessions, **opts)
        if metric.key == "3-brier":
            return brier_by_session(labels, beliefs, sessions, **opts)
        if metric.key == "3-ece":
            return calibration_by_session(labels, beliefs, sessions, **opts).ece
        if metric.key == "3-self":
            return belief_distribution(beliefs, sessions, threshold=THRESHOLD, **opts).share_self
        raise KeyError(metric.key)

    def describe(self, metric: Metric, columns) -> dict:
        """What the report shows beside a figure: flags for a degenerate predictor, the belief distribution and
        the reliability table (for the headline and the calibration figure)."""
        out: dict = {}
        flags = []
        if metric.key in ("3", "3-self") and one_class(columns["predicted"]):
            (cls,) = {p for p in columns["predicted"] if p in ("self", "exogenous")} or {"none"}
            flags.append(f"one class: every item predicted {cls}; balanced accuracy is 0.5 by construction")
        if metric.key == "3":
            dist = belief_distribution(_beliefs(columns), columns["session_id"], threshold=THRESHOLD, n_resamples=0)
            out["beliefs"] = {"n_reported": dist.n_items, "n_missing": dist.n_missing, "mean": dist.mean,
                              "quantiles": {f"{q:.2f}": v for q, v in dist.quantiles.items()},
                              "n_distinct": dist.n_distinct}
            if dist.constant:
                flags.append("constant belief: every reported belief is the same value")
        if metric.key == "3-ece":
            cal = calibration_by_session(columns["label"], _beliefs(columns), columns["session_id"], n_resamples=0)
            out["reliability"] = [{"low": b.low, "high": b.high, "count": b.count, "mean_belief": b.mean_belief,
                                   "self_rate": b.self_rate} for b in cal.bins if b.count]
        if flags:
            out["flags"] = flags
        return out


def _beliefs(columns) -> np.ndarray:
    return np.asarray([np.nan if b is None else b for b in columns["belief"]], dtype=float)


#: The entry point ``trb.tracks: 3`` (pyproject.toml): registered by the registry when it loads it.
TRACK = Track3()
