"""The proxy adapter's cot_edit intervention on a tiny GPT-2 trained locally (tests/trb/cot_models.py).

The model writes ``goal=..; planned_next=..`` after "Reasoning:" on "at" steps and ``nothing to report`` on
"calm" steps, and acts as its planned_next says. cot_edit must edit the span it wrote, truncate after it, score
the action there, store the edited text with the Track 1 item, and count every span it could not find.
"""

from __future__ import annotations

import dataclasses
import math
import re

import orjson
import pytest

# trains a tiny GPT-2 here (seconds of torch on the CPU)
pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from cot_models import build_cot_gpt2, context  # noqa: E402

from trb.adapters.capabilities import bind  # noqa: E402
from trb.adapters.lm_scoring import score_naive  # noqa: E402
from trb.adapters.proxy import ProxyAdapter, _first_line  # noqa: E402
from trb.tracks.track1 import Track1Item, score_track1  # noqa: E402

AT = context(("left", "right", "stay"), "at C1")
AT2 = context(("up", "down"), "at C2")
CALM = context(("left", "right", "stay"), "calm at C2")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        yield build_cot_gpt2(tmp_path_factory.mktemp("cot_gpt2"))


def _load(d, **kw) -> ProxyAdapter:
    return ProxyAdapter.load(d, device="cpu", chat_template="off", **kw)


@pytest.fixture(scope="module")
def edit(model_dir):
    return _load(model_dir, intervention="cot_edit")


def _softmax(xs):
    m = max(xs)
    e = [math.exp(x - m) for x in xs]
    return [x / sum(e) for x in e]


def _expected(adapter, c, text):
    """act's distribution after ``Reasoning: {text}`` computed the plain way (score_naive)."""
    prompt = adapter._emit_base(c) + (" " + text if text else "") + "\nAction:"
    scores = score_naive(adapter.model, adapter.tokenizer, [(prompt, [" " + a for a in c.action_space])])[0]
    return dict(zip(c.action_space, _softmax(scores)))


def test_the_models_own_chain_of_thought_states_the_slots_on_at_steps_only(edit):
    at, at2, calm = edit.own_cots([AT, AT2, CALM])
    assert "planned_next=" in at and "goal=" in at and "planned_next=" in at2
    assert calm == "nothing to report"
    assert edit.own_cots([AT]) == [at]  # generated once per prompt, then cached


def _own_plan(adapter, c) -> str:
    return re.search(r"planned_next=(\w+)", adapter.own_cots([c])[0]).group(1)


def _delta(after: dict, before: dict) -> dict:
    return {"calls": after["calls"] - before["calls"],
            **{k: n - before["items"][k] for k, n in after["items"].items()},
            **{f"missing {k}": n - before["slots_missing"][k] for k, n in after["slots_missing"].items()
               if n != before["slots_missing"][k]}}


def test_cot_edit_edits_the_span_and_truncates_after_it(edit):
    own = edit.own_cots([AT])[0]
    new = next(a for a in ("stay", "right", "left") if a != _own_plan(edit, AT))
    before = edit.cot_edit_stats()
    p = edit.act(AT, r_override={"planned_next": new, "confidence": 0.9})
    rec = edit.cot_edits()[0]
    cut = own.index("planned_next=") + len("planned_next=")
    assert rec["own_cot"] == own
    assert rec["text"] == own[:cut] + new  # edited, and nothing of the model's text after the span
    assert rec["edited"] and rec["edited_slots"] == ["planned_next"] and rec["span_missing"] == ["confidence"]
    assert rec["outcome"] == "edited" and rec["unchanged_slots"] == [] and rec["user_turn"] == []
    assert _delta(edit.cot_edit_stats(), before) == {"calls": 1, "edited": 1, "unchanged": 0, "span_missing": 0,
                                                     "missing confidence": 1}
    want = _expected(edit, AT, rec["text"])
    assert all(abs(p[a] - want[a]) < 1e-5 for a in AT.action_space)
    assert max(p, key=p.get) == new  # the edited plan governs the action of this model
    # the same item again: one more call, no more items
    before = edit.cot_edit_stats()
    edit.act(AT, r_override={"planned_next": new, "confidence": 0.9})
    assert _delta(edit.cot_edit_stats(), before) == {"calls": 1, "edited": 0, "unchanged": 0, "span_missing": 0}
    # the goal span is edited too, and the text ends after the LAST edited span
    edit.act(AT, r_override={"goal": "home", "planned_next": "right"})
    text = edit.cot_edits()[0]["text"]
    assert text.startswith("goal=home;") and text.endswith("planned_next=right")


def test_a_replacement_by_the_same_value_is_not_an_edit(edit):
    own, plan = edit.own_cots([AT2])[0], _own_plan(edit, AT2)
    before = edit.cot_edit_stats()
    p = edit.act(AT2, r_override={"planned_next": plan})
    rec = edit.cot_edits()[0]
    # the span states the value already: the model's own text, whole, is what the action is scored after
    assert rec["outcome"] == "unchanged" and rec["edited"] is False and rec["text"] == own
    assert rec["edited_slots"] == [] and rec["unchanged_slots"] == ["planned_next"]
    assert _delta(edit.cot_edit_stats(), before) == {"calls": 1, "edited": 0, "unchanged": 1, "span_missing": 0}
    assert p == pytest.approx(edit.act(AT2), abs=1e-6)


