"""The grid world: cells, walls, distances, drift, budgets, texts."""

from __future__ import annotations

import random

import pytest

from simworld import (
    LANGUAGES,
    STIMULUS_SETS,
    GridWorld,
    Layout,
    StimulusSet,
    cell_name,
    parse_cell,
)
from simworld_helpers import bfs, cells_in

OPEN7 = STIMULUS_SETS["open-7x7-breeze"]
WALLS8 = STIMULUS_SETS["walls-8x8-breeze"]


def _still(wind_dir: str | None = None, drift: float = 0.0, walls=()) -> StimulusSet:
    """A 7x7 stimulus set with a fixed wind direction (or none)."""
    wind = {d: (1.0 if d == wind_dir else 0.0) for d in ("up", "down", "left", "right")}
    if wind_dir is None:
        wind = {d: 0.25 for d in wind}
    return StimulusSet("test", "test", Layout(7, 7, walls=walls), drift=drift, wind=wind)


def test_cell_names_are_chess_like():
    assert cell_name((0, 0)) == "A1"
    assert cell_name((2, 2)) == "C3"
    assert cell_name((7, 9)) == "H10"
    assert parse_cell("C3") == (2, 2)
    assert parse_cell("H10") == (7, 9)
    for bad in ("c3", "C0", "3C", "CC3", "", None, 3, "C3 "):
        assert parse_cell(bad) is None


def test_moves_blocking_and_distances_with_walls():
    lay = WALLS8.layout  # walls D3-D6, F6, G6
    c4 = parse_cell("C4")
    assert lay.next_pos(c4, "right") == c4 and lay.blocked(c4, "right")  # D4 is a wall
    assert lay.next_pos(c4, "up") == parse_cell("C5") and not lay.blocked(c4, "up")
    assert lay.blocked(parse_cell("A1"), "left") and lay.blocked(parse_cell("A1"), "down")
    assert not lay.blocked(c4, "wait")
    # C4 -> E4 is 2 apart in Manhattan distance but the wall D3-D6 forces a detour via row 2 or row 7
    assert lay.distance(c4, parse_cell("E4")) == 6
    assert lay.distances(parse_cell("E4")) == bfs(WALLS8, parse_cell("E4"))
    # a path navigator goes around, a direct one walks into the wall
    assert set(lay.improving_actions(c4, parse_cell("E4"), "path")) == {"down"}
    assert lay.improving_actions(c4, parse_cell("E4"), "direct") == ("right",)
    assert lay.improving_actions(c4, c4, "path") == ()
    assert lay.improving_actions(c4, parse_cell("D4"), "path") is None  # a wall is no goal
    assert lay.improving_actions(c4, (30, 30), "direct") is None


def test_goal_cells_are_interior_and_never_goal_cells_the_border():
    for stim in STIMULUS_SETS.values():
        lay = stim.layout
        assert stim.goal_cells and stim.never_goal_cells
        assert set(stim.goal_cells) | set(stim.never_goal_cells) == set(lay.cells)
        assert all(0 < x < lay.width - 1 and 0 < y < lay.height - 1 for x, y in stim.goal_cells)
        assert not set(stim.goal_cells) & lay.walls


def test_step_without_drift_is_the_agents_own_move():
    w = GridWorld(_still(), rng=random.Random(1))
    s = w.reset("C3", "E3", budget=5)
    assert (s.cell, s.goal_cell, s.t, s.distance) == ("C3", "E3", 0, 2)
    r = w.step("right")
    assert r.moved_by_self and not r.blocked and r.drift is None and r.cause == "self"
    assert r.after.cell == "D3" and (r.distance_before, r.distance_after) == (2, 1) and r.improved
    assert not r.done
    r = w.step("right")
    assert r.reached and r.done and r.after.cell == "E3"
    with pytest.raises(RuntimeError):
        w.step("wait")


def test_blocked_move_and_budget_end():
    w = GridWorld(_still(), rng=random.Random(1))
    w.reset("A1", "D4", budget=2)
    r = w.step("left")
    assert r.blocked and not r.moved_by_self and r.after.cell == "A1" and r.cause == "none"
    r = w.step("wait")
    assert r.done and not r.reached
    assert "budget" in r.outcome


def test_drift_pushes_the_agent_and_the_outcome_cannot_tell_who_did_it():
    # the agent's own move: C3 -> D3, no drift
    w_self = GridWorld(_still(), rng=random.Random(1))
    w_self.reset("C3", "F3", budget=5)
    r_self = w_self.step("right")
    # the drift: the agent waits at C3, the wind pushes it right to D3
    w_exo = GridWorld(_still("right", drift=1.0), rng=random.Random(1))
    w_exo.reset("C3", "F3", budget=5)
    r_exo = w_exo.step("wait")
    assert r_self.cause == "self" and r_exo.cause == "exogenous" and r_exo.exogenous and r_exo.drift == "right"
    assert r_exo.after.cell == "D3" and r_exo.improved
    assert r_self.outcome == r_exo.outcome
    assert r_self.observation == r_exo.observation


