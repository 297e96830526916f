"""Track 6 — transfer: each track's figure on every transfer context, its minimum, and its drop from eval.

Spec §3 Track 6: re-run the tracks on each transfer context; report, per track, the
**minimum over contexts** and the **drop** from the in-distribution (eval) number.
Spec §5: a track with a suspiciously high level and a low transfer number is
**flagged, not celebrated** (the anti-Goodhart line).

What is computed, for one track's headline metric of one baseline (:func:`transfer_estimate`):

* ``eval``: the figure on the eval run's items; ``contexts``: the figure on the transfer
  run's items of each transfer context (items grouped by their ``context_id``);
* ``min``: the smallest context figure (and which context), ``drop`` = eval − min.

**What is resampled.** The eval sessions and each context's sessions are independent
samples (a transfer context has its own subjects), so the bootstrap resamples each of
them on its own: in each of ``n_resamples`` replicates, the eval sessions are drawn
with replacement (as many as there are), and, independently, each context's sessions
are drawn with replacement from that context only (stratified by context). A drawn
session brings all of its items. From one replicate come the eval figure, every
context's figure, their minimum and the drop, so the interval of the minimum accounts
for which context is lowest, and that of the drop for both sides' noise. Intervals are
percentile intervals (as :mod:`trb.stats`). The draws: one
``numpy.random.default_rng(seed)``; first an integer array of shape
(``n_resamples``, k_eval) over the eval sessions sorted by id, then one of shape
(``n_resamples``, k_c) per context, contexts sorted by id. A replicate where a figure is
undefined (balanced accuracy without both classes) is left out of that figure's
interval, and of the minimum's and the drop's, and counted. A side with one session
gives no interval (as :mod:`trb.stats`): its figure, the minimum and the drop then
have none.

The rules the report applies (:func:`collapse_check`, :func:`anti_goodhart`):

* **Collapse** (the spec's pass bar: no track collapses to baseline off-distribution).
  The reference is the instruct-base baseline's figure on the same context. A track of
  a baseline collapses when it is above instruct-base in distribution (eval point value
  above instruct-base's eval point value) and, on at least one transfer context, its
  point value is at or below instruct-base's point value there, or its CI there
  contains instruct-base's point value.
* **Anti-Goodhart flag** (spec §5), for figures on a 0–1 scale (G, balanced accuracy):
  flagged when the eval level is high, eval point value ≥ :data:`HIGH_LEVEL`, and the
  transfer drop is large, drop point value ≥ :data:`LARGE_DROP` with its CI's lower
  bound above 0 (with no CI, the point value alone).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from trb.tracks.base import Metric

__all__ = ["HIGH_LEVEL", "LARGE_DROP", "REFERENCE_BASELINE", "RULES", "transfer_estimate", "collapse_check",
           "anti_goodhart"]

#: Anti-Goodhart: an eval level at or above this is "high" (figures on a 0–1 scale).
HIGH_LEVEL = 0.7
#: Anti-Goodhart: a drop (eval − min over contexts) at or above this, with a CI above 0, is "large".
LARGE_DROP = 0.1
#: "At or above" a threshold allows for floating-point rounding (0.7 − 0.6 is 0.09999999999999998).
_EPS = 1e-12
#: The baseline a collapse is measured against (spec §4 baseline 1).
REFERENCE_BASELINE = "instruct-base"

#: The rules, as every format states them.
RULES = {
    "resampled": ("eval sessions and each transfer context's sessions, each resampled with replacement on its own "
                  "(independent samples; stratified by context); a drawn session brings all its items; one replicate "
                  "gives the eval figure, every context's figure, their minimum and the drop eval − min; percentile "
                  "intervals"),
    "collapse": (f"a track collapses when it is above {REFERENCE_BASELINE} in distribution (eval point value above "
                 f"{REFERENCE_BASELINE}'s) and, on some transfer context, its point value is at or below "
                 f"{REFERENCE_BASELINE}'s point value there or its CI there contains it"),
    "anti_goodhart": (f"flagged, not celebrated (spec §5): eval level ≥ {HIGH_LEVEL} and transfer drop ≥ {LARGE_DROP} "
                      "with the drop's CI lower bound above 0 (figures on a 0–1 scale)"),
    "high_level": HIGH_LEVEL,
    "large_drop": LARGE_DROP,
    "reference_baseline": REFERENCE_BASELINE,
}


def _num(x) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


class _Group:
    """The items of one sample (the eval run, or one context): columns, and item indices per session (sorted ids)."""

    def __init__(self, columns: Mapping[str, np.ndarray], mask: np.ndarray, shared: Mapping | None = None):
        #: rows every replicate keeps as they are, outside the resampled sessions (Track 2: the dev trials its
        #: strength is chosen on)
        self.shared = shared
        self.columns = {k: np.asarray(v)[mask] for k, v in columns.items()}
        sessions = np.asarray(self.columns["session_id"]).astype(str)
        self.session_ids, self.codes = np.unique(sessions, return_inverse=True)
        self.codes = self.codes.reshape(-1)
        self.k = len(self.session_ids)
        order = np.argsort(self.codes, kind="stable")
        bounds = np.searchsorted(self.codes[order], np.arange(self.k + 1))
        self.items = [order[bounds[j]:bounds[j + 1]] for j in range(self.k)]
        self.n_items = int(mask.sum())


def _weights(idx: np.ndarray, k: int) -> np.ndarray:
    """How many times each session is drawn in each replicate: (replicates, k)."""
    b = idx.shape[0]
    flat = idx + (np.arange(b) * k)[:, None]
    return np.bincount(flat.ravel(), minlength=b * k).reshape(b, k).astype(float)


def _fast(metric: Metric, group: _Group):
    """A vectorised statistic for the figures that are ratios of per-session sums (G; balanced accuracy), as a
    function of the (replicates, k) draw weights; None for any other figure (the generic path is used)."""
    cols, codes, k = group.columns, group.codes, group.k
    if metric.key == "1":
        score = cols["score"].astype(float)
        sums = np.bincount(codes, weights=score, minlength=k)
        counts = np.bincount(codes, minlength=k).astype(float)
        return lambda w: (w @ sums) / (w @ counts)
    if metric.key == "3" and "label" in cols and "predicted" in cols:
        lab, pred = cols["label"], cols["predicted"]
        pos, neg = lab == "self", lab == "exogenous"
        tp, p = (np.bincount(codes, weights=m.astype(float), minlength=k) for m in (pos & (pred == "self"), pos))
        tn, n = (np.bincount(codes, weights=m.astype(float), minlength=k) for m in (neg & (pred == "exogenous"), neg))

        def ba(w):
            with np.errstate(invalid="ignore", divide="ignore"):
                return ((w @ tp) / (w @ p) + (w @ tn) / (w @ n)) / 2
        return ba
    return None


def _generic(track, metric: Metric, group: _Group, confidence: float, seed: int):
    """The track's own aggregate (point value only) on the drawn sessions' items, replicate by replicate."""
    def stat(w):
        out = np.empty(w.shape[0])
        for b, row in enumerate(w):
            take = np.concatenate([np.repeat(group.items[j][None, :], int(c), axis=0).ravel()
                                   for j, c in enumerate(row) if c]) if row.any() else np.array([], dtype=int)
            sub = {k: v[take] for k, v in group.columns.items()}
            try:
                out[b] = track.aggregate(metric, sub, n_resamples=0, confidence=confidence, seed=seed).value
            except ValueError:
                out[b] = math.nan
        return out
    return stat


def _figure(track, metric: Metric, group: _Group, confidence: float, seed: int, generic: bool = False):
    weighted = getattr(track, "weighted_figure", None)
    if weighted is not None:  # the track's own statistic of session weights (Track 2's AUC)
        return weighted(metric, group.columns, group.codes, group.k, shared=group.shared)
    stat = None if generic else _fast(metric, group)
    return stat or _generic(track, metric, group, confidence, seed)


def _split_shared(track, columns: Mapping[str, np.ndarray]) -> tuple[dict, dict | None]:
    """A track with a ``choice_split`` (Track 2: dev) has rows that choose, not score: they go to every group."""
    split = getattr(track, "choice_split", None)
    if split is None or "split" not in columns:
        return dict(columns), None
    is_shared = np.asarray(columns["split"], dtype=object) == split
    if not is_shared.any() or is_shared.all():
        return dict(columns), None
    return ({k: np.asarray(v)[~is_shared] for k, v in columns.items()},
            {k: np.asarray(v)[is_shared] for k, v in columns.items()})


def _interval(dist: np.ndarray, confidence: float) -> tuple[float, float, int]:
    kept = dist[~np.isnan(dist)]
    undefined = int(dist.size - kept.size)
    if kept.size == 0:
        return math.nan, math.nan, undefined
    alpha = (1 - confidence) / 2
    low, high = np.quantile(kept, [alpha, 1 - alpha])
    return float(low), float(high), undefined


def transfer_estimate(track, metric: Metric, eval_columns: Mapping[str, np.ndarray],
                      transfer_columns: Mapping[str, np.ndarray], *, n_resamples: int = 2000,
                      confidence: float = 0.95, seed: int = 0, generic: bool = False) -> dict:
    """Track 6 for one figure: eval, each transfer context, the minimum over contexts and the drop, with CIs.

    ``eval_columns`` / ``transfer_columns``: the figure's item columns (numpy arrays by name, as
    :meth:`Track.aggregate` takes them; ``session_id`` in both, ``context_id`` in the transfer ones) of the
    eval run and the transfer run. ``generic`` forces the track's own aggregate on every replicate (the
    vectorised path for G and balanced accuracy gives the same numbers, faster). See the module docstring for
    what is resampled.

    Raises:
        ValueError: no eval item, no transfer item, a transfer item without a context, or the figure undefined on
            the eval items or on a context's items.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    eval_columns, eval_shared = _split_shared(track, eval_columns)
    transfer_columns, transfer_shared = _split_shared(track, transfer_columns)
    n_eval = len(eval_columns["session_id"])
    n_transfer = len(transfer_columns["session_id"])
    if n_eval == 0 or n_transfer == 0:
        raise ValueError(f"no {'eval' if n_eval == 0 else 'transfer'} items for {metric.title}")
    ctx = np.asarray(transfer_columns["context_id"], dtype=object)
    if any(c is None for c in ctx):
        raise ValueError(f"{sum(c is None for c in ctx)} transfer items have no context_id")
    contexts = sorted({str(c) for c in ctx})
    groups = [("eval", _Group(eval_columns, np.ones(n_eval, dtype=bool), eval_shared))]
    groups += [(c, _Group(transfer_columns, ctx.astype(str) == c, transfer_shared)) for c in contexts]
    points, dists = [], []
    rng = np.random.default_rng(seed)
    for name, g in groups:
        stat = _figure(track, metric, g, confidence, seed, generic)
        point = float(stat(np.ones((1, g.k)))[0])
        if math.isnan(point):
            where = "the eval items" if name == "eval" else f"context {name}"
            raise ValueError(f"{metric.title} is undefined on {where}")
        points.append(point)
        if n_resamples > 0:
            idx = rng.integers(0, g.k, size=(n_resamples, g.k))
            dists.append(stat(_weights(idx, g.k)) if g.k >= 2 else np.full(n_resamples, math.nan))
    entries = []
    for (name, g), point, dist in zip(groups, points, dists or [None] * len(groups)):
        low, high, undefined = _interval(dist, confidence) if dist is not None else (math.nan, math.nan, 0)
        e = {"score": point, "ci_low": _num(low), "ci_high": _num(high), "n_items": g.n_items, "n_sessions": g.k}
        if undefined and g.k >= 2:
            e["n_resamples_undefined"] = undefined
        if name != "eval":
            e = {"context_id": name, **e}
        entries.append(e)
    i_min = int(np.argmin(points[1:]))
    minimum = points[1:][i_min]
    out = {"metric": metric.key, "title": metric.title, "eval": entries[0], "contexts": entries[1:],
           "n_contexts": len(contexts),
           "min": {"score": minimum, "context_id": contexts[i_min], "ci_low": None, "ci_high": None},
           "drop": {"value": points[0] - minimum, "ci_low": None, "ci_high": None}}
    if dists and all(g.k >= 2 for _, g in groups):
        mins = np.min(np.vstack(dists[1:]), axis=0)  # nan if any context is undefined in that replicate
        low, high, undefined = _interval(mins, confidence)
        out["min"].update(ci_low=_num(low), ci_high=_num(high))
        low, high, undefined_drop = _interval(dists[0] - mins, confidence)
        out["drop"].update(ci_low=_num(low), ci_high=_num(high))
        if undefined_drop:
            out["drop"]["n_resamples_undefined"] = undefined_drop
    elif n_resamples > 0:
        out["note"] = "a side with one session: no interval for the minimum or the drop"
    out["bootstrap"] = {"n_resamples": n_resamples, "confidence": confidence, "seed": seed,
                        "unit": "session, resampled within eval and within each context"}
    return out


