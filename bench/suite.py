"""The test suite's time, tier by tier: wall and CPU time of each tier's pytest run, and its slowest tests.

    .venv/bin/python bench/suite.py [--tiers fast,integration,e2e,all] [--workers 2] [--out bench/out/suite]

Each tier runs as ``make`` runs it (tests/markers.py's marker expressions, pytest-xdist with ``--dist loadfile
--no-loadscope-reorder``, bytecode written), in a fresh pytest process. CPU time is the user + system time of
that process and every process it waited for (its xdist workers, and what the tests started and waited for; a
server a test leaves to its own session is not counted). Prints one row per tier and the 25 slowest tests
of each (pytest's ``--durations=25``); the whole output of each run is kept under ``--out``.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from markers import FAST, INTEGRATION  # noqa: E402

TIERS = {"fast": FAST, "integration": INTEGRATION, "e2e": "e2e", "all": None}


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_tier(name: str, workers: int, out: Path) -> dict:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=25"]
    if workers > 1:
        cmd += ["-n", str(workers), "--dist", "loadfile", "--no-loadscope-reorder"]
    if TIERS[name]:
        cmd += ["-m", TIERS[name]]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cpu0, t0 = _children_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    (out / f"{name}.txt").write_text(proc.stdout + proc.stderr, encoding="utf-8")
    summary = next((ln for ln in reversed(proc.stdout.splitlines()) if re.search(r"\d+ (passed|failed)", ln)), "")
    slowest = proc.stdout.split("slowest 25 durations", 1)[-1].splitlines()[1:26] if "slowest 25" in proc.stdout else []
    return {"tier": name, "rc": proc.returncode, "wall": wall, "cpu": cpu, "summary": summary.strip("= "),
            "slowest": slowest}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiers", default="fast,integration,e2e")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "suite")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.tiers.split(","):
        if name not in TIERS:
            ap.error(f"unknown tier {name!r}: one of {', '.join(TIERS)}")
        print(f"[suite] {name} ...", file=sys.stderr, flush=True)
        rows.append(run_tier(name, args.workers, args.out))
    print("| tier | workers | wall | CPU | CPU / wall | result |\n|---|---:|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r['tier']} | {args.workers} | {r['wall'] / 60:.1f} min ({r['wall']:.0f} s) | {r['cpu']:.0f} s | "
              f"{r['cpu'] / r['wall']:.2f} | {r['summary']} (rc {r['rc']}) |")
    if len(rows) > 1:
        wall, cpu = sum(r["wall"] for r in rows), sum(r["cpu"] for r in rows)
        print(f"| the tiers together | {args.workers} | {wall / 60:.1f} min ({wall:.0f} s) | {cpu:.0f} s | "
              f"{cpu / wall:.2f} | |")
    for r in rows:
        print(f"\nslowest tests, {r['tier']}:\n" + "\n".join(r["slowest"]))
    return max(r["rc"] for r in rows)


if __name__ == "__main__":
    sys.exit(main())
