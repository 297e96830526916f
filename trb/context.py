"""What an adapter sees: the context of one step, built from a release.

A :class:`StepContext` is the spec's c_t and nothing more: the completed earlier
steps (observation, the self-report recorded at that step, action, outcome), the
current observation and the action space. It never holds the self-report recorded
at the current step: Track 1 hands r' in its place (``act(c_t, r_override=r')``),
and Track 3 asks ``emit_r`` of the context *after* the attributed step's outcome
(the completed steps include the attributed step's action and outcome; the
observation is the next step's, if any), before any later self-report. The
recorded r_t stays with the engine (``SessionSteps.recorded_r``), which passes it
explicitly where a track's procedure calls for do(r_t).

An r (or r') may hold extension slots that a user says rather than the agent (``user_slots``: declared
``"speaker": "user"`` in the session's ``r_extensions``, e.g. a Turpin-style suggested answer).
:meth:`StepContext.split_r` separates them, so an adapter can show them as the user's words.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from schemas.release_format import R_SLOTS

__all__ = ["PastStep", "StepContext", "R_SLOTS"]



@dataclass(frozen=True)
class PastStep:
    t: int
    observation: str
    r: dict | None
    action: str
    action_space: tuple[str, ...] | None
    outcome: str | None


@dataclass(frozen=True)
class StepContext:
    session_id: str
    t: int  # the step about to be taken
    history: tuple[PastStep, ...]  # every step before t, completed
    observation: str | None  # what the agent sees at step t (None after the last step)
    action_space: tuple[str, ...] | None  # the actions open at step t (None: open-ended)
    context_id: str | None = None
    language: str | None = None
    split: str | None = None
    extras: dict = field(default_factory=dict, compare=False)
    # each action's text beside its label (schema 1.1, e.g. a multiple-choice option "(A) 42": label "A",
    # text "42"), aligned with action_space; None when the actions are their own text
    action_texts: tuple[str, ...] | None = None
    # the session's extension slots whose values a user says (declared ``"speaker": "user"``, schema 1.1, e.g.
    # a suggested answer): a text model reads them in the user's turn; every other slot is the agent's own
    user_slots: frozenset[str] = frozenset()

    def split_r(self, r: dict | None) -> tuple[dict | None, tuple[tuple[str, object], ...]]:
        """``(r without the user's slots, ((slot, value), ...) the user says)``, in sorted slot order.

        ``r`` itself (the same object) when it holds none of :attr:`user_slots`, so a context without
        user-spoken slots renders exactly as before they existed.
        """
        ext = (r or {}).get("ext") or {}
        said = tuple((k, ext[k]) for k in sorted(ext) if k in self.user_slots and ext[k] is not None)
        if not said:
            return r, ()
        own = {k: v for k, v in ext.items() if k not in self.user_slots}
        return {**r, "ext": own or None}, said

    def render(self, r: dict | None = None, *, include_r_history: bool = True, last: int | None = None) -> str:
        """Plain text of the context (for text models): earlier steps, then the current observation.

        ``last`` keeps only the last that many earlier steps (None: all of them; 0: none).
        """
        lines = []
        history = self.history if last is None else (self.history[-last:] if last > 0 else ())
        for s in history:
            lines.append(f"Step {s.t}: {s.observation}")
            if include_r_history and s.r:
                lines.append("Self-report: " + render_r(s.r))
            lines.append(f"Action: {s.action}")
            if s.outcome:
                lines.append(f"Outcome: {s.outcome}")
        if self.observation is not None:
            lines.append(f"Step {self.t}: {self.observation}")
        if r is not None:
            lines.append("Self-report: " + render_r(r))
        if self.action_space:
            lines.append("Actions: " + ", ".join(self.action_space))
        return "\n".join(lines)


def render_r(r: dict) -> str:
    parts = []
    for slot in R_SLOTS:
        v = r.get(slot)
        if v is not None:
            parts.append(f"{slot}={v:.2f}" if isinstance(v, float) else f"{slot}={v}")
    for k, v in sorted((r.get("ext") or {}).items()):
        parts.append(f"{k}={v}")
    return "; ".join(parts) if parts else "(none)"
