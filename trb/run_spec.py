"""What one run is, apart from the model: :class:`RunSpec`, the one argument :func:`trb.run.run_tracks` takes
besides the adapter.

A spec is checked when it is made (a bad part size or flush interval is refused before any release or model is
opened), is the same whether it comes from ``trb run``'s flags or a lab's script, and is re-made from a run's
record by :meth:`RunSpec.from_record` (``trb rerun``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from trb.errors import UsageError
from trb.options import option_names
from trb.parts import DEFAULT_PART_ITEMS

__all__ = ["RunSpec", "DEFAULT_FLUSH_SECONDS", "check_track_options", "check_flush_seconds"]

#: Scored parts are stored together at most this often (seconds): a kill loses at most this much work, and
#: the store is opened about once per interval, not once per part.
DEFAULT_FLUSH_SECONDS = 10.0


@dataclass(frozen=True)
class RunSpec:
    """One run: which release and split, which tracks, where the scores go, with what seed, scored where.

    Attributes:
        release: a release directory, or an open :class:`~trb.releases.Release` (whose files were checked when it
            was opened; the run closes it).
        baseline: the name the run is reported under (spec §4's baselines, or a lab's own).
        tracks: track ids (a tuple, or ``"1,3"``); None or ``"all"``: every registered track that is run on its own.
        split: a split of the release (``eval``; ``transfer``; ``train`` only with ``allow_train_split``).
        results: the results store (a DuckDB file; made if absent).
        seed: the run's seed; each part is scored with a seed derived from it (:func:`trb.parts.part_seed`).
        allow_train_split: allow ``split="train"`` (its scores measure fit; the report banners them).
        tasks: Tracks 4 and 5's task set: a :class:`~environments.tasksets.TaskSet`, a TOML file, or None (the
            built-in one).
        greedy: Tracks 4 and 5 take the most probable action instead of drawing it.
        trained_by: who trained the model (organisations), added to the adapter spec's own ``trained_by``; a
            transfer-split run needs it (spec §5).
        track_options: track id -> that track's options (each one the track declares), e.g. ``{"2":
            {"max_contexts": 40}}``; recorded with the run.
        runner: where the parts are scored (the runner registry: ``local``, ``ray``, or a lab's).
        runner_options: the runner's options (each one it declares), e.g. ``{"workers": 4}``.
        part_items: items per part, at least (whole sessions); each part is stored as soon as it is scored
            (None: the default, 256).
        flush_seconds: scored parts are stored together at most this often (0: each at once; None: the default,
            10 s).

    Raises:
        UsageError: ``part_items`` below 1; ``flush_seconds`` not a number of seconds, negative or NaN; a track id
            list with nothing in it; an unknown track, or a derived one (Track 6, computed by the report); track
            options for a track not run, or an option a track does not declare.
    """

    release: Any
    baseline: str
    tracks: tuple[str, ...] | None = None
    split: str = "eval"
    results: str | os.PathLike = "results.duckdb"
    seed: int = 0
    allow_train_split: bool = False
    tasks: Any = None
    greedy: bool = False
    trained_by: tuple[str, ...] = ()
    track_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    runner: str = "local"
    runner_options: Mapping[str, Any] = field(default_factory=dict)
    part_items: int | None = DEFAULT_PART_ITEMS
    flush_seconds: float | None = DEFAULT_FLUSH_SECONDS

    def __post_init__(self) -> None:
        set_ = object.__setattr__  # frozen: normalise once, here
        set_(self, "tracks", _tracks(self.tracks))
        set_(self, "trained_by", _names(self.trained_by))
        set_(self, "track_options", {str(k): dict(v) for k, v in (self.track_options or {}).items() if v})
        set_(self, "runner_options", {k: v for k, v in (self.runner_options or {}).items() if v is not None})
        if self.part_items is None:
            set_(self, "part_items", DEFAULT_PART_ITEMS)
        if self.flush_seconds is None:
            set_(self, "flush_seconds", DEFAULT_FLUSH_SECONDS)
        if isinstance(self.part_items, bool) or not isinstance(self.part_items, int) or self.part_items < 1:
            raise UsageError(f"--part-items must be a whole number of at least 1, not {self.part_items!r}")
        set_(self, "flush_seconds", check_flush_seconds(self.flush_seconds))
        from trb.tracks.base import get_track, registered_tracks

        chosen = ([t for t in registered_tracks().values() if not getattr(t, "derived", False)]
                  if self.tracks is None else [get_track(t) for t in self.tracks])  # an unknown track: refused now
        for track in chosen:
            if getattr(track, "derived", False):
                raise UsageError(f"Track {track.id} ({track.name}) is not run on its own: `trb report` computes it "
                                 "from a baseline's runs on the eval split and on the transfer split "
                                 "(`trb run --split transfer --trained-by ORG`)")
        check_track_options(self.track_options, chosen)  # an option for a track not run, or one it does not declare

    def with_(self, **changes) -> RunSpec:
        """This spec with ``changes`` (checked again)."""
        return replace(self, **changes)

    @classmethod
    def from_record(cls, run: Mapping[str, Any], *, release=None, results: str | os.PathLike = "results.duckdb",
                    tasks=None) -> RunSpec:
        """The spec of recorded run ``run`` (a results-store run row, as :meth:`~trb.results.ResultsStore.run`
        gives it): the same release (``release``, or where the run read it), split, tracks, seed, task set
        (``tasks``, the recorded one re-opened by the caller), greedy flag, trainers and track options; the
        results go to ``results``; the runner is the local one."""
        return cls(release=release or run.get("release_dir"), baseline=run["baseline"],
                   tracks=tuple(run.get("tracks") or ()) or None, split=run["split"], results=results,
                   seed=int(run.get("seed") or 0), allow_train_split=run["split"] == "train", tasks=tasks,
                   greedy=bool((run.get("taskset") or {}).get("greedy")), trained_by=run.get("trained_by") or (),
                   track_options=(run.get("timings") or {}).get("track_options") or {})


def _tracks(tracks) -> tuple[str, ...] | None:
    if tracks is None:
        return None
    if isinstance(tracks, str):
        if tracks.strip() == "all":
            return None
        tracks = tracks.split(",")
    out = tuple(str(t).strip() for t in tracks if str(t).strip())
    if not out:
        raise UsageError("no track requested")
    return out


def _names(names) -> tuple[str, ...]:
    if names is None:
        return ()
    if isinstance(names, str):
        return (names,)
    return tuple(names)


def check_flush_seconds(seconds) -> float:
    """``seconds`` as a flush interval: a number, 0 or more.

    Raises:
        UsageError: not a number of seconds, negative or NaN.
    """
    try:
        value = float(seconds)
    except (TypeError, ValueError):
        raise UsageError(f"--flush-seconds must be a number of seconds, not {seconds!r}") from None
    if math.isnan(value) or value < 0:
        raise UsageError(f"--flush-seconds must be 0 or more, not {seconds!r}")
    return value


def check_track_options(track_options: dict | None, chosen) -> dict[str, dict]:
    """``track_options`` checked against the chosen tracks' declared options: {track id: {option: value}}.

    Raises:
        UsageError: options for a track not run, or an option the track does not declare.
    """
    out: dict[str, dict] = {}
    by_id = {t.id: t for t in chosen}
    for tid, opts in (track_options or {}).items():
        tid = str(tid)
        if tid not in by_id:
            raise UsageError(f"options given for track {tid}, which this run does not include "
                             f"(tracks: {', '.join(by_id)})")
        declared = option_names(getattr(by_id[tid], "options", None))
        for name in opts or {}:
            if name not in declared:
                raise UsageError(f"track {tid} has no option {name!r}"
                                 + (f" (its options: {', '.join(declared)})" if declared else " (it takes none)"))
        if opts:
            out[tid] = dict(opts)
    return out
