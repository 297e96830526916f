"""The review app's results screen on the demo's store: `python bench/review_results.py [--seed-dir DIR] [--repeats 3]`.

The store is the demo's (``results.duckdb`` and ``corpus/`` of ``make demo``'s ``demo-work/``, else of
``make demo-conclusions``' ``demo-seeds/seed-1/``). Each repeat starts with an empty ``$TRB_CACHE`` and runs the real app headless
(Textual's ``run_test`` at 120×36) in its own process, timing from ``R`` on the sessions list to the runs
table filled. ``R`` is pressed at once, with the app's prefetch off (the worst case: when the app starts with
``--results`` it reads or computes the figures in the background, so a curator who looks at the sessions first
finds them ready):

- first open: the runs listed (their figures still "…"), then every figure computed (nothing cached yet);
- second open: Esc, then ``R`` again in the same app (the figures kept in memory);
- restarted app: a second process on the same store and cache (read back from ``$TRB_CACHE/review/``).

Peer, in the first process: the uncached computation itself (:func:`tui.results_view.read_runs`, what
``trb report`` computes for every run, without intervals) on the same store.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import asyncio, json, sys, time
from tui.app import ReviewApp
from tui.screens.results import ResultsScreen

async def until(pilot, cond, limit=600.0):
    t0 = time.perf_counter()
    while not cond():
        await pilot.pause(0.005)
        if time.perf_counter() - t0 > limit:
            raise TimeoutError("the app did not get there")

async def open_results(app, pilot):
    t0 = time.perf_counter()
    await pilot.press("R")
    await until(pilot, lambda: isinstance(app.screen, ResultsScreen) and app.screen.runs
                and app.screen.query_one("#runs").row_count == len(app.screen.runs))
    listed = time.perf_counter() - t0
    await until(pilot, lambda: app.screen.runs_source is not None)
    return time.perf_counter() - t0, app.screen.runs_source, len(app.screen.runs), listed

async def main(corpus, results, peer):
    out = {}
    app = ReviewApp(corpus, results=results, reviewer="bench", prefetch_results=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: app.screen.__class__.__name__ == "SessionsScreen")
        await pilot.pause()
        out["open_s"], out["source"], out["runs"], out["listed_s"] = await open_results(app, pilot)
        await pilot.press("escape")
        await pilot.pause()
        out["second_open_s"], out["second_source"], _, _ = await open_results(app, pilot)
    if peer:
        from tui.results_view import read_runs
        t0 = time.perf_counter()
        read_runs(results)
        out["peer_read_runs_s"] = time.perf_counter() - t0
    print(json.dumps(out))

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3] == "peer"))
"""


def _child(corpus: Path, results: Path, cache: str, peer: bool) -> dict:
    env = {**os.environ, "TRB_CACHE": cache, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, "-c", CHILD, str(corpus), str(results), "peer" if peer else "-"],
                          env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"the app's process failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = next((d for d in (ROOT / "demo-work", ROOT / "demo-seeds" / "seed-1") if (d / "results.duckdb").is_file()),
                   ROOT / "demo-work")
    ap.add_argument("--seed-dir", type=Path, default=default,
                    help="the demo's output directory, holding results.duckdb and corpus/ (default: make demo's "
                         "demo-work/, else make demo-conclusions' demo-seeds/seed-1/)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    results, corpus = args.seed_dir / "results.duckdb", args.seed_dir / "corpus"
    if not results.is_file() or not (corpus / "corpus.duckdb").is_file():
        raise SystemExit(f"{args.seed_dir}: no results.duckdb and corpus/ (run make demo, or give --seed-dir)")
    rows = []
    for i in range(args.repeats):
        with tempfile.TemporaryDirectory(prefix="trb-bench-cache-") as cache:
            first = _child(corpus, results, cache, peer=True)
            again = _child(corpus, results, cache, peer=False)
        assert first["source"] == "computed" and again["source"] == "cache", (first, again)
        rows.append({"first_listed_s": first["listed_s"], "first_open_s": first["open_s"],
                     "second_open_s": first["second_open_s"],
                     "restarted_open_s": again["open_s"], "peer_read_runs_s": first["peer_read_runs_s"],
                     "runs": first["runs"]})
        print(f"repeat {i + 1}: {json.dumps(rows[-1])}", file=sys.stderr)
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0] if k != "runs"}
    print(f"store {results} ({results.stat().st_size / 2**20:.1f} MB, {rows[0]['runs']} runs), "
          f"medians of {len(rows)}:")
    print(f"  first open: runs listed        {med['first_listed_s']:8.3f} s")
    print(f"  first open: figures computed   {med['first_open_s']:8.3f} s")
    print(f"  second open (same app)         {med['second_open_s']:8.3f} s")
    print(f"  restarted app (from the cache) {med['restarted_open_s']:8.3f} s")
    print(f"  peer: read_runs uncached       {med['peer_read_runs_s']:8.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
