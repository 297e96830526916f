"""Track 3's threshold-free figures: how good the caused_by_self beliefs are, not only their side of 0.5.

Balanced accuracy (:mod:`trb.stats`) scores the belief thresholded at 0.5. The
figures here read the belief itself: ROC AUC (does a higher belief go with
``self``?), the Brier score, the expected calibration error with its reliability
table, and the distribution of the beliefs (to see a predictor that says one thing
to everything).

Intervals follow :mod:`trb.stats` exactly: the unit resampled is the session, the
interval is the percentile interval of ``n_resamples`` resamples drawn by
:func:`scipy.stats.bootstrap` from ``numpy.random.default_rng(seed)`` (the same
draws as the estimators there, for the same seed and session count), one session
gives a ``nan`` interval, a resample whose statistic is undefined is skipped and
counted in :attr:`~trb.stats.Estimate.n_skipped`, no item is a :class:`ValueError`,
and inputs of different lengths are a :class:`ValueError`. Every statistic here is
computed from the *session multiplicities* of a resample (how often each session
was drawn) times per-session tables made once, so a resample never copies items.

Inputs: ``labels`` are strings; only ``"self"`` (positive) and ``"exogenous"``
(negative) count, other labels are left out as :func:`~trb.stats.balanced_accuracy_by_session`
does. ``beliefs`` are caused_by_self probabilities in [0, 1]; ``None`` or ``nan`` is
a belief the adapter did not report.

**A missing belief is scored as 0.5** (:data:`MISSING_BELIEF`) by the AUC, the Brier
score and the calibration error. 0.5 is the uninformative belief: it ranks
between every self and every exogenous item (half a concordant pair each), costs
0.25 Brier, and sits in the middle calibration bin. Dropping missing items instead
would let an adapter improve its figures by reporting only the items it is sure
of; scored as 0.5, leaving a belief out is never better than saying "I don't know".
(Balanced accuracy is stricter and counts a missing belief as wrong.) The
distribution (:func:`belief_distribution`) describes the beliefs reported and
counts the missing ones apart.

Speed, measured: :func:`roc_auc_by_session` on 20,000 items with 18,400 distinct
beliefs, 2,000 resamples, takes 0.7 / 0.8 / 1.1 s of CPU in 50 / 500 / 5,000
sessions (1.4-1.8 s wall on the shared 2-core dev machine under load; one BLAS
thread; numpy 2.2, scipy 1.17). The median of :func:`belief_distribution` costs
about as much; the Brier score and the calibration error take under 0.5 s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse as _sparse

from trb.stats import Estimate, _bootstrap, _session_index, session_array

__all__ = [
    "MISSING_BELIEF",
    "BeliefDistribution",
    "Calibration",
    "ReliabilityBin",
    "belief_distribution",
    "brier_by_session",
    "calibration_by_session",
    "one_class",
    "roc_auc_by_session",
]

#: The belief a missing one is scored as (see the module docstring).
MISSING_BELIEF = 0.5
#: The quantiles :func:`belief_distribution` reports.
QUANTILES = (0.10, 0.25, 0.50, 0.75, 0.90)
# Bound the dense (resamples x distinct beliefs) blocks of the AUC and the median to about this many cells.
_BLOCK_CELLS = 2_000_000


# -- inputs ------------------------------------------------------------------------------------------


def _beliefs(values: Sequence, n: int | None = None) -> np.ndarray:
    """Beliefs as floats, ``nan`` where missing; ValueError outside [0, 1] or misaligned."""
    b = np.asarray(values, dtype=float).reshape(-1)  # None -> nan
    if n is not None and b.size != n:
        raise ValueError(f"beliefs ({b.size}) must align with labels ({n})")
    bad = ~np.isnan(b) & ~((b >= 0) & (b <= 1))
    if bad.any():
        raise ValueError(f"beliefs must lie in [0, 1] (or be None when missing); {int(bad.sum())} do not")
    return b


def _labelled(labels: Sequence, beliefs: Sequence, sessions: Sequence, positive: str, negative: str):
    """The labelled items: (is_pos bool, beliefs with missing ones as 0.5, n_missing, session codes, k)."""
    lab = np.asarray(labels, dtype=object).reshape(-1)
    sess = session_array(sessions)
    b = _beliefs(beliefs)
    if not (lab.size == b.size == sess.size):
        raise ValueError(f"labels ({lab.size}), beliefs ({b.size}) and sessions ({sess.size}) must align")
    is_pos = lab == positive
    keep = is_pos | (lab == negative)
    if not keep.any():
        raise ValueError(f"no item is labelled {positive!r} or {negative!r}: nothing to score")
    is_pos, b, sess = is_pos[keep], b[keep], sess[keep]
    missing = np.isnan(b)
    b = np.where(missing, MISSING_BELIEF, b)
    codes, k = _session_index(sess, sess.size)
    return is_pos, b, int(missing.sum()), codes, k


# -- the bootstrap over session multiplicities --------------------------------------------------------


def _multiplicities(idx: np.ndarray, k: int) -> np.ndarray:
    """Session draws ``idx`` (..., k) -> how often each session was drawn, (rows, k) floats."""
    idx = np.asarray(idx).reshape(-1, k)
    rows = idx.shape[0]
    flat = (idx + k * np.arange(rows)[:, None]).reshape(-1)
    return np.bincount(flat, minlength=rows * k).reshape(rows, k).astype(float)


def _by_session(k: int, n_items: int, of_counts: Callable[[np.ndarray], np.ndarray], *,
                n_resamples: int, confidence: float, seed: int) -> Estimate:
    """An Estimate of ``of_counts`` (session multiplicities (rows, k) -> one value per row).

    The value is ``of_counts`` at one draw of every session; the interval resamples
    session indices through :func:`trb.stats._bootstrap` (so scipy's draws and the
    nan-skipping rule are those of every other TRB estimator).
    """
    value = float(of_counts(np.ones((1, k)))[0])
    if k < 2 or n_resamples == 0:  # one session, or the point value only
        return Estimate(value, math.nan, math.nan, n_items, k)

    def statistic(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        return of_counts(_multiplicities(idx, k)).reshape(np.shape(idx)[:-1])

    low, high, skipped = _bootstrap((np.arange(k),), statistic, n_resamples=n_resamples,
                                    confidence=confidence, seed=seed)
    return Estimate(value, low, high, n_items, k, skipped)


def _session_by_value(codes: np.ndarray, values: np.ndarray, k: int, weights: np.ndarray | None = None):
    """Distinct sorted values and a sparse (k, distinct) table of per-session item counts (or weights)."""
    distinct, col = np.unique(values, return_inverse=True)
    w = np.ones(codes.size) if weights is None else weights.astype(float)
    table = _sparse.csr_array((w, (codes, col.reshape(-1))), shape=(k, distinct.size))
    table.sum_duplicates()
    return distinct, table


def _blocks(counts: np.ndarray, width: int):
    """Row blocks of ``counts`` whose dense (rows, width) products stay under _BLOCK_CELLS."""
    step = max(1, _BLOCK_CELLS // max(width, 1))
    for start in range(0, counts.shape[0], step):
        yield start, counts[start:start + step]


def _times(counts: np.ndarray, table) -> np.ndarray:
    """Dense ``counts @ table`` for a sparse table: (rows, k) x (k, m) -> (rows, m)."""
    return np.asarray((table.T @ counts.T).T)


# -- ROC AUC ------------------------------------------------------------------------------------------


def roc_auc_by_session(labels: Sequence, beliefs: Sequence, sessions: Sequence, *,
                       positive: str = "self", negative: str = "exogenous",
                       n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0) -> Estimate:
    """ROC AUC of the beliefs for ``positive``, with a session-bootstrap CI.

    The Mann-Whitney form: the share of (self, exogenous) pairs in which the self
    item has the higher belief, a tie counting 1/2. 1 separates perfectly, 0 is
    perfectly reversed, 0.5 is chance (and what constant beliefs get). A missing
    belief is scored as 0.5. A resample is the pooled items of the drawn sessions,
    each session as often as drawn; one with no positive or no negative item is
    skipped and counted in ``n_skipped``.

    Computation: the beliefs are ranked once into distinct values; a resample's
    weight of positives and negatives at each value is its session multiplicities
    times a sparse (session x value) count table, and its U statistic is one cumsum
    over the values. No per-resample sort.

    Raises:
        ValueError: inputs not aligned; no labelled item; only one class present;
            a belief outside [0, 1].
    """
    is_pos, b, _, codes, k = _labelled(labels, beliefs, sessions, positive, negative)
    if is_pos.all() or not is_pos.any():
        missing = negative if is_pos.all() else positive
        raise ValueError(f"no item is labelled {missing!r}: ROC AUC needs both classes")
    _, pos = _session_by_value(codes, b, k, is_pos)
    _, neg = _session_by_value(codes, b, k, ~is_pos)

    def auc(counts: np.ndarray) -> np.ndarray:
        out = np.empty(counts.shape[0])
        for start, block in _blocks(counts, pos.shape[1]):
            wp, wn = _times(block, pos), _times(block, neg)
            at_or_below = np.cumsum(wn, axis=1)  # negative weight at or below each value
            # U = Σ_v wp_v (negatives below v + ½ negatives at v) = Σ_v wp_v (at_or_below_v − ½ wn_v)
            u = np.einsum("ij,ij->i", wp, at_or_below) - 0.5 * np.einsum("ij,ij->i", wp, wn)
            with np.errstate(invalid="ignore", divide="ignore"):
                out[start:start + block.shape[0]] = u / (wp.sum(axis=1) * at_or_below[:, -1])
        return out

    return _by_session(k, int(b.size), auc, n_resamples=n_resamples, confidence=confidence, seed=seed)


# -- Brier score --------------------------------------------------------------------------------------


def brier_by_session(labels: Sequence, beliefs: Sequence, sessions: Sequence, *,
                     positive: str = "self", negative: str = "exogenous",
                     n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0) -> Estimate:
    """The Brier score, mean (belief − 1{label is positive})², with a session-bootstrap CI.

    Lower is better: 0 is certain and right, 0.25 is a constant 0.5, 1 is certain
    and wrong. A missing belief is scored as 0.5 (0.25). Each resample is the ratio
    of the drawn sessions' summed squared errors to their item counts, as
    :func:`~trb.stats.mean_by_session`; one class alone is fine.

    Raises:
        ValueError: inputs not aligned; no labelled item; a belief outside [0, 1].
    """
    is_pos, b, _, codes, k = _labelled(labels, beliefs, sessions, positive, negative)
    sq = np.bincount(codes, weights=(b - is_pos) ** 2, minlength=k)
    n = np.bincount(codes, minlength=k).astype(float)
    return _by_session(k, int(b.size), lambda c: (c @ sq) / (c @ n),
                       n_resamples=n_resamples, confidence=confidence, seed=seed)


# -- calibration --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReliabilityBin:
    """One bin of the reliability table: ``low <= belief < high`` (the last bin also holds 1).

    ``mean_belief`` and ``self_rate`` are ``nan`` for an empty bin.
    """

    low: float
    high: float
    count: int
    mean_belief: float
    self_rate: float


@dataclass(frozen=True)
class Calibration:
    """Expected calibration error with its CI, and the full-data reliability table.

    ``n_missing`` beliefs were scored as 0.5 (they are in the bin holding 0.5).
    """

    ece: Estimate
    bins: tuple[ReliabilityBin, ...]
    n_missing: int


def calibration_by_session(labels: Sequence, beliefs: Sequence, sessions: Sequence, *, n_bins: int = 10,
                           positive: str = "self", negative: str = "exogenous",
                           n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0) -> Calibration:
    """Expected calibration error over ``n_bins`` equal-width bins (default 10), session-bootstrap CI.

    Bin ``i`` holds beliefs with ``i/n_bins <= belief < (i+1)/n_bins`` (computed as
    ``floor(n_bins * belief)``, so 0.3 is in bin 3); a belief of 1 is in the last bin.
    ECE = Σ_bins (n_bin / N) · |mean belief − self rate| = Σ_bins |Σ belief − Σ 1{self}| / N.
    The bins are fixed, so a resample sums per-session (Σ belief − Σ 1{self}) per bin;
    no resample is undefined. A missing belief is scored as 0.5.

    Raises:
        ValueError: inputs not aligned; no labelled item; a belief outside [0, 1]; ``n_bins < 1``.
    """
    if n_bins < 1:
        raise ValueError(f"n_bins must be positive, got {n_bins}")
    is_pos, b, n_missing, codes, k = _labelled(labels, beliefs, sessions, positive, negative)
    bin_of = np.minimum(np.floor(b * n_bins).astype(int), n_bins - 1)
    cells = codes * n_bins + bin_of
    gap = np.bincount(cells, weights=b - is_pos, minlength=k * n_bins).reshape(k, n_bins)
    n = np.bincount(codes, minlength=k).astype(float)
    ece = _by_session(k, int(b.size), lambda c: np.abs(c @ gap).sum(axis=1) / (c @ n),
                      n_resamples=n_resamples, confidence=confidence, seed=seed)
    count = np.bincount(bin_of, minlength=n_bins)
    belief_sum = np.bincount(bin_of, weights=b, minlength=n_bins)
    self_sum = np.bincount(bin_of, weights=is_pos.astype(float), minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_belief, self_rate = belief_sum / count, self_sum / count
    bins = tuple(ReliabilityBin(i / n_bins, (i + 1) / n_bins, int(count[i]), float(mean_belief[i]),
                                float(self_rate[i])) for i in range(n_bins))
    return Calibration(ece, bins, n_missing)


# -- the distribution of beliefs ----------------------------------------------------------------------


@dataclass(frozen=True)
class BeliefDistribution:
    """The reported beliefs: quantiles, mean, distinct values, and CIs for the self share and the median.

    Missing beliefs are not in it (``n_items`` counts reported beliefs); they are
    counted in ``n_missing``. ``share_self`` is the share with belief ≥ ``threshold``,
    i.e. predicted ``self`` by Track 3's threshold. ``quantiles`` maps each of
    :data:`QUANTILES` to numpy's default (linear) quantile.
    """

    n_items: int
    n_missing: int
    n_sessions: int
    mean: float
    quantiles: dict[float, float]
    share_self: Estimate
    median: Estimate
    n_distinct: int
    threshold: float

    @property
    def one_class(self) -> bool:
        """Every reported belief is on one side of the threshold: a degenerate predictor."""
        return self.share_self.value in (0.0, 1.0)

    @property
    def constant(self) -> bool:
        """Every reported belief is the same value."""
        return self.n_distinct == 1


def _weighted_quantile(distinct: np.ndarray, weights: np.ndarray, q: float) -> np.ndarray:
    """numpy's linear quantile ``q`` of pooled data given as integer ``weights`` (rows, distinct) per value."""
    cum = np.cumsum(weights, axis=1)
    h = (cum[:, -1] - 1) * q  # 0-based position in the sorted pooled data
    lo = np.floor(h)
    i_lo = np.sum(cum <= lo[:, None], axis=1)  # value at sorted position j: first value whose cum > j
    i_hi = np.minimum(np.sum(cum <= lo[:, None] + 1, axis=1), distinct.size - 1)
    return distinct[i_lo] + (h - lo) * (distinct[i_hi] - distinct[i_lo])


