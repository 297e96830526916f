"""`trb run`: drive one adapter through the registered tracks on a release and record every item score.

Plan, execute, record: the work list of each track comes from the release and the
split; a track whose capabilities the adapter lacks is recorded as not applicable
(with what it needs), never silently skipped; every item score and the run's spec
(adapter, model, options, seed, release) go to the results store, so
:func:`rerun` can re-create the run from its record.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

from tqdm import tqdm

from schemas.versions import TOOLKIT_VERSION
from trb.adapters.capabilities import bind
from trb.errors import CheckFailed, UsageError
from trb.parts import DEFAULT_PART_ITEMS, cut_parts, merge_summaries, part_key_of
from trb.preflight import NothingToScore, check_scorable, check_split, items_by_split
from trb.provenance import check_transfer_provenance, trainers
from trb.releases import Release
from trb.run_spec import DEFAULT_FLUSH_SECONDS, RunSpec, check_flush_seconds, check_track_options
from trb.runners import RunJob, get_runner
from trb.subjects import check_disjoint
from trb.tracks.base import get_track, registered_tracks

__all__ = ["BASELINES", "HELD_OUT_SPLITS", "RunSpec", "DEFAULT_FLUSH_SECONDS", "ROLLOUT_NO_TRANSFER", "run_tracks",
           "resume_run", "load_adapter", "preflight", "NothingToScore",
           "not_applicable_text", "rerun", "TOOLKIT_VERSION"]

#: Baseline names used everywhere (spec §4): 1-3 through the proxy adapter, 4-5 through the native one.
BASELINES = ("instruct-base", "cot-prompted", "cot-sft", "trace-ablation", "trace-full")
#: Splits never used to fit anything (spec §5): the only ones Δgov is computed on.
HELD_OUT_SPLITS = ("eval", "transfer")
#: Why a rollout track (source "tasks") was not applicable on a transfer-split run made before task sets had transfer
#: tasks (kept: stored runs say it); a run now rolls the task set's tasks of the release's transfer contexts.
ROLLOUT_NO_TRANSFER = ("a rollout track: its items come from a task set, not the release, and task sets declare no "
                       "transfer context or collector, so nothing can be scored off-distribution with checked "
                       "provenance")


def not_applicable_text(summary: dict) -> str:
    """A not-applicable track's reason as every output says it: "not applicable (needs X)" or "(reason)"."""
    reason = summary.get("reason") or f"needs {', '.join(summary.get('needs') or ())}"
    return f"not applicable ({reason})"


def load_adapter(kind: str, model: str | os.PathLike, **options):
    """The adapter of registered kind ``kind`` on ``model`` (options as the kind declares them), checked once.

    See :func:`trb.adapters.registry.load_adapter`.
    """
    from trb.adapters.registry import load_adapter as _load

    return _load(kind, model, **options)


