"""The corpus store: one DuckDB file per corpus directory.

``init`` makes a corpus; ``Corpus.open`` holds the corpus lock (shared to read,
exclusive to write) and yields a DuckDB connection on which the store is attached
as ``store``.

Store format 2 (record schema 1.1) added columns (:data:`corpus.tables.ADDED_COLUMNS`);
store format 3 dropped the record tables' primary keys (DuckDB's key indexes must fit
in memory: at 1M sessions an ingest's commit ran out of ``TRB_DUCKDB_MEMORY``; the
ingest itself keeps ids unique, :func:`corpus.tables.ddl`). An older store is upgraded
in place the first time it is opened, under the write lock, in one transaction: the
added columns are added (its rows then read as the 1.0 records they are), and each
keyed table is copied into one without the key.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import duckdb

from corpus.errors import CorpusBusy, CorpusError, CorpusExists, CorpusNotFound, CorpusUnreadable, DiskFull, MemoryLimit
from corpus.lock import CorpusLock, LockWait
from corpus.tables import ADDED_COLUMNS, TABLES, ddl
from schemas.versions import SCHEMA_VERSION, TOOLKIT_VERSION, TRB_VERSION
from toolkit.duck_memory import memory_limit

__all__ = ["DB_NAME", "STORE_FORMAT_VERSION", "Corpus", "init_corpus", "resolve_corpus_dir", "store_is_current",
           "upgrade_store", "check_store", "storage_error"]

DB_NAME = "corpus.duckdb"
STORE_FORMAT_VERSION = "3"


def resolve_corpus_dir(arg: str | os.PathLike | None) -> Path:
    """``--corpus`` if given, else ``$TRB_CORPUS``, else the current directory."""
    if arg:
        return Path(arg)
    env = os.environ.get("TRB_CORPUS")
    return Path(env) if env else Path.cwd()


def _create_schema(con: duckdb.DuckDBPyConnection, schema: str) -> None:
    for stmt in ddl(schema):
        con.execute(stmt)
    con.execute(f"CREATE TABLE IF NOT EXISTS {schema}.meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute(
        f"CREATE TABLE IF NOT EXISTS {schema}.ingests (ingest_id INTEGER PRIMARY KEY, ingested_at VARCHAR, "
        "files VARCHAR[], new_records BIGINT, unchanged_records BIGINT, toolkit_version VARCHAR)"
    )


#: Bytes 8-11 of every DuckDB database file.
_DUCKDB_MAGIC = b"DUCK"
_NO_SPACE = ("No space left on device", "Disk quota exceeded", "not enough space")


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def _no_space_reason(e: BaseException) -> str:
    """The part of a disk-full error that says so (DuckDB puts it on a later line, after what it was doing)."""
    if isinstance(e, OSError) and e.strerror:
        return f"{e.strerror}: {e.filename}" if e.filename else e.strerror
    for line in str(e).splitlines():
        for marker in _NO_SPACE:
            if marker in line:
                at = line.rfind("Could not write file")
                return (line[at:] if at >= 0 else line).strip()
    return _first_line(e)


def storage_error(e: BaseException, db_path: Path, committed: bool = False) -> CorpusError | None:
    """The typed error for a failure of the disk or of the store file under the corpus ``db_path``, else None.

    A full disk (or quota) is :class:`~corpus.errors.DiskFull`; a damaged store file is
    :class:`~corpus.errors.CorpusUnreadable`. ``committed``: the failure came after the changes were committed
    (to DuckDB's write-ahead log), while they were being written into the store file.
    """
    text = str(e)
    full = (isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT)) or any(m in text for m in _NO_SPACE)
    if full:
        if committed:
            return DiskFull(
                f"the disk holding {db_path.parent} is full ({_no_space_reason(e)}): the changes were committed to the "
                f"store's write-ahead log ({db_path.name}.wal) but could not be written into {db_path.name}; they "
                "are in the corpus (every reader replays the log), and the next write folds the log in once there "
                "is space")
        return DiskFull(f"the disk holding {db_path.parent} is full ({_no_space_reason(e)}); nothing was written "
                        "(free some space and run the command again)")
    if isinstance(e, duckdb.OutOfMemoryException):
        done = (f"the changes were committed to the store's write-ahead log ({db_path.name}.wal) but not yet written "
                f"into {db_path.name}; they are in the corpus" if committed else "nothing was written")
        return MemoryLimit(f"DuckDB ran out of the memory the corpus store may use ({memory_limit()}, set by "
                           f"TRB_DUCKDB_MEMORY): {_first_line(e)}; {done} (run it again with a higher limit, e.g. "
                           "TRB_DUCKDB_MEMORY=4GB, or with fewer records at a time)")
    if isinstance(e, duckdb.Error) and ("Corrupt database file" in text or "Could not read enough bytes" in text):
        return CorpusUnreadable(f"{db_path} is damaged ({_first_line(e)}); nothing was changed (restore it from a "
                                "backup)")
    return None


def _check_file(db_path: Path) -> None:
    """Refuse a ``corpus.duckdb`` that is not a DuckDB database before DuckDB touches it (an empty file DuckDB
    would take for a new database; another database's format it would try to load an extension for)."""
    try:
        with open(db_path, "rb") as f:
            head = f.read(12)
    except OSError as e:
        raise CorpusUnreadable(f"{db_path}: cannot read the corpus store ({e.strerror or e})") from None
    if len(head) < 12 or head[8:12] != _DUCKDB_MAGIC:
        what = "an empty file" if not head else ("a SQLite database" if head.startswith(b"SQLite form")
                                                  else "not a DuckDB database")
        raise CorpusUnreadable(f"{db_path} is {what}, not a corpus store; nothing was changed (restore it from a "
                               f"backup, or move it away and make a new corpus with `trb-corpus init`)")


def check_store(con: duckdb.DuckDBPyConnection, db_path: Path, schema: str = "store") -> None:
    """Refuse an attached DuckDB database that is not a corpus store, or one of a newer store format.

    Raises:
        CorpusUnreadable: tables of a corpus store are missing, it states no store format, or a newer one.
    """
    tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = ?",
                                        [schema]).fetchall()}
    missing = sorted({"meta", "ingests", *TABLES} - tables)
    if missing:
        raise CorpusUnreadable(f"{db_path} is a DuckDB database but not a corpus store (it has no "
                               f"{', '.join(missing)} table); nothing was changed")
    rows = con.execute(f"SELECT value FROM {schema}.meta WHERE key = 'store_format_version'").fetchall()
    version = rows[0][0] if rows else None
    if version is None or not str(version).isdigit():
        raise CorpusUnreadable(f"{db_path} states no corpus store format (meta.store_format_version is "
                               f"{version!r}): not a corpus store this toolkit can read; nothing was changed")
    if int(version) > int(STORE_FORMAT_VERSION):
        raise CorpusUnreadable(f"{db_path} is a corpus store of format {version}, newer than this toolkit reads "
                               f"(format {STORE_FORMAT_VERSION}, trb toolkit {TOOLKIT_VERSION}): upgrade the toolkit; "
                               "nothing was changed")


