"""Items of the corpus rendered as Label Studio task data (one task per item).

Two kinds of item, one Label Studio project each:

- ``attribution`` (project ``caused_by_self``): an attribution item; the task shows the
  session up to and including the action at step t, and the outcome of step t beside the
  question. What came after (the next steps, without the agent's own credit belief) is
  shown only with the endorsement question, because the evidence for endorsement often
  lies there.
- ``continuation`` (Φ(r')): a counterfactual; the task shows the context at step t (the
  steps before it and what the agent saw at t), the counterfactual self-report r' slot by
  slot, and the step's action space as the choices.

Nothing in a task hints at the answer. Items of example sessions (source kind ``illustrative``, such as
the packaged 7f3a reconstruction, which the instructions' worked examples come from) are never rendered
as tasks: an annotator is never asked a question the instructions answer. What came after the outcome
is shown as what the agent saw, did and what followed, never its later self-reports (its credit belief
about this outcome, an "endorses last output" slot: the agent's own answer to the question asked).
Every task's key is an opaque hash of its item id
(item ids often name their answer, ``…-clock-jump``, or their origin, ``…-syn-t4``); design
labels, notes, origins, flags and authors are left out. Steps are numbered from 1, as the
observations of human sessions number them ("step 3 of 11"); r_t slots go one a line under
readable names; actions show as words, with their id as the hint.

Every task carries ``trb_item_id`` (the opaque key), which is how push skips items already
in a project and pull finds the item an annotation belongs to. Projects made before keys
were opaque carry attribution item ids as keys; :func:`item_targets` knows both.
"""

from __future__ import annotations

import hashlib
import html
from collections import defaultdict
from dataclasses import dataclass, replace
from importlib import resources

import orjson

from corpus.errors import UsageError

__all__ = ["KINDS", "ITEM_KEY", "EXAMPLE_SOURCE_KINDS", "example_items", "example_items_sql", "ProjectKind", "label_config", "instructions", "item_key", "cf_key",
           "render_tasks", "item_targets", "action_label", "project_settings"]

#: The task data field that holds the item's stable key.
ITEM_KEY = "trb_item_id"
_CONFIGS = resources.files("annotate") / "configs"  # package data
_INSTRUCTIONS = resources.files("annotate") / "instructions"
#: Source kinds whose sessions are examples (the instructions' worked examples): never pushed as tasks, and
#: their annotations never counted as annotators' labels (see :mod:`annotate.agreement`).
EXAMPLE_SOURCE_KINDS = ("illustrative",)
_NOT_EXAMPLE = ("session_id NOT IN (SELECT session_id FROM store.sessions WHERE source_kind IN ("
                + ", ".join(f"'{k}'" for k in EXAMPLE_SOURCE_KINDS) + "))")
#: How many steps after the outcome the endorsement question shows.
AFTER_STEPS = 2


@dataclass(frozen=True)
class ProjectKind:
    kind: str  # attribution | continuation
    project: str  # the project's concept name
    default_title: str
    target_kind: str  # the annotation target kind: attribution | counterfactual
    config_file: str
    description: str  # shown on the project's card


KINDS: dict[str, ProjectKind] = {
    "attribution": ProjectKind("attribution", "caused_by_self", "TRB caused_by_self", "attribution", "attribution",
                               "Who caused each outcome: the agent, or something outside it? "
                               "Read the instructions first; work through Label All Tasks."),
    "continuation": ProjectKind("continuation", "continuation", "TRB continuation", "counterfactual", "continuation",
                                "What does an agent holding this self-report do next? "
                                "Read the instructions first; work through Label All Tasks."),
}


def label_config(kind: str) -> str:
    """The labelling config (XML) of the project for ``kind``."""
    return (_CONFIGS / f"{KINDS[kind].config_file}.xml").read_text(encoding="utf-8")


def instructions(kind: str) -> str:
    """The instructions (HTML) shown when labelling starts in the project for ``kind``."""
    return (_INSTRUCTIONS / f"{KINDS[kind].config_file}.html").read_text(encoding="utf-8")


