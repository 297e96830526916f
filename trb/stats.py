"""Point estimates with confidence intervals from a bootstrap that resamples sessions.

The steps of one session share a subject, a context and a model state: they are
not independent draws, and an item-level bootstrap would report intervals that are
too narrow (DESIGN.md rule 4). Every interval here is a *cluster* bootstrap: the
unit resampled with replacement is the session, and a resampled session brings all
of its items with it.

Each estimator first reduces the items to one row of sufficient statistics per
session (score sum and item count; or TP, P, TN, N counts), then hands those
per-session arrays to :func:`scipy.stats.bootstrap` with ``paired=True`` (the rows
of one session stay together) and ``vectorized=True``.

Interval method: **percentile**. Reasons, in order of weight:

* Reproducible by anyone with a few lines of numpy (draw sessions, take the ratio,
  take the 2.5 and 97.5 percentiles); ``tests/trb/test_stats.py`` does exactly that
  and checks agreement. A partner can audit a TRB interval without SciPy.
* BCa's acceleration term is a jackknife over sessions; with the handful of
  sessions a v0.1 corpus has (spec §6: n = 3) it is unstable, and it is undefined
  when a leave-one-out or bootstrap statistic is undefined, which happens for
  balanced accuracy (a resample without a positive or without a negative item).
* The statistics are ratios of sums over many sessions: close to symmetric, where
  the percentile interval's coverage is adequate.

Degenerate cases, decided once here:

* **Empty input** (no items, or no item with a usable label for balanced accuracy)
  raises :class:`ValueError`.
* **One session**: the value is reported, the interval is ``nan`` on both sides.
  Between-session variation cannot be estimated from one session; an interval
  ``[value, value]`` would claim a certainty the data do not have. Renderers show
  ``nan`` as "n/a" / JSON ``null``.
* **Balanced accuracy, a resample with no positive or no negative item**: that
  resample's statistic is undefined. It is skipped, and the number skipped is
  recorded in :attr:`Estimate.n_skipped`; the interval is the percentile interval
  of the remaining resamples. If every resample is undefined the interval is
  ``nan``. If the *full* data lack a class, balanced accuracy itself is undefined
  and :class:`ValueError` is raised.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as _sps

__all__ = [
    "CI_METHOD",
    "Estimate",
    "balanced_accuracy_by_session",
    "session_array",
    "mean_by_session",
    "paired_delta_by_session",
    "normalised_gain_by_session",
    "paired_balanced_accuracy_delta_by_session",
    "ratio_by_session",
    "brier_quality_ratio_by_session",
]

#: The interval method used by every estimator here (see the module docstring).
CI_METHOD = "percentile"

# scipy >= 1.15 takes ``rng``; 1.14 takes ``random_state`` (a Generator works for both).
_RNG_KW = "rng" if "rng" in inspect.signature(_sps.bootstrap).parameters else "random_state"
# Bound the memory of one batch of resamples: about this many session indices at once (scipy holds the indices
# and each data array drawn by them, 8 bytes a cell: 1M cells is about 25 MB for two arrays). The batch does not
# change the figures (the generator's draws are the same however they are batched) and, smaller, is no slower.
_BATCH_CELLS = 1_000_000


@dataclass(frozen=True)
class Estimate:
    """A point estimate with a session-bootstrap confidence interval.

    ``ci_low``/``ci_high`` are ``nan`` when no interval can be given (one session;
    every resample undefined). ``n_skipped`` counts bootstrap resamples whose
    statistic was undefined and were left out of the interval (balanced accuracy only).
    """

    value: float
    ci_low: float
    ci_high: float
    n_items: int
    n_sessions: int
    n_skipped: int = 0

    @property
    def has_ci(self) -> bool:
        return not (math.isnan(self.ci_low) or math.isnan(self.ci_high))


def session_array(sessions: Sequence) -> np.ndarray:
    """``sessions`` as a 1-d array to select from and number (:func:`_session_index`): integer session codes (the
    report's, numbered in the order of the ids) kept as integers, anything else (ids) as an object array.

    Integer codes made into an object array would be numbered as text ("10" before "9"), not in the ids' order:
    another draw of sessions than the ids give, and other intervals."""
    if isinstance(sessions, np.ndarray) and sessions.dtype.kind in "iu":
        return sessions.reshape(-1)
    return np.asarray(sessions, dtype=object).reshape(-1)


def _session_index(sessions: Sequence, n: int) -> tuple[np.ndarray, int]:
    """Dense session codes 0..k-1 for each item, and k."""
    arr = np.asarray(sessions, dtype=object) if not isinstance(sessions, np.ndarray) else sessions
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"sessions has {arr.shape[0] if arr.ndim else 0} entries for {n} items; they must align")
    if arr.dtype == object:
        if any(s is None for s in arr):
            raise ValueError("every item needs a session id (found None)")
        # np.unique of the ids as text, without its fixed-width copy and sort of every item's id: each distinct id
        # numbered as met, then the numbers ranked by the ids' sorted order (the same codes as np.unique's)
        seen: dict[str, int] = {}
        met = np.fromiter((seen.setdefault(str(s), len(seen)) for s in arr), dtype=np.int64, count=n)
        ids = list(seen)
        rank = np.empty(len(ids), dtype=np.int64)
        rank[sorted(range(len(ids)), key=ids.__getitem__)] = np.arange(len(ids), dtype=np.int64)
        return rank[met], len(ids)
    if arr.dtype.kind in "iu" and n and 0 <= arr.min() and arr.max() < 4 * n + 65_536:
        # small non-negative integers (the report's session codes): np.unique's numbering without its sort, each
        # code ranked among the codes present (O(n); a few arrays of the largest code's length, not copies of n)
        present = np.bincount(arr) > 0
        rank = np.cumsum(present) - 1
        return rank[arr], int(rank[-1]) + 1
    _, codes = np.unique(arr, return_inverse=True)
    codes = codes.reshape(-1)
    return codes, int(codes.max()) + 1


def _scores(values: Sequence[float], name: str) -> np.ndarray:
    x = np.asarray(values, dtype=float).reshape(-1)
    if x.size == 0:
        raise ValueError(f"{name} is empty: no items to estimate from")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} holds {int(np.sum(~np.isfinite(x)))} non-finite values (nan or inf)")
    return x


def _bootstrap(data: tuple[np.ndarray, ...], statistic, *, n_resamples: int, confidence: float,
               seed: int) -> tuple[float, float, int]:
    """Percentile CI of ``statistic`` over per-session rows ``data``; (low, high, n_undefined)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be positive, got {n_resamples}")
    k = data[0].shape[0]
    batch = max(1, min(n_resamples, _BATCH_CELLS // max(k, 1)))
    with warnings.catch_warnings():
        # An undefined resample makes scipy's own quantile nan and warn; we redo it nan-aware below.
        warnings.simplefilter("ignore", _sps.DegenerateDataWarning)
        with np.errstate(invalid="ignore", divide="ignore"):
            res = _sps.bootstrap(data, statistic, n_resamples=n_resamples, batch=batch, vectorized=True,
                                 paired=True, confidence_level=confidence, method=CI_METHOD,
                                 **{_RNG_KW: np.random.default_rng(seed)})
    dist = np.asarray(res.bootstrap_distribution, dtype=float)
    undefined = int(np.sum(np.isnan(dist)))
    if undefined == 0:
        return float(res.confidence_interval.low), float(res.confidence_interval.high), 0
    kept = dist[~np.isnan(dist)]
    if kept.size == 0:
        return math.nan, math.nan, undefined
    alpha = (1 - confidence) / 2
    low, high = np.quantile(kept, [alpha, 1 - alpha])  # 'linear', as scipy's percentile interval
    return float(low), float(high), undefined


def _ratio_of_sums(sums: np.ndarray, counts: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.sum(sums, axis=axis) / np.sum(counts, axis=axis)


def mean_by_session(scores: Sequence[float], sessions: Sequence, *, n_resamples: int = 2000,
                    confidence: float = 0.95, seed: int = 0) -> Estimate:
    """The mean item score, with a session-bootstrap CI.

    ``value`` is the plain mean over items. Each bootstrap replicate draws sessions
    with replacement and computes (sum of the drawn sessions' score sums) / (sum of
    their item counts), i.e. the item mean of the resampled data.

    Raises:
        ValueError: no items; non-finite scores; ``sessions`` not aligned with ``scores``.
    """
    x = _scores(scores, "scores")
    codes, k = _session_index(sessions, x.size)
    sums = np.bincount(codes, weights=x, minlength=k)
    counts = np.bincount(codes, minlength=k).astype(float)
    value = float(np.mean(x))
    if k < 2 or n_resamples == 0:  # one session, or the point value only
        return Estimate(value, math.nan, math.nan, int(x.size), k)
    low, high, skipped = _bootstrap((sums, counts), _ratio_of_sums, n_resamples=n_resamples,
                                    confidence=confidence, seed=seed)
    return Estimate(value, low, high, int(x.size), k, skipped)


def _balanced_accuracy(tp: np.ndarray, p: np.ndarray, tn: np.ndarray, n: np.ndarray, axis: int = -1) -> np.ndarray:
    """(TP/P + TN/N) / 2 from per-session counts; nan where a class is absent."""
    with np.errstate(invalid="ignore", divide="ignore"):
        tpr = np.sum(tp, axis=axis) / np.sum(p, axis=axis)
        tnr = np.sum(tn, axis=axis) / np.sum(n, axis=axis)
    return (tpr + tnr) / 2


def balanced_accuracy_by_session(labels: Sequence, predicted: Sequence, sessions: Sequence, *,
                                 positive: str = "self", negative: str = "exogenous",
                                 n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0) -> Estimate:
    """Balanced accuracy (TPR + TNR) / 2, with a session-bootstrap CI.

    Only items whose label is ``positive`` or ``negative`` count (others, e.g. an
    unresolved label, are left out and not in ``n_items``). A prediction that is
    neither class (``None``, "unsure") is simply not a hit: it lowers TPR or TNR.
    The bootstrap resamples sessions and recomputes BA from the summed TP, P, TN, N
    of the drawn sessions; a draw with no positive or no negative item is skipped and
    counted in ``n_skipped``.

    Raises:
        ValueError: inputs not aligned; no labelled item; only one class present.
    """
    lab = np.asarray(labels, dtype=object).reshape(-1)
    pred = np.asarray(predicted, dtype=object).reshape(-1)
    sess = session_array(sessions)
    if not (lab.size == pred.size == sess.size):
        raise ValueError(f"labels ({lab.size}), predicted ({pred.size}) and sessions ({sess.size}) must align")
    is_pos = lab == positive
    is_neg = lab == negative
    keep = is_pos | is_neg
    if not keep.any():
        raise ValueError(f"no item is labelled {positive!r} or {negative!r}: balanced accuracy has nothing to score")
    is_pos, is_neg, pred, sess = is_pos[keep], is_neg[keep], pred[keep], sess[keep]
    n_pos, n_neg = int(is_pos.sum()), int(is_neg.sum())
    if n_pos == 0 or n_neg == 0:
        missing = positive if n_pos == 0 else negative
        raise ValueError(f"no item is labelled {missing!r}: balanced accuracy needs both classes")
    codes, k = _session_index(sess, sess.size)
    hit_pos = (is_pos & (pred == positive)).astype(float)
    hit_neg = (is_neg & (pred == negative)).astype(float)
    tp = np.bincount(codes, weights=hit_pos, minlength=k)
    p = np.bincount(codes, weights=is_pos.astype(float), minlength=k)
    tn = np.bincount(codes, weights=hit_neg, minlength=k)
    n = np.bincount(codes, weights=is_neg.astype(float), minlength=k)
    value = float(_balanced_accuracy(tp, p, tn, n))
    if k < 2 or n_resamples == 0:  # one session, or the point value only
        return Estimate(value, math.nan, math.nan, int(sess.size), k)
    low, high, skipped = _bootstrap((tp, p, tn, n), _balanced_accuracy, n_resamples=n_resamples,
                                    confidence=confidence, seed=seed)
    return Estimate(value, low, high, int(sess.size), k, skipped)


def paired_delta_by_session(scores_a: Sequence[float], scores_b: Sequence[float], sessions: Sequence, *,
                            n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0) -> Estimate:
    """Δ = mean(a − b) over aligned items (item i of ``a`` is item i of ``b``), session-bootstrap CI.

    Pairing removes the between-item variation both conditions share, so the
    interval is that of the per-item differences, resampled by session.

    Raises:
        ValueError: lengths differ; no items; non-finite scores.
    """
    a = _scores(scores_a, "scores_a")
    b = _scores(scores_b, "scores_b")
    if a.size != b.size:
        raise ValueError(f"scores_a ({a.size}) and scores_b ({b.size}) must be aligned item by item")
    return mean_by_session(a - b, sessions, n_resamples=n_resamples, confidence=confidence, seed=seed)


def _normalised_gain(diff: np.ndarray, headroom: np.ndarray, axis: int = -1) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        den = np.sum(headroom, axis=axis)
        return np.where(den > 0, np.sum(diff, axis=axis) / np.where(den > 0, den, 1.0), np.nan)


def normalised_gain_by_session(scores: Sequence[float], refs: Sequence[float], sessions: Sequence, *,
                               n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0) -> Estimate:
    """(mean(s) − mean(r)) / (1 − mean(r)) over aligned items, with a paired session-bootstrap CI.

    Scores in [0, 1] with reference scores ``refs`` on the same items: 0 when the
    scores equal the reference, 1 when every score is 1. Each replicate draws sessions
    and computes Σ(s − r) / Σ(1 − r) over the drawn sessions' items (the same ratio).
    A replicate whose reference is perfect on every drawn item (Σ(1 − r) = 0) is
    undefined: skipped and counted in ``n_skipped``.

    Raises:
        ValueError: lengths differ; no items; non-finite scores; the reference is perfect on every item
            (the gain is undefined).
    """
    s = _scores(scores, "scores")
    r = _scores(refs, "refs")
    if s.size != r.size:
        raise ValueError(f"scores ({s.size}) and refs ({r.size}) must be aligned item by item")
    codes, k = _session_index(sessions, s.size)
    diff = np.bincount(codes, weights=s - r, minlength=k)
    headroom = np.bincount(codes, weights=1.0 - r, minlength=k)
    if not headroom.sum() > 0:
        raise ValueError("the reference scores 1 on every item: there is no headroom to normalise by")
    value = float(diff.sum() / headroom.sum())
    if k < 2 or n_resamples == 0:
        return Estimate(value, math.nan, math.nan, int(s.size), k)
    low, high, skipped = _bootstrap((diff, headroom), _normalised_gain, n_resamples=n_resamples,
                                    confidence=confidence, seed=seed)
    return Estimate(value, low, high, int(s.size), k, skipped)


def _ba_delta(tp_a, tp_b, p, tn_a, tn_b, n, axis: int = -1) -> np.ndarray:
    return _balanced_accuracy(tp_a, p, tn_a, n, axis=axis) - _balanced_accuracy(tp_b, p, tn_b, n, axis=axis)


def paired_balanced_accuracy_delta_by_session(labels: Sequence, predicted_a: Sequence, predicted_b: Sequence,
                                              sessions: Sequence, *, positive: str = "self",
                                              negative: str = "exogenous", n_resamples: int = 2000,
                                              confidence: float = 0.95, seed: int = 0) -> Estimate:
    """BA(a) − BA(b) on the same items (aligned: item i of ``predicted_a`` is item i of ``predicted_b``), with a
    paired session-bootstrap CI: each replicate draws sessions and recomputes both balanced accuracies from the
    drawn sessions' counts. A replicate without a positive or a negative item is skipped and counted.

    Raises:
        ValueError: inputs not aligned; no labelled item; only one class present.
    """
    lab = np.asarray(labels, dtype=object).reshape(-1)
    pa_ = np.asarray(predicted_a, dtype=object).reshape(-1)
    pb_ = np.asarray(predicted_b, dtype=object).reshape(-1)
    sess = session_array(sessions)
    if not (lab.size == pa_.size == pb_.size == sess.size):
        raise ValueError("labels, predicted_a, predicted_b and sessions must align")
    is_pos, is_neg = lab == positive, lab == negative
    keep = is_pos | is_neg
    if not is_pos.any() or not is_neg.any():
        raise ValueError(f"balanced accuracy needs both {positive!r} and {negative!r} items")
    is_pos, is_neg, pa_, pb_, sess = is_pos[keep], is_neg[keep], pa_[keep], pb_[keep], sess[keep]
    codes, k = _session_index(sess, sess.size)

    def count(mask):
        return np.bincount(codes, weights=mask.astype(float), minlength=k)

    data = (count(is_pos & (pa_ == positive)), count(is_pos & (pb_ == positive)), count(is_pos),
            count(is_neg & (pa_ == negative)), count(is_neg & (pb_ == negative)), count(is_neg))
    value = float(_ba_delta(*data))
    if k < 2 or n_resamples == 0:
        return Estimate(value, math.nan, math.nan, int(sess.size), k)
    low, high, skipped = _bootstrap(data, _ba_delta, n_resamples=n_resamples, confidence=confidence, seed=seed)
    return Estimate(value, low, high, int(sess.size), k, skipped)


def _ratio(num: np.ndarray, den: np.ndarray, axis: int = -1) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        d = np.sum(den, axis=axis)
        return np.where(d > 0, np.sum(num, axis=axis) / np.where(d > 0, d, 1.0), np.nan)


def ratio_by_session(numerators: Sequence[float], denominators: Sequence[float], sessions: Sequence, *,
                     n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0) -> Estimate:
    """Σ numerator / Σ denominator over aligned items, with a paired session-bootstrap CI.

    Track 4's retention ratio: item i is one task-and-seed pair, its numerator the full model's
    outcome and its denominator the ablation's, so each replicate draws pairs (sessions) and
    recomputes the ratio of the drawn sums. A replicate whose denominators sum to 0 is undefined:
    skipped and counted in ``n_skipped``.

    Raises:
        ValueError: lengths differ; no items; non-finite values; the denominators sum to 0 (undefined).
    """
    a = _scores(numerators, "numerators")
    b = _scores(denominators, "denominators")
    if a.size != b.size:
        raise ValueError(f"numerators ({a.size}) and denominators ({b.size}) must be aligned item by item")
    codes, k = _session_index(sessions, a.size)
    num = np.bincount(codes, weights=a, minlength=k)
    den = np.bincount(codes, weights=b, minlength=k)
    if not den.sum() > 0:
        raise ValueError("the denominators sum to 0: the ratio is undefined")
    value = float(num.sum() / den.sum())
    if k < 2 or n_resamples == 0:
        return Estimate(value, math.nan, math.nan, int(a.size), k)
    low, high, skipped = _bootstrap((num, den), _ratio, n_resamples=n_resamples, confidence=confidence, seed=seed)
    return Estimate(value, low, high, int(a.size), k, skipped)


def _quality_ratio(sq_a: np.ndarray, n_a: np.ndarray, sq_b: np.ndarray, n_b: np.ndarray,
                   axis: int = -1) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        qa = 1.0 - np.sum(sq_a, axis=axis) / np.sum(n_a, axis=axis)
        qb = 1.0 - np.sum(sq_b, axis=axis) / np.sum(n_b, axis=axis)
        return np.where(qb > 0, qa / np.where(qb > 0, qb, 1.0), np.nan)


def brier_quality_ratio_by_session(sq_a: Sequence[float], n_a: Sequence[float], sq_b: Sequence[float],
                                   n_b: Sequence[float], sessions: Sequence, *, n_resamples: int = 2000,
                                   confidence: float = 0.95, seed: int = 0) -> Estimate:
    """(1 − Brier_a) / (1 − Brier_b), Brier = Σ squared errors / Σ forecasts, with a paired session-bootstrap CI.

    Track 4's calibration retention: per task-and-seed pair, the summed squared errors ``sq`` and the number
    of forecasts ``n`` of condition a (the full model) and b (the ablation). A replicate where either condition
    has no forecast, or b's Brier is 1, is undefined (skipped, counted).

    Raises:
        ValueError: inputs not aligned; no forecasts in a condition; Brier_b = 1.
    """
    arrays = [_scores(x, name) for x, name in ((sq_a, "sq_a"), (n_a, "n_a"), (sq_b, "sq_b"), (n_b, "n_b"))]
    if len({x.size for x in arrays}) != 1:
        raise ValueError("sq_a, n_a, sq_b and n_b must be aligned pair by pair")
    codes, k = _session_index(sessions, arrays[0].size)
    data = tuple(np.bincount(codes, weights=x, minlength=k) for x in arrays)
    if not (data[1].sum() > 0 and data[3].sum() > 0):
        raise ValueError("a condition has no forecast: calibration retention is undefined")
    value = float(_quality_ratio(*data))
    if math.isnan(value):
        raise ValueError("the reference condition's Brier score is 1: calibration retention is undefined")
    if k < 2 or n_resamples == 0:
        return Estimate(value, math.nan, math.nan, int(arrays[0].size), k)
    low, high, skipped = _bootstrap(data, _quality_ratio, n_resamples=n_resamples, confidence=confidence, seed=seed)
    return Estimate(value, low, high, int(arrays[0].size), k, skipped)
