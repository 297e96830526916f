"""The corpus store's tables: one definition used for the DDL, the staging area and rows.

Every record table keeps the record's canonical JSON (``record``) and content hash
beside flat, queryable columns, and where it came from (ingest id, file, line).
"""

from __future__ import annotations

import orjson
import pyarrow as pa

__all__ = ["TABLES", "RECORD_TABLES", "ddl", "RowBuffer", "add_record"]

_V, _I, _D, _B, _L = "VARCHAR", "INTEGER", "DOUBLE", "BOOLEAN", "VARCHAR[]"
_ARROW = {_V: pa.string(), _I: pa.int64(), _D: pa.float64(), _B: pa.bool_(), _L: pa.list_(pa.string()), "BIGINT": pa.int64()}
_SRC = [("ingest_id", _I), ("src_file", _V), ("src_line", "BIGINT")]

#: table -> [(column, DuckDB type)]
TABLES: dict[str, list[tuple[str, str]]] = {
    "sessions": [
        ("session_id", _V), ("content_hash", _V), ("source_kind", _V), ("collector", _V),
        ("consent_ref", _V), ("licence", _V), ("subject_id", _V), ("context_id", _V),
        ("stimulus_set", _V), ("subject_population", _V), ("language", _V), ("n_steps", _I),
        ("ext_slots", _L), ("record", _V), *_SRC,
    ],
    "steps": [
        ("session_id", _V), ("t", _I), ("observation", _V), ("has_r", _B), ("r_goal", _V),
        ("r_planned_next", _V), ("r_caused_by_self", _D), ("r_confidence", _D), ("r_ext", _V),
        ("action", _V), ("action_space", _L), ("outcome", _V),
    ],
    "counterfactuals": [
        ("cf_id", _V), ("content_hash", _V), ("session_id", _V), ("t", _I), ("origin", _V),
        ("paired_session_id", _V), ("adversarial", _B), ("ood", _B), ("author_person", _V),
        ("generator_name", _V), ("generator_version", _V), ("generator_seed", "BIGINT"),
        ("r_ext_keys", _L), ("phi_type", _V), ("phi_actions", _L), ("phi_n", _I), ("record", _V), *_SRC,
    ],
    "attribution": [
        ("item_id", _V), ("content_hash", _V), ("session_id", _V), ("t", _I), ("design_label", _V),
        ("endorsed", _B), ("record", _V), *_SRC,
    ],
    "annotations": [
        ("annotation_id", _V), ("content_hash", _V), ("target_kind", _V), ("target_id", _V),
        ("annotator_id", _V), ("role", _V), ("method", _V), ("value_type", _V), ("label", _V),
        ("action", _V), ("created_at", _V), ("revision", _I), ("record", _V), *_SRC,
    ],
    "transfer_contexts": [
        ("context_id", _V), ("content_hash", _V), ("collector_org", _V), ("attestation_ref", _V),
        ("description", _V), ("record", _V), *_SRC,
    ],
}

#: record kind -> (table, id column)
RECORD_TABLES: dict[str, tuple[str, str]] = {
    "session": ("sessions", "session_id"),
    "counterfactual": ("counterfactuals", "cf_id"),
    "attribution": ("attribution", "item_id"),
    "annotation": ("annotations", "annotation_id"),
    "transfer_context": ("transfer_contexts", "context_id"),
}
_KEYS = {table: key for table, key in RECORD_TABLES.values()}


def ddl(schema: str, *, keys: bool) -> list[str]:
    """CREATE TABLE statements for every table in ``schema`` (with primary keys if ``keys``)."""
    out = []
    for table, cols in TABLES.items():
        body = [f"{c} {t}" for c, t in cols]
        if keys and table in _KEYS:
            body.append(f"PRIMARY KEY ({_KEYS[table]})")
        out.append(f"CREATE TABLE IF NOT EXISTS {schema}.{table} ({', '.join(body)})")
    return out


class RowBuffer:
    """Column lists for every table, turned into Arrow tables a batch at a time."""

    def __init__(self) -> None:
        self.columns = {table: {c: [] for c, _ in cols} for table, cols in TABLES.items()}
        self.rows = 0

    def arrow(self, table: str) -> pa.Table:
        cols = TABLES[table]
        return pa.table(
            {c: pa.array(self.columns[table][c], type=_ARROW[t]) for c, t in cols},
        )

    def nonempty(self) -> list[str]:
        return [t for t, cols in self.columns.items() if cols[TABLES[t][0][0]]]


def _r_cols(r) -> tuple:
    if r is None:
        return (False, None, None, None, None, None)
    ext = orjson.dumps(r.ext, option=orjson.OPT_SORT_KEYS).decode() if r.ext else None
    return (True, r.goal, r.planned_next, r.caused_by_self, r.confidence, ext)


def _append(cols: dict, values: tuple, names: list[tuple[str, str]]) -> None:
    for (name, _), value in zip(names, values):
        cols[name].append(value)


def add_record(buf: RowBuffer, parsed, src_file: str, src_line: int) -> None:
    """Append one parsed record's rows (a session adds its steps too)."""
    m = parsed.model
    record = parsed.canonical.decode()
    src = (None, src_file, src_line)
    kind = m.kind
    if kind == "session":
        s, c = m.source, m.context
        _append(buf.columns["sessions"], (
            m.session_id, parsed.sha256, s.kind, s.collector, s.consent_ref, s.licence, m.subject_id,
            c.context_id, c.stimulus_set, c.subject_population, c.language, len(m.steps),
            sorted(m.r_extensions), record, *src), TABLES["sessions"])
        sc = buf.columns["steps"]
        for step in m.steps:
            has_r, goal, plan, cbs, conf, ext = _r_cols(step.r)
            sc["session_id"].append(m.session_id)
            sc["t"].append(step.t)
            sc["observation"].append(step.observation)
            sc["has_r"].append(has_r)
            sc["r_goal"].append(goal)
            sc["r_planned_next"].append(plan)
            sc["r_caused_by_self"].append(cbs)
            sc["r_confidence"].append(conf)
            sc["r_ext"].append(ext)
            sc["action"].append(step.action)
            sc["action_space"].append(step.action_space)
            sc["outcome"].append(step.outcome)
    elif kind == "counterfactual":
        a, phi, gen = m.author, m.phi, m.author.generator
        _append(buf.columns["counterfactuals"], (
            m.cf_id, parsed.sha256, m.session_id, m.t, m.origin, m.paired_session_id,
            m.flags.adversarial, m.flags.ood, a.person_id,
            gen.name if gen else None, gen.version if gen else None, gen.seed if gen else None,
            sorted(m.r_prime.ext) if m.r_prime.ext else [],
            phi.type if phi else None,
            sorted(phi.probs) if phi is not None and phi.type == "distribution" else None,
            phi.n if phi else None, record, *src), TABLES["counterfactuals"])
    elif kind == "attribution":
        _append(buf.columns["attribution"], (
            m.item_id, parsed.sha256, m.session_id, m.t, m.design_label, m.endorsed, record, *src),
            TABLES["attribution"])
    elif kind == "annotation":
        v = m.value
        _append(buf.columns["annotations"], (
            m.annotation_id, parsed.sha256, m.target.kind, m.target.id, m.annotator_id, m.role, m.method,
            v.type, getattr(v, "label", None), getattr(v, "action", None), m.created_at, m.revision,
            record, *src), TABLES["annotations"])
    else:
        _append(buf.columns["transfer_contexts"], (
            m.context_id, parsed.sha256, m.collector_org, m.attestation_ref, m.description, record, *src),
            TABLES["transfer_contexts"])
    buf.rows += 1