def run_tracks(spec: RunSpec, adapter, *, progress: bool = True) -> dict:
    """Run ``spec`` (:class:`~trb.run_spec.RunSpec`: release, split, tracks, seed, results, runner, ...) through
    ``adapter``; record the run.

    ``adapter`` is an adapter object (checked against its contract here) or one from :func:`load_adapter`.
    Returns the run row (with ``run_id``), plus ``summary``: per track, the items scored and not scored by
    reason, or ``{"status": "not_applicable", "needs": [...]}`` for a track whose capabilities the adapter lacks,
    or ``{"status": "not_applicable", "needs": [], "reason": ...}`` for a rollout track (Tracks 4, 5) on the
    transfer split: its items come from a task set, whose tasks declare no transfer context and no collector, so
    none can be scored off-distribution.

    ``spec.trained_by`` is added to the adapter spec's own ``trained_by`` and recorded in the run row. A
    transfer-split run needs a trainer and refuses a release whose transfer contexts one of them collected
    (:func:`trb.provenance.check_transfer_provenance`). ``spec.track_options`` are recorded in the run's
    ``timings.track_options`` and re-applied by :func:`rerun`.

    The work is scored in parts (:mod:`trb.parts`, ``spec.part_items`` items at least, whole sessions) by
    ``spec.runner`` (:mod:`trb.runners`). The run row is stored first, as running; scored parts are stored as
    they are made, together at most every ``spec.flush_seconds``, so a kill loses at most that much work; the
    run is marked complete at the end. A run killed on the way is resumed by :func:`resume_run`, which scores
    only its missing parts; until then no reader shows it as a result.

    Raises:
        ReleaseError: the release is missing, tampered with or incomplete.
        UsageError: an unknown track, or a derived one (Track 6); a split the release does not have; the train
            split without ``allow_train_split``; no item of the requested tracks in the split (NothingToScore, with
            the reason per track: :func:`preflight`); no requested track the adapter can run; an unknown runner or a bad runner option; an option a track does not
            declare.
        SplitOverlap: the adapter declares training subjects (spec ``trained_on``) that the
            evaluated split shares (:mod:`trb.subjects`).
        TransferProvenanceError: a transfer-split run with no ``trained_by`` recorded, or whose trainer
            collected one of the release's transfer contexts. Nothing is written.
        AdapterError: the adapter breaks its contract.
    """
    from trb.results import ResultsStore

    if not isinstance(spec, RunSpec):
        raise UsageError(f"run_tracks takes a RunSpec (trb.run_spec.RunSpec(release=..., baseline=...)), not "
                         f"{type(spec).__name__}")
    store = ResultsStore(Path(spec.results), create=False)  # an existing store is checked now, before any scoring
    bound = bind(adapter)
    the_runner = get_runner(spec.runner, **spec.runner_options)
    wanted, chosen = _chosen(spec)
    options = check_track_options(spec.track_options, chosen)
    trainer = trainers(list(spec.trained_by) or None, bound.spec().get("trained_by"))
    split = spec.split
    taskset = _taskset_of(spec, chosen)
    release = spec.release if isinstance(spec.release, Release) else Release(spec.release)
    try:
        taskset = _for_release(taskset, release, split)
        plan = _plan(release, bound, chosen, options, split, taskset, trainer, spec.allow_train_split)
        run = {
            "run_id": uuid.uuid4().hex,
            "created_at": datetime.now(timezone.utc).isoformat(timespec="microseconds"),
            "trb_version": release.manifest.get("trb_version", "0.1"),
            "release_sha": release.sha, "release_version": release.version, "release_kind": release.kind,
            "smoke_test": release.smoke_test, "baseline": spec.baseline, "adapter_tier": bound.tier,
            "adapter_spec": json.dumps(bound.spec(), sort_keys=True, default=str), "seed": spec.seed,
            "tracks": list(wanted), "split": split, "synthetic_share": release.synthetic_share,
            "timings": json.dumps({"plan": {**plan, "part_items": spec.part_items}, "track_options": options,
                                   "capabilities": sorted(bound.capabilities),
                                   "release_check": release.check.summary() if release.check is not None
                                   else {"checked": "not checked"}}, sort_keys=True, default=str),
            "toolkit_version": TOOLKIT_VERSION, "n_items": 0,
            "release_dir": str(Path(release.dir).resolve()),
            "taskset_sha": taskset.sha if taskset is not None else None,
            "taskset": json.dumps({**taskset.describe(), "greedy": spec.greedy}, sort_keys=True)
            if taskset is not None else None,
            "trained_by": trainer or None,
        }
        the_runner.start(bound.spec())
        try:
            store.begin_run(run)
            return _score_and_finish(store, run, release, bound, the_runner, plan, options, taskset, spec.greedy,
                                     spec.part_items, progress, done=[], flush_seconds=spec.flush_seconds)
        finally:
            the_runner.stop()
    finally:
        release.close()


def _chosen(spec: RunSpec) -> tuple[tuple[str, ...], list]:
    """The requested track ids (default: every registered track but the derived ones) and their tracks."""
    wanted = (tuple(k for k, t in registered_tracks().items() if not getattr(t, "derived", False))
              if spec.tracks is None else spec.tracks)
    if not wanted:
        raise UsageError("no track requested")
    return wanted, [get_track(t) for t in wanted]


def _taskset_of(spec: RunSpec, chosen):
    """The rollout task set of a run with a rollout track (the spec's, or the built-in one); None without one."""
    if not any(_from_tasks(t) for t in chosen):
        return None
    from environments.tasksets import TaskSet, default_taskset, load_taskset

    tasks = spec.tasks
    return tasks if isinstance(tasks, TaskSet) else default_taskset() if tasks is None else load_taskset(tasks)


