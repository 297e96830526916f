"""Distributions over a step's actions: the contract check of an adapter's answer, and total variation.

``{action: p}`` dicts are what adapters return and what Φ(r') is in a release. These
are the per-item functions a track calls once per scored item, so they do only what
the contract needs, in C-level builtins where one exists:

* :func:`check_distribution` holds an adapter to its contract (exactly the action
  space, nothing negative or NaN, summing to 1 within 1e-4) and returns the
  distribution renormalised to sum to 1 — the same dict, value for value, as
  ``trb.adapters.base.check_distribution`` returns, and the same AdapterError
  messages; unlike that function it also refuses NaN (whose sum passed ``abs(total
  - 1) > 1e-4``).
* :func:`total_variation` is ½ Σ_a |p(a) − q(a)| over the union of the actions,
  summed with :func:`math.fsum`: correctly rounded, so it does not depend on the
  order the actions are visited in. (Summing in set order, as
  ``trb.tracks.track1.total_variation`` does, visits actions in string-hash order,
  which changes with PYTHONHASHSEED: the same run scored in two processes differs in
  the last bit of about a third of its TV scores.)

Batched variants take lists; they are these functions mapped, not numpy: turning
the dicts into arrays costs as much as the arithmetic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import fsum

from trb.errors import AdapterError

__all__ = ["check_distribution", "check_distributions", "total_variation", "total_variations"]

#: How far from 1 the probabilities an adapter returns may sum.
SUM_TOLERANCE = 1e-4


def check_distribution(p: Mapping[str, float], space: Sequence[str], who: str) -> dict[str, float]:
    """``p`` renormalised to sum to 1, after holding it to the contract for the action ``space``.

    Raises:
        AdapterError: ``p``'s actions are not exactly ``space``'s; a value is negative or NaN; or the
            values sum to more than :data:`SUM_TOLERANCE` away from 1.
    """
    if p.keys() != set(space):
        raise AdapterError(f"{who}: act() returned actions {sorted(p)}, expected exactly the action space {sorted(space)}")
    values = p.values()
    total = sum(values)
    if not abs(total - 1.0) <= SUM_TOLERANCE or min(values) < 0:  # NaN anywhere makes the total NaN: refused
        raise AdapterError(f"{who}: act() returned a distribution summing to {total:.6g} (or a negative value)")
    return {a: v / total for a, v in p.items()}


def check_distributions(ps: Sequence[Mapping[str, float]], spaces: Sequence[Sequence[str]],
                        who: str) -> list[dict[str, float]]:
    """``[check_distribution(p, space, who) for p, space in zip(ps, spaces)]`` (raises as it does)."""
    return [check_distribution(p, space, who) for p, space in zip(ps, spaces, strict=True)]


def total_variation(p: Mapping[str, float], q: Mapping[str, float]) -> float:
    """TV(p, q) = ½ Σ_a |p(a) − q(a)| over the union of their actions (a missing action has probability 0).

    Correctly rounded (``math.fsum``): the same float whatever order the actions come in.
    """
    if q.keys() <= p.keys():  # the usual case: Φ over (part of) the action space the adapter answered for
        return 0.5 * fsum([abs(v - q.get(a, 0.0)) for a, v in p.items()])
    return 0.5 * fsum([abs(p.get(a, 0.0) - q.get(a, 0.0)) for a in p.keys() | q.keys()])


def total_variations(ps: Sequence[Mapping[str, float]], qs: Sequence[Mapping[str, float]]) -> list[float]:
    """``[total_variation(p, q) for p, q in zip(ps, qs)]``."""
    return [total_variation(p, q) for p, q in zip(ps, qs, strict=True)]
