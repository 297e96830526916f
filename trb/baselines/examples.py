"""Training pairs (prompt, target) for the LM baselines, from a release split.

A pair's concatenation is what the proxy adapter scores at evaluation:

* ``instruct-base``: prompt ``ProxyAdapter.prompt(c, None, "none", history)`` (the context,
  then ``"Action:"``), target ``" " + action``. No reasoning text anywhere in the target.
* ``cot-sft``: prompt ``context.render(last=history) + "\\nReasoning:"``, target ``" " +
  format_r(r_t) + "\\nAction: " + action`` (just ``"\\nAction: " + action`` when the step
  recorded no r), so that prompt + target == ``ProxyAdapter.prompt(c, r_t, "cot", history) +
  " " + action``: the model learns to write its reasoning and to act after it.

``history`` is the prompt window (earlier steps shown; None: all), recorded with the model.

Only steps with a discrete action space and a recorded action in it are used.
"""

from __future__ import annotations

from collections.abc import Iterator

from trb.adapters.proxy import ProxyAdapter, format_r
from trb.releases import Release

__all__ = ["TRAINED_VARIANTS", "BASELINE_RUNS", "training_pairs", "iter_steps"]

#: The two sets of weights trained here; cot-prompted reuses instruct-base's.
TRAINED_VARIANTS = ("instruct-base", "cot-sft")

#: baseline -> (weights variant, proxy scaffold)
BASELINE_RUNS = {
    "instruct-base": ("instruct-base", "none"),
    "cot-prompted": ("instruct-base", "cot"),
    "cot-sft": ("cot-sft", "cot"),
}


def iter_steps(release: Release, split: str = "train") -> Iterator[tuple[str, object, str, dict | None]]:
    """(session_id, StepContext, recorded action, recorded r_t) for every trainable step of ``split``."""
    for sess in release.sessions(split=split):
        for t, step in enumerate(sess.steps):
            action = step["action"]
            space = step["action_space"]
            if not space or action is None or action not in space:
                continue
            yield sess.session_id, sess.context(t), action, sess.recorded_r(t)


def pair(variant: str, context, action: str, history: int | None = None, r_t: dict | None = None) -> tuple[str, str]:
    """The (prompt, target) pair of one step for ``variant`` (``r_t``: the step's recorded self-report)."""
    if variant == "instruct-base":
        return ProxyAdapter.prompt(context, None, "none", history), " " + action
    if variant == "cot-sft":
        slots = format_r(r_t)
        return (f"{context.render(last=history)}\nReasoning:",
                (" " + slots if slots else "") + "\nAction: " + action)
    raise ValueError(f"unknown trained variant {variant!r}; expected one of {TRAINED_VARIANTS}")


def training_pairs(release: Release, variant: str, split: str = "train",
                   history: int | None = None) -> list[tuple[str, str, str]]:
    """[(session_id, prompt, target)] for every trainable step of ``split`` (train only, by default)."""
    if variant not in TRAINED_VARIANTS:
        raise ValueError(f"unknown trained variant {variant!r}; expected one of {TRAINED_VARIANTS}")
    return [(sid, *pair(variant, c, a, history, r)) for sid, c, a, r in iter_steps(release, split)]
