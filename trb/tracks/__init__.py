"""The tracks: a registry (:mod:`trb.tracks.base`) of one module per track, each registering itself."""

from trb.tracks.base import (
    Column,
    ItemRow,
    Metric,
    Track,
    all_metrics,
    get_track,
    item_columns,
    metric_by_key,
    register_track,
    registered_tracks,
)
from trb.tracks.track1 import Track1Item, score_track1, track1_items
from trb.tracks.track3 import Track3Item, score_track3, track3_items

__all__ = ["Track", "Metric", "Column", "ItemRow", "register_track", "registered_tracks", "get_track",
           "all_metrics", "metric_by_key", "item_columns",
           "Track1Item", "track1_items", "score_track1", "Track3Item", "track3_items", "score_track3"]
