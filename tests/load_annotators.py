"""Many annotators at once against a real Label Studio server, while ``trb-annotate pull`` runs again and again.

Used by ``tests/annotate/test_annotate_load.py`` (small) and ``bench/annotate_load.py`` (the figures). Each
annotator is a real user of the server (signed up through its invite link) with its own token, in its own thread,
creating annotations through the API (and changing some of its own); a puller thread runs the incremental
``pull`` into one corpus back to back until the annotators are done, then one last pull. :func:`check` then says
whether anything was lost or duplicated: every annotation the server acknowledged is in the corpus exactly once
(one row a revision, the latest revision holding its last value), and the corpus holds nothing the server lacks.
"""

from __future__ import annotations

import random
import statistics
import threading
import time
from dataclasses import dataclass, field

from ls_server import signup

__all__ = ["LoadResult", "run_load", "check"]

LABELS = ("self", "exogenous", "unsure")


def _label(value: str) -> list[dict]:
    return [{"from_name": "caused_by_self", "to_name": "session", "type": "choices", "value": {"choices": [value]}}]


@dataclass
class LoadResult:
    annotators: int
    created: dict[int, str] = field(default_factory=dict)  # annotation id -> its last label (acknowledged)
    changed: int = 0  # updates acknowledged
    failed: list[str] = field(default_factory=list)  # requests the server did not acknowledge (one line each)
    seconds: float = 0.0  # from the first annotator's start to the last one's end
    pulls: list[float] = field(default_factory=list)  # seconds of each pull while the annotators worked
    pull_errors: list[str] = field(default_factory=list)
    final_pull: float = 0.0
    slow: list[str] = field(default_factory=list)  # annotators' requests that waited more than 5 s for an answer
    pulls_full: int = 0  # pulls during the run that read every task (the first: no ledger yet)
    pulls_reconciled: int = 0  # pulls during the run whose count check disagreed (re-checked task by task)

    def rate(self) -> float:
        return (len(self.created) + self.changed) / self.seconds if self.seconds else 0.0

    def summary(self) -> str:
        p = sorted(self.pulls)
        pulls = (f"{len(p)} pulls during, median {statistics.median(p):.2f} s, max {p[-1]:.2f} s" if p
                 else "no pull finished during")
        return (f"{self.annotators} annotators: {len(self.created)} annotations created and {self.changed} changed in "
                f"{self.seconds:.1f} s ({self.rate():.1f}/s), {len(self.failed)} request(s) failed, {len(self.slow)} "
                f"waited over 5 s; {pulls}; "
                f"final pull {self.final_pull:.2f} s")


def run_load(url: str, admin_token: str, corpus, title: str, task_ids: list[int], *, annotators: int = 20,
             per_annotator: int = 10, change_every: int = 5, prefix: str = "load", seed: int = 0,
             overlap_seconds: float | None = None) -> LoadResult:
    """``annotators`` users each annotate ``per_annotator`` distinct tasks of ``task_ids`` (and change every
    ``change_every``-th of their annotations once) while ``pull`` of project ``title`` runs on ``corpus`` back to
    back."""
    from annotate.client import connect
    from annotate.pull import OVERLAP_SECONDS, pull

    overlap = OVERLAP_SECONDS if overlap_seconds is None else overlap_seconds
    admin = connect(url, admin_token, backoff=0.05)
    result = LoadResult(annotators)
    # a request that has waited 5 s says so (client.py); counted here rather than printed 20 times over
    slow = result.slow.append
    clients = [connect(url, signup(url, admin_token, f"{prefix}.{i}@trb.test"), retries=0, notify=slow)
               for i in range(annotators)]
    lock = threading.Lock()
    start = threading.Barrier(annotators + 1)
    done = threading.Event()

    def annotate(i: int) -> None:
        rng = random.Random(seed * 1000 + i)
        mine = rng.sample(task_ids, min(per_annotator, len(task_ids)))
        me = clients[i]
        start.wait()
        for n, task in enumerate(mine):
            value = rng.choice(LABELS)
            try:
                aid = me.create_annotation(task, _label(value))
            except Exception as e:  # noqa: BLE001 - counted, the run goes on
                with lock:
                    result.failed.append(f"create on task {task}: {e}")
                continue
            with lock:
                result.created[aid] = value
            if change_every and n % change_every == change_every - 1:
                value = rng.choice([v for v in LABELS if v != value])
                try:
                    me.update_annotation(aid, _label(value))
                except Exception as e:  # noqa: BLE001
                    with lock:
                        result.failed.append(f"update of {aid}: {e}")
                    continue
                with lock:
                    result.created[aid] = value
                    result.changed += 1

    def puller() -> None:
        start.wait()
        while not done.is_set():
            t0 = time.perf_counter()
            try:
                r = pull(corpus, admin, title=title, overlap_seconds=overlap)
            except Exception as e:  # noqa: BLE001 - a pull that fails loses nothing; recorded
                result.pull_errors.append(str(e))
                continue
            result.pulls.append(time.perf_counter() - t0)
            result.pulls_full += bool(r.full)
            result.pulls_reconciled += bool(r.reconciled)

    threads = [threading.Thread(target=annotate, args=(i,), daemon=True) for i in range(annotators)]
    p = threading.Thread(target=puller, daemon=True)
    for t in threads + [p]:
        t.start()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    result.seconds = time.perf_counter() - t0
    done.set()
    p.join()
    t1 = time.perf_counter()
    pull(corpus, admin, title=title, overlap_seconds=overlap)
    result.final_pull = time.perf_counter() - t1
    for c in clients:
        c.close()
    return result


def check(corpus, client, project_id: int, result: LoadResult) -> list[str]:
    """What is wrong (empty when nothing): lost, duplicated, stale or foreign annotations in ``corpus``."""
    with corpus.open(write=False) as con:
        rows = con.execute("SELECT ls_annotation_id, revision, label FROM store.annotations "
                           "WHERE ls_project_id = ? AND role = 'annotator'", [project_id]).fetchall()
    revs: dict[int, list[int]] = {}
    latest: dict[int, tuple[int, str]] = {}
    for aid, rev, label in rows:
        revs.setdefault(aid, []).append(rev)
        if aid not in latest or rev > latest[aid][0]:
            latest[aid] = (rev, label)
    tasks = [t for t, _, n in client.task_stamps(project_id) if n]
    on_server = {int(a["id"]) for start in range(0, len(tasks), 500)
                 for t in client.export_tasks(project_id, tasks[start:start + 500]) for a in t.get("annotations") or []}
    problems = []
    for aid, value in result.created.items():
        if aid not in revs:
            problems.append(f"annotation {aid} acknowledged by the server is not in the corpus (lost)")
        elif latest[aid][1] != value:
            problems.append(f"annotation {aid}: the corpus's latest revision is {latest[aid][1]!r}, not {value!r}")
    for aid, rs in revs.items():
        if sorted(rs) != list(range(1, len(rs) + 1)):
            problems.append(f"annotation {aid}: revisions {sorted(rs)} (duplicated or missing)")
        if aid not in on_server:
            problems.append(f"annotation {aid} is in the corpus but not on the server")
    problems += [f"annotation {aid} is on the server but not in the corpus" for aid in on_server - revs.keys()]
    return problems
