"""Declared adapter capabilities: every optional hook beyond the spec's two is a named Protocol.

The two hooks (``emit_r``, ``act``) are the contract every adapter keeps. Anything
more is a *capability*: a Protocol an adapter class names in its ``capabilities``
attribute. The engine checks the declaration once, when the adapter is loaded
(:func:`bind`), and from then on asks the bound adapter — never ``getattr`` on the
model object. A method an adapter has but does not declare is not used; a
capability it declares but does not implement is a load error.

A track names the capabilities it needs (``Track.needs``); a track whose needs an
adapter lacks is recorded as "not applicable (needs X)", never silently skipped.

Example::

    class MyAdapter:
        tier = "proxy"
        capabilities = (BatchedAct, ContinuationScoring)

        def spec(self): ...
        def emit_r(self, context): ...
        def act(self, context, r_override=None): ...
        def act_batch(self, contexts, r_overrides=None): ...
        def score_continuation(self, context, text, r_override=None): ...
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from trb.context import StepContext
from trb.errors import AdapterError

__all__ = [
    "BatchedAct",
    "BatchedEmit",
    "ContinuationScoring",
    "EmitCounters",
    "RAblation",
    "ActivationAccess",
    "ActivationInjection",
    "CoTEdit",
    "CAPABILITIES",
    "capability_name",
    "BoundAdapter",
    "bind",
]


@runtime_checkable
class BatchedAct(Protocol):
    """``act`` over many contexts in one call."""

    def act_batch(self, contexts: Sequence[StepContext],
                  r_overrides: Sequence[Mapping | None] | None = None) -> list[dict[str, float]]:
        """``[act(c, r_override=r) for c, r in zip(contexts, r_overrides)]`` (None: no overrides).

        Returns the same distributions as the single calls (up to float rounding).
        Raises:
            AdapterError: lengths differ, a step is open-ended, or the model fails.
        """
        ...


@runtime_checkable
class BatchedEmit(Protocol):
    """``emit_r`` over many contexts in one call."""

    def emit_r_batch(self, contexts: Sequence[StepContext]) -> list[dict]:
        """``[emit_r(c) for c in contexts]`` (the same reports as the single calls)."""
        ...


@runtime_checkable
class ContinuationScoring(Protocol):
    """Log-likelihood of a text continuation (Track 1's paired LLR variant, open-ended actions)."""

    def score_continuation(self, context: StepContext, text: str, r_override: Mapping | None = None) -> float:
        """``log p(text | context, do(r_t := r_override))`` in nats; with ``r_override`` None, through the
        recorded r_t of ``context`` when it has one. Returns a finite float <= 0."""
        ...


@runtime_checkable
class EmitCounters(Protocol):
    """Counters of emit_r calls and of slots the model did not report (the proxy adapter keeps them)."""

    def emit_stats(self) -> dict:
        """``{"calls": n, "missing": {slot: n}}`` since the adapter was loaded (monotone counters)."""
        ...


@runtime_checkable
class RAblation(Protocol):
    """Acting with r_t routed to zero: the no-r_t ablation Tracks 4 and 5 compare against (spec §3)."""

    def act_ablated(self, context: StepContext) -> dict[str, float]:
        """``{action: p}`` over exactly the step's action space with the r_t pathway ablated.

        One meaning per tier: a native model zeroes its r pathway (e(r) := 0); a proxy model acts
        with an empty reasoning span. Whatever r_t the model would state, it does not reach the action.
        """
        ...

    def act_ablated_batch(self, contexts: Sequence[StepContext]) -> list[dict[str, float]]:
        """``[act_ablated(c) for c in contexts]`` (the same distributions; a loop is a valid implementation)."""
        ...


@runtime_checkable
class ActivationAccess(Protocol):
    """Activation-level access: read the representation z_t a model acts from, and read its report's slot
    distribution with a vector added to z_t (Track 2, grounding by concept injection).

    Tier-neutral: vectors are numpy float arrays, sites are strings, every call is batched over contexts. The
    native reference models expose their context encoding (sites ``"h"``, what the r-head and action head read,
    and ``"embed"``, the summed feature embeddings before the encoder); a proxy model would name residual-stream
    layers (``"layers.12"``) and read the last prompt token.
    """

    def activation_sites(self) -> tuple[str, ...]:
        """The sites z can be read and injected at, the default (headline) site first."""
        ...

    def read_activations(self, contexts: Sequence[StepContext], site: str) -> np.ndarray:
        """z at ``site`` for each context: a float64 array of shape (len(contexts), d), no injection.

        Raises:
            AdapterError: an unknown site, or the model fails.
        """
        ...

    def slot_probs_injected(self, contexts: Sequence[StepContext], slot: str, site: str, vectors: np.ndarray,
                            strength: float) -> list[dict[str, float]]:
        """The distribution the report puts over ``slot``'s values with ``strength * vector`` added to z at ``site``.

        ``slot`` is ``"goal"`` (values: the goals the model can state) or ``"planned_next"`` (the step's actions).
        ``vectors`` is one vector of shape (d,) for every context or one per context, (len(contexts), d); a zero
        vector or ``strength`` 0 gives the uninjected distribution. Returns one ``{value: p}`` per context, summing
        to 1 (empty when the slot has no values there, e.g. an open-ended step for ``planned_next``).

        Raises:
            AdapterError: an unknown slot or site, a vector of the wrong shape or not finite, or the model fails.
        """
        ...

    def concept_directions(self):
        """The concept directions stored with this checkpoint (a :class:`trb.grounding.ConceptDirections`), or
        None when it has none (Track 2 then cannot run: make them with ``trb concepts``)."""
        ...


@runtime_checkable
class CoTEdit(Protocol):
    """do(r_t := r') as an edit of the model's own chain of thought (a proxy adapter with
    ``intervention="cot_edit"``): where the span stating a slot of r' is not found, the edit is
    counted as missing, never invented, and every act call says what it did to each context."""

    def cot_edit_stats(self) -> dict:
        """``{"calls": n, "items": {"edited": n, "unchanged": n, "span_missing": n}, "slots_missing": {slot: n}}``
        since the adapter was loaded (monotone counters). ``calls`` counts edits made; ``items`` counts each
        distinct (context, r') once by outcome: *edited* (a span now states r''s value instead of another),
        *unchanged* (every span found already stated it: replacing a value by itself is not an edit),
        *span_missing* (no span found); ``slots_missing`` counts, per slot, the items whose span of it was not found."""
        ...

    def cot_edits(self) -> list[dict | None]:
        """For each context of the last ``act``/``act_batch`` call, in order: None where no r' was to be
        edited (no override, or an empty r'), else ``{"own_cot", "text", "outcome", "edited", "edited_slots",
        "unchanged_slots", "span_missing", "user_turn"}``: the model's own chain of thought, the text the action
        was scored after (edited and truncated, or the own text whole when nothing was edited), the outcome, which
        slots were edited, already equal or missing, and what r' had the user say (written in the user's turn)."""
        ...


def injection_vectors(vectors, strength: float, n: int, d: int, site: str) -> np.ndarray:
    """``slot_probs_injected``'s vectors as an (n, d) float64 array (one vector of shape (d,) is repeated).

    Raises:
        AdapterError: a shape that is neither (d,) nor (n, d), or a value or strength that is not finite.
    """
    v = np.asarray(vectors, dtype=np.float64)
    if v.shape == (d,):
        v = np.broadcast_to(v, (n, d))
    if v.shape != (n, d):
        raise AdapterError(f"injection vectors have shape {np.shape(vectors)}; site {site!r} needs ({d},) or ({n}, {d})")
    if not (np.all(np.isfinite(v)) and np.isfinite(strength)):
        raise AdapterError("injection vectors and strength must be finite")
    return v


#: The pre-Track-2 name of :class:`ActivationAccess`.
ActivationInjection = ActivationAccess


#: Capability name -> Protocol. Names are what run records, reports and ``trb adapters`` show.
CAPABILITIES: dict[str, type] = {
    "batched_act": BatchedAct,
    "batched_emit": BatchedEmit,
    "continuation_scoring": ContinuationScoring,
    "emit_counters": EmitCounters,
    "r_ablation": RAblation,
    "activation_access": ActivationAccess,
    "cot_edit": CoTEdit,
}
_NAMES = {proto: name for name, proto in CAPABILITIES.items()}


def capability_name(proto: type) -> str:
    """The registered name of a capability Protocol (raises KeyError for an unknown one)."""
    return _NAMES[proto]


def _methods(proto: type) -> list[str]:
    return [n for n, v in vars(proto).items() if callable(v) and not n.startswith("_")]


def _positional(fn) -> int:
    """How many positional parameters a bound method accepts (a large number for *args)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: trust it
        return 99
    n = 0
    for p in params:
        if p.kind == p.VAR_POSITIONAL:
            return 99
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            n += 1
    return n


class BoundAdapter:
    """An adapter whose contract and declared capabilities were checked once, at load.

    Tracks call the hooks through this object: ``act_many``/``emit_many`` use the
    batched hooks when declared and fall back to single calls otherwise;
    :meth:`get` returns the adapter as a capability, or None when it does not declare it.

    Attributes:
        adapter: the adapter object itself.
        tier: ``"native"`` or ``"proxy"``.
        capabilities: the names of the declared capabilities.
        name: the adapter's type name (for messages).
    """

    def __init__(self, adapter, capabilities: frozenset[str]):
        self.adapter = adapter
        self.tier = adapter.tier
        self.capabilities = capabilities
        self.name = type(adapter).__name__
        #: What the adapter registry adds to the spec so the adapter can be re-created
        #: (``adapter``, ``model``, ``options``); None for an adapter object bound directly.
        self.recreate: dict | None = None

    def has(self, proto: type) -> bool:
        return capability_name(proto) in self.capabilities

    def get(self, proto: type):
        """The adapter, typed as capability ``proto``, if it declared it; else None."""
        return self.adapter if self.has(proto) else None

    def missing(self, needs: Sequence[type]) -> list[str]:
        """The names of the capabilities in ``needs`` this adapter lacks."""
        return [capability_name(p) for p in needs if not self.has(p)]

    def spec(self) -> dict:
        """The adapter's own spec, plus ``adapter``/``model``/``options`` when it came from the registry."""
        return {**self.adapter.spec(), **(self.recreate or {})}

    def emit_r(self, context: StepContext) -> dict:
        return self.adapter.emit_r(context)

    def act(self, context: StepContext, r_override: Mapping | None = None) -> dict[str, float]:
        return self.adapter.act(context, r_override=r_override)

    def act_many(self, contexts: Sequence[StepContext], r_overrides: Sequence[Mapping | None]) -> list[dict]:
        batched = self.get(BatchedAct)
        if batched is not None:
            out = batched.act_batch(list(contexts), list(r_overrides))
        else:
            out = [self.adapter.act(c, r_override=r) for c, r in zip(contexts, r_overrides)]
        if len(out) != len(contexts):
            raise AdapterError(f"{self.name}: act_batch returned {len(out)} distributions for {len(contexts)} contexts")
        return out

    def emit_many(self, contexts: Sequence[StepContext]) -> list[dict]:
        batched = self.get(BatchedEmit)
        out = batched.emit_r_batch(list(contexts)) if batched is not None else [self.adapter.emit_r(c) for c in contexts]
        if len(out) != len(contexts):
            raise AdapterError(f"{self.name}: emit_r_batch returned {len(out)} reports for {len(contexts)} contexts")
        return out

    def act_ablated_many(self, contexts: Sequence[StepContext]) -> list[dict]:
        """The no-r_t ablation's distributions (capability ``r_ablation``; AdapterError when not declared)."""
        ablation = self.get(RAblation)
        if ablation is None:
            raise AdapterError(f"{self.name} does not declare r_ablation: it cannot act with r_t routed to zero")
        out = ablation.act_ablated_batch(list(contexts))
        if len(out) != len(contexts):
            raise AdapterError(f"{self.name}: act_ablated_batch returned {len(out)} distributions for "
                               f"{len(contexts)} contexts")
        return out

    def cot_edits(self) -> list[dict | None] | None:
        """What the last ``act_many`` did to each context's chain of thought (capability ``cot_edit``), else None."""
        editor = self.get(CoTEdit)
        return None if editor is None else editor.cot_edits()

    def cot_edit_stats(self) -> dict | None:
        """The ``cot_edit`` counters (see :class:`CoTEdit`), or None without the capability."""
        editor = self.get(CoTEdit)
        if editor is None:
            return None
        stats = editor.cot_edit_stats()
        return {"calls": int(stats["calls"]),
                "items": {str(k): int(v) for k, v in dict(stats["items"]).items()},
                "slots_missing": {str(k): int(v) for k, v in dict(stats["slots_missing"]).items()}}

    def emit_stats(self) -> dict | None:
        counters = self.get(EmitCounters)
        if counters is None:
            return None
        stats = counters.emit_stats()
        return {"calls": int(stats["calls"]), "missing": {str(k): int(v) for k, v in dict(stats["missing"]).items()}}


def bind(adapter) -> BoundAdapter:
    """Check ``adapter`` against the two-hook contract and its declared capabilities, once.

    An object that is already bound is returned as it is.

    Raises:
        AdapterError: a missing hook or ``spec``, an unknown tier, a ``capabilities``
            entry that is not a known capability, or a declared capability whose methods
            are missing or take too few arguments.
    """
    if isinstance(adapter, BoundAdapter):
        return adapter
    who = type(adapter).__name__
    tier = getattr(adapter, "tier", None)  # the contract's one required attribute
    if tier not in ("native", "proxy"):
        raise AdapterError(f"{who}: tier must be 'native' or 'proxy', not {tier!r}")
    for hook, nargs in (("emit_r", 1), ("act", 2), ("spec", 0)):
        fn = getattr(adapter, hook, None)
        if not callable(fn):
            raise AdapterError(f"{who}: the adapter contract needs a method {hook}()")
        if _positional(fn) < nargs:
            raise AdapterError(f"{who}.{hook} takes too few arguments for the contract")
    declared = getattr(adapter, "capabilities", ()) or ()
    if isinstance(declared, (str, type)):
        declared = (declared,)
    names: set[str] = set()
    for entry in declared:
        name = entry if isinstance(entry, str) else _NAMES.get(entry)
        proto = CAPABILITIES.get(name) if name else None
        if proto is None:
            raise AdapterError(f"{who} declares an unknown capability {entry!r} "
                               f"(known: {', '.join(CAPABILITIES)})")
        for method in _methods(proto):
            fn = getattr(adapter, method, None)
            if not callable(fn):
                raise AdapterError(f"{who} declares {name} but has no method {method}()")
            want = _positional(getattr(proto, method)) - 1  # less self
            required = sum(1 for p in inspect.signature(getattr(proto, method)).parameters.values()
                           if p.name != "self" and p.default is p.empty)
            if _positional(fn) < required:
                raise AdapterError(f"{who}.{method} takes fewer arguments than {name} needs ({want})")
        names.add(name)
    return BoundAdapter(adapter, frozenset(names))
