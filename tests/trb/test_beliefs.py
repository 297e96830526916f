"""Track 3's threshold-free figures, checked against independent implementations.

Point values against scikit-learn (``roc_auc_score``, ``brier_score_loss``), numpy
and hand-worked cases; intervals against a cluster bootstrap written here: draw
session indices with ``numpy.random.default_rng(seed).integers(0, k, (B, k))`` (what
scipy's bootstrap draws), pool the drawn sessions' items, take the statistic with
rank-based / plain numpy code, skip nan, take numpy's percentiles.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import rankdata
from sklearn.metrics import brier_score_loss, roc_auc_score

from trb.beliefs import (
    MISSING_BELIEF,
    QUANTILES,
    belief_distribution,
    brier_by_session,
    calibration_by_session,
    one_class,
    roc_auc_by_session,
)
from trb.stats import Estimate

B = 1000


# -- independent reference implementations ----------------------------------------------------------


def mann_whitney_auc(y: np.ndarray, b: np.ndarray) -> float:
    """AUC from mid-ranks: (rank sum of positives − P(P+1)/2) / (P·N); nan without both classes."""
    p, n = int(y.sum()), int((~y).sum())
    if p == 0 or n == 0:
        return math.nan
    r = rankdata(b)  # average ranks: a tie counts 1/2
    return float((r[y].sum() - p * (p + 1) / 2) / (p * n))


def ece_numpy(y: np.ndarray, b: np.ndarray, n_bins: int = 10) -> float:
    """Σ_bins (n_bin/N)·|mean belief − self rate|, bins by comparing with each bin's edges."""
    total = 0.0
    for i in range(n_bins):
        lo, hi = i / n_bins, (i + 1) / n_bins
        inside = (b >= lo) & ((b < hi) | ((i == n_bins - 1) & (b == 1.0)))
        if inside.any():
            total += inside.sum() / b.size * abs(b[inside].mean() - y[inside].mean())
    return total


def cluster_bootstrap(per_session: list, statistic, n: int, seed: int, confidence: float = 0.95):
    """(low, high, n_nan): sessions drawn with replacement as scipy draws them, items pooled, nan skipped."""
    k = len(per_session)
    draws = np.random.default_rng(seed).integers(0, k, (n, k))
    out = np.array([statistic(*(np.concatenate([per_session[i][j] for i in row])
                                for j in range(len(per_session[0])))) for row in draws])
    kept = out[~np.isnan(out)]
    a = (1 - confidence) / 2
    low, high = np.quantile(kept, [a, 1 - a])
    return float(low), float(high), int(np.isnan(out).sum())


def attribution_data(n_sessions: int, seed: int, *, items=(2, 9), signal=0.25, ties=False):
    """(labels, beliefs, sessions, per-session (is_self, belief) in sorted session order)."""
    rng = np.random.default_rng(seed)
    labels, beliefs, sessions, per = [], [], [], []
    for s in range(n_sessions):
        m = int(rng.integers(*items))
        lab = rng.choice(["self", "exogenous"], m)
        bias = rng.normal(0, 0.15)
        b = np.clip(0.5 + bias + signal * np.where(lab == "self", 1, -1) + rng.normal(0, 0.2, m), 0, 1)
        if ties:
            b = np.round(b, 1)
        labels += list(lab)
        beliefs += list(b)
        sessions += [f"s{s:03d}"] * m
        per.append((lab == "self", b))
    return labels, np.array(beliefs), sessions, per


# -- ROC AUC ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auc_matches_sklearn(seed, ties):
    labels, beliefs, sessions, _ = attribution_data(30, seed, ties=ties)
    est = roc_auc_by_session(labels, beliefs, sessions, n_resamples=B)
    y = np.array(labels) == "self"
    assert est.value == pytest.approx(roc_auc_score(y, beliefs), abs=1e-12)
    assert (est.n_items, est.n_sessions) == (len(labels), 30)
    assert est.ci_low <= est.value <= est.ci_high


def test_auc_hand_worked_with_ties():
    # self beliefs 0.8, 0.5; exogenous 0.5, 0.2: pairs (0.8>0.5)=1, (0.8>0.2)=1, (0.5=0.5)=1/2, (0.5>0.2)=1
    est = roc_auc_by_session(["self", "self", "exogenous", "exogenous"], [0.8, 0.5, 0.5, 0.2],
                             ["a", "b", "a", "b"], n_resamples=B)
    assert est.value == pytest.approx(3.5 / 4)


