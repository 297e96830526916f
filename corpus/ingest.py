"""All-or-nothing ingest (and validation, which is an ingest that never writes).

Files are streamed a batch at a time into a scratch DuckDB database beside the
corpus (so memory stays flat whatever the input size). Each line is checked on its
own as it is read (:mod:`corpus.fast_records`, falling back to the reference path of
:mod:`corpus.records` for any line it doubts) and its rows staged as typed columns
(:mod:`corpus.staging`), appended to one Arrow stream file per table in the scratch
folder, which DuckDB reads into its staging tables in one statement each once every
line is parsed; once every file is staged, the checks that need other records
(duplicates, conflicts with the store, dangling references, Φ's actions against the
step's action space) run as SQL over the staging tables and the store. Only when
nothing is wrong are the new records copied into the store, in one transaction.

The report also carries the 3:1 cap's figures for the store as it is (or, for a
validation, would be) after the ingest: :meth:`IngestReport.cap_warning` says, with
the figures, when a release would refuse it, so the CLI warns at ingest rather than
only at ``stats`` or release time.
"""

from __future__ import annotations

import gc
import json
import multiprocessing
import os
import tempfile
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import orjson
import pyarrow as pa
import pydantic_core
from tqdm import tqdm

from corpus.cap import CapFigures, store_cap_figures
from corpus.errors import DiskFull, InvalidInput, Problem, RecordConflict, UsageError
from corpus.fast_records import FastRecord, parse_record_fast
from corpus.jsonl import DEFAULT_MAX_LINE_BYTES, Block, file_size, read_blocks
from corpus.lock import LockWait
from corpus.staging import StagedRows
from corpus.store import Corpus, empty_store, rollback_quietly, scratch_connection, storage_error
from corpus.tables import RECORD_TABLES, TABLES, ddl, expand
from schemas.versions import TOOLKIT_VERSION

__all__ = ["IngestReport", "ingest", "ingest_records", "validate", "MAX_PROBLEMS_SHOWN"]

#: Inputs at least this large are parsed by worker processes.
PARALLEL_MIN_BYTES = 16 * 1024 * 1024
MAX_WORKERS = 4
MAX_PROBLEMS_SHOWN = 1000
_ID_FIELDS = {kind: key for kind, (_, key) in RECORD_TABLES.items()}


@dataclass
class IngestReport:
    """What an ingest (or validation) found and did."""

    files: list[str]
    dry_run: bool
    records: int = 0
    steps: int = 0
    new: Counter = field(default_factory=Counter)
    unchanged: Counter = field(default_factory=Counter)
    new_steps: int = 0
    seconds: float = 0.0
    ingest_id: int | None = None
    #: the 3:1 cap's figures of the store after this ingest (its new records included)
    cap: CapFigures | None = None
    #: bytes of the staged records' canonical JSON (what the free-space check before the commit scales)
    staged_bytes: int = 0

    def cap_warning(self) -> str | None:
        """A warning with the figures when the store after this ingest would break the 3:1 cap at release."""
        if self.cap is None or self.cap.within:
            return None
        when = "after this ingest the corpus would hold" if self.dry_run else "the corpus now holds"
        return (f"warning: {when} {self.cap.describe()}. A release refuses this (gate synthetic_cap, overall and "
                "per split) until human-origin counterfactuals are added; synthetic ones without Φ are kept out of "
                "eval and transfer only.")

    def summary(self) -> str:
        n_new, n_same = sum(self.new.values()), sum(self.unchanged.values())
        by_kind = ", ".join(f"{k}: {self.new[k]} new/{self.unchanged[k]} unchanged"
                            for k in RECORD_TABLES if self.new[k] or self.unchanged[k])
        verb = "valid" if self.dry_run else "ingested"
        tail = "; nothing written (validate)" if self.dry_run else ""
        return (f"{verb}: {self.records} record(s) from {len(self.files)} file(s): "
                f"{n_new} new, {n_same} unchanged ({by_kind or 'none'}){tail}")


