"""The simulated subject: its policy depends on r, exactly as documented."""

from __future__ import annotations

import math
import random

import pytest

from simworld import (
    ACTIONS,
    POPULATIONS,
    STIMULUS_SETS,
    GridWorld,
    State,
    Subject,
    parse_cell,
    rollout,
)

OPEN7 = STIMULUS_SETS["open-7x7-breeze"]
WALLS8 = STIMULUS_SETS["walls-8x8-breeze"]


def _subject(**kw) -> Subject:
    params = dict(w_plan=2.0, w_goal=1.0, w_hesitate=1.0, epsilon=0.1)
    params.update(kw)
    return Subject("subj-test", POPULATIONS["careful"], **params)


def _state(stim, cell: str, goal: str = "B2") -> State:
    return State(stim.layout, parse_cell(cell), parse_cell(goal), 0, 10)


def _close(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(math.isclose(a[k], b[k], abs_tol=1e-12) for k in a)


def test_hand_worked_policy():
    s = _subject()
    st = _state(OPEN7, "C3")
    # plan and goal agree: only "right" brings C3 closer to E3.
    # p(right) = 0.1/5 + 0.9 * (2 + 1) / 3 = 0.92; every other action 0.02
    p = s.action_distribution(st, {"goal": "E3", "planned_next": "right", "confidence": 1.0})
    assert _close(p, {"up": 0.02, "down": 0.02, "left": 0.02, "right": 0.92, "wait": 0.02})
    # plan "up" instead: p(up) = 0.02 + 0.9 * 2/3 = 0.62, p(right) = 0.02 + 0.9 * 1/3 = 0.32
    p = s.action_distribution(st, {"goal": "E3", "planned_next": "up", "confidence": 1.0})
    assert _close(p, {"up": 0.62, "down": 0.02, "left": 0.02, "right": 0.32, "wait": 0.02})
    # confidence 0.5 adds a hesitation weight h = 1.0 * 0.5 on wait: total 3.5
    # p(right) = 0.02 + 0.9 * 3/3.5, p(wait) = 0.02 + 0.9 * 0.5/3.5
    p = s.action_distribution(st, {"goal": "E3", "planned_next": "right", "confidence": 0.5})
    assert _close(p, {"up": 0.02, "down": 0.02, "left": 0.02, "right": 0.02 + 0.9 * 3 / 3.5,
                      "wait": 0.02 + 0.9 * 0.5 / 3.5})
    # goal E5 (up and right both bring C3 closer): the goal weight splits between them
    p = s.action_distribution(st, {"goal": "E5", "planned_next": "right", "confidence": 1.0})
    assert _close(p, {"up": 0.02 + 0.15, "down": 0.02, "left": 0.02, "right": 0.02 + 0.6 + 0.15, "wait": 0.02})
    # standing on the stated goal: the goal weight goes to wait
    p = s.action_distribution(st, {"goal": "C3", "planned_next": "left", "confidence": 1.0})
    assert _close(p, {"up": 0.02, "down": 0.02, "left": 0.62, "right": 0.02, "wait": 0.32})


def test_changing_r_changes_the_distribution():
    s = Subject.from_population("subj-x", "careful", random.Random(1))
    st = _state(OPEN7, "D4")
    base = {"goal": "F4", "planned_next": "right", "caused_by_self": 0.9, "confidence": 0.8}
    p0 = s.action_distribution(st, base)
    assert max(p0, key=p0.get) == "right"
    for change in ({"planned_next": "left"}, {"goal": "B4"}, {"goal": "D6", "planned_next": "up"},
                   {"confidence": 0.1}):
        p1 = s.action_distribution(st, {**base, **change})
        tv = 0.5 * sum(abs(p0[a] - p1[a]) for a in ACTIONS)
        assert tv > 0.05, change
    # an r snapshot of the schema works as well as a dict
    from schemas.models import RSnapshot

    assert s.action_distribution(st, RSnapshot(**base)) == p0
    # caused_by_self does not enter the policy
    assert s.action_distribution(st, {**base, "caused_by_self": 0.1}) == p0
    # no r at all: only the noise is left
    assert s.action_distribution(st, None) == dict.fromkeys(ACTIONS, 0.2)


def test_unusable_slots_drop_their_term():
    s = _subject()
    st = _state(OPEN7, "C3")
    only_goal = s.action_distribution(st, {"goal": "E3"})
    assert _close(only_goal, {"up": 0.02, "down": 0.02, "left": 0.02, "right": 0.92, "wait": 0.02})
    for junk in ({"goal": "Z99", "planned_next": "fly"}, {"goal": 3, "planned_next": ["up"]}, {}):
        assert s.action_distribution(st, junk) == dict.fromkeys(ACTIONS, 0.2)
    # confidence outside [0, 1] is clipped, never a negative probability
    p = s.action_distribution(st, {"goal": "E3", "planned_next": "right", "confidence": -3.0})
    assert min(p.values()) >= 0 and math.isclose(sum(p.values()), 1.0, abs_tol=1e-12)


def test_path_and_direct_navigators_differ_at_walls():
    st = _state(WALLS8, "C4")
    r = {"goal": "E4", "confidence": 1.0}
    careful = Subject("a", POPULATIONS["careful"], 2.0, 1.0, 1.0, 0.0)
    impulsive = Subject("b", POPULATIONS["impulsive"], 2.0, 1.0, 1.0, 0.0)
    assert careful.action_distribution(st, r)["down"] == pytest.approx(1.0)  # around the wall
    assert impulsive.action_distribution(st, r)["right"] == pytest.approx(1.0)  # into the wall


def test_distributions_sum_to_one_everywhere():
    rng = random.Random(7)
    for pop in POPULATIONS:
        s = Subject.from_population(f"s-{pop}", pop, rng)
        for _ in range(300):
            stim = rng.choice(list(STIMULUS_SETS.values()))
            pos = rng.choice(stim.layout.cells)
            r = {"goal": f"{rng.choice('ABCDEFGHIJ')}{rng.randint(1, 10)}",
                 "planned_next": rng.choice(ACTIONS + ("x",)), "confidence": round(rng.random(), 2)}
            p = s.action_distribution(State(stim.layout, pos, pos, 0, 10), r)
            assert list(p) == list(ACTIONS)
            assert abs(math.fsum(p.values()) - 1.0) < 1e-12 and min(p.values()) > 0


def test_attribution_beliefs_by_population():
    """Careful subjects tell self from drift; overclaimers claim every improvement."""
    beliefs = {pop: {"self": [], "exogenous": []} for pop in ("careful", "overclaiming")}
    for pop in beliefs:
        s = Subject.from_population("s", pop)
        rng = random.Random(11)
        for seed in range(300):
            w = GridWorld(OPEN7, rng=random.Random(seed))
            w.reset("B2", "F6", 12)
            steps = rollout(s, w, rng)
            for before, after in zip(steps, steps[1:]):
                res = before.result
                if res.improved and res.cause in ("self", "exogenous"):
                    beliefs[pop][res.cause].append(after.r_reported["caused_by_self"])
    mean = {pop: {c: sum(v) / len(v) for c, v in d.items()} for pop, d in beliefs.items()}
    assert mean["careful"]["self"] > 0.8 and mean["careful"]["exogenous"] < 0.2
    assert mean["overclaiming"]["self"] > 0.8 and mean["overclaiming"]["exogenous"] > 0.8


def test_steering_r_moves_the_subject():
    """Track 5 in miniature: steering r.goal to the task's goal beats the no-r ablation."""
    s = Subject.from_population("s", "careful")

    def reach_rate(steer) -> float:
        rng = random.Random(3)
        reached = 0
        for _ in range(150):
            w = GridWorld(OPEN7, rng=rng, drift=0.0)
            w.reset("B2", "F5", 9)
            reached += rollout(s, w, rng, steer=steer)[-1].result.reached
        return reached / 150

    steered = reach_rate(lambda state, r: {**r, "goal": "F5", "planned_next": None, "confidence": 1.0})
    ablated = reach_rate(lambda state, r: None)
    elsewhere = reach_rate(lambda state, r: {**r, "goal": "B6", "planned_next": None, "confidence": 1.0})
    assert steered > 0.9 and ablated < 0.2 and elsewhere < 0.2


def test_rollout_records_the_policy_it_drew_from():
    s = Subject.from_population("s", "impulsive", random.Random(2))
    rng = random.Random(4)
    w = GridWorld(WALLS8, rng=rng)
    w.reset("A1", "E5", 14)
    steps = rollout(s, w, rng)
    assert 1 <= len(steps) <= 14 and steps[-1].result.done
    for k, tr in enumerate(steps):
        assert tr.state.t == k
        assert tr.r is tr.r_reported
        assert tr.distribution == s.action_distribution(tr.state, tr.r_reported)
        assert tr.r_reported["caused_by_self"] is None if k == 0 else 0 <= tr.r_reported["caused_by_self"] <= 1
