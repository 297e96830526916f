"""The corpus store's tables, and the exact mapping between records and rows.

The store is normalised: a record's fields live in flat, queryable columns (a
session's steps in ``steps``), nothing twice. :func:`expand` turns staged canonical
documents into rows (DuckDB parses the JSON); :func:`record_from_rows` turns rows back into the record, equal
to the original's canonical form (a test round-trips every example and simulated
record), so releases are cut from these tables without keeping the raw JSON.
Every record table also says where each row came from (ingest id, file, line).

Store format 2 (record schema 1.1) added columns at the end of tables: each record's
``schema_version`` (NULL for a 1.0 record, which says 1), a session's ``dataset_*``
provenance and a step's ``action_texts``. A format-1 store gains them when it is next
opened (:func:`corpus.store.upgrade_store`); its rows read as 1.0 records.
"""

from __future__ import annotations

import orjson

__all__ = ["TABLES", "RECORD_TABLES", "ADDED_COLUMNS", "EXPAND_SQL", "ddl", "expand", "record_from_rows"]

_V, _I, _BI, _D, _B, _L = "VARCHAR", "INTEGER", "BIGINT", "DOUBLE", "BOOLEAN", "VARCHAR[]"
_SRC = [("ingest_id", _I), ("src_file", _V), ("src_line", _BI)]
_R = [("goal", _V), ("planned_next", _V), ("caused_by_self", _D), ("confidence", _D), ("ext", _V)]

#: table -> [(column, DuckDB type)]
TABLES: dict[str, list[tuple[str, str]]] = {
    "sessions": [
        ("session_id", _V), ("content_hash", _V), ("source_kind", _V), ("collector", _V),
        ("consent_ref", _V), ("licence", _V), ("subject_id", _V), ("context_id", _V),
        ("stimulus_set", _V), ("subject_population", _V), ("language", _V), ("r_extensions", _V),
        ("ext_slots", _L), ("n_steps", _I), *_SRC, ("schema_version", _V), ("dataset_name", _V),
        ("dataset_revision", _V), ("dataset_citation", _V), ("dataset_item", _V),
    ],
    "steps": [
        ("session_id", _V), ("t", _I), ("observation", _V), ("has_r", _B),
        *[(f"r_{c}", t) for c, t in _R], ("action", _V), ("action_space", _L), ("outcome", _V),
        ("action_texts", _L),
    ],
    "counterfactuals": [
        ("cf_id", _V), ("content_hash", _V), ("session_id", _V), ("t", _I),
        *[(f"rp_{c}", t) for c, t in _R], ("origin", _V), ("paired_session_id", _V),
        ("adversarial", _B), ("ood", _B), ("author_person", _V), ("generator_name", _V),
        ("generator_version", _V), ("generator_seed", _BI), ("phi_type", _V), ("phi_probs", _V),
        ("phi_actions", _L), ("phi_text", _V), ("phi_n", _I), *_SRC, ("schema_version", _V),
    ],
    "attribution": [
        ("item_id", _V), ("content_hash", _V), ("session_id", _V), ("t", _I), ("design_label", _V),
        ("endorsed", _B), ("note", _V), *_SRC, ("schema_version", _V),
    ],
    "annotations": [
        ("annotation_id", _V), ("content_hash", _V), ("target_kind", _V), ("target_id", _V),
        ("annotator_id", _V), ("role", _V), ("method", _V), ("value_type", _V), ("label", _V),
        ("endorsed", _B), ("rationale", _V), ("action", _V), ("text", _V), ("created_at", _V),
        ("revision", _I), ("ls_project_id", _BI), ("ls_task_id", _BI), ("ls_annotation_id", _BI), *_SRC,
        ("schema_version", _V),
    ],
    "transfer_contexts": [
        ("context_id", _V), ("content_hash", _V), ("collector_org", _V), ("attestation_ref", _V),
        ("description", _V), *_SRC, ("schema_version", _V),
    ],
}

