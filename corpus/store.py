"""The corpus store: one DuckDB file per corpus directory.

``init`` makes a corpus; ``Corpus.open`` holds the corpus lock (shared to read,
exclusive to write) and yields a DuckDB connection on which the store is attached
as ``store``.

Store format 2 (record schema 1.1) added columns (:data:`corpus.tables.ADDED_COLUMNS`);
a format-1 store is upgraded in place the first time it is opened, under the write
lock, by adding them (its rows then read as the 1.0 records they are).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import duckdb

from corpus.errors import CorpusExists, CorpusNotFound
from corpus.lock import CorpusLock, LockWait
from corpus.tables import ADDED_COLUMNS, ddl
from schemas.versions import SCHEMA_VERSION, TRB_VERSION

__all__ = ["DB_NAME", "STORE_FORMAT_VERSION", "Corpus", "init_corpus", "resolve_corpus_dir", "store_is_current",
           "upgrade_store"]

DB_NAME = "corpus.duckdb"
STORE_FORMAT_VERSION = "2"
#: DuckDB's own memory bound for ingest and queries; above it, it spills to disk.
MEMORY_LIMIT = os.environ.get("TRB_DUCKDB_MEMORY", "256MB")


def resolve_corpus_dir(arg: str | os.PathLike | None) -> Path:
    """``--corpus`` if given, else ``$TRB_CORPUS``, else the current directory."""
    if arg:
        return Path(arg)
    env = os.environ.get("TRB_CORPUS")
    return Path(env) if env else Path.cwd()


def _create_schema(con: duckdb.DuckDBPyConnection, schema: str) -> None:
    for stmt in ddl(schema, keys=True):
        con.execute(stmt)
    con.execute(f"CREATE TABLE IF NOT EXISTS {schema}.meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute(
        f"CREATE TABLE IF NOT EXISTS {schema}.ingests (ingest_id INTEGER PRIMARY KEY, ingested_at VARCHAR, "
        "files VARCHAR[], new_records BIGINT, unchanged_records BIGINT, toolkit_version VARCHAR)"
    )


def init_corpus(directory: str | os.PathLike) -> Path:
    """Make a new, empty corpus in ``directory`` (created if needed). Refuses an existing one."""
    d = Path(directory)
    if (d / DB_NAME).exists():
        raise CorpusExists(f"{d} already holds a corpus ({DB_NAME}); nothing was changed")
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f".{DB_NAME}.init-{os.getpid()}"
    tmp.unlink(missing_ok=True)
    con = duckdb.connect(str(tmp))
    try:
        _create_schema(con, "main")
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        con.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            [("store_format_version", STORE_FORMAT_VERSION), ("schema_version", str(SCHEMA_VERSION)),
             ("trb_version", TRB_VERSION), ("created_at", now)],
        )
        con.execute("CHECKPOINT")
    except BaseException:
        con.close()
        tmp.unlink(missing_ok=True)
        raise
    con.close()
    os.replace(tmp, d / DB_NAME)  # a half-made corpus is never visible
    return d


def store_is_current(con: duckdb.DuckDBPyConnection, schema: str = "store") -> bool:
    """Whether the attached store ``schema`` is of :data:`STORE_FORMAT_VERSION`."""
    rows = con.execute(f"SELECT value FROM {schema}.meta WHERE key = 'store_format_version'").fetchall()
    return bool(rows) and rows[0][0] == STORE_FORMAT_VERSION


def upgrade_store(con: duckdb.DuckDBPyConnection, schema: str = "store") -> bool:
    """Bring an older store (attached read-write as ``schema``) to the current format; True if it changed.

    Format 1 -> 2 only adds columns (NULL in existing rows: 1.0 records, no 1.1 fields), in one transaction.
    """
    if store_is_current(con, schema):
        return False
    con.execute("BEGIN TRANSACTION")
    try:
        for table, cols in ADDED_COLUMNS.items():
            for col, typ in cols:
                con.execute(f"ALTER TABLE {schema}.{table} ADD COLUMN IF NOT EXISTS {col} {typ}")
        for key, value in (("store_format_version", STORE_FORMAT_VERSION), ("schema_version", str(SCHEMA_VERSION))):
            con.execute(f"INSERT OR REPLACE INTO {schema}.meta VALUES (?, ?)", [key, value])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return True


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
        with CorpusLock(self.dir, exclusive=write, wait_seconds=wait_seconds, purpose=purpose, on_wait=on_wait):
            _remove_dead_spills(self.dir)
            with scratch_connection(spill_dir) as con:
                mode = "" if write else " (READ_ONLY)"
                con.execute(f"ATTACH '{_sql_path(self.db_path)}' AS store{mode}")
                try:
                    yield con
                finally:
                    con.execute("DETACH store")


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
    """An in-memory DuckDB connection bounded by ``MEMORY_LIMIT``; past it, DuckDB spills to ``spill_dir``.

    The spill directory is removed afterwards.
    """
    config = {"memory_limit": MEMORY_LIMIT, "threads": min(4, os.cpu_count() or 1), "preserve_insertion_order": False}
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
