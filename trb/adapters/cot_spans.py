"""Locating and editing the spans of a free chain of thought that state the schema's slots (pure functions).

The proxy adapter's ``cot_edit`` intervention (Turpin et al. 2023; Lanham et al. 2023) lets the
model write its own chain of thought, then edits, in that text, the span stating each slot of
r' to r''s value and truncates the text right after the last edited span.

Where a slot's span is (:func:`find_span`), in this order:

1. an explicit pair ``slot=value`` (whitespace around ``=`` allowed): the span is the value,
   up to the next ``;`` or line end, trailing whitespace excluded; the LAST such pair when
   there are several (the conclusion the text reached);
2. else, for ``goal`` and ``planned_next`` only, the last mention of one of the slot's known
   values (``planned_next``: the step's actions; ``goal``: goals stated in the context's
   earlier self-reports) as a whole word (not inside a longer word: neither side touches a
   letter, digit or ``_``), case-sensitive; the longest value wins at the same position;
3. else there is no span: the slot is *missing* (never invented).

:func:`edit_cot` replaces every found span (spans that overlap an earlier-found one are
missing) and truncates after the rightmost found span. A span that already states r''s value
is *unchanged*, not edited: a text in which every found span is unchanged is returned whole (the
model's own chain of thought, untruncated: replacing a value by itself is no intervention).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Span", "find_span", "edit_cot", "CotEdit"]


@dataclass(frozen=True)
class Span:
    """``text[start:end]`` states the slot; ``how`` is ``"pair"`` or ``"mention"``."""

    start: int
    end: int
    how: str


@dataclass(frozen=True)
class CotEdit:
    """The result of :func:`edit_cot`.

    Attributes:
        text: the edited text, truncated after the last found span (the input unchanged when nothing was edited).
        edited: the slots whose span was found and replaced by another value.
        missing: the slots of r' whose span was not found.
        unchanged: the slots whose span was found and already stated r''s value.
    """

    text: str
    edited: tuple[str, ...]
    missing: tuple[str, ...]
    unchanged: tuple[str, ...] = ()

    @property
    def outcome(self) -> str:
        """``"edited"`` (some span now states another value), ``"span_missing"`` (no span of the slots asked
        for was found) or ``"unchanged"`` (every span found already stated r''s value; or no slot was asked for)."""
        if self.edited:
            return "edited"
        return "span_missing" if self.missing and not self.unchanged else "unchanged"


def _pair_spans(text: str, slot: str) -> list[Span]:
    out = []
    for m in re.finditer(rf"(?<![A-Za-z0-9_]){re.escape(slot)}\s*=[ \t]*([^;\n]*)", text):
        value = m.group(1).rstrip()
        if value:
            out.append(Span(m.start(1), m.start(1) + len(value), "pair"))
    return out


def _mention_spans(text: str, values: Sequence[str]) -> list[Span]:
    out = []
    for v in sorted({v for v in values if v}, key=len, reverse=True):
        for m in re.finditer(rf"(?<![A-Za-z0-9_]){re.escape(v)}(?![A-Za-z0-9_])", text):
            out.append(Span(m.start(), m.end(), "mention"))
    return out


def find_span(text: str, slot: str, values: Sequence[str] = ()) -> Span | None:
    """The span of ``text`` that states ``slot`` (see the module docstring), or None.

    ``values`` are the slot's known values, looked for as mentions when there is no ``slot=`` pair
    (used for ``goal`` and ``planned_next`` only).
    """
    pairs = _pair_spans(text, slot)
    if pairs:
        return pairs[-1]
    if slot not in ("goal", "planned_next"):
        return None
    mentions = _mention_spans(text, values)
    if not mentions:
        return None
    return max(mentions, key=lambda s: (s.start, s.end - s.start))


def edit_cot(text: str, replacements: Mapping[str, str], values: Mapping[str, Sequence[str]] | None = None) -> CotEdit:
    """Replace, in ``text``, the span of each slot of ``replacements`` by its new value, then truncate.

    Args:
        text: the model's own chain of thought.
        replacements: slot -> the value r' gives it, already written as text (e.g. ``"0.40"``).
        values: slot -> its known values, for mentions (see :func:`find_span`).
    Returns:
        A :class:`CotEdit`. When no found span changes (none found, or each already states its new value) the
        text is returned unchanged (not truncated) and ``edited`` is empty.
    """
    values = values or {}
    spans: dict[str, Span] = {}
    missing: list[str] = []
    for slot in replacements:
        span = find_span(text, slot, values.get(slot, ()))
        if span is None or any(span.start < s.end and s.start < span.end for s in spans.values()):
            missing.append(slot)
        else:
            spans[slot] = span
    same = tuple(s for s in replacements if s in spans and text[spans[s].start:spans[s].end] == replacements[s])
    edited = tuple(s for s in replacements if s in spans and s not in same)
    if not edited:
        return CotEdit(text, (), tuple(missing), same)
    last = max(s.end for s in spans.values())
    out = text[:last]
    for slot, span in sorted(spans.items(), key=lambda kv: -kv[1].start):
        out = out[:span.start] + replacements[slot] + out[span.end:]
    return CotEdit(out, edited, tuple(missing), same)
