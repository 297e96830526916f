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
context has two sessions, the minimum is over all of them and has no interval. A context where the figure is
undefined (a completion ratio whose ablated completions are all 0 there, a balanced accuracy without both classes)
is **named** with the reason (``undefined_contexts``), left out of ``contexts``, the minimum and the rules; the
figure is undefined (``ValueError``) only on the eval items or on every context.

**Per-context verdicts (Bonferroni).** The minimum and the drop eval − min are figures, with plain intervals. The
verdicts are decided per context: over the k contexts the figure has an interval on (``correction``: k, their ids,
level 1 − α/k with α = 1 − ``confidence``), each such context entry carries ``corrected`` (its figure's interval at
that level) and ``drop`` (eval − that context, paired within each replicate, at that level), percentiles of the
same replicates as the plain intervals (no new draws: bit for bit the same for a seed). "Some context" is then a
union of k tests each at α/(2k) one-sided, so a verdict errs at most at α/2 under any null (one, some or every
context at the threshold); the bootstrap minimum, biased low when contexts tie, decides nothing.

The rules the report applies (:func:`collapse_check`, :func:`anti_goodhart`), each decided by intervals, never
by point values (:mod:`trb.verdicts`); where an interval reaches both sides the verdict is "not established":

* **Collapse** (the spec's pass bar: no track collapses to baseline off-distribution). The reference is the
  instruct-base baseline's figure on the same context (G and balanced accuracy: the paired difference from it on
  the same items, its corrected interval computed by the report from the same seed; otherwise its point value the
  threshold, its own noise not propagated: a stated simplification). Only the same figure is compared: a figure a
  tier names differently (Track 2's proxy-tier grounding against native grounding) is never compared across tiers.
  The baseline must be above instruct-base in distribution (the eval interval, plain; an interval reaching it: not
  established; an interval at or below it: not applicable, nothing to collapse from, and the pass bar not met). Then it **collapsed** where, on some transfer context, its corrected interval lies at or below the
  reference; **did not collapse** where on every context its corrected interval lies above it; otherwise not
  established (a context with one session has no interval and decides nothing).
* **Anti-Goodhart flag** (spec §5), for figures on a 0–1 scale (G, balanced accuracy, AUC): **flagged** when the
  eval level is established high (its plain interval's lower bound ≥ :data:`HIGH_LEVEL`) and, on some context,
  the drop eval − that context is established large (its corrected interval's lower bound ≥ :data:`LARGE_DROP`);
  **not flagged** when the eval level is established below :data:`HIGH_LEVEL` or every context's corrected drop
  interval lies below :data:`LARGE_DROP`; otherwise not established.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from trb.tracks.base import Metric

__all__ = ["ALPHA", "HIGH_LEVEL", "LARGE_DROP", "REFERENCE_BASELINE", "RULES", "AGAINST_OWN_ABLATION", "transfer_estimate",
           "collapse_check", "collapse_to_chance", "anti_goodhart"]

#: Anti-Goodhart: an eval level at or above this is "high" (figures on a 0–1 scale).
HIGH_LEVEL = 0.7
#: Anti-Goodhart: a drop (eval − min over contexts) at or above this, with a CI above 0, is "large".
LARGE_DROP = 0.1
#: The two-sided miss rate of the report's intervals (95%): the verdicts' per-context intervals are at 1 − ALPHA/k.
ALPHA = 0.05
#: "At or above" a threshold allows for floating-point rounding (0.7 − 0.6 is 0.09999999999999998).
_EPS = 1e-12
#: The baseline a collapse is measured against (spec §4 baseline 1).
REFERENCE_BASELINE = "instruct-base"

#: Figures that compare the model with its own no-r_t ablation (Tracks 4 and 5's headlines): the value of no effect
#: (the ablation's own level: a completion ratio of 1, a reach-rate lift of 0) is what they can collapse to.
AGAINST_OWN_ABLATION = {"viab": 1.0, "nav": 0.0}

def _pct(level: float) -> str:
    """A confidence level as a percentage, as many digits as it needs (95%, 98.33%, 99.5%)."""
    return f"{100 * level:.4g}%"


#: The rules, as every format states them.
RULES = {
    "resampled": ("eval sessions and each transfer context's sessions, each resampled with replacement on its own "
                  "(independent samples; stratified by context); a drawn session brings all its items; one replicate "
                  "gives the eval figure, every context's figure, their minimum and the drop eval − min; percentile "
                  "intervals; a context with one session has no interval and is named and kept out of the minimum; a "
                  "context where the figure is undefined (a completion ratio with no ablated completion there, a "
                  "balanced accuracy without both classes) is named with the reason and kept out of the minimum and "
                  "the rules (the figure is undefined only when it is on the eval items or on every context)"),
    "correction": (f"the minimum and the drop eval − min are figures, shown with their plain {_pct(1 - ALPHA)} "
                   "intervals; the verdicts are decided per context with a Bonferroni correction over the k contexts "
                   "the figure has an interval on (k counts only those: a context with one session or an undefined "
                   f"figure is not one of them): each context's interval at level 1 − {ALPHA:g}/k (one-sided "
                   f"{ALPHA / 2:g}/k a side; k = 1: {_pct(1 - ALPHA)}, k = 2: {_pct(1 - ALPHA / 2)}, k = 3: "
                   f"{_pct(1 - ALPHA / 3)}), percentiles of the same bootstrap replicates; each row states its k and "
                   "level; so under any null (one, some or every context at the threshold) a verdict errs at most "
                   f"at {ALPHA / 2:g} one-sided"),
    "collapse": (f"by the paired difference from {REFERENCE_BASELINE} on the same items (G, balanced accuracy; "
                 "session-bootstrap interval), the same figure only (never across tiers): above "
                 f"{REFERENCE_BASELINE} in distribution when the eval difference's {_pct(1 - ALPHA)} interval lies "
                 "above 0 (at or below 0: not applicable, nothing to collapse from); then collapsed when on some transfer context the difference's corrected interval (level "
                 f"1 − {ALPHA:g}/k, Bonferroni over the k contexts) lies at or below 0, not collapsed when on every "
                 "context its corrected interval lies above 0; otherwise not established (a context with one session "
                 "has no interval and decides nothing; a figure without a paired difference: each context's "
                 f"corrected interval against {REFERENCE_BASELINE}'s point value there); Tracks 4 and 5's figures "
                 "compare the model with its own no-r_t ablation, so they collapse to that ablation, not to another "
                 "baseline: the completion ratio's (viab) and the reach-rate lift's (nav) own corrected intervals "
                 "(paired bootstrap of the task-and-seed pairs, per context) against 1 and 0 (never across tiers)"),
    "anti_goodhart": (f"flagged, not celebrated (spec §5), by intervals: the eval level's {_pct(1 - ALPHA)} interval's "
                      f"lower bound ≥ {HIGH_LEVEL} and, on some transfer context, the drop eval − that context's "
                      "figure (paired within each replicate) has a corrected interval (level "
                      f"1 − {ALPHA:g}/k, Bonferroni over the k contexts) whose lower bound is ≥ {LARGE_DROP}; not "
                      f"flagged when the eval interval lies below {HIGH_LEVEL} or every context's corrected drop "
                      f"interval lies below {LARGE_DROP}; otherwise not established (figures on a 0–1 scale: G, "
                      "balanced accuracy, AUC; never a ratio such as viab or a difference such as nav: not "
                      "applicable there)"),
    "alpha": ALPHA,
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


def _undefined_reason(metric: Metric) -> str:
    """Why a figure can be undefined on a context's items."""
    return {"viab": "no ablated completion: the completion ratio's denominator is 0",
            "nav": "no task-and-seed pair with both conditions",
            "3": "balanced accuracy needs both self and exogenous items"}.get(
        metric.key, f"{metric.title} is undefined on its items")


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
        if math.isnan(point) and name == "eval":
            raise ValueError(f"{metric.title} is undefined on the eval items")
        points.append(point)
        if n_resamples > 0:  # every group draws, a context undefined or not: the others' draws never depend on it
            idx = rng.integers(0, g.k, size=(n_resamples, g.k))
            dists.append(stat(_weights(idx, g.k)) if g.k >= 2 and not math.isnan(point)
                         else np.full(n_resamples, math.nan))
    defined = [i for i in range(len(contexts)) if not math.isnan(points[1 + i])]
    undefined = [{"context_id": contexts[i], "reason": _undefined_reason(metric),
                  "n_items": groups[1 + i][1].n_items, "n_sessions": groups[1 + i][1].k}
                 for i in range(len(contexts)) if i not in defined]
    if not defined:
        raise ValueError(f"{metric.title} is undefined on every transfer context ({_undefined_reason(metric)})")
    # the contexts the rules read: defined, with an interval (two sessions or more); k of them
    used = [i for i in defined if groups[1 + i][1].k >= 2]
    k = len(used)
    alpha = 1 - confidence
    level = 1 - alpha / k if k else None
    have_eval = bool(dists) and groups[0][1].k >= 2
    entries = []
    for j, ((name, g), point) in enumerate(zip(groups, points)):
        if j > 0 and (j - 1) not in defined:
            continue
        dist = dists[j] if dists else None
        low, high, n_undef = _interval(dist, confidence) if dist is not None else (math.nan, math.nan, 0)
        e = {"score": point, "ci_low": _num(low), "ci_high": _num(high), "n_items": g.n_items, "n_sessions": g.k}
        if n_undef and g.k >= 2:
            e["n_resamples_undefined"] = n_undef
        if name != "eval":
            e = {"context_id": name, **e}
            if dist is not None and (j - 1) in used:  # Bonferroni: the same replicates, at level 1 − α/k
                low, high, _ = _interval(dist, level)
                e["corrected"] = {"ci_low": _num(low), "ci_high": _num(high)}
                drop = {"value": points[0] - point, "ci_low": None, "ci_high": None}
                if have_eval:
                    low, high, _ = _interval(dists[0] - dist, level)
                    drop.update(ci_low=_num(low), ci_high=_num(high))
                e["drop"] = drop
        entries.append(e)
    small = [contexts[i] for i in defined if groups[1 + i][1].k < 2]
    kept = used or defined
    i_min = min(kept, key=lambda i: points[1 + i])
    minimum = points[1 + i_min]
    out = {"metric": metric.key, "title": metric.title, "eval": entries[0], "contexts": entries[1:],
           "n_contexts": len(contexts), "small_contexts": small,
           "min": {"score": minimum, "context_id": contexts[i_min], "ci_low": None, "ci_high": None},
           "drop": {"value": points[0] - minimum, "ci_low": None, "ci_high": None},
           "correction": {"method": "Bonferroni", "k": k, "confidence": level,
                          "contexts": [contexts[i] for i in used]}}
    if undefined:
        out["undefined_contexts"] = undefined
        out["undefined_note"] = (f"{len(undefined)} context(s) where the figure is undefined, kept out of the minimum "
                                 "and the rules: " + "; ".join(f"{u['context_id']} ({u['reason']})"
                                                                for u in undefined))
    if small:
        out["small_note"] = (f"{len(small)} context(s) with one session, no interval, kept out of the minimum: "
                             f"{', '.join(small)}" if len(small) < len(defined) else
                             "every context has one session: the minimum is over all of them, with no interval")
    if have_eval and used:
        mins = np.min(np.vstack([dists[1 + i] for i in used]), axis=0)  # nan where a used context is undefined
        low, high, _ = _interval(mins, confidence)
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
        return {"checked": True, "collapsed": None, "verdict": "not applicable", "contexts": [],
                "note": f"not above {REFERENCE_BASELINE} in distribution (eval {ev['score']:.3f} {_ci_text(ev)} at or "
                        f"below {ref_ev:.3f}): nothing to collapse from, so the pass bar is not met either"}
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
        cc = c.get("corrected") or {}
        where = _above(cc.get("ci_low"), cc.get("ci_high"), ref)
        if where is False:
            hit.append(c["context_id"])
        elif where is None:
            open_.append(c["context_id"])
    missing = [c["context_id"] for c in entry["contexts"] if c["context_id"] not in ref_ctx]
    if hit:
        out = {"checked": True, "collapsed": True, "verdict": "collapsed", "contexts": hit}
    elif open_:
        out = {"checked": True, "collapsed": None, "verdict": "not established", "contexts": open_,
               "note": f"a corrected interval ({_level_text(entry)}) reaches {REFERENCE_BASELINE}'s value (or there "
                       f"is none) on {', '.join(open_)}"}
    else:
        out = {"checked": True, "collapsed": False, "verdict": "not collapsed", "contexts": []}
    out["correction"] = _correction(entry)
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
        out = {"value": e["score"] - chance, "ci_low": None if lo is None else lo - chance,
               "ci_high": None if hi is None else hi - chance, "n_sessions": e.get("n_sessions")}
        if e.get("corrected"):
            lo, hi = e["corrected"].get("ci_low"), e["corrected"].get("ci_high")
            out["corrected"] = {"ci_low": None if lo is None else lo - chance,
                                "ci_high": None if hi is None else hi - chance}
        return out

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
        return {"checked": True, "collapsed": None, "verdict": "not applicable", "contexts": [], "paired": gaps,
                "note": f"not above {against} in distribution ({gap_text}): nothing to collapse from, so the pass bar "
                        "is not met either"}
    if above is None:
        return {"checked": True, "collapsed": None, "verdict": "not established", "contexts": [], "paired": gaps,
                "note": f"above {against} in distribution not established ({gap_text})"}
    hit, open_ = [], []
    for c in entry["contexts"]:
        g = (gaps["contexts"].get(c["context_id"]) or {}).get("corrected") or {}
        where = _above(g.get("ci_low"), g.get("ci_high"), 0.0)
        if where is False:
            hit.append(c["context_id"])
        elif where is None:
            open_.append(c["context_id"])
    fix = _correction(entry)
    if hit:
        return {"checked": True, "collapsed": True, "verdict": "collapsed", "contexts": hit, "paired": gaps,
                "correction": fix}
    if open_:
        return {"checked": True, "collapsed": None, "verdict": "not established", "contexts": open_, "paired": gaps,
                "correction": fix, "note": f"the difference's corrected interval ({_level_text(entry)}) reaches 0 "
                                           f"(or there is none) on {', '.join(open_)}"}
    return {"checked": True, "collapsed": False, "verdict": "not collapsed", "contexts": [], "paired": gaps,
            "correction": fix}


def _correction(entry: dict) -> dict:
    """The multiplicity correction the per-context verdicts read (:func:`transfer_estimate`'s ``correction``)."""
    fix = entry.get("correction")
    if fix is None:  # an entry made by hand: one interval per context at the report's level, k its contexts
        k = sum(1 for c in entry.get("contexts") or () if c.get("corrected") or c.get("drop"))
        fix = {"method": "Bonferroni", "k": k, "confidence": None}
    return dict(fix)


def _level_text(entry: dict) -> str:
    fix = _correction(entry)
    level = fix.get("confidence")
    return f"Bonferroni over k = {fix['k']} context{'' if fix['k'] == 1 else 's'}" + (f", level {_pct(level)}" if level is not None else "")



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
    per = [(c["context_id"], c["drop"]) for c in entry.get("contexts") or () if c.get("drop")]
    where = {cid: _above(d.get("ci_low"), d.get("ci_high"), LARGE_DROP - _EPS) for cid, d in per}
    large_on = [cid for cid, w in where.items() if w]
    large = True if large_on else (False if per and all(w is False for w in where.values()) else None)
    level_text = f"eval level {ev['score']:.3f} {_ci_text(ev)}"
    fix = _level_text(entry)
    drop_text = (f"drop eval − min {drop['value']:+.3f} {_ci_text(drop)} (min on {entry['min']['context_id']})")

    def per_text(cids):
        return ", ".join(f"eval − {cid} {dict(per)[cid]['value']:+.3f} {_ci_text(dict(per)[cid])}" for cid in cids)
    if high and large:
        verdict = "flagged"
        reason = (f"ANTI-GOODHART FLAG: high in-distribution level ({level_text}, lower bound ≥ {HIGH_LEVEL}) with "
                  f"a large transfer drop on {', '.join(large_on)} ({per_text(large_on)}; corrected interval, "
                  f"{fix}, lower bound ≥ {LARGE_DROP}; {drop_text}): flagged, not celebrated (spec §5)")
    elif high is False or large is False:
        verdict = "not flagged"
        why = ([f"{level_text} lies below {HIGH_LEVEL}"] if high is False else []) + (
            [f"every context's drop lies below {LARGE_DROP} ({per_text([c for c, _ in per])}; {fix})"]
            if large is False else [])
        reason = "not flagged: " + "; ".join(why)
    else:
        verdict = "not established"
        open_ = [cid for cid, w in where.items() if w is None]
        why = ([f"{level_text} reaches {HIGH_LEVEL}"] if high is None else []) + (
            ([f"the drop's corrected interval reaches {LARGE_DROP} on {', '.join(open_)} ({per_text(open_)}; {fix})"]
             if open_ else [f"no context with a drop interval ({drop_text})"]) if large is None else [])
        reason = "not established: " + "; ".join(why)
    return {"applies": True, "flagged": verdict == "flagged", "verdict": verdict, "reason": reason,
            "contexts": large_on, "correction": _correction(entry)}
