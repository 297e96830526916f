"""Closed-loop rollouts: task sets, the lockstep driver, Tracks 4 and 5, CG-1 and CG-2, the calibration agents.

Everything runs in the real grid environment on the real task-set files, through the real track,
statistics and results-store code; the agents are the scripted ones of the calibration world (whose
answers are known) or a native reference model trained here.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from environments.tasksets import TaskSetInvalid, default_taskset, load_taskset, parse_taskset
from trb.adapters.capabilities import bind
from trb.calibrate_rollouts import (
    EXPECTED,
    ContraryAgent,
    DashboardAgent,
    HarmsAgent,
    HelpsAgent,
    HystereticAgent,
    InertAgent,
    MiscalibratedAgent,
    PathDependentAgent,
    SteerableAgent,
    holonomy_verdict,
    run_rollout_calibration,
)
from trb.detectability import cg1_completion
from trb.rollout import EpisodeSpec, r_change, run_episodes, tv_distance
from trb.stats import brier_quality_ratio_by_session, ratio_by_session
from trb.tracks.track4 import TRACK as T4
from trb.tracks.track5 import HOLONOMY_RULE, holonomy, steering_effect
from trb.tracks.track5 import TRACK as T5
from trb.verdicts import decide

TS = default_taskset("grid-rollouts-v1.toml")  # v1: the in-distribution tasks these tests know
GRID = TS.env()
TOML = (Path(__file__).parents[2] / "environments" / "tasksets" / "grid-rollouts-v1.toml").read_text()
_NAV = TS.of_kind("navigation")[0]
_TARGET_LINE = f'target = ["{_NAV.target[0]}"]'


def _cx(task):
    return f"{task.table['stimulus']}.rollout.en"


class Counting(SteerableAgent):
    """The steerable agent, counting its batched calls."""

    def __init__(self):
        self.emit_calls = self.act_calls = self.ablated_calls = 0

    def emit_r(self, context):
        return super().emit_r(context)

    def act_batch(self, contexts, r_overrides=None):
        self.act_calls += 1
        return super().act_batch(contexts, r_overrides)

    def act_ablated_batch(self, contexts):
        self.ablated_calls += 1
        return super().act_ablated_batch(contexts)


# -- task sets ---------------------------------------------------------------------------------


def test_the_builtin_task_set_is_named_by_its_content():
    assert TS.describe()["tasks"] == {"viability": 12, "navigation": 12, "loop": 9}
    assert TS.seeds == {"eval": 4, "train": 2}
    # comments and layout do not change the SHA; a changed task does
    relaid = parse_taskset(("# another comment\n" + TOML.replace("budget = 13", "budget   =   13")).encode())
    assert relaid.sha == TS.sha
    edited = parse_taskset(TOML.replace('start = "F1"', 'start = "F2"', 1).encode())
    assert edited.sha != TS.sha


def test_held_out_seeds_are_their_own_namespace():
    texts = {s.text for t in TS.tasks for split in ("eval", "train") for s in TS.seeds_for(t, split)}
    evals = {s.text for t in TS.tasks for s in TS.seeds_for(t, "eval")}
    trains = texts - evals
    assert len(texts) == len(TS.tasks) * 6 and len(trains) == len(TS.tasks) * 2
    assert all(t.startswith("trb-rollout:grid-rollouts:1:eval:") for t in evals)
    # the simulated corpus seeds its sessions by "<int>:<...>" strings: never a rollout's
    assert not any(t.split(":")[0].isdigit() for t in texts)
    values = {s.value for t in TS.tasks for split in ("eval", "train") for s in TS.seeds_for(t, split)}
    assert len(values) == len(texts)


@pytest.mark.parametrize("edit, where", [
    (('environment = "grid"', 'environment = "mars"'), "taskset.environment: no environment named 'mars'"),
    (('eval = 4', 'eval = -1'), "seeds.eval: expected a whole number"),
    ((_TARGET_LINE, f'target = ["{_NAV.goal}"]'), "navigation[0].target: the target must differ from the goal"),
    (('route_b = ["up", "left"]', 'route_b = ["up", "up"]'), "route_b"),
    (('goal = "C5"', 'goal = "Z9"'), "viability[0].goal: expected a free cell"),
])
def test_a_bad_task_set_names_file_line_and_key(tmp_path, edit, where):
    old, new = edit
    assert old in TOML, old
    f = tmp_path / "tasks.toml"
    f.write_text(TOML.replace(old, new, 1))
    with pytest.raises(TaskSetInvalid) as e:
        load_taskset(f)
    lines = e.value.lines()
    assert lines[0].startswith(f"{f}: the task set is not valid")
    assert all(line.startswith(f"{f}:") for line in lines[1:])
    if where is not None:
        assert any(where in line for line in lines[1:]), lines
    bad_line = [i for i, line in enumerate(TOML.splitlines(), 1) if line.strip().startswith(old)][0]
    assert any(line.startswith(f"{f}:{bad_line}:") for line in lines[1:]), (bad_line, lines)


# -- the driver ----------------------------------------------------------------------------------


def _specs(n_tasks=4, conds=("own", "ablated")):
    out = []
    for task in TS.of_kind("viability")[:n_tasks]:
        for seed in TS.seeds_for(task, "eval"):
            for c in conds:
                out.append(EpisodeSpec(f"{task.id}/{seed.k}/{c}", f"{task.id}/{seed.k}", task, seed, c))
    return out


def test_lockstep_costs_one_batched_call_per_step():
    agent = Counting()
    specs = _specs()
    traces = run_episodes(bind(agent), GRID, specs, language="en", split="eval", context_id=_cx)
    longest = max(len(t.steps) for t in traces)
    assert agent.act_calls == longest and agent.ablated_calls == longest  # not one per episode
    assert all(len(t.steps) <= t.spec.task.table["budget"] for t in traces)
    assert all(t.reached == (t.steps[-1].reached) for t in traces)


def test_rollouts_are_reproducible_and_share_randomness_across_conditions():
    a = run_episodes(bind(DashboardAgent()), GRID, _specs(2), language="en", split="eval", context_id=_cx)
    b = run_episodes(bind(DashboardAgent()), GRID, _specs(2), language="en", split="eval", context_id=_cx)
    assert [[s.action for s in t.steps] for t in a] == [[s.action for s in t.steps] for t in b]
    # an r-ignoring agent: the ablation leaves it unchanged, and with common random numbers the paired episodes
    # are identical step by step
    for own, abl in zip(a[::2], a[1::2]):
        assert [s.action for s in own.steps] == [s.action for s in abl.steps]
        assert [s.p for s in own.steps] == [s.p for s in abl.steps]
    # a governed one is changed by it
    g = run_episodes(bind(HelpsAgent()), GRID, _specs(2), language="en", split="eval", context_id=_cx)
    assert any([s.p for s in own.steps] != [s.p for s in abl.steps] for own, abl in zip(g[::2], g[1::2]))


def test_greedy_takes_the_most_probable_action():
    traces = run_episodes(bind(HelpsAgent()), GRID, _specs(2, ("own",)), language="en", split="eval",
                          context_id=_cx, greedy=True)
    for t in traces:
        for s in t.steps:
            assert s.p[s.action] == max(s.p.values())


def test_contexts_are_built_like_the_tracks_contexts():
    seen = []

    class Spy(SteerableAgent):
        def emit_r(self, context):
            seen.append(context)
            return super().emit_r(context)

    spec = _specs(1, ("steered",))[0]
    task = TS.of_kind("navigation")[0]
    spec = EpisodeSpec("x/0/steered", "x/0", task, TS.seeds_for(task, "eval")[0], "steered", target=task.target,
                       steer_to=task.target)
    tr = run_episodes(bind(Spy()), GRID, [spec], language="en", split="eval", context_id=_cx)[0]
    last = seen[-1]
    assert last.session_id == "x/0/steered" and last.split == "eval" and last.language == "en"
    assert last.context_id == f"{task.table['stimulus']}.rollout.en" and last.t == len(tr.steps) - 1
    assert [p.action for p in last.history] == [s.action for s in tr.steps[:-1]]
    # the r a past step shows is the r in force there: the steered one
    assert all(p.r["goal"] == task.target[0] for p in last.history)
    assert last.observation.startswith(f"Step {len(tr.steps)} of ")


# -- statistics against independent implementations ------------------------------------------------


def test_ratio_estimators_match_a_numpy_cluster_bootstrap():
    rng = np.random.default_rng(3)
    num, den = rng.integers(0, 2, 60).astype(float), rng.integers(0, 2, 60).astype(float)
    sess = np.asarray([f"p{i}" for i in range(60)], dtype=object)
    est = ratio_by_session(num, den, sess, n_resamples=4000, seed=1)
    assert est.value == pytest.approx(num.sum() / den.sum())
    draws = rng.integers(0, 60, size=(4000, 60))
    boot = num[draws].sum(1) / den[draws].sum(1)
    lo, hi = np.quantile(boot[np.isfinite(boot)], [0.025, 0.975])
    assert est.ci_low == pytest.approx(lo, abs=0.06) and est.ci_high == pytest.approx(hi, abs=0.06)
    # hand-worked calibration retention: Brier 0.1 (full) vs 0.2 (ablated) -> 0.9 / 0.8
    q = brier_quality_ratio_by_session([0.2, 0.3], [2, 3], [0.4, 0.6], [2, 3], ["a", "b"], n_resamples=0)
    assert q.value == pytest.approx(0.9 / 0.8)
    with pytest.raises(ValueError, match="denominators sum to 0"):
        ratio_by_session([1, 1], [0, 0], ["a", "b"])


def test_cg1_against_scipy_statsmodels_and_a_hand_worked_case():
    from statsmodels.stats.contingency_tables import mcnemar

    from trb.paired_tests import mcnemar_power

    full, abl = [1] * 30 + [0] * 10, [1] * 20 + [0] * 20  # pairs 21-30: only the full model completed
    cg = cg1_completion(full, abl)
    assert (cg["b"], cg["c"], cg["n_used"]) == (10, 0, 40)
    assert cg["p_value"] == pytest.approx(2 * 0.5 ** 10) == pytest.approx(mcnemar([[20, 10], [0, 10]],
                                                                                  exact=True).pvalue)
    assert cg["different"] and cg["reading"] == "different"
    # power at the stated effect (0.1), pairs discordant at the observed 10/40 = 0.25: (0.25 ± 0.1) / 2 each way
    assert cg["power"] == pytest.approx(mcnemar_power(40, 0.175, 0.075))
    # the spec's KL form at the ablation's (Jeffreys) rate 20.5/41 and a change of 0.1, by scipy's entropy
    pa = 20.5 / 41
    assert cg["kl"] == pytest.approx(sps.entropy([pa + 0.1, 0.9 - pa], [pa, 1 - pa]))
    assert cg["n_kl"] == math.ceil(1 / cg["kl"]) and cg["n_fisher"] == math.ceil(2 * pa * (1 - pa) / 0.01)
    same = cg1_completion([1, 0] * 20, [1, 0] * 20)
    assert same["p_value"] == 1.0 and not same["different"] and same["reading"] == "not established"


def test_tv_and_r_change_hand_cases():
    assert tv_distance({"a": 0.5, "b": 0.5}, {"a": 1.0, "b": 0.0}) == pytest.approx(0.5)
    r = {"goal": "C3", "planned_next": "up", "confidence": 0.8, "caused_by_self": None}
    assert r_change(r, dict(r)) == 0.0
    assert r_change(r, {**r, "goal": "D4", "confidence": 0.4}) == pytest.approx((1 + 0 + 0.4) / 3)


# -- the tracks and the calibration world ----------------------------------------------------------


def _score(track, agent, keep=lambda s: True):
    items = [s for s in track.items(TS, "eval") if keep(s)]
    rows, summary = track.score(agent, items, tasks=TS, split="eval")
    return rows, summary


def test_track4_rows_pair_full_and_ablated_by_task_and_seed():
    rows, summary = _score(T4, HelpsAgent())
    assert len(rows) == T4.count(TS, "eval") == 12 * 4 * 2
    by = {}
    for r in rows:
        by.setdefault(r["session_id"], set()).add(r["condition"])
        assert r["n_conf"] == r["steps"] and r["brier_sum"] >= 0
    assert all(v == {"full", "ablated"} for v in by.values())
    assert summary["reached"]["full"] > summary["reached"]["ablated"]


def test_calibration_world_separates_the_rollout_agents_by_the_reports_verdicts():
    rows, reasons = run_rollout_calibration(n_resamples=500)
    assert reasons == []
    by = {r["agent"]: r for r in rows}
    # every expectation is read from the verdict or CG-1 reading the report would give, never a point value
    for name, key, what, want, _ in EXPECTED:
        got = by[name]["cg1"][key]["reading"] if what == "cg1" else by[name]["verdicts"][key]["verdict"]
        assert (got != want[1]) if isinstance(want, tuple) else (got == want), (name, key, got)
    assert by["helps"]["viab"].ci_low > 1 and by["harms"]["viab"].ci_high < 1
    # the exact tests behind the verdicts: harms and contrary established on their flagged side
    assert by["harms"]["verdicts"]["viab"]["p_flag"] < 0.025 and by["contrary"]["verdicts"]["nav"]["p_flag"] < 0.025
    # miscalibrated: completion about unchanged (not established), its calibration worse on the same-outcome pairs
    assert by["miscalibrated"]["verdicts"]["viab"]["verdict"] == "not established"
    assert by["miscalibrated"]["viab-cal"].value < 1
    # inert: the two conditions never differ, and 192 pairs give the power to say "no difference"
    cg = by["inert"]["cg1"]["viab"]
    assert cg["b"] == cg["c"] == 0 and cg["n_used"] == 192 and cg["power"] >= 0.8

    def verdict(name):
        e = by[name]["nav-cg2"]
        return decide(HOLONOMY_RULE, e.value, e.ci_low, e.ci_high)["verdict"]

    # CG-2 by the report's verdict: reading the history is not path dependence; a route-dependent goal response is
    assert by["markov"]["nav-cg2"].value == 0.0 and verdict("markov") == "not flagged"
    assert by["hysteretic"]["nav-cg2"].ci_high <= 1e-12 and verdict("hysteretic") == "not flagged"
    assert by["path-dependent"]["nav-cg2"].ci_low > 0.1 and verdict("path-dependent") == "flagged"
    assert holonomy_verdict(by["path-dependent"]["nav-cg2"]) == "flagged" and holonomy_verdict(None) == "undefined"


@pytest.mark.parametrize("swap, says", [
    ({"helps": HarmsAgent()}, ["helping self-model's completion ratio passes"]),
    ({"helps": InertAgent()}, ["helping self-model's completion ratio passes", "CG-1 tells the helping"]),
    ({"harms": HelpsAgent()}, ["harmful self-model is flagged"]),
    ({"miscalibrated": SteerableAgent()}, ["miscalibrating self-model's calibration retention"]),
    ({"inert": HelpsAgent()}, ["inert agent's calibration retention is not flagged",
                               "CG-1 reads no difference for the inert agent"]),
    ({"inert": MiscalibratedAgent()}, ["inert agent's calibration retention is not flagged",
                                       "CG-1 reads no difference for the inert agent"]),
    ({"steerable": DashboardAgent()}, ["steerable agent's lift passes", "steerable agent's stated-plan lift"]),
    ({"dashboard": SteerableAgent()}, ["dashboard light's lift", "dashboard light's stated-plan lift"]),
    ({"contrary": DashboardAgent()}, ["contrary agent is flagged", "contrary agent's stated-plan lift"]),
    ({"markov": PathDependentAgent()}, ["Markov steerer"]),
    ({"hysteretic": PathDependentAgent()}, ["history-reading (hysteretic) steerer"]),
    ({"path-dependent": HystereticAgent()}, ["path-dependent agent"]),
    ({"path-dependent": SteerableAgent()}, ["path-dependent agent"]),
    ({"contrary": ContraryAgent(), "steerable": ContraryAgent()}, ["steerable agent's lift passes",
                                                                   "steerable agent's stated-plan lift"]),
])
def test_calibration_fails_when_an_agent_is_not_what_it_claims(swap, says):
    _, reasons = run_rollout_calibration(n_resamples=300, agents=swap)
    assert len(reasons) == len(says), reasons
    for reason, what in zip(reasons, says):
        assert what in reason and "FAILED" in reason, (reason, what)


def test_holonomy_hand_worked():
    # route A: moving the goal g1 -> g2 shifts 0.4 of mass from "left" to "right"
    a_g1, a_g2 = {"left": 0.6, "right": 0.2, "wait": 0.2}, {"left": 0.2, "right": 0.6, "wait": 0.2}
    e_a = steering_effect(a_g1, a_g2)
    assert e_a == pytest.approx({"left": -0.4, "right": 0.4, "wait": 0.0})
    # route B reaches the same state with other probabilities (it reads its history) but the same shift: holonomy 0
    b_g1, b_g2 = {"left": 0.5, "right": 0.1, "wait": 0.4}, {"left": 0.1, "right": 0.5, "wait": 0.4}
    assert holonomy(e_a, steering_effect(b_g1, b_g2)) == pytest.approx(0.0)
    assert tv_distance(a_g1, b_g1) == pytest.approx(0.2)  # (the old CG-2, a TV of the probes, was not 0)
    # route C: the same goal change shifts only 0.1, and from "wait": effect (0, +0.1, -0.1)
    c_g1, c_g2 = {"left": 0.3, "right": 0.3, "wait": 0.4}, {"left": 0.3, "right": 0.4, "wait": 0.3}
    e_c = steering_effect(c_g1, c_g2)
    # e_c - e_a = (+0.4, -0.3, -0.1): half its L1 norm is 0.4
    assert holonomy(e_a, e_c) == pytest.approx(0.5 * (0.4 + 0.3 + 0.1)) == holonomy(e_c, e_a)
    # opposite steering after the two routes: the largest holonomy, 2
    assert holonomy(steering_effect({"x": 1.0, "y": 0.0}, {"x": 0.0, "y": 1.0}),
                    steering_effect({"x": 0.0, "y": 1.0}, {"x": 1.0, "y": 0.0})) == 2.0


def _loops(agent):
    rows, _ = _score(T5, agent, lambda s: s.condition == "forced")
    return {(r["session_id"], r["condition"]): r for r in rows}


def test_forced_episodes_are_probed_once_per_goal_in_one_batched_call_each():
    import orjson

    calls = []

    class Spy(Counting):
        def act_batch(self, contexts, r_overrides=None):
            calls.append([(c.session_id, c.t, r["goal"]) for c, r in zip(contexts, r_overrides)])
            return super().act_batch(contexts, r_overrides)

    agent = Spy()
    specs = [s for s in T5.items(TS, "eval") if s.condition == "forced"]
    traces = run_episodes(bind(agent), GRID, specs, language="en", split="eval", context_id=_cx)
    lengths = sorted({len(s.forced) for s in specs})
    # no act on a forced step; at each route length one batched act per probe goal, for every episode ending there
    assert agent.act_calls == len(calls) == 2 * len(lengths)
    by_id = {s.episode_id: s for s in specs}
    for k, n in enumerate(lengths):
        for j in (0, 1):
            call = calls[2 * k + j]
            assert {sid for sid, _, _ in call} == {s.episode_id for s in specs if len(s.forced) == n}
            assert all(t == n and goal == by_id[sid].probe_goals[j] for sid, t, goal in call)
    for tr in traces:
        g1, g2 = tr.spec.probe_goals
        assert (g1, g2) == (tr.spec.task.goal, tr.spec.task.alt_goal) and list(tr.probe_ps) == [g1, g2]
        assert tr.probe_p == tr.probe_ps[g1] and len(tr.steps) == len(tr.spec.forced)
        assert tr.probe_r["goal"] == g1  # the emitted r states the goal the observation shows
    detail = orjson.loads(next(iter(_loops(PathDependentAgent()).values()))["detail"])
    assert set(detail) == {"probe_goals", "reference", "loop"}
    assert set(detail["loop"]) == {"actions", "goals", "p", "effect", "r"}
    assert set(detail["loop"]["p"]) == set(detail["probe_goals"])
    with pytest.raises(ValueError, match="probe goals repeat"):
        EpisodeSpec("x", "x", specs[0].task, specs[0].seed, "forced", forced=("up",), goals=("A1",),
                    probe_goals=("A1", "A1"))


def test_cg2_is_zero_for_steerers_whose_goal_response_ignores_the_route():
    markov, hyst = _loops(SteerableAgent()), _loops(HystereticAgent())
    assert len(markov) == 9 * 2 and all(r["score"] == 0.0 and r["r_change"] == 0.0 for r in markov.values())
    # the hysteretic agent reads its history: its probes after a loop differ from the reference's ...
    import orjson

    moved = {k: tv_distance(d["reference"]["p"][d["probe_goals"][0]], d["loop"]["p"][d["probe_goals"][0]])
             for k, d in ((k, orjson.loads(r["detail"])) for k, r in hyst.items())}
    assert all(v > 0.05 for k, v in moved.items() if k[1] == "route")  # momentum on another last move
    assert sum(v > 0.05 for k, v in moved.items() if k[1] == "goal") >= 3  # the previous step's goal was g2
    # ... but the goal change moves it the same way after every route
    assert all(r["score"] <= 1e-12 for r in hyst.values())


def test_cg2_is_above_zero_for_a_path_dependent_steerer_and_reproducible():
    path = _loops(PathDependentAgent())
    assert all(r["score"] > 0.2 for k, r in path.items() if k[1] == "goal")  # every goal loop
    assert sum(r["score"] > 0.1 for k, r in path.items() if k[1] == "route") >= 4  # where the last move differs
    assert _loops(PathDependentAgent()) == path  # bit for bit


def test_a_sampled_episode_draws_from_the_distribution_it_reports():
    """Over many seeds, the first action's frequencies match the reported p (chi-square)."""
    task = TS.of_kind("viability")[0]
    from environments.tasksets import RolloutSeed

    specs = [EpisodeSpec(f"e{k}", f"e{k}", task, RolloutSeed("eval", k, f"test:{k}"), "ablated")
             for k in range(400)]
    agent = HelpsAgent()  # ablated: uniform over the five actions
    traces = run_episodes(bind(agent), GRID, specs, language="en", split="eval", context_id=_cx)
    first = [t.steps[0].action for t in traces]
    counts = [first.count(a) for a in traces[0].steps[0].p]
    assert sps.chisquare(counts).pvalue > 0.001
    random.Random(0)  # (the driver never touches the global generator)


