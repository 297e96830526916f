"""Spec baselines 1–3 (§4) at the size of the native references, trained on a release's train split.

1. ``instruct-base``: a small causal LM trained on (context → action), no reasoning scaffold;
   run through the proxy adapter with ``scaffold="none"``.
2. ``cot-prompted``: the same weights, chain of thought elicited at inference only;
   run through the proxy adapter with ``scaffold="cot"``.
3. ``cot-sft``: trained on (context, r rendered as CoT text, action); proxy, ``scaffold="cot"``.

The training text is exactly the proxy adapter's prompt (:meth:`ProxyAdapter.prompt`)
followed by the target, so what a baseline learns is what the adapter later asks.
"""

from trb.baselines.examples import BASELINE_RUNS, TRAINED_VARIANTS, training_pairs
from trb.baselines.train import BaselineSettings, train_baseline

__all__ = ["BASELINE_RUNS", "TRAINED_VARIANTS", "training_pairs", "train_baseline", "BaselineSettings"]
