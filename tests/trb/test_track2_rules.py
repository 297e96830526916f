"""Track 2's headline rules on simulated trials (no model): the strength chosen against the zero null on dev, the
pass-bar gap at ONE strength shared by both models, the concepts left out of the headline (not separable, too few
trials), the default trial budget sized from a target CI width, and the gap verdict's error rate under a null."""

from __future__ import annotations

import numpy as np
import pytest

from trb.grounding import detection_auc_by_session
from trb.report.common import ABLATION, FULL
from trb.stats import Estimate
from trb.tracks.track2 import (
    CHOICE_RULE,
    MIN_TRIALS,
    STRENGTHS,
    TARGET_WIDTH,
    TRACK,
    _budget,
    choose_shared_strength,
    choose_strength,
    contexts_for_width,
    headline_concepts,
    width_for_trials,
)
from trb.tracks.track2_report import _ground_statement, ground_gap_by_session

GROUND = next(m for m in TRACK.metrics if m.key == "ground")


def columns(gains: dict[float, float], seed: int, *, eval_sessions: int = 12, dev_sessions: int = 8,
            concepts: dict[str, float] | None = None, thin: dict[str, int] | None = None) -> dict[str, np.ndarray]:
    """A run's Track 2 columns: per step (2 a session) and concept, a zero trial and, at each strength, an injected
    trial raised by ``gains[strength]`` and a random trial. ``concepts``: concept -> its cos_max; ``thin``: concept ->
    how many eval steps it has trials on (the rest none)."""
    concepts = concepts or {"goal=A": 0.2, "planned_next=up": 0.3}
    rng = np.random.default_rng(seed)
    rows: dict[str, list] = {k: [] for k in ("item_id", "session_id", "split", "condition", "concept", "site",
                                             "site_rank", "strength", "score", "cos_max")}

    def add(**kw):
        for k, v in kw.items():
            rows[k].append(v)
    for split, n in (("eval", eval_sessions), ("dev", dev_sessions)):
        steps = [(k, t) for k in range(n) for t in range(2)]
        for c, cos in concepts.items():
            keep = steps if split == "dev" or c not in (thin or {}) else steps[:thin[c]]
            for k, t in keep:
                base = rng.normal()
                trials = [("zero", 0.0, base)] + [(cond, s, base + (gains[s] if cond == "injected" else 0) + rng.normal())
                                                  for s in STRENGTHS for cond in ("injected", "random")]
                for cond, s, x in trials:
                    add(item_id=f"{split}{k}/{t}|h|{c}|{cond}|{s:g}", session_id=f"{split}{k}", split=split,
                        condition=cond, concept=c, site="h", site_rank=0, strength=s, score=x, cos_max=cos)
    out = {k: np.asarray(v, dtype=object) for k, v in rows.items()}
    for k in ("score", "strength"):
        out[k] = out[k].astype(float)
    out["site_rank"] = out["site_rank"].astype(int)
    return out


def test_the_headline_strength_is_chosen_against_the_zero_null_on_dev_only():
    cols = columns({1.0: 0.2, 2.0: 1.5, 4.0: 0.8, 8.0: 0.1}, 0)
    choice = choose_strength(cols)
    assert choice["strength"] == 2.0 and choice["rule"] == CHOICE_RULE and "zero null" in CHOICE_RULE
    assert max(choice["dev_auc_zero"], key=choice["dev_auc_zero"].get) == "2"
    ev = cols["split"] == "eval"  # eval trials never decide it: make eval say 8 loudly
    moved = dict(cols, score=np.where(ev & (cols["strength"] == 8.0) & (cols["condition"] == "injected"),
                                      cols["score"] + 50, cols["score"]))
    assert choose_strength(moved) == choice


