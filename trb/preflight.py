"""What a run can score, decided from the release (and the task set) alone, before any model is loaded.

``trb run`` asks it before it loads the adapter, and :func:`trb.run.run_tracks` again with the adapter in hand: a
split the release does not have, the train split without leave, and a run with nothing to score are refused
with the reason (no items in the split, and why: no counterfactuals, Φ pending on N kept out of the held-out
splits, items none of which any adapter can score, by reason) and the splits that have items.

A track may help it say why (all optional):

* ``empty_reason(release, split) -> str``: why the split has none of its items;
* ``pending(release, split) -> {state: n}``: items of the split in a state the user must know of (Track 1:
  ``{"Φ pending": n}``), shown beside its counts;
* ``skip_reason(item) -> str | None``: why no adapter can score an item of its work list (a key of its
  ``skipped`` counters), worded by its ``reasons`` mapping. The work list is read until one item can be
  scored, so a run with work reads little.
"""

from __future__ import annotations

from collections import Counter

from trb.errors import UsageError

__all__ = ["NothingToScore", "check_split", "check_scorable", "items_by_split"]


class NothingToScore(UsageError):
    """The run's split holds nothing the requested tracks can score; the message says why, track by track."""


def _from_tasks(track) -> bool:
    return getattr(track, "source", "release") == "tasks"


def _source(track, release, taskset):
    return taskset if _from_tasks(track) else release


def _with_release(track, release) -> dict:
    return {"release": release} if _from_tasks(track) and getattr(track, "with_release", False) else {}


def _count(track, release, taskset, split: str, options: dict) -> int:
    return track.count(_source(track, release, taskset), split, **_with_release(track, release),
                       **options.get(track.id, {}))


def _pending_text(track, release, split: str) -> str:
    pending = getattr(track, "pending", None)
    states = pending(release, split) if pending is not None and not _from_tasks(track) else {}
    said = [f"{what} on {n:,}" for what, n in states.items() if n]
    return f" ({', '.join(said)})" if said else ""


def items_by_split(release, tracks, options: dict) -> str:
    """Which splits of ``release`` have items of ``tracks`` (those read from the release), for an error message:
    ``splits with items: train (track 1: 120 (Φ pending on 12), track 3: 5); transfer (track 1: 40)``."""
    parts = []
    for s in release.splits:
        counts = {t: t.count(release, s, **options.get(t.id, {})) for t in tracks if not _from_tasks(t)}
        if any(counts.values()):
            parts.append(f"{s} (" + ", ".join(f"track {t.id}: {v}{_pending_text(t, release, s)}"
                                              for t, v in counts.items() if v) + ")")
    return "splits with items: " + ("; ".join(parts) or "none")


def check_split(release, chosen, options: dict, split: str, allow_train_split: bool) -> None:
    """Refuse a split the release does not have, and the train split without ``allow_train_split``.

    Raises:
        UsageError: either, naming the release's splits and those with items."""
    if split not in release.splits:
        raise UsageError(f"release {release.version} ({release.sha[:12]}) has no split {split!r}; "
                         f"its splits: {', '.join(release.splits) or 'none'}; " + items_by_split(release, chosen, options))
    if split == "train" and not allow_train_split:
        raise UsageError("the train split is what models are fitted on: scores there measure fit, not "
                         "generalisation, and never enter Δgov; pass --allow-train-split (allow_train_split=True) "
                         "to run it anyway (its report is bannered)")


def _unscorable(track, release, split: str, options: dict) -> Counter | None:
    """None when an item of the track's work list can be scored by some adapter; else its items by reason."""
    reason_of = getattr(track, "skip_reason", None)
    if reason_of is None or _from_tasks(track):
        return None
    reasons: Counter = Counter()
    for item in track.items(release, split, **options.get(track.id, {})):
        why = reason_of(item)
        if why is None:
            return None
        reasons[why] += 1
    return reasons


def check_scorable(release, chosen, options: dict, split: str, taskset) -> dict[str, int]:
    """Each requested track's items on ``split`` (track id -> count), when some item can be scored.

    Adapter-free: what an adapter lacks (a capability) is decided once it is loaded.

    Raises:
        NothingToScore: no track has an item any adapter could score, saying why for each track (no items in
            the split and why, or every item's reason for not being scorable) and which splits have items.
    """
    counts = {t.id: _count(t, release, taskset, split, options) for t in chosen}
    why: list[str] = []
    for t in chosen:
        n = counts[t.id]
        if n == 0:
            empty = getattr(t, "empty_reason", None)
            why.append(f"track {t.id}: " + (empty(release, split) if empty is not None and not _from_tasks(t)
                                             else f"no items in split {split!r}"))
            continue
        reasons = _unscorable(t, release, split, options)
        if reasons is None:
            return counts
        words = getattr(t, "reasons", None) or {}
        why.append(f"track {t.id}: {n:,} item(s){_pending_text(t, release, split)}, none scorable: "
                   + "; ".join(f"{words.get(r, r.replace('_', ' '))}: {k:,}" for r, k in reasons.most_common()))
    raise NothingToScore(f"split {split!r} of release {release.version} ({release.sha[:12]}) has nothing to score "
                         f"for track(s) {', '.join(counts)}: " + "; ".join(why) + "; "
                         + items_by_split(release, [t for t in chosen if not _from_tasks(t)], options))
