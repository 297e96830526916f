"""Counts over a corpus: what a curator checks before a release."""

from __future__ import annotations

from corpus.labels import decisions_sql
from corpus.store import Corpus
from corpus.tables import RECORD_TABLES
from schemas.release_format import HUMAN_ORIGINS, SYNTHETIC_CAP

__all__ = ["R_REPORTED_SQL", "SYNTHETIC_CAP", "corpus_stats", "render_stats"]


#: A step whose r_t holds something: recorded (``has_r``) with at least one slot reported. An r_t recorded
#: empty (``"r": {}``, every slot null, blank text, an empty ``ext``: an imported benchmark item's) is
#: counted apart, as ``with_empty_r``: nothing was reported there.
R_REPORTED_SQL = ("has_r AND (nullif(trim(r_goal), '') IS NOT NULL OR nullif(trim(r_planned_next), '') IS NOT NULL "
                  "OR r_caused_by_self IS NOT NULL OR r_confidence IS NOT NULL "
                  "OR coalesce(r_ext, 'null') NOT IN ('null', '{}'))")


def _grouped(con, sql: str) -> dict[str, int]:
    return {str(k): int(v) for k, v in con.execute(sql).fetchall()}


def corpus_stats(corpus: Corpus, *, wait_seconds: float | None = None) -> dict:
    """Counts by record kind, source kind, counterfactual origin and label status, and the synthetic ratio.

    Label status as in :mod:`corpus.browse`: ``adjudicated`` means decided (:func:`corpus.labels.decide`).
    Steps ``with_r`` hold a reported r_t (:data:`R_REPORTED_SQL`); ``with_empty_r`` recorded r_t empty."""
    with corpus.open(write=False, wait_seconds=wait_seconds, purpose="trb-corpus stats") as con:
        records = {kind: con.execute(f"SELECT count(*) FROM store.{table}").fetchone()[0]
                   for kind, (table, _) in RECORD_TABLES.items()}
        steps, steps_with_r, steps_empty_r = con.execute(
            f"SELECT count(*), count(*) FILTER (WHERE {R_REPORTED_SQL}), "
            f"count(*) FILTER (WHERE has_r AND NOT ({R_REPORTED_SQL})) FROM store.steps").fetchone()
        by_source = _grouped(con, "SELECT source_kind, count(*) FROM store.sessions GROUP BY 1 ORDER BY 1")
        by_origin = _grouped(con, "SELECT origin, count(*) FROM store.counterfactuals GROUP BY 1 ORDER BY 1")
        flags = con.execute(
            "SELECT count(*) FILTER (WHERE adversarial), count(*) FILTER (WHERE ood), "
            "count(*) FILTER (WHERE phi_type IS NOT NULL), count(*) FILTER (WHERE phi_type IS NULL) "
            "FROM store.counterfactuals"
        ).fetchone()
        label_status = _grouped(con, f"""
            WITH decided AS ({decisions_sql()})
            SELECT status, count(*) FROM (
              SELECT CASE WHEN bool_or(d.target_id IS NOT NULL) THEN 'adjudicated'
                          WHEN count(n.annotation_id) > 0 THEN 'annotated'
                          ELSE 'design_label_only' END AS status
              FROM store.attribution a
              LEFT JOIN store.annotations n ON n.target_kind = 'attribution' AND n.target_id = a.item_id
              LEFT JOIN decided d ON d.target_id = a.item_id
              GROUP BY a.item_id) GROUP BY status ORDER BY status
        """)
        by_role = _grouped(con, "SELECT role, count(*) FROM store.annotations GROUP BY 1 ORDER BY 1")
        design = _grouped(con, "SELECT design_label, count(*) FROM store.attribution GROUP BY 1 ORDER BY 1")
    synthetic = by_origin.get("synthetic", 0)
    human = sum(by_origin.get(o, 0) for o in HUMAN_ORIGINS)
    total_cf = synthetic + human
    return {
        "corpus": str(corpus.dir),
        "records": records,
        "steps": {"total": steps, "with_r": steps_with_r, "with_empty_r": steps_empty_r},
        "sessions_by_source_kind": by_source,
        "counterfactuals_by_origin": by_origin,
        "counterfactual_flags": {"adversarial": flags[0], "ood": flags[1]},
        "counterfactual_phi": {"with_phi": flags[2], "lacking_phi": flags[3]},
        "attribution_by_design_label": design,
        "attribution_label_status": label_status,
        "annotations_by_role": by_role,
        "synthetic_counterfactuals": synthetic,
        "human_counterfactuals": human,
        "synthetic_to_human": (synthetic / human) if human else None,
        "synthetic_share": (synthetic / total_cf) if total_cf else None,
        "synthetic_cap": SYNTHETIC_CAP,
        "within_synthetic_cap": synthetic <= SYNTHETIC_CAP * human,
        "sessions_by_provenance": _provenance(by_source),
    }


#: How sessions came to be: collected from people (trb-collect, or a lab's own), rolled out by a model, or
#: made up (simulated, illustrative: smoke releases only).
PROVENANCE = {"human_session": "collected from human subjects", "model_rollout": "model rollouts",
              "published_dataset": "items of published datasets",
              "simulated": "simulated or illustrative (smoke only)", "illustrative": "simulated or illustrative (smoke only)"}


def _provenance(by_source: dict[str, int]) -> dict[str, int]:
    out = {name: 0 for name in dict.fromkeys(PROVENANCE.values())}
    for kind, n in by_source.items():
        out[PROVENANCE.get(kind, kind)] = out.get(PROVENANCE.get(kind, kind), 0) + n
    return out


def _section(title: str, counts: dict) -> list[str]:
    if not counts:
        return [f"{title}", "  (none)"]
    width = max(len(k) for k in counts)
    return [title] + [f"  {k:<{width}}  {v:>10,}" for k, v in counts.items()]


def render_stats(s: dict) -> str:
    """The stats as an aligned plain-text table."""
    lines = [f"corpus {s['corpus']}"]
    lines += _section("records", {**s["records"], "(steps)": s["steps"]["total"],
                                  "(steps with r_t reported)": s["steps"]["with_r"],
                                  "(steps with r_t recorded empty)": s["steps"]["with_empty_r"]})
    lines += _section("sessions by provenance", s["sessions_by_provenance"])
    lines += _section("sessions by source kind", s["sessions_by_source_kind"])
    lines += _section("counterfactuals by origin", s["counterfactuals_by_origin"])
    lines += _section("counterfactual flags", s["counterfactual_flags"])
    lines += _section("counterfactual Φ", s["counterfactual_phi"])
    lines += _section("attribution items by design label", s["attribution_by_design_label"])
    lines += _section("attribution label status", s["attribution_label_status"])
    lines += _section("annotations by role", s["annotations_by_role"])
    ratio = s["synthetic_to_human"]
    if ratio is None:
        text = f"n/a ({s['synthetic_counterfactuals']} synthetic, no human counterfactuals)"
    else:
        text = f"{ratio:.2f}:1 ({s['synthetic_counterfactuals']:,} synthetic / {s['human_counterfactuals']:,} human)"
    cap = "within" if s["within_synthetic_cap"] else "OVER"
    lines.append(f"synthetic:human  {text}, {cap} the {s['synthetic_cap']:g}:1 cap")
    return "\n".join(lines)