def preflight(spec: RunSpec) -> dict[str, int]:
    """What ``spec`` would score, checked from the release and the task set alone, before any model is loaded
    (``trb run`` calls it first): each requested track's items on the split (track id -> count).

    Raises:
        ReleaseError: the release is missing, tampered with or incomplete.
        UsageError: an unknown or derived track, an option a track does not declare; a split the release does not
            have; the train split without ``allow_train_split``.
        NothingToScore: no requested track has an item any adapter could score, with the reason for each (no
            items in the split, and why: no counterfactuals, Φ pending on N kept out of held-out splits; or
            every item's reason) and the splits that have items (:mod:`trb.preflight`).
    """
    _, chosen = _chosen(spec)
    options = check_track_options(spec.track_options, chosen)
    taskset = _taskset_of(spec, chosen)
    opened = not isinstance(spec.release, Release)
    release = Release(spec.release) if opened else spec.release
    try:
        taskset = _for_release(taskset, release, spec.split)
        check_split(release, chosen, options, spec.split, spec.allow_train_split)
        return check_scorable(release, chosen, options, spec.split, taskset)
    finally:
        if opened:
            release.close()


def resume_run(run_id: str, *, results: str | os.PathLike = "results.duckdb",
               release_dir: str | os.PathLike | None = None, progress: bool = True, runner: str = "local",
               runner_options: dict | None = None, adapter=None,
               flush_seconds: float = DEFAULT_FLUSH_SECONDS) -> dict:
    """Finish run ``run_id``, killed before it was complete: score only the parts it has not stored.

    The run is re-created from its record (adapter spec, release, split, tracks, seed, task set, options, part
    size); its parts are the same ones (:mod:`trb.parts`), each scored with its own seed, so the finished run's
    item scores equal an uninterrupted run's. ``adapter``: the adapter to score with (default: re-created from
    the run's spec, which refuses a changed checkpoint); ``runner`` need not be the one the run started with.

    Raises:
        ResultsError: no such run, or it is complete already.
        ReleaseError: the release is missing or is not the one the run was made on.
        UsageError: the run's adapter cannot be re-created.
        CheckFailed: the stored parts are not the parts the work list gives now.
    """
    from trb.adapters.registry import adapter_from_spec
    from trb.results import COMPLETE, RUNNING, ResultsError, ResultsStore

    store = ResultsStore(Path(results), create=False).require()
    old = store.run(run_id)
    if (old.get("status") or COMPLETE) != RUNNING:
        raise ResultsError(f"run {old['run_id']} is complete: there is nothing to resume (`trb rerun` re-creates "
                           "a run to check it)")
    timings = old.get("timings") or {}
    recorded = timings.get("plan") or {}
    release = _recorded_release(old, release_dir)
    try:
        bound = bind(adapter) if adapter is not None else adapter_from_spec(old["adapter_spec"])
        the_runner = get_runner(runner, **(runner_options or {}))
        chosen = [get_track(t) for t in old["tracks"]]
        options = check_track_options(timings.get("track_options"), chosen)
        split = old["split"]
        taskset = _for_release(_recorded_taskset(old), release, split)
        plan = _plan(release, bound, chosen, options, split, taskset, trainers(old.get("trained_by"), None),
                     allow_train_split=split == "train")
        if plan["counts"] != recorded.get("counts"):
            raise CheckFailed(f"run {old['run_id']}: its tracks now have {plan['counts']} items, the run was "
                              f"planned with {recorded.get('counts')}: it cannot be resumed")
        greedy = bool((old.get("taskset") or {}).get("greedy"))
        run = {k: old[k] for k in ("run_id", "created_at", "trb_version", "release_sha", "release_version",
                                   "release_kind", "smoke_test", "baseline", "adapter_tier", "seed", "tracks",
                                   "split", "synthetic_share", "toolkit_version", "release_dir", "taskset_sha",
                                   "trained_by")}
        run["adapter_spec"] = json.dumps(old["adapter_spec"], sort_keys=True, default=str)
        run["taskset"] = json.dumps(old["taskset"], sort_keys=True) if old.get("taskset") is not None else None
        run["timings"] = json.dumps(timings, sort_keys=True, default=str)
        the_runner.start(bound.spec())
        try:
            return _score_and_finish(store, run, release, bound, the_runner, plan, options, taskset, greedy,
                                     int(recorded.get("part_items") or DEFAULT_PART_ITEMS), progress,
                                     done=store.parts(old["run_id"]), flush_seconds=check_flush_seconds(flush_seconds))
        finally:
            the_runner.stop()
    finally:
        release.close()


