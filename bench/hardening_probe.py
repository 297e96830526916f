"""Tracebacks on hostile input, per command class (issue 41, point 8):
`python bench/hardening_probe.py [--before DIR] [--after DIR] [--timeout 20]`.

Runs the table of tests/hostile.py (every command of the six command lines against malformed files, wrong paths,
a FIFO, a 3 MB line; trb-annotate against a local server answering HTML, nothing or JSON that is not Label
Studio's) in-process against the toolkit at each root, and SIGINT/SIGTERM against two long commands in their own
processes. ``--before`` defaults to main at 5791892 (exported with ``git archive`` into a temporary directory),
``--after`` to this checkout. Per class it prints the cases tried and how many broke: a traceback or exit 70, an
app opened on the input instead of a refusal, a command still running after ``--timeout`` s, a signal that did
not end in exit 130. It asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
BEFORE = "5791892"

DRIVER = r"""
import collections, json, sys, tempfile
from pathlib import Path
import hostile
timeout = float(sys.argv[1])
scratch = Path(tempfile.mkdtemp(prefix="trb-probe-"))
fx = hostile.base_fixtures(scratch)
tried, broke, how = collections.Counter(), collections.Counter(), collections.Counter()

def one(cls, prog, argv, env):
    tried[cls] += 1
    try:
        code, out, err = hostile.run_in_process(prog, argv, env, timeout)
        why = hostile.broken(code, out, err)
    except hostile.OpenedApp:
        why = "app opened"
    except hostile.Hung:
        why = "still running"
    if why:
        broke[cls] += 1
        how[f"{cls}: {why}"] += 1

with hostile.FifoFeeder(scratch):
    for i, case in enumerate(hostile.cases()):
        if case.thing not in hostile.SKIP_SHAPES:
            argv, env = hostile.build_case(case, scratch, scratch / f"c{i}", fx)
            one(case.prog, case.prog, argv, env)
    for command, templates in hostile.SERVER_TABLE.items():
        for answer in hostile.ANSWERS:
            with hostile.WrongServer(answer) as srv:
                env = {"LABEL_STUDIO_URL": srv.url, "LABEL_STUDIO_API_KEY": "hostile-key-41", "TRB_LS_RETRIES": "0"}
                for t in templates:
                    one("trb-annotate (wrong server)", "trb-annotate", t.format(**fx).split(), env)
print(json.dumps({"tried": tried, "broke": broke, "how": how}))
"""

LONG = {
    "trb-corpus simulate": ["corpus.cli", "simulate", "--sessions", "1000000", "--seed", "1", "-o", "sim.jsonl"],
    "trb calibrate": ["trb.cli", "calibrate", "--sessions", "100000"],
}


def _env(root: Path, extra: str = "") -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(root), extra) if p),
            "HF_HUB_OFFLINE": "1", "TRB_LOCK_WAIT": "5"}


def probe(root: Path, timeout: float) -> dict:
    r = subprocess.run([sys.executable, "-c", DRIVER, str(timeout)], capture_output=True, text=True, cwd=root,
                       env=_env(root, str(HERE / "tests")), stdin=subprocess.DEVNULL, timeout=3600)
    try:
        found = json.loads(r.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        sys.exit(f"the probe of {root} did not finish: {r.stderr[-2000:]}")
    for command, argv in LONG.items():
        for sig in (signal.SIGINT, signal.SIGTERM):
            cls = f"signals ({command})"
            with tempfile.TemporaryDirectory() as d:
                p = subprocess.Popen([sys.executable, "-m", *argv], cwd=d, env=_env(root), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
                time.sleep(4)
                p.send_signal(sig)
                _, err = p.communicate(timeout=120)
                found["tried"][cls] = found["tried"].get(cls, 0) + 1
                if p.returncode != 130 or "Traceback" in err or os.listdir(d):
                    found["broke"][cls] = found["broke"].get(cls, 0) + 1
                    key = f"{cls}: {signal.Signals(sig).name} exit {p.returncode}"
                    found["how"][key] = found["how"].get(key, 0) + 1
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, default=None, help=f"a checkout (default: main at {BEFORE})")
    ap.add_argument("--after", type=Path, default=HERE, help="a checkout (default: this one)")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds one in-process case may run")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        before = a.before
        if before is None:
            before = Path(tmp) / "before"
            before.mkdir()
            archive = subprocess.run(["git", "-C", str(HERE), "archive", BEFORE], capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", str(before)], input=archive.stdout, check=True)
        results = {"before": probe(before, a.timeout), "after": probe(a.after, a.timeout)}
    classes = list(results["after"]["tried"])
    print(f"{'class':<34} {'cases':>6} {'broken before':>14} {'broken after':>13}")
    for cls in classes:
        print(f"{cls:<34} {results['after']['tried'][cls]:>6} {results['before']['broke'].get(cls, 0):>14} "
              f"{results['after']['broke'].get(cls, 0):>13}")
    total = {k: sum(results[k]["broke"].values()) for k in results}
    print(f"{'all':<34} {sum(results['after']['tried'].values()):>6} {total['before']:>14} {total['after']:>13}")
    for k in results:
        for why, n in sorted(results[k]["how"].items()):
            print(f"  {k}: {n} x {why}")


if __name__ == "__main__":
    main()
