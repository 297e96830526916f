"""The corpus store: one DuckDB file per corpus directory.

``init`` makes a corpus; ``Corpus.open`` holds the corpus lock (shared to read,
exclusive to write) and yields a DuckDB connection on which the store is attached
as ``store``.
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
from corpus.tables import ddl
from schemas.versions import SCHEMA_VERSION, TRB_VERSION

__all__ = ["DB_NAME", "STORE_FORMAT_VERSION", "Corpus", "init_corpus", "resolve_corpus_dir"]

DB_NAME = "corpus.duckdb"
STORE_FORMAT_VERSION = "1"
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
