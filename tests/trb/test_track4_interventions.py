"""Track 4 on the release's interventions: the grid's resume hook, do(r′) in closed loop, rows, pairing, the
metric, its flag and CG-1, the not-resumable count, and the report.

Real parts: a release simulated and cut by the project's own code, the real engine (``run_tracks``), the real
grid environment and results store. The agents are scripted here; the expected outcomes are worked out with
simworld directly (its world stepped by hand with the episode's recorded seed), not with the engine's code.
"""

from __future__ import annotations

import json
import random

import pytest

from environments.base import resumable
from environments.grid import ENVIRONMENT as GRID
from environments.tasksets import RolloutSeed, default_taskset
from simworld import LANGUAGES, STIMULUS_SETS, GridWorld, parse_cell
from simworld.render import parse_observation
from trb.adapters.capabilities import BatchedAct, RAblation
from trb.releases import Release
from trb.tracks.track4 import TRACK as T4
from trb.tracks.track4_interventions import NOT_RESUMABLE, intervention_items, score_interventions


def _where(context):
    stim = STIMULUS_SETS[(context.context_id or "").split(".")[0]]
    seen = parse_observation(context.observation, context.language, stim.layout)
    return stim.layout, parse_cell(seen["pos"]), parse_cell(seen["goal"])


def _toward(layout, pos, goal) -> str:
    moves = layout.improving_actions(pos, goal, "path") if goal is not None and layout.is_free(goal) else None
    return moves[0] if moves else "wait"


class Follower:
    """Greedy and scripted, in every language: acts (probability 1) on the first move toward r's goal; states the
    goal it sees; with no r (the ablation) it waits. ``seen`` records every context it acts in."""

    tier = "native"
    capabilities = (BatchedAct, RAblation)

    def __init__(self, ablated_moves: bool = False):
        self.ablated_moves = ablated_moves
        self.seen = []

    def spec(self):
        return {"kind": "follower"}

    def emit_r(self, context):
        layout, pos, goal = _where(context)
        return {"goal": context.observation and f"{'ABCDEFGHIJ'[goal[0]]}{goal[1] + 1}", "confidence": 0.5}

    def _one(self, space, a):
        return {b: 1.0 if b == a else 0.0 for b in space}

    def act_batch(self, contexts, r_overrides=None):
        out = []
        for c, r in zip(contexts, r_overrides or [None] * len(contexts)):
            self.seen.append((c, r))
            layout, pos, _ = _where(c)
            r = r or self.emit_r(c)
            out.append(self._one(c.action_space, _toward(layout, pos, parse_cell(r.get("goal")))))
        return out

    def act(self, context, r_override=None):
        return self.act_batch([context], [r_override])[0]

    def act_ablated_batch(self, contexts):
        out = []
        for c in contexts:
            layout, pos, goal = _where(c)
            out.append(self._one(c.action_space, _toward(layout, pos, goal) if self.ablated_moves else "wait"))
        return out

    def act_ablated(self, context):
        return self.act_ablated_batch([context])[0]


class Harmful(Follower):
    """Ablated it walks to the goal it sees; acting through r it walks to the cell mirrored through the grid's
    centre (its r misstates the goal): legible but harmful."""

    def emit_r(self, context):
        layout, pos, goal = _where(context)
        g = (layout.width - 1 - goal[0], layout.height - 1 - goal[1])
        if not layout.is_free(g) or g == goal:
            g = pos
        return {"goal": f"{'ABCDEFGHIJ'[g[0]]}{g[1] + 1}", "confidence": 0.9}

    def __init__(self):
        super().__init__(ablated_moves=True)


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    from engine_helpers import make_release

    return make_release(tmp_path_factory.mktemp("interv-release"), sessions=120)


# -- the grid's resume hook ---------------------------------------------------------------------------


@pytest.mark.parametrize("language", LANGUAGES)
def test_resume_reproduces_every_rendered_state_in_every_language(language):
    for name, stim in STIMULUS_SETS.items():
        rng = random.Random(7)
        start, goals = stim.sample_task(rng)
        world = GridWorld(stim, rng=random.Random(3), language=language)
        world.reset(start, goals[0], 12)
        while not world.done:
            st, obs = world.state, world.observation
            ep = GRID.resume(name, language, obs, seed=11)
            assert ep is not None and ep.observation == obs, (name, obs)
            data = ep.observation_data
            assert (data["cell"], data["goal"], data["t"], data["steps_left"]) == (st.cell, st.goal_cell, st.t,
                                                                                  st.budget - st.t)
            world.step(rng.choice(["up", "down", "left", "right", "wait"]))