def init_corpus(directory: str | os.PathLike) -> Path:
    """Make a new, empty corpus in ``directory`` (created if needed). Refuses an existing one."""
    d = Path(directory)
    if (d / DB_NAME).exists():
        raise CorpusExists(f"{d} already holds a corpus ({DB_NAME}); nothing was changed")
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f".{DB_NAME}.init-{os.getpid()}"
    tmp.unlink(missing_ok=True)
    try:
        con = duckdb.connect(str(tmp))
    except duckdb.Error as e:
        tmp.unlink(missing_ok=True)
        typed = storage_error(e, d / DB_NAME)
        if typed is None:
            raise
        raise typed from None
    try:
        _create_schema(con, "main")
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        con.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            [("store_format_version", STORE_FORMAT_VERSION), ("schema_version", str(SCHEMA_VERSION)),
             ("trb_version", TRB_VERSION), ("created_at", now)],
        )
        con.execute("CHECKPOINT")
        con.close()
    except BaseException as e:
        try:
            con.close()
        except duckdb.Error:
            pass  # the error that stopped the init is the one to report
        tmp.unlink(missing_ok=True)
        Path(f"{tmp}.wal").unlink(missing_ok=True)
        typed = storage_error(e, d / DB_NAME) if isinstance(e, (duckdb.Error, OSError)) else None
        if typed is None:
            raise
        raise typed from None
    os.replace(tmp, d / DB_NAME)  # a half-made corpus is never visible
    return d


