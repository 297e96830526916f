"""No answer handed out or shown: the instructions' examples are never tasks, and nothing the agent reported about
the question asked (nor the item's design label, note or id, nor what the agent really did next, nor Φ) is
shown beside it, for every question of every project (no Label Studio needed: the task data and the configs)."""

import json
import re

import pytest

from annotate.tasks import (
    _SLOT_NAMES,
    EXAMPLE_SOURCE_KINDS,
    ITEM_KEY,
    KINDS,
    example_items,
    instructions,
    item_key,
    item_targets,
    label_config,
    render_tasks,
)
from corpus import Corpus, ingest, init_corpus
from corpus.examples import example_path
from factories import attribution, counterfactual, like_7f3a, session, write_jsonl

#: What each project's view shows (the config's $variables) and every task data field (Label Studio Community
#: shows each as a Data Manager column): a new field must be added here, and so reviewed, before it ships.
SHOWN = {"attribution": {"step_label", "language", "session_text", "outcome", "after_text"},
         "continuation": {"step_label", "language", "context_text", "r_prime_text", "prompt", "action_options",
                          "continuation_label"}}
DATA = {"attribution": SHOWN["attribution"] | {ITEM_KEY, "step", "n_steps"},
        "continuation": SHOWN["continuation"] | {ITEM_KEY, "step", "n_steps", "open_ended"}}
#: The questions of each project, and the fields shown beside each (question 2 only once "The agent" is chosen).
QUESTIONS = {("attribution", "caused_by_self"): {"step_label", "language", "session_text", "outcome"},
             ("attribution", "endorsed"): SHOWN["attribution"],
             ("continuation", "action"): SHOWN["continuation"],
             ("continuation", "continuation"): SHOWN["continuation"]}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("answers")
    c = Corpus(init_corpus(d / "c"))
    recs = like_7f3a() + [session("s1"), attribution("s1.t1.attr", "s1", 1, "self"),
                          counterfactual("s1.t0.cf0", "s1", 0)]
    ingest(c, [example_path("7f3a"), write_jsonl(d / "in.jsonl", recs)], progress=False)
    return c


def _steps(con, session_id):
    cols = ["t", "action", "has_r", "r_caused_by_self", "r_ext"]
    return [dict(zip(cols, r)) for r in con.execute(
        f"SELECT {', '.join(cols)} FROM store.steps WHERE session_id = ? ORDER BY t", [session_id]).fetchall()]


def answer_bearing(kind: str, question: str, task: dict, item: dict, steps: list[dict]) -> list[str]:
    """The fields shown beside ``question`` that carry its answer (empty: none)."""
    t = item["t"]
    shown = {f: json.dumps(task[f], ensure_ascii=False) if not isinstance(task[f], str) else task[f]
             for f in QUESTIONS[(kind, question)]}
    bad = []
    for field, text in shown.items():
        # never the item's id, design note or label words, wherever shown
        if item["id"] in text or (item.get("note") and item["note"][:40] in text):
            bad.append(f"{field}: the item's id or design note")
        if kind == "attribution":
            later = steps[t + 1:]
            # the agent's own later view of this outcome: its credit belief, any reported slot (endorses_last_output)
            ext = {name.replace("_", " ").capitalize() for s in later if s["r_ext"] for name in json.loads(s["r_ext"])}
            if any(s["has_r"] for s in later) and ("self-report at this step" in text and field == "after_text"):
                bad.append(f"{field}: the agent's later self-report")
            if field == "after_text" and any(f"{name}:" in text for name in ext | {_SLOT_NAMES["caused_by_self"]}):
                bad.append(f"{field}: a later reported slot about this outcome")
            if field != "after_text" and f"Step {t + 2} of" in text:
                bad.append(f"{field}: a step after the outcome")
        else:
            if "What it did" in text.split(f"Step {t + 1} of")[-1]:
                bad.append(f"{field}: what the agent really did at this step")
            phi = item.get("phi") or {}
            if phi.get("type") == "text" and phi["text"] in text:
                bad.append(f"{field}: Φ (what annotators or the subject wrote)")
    return bad


