"""Session-bootstrap estimates: hand-worked values, an independent numpy bootstrap, degenerate cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from trb.stats import (
    Estimate,
    balanced_accuracy_by_session,
    mean_by_session,
    normalised_gain_by_session,
    paired_delta_by_session,
)

B = 1000


def numpy_cluster_bootstrap(per_session: list[np.ndarray], statistic, n: int, seed: int, confidence=0.95):
    """An independent cluster bootstrap: draw sessions with replacement, pool their items, take the statistic.

    ``statistic`` takes the pooled items of one resample; a nan result is skipped.
    """
    rng = np.random.default_rng(seed)
    k = len(per_session)
    out = []
    for _ in range(n):
        drawn = rng.integers(0, k, k)
        out.append(statistic(np.concatenate([per_session[i] for i in drawn])))
    out = np.asarray(out, dtype=float)
    out = out[~np.isnan(out)]
    a = (1 - confidence) / 2
    return np.quantile(out, [a, 1 - a])


def clustered(n_sessions: int, seed: int, *, items=(2, 9)):
    """Scores with a per-session effect: (scores, sessions, per-session arrays)."""
    rng = np.random.default_rng(seed)
    scores, sessions, per = [], [], []
    for s in range(n_sessions):
        m = rng.integers(*items)
        level = rng.beta(2, 2)
        x = np.clip(level + rng.normal(0, 0.1, m), 0, 1)
        scores += list(x)
        sessions += [f"s{s:03d}"] * m
        per.append(x)
    return np.array(scores), sessions, per


# -- hand-worked values ------------------------------------------------------------------------------


def test_mean_is_the_plain_item_mean_on_a_hand_worked_case():
    # s1: 1.0, 0.5 | s2: 0.0 | s3: 0.25, 0.25, 1.0, 0.0 -> item mean 3.0 / 7
    # (the mean of the session means, (0.75 + 0 + 0.375) / 3, would be another number)
    scores = [1.0, 0.5, 0.0, 0.25, 0.25, 1.0, 0.0]
    sessions = ["s1", "s1", "s2", "s3", "s3", "s3", "s3"]
    est = mean_by_session(scores, sessions, n_resamples=B)
    assert est.value == pytest.approx(3.0 / 7, abs=1e-15)
    assert (est.n_items, est.n_sessions, est.n_skipped) == (7, 3, 0)
    # every resample is a ratio of sums of whole sessions, so it lies between the extreme session means
    assert 0.0 <= est.ci_low <= est.value <= est.ci_high <= 0.75


def test_two_single_item_sessions_give_the_exact_percentile_interval():
    # resample means are 0, 0.5, 1 with probability 1/4, 1/2, 1/4: the 2.5% and 97.5% points are 0 and 1
    est = mean_by_session([0.0, 1.0], ["a", "b"], n_resamples=B)
    assert (est.value, est.ci_low, est.ci_high) == (0.5, 0.0, 1.0)


def test_balanced_accuracy_on_a_hand_worked_case():
    labels = ["self", "self", "exogenous", "self", "exogenous", "exogenous", "exogenous", "unresolved"]
    predicted = ["self", "exogenous", "exogenous", "self", "self", "exogenous", "missing", "self"]
    sessions = ["a", "a", "a", "b", "b", "c", "c", "c"]
    # positives: 3, hits 2 -> TPR 2/3; negatives: 4, hits 2 (the 'missing' prediction is a miss) -> TNR 1/2
    est = balanced_accuracy_by_session(labels, predicted, sessions, n_resamples=B)
    assert est.value == pytest.approx((2 / 3 + 1 / 2) / 2, abs=1e-15)
    assert (est.n_items, est.n_sessions) == (7, 3)  # the unresolved item is not scored
    assert 0 <= est.ci_low <= est.ci_high <= 1


def test_balanced_accuracy_differs_from_accuracy_on_imbalanced_labels():
    # 9 positives all right, 1 negative wrong: accuracy 0.9, balanced accuracy 0.5 (always saying "self")
    labels = ["self"] * 9 + ["exogenous"]
    predicted = ["self"] * 10
    est = balanced_accuracy_by_session(labels, predicted, [f"s{i}" for i in range(10)], n_resamples=B)
    assert est.value == 0.5


def test_custom_positive_and_negative_labels():
    est = balanced_accuracy_by_session(["yes", "no", "no"], ["yes", "no", "yes"], ["a", "b", "c"],
                                       positive="yes", negative="no", n_resamples=B)
    assert est.value == pytest.approx((1 + 0.5) / 2)


# -- against an independent bootstrap ---------------------------------------------------------------


def test_mean_ci_agrees_with_an_independent_numpy_cluster_bootstrap():
    scores, sessions, per = clustered(40, seed=3)
    est = mean_by_session(scores, sessions, n_resamples=4000, seed=11)
    ref = numpy_cluster_bootstrap(per, np.mean, 20_000, seed=99)
    width = ref[1] - ref[0]
    assert est.ci_low == pytest.approx(ref[0], abs=0.06 * width)
    assert est.ci_high == pytest.approx(ref[1], abs=0.06 * width)


def test_balanced_accuracy_ci_agrees_with_an_independent_numpy_cluster_bootstrap():
    rng = np.random.default_rng(5)
    labels, predicted, sessions, per = [], [], [], []
    for s in range(40):
        m = int(rng.integers(2, 8))
        skill = rng.uniform(0.3, 0.95)
        lab = rng.choice(["self", "exogenous"], m)
        right = rng.random(m) < skill
        pred = np.where(right, lab, np.where(lab == "self", "exogenous", "self"))
        labels += list(lab)
        predicted += list(pred)
        sessions += [f"s{s}"] * m
        per.append(np.stack([lab == "self", pred == "self"], axis=1))

    def ba(pooled: np.ndarray) -> float:
        lab_pos, pred_pos = pooled[:, 0], pooled[:, 1]
        if lab_pos.all() or (~lab_pos).all():
            return math.nan
        return (np.mean(pred_pos[lab_pos]) + np.mean(~pred_pos[~lab_pos])) / 2

    est = balanced_accuracy_by_session(labels, predicted, sessions, n_resamples=4000, seed=2)
    assert est.value == pytest.approx(ba(np.concatenate(per)), abs=1e-12)
    ref = numpy_cluster_bootstrap(per, ba, 20_000, seed=8)
    width = ref[1] - ref[0]
    assert est.ci_low == pytest.approx(ref[0], abs=0.06 * width)
    assert est.ci_high == pytest.approx(ref[1], abs=0.06 * width)


def test_paired_delta_matches_the_paired_numpy_mean_and_bootstrap():
    rng = np.random.default_rng(4)
    scores_b, sessions, per_b = clustered(30, seed=4)
    scores_a = np.clip(scores_b + 0.1 + rng.normal(0, 0.05, scores_b.size), 0, 1)
    est = paired_delta_by_session(scores_a, scores_b, sessions, n_resamples=4000, seed=1)
    d = scores_a - scores_b
    assert est.value == pytest.approx(np.mean(d), abs=1e-12)
    codes = np.unique(sessions, return_inverse=True)[1]
    ref = numpy_cluster_bootstrap([d[codes == c] for c in range(30)], np.mean, 20_000, seed=5)
    width = ref[1] - ref[0]
    assert est.ci_low == pytest.approx(ref[0], abs=0.06 * width)
    assert est.ci_high == pytest.approx(ref[1], abs=0.06 * width)


# -- properties -------------------------------------------------------------------------------------


def test_ci_narrows_with_more_sessions():
    few = mean_by_session(*clustered(10, seed=1)[:2], n_resamples=B)
    many = mean_by_session(*clustered(250, seed=1)[:2], n_resamples=B)
    assert (many.ci_high - many.ci_low) < 0.5 * (few.ci_high - few.ci_low)


def test_same_seed_same_interval_other_seed_another():
    scores, sessions, _ = clustered(25, seed=2)
    a = mean_by_session(scores, sessions, n_resamples=B, seed=7)
    b = mean_by_session(scores, sessions, n_resamples=B, seed=7)
    c = mean_by_session(scores, sessions, n_resamples=B, seed=8)
    assert a == b
    assert (a.ci_low, a.ci_high) != (c.ci_low, c.ci_high)


@pytest.mark.parametrize("cells", [1, 97, 2_000, 10**9])
def test_the_interval_is_the_same_however_the_resamples_are_batched(monkeypatch, cells):
    # memory is bounded by drawing the resamples in batches; the figures must not depend on the batch
    import trb.stats

    scores, sessions, _ = clustered(40, seed=4)
    other = np.clip(scores + np.random.default_rng(9).normal(0, 0.2, scores.size), 0, 1)
    whole = [mean_by_session(scores, sessions, n_resamples=B, seed=3),
             paired_delta_by_session(scores, other, sessions, n_resamples=B, seed=3),
             normalised_gain_by_session(scores, other, sessions, n_resamples=B, seed=3)]
    monkeypatch.setattr(trb.stats, "_BATCH_CELLS", cells)
    assert [mean_by_session(scores, sessions, n_resamples=B, seed=3),
            paired_delta_by_session(scores, other, sessions, n_resamples=B, seed=3),
            normalised_gain_by_session(scores, other, sessions, n_resamples=B, seed=3)] == whole


def test_sessions_are_numbered_in_the_sorted_order_of_their_ids_as_numpy_does():
    # the bootstrap draws sessions by their number: the numbering is numpy's unique of the ids as text,
    # whatever their script, and ids that are not text are read as their text (1 and "1" are one session)
    from trb.stats import _session_index

    rng = np.random.default_rng(5)
    alphabet = ["a", "B", "é", "日", "0", "_", "ß", "\U0001F600", "z"]
    for _ in range(50):
        ids = ["".join(rng.choice(alphabet, rng.integers(1, 6))) for _ in range(rng.integers(1, 30))]
        arr = np.array([ids[i] for i in rng.integers(0, len(ids), 200)], dtype=object)
        codes, k = _session_index(arr, arr.size)
        _, want = np.unique(arr.astype(str), return_inverse=True)
        assert k == len(set(arr)) and codes.tolist() == want.reshape(-1).tolist()
    codes, k = _session_index(np.array([2, "1", 1, "b"], dtype=object), 4)
    assert (codes.tolist(), k) == ([1, 0, 0, 2], 3)
    with pytest.raises(ValueError, match="session id"):
        _session_index(np.array(["s1", None], dtype=object), 2)



def test_integer_session_codes_are_numbered_as_numpy_unique_numbers_them():
    # the report passes sessions as int64 codes (a subset of a track's items leaves gaps in them): they are numbered
    # by a count of the codes present, not a sort; the numbering must be np.unique's, gaps, large codes and all
    from trb.stats import _session_index

    rng = np.random.default_rng(11)
    cases = [rng.integers(0, hi, size) for hi, size in [(1, 5), (7, 40), (1000, 300), (10, 100_000)]]
    cases += [np.array([5, 3, 3, 900_000, 5], dtype=np.int64),  # a large code beside few items: np.unique's own path
              np.array([0]), np.arange(50)[::-1].copy(), rng.integers(0, 2**40, 64),
              np.array([2, 2, 7], dtype=np.uint32), np.array([-3, 4, -3], dtype=np.int64)]
    for arr in cases:
        codes, k = _session_index(arr, arr.size)
        uniq, want = np.unique(arr, return_inverse=True)
        assert k == uniq.size and codes.tolist() == want.reshape(-1).tolist(), arr[:10]
        assert codes.dtype.kind == "i"

def test_session_resampling_is_wider_than_item_resampling_on_clustered_data():
    # 20 sessions of 10 identical items: there are 20 independent values, not 200
    rng = np.random.default_rng(0)
    levels = rng.uniform(0, 1, 20)
    scores = np.repeat(levels, 10)
    sessions = np.repeat([f"s{i}" for i in range(20)], 10)
    by_session = mean_by_session(scores, sessions, n_resamples=B, seed=0)
    naive = sps.bootstrap((scores,), np.mean, n_resamples=B, method="percentile", rng=np.random.default_rng(0))
    session_width = by_session.ci_high - by_session.ci_low
    item_width = naive.confidence_interval.high - naive.confidence_interval.low
    assert session_width > 2 * item_width  # about sqrt(10) ≈ 3.2 times in expectation


def test_paired_delta_of_identical_arrays_is_exactly_zero():
    scores, sessions, _ = clustered(12, seed=6)
    est = paired_delta_by_session(scores, scores.copy(), sessions, n_resamples=B)
    assert (est.value, est.ci_low, est.ci_high) == (0.0, 0.0, 0.0)
    assert est.n_sessions == 12 and est.n_items == scores.size


def test_confidence_level_changes_the_interval():
    scores, sessions, _ = clustered(30, seed=9)
    wide = mean_by_session(scores, sessions, n_resamples=B, confidence=0.99)
    narrow = mean_by_session(scores, sessions, n_resamples=B, confidence=0.80)
    assert wide.ci_low < narrow.ci_low and narrow.ci_high < wide.ci_high


# -- degenerate cases -------------------------------------------------------------------------------


def test_one_session_reports_the_value_and_no_interval():
    est = mean_by_session([0.2, 0.4, 0.9], ["only"] * 3, n_resamples=B)
    assert est.value == pytest.approx(0.5)
    assert math.isnan(est.ci_low) and math.isnan(est.ci_high) and not est.has_ci
    ba = balanced_accuracy_by_session(["self", "exogenous"], ["self", "self"], ["only", "only"], n_resamples=B)
    assert ba.value == 0.5 and not ba.has_ci and ba.n_sessions == 1


@pytest.mark.parametrize("call", [
    lambda: mean_by_session([], [], n_resamples=B),
    lambda: paired_delta_by_session([], [], [], n_resamples=B),
    lambda: balanced_accuracy_by_session([], [], [], n_resamples=B),
])
def test_empty_input_is_a_value_error(call):
    with pytest.raises(ValueError, match="nothing to score|empty"):
        call()


def test_bad_inputs_are_value_errors():
    with pytest.raises(ValueError, match="align"):
        mean_by_session([0.1, 0.2], ["a"], n_resamples=B)
    with pytest.raises(ValueError, match="non-finite"):
        mean_by_session([0.1, float("nan")], ["a", "b"], n_resamples=B)
    with pytest.raises(ValueError, match="aligned"):
        paired_delta_by_session([0.1, 0.2], [0.1], ["a", "b"], n_resamples=B)
    with pytest.raises(ValueError, match="session id"):
        mean_by_session([0.1, 0.2], ["a", None], n_resamples=B)
    with pytest.raises(ValueError, match="both classes"):
        balanced_accuracy_by_session(["self", "self"], ["self", "exogenous"], ["a", "b"], n_resamples=B)
    with pytest.raises(ValueError, match="nothing to score"):
        balanced_accuracy_by_session(["unsure"], ["self"], ["a"], n_resamples=B)


def test_balanced_accuracy_resamples_missing_a_class_are_skipped_and_counted():
    # session a holds every positive, session b every negative: a resample that draws one session twice
    # has no other class (probability 1/2); every other resample draws a and b once, i.e. the data itself
    labels = ["self", "self", "exogenous", "exogenous", "exogenous"]
    predicted = ["self", "exogenous", "exogenous", "exogenous", "self"]
    est = balanced_accuracy_by_session(labels, predicted, ["a", "a", "b", "b", "b"], n_resamples=2000, seed=3)
    assert est.value == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert 850 < est.n_skipped < 1150
    assert est.ci_low == pytest.approx(est.value) and est.ci_high == pytest.approx(est.value)


def test_estimate_is_frozen():
    est = Estimate(0.5, 0.4, 0.6, 10, 3)
    with pytest.raises(AttributeError):
        est.value = 1.0  # type: ignore[misc]


# -- the normalised governance effect -----------------------------------------------------------------


def test_normalised_gain_on_a_hand_worked_case():
    # scores (G) 0.9, 0.5 and reference (G_own) 0.5, 0.5: (1.4 - 1.0) / (2 - 1.0) = 0.4
    est = normalised_gain_by_session([0.9, 0.5], [0.5, 0.5], ["a", "b"], n_resamples=0)
    assert est.value == pytest.approx(0.4, abs=1e-15)
    # equal to the reference: 0 exactly; every score 1: exactly 1
    assert normalised_gain_by_session([0.3, 0.6], [0.3, 0.6], ["a", "b"], n_resamples=0).value == 0.0
    assert normalised_gain_by_session([1.0, 1.0], [0.3, 0.6], ["a", "b"], n_resamples=0).value == 1.0
    with pytest.raises(ValueError, match="no headroom"):
        normalised_gain_by_session([1.0, 0.2], [1.0, 1.0], ["a", "b"])


def test_normalised_gain_ci_agrees_with_an_independent_numpy_cluster_bootstrap():
    rng = np.random.default_rng(7)
    refs, sessions, _ = clustered(30, seed=7)
    refs = refs * 0.8
    scores = np.clip(refs + 0.2 * (1 - refs) + rng.normal(0, 0.05, refs.size), 0, 1)
    est = normalised_gain_by_session(scores, refs, sessions, n_resamples=4000, seed=2)
    assert est.value == pytest.approx((scores.mean() - refs.mean()) / (1 - refs.mean()), abs=1e-12)
    codes = np.unique(sessions, return_inverse=True)[1]
    pairs = [np.stack([scores[codes == c], refs[codes == c]], axis=1) for c in range(30)]

    def gain(pooled):
        s, r = pooled[:, 0], pooled[:, 1]
        return (s.mean() - r.mean()) / (1 - r.mean())

    ref = numpy_cluster_bootstrap(pairs, gain, 20_000, seed=5)
    width = ref[1] - ref[0]
    assert est.ci_low == pytest.approx(ref[0], abs=0.06 * width)
    assert est.ci_high == pytest.approx(ref[1], abs=0.06 * width)