def store_is_current(con: duckdb.DuckDBPyConnection, schema: str = "store") -> bool:
    """Whether the attached store ``schema`` is of :data:`STORE_FORMAT_VERSION`."""
    rows = con.execute(f"SELECT value FROM {schema}.meta WHERE key = 'store_format_version'").fetchall()
    return bool(rows) and rows[0][0] == STORE_FORMAT_VERSION


def upgrade_store(con: duckdb.DuckDBPyConnection, schema: str = "store") -> bool:
    """Bring an older store (attached read-write as ``schema``) to the current format; True if it changed.

    In one transaction: format 1 -> 2 adds columns (NULL in existing rows: 1.0 records, no 1.1 fields);
    2 -> 3 copies each table that has a primary key into one without it (same columns, same rows).
    """
    if store_is_current(con, schema):
        return False
    con.execute("BEGIN TRANSACTION")
    try:
        for table, cols in ADDED_COLUMNS.items():
            for col, typ in cols:
                con.execute(f"ALTER TABLE {schema}.{table} ADD COLUMN IF NOT EXISTS {col} {typ}")
        keyed = {r[0] for r in con.execute(
            "SELECT DISTINCT table_name FROM duckdb_constraints() WHERE database_name = ? AND constraint_type = "
            "'PRIMARY KEY'", [schema]).fetchall()}
        for table in sorted(keyed & set(TABLES)):
            cols = ", ".join(f"{c} {t}" for c, t in TABLES[table])
            con.execute(f"CREATE TABLE {schema}.{table}__unkeyed ({cols})")
            con.execute(f"INSERT INTO {schema}.{table}__unkeyed SELECT {', '.join(c for c, _ in TABLES[table])} "
                        f"FROM {schema}.{table}")
            con.execute(f"DROP TABLE {schema}.{table}")
            con.execute(f"ALTER TABLE {schema}.{table}__unkeyed RENAME TO {table}")
        for key, value in (("store_format_version", STORE_FORMAT_VERSION), ("schema_version", str(SCHEMA_VERSION))):
            con.execute(f"INSERT OR REPLACE INTO {schema}.meta VALUES (?, ?)", [key, value])
        con.execute("COMMIT")
    except BaseException:
        rollback_quietly(con)
        raise
    return True


def rollback_quietly(con: duckdb.DuckDBPyConnection) -> None:
    """ROLLBACK after a failure, never raising over it (after a failed COMMIT there may be no transaction left, or
    the database may have been invalidated: the failure that got here is the one to report)."""
    try:
        con.execute("ROLLBACK")
    except duckdb.Error:
        pass