def test_the_views_show_only_the_reviewed_fields():
    for kind in KINDS:
        assert set(re.findall(r"\$(\w+)", label_config(kind))) == SHOWN[kind], kind


def test_no_field_beside_any_question_carries_its_answer(corpus):
    with corpus.open(write=False) as con:
        items = {r[0]: {"id": r[0], "session": r[1], "t": r[2], "note": r[3]} for r in con.execute(
            "SELECT item_id, session_id, t, note FROM store.attribution").fetchall()}
        cfs = {r[0]: {"id": r[0], "session": r[1], "t": r[2], "phi": {"type": r[3], "text": r[4]}}
               for r in con.execute("SELECT cf_id, session_id, t, phi_type, phi_text FROM store.counterfactuals")
               .fetchall()}
        checked = 0
        for kind, table in (("attribution", items), ("continuation", cfs)):
            targets = item_targets(con, kind)
            for task in render_tasks(con, kind):
                assert set(task) == DATA[kind]
                item = table[targets[task[ITEM_KEY]][0]]
                steps = _steps(con, item["session"])
                for (k, question) in QUESTIONS:
                    if k == kind:
                        assert answer_bearing(kind, question, task, item, steps) == [], (item["id"], question)
                        checked += 1
    assert checked == 2 * (3 + 1) + 2 * (10 + 1)  # every question of every task: 4 attribution, 11 counterfactuals


def test_the_check_refuses_a_field_that_carries_the_answer(corpus):
    """The check is not vacuous: the way 'What came next' was shown before (the agent's next self-report, with
    "Endorses last output: no") is refused, and so is a real action or a written Φ beside a continuation."""
    with corpus.open(write=False) as con:
        [task] = [t for t in render_tasks(con, "attribution") if t[ITEM_KEY] == item_key("attribution",
                                                                                          "b2c9-attr-2plus2")]
        steps = _steps(con, "b2c9")
    item = {"id": "b2c9-attr-2plus2", "t": 0}
    assert "Endorses last output" not in task["after_text"] and "self-report at" not in task["after_text"]
    old = dict(task, after_text=task["after_text"] + "\nIts self-report at this step (r_t):\n  Endorses last output: no")
    assert answer_bearing("attribution", "endorsed", old, item, steps) == [
        "after_text: the agent's later self-report", "after_text: a later reported slot about this outcome"]
    cf = {"id": "x", "t": 2, "phi": {"type": "text", "text": "It's about 3:44"}}
    shown = {"context_text": "Step 3 of 8\nWhat the agent saw:\n  ...\nWhat it did: It's about 3:44",
             "r_prime_text": "", "prompt": "", "action_options": [], "continuation_label": "", "step_label": "",
             "language": ""}
    assert answer_bearing("continuation", "action", shown, cf, []) == [
        "context_text: what the agent really did at this step", "context_text: Φ (what annotators or the subject wrote)"]


def test_the_instructions_examples_are_never_tasks(corpus):
    """Every session the instructions cite is an example session, and no item of one is rendered as a task (push
    renders tasks with render_tasks: the browser test checks the pushed projects too)."""
    with corpus.open(write=False) as con:
        sessions = dict(con.execute("SELECT session_id, source_kind FROM store.sessions").fetchall())
        for kind in KINDS:
            cited = {s for s in sessions if re.search(rf"\b{re.escape(s)}\b", instructions(kind))}
            assert cited == {"7f3a"} and {sessions[s] for s in cited} <= set(EXAMPLE_SOURCE_KINDS)
            examples = example_items(con, kind)
            table, col = ("attribution", "item_id") if kind == "attribution" else ("counterfactuals", "cf_id")
            assert examples == [r[0] for r in con.execute(
                f"SELECT {col} FROM store.{table} WHERE session_id LIKE '7f3a%' ORDER BY 1").fetchall()]
            assert len(examples) == (3 if kind == "attribution" else 10)
            keys = {t[ITEM_KEY] for t in render_tasks(con, kind)}
            assert keys and not keys & {item_key(kind, i) for i in examples}
            # a --where naming an example item selects nothing: examples are out of every project
            assert render_tasks(con, kind, where=f"{col} = '{examples[0]}'") == []
