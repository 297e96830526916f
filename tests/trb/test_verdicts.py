"""One rule for every flag: decided by the figure's interval against its threshold, never by its point value;
"not established" where the interval reaches both sides; no verdict on an undefined figure. Checked by hand and,
through the real session-bootstrap estimators, by simulation under nulls at the threshold."""

from __future__ import annotations

import numpy as np
import pytest

from trb.stats import mean_by_session
from trb.tracks.track4 import TRACK as T4
from trb.tracks.track5 import DASHBOARD_RULE, HOLONOMY_RULE
from trb.verdicts import FLAGGED, NOT_ESTABLISHED, NOT_FLAGGED, UNDEFINED, FlagRule, decide, verdict_text

HARM = next(m.verdict for m in T4.metrics if m.key == "viab")


def test_verdicts_by_hand():
    # the issue's own cases: 1/12 vs 2/12 completions (0.500 [0.000, 1.000]) was RED; 0.995 [0.933, 1.068] was RED
    assert decide(HARM, 0.5, 0.0, 1.0)["verdict"] == NOT_ESTABLISHED
    assert decide(HARM, 0.995, 0.933, 1.068)["verdict"] == NOT_ESTABLISHED
    red = decide(HARM, 0.6, 0.4, 0.9)
    assert red["verdict"] == FLAGGED and red["red"] and "upper bound < 1" in verdict_text(red)
    assert decide(HARM, 1.0, 1.0, 1.0)["verdict"] == NOT_FLAGGED  # two equal conditions: clear of the flag
    assert decide(HARM, 1.2, 1.0, 1.4)["verdict"] == NOT_FLAGGED
    assert decide(HARM, 0.99, 0.98, 1.0)["verdict"] == NOT_ESTABLISHED  # upper bound 1 is not below 1
    # inclusive: a lift of exactly 0 everywhere is a dashboard light; a lift whose interval touches 0 from above is not
    assert decide(DASHBOARD_RULE, 0.0, 0.0, 0.0)["verdict"] == FLAGGED
    assert decide(DASHBOARD_RULE, 0.1, 0.0, 0.2)["verdict"] == NOT_ESTABLISHED
    assert decide(DASHBOARD_RULE, 0.1, 0.01, 0.2)["verdict"] == NOT_FLAGGED
    assert not decide(DASHBOARD_RULE, 0.0, 0.0, 0.0)["red"]  # a flag, not a RED one
    # the point value never decides: CG-2's mean above the tolerance with an interval reaching below it
    assert decide(HOLONOMY_RULE, 0.029, 0.0, 0.07)["verdict"] == NOT_ESTABLISHED
    assert decide(HOLONOMY_RULE, 0.005, 0.011, 0.02)["verdict"] == FLAGGED  # (a point outside its interval)
    # undefined is its own status: no flag is possible; no interval: not established
    for value in (None, float("nan")):
        v = decide(HARM, value, 0.1, 0.2)
        assert v["verdict"] == UNDEFINED and not v["red"]
    assert decide(HARM, 0.5, None, None)["verdict"] == NOT_ESTABLISHED
    above = FlagRule("x", 2.0, "above", says="too high", inclusive=True)
    assert decide(above, 2.0, 2.0, 2.5)["verdict"] == FLAGGED and decide(above, 1.5, 1.0, 1.99)["verdict"] == NOT_FLAGGED
    assert "lies at or above 2" in above.rule() and "lower bound ≥ 2" in above.rule()
    with pytest.raises(ValueError):
        FlagRule("x", 0.0, "beside", says="?")


def test_exact_test_verdicts_by_hand():
    from trb.paired_tests import mcnemar_one_sided
    from trb.verdicts import decide_test

    rule = FlagRule("harm", 1.0, "below", says="worse", test="paired exact")
    assert "exact paired test" in rule.rule() and "one-sided at 0.025" in rule.rule()
    # the 1/12 vs 2/12 completions: b = 0, c = 1 — nothing is established
    worse, better = mcnemar_one_sided(0, 1)
    v = decide_test(rule, 0.5, {"p_flag": worse, "p_clear": better, "figures": "b = 0, c = 1"})
    assert v["verdict"] == NOT_ESTABLISHED and "neither < 0.025" in verdict_text(v)
    worse, better = mcnemar_one_sided(0, 7)  # 7 pairs, every one against the full model: p = 1/128
    v = decide_test(rule, 0.3, {"p_flag": worse, "p_clear": better})
    assert v["verdict"] == FLAGGED and v["red"] and abs(v["p_flag"] - 0.5 ** 7) < 1e-12
    assert decide_test(rule, 1.5, dict(zip(("p_flag", "p_clear"), mcnemar_one_sided(7, 0))))["verdict"] == NOT_FLAGGED
    assert decide_test(rule, 1.5, None)["verdict"] == NOT_ESTABLISHED  # no test: never a flag
    assert decide_test(rule, None, {"p_flag": 0.0, "p_clear": 1.0})["verdict"] == UNDEFINED


