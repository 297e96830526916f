"""One DuckDB instance per process for the engine's short-lived databases.

Starting a DuckDB instance costs about 35 ms on the project machine (its catalog,
thread pool and extension set); attaching a database to a running one costs
about 1.5 ms. A run opens a release (an in-memory catalog of views over the
parquet files) and makes a results store: each of these is a database *attached*
to one shared instance and reached through its own connection (a DuckDB cursor,
with ``USE`` set to that database, so unqualified table names resolve to it).
Closing detaches the database. A forked child makes its own instance.

A write to an existing results store attaches it here too, under the store's exclusive
lock (no other opening of the file, in this process or another, while it is attached);
reads of a results store are still opened with their own (sandboxed) ``duckdb.connect``:
two threads reading one file would otherwise attach it twice to one instance.

The instance may hold ``TRB_DUCKDB_MEMORY`` (default 256MB, as the corpus store) and spills past it to a
scratch folder of its own (made at the first spill, removed when the process exits): the Track 1 work list of a
release of a million sessions is one sorted read of 1.5M counterfactuals, which DuckDB would otherwise hold whole
in memory.
"""

from __future__ import annotations

import atexit
import itertools
import os
import secrets
import shutil
import tempfile
import threading

import duckdb

from toolkit.duck_memory import memory_limit

__all__ = ["attach", "cursor", "detach"]

_lock = threading.Lock()
_instance: duckdb.DuckDBPyConnection | None = None
_owner_pid: int | None = None
_names = itertools.count()
_attached: dict[int, str] = {}  # id of a connection made by attach() -> the name of its database


def _shared() -> duckdb.DuckDBPyConnection:
    global _instance, _owner_pid
    with _lock:
        if _instance is None or _owner_pid != os.getpid():
            limit = memory_limit()  # checked before anything is made
            # named, not made: DuckDB makes the folder at its first spill and removes it when the instance closes,
            # so a process that never spills leaves nothing, even one that ends without running atexit (a forked
            # worker's os._exit, a killed Ray actor)
            spill = os.path.join(tempfile.gettempdir(), f"trb-duckdb-{os.getpid()}-{secrets.token_hex(6)}")
            atexit.register(_remove, spill, os.getpid())
            _instance = duckdb.connect(":memory:", config={"threads": min(4, os.cpu_count() or 1),
                                                           "memory_limit": limit, "temp_directory": spill})
            _owner_pid = os.getpid()
        return _instance


def _remove(spill: str, pid: int) -> None:
    if os.getpid() == pid:  # not a forked child's exit: the folder is its parent's
        shutil.rmtree(spill, ignore_errors=True)


def attach(path: str | os.PathLike = ":memory:") -> duckdb.DuckDBPyConnection:
    """A new connection to the shared instance whose default database is ``path`` (a file, made if missing, or a
    fresh in-memory database), attached under a name of its own. Close it with :func:`detach`."""
    con = _shared().cursor()
    name = f"trb_db_{os.getpid()}_{next(_names)}"
    target = ":memory:" if str(path) == ":memory:" else str(os.fspath(path))
    try:
        con.execute(f"ATTACH '{target.replace(chr(39), chr(39) * 2)}' AS {name}")
        con.execute(f"USE {name}")
    except BaseException:
        con.close()
        raise
    with _lock:
        _attached[id(con)] = name
    return con


def cursor(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """A second connection to the database :func:`attach` opened on ``con`` (for a result read while ``con`` runs
    other queries); close it before :func:`detach`."""
    with _lock:
        name = _attached[id(con)]
    cur = con.cursor()
    cur.execute(f"USE {name}")
    return cur


def detach(con: duckdb.DuckDBPyConnection) -> None:
    """Detach the database that :func:`attach` opened on ``con`` (a file is written out and closed) and close ``con``."""
    with _lock:
        name = _attached.pop(id(con), None)
    try:
        if name is not None:
            try:
                con.execute("ROLLBACK")  # a transaction left open by an error (none: DuckDB says so; ignored)
            except duckdb.Error:
                pass
            con.execute("USE memory")
            con.execute(f"DETACH {name}")
    finally:
        con.close()
