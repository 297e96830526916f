"""The results store: every run and every item score, in one embedded DuckDB file.

``results.duckdb`` holds a ``runs`` table (one row per ``trb run``: enough to re-run
it, DESIGN.md / STYLE.md 11), an ``item_scores`` table (one row per scored item)
and a ``meta`` table carrying ``results_format_version``.

Access is serialised across processes by an advisory lock on ``<path>.lock``:
writers hold it exclusively, readers shared, and a process that finds the store
busy waits a bounded time (``TRB_LOCK_WAIT`` seconds, default 120), saying on
stderr which pid holds it, instead of crashing into DuckDB's own file lock.
Connections are opened per operation and closed before the lock is released.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from operator import itemgetter
from pathlib import Path

import duckdb
import pyarrow as pa

__all__ = [
    "DEFAULT_PATH",
    "ITEM_SCHEMA",
    "RESULTS_FORMAT_VERSION",
    "ResultsBusy",
    "ResultsError",
    "ResultsStore",
]

#: Version of the tables below; bump when a column changes meaning or type.
RESULTS_FORMAT_VERSION = "1"
DEFAULT_PATH = "results.duckdb"

_RUNS_DDL = """
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY,
    created_at VARCHAR NOT NULL,
    trb_version VARCHAR,
    release_sha VARCHAR,
    release_version VARCHAR,
    release_kind VARCHAR,
    smoke_test BOOLEAN,
    baseline VARCHAR,
    adapter_tier VARCHAR,
    adapter_spec VARCHAR,      -- JSON: everything needed to recreate the adapter
    seed BIGINT,
    tracks VARCHAR[],
    split VARCHAR,
    synthetic_share DOUBLE,
    timings VARCHAR,           -- JSON
    toolkit_version VARCHAR,
    n_items INTEGER
)"""

_ITEMS_DDL = """
CREATE TABLE IF NOT EXISTS item_scores (
    run_id VARCHAR NOT NULL,
    track VARCHAR NOT NULL,     -- '1' or '3'
    metric VARCHAR NOT NULL,    -- 'tv' (score = 1 - TV), 'llr' (log-likelihood ratio), 'attribution' (1 right / 0 wrong)
    item_id VARCHAR NOT NULL,
    session_id VARCHAR NOT NULL,
    t INTEGER,
    split VARCHAR,
    context_id VARCHAR,
    score DOUBLE,
    label VARCHAR,
    predicted VARCHAR,
    belief DOUBLE,
    origin VARCHAR,
    adversarial BOOLEAN,
    ood BOOLEAN,
    detail VARCHAR              -- JSON
)"""

#: The columns of ``item_scores``, as Arrow types: what ``record_run`` accepts.
ITEM_SCHEMA = pa.schema([
    ("run_id", pa.string()), ("track", pa.string()), ("metric", pa.string()), ("item_id", pa.string()),
    ("session_id", pa.string()), ("t", pa.int32()), ("split", pa.string()), ("context_id", pa.string()),
    ("score", pa.float64()), ("label", pa.string()), ("predicted", pa.string()), ("belief", pa.float64()),
    ("origin", pa.string()), ("adversarial", pa.bool_()), ("ood", pa.bool_()), ("detail", pa.string()),
])

_RUN_COLUMNS = ("run_id", "created_at", "trb_version", "release_sha", "release_version", "release_kind",
                "smoke_test", "baseline", "adapter_tier", "adapter_spec", "seed", "tracks", "split",
                "synthetic_share", "timings", "toolkit_version", "n_items")
_JSON_RUN_COLUMNS = ("adapter_spec", "timings")

_WAIT_SECONDS = float(os.environ.get("TRB_LOCK_WAIT", "120"))


class ResultsError(Exception):
    """A results store cannot do what was asked: not a store, a bad query, a bad run record."""


class ResultsBusy(ResultsError):
    """Another process held the store for longer than the bounded wait."""


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@contextmanager
def _locked(path: Path, *, exclusive: bool, wait_seconds: float, purpose: str) -> Iterator[None]:
    """Hold ``<path>.lock`` (flock) for the block; wait at most ``wait_seconds``, naming the holder."""
    lock = path.with_name(path.name + ".lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    deadline = time.monotonic() + wait_seconds
    announced = False
    try:
        while True:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                try:
                    info = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
                except ValueError:
                    info = {}
                holder = (f"pid {info['pid']} on {info.get('host')} ({info.get('purpose')})" if info.get("pid")
                          else "another process (reading)")
                if time.monotonic() >= deadline:
                    raise ResultsBusy(f"results store {path} is still in use by {holder} after {wait_seconds:g} s; "
                                      "nothing was changed (retry later, or raise TRB_LOCK_WAIT)") from None
                if not announced:
                    _stderr(f"results store {path} is in use by {holder}; waiting up to {wait_seconds:g} s")
                    announced = True
                time.sleep(0.05)
        if exclusive:
            info = {"pid": os.getpid(), "host": socket.gethostname(), "purpose": purpose, "since": time.time()}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)
        try:
            yield
        finally:
            if exclusive:
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _json_text(value) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def _json_value(text):
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def _toolkit_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("trb-toolkit")
    except Exception:  # not installed as a distribution (a bare checkout)
        return None


#: The item columns a caller's rows carry (``run_id`` is the run's own, filled in after).
_ROW_SCHEMA = pa.schema([f for f in ITEM_SCHEMA if f.name != "run_id"])


def _rows_table(rows: list[dict]) -> pa.Table:
    """Item rows (dicts) as an Arrow table of ``_ROW_SCHEMA``, built column by column.

    Each column is gathered with ``map(itemgetter)`` (no Python loop per row; ``.get``
    only for a column some row leaves out) and converted by Arrow. A ``detail`` that is
    not already text is stored as JSON. Raises ResultsError for a column item_scores
    lacks, or a value that does not fit its column (named).
    """
    unknown = sorted(set().union(*rows) - set(ITEM_SCHEMA.names))
    if unknown:
        raise ResultsError(f"item_scores has no column(s) {', '.join(unknown)}")
    arrays = []
    for field in _ROW_SCHEMA:
        try:
            values = list(map(itemgetter(field.name), rows))
        except KeyError:  # some row leaves the column out: NULL there
            values = [r.get(field.name) for r in rows]
        if field.name == "detail" and not set(map(type, values)) <= {str, type(None)}:
            values = [_json_text(v) for v in values]
        try:
            arrays.append(pa.array(values, type=field.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as e:
            raise ResultsError(f"item rows do not fit item_scores: column {field.name} ({field.type}): {e}") from None
    return pa.Table.from_arrays(arrays, schema=_ROW_SCHEMA)


def _items_table(items, run_id: str) -> pa.Table:
    """``items`` as an Arrow table with exactly ITEM_SCHEMA, ``run_id`` filled in."""
    if isinstance(items, pa.Table):
        table = items
    else:
        table = _rows_table(items if isinstance(items, list) else list(items))
    unknown = sorted(set(table.column_names) - set(ITEM_SCHEMA.names))
    if unknown:
        raise ResultsError(f"item_scores has no column(s) {', '.join(unknown)}")
    n = table.num_rows
    arrays = []
    for field in ITEM_SCHEMA:
        if field.name == "run_id":
            arrays.append(pa.array([run_id] * n, type=pa.string()) if n else pa.array([], type=pa.string()))
        elif field.name in table.column_names:
            col = table.column(field.name)
            try:
                arrays.append(col.cast(field.type) if col.type != field.type else col)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                raise ResultsError(f"item column {field.name} ({col.type}) cannot be stored as {field.type}: {e}") from None
        else:
            arrays.append(pa.nulls(n, type=field.type))
    return pa.Table.from_arrays(arrays, schema=ITEM_SCHEMA)


def _to_arrow(rel: duckdb.DuckDBPyRelation) -> pa.Table:
    fetch = getattr(rel, "to_arrow_table", None) or rel.arrow  # duckdb >= 1.4 / older
    return fetch()


class ResultsStore:
    """One ``results.duckdb`` file: ``ResultsStore(path).record_run(run, items)``, ``.runs()``, ``.items(id)``.

    Raises (from every method):
        ResultsError: the file is not a results store, or is of a newer format.
        ResultsBusy: another process held the store past the bounded wait.
    """

    def __init__(self, path: str | os.PathLike = DEFAULT_PATH, *, wait_seconds: float | None = None):
        self.path = Path(path)
        self.wait_seconds = _WAIT_SECONDS if wait_seconds is None else float(wait_seconds)
        if self.path.is_dir():
            raise ResultsError(f"{self.path} is a directory, not a results store file")
        if not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with _locked(self.path, exclusive=True, wait_seconds=self.wait_seconds, purpose="create results store"):
                if not self.path.exists():
                    self._create()
        with self._connect(write=False, purpose="open results store") as con:
            self._check(con)

    # -- connection handling -------------------------------------------------------------------------

    def _create(self) -> None:
        """Make the tables in a scratch file, then rename it into place: a half-made store is never visible."""
        tmp = self.path.with_name(f".{self.path.name}.init-{os.getpid()}")
        tmp.unlink(missing_ok=True)
        try:
            con = duckdb.connect(str(tmp))
            try:
                con.execute(_RUNS_DDL)
                con.execute(_ITEMS_DDL)
                con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
                con.executemany("INSERT INTO meta VALUES (?, ?)", [
                    ("results_format_version", RESULTS_FORMAT_VERSION),
                    ("created_at", datetime.now(timezone.utc).isoformat(timespec="seconds")),
                ])
                con.execute("CHECKPOINT")
            finally:
                con.close()
            os.replace(tmp, self.path)
        except duckdb.Error as e:
            raise ResultsError(f"cannot create results store {self.path}: {e}") from None
        finally:
            tmp.unlink(missing_ok=True)

    @contextmanager
    def _connect(self, *, write: bool, purpose: str) -> Iterator[duckdb.DuckDBPyConnection]:
        with _locked(self.path, exclusive=write, wait_seconds=self.wait_seconds, purpose=purpose):
            try:
                con = duckdb.connect(str(self.path), read_only=not write)
            except duckdb.Error as e:
                raise ResultsError(f"{self.path} is not a results store (DuckDB cannot open it: {e})") from None
            try:
                yield con
            finally:
                con.close()

    def _check(self, con: duckdb.DuckDBPyConnection) -> None:
        tables = {r[0] for r in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'").fetchall()}
        if not {"meta", "runs", "item_scores"} <= tables:
            raise ResultsError(f"{self.path} is a DuckDB file but not a results store "
                               f"(it lacks the {', '.join(sorted({'meta', 'runs', 'item_scores'} - tables))} table(s))")
        rows = con.execute("SELECT value FROM meta WHERE key = 'results_format_version'").fetchall()
        row = rows[0] if rows else None
        if row is None:
            raise ResultsError(f"{self.path} is not a results store (no results_format_version in meta)")
        if row[0] != RESULTS_FORMAT_VERSION:
            raise ResultsError(f"{self.path} has results format {row[0]}; this toolkit reads format "
                               f"{RESULTS_FORMAT_VERSION}")

    # -- writing -------------------------------------------------------------------------------------

    def record_run(self, run: dict, items) -> str:
        """Store one run row and all its item scores in one transaction; return the run id.

        ``run`` carries the ``runs`` columns (missing ones: ``run_id`` a fresh uuid4 hex,
        ``created_at`` now in UTC, ``trb_version``/``toolkit_version`` this toolkit's,
        ``n_items`` the number of items, others NULL); ``adapter_spec`` and ``timings``
        may be dicts (stored as JSON). ``items`` is a ``pyarrow.Table`` or a list of
        dicts with ``item_scores`` columns; ``run_id`` is filled in. Either everything
        is stored or nothing is.

        Raises:
            ResultsError: an unknown column; a value of the wrong type; a missing
                required item field (track, metric, item_id, session_id); an item
                (track, metric, item_id) given twice; a run id already stored.
        """
        unknown = sorted(set(run) - set(_RUN_COLUMNS))
        if unknown:
            raise ResultsError(f"runs has no column(s) {', '.join(unknown)}")
        row = {c: run.get(c) for c in _RUN_COLUMNS}
        row["run_id"] = str(row["run_id"] or uuid.uuid4().hex)
        row["created_at"] = row["created_at"] or datetime.now(timezone.utc).isoformat(timespec="microseconds")
        if row["trb_version"] is None:
            from schemas import TRB_VERSION

            row["trb_version"] = TRB_VERSION
        if row["toolkit_version"] is None:
            row["toolkit_version"] = _toolkit_version()
        for c in _JSON_RUN_COLUMNS:
            row[c] = _json_text(row[c])
        if row["tracks"] is not None:
            row["tracks"] = [str(t) for t in row["tracks"]]
        table = _items_table(items, row["run_id"])
        if row["n_items"] is None:
            row["n_items"] = table.num_rows

        with self._connect(write=True, purpose=f"record run {row['run_id']}") as con:
            self._check(con)
            try:
                con.execute("BEGIN TRANSACTION")
                con.execute(f"INSERT INTO runs ({', '.join(_RUN_COLUMNS)}) VALUES ({', '.join('?' * len(_RUN_COLUMNS))})",
                            [row[c] for c in _RUN_COLUMNS])
                con.register("incoming_items", table)
                dups = con.execute("SELECT track, metric, item_id, count(*) FROM incoming_items "
                                   "GROUP BY ALL HAVING count(*) > 1 LIMIT 1").fetchall()
                if dups:
                    dup = dups[0]
                    raise ResultsError(f"item {dup[2]!r} (track {dup[0]}, metric {dup[1]}) appears {dup[3]} times "
                                       "in one run; nothing was stored")
                con.execute("INSERT INTO item_scores BY NAME SELECT * FROM incoming_items")
                con.execute("COMMIT")
            except BaseException as e:
                try:
                    con.execute("ROLLBACK")
                except duckdb.Error:
                    pass
                if isinstance(e, duckdb.ConstraintException) and "primary key" in str(e).lower():
                    raise ResultsError(f"run {row['run_id']} is already stored; nothing was changed") from None
                if isinstance(e, duckdb.Error):
                    raise ResultsError(f"run {row['run_id']} was not stored: {e}") from None
                raise
            finally:
                try:
                    con.unregister("incoming_items")
                except duckdb.Error:
                    pass
        return row["run_id"]

    # -- reading -------------------------------------------------------------------------------------

    def runs(self, release_sha: str | None = None) -> list[dict]:
        """All runs (on ``release_sha`` if given), oldest first; JSON columns parsed back to objects."""
        sql = f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs"
        params: list = []
        if release_sha is not None:
            sql += " WHERE release_sha = ?"
            params.append(release_sha)
        sql += " ORDER BY created_at, rowid"
        with self._connect(write=False, purpose="read runs") as con:
            rows = con.execute(sql, params).fetchall()
        out = []
        for r in rows:
            d = dict(zip(_RUN_COLUMNS, r))
            for c in _JSON_RUN_COLUMNS:
                d[c] = _json_value(d[c])
            out.append(d)
        return out

    def items(self, run_id: str, track: str | None = None) -> pa.Table:
        """The item scores of one run (of one track if given), in the order they were recorded.

        Raises:
            ResultsError: no run ``run_id`` is stored.
        """
        sql = f"SELECT {', '.join(ITEM_SCHEMA.names)} FROM item_scores WHERE run_id = ?"
        params: list = [run_id]
        if track is not None:
            sql += " AND track = ?"
            params.append(str(track))
        sql += " ORDER BY rowid"
        with self._connect(write=False, purpose="read item scores") as con:
            if not con.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).fetchall():
                raise ResultsError(f"no run {run_id!r} in {self.path}")
            table = _to_arrow(con.sql(sql, params=params))
        return table.cast(ITEM_SCHEMA) if table.schema != ITEM_SCHEMA else table

    def query(self, sql: str) -> tuple[list[str], list[tuple]]:
        """Run ``sql`` on a read-only connection to the store: (column names, rows).

        Writes to the store fail (the connection is read-only). A statement that
        returns no result set gives ``([], [])``.

        Raises:
            ResultsError: DuckDB rejected the query (its message, without a traceback).
        """
        with self._connect(write=False, purpose="query") as con:
            try:
                cur = con.execute(sql)
                if cur.description is None:
                    return [], []
                columns = [d[0] for d in cur.description]
                return columns, [tuple(r) for r in cur.fetchall()]
            except duckdb.Error as e:
                raise ResultsError(str(e)) from None
