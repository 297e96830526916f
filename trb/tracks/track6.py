"""Track 6 — transfer: every headline figure of a release track on the eval split and on each held-out transfer
context, the drop to the worst context, the collapse and anti-Goodhart rules (spec §3, §5).

Track 6 scores no item of its own: a baseline's Track 6 is computed by ``trb report`` from its eval-split run and
its transfer-split run (``trb run --split transfer --trained-by ORG``). It is registered like the other tracks,
as a derived track (``derived = True``: ``trb run`` does not run it), and it adds to the report through its
``report`` section (:mod:`trb.tracks.track6_report`): the profile vector's ``trans`` entry, the report's
``track6`` block and the Track 6 section. The statistics are :mod:`trb.transfer`'s."""

from __future__ import annotations

from trb.tracks.base import Metric

__all__ = ["Track6", "TRACK"]


class Track6:
    """Track 6 on the registry: derived from other tracks' runs on the eval and transfer splits, never run itself."""

    id = "6"
    name = "transfer"
    section = "TRB spec §3, Track 6 (transfer and the anti-Goodhart line)"
    derived = True
    needs: tuple[type, ...] = ()
    metrics: tuple[Metric, ...] = ()
    columns: tuple = ()
    report = "trb.tracks.track6_report:SECTION"


#: The entry point ``trb.tracks: 6`` (pyproject.toml): registered by the registry when it loads it.
TRACK = Track6()
