"""Cutting a release: splits, gates, parquet shards, card, datasheet, Croissant, manifest.

A release is built in a staging directory beside its destination (``.X.Y.Z.tmp-PID``) and
renamed into place only when every gate has passed, so a refused, failed or killed release
leaves nothing any command reads (the next release removes a killed one's staging). Its
identity is the content SHA (:mod:`schemas.release_format`), and its manifest's claims are
bound by ``claims_sha256``. A version is cut once per corpus (:mod:`corpus.ledger`, under the
corpus's release lock): the same version with other content, or at another directory than
where the corpus released it, is refused (gate ``immutability``); the same content at the same
place is a no-op.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from corpus import ledger
from corpus.errors import DiskFull, InvalidReleases, ReleaseRefused, UsageError
from corpus.gates import (
    completeness_gate,
    min_annotators_gate,
    phi_annotators,
    release_kind_gate,
    split_discipline_gate,
    synthetic_cap_gate,
    synthetic_shares,
    transfer_provenance_gate,
    waived,
)
from corpus.labels import decisions_sql
from corpus.redaction import DocumentScan, refuse_personal_data
from corpus.splits import DEFAULT_SALT, HELD_OUT, assign_subjects, pinned_subjects
from corpus.store import Corpus
from schemas.models import GateResult, ReleaseManifest
from schemas.release_check import check_release, load_manifest
from schemas.release_format import (
    CONFIGS,
    MIN_ANNOTATORS,
    ROWS_PER_SHARD,
    SPLIT_FRACTIONS,
    SPLITS,
    ContentDigest,
    arrow_schema,
    claims_digest,
    shard_name,
)
from schemas.release_format import read_manifest as schemas_read_manifest
from schemas.versions import SCHEMA_VERSION, TOOLKIT_VERSION, TRB_VERSION
from toolkit.hashing import sha256_file

__all__ = ["ReleaseResult", "cut_release", "read_manifest", "list_releases", "TOOLKIT_VERSION", "ANNOTATED_PHI_SQL",
           "POOLED_PHI_SQL"]

#: The datasheet template releases fill (package data: there in a wheel as in a checkout).
TEMPLATE = resources.files("corpus") / "templates" / "DATASHEET.md"
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
_BATCH_ROWS = 50_000
_MAX_PII_LISTED = 20

#: Φ(r') of each counterfactual from its annotators' action choices (``trb-annotate pull``): the
#: latest revision of each annotator's ``action`` label, kept when the action is in the step's
#: action space; probs = share of annotators per action, n = annotators. Releases use it for a
#: counterfactual whose own record has no Φ, and pool it with a record's Φ that counts its choices
#: (``n`` set: e.g. a subject's own choice, n = 1, from ``trb-collect``) — see :data:`POOLED_PHI_SQL`
#: (columns cf_id, phi_type, phi_probs as JSON, phi_n).
ANNOTATED_PHI_SQL = """
    WITH votes AS (
        SELECT target_id AS cf_id, annotator_id, action FROM store.annotations
        WHERE target_kind = 'counterfactual' AND role = 'annotator' AND value_type = 'action'
        QUALIFY row_number() OVER (PARTITION BY target_id, annotator_id
                                   ORDER BY revision DESC, created_at DESC, annotation_id DESC) = 1),
    valid AS (
        SELECT v.cf_id, v.action FROM votes v
        JOIN store.counterfactuals c ON c.cf_id = v.cf_id
        JOIN store.steps s ON s.session_id = c.session_id AND s.t = c.t
        WHERE list_contains(s.action_space, v.action)),
    counts AS (SELECT cf_id, action, count(*) AS k FROM valid GROUP BY ALL),
    totals AS (SELECT cf_id, sum(k) AS n FROM counts GROUP BY ALL)
    SELECT cf_id, 'distribution' AS phi_type,
           '{' || string_agg(to_json(action)::VARCHAR || ': ' || (k / n)::VARCHAR, ', ' ORDER BY action) || '}'
               AS phi_probs,
           any_value(n)::INTEGER AS phi_n
    FROM counts JOIN totals USING (cf_id) GROUP BY cf_id"""

#: Φ(r') pooled from a record's counted choices and its annotators' (needs the temp table ``annotated_phi``):
#: for a counterfactual whose record states Φ as a distribution over ``n`` choices and which annotators
#: also labelled, each action's count is p·n (the record) plus its votes, over n + the annotators. A
#: record whose Φ has no ``n`` (an exact policy, as the simulator writes) is never pooled.
POOLED_PHI_SQL = """
    WITH rec AS (
        SELECT c.cf_id, e.key AS action, round(e.value * c.phi_n) AS k
        FROM store.counterfactuals c JOIN annotated_phi a USING (cf_id),
             unnest(map_entries(json_transform(c.phi_probs, '"MAP(VARCHAR, DOUBLE)"'))) AS u(e)
        WHERE c.phi_type = 'distribution' AND c.phi_n IS NOT NULL),
    ann AS (
        SELECT a.cf_id, e.key AS action, round(e.value * a.phi_n) AS k
        FROM annotated_phi a, unnest(map_entries(json_transform(a.phi_probs, '"MAP(VARCHAR, DOUBLE)"'))) AS u(e)
        WHERE a.cf_id IN (SELECT cf_id FROM rec)),
    counts AS (SELECT cf_id, action, sum(k) AS k FROM (SELECT * FROM rec UNION ALL SELECT * FROM ann) GROUP BY ALL),
    totals AS (SELECT cf_id, sum(k) AS n FROM counts GROUP BY ALL)
    SELECT cf_id, '{' || string_agg(to_json(action)::VARCHAR || ': ' || (k / n)::VARCHAR, ', ' ORDER BY action) || '}'
               AS phi_probs,
           any_value(n)::INTEGER AS phi_n
    FROM counts JOIN totals USING (cf_id) GROUP BY cf_id"""

#: config -> SQL producing its rows (every column of schemas.release_format.CONFIGS, in order), sorted.
_ROWS_SQL = {
    "sessions": """
        SELECT s.session_id, x.split, s.source_kind, s.collector, s.consent_ref, s.licence, s.subject_id, s.context_id,
               s.stimulus_set, s.subject_population, s.language, s.r_extensions, s.n_steps, s.dataset_name,
               s.dataset_revision, s.dataset_citation, s.dataset_item
        FROM store.sessions s JOIN assigned x USING (session_id)""",
    "steps": """
        SELECT st.session_id, x.split, st.t, st.observation, st.has_r, st.r_goal, st.r_planned_next,
               st.r_caused_by_self, st.r_confidence, st.r_ext, st.action, st.action_space, st.outcome,
               st.action_texts
        FROM store.steps st JOIN assigned x USING (session_id)""",
    "counterfactuals": """
        SELECT c.cf_id, x.split, c.session_id, c.t, c.rp_goal, c.rp_planned_next, c.rp_caused_by_self,
               c.rp_confidence, c.rp_ext, c.origin, c.paired_session_id, c.adversarial, c.ood, c.author_person,
               c.generator_name, c.generator_version, c.generator_seed, coalesce(c.phi_type, ap.phi_type) AS phi_type,
               CASE WHEN coalesce(c.phi_type, ap.phi_type) = 'distribution' THEN list_sort(list_transform(
                   map_entries(json_transform(coalesce(pp.phi_probs, c.phi_probs, ap.phi_probs),
                                              '"MAP(VARCHAR, DOUBLE)"')),
                   lambda e: {'action': e.key, 'p': e.value})) END AS phi_probs,
               c.phi_text, coalesce(pp.phi_n, CASE WHEN c.phi_type IS NULL THEN ap.phi_n ELSE c.phi_n END) AS phi_n
        FROM store.counterfactuals c JOIN assigned x USING (session_id)
        LEFT JOIN annotated_phi ap ON c.phi_type IS NULL AND ap.cf_id = c.cf_id
        LEFT JOIN pooled_phi pp ON pp.cf_id = c.cf_id
        WHERE NOT (coalesce(c.phi_type, ap.phi_type) IS NULL AND x.split IN ('eval', 'transfer'))""",
    # an item's label is its decision (corpus.labels.decisions_sql: a reviewer's "unsure" or a withdrawn
    # label decides nothing); an adjudicated "unsure" leaves it unlabelled; undecided, its design label
    "attribution": f"""
        WITH adj AS (SELECT target_id, label FROM ({decisions_sql()})),
        labs AS (
            SELECT target_id, list({{'annotator_id': annotator_id, 'role': role, 'label': label, 'method': method}}
                                   ORDER BY annotator_id, role, revision, annotation_id) AS annotations
            FROM store.annotations WHERE target_kind = 'attribution' AND value_type = 'attribution'
            GROUP BY target_id)
        SELECT a.item_id, x.split, a.session_id, a.t, a.design_label, a.endorsed, a.note,
               CASE WHEN adj.label IS NULL THEN a.design_label WHEN adj.label = 'unsure' THEN NULL
                    ELSE adj.label END AS label,
               CASE WHEN adj.label IS NULL THEN 'design' ELSE 'adjudicated' END AS label_source,
               labs.annotations AS annotations
        FROM store.attribution a JOIN assigned x USING (session_id)
        LEFT JOIN adj ON adj.target_id = a.item_id LEFT JOIN labs ON labs.target_id = a.item_id""",
    "transfer": """
        SELECT tc.context_id, 'transfer' AS split, tc.description, tc.collector_org, tc.attestation_ref,
               count(x.session_id)::INTEGER AS n_sessions
        FROM store.transfer_contexts tc
        LEFT JOIN store.sessions s ON s.context_id = tc.context_id
        LEFT JOIN assigned x ON x.session_id = s.session_id AND x.split = 'transfer'
        GROUP BY ALL""",
}
_ORDER = {"sessions": "session_id", "steps": "session_id, t", "counterfactuals": "cf_id", "attribution": "item_id",
          "transfer": "context_id"}


@dataclass
class ReleaseResult:
    directory: Path
    manifest: dict
    created: bool  # False when the same content was already released under this version


def read_manifest(directory: str | os.PathLike) -> dict:
    """The release's manifest, read strictly (:func:`schemas.release_format.read_manifest`)."""
    return schemas_read_manifest(directory)