def test_resume_refuses_what_is_not_its_own():
    stim = "open-7x7-breeze"
    ok = GridWorld(STIMULUS_SETS[stim], language="en")
    ok.reset("B2", "D4", 9)
    assert GRID.resume(stim, "en", ok.observation, 1) is not None
    assert GRID.resume("no-such-set", "en", ok.observation, 1) is None  # not a grid stimulus set
    assert GRID.resume(stim, "de", ok.observation, 1) is None  # another language's text
    assert GRID.resume(stim, "en", "What is 6 × 7? (A) 42 (B) 41", 1) is None  # an open-ended / imported step
    assert GRID.resume("maze-9x9-gusty", "en", ok.observation, 1) is None  # the long form names its own grid
    assert GRID.resume(stim, "en", "Step 3 of 9. You are at D4. Your goal is D4.", 1) is None  # at the goal
    assert GRID.resume(stim, "en", "Step 12 of 9. You are at B2. Your goal is D4.", 1) is None  # past the budget
    assert resumable("no-such-set", "en", ok.observation, 1) is None


def test_a_recorded_session_resumes_at_every_step_with_its_recorded_observation(release):
    rel = Release(release)
    sess = next(rel.sessions(split="eval"))
    stim = rel.rows("SELECT stimulus_set FROM sessions WHERE session_id = ?", [sess.session_id])[0]["stimulus_set"]
    for t in range(len(sess.steps)):
        c = sess.context(t)
        name, ep = resumable(stim, sess.language, c.observation, 5)
        assert name == "grid" and ep.observation == c.observation
        assert ep.observation_data["t"] == t  # step n of the budget is the recorded step t + 1


# -- do(r′) in closed loop: hand-worked with simworld -------------------------------------------------


def _expected(item, agent_first: str | None, ablated: bool, seed_value: int) -> bool:
    """Step the world by hand from the resumed state with the episode's seed: the first action (do(r′)) given,
    then the agent's own rule (toward the goal it sees; the ablation waits)."""
    stim = STIMULUS_SETS[item.stimulus_set]
    seen = parse_observation(item.observation, item.language, stim.layout)
    world = GridWorld(stim, rng=random.Random(seed_value), language=item.language)
    world.reset(seen["pos"], seen["goal"], seen["budget"], t=seen["n"] - 1)
    first = True
    while not world.done:
        st = world.state
        a = "wait" if ablated else (agent_first if first else _toward(stim.layout, st.pos, st.goal))
        first = False
        if world.step(a).reached:
            return True
    return False


def test_a_follower_acts_r_prime_at_t_then_its_own_r_and_reaches_as_worked_by_hand(release):
    rel = Release(release)
    items = list(intervention_items(rel, "eval", 12))
    assert len(items) == 24 and {i.condition for i in items} == {"full", "ablated"}
    agent = Follower()
    rows, summary = score_interventions(agent, items)
    assert summary["not_resumable"]["n"] == 0 and summary["episodes"] == 24
    by = {r["item_id"]: r for r in rows}
    for item in items:
        row = by[f"{item.cf_id}/{item.condition}"]
        assert (row["session_id"], row["t"], row["cf_id"], row["metric"]) == (item.session_id, item.t, item.cf_id,
                                                                              "intervention")
        seed = RolloutSeed(item.split, 0, f"intervention:{item.cf_id}").value
        stim = STIMULUS_SETS[item.stimulus_set]
        seen = parse_observation(item.observation, item.language, stim.layout)
        first = _toward(stim.layout, parse_cell(seen["pos"]), parse_cell(item.r_prime.get("goal")))
        want = _expected(item, first, item.condition == "ablated", seed)
        assert row["score"] == float(want), (item.cf_id, item.condition)
        detail = json.loads(row["detail"])
        if item.condition == "full":
            assert detail["actions"][0] == first and detail["do_r"] == item.r_prime
    # the model saw the recorded context at t, under do(r′), and r′ as step t's r afterwards
    full = {i.cf_id: i for i in items if i.condition == "full"}
    at_t = [(c, r) for c, r in agent.seen if r is not None and c.session_id.endswith("/full")
            and c.t == full[c.session_id.split("/")[0]].t]
    assert len(at_t) == len(full)
    for c, r in at_t:
        item = full[c.session_id.split("/")[0]]
        assert c.history == item.history and c.observation == item.observation and r == item.r_prime
        assert c.context_id == item.context_id and c.language == item.language
    later = [c for c, _ in agent.seen if c.session_id.endswith("/full") and c.t == full[c.session_id.split("/")[0]].t + 1]
    assert later and all(c.history[-1].r == full[c.session_id.split("/")[0]].r_prime for c in later)


# -- the engine: rows, pairing, the metric, its flag, CG-1, the report ---------------------------------