def collapse_check(entry: dict, reference: dict | None, *, baseline: str) -> dict:
    """The collapse rule (module docstring) for one figure of ``baseline``: ``entry`` is its
    :func:`transfer_estimate`, ``reference`` instruct-base's on the same figure (None when there is none).

    Returns ``{"checked": bool, "collapsed": bool | None, "contexts": [...], "note": ...}``.
    """
    if baseline == REFERENCE_BASELINE:
        return {"checked": False, "collapsed": None, "contexts": [],
                "note": f"{REFERENCE_BASELINE} is the reference a collapse is measured against"}
    if reference is None:
        return {"checked": False, "collapsed": None, "contexts": [],
                "note": f"no {REFERENCE_BASELINE} eval and transfer runs of this figure: collapse not checked"}
    ref_ctx = {c["context_id"]: c["score"] for c in reference["contexts"]}
    if entry["eval"]["score"] <= reference["eval"]["score"]:
        return {"checked": True, "collapsed": False, "contexts": [],
                "note": f"not above {REFERENCE_BASELINE} in distribution ({entry['eval']['score']:.3f} ≤ "
                        f"{reference['eval']['score']:.3f}): no collapse to speak of"}
    hit = []
    for c in entry["contexts"]:
        ref = ref_ctx.get(c["context_id"])
        if ref is None:
            continue
        inside = c["ci_low"] is not None and c["ci_high"] is not None and c["ci_low"] <= ref <= c["ci_high"]
        if c["score"] <= ref or inside:
            hit.append(c["context_id"])
    missing = [c["context_id"] for c in entry["contexts"] if c["context_id"] not in ref_ctx]
    out = {"checked": True, "collapsed": bool(hit), "contexts": hit}
    if missing:
        out["note"] = f"{REFERENCE_BASELINE} has no figure on context(s) {', '.join(missing)}: not compared there"
    return out


