"""Span finding and editing in a free chain of thought (trb.adapters.cot_spans): found, not found, several mentions."""

from __future__ import annotations

from trb.adapters.cot_spans import Span, edit_cot, find_span


def test_a_pair_is_found_and_its_value_is_the_span():
    text = "goal=C2; planned_next = left ; confidence=0.70"
    span = find_span(text, "planned_next")
    assert span == Span(text.index("left"), text.index("left") + 4, "pair")
    assert text[find_span(text, "confidence").start:] == "0.70"
    assert text[slice(*[getattr(find_span(text, "goal"), k) for k in ("start", "end")])] == "C2"


def test_a_slot_not_stated_has_no_span():
    text = "I am at C1 and the door is shut"
    assert find_span(text, "planned_next", ("left", "right")) is None
    assert find_span(text, "caused_by_self") is None  # probabilities are found only as pairs
    assert find_span(text, "goal") is None  # no known goal values, no pair
    assert find_span("leftover rightly", "planned_next", ("left", "right")) is None  # whole words only
    assert find_span("goal=; x", "goal") is None  # an empty value states nothing


def test_the_last_of_several_mentions_is_the_span():
    text = "left is blocked, right is open, so right"
    span = find_span(text, "planned_next", ("left", "right"))
    assert (span.start, span.end, span.how) == (len(text) - 5, len(text), "mention")
    # a pair beats any mention, and the last pair wins
    text = "planned_next=up; maybe down; planned_next=down; up"
    span = find_span(text, "planned_next", ("up", "down"))
    assert span.how == "pair" and span.start == text.rindex("down;") and span.end == span.start + 4
    # the longest value at the same position
    assert find_span("go wait now", "planned_next", ("wa", "wait")).end == 7


def test_edit_replaces_and_truncates_after_the_last_edited_span():
    text = "goal=C2; I should go left; then check. confidence=0.90 and more"
    e = edit_cot(text, {"goal": "home", "planned_next": "right"}, {"planned_next": ("left", "right")})
    assert e.text == "goal=home; I should go right"
    assert e.edited == ("goal", "planned_next") and e.missing == ()
    e = edit_cot(text, {"planned_next": "up", "caused_by_self": "0.40"}, {"planned_next": ("left", "up")})
    assert e.text == "goal=C2; I should go up" and e.edited == ("planned_next",) and e.missing == ("caused_by_self",)


def test_nothing_found_leaves_the_text_whole():
    text = "nothing here"
    e = edit_cot(text, {"planned_next": "up", "goal": "C1"}, {"planned_next": ("left", "up")})
    assert e.text == text and e.edited == () and e.missing == ("planned_next", "goal")


def test_overlapping_spans_keep_the_first_slot():
    # the goal value is an action too: one span cannot state both slots
    e = edit_cot("go home", {"goal": "C1", "planned_next": "left"}, {"goal": ("home",), "planned_next": ("home",)})
    assert e.text == "go C1" and e.edited == ("goal",) and e.missing == ("planned_next",)


def test_a_replacement_by_the_same_value_is_not_an_edit():
    text = "goal=C2; planned_next=C; so C it is"
    e = edit_cot(text, {"planned_next": "C"}, {"planned_next": ("A", "B", "C")})
    # the span states C already: nothing edited, nothing truncated, the outcome says so
    assert e.text == text and e.edited == () and e.unchanged == ("planned_next",) and e.missing == ()
    assert e.outcome == "unchanged"
    # one slot equal, another changed: an edit, truncated after the last span found (the equal one included)
    e = edit_cot(text, {"goal": "home", "planned_next": "C"}, {"planned_next": ("A", "B", "C")})
    assert e.text == "goal=home; planned_next=C" and e.edited == ("goal",) and e.unchanged == ("planned_next",)
    assert e.outcome == "edited"
    # the outcome of each case: edited, equal (with a slot missing beside it), nothing found, nothing asked
    assert edit_cot(text, {"planned_next": "B"}, {"planned_next": ("B", "C")}).outcome == "edited"
    assert edit_cot(text, {"planned_next": "C", "confidence": "0.40"}).outcome == "unchanged"
    assert edit_cot("nothing here", {"planned_next": "C"}, {"planned_next": ("C",)}).outcome == "span_missing"
    assert edit_cot(text, {}).outcome == "unchanged"