def test_drift_into_a_wall_does_nothing_and_both_causes_are_told_apart():
    w = GridWorld(_still("right", drift=1.0, walls=("E3",)), rng=random.Random(0))
    w.reset("C3", "C6", budget=5)
    r = w.step("right")  # agent to D3, wind pushes into the wall E3: no push
    assert r.after.cell == "D3" and r.drift is None and r.cause == "self"
    r = w.step("up")  # agent to D4, wind pushes to E4
    assert r.after.cell == "E4" and r.cause == "both"


def test_drift_rate_is_the_stimulus_sets():
    stim = _still(None, drift=0.3)
    w = GridWorld(stim, rng=random.Random(5))
    pushes = 0
    n = 4000
    for _ in range(n // 2):
        w.reset("D4", "B2", budget=2)  # the centre: every push moves the agent
        for _ in range(2):
            pushes += w.step("wait").exogenous
    assert abs(pushes / n - 0.3) < 0.03


def test_reset_rejects_bad_cells():
    w = GridWorld(WALLS8)
    with pytest.raises(ValueError):
        w.reset("D4", "A1", 5)  # a wall
    with pytest.raises(ValueError):
        w.reset("A1", "Z9", 5)
    with pytest.raises(ValueError):
        w.reset("A1", "A1", 5)
    with pytest.raises(ValueError):
        GridWorld(WALLS8, language="xx")
    w.reset("A1", "B2", 3)
    with pytest.raises(ValueError):
        w.step("jump")


def test_every_language_renders_differently_with_canonical_cells():
    obs, outs = {}, {}
    for lang in LANGUAGES:
        w = GridWorld(WALLS8, rng=random.Random(0), language=lang, drift=0.0)
        w.reset("C4", "E4", budget=9)
        obs[lang] = w.observation
        outs[lang] = w.step("up").outcome
        # the cells stay canonical: position, goal, then the walls in reading order
        assert cells_in(obs[lang]) == [parse_cell(c) for c in ("C4", "E4", "D3", "D4", "D5", "D6", "F6", "G6")]
        assert cells_in(outs[lang]) == [parse_cell("C5")]
        for action in ("up", "down", "left", "right", "wait"):
            assert action in obs[lang]
    assert {"en", "de", "fr", "es"} <= set(LANGUAGES)
    assert len(set(obs.values())) == len(LANGUAGES)
    assert len(set(outs.values())) == len(LANGUAGES)
    assert "Your goal is E4" in obs["en"] and "Dein Ziel ist E4" in obs["de"]
    # later steps repeat only the step, the position and the goal
    w = GridWorld(WALLS8, rng=random.Random(0), language="es", drift=0.0)
    w.reset("C4", "E4", budget=9)
    later = w.step("down").observation
    assert later.startswith("Paso 2 de 9") and cells_in(later) == [parse_cell("C3"), parse_cell("E4")]


def test_stimulus_sets_are_connected_and_have_tasks():
    rng = random.Random(3)
    for stim in STIMULUS_SETS.values():
        assert stim.layout.is_connected()
        start, (g1, g2) = stim.sample_task(rng, 2)
        lo, hi = stim.start_distance
        assert g1 != g2 and lo >= 6
        assert lo <= stim.layout.distance(start, g1) <= hi and lo <= stim.layout.distance(start, g2) <= hi
    with pytest.raises(ValueError, match="connected"):
        StimulusSet("cut", "A1 walled off", Layout(7, 7, walls=("A2", "B1")), drift=0.1,
                    wind={"up": 0.25, "down": 0.25, "left": 0.25, "right": 0.25})


def test_every_outcome_kind_is_translated():
    from simworld import render_outcome

    kinds = {
        "closer": dict(distance_before=3, distance_after=2, moved=True, reached=False, out_of_budget=False),
        "farther": dict(distance_before=2, distance_after=3, moved=True, reached=False, out_of_budget=False),
        "level": dict(distance_before=2, distance_after=2, moved=True, reached=False, out_of_budget=False),
        "still": dict(distance_before=2, distance_after=2, moved=False, reached=False, out_of_budget=False),
        "reached": dict(distance_before=1, distance_after=0, moved=True, reached=True, out_of_budget=False),
        "missed": dict(distance_before=2, distance_after=2, moved=False, reached=False, out_of_budget=True),
    }
    texts = {lang: {k: render_outcome(lang, "C3", **kw) for k, kw in kinds.items()} for lang in LANGUAGES}
    for lang in LANGUAGES:
        assert len(set(texts[lang].values())) == len(kinds), lang  # every kind reads differently
        assert all(cells_in(t) == [(2, 2)] for t in texts[lang].values())
    for k in kinds:
        assert len({texts[lang][k] for lang in LANGUAGES}) == len(LANGUAGES), k
