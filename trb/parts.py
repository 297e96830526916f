"""A run's work in parts: what a runner scores, stores and resumes one at a time.

A track's work list (``track.items(...)``) is cut into **parts**: runs of consecutive items that
share a *part key* (by default the item's ``session_id``; a rollout track groups by task, so a
CG-2 loop and its reference stay together), closed at a key boundary once they hold at least
``size`` items. Every counterfactual of one context is thus in one part (an adapter that shares a
context's work across its items keeps that speed-up), and the cut depends on the work list alone:
the local and the Ray runner, an uninterrupted run and a resumed one, all score the same parts.

Each part is scored with its own seed (:func:`part_seed`, from the run's seed, the track and the
part's index), so what it scores does not depend on which parts were scored before it, or where.
Its item rows and summary are stored in one transaction (:meth:`trb.results.ResultsStore.record_part`);
the run's summary per track is the merge of its parts' (:func:`merge_summaries`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from trb.errors import CheckFailed

__all__ = ["DEFAULT_PART_ITEMS", "Part", "cut_parts", "part_key_of", "part_seed", "merge_summaries"]

#: Items per part (at least; a part ends at the next key boundary): large enough that storing a part costs
#: little beside scoring it, small enough that a kill loses little.
DEFAULT_PART_ITEMS = 256


@dataclass
class Part:
    """One part of a track's work list: its index (0, 1, ... in work-list order), the key of its first item,
    and its items."""

    track: str
    index: int
    first_key: str
    items: list

    @property
    def n_input(self) -> int:
        return len(self.items)


def part_key_of(track) -> Callable[[Any], str]:
    """The function giving an item's part key: the track's ``part_key`` if it has one, else ``session_id``."""
    own = getattr(track, "part_key", None)
    if own is not None:
        return own
    return lambda item: item.session_id


def cut_parts(track_id: str, items: Iterable, key: Callable[[Any], str], size: int = DEFAULT_PART_ITEMS
              ) -> Iterator[Part]:
    """``items`` as consecutive parts: a part closes at the first key change once it holds ``size`` items.

    Lazily: one part's items are in memory at a time. No items give one empty part (index 0), so a track with
    nothing to score still records its summary (what it skipped and why)."""
    if size < 1:
        raise ValueError("a part holds at least one item")
    index = 0
    current: list = []
    first = last = None
    for item in items:
        k = str(key(item))
        if current and len(current) >= size and k != last:
            yield Part(track_id, index, first, current)
            index += 1
            current = []
        if not current:
            first = k
        current.append(item)
        last = k
    if current or index == 0:
        yield Part(track_id, index, first or "", current)


def part_seed(seed: int, track_id: str, index: int) -> int:
    """The seed part ``index`` of ``track_id`` is scored with, from the run's ``seed``: a 63-bit integer."""
    digest = hashlib.sha256(f"trb-part:{int(seed)}:{track_id}:{int(index)}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def merge_summaries(summaries: list[dict], constant: tuple[str, ...] = ()) -> dict:
    """One track's summary from its parts' summaries, in part order.

    Counts add up (numbers, in nested dicts too); every other value (text, lists, flags) must be the same in
    every part that has it; a key under ``constant`` (the track's ``summary_constant``: figures of the whole
    run, such as Track 2's number of concepts) must be equal in every part, numbers included.

    Raises:
        CheckFailed: two parts disagree on a value that must be the same (a bug in a track or an adapter).
    """
    out: dict = {}
    for s in summaries:
        out = _merge(out, s, (), constant)
    return out


def _merge(a, b, path: tuple, constant: tuple[str, ...]):
    if isinstance(a, dict) and isinstance(b, dict):
        merged = dict(a)
        for k, v in b.items():
            merged[k] = _merge(a[k], v, (*path, k), constant) if k in a else v
        return merged
    fixed = any(p in constant for p in path)
    if _number(a) and _number(b) and not fixed:
        return a + b
    if a != b:
        where = "/".join(str(p) for p in path) or "(top)"
        raise CheckFailed(f"the parts of one track disagree on summary field {where}: {a!r} and {b!r}")
    return a


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)