class Corpus:
    """A corpus directory. Open it to read or write: ``with Corpus(d).open(write=True) as con``."""

    def __init__(self, directory: str | os.PathLike):
        self.dir = Path(directory)
        self.db_path = self.dir / DB_NAME

    def exists(self) -> bool:
        return self.db_path.exists()

    def require(self) -> Corpus:
        if not self.exists():
            raise CorpusNotFound(
                f"no corpus at {self.dir} (no {DB_NAME}); make one with `trb-corpus init {self.dir}`, "
                "or pass --corpus / set TRB_CORPUS"
            )
        return self

    def require_readable(self, purpose: str = "") -> Corpus:
        """:meth:`require`, and the store opens as a corpus store: what a command that hands the corpus to an app
        (the review app, the subject's app) checks first, so that a damaged store is one line, not an app. A corpus
        another process holds right now is not waited for: the app waits, and says so, itself.

        Raises:
            CorpusNotFound, CorpusUnreadable: as :meth:`open`.
        """
        try:
            with self.open(write=False, wait_seconds=0, purpose=purpose, on_wait=lambda wait: None):
                pass
        except CorpusBusy:
            pass
        return self

    @contextmanager
    def open(self, *, write: bool, wait_seconds: float | None = None, purpose: str = "",
             spill_dir: Path | None = None,
             on_wait: Callable[[LockWait], None] | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """Hold the corpus lock and yield a connection with the store attached as ``store``.

        The connection's own database is in memory (bounded; it spills to
        ``spill_dir``), for staging; the store is attached read-only unless ``write``.
        ``on_wait`` is told (once) who holds the corpus when this call has to wait (a
        :class:`~corpus.lock.LockWait`: ``.holder`` as data, ``str()`` the message; default: stderr).
        """
        self.require()
        kw = {"wait_seconds": wait_seconds, "purpose": purpose, "spill_dir": spill_dir, "on_wait": on_wait}
        if write:
            with self._attached(True, **kw) as con:
                upgrade_store(con)
                yield con
            return
        with self._attached(False, **kw) as con:
            current = store_is_current(con)
            if current:
                yield con
        if current:
            return
        # an older store, opened to read: upgrade it under the write lock first (once), then read
        with self._attached(True, **{**kw, "purpose": f"{purpose} (store format upgrade)".strip()}) as con:
            upgrade_store(con)
        with self._attached(False, **kw) as con:
            yield con

    @contextmanager
    def _attached(self, write: bool, *, wait_seconds, purpose, spill_dir, on_wait) -> Iterator[duckdb.DuckDBPyConnection]:
        """The store attached as ``store`` under the corpus lock. A store file that is not a corpus store, is
        damaged, or a disk that fills up, is a typed error (:func:`storage_error`), never masked by the clean-up."""
        with CorpusLock(self.dir, exclusive=write, wait_seconds=wait_seconds, purpose=purpose, on_wait=on_wait):
            _remove_dead_spills(self.dir)
            _check_file(self.db_path)
            with scratch_connection(spill_dir) as con:
                mode = "TYPE DUCKDB" if write else "TYPE DUCKDB, READ_ONLY"
                try:
                    con.execute(f"ATTACH '{_sql_path(self.db_path)}' AS store ({mode})")
                except duckdb.Error as e:
                    raise (storage_error(e, self.db_path) or CorpusUnreadable(
                        f"{self.db_path}: cannot open the corpus store ({_first_line(e)}); nothing was changed")) \
                        from None
                try:
                    check_store(con, self.db_path)
                    yield con
                except BaseException as e:
                    try:
                        con.execute("DETACH store")
                    except duckdb.Error:
                        pass  # the failure that got here is the one to report
                    _remove_empty_wal(self.db_path)
                    if isinstance(e, (duckdb.Error, OSError)) and (typed := storage_error(e, self.db_path)):
                        raise typed from None
                    raise
                try:
                    con.execute("DETACH store")
                except duckdb.Error as e:  # the checkpoint DETACH makes, after the body's changes were committed
                    raise (storage_error(e, self.db_path, committed=write) or e) from None


def _remove_empty_wal(db_path: Path) -> None:
    """Remove the empty write-ahead log a commit that failed to write it leaves (it holds nothing to replay)."""
    wal = Path(f"{db_path}.wal")
    try:
        if wal.stat().st_size == 0:
            wal.unlink()
    except OSError:
        pass


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_dead_spills(directory: Path) -> None:
    """Remove scratch space left by ingests that were killed (their pid is gone)."""
    for d in directory.glob(".ingest-*.spill"):
        pid = d.name.removeprefix(".ingest-").removesuffix(".spill")
        if pid.isdigit() and not _pid_alive(int(pid)):
            shutil.rmtree(d, ignore_errors=True)


def _sql_path(p: Path) -> str:
    return str(p).replace("'", "''")


@contextmanager
def scratch_connection(spill_dir: Path | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory DuckDB connection bounded by ``TRB_DUCKDB_MEMORY`` (:func:`toolkit.duck_memory.memory_limit`);
    past it, DuckDB spills to ``spill_dir``.

    The spill directory is removed afterwards.
    """
    config = {"memory_limit": memory_limit(), "threads": min(4, os.cpu_count() or 1), "preserve_insertion_order": False}
    con = duckdb.connect(":memory:", config=config)
    if spill_dir is not None:
        con.execute(f"SET temp_directory = '{_sql_path(spill_dir)}'")
    try:
        yield con
    finally:
        con.close()
        if spill_dir is not None and spill_dir.is_dir():
            shutil.rmtree(spill_dir, ignore_errors=True)


def empty_store(con: duckdb.DuckDBPyConnection) -> None:
    """Attach an empty in-memory store as ``store`` (validation without a corpus)."""
    con.execute("ATTACH ':memory:' AS store")
    _create_schema(con, "store")