def test_the_engine_scores_the_interventions_beside_the_task_set_and_the_report_flags_harm(release, tmp_path):
    from trb.report import build_report, render_markdown
    from trb.results import ResultsStore
    from trb.run import RunSpec, run_tracks

    results = tmp_path / "r.duckdb"
    run = run_tracks(RunSpec(release, baseline="harmful", tracks=("4",), results=results,
                             track_options={"4": {"max_interventions": 20}}), Harmful(), progress=False)
    s = run["summary"]["4"]
    assert s["episodes"] == 96 and s["interventions"]["episodes"] == 40 and s["options"] == {"max_interventions": 20}
    assert s["interventions"]["of_split"] == Release(release).count("counterfactuals", "eval")
    items = ResultsStore(results).items(run["run_id"]).to_pylist()
    ints = [r for r in items if r["metric"] == "intervention"]
    assert len(ints) == 40 and len({r["cf_id"] for r in ints}) == 20
    assert all(sum(1 for x in ints if x["cf_id"] == r["cf_id"]) == 2 for r in ints)  # paired per counterfactual
    rep = build_report(ResultsStore(results), n_resamples=200)
    tr = rep["baselines"][0]["tracks"]
    full = sum(r["score"] for r in ints if r["condition"] == "full")
    abl = sum(r["score"] for r in ints if r["condition"] == "ablated")
    e = tr["viab-int"]
    assert e["score"] == pytest.approx(full / abl) and e["score"] < 1
    (verdict,) = e["verdicts"]
    assert verdict["test"] == "paired exact" and verdict["verdict"] == "flagged" and e["red"]
    assert e["cg1"]["n_used"] == 20 and e["n_sessions"] == len({r["session_id"] for r in ints})
    assert tr["viab-int-full"]["score"] == pytest.approx(full / 20) and "viab" in tr
    md = render_markdown(rep)
    assert "Track 4 — viability after the release's interventions" in md
    assert "acting through the intervened r′ and then r_t lowers completion" in md


def test_interventions_not_resumable_are_counted_named_and_not_applicable(release, tmp_path):
    from trb.report import build_report
    from trb.results import ResultsStore
    from trb.run import RunSpec, run_tracks

    rel = Release(release)
    items = list(intervention_items(rel, "eval", 3))
    broken = [type(i)(**{**i.__dict__, "stimulus_set": "a-lab-world"}) for i in items]
    rows, summary = score_interventions(Follower(), broken)
    assert rows == [] and summary["not_resumable"]["n"] == 3
    assert set(summary["not_resumable"]["items"]) == {i.cf_id for i in items}
    text = [type(i)(**{**i.__dict__, "phi_type": "text"}) for i in items]
    _, summary = score_interventions(Follower(), text)
    assert list(summary["not_resumable"]["by_reason"].values()) == [3]
    # through the engine: a release whose interventions no environment resumes (its stimulus sets renamed)
    T4_items = T4.items

    def renamed(tasks, split, release=None, **kw):
        for i in T4_items(tasks, split, release=release, **kw):
            yield type(i)(**{**i.__dict__, "stimulus_set": "a-lab-world"}) if hasattr(i, "cf_id") else i

    T4.items = renamed
    try:
        run = run_tracks(RunSpec(release, baseline="f", tracks=("4",), results=tmp_path / "r.duckdb",
                                 track_options={"4": {"max_interventions": 5}}), Follower(True), progress=False)
    finally:
        del T4.items
    s = run["summary"]["4"]
    assert s["interventions"]["not_resumable"]["n"] == 5 and s["interventions"]["episodes"] == 0
    tr = build_report(ResultsStore(tmp_path / "r.duckdb"), n_resamples=50)["baselines"][0]["tracks"]
    assert tr["viab-int"]["status"] == "not applicable" and NOT_RESUMABLE in tr["viab-int"]["note"]
    assert tr["viab"]["status"] == "ok"


def test_the_cap_is_a_fixed_sample_and_zero_turns_the_interventions_off(release):
    rel = Release(release)
    tasks = default_taskset()
    n_tasks = T4.count(tasks, "eval")
    assert T4.count(tasks, "eval", release=rel, max_interventions=0) == n_tasks
    assert T4.count(tasks, "eval", release=rel, max_interventions=5) == n_tasks + 10
    a = [i.cf_id for i in intervention_items(rel, "eval", 5)]
    assert a == [i.cf_id for i in intervention_items(rel, "eval", 5)]
    assert set(a) <= {i.cf_id for i in intervention_items(rel, "eval", 8)}
    assert len(list(T4.items(tasks, "eval", release=rel, max_interventions=5))) == n_tasks + 10
