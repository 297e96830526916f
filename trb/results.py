"""The results store: every run and every item score, in one embedded DuckDB file.

``results.duckdb`` holds a ``runs`` table (one row per ``trb run``: enough to re-run
it, DESIGN.md / STYLE.md 11), an ``item_scores`` table (one row per scored item)
and a ``meta`` table carrying ``results_format_version``.

Access is serialised across processes by an advisory lock on ``<path>.lock``:
writers hold it exclusively, readers shared, and a process that finds the store
busy waits a bounded time (``TRB_LOCK_WAIT`` seconds, default 120), saying on
stderr which pid holds it, instead of crashing into DuckDB's own file lock.
Connections are opened per operation and closed before the lock is released.

Every read-only connection is sandboxed (:mod:`toolkit.sql_sandbox`): ``trb query``'s SQL, and
any other read, reaches the store and nothing else on the machine: no file read or written, no
extension, no network, and no ``SET`` / ``RESET`` that undoes it. A user's SQL is one statement that only reads,
and runs under a time and a memory limit (:mod:`toolkit.sql_limits`). A store that does not exist is
an error for every reader; only a writer (:meth:`ResultsStore.record_run`, or ``create=True``)
makes one.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from operator import itemgetter
from pathlib import Path

import duckdb
import pyarrow as pa

from schemas.versions import TOOLKIT_VERSION, TRB_VERSION
from toolkit.errors import ExitCode, ToolkitError, UsageError
from toolkit.locking import DEFAULT_WAIT_SECONDS, FileLock, LockHolder, default_wait_seconds
from toolkit.sql_limits import QueryLimits, QueryStopped, fetch_limited, query_limits
from toolkit.sql_sandbox import SANDBOX_CONFIG, error_line, single_statement
from trb import duck

__all__ = [
    "DEFAULT_PATH",
    "ITEM_SCHEMA",
    "RESULTS_FORMAT_VERSION",
    "ResultsBusy",
    "ResultsError",
    "ResultsStore",
]

#: Version of the tables below; bump when a column changes meaning or type. A store of
#: format 1 (no ``runs.release_dir``) or 2 (no ``runs.status``, no ``run_parts``) is upgraded in place the first
#: time it is written; its runs were all recorded whole, so they read as complete.
RESULTS_FORMAT_VERSION = "3"
_UPGRADABLE = ("1", "2")
DEFAULT_PATH = "results.duckdb"

#: ``runs``: one row per ``trb run``, enough to re-create it (STYLE.md 11): column, DuckDB type.
_RUNS_COLUMNS_SQL = (
    ("run_id", "VARCHAR PRIMARY KEY"),
    ("created_at", "VARCHAR NOT NULL"),
    ("trb_version", "VARCHAR"),
    ("release_sha", "VARCHAR"),
    ("release_version", "VARCHAR"),
    ("release_kind", "VARCHAR"),
    ("smoke_test", "BOOLEAN"),
    ("baseline", "VARCHAR"),
    ("adapter_tier", "VARCHAR"),
    ("adapter_spec", "VARCHAR"),      # JSON: the adapter's own spec + adapter/model/options to re-create it
    ("seed", "BIGINT"),
    ("tracks", "VARCHAR[]"),
    ("split", "VARCHAR"),
    ("synthetic_share", "DOUBLE"),
    ("timings", "VARCHAR"),           # JSON: wall/adapter seconds, per-track summaries, not-applicable tracks
    ("toolkit_version", "VARCHAR"),
    ("n_items", "INTEGER"),
    ("release_dir", "VARCHAR"),       # where the release was read from (trb rerun's default)
    ("taskset_sha", "VARCHAR"),       # the rollout task set's content SHA (Tracks 4 and 5), else NULL
    ("taskset", "VARCHAR"),           # JSON: that task set's name, version, source, seeds, greedy
    ("trained_by", "VARCHAR[]"),      # who trained the model (--trained-by, the adapter spec's trained_by), else NULL
    ("status", "VARCHAR"),            # 'running' while its parts are written, 'complete' once finished (NULL: complete)
)
#: The run states of ``runs.status``: a run is a result only once it is complete.
RUNNING, COMPLETE = "running", "complete"
_RUNS_DDL = "CREATE TABLE IF NOT EXISTS runs (\n    " + ",\n    ".join(f"{c} {t}" for c, t in _RUNS_COLUMNS_SQL) + "\n)"
#: ``run_parts``: one row per part of a run whose item scores are stored (:mod:`trb.parts`): written in the same
#: transaction as the part's item rows, so a part is stored whole or not at all, and once.
_PARTS_DDL = """CREATE TABLE IF NOT EXISTS run_parts (
    run_id VARCHAR NOT NULL,
    track VARCHAR NOT NULL,
    part INTEGER NOT NULL,
    first_key VARCHAR NOT NULL,
    n_input INTEGER NOT NULL,
    n_rows INTEGER NOT NULL,
    summary VARCHAR,
    timings VARCHAR,
    PRIMARY KEY (run_id, track, part)
)"""


def _item_columns():
    """``item_scores``' columns after ``run_id``, from the track registry (common, per-track, detail)."""
    from trb.tracks.base import item_columns

    return item_columns()


