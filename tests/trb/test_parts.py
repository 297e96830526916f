"""A run's parts: whole sessions, closed at the first session boundary past the size, the same cut every time;
summaries merged by adding counts and refusing disagreement (hand-worked cases)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from trb.errors import CheckFailed
from trb.parts import cut_parts, merge_summaries, part_seed


def _items(sessions: list[tuple[str, int]]):
    return [SimpleNamespace(session_id=s, item_id=f"{s}/{k}") for s, n in sessions for k in range(n)]


def test_a_part_closes_at_the_first_session_boundary_once_it_holds_enough_items():
    items = _items([("a", 2), ("b", 3), ("c", 1), ("d", 4), ("e", 1)])
    parts = list(cut_parts("1", items, lambda it: it.session_id, size=3))
    # a,a,b,b,b reaches 3 inside b: b is kept whole; c,d,d,d,d reaches 3 inside d; e alone
    assert [[it.item_id for it in p.items] for p in parts] == [
        ["a/0", "a/1", "b/0", "b/1", "b/2"], ["c/0", "d/0", "d/1", "d/2", "d/3"], ["e/0"]]
    assert [(p.index, p.first_key, p.n_input) for p in parts] == [(0, "a", 5), (1, "c", 5), (2, "e", 1)]
    # every item once, in order, and no session in two parts
    assert [it.item_id for p in parts for it in p.items] == [it.item_id for it in items]
    owners = {}
    for p in parts:
        for it in p.items:
            assert owners.setdefault(it.session_id, p.index) == p.index


def test_the_cut_depends_on_the_work_list_alone_and_no_items_give_one_empty_part():
    items = _items([(f"s{i:02d}", 1 + i % 3) for i in range(30)])
    one = [(p.index, p.first_key, p.n_input) for p in cut_parts("3", iter(items), lambda it: it.session_id, 4)]
    two = [(p.index, p.first_key, p.n_input) for p in cut_parts("3", list(items), lambda it: it.session_id, 4)]
    assert one == two and sum(n for _, _, n in one) == len(items)
    empty = list(cut_parts("2", [], lambda it: it.session_id, 4))
    assert [(p.index, p.first_key, p.items) for p in empty] == [(0, "", [])]
    with pytest.raises(ValueError):
        list(cut_parts("1", items, lambda it: it.session_id, 0))


def test_part_seeds_differ_by_part_and_track_and_repeat():
    seeds = {part_seed(0, t, i) for t in ("1", "3") for i in range(50)}
    assert len(seeds) == 100 and all(0 <= s < 2**63 for s in seeds)
    assert part_seed(7, "1", 3) == part_seed(7, "1", 3) != part_seed(8, "1", 3)


def test_summaries_add_counts_and_keep_what_every_part_shares():
    a = {"scored": 3, "skipped": {"open_ended_step": 1, "x": 0}, "sites": ["h0"], "concepts": 5,
         "identifiability": {"h0": {"goal": {"threshold": 0.5}}}}
    b = {"scored": 4, "skipped": {"open_ended_step": 2, "x": 0}, "sites": ["h0"], "concepts": 5,
         "identifiability": {"h0": {"goal": {"threshold": 0.5}}},
         "not_applicable": {"1-llr": {"needs": ["continuation_scoring"], "n_items": 2}}}
    c = {"scored": 1, "skipped": {"open_ended_step": 0, "x": 0}, "sites": ["h0"], "concepts": 5,
         "identifiability": {"h0": {"goal": {"threshold": 0.5}}},
         "not_applicable": {"1-llr": {"needs": ["continuation_scoring"], "n_items": 1}}}
    merged = merge_summaries([a, b, c], constant=("concepts", "identifiability"))
    assert merged == {"scored": 8, "skipped": {"open_ended_step": 3, "x": 0}, "sites": ["h0"], "concepts": 5,
                      "identifiability": {"h0": {"goal": {"threshold": 0.5}}},
                      "not_applicable": {"1-llr": {"needs": ["continuation_scoring"], "n_items": 3}}}
    assert merge_summaries([]) == {}


def test_parts_that_disagree_on_a_shared_value_are_refused_by_name():
    with pytest.raises(CheckFailed, match="sites"):
        merge_summaries([{"scored": 1, "sites": ["h0"]}, {"scored": 1, "sites": ["h1"]}])
    with pytest.raises(CheckFailed, match="concepts"):
        merge_summaries([{"concepts": 5}, {"concepts": 6}], constant=("concepts",))
