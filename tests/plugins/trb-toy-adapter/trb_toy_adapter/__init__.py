"""A toy adapter: acts on the planned_next of r with a weight given on the command line."""

from __future__ import annotations

from trb import AdapterKind, AdapterOption, BatchedAct, StepContext

__all__ = ["ToyAdapter", "ADAPTER"]


class ToyAdapter:
    tier = "proxy"
    capabilities = (BatchedAct,)

    def __init__(self, name: str, weight: float = 0.6):
        if not 0.0 <= weight <= 1.0:
            raise ValueError("weight must be in [0, 1]")
        self.name = name
        self.weight = weight

    def spec(self) -> dict:
        return {"kind": "toy", "name": self.name, "weight": self.weight, "version": "0.3.1"}

    def emit_r(self, context: StepContext) -> dict:
        space = context.action_space or ()
        return {"planned_next": space[0] if space else None, "caused_by_self": 0.25 + 0.5 * (context.t % 2)}

    def act(self, context: StepContext, r_override: dict | None = None) -> dict[str, float]:
        r = r_override if r_override is not None else self.emit_r(context)
        space = context.action_space
        rest = (1.0 - self.weight) / len(space)
        return {a: rest + (self.weight if a == r.get("planned_next") else 0.0) for a in space}

    def act_batch(self, contexts, r_overrides=None):
        rs = list(r_overrides) if r_overrides is not None else [None] * len(contexts)
        return [self.act(c, r) for c, r in zip(contexts, rs)]


def _load(model: str, weight: float | None = None) -> ToyAdapter:
    return ToyAdapter(model, 0.6 if weight is None else weight)


ADAPTER = AdapterKind(
    name="toy", tier="proxy", summary="a scripted follower of r.planned_next (toolkit test package)",
    load=_load, accepts=("name",), model_help="any name",
    options=(AdapterOption("weight", "probability mass put on r.planned_next", type=float, flag="--toy-weight"),),
    capabilities=("batched_act",),
)