def belief_distribution(beliefs: Sequence, sessions: Sequence, *, threshold: float = 0.5,
                        n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0) -> BeliefDistribution:
    """How the reported beliefs are spread, with session-bootstrap CIs for the self share and the median.

    Both CIs resample the sessions that reported at least one belief (the same
    draws for both, from ``seed``); the median of a resample is numpy's median of
    its pooled beliefs.

    Raises:
        ValueError: ``beliefs`` and ``sessions`` not aligned; no belief reported; a belief outside [0, 1].
    """
    sess = session_array(sessions)
    b = _beliefs(beliefs)
    if b.size != sess.size:
        raise ValueError(f"beliefs ({b.size}) and sessions ({sess.size}) must align")
    reported = ~np.isnan(b)
    if not reported.any():
        raise ValueError("no belief was reported: the distribution is empty")
    b, sess = b[reported], sess[reported]
    codes, k = _session_index(sess, sess.size)
    n = np.bincount(codes, minlength=k).astype(float)
    above = np.bincount(codes, weights=(b >= threshold).astype(float), minlength=k)
    kw = dict(n_resamples=n_resamples, confidence=confidence, seed=seed)
    share = _by_session(k, int(b.size), lambda c: (c @ above) / (c @ n), **kw)
    distinct, table = _session_by_value(codes, b, k)

    def median(counts: np.ndarray) -> np.ndarray:
        out = np.empty(counts.shape[0])
        for start, block in _blocks(counts, distinct.size):
            out[start:start + block.shape[0]] = _weighted_quantile(distinct, _times(block, table), 0.5)
        return out

    med = _by_session(k, int(b.size), median, **kw)
    quantiles = {q: float(v) for q, v in zip(QUANTILES, np.quantile(b, QUANTILES))}
    return BeliefDistribution(int(b.size), int((~reported).sum()), k, float(np.mean(b)), quantiles, share, med,
                              int(distinct.size), threshold)


def one_class(predicted: Sequence, *, classes: tuple[str, str] = ("self", "exogenous")) -> bool:
    """True when the thresholded predictions never use both ``classes`` (a degenerate predictor).

    Other entries (``"missing"``, ``None``) are ignored; no prediction of either
    class at all is also one class (none).
    """
    seen = {p for p in np.asarray(predicted, dtype=object).reshape(-1).tolist() if p in classes}
    return len(seen) < 2
