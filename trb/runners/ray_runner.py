"""The Ray runner: a run's parts scored by Ray actors, one adapter each, and merged by the driver.

``trb run --runner ray [--address ADDR] --workers N`` starts N actors on the cluster at ``ADDR``
(default: a cluster of N CPUs started in this process for the run). Each actor re-creates the
adapter from the run's adapter spec (:func:`trb.adapters.registry.adapter_from_spec`, which
refuses a changed checkpoint) and, where the cluster has GPUs, holds one. The driver hands out
parts (:mod:`trb.parts`: whole sessions, so an adapter's per-context sharing keeps its speed-up),
at most two in flight per actor; an actor scores a part with the part's own seed, writes its item
scores to a part file (``<results>.parts/<run id>/<track>-<part>.parquet``, written whole and renamed
into place) and returns what it wrote; the driver, the results store's one writer, stores the parts
in work-list order as they arrive (:meth:`trb.results.ResultsStore.record_parts`, at most every
``flush_seconds``) and removes their files once stored.

Fault tolerance is set here, not left at Ray's defaults (no restart, no retry): an actor that dies is
restarted up to ``max_restarts`` times and its parts in flight are retried up to ``task_retries``
times (a retried part is stored once: the store keeps the first copy). A killed driver leaves part
files that ``trb run --resume`` stores without scoring them again. The part files must be reachable
by the workers and the driver: on one machine they are; across machines, put ``--results`` on a
shared file system.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterable
from pathlib import Path

from toolkit.errors import ToolkitError
from trb.errors import RunnerError, UsageError
from trb.options import Option
from trb.parts import Part
from trb.runners.base import PartResult, RunJob, score_part

__all__ = ["RayRunner", "RUNNER", "PartScorer", "DEFAULT_WORKERS", "DEFAULT_MAX_RESTARTS", "DEFAULT_TASK_RETRIES"]

DEFAULT_WORKERS = 2
DEFAULT_MAX_RESTARTS = 3
DEFAULT_TASK_RETRIES = 3
#: Parts in flight per actor: one scored, one waiting, so an actor never idles while the driver stores.
IN_FLIGHT = 2
_META_KEY = b"trb-part"


def _count(name: str, value, default: int, minimum: int) -> int:
    """A whole-number option (``--workers`` and the like) checked: ``default`` when not given."""
    if value is None:
        return default
    flag = "--" + name.replace("_", "-")
    try:
        n = int(value)
        whole = float(value) == n
    except (TypeError, ValueError, OverflowError):
        raise UsageError(f"{flag} must be a whole number, not {value!r}") from None
    if not whole or n < minimum:
        raise UsageError(f"{flag} must be a whole number of at least {minimum}, not {value!r}")
    return n


#: Seconds to wait for a cluster's address to accept a connection before saying it cannot be reached (Ray's own
#: connection attempts go on for minutes).
PROBE_SECONDS = 10.0


def _probe(address: str) -> None:
    """Refuse at once a ``host:port`` cluster address where nothing listens (``auto`` and ``ray://`` are Ray's)."""
    if address == "auto" or "://" in address or ":" not in address:
        return
    host, _, port = address.rpartition(":")
    try:
        port_n = int(port)
    except ValueError:
        raise UsageError(f"--address {address}: expected HOST:PORT (or auto)") from None
    try:
        socket.create_connection((host.strip("[]"), port_n), timeout=PROBE_SECONDS).close()
    except OSError as e:
        raise RunnerError(f"cannot reach the Ray cluster at {address}: {e.strerror or e} (is `ray start --head` "
                          "running there?)") from None


def part_file(parts_dir: Path, run_id: str, track: str, index: int) -> Path:
    return Path(parts_dir) / run_id / f"{track}-{index:07d}.parquet"


def write_part_file(path: Path, result: PartResult) -> None:
    """``result``'s rows as a parquet file at ``path`` (written beside it, renamed into place), the rest of the
    result in its schema metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from trb.results import rows_table

    table = result.rows if isinstance(result.rows, pa.Table) else rows_table(result.rows)
    meta = {"track": result.track, "index": result.index, "first_key": result.first_key,
            "n_input": result.n_input, "summary": result.summary, "timings": result.timings}
    table = table.replace_schema_metadata({_META_KEY: json.dumps(meta, sort_keys=True, default=str).encode()})
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def read_part_file(path: Path) -> PartResult:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    # not strict_json: metadata this runner wrote into its own part files a moment ago
    meta = json.loads((table.schema.metadata or {})[_META_KEY])
    table = table.replace_schema_metadata(None)
    return PartResult(meta["track"], int(meta["index"]), meta["first_key"], int(meta["n_input"]), table,
                      meta["summary"], meta["timings"])


class PartScorer:
    """A Ray actor's state: the adapter, re-created from the run's spec once per (re)start."""

    def __init__(self, adapter_spec: dict, threads: int | None, parts_dir: str) -> None:
        if threads:
            import torch

            torch.set_num_threads(int(threads))
        from trb.adapters.registry import adapter_from_spec

        self.adapter = adapter_from_spec(adapter_spec)
        self.parts_dir = Path(parts_dir)
        self.where = f"{socket.gethostname()}:{os.getpid()}"

    def score(self, run_id: str, part: Part, seed: int, kwargs: dict) -> dict:
        result = score_part(self.adapter, part, seed=seed, kwargs=kwargs, where=self.where)
        path = part_file(self.parts_dir, run_id, part.track, part.index)
        write_part_file(path, result)
        return {"path": str(path), "where": self.where}


class RayRunner:
    """``ray``: parts scored by ``workers`` Ray actors on the cluster at ``address`` (module docstring)."""

    name = "ray"

    #: ``trb run``'s flags for this runner (each given only when set; :mod:`trb.options`).
    options = (
        Option("address", "The Ray cluster (host:port, or auto); default: a new local one of --workers CPUs.",
               metavar="ADDR"),
        Option("workers", f"Ray actors, one adapter each (a GPU each where the cluster has them); default "
                          f"{DEFAULT_WORKERS}.", type=int, minimum=1, metavar="N"),
        Option("max_restarts", f"Times a dead worker is restarted (default {DEFAULT_MAX_RESTARTS}).", type=int,
               minimum=0, metavar="N"),
        Option("task_retries", f"Times a part whose worker died is retried (default {DEFAULT_TASK_RETRIES}); it is "
                               "stored once.", type=int, minimum=0, metavar="N"),
        Option("worker_threads", "torch threads per worker (default: this process's, so the arithmetic matches a "
                                 "local run).", type=int, minimum=1, metavar="N"),
    )

    def __init__(self, address: str | None = None, workers=None, max_restarts=None, task_retries=None,
                 worker_threads=None) -> None:
        self.address = address or None
        self.workers = _count("workers", workers, DEFAULT_WORKERS, 1)
        self.max_restarts = _count("max_restarts", max_restarts, DEFAULT_MAX_RESTARTS, 0)
        self.task_retries = _count("task_retries", task_retries, DEFAULT_TASK_RETRIES, 0)
        self.worker_threads = None if worker_threads is None else _count("worker_threads", worker_threads, 1, 1)

    def start(self, adapter_spec: dict) -> None:
        """Connect to the cluster (or start a local one) before anything is written: a cluster that cannot be
        reached, an adapter that cannot be re-created in a worker, or no Ray, is an error with no run stored."""
        from trb.adapters.registry import RECREATE_KEYS

        if not all(k in adapter_spec for k in RECREATE_KEYS):
            raise UsageError("the ray runner re-creates the adapter in each worker from its spec, and this adapter "
                             "was not loaded from the adapter registry (`trb adapters` lists the kinds); use "
                             "--runner local")
        try:
            import ray
        except ImportError:
            raise UsageError("the ray runner needs Ray: pip install 'trb-toolkit[ray]'") from None
        self._ray = ray
        self._started_here = not ray.is_initialized()
        if self._started_here and self.address:
            _probe(self.address)
        if self._started_here:
            try:
                ray.init(address=self.address, num_cpus=None if self.address else self.workers,
                         include_dashboard=False, log_to_driver=False, logging_level="ERROR",
                         configure_logging=False)
            except Exception as e:  # ConnectionError, RuntimeError: Ray's own, for an unreachable address
                text = str(e).strip().splitlines()
                raise RunnerError(f"cannot reach the Ray cluster at {self.address or '(a new local one)'}: "
                                  f"{text[0] if text else type(e).__name__}") from None

    def stop(self) -> None:
        ray = getattr(self, "_ray", None)
        if ray is not None and self._started_here and ray.is_initialized():
            ray.shutdown()
        self._ray = None

    def execute(self, job: RunJob, adapter, parts: Iterable[Part]) -> None:
        if getattr(self, "_ray", None) is None:
            self.start(job.adapter_spec)
        if job.parts_dir is None:
            raise UsageError("the ray runner needs a directory for part files (the results store's)")
        self._execute(self._ray, job, parts)

    def _execute(self, ray, job: RunJob, parts: Iterable[Part]) -> None:
        gpus = float(ray.cluster_resources().get("GPU", 0))
        threads = self.worker_threads
        if threads is None and "torch" in __import__("sys").modules:
            threads = __import__("torch").get_num_threads()  # the driver's: the same arithmetic as a local run
        actor_class = ray.remote(PartScorer).options(
            num_cpus=1, num_gpus=1 if gpus >= self.workers else 0, max_restarts=self.max_restarts,
            max_task_retries=self.task_retries)
        actors = [actor_class.remote(job.adapter_spec, threads, str(job.parts_dir)) for _ in range(self.workers)]
        kwargs = {t: ray.put(kw) for t, kw in job.kwargs.items()}
        seen: set[str] = set()
        pending: dict = {}  # object ref -> (sequence number, track, index, actor index)
        ready: dict[int, PartResult] = {}  # sequence number -> its part, read back, waiting for the parts before it
        load = [0] * len(actors)
        order = {"next": 0}
        job.facts.update({"runner": self.name, "workers": self.workers, "address": self.address or "local",
                          "max_restarts": self.max_restarts, "task_retries": self.task_retries,
                          "gpus_per_worker": 1 if gpus >= self.workers else 0, "worker_threads": threads})

        def flush() -> None:
            # parts are stored in work-list order, so the store's order of item scores is the local runner's
            while order["next"] in ready:
                _keep(job, ready.pop(order["next"]))
                order["next"] += 1

        try:
            for seq, part in enumerate(parts):
                left = part_file(job.parts_dir, job.run_id, part.track, part.index)
                if left.exists():  # scored before the driver was killed: stored now, not scored again
                    kept = read_part_file(left)
                    if (kept.first_key, kept.n_input) == (part.first_key, part.n_input):
                        kept.source = left
                        ready[seq] = kept
                        flush()
                        continue
                    left.unlink()
                while len(pending) >= IN_FLIGHT * len(actors):
                    self._collect(ray, job, pending, load, seen, ready)
                    flush()
                a = min(range(len(actors)), key=lambda i: load[i])
                ref = actors[a].score.remote(job.run_id, part, job.seed, kwargs[part.track])
                pending[ref] = (seq, part.track, part.index, a)
                load[a] += 1
            while pending:
                self._collect(ray, job, pending, load, seen, ready)
                flush()
        finally:
            for actor in actors:
                ray.kill(actor, no_restart=True)
        job.facts["worker_processes"] = len(seen)
        job.facts["restarts_seen"] = max(0, len(seen) - self.workers)

    def _collect(self, ray, job: RunJob, pending: dict, load: list, seen: set, ready: dict) -> None:
        """Wait for one part in flight; put its file among the ready ones (or raise what its worker raised)."""
        done, _ = ray.wait(list(pending), num_returns=1)
        ref = done[0]
        seq, track, index, a = pending.pop(ref)
        load[a] -= 1
        try:
            out = ray.get(ref)
        except ray.exceptions.RayTaskError as e:
            cause = getattr(e, "cause", None)
            if isinstance(cause, ToolkitError):  # an adapter's or a track's own error: reported as it is
                raise cause from None
            raise RunnerError(f"part {track}/{index} failed in a Ray worker: {str(cause or e).splitlines()[-1]}"
                              ) from None
        except ray.exceptions.RayActorError as e:
            raise RunnerError(f"part {track}/{index}: its Ray worker died past {self.max_restarts} restart(s) and "
                              f"{self.task_retries} retr{'y' if self.task_retries == 1 else 'ies'} "
                              f"({str(e).splitlines()[0]}); the parts stored so far are kept: resume with "
                              f"`trb run --resume {job.run_id}`") from None
        seen.add(out["where"])
        result = read_part_file(Path(out["path"]))
        result.source = Path(out["path"])  # removed by the engine once the part is stored
        ready[seq] = result


def _keep(job: RunJob, result: PartResult) -> None:
    job.store(result)
    if job.progress is not None:
        job.progress(result.n_input)


#: The entry point ``trb.runners: ray`` (pyproject.toml).
RUNNER = RayRunner