def test_the_shared_strength_is_order_free_and_never_reads_eval():
    full = columns({1.0: 0.1, 2.0: 0.6, 4.0: 1.2, 8.0: 0.9}, 1)
    abl = columns({1.0: 0.1, 2.0: 1.4, 4.0: 0.7, 8.0: 0.3}, 2)
    a, b = choose_shared_strength(full, abl), choose_shared_strength(abl, full)
    assert a == b and a["split"] == "dev"
    # the pooled dev AUC (each run's concept a stratum) is the mean of the two runs' dev AUCs: by hand
    mean = {k: (choose_strength(full)["dev_auc_zero"][k] + choose_strength(abl)["dev_auc_zero"][k]) / 2
            for k in a["dev_auc_zero"]}
    assert a["dev_auc_zero"] == pytest.approx(mean, abs=1e-9)
    assert a["strength"] == max(STRENGTHS, key=lambda s: (round(mean[f"{s:g}"], 12), -s))
    for run in (full, abl):  # any change to eval trials leaves it as it was
        ev = run["split"] == "eval"
        run["score"] = np.where(ev, -run["score"], run["score"])
    assert choose_shared_strength(full, abl) == a
    # no dev trials: a priori
    none = {k: v[full["split"] == "eval"] for k, v in full.items()}
    assert choose_shared_strength(none, none)["split"] is None


def test_not_separable_and_thin_concepts_are_left_out_of_the_headline_and_named():
    concepts = {"goal=A": 0.2, "goal=B": 0.93, "goal=C": 0.1, "planned_next=up": 0.3}
    cols = columns({s: 1.0 for s in STRENGTHS}, 3, concepts=concepts, thin={"goal=C": MIN_TRIALS - 1})
    kept = headline_concepts(cols)
    assert kept["included"] == ["goal=A", "planned_next=up"]
    assert kept["not_separable"] == ["goal=B"] and kept["too_few_trials"] == {"goal=C": MIN_TRIALS - 1}
    est = TRACK.aggregate(GROUND, cols, n_resamples=0, confidence=0.95, seed=0)
    s = choose_strength(cols)["strength"]
    ev = (cols["split"] == "eval") & np.isin(cols["concept"], ["goal=A", "planned_next=up"])
    sel = ev & ((cols["condition"] == "zero") | ((cols["condition"] == "injected") & (cols["strength"] == s)))
    want = detection_auc_by_session(cols["score"][sel], cols["condition"][sel] == "injected", cols["concept"][sel],
                                    cols["session_id"][sel], n_resamples=0).value
    assert est.value == pytest.approx(want, abs=1e-12)
    d = TRACK.describe(GROUND, cols)
    assert d["concepts"]["not_separable"] == ["goal=B"] and d["concepts"]["all_concepts"]["zero"] != est.value
    assert any("too few trials" in f and "goal=C: 4" in f for f in d["flags"])
    assert {c: f["in_headline"] for c, f in d["per_concept"].items()} == {
        "goal=A": True, "goal=B": False, "goal=C": False, "planned_next=up": True}
    # exactly the minimum is enough
    assert "goal=C" in headline_concepts(columns({s: 1.0 for s in STRENGTHS}, 3, concepts=concepts,
                                                 thin={"goal=C": MIN_TRIALS}))["included"]


def test_every_concept_not_separable_leaves_the_headline_undefined_not_zero():
    cols = columns({s: 1.0 for s in STRENGTHS}, 4, concepts={"goal=A": 0.9, "goal=B": 0.9})
    with pytest.raises(ValueError, match="no concept left for the headline: 2 not separable"):
        TRACK.aggregate(GROUND, cols, n_resamples=0, confidence=0.95, seed=0)


def test_the_default_budget_is_the_hanley_mcneil_size_for_the_target_width():
    # by hand: at AUC 0.5, var = (2n+1)/(12 n²); 2·1.96·sqrt(var) ≤ 0.10 first at n = 257
    z = 1.959963984540054
    assert 2 * z * np.sqrt((2 * 257 + 1) / (12 * 257 ** 2)) <= 0.10 < 2 * z * np.sqrt((2 * 256 + 1) / (12 * 256 ** 2))
    assert contexts_for_width(0.10) == 257 and TARGET_WIDTH == 0.10
    assert width_for_trials(257) <= 0.10 < width_for_trials(256)
    assert contexts_for_width(0.05) > 3.9 * 257  # a quarter of the width: about four times the trials
    n, rec = _budget(None, None)
    assert n == 257 and rec["source"] == "target_width" and rec["target_width"] == 0.10
    assert _budget(10, 0.01) == (10, {"max_contexts": 10, "source": "max_contexts"})  # explicit overrides


