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

A context with fewer than two sessions has no interval: it is **named** (``small_contexts``) and kept out of the
minimum, whose interval is then over the contexts that have one (all contexts stay in ``contexts``). Where no
context has two sessions, the minimum is over all of them and has no interval.

The rules the report applies (:func:`collapse_check`, :func:`anti_goodhart`), each decided by intervals, never
by point values (:mod:`trb.verdicts`); where an interval reaches both sides the verdict is "not established":

* **Collapse** (the spec's pass bar: no track collapses to baseline off-distribution). The reference is the
  instruct-base baseline's figure on the same context, its point value the threshold (its own noise is not
  propagated: a stated simplification). Only the same figure is compared: a figure a tier names differently
  (Track 2's proxy-tier grounding against native grounding) is never compared across tiers. The baseline must be
  above instruct-base in distribution (its eval interval's lower bound above instruct-base's eval value; an
  interval reaching it: not established). Then it **collapsed** where, on some transfer context, its whole
  interval lies at or below instruct-base's value there; **did not collapse** where on every context its whole
  interval lies above it; otherwise not established.
* **Anti-Goodhart flag** (spec §5), for figures on a 0–1 scale (G, balanced accuracy): **flagged** when the eval
  level is established high (its interval's lower bound ≥ :data:`HIGH_LEVEL`) and the drop established large
  (the drop's interval's lower bound ≥ :data:`LARGE_DROP`); **not flagged** when either is established below
  its threshold (upper bound below it); otherwise not established.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from trb.tracks.base import Metric

__all__ = ["HIGH_LEVEL", "LARGE_DROP", "REFERENCE_BASELINE", "RULES", "AGAINST_OWN_ABLATION", "transfer_estimate",
           "collapse_check", "collapse_to_chance", "anti_goodhart"]

#: Anti-Goodhart: an eval level at or above this is "high" (figures on a 0–1 scale).
HIGH_LEVEL = 0.7
#: Anti-Goodhart: a drop (eval − min over contexts) at or above this, with a CI above 0, is "large".
LARGE_DROP = 0.1
#: "At or above" a threshold allows for floating-point rounding (0.7 − 0.6 is 0.09999999999999998).
_EPS = 1e-12
#: The baseline a collapse is measured against (spec §4 baseline 1).
REFERENCE_BASELINE = "instruct-base"

#: Figures that compare the model with its own no-r_t ablation (Tracks 4 and 5's headlines): the value of no effect
#: (the ablation's own level: a completion ratio of 1, a reach-rate lift of 0) is what they can collapse to.
AGAINST_OWN_ABLATION = {"viab": 1.0, "nav": 0.0}

#: The rules, as every format states them.
RULES = {
    "resampled": ("eval sessions and each transfer context's sessions, each resampled with replacement on its own "
                  "(independent samples; stratified by context); a drawn session brings all its items; one replicate "
                  "gives the eval figure, every context's figure, their minimum and the drop eval − min; percentile "
                  "intervals; a context with one session has no interval and is named and kept out of the minimum"),
    "collapse": (f"by the paired difference from {REFERENCE_BASELINE} on the same items (G, balanced accuracy; "
                 "session-bootstrap interval), the same figure only (never across tiers): above "
                 f"{REFERENCE_BASELINE} in distribution when the eval difference's interval lies above 0; then "
                 "collapsed when on some transfer context the difference's whole interval lies at or below 0, not "
                 "collapsed when on every context it lies above 0; otherwise not established (a figure without a "
                 f"paired difference: against {REFERENCE_BASELINE}'s point values); Tracks 4 and 5's figures compare "
                 "the model with its own no-r_t ablation, so they collapse to that ablation, not to another baseline: "
                 "the completion ratio's (viab) and the reach-rate lift's (nav) own intervals (paired bootstrap of the "
                 "task-and-seed pairs, per context) against 1 and 0 (never across tiers)"),
    "anti_goodhart": (f"flagged, not celebrated (spec §5), by intervals: the eval interval's lower bound ≥ {HIGH_LEVEL} "
                      f"and the drop's interval's lower bound ≥ {LARGE_DROP}; not flagged when either interval lies "
                      "below its threshold; otherwise not established (figures on a 0–1 scale: G, balanced accuracy, "
                      "AUC; never a ratio such as viab or a difference such as nav: not applicable there)"),
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
    if metric.key in _PAIRED and "condition" in cols:
        a, b = _PAIRED[metric.key]
        cond = np.asarray(cols["condition"], dtype=object)
        score = np.asarray(cols["score"], dtype=float)
        sa, sb = (np.bincount(codes, weights=np.where(cond == c, score, 0.0), minlength=k) for c in (a, b))
        na, nb = (np.bincount(codes, weights=(cond == c).astype(float), minlength=k) for c in (a, b))
        both = ((na > 0) & (nb > 0)).astype(float)  # the pairs (task and seed) with both conditions
        if metric.key == "viab":  # Σ full / Σ ablated over the drawn pairs
            num, den = sa * both, sb * both
        else:  # the mean over the drawn pairs of steered − ablated
            num, den = (sa - sb) * both, both

        def paired_stat(w):
            d = w @ den
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(d > 0, (w @ num) / np.where(d > 0, d, 1.0), np.nan)
        return paired_stat
    return None


#: Tracks 4 and 5's headline figures: the paired conditions (a, b) of one task and seed, a session of their rows.
_PAIRED = {"viab": ("full", "ablated"), "nav": ("steered", "ablated")}


def _generic(track, metric: Metric, group: _Group, confidence: float, seed: int):
    """The track's own aggregate (point value only) on the drawn sessions' items, replicate by replicate."""
    def stat(w):
        out = np.empty(w.shape[0])
        for b, row in enumerate(w):
            take = np.concatenate([np.repeat(group.items[j][None, :], int(c), axis=0).ravel()
                                   for j, c in enumerate(row) if c]) if row.any() else np.array([], dtype=int)
            # each copy of a session drawn more than once is a session of its own (a paired figure pairs by id)
            copy = np.concatenate([np.repeat(np.arange(int(c)), len(group.items[j]))
                                   for j, c in enumerate(row) if c]) if row.any() else np.array([], dtype=int)
            sub = {k: v[take] for k, v in group.columns.items()}
            sub["session_id"] = np.asarray([f"{s_}#{c_}" for s_, c_ in zip(sub["session_id"], copy)], dtype=object)
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
    small = [c for (c, g) in groups[1:] if g.k < 2]
    kept = [i for i, (_, g) in enumerate(groups[1:]) if g.k >= 2] or list(range(len(contexts)))
    i_min = min(kept, key=lambda i: points[1:][i])
    minimum = points[1:][i_min]
    out = {"metric": metric.key, "title": metric.title, "eval": entries[0], "contexts": entries[1:],
           "n_contexts": len(contexts), "small_contexts": small,
           "min": {"score": minimum, "context_id": contexts[i_min], "ci_low": None, "ci_high": None},
           "drop": {"value": points[0] - minimum, "ci_low": None, "ci_high": None}}
    if small:
        out["small_note"] = (f"{len(small)} context(s) with one session, no interval, kept out of the minimum: "
                             f"{', '.join(small)}" if len(small) < len(contexts) else
                             "every context has one session: the minimum is over all of them, with no interval")
    if dists and groups[0][1].k >= 2 and len(small) < len(contexts):
        mins = np.min(np.vstack([dists[1 + i] for i in kept]), axis=0)  # nan where a kept context is undefined
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


def _above(ci_low, ci_high, threshold: float) -> bool | None:
    """Whether an interval lies above ``threshold`` (True), at or below it (False), or reaches both sides / is
    missing (None)."""
    if ci_low is None or ci_high is None:
        return None
    if ci_low > threshold:
        return True
    if ci_high <= threshold:
        return False
    return None


def collapse_check(entry: dict, reference: dict | None, *, baseline: str, gaps: dict | None = None) -> dict:
    """The collapse rule (module docstring) for one figure of ``baseline``: ``entry`` is its
    :func:`transfer_estimate`, ``reference`` instruct-base's on the same figure (None when there is none).
    ``gaps``: the figure minus the reference's on the same items, with paired intervals (``{"eval": {value,
    ci_low, ci_high}, "contexts": {id: {...}}}``); given, the rule reads them against 0 (at or below 0: at or
    below the reference), which accounts for both baselines' noise; otherwise the reference's point values are
    the thresholds.

    Returns ``{"checked": bool, "collapsed": bool | None, "verdict": ..., "contexts": [...], "note": ...}``
    (``collapsed`` None: not established, or not checked).
    """
    if baseline == REFERENCE_BASELINE:
        return {"checked": False, "collapsed": None, "verdict": "not checked", "contexts": [],
                "note": f"{REFERENCE_BASELINE} is the reference a collapse is measured against"}
    if reference is None:
        return {"checked": False, "collapsed": None, "verdict": "not checked", "contexts": [],
                "note": f"no {REFERENCE_BASELINE} eval and transfer runs of this figure: collapse not checked"}
    if reference.get("title") is not None and entry.get("title") is not None and reference["title"] != entry["title"]:
        return {"checked": False, "collapsed": None, "verdict": "not checked", "contexts": [],
                "note": f"{REFERENCE_BASELINE}'s figure is another tier's ({reference['title']}): the tiers are never "
                        "compared"}
    if gaps is not None:
        return _collapse_by_gaps(entry, gaps)
    ev, ref_ev = entry["eval"], reference["eval"]["score"]
    above = _above(ev.get("ci_low"), ev.get("ci_high"), ref_ev)
    if above is False:
        return {"checked": True, "collapsed": False, "verdict": "not collapsed", "contexts": [],
                "note": f"not above {REFERENCE_BASELINE} in distribution (eval {ev['score']:.3f} {_ci_text(ev)} at or "
                        f"below {ref_ev:.3f}): no collapse to speak of"}
    if above is None:
        return {"checked": True, "collapsed": None, "verdict": "not established", "contexts": [],
                "note": f"above {REFERENCE_BASELINE} in distribution not established (eval {ev['score']:.3f} "
                        f"{_ci_text(ev)} against {ref_ev:.3f})"}
    ref_ctx = {c["context_id"]: c["score"] for c in reference["contexts"]}
    hit, open_ = [], []
    for c in entry["contexts"]:
        ref = ref_ctx.get(c["context_id"])
        if ref is None:
            continue
        where = _above(c.get("ci_low"), c.get("ci_high"), ref)
        if where is False:
            hit.append(c["context_id"])
        elif where is None:
            open_.append(c["context_id"])
    missing = [c["context_id"] for c in entry["contexts"] if c["context_id"] not in ref_ctx]
    if hit:
        out = {"checked": True, "collapsed": True, "verdict": "collapsed", "contexts": hit}
    elif open_:
        out = {"checked": True, "collapsed": None, "verdict": "not established", "contexts": open_,
               "note": f"an interval reaches {REFERENCE_BASELINE}'s value (or there is none) on "
                       f"{', '.join(open_)}"}
    else:
        out = {"checked": True, "collapsed": False, "verdict": "not collapsed", "contexts": []}
    if missing:
        out["note"] = (out.get("note", "") + "; " if out.get("note") else "") + (
            f"{REFERENCE_BASELINE} has no figure on context(s) {', '.join(missing)}: not compared there")
    return out


def collapse_to_chance(entry: dict, metric: Metric) -> dict:
    """The collapse rule for a figure that compares the model with its own no-r_t ablation (Tracks 4 and 5:
    :data:`AGAINST_OWN_ABLATION`): the baseline it may collapse to is that ablation, the figure's chance value (a
    completion ratio of 1, a reach-rate lift of 0), so its own intervals (paired bootstrap of the task-and-seed
    pairs, per context) are read against that value; no other baseline, and so no other tier, is compared."""
    chance = AGAINST_OWN_ABLATION[metric.key]

    def shifted(e: dict) -> dict:
        lo, hi = e.get("ci_low"), e.get("ci_high")
        return {"value": e["score"] - chance, "ci_low": None if lo is None else lo - chance,
                "ci_high": None if hi is None else hi - chance, "n_sessions": e.get("n_sessions")}

    gaps = {"eval": shifted(entry["eval"]), "contexts": {c["context_id"]: shifted(c) for c in entry["contexts"]}}
    out = _collapse_by_gaps(entry, gaps, against=f"the no-r_t ablation ({metric.key} = {chance:g})")
    out.pop("paired", None)
    out["against"] = {"figure": "the model's own no-r_t ablation", "value": chance}
    return out


def _collapse_by_gaps(entry: dict, gaps: dict, against: str = REFERENCE_BASELINE) -> dict:
    """The collapse rule on paired differences from the reference (figure − reference), against 0."""
    ev = gaps["eval"]
    above = _above(ev.get("ci_low"), ev.get("ci_high"), 0.0)
    gap_text = f"figure − {against} {ev['value']:+.3f} {_ci_text(ev)}"
    if above is False:
        return {"checked": True, "collapsed": False, "verdict": "not collapsed", "contexts": [], "paired": gaps,
                "note": f"not above {against} in distribution ({gap_text}): no collapse to speak of"}
    if above is None:
        return {"checked": True, "collapsed": None, "verdict": "not established", "contexts": [], "paired": gaps,
                "note": f"above {against} in distribution not established ({gap_text})"}
    hit, open_ = [], []
    for c in entry["contexts"]:
        g = gaps["contexts"].get(c["context_id"])
        where = None if g is None else _above(g.get("ci_low"), g.get("ci_high"), 0.0)
        if where is False:
            hit.append(c["context_id"])
        elif where is None:
            open_.append(c["context_id"])
    if hit:
        return {"checked": True, "collapsed": True, "verdict": "collapsed", "contexts": hit, "paired": gaps}
    if open_:
        return {"checked": True, "collapsed": None, "verdict": "not established", "contexts": open_, "paired": gaps,
                "note": f"the paired difference's interval reaches 0 (or there is none) on {', '.join(open_)}"}
    return {"checked": True, "collapsed": False, "verdict": "not collapsed", "contexts": [], "paired": gaps}


def _ci_text(e: dict, key_low: str = "ci_low", key_high: str = "ci_high") -> str:
    if e.get(key_low) is None or e.get(key_high) is None:
        return "(no interval)"
    return f"[{e[key_low]:.3f}, {e[key_high]:.3f}]"


def anti_goodhart(entry: dict, metric: Metric) -> dict:
    """The anti-Goodhart rule (module docstring) for one figure's :func:`transfer_estimate`:
    ``{"applies": bool, "flagged": bool, "verdict": flagged | not flagged | not established, "reason": ...}``."""
    if metric.bounds != (0.0, 1.0):
        kind = ("a ratio" if metric.key == "viab" else "a difference" if metric.key == "nav" else
                "not on a 0–1 scale")
        return {"applies": False, "flagged": False, "verdict": "not applicable",
                "reason": f"not applicable: the figure is {kind}, and the rule's thresholds are for 0–1 figures"}
    ev, drop = entry["eval"], entry["drop"]
    high = _above(ev.get("ci_low"), ev.get("ci_high"), HIGH_LEVEL - _EPS)
    large = _above(drop.get("ci_low"), drop.get("ci_high"), LARGE_DROP - _EPS)
    level_text = f"eval level {ev['score']:.3f} {_ci_text(ev)}"
    drop_text = f"drop {drop['value']:+.3f} {_ci_text(drop)}"
    if high and large:
        verdict = "flagged"
        reason = (f"ANTI-GOODHART FLAG: high in-distribution level ({level_text}, lower bound ≥ {HIGH_LEVEL}) with "
                  f"a large transfer drop ({drop_text}, lower bound ≥ {LARGE_DROP}; min on "
                  f"{entry['min']['context_id']}): flagged, not celebrated (spec §5)")
    elif high is False or large is False:
        verdict = "not flagged"
        why = ([f"{level_text} lies below {HIGH_LEVEL}"] if high is False else []) + (
            [f"{drop_text} lies below {LARGE_DROP}"] if large is False else [])
        reason = "not flagged: " + "; ".join(why)
    else:
        verdict = "not established"
        why = ([f"{level_text} reaches {HIGH_LEVEL}"] if high is None else []) + (
            [f"{drop_text} reaches {LARGE_DROP}"] if large is None else [])
        reason = "not established: " + "; ".join(why)
    return {"applies": True, "flagged": verdict == "flagged", "verdict": verdict, "reason": reason}
