"""CG-1 as a sample-size test: an exact paired test of the two Track 4 conditions, its power at a stated effect,
and "detectable" only where that power is reached. Checked against statsmodels, brute force and simulation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import binom, multinomial

from trb.detectability import ALPHA, EFFECT_COMPLETION, POWER, cg1_calibration, cg1_completion, cg1_reading
from trb.paired_tests import (
    EXACT_FLIPS,
    discordant,
    kl_n,
    mcnemar_n_for_power,
    mcnemar_power,
    mcnemar_two_sided,
    sign_flip,
)


def test_the_mcnemar_p_value_is_statsmodels_exact_one():
    from statsmodels.stats.contingency_tables import mcnemar

    for b, c in itertools.product(range(0, 13), repeat=2):
        table = [[5, b], [c, 7]]
        assert mcnemar_two_sided(b, c) == pytest.approx(mcnemar(table, exact=True).pvalue, abs=1e-12), (b, c)


def test_the_exact_power_is_the_multinomial_sum_by_brute_force():
    """Every outcome (n10, n01, the rest) of n pairs, weighed by its multinomial probability, rejected or not."""
    n, p10, p01 = 14, 0.25, 0.05
    brute = 0.0
    for n10 in range(n + 1):
        for n01 in range(n + 1 - n10):
            if mcnemar_two_sided(n10, n01) < ALPHA:
                brute += multinomial.pmf([n10, n01, n - n10 - n01], n, [p10, p01, 1 - p10 - p01])
    assert mcnemar_power(n, p10, p01) == pytest.approx(brute, abs=1e-12)
    assert mcnemar_power(n, 0.1, 0.1) < ALPHA  # no difference: the exact test rejects less than alpha
    n80 = mcnemar_n_for_power(0.2, 0.05)
    assert mcnemar_power(n80, 0.2, 0.05) >= POWER > mcnemar_power(n80 - 1, 0.2, 0.05)
    assert sum(mcnemar_power(k, 0.2, 0.05) >= POWER for k in range(1, n80)) <= 3  # the saw: a few earlier n at most


def test_the_issues_cases_are_no_longer_detectable():
    # 2/12 vs 0/12 completions was "detectable" (Fisher p = 0.48): now the exact paired test, p = 0.5
    full, abl = np.r_[1, 1, np.zeros(10)], np.zeros(12)
    cg = cg1_completion(full, abl)
    assert (cg["b"], cg["c"], cg["n_used"]) == (2, 0, 12) and cg["p_value"] == pytest.approx(0.5)
    assert not cg["different"] and not cg["detectable"] and cg["reading"] == "not established"
    assert "could NOT detect a change of 0.1" in cg1_reading(cg) and "n ≈" in cg1_reading(cg)
    # 400 vs 378 of 1,000 (z = 1.01) was "detectable": paired, 100 pairs only the full model completed and 78 only
    # the ablation, the exact test gives p = 2·P(B ≥ 100), B ~ Bin(178, ½) ≈ 0.12: not different
    full = np.r_[np.ones(400), np.zeros(600)]
    abl = np.r_[np.ones(300), np.zeros(100), np.ones(78), np.zeros(522)]
    cg = cg1_completion(full, abl)
    assert (cg["b"], cg["c"]) == (100, 78) and abl.sum() == 378
    assert not cg["different"] and cg["p_value"] == pytest.approx(2 * binom.sf(99, 178, 0.5), rel=1e-9)
    # but with 1,000 pairs a change of 0.1 would have been seen: "no difference of 0.1 or more", not "different"
    assert cg["detectable"] and cg["power"] > 0.99 and cg["reading"] == "no difference of the effect of interest or more"
    # the spec's two forms at the ablation's rate: n·KL ≥ 1 and n·½·δ²/(p(1 − p)) ≥ 1, by hand
    p = (378 + 0.5) / 1001
    q = p + EFFECT_COMPLETION
    kl = q * math.log(q / p) + (1 - q) * math.log((1 - q) / (1 - p))
    assert cg["n_kl"] == math.ceil(1 / kl) and cg["n_fisher"] == math.ceil(2 * p * (1 - p) / EFFECT_COMPLETION ** 2)
    assert kl_n(0.5, 0.1)["n_fisher"] == math.ceil(2 * 0.25 / 0.01)


def test_the_sign_flip_test_is_exact_by_enumeration():
    d = np.asarray([0.3, -0.1, 0.2, 0.05, -0.02, 0.4])
    sums = [np.dot(s, d) for s in itertools.product((-1, 1), repeat=d.size)]
    obs = d.sum()
    t = sign_flip(d)
    assert t["p_greater"] == pytest.approx(np.mean([x >= obs - 1e-12 for x in sums]))
    assert t["p_less"] == pytest.approx(np.mean([x <= obs + 1e-12 for x in sums]))
    big = np.random.default_rng(3).normal(0.1, 1, EXACT_FLIPS + 10)  # the Monte Carlo form: seeded, reproducible
    assert sign_flip(big, seed=4) == sign_flip(big, seed=4) and 0 < sign_flip(big, seed=4)["p"] <= 1


RUNS = 2000
SE = math.sqrt(0.05 * 0.95 / RUNS)


@pytest.mark.slow
def test_under_the_null_cg1_errs_at_most_at_its_level_and_its_power_is_what_it_says():
    """≥ 2,000 simulated runs each: equal completion rates (pairs correlated through their shared seed) and
    equal calibration; then a stated alternative, where the rejection rate matches the stated power (completion:
    the exact McNemar power; calibration: statsmodels' TTestPower for the normal differences simulated)."""
    from statsmodels.stats.power import TTestPower

    rng = np.random.default_rng(42)
    n = 30
    wrong_c = wrong_cal = 0
    for _ in range(RUNS):
        shared = rng.random(n) < 0.4
        full = (rng.random(n) < 0.5).astype(float)
        abl = np.where(shared, full, rng.random(n) < 0.5).astype(float)
        wrong_c += cg1_completion(full, abl)["different"]
        wrong_cal += cg1_calibration(rng.normal(0.2, 0.05, n), rng.normal(0.2, 0.05, n))["different"]
    print(f"null: completion 'different' {wrong_c / RUNS:.4f}, calibration 'different' {wrong_cal / RUNS:.4f}")
    assert wrong_c / RUNS <= ALPHA + 3 * SE and wrong_cal / RUNS <= ALPHA + 3 * SE

    p10, p01 = 0.25, 0.05  # pairs: 25 % only the full model completes, 5 % only the ablation
    hits = 0
    for _ in range(RUNS):
        u = rng.random(n)
        full = ((u < p10) | (u >= p10 + p01 + 0.35)).astype(float)  # 0.35 of pairs fail in both
        abl = (u >= p10).astype(float) * (u < p10 + p01).astype(float) + (u >= p10 + p01 + 0.35)
        b, c, _ = discordant(full, abl)
        hits += mcnemar_two_sided(b, c) < ALPHA
    exact = mcnemar_power(n, p10, p01)
    se = math.sqrt(exact * (1 - exact) / RUNS)
    print(f"alternative (completion): simulated power {hits / RUNS:.4f}, exact {exact:.4f}")
    assert abs(hits / RUNS - exact) <= 3 * se

    shift, sd = 0.02, 0.05  # calibration: the full model's Brier 0.02 higher per pair, SD of a difference 0.05
    hits = sum(cg1_calibration(rng.normal(0.22, sd / math.sqrt(2), n), rng.normal(0.2, sd / math.sqrt(2), n)
                               )["different"] for _ in range(RUNS))
    want = TTestPower().power(effect_size=shift / sd, nobs=n, alpha=ALPHA)
    print(f"alternative (calibration): simulated power {hits / RUNS:.4f}, statsmodels TTestPower {want:.4f}")
    assert abs(hits / RUNS - want) <= 3 * math.sqrt(want * (1 - want) / RUNS) + 0.02


def test_calibration_power_is_a_number_when_the_differences_differ_by_rounding_error_only():
    """Briers that differ pair by pair by 1e-17 (an SD of about 3e-17, d about 7e14): statsmodels' noncentral t gives
    NaN there, and the demo's docs printed "power nan". The power is the normal approximation's, 1 to the last
    digit, as it is for a moderately large d where both are defined."""
    from statsmodels.stats.power import TTestPower

    from trb.detectability import _t_power

    full = np.full(20, 0.25)
    ablated = full.copy()
    ablated[::2] -= 1e-17
    ablated[1::3] += 5e-17
    cg = cg1_calibration(full, ablated)
    assert cg["power"] == 1.0 and cg["n_for_power"] == 2 and cg["detectable"] is True
    assert cg["effect_size_d"] > 1e14
    calc = TTestPower()
    assert np.isnan(calc.power(effect_size=cg["effect_size_d"], nobs=20, alpha=ALPHA))
    # where statsmodels is defined, its value is kept as it is; the approximation agrees with it at a large d
    assert _t_power(calc, 0.5, 20) == calc.power(effect_size=0.5, nobs=20, alpha=ALPHA)
    assert abs(_t_power(calc, 8.0, 20) - 1.0) < 1e-12
