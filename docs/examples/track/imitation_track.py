"""A track: how much probability the model gives the action the subject actually took (imitation).

Registered in-process with ``register_track``: import this module before ``run_tracks`` or ``build_report`` (a
package would list it under the ``trb.tracks`` entry-point group instead, for the ``trb`` command line). Its report section is named in ``report``, as
``"module:NAME"``, and loaded by the report only.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import orjson

from trb.adapters.capabilities import bind
from trb.stats import mean_by_session
from trb.tracks.base import ItemRow, Metric, StepItem, register_track

__all__ = ["ImitationTrack", "TRACK", "SECTION"]

TRACK_ID = "90"


@dataclass
class ImitationItem(StepItem):
    action: str  # the action the subject took at this step


class ImitationTrack:
    id = TRACK_ID
    name = "imitation"
    section = "an example track (not in the spec)"
    needs: tuple = ()  # adapter capabilities it cannot run without
    metrics = (Metric("imitation", TRACK_ID, "imitation", "Track 90 — imitation",
                      "mean probability the model gives the recorded action at a step", bounds=(0.0, 1.0)),)
    columns: tuple = ()  # item_scores columns beyond the common ones
    report = "imitation_track:SECTION"

    def items(self, release, split: str) -> Iterator[ImitationItem]:
        for sess in release.sessions(split):
            for step in sess.steps:
                if step["action_space"] and step["action"] in step["action_space"]:
                    t = step["t"]
                    yield ImitationItem(f"{sess.session_id}.t{t}", sess.session_id, t, sess.split,
                                        sess.context_id, sess.context(t), step["action"])

    def count(self, release, split: str) -> int:
        return sum(1 for _ in self.items(release, split))

    def score(self, adapter, items, timer=None, progress=None) -> tuple[list[ItemRow], dict]:
        items = list(items)
        probs = bind(adapter).act_many([i.context for i in items], [None] * len(items))
        rows: list[ItemRow] = [
            {"track": TRACK_ID, "metric": "imitation", "item_id": i.item_id, "session_id": i.session_id, "t": i.t,
             "split": i.split, "context_id": i.context_id, "score": float(p.get(i.action, 0.0)),
             "detail": orjson.dumps({"action": i.action, "p": p}).decode()}
            for i, p in zip(items, probs)]
        if progress is not None:
            progress(len(items))
        return rows, {"scored": len(rows)}

    def aggregate(self, metric, columns, *, n_resamples: int, confidence: float, seed: int):
        return mean_by_session(columns["score"].astype(float), columns["session_id"], n_resamples=n_resamples,
                               confidence=confidence, seed=seed)


class ImitationSection:
    """What the track adds to the report: a section of its own (placed by ``position``)."""

    position = 30  # after Track 2's sections (20), before the profile vector (50)

    def markdown(self, report, **_) -> list[str]:
        return ["## Track 90 — imitation", "",
                "The mean probability each model gives the action the subject took (see the tables above).", ""]

    def html(self, report, **_) -> str:
        return "<h2>Track 90 — imitation</h2>"


SECTION = ImitationSection()
TRACK = register_track(ImitationTrack())