def project_settings(kind: str) -> dict:
    """The project fields trb-annotate sets for ``kind`` (see :data:`annotate.client.PROJECT_SETTINGS`)."""
    return {"label_config": label_config(kind), "expert_instruction": instructions(kind), "show_instruction": True,
            "enable_empty_annotation": False, "description": KINDS[kind].description, "show_skip_button": True}


def _hash(prefix: str, item_id: str) -> str:
    return prefix + hashlib.sha256(item_id.encode()).hexdigest()[:24]


def item_key(kind: str, item_id: str) -> str:
    """The opaque task key of an item (its id may name its answer or origin; the key does not)."""
    return _hash("at-" if kind == "attribution" else "cf-", item_id)


def cf_key(cf_id: str) -> str:
    """The opaque task key of a counterfactual."""
    return item_key("continuation", cf_id)


_LANGUAGES = {"en": "English", "fr": "French", "de": "German", "es": "Spanish", "it": "Italian", "pt": "Portuguese",
              "nl": "Dutch", "sv": "Swedish", "da": "Danish", "no": "Norwegian", "fi": "Finnish", "pl": "Polish",
              "cs": "Czech", "ru": "Russian", "uk": "Ukrainian", "tr": "Turkish", "el": "Greek", "ar": "Arabic",
              "he": "Hebrew", "hi": "Hindi", "zh": "Chinese", "ja": "Japanese", "ko": "Korean"}


def _language(tag: str | None) -> str:
    if not tag:
        return "not stated"
    name = _LANGUAGES.get(tag.split("-")[0].lower())
    return f"{name} ({tag})" if name else tag


def _num(x) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def _pct(x) -> str:
    return f"{100 * x:.0f}%" if isinstance(x, (int, float)) and not isinstance(x, bool) else str(x)


def action_label(action: str) -> str:
    """An action id as words: ``ask_clarification`` -> ``ask clarification``."""
    return action.replace("_", " ")


def action_shown(action: str, space: list[str] | None, texts: list[str] | None) -> str:
    """An action as an annotator reads it: its words, or ``(A) its text`` when the step gives each action a text
    (schema 1.1 ``action_texts``, e.g. a multiple-choice option's label and text)."""
    if texts and space and action in space:
        return f"({action}) {texts[space.index(action)]}"
    return action_label(action)


#: The core r slots under readable names. caused_by_self is the agent's belief about the outcome before
#: this step: named so that it cannot be mistaken for the question an annotator answers.
_SLOT_NAMES = {"goal": "Goal", "planned_next": "Plans to do next",
               "caused_by_self": "Its belief that it caused the previous outcome", "confidence": "Confidence"}


def _slot_lines(goal, planned_next, caused_by_self, confidence, ext, *, indent: str = "  ") -> list[str]:
    lines = []
    for name, value in (("goal", goal), ("planned_next", planned_next), ("caused_by_self", caused_by_self),
                        ("confidence", confidence)):
        if value is None:
            continue
        shown = _pct(value) if name in ("caused_by_self", "confidence") else \
            (action_label(value) if name == "planned_next" else _num(value))
        lines.append(f"{indent}{_SLOT_NAMES[name]}: {shown}")
    if ext:
        # not strict_json: the corpus store's own JSON column, written by the toolkit after ingest's strict read
        for name, value in sorted(orjson.loads(ext).items()):
            shown = ("yes" if value else "no") if isinstance(value, bool) else _num(value)
            lines.append(f"{indent}{name.replace('_', ' ').capitalize()}: {shown}")
    return lines or [f"{indent}(no slots reported)"]


def _step_text(s: dict, n_steps: int, *, upto: str = "outcome", report: bool = True) -> str:
    """One step as an annotator reads it. ``upto``: observation | action | outcome; ``report``: with its r_t."""
    lines = [f"Step {s['t'] + 1} of {n_steps}", "What the agent saw:", f"  {s['observation']}"]
    if upto == "observation":
        return "\n".join(lines)
    if report:
        lines.append("Its self-report at this step (r_t):")
        lines += _slot_lines(s["r_goal"], s["r_planned_next"], s["r_caused_by_self"], s["r_confidence"],
                             s["r_ext"]) if s["has_r"] else ["  (not recorded)"]
    space, texts = s["action_space"], s["action_texts"]
    lines.append(f"What it did: {action_shown(s['action'], space, texts) if space else s['action']}")
    if space and texts:  # option texts may hold any punctuation: one per line
        lines.append("  (it could choose:")
        lines += [f"    {action_shown(a, space, texts)}" for a in space]
        lines[-1] += ")"
    elif space:
        lines.append(f"  (it could choose: {' · '.join(action_label(a) for a in space)})")
    if upto == "outcome" and s["outcome"] is not None:
        lines.append(f"Outcome: {s['outcome']}")
    return "\n".join(lines)


