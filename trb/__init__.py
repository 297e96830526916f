"""The TRB eval engine: tracks × adapters on a release, every item score in DuckDB.

The public API a lab imports (the README's "Wrapping your own model" uses exactly these):

* :class:`StepContext` / :class:`PastStep`: what an adapter is handed;
* :class:`Adapter`: the two-hook contract; the capability Protocols (:class:`BatchedAct`,
  :class:`BatchedEmit`, :class:`ContinuationScoring`, :class:`EmitCounters`,
  :class:`RAblation`, :class:`ActivationAccess`) an adapter declares in ``capabilities``;
* :class:`AdapterKind` / :class:`AdapterOption`: how a package registers an adapter under
  the ``trb.adapters`` entry-point group; :func:`load_adapter`;
* :class:`RunSpec` / :func:`run_tracks`: what a run is (release, split, tracks, seed, results, runner) and
  running it through an adapter, recording every item score;
* :func:`check_adapter` / :func:`assert_conformance`: the conformance suite (``trb.testing``).

Heavy dependencies (torch, transformers) are imported only when a model is loaded.
"""

from trb.adapters.base import Adapter, AdapterTier
from trb.adapters.capabilities import (
    ActivationAccess,
    ActivationInjection,
    BatchedAct,
    BatchedEmit,
    ContinuationScoring,
    EmitCounters,
    RAblation,
)
from trb.adapters.registry import AdapterKind, AdapterOption
from trb.context import PastStep, StepContext
from trb.errors import AdapterError, TrbError
from trb.run import RunSpec, load_adapter, rerun, run_tracks
from trb.testing import assert_conformance, check_adapter

__all__ = [
    "StepContext", "PastStep", "Adapter", "AdapterTier", "AdapterError", "TrbError",
    "BatchedAct", "BatchedEmit", "ContinuationScoring", "EmitCounters", "RAblation", "ActivationAccess", "ActivationInjection",
    "AdapterKind", "AdapterOption", "RunSpec", "load_adapter", "run_tracks", "rerun", "check_adapter",
    "assert_conformance",
]
