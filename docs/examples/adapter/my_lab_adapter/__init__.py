"""A lab's adapter: the spec's two hooks (emit_r, act), a tier, a spec, and one declared capability."""

from __future__ import annotations

from trb import AdapterKind, AdapterOption, BatchedAct, StepContext

__all__ = ["MyAdapter", "ADAPTER"]


class MyAdapter:
    tier = "proxy"  # "native" only if act(..., r_override) clamps an explicit r_t pathway
    capabilities = (BatchedAct,)  # declared, checked once at load; act_batch must equal act

    def __init__(self, checkpoint: str, revision: str | None = None):
        self.checkpoint = checkpoint  # load your model here
        self.revision = revision or "abc123"

    def spec(self) -> dict:  # enough to re-create this adapter: stored with every run
        return {"kind": "my-lab", "checkpoint": self.checkpoint, "revision": self.revision}

    def emit_r(self, context: StepContext) -> dict:
        # the model's own self-report at this step: any of goal, planned_next,
        # caused_by_self (probability), confidence (probability); omit what it did not say
        return {"planned_next": context.action_space[0] if context.action_space else None,
                "caused_by_self": 0.7, "confidence": 0.6}

    def act(self, context: StepContext, r_override: dict | None = None) -> dict[str, float]:
        r = r_override or self.emit_r(context)  # do(r_t := r') when r_override is given
        # score every action of the step with your model, conditioned on the context and r
        weights = {a: (3.0 if a == r.get("planned_next") else 1.0) for a in context.action_space}
        total = sum(weights.values())
        return {a: w / total for a, w in weights.items()}  # exactly the action space, summing to 1

    def act_batch(self, contexts, r_overrides=None):
        return [self.act(c, r) for c, r in zip(contexts, r_overrides or [None] * len(contexts))]


ADAPTER = AdapterKind(
    name="my-model", tier="proxy", summary="my lab's checkpoints",
    load=lambda model, **options: MyAdapter(model, **options),
    accepts=("path", "name"),  # what --model may be: an existing path, an http(s) URL ("url"), or any "name"
    model_help="a checkpoint directory",
    options=(AdapterOption("revision", "checkpoint revision"),),  # becomes trb run --revision
    capabilities=("batched_act",),
)