def list_releases(corpus: Corpus, problems: list[str] | None = None) -> list[dict]:
    """Every release of the corpus, by version: each directory under ``<corpus>/releases/`` with a manifest, and
    each version the corpus released elsewhere (``--out``; :mod:`corpus.ledger`) whose directory is still there.

    Staging directories (``.X.Y.Z.tmp-PID``) and other dot-entries are never listed. A directory whose manifest
    is not a release manifest is a problem (one line, naming the file and what is wrong): added to ``problems``
    when given, else raised.

    Raises:
        InvalidReleases: a manifest under ``releases/`` is not one (and ``problems`` was not given).
    """
    root = corpus.require().dir / "releases"
    out, bad, seen = [], [], set()

    def add(d: Path, m: dict) -> None:
        seen.add(os.path.abspath(d))
        out.append({"version": m["version"], "release_sha": m["release_sha"], "kind": m["kind"],
                    "smoke_test": m["smoke_test"], "directory": str(d), "counts": m["counts"],
                    "synthetic_share": m["synthetic_share"]})

    for d in sorted(root.iterdir()) if root.is_dir() else []:
        if d.name.startswith(".") or not d.is_dir() or not (d / "manifest.json").exists():
            continue
        m, why = load_manifest(d)
        if m is None:
            bad.append(f"{d}/{why}")
        else:
            add(d, m)
    for entry in ledger.released_versions(corpus.dir).values():
        if os.path.abspath(entry.directory) not in seen:
            m, _ = load_manifest(entry.directory)
            if m is not None and m["release_sha"] == entry.release_sha:
                add(entry.directory, m)
    if bad:
        if problems is None:
            raise InvalidReleases(bad)
        problems += bad
    return sorted(out, key=lambda r: (tuple(int(x) for x in r["version"].split(".")), r["directory"]))


