"""A time limit and a memory limit for SQL a user typed, each stopping the query with one line saying which.

``trb query`` and ``trb-annotate push --where`` run a user's SQL (:mod:`toolkit.sql_sandbox` keeps it inside the
databases it was given); a 10^16-row cross join or a ``string_agg`` of gigabytes would otherwise run until the
machine gives out. :func:`query_limits` reads the limits: an option's value first (``trb query --timeout`` /
``--memory-limit``), else ``TRB_QUERY_TIMEOUT`` / ``TRB_QUERY_MEMORY_LIMIT``, else :data:`DEFAULT_TIMEOUT_S` and
:data:`DEFAULT_MEMORY`, sized for a laptop. :func:`fetch_limited` runs one statement under them:

* the time limit interrupts DuckDB (``con.interrupt()``) when it runs out, fetching included;
* the memory limit is DuckDB's own ``memory_limit`` (:meth:`QueryLimits.config` at connect, or ``SET`` before the
  sandbox's lock), with spilling to disk off (the sandbox's ``temp_directory = ''``), so a query that needs more
  stops instead of writing temporary files; the rows it returns count against the same limit, as the Python
  objects they become (estimated from a sample of each chunk fetched).

Either limit reached is :class:`QueryStopped` (a ``ValueError``: the caller makes it its own typed error).
"""

from __future__ import annotations

import math
import os
import re
import sys
import threading
from dataclasses import dataclass

__all__ = ["DEFAULT_MEMORY", "DEFAULT_TIMEOUT_S", "MEMORY_ENV", "MIN_MEMORY", "TIMEOUT_ENV", "QueryLimits", "QueryStopped",
           "fetch_limited", "parse_size", "query_limits"]

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MEMORY = "2GB"
TIMEOUT_ENV = "TRB_QUERY_TIMEOUT"
MEMORY_ENV = "TRB_QUERY_MEMORY_LIMIT"
#: Below this DuckDB cannot open a store and read its catalogue reliably.
MIN_MEMORY = 16 * 1000 ** 2
_UNITS = {"": 1, "B": 1, "BYTE": 1, "BYTES": 1, "KB": 1000, "MB": 1000 ** 2, "GB": 1000 ** 3, "TB": 1000 ** 4,
          "KIB": 1024, "MIB": 1024 ** 2, "GIB": 1024 ** 3, "TIB": 1024 ** 4}
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*")
_CHUNK = 50_000  # rows fetched at a time (the memory account is kept per chunk)


class QueryStopped(ValueError):
    """A user's query ran past its time limit or needed more than its memory limit, and was stopped. The message
    starts with "stopped", for the caller to put the query's name before it."""


def parse_size(text: str) -> int:
    """Bytes in a DuckDB-style size (``512MB``, ``2GB``, ``1.5GiB``, ``100000000``); ``ValueError`` saying what is
    expected otherwise (units of 1000 as DuckDB counts them, ``KiB``... of 1024)."""
    m = _SIZE.fullmatch(str(text))
    unit = m and m.group(2).upper()
    if not m or unit not in _UNITS:
        raise ValueError(f"{text!r} is not a memory size: expected a number and a unit, e.g. 512MB or 2GB")
    return int(float(m.group(1)) * _UNITS[unit])


def _seconds(text) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{text!r} is not a time limit: expected a number of seconds above 0, e.g. 30 or 0.5")
    return value


@dataclass(frozen=True)
class QueryLimits:
    """How long a user's query may run (seconds) and what it may hold in memory (bytes), and where each came from
    (an option, an environment variable or the default: the stop message says how to raise it)."""

    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_bytes: int = parse_size(DEFAULT_MEMORY)
    memory_text: str = DEFAULT_MEMORY
    timeout_from: str = "the default"
    memory_from: str = "the default"

    def config(self) -> dict:
        """DuckDB settings for ``duckdb.connect(config=...)`` (or ``SET`` before the sandbox's lock)."""
        return {"memory_limit": f"{self.memory_bytes}B"}

    def time_stop(self) -> QueryStopped:
        """The stop at the time limit, saying what set it and how to raise it."""
        return QueryStopped(f"stopped at its time limit of {self.timeout_s:g} s "
                            f"(set by {self.timeout_from}; --timeout or {TIMEOUT_ENV} raise it)")

    def memory_stop(self) -> QueryStopped:
        """The stop at the memory limit, saying what set it and how to raise it."""
        how = f"--memory-limit or {MEMORY_ENV} raise it" if self.memory_from in ("--memory-limit", MEMORY_ENV,
                                                                                 "the default") \
            else f"{self.memory_from} raises it"  # another setting bounded the connection already
        return QueryStopped(f"stopped: it needed more than its memory limit of {self.memory_text} "
                            f"(set by {self.memory_from}; {how})")