def _rate(verdicts: list[str], which: str) -> float:
    return sum(v == which for v in verdicts) / len(verdicts)


#: Simulated runs per null (the issue asks for at least 2,000).
RUNS = 2000
#: The nominal rate of a wrong flag (one side of a 95 % interval, or a one-sided test at 0.025), plus three
#: simulation standard errors.
BOUND = 0.025 + 3 * np.sqrt(0.025 * 0.975 / RUNS)


@pytest.mark.slow
@pytest.mark.parametrize("n_pairs", [8, 12, 40])
def test_under_nulls_at_the_threshold_a_flag_errs_at_most_at_its_nominal_rate(n_pairs):
    """Figures exactly at their threshold, decided as the report decides them: Track 4's completion ratio at 1
    (equal rates, correlated pairs; the exact paired test), Track 4's calibration retention at 1 (equal
    calibration; the sign-flip test), Track 5's lift at 0 (the exact paired test), CG-2 at its tolerance (the
    session bootstrap's interval). A ratio of 1 or a CG-2 at its tolerance is on the unflagged side, so flagging
    it is the error; a lift of 0 is on the flagged side (a dashboard light), so clearing it is the error. Each
    errs in at most 2.5 % of runs (plus simulation error); the percentile interval, which these verdicts replaced
    for the paired figures, flags a null ratio more often than that with few pairs (bench/verdicts.py)."""
    from trb.paired_tests import discordant, mcnemar_one_sided, sign_flip
    from trb.verdicts import decide_test

    cal_rule = next(m.verdict for m in T4.metrics if m.key == "viab-cal")
    rng = np.random.default_rng(20261204 + n_pairs)
    sessions = np.asarray([f"s{i}" for i in range(n_pairs)], dtype=object)
    ratio, cal, lift, holo = [], [], [], []
    for k in range(RUNS):
        shared = rng.random(n_pairs) < 0.5  # the pair's common randomness: its two outcomes agree half the time
        full = np.where(shared, rng.random(n_pairs) < 0.6, rng.random(n_pairs) < 0.6).astype(float)
        abl = np.where(shared, full, rng.random(n_pairs) < 0.6).astype(float)
        for out, rule in ((ratio, HARM), (lift, DASHBOARD_RULE)):
            b, c, _ = discordant(full, abl)
            worse, better = mcnemar_one_sided(b, c)
            out.append(decide_test(rule, 1.0, {"p_flag": worse, "p_clear": better})["verdict"])
        d = rng.normal(0.0, 0.05, n_pairs)  # per-pair Brier differences with no calibration change
        t = sign_flip(d, seed=k)
        cal.append(decide_test(cal_rule, 1.0, {"p_flag": t["p_greater"], "p_clear": t["p_less"]})["verdict"])
        tv = rng.beta(0.5, 49.5, n_pairs)  # mean 0.01: at the tolerance, skewed as TVs are
        e = mean_by_session(tv, sessions, seed=k, n_resamples=1000)
        holo.append(decide(HOLONOMY_RULE, e.value, e.ci_low, e.ci_high)["verdict"])
    rates = {"ratio flagged": _rate(ratio, FLAGGED), "calibration flagged": _rate(cal, FLAGGED),
             "lift cleared": _rate(lift, NOT_FLAGGED), "CG-2 flagged": _rate(holo, FLAGGED)}
    print(f"n_pairs={n_pairs}: " + ", ".join(f"{k} {v:.4f}" for k, v in rates.items()))
    assert all(v <= BOUND for v in rates.values()), rates
    assert _rate(ratio, NOT_ESTABLISHED) > 0.9  # and the rule is not vacuous: most runs at the threshold are open
