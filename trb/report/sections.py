"""What a track adds to the report, through the track registry: its sections, its pass bars, its block of the
report's JSON, and what its figures carry.

A track names its report section in its ``report`` attribute, as ``"package.module:NAME"`` (the form of an entry
point): the track's module never imports the report package, and the report loads the section when it builds or
renders a report. A new track adds its report this way without an edit here. The section is an object with any
of these (each optional):

* ``position`` (an int) with ``markdown(report, profiles_path=...) -> list[str]`` and
  ``html(report, profiles_svg=...) -> str``: the track's sections, placed after Δgov by position among the
  others; the profile vector's own section sits at :data:`PROFILE_VECTOR_POSITION` (Track 2's sections come
  before it, Track 6's after it);
* ``key`` with ``build(ctx) -> dict``: the report's ``report[key]`` block, built after the profile vectors,
  sections in position order (``ctx.report`` holds what is built so far);
* ``pass_bars(ctx, split, rows) -> list[dict]``: its pass-bar comparisons on a held-out split, after the report's
  own (Track 1 against cot-sft, Track 3 native against proxy, the Δgov falsifier);
* ``entry_extra(metric, columns) -> dict`` and ``entry_label(metric, run) -> dict``: what one of its figures'
  entries carries besides the estimate (Track 2: the default site; the proxy-tier label);
* ``tier_title(metric, tier) -> str | None``: the figure's title for an adapter of ``tier`` where it differs;
* ``vector_needs(recorded_capabilities) -> str | None``: why its profile-vector entry is not applicable to a
  baseline whose recorded capabilities lack what the track needs;
* ``vector_entry`` (a profile-vector entry name) with ``vectors(ctx, names) -> {baseline: entry}``,
  ``vector_text(entry)``, ``vector_alarm(entry)`` and ``profile_point(entry)``: a profile-vector entry the track
  computes itself (Track 6's ``trans``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from trb.results import ResultsStore
from trb.tracks.base import registered_tracks

__all__ = ["ReportContext", "report_sections", "section_of", "positioned_sections", "PROFILE_VECTOR_POSITION"]

#: Where the profile vector's table (and its plot) stands among the tracks' sections.
PROFILE_VECTOR_POSITION = 50


@dataclass
class ReportContext:
    """What a section's ``build``, ``pass_bars`` and ``vectors`` are handed."""

    store: ResultsStore
    #: (baseline, split) -> the latest run of that baseline on that split
    latest: dict[tuple[str, str], dict]
    n_resamples: int
    seed: int
    #: every baseline row of every split table, in report order (filled as the tables are built)
    baselines: list[dict] = field(default_factory=list)
    #: the report as built so far (``build`` hooks see the tables, Δgov and the profile vectors)
    report: dict[str, Any] = field(default_factory=dict)


_LOADED: dict[str, Any] = {}


def _load(ref: str):
    if ref not in _LOADED:
        module, _, name = ref.partition(":")
        _LOADED[ref] = getattr(importlib.import_module(module), name)
    return _LOADED[ref]


def report_sections() -> list[tuple[str, Any]]:
    """(track id, section) of every registered track that has one, in the registry's order."""
    out = []
    for track_id, track in registered_tracks().items():
        ref = getattr(track, "report", None)
        if ref:
            out.append((track_id, _load(ref)))
    return out


def section_of(track_id: str):
    """The report section of a track (None: it has none)."""
    return next((s for t, s in report_sections() if t == track_id), None)


def positioned_sections(core: list[tuple[int, Any]]) -> list[Any]:
    """The report's own sections (``(position, section)``) and the tracks' sections with a ``position``, in
    position order (a track's before the report's own at the same position)."""
    tracks = [(s.position, 0, s) for _, s in report_sections() if hasattr(s, "position")]
    return [s for *_, s in sorted(tracks + [(p, 1, s) for p, s in core], key=lambda x: (x[0], x[1]))]
