"""Exact tests of two conditions paired by task and seed (Tracks 4 and 5), and their power.

The rollout tracks compare two conditions of the same task and seed (acting through r_t vs the no-r_t ablation;
r's goal steered vs the ablation). Their outcomes are binary (target reached or not) and paired, so the exact test
is McNemar's: of the ``m`` discordant pairs (one condition reached, the other did not), ``b`` favour the first
condition; under "no difference" ``b ~ Binomial(m, ½)``. The session bootstrap's percentile interval is too
narrow with a dozen pairs (it flags a null completion ratio more often than its nominal 2.5 %: ``bench/verdicts.py``
prints the rates by size), so the verdicts on these figures use this test, which errs at most at its level.

Continuous paired differences (Track 4's per-pair Brier scores) use the **sign-flip** randomisation test: under
"no difference" each pair's difference is as likely negated; exact by enumeration up to :data:`EXACT_FLIPS` pairs,
a seeded Monte Carlo of :data:`MC_FLIPS` sign vectors above.

:func:`mcnemar_power` is the exact power of the two-sided McNemar test at a stated alternative (summing over the
discordant count and the binomial within it), used by CG-1 (:mod:`trb.detectability`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

__all__ = ["discordant", "mcnemar_one_sided", "mcnemar_verdict_test", "mcnemar_two_sided", "mcnemar_power", "mcnemar_n_for_power",
           "sign_flip", "kl_n", "EXACT_FLIPS", "MC_FLIPS"]

#: Up to this many pairs the sign-flip test enumerates every sign vector (2^n); above, a seeded Monte Carlo.
EXACT_FLIPS = 16
#: Sign vectors drawn by the Monte Carlo sign-flip test.
MC_FLIPS = 20000


def discordant(first: Sequence[float], second: Sequence[float]) -> tuple[int, int, int]:
    """(b, c, n): pairs where only the first condition succeeded, only the second did, and all pairs."""
    f, s = np.asarray(first, dtype=float) > 0.5, np.asarray(second, dtype=float) > 0.5
    if f.shape != s.shape:
        raise ValueError("the two conditions must be aligned pair by pair")
    return int(np.sum(f & ~s)), int(np.sum(~f & s)), int(f.size)


def mcnemar_one_sided(b: int, c: int) -> tuple[float, float]:
    """(p that the first condition is worse, p that it is better): the exact one-sided p-values of
    H0 "the first is not worse" (P(B ≤ b)) and H0 "the first is not better" (P(B ≥ b)), B ~ Bin(b + c, ½).
    With no discordant pair both are 1."""
    from scipy.stats import binom

    m = b + c
    if m == 0:
        return 1.0, 1.0
    return float(binom.cdf(b, m, 0.5)), float(binom.sf(b - 1, m, 0.5))


def mcnemar_verdict_test(first: Sequence[float], second: Sequence[float], *, why_none: str | None = None) -> dict:
    """What a verdict decided by the exact paired test needs (:func:`trb.verdicts.decide_test`): the one-sided
    p-values that the first condition is worse (``p_flag``) and better (``p_clear``), the counts they come from,
    and ``why_none`` as the reason when no pair is discordant."""
    b, c, n = discordant(first, second)
    worse, better = mcnemar_one_sided(b, c)
    out = {"p_flag": worse, "p_clear": better, "figures": f"b = {b}, c = {c} discordant of {n} pairs"}
    if b + c == 0 and why_none:
        out["why"] = why_none
    return out


def mcnemar_two_sided(b: int, c: int) -> float:
    """The exact two-sided McNemar p-value (twice the smaller tail, at most 1), as
    ``statsmodels.stats.contingency_tables.mcnemar(..., exact=True)`` gives it."""
    worse, better = mcnemar_one_sided(b, c)
    return min(1.0, 2.0 * min(worse, better))


def _lower_critical(m: np.ndarray, alpha: float) -> np.ndarray:
    """For each discordant count m: the largest k with 2·P(B ≤ k) < alpha, B ~ Bin(m, ½) (−1: none). The
    two-sided exact test rejects at b ≤ k or b ≥ m − k (the null is symmetric)."""
    m = np.asarray(m, dtype=int)
    top = int(m.max(initial=0))
    table = _critical_table(1 << max(6, top.bit_length()), float(alpha))
    return table[m]


@lru_cache(maxsize=16)
def _critical_table(size: int, alpha: float) -> np.ndarray:
    """:func:`_lower_critical` for m = 0 .. size (computed once per size and level)."""
    from scipy.stats import binom

    m = np.arange(size + 1)
    k = np.floor(binom.ppf(alpha / 2, m, 0.5)).astype(int)  # P(B ≤ k) ≥ alpha/2 from here: step back to below
    k = np.where(2 * binom.cdf(k, m, 0.5) < alpha, k, k - 1)
    k = np.where(2 * binom.cdf(k, m, 0.5) < alpha, k, k - 1)
    out = np.where(m > 0, k, -1)
    out.flags.writeable = False
    return out


def mcnemar_power(n: int, p10: float, p01: float, alpha: float = 0.05) -> float:
    """The exact power of the two-sided McNemar test at level ``alpha`` with ``n`` pairs, when a pair is
    discordant in favour of the first condition with probability ``p10`` and of the second with ``p01``."""
    from scipy.stats import binom

    psi = p10 + p01
    if n <= 0 or psi <= 0:
        return 0.0
    theta = p10 / psi
    m = np.arange(n + 1)
    k = _lower_critical(m, alpha)
    reject = np.where(k >= 0, binom.cdf(k, m, theta) + binom.sf(m - k - 1, m, theta), 0.0)
    return float(min(1.0, np.sum(binom.pmf(m, n, psi) * reject)))


def mcnemar_n_for_power(p10: float, p01: float, *, power: float = 0.8, alpha: float = 0.05,
                        n_max: int = 100_000) -> int | None:
    """The number of pairs at which :func:`mcnemar_power` reaches ``power`` (None: not by ``n_max``).

    The exact power is not monotone in n (the binomial's steps make it a saw): the n found by doubling and
    bisection is walked back while the n below it still reaches ``power``."""
    if p10 == p01:
        return None

    def ok(n: int) -> bool:
        return mcnemar_power(n, p10, p01, alpha) >= power

    hi = 1
    while not ok(hi):
        hi *= 2
        if hi > n_max:
            return None
    lo = hi // 2  # not ok (or 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    while hi > 1 and ok(hi - 1):
        hi -= 1
    return hi


@lru_cache(maxsize=8)
def _signs(n: int, seed: int | None) -> np.ndarray:
    """The sign vectors of the test: all 2^n (``seed`` None), or :data:`MC_FLIPS` drawn with ``seed`` (drawn
    independently of the data, so a set reused for many data sets keeps the test's level)."""
    if seed is None:
        signs = 1 - 2 * ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1)
    else:
        signs = np.random.default_rng(seed).integers(0, 2, size=(MC_FLIPS, n)) * 2 - 1
    signs = signs.astype(float)
    signs.flags.writeable = False
    return signs


def sign_flip(differences: Sequence[float], *, seed: int = 0) -> dict:
    """The sign-flip test of paired ``differences`` (first − second): the mean difference and its one-sided
    p-values, ``p_greater`` (H0: mean ≤ 0) and ``p_less`` (H0: mean ≥ 0), and the two-sided ``p``.

    Exact over all 2^n sign vectors for n ≤ :data:`EXACT_FLIPS`; otherwise :data:`MC_FLIPS` seeded draws, with the
    observed vector counted (so a p-value is never 0)."""
    d = np.asarray(differences, dtype=float)
    n = int(d.size)
    if n == 0:
        return {"n": 0, "mean": None, "p_greater": 1.0, "p_less": 1.0, "p": 1.0, "method": "no pairs"}
    obs = float(d.sum())
    if n <= EXACT_FLIPS:
        sums = _signs(n, None) @ d
        tol = 1e-12 * max(1.0, float(np.abs(d).sum()))
        ge, le = float(np.mean(sums >= obs - tol)), float(np.mean(sums <= obs + tol))
        method = f"exact sign-flip test over all 2^{n} sign vectors"
    else:
        sums = _signs(n, seed) @ d
        tol = 1e-12 * max(1.0, float(np.abs(d).sum()))
        ge = (float(np.sum(sums >= obs - tol)) + 1) / (MC_FLIPS + 1)
        le = (float(np.sum(sums <= obs + tol)) + 1) / (MC_FLIPS + 1)
        method = f"sign-flip test, {MC_FLIPS:,} seeded sign vectors (seed {seed})"
    return {"n": n, "mean": obs / n, "p_greater": ge, "p_less": le, "p": min(1.0, 2 * min(ge, le)),
            "method": method}


def kl_n(p: float, delta: float) -> dict:
    """The n the spec's CG-1 forms call for at a completion rate ``p`` and a change ``delta``: the KL form
    n·KL(Bern(p + δ) ‖ Bern(p)) ≥ 1, and the Fisher-metric form n·½·δ²/(p(1 − p)) ≥ 1 (the KL's second-order
    term). ``p`` must lie inside (0, 1) (the caller smooths an observed rate of 0 or 1)."""
    q = min(max(p + delta, 1e-9), 1 - 1e-9)
    kl = q * math.log(q / p) + (1 - q) * math.log((1 - q) / (1 - p))
    fisher = 0.5 * delta * delta / (p * (1 - p))
    return {"kl": kl, "n_kl": math.ceil(1 / kl) if kl > 0 else None, "fisher": fisher,
            "n_fisher": math.ceil(1 / fisher) if fisher > 0 else None}