class _Problems:
    def __init__(self, order: dict[str, int], limit: int):
        self.items: list[Problem] = []
        self.total = 0
        self.order = order
        self.limit = limit

    def add(self, file: str, line: int | None, pointer: str, message: str) -> None:
        self.total += 1
        if len(self.items) < self.limit:
            self.items.append(Problem(file, line, pointer, message))

    def sorted(self) -> list[Problem]:
        return sorted(self.items, key=lambda p: (self.order.get(p.file, 0), p.line or 0))


def _failed_id(data: bytes) -> tuple[str, str] | None:
    """The kind and id of a record that failed validation, if they can be read."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        try:  # a record refused for a NaN or Infinity still names its id (so references to it are not "dangling")
            obj = pydantic_core.from_json(data, allow_inf_nan=True)
        except ValueError:
            return None
    if isinstance(obj, dict) and isinstance(obj.get("kind"), str) and obj["kind"] in _ID_FIELDS:
        rid = obj.get(_ID_FIELDS[obj["kind"]])
        if isinstance(rid, str):
            return obj["kind"], rid
    return None


@dataclass
class _Chunk:
    """What parsing one chunk of lines produced: the store's rows, problems, ids of failed records."""

    tables: dict[str, pa.Table]
    raw: pa.Table | None  # canonical documents of the valid records not staged as rows (StagedRows.add)
    problems: list[tuple[int, str, str]]
    failed: list[tuple[str, str]]
    records: int
    steps: int
    lines: int
    doc_bytes: int = 0


class _StagedFiles:
    """Each store table's staged rows, appended chunk by chunk to Arrow IPC stream files under ``directory``: the
    main process's own, and one per parsing process (``tag``), which writes its blocks' rows itself instead of
    sending them back. :meth:`load` has DuckDB read each table's files in one statement (memory stays flat: the
    rows wait on disk, and DuckDB reads them a batch at a time). Inserting them a batch at a time instead cost more
    per row the larger DuckDB's in-memory table grew (at 100k sessions 14.7 s of a 28 s ingest, against 0.3 s in one
    statement). Uncompressed: lz4 cost more to write and read than it saved (3.5 s at 100k)."""

    def __init__(self, directory: Path, tag: str = "main"):
        self.dir = directory
        self.tag = tag
        self.writers: dict[str, pa.ipc.RecordBatchStreamWriter] = {}
        # each writer's file, closed by us: a writer whose close fails (a full disk) would leave it open until the
        # writer is collected, holding a deleted file's space (and the disk's mount) in a long-lived process
        self.sinks: dict[str, pa.NativeFile] = {}

    def add(self, table: str, rows: pa.Table) -> None:
        """Append ``rows`` to this writer's file of ``table`` (written through: a reader sees them at once)."""
        writer = self.writers.get(table)
        if writer is None:
            self.dir.mkdir(parents=True, exist_ok=True)
            sink = self.sinks[table] = pa.OSFile(str(self.dir / f"{table}--{self.tag}.arrows"), "wb")
            writer = self.writers[table] = pa.ipc.new_stream(sink, rows.schema)
        writer.write_table(rows)

    def load(self, con) -> None:
        """Insert every table's staged rows (every writer's) into ``main.<table>`` and remove the files."""
        self._close(quiet=False)
        for table in TABLES:
            paths = sorted(self.dir.glob(f"{table}--*.arrows"))
            if not paths:
                continue
            files = [pa.OSFile(str(p)) for p in paths]
            try:
                readers = [pa.ipc.open_stream(f) for f in files]
                stream = pa.RecordBatchReader.from_batches(readers[0].schema, (b for r in readers for b in r))
                con.register("_staged", stream)
                try:
                    con.execute(f"INSERT INTO main.{table} SELECT * FROM _staged")
                finally:
                    con.unregister("_staged")
            finally:
                for f in files:
                    f.close()
            for p in paths:
                p.unlink()

    def close(self) -> None:
        """Close whatever this writer has open (after a failure: the folder goes with the scratch space)."""
        self._close(quiet=True)

    def _close(self, quiet: bool) -> None:
        """Close every writer, then every file, whatever fails (the first failure is raised unless ``quiet``)."""
        failed: BaseException | None = None
        for name in list(self.writers):
            for thing in (self.writers.pop(name), self.sinks.pop(name, None)):
                try:
                    if thing is not None:
                        thing.close()
                except (OSError, pa.ArrowException) as e:  # a full disk
                    failed = failed or e
        if failed is not None and not quiet:
            raise failed