def _items_ddl() -> str:
    cols = ["run_id VARCHAR NOT NULL"] + [f"{c.name} {c.sql}" for c in _item_columns()]
    return "CREATE TABLE IF NOT EXISTS item_scores (\n    " + ",\n    ".join(cols) + "\n)"


def _item_schema() -> pa.Schema:
    return pa.schema([("run_id", pa.string())] + [(c.name, c.arrow) for c in _item_columns()])


#: The columns of ``item_scores``, as Arrow types: what ``record_run`` accepts (derived from the track registry).
ITEM_SCHEMA = _item_schema()

_RUN_COLUMNS = tuple(c for c, _ in _RUNS_COLUMNS_SQL)
_JSON_RUN_COLUMNS = ("adapter_spec", "timings", "taskset")
#: Columns of the store that hold JSON text (decoded by :meth:`ResultsStore.query_records`).
JSON_COLUMNS = ("detail",) + _JSON_RUN_COLUMNS

_WAIT_SECONDS = DEFAULT_WAIT_SECONDS


class ResultsError(ToolkitError):
    """A results store cannot do what was asked: not a store, a bad query, a bad run record."""

    exit_code = ExitCode.RESULTS


class ResultsBusy(ResultsError):
    """Another process held the store for longer than the bounded wait."""

    exit_code = ExitCode.BUSY


def _describe_holder(holder: LockHolder) -> str:
    return "another process (reading)" if holder.reading else f"pid {holder.pid} on {holder.host} ({holder.purpose})"


@contextmanager
def _locked(path: Path, *, exclusive: bool, wait_seconds: float, purpose: str) -> Iterator[None]:
    """Hold ``<path>.lock`` (:mod:`toolkit.locking`) for the block; wait at most ``wait_seconds``, naming the holder."""
    with FileLock(path.with_name(path.name + ".lock"), exclusive=exclusive, what=f"results store {path}",
                  busy=ResultsBusy, wait_seconds=wait_seconds, purpose=purpose, describe=_describe_holder):
        yield


def _json_text(value) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def _json_value(text):
    if text is None:
        return None
    try:
        # not strict_json: JSON the results store holds was written by ResultsStore itself (json.dumps of a run's figures)
        return json.loads(text)
    except ValueError:
        return text


#: The item columns a caller's rows carry (``run_id`` is the run's own, filled in after).
_ROW_SCHEMA = pa.schema([f for f in ITEM_SCHEMA if f.name != "run_id"])


