"""CG-1, the sample-size test of Track 4: can this run tell the full model from the no-r_t ablation?

The spec (§3, Track 4) anchors the pass bar in Theorem CG-1: two nearby viability states are distinguishable in
n i.i.d. samples iff their KL divergence is ≳ 1/n, and asks for a *sample-sized statistical test* that turns
"ratio ≥ 1" into a decision. Operationalised here, for each comparison of the two conditions:

* **The test.** Completion: the exact two-sided McNemar test on the task-and-seed pairs (``b`` pairs where only
  the full model reached the target, ``c`` where only the ablation did; :mod:`trb.paired_tests`). Calibration:
  the sign-flip test of the per-pair Brier differences on the pairs whose two episodes had the same outcome (so
  a change in completion is not read as a change in calibration). ``different`` is the test at
  :data:`ALPHA`; it errs under "no difference" at most at that rate (tests/trb/test_cg1.py simulates it).
* **The effect of interest**, stated: a change of :data:`EFFECT_COMPLETION` in the completion rate; a change of
  :data:`EFFECT_BRIER` in the Brier score.
* **Power** at that effect with the run's n: completion, the exact power of the McNemar test
  (:func:`trb.paired_tests.mcnemar_power`) with the pairs discordant at the run's observed rate (at least the
  effect); calibration, the paired t test's (statsmodels ``TTestPower``) at d = effect ÷ the observed SD of the
  differences. ``n_for_power``: the pairs at which the power reaches :data:`POWER`.
* **The n the spec's two forms call for** at that effect: the KL form (n·KL(Bern(p + δ) ‖ Bern(p)) ≥ 1) and the
  Fisher-metric form (n·½·δ²·I(p) ≥ 1, I(p) = 1/(p(1 − p))), at the ablation's completion rate p (Jeffreys
  smoothed).
* **The reading**: "different" where the test rejects; otherwise "no difference of δ or more" only where the
  power at δ reaches :data:`POWER` ("detectable": this run was large enough); otherwise not established, with the
  n needed. A difference too small to be detected is never reported as evidence of no difference.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from trb.paired_tests import discordant, kl_n, mcnemar_n_for_power, mcnemar_power, mcnemar_two_sided, sign_flip

__all__ = ["ALPHA", "POWER", "EFFECT_COMPLETION", "EFFECT_BRIER", "cg1_completion", "cg1_calibration",
           "cg1_reading"]

ALPHA = 0.05
POWER = 0.8
#: The completion-rate change CG-1 asks the run to be able to detect (absolute, on a 0–1 rate).
EFFECT_COMPLETION = 0.10
#: The Brier-score change CG-1 asks the run to be able to detect (the score is on 0–1).
EFFECT_BRIER = 0.02


def _reading(out: dict) -> str:
    if out["different"]:
        return "different"
    if out["detectable"]:
        return "no difference of the effect of interest or more"
    return "not established"


def cg1_completion(full: Sequence[float], ablated: Sequence[float], *, effect: float = EFFECT_COMPLETION) -> dict:
    """CG-1 for the completion rates: ``full`` and ``ablated`` are the outcomes (0/1) of the paired episodes,
    aligned pair by pair."""
    b, c, n = discordant(full, ablated)
    f, a = np.asarray(full, dtype=float), np.asarray(ablated, dtype=float)
    p = mcnemar_two_sided(b, c)
    observed = (b + c) / n if n else 0.0
    psi = max(observed, effect)  # the alternative: discordant at the observed rate, at least the effect
    p10, p01 = (psi + effect) / 2, (psi - effect) / 2
    power = mcnemar_power(n, p10, p01, ALPHA)
    rate = (float(a.sum()) + 0.5) / (n + 1)  # Jeffreys-smoothed ablation rate: never 0 or 1
    delta = effect if rate + effect < 1 else -effect
    forms = kl_n(rate, delta)
    out = {"quantity": "completion", "n_used": n, "n_unit": "task-and-seed pairs",
           "p_full": float(f.mean()) if n else None, "p_ablated": float(a.mean()) if n else None,
           "b": b, "c": c, "test": "exact two-sided McNemar test on the task-and-seed pairs",
           "p_value": p, "alpha": ALPHA, "different": bool(p < ALPHA),
           "effect": effect, "effect_of_interest": f"a change of {effect:g} in the completion rate",
           "power": power, "power_target": POWER,
           "power_method": f"exact McNemar power, pairs discordant at {psi:.3f} (observed {observed:.3f}, at least "
                           f"the effect), {p10:.3f} for the full model and {p01:.3f} against",
           "n_for_power": mcnemar_n_for_power(p10, p01, power=POWER, alpha=ALPHA),
           "kl": forms["kl"], "n_kl": forms["n_kl"], "fisher": forms["fisher"], "n_fisher": forms["n_fisher"],
           "forms_at": f"ablation rate {rate:.3f} (Jeffreys smoothed) and a change of {delta:+g}"}
    out["detectable"] = bool(power >= POWER)
    out["reading"] = _reading(out)
    return out


def cg1_calibration(brier_full: Sequence[float], brier_ablated: Sequence[float], *, effect: float = EFFECT_BRIER,
                    seed: int = 0) -> dict:
    """CG-1 for calibration: the per-pair Brier scores of the two conditions, on pairs whose episodes had the same
    outcome (the caller selects them), aligned pair by pair."""
    from statsmodels.stats.power import TTestPower

    d = np.asarray(brier_full, dtype=float) - np.asarray(brier_ablated, dtype=float)
    n = int(d.size)
    flip = sign_flip(d, seed=seed)
    sd = float(np.std(d, ddof=1)) if n > 1 else 0.0
    power_calc = TTestPower()
    if n > 1 and sd > 0:
        dz = effect / sd
        power = _t_power(power_calc, dz, n)
        n_for = _t_n_for_power(power_calc, dz)
    elif n > 1:  # every pair's difference equal: any nonzero effect would show at once (d unbounded: None)
        dz, power, n_for = None, 1.0, 2
    else:
        dz, power, n_for = None, 0.0, None
    out = {"quantity": "calibration", "n_used": n, "n_unit": "task-and-seed pairs with the same outcome in both "
                                                             "conditions (a completion change is not read as "
                                                             "calibration)",
           "mean_brier_difference": flip["mean"], "test": flip["method"], "p_value": flip["p"], "alpha": ALPHA,
           "different": bool(flip["p"] < ALPHA), "effect": effect,
           "effect_of_interest": f"a change of {effect:g} in the Brier score", "effect_size_d": dz, "sd": sd,
           "power": power, "power_target": POWER,
           "power_method": "paired t test at d = effect ÷ SD of the per-pair differences (statsmodels TTestPower)",
           "n_for_power": n_for, "p_greater": flip["p_greater"], "p_less": flip["p_less"]}
    out["detectable"] = bool(power >= POWER)
    out["reading"] = _reading(out)
    return out


def _t_power(calc, dz: float, n: int) -> float:
    """The two-sided paired t test's power at effect size ``dz`` and ``n`` pairs (statsmodels ``TTestPower``). Its
    noncentral t gives NaN for a very large ``dz`` (per-pair differences that differ by rounding error only, an SD
    of 1e-17): there the normal approximation, which is exact in the limit, gives the power (1 to the last digit)."""
    import math

    from scipy.stats import norm

    power = float(calc.power(effect_size=dz, nobs=n, alpha=ALPHA))
    if math.isfinite(power):
        return power
    z, shift = float(norm.ppf(1 - ALPHA / 2)), dz * math.sqrt(n)
    return float(norm.sf(z - shift) + norm.cdf(-z - shift))


def _t_n_for_power(calc, dz: float, n_max: int = 1_000_000) -> int | None:
    """The smallest n (≥ 2) at which the paired t test reaches :data:`POWER` at effect size ``dz`` (statsmodels'
    own root finder fails for very large effects, so the n is searched: doubling, then bisection)."""
    if _t_power(calc, dz, 2) >= POWER:
        return 2
    hi = 4
    while _t_power(calc, dz, hi) < POWER:
        hi *= 2
        if hi > n_max:
            return None
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if _t_power(calc, dz, mid) >= POWER else (mid, hi)
    return hi


def cg1_reading(cg: dict) -> str:
    """CG-1 in one line: the test, its verdict, the power at the stated effect and the n the spec's forms ask."""
    what = cg["quantity"]
    head = (f"CG-1 ({what}): {cg['test']}, p = {cg['p_value']:.3g}"
            + (f" (b = {cg['b']}, c = {cg['c']} of {cg['n_used']} pairs)" if "b" in cg else f", {cg['n_used']} pairs"))
    power = f"power {cg['power']:.2f} at {cg['effect_of_interest']}"
    need = f"n for power {POWER:g}: {cg['n_for_power'] if cg['n_for_power'] is not None else 'out of reach'}"
    if cg["reading"] == "different":
        verdict = f"the {what} differs (p < {ALPHA:g})"
    elif cg["reading"] == "not established":
        verdict = f"not established: this run could NOT detect {cg['effect_of_interest']} ({power}; {need})"
    else:
        verdict = f"no {what} difference of {cg['effect']:g} or more: this run could detect one ({power})"
    forms = (f"; the spec's forms at that effect: n ≈ {cg['n_kl']} (n·KL ≥ 1), n ≈ {cg['n_fisher']} (Fisher metric)"
             if cg.get("n_kl") is not None else "")
    return f"{head}: {verdict}{forms}"