#: In a parsing process: its staged files, by staging folder (open until the process ends with the ingest's pool).
_IN_WORKER: dict[str, _StagedFiles] = {}


def _staged_here(chunk: _Chunk, staging: str | None) -> _Chunk:
    """In a parsing process: write ``chunk``'s rows to this process's staged files, and send back the rest."""
    if staging is None or not chunk.tables:
        return chunk
    files = _IN_WORKER.get(staging)
    if files is None:
        files = _IN_WORKER[staging] = _StagedFiles(Path(staging), f"worker-{os.getpid()}")
    for table, rows in chunk.tables.items():
        files.add(table, rows)
    chunk.tables = {}
    return chunk


def _parse_block(name: str, block: Block, max_line_bytes: int, staging: str | None = None) -> _Chunk:
    """Parse and check one block of a file's lines (in a worker process for large inputs, which writes the rows to
    its staged files under ``staging``)."""
    gc_was_on = gc.isenabled()
    gc.disable()  # a block allocates many short-lived objects and no cycles: the collector only costs time
    try:
        return _staged_here(_parse_lines(name, block, max_line_bytes), staging)
    finally:
        if gc_was_on:
            gc.enable()


def _parse_range(name: str, path: str, first: int, start: int, length: int, max_line_bytes: int,
                 staging: str | None = None) -> _Chunk:
    """:func:`_parse_block` of the block of ``path`` (a plain file) at ``start``: the worker reads it itself, so
    the file's bytes are not sent through a pipe. A file that changed since its block was found is an error."""
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(length)
    if len(data) != length or (data and data[-1:] != b"\n" and f.read(1)):
        return _parse_block(name, Block(first, b"", "the file changed while it was being read: run the command "
                                                    "again once nothing is writing it"), max_line_bytes, staging)
    return _parse_block(name, Block(first, data), max_line_bytes, staging)


def _parse_lines(name: str, block: Block, max_line_bytes: int) -> _Chunk:
    rows = StagedRows(name)
    others: list[FastRecord] = []
    others_lines: list[int] = []
    problems: list[tuple[int, str, str]] = []
    failed: list[tuple[str, str]] = []
    records = 0
    steps = 0
    n_lines = 0
    doc_bytes = 0
    for number, data, error in block.lines(max_line_bytes):
        n_lines += 1
        if error is not None:
            problems.append((number, "", error))
            continue
        parsed = parse_record_fast(data)
        if isinstance(parsed, FastRecord):
            records += 1
            steps += parsed.n_steps
            doc_bytes += len(parsed.canonical)
            if parsed.rec is None or not rows.add(parsed.rec, parsed.sha256, number):
                others.append(parsed)
                others_lines.append(number)
        else:
            problems.extend((number, pointer, message) for pointer, message in parsed)
            fid = _failed_id(data)
            if fid:
                failed.append(fid)
    raw = None
    if others:
        raw = pa.table({"kind": [p.kind for p in others], "id": [p.id for p in others],
                        "content_hash": [p.sha256 for p in others], "src_file": [name] * len(others),
                        "src_line": pa.array(others_lines, pa.int64()),
                        "doc": pa.array([p.canonical for p in others], pa.binary()).cast(pa.string())})
    return _Chunk(rows.tables(), raw, problems, failed, records, steps, n_lines, doc_bytes)


def _workers_for(total_bytes: int) -> int:
    """Worker processes for parsing: none for small inputs (start-up would cost more than it saves)."""
    env = os.environ.get("TRB_INGEST_WORKERS")
    if env is not None:
        return max(0, int(env))
    return min(os.cpu_count() or 1, MAX_WORKERS) if total_bytes >= PARALLEL_MIN_BYTES else 0