#: Columns store format 2 added (at the end of their tables): table -> [(column, DuckDB type)].
ADDED_COLUMNS: dict[str, list[tuple[str, str]]] = {
    "sessions": [("schema_version", _V), ("dataset_name", _V), ("dataset_revision", _V), ("dataset_citation", _V),
                 ("dataset_item", _V)],
    "steps": [("action_texts", _L)],
    **{t: [("schema_version", _V)] for t in ("counterfactuals", "attribution", "annotations", "transfer_contexts")},
}

#: record kind -> (table, id column)
RECORD_TABLES: dict[str, tuple[str, str]] = {
    "session": ("sessions", "session_id"),
    "counterfactual": ("counterfactuals", "cf_id"),
    "attribution": ("attribution", "item_id"),
    "annotation": ("annotations", "annotation_id"),
    "transfer_context": ("transfer_contexts", "context_id"),
}


def ddl(schema: str) -> list[str]:
    """CREATE TABLE statements for every table in ``schema``.

    No table has a primary key: a record's id is unique in the store because the ingest makes it so (it
    refuses an id twice in its input or with other content than the store's, and adds only ids the store lacks,
    under the corpus's write lock). DuckDB's key indexes must fit in memory, and would make the memory an
    ingest needs grow with the corpus (at 1M sessions they no longer fit in ``TRB_DUCKDB_MEMORY``); store format 3.
    """
    out = []
    for table, cols in TABLES.items():
        out.append(f"CREATE TABLE IF NOT EXISTS {schema}.{table} ({', '.join(f'{c} {t}' for c, t in cols)})")
    return out


_R_STRUCT = '{"goal": "VARCHAR", "planned_next": "VARCHAR", "caused_by_self": "DOUBLE", "confidence": "DOUBLE", "ext": "JSON"}'
_STEP_STRUCT = ('{"t": "INTEGER", "observation": "VARCHAR", "r": ' + _R_STRUCT +
                ', "action": "VARCHAR", "action_space": ["VARCHAR"], "outcome": "VARCHAR", '
                '"action_texts": ["VARCHAR"]}')
_SRC_SQL = "NULL, src_file, src_line"
#: A record's schema_version as stored: NULL for 1 (a 1.0 record), else its text ("1.1").
_VERSION_SQL = "nullif(json_extract_string(doc, '$.schema_version'), '1')"

