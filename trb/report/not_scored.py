"""What a run did not score, by reason, as the report shows it: every ``skipped`` counter of the run's summary that
is not 0, and the items a track's headline waits for (Track 1: Φ pending). A run with nothing of the kind has no
block, so a report of such runs is what it always was."""

from __future__ import annotations

from trb.report.common import _timings
from trb.tracks.base import registered_tracks

__all__ = ["not_scored", "not_scored_lines"]


def not_scored(run: dict) -> dict | None:
    """``{track: {"skipped": {reason: n}, "reasons": {reason: words}, "waiting": words}}`` for each track of the
    run with an item not scored or waiting; None when there is none."""
    tracks = registered_tracks()
    out: dict[str, dict] = {}
    for tid, s in (_timings(run).get("summary") or {}).items():
        if not isinstance(s, dict):
            continue
        skipped = {k: int(v) for k, v in (s.get("skipped") or {}).items() if isinstance(v, (int, float)) and v}
        track = tracks.get(str(tid))
        waiting = getattr(track, "waiting", None)
        wait = waiting(s) if waiting is not None else None
        if not skipped and not wait:
            continue
        words = getattr(track, "reasons", None) or {}
        entry: dict = {"skipped": skipped, "reasons": {k: words.get(k, k.replace("_", " ")) for k in skipped}}
        if wait:
            entry["waiting"] = wait
        out[str(tid)] = entry
    return out or None


def not_scored_lines(table: dict) -> list[str]:
    """One line per baseline row of ``table`` with items not scored or waiting: what, how many, why."""
    lines = []
    for base in table["baselines"]:
        for tid, entry in (base.get("not_scored") or {}).items():
            parts = [entry["waiting"]] if entry.get("waiting") else []
            parts += [f"{n:,} not scored: {entry['reasons'][k]}" for k, n in entry["skipped"].items()]
            lines.append(f"{base['name']} ({base['split']}), track {tid}: " + "; ".join(parts))
    return lines