def _start_pool(workers: int):
    """Start the parsing processes before any DuckDB connection or progress thread exists (they fork)."""
    if workers == 0:
        return None
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"))
    for f in [pool.submit(os.getpid) for _ in range(workers)]:
        f.result()
    return pool


def _stage(con, files: list[Path], report: IngestReport, problems: _Problems, max_line_bytes: int,
           progress: bool, pool, names: dict[str, str], staging: Path) -> None:
    for stmt in ddl("main"):
        con.execute(stmt)
    con.execute("CREATE TABLE main.raw (kind VARCHAR, id VARCHAR, content_hash VARCHAR, src_file VARCHAR, "
                "src_line BIGINT, doc VARCHAR)")
    con.execute("CREATE TABLE main.failed (kind VARCHAR, id VARCHAR)")
    sizes = {p: file_size(p) for p in files if p.is_file()}
    bar = tqdm(total=sum(sizes.values()), unit="B", unit_scale=True, desc="reading",
               disable=None if progress else True, leave=False)
    staged = _StagedFiles(staging)

    def take(name: str, chunk: _Chunk) -> int:
        for table, rows in chunk.tables.items():
            staged.add(table, rows)
        if chunk.raw is not None:
            con.register("_chunk", chunk.raw)
            con.execute("INSERT INTO main.raw SELECT * FROM _chunk")
            con.unregister("_chunk")
        for number, pointer, message in chunk.problems:
            problems.add(name, number, pointer, message)
        if chunk.failed:
            con.executemany("INSERT INTO main.failed VALUES (?, ?)", chunk.failed)
        report.records += chunk.records
        report.steps += chunk.steps
        report.staged_bytes += chunk.doc_bytes
        return chunk.lines

    try:
        for path in files:
            name = names.get(str(path), str(path))
            if path not in sizes:
                problems.add(name, None, "", "no such file" if not path.exists() else "not a regular file")
                continue
            n_lines = 0
            pending: deque = deque()
            for block in read_blocks(path, max_line_bytes, bar.update):
                if pool is None:
                    n_lines += take(name, _parse_block(name, block, max_line_bytes))
                    continue
                if block.error is None and path.suffix != ".gz":  # the worker reads the block from the file
                    pending.append(pool.submit(_parse_range, name, str(path), block.first, block.start,
                                               len(block.data), max_line_bytes, str(staging)))
                else:
                    pending.append(pool.submit(_parse_block, name, block, max_line_bytes, str(staging)))
                while len(pending) > 2 * pool._max_workers:
                    n_lines += take(name, pending.popleft().result())
            while pending:
                n_lines += take(name, pending.popleft().result())
            if n_lines == 0:
                problems.add(name, None, "", "empty file: no records (expected one JSON record per line)")
        staged.load(con)
    finally:
        staged.close()
        bar.close()
    expand(con, "main", "main.raw")  # DuckDB parses the canonical documents staged as such (if any) into the tables
    con.execute("DROP TABLE main.raw")


_UNION_VIEWS = """
CREATE OR REPLACE TEMP VIEW all_sessions AS
  SELECT session_id, ext_slots, n_steps FROM main.sessions
  UNION ALL SELECT session_id, ext_slots, n_steps FROM store.sessions
  WHERE session_id NOT IN (SELECT session_id FROM main.sessions);
CREATE OR REPLACE TEMP VIEW all_steps AS
  SELECT session_id, t, has_r, action_space, outcome FROM main.steps
  UNION ALL SELECT session_id, t, has_r, action_space, outcome FROM store.steps
  WHERE session_id NOT IN (SELECT session_id FROM main.sessions);
CREATE OR REPLACE TEMP VIEW all_cfs AS
  SELECT cf_id, session_id, t FROM main.counterfactuals
  UNION ALL SELECT cf_id, session_id, t FROM store.counterfactuals
  WHERE cf_id NOT IN (SELECT cf_id FROM main.counterfactuals);
CREATE OR REPLACE TEMP VIEW all_attribution AS
  SELECT item_id FROM main.attribution
  UNION ALL SELECT item_id FROM store.attribution WHERE item_id NOT IN (SELECT item_id FROM main.attribution);
"""


