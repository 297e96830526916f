"""toolkit.ceiling against independent implementations: hand-worked cases, a full enumeration of the
multinomial outcomes, and numpy multinomial resampling."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from toolkit.ceiling import Ceiling, ceiling_by_items, expected_tv, oracle_g


def _enumerated_g(p: list[float], n: int) -> float:
    """E[1 - TV(p, counts/n)] by summing over every composition of n into len(p) counts (stars and bars)."""
    k = len(p)
    total = 0.0
    for bars in itertools.combinations(range(n + k - 1), k - 1):
        edges = (-1, *bars, n + k - 1)
        counts = [edges[i + 1] - edges[i] - 1 for i in range(k)]
        pmf = math.factorial(n) / math.prod(math.factorial(c) for c in counts) * math.prod(
            q ** c for q, c in zip(p, counts))
        total += pmf * (1 - 0.5 * sum(abs(q - c / n) for q, c in zip(p, counts)))
    return total


def test_hand_worked_cases():
    # a certain action: every annotator picks it, Φ = p, TV = 0
    assert oracle_g({"up": 1.0, "down": 0.0}, 1) == 1.0
    assert oracle_g({"up": 1.0, "down": 0.0}, 7) == 1.0
    assert oracle_g({"up": 1.0}, 3) == 1.0
    # p = (1/2, 1/2), n = 1: Φ is (1, 0) or (0, 1), TV = 1/2 either way
    assert oracle_g({"a": 0.5, "b": 0.5}, 1) == pytest.approx(0.5, abs=1e-15)
    # n = 2: (2,0) and (0,2) with prob 1/4 each, TV 1/2; (1,1) with prob 1/2, TV 0 -> E[TV] = 1/4
    assert oracle_g({"a": 0.5, "b": 0.5}, 2) == pytest.approx(0.75, abs=1e-15)
    # p = (3/4, 1/4), n = 1: TV = 1/4 w.p. 3/4 (picks a), 3/4 w.p. 1/4 (picks b) -> E[TV] = 3/8
    assert expected_tv([0.75, 0.25], 1) == pytest.approx(0.375, abs=1e-15)
    # p = (1/3, 1/3, 1/3), n = 3: all three the same (3 ways, prob 1/27 each, TV 2/3), a 2-1-0 split
    # (18 ways in all, TV 1/3), one each (6/27, TV 0): E[TV] = 3/27 * 2/3 + 18/27 * 1/3 = 8/27
    assert expected_tv([1 / 3, 1 / 3, 1 / 3], 3) == pytest.approx(8 / 27, abs=1e-12)


@pytest.mark.parametrize("p, n", [
    ([0.5, 0.5], 5), ([0.75, 0.125, 0.125], 8), ([0.2, 0.3, 0.5], 3), ([0.1, 0.2, 0.3, 0.4], 6),
    ([0.05, 0.05, 0.1, 0.3, 0.5], 12), ([0.9, 0.1], 40), ([0.2] * 5, 9), ([0.6, 0.0, 0.4], 4),
])
def test_matches_a_full_enumeration_of_the_multinomial(p, n):
    assert oracle_g(p, n) == pytest.approx(_enumerated_g(p, n), abs=1e-12)


@pytest.mark.parametrize("p, n", [([0.5, 0.5], 3), ([0.75, 0.125, 0.125], 5), ([0.1, 0.2, 0.3, 0.4], 8),
                                  ([0.02, 0.08, 0.1, 0.2, 0.25, 0.35], 25), ([0.1] * 10, 60)])
def test_matches_numpy_multinomial_resampling(p, n):
    draws = 200_000
    rng = np.random.default_rng(20261201)
    phat = rng.multinomial(n, p, size=draws) / n
    g = 1 - 0.5 * np.abs(phat - np.asarray(p)).sum(axis=1)
    se = g.std(ddof=1) / math.sqrt(draws)
    assert abs(oracle_g(p, n) - g.mean()) < 5 * se + 1e-12


def test_large_panels_are_exact_and_fast():
    # n = 2000 annotators over 10 actions: ~10^27 multinomial outcomes, computed from 10 binomials
    g = oracle_g([0.1] * 10, 2000)
    # for large n, E|p - X/n| ~ sqrt(2 p (1-p) / (pi n)) per action
    assert g == pytest.approx(1 - 0.5 * 10 * math.sqrt(2 * 0.09 / (math.pi * 2000)), abs=2e-4)
    assert 0 < 1 - g < 0.05


def test_the_ceiling_rises_with_annotators_and_the_truth_scores_below_one():
    p = {"a": 0.6, "b": 0.3, "c": 0.1}
    gs = [oracle_g(p, n) for n in (1, 3, 5, 8, 20, 100)]
    assert gs == sorted(gs) and gs[-1] < 1
    assert oracle_g(p, 3) < 0.8  # the truth itself, judged against 3 annotators


def test_a_sharpened_model_can_beat_the_truth_at_n3():
    """Why the ceiling is reported: at small n a sharpened distribution beats the truth on average."""
    p, sharp, n = (0.6, 0.4), (2 / 3, 1 / 3), 3
    # X ~ Binomial(3, 0.6) votes for the first action; TV between two-action distributions is |q0 - X/n|
    exp_g = sum(math.comb(n, x) * p[0] ** x * p[1] ** (n - x) * (1 - abs(sharp[0] - x / n)) for x in range(n + 1))
    assert exp_g == pytest.approx(1 - 0.632 / 3)
    assert oracle_g(p, n) == pytest.approx(1 - 0.2304)
    assert exp_g > oracle_g(p, n)


@pytest.mark.parametrize("probs, n", [([0.5, 0.4], 3), ([1.2, -0.2], 3), ([], 3), ([float("nan"), 1], 3),
                                      ([1.0], 0), ([1.0], 2.5), ([1.0], True)])
def test_bad_input_is_a_value_error(probs, n):
    with pytest.raises(ValueError):
        oracle_g(probs, n)


def test_ceiling_by_items_averages_with_counts_and_leaves_unstated_out():
    items = [({"a": 0.5, "b": 0.5}, 2), ({"a": 0.5, "b": 0.5}, 2), ({"a": 1.0}, 5), ({"a": 0.7, "b": 0.3}, None),
             ([0.25, 0.75], 4)]
    c = ceiling_by_items(items)
    assert (c.items, c.unstated, c.phi_n) == (5, 1, {2: 2, 4: 1, 5: 1})
    assert c.oracle_g == pytest.approx((0.75 + 0.75 + 1.0 + oracle_g([0.25, 0.75], 4)) / 4)
    assert (c.n_min, c.n_median, c.n_max) == (2, 3.0, 5)
    assert ceiling_by_items([]) == Ceiling(items=0, unstated=0, phi_n={}, oracle_g=None)
    only_unstated = ceiling_by_items([({"a": 1.0}, None)])
    assert only_unstated.oracle_g is None and only_unstated.n_median is None and only_unstated.unstated == 1
    assert ceiling_by_items([({"a": 1.0}, 3)] * 3 + [({"a": 1.0}, 8)]).n_median == 3.0
    grouped = ceiling_by_items([({"a": 0.5, "b": 0.5}, 2, 2), ({"a": 1.0}, 5, 1), ({"a": 0.7, "b": 0.3}, None, 1),
                                ([0.25, 0.75], 4, 1)])
    assert grouped == c


def test_schemas_ceiling_imports_neither_corpus_nor_trb():
    import subprocess
    import sys

    code = "import sys, toolkit.ceiling; bad = [m for m in sys.modules if m.split('.')[0] in ('corpus', 'trb')]; " \
           "print(bad); sys.exit(1 if bad else 0)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