def test_auc_perfect_reversed_and_constant():
    labels = ["self", "exogenous"] * 6
    sessions = [f"s{i // 3}" for i in range(12)]
    right = [0.9 if lab == "self" else 0.1 for lab in labels]
    wrong = [1 - b for b in right]
    perfect = roc_auc_by_session(labels, right, sessions, n_resamples=B)
    assert (perfect.value, perfect.ci_low, perfect.ci_high) == (1.0, 1.0, 1.0)
    assert roc_auc_by_session(labels, wrong, sessions, n_resamples=B).value == 0.0
    constant = roc_auc_by_session(labels, [0.7] * 12, sessions, n_resamples=B)
    assert (constant.value, constant.ci_low, constant.ci_high) == (0.5, 0.5, 0.5)


def test_auc_ci_is_the_independent_cluster_bootstrap_on_the_same_draws():
    labels, beliefs, sessions, per = attribution_data(25, seed=7, ties=True)
    est = roc_auc_by_session(labels, beliefs, sessions, n_resamples=2000, seed=4)
    low, high, skipped = cluster_bootstrap(per, mann_whitney_auc, 2000, seed=4)
    assert (est.ci_low, est.ci_high, est.n_skipped) == (pytest.approx(low, abs=1e-12),
                                                         pytest.approx(high, abs=1e-12), skipped)


def test_auc_ci_agrees_with_an_independent_bootstrap_of_other_draws():
    labels, beliefs, sessions, per = attribution_data(40, seed=3)
    est = roc_auc_by_session(labels, beliefs, sessions, n_resamples=4000, seed=11)
    low, high, _ = cluster_bootstrap(per, mann_whitney_auc, 8000, seed=99)
    width = high - low
    assert est.ci_low == pytest.approx(low, abs=0.06 * width)
    assert est.ci_high == pytest.approx(high, abs=0.06 * width)


def test_auc_resamples_missing_a_class_are_skipped_and_counted():
    # session a holds every self item, b every exogenous one: drawing one session twice (p = 1/2) lacks a class;
    # every other resample is the data itself
    labels = ["self", "self", "exogenous", "exogenous", "exogenous"]
    beliefs = [0.9, 0.3, 0.4, 0.2, 0.95]
    est = roc_auc_by_session(labels, beliefs, ["a", "a", "b", "b", "b"], n_resamples=2000, seed=3)
    y = np.array(labels) == "self"
    assert est.value == pytest.approx(roc_auc_score(y, beliefs))
    assert 850 < est.n_skipped < 1150
    assert est.ci_low == pytest.approx(est.value) and est.ci_high == pytest.approx(est.value)
    _, _, skipped = cluster_bootstrap([(y[:2], np.array(beliefs[:2])), (y[2:], np.array(beliefs[2:]))],
                                      mann_whitney_auc, 2000, seed=3)
    assert est.n_skipped == skipped


def test_auc_missing_beliefs_are_scored_as_one_half():
    labels = ["self", "self", "self", "exogenous", "exogenous", "exogenous"]
    beliefs = [0.9, None, 0.2, 0.1, float("nan"), 0.6]
    sessions = ["a", "a", "b", "b", "c", "c"]
    est = roc_auc_by_session(labels, beliefs, sessions, n_resamples=B)
    filled = [MISSING_BELIEF if b is None or b != b else b for b in beliefs]
    assert MISSING_BELIEF == 0.5
    assert est.value == pytest.approx(roc_auc_score(np.array(labels) == "self", filled))
    assert est.n_items == 6  # missing items are scored, not dropped


def test_leaving_out_the_hard_beliefs_does_not_pay():
    # an adapter that reports only the items it gets right would reach AUC 1 if missing items were dropped
    labels, beliefs, sessions, _ = attribution_data(20, seed=5)
    y = np.array(labels) == "self"
    wrong_side = (beliefs >= 0.5) != y
    omitted = np.where(wrong_side, np.nan, beliefs)
    said_half = np.where(wrong_side, 0.5, beliefs)
    assert roc_auc_score(y[~wrong_side], beliefs[~wrong_side]) == 1.0
    for f in (roc_auc_by_session, brier_by_session):
        assert f(labels, omitted, sessions, n_resamples=0) == f(labels, said_half, sessions, n_resamples=0)


def test_other_labels_are_left_out():
    est = roc_auc_by_session(["self", "unresolved", "exogenous"], [0.9, 0.1, 0.2], ["a", "a", "b"], n_resamples=B)
    assert (est.value, est.n_items) == (1.0, 2)


# -- Brier score -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
def test_brier_matches_sklearn_and_an_independent_bootstrap(seed):
    labels, beliefs, sessions, per = attribution_data(40, seed)
    y = np.array(labels) == "self"
    est = brier_by_session(labels, beliefs, sessions, n_resamples=4000, seed=seed)
    assert est.value == pytest.approx(brier_score_loss(y, beliefs), abs=1e-12)
    low, high, skipped = cluster_bootstrap(per, lambda yy, bb: np.mean((bb - yy) ** 2), 4000, seed=seed)
    assert (est.ci_low, est.ci_high, est.n_skipped) == (pytest.approx(low, abs=1e-12),
                                                         pytest.approx(high, abs=1e-12), skipped)


