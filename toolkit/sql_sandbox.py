"""DuckDB connections for SQL a user typed: the databases they were given, and nothing else on the machine.

``trb query SQL`` and ``trb-annotate push --where SQL`` run a user's SQL. Left alone, DuckDB
would read any file (``read_text``, ``read_csv``, ``read_parquet``, ``read_blob``, ``glob``,
``ATTACH`` of another database), write files (``COPY ... TO``, ``EXPORT DATABASE``), install and
load extensions and reach the network through them (``INSTALL httpfs``, a URL in a reader).
A sandboxed connection (DuckDB's own settings, "Securing DuckDB" in its manual) has:

* ``enable_external_access = false``: no file, directory or URL beyond the databases already
  attached (those stay readable), no ``ATTACH`` of another file, no ``COPY`` or ``EXPORT`` to a
  file, no extension installed or loaded, no secrets;
* ``temp_directory = ''``: nothing spilled to disk, and no directory left open to writes (DuckDB lets a
  sandboxed connection write inside its temporary directory, ``<store>.tmp`` by default: ``EXPORT DATABASE``
  or ``COPY ... TO`` there wrote any content beside the store);
* known extensions neither installed nor loaded on demand, community and unsigned extensions
  refused, no Python replacement scans (a Python variable read as a table);
* then ``lock_configuration = true``, so no ``SET`` or ``RESET`` in the user's SQL can undo any of
  it (DuckDB refuses to turn external access back on while a database runs anyway).

:data:`SANDBOX_CONFIG` is for ``duckdb.connect(path, read_only=True, config=...)`` (the database
named at connect stays readable); :func:`lock_down` does the same to a connection already open,
after the databases it needs are attached (and :mod:`toolkit.sql_limits`'s memory limit, before the lock).
:func:`single_statement` checks that SQL is one statement of the kinds that only read (``SELECT``, which
covers ``WITH``, ``FROM``, ``DESCRIBE``, ``SHOW``, ``SUMMARIZE``; ``EXPLAIN`` where asked): ``EXPORT``,
``COPY``, ``ATTACH``, ``CREATE``, ``SET``, ``PRAGMA``, ``CALL``, a second statement after the first, are refused
before anything runs, whatever DuckDB's settings would have let through. :func:`single_select` is the same
for SQL built around a user's fragment. :func:`error_line` turns
DuckDB's error into the one line a CLI prints.
"""

from __future__ import annotations

__all__ = ["READ_KINDS", "SANDBOX_CONFIG", "SANDBOX_NOTE", "error_line", "is_refusal", "lock_down", "single_select",
           "single_statement"]

#: The settings, in the order :func:`lock_down` applies them (the lock last).
_SETTINGS = (
    ("enable_external_access", False),
    ("temp_directory", ""),
    ("autoinstall_known_extensions", False),
    ("autoload_known_extensions", False),
    ("allow_community_extensions", False),
    ("allow_unsigned_extensions", False),
    ("python_enable_replacements", False),
    ("lock_configuration", True),
)
#: ``duckdb.connect(..., config=SANDBOX_CONFIG)``: a connection with the sandbox from its first statement.
SANDBOX_CONFIG: dict = dict(_SETTINGS)
#: What a refusal adds to DuckDB's own message.
SANDBOX_NOTE = "SQL here reads only the store it was given: no files, network or extensions"
#: The statement kinds a query may be (DuckDB's ``StatementType`` names): ``DESCRIBE``, ``SHOW``, ``SUMMARIZE``,
#: ``FROM t``, ``VALUES`` and ``TABLE t`` are all SELECTs to DuckDB's parser.
READ_KINDS = ("SELECT", "EXPLAIN")


def _sql_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "'" + str(value).replace("'", "''") + "'"


def lock_down(con, limits: dict | None = None) -> None:
    """Apply the sandbox to an open DuckDB connection (its whole database instance), for good.

    Attach what the SQL may read first: afterwards nothing else can be attached. ``limits`` (settings such as
    :meth:`toolkit.sql_limits.QueryLimits.config`) are set before the lock. A connection already
    sandboxed is left as it is. Settings a
    DuckDB version does not know are skipped (the lock and external access are known to every
    supported version).
    """
    import duckdb

    locked, external = con.execute("SELECT current_setting('lock_configuration'), "
                                   "current_setting('enable_external_access')").fetchone()
    if locked and not external:  # sandboxed already (a second filter on the same connection)
        return
    settings = list(_SETTINGS)
    settings[-1:-1] = (limits or {}).items()  # before the lock
    for name, value in settings:
        try:
            con.execute(f"SET {name} = {_sql_value(value)}")
        except duckdb.CatalogException:  # an unknown setting in this DuckDB version
            if name in ("enable_external_access", "lock_configuration"):
                raise
        except duckdb.Error:
            # a connection that has spilled already keeps its temporary directory: one of its own, made for it and
            # removed after it (corpus.store.scratch_connection); the statement check keeps every write out of it
            if name != "temp_directory":
                raise


def single_select(con, sql: str):
    """The one ``SELECT`` statement that ``sql`` (built around a user's fragment) is, ready for ``con.execute``;
    else ``ValueError`` saying why.

    DuckDB's own parser splits ``sql``, so what is checked is exactly what would run.
    """
    import duckdb

    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as e:
        raise ValueError(error_line(e)) from None
    if len(statements) != 1:
        raise ValueError(f"it makes {len(statements)} SQL statements of one (a filter cannot end the statement "
                         "and start another)")
    st = statements[0]
    if st.type != duckdb.StatementType.SELECT:
        raise ValueError(f"it makes a {st.type.name} statement, not a SELECT")
    return st


def single_statement(con, sql: str, kinds: tuple[str, ...] = READ_KINDS):
    """The one statement ``sql`` is, if it is of one of ``kinds`` (:data:`READ_KINDS`), ready for ``con.execute``;
    else ``ValueError`` saying what it is and what is taken. Nothing runs (DuckDB's parser splits ``sql``)."""
    import duckdb

    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as e:
        raise ValueError(error_line(e)) from None
    taken = "one statement that only reads (SELECT, WITH, FROM, DESCRIBE, SHOW, SUMMARIZE" + \
        (", EXPLAIN)" if "EXPLAIN" in kinds else ")")
    if len(statements) != 1:
        raise ValueError(f"expected {taken}, got {len(statements)} statements ({SANDBOX_NOTE})")
    st = statements[0]
    if st.type.name not in kinds:
        words = (st.query.split() or ["?"])[0].upper()
        raise ValueError(f"expected {taken}, got a {st.type.name} statement ({words} ...) ({SANDBOX_NOTE})")
    return st


def is_refusal(exc: BaseException) -> bool:
    """Whether a DuckDB error is the sandbox refusing something (a file, the network, an extension, a setting)."""
    import duckdb

    text = str(exc)
    return isinstance(exc, duckdb.PermissionException) or "configuration has been locked" in text \
        or "external access" in text or "disabled by configuration" in text or "disabled through configuration" in text


def error_line(exc: BaseException) -> str:
    """DuckDB's error on one line: its lines up to the query it echoes with a caret (``LINE 1: ...``), joined,
    and, for a refusal by the sandbox, :data:`SANDBOX_NOTE`."""
    kept = []
    for line in str(exc).splitlines():
        if line.startswith("LINE "):
            break
        if line.strip():
            kept.append(line.strip())
    text = " ".join(kept) or type(exc).__name__
    return f"{text} ({SANDBOX_NOTE})" if is_refusal(exc) else text