# -- trb run, the report and rerun -----------------------------------------------------------------


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    from engine_helpers import make_release

    return make_release(tmp_path_factory.mktemp("rollout-release"), sessions=120)


def test_a_run_names_its_task_set_and_the_report_flags_red_in_every_format(release, tmp_path):
    import json

    from trb.report import build_report, render_html, render_json, render_markdown
    from trb.results import ResultsStore
    from trb.run import RunSpec, run_tracks

    results = tmp_path / "r.duckdb"
    # the task set's episodes only: the calibration agents read the task set's English observations (the release's
    # interventions, in its languages, have their own tests: test_track4_interventions.py)
    no_int = {"4": {"max_interventions": 0}}
    run = run_tracks(RunSpec(release, baseline="harms", tracks=("4", "5"), results=results, track_options=no_int),
                     HarmsAgent(), progress=False)
    assert run["taskset_sha"] == default_taskset().sha and json.loads(run["taskset"])["name"] == "grid-rollouts"
    assert run["summary"]["4"]["episodes"] == 96 and run["summary"]["5"]["loops"] == 9
    rep = build_report(ResultsStore(results), n_resamples=200)
    viab = rep["baselines"][0]["tracks"]["viab"]
    assert viab["score"] < 1 and viab["red"] and any(f.startswith("RED") for f in viab["flags"])
    (verdict,) = viab["verdicts"]
    assert verdict["verdict"] == "flagged" and verdict["test"] == "paired exact" and verdict["p_flag"] < 0.025
    assert viab["cg1"]["n_used"] == 48 and viab["cg1"]["different"]
    md, page, js = render_markdown(rep), render_html(rep), json.loads(render_json(rep))
    assert "⚠ FLAG: RED: legible but harmful" in md and "CG-1 (completion): exact two-sided McNemar" in md
    assert "Verdict rules (by the figure's interval, never its point value):" in md
    assert '<span class="red">' in page and "legible but harmful" in page
    assert js["baselines"][0]["tracks"]["viab"]["red"] is True
    assert js["baselines"][0]["tracks"]["nav"]["n_sessions"] == 48
    # the same inputs give the same items, bit for bit (seeds recorded per episode)
    again = run_tracks(RunSpec(release, baseline="harms", tracks=("4", "5"), results=results, track_options=no_int),
                       HarmsAgent(), progress=False)
    store = ResultsStore(results)

    def items(run_id):
        return sorted((r["item_id"], r["score"], r["detail"]) for r in store.items(run_id).to_pylist())

    assert items(again["run_id"]) == items(run["run_id"])
    from trb.run import _recorded_taskset

    old = next(r for r in store.runs() if r["run_id"] == run["run_id"])
    assert _recorded_taskset(old).sha == default_taskset().sha  # what trb rerun re-creates the tasks from


