"""Many annotators at once: `python bench/annotate_load.py [--annotators 20] [--per-annotator 100]`.

Starts its own Label Studio server (as the tests do) on SQLite, then on a PostgreSQL server it starts itself
(`--backend sqlite|postgresql|both`, default both), pushes `--tasks` attribution items into one project, signs up
`--annotators` real users (each with its own token) and has each create `--per-annotator` annotations on distinct
tasks through the API, changing every 5th once, all at the same time, while `trb-annotate pull` (incremental)
runs on one corpus back to back; then one last pull (tests/load_annotators.py). Prints annotations/s, the pulls'
times, and whether anything was lost or duplicated: every annotation the server acknowledged is in the corpus
exactly once (one row a revision, its latest value last), and nothing is there that the server lacks.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def _corpus(dir: Path, tasks: int):
    from corpus import Corpus, ingest, init_corpus
    from factories import attribution, session, write_jsonl

    c = Corpus(init_corpus(dir / "corpus"))
    recs = []
    for s in range(-(-tasks // 10)):
        sid = f"s{s:06d}"
        recs.append(session(sid, n_steps=10, subject=f"subj-{s % 500}"))
        recs += [attribution(f"{sid}.t{t}.attr", sid, t, "self") for t in range(10) if s * 10 + t < tasks]
    ingest(c, [write_jsonl(dir / "in.jsonl", recs)], progress=False)
    return c


def run(backend: str, args) -> None:
    from ls import label_studio

    from annotate.push import push
    from annotate.tasks import ITEM_KEY
    from load_annotators import check, run_load
    from ls_server import TOKEN

    with label_studio(backend) as (url, client, work):
        corpus = _corpus(work, args.tasks)
        rep = push(corpus, client, "attribution", title="load", overlap=args.annotators)
        tasks = sorted(client.task_keys(rep.project.id, ITEM_KEY).values())
        t0 = time.perf_counter()
        result = run_load(url, TOKEN, corpus, "load", tasks, annotators=args.annotators,
                          per_annotator=args.per_annotator, change_every=5)
        wall = time.perf_counter() - t0
        problems = check(corpus, client, rep.project.id, result)
        p = sorted(result.pulls)
        print(f"Label Studio 1.23.2 on 127.0.0.1, {backend}: {args.tasks} tasks, {args.annotators} annotators x "
              f"{args.per_annotator} annotations (every 5th changed once), pull back to back")
        print(f"  {len(result.created)} created + {result.changed} changed in {result.seconds:.1f} s: "
              f"{result.rate():.1f} annotations/s; {len(result.failed)} request(s) failed, {len(result.slow)} "
              f"waited over 5 s"
              + (f" (first: {result.failed[0]})" if result.failed else ""))
        if p:
            print(f"  {len(p)} pulls while they worked: median {statistics.median(p):.2f} s, max {p[-1]:.2f} s "
                  f"({result.pulls_full} in full, {result.pulls_reconciled} re-checked task by task); "
                  f"{len(result.pull_errors)} failed" + (f" ({result.pull_errors[0]})" if result.pull_errors else ""))
        print(f"  final pull {result.final_pull:.2f} s; whole run (sign-ups included) {wall:.1f} s")
        print(f"  lost or duplicated: {len(problems)}" + (f" (first: {problems[0]})" if problems else ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=2000)
    ap.add_argument("--annotators", type=int, default=20)
    ap.add_argument("--per-annotator", type=int, default=100)
    ap.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="both")
    args = ap.parse_args()
    for backend in (["sqlite", "postgresql"] if args.backend == "both" else [args.backend]):
        run(backend, args)


if __name__ == "__main__":
    main()
