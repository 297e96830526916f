"""``TRB_DUCKDB_MEMORY``: what each of the toolkit's DuckDB databases may hold in memory before it spills to disk.

One setting for all of them (the corpus store, the release check, the engine's shared instance), read when a
database is opened: a DuckDB size such as ``256MB`` (the default) or ``4GB``. A value DuckDB would not take is
refused with a message naming the variable, before any work.
"""

from __future__ import annotations

import os
import re

from toolkit.errors import ExitCode, ToolkitError

__all__ = ["DEFAULT", "BadMemorySetting", "memory_limit"]

DEFAULT = "256MB"
_SIZE = re.compile(r"\s*[0-9]+(\.[0-9]+)?\s*([KMGT]i?B|B|bytes?)\s*", re.IGNORECASE)


class BadMemorySetting(ToolkitError):
    exit_code = ExitCode.USAGE


def memory_limit() -> str:
    """The value of ``TRB_DUCKDB_MEMORY`` (default :data:`DEFAULT`), checked.

    Raises:
        BadMemorySetting: not a number and a unit DuckDB takes.
    """
    value = os.environ.get("TRB_DUCKDB_MEMORY", DEFAULT)
    if not _SIZE.fullmatch(value):
        raise BadMemorySetting(f"TRB_DUCKDB_MEMORY={value!r} is not a memory size: expected a number and a unit, "
                               f"e.g. 256MB or 4GB (default {DEFAULT})")
    return value.strip()
