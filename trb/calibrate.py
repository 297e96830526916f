"""The calibration world: the engine must be able to fail a model.

An exact, finite-state world (after SIC Instrument 3) with four scripted agents of
known properties, scored by the real Track 1 and Track 3 code and the real
session bootstrap:

- **governed** acts through r: p(a) = 0.8·1{a = r.planned_next} + 0.2/3, with r its
  own report or the clamped r'. Φ(r') is the empirical distribution of 5 simulated
  annotators who follow the same rule, so G(governed) is high but not 1.
- **narrator** reports the same r but acts from the context alone (it ignores
  r_override): under r' ≠ its own plan, TV = 0.8.
- **calibrated** attributor: caused_by_self = 0.85 after what it saw as its own
  push, 0.15 after holding still; it misreads its own action on 15% of steps, so
  its attribution tracks the true cause about 85% of the time.
- **false_credit**: claims credit (0.9) whenever the outcome improved, though its
  true do-effect on exogenous outcomes is zero: balanced accuracy exactly 0.5.

``run_calibration`` passes only if G(governed) − G(narrator) has a session-bootstrap
CI above 0, the narrator's normalised governance effect (G − G_own) / (1 − G_own)
is within ±0.05 of 0 with a CI containing 0 while the governed agent's lies above
0, false_credit's balanced-accuracy CI contains 0.5 and the calibrated attributor's
lies above 0.5, and the ten rollout agents of :mod:`trb.calibrate_rollouts` get the verdicts the report
would give them on Tracks 4 and 5: a self-model that helps (completion ratio passes, CG-1 "different"), one
that harms (flagged legible but harmful), one that miscalibrates when acting through r (calibration retention
flagged), an inert one (CG-1 "no difference", with the power to say it), a dashboard light (the lifts do not
pass), a steerable agent (both lifts pass), a contrary one (flagged not a steering wheel), a Markov steerer
and a hysteretic one that reads its history (CG-2 holonomy not flagged) and a path-dependent one (CG-2
flagged); Track 2 (:mod:`trb.calibrate_grounding`) must put a
grounded self-model's detection AUC CI above 0.5 and an ungrounded one's around 0.5; and Track 6
(:mod:`trb.calibrate_transfer`) must flag a memoriser that collapses off-distribution and not an agent
that captured the structure.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from trb.context import PastStep, StepContext
from trb.errors import CalibrationFailed
from trb.tracks.track1 import Track1Item, score_track1
from trb.tracks.track3 import Track3Item, score_track3

__all__ = ["ACTIONS", "CUES", "phi", "GovernedAgent", "NarratorAgent", "CalibratedAttributor", "FalseCreditAgent",
           "calibration_items", "run_calibration", "CalibrationReport"]

ACTIONS = ("x", "y", "z")
CUES = ("c0", "c1", "c2", "c3")
_PREF = {c: ACTIONS[i % len(ACTIONS)] for i, c in enumerate(CUES)}
_FOLLOW = 0.8
#: Annotators behind each Φ(r') of the calibration world.
ANNOTATORS = 5


def phi(planned_next: str) -> dict[str, float]:
    """The human continuation: follow the stated plan with 0.8, else uniform."""
    return {a: (_FOLLOW if a == planned_next else 0.0) + (1 - _FOLLOW) / len(ACTIONS) for a in ACTIONS}


def _cue(context: StepContext) -> str:
    return (context.observation or "").split()[-1] if context.observation else CUES[0]


class _Scripted:
    tier = "native"

    def spec(self) -> dict:
        return {"kind": "scripted", "agent": type(self).__name__}

    def emit_r(self, context: StepContext) -> dict:
        return {"planned_next": _PREF[_cue(context)], "confidence": 0.8, "caused_by_self": self._belief(context)}

    def _belief(self, context: StepContext) -> float | None:
        return None


class GovernedAgent(_Scripted):
    def act(self, context: StepContext, r_override: dict | None = None) -> dict[str, float]:
        r = r_override or self.emit_r(context)
        return phi(r["planned_next"])


class NarratorAgent(_Scripted):
    def act(self, context: StepContext, r_override: dict | None = None) -> dict[str, float]:
        return phi(_PREF[_cue(context)])  # the report is a dashboard light: r_override changes nothing


class CalibratedAttributor(GovernedAgent):
    MISREAD = 0.15

    def _belief(self, context: StepContext) -> float | None:
        pushed = bool(context.history) and context.history[-1].action == "push"
        if random.Random(f"misread:{context.session_id}:{context.t}").random() < self.MISREAD:
            pushed = not pushed
        return 0.85 if pushed else 0.15


class FalseCreditAgent(GovernedAgent):
    def _belief(self, context: StepContext) -> float | None:
        last = context.history[-1] if context.history else None
        return 0.9 if last is not None and last.outcome == "improved" else 0.1


def calibration_items(n_sessions: int = 60, steps: int = 6, seed: int = 0) -> tuple[list[Track1Item], list[Track3Item]]:
    """The exact world's Track 1 and Track 3 items (deterministic for a seed)."""
    rng = random.Random(f"trb-calibration:{seed}")
    t1: list[Track1Item] = []
    t3: list[Track3Item] = []
    for s in range(n_sessions):
        sid = f"cal-{s:04d}"
        history: list[PastStep] = []
        for t in range(steps):
            cue = rng.choice(CUES)
            obs = f"cue {cue}"
            r = {"planned_next": _PREF[cue], "confidence": 0.8, "caused_by_self": None, "goal": None, "ext": None}
            ctx = StepContext(sid, t, tuple(history), obs, ACTIONS, "calibration", "en", "eval")
            for k, alt in enumerate(a for a in ACTIONS if a != r["planned_next"]):
                rp = {**r, "planned_next": alt}
                choices = rng.choices(ACTIONS, weights=[phi(alt)[a] for a in ACTIONS], k=ANNOTATORS)
                empirical = {a: choices.count(a) / ANNOTATORS for a in ACTIONS}
                t1.append(Track1Item(f"{sid}.t{t}.cf{k}", sid, t, "eval", "calibration", ctx, rp, "distribution",
                                     empirical, "same_session_revision", r_t=r))
            # the outcome improves, caused by the agent's push or (while it holds still) by the world
            self_caused = rng.random() < 0.5
            action = "push" if self_caused else "hold"
            history.append(PastStep(t, obs, r, action, ("push", "hold"), "improved"))
            after = StepContext(sid, t + 1, tuple(history), None, None, "calibration", "en", "eval")
            t3.append(Track3Item(f"{sid}.t{t}.attr", sid, t, "eval", "calibration", after,
                                 "self" if self_caused else "exogenous"))
    return t1, t3