def test_brier_of_one_class_and_of_missing_beliefs():
    est = brier_by_session(["self", "self"], [1.0, None], ["a", "b"], n_resamples=B)
    assert est.value == pytest.approx((0.0 + 0.25) / 2)


# -- calibration -----------------------------------------------------------------------------------------


def test_ece_and_reliability_table_on_a_hand_worked_case():
    # bin 0 [0, .1): 0.0 (exo), 0.05 (self)          -> mean belief .025, self rate .5, gap .475, n 2
    # bin 3 [.3, .4): 0.3 (self), 0.35 (exo)         -> mean .325, rate .5, gap .175, n 2 (0.3 is bin 3, not 2)
    # bin 9 [.9, 1]:  0.9, 1.0 (self), 0.95 (exo)    -> mean .95, rate 2/3, gap .95 − 2/3, n 3
    # ECE = (2·.475 + 2·.175 + 3·(.95 − 2/3)) / 7
    labels = ["exogenous", "self", "self", "exogenous", "self", "self", "exogenous"]
    beliefs = [0.0, 0.05, 0.3, 0.35, 0.9, 1.0, 0.95]
    cal = calibration_by_session(labels, beliefs, ["a", "b", "c", "a", "b", "c", "a"], n_resamples=B)
    expected = (2 * 0.475 + 2 * 0.175 + 3 * (0.95 - 2 / 3)) / 7
    assert cal.ece.value == pytest.approx(expected, abs=1e-12)
    assert ece_numpy(np.array(labels) == "self", np.array(beliefs)) == pytest.approx(expected, abs=1e-12)
    assert [b.count for b in cal.bins] == [2, 0, 0, 2, 0, 0, 0, 0, 0, 3]
    assert (cal.bins[3].low, cal.bins[3].high) == pytest.approx((0.3, 0.4))
    assert (cal.bins[0].mean_belief, cal.bins[0].self_rate) == pytest.approx((0.025, 0.5))
    assert (cal.bins[9].mean_belief, cal.bins[9].self_rate) == pytest.approx((0.95, 2 / 3))
    assert math.isnan(cal.bins[1].mean_belief) and math.isnan(cal.bins[1].self_rate)
    assert cal.n_missing == 0 and cal.ece.n_sessions == 3


def test_perfectly_calibrated_bins_have_zero_ece():
    # bin [.2, .3): four items at 0.25, one self; bin [.7, .8): four at 0.75, three self
    labels = ["self"] + ["exogenous"] * 3 + ["self"] * 3 + ["exogenous"]
    cal = calibration_by_session(labels, [0.25] * 4 + [0.75] * 4, list("abcdabcd"), n_resamples=B)
    assert cal.ece.value == pytest.approx(0.0, abs=1e-15)


def test_ece_matches_numpy_and_an_independent_bootstrap():
    labels, beliefs, sessions, per = attribution_data(40, seed=2)
    y = np.array(labels) == "self"
    for n_bins in (5, 10, 15):
        cal = calibration_by_session(labels, beliefs, sessions, n_bins=n_bins, n_resamples=1000, seed=1)
        assert len(cal.bins) == n_bins and sum(b.count for b in cal.bins) == len(labels)
        assert cal.ece.value == pytest.approx(ece_numpy(y, beliefs, n_bins), abs=1e-12)
    low, high, _ = cluster_bootstrap(per, lambda yy, bb: ece_numpy(yy, bb, 15), 1000, seed=1)
    assert (cal.ece.ci_low, cal.ece.ci_high) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))


def test_calibration_counts_missing_beliefs_in_the_middle_bin():
    cal = calibration_by_session(["self", "exogenous", "self"], [None, 0.1, 0.9], ["a", "b", "c"], n_resamples=B)
    assert cal.n_missing == 1
    assert cal.bins[5].count == 1 and cal.bins[5].mean_belief == 0.5


# -- the distribution of beliefs -------------------------------------------------------------------------


def test_distribution_matches_numpy():
    _, beliefs, sessions, _ = attribution_data(30, seed=8, ties=True)
    with_missing = list(beliefs) + [None, None]
    dist = belief_distribution(with_missing, sessions + ["s000", "zzz"], n_resamples=B)
    assert (dist.n_items, dist.n_missing, dist.n_sessions) == (beliefs.size, 2, 30)  # zzz reported nothing
    assert dist.mean == pytest.approx(np.mean(beliefs))
    assert list(dist.quantiles) == list(QUANTILES)
    assert list(dist.quantiles.values()) == pytest.approx(list(np.quantile(beliefs, QUANTILES)))
    assert dist.median.value == pytest.approx(np.median(beliefs))
    assert dist.share_self.value == pytest.approx(np.mean(beliefs >= 0.5))
    assert dist.n_distinct == np.unique(beliefs).size
    assert not dist.one_class and not dist.constant


