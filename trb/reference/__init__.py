"""The native reference models: baselines 4 (``trace-ablation``) and 5 (``trace-full``) of TRB spec §4.

A small torch model with an explicit r_t pathway (:mod:`trb.reference.model`),
trained on a release's train split by :func:`train_reference`
(:mod:`trb.reference.train`) and run through :class:`trb.adapters.native.NativeAdapter`.
Importing this package imports torch.
"""

from trb.reference.train import TRB_VERSION, VARIANTS, train_reference

__all__ = ["train_reference", "VARIANTS", "TRB_VERSION"]
