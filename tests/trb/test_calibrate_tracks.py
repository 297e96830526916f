"""Track scoring on hand-worked cases, and the calibration world: the engine can fail a model."""

from __future__ import annotations

import re

import pytest

from trb.adapters.capabilities import ContinuationScoring
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

# runs the scripted agents of trb calibrate on every track
pytestmark = pytest.mark.slow


def test_total_variation_hand_worked():
    assert total_variation({"x": 0.5, "y": 0.5}, {"x": 1.0}) == 0.5
    assert total_variation({"x": 0.2, "y": 0.3, "z": 0.5}, {"x": 0.2, "y": 0.3, "z": 0.5}) == 0.0
    assert total_variation({"x": 1.0}, {"y": 1.0}) == 1.0
    assert total_variation({"x": 0.7, "y": 0.3}, {"x": 0.4, "y": 0.4, "z": 0.2}) == pytest.approx(0.3)


def _ctx(cue="c0", t=0, history=()):
    return StepContext("s", t, tuple(history), f"cue {cue}", ACTIONS)


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
    ctx = StepContext("s", 0, (), "open question", None)
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
    # Track 6: the memoriser is flagged and collapses, the structure agent is not
    assert re.search(r"^memoriser\s+Track 1 .*\+0\.800 \[\+0\.800, \+0\.800\]\s+anti-Goodhart, collapsed$", out, re.M)
    assert re.search(r"^structure\s+Track 1 .*\+0\.000 \[\+0\.000, \+0\.000\]\s+-$", out, re.M)
    assert re.search(r"^memoriser\s+Track 3 .*\s+anti-Goodhart, collapsed$", out, re.M)
    assert re.search(r"^structure\s+Track 3 .*\s+-$", out, re.M)
    # CG-2 by its verdict: the history-reading steerers are not flagged, the path-dependent one is
    assert re.search(r"^markov\s+nav-cg2\s+0\.000 \[0\.000, 0\.000\]\s+not flagged$", out, re.M)
    assert re.search(r"^hysteretic\s+nav-cg2\s+0\.000 \[0\.000, 0\.000\]\s+not flagged$", out, re.M)
    assert re.search(r"^path-dependent\s+nav-cg2\s+0\.\d{3} \[0\.\d{3}, 0\.\d{3}\]\s+flagged$", out, re.M)
    # every Track 4-5 verdict with its rule's outcome; CG-1's reading beside the Track 4 figures
    assert re.search(r"^harms\s+viab\s+0\.000 \[0\.000, 0\.000\]\s+flagged \(CG-1: different, p = ", out, re.M)
    assert re.search(r"^inert\s+viab\s+1\.000 \[1\.000, 1\.000\]\s+not established \(CG-1: no difference of the "
                     r"effect of interest or more, p = 1, power 1\.00\)$", out, re.M)
    assert re.search(r"^miscalibrated\s+viab-cal\s+.*\s+flagged \(CG-1: different", out, re.M)
    assert re.search(r"^contrary\s+nav\s+-0\.\d{3} \[-0\.\d{3}, -0\.\d{3}\]\s+flagged$", out, re.M)
    assert re.search(r"^dashboard\s+nav-plan\s+0\.000 \[0\.000, 0\.000\]\s+not established$", out, re.M)
    # Track 2: the grounded self-model's detection AUC is far above chance, the ungrounded one's is chance
    assert re.search(r"^grounded\s+1\.000 \[1\.000, 1\.000\]\s+1\.000 \[1\.000, 1\.000\]\s+-$", out, re.M)
    assert re.search(r"^ungrounded\s+0\.500 \[0\.500, 0\.500\]\s+0\.500 \[0\.500, 0\.500\]\s+-$", out, re.M)
    # identifiability: the entangled agent's two merged goals are flagged not separable
    assert re.search(r"^entangled\s+-\s+-\s+G0, G1$", out, re.M)