#: table -> SQL that fills ``{schema}.{table}`` from the canonical documents in ``{raw}``
#: (columns kind, id, content_hash, src_file, src_line, doc). DuckDB parses the JSON.
EXPAND_SQL: dict[str, str] = {
    "sessions": f"""
        INSERT INTO {{schema}}.sessions
        SELECT id, content_hash, j.source.kind, j.source.collector, j.source.consent_ref, j.source.licence,
               j.subject_id, j.context.context_id, j.context.stimulus_set, j.context.subject_population,
               j.context.language, j.r_extensions::VARCHAR, list_sort(json_keys(j.r_extensions)),
               json_array_length(doc, '$.steps')::INTEGER, {_SRC_SQL}, {_VERSION_SQL}, j.source.dataset.name,
               j.source.dataset.revision, j.source.dataset.citation, j.source.dataset.item
        FROM (SELECT *, from_json(doc, '{{"source": {{"kind": "VARCHAR", "collector": "VARCHAR",
                  "consent_ref": "VARCHAR", "licence": "VARCHAR", "dataset": {{"name": "VARCHAR",
                  "revision": "VARCHAR", "citation": "VARCHAR", "item": "VARCHAR"}}}}, "subject_id": "VARCHAR",
                  "context": {{"context_id": "VARCHAR", "stimulus_set": "VARCHAR",
                  "subject_population": "VARCHAR", "language": "VARCHAR"}}, "r_extensions": "JSON"}}') AS j
              FROM {{raw}} WHERE kind = 'session')""",
    "steps": f"""
        INSERT INTO {{schema}}.steps
        SELECT id, s.t, s.observation, s.r IS NOT NULL, s.r.goal, s.r.planned_next, s.r.caused_by_self,
               s.r.confidence, s.r.ext::VARCHAR, s.action, s.action_space, s.outcome, s.action_texts
        FROM (SELECT id, unnest(from_json(doc, '{{"steps": [{_STEP_STRUCT}]}}').steps) AS s
              FROM {{raw}} WHERE kind = 'session')""",
    "counterfactuals": f"""
        INSERT INTO {{schema}}.counterfactuals
        SELECT id, content_hash, j.session_id, j.t, j.r_prime.goal, j.r_prime.planned_next,
               j.r_prime.caused_by_self, j.r_prime.confidence, j.r_prime.ext::VARCHAR, j.origin,
               j.paired_session_id, j.flags.adversarial, j.flags.ood, j.author.person_id,
               j.author.generator.name, j.author.generator.version, j.author.generator.seed,
               j.phi.type, j.phi.probs::VARCHAR,
               CASE WHEN j.phi.type = 'distribution' THEN list_sort(json_keys(j.phi.probs)) END,
               j.phi.text, j.phi.n, {_SRC_SQL}, {_VERSION_SQL}
        FROM (SELECT *, from_json(doc, '{{"session_id": "VARCHAR", "t": "INTEGER", "r_prime": {_R_STRUCT},
                  "origin": "VARCHAR", "paired_session_id": "VARCHAR",
                  "flags": {{"adversarial": "BOOLEAN", "ood": "BOOLEAN"}},
                  "author": {{"person_id": "VARCHAR", "generator": {{"name": "VARCHAR", "version": "VARCHAR",
                  "seed": "BIGINT"}}}}, "phi": {{"type": "VARCHAR", "probs": "JSON", "text": "VARCHAR",
                  "n": "INTEGER"}}}}') AS j
              FROM {{raw}} WHERE kind = 'counterfactual')""",
    "attribution": f"""
        INSERT INTO {{schema}}.attribution
        SELECT id, content_hash, j.session_id, j.t, j.design_label, j.endorsed, j.note, {_SRC_SQL}, {_VERSION_SQL}
        FROM (SELECT *, from_json(doc, '{{"session_id": "VARCHAR", "t": "INTEGER", "design_label": "VARCHAR",
                  "endorsed": "BOOLEAN", "note": "VARCHAR"}}') AS j
              FROM {{raw}} WHERE kind = 'attribution')""",
    "annotations": f"""
        INSERT INTO {{schema}}.annotations
        SELECT id, content_hash, j.target.kind, j.target.id, j.annotator_id, j.role, j.method, j.value.type,
               j.value.label, j.value.endorsed, j.value.rationale, j.value.action, j.value.text, j.created_at,
               j.revision, j.label_studio.project_id, j.label_studio.task_id, j.label_studio.annotation_id,
               {_SRC_SQL}, {_VERSION_SQL}
        FROM (SELECT *, from_json(doc, '{{"target": {{"kind": "VARCHAR", "id": "VARCHAR"}},
                  "annotator_id": "VARCHAR", "role": "VARCHAR", "method": "VARCHAR",
                  "value": {{"type": "VARCHAR", "label": "VARCHAR", "endorsed": "BOOLEAN",
                  "rationale": "VARCHAR", "action": "VARCHAR", "text": "VARCHAR"}}, "created_at": "VARCHAR",
                  "revision": "INTEGER", "label_studio": {{"project_id": "BIGINT", "task_id": "BIGINT",
                  "annotation_id": "BIGINT"}}}}') AS j
              FROM {{raw}} WHERE kind = 'annotation')""",
    "transfer_contexts": f"""
        INSERT INTO {{schema}}.transfer_contexts
        SELECT id, content_hash, j.collector_org, j.attestation_ref, j.description, {_SRC_SQL}, {_VERSION_SQL}
        FROM (SELECT *, from_json(doc, '{{"collector_org": "VARCHAR", "attestation_ref": "VARCHAR",
                  "description": "VARCHAR"}}') AS j
              FROM {{raw}} WHERE kind = 'transfer_context')""",
}



def expand(con, schema: str = "main", raw: str = "main.raw") -> None:
    """Fill every table in ``schema`` from the canonical documents staged in ``raw``."""
    for sql in EXPAND_SQL.values():
        con.execute(sql.replace("{schema}", schema).replace("{raw}", raw))