def _recorded_release(old: dict, release_dir) -> Release:
    """The release run ``old`` was made on, opened (and checked) from ``release_dir`` or where the run read it.

    Raises:
        UsageError: the run records no release directory and none is given.
        ReleaseError: the release there is missing, tampered with, or not the run's (another SHA).
    """
    from trb.errors import ReleaseError

    where = release_dir or old.get("release_dir")
    if not where:
        raise UsageError(f"run {old['run_id']} does not record its release directory; pass --release DIR")
    release = Release(where)
    if release.sha != old["release_sha"]:
        release.close()
        raise ReleaseError(f"{where} is release {release.sha[:12]}, but run {old['run_id']} was made on "
                           f"{str(old['release_sha'])[:12]}")
    return release


def _plan(release: Release, bound, chosen, options: dict, split: str, taskset, trainer, allow_train_split: bool
          ) -> dict:
    """What a run will score, checked before anything is written: {"counts": track -> items, "not_applicable":
    track -> summary, "split_check", "transfer_check"}.

    Raises the errors of :func:`run_tracks` (split, train split, provenance, nothing to score)."""
    check_split(release, chosen, options, split, allow_train_split)
    check_scorable(release, chosen, options, split, taskset)  # nothing any adapter could score: why, per track
    if split == "train":
        split_check = {"checked": False, "reason": "a train-split run (allowed explicitly): fit, not generalisation"}
    else:
        split_check = check_disjoint(bound.spec().get("trained_on"), release, split, bound.name)
    transfer_check = check_transfer_provenance(release, trainer, bound.name) if split == "transfer" else None
    not_applicable: dict[str, dict] = {}
    counts: dict[str, int] = {}
    for track in chosen:
        missing = bound.missing(track.needs)
        if missing:
            not_applicable[track.id] = {"status": "not_applicable", "needs": missing}
        elif getattr(track, "unavailable", None) is not None and track.unavailable(bound):
            # the adapter has the capability but not what the track needs of it (Track 2: concept directions)
            not_applicable[track.id] = {"status": "not_applicable", "needs": [], "reason": track.unavailable(bound)}
        else:
            counts[track.id] = track.count(taskset if _from_tasks(track) else release, split,
                                           **_with_release(track, release), **options.get(track.id, {}))
    if split == "transfer":
        _check_transfer_tasks(taskset, [t for t in chosen if _from_tasks(t) and t.id in counts], counts)
    if not counts:
        raise UsageError(f"no requested track can run on adapter {bound.name} on split {split!r}: " + "; ".join(
            f"track {t}: {not_applicable_text(s)}" for t, s in not_applicable.items()))
    if sum(counts.values()) == 0:
        raise UsageError(f"split {split!r} of release {release.version} ({release.sha[:12]}) has no items for "
                         f"track(s) {', '.join(counts)}: nothing to score; "
                         + items_by_split(release, [t for t in chosen if t.id in counts], options))
    return {"counts": counts, "not_applicable": not_applicable, "split_check": split_check,
            "transfer_check": transfer_check}


def _for_release(taskset, release: Release, split: str):
    """On a transfer-split run, the task set restricted to the release's transfer contexts (TaskSet.for_release)."""
    if taskset is None or split != "transfer":
        return taskset
    rows = release.rows("SELECT context_id FROM transfer ORDER BY context_id") if "transfer" in release.splits else []
    return taskset.for_release([r["context_id"] for r in rows])