def _parent_info(parent: Path) -> tuple[dict, pa.Table]:
    """The parent release's manifest and its sessions' (id, subject, split), once it is checked against its manifest.

    Raises:
        UsageError: ``parent`` is not a release directory, or differs from its manifest.
    """
    check = check_release(parent)
    if check.manifest is None:
        raise UsageError(f"--parent {parent} is not a release directory ({check.differences[0]})")
    if not check.ok:
        more = f" (and {len(check.differences) - 1} more; `trb-corpus verify` lists them)" \
            if len(check.differences) > 1 else ""
        raise UsageError(f"--parent {parent} differs from its manifest: {check.differences[0]}{more}")
    m = check.manifest
    files = sorted((parent / "data" / "sessions").glob("*.parquet"))
    table = pa.concat_tables([pq.read_table(f, columns=["session_id", "subject_id", "split"]) for f in files]) \
        if files else pa.table({"session_id": [], "subject_id": [], "split": []})
    return m, table


def _assign(con, salt: str, pinned: dict[str, str], fractions: dict[str, float]) -> None:
    subjects = [r[0] for r in con.execute("SELECT DISTINCT subject_id FROM store.sessions ORDER BY 1").fetchall()]
    con.register("subject_splits", assign_subjects(subjects, salt, pinned, fractions))
    con.execute(f"CREATE TEMP TABLE annotated_phi AS {ANNOTATED_PHI_SQL}")
    con.execute(f"CREATE TEMP TABLE pooled_phi AS {POOLED_PHI_SQL}")
    con.execute("""
        CREATE TEMP TABLE assigned AS
        SELECT s.session_id, s.subject_id,
               CASE WHEN s.context_id IN (SELECT context_id FROM store.transfer_contexts) THEN 'transfer'
                    ELSE ss.split END AS split
        FROM store.sessions s JOIN subject_splits ss USING (subject_id)""")
    for config, sql in _ROWS_SQL.items():
        con.execute(f"CREATE TEMP VIEW rel_{config} AS {sql}")


def _facts(con) -> dict:
    """What the datasheet says about the released rows."""
    one = lambda sql: con.execute(sql).fetchall()  # noqa: E731
    return {
        "source_kinds": dict(one("SELECT source_kind, count(*) FROM rel_sessions GROUP BY 1 ORDER BY 1")),
        "subject_count": one("SELECT count(DISTINCT subject_id) FROM rel_sessions")[0][0],
        "collectors": one("SELECT collector, count(*) FROM rel_sessions GROUP BY 1 ORDER BY 2 DESC, 1"),
        "licences": one("SELECT licence, count(*) FROM rel_sessions GROUP BY 1 ORDER BY 2 DESC, 1 NULLS LAST"),
        "consent": tuple(one("SELECT count(consent_ref), count(*) FROM rel_sessions")[0]),
        "contexts": [dict(zip(("context_id", "stimulus_set", "subject_population", "language", "split", "n_sessions"), r))
                     for r in one("SELECT context_id, stimulus_set, subject_population, language, split, count(*) "
                                  "FROM rel_sessions GROUP BY ALL ORDER BY 1, 5")],
        "origins": dict(one("SELECT origin, count(*) FROM rel_counterfactuals GROUP BY 1 ORDER BY 1")),
        "transfer_contexts": [dict(zip(("context_id", "collector_org", "attestation_ref", "description", "n_sessions"), r))
                              for r in one("SELECT context_id, collector_org, attestation_ref, description, n_sessions "
                                           "FROM rel_transfer ORDER BY 1")],
        "label_status": dict(one("SELECT label_source, count(*) FROM rel_attribution GROUP BY 1 ORDER BY 1")),
    }