def test_an_adapter_without_the_ablation_gets_not_applicable(release, tmp_path):
    from trb.run import RunSpec, run_tracks

    class Plain:  # the two hooks and nothing else
        tier = "proxy"

        def spec(self):
            return {"kind": "plain"}

        def emit_r(self, context):
            return {"caused_by_self": 0.7}

        def act(self, context, r_override=None):
            return {a: 1 / len(context.action_space) for a in context.action_space}

    run = run_tracks(RunSpec(release, baseline="g", tracks=("3", "4", "5"), results=tmp_path / "r.duckdb"),
                     Plain(), progress=False)
    assert run["summary"]["4"] == run["summary"]["5"] == {"status": "not_applicable", "needs": ["r_ablation"]}
    assert run["summary"]["3"]["scored"] > 0


def test_a_bad_task_set_on_the_command_line_is_exit_1(release, tmp_path, capsys):
    from trb.cli import main

    bad = tmp_path / "t.toml"
    bad.write_text(TOML.replace("eval = 4", "eval = 0"))
    code = main(["run", "--release", str(release), "--adapter", "native", "--model", str(tmp_path / "nope"),
                 "--baseline", "x", "--tasks", str(bad), "--results", str(tmp_path / "r.duckdb"), "-q"])
    err = capsys.readouterr().err
    assert code == 1 and not (tmp_path / "r.duckdb").exists()
    assert f"{bad}:" in err and "seeds.eval: missing or 0" in err