def _check_duplicates(con, problems: _Problems, order: dict[str, int]) -> None:
    for kind, (table, key) in RECORD_TABLES.items():
        rows = con.execute(
            f"SELECT {key}, list(src_file), list(src_line) FROM main.{table} GROUP BY {key} HAVING count(*) > 1"
        ).fetchall()
        for rid, srcs, lines in rows:
            places = sorted(zip(srcs, lines), key=lambda fl: (order.get(fl[0], 0), fl[1]))
            first = places[0]
            for f, ln in places[1:]:
                problems.add(f, ln, f"/{key}", f"duplicate {kind} id {rid!r} in this ingest (first at {first[0]}:{first[1]})")


def _conflicts(con, problems: _Problems) -> None:
    for kind, (table, key) in RECORD_TABLES.items():
        rows = con.execute(
            f"SELECT m.{key}, m.src_file, m.src_line, s.content_hash, m.content_hash, s.src_file, s.src_line "
            f"FROM main.{table} m JOIN store.{table} s USING ({key}) WHERE m.content_hash <> s.content_hash"
        ).fetchall()
        for rid, f, ln, old, new, of, ol in rows:
            problems.add(
                f, ln, f"/{key}",
                f"conflict: {kind} {rid!r} is in the corpus with different content "
                f"(stored sha256:{old[:16]}… from {of}:{ol}; this one sha256:{new[:16]}…); "
                "records are never overwritten: give the new version a new id",
            )