def _licence_id(licences: list[tuple]) -> str:
    """The Hub licence id when every session has the same SPDX-style licence, else ``other`` (see the datasheet)."""
    names = {(lic or "").strip() for lic, _ in licences}
    if len(names) == 1:
        name = names.pop().lower()
        if re.fullmatch(r"[a-z0-9][a-z0-9.+\-]*", name):
            return name
    return "other"


def _scan_rows(rows: list[dict], config: str, hits: list, counter: list[int], redact_pii: bool,
               public: tuple[str, ...] = ()) -> bool:
    """PII-scan every string in ``rows``, each row as one record (:func:`corpus.pii.record_hits`: name fields such
    as ``collector``, unless in ``public``; values split across neighbouring fields); in place redaction if asked;
    True if any changed. The rows' strings go through the named-entity model in one batch first."""
    from corpus.pii import prime_names, record_hits, redact_value

    key = CONFIGS[config][0][0]
    changed = False
    records = [{col: v for col, v in row.items() if isinstance(v, (str, list, dict))} for row in rows]
    strings: set[str] = set()
    _strings(records, strings)
    prime_names(strings)
    for row, record in zip(rows, records):
        found = record_hits(record, public, keys=False)
        if not found:
            continue
        for path, hs in found.items():
            counter[0] += len(hs)
            for h in hs:
                if len(hits) < _MAX_PII_LISTED:
                    hits.append(f"{config} {row[key]} {path}: {h.kind} {h.masked()}")
        if redact_pii:
            changed = True
            row.update(redact_value(record, found))
    return changed


