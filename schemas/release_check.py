"""Checking a release directory against its manifest, from its files alone: one definition for the corpus's
``trb-corpus verify`` and the engine's ``trb run`` (which imports no ``corpus`` module).

What is checked, in this order (each difference is one line naming the file, the row or the claim):

0. **The JSON.** ``manifest.json``, ``hub.json`` and ``croissant.json`` are read strictly
   (:mod:`toolkit.strict_json`): a NaN, an Infinity or a key given twice (a forged value placed
   before the true one) is a difference naming the file and the JSON pointer, never a crash. Every
   claim is compared by value, never by key order (a manifest re-saved with sorted keys verifies).
1. **The files** (:mod:`schemas.release_files`). Every file the manifest lists has its sha256 and
   size, a symbolic link judged by the content it resolves to (a Hugging Face cache snapshot
   verifies); no other entry of any kind is there (files, dot-files, directories, FIFOs; only
   ``manifest.json``, ``hub.json`` and what the Hub adds to a downloaded copy may be unlisted:
   :data:`~schemas.release_format.HUB_ARTEFACTS`). ``hub.json``, when present, is a hub record of
   this release SHA.
2. **The claims digest.** A format-2 manifest carries ``claims_sha256`` over every other field
   (:func:`~schemas.release_format.claims_digest`): an edited claim is seen even where the rows
   cannot tell (version, parent, trainer organisations, gate figures, the excluded count, the
   versions and the date). A format-1 manifest (cut before) has none: a note says so.
3. **The rows.** The release SHA is recomputed from every row, by the definition the manifest's
   ``content_format`` names (absent: format 1, a release cut before format 2), and every claim that follows from
   the rows is recomputed and compared: the counts per config and split; the subjects per split;
   the synthetic shares; the kind (simulated or illustrative sessions make a smoke release, and
   ``smoke_test`` says so); the label source; the annotators behind Φ(r') and the Track 1 ceiling;
   every session's split from the manifest's salt and split fractions (a parent may have pinned
   subjects to eval; transfer sessions are those of the transfer contexts); transfer provenance
   against the manifest's trainer organisations; the gates' conditions (complete eval and transfer
   data, the annotator minimum); that each row is in the shard of its split and of an existing
   session; and that the redactions the manifest counts are in the release. The card, the
   datasheet and ``croissant.json`` must agree with the manifest on what they restate (the SMOKE TEST
   banner, a curated datasheet for a ``trb`` release, the version, the SHA and the files' sha256s).

A forger who rewrites the rows and the manifest and recomputes every hash makes a consistent
release: the content SHA then differs from the one a result or a publisher names, which is what
that SHA is for. What only the digest binds can be changed by someone who also recomputes it;
``trb run`` records the manifest's sha256 beside the release SHA, so such a change is visible.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import ValidationError

from schemas.models import HubRecord, ReleaseManifest
from schemas.release_format import (
    ANNOTATOR_GATED_SPLITS,
    CONFIGS,
    HUB_RECORD,
    HUMAN_ORIGINS,
    MANIFEST,
    REDACTION_MARKER,
    RELEASE_GATES,
    SMOKE_SOURCE_KINDS,
    SPLIT_FRACTIONS,
    SPLITS,
    SYNTHETIC_CAP,
    SYNTHETIC_ORIGIN,
    WAIVABLE_GATES,
    ContentDigest,
    claims_digest,
    file_differences,
    subject_split,
    waived_gates,
)
from toolkit import strict_json
from toolkit.ceiling import ceiling_by_items
from toolkit.orgs import matching_org, org_tokens

__all__ = ["ReleaseCheck", "check_release", "load_manifest"]

#: How many offending ids one difference names.
_FIRST = 5
_BATCH_ROWS = 65_536
#: The files besides the rows that may hold a redaction (``[REDACTED:kind]``) of what they restate.
_TEXT_FILES = ("README.md", "DATASHEET.md", "croissant.json", MANIFEST)


@dataclass
class ReleaseCheck:
    """What :func:`check_release` found: the parsed manifest (None if unreadable), every difference, notes."""

    directory: Path
    manifest: dict | None
    differences: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.differences


def load_manifest(directory: str | os.PathLike) -> tuple[dict | None, str | None]:
    """``(manifest, None)`` when ``directory/manifest.json`` is a valid release manifest, else ``(None, why)``."""
    path = Path(directory) / MANIFEST
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, f"{MANIFEST}: missing (not a release directory)"
    except OSError as e:
        return None, f"{MANIFEST}: unreadable ({e.strerror or e})"
    try:
        manifest = strict_json.loads(data)
    except strict_json.StrictJSONError as e:
        return None, f"{MANIFEST}: not strict JSON ({e})"
    if not isinstance(manifest, dict):
        return None, f"{MANIFEST}: not a JSON object"
    try:
        ReleaseManifest.model_validate(manifest)
    except ValidationError as e:
        err = e.errors()[0]
        where = "/".join(str(x) for x in err["loc"]) or "(top level)"
        return None, f"{MANIFEST}: not a valid release manifest: {where}: {err['msg']}"
    return manifest, None


def check_release(directory: str | os.PathLike, *, rows: bool = True) -> ReleaseCheck:
    """Check ``directory`` against its manifest (see the module docstring); ``rows=False`` checks the files and the
    digest only. Never raises for what the directory holds: every problem is a difference."""
    d = Path(directory)
    manifest, why = load_manifest(d)
    check = ReleaseCheck(d, manifest)
    if manifest is None:
        check.differences.append(why)
        return check
    diffs = check.differences
    diffs += file_differences(d, manifest)
    _hub(d, manifest, diffs)
    _claims(manifest, diffs)
    _documents(d, manifest, diffs)
    if rows:
        _rows(d, manifest, diffs)
    # last: the specific differences above say more than "a claim was edited"
    if manifest.get("format_version", 1) >= 2:
        want = claims_digest(manifest)
        have = manifest.get("claims_sha256")
        if have is None:
            diffs.append(f"{MANIFEST}: claims_sha256 missing (a format-2 manifest binds its claims with it)")
        elif have != want:
            diffs.append(f"{MANIFEST}: claims_sha256 {have[:16]}… is not the digest of its claims ({want[:16]}…): "
                         "a claim was edited after the release was cut")
    else:
        check.notes.append(f"{MANIFEST}: format 1 (cut before claims were bound): only the claims the rows "
                           "determine were checked")
    return check


def _hub(d: Path, manifest: dict, diffs: list[str]) -> None:
    path = d / HUB_RECORD
    if not path.exists():
        return
    try:
        record = strict_json.loads(path.read_bytes())
        HubRecord.model_validate(record)
    except (OSError, ValueError) as e:  # StrictJSONError and pydantic's ValidationError are ValueErrors
        diffs.append(f"{HUB_RECORD}: not a hub record ({str(e).splitlines()[0]})")
        return
    if record["release_sha"] != manifest["release_sha"]:
        diffs.append(f"{HUB_RECORD}: names release SHA {record['release_sha'][:16]}…, the manifest "
                     f"{manifest['release_sha'][:16]}…")


def _claims(m: dict, diffs: list[str]) -> None:
    """What the manifest says of itself that must hold whatever the rows are."""
    if m["smoke_test"] != (m["kind"] == "smoke"):
        diffs.append(f"{MANIFEST}: kind {m['kind']} with smoke_test {str(m['smoke_test']).lower()} (a smoke release "
                     "is exactly one with smoke_test true)")
    names = Counter(g["name"] for g in m["gates"])
    failed = [g["name"] for g in m["gates"] if not g["passed"]]
    if failed:
        diffs.append(f"{MANIFEST}: gate(s) {', '.join(failed)} failed (a release is written only when every gate "
                     "passed)")
    waived = waived_gates(m)
    if waived and m["kind"] != "smoke":
        diffs.append(f"{MANIFEST}: gate(s) {', '.join(sorted(waived))} waived in a {m['kind']} release (only a smoke "
                     "release may waive one)")
    if waived - set(WAIVABLE_GATES):
        diffs.append(f"{MANIFEST}: gate(s) {', '.join(sorted(waived - set(WAIVABLE_GATES)))} waived (only "
                     f"{', '.join(WAIVABLE_GATES)} can be)")
    if m.get("format_version", 1) >= 2:
        missing = [g for g in RELEASE_GATES if g not in names]
        twice = [g for g, n in names.items() if n > 1]
        if missing:
            diffs.append(f"{MANIFEST}: gate(s) {', '.join(missing)} missing (every release passed them)")
        if twice:
            diffs.append(f"{MANIFEST}: gate(s) {', '.join(twice)} listed more than once")
    fractions = m["split_fractions"]
    if set(fractions) - set(SPLIT_FRACTIONS) or abs(sum(fractions.values()) - 1.0) > 1e-9:
        diffs.append(f"{MANIFEST}: split_fractions {fractions} are not shares of {', '.join(SPLIT_FRACTIONS)} "
                     "summing to 1")
    pii = m.get("pii") or {}
    if pii.get("hits", 0) != pii.get("redacted", 0):
        diffs.append(f"{MANIFEST}: pii counts {pii.get('hits', 0)} hit(s) but {pii.get('redacted', 0)} redacted "
                     "(a release holds no unredacted hit)")


def _documents(d: Path, m: dict, diffs: list[str]) -> None:
    """The card, datasheet and Croissant file restate parts of the manifest: they must agree with it."""
    card = d / "README.md"
    if m["smoke_test"] and card.is_file() and "SMOKE TEST" not in card.read_text(encoding="utf-8", errors="replace"):
        diffs.append("README.md: the card of a smoke release lacks its SMOKE TEST banner")
    sheet = d / "DATASHEET.md"
    if m["kind"] == "trb" and sheet.is_file() and "[curator:" in sheet.read_text(encoding="utf-8", errors="replace"):
        diffs.append("DATASHEET.md: a trb release's datasheet still has [curator: ...] prompts (not a trb release)")
    croissant = d / "croissant.json"
    if not croissant.is_file():
        return
    try:
        doc = strict_json.loads(croissant.read_bytes())
    except OSError as e:
        diffs.append(f"croissant.json: unreadable ({e.strerror or e})")
        return
    except strict_json.StrictJSONError as e:
        diffs.append(f"croissant.json: not strict JSON ({e})")
        return
    if not isinstance(doc, dict):
        diffs.append("croissant.json: not a JSON object")
        return
    listed = {f["path"]: f for f in m["files"]}
    for obj in doc.get("distribution") or []:
        url, want = (obj.get("contentUrl"), obj.get("sha256")) if isinstance(obj, dict) else (None, None)
        if url and want and url in listed and listed[url]["sha256"] != want:
            diffs.append(f"croissant.json: sha256 of {url} differs from the manifest")
    if "version" in doc and doc["version"] != m["version"]:
        diffs.append(f"croissant.json: version {doc['version']!r}, the manifest says {m['version']!r}")
    ident = doc.get("identifier")
    if isinstance(ident, dict) and ident.get("value") not in (None, m["release_sha"]):
        diffs.append("croissant.json: identifier names another release SHA than the manifest")
    status = doc.get("creativeWorkStatus")
    if status is not None and status != ("smoke-test" if m["smoke_test"] else "release"):
        diffs.append(f"croissant.json: creativeWorkStatus {status!r} disagrees with the manifest's smoke_test "
                     f"{str(m['smoke_test']).lower()}")


# -- the rows ----------------------------------------------------------------------------------------


#: config -> the columns the row checks read.
_COLUMNS = {
    "sessions": ("session_id", "split", "source_kind", "subject_id", "context_id", "n_steps"),
    "steps": ("session_id", "split"),
    "counterfactuals": ("cf_id", "session_id", "split", "origin", "phi_type", "phi_n", "phi_probs"),
    "attribution": ("item_id", "session_id", "split", "label", "label_source"),
    "transfer": ("context_id", "split", "collector_org", "attestation_ref", "n_sessions"),
}


def _markers(array) -> int:
    """How many redaction markers the strings of ``array`` (any nesting of lists and structs) hold."""
    t = array.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return int(pc.sum(pc.count_substring(array, REDACTION_MARKER)).as_py() or 0)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _markers(array.flatten())
    if pa.types.is_struct(t):
        return sum(_markers(array.field(i)) for i in range(t.num_fields))
    return 0



_TABLES = """
CREATE TABLE sessions (seq BIGINT, session_id VARCHAR, split VARCHAR, source_kind VARCHAR, subject_id VARCHAR,
                       context_id VARCHAR, n_steps BIGINT);
