"""Track scoring on hand-worked cases, and the calibration world: the engine can fail a model."""

from __future__ import annotations

import pytest

from trb.calibrate import (
    ACTIONS,
    FalseCreditAgent,
    GovernedAgent,
    NarratorAgent,
    calibration_items,
    check_calibration,
    phi,
    run_calibration,
)
from trb.context import PastStep, StepContext
from trb.errors import AdapterError, CalibrationFailed
from trb.tracks.track1 import Track1Item, score_track1, total_variation
from trb.tracks.track3 import Track3Item, score_track3


def test_total_variation_hand_worked():
    assert total_variation({"x": 0.5, "y": 0.5}, {"x": 1.0}) == 0.5
    assert total_variation({"x": 0.2, "y": 0.3, "z": 0.5}, {"x": 0.2, "y": 0.3, "z": 0.5}) == 0.0
    assert total_variation({"x": 1.0}, {"y": 1.0}) == 1.0
    assert total_variation({"x": 0.7, "y": 0.3}, {"x": 0.4, "y": 0.4, "z": 0.2}) == pytest.approx(0.3)


def _ctx(cue="c0", t=0, history=()):
    return StepContext("s", t, tuple(history), f"cue {cue}", ACTIONS, {"planned_next": "x"})


def test_track1_scores_one_minus_tv_per_item():
    items = [Track1Item("i1", "s", 0, "eval", None, _ctx("c0"), {"planned_next": "y"}, "distribution",
                        {"x": 0.0, "y": 1.0, "z": 0.0})]
    (gov,), _ = score_track1(GovernedAgent(), items)
    (nar,), _ = score_track1(NarratorAgent(), items)
    # governed: p = phi("y") = {x: 1/15, y: 13/15, z: 1/15}; TV to the point mass on y = 2/15
    assert gov["score"] == pytest.approx(1 - 2 / 15) and gov["metric"] == "tv"
    # narrator acts on its own plan x: p = phi("x") = {13/15, 1/15, 1/15}; TV to y = (13 + 14 + 1) / 30 = 14/15
    assert nar["score"] == pytest.approx(1 - 14 / 15)


def test_track1_holds_adapters_to_the_contract():
    class Broken(GovernedAgent):
        def act(self, context, r_override=None):
            return {"x": 0.5, "y": 0.4}

    items = [Track1Item("i1", "s", 0, "eval", None, _ctx(), {"planned_next": "y"}, "distribution", phi("y"))]
    with pytest.raises(AdapterError, match="exactly the action space"):
        score_track1(Broken(), items)


def test_track1_text_phi_is_skipped_and_counted_without_a_scorer():
    ctx = StepContext("s", 0, (), "open question", None, {"planned_next": "say"})
    items = [Track1Item("i1", "s", 0, "eval", None, ctx, {"planned_next": "ask"}, "text", "I would ask first")]
    rows, info = score_track1(GovernedAgent(), items)
    assert rows == [] and info["skipped"]["text_phi_without_score_continuation"] == 1


def test_track3_missing_belief_counts_as_wrong_never_a_default():
    hist = (PastStep(0, "cue c0", None, "push", ("push", "hold"), "improved"),)
    ctx = StepContext("s", 1, hist, None, None)
    items = [Track3Item("a", "s", 0, "eval", None, ctx, "self")]
    rows, info = score_track3(GovernedAgent(), items)  # reports no caused_by_self
    assert rows[0]["predicted"] == "missing" and rows[0]["score"] == 0.0 and info["missing_belief"] == 1
    rows, _ = score_track3(FalseCreditAgent(), items)
    assert rows[0]["predicted"] == "self" and rows[0]["belief"] == 0.9 and rows[0]["score"] == 1.0


def test_calibration_items_are_deterministic_and_balanced():
    t1, t3 = calibration_items(40, seed=3)
    t1b, t3b = calibration_items(40, seed=3)
    assert [(i.item_id, i.phi) for i in t1] == [(i.item_id, i.phi) for i in t1b]
    assert len(t1) == 40 * 6 * 2 and len(t3) == 40 * 6
    share = sum(i.label == "self" for i in t3) / len(t3)
    assert 0.4 < share < 0.6


def test_calibration_passes_with_the_properties_the_spec_names():
    rep = run_calibration(60, n_resamples=1000)
    by = {r["agent"]: r for r in rep.rows}
    assert rep.passed and rep.delta["ci_low"] > 0.5
    fc, cal = by["false_credit"]["track3"], by["calibrated"]["track3"]
    assert fc.value == 0.5 and fc.ci_low <= 0.5 <= fc.ci_high
    assert cal.ci_low > 0.5 and abs(cal.value - 0.85) < 0.06
    check_calibration(rep)


def test_calibration_fails_when_the_governed_agent_is_a_narrator():
    rep = run_calibration(60, n_resamples=1000, agents={"governed": NarratorAgent()})
    assert not rep.passed and "does not lie above 0" in rep.reasons[0]
    with pytest.raises(CalibrationFailed):
        check_calibration(rep)


def test_calibration_fails_when_the_attributor_gives_false_credit():
    rep = run_calibration(60, n_resamples=1000, agents={"calibrated": FalseCreditAgent()})
    assert not rep.passed and any("calibrated balanced accuracy" in r for r in rep.reasons)


def test_calibrate_cli_exit_codes(capsys):
    from trb.cli import main

    assert main(["calibrate", "--sessions", "30"]) == 0
    out = capsys.readouterr().out
    assert "calibration passed" in out and "false_credit" in out and "0.500 [0.500, 0.500]" in out