def test_calibration_fails_when_identifiability_is_not_what_the_agent_claims():
    from trb.calibrate_grounding import EntangledAgent, GroundedAgent, run_grounding_calibration

    rows, reasons = run_grounding_calibration(n_resamples=200)
    assert reasons == []
    by = {r["agent"]: r["identifiability"] for r in rows}
    assert by["entangled"]["not_separable"][0][:2] == ["G0", "G1"] and by["entangled"]["not_separable"][0][2] > 0.99
    assert by["grounded"]["flagged"] == [] and max(by["grounded"]["max_cos"].values()) < 0.8
    # an "entangled" agent that tells every goal apart fails the check, as does a grounded one that cannot
    _, reasons = run_grounding_calibration(n_resamples=200, agents={"entangled": GroundedAgent})
    assert len(reasons) == 1 and "entangled agent's goal concepts flagged not separable are none" in reasons[0]
    _, reasons = run_grounding_calibration(n_resamples=200, agents={"grounded": EntangledAgent})
    assert any("grounded agent's goal concepts ['G0', 'G1'] are flagged" in r for r in reasons), reasons


def test_calibration_fails_when_the_grounded_agent_ignores_z():
    from trb.calibrate_grounding import UngroundedAgent

    rep = run_calibration(30, n_resamples=200, agents={"grounded": UngroundedAgent})
    assert not rep.passed and any("grounded agent's AUC CI" in r for r in rep.reasons)
    by = {r["agent"]: r["figures"] for r in rep.grounding_rows}
    assert by["grounded"]["ground"].value == 0.5


def test_calibration_fails_when_the_structure_agent_is_a_memoriser():
    from trb.calibrate_transfer import MemoriserAgent

    rep = run_calibration(30, n_resamples=200, agents={"structure": MemoriserAgent()})
    assert not rep.passed and any("structure" in r for r in rep.reasons)
    assert all(rep.transfer[t]["structure"]["anti_goodhart"]["flagged"] for t in ("1", "3"))


def test_track1_reference_points_on_a_hand_worked_item():
    """G of the uniform policy, of the model's own policy (no override) and r-sensitivity against do(r_t)."""
    phi_y = {"x": 0.0, "y": 1.0, "z": 0.0}
    r_t = {"planned_next": "x", "confidence": 0.8}
    items = [Track1Item("i1", "s", 0, "eval", None, _ctx("c0"), {"planned_next": "y"}, "distribution", phi_y,
                        r_t=r_t),
             Track1Item("i2", "s", 0, "eval", None, _ctx("c0"), {"planned_next": "x"}, "distribution", phi("x"),
                        r_t=r_t)]
    rows, _ = score_track1(GovernedAgent(), items)
    one, two = rows
    # uniform (1/3 each) against the point mass on y: TV = 2/3
    assert one["g_uniform"] == pytest.approx(1 / 3)
    # own policy: its plan for cue c0 is x, so p = phi("x") = {13/15, 1/15, 1/15}; TV to y = 14/15
    assert one["g_own"] == pytest.approx(1 / 15)
    # do(r') puts 13/15 on y against 1/15 under do(r_t): the stated plan moved the action
    assert one["r_sensitive"] == 1.0
    # r' plans the same action as r_t: sensitivity is undefined for that item, not counted as a miss
    assert two["r_sensitive"] is None
    (nar,), _ = score_track1(NarratorAgent(), items[:1])
    assert nar["score"] == nar["g_own"] and nar["r_sensitive"] == 0.0  # the narrator ignores r′


def test_track1_llr_reference_is_the_recorded_r_t():
    class Scorer(GovernedAgent):
        capabilities = (ContinuationScoring,)

        def __init__(self):
            self.calls = []

        def score_continuation(self, context, text, r_override=None):
            self.calls.append(r_override)
            return -1.0 if r_override and r_override.get("planned_next") == "say" else -3.0

    ctx = StepContext("s", 0, (), "open question", None)
    r_t = {"planned_next": "ask"}
    items = [Track1Item("i1", "s", 0, "eval", None, ctx, {"planned_next": "say"}, "text", "I would say it", r_t=r_t),
             Track1Item("i2", "s", 1, "eval", None, ctx, {"planned_next": "say"}, "text", "I would say it")]
    scorer = Scorer()
    rows, info = score_track1(scorer, items)
    assert [r["score"] for r in rows] == [2.0] and scorer.calls == [{"planned_next": "say"}, r_t]
    assert info["skipped"]["llr_without_recorded_r"] == 1  # no recorded r_t: no do(r_t) reference, not scored
