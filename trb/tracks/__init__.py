"""The tracks: work lists built from a release, and item scoring through the adapter hooks."""

from trb.tracks.track1 import Track1Item, score_track1, track1_items
from trb.tracks.track3 import Track3Item, score_track3, track3_items

__all__ = ["Track1Item", "track1_items", "score_track1", "Track3Item", "track3_items", "score_track3"]