def _check_references(con, problems: _Problems) -> None:
    failed = {(k, i) for k, i in con.execute("SELECT kind, id FROM main.failed").fetchall()}
    con.execute(_UNION_VIEWS)

    def gone(sid: str) -> bool:  # a reference to a record that itself failed: reported there
        return ("session", sid) in failed

    rows = con.execute("""
        SELECT c.src_file, c.src_line, c.session_id, c.t, s.session_id IS NOT NULL, s.n_steps,
               st.t IS NOT NULL, st.has_r, st.action_space, c.phi_type, c.phi_actions,
               coalesce(json_keys(c.rp_ext), []), s.ext_slots, c.paired_session_id, ps.session_id IS NOT NULL
        FROM main.counterfactuals c
        LEFT JOIN all_sessions s ON s.session_id = c.session_id
        LEFT JOIN all_steps st ON st.session_id = c.session_id AND st.t = c.t
        LEFT JOIN all_sessions ps ON ps.session_id = c.paired_session_id
        WHERE s.session_id IS NULL OR st.t IS NULL OR NOT st.has_r
           OR (c.phi_type = 'distribution' AND (st.action_space IS NULL OR NOT list_has_all(st.action_space, c.phi_actions)))
           OR (c.phi_type = 'text' AND st.action_space IS NOT NULL)
           OR NOT list_has_all(coalesce(s.ext_slots, []), coalesce(json_keys(c.rp_ext), []))
           OR (c.paired_session_id IS NOT NULL AND ps.session_id IS NULL)
    """).fetchall()
    for (f, ln, sid, t, has_s, n_steps, has_step, has_r, space, phi_type, phi_actions,
         ext_keys, ext_slots, paired, has_paired) in rows:
        if not has_s:
            if not gone(sid):
                problems.add(f, ln, "/session_id", f"dangling reference: session {sid!r} is not in the corpus or this ingest")
            continue
        if not has_step:
            problems.add(f, ln, "/t", f"session {sid!r} has no step {t} (it has steps 0..{n_steps - 1})")
            continue
        if not has_r:
            problems.add(f, ln, "/t", f"step {t} of session {sid!r} has no r_t snapshot to replace with r'")
        if phi_type == "distribution":
            if space is None:
                problems.add(f, ln, "/phi", f"step {t} of {sid!r} is open-ended: Φ must be a text continuation, not a distribution")
            else:
                outside = sorted(set(phi_actions) - set(space))
                if outside:
                    problems.add(f, ln, "/phi/probs", f"actions {outside} are not in step {t}'s action space {space}")
        if phi_type == "text" and space is not None:
            problems.add(f, ln, "/phi", f"step {t} of {sid!r} has a discrete action space {space}: Φ must be a distribution over it")
        undeclared = sorted(set(ext_keys) - set(ext_slots or []))
        if undeclared:
            problems.add(f, ln, "/r_prime/ext", f"unknown r_t slot(s) {undeclared}: not declared in session {sid!r}'s r_extensions")
        if paired is not None and not has_paired and not gone(paired):
            problems.add(f, ln, "/paired_session_id", f"dangling reference: paired session {paired!r} is not in the corpus or this ingest")

    rows = con.execute("""
        SELECT a.src_file, a.src_line, a.session_id, a.t, s.session_id IS NOT NULL, s.n_steps,
               st.t IS NOT NULL, st.outcome IS NOT NULL
        FROM main.attribution a
        LEFT JOIN all_sessions s ON s.session_id = a.session_id
        LEFT JOIN all_steps st ON st.session_id = a.session_id AND st.t = a.t
        WHERE s.session_id IS NULL OR st.t IS NULL OR st.outcome IS NULL
    """).fetchall()
    for f, ln, sid, t, has_s, n_steps, has_step, has_outcome in rows:
        if not has_s:
            if not gone(sid):
                problems.add(f, ln, "/session_id", f"dangling reference: session {sid!r} is not in the corpus or this ingest")
        elif not has_step:
            problems.add(f, ln, "/t", f"session {sid!r} has no step {t} (it has steps 0..{n_steps - 1})")
        elif not has_outcome:
            problems.add(f, ln, "/t", f"step {t} of session {sid!r} has no outcome to attribute")

    rows = con.execute("""
        SELECT n.src_file, n.src_line, n.target_kind, n.target_id, n.value_type, n.action,
               coalesce(ai.item_id, c.cf_id) IS NOT NULL, st.action_space
        FROM main.annotations n
        LEFT JOIN all_attribution ai ON n.target_kind = 'attribution' AND ai.item_id = n.target_id
        LEFT JOIN all_cfs c ON n.target_kind = 'counterfactual' AND c.cf_id = n.target_id
        LEFT JOIN all_steps st ON st.session_id = c.session_id AND st.t = c.t
        WHERE coalesce(ai.item_id, c.cf_id) IS NULL
           OR (n.value_type = 'action' AND (st.action_space IS NULL OR NOT list_contains(st.action_space, n.action)))
           OR (n.value_type = 'continuation' AND st.action_space IS NOT NULL)
    """).fetchall()
    for f, ln, tkind, tid, vtype, action, has_target, space in rows:
        if not has_target:
            if (tkind, tid) not in failed:
                problems.add(f, ln, "/target/id", f"dangling reference: {tkind} {tid!r} is not in the corpus or this ingest")
        elif vtype == "action":
            where = "an open-ended step" if space is None else f"the action space {space}"
            problems.add(f, ln, "/value/action", f"{action!r} is not in {where} of {tid!r}'s step")
        else:
            problems.add(f, ln, "/value/type", f"{tid!r}'s step is discrete {space}: annotate an action, not a continuation")


def _count(con, report: IngestReport) -> None:
    for kind, (table, key) in RECORD_TABLES.items():
        new, same = con.execute(
            f"SELECT count(*) FILTER (WHERE s.{key} IS NULL), count(*) FILTER (WHERE s.{key} IS NOT NULL) "
            f"FROM main.{table} m LEFT JOIN store.{table} s USING ({key})"
        ).fetchone()
        report.new[kind], report.unchanged[kind] = new, same
    report.new_steps = con.execute(
        "SELECT count(*) FROM main.steps WHERE session_id NOT IN (SELECT session_id FROM store.sessions)"
    ).fetchone()[0]


