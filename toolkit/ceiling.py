"""The annotator-noise ceiling of Track 1: the G an oracle that knows the true Φ can expect.

Track 1 scores ``G = 1 - TV(act(c_t, r'), Φ(r'))`` where ``Φ(r')`` is the empirical
action distribution of ``n`` annotators. With few annotators ``Φ`` is noisy, so even a
model that outputs the *true* distribution ``p`` scores well below 1 (and a sharpened
model can beat the truth at small ``n``). :func:`oracle_g` is that oracle's expected G,

    oracle_g(p, n) = E[1 - TV(p, p̂_n)],   n · p̂_n ~ Multinomial(n, p),

computed **exactly** for every ``n`` and number of actions ``k``, without enumerating
the multinomial outcomes and without Monte Carlo: TV is a sum over actions, so by
linearity of expectation only each action's marginal count matters, and that is
``X_a ~ Binomial(n, p_a)``::

    E[TV(p, p̂_n)] = 1/2 · Σ_a Σ_{x=0..n} Binom(x; n, p_a) · |p_a - x/n|

This costs O(k · n) and is exact up to floating point (the test suite checks it against
a full enumeration of the multinomial outcomes and against ``numpy`` multinomial
resampling). Actions with ``p_a = 0`` never get a vote and add nothing; ``p = (1, 0, …)``
gives 1.

**The plug-in.** In a release the true ``p`` is unknown; :func:`ceiling_by_items` (and
the release manifest, ``phi_annotators``) uses ``Φ`` itself as ``p``. That plug-in is
*optimistic*: ``Φ`` is rougher than ``p`` (rare actions often get no vote), and a
rougher distribution resamples with less noise, so the plug-in ceiling over-states the
true one on average (over random ``p`` with 2–5 actions, by about 0.15 at n = 3,
0.07 at n = 5, 0.04 at n = 8, 0.01 at n = 20). The reading rule still holds a
fortiori: a G at or above the (plug-in) ceiling is not better than the truth; G is to be
read against the ceiling, not against 1.

Pure Python and ``numpy``, so ``corpus`` (which writes the ceiling into a release) and
``trb`` (which may show it beside G) can both import it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

__all__ = ["oracle_g", "expected_tv", "Ceiling", "ceiling_by_items"]

#: Probabilities must sum to 1 within this (release rows are checked to 1e-6 at ingest).
_SUM_TOLERANCE = 1e-6
#: Digits a distribution is rounded to when caching ceilings by (distribution, n).
_KEY_DIGITS = 12


def _probs(probs: Mapping[str, float] | Iterable[float]) -> np.ndarray:
    values = list(probs.values()) if isinstance(probs, Mapping) else list(probs)
    p = np.asarray(values, dtype=float)
    if p.ndim != 1 or p.size == 0:
        raise ValueError("probs: need at least one action")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError(f"probs: every probability must be finite and >= 0, got {values}")
    if abs(p.sum() - 1.0) > _SUM_TOLERANCE:
        raise ValueError(f"probs: must sum to 1, got {p.sum():.9g}")
    return p


def _log_binom_coefficients(n: int) -> np.ndarray:
    """log C(n, x) for x = 0..n."""
    x = np.arange(1, n + 1, dtype=float)
    return np.concatenate([[0.0], np.cumsum(np.log(n - x + 1) - np.log(x))])


def expected_tv(probs: Mapping[str, float] | Iterable[float], n: int) -> float:
    """E[TV(p, p̂_n)] for ``p̂_n`` the empirical distribution of ``n`` draws from ``p`` (exact).

    Raises:
        ValueError: ``n`` is not an int >= 1, or ``probs`` is empty, negative, not finite
            or does not sum to 1 (within 1e-6).
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n: need an int >= 1 annotators, got {n!r}")
    n = int(n)
    p = _probs(probs)
    p = p[(p > 0) & (p < 1)]  # p_a = 0 or 1: the count is certain, |p_a - x/n| = 0
    if p.size == 0:
        return 0.0
    x = np.arange(n + 1, dtype=float)
    logc = _log_binom_coefficients(n)
    q = p[:, None]
    pmf = np.exp(logc[None, :] + x[None, :] * np.log(q) + (n - x)[None, :] * np.log1p(-q))
    return float(0.5 * np.sum(pmf * np.abs(q - x[None, :] / n)))