_STEP_COLS = ["session_id", "t", "observation", "has_r", "r_goal", "r_planned_next", "r_caused_by_self",
              "r_confidence", "r_ext", "action", "action_space", "action_texts", "outcome"]
_ITEM_SQL = {
    "attribution": "SELECT item_id, session_id, t FROM store.attribution WHERE {where} ORDER BY item_id",
    "continuation": "SELECT cf_id, session_id, t, rp_goal, rp_planned_next, rp_caused_by_self, rp_confidence, rp_ext "
                    "FROM store.counterfactuals WHERE {where} ORDER BY cf_id",
}
#: What came after the outcome, for the endorsement question: the agent's later self-reports are not shown.
AFTER_NOTE = "(the agent's later self-reports are not shown: they are its own view of this outcome)"
_RULE = "\n\n"


def _select_items(con, kind: str, where: str | None, examples: bool = False) -> list[tuple]:
    """The items of ``kind``, filtered by the user's SQL ``where``: run as one SELECT on a sandboxed connection."""
    import duckdb

    from toolkit.sql_limits import QueryStopped, fetch_limited, parse_size, query_limits
    from toolkit.sql_sandbox import error_line, lock_down, single_select

    keep = "true" if examples else _NOT_EXAMPLE
    sql = _ITEM_SQL[kind].format(where=f"{keep} AND ({where})" if where else keep)
    if not where:
        return con.execute(sql).fetchall()
    try:
        limits = query_limits()  # TRB_QUERY_TIMEOUT / TRB_QUERY_MEMORY_LIMIT, else the defaults
    except ValueError as e:
        raise UsageError(str(e)) from None
    current = con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    if parse_size(current) < limits.memory_bytes:  # the corpus connection's own bound (TRB_DUCKDB_MEMORY) is lower
        limits = replace(limits, memory_bytes=parse_size(current), memory_text=current, memory_from="TRB_DUCKDB_MEMORY")
    lock_down(con, limits.config())  # the user's SQL reaches the attached store and nothing else, from here on
    try:
        return fetch_limited(con, single_select(con, sql), limits)[1]
    except QueryStopped as e:
        raise UsageError(f"--where {where!r} {e}") from None
    except (duckdb.Error, ValueError) as e:
        why = error_line(e) if isinstance(e, duckdb.Error) else str(e)
        raise UsageError(f"--where {where!r} is not a valid filter on the {kind} items: {why}") from None


