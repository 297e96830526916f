"""Track 2's default trial budget: `python bench/track2_budget.py [--sessions 100] [--resamples 200]`.

Before the default budget (issue 39, part 3) a Track 2 run scored every step context of the evaluated and the dev
split; now, unless ``--grounding-contexts`` is given, each split keeps ``contexts_for_width(0.10)`` = 257 contexts
(a 95 % CI of the detection AUC at most 0.10 wide by the Hanley–McNeil variance at AUC 0.5).

1. **Trials, exactly**, for a release shaped as ``bench/report_scale.py`` shapes one (10 steps a session, dev a
   quarter of eval, 2 sites, 34 concepts, 9 trials per (context, site, concept)) at 2,000 and 100,000 eval
   sessions: before (every context) and after (the default budget). Counted, not run.
2. **Report time**, measured: a store with trace-full's and trace-ablation's Track 2 runs (rows drawn as
   ``bench/report_scale.py:_track2`` draws them) at ``--sessions`` eval sessions, every context (before) and the
   default budget's contexts (after: the same hash sample ``track2_items`` keeps), then ``build_report`` with
   ``--resamples`` resamples a figure. Medians of ``--repeats``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

STEPS, SITES, CONCEPTS, TRIALS = 10, 2, 34, 9


def trials(eval_sessions: int, contexts: int | None) -> int:
    """Track 2 rows of one run: contexts of eval and dev (capped by the budget) × sites × concepts × 9."""
    splits = [eval_sessions * STEPS, max(1, eval_sessions // 4) * STEPS]
    return sum(min(n, contexts or n) for n in splits) * SITES * CONCEPTS * TRIALS


def _store(path: Path, eval_sessions: int, budget: int | None) -> int:
    import report_scale as rs

    from trb.results import ResultsStore
    from trb.tracks.track2 import _sample_key

    rng = np.random.default_rng(0)
    ev = rs._sessions(rng, "eval", eval_sessions, rs.EVAL_CONTEXTS, 0)
    dev = rs._sessions(rng, "dev", max(1, eval_sessions // 4), rs.DEV_CONTEXTS, eval_sessions)
    cos = {(site, f"{slot}={v}"): float(rng.uniform(0.2, 0.95))
           for site in rs.SITES for slot, vals in (("goal", rs.GOALS), ("planned_next", rs.ACTIONS)) for v in vals}
    store = ResultsStore(path)
    n = 0
    for name, slope in (("trace-full", 1.0), ("trace-ablation", 0.25)):
        cols = rs._track2(rng, ev, dev, slope, cos)
        if budget is not None:  # the contexts track2_items keeps: the smallest sample hashes of each split
            keep = set()
            for split in ("eval", "dev"):
                ids = sorted({i.split("|", 1)[0] for i, s in zip(cols["item_id"], cols["split"]) if s == split},
                             key=_sample_key)
                keep |= set(ids[:budget])
            sel = [i.split("|", 1)[0] in keep for i in cols["item_id"]]
            cols = {k: [x for x, s in zip(v, sel) if s] for k, v in cols.items()}
        rows = [dict(zip(cols, vals)) for vals in zip(*cols.values())]
        n = len(rows)
        run = {"run_id": name, "baseline": name, "adapter_tier": "native", "adapter_spec": {"kind": "native"},
               "release_sha": rs.RELEASE_SHA, "release_version": "0.2.0", "release_kind": "trb", "smoke_test": False,
               "seed": 0, "tracks": ["2"], "split": "eval", "created_at": "2026-08-03T10:00:00+00:00",
               "timings": {"capabilities": ["activation_access"], "summary": {"2": {"scored": n}}}}
        store.record_run(run, rows)
    return n


def main() -> None:
    from trb.report import build_report
    from trb.results import ResultsStore
    from trb.tracks.track2 import contexts_for_width

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=100, help="eval sessions of the timed store (default 100)")
    ap.add_argument("--resamples", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    n = contexts_for_width()
    for s in (2_000, 100_000):
        before, after = trials(s, None), trials(s, n)
        print(f"{s:>7,} eval sessions: {before:>12,} trials a run before, {after:>9,} after ({before / after:.0f}x)")
    for label, budget in (("before", None), ("after", n)):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "r.duckdb"
            rows = _store(path, args.sessions, budget)
            times = []
            for _ in range(args.repeats):
                store = ResultsStore(path)
                t0 = time.perf_counter()
                build_report(store, release_sha=None, n_resamples=args.resamples, seed=0)
                times.append(time.perf_counter() - t0)
            print(f"{label}: {rows:,} Track 2 rows a run, report {np.median(times):.2f} s (median of {args.repeats})")


if __name__ == "__main__":
    main()