def rows_table(rows: list[dict]) -> pa.Table:
    """Item rows (dicts) as an Arrow table of ``_ROW_SCHEMA``, built column by column.

    Each column is gathered with ``map(itemgetter)`` (no Python loop per row; ``.get``
    only for a column some row leaves out; a column no row has is all NULL, made by Arrow
    at once: the rows of one track leave out every other track's columns) and converted by
    Arrow. A ``detail`` that is not already text is stored as JSON. Raises ResultsError for
    a column item_scores lacks, or a value that does not fit its column (named).
    """
    present = set().union(*rows)
    unknown = sorted(present - set(ITEM_SCHEMA.names))
    if unknown:
        raise ResultsError(f"item_scores has no column(s) {', '.join(unknown)}")
    arrays = []
    for field in _ROW_SCHEMA:
        name = field.name  # read once: a pyarrow Field makes a new str each time its name is read
        if name not in present:
            arrays.append(pa.nulls(len(rows), type=field.type))
            continue
        try:
            values = list(map(itemgetter(name), rows))
        except KeyError:  # some row leaves the column out: NULL there
            values = [r.get(name) for r in rows]
        if name == "detail" and not set(map(type, values)) <= {str, type(None)}:
            values = [_json_text(v) for v in values]
        try:
            arrays.append(pa.array(values, type=field.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as e:
            raise ResultsError(f"item rows do not fit item_scores: column {name} ({field.type}): {e}") from None
    return pa.Table.from_arrays(arrays, schema=_ROW_SCHEMA)


def _items_table(items, run_id: str) -> pa.Table:
    """``items`` as an Arrow table with exactly ITEM_SCHEMA, ``run_id`` filled in."""
    if isinstance(items, pa.Table):
        table = items
    else:
        table = rows_table(items if isinstance(items, list) else list(items))
    n = table.num_rows
    run_ids = pa.array([run_id] * n, type=pa.string()) if n else pa.array([], type=pa.string())
    if table.schema == _ROW_SCHEMA:  # what rows_table makes: every column there, in order, of its type
        return pa.Table.from_arrays([run_ids, *table.columns], schema=ITEM_SCHEMA)
    have = set(table.column_names)  # read once: a pyarrow table makes a new list each time they are read
    unknown = sorted(have - set(ITEM_SCHEMA.names))
    if unknown:
        raise ResultsError(f"item_scores has no column(s) {', '.join(unknown)}")
    arrays = []
    for field in ITEM_SCHEMA:
        name = field.name
        if name == "run_id":
            arrays.append(run_ids)
        elif name in have:
            col = table.column(name)
            try:
                arrays.append(col.cast(field.type) if col.type != field.type else col)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                raise ResultsError(f"item column {name} ({col.type}) cannot be stored as {field.type}: {e}") from None
        else:
            arrays.append(pa.nulls(n, type=field.type))
    return pa.Table.from_arrays(arrays, schema=ITEM_SCHEMA)


def _run_row(run: dict) -> dict:
    """A ``runs`` row from ``run``: unknown columns refused, defaults filled (id, time, versions), JSON as text."""
    unknown = sorted(set(run) - set(_RUN_COLUMNS))
    if unknown:
        raise ResultsError(f"runs has no column(s) {', '.join(unknown)}")
    row = {c: run.get(c) for c in _RUN_COLUMNS}
    row["run_id"] = str(row["run_id"] or uuid.uuid4().hex)
    row["created_at"] = row["created_at"] or datetime.now(timezone.utc).isoformat(timespec="microseconds")
    if row["trb_version"] is None:
        row["trb_version"] = TRB_VERSION
    if row["toolkit_version"] is None:
        row["toolkit_version"] = TOOLKIT_VERSION
    for c in _JSON_RUN_COLUMNS:
        row[c] = _json_text(row[c])
    if row["tracks"] is not None:
        row["tracks"] = [str(t) for t in row["tracks"]]
    return row


def _remove_dead_scratch(path: Path) -> None:
    """Remove the scratch files (``.NAME.init-PID-*``, and DuckDB's ``.wal`` beside them) that a process killed while
    it made the store at ``path`` left behind, once that process is gone. The caller holds the exclusive lock."""
    prefix = f".{path.name}.init-"
    for p in path.parent.glob(f"{prefix}*"):
        pid = p.name[len(prefix):].split("-", 1)[0].split(".", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                p.unlink(missing_ok=True)
            except PermissionError:
                pass


#: A read-only connection's settings: the sandbox, and results in the table's row order (DuckDB's default, set
#: here because :meth:`ResultsStore.items` relies on it for the order items were recorded in).
_READ_CONFIG: dict = {"preserve_insertion_order": True, **SANDBOX_CONFIG}


def _to_arrow(rel: duckdb.DuckDBPyRelation) -> pa.Table:
    fetch = getattr(rel, "to_arrow_table", None) or rel.arrow  # duckdb >= 1.4 / older
    return fetch()


class ResultsStore:
    """One ``results.duckdb`` file: ``ResultsStore(path).record_run(run, items)``, ``.runs()``, ``.items(id)``.

    Raises (from every method):
        ResultsError: the file is not a results store, or is of a newer format.
        ResultsBusy: another process held the store past the bounded wait.
    """

    def __init__(self, path: str | os.PathLike = DEFAULT_PATH, *, wait_seconds: float | None = None,
                 create: bool = True):
        """Open the store at ``path``; a missing one is made empty now (``create``) or by the first :meth:`record_run`.

        ``create=False`` is for a writer about to record a run (what ``trb run`` does): the
        new file is then made, filled and renamed into place by one DuckDB instance. Reading
        a store that does not exist yet raises :class:`ResultsError`; a command that only reads passes
        ``create=False`` too (and :meth:`require` says so at once), so a mistyped path is never made.
        """
        self.path = Path(path)
        self.wait_seconds = default_wait_seconds() if wait_seconds is None else float(wait_seconds)
        self._held: duckdb.DuckDBPyConnection | None = None  # the read connection :meth:`reading` holds
        if self.path.is_dir():
            raise ResultsError(f"{self.path} is a directory, not a results store file")
        if not self.path.exists():
            if not create:
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with _locked(self.path, exclusive=True, wait_seconds=self.wait_seconds, purpose="create results store"):
                if not self.path.exists():
                    self._create()
                    return  # just made here, in the current format: nothing to check
        with self._connect(write=False, purpose="open results store") as con:
            self._check(con)

    # -- connection handling -------------------------------------------------------------------------

    def _create(self, fill=None, *, failed: str | None = None) -> None:
        """Make the tables in a scratch file (and ``fill(con)`` it, in the same transaction), then rename it into
        place: a half-made store is never visible. The caller holds the exclusive lock."""
        _remove_dead_scratch(self.path)
        tmp = self.path.with_name(f".{self.path.name}.init-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        tmp.unlink(missing_ok=True)
        try:
            con = duck.attach(tmp)  # a new file on the process's DuckDB instance (no instance of its own to start)
            try:
                con.execute("BEGIN TRANSACTION")
                con.execute(_RUNS_DDL)
                con.execute(_items_ddl())
                con.execute(_PARTS_DDL)
                con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
                con.executemany("INSERT INTO meta VALUES (?, ?)", [
                    ("results_format_version", RESULTS_FORMAT_VERSION),
                    ("created_at", datetime.now(timezone.utc).isoformat(timespec="seconds")),
                ])
                if fill is not None:
                    fill(con)
                con.execute("COMMIT")
            finally:
                duck.detach(con)  # writes the file out and closes it
            os.replace(tmp, self.path)
        except duckdb.Error as e:
            raise ResultsError(f"{failed or f'cannot create results store {self.path}'}: {e}") from None
        finally:
            tmp.unlink(missing_ok=True)

    @contextmanager
    def reading(self, purpose: str = "read results") -> Iterator[ResultsStore]:
        """Hold one read-only connection, and the shared lock, while many reads are made (every read in the block
        uses it): opening one per read costs 10-20 ms, which a run's figures (hundreds of column reads) pay
        hundreds of times. Writers wait for the block's end, as for any reader. One thread at a time."""
        if self._held is not None:
            yield self
            return
        with self._connect(write=False, purpose=purpose) as con:
            self._held = con
            try:
                yield self
            finally:
                self._held = None

    @contextmanager
    def _connect(self, *, write: bool, purpose: str, config: dict | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection under the lock; a read-only one with ``config`` added to its settings, unless one is held
        (:meth:`reading`), which is used as it is."""
        self._require()
        if not write and self._held is not None:
            yield self._held
            return
        with _locked(self.path, exclusive=write, wait_seconds=self.wait_seconds, purpose=purpose):
            with self._open(write=write, config=config) as con:
                yield con

    def _require(self) -> None:
        if not self.path.exists():
            raise ResultsError(f"no results store at {self.path} (`trb run --results {self.path}` makes one)")

    def require(self) -> ResultsStore:
        """``self``, if the store exists; else :class:`ResultsError` naming the path (for a command that only reads)."""
        self._require()
        return self

    @contextmanager
    def _open(self, *, write: bool, config: dict | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection to the store (the caller holds the lock); a read-only one is sandboxed (module docstring)."""
        self._require()
        try:
            # a writer attaches the file to the process's DuckDB instance (:mod:`trb.duck`: about 1.5 ms, where
            # starting an instance of its own costs 35-100 ms); the exclusive lock keeps every other opening out
            con = (duck.attach(self.path) if write
                   else duckdb.connect(str(self.path), read_only=True, config={**_READ_CONFIG, **(config or {})}))
        except duckdb.Error as e:
            raise ResultsError(f"{self.path} is not a results store (DuckDB cannot open it: {error_line(e)})") from None
        try:
            yield con
        finally:
            if write:
                duck.detach(con)  # written out (checkpointed) and closed before the lock is let go
            else:
                con.close()

    def _check(self, con: duckdb.DuckDBPyConnection) -> str:
        """The store's format version, once its tables and version are checked (ResultsError otherwise)."""
        tables = {r[0] for r in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
            "AND table_catalog = current_database()").fetchall()}
        if not {"meta", "runs", "item_scores"} <= tables:
            raise ResultsError(f"{self.path} is a DuckDB file but not a results store "
                               f"(it lacks the {', '.join(sorted({'meta', 'runs', 'item_scores'} - tables))} table(s))")
        rows = con.execute("SELECT value FROM meta WHERE key = 'results_format_version'").fetchall()
        row = rows[0] if rows else None
        if row is None:
            raise ResultsError(f"{self.path} is not a results store (no results_format_version in meta)")
        if row[0] != RESULTS_FORMAT_VERSION and row[0] not in _UPGRADABLE:
            raise ResultsError(f"{self.path} has results format {row[0]}; this toolkit reads format "
                               f"{RESULTS_FORMAT_VERSION}")
        return row[0]

    def _missing_columns(self, con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str]]:
        """(table, column, type) that the store lacks: an older format, or a newly registered track's columns."""
        have = {(t, c) for t, c in con.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'main' "
            "AND table_catalog = current_database()").fetchall()}
        want = [("runs", c, t.replace(" PRIMARY KEY", "").replace(" NOT NULL", "")) for c, t in _RUNS_COLUMNS_SQL]
        want += [("item_scores", c.name, c.sql.replace(" NOT NULL", "")) for c in _item_columns()]
        return [w for w in want if (w[0], w[1]) not in have]

    def _upgrade(self, con: duckdb.DuckDBPyConnection, version: str) -> None:
        """Add what a store of format ``version`` lacks (in the caller's transaction) and stamp the current format;
        a current store with every registered track's columns is left as it is (nothing written)."""
        missing = self._missing_columns(con)
        if version == RESULTS_FORMAT_VERSION and not missing:
            return
        for table, column, sql_type in missing:
            con.execute(f"ALTER TABLE {table} ADD COLUMN {column} {sql_type}")
        con.execute(_PARTS_DDL)
        con.execute("UPDATE meta SET value = ? WHERE key = 'results_format_version'", [RESULTS_FORMAT_VERSION])

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
        row = _run_row(run)
        table = _items_table(items, row["run_id"])
        if row["n_items"] is None:
            row["n_items"] = table.num_rows
        row["status"] = row["status"] or COMPLETE

        return self._store_run_row(row, table, purpose=f"record run {row['run_id']}")

    def _store_run_row(self, row: dict, table: pa.Table, *, purpose: str) -> str:
        """The run ``row`` and its item ``table`` in one transaction, under the exclusive lock; a new store is made,
        filled and renamed into place by one DuckDB instance. Returns the run id."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _locked(self.path, exclusive=True, wait_seconds=self.wait_seconds, purpose=purpose):
            if not self.path.exists():
                self._create(lambda con: self._insert(con, row, table), failed=f"run {row['run_id']} was not stored")
            else:
                self._write(row, table)
        return row["run_id"]

    def _write(self, row: dict, table: pa.Table, work=None) -> None:
        """``work(con)`` (default: insert the run ``row`` and its items ``table``) in one transaction on the
        existing store (the caller holds the exclusive lock), upgrading an older store first."""
        with self._open(write=True) as con:
            version = self._check(con)
            try:
                con.execute("BEGIN TRANSACTION")
                self._upgrade(con, version)
                if work is None:
                    self._insert(con, row, table)
                else:
                    work(con)
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

    # -- a run written part by part (trb.run, trb.runners) --------------------------------------------

    def begin_run(self, run: dict) -> str:
        """Store the row of a run about to be scored part by part, as ``running`` with no items; return its id.

        ``run`` is as for :meth:`record_run`. Its parts are then stored with :meth:`record_parts` as they are
        made, and :meth:`finish_run` marks it complete. Until then no reader shows it as a result
        (:meth:`runs` leaves it out; :meth:`unfinished_runs` lists it), and ``trb run --resume`` scores only
        its missing parts.
        """
        row = _run_row(run)
        row["n_items"] = row["n_items"] or 0
        row["status"] = RUNNING
        return self._store_run_row(row, _items_table([], row["run_id"]), purpose=f"begin run {row['run_id']}")

    def record_parts(self, run_id: str, parts: list[dict]) -> int:
        """Store parts of running run ``run_id``, each a dict of ``track``, ``part`` (its index), ``first_key``,
        ``n_input``, ``items`` (list of item-row dicts or Arrow table), ``summary`` and ``timings``: their item rows
        and ``run_parts`` rows, all in one transaction. A part already stored is left as it is (a retried worker's
        second copy). Returns how many were stored now.

        Raises:
            ResultsError: no such run, or it is not running; an item given twice in a part; a bad row.
        """
        tables = [_items_table(p["items"], run_id) for p in parts]

        def work(con) -> None:
            stored.append(self._insert_parts(con, run_id, parts, tables))

        stored: list[int] = []
        if not parts:
            return 0
        with _locked(self.path, exclusive=True, wait_seconds=self.wait_seconds,
                     purpose=f"record {len(parts)} part(s) of run {run_id}"):
            self._write({"run_id": run_id}, tables[0], work)
        return stored[0]

    def _insert_parts(self, con, run_id: str, parts: list[dict], tables: list[pa.Table]) -> int:
        """``parts`` (with their item tables) of running run ``run_id``, in the caller's transaction; a part
        stored already is skipped. Returns how many were stored."""
        state = con.execute("SELECT status FROM runs WHERE run_id = ?", [run_id]).fetchall()
        if not state:
            raise ResultsError(f"no run {run_id!r} in {self.path}")
        if state[0][0] != RUNNING:
            raise ResultsError(f"run {run_id} is {state[0][0] or COMPLETE}: no part can be added to it")
        if not parts:
            return 0
        have = {(t, int(i)) for t, i in con.execute("SELECT track, part FROM run_parts WHERE run_id = ?",
                                                    [run_id]).fetchall()}
        rows, new = [], []
        for p, table in zip(parts, tables):
            key = (str(p["track"]), int(p["part"]))
            if key in have:
                continue
            have.add(key)
            rows.append([run_id, key[0], key[1], str(p["first_key"]), int(p["n_input"]), table.num_rows,
                         _json_text(p["summary"]), _json_text(p["timings"])])
            new.append(table)
        if rows:
            names = ("run_id", "track", "part", "first_key", "n_input", "n_rows", "summary", "timings")
            con.register("incoming_parts", pa.table(dict(zip(names, map(list, zip(*rows))))))
            try:  # one statement (executemany runs one per row)
                con.execute(f"INSERT INTO run_parts ({', '.join(names)}) SELECT {', '.join(names)} FROM incoming_parts")
            finally:
                try:
                    con.unregister("incoming_parts")
                except duckdb.Error:  # refused in a failed transaction: the caller's error is the one to report
                    pass
            self._insert_items(con, pa.concat_tables(new))
        return len(rows)

    def parts(self, run_id: str) -> list[dict]:
        """The stored parts of run ``run_id``: dicts of ``run_parts``' columns (JSON decoded), by track and part."""
        with self._connect(write=False, purpose="read run parts") as con:
            if not self._has_table(con, "run_parts"):
                return []
            cur = con.execute("SELECT * FROM run_parts WHERE run_id = ? ORDER BY track, part", [run_id])
            names = [d[0] for d in cur.description]
            rows = [dict(zip(names, r)) for r in cur.fetchall()]
        for r in rows:
            r["summary"], r["timings"] = _json_value(r["summary"]), _json_value(r["timings"])
        return rows

    def finish_run(self, run_id: str, *, timings: dict, n_items: int, parts: list[dict] | None = None) -> None:
        """Mark running run ``run_id`` complete, with its final ``timings`` and item count, storing its last
        ``parts`` (as for :meth:`record_parts`) in the same transaction.

        Raises:
            ResultsError: no such running run; its stored items are not ``n_items``; an item (track, metric,
                item_id) stored twice. Nothing is changed then.
        """
        parts = parts or []
        tables = [_items_table(p["items"], run_id) for p in parts]

        def work(con) -> None:
            state = con.execute("SELECT status FROM runs WHERE run_id = ?", [run_id]).fetchall()
            if not state or state[0][0] != RUNNING:
                raise ResultsError(f"run {run_id} is not a running run in {self.path}")
            self._insert_parts(con, run_id, parts, tables)
            dups = con.execute("SELECT track, metric, item_id, count(*) FROM item_scores WHERE run_id = ? "
                               "GROUP BY ALL HAVING count(*) > 1 LIMIT 1", [run_id]).fetchall()
            if dups:
                d = dups[0]
                raise ResultsError(f"run {run_id}: item {d[2]!r} (track {d[0]}, metric {d[1]}) is stored {d[3]} "
                                   "times; the run is left unfinished")
            have = con.execute("SELECT count(*) FROM item_scores WHERE run_id = ?", [run_id]).fetchone()[0]
            if have != n_items:
                raise ResultsError(f"run {run_id}: {have} item scores are stored, its parts say {n_items}; "
                                   "the run is left unfinished")
            con.execute("UPDATE runs SET status = ?, timings = ?, n_items = ? WHERE run_id = ?",
                        [COMPLETE, _json_text(timings), int(n_items), run_id])

        with _locked(self.path, exclusive=True, wait_seconds=self.wait_seconds, purpose=f"finish run {run_id}"):
            self._require()
            self._write({"run_id": run_id}, _items_table([], run_id), work)

    def unfinished_runs(self) -> list[dict]:
        """The runs still ``running`` (killed, or being scored now), oldest first, each with ``n_stored``: the
        item scores stored so far. No reader shows them as results."""
        runs = self._runs("WHERE status = ?", [RUNNING])
        if runs:
            with self._connect(write=False, purpose="count stored items") as con:
                counts = dict(con.execute("SELECT run_id, count(*) FROM item_scores WHERE run_id IN "
                                          "(SELECT run_id FROM runs WHERE status = ?) GROUP BY run_id",
                                          [RUNNING]).fetchall())
            for r in runs:
                r["n_stored"] = int(counts.get(r["run_id"], 0))
        return runs

    def run(self, run_id: str) -> dict:
        """The row of run ``run_id`` (a unique prefix of 8+ characters will do), whatever its status.

        Raises:
            ResultsError: no such run, or the prefix names several.
        """
        runs = [r for r in self._runs("", []) if r["run_id"] == run_id
                or (len(run_id) >= 8 and str(r["run_id"]).startswith(run_id))]
        if len(runs) != 1:
            raise ResultsError(f"{'no' if not runs else 'more than one'} run {run_id!r} in {self.path}")
        return runs[0]

    @staticmethod
    def _has_table(con, name: str) -> bool:
        return bool(con.execute("SELECT 1 FROM information_schema.tables WHERE table_schema = 'main' "
                                "AND table_catalog = current_database() AND table_name = ?", [name]).fetchall())

    @classmethod
    def _insert(cls, con: duckdb.DuckDBPyConnection, row: dict, table: pa.Table) -> None:
        """The run row and its item rows, in the caller's transaction (refusing an item given twice)."""
        con.execute(f"INSERT INTO runs ({', '.join(_RUN_COLUMNS)}) VALUES ({', '.join('?' * len(_RUN_COLUMNS))})",
                    [row[c] for c in _RUN_COLUMNS])
        cls._insert_items(con, table)

    @staticmethod
    def _insert_items(con: duckdb.DuckDBPyConnection, table: pa.Table) -> None:
        """Item rows, in the caller's transaction (refusing an item given twice among them)."""
        if table.num_rows == 0:
            return
        con.register("incoming_items", table)
        try:
            dups = con.execute("SELECT track, metric, item_id, count(*) FROM incoming_items "
                               "GROUP BY ALL HAVING count(*) > 1 LIMIT 1").fetchall()
            if dups:
                dup = dups[0]
                raise ResultsError(f"item {dup[2]!r} (track {dup[0]}, metric {dup[1]}) appears {dup[3]} times "
                                   "in one run; nothing was stored")
            con.execute("INSERT INTO item_scores BY NAME SELECT * FROM incoming_items")
        finally:
            try:
                con.unregister("incoming_items")
            except duckdb.Error:  # refused in a failed transaction: the caller's error is the one to report
                pass

    # -- reading -------------------------------------------------------------------------------------

    def runs(self, release_sha: str | None = None) -> list[dict]:
        """All complete runs (on ``release_sha`` if given), oldest first; JSON columns parsed back to objects.

        A run still being scored, or killed before it finished, is not a result: it is left out here (see
        :meth:`unfinished_runs`)."""
        where, params = f"WHERE (status IS NULL OR status = '{COMPLETE}')", []
        if release_sha is not None:
            where += " AND release_sha = ?"
            params.append(release_sha)
        return self._runs(where, params)

    def _runs(self, where: str, params: list) -> list[dict]:
        with self._connect(write=False, purpose="read runs") as con:
            cols = self._select(con, "runs", _RUN_COLUMNS)
            if "status" not in cols:  # an older store: every run was recorded whole
                where = where.replace("status", "CAST(NULL AS VARCHAR)")
            sql = f"SELECT {', '.join(cols)} FROM runs {where} ORDER BY created_at, rowid"
            rows = con.execute(sql, params).fetchall()
        out = []
        for r in rows:
            d = dict(zip(_RUN_COLUMNS, r))
            for c in _JSON_RUN_COLUMNS:
                d[c] = _json_value(d[c])
            out.append(d)
        return out

    def items(self, run_id: str, track: str | None = None, columns: list[str] | None = None) -> pa.Table:
        """The item scores of one run (of one track if given), in the order they were recorded: every column, or
        only ``columns`` (the report reads the figures' columns, not each item's ``detail``).

        Raises:
            ResultsError: no run ``run_id`` is stored; a column item_scores does not have.
        """
        schema = _item_schema()
        if columns is not None:
            unknown = sorted(set(columns) - set(schema.names))
            if unknown:
                raise ResultsError(f"item_scores has no column(s) {', '.join(unknown)}")
            schema = pa.schema([schema.field(c) for c in dict.fromkeys(columns)])
        params: list = [run_id]
        where = " WHERE run_id = ?"
        if track is not None:
            where += " AND track = ?"
            params.append(str(track))
        with self._connect(write=False, purpose="read item scores") as con:
            if not con.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).fetchall():
                raise ResultsError(f"no run {run_id!r} in {self.path}")
            cols = self._select(con, "item_scores", schema.names, types={f.name: f.type for f in schema})
            # No ORDER BY: a SELECT ... FROM one table WHERE ... keeps the table's row order (DuckDB's order
            # preservation, with preserve_insertion_order on, as every read connection here sets), and item
            # rows are only ever appended, so that is the order they were recorded in. Sorting by rowid gave the
            # same rows but held them all in a sort first (a column of 1.46M items: 85 MB more at the peak).
            table = _to_arrow(con.sql(f"SELECT {', '.join(cols)} FROM item_scores{where}", params=params))
        return table.cast(schema) if table.schema != schema else table

    @staticmethod
    def _select(con, table: str, names, types: dict | None = None) -> list[str]:
        """Select expressions for ``names``: a column an older store lacks reads as NULL (typed for Arrow)."""
        have = {r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                          "WHERE table_schema = 'main' AND table_catalog = current_database() "
                                          "AND table_name = ?", [table]).fetchall()}
        sql_of = {c.name: c.sql.split()[0] for c in _item_columns()} if types else {}
        return [n if n in have else f"CAST(NULL AS {sql_of.get(n, 'VARCHAR')}) AS {n}" for n in names]

    def query_records(self, sql: str, limits: QueryLimits | None = None) -> list[dict]:
        """:meth:`query`'s rows as dicts, the store's JSON columns decoded: ``detail``, ``adapter_spec``,
        ``timings``, ``taskset`` (by name, as selected) and any column DuckDB types ``JSON`` become objects,
        not JSON text inside JSON (``trb query --json``)."""
        names, decode, rows = self._run_user_sql(sql, limits)
        # not strict_json: JSON the results store holds was written by ResultsStore itself (json.dumps of a run's figures)
        return [{n: (json.loads(v) if d and isinstance(v, str) else v) for n, d, v in zip(names, decode, r)}
                for r in rows]

    def query(self, sql: str, limits: QueryLimits | None = None) -> tuple[list[str], list[tuple]]:
        """Run ``sql`` on a read-only, sandboxed connection to the store: (column names, rows).

        ``sql`` is one statement that only reads (a SELECT, WITH, FROM, DESCRIBE, SHOW, SUMMARIZE or EXPLAIN);
        anything else (a write, ``COPY``, ``EXPORT``, ``ATTACH``, ``SET``, ``PRAGMA``, a second statement) is refused
        before it runs, and the connection reaches nothing past the store: no file read or written, no extension,
        no URL (:mod:`toolkit.sql_sandbox`). It runs under ``limits`` (default: :func:`~toolkit.sql_limits.
        query_limits`, from ``TRB_QUERY_TIMEOUT`` / ``TRB_QUERY_MEMORY_LIMIT``): past either it is stopped. Inside
        :meth:`reading`, the held connection is used, with the time limit but DuckDB's memory limit as it was opened.

        Raises:
            ResultsError: the SQL was refused, DuckDB rejected it (the first line of its message, without a
                traceback), a limit stopped it, or the store does not exist.
            UsageError: a limit in the environment is not a number of seconds or a memory size.
        """
        names, _, rows = self._run_user_sql(sql, limits)
        return names, rows

    def _run_user_sql(self, sql: str, limits: QueryLimits | None) -> tuple[list[str], list[bool], list[tuple]]:
        """(column names, whether each holds JSON to decode, rows) of ``sql``; every refusal a ResultsError."""
        if limits is None:
            try:
                limits = query_limits()
            except ValueError as e:
                raise UsageError(str(e)) from None
        with self._connect(write=False, purpose="query", config=limits.config()) as con:
            try:
                description, rows = fetch_limited(con, single_statement(con, sql), limits)
            except duckdb.Error as e:
                raise ResultsError(error_line(e)) from None
            except ValueError as e:  # refused before it ran, or stopped by a limit (QueryStopped)
                raise ResultsError(f"query {e}" if isinstance(e, QueryStopped) else f"query refused: {e}") from None
        if description is None:
            return [], [], []
        names = [d[0] for d in description]
        return names, [n in JSON_COLUMNS or str(d[1]) == "JSON" for n, d in zip(names, description)], rows
