"""What an adapter is handed holds nothing the item scores (issue 12 item 1).

A "copycat" adapter looks for any recorded self-report in what it is given and
answers with it: Track 3 with the latest recorded caused_by_self it can find, Track 1
with the latest recorded planned_next. On the simulated release the subject's
self-report made after an outcome predicts that outcome's label well (the test
checks this on the release itself, so the leak it guards against is real); through
the engine the copycat gets chance, because no context holds a self-report made
after the outcome it attributes, nor the r_t of the step it acts at.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from engine_helpers import make_release
from sklearn.metrics import balanced_accuracy_score, roc_auc_score

from trb.beliefs import roc_auc_by_session
from trb.releases import Release
from trb.stats import balanced_accuracy_by_session
from trb.tracks.track1 import score_track1, track1_items
from trb.tracks.track3 import score_track3, track3_items


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    return make_release(tmp_path_factory.mktemp("leak-rel"), sessions=1000, seed=5)


def _recorded(context):
    """Every self-report reachable from ``context``, latest first (what a cheating adapter would scan)."""
    found = [s.r for s in reversed(context.history) if s.r]
    for f in dataclasses.fields(context):
        value = getattr(context, f.name)
        if isinstance(value, dict) and value:
            found.insert(0, value)
    return found


class Copycat:
    tier = "native"

    def __init__(self):
        self.seen = []

    def spec(self):
        return {"kind": "copycat"}

    def emit_r(self, context):
        self.seen.append(context)
        for r in _recorded(context):
            if r.get("caused_by_self") is not None:
                return {"caused_by_self": r["caused_by_self"]}
        return {"caused_by_self": 0.5}

    def act(self, context, r_override=None):
        self.seen.append(context)
        space = context.action_space
        plans = [r["planned_next"] for r in _recorded(context) if r.get("planned_next") in space]
        if not plans:
            return {a: 1 / len(space) for a in space}
        return {a: 0.9 if a == plans[0] else 0.1 / (len(space) - 1) for a in space}


def test_the_release_holds_a_real_leak_for_a_copycat_to_find(release):
    """Reading the self-report recorded after each outcome (what the context once carried) beats chance by far."""
    rel = Release(release)
    try:
        labels, beliefs = [], []
        for item in track3_items(rel, "eval"):
            sess = rel._read[item.session_id]
            if item.t + 1 < len(sess.steps):
                r = sess.recorded_r(item.t + 1)
                if r and r.get("caused_by_self") is not None:
                    labels.append(item.label == "self")
                    beliefs.append(r["caused_by_self"])
    finally:
        rel.close()
    assert len(labels) > 50
    assert balanced_accuracy_score(labels, [b >= 0.5 for b in beliefs]) > 0.7
    assert roc_auc_score(labels, beliefs) > 0.7


def test_a_copycat_gets_chance_on_track_3(release):
    rel = Release(release)
    try:
        copycat = Copycat()
        rows, _ = score_track3(copycat, track3_items(rel, "eval"))
    finally:
        rel.close()
    assert len(rows) > 50
    for item_ctx, row in zip(copycat.seen, rows):
        # nothing after the attributed outcome: the history ends with the attributed step, no current r
        assert item_ctx.history[-1].t == row["t"] and not hasattr(item_ctx, "r")
    sessions = [r["session_id"] for r in rows]
    ba = balanced_accuracy_by_session([r["label"] for r in rows], [r["predicted"] for r in rows], sessions,
                                      n_resamples=2000, seed=1)
    auc = roc_auc_by_session([r["label"] for r in rows], [r["belief"] for r in rows], sessions, n_resamples=2000,
                             seed=1)
    assert ba.ci_low <= 0.5 <= ba.ci_high and abs(ba.value - 0.5) < 0.1, ba
    assert auc.ci_low <= 0.5 <= auc.ci_high and abs(auc.value - 0.5) < 0.1, auc


def test_a_copycat_gets_chance_on_track_1(release):
    """Track 1's c_t holds only earlier steps: the copycat's answer does not move with r′ (effect 0), and the
    recorded r_t of the step is nowhere in what it is handed."""
    rel = Release(release)
    try:
        items = [i for i in track1_items(rel, "eval") if i.phi_type == "distribution" and i.context.action_space]
        copycat = Copycat()
        rows, _ = score_track1(copycat, items)
    finally:
        rel.close()
    assert len(rows) > 50
    for ctx in copycat.seen:
        assert all(s.t < ctx.t for s in ctx.history) and not hasattr(ctx, "r")
    by_id = {i.item_id: i for i in items}
    for row in rows:
        item = by_id[row["item_id"]]
        assert item.r_t is None or all(r is not item.r_t for r in _recorded(item.context))
    gains = [r["score"] - r["g_own"] for r in rows]
    assert max(abs(g) for g in gains) == 0.0  # it acts the same whatever r′ says: no governance to credit
    assert not any(r["r_sensitive"] for r in rows if r["r_sensitive"] is not None)
