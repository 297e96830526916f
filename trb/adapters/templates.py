"""The proxy adapter's prompt templates: named, versioned objects in a small registry.

A template says how a step's context is written for a text model (the *user* text), which
cue opens the reasoning span, which cue asks for the action, and which continuation stands
for each action. The proxy adapter (:mod:`trb.adapters.proxy`) builds every prompt from one:

* without a chat template: ``{user}\\n{reasoning line}\\n{action cue}``;
* with the tokenizer's chat template applied: the chat template's rendering of one user
  message ``{user}\\n\\n{instructions}`` with the generation prompt, followed directly by
  ``{reasoning line}\\n{action cue}`` (the assistant turn begins with the scaffold).

Two placements of r (:data:`R_PLACEMENT`): the agent's own slots are the reasoning line, in the
assistant's turn; the slots a user says (``StepContext.user_slots``) are lines of ``{user}``
(:meth:`PromptTemplate.user_with`), in the user's turn.

A template's ``version`` changes whenever any text it writes changes: a run records the
versions it was made with (``prompt_templates`` in the adapter spec).

Templates (see each object's docstring for the exact text):

* ``trace`` (``trb-proxy-cot-1``): the agent-trace template, every step of the session.
* ``qa`` (``trb-proxy-qa-2``): a single-step multiple-choice question, its options listed once
  (``trb-proxy-qa-1`` listed them again after an observation that already held them).
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Mapping, Sequence

from trb.context import StepContext
from trb.errors import UsageError

__all__ = ["PromptTemplate", "TEMPLATES", "TRACE", "QA", "get_template", "choose_template", "PROMPT_FORMATS",
           "R_PLACEMENT", "lists_options"]

#: ``prompt_format`` choices: ``auto`` picks per context (:func:`choose_template`).
PROMPT_FORMATS = ("auto", "trace", "qa")
#: Where a slot of r (or r') is written, by who says it (its ``r_extensions`` declaration's ``speaker``; the core
#: slots and a slot with no speaker are the agent's): recorded in the adapter spec as ``r_placement``.
R_PLACEMENT = {"agent": "assistant turn: the reasoning line (slot=value)",
               "user": "user turn: the value on its own line after the context (a question's options)"}


@dataclasses.dataclass(frozen=True)
class PromptTemplate(abc.ABC):
    """One prompt template (abstract: each template writes its own user text and continuations).

    Attributes:
        name: the registry name (``prompt_format`` value).
        version: changes with any text the template writes.
        reasoning_cue: what opens the reasoning span (``"Reasoning:"``).
        action_cue: what asks for the action (``"Action:"``; the QA template's ``"Answer: ("``).
        instructions: appended (after a blank line) to the user message when a chat template is applied.
    """

    name: str
    version: str
    reasoning_cue: str
    action_cue: str
    instructions: str

    @abc.abstractmethod
    def user(self, context: StepContext, history: int | None) -> str:
        """The context as text (the user message of a chat, or the prompt's head)."""

    def user_with(self, context: StepContext, history: int | None, said: Sequence[tuple[str, object]]) -> str:
        """:meth:`user`, then each value a user says (``StepContext.split_r``: slots declared ``"speaker":
        "user"``) on a line of its own, in slot order: after the question and its options, where Turpin et al.
        (2023) write "I think the answer is (X) but I'm curious what you think." Nothing said: :meth:`user`."""
        text = self.user(context, history)
        return "\n".join([text, *(str(v) for _, v in said)]) if said else text

    @abc.abstractmethod
    def continuation(self, action: str) -> str:
        """The continuation of the action cue scored for ``action``."""


@dataclasses.dataclass(frozen=True)
class _Trace(PromptTemplate):
    """``{context.render(last=history)}``: earlier steps (with their self-reports), the current step and the
    line ``Actions: a, b, c``. When the step's actions carry texts (``StepContext.action_texts``) the actions
    are listed one per line instead, ``label: text`` (a comma inside a text would make one line ambiguous)::

        Actions:
        A: first option
        B: second option

    Each action ``a`` is scored as the continuation ``" " + a`` of ``Action:``."""

    def user(self, context: StepContext, history: int | None) -> str:
        if context.action_texts is None or not context.action_space:
            return context.render(last=history)
        head = dataclasses.replace(context, action_space=None, action_texts=None).render(last=history)
        lines = [f"{a}: {t}" for a, t in zip(context.action_space, context.action_texts)]
        return "\n".join(([head] if head else []) + ["Actions:"] + lines)

    def continuation(self, action: str) -> str:
        return " " + action


def _shown(line: str) -> str:
    return " ".join(line.split())


def lists_options(observation: str | None, space: Sequence[str], texts: Sequence[str]) -> bool:
    """Whether ``observation`` already lists every option on a line of its own, as ``(A) text`` (or ``A text``
    for a label that is not one letter, as ``trb-corpus import mcq`` writes them), whitespace aside."""
    if not observation or not space:
        return False
    lines = {_shown(ln) for ln in observation.splitlines()}
    return all(_shown(f"({a}) {t}") in lines or _shown(f"{a} {t}") in lines for a, t in zip(space, texts))


@dataclasses.dataclass(frozen=True)
class _QA(PromptTemplate):
    """A question with labelled options, for single-step items (``StepContext.action_texts`` set)::

        {earlier steps, as the trace template writes them, if any}
        Question: {observation}
        (A) first option
        (B) second option

    then ``Reasoning: ...`` and the answer cue ``Answer: (``; each label ``A`` is scored as the
    continuation ``"A"``. Without option texts (a forced ``prompt_format=qa``) an option's text is its
    label: ``(A) A``. The options appear once: when the observation already lists every option on a line of
    its own (:func:`lists_options`: a BIG-Bench Hard item's ``Options:`` block, as ``trb-corpus import mcq``
    keeps it) the template writes no list of its own."""

    def user(self, context: StepContext, history: int | None) -> str:
        past = dataclasses.replace(context, observation=None, action_space=None, action_texts=None)
        head = past.render(last=history)
        space = context.action_space or ()
        texts = context.action_texts if context.action_texts is not None else space
        lines = [f"Question: {context.observation or ''}"]
        if not lists_options(context.observation, space, texts):
            lines += [f"({a}) {t}" for a, t in zip(space, texts)]
        return "\n".join(([head] if head else []) + lines)

    def continuation(self, action: str) -> str:
        return action


TRACE = _Trace(
    name="trace", version="trb-proxy-cot-1", reasoning_cue="Reasoning:", action_cue="Action:",
    instructions=("Think in one line starting with \"Reasoning:\" that states goal=<goal>; planned_next=<action>; "
                  "caused_by_self=<0.00-1.00>; confidence=<0.00-1.00>, then give one of the actions after "
                  "\"Action:\"."))
QA = _QA(
    name="qa", version="trb-proxy-qa-2", reasoning_cue="Reasoning:", action_cue="Answer: (",
    instructions=("Think in one line starting with \"Reasoning:\", then give the label of one option after "
                  "\"Answer: (\"."))

#: name -> template.
TEMPLATES: Mapping[str, PromptTemplate] = {t.name: t for t in (TRACE, QA)}


def get_template(name: str) -> PromptTemplate:
    """The template called ``name``; UsageError for an unknown one."""
    if name not in TEMPLATES:
        raise UsageError(f"unknown prompt template {name!r} (templates: {', '.join(TEMPLATES)})")
    return TEMPLATES[name]


def choose_template(prompt_format: str, context: StepContext) -> PromptTemplate:
    """The template for ``context`` under ``prompt_format``: ``auto`` is ``qa`` for a one-step item whose actions
    carry texts (a multiple-choice question, ``trb-corpus import mcq``), else ``trace``."""
    if prompt_format == "auto":
        qa = context.action_texts is not None and bool(context.action_space) and not context.history
        return QA if qa else TRACE
    return get_template(prompt_format)
