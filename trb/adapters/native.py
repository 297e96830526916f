"""The native adapter: a reference model with an explicit r_t pathway (TRB spec §2, tier "native").

``emit_r`` reads the model's r-head; ``act(context, r_override=r')`` performs the
true do(r_t := r') intervention: the action head's input e(r) is computed from r'
instead of from the r-head. Without an override the model acts through its own
r-head output, so ``act(c)`` equals ``act(c, r_override=emit_r(c))``.

torch is imported when a model is loaded, not when this module is imported.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from trb.adapters.base import check_act_batch
from trb.adapters.capabilities import ActivationAccess, BatchedAct, BatchedEmit, RAblation, injection_vectors
from trb.adapters.registry import AdapterKind
from trb.context import StepContext
from trb.errors import AdapterError

__all__ = ["NativeAdapter", "ADAPTER"]

#: Contexts per forward pass in the batched hooks.
CHUNK = 512
#: Rows (context x injected vector) per forward pass of ``slot_probs_injected``.
INJECT_CHUNK = 8192


class NativeAdapter:
    """A trained reference model (``trb.reference.train_reference``) behind the two-hook contract.

    Attributes:
        tier: always ``"native"``.
        variant: ``"ablation"`` or ``"full"``.
        config: the model's config.json.
    """

    tier = "native"
    capabilities = (BatchedAct, BatchedEmit, RAblation, ActivationAccess)

    def __init__(self, model, config: dict, path: Path, sha256: str):
        import torch

        # Inference runs in float64 and reports float32-rounded numbers, so a context's result does not depend
        # on the batch it is computed in (float32 matrix products round differently for different batch sizes).
        self._dtype = torch.float64
        self._model = model.to(self._dtype)
        self.config = config
        self.path = path
        self.sha256 = sha256
        self.variant: str = config.get("variant")
        self._goal_index = {g: i for i, g in enumerate(model.cfg.goal_vocab)}

    @classmethod
    def load(cls, path: str | os.PathLike) -> NativeAdapter:
        """Load a model directory written by ``train_reference`` (config.json + model.safetensors).

        Raises:
            AdapterError: the directory, config or weights are missing, unreadable or do not fit
                together, or torch is not installed.
        """
        p = Path(path)
        if not p.is_dir():
            raise AdapterError(f"{p}: no reference model directory here (train one with trb.reference.train_reference)")
        try:
            from trb.reference.model import load_checkpoint
        except ImportError as e:
            raise AdapterError(f"the native adapter needs torch and safetensors ({e}); "
                               "install the toolkit's pinned CPU torch (see the Makefile)") from e
        model, config, sha = load_checkpoint(p)
        return cls(model, config, p, sha)

    @property
    def model(self):
        """The underlying :class:`trb.reference.model.ReferenceModel` (torch module, eval mode, float64)."""
        return self._model

    def spec(self) -> dict:
        release = self.config.get("release") or {}
        return {
            "kind": "native",
            "path": str(self.path),
            "sha256": self.sha256,
            "variant": self.variant,
            "seed": self.config.get("seed"),
            "release_sha": release.get("sha"),
            "release_version": release.get("version"),
            "trb_version": self.config.get("trb_version"),
            "n_parameters": int(sum(p.numel() for p in self._model.parameters())),
            "trained_on": self.config.get("trained_on"),
        }

    # -- the contract ----------------------------------------------------------------

    def emit_r(self, context: StepContext) -> dict:
        """The r-head's report: ``goal`` (a goal string seen in training, or None when the training split had
        none), ``planned_next`` (an action of the step; None on an open-ended step), ``caused_by_self`` (None
        before any outcome), ``confidence``. Raises AdapterError only if the model cannot run."""
        return self.emit_r_batch([context])[0]

    def act(self, context: StepContext, r_override: dict | None = None) -> dict[str, float]:
        """``{action: p}`` over exactly ``context.action_space``, summing to 1; with ``r_override``, do(r_t := r').

        Raises:
            AdapterError: the step is open-ended (no action space).
        """
        return self.act_batch([context], [r_override])[0]

    # -- batched hooks (same results as the single ones) ------------------------------

    def _items(self, contexts: Sequence[StepContext], rs: Sequence[dict | None]):
        from trb.reference.features import context_features
        from trb.reference.model import RItem

        buckets = self._model.cfg.context_buckets
        return [RItem(context_features(c, buckets), c.action_space or None, r, bool(c.history))
                for c, r in zip(contexts, rs)]

    def emit_r_batch(self, contexts: Sequence[StepContext]) -> list[dict]:
        """``[emit_r(c) for c in contexts]``, computed in batches; the results are identical."""
        from trb.reference.model import collate

        out: list[dict] = []
        for i in range(0, len(contexts), CHUNK):
            chunk = contexts[i:i + CHUNK]
            items = self._items(chunk, [None] * len(chunk))
            try:
                out.extend(self._model.emit(collate(items, self._model.cfg, self._goal_index, self._dtype),
                                            [it.space for it in items]))
            except RuntimeError as e:
                raise AdapterError(f"native model failed on a batch of {len(chunk)} contexts: {e}") from e
        return out

    def act_batch(self, contexts: Sequence[StepContext],
                  r_overrides: Sequence[dict | None] | None = None) -> list[dict[str, float]]:
        """``[act(c, r_override=r) for c, r in zip(contexts, r_overrides)]``, computed in batches; the results
        are identical. Raises AdapterError if any step is open-ended or the two lists differ in length."""
        from trb.reference.model import collate

        rs = check_act_batch(contexts, r_overrides, "native model")
        own = [i for i, r in enumerate(rs) if r is None]
        if own:  # act through the model's own self-report
            for i, r in zip(own, self.emit_r_batch([contexts[i] for i in own])):
                rs[i] = r
        out: list[dict[str, float]] = []
        for i in range(0, len(contexts), CHUNK):
            chunk = contexts[i:i + CHUNK]
            items = self._items(chunk, rs[i:i + CHUNK])
            try:
                probs = self._model.act_probs(collate(items, self._model.cfg, self._goal_index, self._dtype))
                probs = probs.float().double()  # float32 precision, then normalised exactly
            except RuntimeError as e:
                raise AdapterError(f"native model failed on a batch of {len(chunk)} contexts: {e}") from e
            for c, row in zip(chunk, probs):
                p = row[:len(c.action_space)]
                p = (p / p.sum()).tolist()
                out.append(dict(zip(c.action_space, p)))
        return out


    # -- the no-r_t ablation (capability r_ablation) ------------------------------------

    def act_ablated(self, context: StepContext) -> dict[str, float]:
        """``{action: p}`` with the r pathway zeroed: e(r) := 0 (every slot's value and presence flag 0, no stated
        plan to match), whatever the r-head would report; the context encoder is untouched."""
        return self.act_ablated_batch([context])[0]

    def act_ablated_batch(self, contexts: Sequence[StepContext]) -> list[dict[str, float]]:
        """``[act_ablated(c) for c in contexts]`` in batches (identical results)."""
        # an empty r is exactly e(r) = 0 in the model's embedding of r (collate leaves every slot absent)
        return self.act_batch(contexts, [{} for _ in contexts])


    # -- activation access (capability activation_access, Track 2) ----------------------

    def activation_sites(self) -> tuple[str, ...]:
        """``("h", "embed")``: the encoder's output h (what the r-head and the action head read; the default) and
        the summed context-feature embeddings before the encoder."""
        from trb.reference.model import SITES

        return SITES

    def _check_site(self, site: str) -> int:
        from trb.reference.model import SITES

        if site not in SITES:
            raise AdapterError(f"unknown activation site {site!r} of the native model (sites: {', '.join(SITES)})")
        return self._model.site_dim(site)

    def read_activations(self, contexts: Sequence[StepContext], site: str) -> np.ndarray:
        """z at ``site`` for each context, shape (len(contexts), d), float64 (rounded to float32 precision, so a
        context's z does not depend on its batch)."""
        import torch

        from trb.reference.model import collate

        d = self._check_site(site)
        out = [np.zeros((0, d))]
        for i in range(0, len(contexts), CHUNK):
            chunk = contexts[i:i + CHUNK]
            b = collate(self._items(chunk, [None] * len(chunk)), self._model.cfg, self._goal_index, self._dtype)
            try:
                with torch.no_grad():
                    z, _ = self._model.encode_at(b, site)
            except RuntimeError as e:
                raise AdapterError(f"native model failed on a batch of {len(chunk)} contexts: {e}") from e
            out.append(z.float().double().numpy())
        return np.concatenate(out)

    def slot_probs_injected(self, contexts: Sequence[StepContext], slot: str, site: str, vectors,
                            strength: float) -> list[dict[str, float]]:
        """The r-head's distribution over ``slot`` (``goal``: the goal vocabulary; ``planned_next``: the step's
        actions) with ``strength * vector`` added to z at ``site``; see
        :meth:`trb.adapters.capabilities.ActivationAccess.slot_probs_injected`. Probabilities at float32 precision."""
        import torch

        from trb.reference.model import NEG, collate

        if slot not in ("goal", "planned_next"):
            raise AdapterError(f"slot {slot!r} has no distribution to read (slots: goal, planned_next)")
        d = self._check_site(site)
        v = injection_vectors(vectors, strength, len(contexts), d, site)
        model = self._model
        vocab = model.cfg.goal_vocab
        out: list[dict[str, float]] = []
        for i in range(0, len(contexts), INJECT_CHUNK):
            chunk = contexts[i:i + INJECT_CHUNK]
            # a context repeated in the batch (one row per concept) is encoded once, then indexed
            first: dict[int, int] = {}
            uniq: list[StepContext] = []
            for c in chunk:
                if id(c) not in first:
                    first[id(c)] = len(uniq)
                    uniq.append(c)
            rows = torch.tensor([first[id(c)] for c in chunk], dtype=torch.long)
            b = collate(self._items(uniq, [None] * len(uniq)), model.cfg, self._goal_index, self._dtype)
            add = torch.from_numpy(np.ascontiguousarray(v[i:i + INJECT_CHUNK] * float(strength))).to(self._dtype)
            try:
                with torch.no_grad():
                    z, h = model.encode_at(b, site)
                    h = model.encoder(z[rows] + add) if site == "embed" else h[rows] + add
                    if slot == "planned_next":
                        acts, _ = model.strings(b)
                        space = model.space_embeddings(acts, b)[rows]
                        logits = torch.einsum("bs,bas->ba", model.plan_query(h), space).masked_fill(
                            ~b.space_mask[rows], NEG)
                    else:
                        vemb = model.vocab_embeddings()
                        logits = model.goal_query(h) @ vemb.T if vemb is not None else None
                    probs = torch.softmax(logits, dim=-1).float().tolist() if logits is not None else None
            except RuntimeError as e:
                raise AdapterError(f"native model failed on a batch of {len(chunk)} contexts: {e}") from e
            for j, c in enumerate(chunk):
                if probs is None or (slot == "planned_next" and not c.action_space):
                    out.append({})
                elif slot == "planned_next":
                    out.append(dict(zip(c.action_space, probs[j][:len(c.action_space)])))
                else:
                    out.append(dict(zip(vocab, probs[j])))
        return out

    def concept_directions(self):
        """The concept directions stored in ``<model>/concepts`` (:func:`trb.grounding.load_concepts`), or None.

        Raises:
            AdapterError: they are unreadable, or were made for other weights than this checkpoint's.
        """
        from trb.grounding import load_concepts

        return load_concepts(self.path, expect_sha256=self.sha256)


def _load(model: str) -> NativeAdapter:
    return NativeAdapter.load(model)


#: The registry entry (entry point ``trb.adapters: native``).
ADAPTER = AdapterKind(
    name="native", tier="native", load=_load, accepts=("path",),
    summary="a model with an explicit r_t pathway (the reference models of trb train-reference): a true do(r_t := r')",
    model_help="a reference model directory (config.json + model.safetensors)",
    capabilities=("batched_act", "batched_emit", "r_ablation", "activation_access"),
)
