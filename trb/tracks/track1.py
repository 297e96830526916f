"""Track 1 — governance (causal efficacy), spec §3.

For every counterfactual (t, r') of the split: ``act(c_t, r_override=r')`` against
the human continuation Φ(r'). Discrete steps score 1 − TV(act, Φ) (metric ``tv``;
G is their mean). Text continuations score the paired log-likelihood ratio
log p(y' | c_t, do(r')) − log p(y' | c_t, do(r_t)) (metric ``llr``) through an
adapter's optional ``score_continuation(context, text, r_override)`` hook; an
adapter without it skips those items, and the run records how many.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import orjson

from schemas.release_format import R_PREFIX, decode_r
from trb.adapters.base import check_distribution
from trb.context import StepContext
from trb.releases import Release
from trb.tracks.timing import AdapterTimer

__all__ = ["Track1Item", "track1_items", "score_track1", "total_variation"]

BATCH = 256


@dataclass
class Track1Item:
    item_id: str
    session_id: str
    t: int
    split: str
    context_id: str | None
    context: StepContext
    r_prime: dict
    phi_type: str  # "distribution" or "text"
    phi: dict | str
    origin: str | None = None
    adversarial: bool = False
    ood: bool = False


def total_variation(p: dict[str, float], q: dict[str, float]) -> float:
    """TV(p, q) = ½ Σ_a |p(a) − q(a)| over the union of their actions (a missing action has probability 0)."""
    return 0.5 * sum(abs(p.get(a, 0.0) - q.get(a, 0.0)) for a in set(p) | set(q))


def _rp(row: dict) -> dict:
    return decode_r(row, R_PREFIX["counterfactuals"])


def track1_items(release: Release, split: str = "eval") -> Iterator[Track1Item]:
    """Every counterfactual of ``split`` that has Φ, with its step's context, session by session."""
    if "counterfactuals" not in release.configs:
        return
    rows = release.rows("SELECT * FROM counterfactuals WHERE split = ? AND phi_type IS NOT NULL "
                        "ORDER BY session_id, t, cf_id", [split])
    for sess, sess_rows in release.with_sessions(rows):
        for row in sess_rows:
            phi = ({p["action"]: p["p"] for p in row["phi_probs"]} if row["phi_type"] == "distribution"
                   else row["phi_text"])
            yield Track1Item(row["cf_id"], sess.session_id, row["t"], sess.split, sess.context_id,
                             sess.context(row["t"]), _rp(row), row["phi_type"], phi, row["origin"],
                             bool(row["adversarial"]), bool(row["ood"]))


def _row(item: Track1Item, metric: str, score: float, detail: dict) -> dict:
    return {"track": "1", "metric": metric, "item_id": item.item_id, "session_id": item.session_id, "t": item.t,
            "split": item.split, "context_id": item.context_id, "score": score, "label": None, "predicted": None,
            "belief": None, "origin": item.origin, "adversarial": item.adversarial, "ood": item.ood,
            "detail": orjson.dumps(detail, option=orjson.OPT_SORT_KEYS).decode()}


def score_track1(adapter, items: Iterable[Track1Item], timer: AdapterTimer | None = None,
                 progress=None) -> tuple[list[dict], dict]:
    """Score every item through ``adapter``; return the item rows and counts (scored, skipped by reason)."""
    timer = timer or AdapterTimer()
    who = type(adapter).__name__
    rows: list[dict] = []
    skipped = {"text_phi_without_score_continuation": 0, "open_ended_step": 0}
    batch_act = getattr(adapter, "act_batch", None)
    scorer = getattr(adapter, "score_continuation", None)
    pending: list[Track1Item] = []

    def flush() -> None:
        if not pending:
            return
        with timer.timed(len(pending)):
            if batch_act is not None:
                dists = batch_act([i.context for i in pending], [i.r_prime for i in pending])
            else:
                dists = [adapter.act(i.context, r_override=i.r_prime) for i in pending]
        for item, p in zip(pending, dists):
            p = check_distribution(p, item.context.action_space, who)
            tv = total_variation(p, item.phi)
            rows.append(_row(item, "tv", 1.0 - tv, {"p": p, "phi": item.phi, "tv": tv}))
        if progress is not None:
            progress(len(pending))
        pending.clear()

    for item in items:
        if item.phi_type == "distribution":
            if item.context.action_space is None:
                skipped["open_ended_step"] += 1
                continue
            pending.append(item)
            if len(pending) >= BATCH:
                flush()
        elif scorer is None:
            skipped["text_phi_without_score_continuation"] += 1
        else:
            with timer.timed(2):
                lp_cf = scorer(item.context, item.phi, r_override=item.r_prime)
                lp_fact = scorer(item.context, item.phi, r_override=None)
            rows.append(_row(item, "llr", lp_cf - lp_fact, {"logp_do_r_prime": lp_cf, "logp_do_r_t": lp_fact}))
            if progress is not None:
                progress(1)
    flush()
    return rows, {"scored": len(rows), "skipped": skipped}
