"""Track 6's rules under a null and an alternative: how often the anti-Goodhart flag and the collapse verdict fire.

Each simulated run has an eval sample and three transfer contexts of ``k`` sessions each; a session's value is
the mean of ``m`` Bernoulli item scores (the figure of a group is the mean of its sessions, as G is). Every group is
resampled on its own, ``B`` percentile-bootstrap replicates, as :func:`trb.transfer.transfer_estimate` does. The
rules are :func:`trb.transfer.anti_goodhart` (flagged: the eval interval's lower bound ≥ 0.7 and, on some context,
the drop eval − that context, paired within the replicate, has a Bonferroni-corrected interval, level 1 − α/k over
the k = 3 contexts, whose lower bound is ≥ 0.1) and the collapse rule against a fixed reference value
(:func:`trb.transfer.collapse_to_chance`'s reading: above it in distribution by the eval's 95% interval, then
collapsed when some context's corrected interval lies at or below it). All vectorised over runs. ``--uncorrected``
reads the rules as they were before the correction (the drop eval − min, each context at 95%), for comparison.

Scenarios (true values):

* anti-Goodhart null, one at the boundary: eval 0.85, the worst context at 0.75 (drop exactly 0.1), the others at
  0.85; some at the boundary: two contexts at 0.75; all at the boundary: every context at 0.75;
* anti-Goodhart alternative: eval 0.85, worst context 0.55 (drop 0.3);
* collapse null, one at the boundary: reference 0.5, eval 0.8, one context at 0.5 (at the reference), the others at
  0.8; some: two contexts at 0.5; all: every context at 0.5;
* collapse alternative: one context at 0.35.

``python bench/transfer_rules.py`` prints the rates; bench/README.md records them.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from trb.transfer import HIGH_LEVEL, LARGE_DROP

SCENARIOS = {
    "anti-Goodhart null (one context at the boundary)": ("flag", 0.85, (0.75, 0.85, 0.85)),
    "anti-Goodhart null (two contexts at the boundary)": ("flag", 0.85, (0.75, 0.75, 0.85)),
    "anti-Goodhart null (all contexts at the boundary)": ("flag", 0.85, (0.75, 0.75, 0.75)),
    "anti-Goodhart alternative (drop 0.3)": ("flag", 0.85, (0.55, 0.85, 0.85)),
    "collapse null (one context at the reference)": ("collapse", 0.8, (0.5, 0.8, 0.8)),
    "collapse null (two contexts at the reference)": ("collapse", 0.8, (0.5, 0.5, 0.8)),
    "collapse null (all contexts at the reference)": ("collapse", 0.8, (0.5, 0.5, 0.5)),
    "collapse alternative (one context at 0.35)": ("collapse", 0.8, (0.35, 0.8, 0.8)),
}
REFERENCE = 0.5


def _group(rng, p: float, runs: int, k: int, m: int, b: int) -> tuple[np.ndarray, np.ndarray]:
    """(point (runs,), bootstrap replicates (runs, b)) of the mean of k session means, each of m Bernoulli(p)."""
    x = rng.binomial(m, p, size=(runs, k)) / m
    idx = rng.integers(0, k, size=(runs, b, k))
    reps = np.take_along_axis(np.broadcast_to(x[:, None, :], (runs, b, k)), idx, axis=2).mean(axis=2)
    return x.mean(axis=1), reps


def rates(kind: str, p_eval: float, p_ctx: tuple, *, runs: int = 2000, k: int = 30, m: int = 8, b: int = 400,
          seed: int = 0, chunk: int = 250, confidence: float = 0.95, corrected: bool = True) -> float:
    """The share of ``runs`` simulated runs whose verdict is "flagged" (kind "flag") or "collapsed" ("collapse").

    ``corrected``: the rules as :mod:`trb.transfer` reads them (each context at level 1 − α/k, Bonferroni over the
    k contexts); False: as before the correction (the drop eval − min and each context at 1 − α)."""
    rng = np.random.default_rng(seed)
    a = (1 - confidence) / 2
    ac = a / len(p_ctx) if corrected else a  # one side of the per-context interval
    hits = 0
    for lo in range(0, runs, chunk):
        n = min(chunk, runs - lo)
        _, ev = _group(rng, p_eval, n, k, m, b)
        ctx = [_group(rng, p, n, k, m, b)[1] for p in p_ctx]
        ev_lo, ev_hi = np.quantile(ev, [a, 1 - a], axis=1)
        if kind == "flag":
            if corrected:
                large = np.zeros(n, dtype=bool)
                for c in ctx:
                    large |= np.quantile(ev - c, ac, axis=1) >= LARGE_DROP - 1e-12
            else:
                large = np.quantile(ev - np.min(np.stack(ctx), axis=0), a, axis=1) >= LARGE_DROP - 1e-12
            hits += int(np.sum((ev_lo >= HIGH_LEVEL - 1e-12) & large))
        else:
            above = ev_lo > REFERENCE
            hit = np.zeros(n, dtype=bool)
            for c in ctx:
                hit |= np.quantile(c, 1 - ac, axis=1) <= REFERENCE
            hits += int(np.sum(above & hit))
    return hits / runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--uncorrected", action="store_true", help="the rules before the per-context correction")
    args = ap.parse_args()
    t0 = time.perf_counter()
    for name, (kind, pe, pc) in SCENARIOS.items():
        r = rates(kind, pe, pc, runs=args.runs, seed=args.seed, corrected=not args.uncorrected)
        se = (r * (1 - r) / args.runs) ** 0.5
        print(f"{name}: {r:.4f} (± {1.96 * se:.4f})")
    print(f"{args.runs} runs a scenario, {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