def _check_transfer_tasks(taskset, rollout_tracks, counts: dict) -> None:
    """A transfer-split run of a rollout track needs tasks on the release's transfer contexts.

    Raises:
        UsageError: a requested rollout track has no task on any of the release's transfer contexts (naming them
            and the contexts the task set has tasks for)."""
    if not rollout_tracks:
        return
    cov = taskset.transfer_coverage() or {}
    empty = [t.id for t in rollout_tracks if counts.get(t.id, 0) == 0]
    if empty:
        raise UsageError(
            f"track(s) {', '.join(empty)} on the transfer split: task set {taskset.name} v{taskset.version} "
            f"({taskset.sha[:12]}) has no {'transfer task' if not taskset.seeds.get('transfer') else 'task'} for "
            f"any of the release's transfer contexts ({', '.join(cov.get('release_contexts') or ()) or 'none'}); "
            f"its transfer tasks are for: {', '.join(taskset.contexts()) or 'no context'}. Give a task set with "
            "tasks whose context is one of them (environments.tasksets: context = \"<id>\"), or leave Tracks 4 "
            "and 5 out of the transfer run")
    if cov.get("without_tasks"):
        print(f"trb run: the task set has no rollout task for transfer context(s) {', '.join(cov['without_tasks'])}"
              f": Tracks {', '.join(t.id for t in rollout_tracks)} are not scored there (recorded with the run)",
              file=sys.stderr)


def _score_and_finish(store, run: dict, release: Release, bound, the_runner, plan: dict, options: dict, taskset,
                      greedy: bool, part_items: int, progress: bool, done: list[dict],
                      flush_seconds: float = DEFAULT_FLUSH_SECONDS) -> dict:
    """Score the parts of ``run`` not in ``done`` (stored parts) with ``the_runner``, storing each as it comes;
    then mark the run complete with its summary and timings, and return it (as :func:`run_tracks` does)."""
    split, seed = run["split"], int(run["seed"] or 0)
    counts = plan["counts"]
    tracks = [get_track(t) for t in run["tracks"] if t in counts]
    stored = {(p["track"], int(p["part"])): p for p in done}
    kwargs = {t.id: ({"tasks": taskset, "split": split, "greedy": greedy} if _from_tasks(t)
                     else dict(options.get(t.id, {}))) for t in tracks}
    total = sum(counts.values())
    bar = tqdm(total=total, unit="item", desc=f"{run['baseline']} on {run['release_version']}",
               disable=None if progress else True, leave=False)
    bar.update(sum(int(p["n_input"]) for p in done))

    def todo():
        for t in tracks:
            source = taskset if _from_tasks(t) else release
            items = t.items(source, split, **_with_release(t, release), **options.get(t.id, {}))
            for part in cut_parts(t.id, items, part_key_of(t), part_items):
                had = stored.get((t.id, part.index))
                if had is None:
                    yield part
                elif (had["first_key"], int(had["n_input"])) != (part.first_key, part.n_input):
                    raise CheckFailed(f"run {run['run_id']}: stored part {t.id}/{part.index} starts at "
                                      f"{had['first_key']!r} with {had['n_input']} items, the work list now gives "
                                      f"{part.first_key!r} with {part.n_input}: it cannot be resumed")

    waiting: list = []  # scored parts not stored yet: stored together at most every flush_seconds
    last = [time.monotonic()]

    def record(r) -> dict:
        n_rows = r.rows.num_rows if hasattr(r.rows, "num_rows") else len(r.rows)
        return {"track": r.track, "part": r.index, "first_key": r.first_key, "n_input": r.n_input,
                "n_rows": n_rows, "items": r.rows, "summary": r.summary, "timings": r.timings}

    def stored_now(records: list[dict]) -> None:
        for r, rec in zip(waiting, records):
            stored[(r.track, r.index)] = {k: v for k, v in rec.items() if k != "items"}
            if r.source is not None:
                Path(r.source).unlink(missing_ok=True)
        waiting.clear()
        last[0] = time.monotonic()

    def flush() -> None:
        if waiting:
            records = [record(r) for r in waiting]
            store.record_parts(run["run_id"], records)
            stored_now(records)

    def keep(result) -> None:
        waiting.append(result)
        if time.monotonic() - last[0] >= flush_seconds:
            flush()

    parts_dir = store.path.with_name(store.path.name + ".parts")
    job = RunJob(run_id=run["run_id"], seed=seed, adapter_spec=bound.spec(), kwargs=kwargs, store=keep,
                 progress=bar.update, parts_dir=parts_dir)
    gc.freeze()  # the heap so far (imports, the model) is not garbage: full collections during scoring skip it
    try:
        the_runner.execute(job, bound, todo())
    except BaseException:
        try:
            flush()  # what was scored is kept, whatever stopped the run (a resume starts after it)
        except Exception:  # the store itself failed: the run's own error is the one to report
            pass
        raise
    finally:
        gc.unfreeze()
        bar.close()
    last_parts = [record(r) for r in waiting]  # stored with the run's completion, in one transaction
    parts = sorted([*stored.values(), *({k: v for k, v in p.items() if k != "items"} for p in last_parts)],
                   key=lambda p: (p["track"], int(p["part"])))
    summary: dict[str, dict] = dict(plan["not_applicable"])
    per_track_s: dict[str, float] = {}
    for t in tracks:
        mine = [p for p in parts if p["track"] == t.id]
        s = merge_summaries([p["summary"] for p in mine], getattr(t, "summary_constant", ()))
        left_out = _left_out(t, release, split, options)
        if left_out:  # items of the split the work list leaves out (Track 3: no label yet): counted, not dropped
            s = {**s, "skipped": {**(s.get("skipped") or {}), **left_out}}
        if options.get(t.id):
            s = {**s, "options": options[t.id]}
        summary[t.id] = s
        per_track_s[t.id] = sum(float(p["timings"]["wall_s"]) for p in mine)
    summary = {t: summary[t] for t in run["tracks"] if t in summary}
    ptimings = [p["timings"] for p in parts]
    emit = merge_summaries([pt["emit_r"] for pt in ptimings if "emit_r" in pt]) or None
    cot_edit = merge_summaries([pt["cot_edit"] for pt in ptimings if "cot_edit" in pt]) or None
    # not strict_json: JSON the results store holds was written by ResultsStore itself (json.dumps of a run's figures)
    before = json.loads(run["timings"]) if isinstance(run["timings"], str) else dict(run["timings"] or {})
    timings = {
        "wall_s": sum(per_track_s.values()), "adapter_s": sum(float(pt["adapter_s"]) for pt in ptimings),
        "adapter_calls": sum(int(pt["adapter_calls"]) for pt in ptimings), "per_track_s": per_track_s,
        "summary": summary, "capabilities": before.get("capabilities", sorted(bound.capabilities)),
        "split_check": plan["split_check"], "release_check": before.get("release_check"),
        "plan": before.get("plan"),
        "runner": {**job.facts, "parts": len(parts), "part_items": part_items, "flush_seconds": flush_seconds,
                   "resumed": bool(done)},
        **({"transfer_check": plan["transfer_check"]} if plan["transfer_check"] is not None else {}),
        **({"track_options": options} if options else {}),
        **({"emit_r": emit} if emit is not None else {}),
        **({"cot_edit": cot_edit} if cot_edit is not None else {}),
    }
    n_items = sum(int(p["n_rows"]) for p in parts)
    store.finish_run(run["run_id"], timings=timings, n_items=n_items, parts=last_parts)
    stored_now(last_parts)
    # every part is stored now: a runner's part files (and a killed driver's, if another runner resumed) go
    shutil.rmtree(parts_dir / run["run_id"], ignore_errors=True)
    try:
        parts_dir.rmdir()
    except OSError:  # not there, or holding another run's parts
        pass
    out = {**run, "timings": json.dumps(timings, sort_keys=True, default=str), "n_items": n_items,
           "status": "complete"}
    return {**out, "summary": summary}