#: Free space an ingest needs on the corpus's disk before it commits: this many bytes per byte of its new records'
#: canonical JSON (DuckDB writes them to its write-ahead log, then into the store file; measured: the log about
#: 0.85x, the store's growth 0.4-1.4x), plus a fixed slack for the store's own blocks.
SPACE_PER_BYTE = 2.0
SPACE_SLACK_BYTES = 4 * 1024 * 1024


def _space_needed(report: IngestReport) -> int:
    """Bytes the commit of ``report``'s new records may take on disk (an over-estimate, on purpose)."""
    total = sum(report.new.values()) + sum(report.unchanged.values())
    new_bytes = report.staged_bytes * sum(report.new.values()) / total if total else 0
    return int(SPACE_PER_BYTE * new_bytes) + SPACE_SLACK_BYTES


def _check_space(directory: Path, report: IngestReport) -> None:
    """Refuse, before anything is written, an ingest the disk has no room for (a full disk mid-commit would leave
    DuckDB's log half-folded into the store: committed, but not where a reader of the file expects it)."""
    if not sum(report.new.values()):
        return
    need = _space_needed(report)
    st = os.statvfs(directory)
    free = st.f_bavail * st.f_frsize
    if free < need:
        raise DiskFull(f"not enough free space on the disk holding {directory} for this ingest: it needs about "
                       f"{need / 2**20:,.1f} MiB ({sum(report.new.values())} new record(s)), {free / 2**20:,.1f} MiB "
                       "are free; nothing was written (free some space, or ingest fewer records at a time)")


def _commit(con, report: IngestReport) -> None:
    con.execute("CREATE TABLE main.new_sessions AS SELECT session_id FROM main.sessions "
                "WHERE session_id NOT IN (SELECT session_id FROM store.sessions)")
    ingest_id = con.execute("SELECT coalesce(max(ingest_id), 0) + 1 FROM store.ingests").fetchone()[0]
    con.execute("BEGIN TRANSACTION")
    try:
        for _, (table, key) in RECORD_TABLES.items():
            cols = ", ".join(c for c, _ in TABLES[table])
            sel = ", ".join(f"{ingest_id}" if c == "ingest_id" else f"m.{c}" for c, _ in TABLES[table])
            con.execute(f"INSERT INTO store.{table} ({cols}) SELECT {sel} FROM main.{table} m "
                        f"WHERE m.{key} NOT IN (SELECT {key} FROM store.{table})")
        con.execute("INSERT INTO store.steps SELECT * FROM main.steps "
                    "WHERE session_id IN (SELECT session_id FROM main.new_sessions)")
        con.execute(
            "INSERT INTO store.ingests VALUES (?, ?, ?, ?, ?, ?)",
            [ingest_id, datetime.now(timezone.utc).isoformat(timespec="seconds"), report.files,
             sum(report.new.values()), sum(report.unchanged.values()), TOOLKIT_VERSION],
        )
        con.execute("COMMIT")
    except BaseException:
        rollback_quietly(con)
        raise
    report.ingest_id = ingest_id