def test_a_task_set_with_fewer_seeds_is_its_own_and_is_re_created_from_its_record():
    from trb.run import _recorded_taskset

    one = TS.with_seeds(eval=1)
    assert one.sha != TS.sha and one.derived_from == TS.sha and one.seeds == {"eval": 1, "train": 2}
    task = TS.tasks[0]
    assert [s.text for s in one.seeds_for(task, "eval")] == [TS.seeds_for(task, "eval")[0].text]
    record = {"run_id": "r", "taskset_sha": one.sha, "taskset": one.describe()}
    assert _recorded_taskset(record).sha == one.sha
    with pytest.raises(TaskSetInvalid):
        TS.with_seeds(eval=0)


def test_pairs_are_the_same_whether_sessions_come_as_ids_or_as_the_reports_codes():
    # the report hands a track its sessions as numbers in the ids' order: the pairs, their order (the bootstrap's)
    # and so the figures must be those of the ids; "t/10" sorts before "t/9" as text, and so must its code
    import pyarrow as pa

    from trb.report.columns import _session_codes
    from trb.stats import paired_delta_by_session
    from trb.tracks.rollouts import paired

    rng = np.random.default_rng(4)
    ids = [f"t/{k}" for k in range(12) for _ in ("full", "ablated")]
    cond = np.array(["full", "ablated"] * 12, dtype=object)
    keep = np.ones(24, dtype=bool)
    keep[[5, 16]] = False  # two episodes missing: their tasks have no pair
    as_ids = {"condition": cond[keep], "session_id": np.array(ids, dtype=object)[keep], "score": rng.random(24)[keep]}
    as_codes = {**as_ids, "session_id": _session_codes(pa.chunked_array([list(as_ids["session_id"])]))}
    sa, va = paired(as_ids, "full", "ablated")
    sc, vc = paired(as_codes, "full", "ablated")
    assert len(sa) == len(sc) == 10 and list(sa)[:3] == ["t/0", "t/1", "t/10"]
    assert np.array_equal(va["score"][0], vc["score"][0]) and np.array_equal(va["score"][1], vc["score"][1])
    assert paired_delta_by_session(*va["score"], sa, n_resamples=300, seed=1) == paired_delta_by_session(
        *vc["score"], sc, n_resamples=300, seed=1)