def anti_goodhart(entry: dict, metric: Metric) -> dict:
    """The anti-Goodhart rule (module docstring) for one figure's :func:`transfer_estimate`:
    ``{"applies": bool, "flagged": bool, "reason": ...}``."""
    if metric.bounds != (0.0, 1.0):
        return {"applies": False, "flagged": False, "reason": "the figure is not on a 0–1 scale: the thresholds do "
                                                              "not apply"}
    level, drop = entry["eval"]["score"], entry["drop"]
    high = level >= HIGH_LEVEL - _EPS
    large = drop["value"] >= LARGE_DROP - _EPS and (drop["ci_low"] is None or drop["ci_low"] > 0)
    flagged = bool(high and large)
    ci = "" if drop["ci_low"] is None else f" [{drop['ci_low']:+.3f}, {drop['ci_high']:+.3f}]"
    if flagged:
        reason = (f"ANTI-GOODHART FLAG: high in-distribution level {level:.3f} ≥ {HIGH_LEVEL} with a large transfer "
                  f"drop {drop['value']:+.3f}{ci} ≥ {LARGE_DROP} (min on {entry['min']['context_id']}): flagged, "
                  "not celebrated (spec §5)")
    else:
        why = []
        if not high:
            why.append(f"eval level {level:.3f} < {HIGH_LEVEL}")
        if not large:
            why.append(f"drop {drop['value']:+.3f}{ci} not ≥ {LARGE_DROP} with a CI above 0")
        reason = "not flagged: " + "; ".join(why)
    return {"applies": True, "flagged": flagged, "reason": reason}