def ingest(
    corpus: Corpus | None,
    files: list[str | os.PathLike],
    *,
    dry_run: bool = False,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    progress: bool = True,
    wait_seconds: float | None = None,
    max_problems: int = MAX_PROBLEMS_SHOWN,
    on_wait: Callable[[LockWait], None] | None = None,
    names: Mapping[str | os.PathLike, str] | None = None,
) -> IngestReport:
    """Validate ``files`` completely, then (unless ``dry_run``) write all their new records, or none.

    ``names`` gives a file the name its records and problems are recorded under (default: its path),
    for records that come from somewhere else by way of a temporary file (a Label Studio pull).

    ``corpus`` may be None only with ``dry_run`` (validation against nothing but the
    files themselves).

    Raises:
        InvalidInput: any record is invalid (every problem found, located); nothing was written.
        RecordConflict: a record id exists in the corpus with different content; nothing was written.
        CorpusNotFound, CorpusBusy: the corpus is missing, or held by another process too long.
    """
    if corpus is None and not dry_run:
        raise ValueError("ingest needs a corpus")
    if not isinstance(max_line_bytes, int) or max_line_bytes < 1:
        raise UsageError(f"max_line_bytes must be a number of bytes >= 1 (--max-line-bytes), got {max_line_bytes!r}")
    started = time.perf_counter()
    paths = [Path(f) for f in files]
    names = {str(k): v for k, v in (names or {}).items()}
    report = IngestReport(files=[names.get(str(p), str(p)) for p in paths], dry_run=dry_run)
    order = {names.get(str(p), str(p)): i for i, p in enumerate(paths)}
    problems = _Problems(order, max_problems)
    conflicts = _Problems(order, max_problems)

    def run(con, staging: Path) -> None:
        _stage(con, paths, report, problems, max_line_bytes, progress, pool, names, staging)
        _check_duplicates(con, problems, order)
        _check_references(con, problems)
        _conflicts(con, conflicts)
        if problems.total:
            raise InvalidInput(problems.sorted(), problems.total,
                               f"{problems.total} problem(s) in {len(paths)} file(s); nothing was written")
        if conflicts.total:
            raise RecordConflict(conflicts.sorted(), conflicts.total,
                                 f"{conflicts.total} conflicting record(s); nothing was written")
        _count(con, report)
        report.cap = store_cap_figures(con, "store", "main.counterfactuals")
        if not dry_run:
            _check_space(corpus.dir, report)
            _commit(con, report)

    total = sum(file_size(p) for p in paths if p.is_file())
    pool = _start_pool(_workers_for(total))
    try:
        if corpus is None:
            with tempfile.TemporaryDirectory(prefix="trb-validate-") as tmp, scratch_connection(None) as con:
                empty_store(con)
                try:
                    run(con, Path(tmp) / "staged")
                except OSError as e:
                    typed = storage_error(e, Path(tmp) / "staged")
                    if typed is None:
                        raise
                    raise typed from None
        else:
            spill = corpus.require().dir / f".ingest-{os.getpid()}.spill"  # removed with the connection
            with corpus.open(write=not dry_run, wait_seconds=wait_seconds, spill_dir=spill, on_wait=on_wait,
                             purpose="trb-corpus validate" if dry_run else "trb-corpus ingest") as con:
                run(con, spill / "staged")
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    report.seconds = time.perf_counter() - started
    return report


def _orjson_default(value):
    return orjson.loads(orjson.dumps(value))  # what orjson can write (dataclasses, dates, ...), as JSON values


def _record_line(record: dict) -> bytes:
    """One record as a JSONL line. A NaN or infinite float is written as the token it is (``NaN``,
    ``Infinity``), not as null, so that the ingest refuses it where it is, as it refuses it in a file."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=_orjson_default).encode() + b"\n"


def ingest_records(corpus: Corpus, batches: Mapping[str, Iterable[dict]], **kw) -> IngestReport:
    """Ingest records made in memory, all or none, in one ingest: ``batches`` maps the name each batch's rows
    record as their source (e.g. "trb-collect study S subject X at T") to its records. Line numbers count
    within a batch. Takes :func:`ingest`'s keyword arguments."""
    corpus.require()
    names: dict[str, str] = {}
    try:
        try:
            for label, recs in batches.items():
                fd, name = tempfile.mkstemp(prefix=".records-", suffix=".jsonl", dir=corpus.dir)
                names[name] = label
                with os.fdopen(fd, "wb") as f:
                    for rec in recs:
                        f.write(_record_line(rec))
        except OSError as e:
            typed = storage_error(e, corpus.db_path)
            if typed is None:
                raise
            raise typed from None
        return ingest(corpus, list(names), names=names, **kw)
    finally:
        for name in names:
            Path(name).unlink(missing_ok=True)


def validate(files: list[str | os.PathLike], corpus: Corpus | None = None, **kw) -> IngestReport:
    """Check ``files`` (against ``corpus`` when given, for references and conflicts) without writing."""
    return ingest(corpus, files, dry_run=True, **kw)
