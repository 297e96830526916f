"""The adapter contract: exactly the spec's two hooks (TRB spec §2).

Everything the tracks do is written against these two hooks, so the suite never
touches model internals directly. A lab wraps its checkpoint in a class with these
members; see the README section "Wrapping your own model".
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from trb.context import StepContext

__all__ = ["Adapter", "AdapterTier", "check_distribution", "check_act_batch"]

AdapterTier = Literal["native", "proxy"]


@runtime_checkable
class Adapter(Protocol):
    """A model under test.

    Attributes:
        tier: ``"native"`` when ``act(..., r_override)`` is a true do(r_t := r')
            intervention on an explicit r_t pathway; ``"proxy"`` when r is elicited
            from the model's chain of thought and the intervention edits that span.
    """

    tier: AdapterTier

    def spec(self) -> dict:
        """A JSON-serialisable description from which the same adapter can be re-created
        (kind, model path, its sha256 or version, dtype, prompt template, seed...)."""
        ...

    def emit_r(self, context: StepContext) -> dict:
        """The self-representation at this step, as schema slots.

        Returns:
            A dict with any of ``goal`` (str), ``planned_next`` (str), ``caused_by_self``
            (probability), ``confidence`` (probability); a slot the model did not
            report is absent or None (never a silent default).
        Raises:
            AdapterError: the model cannot be run on this context.
        """
        ...

    def act(self, context: StepContext, r_override: dict | None = None) -> dict[str, float]:
        """Roll forward one step: a probability for every action of ``context.action_space``.

        If ``r_override`` is given, r_t is clamped to it (do(r_t := r')) before acting.
        Returns:
            ``{action: p}`` over exactly the step's action space, summing to 1.
        Raises:
            AdapterError: the model cannot be run on this context.
        """
        ...


def check_distribution(p: dict[str, float], space: tuple[str, ...] | list[str], who: str) -> dict[str, float]:
    """Hold an adapter to its contract: exactly the action space, non-negative, summing to 1 (see
    :func:`trb.distributions.check_distribution`, which this is)."""
    from trb.distributions import check_distribution as _check

    return _check(p, space, who)


def check_act_batch(contexts, r_overrides, who: str) -> list:
    """The arguments of a batched ``act``: one override (or None) per context, every step discrete.

    Returns the overrides as a list. Raises AdapterError for mismatched lengths, an
    open-ended step, a repeated action, or an override that is not a mapping.
    """
    from collections.abc import Mapping

    from trb.errors import AdapterError

    rs = [None] * len(contexts) if r_overrides is None else list(r_overrides)
    if len(rs) != len(contexts):
        raise AdapterError(f"act_batch: {len(contexts)} contexts but {len(rs)} r overrides")
    for c in contexts:
        if not c.action_space:
            raise AdapterError(f"{who} cannot act on step {c.t} of session {c.session_id}: "
                               "the step is open-ended (no discrete action space)")
        if len(set(c.action_space)) != len(c.action_space):
            raise AdapterError(f"step {c.t} of session {c.session_id} repeats an action in its action space")
    for r in rs:
        if r is not None and not isinstance(r, Mapping):
            raise AdapterError(f"r_override must be a mapping of r slots or None, not {type(r).__name__}")
    return rs