def test_a_missing_span_is_counted_and_never_invented(edit):
    before = edit.cot_edit_stats()
    p = edit.act(CALM, r_override={"goal": "home", "planned_next": "right"})
    rec = edit.cot_edits()[0]
    assert rec == {"own_cot": "nothing to report", "text": "nothing to report", "outcome": "span_missing",
                   "edited": False, "edited_slots": [], "unchanged_slots": [], "span_missing": ["goal", "planned_next"],
                   "user_turn": []}
    assert _delta(edit.cot_edit_stats(), before) == {"calls": 1, "edited": 0, "unchanged": 0, "span_missing": 1,
                                                     "missing goal": 1, "missing planned_next": 1}
    own = edit.act(CALM)  # no override: the model's own untruncated chain of thought
    assert edit.cot_edits() == [None]
    assert p == own == pytest.approx(_expected(edit, CALM, "nothing to report"), abs=1e-6)


def test_batched_counts_and_the_ablation(model_dir):
    edit = _load(model_dir, intervention="cot_edit")  # no item seen yet (items are counted once per adapter)
    before = edit.cot_edit_stats()
    r = {"planned_next": "left"}
    dists = edit.act_batch([AT, CALM, AT2, AT, CALM], [r, r, {"planned_next": "up"}, None, {}])
    outcomes = ["edited" if _own_plan(edit, AT) != "left" else "unchanged",
                "edited" if _own_plan(edit, AT2) != "up" else "unchanged", "span_missing"]
    assert _delta(edit.cot_edit_stats(), before) == {
        "calls": 3, **{k: outcomes.count(k) for k in ("edited", "unchanged", "span_missing")},
        "missing planned_next": 1}
    edits = edit.cot_edits()
    assert [e is None for e in edits] == [False, False, False, True, True]
    assert edits[2]["text"].endswith("planned_next=up")
    # {} is the no-r_t ablation: the empty reasoning span, as in the template intervention
    assert dists[4] == pytest.approx(_expected(edit, CALM, ""), abs=1e-6)
    assert edit.act_ablated(CALM) == pytest.approx(dists[4], abs=1e-6)
    for c, d in zip([AT, CALM, AT2], dists):
        assert d == pytest.approx(edit.act(c, r_override=r if c is not AT2 else {"planned_next": "up"}), abs=1e-5)


def test_spec_and_capability(model_dir, edit):
    assert edit.spec()["intervention"] == "cot_edit"
    assert "cot_edit" in bind(edit).capabilities
    template = _load(model_dir)
    assert template.spec()["intervention"] == "template" and "cot_edit" not in bind(template).capabilities
    # template mode is unchanged: r' written as the Reasoning line
    p = template.act(AT, r_override={"planned_next": "stay"})
    prompt = AT.render() + "\nReasoning: planned_next=stay\nAction:"
    scores = score_naive(template.model, template.tokenizer, [(prompt, [" " + a for a in AT.action_space])])[0]
    assert list(p.values()) == pytest.approx(_softmax(scores), abs=1e-6)


def test_track1_stores_the_edited_text_with_the_item(edit):
    items = [Track1Item(f"cf{i}", "s", 0, "eval", None, c, r, "distribution", phi)
             for i, (c, r, phi) in enumerate([(AT, {"planned_next": "right"}, {"left": 0.0, "right": 1.0, "stay": 0.0}),
                                              (CALM, {"planned_next": "right"}, {"left": 0.0, "right": 1.0,
                                                                                 "stay": 0.0})])]
    items[1].session_id = "s2"
    rows, _ = score_track1(edit, items)
    details = [orjson.loads(r["detail"]) for r in rows]
    assert details[0]["cot_edit"]["edited"] and details[0]["cot_edit"]["text"].endswith("planned_next=right")
    assert details[1]["cot_edit"]["edited"] is False and details[1]["cot_edit"]["span_missing"] == ["planned_next"]
    assert details[1]["cot_edit"]["text"] == "nothing to report"


def test_a_user_spoken_slot_is_in_the_users_turn_and_the_agents_slots_are_edited(edit):
    """A suggestion (declared "speaker": "user") is written after the context, before the model's own chain of
    thought, which the model writes having read it; planned_next is edited in that chain of thought."""
    said = "I think right is best."
    c = dataclasses.replace(AT, user_slots=frozenset({"suggestion"}))
    r = {"planned_next": "stay", "ext": {"suggestion": said}}
    p = edit.act(c, r_override=r)
    rec = edit.cot_edits()[0]
    head = AT.render() + "\n" + said + "\nReasoning:"
    assert edit._cot_base(c, (("suggestion", said),)) == head
    own = _first_line(edit._greedy(head, 64))
    assert rec["own_cot"] == own and rec["user_turn"] == [said]
    assert said not in rec["text"]  # the user's words are not the model's reasoning
    prompt = head + (" " + rec["text"] if rec["text"] else "") + "\nAction:"
    scores = score_naive(edit.model, edit.tokenizer, [(prompt, [" " + a for a in AT.action_space])])[0]
    assert [p[a] for a in AT.action_space] == pytest.approx(_softmax(scores), abs=1e-5)
    # a session without the declaration: the suggestion is the agent's slot, edited as any other (no pair: missing)
    edit.act(AT, r_override=r)
    rec = edit.cot_edits()[0]
    assert rec["user_turn"] == [] and "suggestion" in rec["span_missing"]