def test_distribution_cis_are_the_independent_cluster_bootstrap_on_the_same_draws():
    _, beliefs, sessions, per = attribution_data(25, seed=9)
    per_b = [(b,) for _, b in per]
    dist = belief_distribution(beliefs, sessions, n_resamples=2000, seed=6)
    low, high, _ = cluster_bootstrap(per_b, np.median, 2000, seed=6)
    assert (dist.median.ci_low, dist.median.ci_high) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))
    low, high, _ = cluster_bootstrap(per_b, lambda b: np.mean(b >= 0.5), 2000, seed=6)
    assert (dist.share_self.ci_low, dist.share_self.ci_high) == (pytest.approx(low, abs=1e-12),
                                                                 pytest.approx(high, abs=1e-12))


def test_a_degenerate_predictor_is_flagged():
    dist = belief_distribution([0.7, 0.9, 0.55, 0.6], ["a", "a", "b", "c"], n_resamples=B)
    assert dist.one_class and not dist.constant and dist.share_self.value == 1.0
    flat = belief_distribution([0.3] * 4, ["a", "b", "c", "d"], n_resamples=B)
    assert flat.one_class and flat.constant and flat.n_distinct == 1 and flat.share_self.value == 0.0
    assert one_class(["self", "self", "missing", None])
    assert one_class(["missing"])
    assert not one_class(["self", "exogenous", "missing"])


# -- degenerate cases and bad inputs ---------------------------------------------------------------------


def test_one_session_reports_the_value_and_no_interval():
    labels, beliefs, sessions = ["self", "exogenous", "self"], [0.8, 0.3, 0.4], ["only"] * 3
    for est in (roc_auc_by_session(labels, beliefs, sessions, n_resamples=B),
                brier_by_session(labels, beliefs, sessions, n_resamples=B),
                calibration_by_session(labels, beliefs, sessions, n_resamples=B).ece,
                belief_distribution(beliefs, sessions, n_resamples=B).median,
                belief_distribution(beliefs, sessions, n_resamples=B).share_self):
        assert isinstance(est, Estimate) and not est.has_ci and est.n_sessions == 1
    assert roc_auc_by_session(labels, beliefs, sessions, n_resamples=B).value == 1.0


def test_same_seed_same_interval_other_seed_another():
    labels, beliefs, sessions, _ = attribution_data(25, seed=2)
    a = roc_auc_by_session(labels, beliefs, sessions, n_resamples=B, seed=7)
    assert a == roc_auc_by_session(labels, beliefs, sessions, n_resamples=B, seed=7)
    c = roc_auc_by_session(labels, beliefs, sessions, n_resamples=B, seed=8)
    assert (a.ci_low, a.ci_high) != (c.ci_low, c.ci_high)


@pytest.mark.parametrize("f", [roc_auc_by_session, brier_by_session, calibration_by_session])
def test_bad_inputs_are_value_errors(f):
    with pytest.raises(ValueError, match="nothing to score"):
        f([], [], [], n_resamples=B)
    with pytest.raises(ValueError, match="nothing to score"):
        f(["unsure"], [0.5], ["a"], n_resamples=B)
    with pytest.raises(ValueError, match="align"):
        f(["self", "exogenous"], [0.5], ["a", "b"], n_resamples=B)
    with pytest.raises(ValueError, match="align"):
        f(["self", "exogenous"], [0.5, 0.4], ["a"], n_resamples=B)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        f(["self", "exogenous"], [0.5, 1.2], ["a", "b"], n_resamples=B)
    with pytest.raises(ValueError, match="session id"):
        f(["self", "exogenous"], [0.5, 0.2], ["a", None], n_resamples=B)


def test_auc_of_one_class_is_a_value_error():
    with pytest.raises(ValueError, match="both classes"):
        roc_auc_by_session(["self", "self"], [0.2, 0.9], ["a", "b"], n_resamples=B)
    with pytest.raises(ValueError, match="both classes"):
        roc_auc_by_session(["exogenous", "unresolved"], [0.2, 0.9], ["a", "b"], n_resamples=B)


def test_distribution_bad_inputs_are_value_errors():
    with pytest.raises(ValueError, match="empty"):
        belief_distribution([], [], n_resamples=B)
    with pytest.raises(ValueError, match="empty"):
        belief_distribution([None, float("nan")], ["a", "b"], n_resamples=B)
    with pytest.raises(ValueError, match="align"):
        belief_distribution([0.1, 0.2], ["a"], n_resamples=B)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        belief_distribution([-0.1], ["a"], n_resamples=B)
    with pytest.raises(ValueError, match="n_bins"):
        calibration_by_session(["self"], [0.5], ["a"], n_bins=0)