def query_limits(timeout=None, memory=None, *, environ=None) -> QueryLimits:
    """The limits for a user's query: ``timeout`` (seconds) and ``memory`` (a size) if given (an option's value),
    else the environment's :data:`TIMEOUT_ENV` / :data:`MEMORY_ENV`, else the defaults.

    Raises:
        ValueError: a value that is not a positive number of seconds or a memory size of at least 16MB, naming
            the option or variable it came from.
    """
    env = os.environ if environ is None else environ
    t_from, t_text = ("--timeout", timeout) if timeout is not None else (
        (TIMEOUT_ENV, env[TIMEOUT_ENV]) if env.get(TIMEOUT_ENV, "").strip() else ("the default", DEFAULT_TIMEOUT_S))
    m_from, m_text = ("--memory-limit", memory) if memory is not None else (
        (MEMORY_ENV, env[MEMORY_ENV]) if env.get(MEMORY_ENV, "").strip() else ("the default", DEFAULT_MEMORY))
    try:
        seconds = _seconds(t_text)
    except ValueError as e:
        raise ValueError(f"{t_from}: {e}") from None
    try:
        size = parse_size(m_text)
    except ValueError as e:
        raise ValueError(f"{m_from}: {e}") from None
    if size < MIN_MEMORY:
        raise ValueError(f"{m_from}: {str(m_text).strip()!r} is below the 16MB a query needs to open a database")
    return QueryLimits(seconds, size, str(m_text).strip(), t_from, m_from)


def _chunk_bytes(chunk: list[tuple]) -> int:
    """The Python memory ``chunk``'s rows take, estimated from up to 64 of them spread across it."""
    step = max(1, len(chunk) // 64)
    sample = chunk[::step]
    per_row = sum(sys.getsizeof(r) + sum(sys.getsizeof(v) for v in r) for r in sample) / len(sample)
    return int(per_row * len(chunk))


def fetch_limited(con, statement, limits: QueryLimits) -> tuple[list | None, list[tuple]]:
    """Run ``statement`` (SQL text or a parsed statement) on ``con`` and fetch its rows, within ``limits``:
    (``cursor.description``, rows), or ``(None, [])`` for a statement without a result.

    Raises:
        QueryStopped: the time limit ran out (DuckDB interrupted), or DuckDB, or the rows fetched, needed more
            than the memory limit.
        duckdb.Error: any other error of the query, as DuckDB raised it.
    """
    import duckdb

    timed_out = threading.Event()

    def stop() -> None:
        timed_out.set()
        con.interrupt()

    timer = threading.Timer(limits.timeout_s, stop)
    timer.daemon = True
    timer.start()
    try:
        cur = con.execute(statement)
        if cur.description is None:
            return None, []
        rows: list[tuple] = []
        held = 0
        while chunk := cur.fetchmany(_CHUNK):
            held += _chunk_bytes(chunk)
            if held > limits.memory_bytes:
                raise limits.memory_stop()
            rows.extend(chunk)
            if timed_out.is_set():  # the interrupt came between two fetches
                raise limits.time_stop()
        return cur.description, rows
    except duckdb.InterruptException:
        if timed_out.is_set():
            raise limits.time_stop() from None
        raise KeyboardInterrupt from None  # an interrupt that was not the time limit: Ctrl-C
    except duckdb.OutOfMemoryException:
        raise limits.memory_stop() from None
    finally:
        timer.cancel()
