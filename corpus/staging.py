"""The store's rows of records, built as Arrow columns (the ingest's staging, without a JSON round trip).

:class:`StagedRows` takes the fast path's Structs (:mod:`corpus.fast_records`) and fills one column per
store column (:data:`corpus.tables.TABLES`), so that the ingest inserts typed rows instead of canonical
documents DuckDB parses again. The rows are exactly the ones :func:`corpus.tables.expand` makes of the same
records' canonical documents (``tests/corpus/test_fast_records.py`` checks it): a JSON column holds the value's
canonical JSON (keys sorted, as DuckDB's ``::VARCHAR`` of that part of the canonical document gives it), a
``schema_version`` is NULL for 1 and the text ``"1.1"`` otherwise, and slot and action lists are sorted.
"""

from __future__ import annotations

import msgspec
import orjson
import pyarrow as pa

from corpus.fast_records import (
    ActionValue,
    Annotation,
    Attribution,
    AttributionValue,
    Counterfactual,
    PhiDistribution,
    Session,
    TransferContext,
)
from corpus.tables import TABLES

__all__ = ["StagedRows"]

_ARROW = {"VARCHAR": pa.string(), "INTEGER": pa.int32(), "BIGINT": pa.int64(), "DOUBLE": pa.float64(),
          "BOOLEAN": pa.bool_(), "VARCHAR[]": pa.list_(pa.string())}
_SCHEMAS = {table: pa.schema([(c, _ARROW[t]) for c, t in cols]) for table, cols in TABLES.items()}
_json = msgspec.json.Encoder(order="sorted").encode  # r_extensions: Structs, no numbers


def _text(value: dict | None) -> str | None:
    """A dict of plain values (an r_t's ext, Φ's probs) as its canonical JSON: orjson writes its numbers as the
    canonical form does (msgspec writes 1e+16 and above differently)."""
    return None if value is None else orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _plain(values) -> bool:
    """Whether every float of ``values`` is one DuckDB writes back as orjson wrote it in the canonical document
    (``::VARCHAR`` of a JSON part re-writes its numbers: below 1e-5 and from 1e16 on its spelling can differ)."""
    for v in values:
        if type(v) is float and v != 0.0 and not 1e-5 <= abs(v) < 1e16:
            return False
    return True


def _version(v) -> str | None:
    return None if v == 1 else v


class StagedRows:
    """Rows for every store table, from records accepted by the fast path: one tuple per row, in the table's
    column order without ``ingest_id`` and ``src_file`` (the same for every row of a chunk)."""

    def __init__(self, src_file: str):
        self.src_file = src_file
        self.rows: dict[str, list[tuple]] = {t: [] for t in TABLES}

    def add(self, rec, sha256: str, line: int) -> bool:
        """Stage the rows of ``rec`` (a Struct of :mod:`corpus.fast_records`) read from line ``line``; False (and
        nothing staged) for a record whose JSON columns DuckDB would spell otherwise: stage its document instead."""
        cls = type(rec)
        if cls is Counterfactual:
            r = rec.r_prime
            phi = rec.phi
            is_dist = type(phi) is PhiDistribution
            if (r.ext and not _plain(r.ext.values())) or (is_dist and not _plain(phi.probs.values())):
                return False
            gen = rec.author.generator
            self.rows["counterfactuals"].append((
                rec.cf_id, sha256, rec.session_id, rec.t, r.goal, r.planned_next, r.caused_by_self, r.confidence,
                _text(r.ext), rec.origin, rec.paired_session_id, rec.flags.adversarial, rec.flags.ood,
                rec.author.person_id, gen and gen.name, gen and gen.version, gen and gen.seed,
                None if phi is None else ("distribution" if is_dist else "text"),
                _text(phi.probs) if is_dist else None, sorted(phi.probs) if is_dist else None,
                None if phi is None or is_dist else phi.text, None if phi is None else phi.n,
                line, _version(rec.schema_version)))
        elif cls is Session:
            for step in rec.steps:
                if step.r is not None and step.r.ext and not _plain(step.r.ext.values()):
                    return False
            self._session(rec, sha256, line)
        elif cls is Attribution:
            self.rows["attribution"].append((
                rec.item_id, sha256, rec.session_id, rec.t, rec.design_label, rec.endorsed, rec.note, line,
                _version(rec.schema_version)))
        elif cls is Annotation:
            v = rec.value
            vt = type(v)
            ls = rec.label_studio
            attr = vt is AttributionValue
            self.rows["annotations"].append((
                rec.annotation_id, sha256, rec.target.kind, rec.target.id, rec.annotator_id, rec.role, rec.method,
                vt.__struct_config__.tag, v.label if attr else None, v.endorsed if attr else None, v.rationale,
                v.action if vt is ActionValue else None, None if attr or vt is ActionValue else v.text,
                rec.created_at, rec.revision, ls and ls.project_id, ls and ls.task_id, ls and ls.annotation_id,
                line, _version(rec.schema_version)))
        elif cls is TransferContext:
            self.rows["transfer_contexts"].append((
                rec.context_id, sha256, rec.collector_org, rec.attestation_ref, rec.description, line,
                _version(rec.schema_version)))
        else:
            raise TypeError(f"not a record: {rec!r}")
        return True

    def _session(self, s: Session, sha256: str, line: int) -> None:
        src, ctx = s.source, s.context
        ds = src.dataset or None  # UNSET (absent) and None alike
        self.rows["sessions"].append((
            s.session_id, sha256, src.kind, src.collector, src.consent_ref, src.licence, s.subject_id,
            ctx.context_id, ctx.stimulus_set, ctx.subject_population, ctx.language, _json(s.r_extensions).decode(),
            sorted(s.r_extensions), len(s.steps), line, _version(s.schema_version), ds and ds.name,
            ds and ds.revision, ds and ds.citation, ds and ds.item))
        sid = s.session_id
        append = self.rows["steps"].append
        for step in s.steps:
            r = step.r
            if r is None:
                append((sid, step.t, step.observation, False, None, None, None, None, None, step.action,
                        step.action_space, step.outcome, step.action_texts or None))
            else:
                append((sid, step.t, step.observation, True, r.goal, r.planned_next, r.caused_by_self, r.confidence,
                        _text(r.ext), step.action, step.action_space, step.outcome, step.action_texts or None))

    def tables(self) -> dict[str, pa.Table]:
        """Each table with rows, as an Arrow table with the store table's columns and types."""
        out = {}
        for table, rows in self.rows.items():
            if not rows:
                continue
            schema = _SCHEMAS[table]
            n = len(rows)
            columns = iter(zip(*rows))
            arrays = []
            for f in schema:
                if f.name == "ingest_id":
                    arrays.append(pa.nulls(n, f.type))
                elif f.name == "src_file":
                    arrays.append(pa.array([self.src_file] * n, f.type))
                else:
                    arrays.append(pa.array(next(columns), f.type))
            out[table] = pa.Table.from_arrays(arrays, schema=schema)
        return out
