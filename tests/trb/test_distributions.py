"""trb.distributions: the contract check as the adapters' one gives it, and a TV that no action order changes."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from trb.distributions import check_distribution, check_distributions, total_variation, total_variations
from trb.errors import AdapterError

SPACE = ("up", "down", "left", "right", "wait")


def check_one_by_one(p, space, who):
    """The adapters' contract check as it was written before trb.distributions (the independent reference)."""
    if set(p) != set(space):
        raise AdapterError(f"{who}: act() returned actions {sorted(p)}, expected exactly the action space {sorted(space)}")
    total = sum(p.values())
    if any(v < 0 for v in p.values()) or abs(total - 1.0) > 1e-4:
        raise AdapterError(f"{who}: act() returned a distribution summing to {total:.6g} (or a negative value)")
    return {a: v / total for a, v in p.items()}


def _dist(rng: random.Random, actions=SPACE) -> dict[str, float]:
    w = [rng.random() for _ in actions]
    total = sum(w)
    return {a: x / total for a, x in zip(actions, w)}


def test_check_returns_what_the_adapters_check_returns():
    rng = random.Random(3)
    ps = [_dist(rng) for _ in range(500)] + [{a: 0.2 for a in reversed(SPACE)}, {"up": 1.0 + 5e-5, "down": 0.0,
                                                                                  "left": 0.0, "right": 0.0, "wait": 0.0}]
    spaces = [SPACE if i % 2 else list(reversed(SPACE)) for i in range(len(ps) - 1)] + [SPACE]
    got = check_distributions(ps, spaces, "m")
    want = [check_one_by_one(p, s, "m") for p, s in zip(ps, spaces)]
    assert repr(got) == repr(want)


@pytest.mark.parametrize("p, match", [
    ({"up": 0.5, "down": 0.5}, r"returned actions \['down', 'up'\], expected exactly the action space"),
    ({**dict.fromkeys(SPACE, 0.0), "up": 0.5, "rest": 0.5}, "expected exactly"),
    ({**dict.fromkeys(SPACE, 0.25), "wait": -0.0001}, "summing to 0.9999"),
    ({**dict.fromkeys(SPACE, 0.3), "up": -0.2}, "or a negative value"),
    ({**dict.fromkeys(SPACE, 0.1), "up": 0.7}, "summing to 1.1"),
    ({**dict.fromkeys(SPACE, 0.0), "up": math.nan}, "summing to nan"),
])
def test_check_refuses_what_breaks_the_contract(p, match):
    with pytest.raises(AdapterError, match=match):
        check_distribution(p, SPACE, "m")


def test_check_refuses_nan_that_the_sum_test_alone_let_through():
    p = {**dict.fromkeys(SPACE, 0.25), "up": math.nan}
    check_one_by_one(p, SPACE, "m")  # abs(nan - 1) > 1e-4 is False: the old check passes it
    with pytest.raises(AdapterError, match="nan"):
        check_distribution(p, SPACE, "m")


def test_tv_is_the_correctly_rounded_sum_whatever_the_action_order():
    rng = random.Random(5)
    for _ in range(300):
        p = _dist(rng)
        q = _dist(rng, rng.sample(SPACE, rng.randint(1, 5)) + (["jump"] if rng.random() < 0.2 else []))
        exact = sum(Fraction(abs(p.get(a, 0.0) - q.get(a, 0.0))) for a in set(p) | set(q))
        tv = total_variation(p, q)
        assert tv == float(exact / 2)
        for _ in range(3):  # the same float for any insertion order of either distribution
            p2 = dict(rng.sample(list(p.items()), len(p)))
            q2 = dict(rng.sample(list(q.items()), len(q)))
            assert total_variation(p2, q2) == tv
    assert total_variation({"a": 1.0}, {"b": 1.0}) == 1.0 and total_variation({"a": 1.0}, {"a": 1.0}) == 0.0
    assert total_variations([{"a": 1.0}, {"a": 0.5, "b": 0.5}], [{"a": 1.0}, {"a": 1.0}]) == [0.0, 0.5]
