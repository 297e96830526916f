"""Label Studio round trip at scale: `python bench/annotate.py [--items 10000]`.

Starts its own Label Studio server (as the tests do: `.venv-ls`, a prepared data dir, a free
loopback port), makes a corpus of `--items` attribution items (10 per 10-step session),
and times:

- push: `trb-annotate push` of every item into a new project (render + import in batches);
- re-push: the same push again, which imports nothing (it lists the project's item ids);
- pull: `trb-annotate pull` of `--items` annotations into the corpus (read the tasks through
  Label Studio's export in chunks of ids, the next chunk in flight while one is parsed and
  validated, one ingest); the re-pull right after it (nothing new, but the tasks changed in the
  overlap window before the pull started are read again); the re-pull after a quiet overlap
  window, and the one after that (the steady state: nothing is read); and `pull --full` of the
  same project (every task read, nothing new).

The annotations for the pull are made quickly by importing tasks with their annotations
embedded (Label Studio's import format, `completed_by` = the admin user): a third of
`--items` tasks, three annotations each, in a second project. Peer: Label Studio's own
JSON export of that project (one request, no parsing into the corpus).

`--backend sqlite|postgresql|both` (default both): Label Studio on SQLite, or on a PostgreSQL server
the bench starts itself (as the tests do).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def _corpus(dir: Path, items: int):
    from corpus import Corpus, ingest, init_corpus
    from factories import attribution, session, write_jsonl

    c = Corpus(init_corpus(dir / "corpus"))
    recs = []
    for s in range(-(-items // 10)):
        sid = f"s{s:06d}"
        recs.append(session(sid, n_steps=10, subject=f"subj-{s % 500}"))
        recs += [attribution(f"{sid}.t{t}.attr", sid, t, "self" if t % 3 else "exogenous")
                 for t in range(10) if s * 10 + t < items]
    ingest(c, [write_jsonl(dir / "in.jsonl", recs)], progress=False)
    return c


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def run(backend: str, items: int, workers: int | None = None) -> None:
    from ls import label_studio

    from annotate.pull import OVERLAP_SECONDS, pull
    from annotate.push import ensure_project, push
    from annotate.status import status
    from annotate.tasks import ITEM_KEY

    with label_studio(backend, workers) as (url, client, work):
        _ = client.sdk  # import label_studio_sdk (about 2 s, once per process) before the clock starts
        corpus = _corpus(work, items)
        t_push, rep = _timed(lambda: push(corpus, client, "attribution", title="bench push"))
        t_repush, rep2 = _timed(lambda: push(corpus, client, "attribution", title="bench push"))
        assert rep.imported == items and rep2.imported == 0

        # annotations: a project of items/3 tasks with 3 annotations each, imported with them embedded
        project, _ = ensure_project(client, "attribution", "bench pull")
        admin_id = client.check()["id"]
        n_tasks = -(-items // 3)
        ids = sorted(client.task_keys(rep.project.id, ITEM_KEY))[:n_tasks]
        labels = ["self", "exogenous", "unsure"]
        tasks = []
        for i, item in enumerate(ids):
            anns = [{"result": [{"from_name": "caused_by_self", "to_name": "session", "type": "choices",
                                 "value": {"choices": [labels[(i + k) % 3 if k == 2 else i % 2]]}}],
                     "completed_by": admin_id} for k in range(3)]
            # Label Studio refuses a task that lacks a field its labelling config shows
            data = {ITEM_KEY: item, "step_label": "1 of 1", "language": "-", "session_text": "-", "outcome": "-",
                    "after_text": "-"}
            tasks.append({"data": data, "annotations": anns})
        t_make = time.perf_counter()
        for start in range(0, len(tasks), 500):
            client.sdk.projects.import_tasks(id=project.id, request=tasks[start:start + 500])
        t_make = time.perf_counter() - t_make
        t_pull, pr = _timed(lambda: pull(corpus, client, title="bench pull"))
        t_repull, pr2 = _timed(lambda: pull(corpus, client, title="bench pull"))
        time.sleep(OVERLAP_SECONDS + 1)  # nothing changes for longer than the overlap: after one more pull
        t_catch, pr_c = _timed(lambda: pull(corpus, client, title="bench pull"))
        t_quiet, pr3 = _timed(lambda: pull(corpus, client, title="bench pull"))  # the steady state
        t_full, pr4 = _timed(lambda: pull(corpus, client, title="bench pull", full=True))
        t_peer, data = _timed(lambda: client.http.get(f"/api/projects/{project.id}/export",
                                                      params={"exportType": "JSON"}, timeout=600).json())
        assert pr.new == pr2.seen == pr3.seen == pr4.seen and pr2.new == pr3.new == pr4.new == 0
        # status reads what a full pull reads; before, it listed every annotated task with every field
        t_status, st = _timed(lambda: status(client, title="bench pull"))
        t_listing, listed = _timed(lambda: list(client._pages(project.id, {"fields": "all", "only_annotated": "true"},
                                                               "list annotations")))
        assert st[0].annotations == pr.new == sum(len(t.get("annotations") or []) for t in listed)
        n_ann = sum(len(t.get("annotations") or []) for t in data)
        served = f"gunicorn, {workers} worker processes" if workers else "label-studio start (one process)"
        print(f"items: {items}; Label Studio 1.23.2 on 127.0.0.1, {backend}, {served}; batches of 500")
        print(f"push {rep.imported} tasks: {t_push:.1f} s ({rep.imported / t_push:,.0f} tasks/s)")
        print(f"re-push (0 imported, {rep2.already} already there): {t_repush:.1f} s")
        print(f"making {pr.new} annotations by import ({n_tasks} tasks x 3, embedded): {t_make:.1f} s")
        print(f"pull {pr.new} annotations: {t_pull:.1f} s ({pr.new / t_pull:,.0f} annotations/s)")
        print(f"re-pull right after (0 new, {pr2.unchanged} unchanged, {pr2.fetched} read again: changed within "
              f"{OVERLAP_SECONDS} s before the last pull): {t_repull:.2f} s")
        print(f"re-pull {OVERLAP_SECONDS + 1} s later (0 new, {pr_c.fetched} read: changed within "
              f"{OVERLAP_SECONDS} s before the last pull): {t_catch:.2f} s")
        print(f"re-pull, steady state: nothing changed since {OVERLAP_SECONDS} s before the last pull (0 new, "
              f"{pr3.unchanged} unchanged, {pr3.fetched} read): {t_quiet:.2f} s")
        print(f"pull --full (0 new, {pr4.fetched} read): {t_full:.1f} s")
        print(f"status ({st[0].annotations} labels on {st[0].tasks} tasks): {t_status:.1f} s; listing the annotated "
              f"tasks with every field (how status read them before): {t_listing:.1f} s")
        print(f"peer: Label Studio JSON export of the same project ({n_ann} annotations): {t_peer:.1f} s "
              f"(pull/export {t_pull / t_peer:.2f}x, pull --full/export {t_full / t_peer:.2f}x)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="both")
    ap.add_argument("--workers", type=int, default=None,
                    help="serve Label Studio by gunicorn with this many worker processes, as a team deploys it "
                         "(default: `label-studio start`, Django's own one-process server)")
    args = ap.parse_args()
    for backend in (["sqlite", "postgresql"] if args.backend == "both" else [args.backend]):
        run(backend, args.items, args.workers)


if __name__ == "__main__":
    main()