CREATE TABLE steps (session_id VARCHAR, split VARCHAR, n BIGINT, first BIGINT);
CREATE TABLE children (seq BIGINT, config VARCHAR, id VARCHAR, session_id VARCHAR, split VARCHAR);
CREATE TABLE gated (seq BIGINT, cf_id VARCHAR, session_id VARCHAR, phi_n BIGINT);
CREATE TABLE phi (split VARCHAR, phi_type VARCHAR, phi_n BIGINT, probs STRUCT(action VARCHAR, p DOUBLE)[], n BIGINT,
                  first BIGINT);
"""


class _Offenders:
    """The ids a check refuses, in the order met: how many, and the first :data:`_FIRST` (all that is kept)."""

    def __init__(self) -> None:
        self.n = 0
        self.first: list = []

    def extend(self, ids) -> None:
        ids = list(ids)
        self.n += len(ids)
        self.first += ids[:max(0, _FIRST - len(self.first))]

    def __bool__(self) -> bool:
        return self.n > 0

    def text(self) -> str:
        more = f" (and {self.n - _FIRST} more)" if self.n > _FIRST else ""
        return ", ".join(str(v) for v in self.first) + more


class _Rows:
    """What the row checks need, gathered while the release SHA is recomputed: counts in memory, every per-row fact
    (sessions, steps per session, each row's session and split, Φ) in a DuckDB database of its own that spills to
    ``scratch`` past ``TRB_DUCKDB_MEMORY`` (:mod:`toolkit.duck_memory`), so a release of millions of rows is
    checked in flat memory. ``seq`` numbers the rows in the order read."""

    def __init__(self, scratch: Path) -> None:
        import duckdb

        from toolkit.duck_memory import memory_limit

        self.con = duckdb.connect(":memory:", config={
            "memory_limit": memory_limit(), "temp_directory": str(scratch), "threads": min(2, os.cpu_count() or 1)})
        self.con.execute(_TABLES)
        self.seq = 0
        self.counts: dict[str, Counter] = {c: Counter() for c in CONFIGS}
        self.origins = Counter()  # (split, origin) -> counterfactuals
        self.no_phi = _Offenders()
        self.labels = Counter()
        self.unlabelled = _Offenders()
        self.transfer: list[dict] = []
        self.markers = 0
        self.misplaced: list[str] = []

    def close(self) -> None:
        self.con.close()

    def add(self, config: str, split: str, rel: str, batch: pa.RecordBatch) -> None:
        self.markers += sum(_markers(col) for col in batch.columns)
        names = [c for c in _COLUMNS[config] if c in batch.schema.names]
        table = pa.Table.from_batches([batch]).select(names)
        n = table.num_rows
        table = table.append_column("seq", pa.array(range(self.seq, self.seq + n), pa.int64()))
        self.seq += n
        splits = table.column("split")
        wrong = n - int(pc.sum(pc.fill_null(pc.equal(splits, split), False)).as_py() or 0)
        if wrong:
            self.misplaced.append(f"{rel}: {wrong} row(s) of another split than the shard's ({split})")
        self.counts[config].update(_value_counts(splits))
        if config == "transfer":
            self.transfer += table.drop_columns(["seq"]).to_pylist()
            return
        self.con.register("batch", table)
        try:
            self._insert(config, table)
        finally:
            self.con.unregister("batch")

    def _insert(self, config: str, table: pa.Table) -> None:
        q = self.con.execute
        gated = "(" + ", ".join(f"'{s}'" for s in ANNOTATOR_GATED_SPLITS) + ")"
        if config == "sessions":
            q("INSERT INTO sessions SELECT seq, session_id, split, source_kind, subject_id, context_id, n_steps "
              "FROM batch")
        elif config == "steps":
            q("INSERT INTO steps SELECT session_id, split, count(*), min(seq) FROM batch GROUP BY ALL")
        elif config == "counterfactuals":
            q("INSERT INTO children SELECT seq, 'counterfactuals', cf_id, session_id, split FROM batch")
            self.origins.update({(sp, o): k for sp, o, k in q(
                "SELECT split, origin, count(*) FROM batch GROUP BY ALL").fetchall()})
            q("""INSERT INTO phi SELECT split, phi_type, phi_n,
                     CASE WHEN phi_type = 'distribution' AND phi_n IS NOT NULL
                          THEN coalesce(phi_probs, []) END, count(*), min(seq)
                 FROM batch WHERE phi_type IS NOT NULL GROUP BY ALL""")
            self.no_phi.extend(r[0] for r in q(f"SELECT cf_id FROM batch WHERE phi_type IS NULL AND split IN {gated} "
                                               "ORDER BY seq").fetchall())
            q(f"INSERT INTO gated SELECT seq, cf_id, session_id, phi_n FROM batch "
              f"WHERE phi_type = 'distribution' AND split IN {gated}")
        elif config == "attribution":
            q("INSERT INTO children SELECT seq, 'attribution', item_id, session_id, split FROM batch")
            self.labels.update(_value_counts(table.column("label_source")))
            self.unlabelled.extend(r[0] for r in q(f"SELECT item_id FROM batch WHERE label IS NULL AND split IN "
                                                   f"{gated} ORDER BY seq").fetchall())

    def finish(self) -> None:
        """The sessions as the checks read them: one row per session id, its last (a release repeats none), with
        where it was first met."""
        self.con.execute("""
            CREATE TABLE session AS
            SELECT session_id, split, source_kind, subject_id, context_id, n_steps, first FROM (
                SELECT *, min(seq) OVER (PARTITION BY session_id) AS first,
                       row_number() OVER (PARTITION BY session_id ORDER BY seq DESC) AS last
                FROM sessions) WHERE last = 1""")
        self.con.execute("DROP TABLE sessions")

    def query(self, sql: str, params=None) -> list[tuple]:
        return self.con.execute(sql, params).fetchall()

    def offenders(self, sql: str, order: str, params=None) -> _Offenders:
        """The rows of ``sql`` (their first column) in ``order``: counted by DuckDB, the first few fetched."""
        out = _Offenders()
        out.n = self.con.execute(f"SELECT count(*) FROM ({sql})", params).fetchall()[0][0]
        if out.n:
            out.first = [r[0] for r in self.con.execute(f"SELECT * FROM ({sql}) ORDER BY {order} LIMIT {_FIRST}",
                                                        params).fetchall()]
        return out


def _value_counts(column) -> Counter:
    """Counter of a column's values (None for null), as a loop over its rows would count them."""
    out = Counter()
    for entry in pc.value_counts(column):
        out[entry["values"].as_py()] += entry["counts"].as_py()
    return out


def _data_files(d: Path, m: dict, diffs: list[str]) -> list[tuple[str, str, str, Path]]:
    """(config, split, relative path, path) of every listed data file present."""
    out = []
    for f in m["files"]:
        rel = f["path"]
        if not rel.startswith("data/"):
            continue
        parts = rel.split("/")
        split = parts[-1].split("-", 1)[0] if len(parts) == 3 else None
        if len(parts) != 3 or parts[1] not in CONFIGS or split not in SPLITS or not parts[2].endswith(".parquet"):
            diffs.append(f"{rel}: not a data file of the release format (data/<config>/<split>-NNNNN-of-NNNNN.parquet)")
            continue
        if (d / rel).is_file():
            out.append((parts[1], split, rel, d / rel))
    order = {c: i for i, c in enumerate(CONFIGS)}
    return sorted(out, key=lambda x: (order[x[0]], x[2]))


def _rows(d: Path, m: dict, diffs: list[str]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="trb-release-check-") as scratch:
        facts = _Rows(Path(scratch))
        try:
            _check_rows(d, m, diffs, facts)
        finally:
            facts.close()


def _check_rows(d: Path, m: dict, diffs: list[str], facts: _Rows) -> None:
    digest = ContentDigest(m.get("content_format", 1))
    for config, split, rel, path in _data_files(d, m, diffs):
        try:
            pf = pq.ParquetFile(path)
            missing = [c for c in _COLUMNS[config] if c not in pf.schema_arrow.names]
            if missing:
                diffs.append(f"{rel}: lacks column(s) {', '.join(missing)} of the {config} config")
                continue
            for batch in pf.iter_batches(batch_size=_BATCH_ROWS):
                digest.add_batch(config, batch, path)
                facts.add(config, split, rel, batch)
        except Exception as e:  # noqa: BLE001 - an unreadable or foreign parquet file is a difference, not a crash
            diffs.append(f"{rel}: unreadable as a {config} shard ({type(e).__name__}: {str(e).splitlines()[0]})")
            return
        digest.add_config(config)
    try:
        sha = digest.hexdigest()
    except Exception as e:  # noqa: BLE001 - rows read again in content order: a difference, not a crash
        diffs.append(f"data: rows unreadable for the release SHA ({type(e).__name__}: {str(e).splitlines()[0]})")
        return
    if sha != m["release_sha"]:
        diffs.append(f"release SHA recomputed from the parquet rows is {sha}, the manifest says {m['release_sha']}")
    facts.finish()
    diffs += facts.misplaced
    _compare_counts(facts, m, diffs)
    _compare_kind(facts, m, diffs)
    _compare_shares(facts, m, diffs)
    _compare_splits(facts, m, diffs)
    _compare_children(facts, diffs)
    _compare_transfer(facts, m, diffs)
    _compare_phi(facts, m, diffs)
    _compare_labels(facts, m, diffs)
    markers = facts.markers + sum(
        (d / name).read_text(encoding="utf-8", errors="replace").count(REDACTION_MARKER)
        for name in _TEXT_FILES if (d / name).is_file())
    redacted = (m.get("pii") or {}).get("redacted", 0)
    if markers < redacted:
        diffs.append(f"{MANIFEST}: pii says {redacted} redacted, but the release holds {markers} redaction marker(s) "
                     f"({REDACTION_MARKER}…]): redacted data was put back")


def _compare_counts(facts: _Rows, m: dict, diffs: list[str]) -> None:
    have = {c: {s: n for s, n in v.items() if n} for c, v in facts.counts.items()}
    want = {c: {s: n for s, n in (v or {}).items() if n} for c, v in m["counts"].items()}
    for config in sorted(set(have) | set(want)):
        for split in sorted(set(have.get(config, {})) | set(want.get(config, {})), key=str):
            a, b = have.get(config, {}).get(split, 0), want.get(config, {}).get(split, 0)
            if a != b:
                diffs.append(f"data/{config} {split}: {a} rows, the manifest says {b}")
    # subjects per split (a session without a subject counts as one more), splits in the order the sessions give
    have_s = dict(facts.query("""
        SELECT split, count(DISTINCT subject_id) + max(CASE WHEN subject_id IS NULL THEN 1 ELSE 0 END)
        FROM session GROUP BY split ORDER BY min(first)"""))
    want_s = {s: n for s, n in m["subjects"].items() if n}
    if have_s != want_s:
        diffs.append(f"{MANIFEST}: subjects per split {want_s}, the rows have {have_s}")


def _compare_kind(facts: _Rows, m: dict, diffs: list[str]) -> None:
    kinds = ", ".join(f"'{k}'" for k in SMOKE_SOURCE_KINDS)
    smoke = facts.offenders(f"SELECT session_id FROM session WHERE source_kind IN ({kinds})", "session_id")
    if smoke and m["kind"] != "smoke":
        diffs.append(f"{MANIFEST}: kind {m['kind']}, but {smoke.n} session(s) are simulated or illustrative "
                     f"({smoke.text()}): a smoke release")
    if smoke and not m["smoke_test"]:
        diffs.append(f"{MANIFEST}: smoke_test false, but the release holds simulated or illustrative sessions")


def _compare_shares(facts: _Rows, m: dict, diffs: list[str]) -> None:
    splits = sorted({sp for sp, _ in facts.origins})
    rows = [(sp, sum(n for (s, o), n in facts.origins.items() if s == sp and o == SYNTHETIC_ORIGIN),
             sum(n for (s, o), n in facts.origins.items() if s == sp and o in HUMAN_ORIGINS)) for sp in splits]
    want = {}
    for split, syn, hum in [("overall", sum(r[1] for r in rows), sum(r[2] for r in rows)), *rows]:
        total = syn + hum
        want[split] = {"synthetic": syn, "human": hum, "share": (syn / total) if total else None,
                       "within_cap": syn <= SYNTHETIC_CAP * hum}
    if m["synthetic"] != want:
        bad = sorted(s for s in set(want) | set(m["synthetic"]) if m["synthetic"].get(s) != want.get(s))
        diffs.append(f"{MANIFEST}: synthetic shares of {', '.join(bad)} differ from the rows' "
                     + "; ".join(f"{s}: {want[s]['synthetic']} synthetic / {want[s]['human']} human"
                                 for s in bad if s in want))
    if m["synthetic_share"] != want["overall"]["share"]:
        diffs.append(f"{MANIFEST}: synthetic_share {m['synthetic_share']}, the rows give {want['overall']['share']}")
    over = [s for s, v in want.items() if not v["within_cap"]]
    if over and not (m["kind"] == "smoke" and "synthetic_cap" in waived_gates(m)):
        diffs.append(f"data/counterfactuals: synthetic above {SYNTHETIC_CAP:g} x human in {', '.join(over)} "
                     "(gate synthetic_cap)")


def _compare_splits(facts: _Rows, m: dict, diffs: list[str]) -> None:
    contexts = {r["context_id"] for r in facts.transfer}
    fractions, salt, parent = m["split_fractions"], m["salt"], m.get("parent")
    # the rule's split of each subject (a few hundred), then every session against it, in DuckDB
    subjects = [r[0] for r in facts.query("SELECT DISTINCT subject_id FROM session WHERE subject_id IS NOT NULL")]
    facts.con.register("rule", pa.table({"subject_id": pa.array(subjects, pa.string()),
                                         "split": pa.array([subject_split(salt, s, fractions) for s in subjects],
                                                           pa.string())}))
    facts.con.register("transfer_contexts", pa.table({"context_id": pa.array(sorted(contexts, key=str), pa.string())}))
    try:
        # each session: in the transfer split, and of a transfer context (a context id of None included)
        flagged = """
            SELECT s.*, coalesce(s.split = 'transfer', false) AS is_transfer,
                   coalesce(s.context_id IN (SELECT context_id FROM transfer_contexts) OR (s.context_id IS NULL
                            AND EXISTS (SELECT 1 FROM transfer_contexts WHERE context_id IS NULL)), false) AS of_transfer
            FROM session s"""
        wrong_transfer = facts.offenders(f"SELECT session_id FROM ({flagged}) WHERE is_transfer <> of_transfer",
                                         "session_id")
        pinned = " AND s.split IS DISTINCT FROM 'eval'" if parent else ""  # a parent may have pinned subjects to eval
        wrong = facts.offenders(f"""
            SELECT coalesce(s.session_id, 'None') || ' (' || coalesce(s.split, 'None') || ', the rule gives '
                   || r.split || ')' AS what,
                   s.session_id
            FROM ({flagged}) s JOIN rule r USING (subject_id)
            WHERE NOT s.is_transfer AND NOT s.of_transfer AND s.split IS DISTINCT FROM r.split{pinned}""",
                                "session_id")
    finally:
        facts.con.unregister("rule")
        facts.con.unregister("transfer_contexts")
    if wrong_transfer:
        diffs.append(f"data/sessions: session(s) {wrong_transfer.text()} in or out of the transfer split against "
                     "the release's transfer contexts")
    if wrong:
        diffs.append(f"data/sessions: {wrong.n} session(s) not in the split the manifest's salt and split "
                     f"fractions give their subject: {wrong.text()}")


def _compare_children(facts: _Rows, diffs: list[str]) -> None:
    # rows in the order read, then the steps' (session, split) pairs in the order met
    found = """
        SELECT 0 AS part, c.seq AS pos, c.config || ' ' || coalesce(c.id, 'None') AS what,
               s.session_id IS NULL AS orphan, s.split IS DISTINCT FROM c.split AS moved
        FROM children c LEFT JOIN session s ON s.session_id = c.session_id
        UNION ALL
        SELECT 1, t.first, 'steps of ' || coalesce(t.session_id, 'None'),
               s.session_id IS NULL, s.split IS DISTINCT FROM t.split
        FROM (SELECT session_id, split, min(first) AS first FROM steps GROUP BY ALL) t
        LEFT JOIN session s ON s.session_id = t.session_id"""
    orphans = facts.offenders(f"SELECT what, part, pos FROM ({found}) WHERE orphan", "part, pos")
    moved = facts.offenders(f"SELECT what, part, pos FROM ({found}) WHERE NOT orphan AND moved", "part, pos")
    short = facts.offenders("""
        SELECT s.session_id FROM session s LEFT JOIN (SELECT session_id, sum(n) AS n FROM steps GROUP BY 1) t
          ON t.session_id = s.session_id
        WHERE s.n_steps IS NOT NULL AND coalesce(t.n, 0) <> s.n_steps""", "session_id")
    if orphans:
        diffs.append(f"rows of no session in the release: {orphans.text()}")
    if moved:
        diffs.append(f"rows in another split than their session: {moved.text()}")
    if short:
        diffs.append(f"data/steps: session(s) {short.text()} have other step counts than their n_steps")


def _compare_transfer(facts: _Rows, m: dict, diffs: list[str]) -> None:
    trainers = [o for o in m.get("trainer_orgs") or [] if isinstance(o, str) and org_tokens(o)]
    per_context = Counter(dict(facts.query("SELECT context_id, count(*) FROM session WHERE split = 'transfer' "
                                           "GROUP BY 1")))
    for r in facts.transfer:
        ctx = r["context_id"]
        if (hit := matching_org(r["collector_org"] or "", trainers)) is not None:  # the gate's rule (toolkit.orgs)
            diffs.append(f"data/transfer {ctx}: collected by {r['collector_org']!r}, one of the manifest's "
                         f"trainer_orgs ({hit!r}) (gate transfer_provenance)")
        if not (r["attestation_ref"] or "").strip():
            diffs.append(f"data/transfer {ctx}: no attestation (gate transfer_provenance)")
        if r["n_sessions"] != per_context.get(ctx, 0):
            diffs.append(f"data/transfer {ctx}: n_sessions {r['n_sessions']}, the release has "
                         f"{per_context.get(ctx, 0)} transfer session(s) of it")


def _compare_phi(facts: _Rows, m: dict, diffs: list[str]) -> None:
    if facts.no_phi:
        diffs.append(f"data/counterfactuals: eval/transfer counterfactual(s) without Φ: {facts.no_phi.text()} "
                     "(gate completeness)")
    if facts.unlabelled:
        diffs.append(f"data/attribution: eval/transfer item(s) without a label: {facts.unlabelled.text()} "
                     "(gate completeness)")
    info = m.get("phi_annotators")
    if info is None:
        return
    if list(info["gated_splits"]) != list(ANNOTATOR_GATED_SPLITS):
        diffs.append(f"{MANIFEST}: phi_annotators.gated_splits {info['gated_splits']}, releases gate "
                     f"{list(ANNOTATOR_GATED_SPLITS)}")
    least = info["min_annotators"]
    short = facts.offenders("""
        SELECT coalesce(g.cf_id, 'None') || ' (n=' || coalesce(CAST(g.phi_n AS VARCHAR), 'none') || ')', g.seq
        FROM gated g LEFT JOIN session s ON s.session_id = g.session_id
        WHERE (g.phi_n IS NOT NULL AND g.phi_n < $least)
           OR (g.phi_n IS NULL AND s.source_kind IS DISTINCT FROM 'simulated')""", "seq", {"least": least})
    if short:
        diffs.append(f"data/counterfactuals: eval/transfer Φ from fewer than the manifest's min_annotators "
                     f"{least}: {short.text()}")
    # (split, kind, annotators, distribution) -> counterfactuals, in the order first met
    phi = [((sp, kind, n, None if probs is None else tuple((e["action"], e["p"]) for e in probs)), k)
           for sp, kind, n, probs, k, _ in facts.query(
               "SELECT split, phi_type, phi_n, probs, sum(n), min(first) AS f FROM phi GROUP BY split, phi_type, "
               "phi_n, probs ORDER BY f")]
    want = {}
    for split in [s for s in SPLITS if any(k[0] == s for k, _ in phi)]:
        dist = [(dict(probs) if probs is not None else None, n, k)
                for (sp, kind, n, probs), k in phi if sp == split and kind == "distribution"]
        c = ceiling_by_items(dist)
        want[split] = {"items": c.items, "unstated": c.unstated, "phi_n": {str(n): k for n, k in c.phi_n.items()},
                       "phi_n_min": c.n_min, "phi_n_median": c.n_median, "phi_n_max": c.n_max,
                       "oracle_g": None if c.oracle_g is None else round(c.oracle_g, 6),
                       "text_items": sum(k for (sp, kind, _, _), k in phi if sp == split and kind == "text")}
    have = info["splits"]
    bad = []
    for split in sorted(set(want) | set(have)):
        a, b = dict(have.get(split) or {}), dict(want.get(split) or {})
        ga, gb = a.pop("oracle_g", None), b.pop("oracle_g", None)
        close = ga == gb or (ga is not None and gb is not None and abs(ga - gb) <= 2e-6)
        if a != b or not close:
            bad.append(split)
    if bad:
        diffs.append(f"{MANIFEST}: phi_annotators of {', '.join(bad)} (annotators behind Φ, the Track 1 ceiling) "
                     "differ from the rows'")


def _compare_labels(facts: _Rows, m: dict, diffs: list[str]) -> None:
    sources = {s for s, n in facts.labels.items() if n}
    want = "none" if not sources else next(iter(sources)) if len(sources) == 1 else "mixed"
    if m["label_source"] != want:
        diffs.append(f"{MANIFEST}: label_source {m['label_source']!r}, the attribution rows' is {want!r}")
