"""Items of the corpus rendered as Label Studio task data (one task per item).

Two kinds of item, one Label Studio project each:

- ``attribution`` (project ``caused_by_self``): an attribution item; the task shows the
  session up to and including the outcome at step t, every step with its r_t slots.
- ``continuation`` (Φ(r')): a counterfactual; the task shows the context at step t (the
  steps before it and what the agent saw at t), the counterfactual self-report r' in its
  slots, and the step's action space as the choices. Nothing in the task tells where r'
  came from: the task's item key is an opaque hash of the counterfactual id, not the id
  (ids often name their origin), and origin, flags and author are left out.

Every task carries ``trb_item_id`` (the attribution item id, or the opaque key of the
counterfactual), which is how push skips items already in a project and pull finds the
item an annotation belongs to.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass
from importlib import resources

import orjson

from corpus.errors import UsageError

__all__ = ["KINDS", "ITEM_KEY", "ProjectKind", "label_config", "cf_key", "render_tasks", "item_targets"]

#: The task data field that holds the item's stable key.
ITEM_KEY = "trb_item_id"
_CONFIGS = resources.files("annotate") / "configs"  # package data


@dataclass(frozen=True)
class ProjectKind:
    kind: str  # attribution | continuation
    project: str  # the project's concept name
    default_title: str
    target_kind: str  # the annotation target kind: attribution | counterfactual
    config_file: str


KINDS: dict[str, ProjectKind] = {
    "attribution": ProjectKind("attribution", "caused_by_self", "TRB caused_by_self", "attribution", "attribution.xml"),
    "continuation": ProjectKind("continuation", "continuation", "TRB continuation", "counterfactual",
                                "continuation.xml"),
}


def label_config(kind: str) -> str:
    """The labeling config (XML) of the project for ``kind``."""
    return (_CONFIGS / KINDS[kind].config_file).read_text(encoding="utf-8")


def cf_key(cf_id: str) -> str:
    """The opaque task key of a counterfactual (its id may name its origin; the key does not)."""
    return "cf-" + hashlib.sha256(cf_id.encode()).hexdigest()[:24]


def _num(x) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def _slots(goal, planned_next, caused_by_self, confidence, ext) -> str:
    parts = []
    for name, value in (("goal", goal), ("planned_next", planned_next), ("caused_by_self", caused_by_self),
                        ("confidence", confidence)):
        if value is not None:
            parts.append(f"{name}: {_num(value)}")
    if ext:
        for name, value in sorted(orjson.loads(ext).items()):
            parts.append(f"{name}: {str(value).lower() if isinstance(value, bool) else _num(value)}")
    return "; ".join(parts) if parts else "(no slots reported)"


def _step_text(s: dict, *, upto_observation: bool = False) -> str:
    lines = [f"Step {s['t']}", f"  saw: {s['observation']}"]
    if upto_observation:
        return "\n".join(lines)
    r = _slots(s["r_goal"], s["r_planned_next"], s["r_caused_by_self"], s["r_confidence"], s["r_ext"]) \
        if s["has_r"] else "(not recorded)"
    lines.append(f"  r_t: {r}")
    space = f" (of: {', '.join(s['action_space'])})" if s["action_space"] else " (open-ended)"
    lines.append(f"  action: {s['action']}{space}")
    if s["outcome"] is not None:
        lines.append(f"  outcome: {s['outcome']}")
    return "\n".join(lines)


_STEP_COLS = ["session_id", "t", "observation", "has_r", "r_goal", "r_planned_next", "r_caused_by_self",
              "r_confidence", "r_ext", "action", "action_space", "outcome"]
_ITEM_SQL = {
    "attribution": "SELECT item_id, session_id, t FROM store.attribution{where} ORDER BY item_id",
    "continuation": "SELECT cf_id, session_id, t, rp_goal, rp_planned_next, rp_caused_by_self, rp_confidence, rp_ext "
                    "FROM store.counterfactuals{where} ORDER BY cf_id",
}


def _select_items(con, kind: str, where: str | None) -> list[tuple]:
    import duckdb

    sql = _ITEM_SQL[kind].format(where=f" WHERE ({where})" if where else "")
    try:
        return con.execute(sql).fetchall()
    except duckdb.Error as e:
        raise UsageError(f"--where {where!r} is not a valid filter on the {kind} items: "
                         f"{str(e).splitlines()[0]}") from None


def render_tasks(con, kind: str, where: str | None = None) -> list[dict]:
    """Task data for every item of ``kind`` (optionally filtered by an SQL ``where`` on its table), by item id.

    ``con`` is an open corpus connection (``Corpus.open``).
    """
    if kind not in KINDS:
        raise UsageError(f"--kind {kind!r} is not attribution or continuation")
    items = _select_items(con, kind, where)
    sessions = sorted({row[1] for row in items})
    steps: dict[str, list[dict]] = defaultdict(list)
    if sessions:
        rows = con.execute(f"SELECT {', '.join(_STEP_COLS)} FROM store.steps "
                           "WHERE session_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY session_id, t",
                           [sessions]).fetchall()
        for row in rows:
            steps[row[0]].append(dict(zip(_STEP_COLS, row)))
    out = []
    for row in items:
        item_id, session_id, t = row[:3]
        ss = steps[session_id]
        if kind == "attribution":
            text = "\n\n".join(_step_text(s) for s in ss[: t + 1])
            out.append({ITEM_KEY: item_id, "t": t, "session_text": text, "outcome": ss[t]["outcome"] or "(none)"})
        else:
            before = [_step_text(s) for s in ss[:t]]
            text = "\n\n".join([*before, _step_text(ss[t], upto_observation=True)])
            space = ss[t]["action_space"] or []
            out.append({ITEM_KEY: cf_key(item_id), "t": t, "context_text": text,
                        "r_prime_text": _slots(*row[3:8]),
                        "action_options": [{"value": a} for a in space],
                        "open_ended": not space})
    return out


def item_targets(con, kind: str) -> dict[str, tuple[str, list[str] | None]]:
    """Task key -> (annotation target id, the step's action space or None) for every item of ``kind``."""
    if kind == "attribution":
        return {r[0]: (r[0], None) for r in con.execute("SELECT item_id FROM store.attribution").fetchall()}
    rows = con.execute("SELECT c.cf_id, s.action_space FROM store.counterfactuals c "
                       "JOIN store.steps s ON s.session_id = c.session_id AND s.t = c.t").fetchall()
    return {cf_key(cf): (cf, space) for cf, space in rows}
