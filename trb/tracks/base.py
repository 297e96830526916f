"""The track registry: one :class:`Track` protocol, one registry, everything else derived from it.

A track is one module (``trb/tracks/trackN.py``) with one object that implements
:class:`Track` and registers itself with :func:`register_track`. ``trb run`` (what to
score), the results store's ``item_scores`` columns, ``trb report`` (which figures,
how aggregated, how titled) and the review app's results screen all read the
registry, so they cannot disagree.

A track declares:

* ``id``, ``name``, ``section`` (where the spec defines it);
* ``needs``: the adapter capabilities (:mod:`trb.adapters.capabilities`) without which
  it cannot run at all (a run records it as "not applicable (needs X)");
* ``metrics``: the figures it reports, each a :class:`Metric` (stored metric name,
  report key, title, definition, estimator, whether it is the track's headline);
* ``columns``: the ``item_scores`` columns it fills beyond the common ones;
* ``count(source, split)`` and ``items(source, split)``: its work list, from the release, or, for a
  track whose ``source`` is ``"tasks"`` (the closed-loop Tracks 4 and 5), from the rollout task set
  the run was given (:mod:`environments.tasksets`); such a track's ``score`` also takes
  ``tasks=`` and ``split=``; one that declares ``with_release = True`` (Track 4: the release's
  interventions beside the task set's episodes) is also handed ``release=`` in ``count`` and ``items``;
* ``score(adapter, items, timer, progress)``: item rows (:class:`ItemRow`) and a summary;
* ``aggregate(metric, columns, ...)``: an :class:`~trb.stats.Estimate` for one metric
  from that metric's item columns (session bootstrap);
* optionally ``unavailable(bound_adapter)``: why an adapter that has the track's capabilities still
  cannot run it now (Track 2: no concept directions); the run records it as not applicable with that reason;
* optionally ``describe(metric, columns)``: what the report shows beside a figure (e.g.
  ``flags`` for a degenerate predictor, a belief distribution, a reliability table);
* optionally, so that nothing is left out silently (:mod:`trb.preflight`, the run record, the report):
  ``skip_reason(item)`` (why no adapter can score an item of its work list: a key of its summary's ``skipped``
  counters, or None), ``reasons`` (those keys in words), ``empty_reason(release, split)`` (why the split has none
  of its items), ``pending(release, split)`` (items in a state the user must know of, ``{"Φ pending": n}``),
  ``left_out(release, split)`` (items of the split its work list leaves out, by reason: added to the run's
  ``skipped``) and ``waiting(summary)`` (what its headline waits for on a run's items, in words: Track 1's Φ);
* optionally ``report``: its report section, as ``"package.module:NAME"`` (its own sections, pass bars, JSON
  block and what its figures carry; :mod:`trb.report.sections`), loaded by the report only: a track module
  never imports the report.

A **derived** track (``derived = True``: Track 6) scores no item of its own; the report computes it from other
tracks' runs through its ``report`` section. It has ``id``, ``name``, ``section`` and ``report`` (and empty
``needs``, ``metrics`` and ``columns``); ``trb run`` never runs it, and refuses it by name.

Several metrics may read the same items (``Metric.metric``): Track 1's G, its reference
points and its ceiling are all figures of the ``tv`` items, each from its own column
(``Metric.requires``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypedDict, runtime_checkable

import numpy as np
import pyarrow as pa

from trb.context import StepContext
from trb.verdicts import FlagRule

__all__ = [
    "Metric",
    "Column",
    "ItemRow",
    "StepItem",
    "Track",
    "COMMON_COLUMNS",
    "register_track",
    "get_track",
    "registered_tracks",
    "all_metrics",
    "metric_by_key",
    "item_columns",
    "track_problems",
    "ENTRY_POINT_GROUP",
]


@dataclass(frozen=True)
class Column:
    """One ``item_scores`` column: name, Arrow type, DuckDB type, what it holds."""

    name: str
    arrow: pa.DataType
    sql: str
    description: str


@dataclass(frozen=True)
class Metric:
    """One figure a track reports.

    Attributes:
        key: the report's key (``"1"``, ``"1-llr"``, ``"3"``): unique across tracks.
        track: the track id.
        metric: the value of ``item_scores.metric`` for its items.
        title: the column/panel title.
        definition: what the number is, in one line.
        headline: the track's headline figure: shown for every run (a missing one is
            "not run"); other metrics appear only where they have items.
        bounds: the figure's range, when it has one (plots use it).
        chance: the value of a chance-level model, when there is one (plots draw it).
        needs: capabilities without which this metric's items cannot be scored.
        requires: the item column the figure is computed from, beyond ``score``; a run whose
            items lack it (an older run) does not show the figure.
        main: whether the report shows it in its main table (None: its default rule).
        verdict: the flag the report decides on this figure (:class:`trb.verdicts.FlagRule`), by its interval
            against a threshold, never its point value; None: no verdict.
    """

    key: str
    track: str
    metric: str
    title: str
    definition: str
    headline: bool = True
    bounds: tuple[float, float] | None = None
    chance: float | None = None
    needs: tuple[type, ...] = ()
    requires: str | None = None
    #: In the report's main table and the plot (None: the default rule of ``trb.report``: headlines, and figures of
    #: other items than the headline's); False sends it to the second table.
    main: bool | None = None
    verdict: FlagRule | None = None


@dataclass
class StepItem:
    """One step of a release split and the context the adapter is handed: what every release-based track's work
    items carry (a track's item class adds what it scores against)."""

    item_id: str
    session_id: str
    t: int
    split: str
    context_id: str | None
    context: StepContext


class ItemRow(TypedDict, total=False):
    """One scored item, as written to ``item_scores`` (``run_id`` is filled by the store)."""

    track: str
    metric: str
    item_id: str
    session_id: str
    t: int | None
    split: str | None
    context_id: str | None
    score: float | None
    detail: str | None  # JSON
    # track-specific columns (declared in Track.columns)
    label: str | None
    predicted: str | None
    belief: float | None
    origin: str | None
    adversarial: bool | None
    ood: bool | None
    g_own: float | None
    g_uniform: float | None
    r_sensitive: float | None
    llr_planned: float | None
    phi_n: int | None
    g_ceiling: float | None
    condition: str | None
    steps: int | None
    brier_sum: float | None
    n_conf: int | None
    confidences: str | None
    r_change: float | None
    concept: str | None
    site: str | None
    site_rank: int | None
    strength: float | None
    cos_max: float | None


#: The columns every track fills (besides ``run_id``).
COMMON_COLUMNS: tuple[Column, ...] = (
    Column("track", pa.string(), "VARCHAR NOT NULL", "the track id"),
    Column("metric", pa.string(), "VARCHAR NOT NULL", "the track's metric this item counts toward"),
    Column("item_id", pa.string(), "VARCHAR NOT NULL", "the release's id of the item"),
    Column("session_id", pa.string(), "VARCHAR NOT NULL", "the item's session (the bootstrap unit)"),
    Column("t", pa.int32(), "INTEGER", "the step"),
    Column("split", pa.string(), "VARCHAR", "the release split"),
    Column("context_id", pa.string(), "VARCHAR", "the session's context"),
    Column("score", pa.float64(), "DOUBLE", "the item's score (its meaning is the metric's)"),
)
DETAIL_COLUMN = Column("detail", pa.string(), "VARCHAR", "JSON: what the adapter returned and what it was scored against")


@runtime_checkable
class Track(Protocol):
    """A track of the spec (§3), as the engine runs it."""

    id: str
    name: str
    section: str
    needs: tuple[type, ...]
    metrics: tuple[Metric, ...]
    columns: tuple[Column, ...]

    def count(self, release, split: str, **options) -> int:
        """How many items ``items(release, split, **options)`` yields (for progress and the empty-split check)."""
        ...

    def items(self, release, split: str, **options) -> Iterator[Any]:
        """The work list: every item of ``split``, with the context the adapter is handed.

        ``options`` are the run's options for this track (``RunSpec(track_options=...)``), each one the track
        declares in its ``options`` (a tuple of :class:`trb.options.Option`, each a ``trb run`` flag; or a mapping
        of name to meaning, offered by the library only; a track without it takes none). They are recorded
        with the run, so ``trb rerun`` re-creates the same work. ``count``, ``items`` and ``score`` are all handed
        them; each uses its own.
        """
        ...

    def score(self, adapter, items: Iterable[Any], timer=None,
              progress: Callable[[int], None] | None = None) -> tuple[list[ItemRow], dict]:
        """Score ``items`` through ``adapter`` (a :class:`~trb.adapters.capabilities.BoundAdapter`).

        Returns the item rows and a summary (``scored``, and counts of what was not
        scored, by reason). Raises AdapterError when the adapter breaks its contract.
        """
        ...

    def aggregate(self, metric: Metric, columns: Mapping[str, np.ndarray], *, n_resamples: int,
                  confidence: float, seed: int):
        """The :class:`~trb.stats.Estimate` of ``metric`` from its items' columns (numpy arrays by
        column name; ``n_resamples`` 0 gives the point value without an interval).

        Raises ValueError when the figure is undefined on these items."""
        ...


_TRACKS: dict[str, Track] = {}


def register_track(track: Track) -> Track:
    """Add ``track`` to the registry (its id and metric keys must be new). Returns it, so it can decorate."""
    if not isinstance(track, Track) and not (getattr(track, "derived", False) and getattr(track, "report", None)):
        raise TypeError(f"{track!r} does not implement the Track protocol (nor is it a derived track with a report)")
    if track.id in _TRACKS and _TRACKS[track.id] is not track:
        raise ValueError(f"track {track.id!r} is already registered")
    keys = {m.key for t in _TRACKS.values() if t is not track for m in t.metrics}
    for m in track.metrics:
        if m.key in keys:
            raise ValueError(f"metric key {m.key!r} of track {track.id} is already used")
        if m.track != track.id:
            raise ValueError(f"metric {m.key!r} says track {m.track!r}, registered under {track.id!r}")
    _TRACKS[track.id] = track
    return track


def unregister_track(track_id: str) -> None:
    """Remove a track (tests register throw-away tracks)."""
    _TRACKS.pop(track_id, None)


def registered_tracks() -> dict[str, Track]:
    """Every registered track by id, in id order (the entry-point group's, loaded on first use, and any
    registered in-process)."""
    _load_plugins()
    return {k: _TRACKS[k] for k in sorted(_TRACKS, key=lambda k: (len(k), k))}


def get_track(track_id: str) -> Track:
    tracks = registered_tracks()
    if track_id not in tracks:
        from trb.errors import UsageError

        raise UsageError(f"track {track_id!r} is not available (available: {', '.join(tracks)})")
    return tracks[track_id]


def all_metrics() -> list[Metric]:
    """Every metric of every registered track, track by track, in declaration order."""
    return [m for t in registered_tracks().values() for m in t.metrics]


def metric_by_key(key: str) -> Metric:
    for m in all_metrics():
        if m.key == key:
            return m
    raise KeyError(key)


def item_columns() -> tuple[Column, ...]:
    """The ``item_scores`` columns after ``run_id``: common ones, then each track's, then ``detail``."""
    out = list(COMMON_COLUMNS)
    seen = {c.name: c for c in out}
    for track in registered_tracks().values():
        for c in track.columns:
            if c.name in seen:
                if (seen[c.name].arrow, seen[c.name].sql) != (c.arrow, c.sql):
                    raise ValueError(f"track {track.id} declares column {c.name} as {c.sql}, already {seen[c.name].sql}")
                continue
            seen[c.name] = c
            out.append(c)
    out.append(DETAIL_COLUMN)
    return tuple(out)


#: The entry-point group of tracks: the built-ins (Tracks 1–6) are listed under it in pyproject.toml, as a lab's
#: package lists its own (``[project.entry-points."trb.tracks"] my-track = "my_pkg.track:TRACK"``).
ENTRY_POINT_GROUP = "trb.tracks"
_PLUGINS: dict[str, Any] = {"loaded": False, "problems": ()}


def _load_entry(name: str, value: str, source: str):
    from toolkit.plugins import PluginError, load_object

    track = load_object("track", name, value, source)
    try:
        return register_track(track)
    except (TypeError, ValueError) as e:
        raise PluginError(f"track {name!r} ({value}, from {source}) cannot be registered: {e}") from e


def _load_plugins() -> tuple[str, ...]:
    """Load every track of the entry-point group once (each registers as it loads); the problems."""
    from toolkit.plugins import discover_once

    return discover_once(_PLUGINS, ENTRY_POINT_GROUP, _load_entry, "track")


def track_problems() -> tuple[str, ...]:
    """Tracks that were found but could not be loaded or registered, as messages."""
    return _load_plugins()
