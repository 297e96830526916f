"""The peer of `bench/annotate_ui.py`: trb-annotate 0.1's task rendering and pull parsing, frozen as they were
before issue 13 (commit 6847bef), so that the same items and submissions are measured both ways in one run.
Its labelling config is `tests/annotate/data/attribution-config-v1.xml`. Never used by the toolkit."""

from __future__ import annotations

import orjson

ATTRIBUTION_LABELS = ("self", "exogenous", "unsure")


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


def _step_text(s: dict) -> str:
    lines = [f"Step {s['t']}", f"  saw: {s['observation']}"]
    r = _slots(s["r_goal"], s["r_planned_next"], s["r_caused_by_self"], s["r_confidence"], s["r_ext"]) \
        if s["has_r"] else "(not recorded)"
    lines.append(f"  r_t: {r}")
    space = f" (of: {', '.join(s['action_space'])})" if s["action_space"] else " (open-ended)"
    lines.append(f"  action: {s['action']}{space}")
    if s["outcome"] is not None:
        lines.append(f"  outcome: {s['outcome']}")
    return "\n".join(lines)


_COLS = ["session_id", "t", "observation", "has_r", "r_goal", "r_planned_next", "r_caused_by_self",
         "r_confidence", "r_ext", "action", "action_space", "outcome"]


def attribution_task(con, item_id: str) -> dict:
    """The v1 task data of one attribution item (its key was the plain item id)."""
    session_id, t = con.execute("SELECT session_id, t FROM store.attribution WHERE item_id = ?", [item_id]).fetchone()
    rows = con.execute(f"SELECT {', '.join(_COLS)} FROM store.steps WHERE session_id = ? ORDER BY t",
                       [session_id]).fetchall()
    ss = [dict(zip(_COLS, r)) for r in rows]
    return {"trb_item_id": item_id, "t": t, "session_text": "\n\n".join(_step_text(s) for s in ss[: t + 1]),
            "outcome": ss[t]["outcome"] or "(none)"}


def _first(result, name, key):
    for r in result or []:
        if r.get("from_name") == name:
            vals = (r.get("value") or {}).get(key) or []
            if vals:
                return vals[0]
    return None


def parse_result(kind: str, result: list[dict], action_space: list[str] | None):
    """v1: (value, None) or (None, why); what it did not return was dropped without a word."""
    if kind == "attribution":
        label = _first(result, "caused_by_self", "choices")
        if label not in ATTRIBUTION_LABELS:
            return None, "without a valid caused_by_self choice"
        value = {"type": "attribution", "label": label}
        rationale = _first(result, "rationale", "text")
        if isinstance(rationale, str) and rationale.strip():
            value["rationale"] = rationale.strip()
        return value, None
    action = _first(result, "action", "choices")
    if action is not None and action_space and action in action_space:
        return {"type": "action", "action": action}, None
    text = _first(result, "continuation", "text")
    if isinstance(text, str) and text.strip():
        return {"type": "continuation", "text": text.strip()}, None
    return None, "without an action from the step's space or a continuation"