def oracle_g(probs: Mapping[str, float] | Iterable[float], n: int) -> float:
    """The expected Track 1 G of an oracle that outputs the true distribution ``probs``.

    ``E[1 - TV(p, p̂_n)]`` where Φ = ``p̂_n`` is the empirical distribution of ``n``
    annotators drawn from ``p`` (multinomial); exact (see the module docstring).
    ``probs`` maps action -> probability (or is a sequence of probabilities).

    Raises:
        ValueError: as :func:`expected_tv`.
    """
    return 1.0 - expected_tv(probs, n)


@dataclass(frozen=True)
class Ceiling:
    """The annotator-noise ceiling of a set of distribution-Φ items (see :func:`ceiling_by_items`).

    ``items``: items seen; ``unstated``: those whose Φ states no annotator count (not in
    the mean: e.g. the simulated world's exact Φ, which has no annotator noise);
    ``phi_n``: annotator count -> items; ``oracle_g``: the mean plug-in ceiling over the
    items with a count (``None`` when there are none).
    """

    items: int
    unstated: int
    phi_n: dict[int, int] = field(default_factory=dict)
    oracle_g: float | None = None

    @property
    def n_min(self) -> int | None:
        return min(self.phi_n) if self.phi_n else None

    @property
    def n_max(self) -> int | None:
        return max(self.phi_n) if self.phi_n else None

    @property
    def n_median(self) -> float | None:
        """The median annotator count over the items with a count (a half-integer when between two)."""
        if not self.phi_n:
            return None
        total = sum(self.phi_n.values())

        def at(i: int) -> int:  # the i-th smallest count (0-based)
            seen = 0
            for value in sorted(self.phi_n):
                seen += self.phi_n[value]
                if i < seen:
                    return value
            raise IndexError(i)

        return (at((total - 1) // 2) + at(total // 2)) / 2.0


def ceiling_by_items(
    items: Iterable[tuple[Mapping[str, float] | Iterable[float], int | None]
                    | tuple[Mapping[str, float] | Iterable[float], int | None, int]],
) -> Ceiling:
    """The mean plug-in ceiling over ``items``: ``(Φ probs, phi_n or None)`` pairs, or
    ``(Φ probs, phi_n or None, count)`` for ``count`` items alike (a grouped query).

    Each item's ceiling is :func:`oracle_g` with Φ as the true distribution (the plug-in,
    optimistic: see the module docstring); items with ``phi_n`` ``None`` are counted in
    ``unstated`` and left out of the mean. Ceilings are cached by (rounded Φ, n), so a
    release with many repeated distributions costs one computation each.

    Raises:
        ValueError: as :func:`oracle_g`, for an item with a count.
    """
    cache: dict[tuple, float] = {}
    counts: dict[int, int] = {}
    n_items = unstated = 0
    total = 0.0
    for item in items:
        probs, n = item[0], item[1]
        weight = int(item[2]) if len(item) > 2 else 1
        n_items += weight
        if n is None:
            unstated += weight
            continue
        values = list(probs.values()) if isinstance(probs, Mapping) else list(probs)
        key = (int(n), tuple(sorted(round(float(v), _KEY_DIGITS) for v in values)))
        if key not in cache:
            cache[key] = oracle_g(values, int(n))
        total += weight * cache[key]
        counts[int(n)] = counts.get(int(n), 0) + weight
    stated = n_items - unstated
    return Ceiling(items=n_items, unstated=unstated, phi_n=dict(sorted(counts.items())),
                   oracle_g=(total / stated) if stated else None)