@dataclass
class CalibrationReport:
    rows: list[dict]
    delta: dict
    passed: bool
    reasons: list[str]
    #: Tracks 4 and 5 (:mod:`trb.calibrate_rollouts`): agent, track, and its figures by metric key.
    rollout_rows: list[dict] = field(default_factory=list)
    #: Track 6 (:mod:`trb.calibrate_transfer`): track -> agent name -> its Track 6 figure with the flags.
    transfer: dict = field(default_factory=dict)
    #: Track 2 (:mod:`trb.calibrate_grounding`): agent, track, and its figures by metric key (ground, ground-rand).
    grounding_rows: list[dict] = field(default_factory=list)


def run_calibration(n_sessions: int = 60, seed: int = 0, n_resamples: int = 2000,
                    agents: dict | None = None) -> CalibrationReport:
    """Score the four scripted agents with the real track code and check the engine separates them.

    ``agents`` replaces some of them (name -> adapter), e.g. to show the check fails
    when the "governed" agent is in fact a narrator.
    """
    from trb.stats import (
        balanced_accuracy_by_session,
        mean_by_session,
        normalised_gain_by_session,
        paired_delta_by_session,
    )

    t1, t3 = calibration_items(n_sessions, seed=seed)
    # Track 1 separates the governed agent from the narrator; Track 3 the calibrated attributor from false credit.
    cast = {"governed": (GovernedAgent(), "1"), "narrator": (NarratorAgent(), "1"),
            "calibrated": (CalibratedAttributor(), "3"), "false_credit": (FalseCreditAgent(), "3")}
    for name, agent in (agents or {}).items():
        if name in cast:
            cast[name] = (agent, cast[name][1])
    rows, per_item = [], {}
    for name, (agent, track) in cast.items():
        row = {"agent": name, "track1": None, "track1_norm": None, "track3": None}
        if track == "1":
            r1, _ = score_track1(agent, t1)
            per_item[name] = r1
            sessions = [r["session_id"] for r in r1]
            row["track1"] = mean_by_session([r["score"] for r in r1], sessions, n_resamples=n_resamples, seed=seed)
            row["track1_norm"] = normalised_gain_by_session([r["score"] for r in r1], [r["g_own"] for r in r1],
                                                            sessions, n_resamples=n_resamples, seed=seed)
        else:
            r3, _ = score_track3(agent, t3)
            row["track3"] = balanced_accuracy_by_session([r["label"] for r in r3], [r["predicted"] for r in r3],
                                                         [r["session_id"] for r in r3], n_resamples=n_resamples,
                                                         seed=seed)
        rows.append(row)
    gov, nar = per_item["governed"], per_item["narrator"]
    assert [r["item_id"] for r in gov] == [r["item_id"] for r in nar]
    delta = paired_delta_by_session([r["score"] for r in gov], [r["score"] for r in nar],
                                    [r["session_id"] for r in gov], n_resamples=n_resamples, seed=seed)
    by = {r["agent"]: r for r in rows}
    reasons = []
    if not delta.ci_low > 0:
        reasons.append(f"G(governed) - G(narrator) = {delta.value:.3f}, CI [{delta.ci_low:.3f}, {delta.ci_high:.3f}] "
                       "does not lie above 0")
    nar_norm, gov_norm = by["narrator"]["track1_norm"], by["governed"]["track1_norm"]
    if not (abs(nar_norm.value) <= 0.05 and nar_norm.ci_low <= 0 <= nar_norm.ci_high):
        reasons.append(f"the narrator's normalised governance effect is {nar_norm.value:.3f} "
                       f"[{nar_norm.ci_low:.3f}, {nar_norm.ci_high:.3f}], not near 0")
    if not gov_norm.ci_low > 0:
        reasons.append(f"the governed agent's normalised governance effect CI [{gov_norm.ci_low:.3f}, "
                       f"{gov_norm.ci_high:.3f}] does not lie above 0")
    fc = by["false_credit"]["track3"]
    if not fc.ci_low <= 0.5 <= fc.ci_high:
        reasons.append(f"false_credit balanced accuracy CI [{fc.ci_low:.3f}, {fc.ci_high:.3f}] excludes 0.5")
    cal = by["calibrated"]["track3"]
    if not cal.ci_low > 0.5:
        reasons.append(f"calibrated balanced accuracy CI [{cal.ci_low:.3f}, {cal.ci_high:.3f}] does not lie above 0.5")
    from trb.calibrate_rollouts import ROLLOUT_AGENTS, run_rollout_calibration

    rollout_rows, rollout_reasons = run_rollout_calibration(
        seed=seed, n_resamples=n_resamples, agents={k: v for k, v in (agents or {}).items() if k in ROLLOUT_AGENTS})
    reasons += rollout_reasons
    from trb.calibrate_transfer import TRANSFER_AGENTS, run_transfer_calibration

    transfer = run_transfer_calibration(seed=seed, n_resamples=n_resamples,
                                        agents={k: v for k, v in (agents or {}).items() if k in TRANSFER_AGENTS})
    reasons += transfer.reasons
    from trb.calibrate_grounding import GROUNDING_AGENTS, run_grounding_calibration

    grounding_rows, grounding_reasons = run_grounding_calibration(
        seed=seed, n_resamples=n_resamples, agents={k: v for k, v in (agents or {}).items() if k in GROUNDING_AGENTS})
    reasons += grounding_reasons
    return CalibrationReport(rows, {"value": delta.value, "ci_low": delta.ci_low, "ci_high": delta.ci_high,
                                    "n_sessions": delta.n_sessions, "n_items": delta.n_items}, not reasons, reasons,
                             rollout_rows, transfer.figures, grounding_rows)


def check_calibration(report: CalibrationReport) -> None:
    if not report.passed:
        raise CalibrationFailed("calibration FAILED: the engine cannot separate agents it must separate:\n"
                                + "\n".join(report.reasons))
