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
    RSnapshot,
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
    """Rows for every store table, column by column, from records accepted by the fast path."""

    def __init__(self, src_file: str):
        self.src_file = src_file
        self.cols: dict[str, dict[str, list]] = {t: {c: [] for c, _ in cols if c not in ("ingest_id", "src_file")}
                                                 for t, cols in TABLES.items()}
        self.n = dict.fromkeys(TABLES, 0)

    def add(self, rec, sha256: str, line: int) -> bool:
        """Stage the rows of ``rec`` (a Struct of :mod:`corpus.fast_records`) read from line ``line``; False (and
        nothing staged) for a record whose JSON columns DuckDB would spell otherwise: stage its document instead."""
        cls = type(rec)
        if cls is Counterfactual:
            r = rec.r_prime
            if (r.ext and not _plain(r.ext.values())) or (
                    type(rec.phi) is PhiDistribution and not _plain(rec.phi.probs.values())):
                return False
            self._counterfactual(rec, sha256, line)
        elif cls is Session:
            for step in rec.steps:
                if step.r is not None and step.r.ext and not _plain(step.r.ext.values()):
                    return False
            self._session(rec, sha256, line)
        elif cls is Attribution:
            c = self.cols["attribution"]
            self.n["attribution"] += 1
            for name, value in (("item_id", rec.item_id), ("content_hash", sha256), ("session_id", rec.session_id),
                                ("t", rec.t), ("design_label", rec.design_label), ("endorsed", rec.endorsed),
                                ("note", rec.note), ("src_line", line),
                                ("schema_version", _version(rec.schema_version))):
                c[name].append(value)
        elif cls is Annotation:
            self._annotation(rec, sha256, line)
        elif cls is TransferContext:
            c = self.cols["transfer_contexts"]
            self.n["transfer_contexts"] += 1
            for name, value in (("context_id", rec.context_id), ("content_hash", sha256),
                                ("collector_org", rec.collector_org), ("attestation_ref", rec.attestation_ref),
                                ("description", rec.description), ("src_line", line),
                                ("schema_version", _version(rec.schema_version))):
                c[name].append(value)
        else:
            raise TypeError(f"not a record: {rec!r}")
        return True

    def _session(self, s: Session, sha256: str, line: int) -> None:
        c = self.cols["sessions"]
        self.n["sessions"] += 1
        src, ctx = s.source, s.context
        ds = src.dataset or None  # UNSET (absent) and None alike
        for name, value in (
            ("session_id", s.session_id), ("content_hash", sha256), ("source_kind", src.kind),
            ("collector", src.collector), ("consent_ref", src.consent_ref), ("licence", src.licence),
            ("subject_id", s.subject_id), ("context_id", ctx.context_id), ("stimulus_set", ctx.stimulus_set),
            ("subject_population", ctx.subject_population), ("language", ctx.language),
            ("r_extensions", _json(s.r_extensions).decode()), ("ext_slots", sorted(s.r_extensions)),
            ("n_steps", len(s.steps)), ("src_line", line), ("schema_version", _version(s.schema_version)),
            ("dataset_name", ds and ds.name), ("dataset_revision", ds and ds.revision),
            ("dataset_citation", ds and ds.citation), ("dataset_item", ds and ds.item),
        ):
            c[name].append(value)
        st = self.cols["steps"]
        sid = s.session_id
        n = len(s.steps)
        self.n["steps"] += n
        st["session_id"].extend([sid] * n)
        t, obs, has_r, goal, planned, cbs, conf, ext, action, space, outcome, texts = (
            st["t"], st["observation"], st["has_r"], st["r_goal"], st["r_planned_next"], st["r_caused_by_self"],
            st["r_confidence"], st["r_ext"], st["action"], st["action_space"], st["outcome"], st["action_texts"])
        for step in s.steps:
            t.append(step.t)
            obs.append(step.observation)
            r = step.r
            if r is None:
                has_r.append(False)
                goal.append(None)
                planned.append(None)
                cbs.append(None)
                conf.append(None)
                ext.append(None)
            else:
                has_r.append(True)
                goal.append(r.goal)
                planned.append(r.planned_next)
                cbs.append(r.caused_by_self)
                conf.append(r.confidence)
                ext.append(_text(r.ext))
            action.append(step.action)
            space.append(step.action_space)
            outcome.append(step.outcome)
            texts.append(step.action_texts or None)

    def _counterfactual(self, cf: Counterfactual, sha256: str, line: int) -> None:
        c = self.cols["counterfactuals"]
        self.n["counterfactuals"] += 1
        r: RSnapshot = cf.r_prime
        gen = cf.author.generator
        phi = cf.phi
        is_dist = type(phi) is PhiDistribution
        for name, value in (
            ("cf_id", cf.cf_id), ("content_hash", sha256), ("session_id", cf.session_id), ("t", cf.t),
            ("rp_goal", r.goal), ("rp_planned_next", r.planned_next), ("rp_caused_by_self", r.caused_by_self),
            ("rp_confidence", r.confidence), ("rp_ext", _text(r.ext)), ("origin", cf.origin),
            ("paired_session_id", cf.paired_session_id), ("adversarial", cf.flags.adversarial),
            ("ood", cf.flags.ood), ("author_person", cf.author.person_id),
            ("generator_name", gen and gen.name), ("generator_version", gen and gen.version),
            ("generator_seed", gen and gen.seed),
            ("phi_type", None if phi is None else ("distribution" if is_dist else "text")),
            ("phi_probs", _text(phi.probs) if is_dist else None),
            ("phi_actions", sorted(phi.probs) if is_dist else None),
            ("phi_text", None if phi is None or is_dist else phi.text),
            ("phi_n", None if phi is None else phi.n), ("src_line", line),
            ("schema_version", _version(cf.schema_version)),
        ):
            c[name].append(value)

    def _annotation(self, a: Annotation, sha256: str, line: int) -> None:
        c = self.cols["annotations"]
        self.n["annotations"] += 1
        v = a.value
        vt = type(v)
        ls = a.label_studio
        for name, value in (
            ("annotation_id", a.annotation_id), ("content_hash", sha256), ("target_kind", a.target.kind),
            ("target_id", a.target.id), ("annotator_id", a.annotator_id), ("role", a.role), ("method", a.method),
            ("value_type", vt.__struct_config__.tag),
            ("label", v.label if vt is AttributionValue else None),
            ("endorsed", v.endorsed if vt is AttributionValue else None),
            ("rationale", v.rationale), ("action", v.action if vt is ActionValue else None),
            ("text", None if vt is AttributionValue or vt is ActionValue else v.text),
            ("created_at", a.created_at), ("revision", a.revision),
            ("ls_project_id", ls and ls.project_id), ("ls_task_id", ls and ls.task_id),
            ("ls_annotation_id", ls and ls.annotation_id), ("src_line", line),
            ("schema_version", _version(a.schema_version)),
        ):
            c[name].append(value)

    def tables(self) -> dict[str, pa.Table]:
        """Each table with rows, as an Arrow table with the store table's columns and types."""
        out = {}
        for table, n in self.n.items():
            if not n:
                continue
            schema = _SCHEMAS[table]
            c = self.cols[table]
            arrays = []
            for f in schema:
                if f.name == "ingest_id":
                    arrays.append(pa.nulls(n, f.type))
                elif f.name == "src_file":
                    arrays.append(pa.array([self.src_file] * n, f.type))
                else:
                    arrays.append(pa.array(c[f.name], f.type))
            out[table] = pa.Table.from_arrays(arrays, schema=schema)
        return out
