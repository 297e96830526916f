"""Track 1 — governance (causal efficacy), spec §3.

For every counterfactual (t, r') of the split: ``act(c_t, r_override=r')`` against
the human continuation Φ(r'). Discrete steps score 1 − TV(act, Φ) (metric ``tv``;
G is their mean). Text continuations score the paired log-likelihood ratio
log p(y' | c_t, do(r')) − log p(y' | c_t, do(r_t)) (metric ``llr``) through the
``continuation_scoring`` capability; an adapter without it leaves those items
unscored, and the run records how many and why ("needs continuation_scoring").
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import orjson
import pyarrow as pa

from schemas.release_format import R_PREFIX, R_SLOTS, decode_r
from trb.adapters.capabilities import ContinuationScoring, bind
from trb.context import StepContext
from trb.distributions import check_distribution, total_variation
from trb.releases import Release
from trb.stats import mean_by_session
from trb.tracks.base import Column, ItemRow, Metric, register_track
from trb.tracks.timing import AdapterTimer

__all__ = ["TRACK", "Track1", "Track1Item", "track1_items", "score_track1", "total_variation", "BATCH"]

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


#: The counterfactual columns Track 1 reads (besides ``phi_probs``, read flat), in one query, as Arrow columns.
_RP_KEYS = tuple(R_PREFIX["counterfactuals"] + k for k in (*R_SLOTS, "ext"))
_CF_COLUMNS = ("cf_id", "session_id", "t", *_RP_KEYS, "origin", "adversarial", "ood", "phi_type", "phi_text")


def _phis(probs: pa.ChunkedArray, kinds: list[str], texts: list) -> list:
    """Each row's Φ: ``{action: p}`` for a distribution (read from the flat list<struct> children, sliced by the
    offsets, not struct by struct), the text for a text continuation."""
    probs = probs.combine_chunks()
    flat = probs.flatten()
    actions, ps = flat.field("action").to_pylist(), flat.field("p").to_pylist()
    offsets = probs.offsets.to_pylist()
    base = offsets[0] if offsets else 0
    return [dict(zip(actions[a - base:b - base], ps[a - base:b - base])) if kind == "distribution" else text
            for a, b, kind, text in zip(offsets, offsets[1:], kinds, texts)]


def track1_items(release: Release, split: str = "eval") -> Iterator[Track1Item]:
    """Every counterfactual of ``split`` that has Φ, with its step's context, session by session."""
    if "counterfactuals" not in release.configs:
        return
    table = release.con.sql(
        f"SELECT {', '.join(_CF_COLUMNS)}, phi_probs FROM counterfactuals "
        "WHERE split = ? AND phi_type IS NOT NULL ORDER BY session_id, t, cf_id", params=[split]).to_arrow_table()
    cols = {name: table.column(name).to_pylist() for name in _CF_COLUMNS}
    phis = _phis(table.column("phi_probs"), cols["phi_type"], cols["phi_text"])
    rp = R_PREFIX["counterfactuals"]
    rps = [decode_r(dict(zip(_RP_KEYS, values)), rp) for values in zip(*(cols[k] for k in _RP_KEYS))]
    cf_id, t, origin, adv, ood, kind = (cols[c] for c in ("cf_id", "t", "origin", "adversarial", "ood", "phi_type"))
    rows = [{"session_id": sid, "i": i} for i, sid in enumerate(cols["session_id"])]
    for sess, sess_rows in release.with_sessions(rows):
        for row in sess_rows:
            i = row["i"]
            yield Track1Item(cf_id[i], sess.session_id, t[i], sess.split, sess.context_id, sess.context(t[i]),
                             rps[i], kind[i], phis[i], origin[i], bool(adv[i]), bool(ood[i]))


def _row(item: Track1Item, metric: str, score: float, detail: dict) -> ItemRow:
    return {"track": "1", "metric": metric, "item_id": item.item_id, "session_id": item.session_id, "t": item.t,
            "split": item.split, "context_id": item.context_id, "score": score, "origin": item.origin,
            "adversarial": item.adversarial, "ood": item.ood,
            "detail": orjson.dumps(detail, option=orjson.OPT_SORT_KEYS).decode()}


def score_track1(adapter, items: Iterable[Track1Item], timer: AdapterTimer | None = None,
                 progress=None) -> tuple[list[ItemRow], dict]:
    """Score every item through ``adapter``; return the item rows and counts (scored, skipped by reason)."""
    bound = bind(adapter)
    timer = timer or AdapterTimer()
    rows: list[ItemRow] = []
    skipped = {"text_phi_without_score_continuation": 0, "open_ended_step": 0}
    scorer = bound.get(ContinuationScoring)
    pending: list[Track1Item] = []

    def flush() -> None:
        if not pending:
            return
        with timer.timed(len(pending)):
            dists = bound.act_many([i.context for i in pending], [i.r_prime for i in pending])
        for item, p in zip(pending, dists):
            p = check_distribution(p, item.context.action_space, bound.name)
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
                lp_cf = scorer.score_continuation(item.context, item.phi, r_override=item.r_prime)
                lp_fact = scorer.score_continuation(item.context, item.phi, r_override=None)
            rows.append(_row(item, "llr", lp_cf - lp_fact, {"logp_do_r_prime": lp_cf, "logp_do_r_t": lp_fact}))
            if progress is not None:
                progress(1)
    flush()
    summary = {"scored": len(rows), "skipped": skipped}
    if skipped["text_phi_without_score_continuation"]:
        summary["not_applicable"] = {"1-llr": {"needs": ["continuation_scoring"],
                                               "n_items": skipped["text_phi_without_score_continuation"]}}
    return rows, summary


class Track1:
    """Track 1 on the registry: G = 1 − mean TV, and the paired LLR variant."""

    id = "1"
    name = "governance"
    section = "TRB spec §3, Track 1 (causal efficacy)"
    needs: tuple[type, ...] = ()
    metrics = (
        Metric("1", "1", "tv", "Track 1 — governance G", "G = 1 − mean TV(act(c_t, r′), Φ(r′))",
               headline=True, bounds=(0.0, 1.0)),
        Metric("1-llr", "1", "llr", "Track 1 — LLR variant",
               "mean paired log-likelihood ratio log p(y′ | c_t, do(r′)) − log p(y′ | c_t, do(r_t)) "
               "(open-ended actions)", headline=False, needs=(ContinuationScoring,)),
    )
    columns = (
        Column("origin", pa.string(), "VARCHAR", "Track 1: the counterfactual's origin"),
        Column("adversarial", pa.bool_(), "BOOLEAN", "Track 1: r′ built to mislead"),
        Column("ood", pa.bool_(), "BOOLEAN", "Track 1: r′ out of distribution"),
    )

    def count(self, release: Release, split: str) -> int:
        if "counterfactuals" not in release.configs:
            return 0
        return release.rows("SELECT count(*) AS n FROM counterfactuals WHERE split = ? AND phi_type IS NOT NULL",
                            [split])[0]["n"]

    def items(self, release: Release, split: str) -> Iterator[Track1Item]:
        return track1_items(release, split)

    def score(self, adapter, items, timer=None, progress=None):
        return score_track1(adapter, items, timer, progress)

    def aggregate(self, metric: Metric, columns, *, n_resamples: int, confidence: float, seed: int):
        return mean_by_session(columns["score"].astype(float), columns["session_id"], n_resamples=n_resamples,
                               confidence=confidence, seed=seed)


TRACK = register_track(Track1())