def _left_out(track, release: Release, split: str, options: dict) -> dict[str, int]:
    """The track's items of ``split`` its work list leaves out, by reason (its optional ``left_out``)."""
    left_out = getattr(track, "left_out", None)
    if left_out is None or _from_tasks(track):
        return {}
    return {k: int(v) for k, v in left_out(release, split, **options.get(track.id, {})).items() if v}


def _from_tasks(track) -> bool:
    """A closed-loop track: its work list comes from a rollout task set, not the release."""
    return getattr(track, "source", "release") == "tasks"


def _with_release(track, release: Release) -> dict:
    """A rollout track that also reads the release (``with_release``: Track 4's interventions) is handed it as
    ``release=`` beside its task set."""
    return {"release": release} if _from_tasks(track) and getattr(track, "with_release", False) else {}


def _recorded_taskset(old: dict):
    """The task set a run was made with (its file, or the built-in one), checked against the recorded SHA."""
    from environments.tasksets import default_taskset, load_taskset

    if not old.get("taskset_sha"):
        return None
    info = old.get("taskset") or {}
    source = str(info.get("source") or "")
    # a built-in set by the file it was (runs made before v2 name grid-rollouts-v1.toml)
    ts = default_taskset(source.removesuffix(" (built in)").strip() or None) if source.endswith("(built in)") \
        else load_taskset(source)
    if info.get("derived_from"):  # the same tasks with other episode counts (TaskSet.with_seeds)
        if ts.sha != info["derived_from"]:
            raise UsageError(f"run {old['run_id']} used a task set derived from {info['derived_from'][:12]}, but "
                             f"{source or 'the built-in'} is now {ts.sha[:12]}: the run cannot be re-created from it")
        ts = ts.with_seeds(**info.get("seeds") or {})
    if ts.sha != old["taskset_sha"]:
        raise UsageError(f"run {old['run_id']} used task set {old['taskset_sha'][:12]}, but {source or 'the built-in'} "
                         f"is now {ts.sha[:12]}: the tasks changed, the run cannot be re-created from it")
    return ts