def render_tasks(con, kind: str, where: str | None = None, *, examples: bool = False) -> list[dict]:
    """Task data for every item of ``kind`` (optionally filtered by an SQL ``where`` on its table), by item id.
    Items of example sessions are left out unless ``examples`` (push --update re-renders the example tasks an
    older toolkit pushed, so that they too show nothing answer-bearing).

    ``con`` is an open corpus connection (``Corpus.open``). A ``where`` must keep the statement one SELECT, and
    runs sandboxed (:mod:`toolkit.sql_sandbox`): from then on ``con`` reads the databases already attached to it
    and nothing else on the machine (no file, extension or network; no SET; nothing spilled to disk), and its
    memory is bounded by ``TRB_QUERY_MEMORY_LIMIT``; the filter's query stops at ``TRB_QUERY_TIMEOUT``
    (:mod:`toolkit.sql_limits`). Raises UsageError for a bad kind, a ``where`` DuckDB refuses, or one a limit
    stopped.
    """
    if kind not in KINDS:
        raise UsageError(f"--kind {kind!r} is not attribution or continuation")
    items = _select_items(con, kind, where, examples)
    sessions = sorted({row[1] for row in items})
    steps: dict[str, list[dict]] = defaultdict(list)
    language: dict[str, str | None] = {}
    if sessions:
        rows = con.execute(f"SELECT {', '.join(_STEP_COLS)} FROM store.steps "
                           "WHERE session_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY session_id, t",
                           [sessions]).fetchall()
        for row in rows:
            steps[row[0]].append(dict(zip(_STEP_COLS, row)))
        language = dict(con.execute("SELECT session_id, language FROM store.sessions "
                                    "WHERE session_id IN (SELECT unnest(?::VARCHAR[]))", [sessions]).fetchall())
    out = []
    for row in items:
        item_id, session_id, t = row[:3]
        ss = steps[session_id]
        n = len(ss)
        head = {ITEM_KEY: item_key(kind, item_id), "step": t + 1, "n_steps": n,
                "step_label": f"{t + 1} of {n}", "language": _language(language.get(session_id))}
        if kind == "attribution":
            text = _RULE.join([*(_step_text(s, n) for s in ss[:t]), _step_text(ss[t], n, upto="action")])
            after = [_step_text(s, n, report=False) for s in ss[t + 1: t + 1 + AFTER_STEPS]]
            if t + 1 + AFTER_STEPS < n:
                after.append(f"(… {n - t - 1 - AFTER_STEPS} more step(s) not shown)")
            if after:
                after.append(AFTER_NOTE)
            out.append({**head, "session_text": text, "outcome": ss[t]["outcome"] or "(none)",
                        "after_text": _RULE.join(after) if after else "(the session ends with this outcome)"})
        else:
            text = _RULE.join([*(_step_text(s, n) for s in ss[:t]), _step_text(ss[t], n, upto="observation")])
            space = ss[t]["action_space"] or []
            texts = ss[t]["action_texts"]
            prompt = ("Choose the action this agent takes next (one of the list). Required: a note without an action "
                      "is not an answer and is refused." if space else
                      "No list of actions at this step: write what this agent says or does next, then press Add "
                      "(Submit stays disabled until it is added).")
            out.append({**head, "context_text": text,
                        "r_prime_text": "\n".join(_slot_lines(*row[3:8], indent="")),
                        "action_options": [{"value": a, "html": html.escape(action_shown(a, space, texts))}
                                           for a in space],
                        "open_ended": not space, "prompt": prompt,
                        # one text box: a note beside the chosen action, or the continuation itself
                        "continuation_label": ("Note (optional): why, or what was unclear" if space else
                                               "Write what the agent says or does next, as the agent would say or "
                                               "do it (not a description of it)")})
    return out


def example_items_sql(kind: str) -> str:
    """SQL for the ids of the items of ``kind`` (``attribution``; otherwise counterfactuals) that are examples:
    their session's source kind is one of :data:`EXAMPLE_SOURCE_KINDS`."""
    table, col = ("attribution", "item_id") if kind == "attribution" else ("counterfactuals", "cf_id")
    return f"SELECT {col} FROM store.{table} WHERE NOT ({_NOT_EXAMPLE})"


def example_items(con, kind: str) -> list[str]:
    """The ids of the items of ``kind`` that are examples (:func:`example_items_sql`): never rendered as tasks."""
    return [r[0] for r in con.execute(f"{example_items_sql(kind)} ORDER BY 1").fetchall()]


def item_targets(con, kind: str) -> dict[str, tuple[str, list[str] | None]]:
    """Task key -> (annotation target id, the step's action space or None) for every item of ``kind``.

    Attribution items are also found by their plain id (the key of projects pushed before keys were opaque).
    """
    if kind == "attribution":
        out = {}
        for (item_id,) in con.execute("SELECT item_id FROM store.attribution").fetchall():
            out[item_key(kind, item_id)] = out[item_id] = (item_id, None)
        return out
    rows = con.execute("SELECT c.cf_id, s.action_space FROM store.counterfactuals c "
                       "JOIN store.steps s ON s.session_id = c.session_id AND s.t = c.t").fetchall()
    return {cf_key(cf): (cf, space) for cf, space in rows}
