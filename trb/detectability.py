"""CG-1, the sample-size test of Track 4: could this run have told the two viability states apart?

The spec (§3, Track 4) anchors the pass bar in Theorem CG-1: two nearby viability states are
distinguishable in n i.i.d. samples iff their KL divergence is ≳ 1/n. Operationalised here:

* **Completion.** The full model's and the ablation's completion outcomes are Bernoulli(p_full)
  and Bernoulli(p_abl), estimated from the run with add-½ (Jeffreys) smoothing,
  p = (successes + ½) / (episodes + 1), so a rate of 0 or 1 gives a finite KL.
  ``kl = KL(Bern(p_full) ‖ Bern(p_abl))`` in nats; ``n_needed = ⌈1 / kl⌉`` (the n at which
  n·KL = 1); ``n_used`` = the task-and-seed pairs of the run; ``detectable = n_used · kl ≥ 1``.
  Classical power beside it (statsmodels): Cohen's h of the two rates and the power of a
  two-sided two-proportion z test at α = 0.05 with ``n_used`` episodes per condition
  (``NormalIndPower``; conservative for this paired design), and the n per condition for 80 %.
* **Calibration.** The forecasts are the stated confidences, the outcome the episode's
  completion; each condition's calibration state is the joint distribution of (confidence in
  five equal-width bins, outcome): ten cells, add-½ smoothing, KL(full ‖ ablation) the same way.
  n is counted in **episodes** (not steps: the steps of an episode are not independent), so the
  figure is conservative. Power: a paired t test (``TTestPower``) on the per-episode-pair
  difference of Brier scores, effect size d = mean / SD of the differences.

"Detectable" says whether the run was large enough for the difference it observed; it is not a
significance test, and a difference too small to be detectable is reported as such, never as
evidence of no difference.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["ALPHA", "POWER", "kl_bernoulli", "kl_discrete", "cg1_completion", "cg1_calibration"]

ALPHA = 0.05
POWER = 0.8
CONF_BINS = 5


def kl_bernoulli(p: float, q: float) -> float:
    """KL(Bern(p) ‖ Bern(q)) in nats (p, q strictly inside (0, 1))."""
    return p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))


def kl_discrete(p: Sequence[float], q: Sequence[float]) -> float:
    """KL(p ‖ q) in nats for distributions with full support."""
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    return float(np.sum(p * np.log(p / q)))


def _verdict(kl: float, n_used: int) -> dict:
    n_needed = math.inf if kl <= 0 else math.ceil(1.0 / kl)
    return {"kl": kl, "n_needed": None if math.isinf(n_needed) else int(n_needed), "n_used": int(n_used),
            "detectable": bool(kl > 0 and n_used * kl >= 1.0)}


def cg1_completion(full: Sequence[float], ablated: Sequence[float]) -> dict:
    """CG-1 for the completion rates (outcomes 0/1 of the paired episodes of each condition)."""
    from statsmodels.stats.power import NormalIndPower
    from statsmodels.stats.proportion import proportion_effectsize

    f, a = np.asarray(full, dtype=float), np.asarray(ablated, dtype=float)
    n = int(min(f.size, a.size))
    pf, pa = (f.sum() + 0.5) / (f.size + 1), (a.sum() + 0.5) / (a.size + 1)
    out = {"quantity": "completion", "p_full": float(f.mean()) if f.size else None,
           "p_ablated": float(a.mean()) if a.size else None, "smoothing": "add-1/2 (Jeffreys)",
           **_verdict(kl_bernoulli(pf, pa), n)}
    h = float(proportion_effectsize(float(f.mean()), float(a.mean()))) if n else 0.0
    power = NormalIndPower()
    out["cohens_h"] = h
    out["power"] = float(power.power(effect_size=abs(h), nobs1=n, alpha=ALPHA, ratio=1.0)) if n and h else ALPHA
    out["n_for_power"] = (int(math.ceil(power.solve_power(effect_size=abs(h), power=POWER, alpha=ALPHA, ratio=1.0)))
                          if h else None)
    out["test"] = f"two-sided two-proportion z test, alpha {ALPHA}, n per condition (statsmodels NormalIndPower)"
    return out


def _joint(conf: Sequence[float], outcome: Sequence[float]) -> np.ndarray:
    counts = np.full((CONF_BINS, 2), 0.5)
    for c, y in zip(conf, outcome):
        b = min(CONF_BINS - 1, int(float(c) * CONF_BINS))
        counts[b, int(y)] += 1
    return (counts / counts.sum()).reshape(-1)


def cg1_calibration(conf_full: Sequence[float], outcome_full: Sequence[float], conf_abl: Sequence[float],
                    outcome_abl: Sequence[float], brier_pairs: Sequence[tuple[float, float]]) -> dict:
    """CG-1 for calibration: KL of the (confidence bin, outcome) distributions of the two conditions (step
    forecasts), n in episode pairs (``brier_pairs``: each pair's (Brier full, Brier ablated))."""
    from statsmodels.stats.power import TTestPower

    pairs = np.asarray(brier_pairs, dtype=float).reshape(-1, 2)
    n = int(pairs.shape[0])
    out = {"quantity": "calibration", "bins": CONF_BINS, "smoothing": "add-1/2 per (bin, outcome) cell",
           "n_unit": "episode pairs (steps within an episode are not independent)",
           **_verdict(kl_discrete(_joint(conf_full, outcome_full), _joint(conf_abl, outcome_abl)), n)}
    diff = pairs[:, 0] - pairs[:, 1] if n else np.zeros(0)
    sd = float(np.std(diff, ddof=1)) if n > 1 else 0.0
    d = float(np.mean(diff) / sd) if sd > 0 else 0.0
    power = TTestPower()
    out["effect_size_d"] = d
    out["power"] = float(power.power(effect_size=abs(d), nobs=n, alpha=ALPHA)) if n > 1 and d else ALPHA
    out["n_for_power"] = (int(math.ceil(power.solve_power(effect_size=abs(d), power=POWER, alpha=ALPHA)))
                          if d else None)
    out["test"] = f"paired t test on per-pair Brier differences, alpha {ALPHA} (statsmodels TTestPower)"
    return out
