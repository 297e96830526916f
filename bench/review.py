"""The review app on large corpora: `python bench/review.py [--sizes 10000,100000] [--repeats 3]`.

For each size, simulates and ingests a corpus once (cached under ``bench/out/review-N/``)
and has two annotators label every attribution item (disagreeing on every 10th),
then runs the real app headless (Textual's ``run_test`` at 80×24) ``--repeats`` times,
each in its own process, and reports medians of:

- first paint: from the app starting to the first page of sessions shown in the table
  (also from process start, which adds Python and Textual imports);
- open a session: from Enter on the first row to its timeline and step shown;
- filter by split, and by "has disagreement": from the change to the new first page;
- the app process's peak RSS (and its RSS at the end).

Peer, in the same process: a plain DuckDB ``SELECT count(*) FROM sessions`` on the
same store, opened cold (what any reader pays to open the file).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"

CHILD = r"""
import time
T_PROCESS = time.perf_counter()
import asyncio, json, resource, sys
import duckdb
from tui.app import ReviewApp
from textual.widgets import Checkbox, DataTable, Select

def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024

async def until(pilot, cond, limit=120.0):
    t0 = time.perf_counter()
    while not cond():
        await pilot.pause(0.005)
        if time.perf_counter() - t0 > limit:
            raise TimeoutError("the app did not get there")

async def main(corpus):
    out = {}
    t_app = time.perf_counter()
    app = ReviewApp(corpus, reviewer="bench")
    async with app.run_test(size=(80, 24)) as pilot:
        table = lambda: app.screen.query_one("#table", DataTable)
        await until(pilot, lambda: app.screen.__class__.__name__ == "SessionsScreen" and table().row_count > 0)
        now = time.perf_counter()
        out["first_paint_s"], out["first_paint_from_process_s"] = now - t_app, now - T_PROCESS
        sessions_screen = app.screen
        first = str(table().get_row_at(0)[0])
        t0 = time.perf_counter()
        await pilot.press("enter")
        await until(pilot, lambda: app.screen.__class__.__name__ == "SessionScreen" and app.screen.detail is not None)
        await pilot.pause()
        out["open_session_s"] = time.perf_counter() - t0
        out["steps_shown"] = app.screen.query_one("#timeline", DataTable).row_count
        await pilot.press("escape")
        await pilot.pause()
        for name, change in (("filter_split_s", lambda: setattr(sessions_screen.query_one("#split", Select), "value", "eval")),
                             ("filter_disagreement_s", lambda: setattr(sessions_screen.query_one("#disagree", Checkbox), "value", True))):
            before = sessions_screen.page
            t0 = time.perf_counter()
            change()
            await until(pilot, lambda: sessions_screen.page is not before)
            await pilot.pause()
            out[name] = time.perf_counter() - t0
        out["first_page_total"] = sessions_screen.page.total
    out["rss_end_mb"] = rss_mb()
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    con = duckdb.connect(corpus + "/corpus.duckdb", read_only=True)
    con.execute("SELECT count(*) FROM sessions").fetchone()
    con.close()
    out["peer_open_count_s"] = time.perf_counter() - t0
    out["first_row"] = first
    print(json.dumps(out))

asyncio.run(main(sys.argv[1]))
"""


def _bin(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def add_labels(corpus: Path) -> None:
    """Two annotators label every attribution item; on every 10th item they disagree (fixed times)."""
    import duckdb
    import orjson

    marker = corpus / ".bench-labels-done"
    if marker.exists():
        return
    con = duckdb.connect(str(corpus / "corpus.duckdb"), read_only=True)
    items = con.execute("SELECT item_id, design_label FROM attribution ORDER BY item_id").fetchall()
    con.close()
    path = corpus.parent / "labels.jsonl"
    with open(path, "wb") as f:
        for i, (item, design) in enumerate(items):
            other = "exogenous" if design == "self" else "self"
            for who, label in (("bench-a", design), ("bench-b", other if i % 10 == 0 else design)):
                f.write(orjson.dumps({
                    "kind": "annotation", "schema_version": 1, "annotation_id": f"bench-{who}-{item}",
                    "target": {"kind": "attribution", "id": item}, "annotator_id": who, "role": "annotator",
                    "value": {"type": "attribution", "label": label}, "created_at": "2026-11-01T00:00:00.000Z",
                    "revision": 1}) + b"\n")
    subprocess.run([_bin("trb-corpus"), "ingest", "-q", "--corpus", str(corpus), str(path)], check=True,
                   stdout=subprocess.DEVNULL)
    path.unlink()
    marker.touch()


def build(n: int) -> Path:
    d = OUT / f"review-{n}"
    if (d / "corpus" / "corpus.duckdb").exists():
        add_labels(d / "corpus")
        return d / "corpus"
    d.mkdir(parents=True, exist_ok=True)
    sim = d / "sim.jsonl"
    t0 = time.perf_counter()
    subprocess.run([_bin("trb-corpus"), "simulate", "--sessions", str(n), "--seed", "1", "-q", "-o", str(sim)],
                   check=True)
    subprocess.run([_bin("trb-corpus"), "init", str(d / "corpus")], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([_bin("trb-corpus"), "ingest", "-q", "--corpus", str(d / "corpus"), str(sim)], check=True,
                   stdout=subprocess.DEVNULL)
    sim.unlink()
    add_labels(d / "corpus")
    print(f"built {n:,}-session corpus in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return d / "corpus"


def measure(corpus: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-c", CHILD, str(corpus)], capture_output=True, text=True, env=env,
                       cwd=ROOT, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"the app run failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rows = []
    for n in [int(s) for s in args.sizes.split(",")]:
        corpus = build(n)
        runs = [measure(corpus) for _ in range(args.repeats)]
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0] if isinstance(runs[0][k], (int, float))}
        db_mb = (corpus / "corpus.duckdb").stat().st_size / 2**20
        rows.append((n, db_mb, med))
        print(json.dumps({"sessions": n, "store_mb": round(db_mb), **{k: round(v, 3) for k, v in med.items()}}))
    print()
    print("| sessions | store MB | first paint s (from process start) | open session s | filter split s "
          "| filter disagreement s | peak RSS MB | RSS at end MB | peer: open + count s |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, db_mb, m in rows:
        print(f"| {n:,} | {db_mb:,.0f} | {m['first_paint_s']:.2f} ({m['first_paint_from_process_s']:.2f}) | "
              f"{m['open_session_s']:.3f} | {m['filter_split_s']:.2f} | {m['filter_disagreement_s']:.2f} | "
              f"{m['peak_rss_mb']:.0f} | {m['rss_end_mb']:.0f} | {m['peer_open_count_s']:.3f} |")


if __name__ == "__main__":
    main()
