"""How often each verdict rule errs under a null at its threshold, and CG-1's power against its stated figure.

    .venv/bin/python bench/verdicts.py [--runs 2000] [--sizes 8,12,20,40] [--seed 1]

For each number of task-and-seed pairs, ``--runs`` simulated runs with the two conditions' completion rates equal
(independent pairs at a rate of 0.3; pairs agreeing half the time through their shared seed at 0.6):

- **peer**: the session bootstrap's 95 % percentile interval of the completion ratio (what decided Track 4's flag
  before), flagged when it lies below 1;
- **rule**: the exact paired McNemar test, one-sided at 0.025 (what decides it now);

both should flag at most 2.5 % of runs. Then CG-1: how often its exact two-sided test says "different" under the
null (at most 5 %), and its simulated power against the exact power it reports at a stated alternative.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from trb.detectability import ALPHA, cg1_completion
from trb.paired_tests import discordant, mcnemar_one_sided, mcnemar_power, mcnemar_two_sided
from trb.stats import ratio_by_session


def _pairs(rng, n: int, p: float = 0.6, agree: float = 0.5):
    shared = rng.random(n) < agree
    full = (rng.random(n) < p).astype(float)
    abl = np.where(shared, full, rng.random(n) < p).astype(float)
    return full, abl


def null_flags(n: int, runs: int, seed: int, p: float, agree: float) -> dict:
    rng = np.random.default_rng(seed + n)
    sessions = np.asarray([f"s{i}" for i in range(n)], dtype=object)
    peer = rule = different = defined = 0
    for k in range(runs):
        full, abl = _pairs(rng, n, p, agree)
        try:
            e = ratio_by_session(full, abl, sessions, n_resamples=1000, seed=k)
            peer += bool(e.ci_high < 1)
            defined += 1
        except ValueError:  # the ablation never completed: undefined, never flagged
            pass
        b, c, _ = discordant(full, abl)
        rule += mcnemar_one_sided(b, c)[0] < 0.025
        different += cg1_completion(full, abl)["different"]
    return {"n": n, "peer": peer / max(defined, 1), "rule": rule / runs, "cg1_different": different / runs}


def power_check(n: int, runs: int, seed: int, p10: float = 0.25, p01: float = 0.05) -> dict:
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(runs):
        u = rng.random(n)
        full = (u < p10).astype(float)
        abl = ((u >= p10) & (u < p10 + p01)).astype(float)
        b, c, _ = discordant(full, abl)
        hits += mcnemar_two_sided(b, c) < ALPHA
    return {"n": n, "p10": p10, "p01": p01, "simulated": hits / runs, "exact": mcnemar_power(n, p10, p01)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--sizes", default="8,12,20,40")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    t0 = time.perf_counter()
    print(f"null: equal completion rates, {args.runs} runs per row")
    print("| rate | pairs agreeing by seed | pairs | percentile interval flags (peer) | exact paired test flags (rule) "
          "| CG-1 'different' |")
    print("|---:|---:|---:|---:|---:|---:|")
    for p, agree in ((0.3, 0.0), (0.6, 0.5)):
        for n in (int(x) for x in args.sizes.split(",")):
            r = null_flags(n, args.runs, args.seed, p, agree)
            print(f"| {p} | {agree:.0%} | {n} | {r['peer']:.4f} | {r['rule']:.4f} | {r['cg1_different']:.4f} |")
    print("nominal: 0.025 (a flag), 0.05 (CG-1 'different')")
    for n in (30, 60):
        p = power_check(n, args.runs, args.seed)
        print(f"CG-1 power, {n} pairs, p10 {p['p10']}, p01 {p['p01']}: simulated {p['simulated']:.4f}, "
              f"exact (reported) {p['exact']:.4f}")
    print(f"wall {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