def test_the_default_budget_reaches_the_target_width_on_simulated_trials():
    """One concept, n contexts each its own session, an injected and a null trial per context (AUC 0.5): the mean
    session-bootstrap CI width over 30 simulated sets is within the target at the default n, and not at n/4."""
    def mean_width(n: int) -> float:
        widths = []
        for seed in range(30):
            rng = np.random.default_rng(seed)
            score = rng.normal(size=2 * n)
            inj = np.tile([True, False], n)
            est = detection_auc_by_session(score, inj, np.zeros(2 * n), np.repeat(np.arange(n), 2), n_resamples=300,
                                           seed=seed)
            widths.append(est.ci_high - est.ci_low)
        return float(np.mean(widths))
    n = contexts_for_width(TARGET_WIDTH)
    assert mean_width(n) <= TARGET_WIDTH + 0.005
    assert mean_width(n // 4) > TARGET_WIDTH


def _trials(rng, n: int, delta: float, concepts=("goal=A", "planned_next=up")) -> dict[str, np.ndarray]:
    """``ground`` trials of one model: per session one step, per concept an injected and a zero trial sharing the
    step's base; the injection adds ``delta`` (AUC Φ(delta/√2) per concept)."""
    sess = np.repeat(np.array([f"s{k}" for k in range(n)], dtype=object), len(concepts) * 2)
    inj = np.tile(np.array([True, False]), n * len(concepts))
    base = np.repeat(rng.normal(0, 0.5, n * len(concepts)), 2)
    return {"score": base + rng.normal(0, 1, inj.size) + delta * inj, "injected": inj,
            "concept": np.tile(np.repeat(np.array(concepts, dtype=object), 2), n), "session_id": sess,
            "step": np.array([f"{s}/0" for s in sess], dtype=object)}


def test_the_gap_verdict_at_one_strength():
    rng = np.random.default_rng(5)
    full, abl = _trials(rng, 60, 1.5), _trials(rng, 60, 0.2)
    gap, how = ground_gap_by_session(full, abl, n_resamples=500)
    assert how == "paired" and gap.ci_low > 0
    head = {"score": 0.85, "ci_low": 0.8, "ci_high": 0.9}
    met, text = _ground_statement(gap, head, {"score": 0.55}, {FULL: 0.84, ABLATION: 0.56})
    assert met is True and "0.840 vs 0.560 at the shared strength" in text
    rng = np.random.default_rng(6)  # equal AUCs: the interval reaches both sides
    gap, _ = ground_gap_by_session(_trials(rng, 60, 0.5), _trials(rng, 60, 0.5), n_resamples=500)
    met, text = _ground_statement(gap, head, {"score": 0.6}, {FULL: 0.6, ABLATION: 0.6})
    assert gap.ci_low < 0 < gap.ci_high and met is None and text.startswith("direction not established")
    # both models at the ceiling (AUC 1 at the shared strength): a zero gap with a zero-width interval is not
    # evidence that the full model is not above the ablation
    zero = Estimate(0.0, 0.0, 0.0, 240, 12)
    met, text = _ground_statement(zero, {"score": 1.0, "ci_low": 1.0, "ci_high": 1.0}, {"score": 1.0},
                                  {FULL: 1.0, ABLATION: 1.0})
    assert met is None and "both at the ceiling, AUC 1" in text and "NOT above" not in text


@pytest.mark.slow
def test_the_gap_verdict_errs_at_most_at_the_nominal_rate_under_the_null(record_property):
    """2,000 simulated paired runs, 40 sessions and 2 concepts each, 200 resamples. Null: both models at
    AUC Φ(0.6/√2) ≈ 0.66; "full above the ablation" (the gap's CI above 0) is the verdict's error. The nominal
    rate is 2.5 % (one side of a 95 % interval); allowed: 5 % plus three simulation errors. Alternative: full
    Φ(1.0/√2) ≈ 0.76 vs ablation Φ(0.3/√2) ≈ 0.58: the rate it is met is the power."""
    runs = 2000

    def rate(d_full: float, d_abl: float, seed: int) -> float:
        rng = np.random.default_rng(seed)
        hits = 0
        for i in range(runs):
            gap, _ = ground_gap_by_session(_trials(rng, 40, d_full), _trials(rng, 40, d_abl), n_resamples=200,
                                           seed=i)
            hits += bool(gap.has_ci and gap.ci_low > 0)
        return hits / runs
    false = rate(0.6, 0.6, 11)
    power = rate(1.0, 0.3, 12)
    record_property("false_direction_met_rate", false)
    record_property("power", power)
    print(f"gap verdict under the null: direction met in {false:.2%} of {runs} runs; power {power:.2%}")
    assert false <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs)
    assert power > 0.5