def _strings(obj, out: set[str]) -> None:
    """Every string value (not dict keys) in ``obj`` into ``out``."""
    if isinstance(obj, str):
        out.add(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            _strings(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _strings(v, out)


def _write_split(reader, config, split, schema, n_shards, tmp, hits, n_hits, redact_pii, digest, bar,
                 public=()) -> None:
    """Write one split of one config from ``reader`` into its shards (scanned for PII, hashed into ``digest``)."""
    shard, writer, in_shard = 0, None, 0
    try:
        for batch in reader:
            batch = pa.Table.from_batches([batch]).rename_columns(schema.names).cast(schema)
            rows = batch.to_pylist()
            if _scan_rows(rows, config, hits, n_hits, redact_pii, public):
                batch = pa.Table.from_pylist(rows, schema=schema)
            start = 0
            while start < batch.num_rows:
                if writer is None:
                    path = tmp / shard_name(config, split, shard, n_shards)
                    path.parent.mkdir(parents=True, exist_ok=True)
                    writer = pq.ParquetWriter(path, schema, compression="zstd")
                take = min(ROWS_PER_SHARD - in_shard, batch.num_rows - start)
                part = batch.slice(start, take)
                digest.add_batch(config, part, path)  # read again from the shard only if out of content order
                writer.write_table(part)
                start += take
                in_shard += take
                if in_shard == ROWS_PER_SHARD:
                    writer.close()
                    writer, in_shard, shard = None, 0, shard + 1
            bar.update(batch.num_rows)
        if writer is not None:
            writer, done = None, writer
            done.close()
    except BaseException:
        if writer is not None:  # the shard is discarded with the staging directory: its own error must not mask this
            try:
                writer.close()
            except (OSError, pa.ArrowException):
                pass
        raise


def _write_data(con, tmp: Path, progress: bool, redact_pii: bool,
                public: tuple[str, ...] = ()) -> tuple[dict, dict, list, int, ContentDigest]:
    counts: dict[str, dict[str, int]] = {}
    files: list[dict] = []
    hits: list[str] = []
    n_hits = [0]
    digest = ContentDigest()
    totals = {c: dict(con.execute(f"SELECT split, count(*) FROM rel_{c} GROUP BY 1").fetchall()) for c in CONFIGS}
    bar = tqdm(total=sum(sum(v.values()) for v in totals.values()), unit="row", desc="writing",
               disable=None if progress else True, leave=False)
    counts = {c: {s: totals[c][s] for s in SPLITS if totals[c].get(s)} for c in CONFIGS}
    counts = {c: v for c, v in counts.items() if v}
    try:
        for config in CONFIGS:
            schema = arrow_schema(config)
            for split in sorted(SPLITS):  # content order (schemas.release_format): the digest is taken as written
                n = totals[config].get(split, 0)
                if not n:
                    continue
                n_shards = max(1, -(-n // ROWS_PER_SHARD))
                reader = con.sql(f"SELECT * FROM rel_{config} WHERE split = $split ORDER BY {_ORDER[config]}",
                                 params={"split": split}).to_arrow_reader(_BATCH_ROWS)
                try:
                    _write_split(reader, config, split, schema, n_shards, tmp, hits, n_hits, redact_pii, digest, bar,
                                 public)
                finally:  # an open result would make the corpus's DETACH fail and mask what went wrong here
                    reader.close()
    finally:
        bar.close()
    for path in sorted(tmp.glob("data/*/*.parquet")):
        files.append({"path": path.relative_to(tmp).as_posix(), "sha256": sha256_file(path), "bytes": path.stat().st_size})
    return counts, files, hits, n_hits[0], digest


#: Rows of each config that the Croissant read-back check reads through mlcroissant.
_SAMPLE_ROWS = 1000


@contextmanager
def _croissant_sample(release: Path) -> Iterator[Path]:
    """A folder laid out as ``release``'s data, each config's first shard cut to its first :data:`_SAMPLE_ROWS` rows
    (same schema, same file name): mlcroissant reads a whole file into memory before its first record, and a shard
    holds up to 500,000 rows, so the read-back check reads these instead (flat in the release's size).

    The folder is inside ``release`` (the staging directory) and removed on the way out; a cut killed meanwhile
    leaves it in the staging directory, which the next cut removes (:func:`corpus.ledger.remove_stale`)."""
    with tempfile.TemporaryDirectory(prefix=".croissant-sample-", dir=release) as d:
        for config_dir in sorted((release / "data").iterdir()):
            shards = sorted(config_dir.glob("*.parquet"))
            if not shards:
                continue
            pf = pq.ParquetFile(shards[0])
            head = next(pf.iter_batches(batch_size=_SAMPLE_ROWS), None)
            table = pa.Table.from_batches([head]) if head is not None else pf.schema_arrow.empty_table()
            out = Path(d) / "data" / config_dir.name / shards[0].name
            out.parent.mkdir(parents=True)
            pq.write_table(table.cast(pf.schema_arrow), out)
        yield Path(d)


def _ceiling_note(manifest: dict) -> str:
    info = manifest.get("phi_annotators")
    if not info:
        return ""
    per = "; ".join(f"{s} {v['oracle_g']:.4f} (annotators {v['phi_n_min']}-{v['phi_n_max']})"
                    for s, v in info["splits"].items() if v["oracle_g"] is not None)
    return (f" Distribution Φ(r') of {' and '.join(info['gated_splits'])} comes from at least "
            f"{info['min_annotators']} annotator(s)." + (
                f" Track 1 annotator-noise ceiling (the expected G of a model outputting the true distribution, "
                f"Φ as the plug-in truth; G above it is not better than the truth): {per}." if per else ""))


def _rai(manifest: dict, facts: dict, phi_from_annotators: int = 0) -> dict:
    smoke = manifest["smoke_test"]
    kinds = ", ".join(f"{k} ({n})" for k, n in facts["source_kinds"].items())
    return {
        "dataCollection": f"Sessions by source kind: {kinds}. Collectors: "
                          + ", ".join(f"{c} ({n})" for c, n in facts["collectors"]) + ".",
        "dataCollectionType": "Simulated" if smoke else "Direct measurement",
        "dataAnnotationProtocol": "Attribution items carry a design label; annotators label caused_by_self "
                                  "(self/exogenous/unsure) in Label Studio, adjudicated by a vote rule (plurality "
                                  "with a margin, or strict majority; each adjudicated label names its method) "
                                  f"and by reviewers. Label source in this release: {manifest['label_source']}. "
                                  "Counterfactual continuations Φ(r') are distributions over the step's actions"
                                  + (f"; for {phi_from_annotators} counterfactual(s) Φ(r') is the distribution of "
                                     "annotators' action choices in Label Studio (n = annotators)."
                                     if phi_from_annotators else "."),
        "annotationsPerItem": "Overlap 3 by default for annotated items; design labels otherwise.",
        "dataLimitations": ("SMOKE TEST: simulated or illustrative data; no TRB score may be claimed from it "
                            "(TRB spec section 6). " if smoke else "") +
                           f"Synthetic counterfactual share {manifest['synthetic_share']} (capped at 3 synthetic "
                           "per human one)." + _ceiling_note(manifest),
        "dataBiases": "Subject populations and contexts are listed in the datasheet; transfer contexts are held out.",
        "personalSensitiveInformation": "Subjects are pseudonymous ids; every text field of every file passed a "
                                        f"PII scan (e-mail, phone, IP, card, IBAN, US SSN): {manifest['pii']}.",
        "dataUseCases": "Evaluating whether a model's stated reasoning governs its actions (TRB Tracks 1 and 3). "
                        "The eval and transfer splits must never be used to fit anything.",
        "dataSocialImpact": "Measures faithfulness of model self-reports; a misread result could overstate it.",
        "dataReleaseMaintenancePlan": "Releases are immutable and SHA-pinned; corrections come as new versions "
                                      "with a parent reference.",
    }


def _pii_gate(n_rows: int, n_docs: int, redact_pii: bool, hits: list[str]) -> GateResult:
    n = n_rows + n_docs
    where = f" ({n_rows} in rows, {n_docs} in the datasheet, card, Croissant or manifest)" if n_docs else ""
    return GateResult(
        name="pii_scan", passed=redact_pii or n == 0,
        figure=f"{n} hit(s) in every text field{where}" + (" (redacted)" if redact_pii and n else ""),
        bar="0 unredacted hits (e-mail, phone, IP, card, IBAN, national id, name, address; encoded or split too) "
            "in every file",
        detail="\n".join(hits) if hits else None)


def _recount_pii(manifest: dict, n_rows: int, n_docs: int, redact_pii: bool, hits: list[str]) -> None:
    """Hits found in the files as written: refused like any other, or (redacted) counted in the manifest."""
    gate = _pii_gate(n_rows, n_docs, redact_pii, hits)
    if not gate.passed:
        raise ReleaseRefused([gate], "release refused: personal data found; redact it in the corpus, "
                                     "or cut with --redact-pii; nothing was written")
    n = n_rows + n_docs
    manifest["pii"].update(hits=n, redacted=n, documents=n_docs)
    manifest["gates"] = [gate.model_dump(mode="json") if g["name"] == "pii_scan" else g for g in manifest["gates"]]


def cut_release(
    corpus: Corpus,
    version: str,
    *,
    kind: str = "smoke",
    out: str | os.PathLike | None = None,
    trainer_orgs: list[str] | tuple[str, ...] = (),
    parent: str | os.PathLike | None = None,
    salt: str | None = None,
    redact_pii: bool = False,
    datasheet: str | os.PathLike | None = None,
    split_fractions: dict[str, float] | None = None,
    progress: bool = True,
    wait_seconds: float | None = None,
    min_annotators: int = MIN_ANNOTATORS,
    public_fields: list[str] | tuple[str, ...] = (),
    waive_synthetic_cap: bool = False,
) -> ReleaseResult:
    """Cut release ``version`` of ``corpus`` (see the module docstring).

    ``min_annotators``: every distribution Φ(r') of the eval and transfer splits must come from at
    least this many annotators (gate ``min_annotators``; the simulated world's exact Φ and text Φ
    are exempt); the value is recorded in the manifest (``phi_annotators``) and stated in the card,
    with each split's annotator counts and the Track 1 annotator-noise ceiling.

    ``public_fields``: fields whose values are not personal data though they name a person (``collector``,
    ``curator``): kept in every file, their values' other kinds still scanned; the datasheet facts' list of a
    field's values (``collectors``) is public with it.

    ``waive_synthetic_cap``: a smoke release only (a control set of synthetic counterfactuals, such as
    :mod:`pipeline.controls.turpin`'s, which no human counterfactual could balance): the 3:1 cap's figures are
    recorded, the gate is marked waived in the manifest and the card, and the release stays a SMOKE TEST.

    Raises:
        ReleaseRefused: a gate failed (its figure, bar and first offending ids), or the version was
            released with other content, or released by this corpus at another directory (gate
            ``immutability``); nothing was written.
        UsageError: a malformed version, kind, parent (or one that differs from its manifest), datasheet
            or ``min_annotators``; an ``out`` that is a file, under one, or cannot be written.
        CorpusNotFound, CorpusBusy: as for every corpus command; CorpusBusy also when another release of
            this corpus held its release lock past ``wait_seconds``.
        DiskFull: the disk filled up while the release was written; nothing was written.
    """
    if not _VERSION.match(version):
        raise UsageError(f"version {version!r} is not X.Y.Z (e.g. 0.1.0)")
    if kind not in ("trb", "smoke"):
        raise UsageError(f"kind {kind!r} is not trb or smoke")
    if waive_synthetic_cap and kind != "smoke":
        raise UsageError("the 3:1 synthetic:human cap can be waived only for a smoke release (--kind smoke): a "
                         "trb release is held to it")
    if isinstance(min_annotators, bool) or not isinstance(min_annotators, int) or min_annotators < 1:
        raise UsageError(f"min_annotators {min_annotators!r} is not a whole number >= 1")
    public = _public(public_fields)
    corpus.require()
    dest = Path(out) if out else corpus.dir / "releases" / version
    _check_out(dest)
    template_path = Path(datasheet) if datasheet else TEMPLATE
    if not template_path.is_file():
        raise UsageError(f"datasheet template {template_path} does not exist")
    from corpus.card import check_datasheet_template

    template = check_datasheet_template(template_path)  # UTF-8, and the packaged template's values (UsageError)
    parent_manifest, parent_sessions, pinned, held_out = None, None, {}, {}
    if parent is not None:
        parent_manifest, parent_sessions = _parent_info(Path(parent))
        pinned = pinned_subjects(parent_sessions)
        held_out = {s: sp for s, sp in zip(parent_sessions.column("session_id").to_pylist(),
                                           parent_sessions.column("split").to_pylist()) if sp in HELD_OUT}
    salt = salt or (parent_manifest or {}).get("salt") or DEFAULT_SALT
    refuse_personal_data(salt, "the split salt (--salt, or the parent's)")
    fractions = split_fractions or (parent_manifest or {}).get("split_fractions") or dict(SPLIT_FRACTIONS)

    with ledger.release_lock(corpus.dir, wait_seconds=wait_seconds, version=version):
        ledger.remove_stale(corpus.dir, corpus.dir / "releases", dest.parent)
        earlier = ledger.released_versions(corpus.dir).get(version)
        if earlier is not None and not ledger.same_directory(earlier.directory, dest):
            raise ReleaseRefused([_elsewhere(version, earlier, dest)])
        return _cut(corpus, version, kind, dest, earlier=earlier, trainer_orgs=trainer_orgs,
                    parent_manifest=parent_manifest, held_out=held_out, pinned=pinned, salt=salt, fractions=fractions,
                    redact_pii=redact_pii, template=template, progress=progress, wait_seconds=wait_seconds,
                    min_annotators=min_annotators, template_path=template_path, public=public,
                    waive_cap=waive_synthetic_cap)


def _public(fields) -> tuple[str, ...]:
    out = []
    for f in fields:
        if not isinstance(f, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", f):
            raise UsageError(f"public field {f!r} is not a field name (letters, digits, _)")
        out += [f, f + "s"]
    return tuple(dict.fromkeys(out))


def _check_out(dest: Path) -> None:
    """Refuse, before any work, a destination that cannot be a release directory (a file, or under one)."""
    if dest.exists() and not dest.is_dir():
        raise UsageError(f"--out {dest} is a file, not a directory; choose another --out")
    p = dest.parent
    while not p.exists() and p != p.parent:
        p = p.parent
    if not p.is_dir():
        raise UsageError(f"--out {dest}: {p} is a file, not a directory; choose another --out")
    if not os.access(p, os.W_OK | os.X_OK):
        raise UsageError(f"--out {dest}: {p} is not writable by this user; choose another --out")


def _elsewhere(version: str, earlier: ledger.Released, dest: Path) -> GateResult:
    return GateResult(
        name="immutability", passed=False,
        figure=f"version {version} was released by this corpus at {earlier.directory} (release SHA "
               f"{earlier.release_sha})",
        bar=f"a version is cut once per corpus, wherever --out points (not again at {dest}): copy that directory, "
            "or cut a new version")


#: Text of a full disk (or quota) in errors that carry no errno (DuckDB's, pyarrow's).
_NO_SPACE = ("No space left on device", "Disk quota exceeded", "not enough space on the disk")


def _write_error(e: BaseException, version: str, dest: Path) -> Exception | None:
    """The typed error for a failure to write the release (a full disk, an unwritable place), else None (a bug)."""
    text = str(e)
    if (isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT)) or any(m in text for m in _NO_SPACE):
        where, name = dest.parent, getattr(e, "filename", None)
        if isinstance(name, str) and not os.path.abspath(name).startswith(os.path.abspath(dest.parent) + os.sep):
            where = Path(name).parent  # not the release's own files: e.g. the corpus's ledger
        return DiskFull(f"the disk holding {where} is full: release {version} was not written (its staging "
                        "directory was removed; free some space, or choose another --out)")
    if isinstance(e, OSError):
        why = e.strerror or (text.splitlines()[0] if text else type(e).__name__)
        where = f" ({e.filename})" if getattr(e, "filename", None) else ""
        return UsageError(f"cannot write release {version} at {dest}: {why}{where}; nothing was written "
                          "(choose another --out)")
    return None


def _cut(corpus: Corpus, version: str, kind: str, dest: Path, *, earlier: ledger.Released | None, trainer_orgs,
         parent_manifest: dict | None, held_out: dict, pinned: dict, salt: str, fractions: dict, redact_pii: bool,
         template: str, progress: bool, wait_seconds: float | None, min_annotators: int,
         template_path: Path, public: tuple[str, ...] = (), waive_cap: bool = False) -> ReleaseResult:
    """The release itself, under the corpus's release lock (see :func:`cut_release`)."""
    from corpus.card import datasheet_values, fill_datasheet, render_card
    from corpus.croissant import build_croissant, validate_croissant

    spill = corpus.dir / f".release-{os.getpid()}.spill"
    with corpus.open(write=False, wait_seconds=wait_seconds, purpose="trb-corpus release", spill_dir=spill) as con:
        _assign(con, salt, pinned, fractions)
        excluded = con.execute("SELECT count(*) FROM store.counterfactuals c JOIN assigned x USING (session_id) "
                               "WHERE c.phi_type IS NULL AND x.split IN ('eval', 'transfer') "
                               "AND c.cf_id NOT IN (SELECT cf_id FROM annotated_phi)").fetchone()[0]
        phi_from_annotators = con.execute("SELECT count(*) FROM rel_counterfactuals r JOIN store.counterfactuals c "
                                          "USING (cf_id) WHERE c.phi_type IS NULL AND r.phi_type IS NOT NULL"
                                          ).fetchone()[0]
        shares = synthetic_shares(con)
        gates = [
            release_kind_gate(con, kind),
            waived(synthetic_cap_gate(con, shares)) if waive_cap else synthetic_cap_gate(con, shares),
            transfer_provenance_gate(con, list(trainer_orgs)),
            split_discipline_gate(con, held_out),
            completeness_gate(con, excluded, kind, template.count("[curator:")),
            min_annotators_gate(con, min_annotators),
        ]
        failed = [g for g in gates if not g.passed]
        if failed:
            raise ReleaseRefused(failed)
        facts = _facts(con)
        annotators = phi_annotators(con, min_annotators)
        subjects = dict(con.execute("SELECT split, count(DISTINCT subject_id) FROM assigned GROUP BY 1").fetchall())
        labels = set(facts["label_status"])
        label_source = "none" if not labels else labels.pop() if len(labels) == 1 else "mixed"

        tmp = ledger.staging_name(dest)
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir()
        except OSError as e:
            raise UsageError(f"--out {dest}: cannot make a directory there ({e.strerror or e}); choose another "
                             "--out") from None
        try:
            counts, files, hits, n_rows, digest = _write_data(con, tmp, progress, redact_pii, public)
            # the other files are made from these: scanned (and redacted) before they are made
            docs = DocumentScan(redact_pii, hits, _MAX_PII_LISTED, public)
            # the organisations first: their names, repeated in the template or a gate's text, are no person's
            trainer_orgs = [docs.text(o, f"--trainer-org [{i}]", path="trainer_orgs")
                            for i, o in enumerate(trainer_orgs)]
            facts = docs.value(facts, "datasheet facts")
            template = docs.text(template, f"datasheet {template_path}", lines=True)
            gates = docs.gates(gates)
            n_hits = n_rows + docs.n
            pii_gate = _pii_gate(n_rows, docs.n, redact_pii, hits)
            if not pii_gate.passed:
                raise ReleaseRefused([pii_gate], "release refused: personal data found; redact it in the corpus, "
                                                 "or cut with --redact-pii; nothing was written")
            release_sha = digest.hexdigest()
            if earlier is not None and earlier.release_sha != release_sha:
                raise ReleaseRefused([GateResult(
                    name="immutability", passed=False,
                    figure=f"version {version} exists with release SHA {earlier.release_sha}",
                    bar=f"the same content (this one is {release_sha}); cut a new version",
                    detail=f"existing release: {earlier.directory}")])
            if (dest / "manifest.json").is_file():
                existing, why = load_manifest(dest)
                if existing is None:
                    raise UsageError(f"{dest} holds a manifest that is not a release manifest ({why}); "
                                     "choose another --out")
                if existing["release_sha"] == release_sha:
                    return ReleaseResult(dest, existing, created=False)
                raise ReleaseRefused([GateResult(
                    name="immutability", passed=False,
                    figure=f"version {version} exists with release SHA {existing['release_sha']}",
                    bar=f"the same content (this one is {release_sha}); cut a new version",
                    detail=f"existing release: {dest}")])
            if dest.exists():
                raise UsageError(f"{dest} exists and is not a release directory; choose another --out")
            gates += [pii_gate, GateResult(name="immutability", passed=True, figure=f"version {version} is new",
                                           bar="an existing version is never changed")]
            manifest = ReleaseManifest(
                content_format=digest.content_format, release_sha=release_sha, version=version, kind=kind, smoke_test=kind == "smoke",
                trb_version=TRB_VERSION, schema_version=SCHEMA_VERSION, toolkit_version=TOOLKIT_VERSION,
                created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"), salt=salt,
                split_fractions=fractions, counts=counts, subjects=subjects,
                synthetic_share=shares["overall"]["share"], synthetic=shares, label_source=label_source,
                excluded={"counterfactuals_lacking_phi_kept_out_of_eval": excluded}, trainer_orgs=list(trainer_orgs),
                pii={"hits": n_hits, "redacted": n_hits if redact_pii else 0, "rows": n_rows, "documents": docs.n},
                gates=gates,
                phi_annotators=annotators, files=files,
                parent={"version": parent_manifest["version"], "release_sha": parent_manifest["release_sha"]}
                if parent_manifest else None,
            ).model_dump(mode="json")
            configs = {c: list(splits) for c, splits in counts.items()}
            licence = _licence_id(facts["licences"])
            smoke = " (SMOKE TEST)" if kind == "smoke" else ""
            pretty = f"TRB corpus release {version}{smoke}"
            (tmp / "README.md").write_text(render_card(manifest, pretty_name=pretty, license=licence, configs=configs,
                                                       phi_from_annotators=phi_from_annotators), encoding="utf-8")
            (tmp / "DATASHEET.md").write_text(fill_datasheet(template, datasheet_values(manifest, facts)),
                                              encoding="utf-8")
            croissant = build_croissant(
                manifest, name=f"trb-corpus-{version}", license=licence, url=None, configs=configs,
                description=f"TRB corpus release {version}{smoke}: paired-counterfactual sessions and "
                            f"self-attribution items. Release SHA {release_sha}.",
                rai=_rai(manifest, facts, phi_from_annotators))
            problems = validate_croissant(croissant)
            if problems:  # a bug in this toolkit, not in the user's data
                raise RuntimeError("generated croissant.json fails mlcroissant validation: " + "; ".join(problems))
            (tmp / "croissant.json").write_text(json.dumps(croissant, indent=2, ensure_ascii=False) + "\n",
                                                encoding="utf-8")
            with _croissant_sample(tmp) as sample:  # reads records back from (the first rows of) each config's files
                problems = validate_croissant(tmp / "croissant.json", base_dir=sample, max_records=_SAMPLE_ROWS)
            if problems:
                raise RuntimeError("croissant.json does not read back with mlcroissant: " + "; ".join(problems))
            if docs.written(tmp, ("README.md", "DATASHEET.md", "croissant.json"), manifest):
                _recount_pii(manifest, n_rows, docs.n, redact_pii, hits)  # made another way: counted as well
            for name in ("README.md", "DATASHEET.md", "croissant.json"):
                p = tmp / name
                manifest["files"].append({"path": name, "sha256": sha256_file(p), "bytes": p.stat().st_size})
            # last, after every change to the manifest: the digest that binds its claims (schemas.release_format)
            manifest["claims_sha256"] = claims_digest(manifest)
            ReleaseManifest.model_validate(manifest)
            (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n",
                                               encoding="utf-8")
            ledger.record(corpus.dir, "cutting", version, release_sha, dest)
            os.replace(tmp, dest)
            try:
                ledger.record(corpus.dir, "released", version, release_sha, dest)
            except OSError:  # the "cutting" line and the manifest now in place already say it is released
                pass
        except (OSError, duckdb.Error, pa.ArrowException) as e:
            typed = _write_error(e, version, dest)
            if typed is None:
                raise
            raise typed from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return ReleaseResult(dest, manifest, created=True)