def rerun(run_id: str, *, results: str | os.PathLike = "results.duckdb", release_dir: str | os.PathLike | None = None,
          record: bool = False, progress: bool = True) -> dict:
    """Re-create run ``run_id`` from its record (adapter spec, release, split, tracks, seed) and compare.

    The adapter is rebuilt from the stored spec (:func:`trb.adapters.registry.adapter_from_spec`,
    which refuses a checkpoint that changed), the same tracks are scored on the same
    split with the same seed, and every item score is compared with the recorded one.
    With ``record`` the new run is kept in the store (as a new run id); otherwise it is
    written to a scratch store and dropped.

    Returns ``{"run_id", "new_run_id", "n_items", "n_equal", "n_differ", "max_abs_diff",
    "missing", "extra", "reproduced"}``.

    Raises:
        ResultsError: no such run.  UsageError: the run's adapter cannot be re-created.
        ReleaseError: the release is missing or its SHA differs from the recorded one.
        CheckFailed: the item scores were not reproduced exactly.
    """
    import math
    import tempfile

    from trb.adapters.registry import adapter_from_spec
    from trb.results import COMPLETE, ResultsError, ResultsStore

    store = ResultsStore(Path(results), create=False).require()  # a mistyped path is an error, never made
    old = store.run(run_id)
    if (old.get("status") or COMPLETE) != COMPLETE:
        raise ResultsError(f"run {old['run_id']} is unfinished: there is no result to re-create yet; finish it "
                           f"with `trb run --resume {old['run_id']}`")
    _recorded_release(old, release_dir).close()
    where = release_dir or old.get("release_dir")
    adapter = adapter_from_spec(old["adapter_spec"])
    with tempfile.TemporaryDirectory(prefix="trb-rerun-") as tmp:
        target = Path(results) if record else Path(tmp) / "rerun.duckdb"
        new = run_tracks(RunSpec.from_record(old, release=where, results=target, tasks=_recorded_taskset(old)),
                         adapter, progress=progress)
        fresh = ResultsStore(target).items(new["run_id"]).to_pylist()
    before = {(r["track"], r["metric"], r["item_id"]): r["score"] for r in store.items(old["run_id"]).to_pylist()}
    after = {(r["track"], r["metric"], r["item_id"]): r["score"] for r in fresh}
    common = sorted(set(before) & set(after))
    diffs = [abs(before[k] - after[k]) if before[k] is not None and after[k] is not None else math.inf
             for k in common if before[k] != after[k]]
    out = {"run_id": old["run_id"], "new_run_id": new["run_id"] if record else None, "n_items": len(before),
           "n_equal": len(common) - len(diffs), "n_differ": len(diffs), "max_abs_diff": max(diffs, default=0.0),
           "missing": len(set(before) - set(after)), "extra": len(set(after) - set(before))}
    out["reproduced"] = out["n_differ"] == 0 and out["missing"] == 0 and out["extra"] == 0
    if not out["reproduced"]:
        raise CheckFailed(f"run {old['run_id']} was not reproduced: {out['n_differ']} of {len(common)} item scores "
                          f"differ (max |Δ| {out['max_abs_diff']:.3g}), {out['missing']} missing, "
                          f"{out['extra']} extra")
    return out