def _r_from(row: dict, prefix: str) -> dict:
    ext = row[f"{prefix}ext"]
    return {"goal": row[f"{prefix}goal"], "planned_next": row[f"{prefix}planned_next"],
            "caused_by_self": row[f"{prefix}caused_by_self"], "confidence": row[f"{prefix}confidence"],
            # not strict_json: the corpus store's own JSON column, written by the toolkit after ingest's strict read
            "ext": None if ext is None else orjson.loads(ext)}


def _step_from(s: dict) -> dict:
    step = {"t": s["t"], "observation": s["observation"], "r": _r_from(s, "r_") if s["has_r"] else None,
            "action": s["action"], "action_space": s["action_space"], "outcome": s["outcome"]}
    if s.get("action_texts") is not None:
        step["action_texts"] = s["action_texts"]
    return step


def record_from_rows(kind: str, row: dict, steps: list[dict] | None = None) -> dict:
    """The record (in its canonical shape) that ``row`` (and, for a session, its ``steps`` in order) hold."""
    version = row.get("schema_version")
    head = {"kind": kind, "schema_version": 1 if version is None else version}
    if kind == "session":
        source = {"kind": row["source_kind"], "collector": row["collector"], "consent_ref": row["consent_ref"],
                  "licence": row["licence"]}
        if row.get("dataset_name") is not None:
            source["dataset"] = {"name": row["dataset_name"], "revision": row["dataset_revision"],
                                 "citation": row["dataset_citation"], "item": row["dataset_item"]}
        return {**head, "session_id": row["session_id"], "source": source,
                "subject_id": row["subject_id"],
                "context": {"context_id": row["context_id"], "stimulus_set": row["stimulus_set"],
                            "subject_population": row["subject_population"], "language": row["language"]},
                # not strict_json: the corpus store's own JSON column, written by the toolkit after ingest's strict read
                "r_extensions": orjson.loads(row["r_extensions"]),
                "steps": [_step_from(s) for s in steps or []]}
    if kind == "counterfactual":
        phi = None
        if row["phi_type"] == "distribution":
            # not strict_json: the corpus store's own JSON column, written by the toolkit after ingest's strict read
            phi = {"type": "distribution", "probs": orjson.loads(row["phi_probs"]), "n": row["phi_n"]}
        elif row["phi_type"] == "text":
            phi = {"type": "text", "text": row["phi_text"], "n": row["phi_n"]}
        gen = None
        if row["generator_name"] is not None:
            gen = {"name": row["generator_name"], "version": row["generator_version"], "seed": row["generator_seed"]}
        return {**head, "cf_id": row["cf_id"], "session_id": row["session_id"], "t": row["t"],
                "r_prime": _r_from(row, "rp_"), "origin": row["origin"], "paired_session_id": row["paired_session_id"],
                "flags": {"adversarial": row["adversarial"], "ood": row["ood"]},
                "author": {"person_id": row["author_person"], "generator": gen}, "phi": phi}
    if kind == "attribution":
        return {**head, "item_id": row["item_id"], "session_id": row["session_id"], "t": row["t"],
                "design_label": row["design_label"], "endorsed": row["endorsed"], "note": row["note"]}
    if kind == "annotation":
        vt = row["value_type"]
        if vt == "attribution":
            value = {"type": vt, "label": row["label"], "endorsed": row["endorsed"], "rationale": row["rationale"]}
        elif vt == "action":
            value = {"type": vt, "action": row["action"]}
        else:
            value = {"type": vt, "text": row["text"]}
        ls = None
        if row["ls_project_id"] is not None:
            ls = {"project_id": row["ls_project_id"], "task_id": row["ls_task_id"],
                  "annotation_id": row["ls_annotation_id"]}
        return {**head, "annotation_id": row["annotation_id"],
                "target": {"kind": row["target_kind"], "id": row["target_id"]}, "annotator_id": row["annotator_id"],
                "role": row["role"], "method": row["method"], "value": value, "created_at": row["created_at"],
                "revision": row["revision"], "label_studio": ls}
    if kind == "transfer_context":
        return {**head, "context_id": row["context_id"], "description": row["description"],
                "collector_org": row["collector_org"], "attestation_ref": row["attestation_ref"]}
    raise ValueError(f"unknown record kind {kind!r}")
