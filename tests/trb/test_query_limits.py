"""`trb query` runs under a time limit and a memory limit, and writes no temporary file (issue 41, point 1).

The probe's runaway queries, on a real results store through the real command line: a 10^16-row cross join
that ran until killed, a ``string_agg`` that reached 5.1 GB. Each must end at its limit with one line on stderr
(exit RESULTS, no traceback), leave the store byte-identical, and leave no file in the store's directory or in
the temporary directory: spilling to disk is off, so a query past the memory limit stops instead.
"""

from __future__ import annotations

import hashlib
import time

import pytest

from toolkit.errors import ExitCode
from toolkit.sql_limits import DEFAULT_MEMORY, DEFAULT_TIMEOUT_S, query_limits
from trb.cli import main
from trb.results import ResultsError, ResultsStore

CROSS_JOIN = "SELECT count(*) FROM range(100000) a, range(100000) b, range(1000000) c"  # 10^16 rows
STRING_AGG = "SELECT length(string_agg(repeat('x', 1000), ',')) FROM range(10000000)"  # 10 GB of text
BIG_SORT = ("SELECT max(n) FROM (SELECT row_number() OVER (ORDER BY hash(range)) AS n "  # a sort that would spill
            "FROM range(20000000))")


@pytest.fixture()
def store(tmp_path, monkeypatch):
    """A results store with one run, in a directory of its own, and TMPDIR pointed at an empty directory."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.delenv("TRB_QUERY_TIMEOUT", raising=False)
    monkeypatch.delenv("TRB_QUERY_MEMORY_LIMIT", raising=False)
    ResultsStore(tmp_path / "store" / "results.duckdb").record_run(
        {"run_id": "r1", "baseline": "trace-full"},
        [{"track": "1", "metric": "m", "item_id": f"i{i}", "session_id": "s1", "score": i / 10} for i in range(10)])
    return tmp_path / "store" / "results.duckdb"


def _files(store):
    return sorted(store.parent.parent.rglob("*"))


def _query(store, capsys, *args) -> tuple[int, str, str, float]:
    capsys.readouterr()
    t0 = time.monotonic()
    code = main(["query", *args, "--results", str(store)])
    took = time.monotonic() - t0
    out, err = capsys.readouterr()
    return code, out, err, took


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_a_cross_join_of_1e16_rows_stops_at_the_time_limit(store, capsys):
    before, files = hashlib.sha256(store.read_bytes()).digest(), _files(store)
    code, out, err, took = _query(store, capsys, CROSS_JOIN, "--timeout", "0.5")
    assert code == ExitCode.RESULTS and out == ""
    assert _one_line(err) == ("query stopped at its time limit of 0.5 s (set by --timeout; --timeout or "
                              "TRB_QUERY_TIMEOUT raise it)")
    assert took < 3.0  # measured: 0.5 s and ~0.05 s to open the store
    assert hashlib.sha256(store.read_bytes()).digest() == before and _files(store) == files


def test_the_time_limit_comes_from_the_environment(store, capsys, monkeypatch):
    monkeypatch.setenv("TRB_QUERY_TIMEOUT", "0.3")
    code, _, err, took = _query(store, capsys, CROSS_JOIN)
    assert code == ExitCode.RESULTS and "time limit of 0.3 s (set by TRB_QUERY_TIMEOUT" in _one_line(err)
    assert took < 3.0


@pytest.mark.parametrize("sql", [STRING_AGG, BIG_SORT], ids=["string_agg", "a sort that would spill"])
def test_a_query_past_the_memory_limit_stops_and_spills_nothing(store, capsys, sql):
    files = _files(store)
    code, out, err, took = _query(store, capsys, sql, "--memory-limit", "64MB")
    assert code == ExitCode.RESULTS and out == ""
    assert _one_line(err).startswith("query stopped: it needed more than its memory limit of 64MB (set by "
                                     "--memory-limit;")
    assert _files(store) == files  # nothing in <store>.tmp, beside the store or in TMPDIR
    assert took < 5.0


def test_rows_returned_count_against_the_memory_limit(store, capsys):
    # a million integers are 8 MB to DuckDB and ~90 MB as Python rows
    code, _, err, _ = _query(store, capsys, "SELECT range FROM range(1000000)", "--memory-limit", "32MB")
    assert code == ExitCode.RESULTS and "memory limit of 32MB" in _one_line(err)
    code, out, _, _ = _query(store, capsys, "SELECT count(*) AS n FROM range(1000000)", "--memory-limit", "32MB")
    assert code == 0 and "1000000" in out


def test_ordinary_queries_run_within_limits_given(store, capsys):
    code, out, err, _ = _query(store, capsys, "SELECT count(*) AS n FROM item_scores", "--timeout", "5",
                               "--memory-limit", "100MB")
    assert code == 0 and out.split()[-1] == "10", err
    code, out, _, _ = _query(store, capsys, "DESCRIBE runs")
    assert code == 0 and "run_id" in out
    code, out, _, _ = _query(store, capsys, "EXPLAIN SELECT * FROM runs")
    assert code == 0 and "physical_plan" in out


@pytest.mark.parametrize("args,env,named", [
    (["--timeout", "abc"], {}, "--timeout: 'abc' is not a time limit"),
    (["--timeout", "0"], {}, "--timeout: '0' is not a time limit"),
    (["--timeout", "nan"], {}, "--timeout: 'nan' is not a time limit"),
    (["--memory-limit", "5 parsecs"], {}, "--memory-limit: '5 parsecs' is not a memory size"),
    (["--memory-limit", "1MB"], {}, "--memory-limit: '1MB' is below the 16MB"),
    ([], {"TRB_QUERY_TIMEOUT": "-1"}, "TRB_QUERY_TIMEOUT: '-1' is not a time limit"),
    ([], {"TRB_QUERY_MEMORY_LIMIT": "lots"}, "TRB_QUERY_MEMORY_LIMIT: 'lots' is not a memory size"),
])
def test_a_bad_limit_is_a_usage_error_naming_where_it_came_from(store, capsys, monkeypatch, args, env, named):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    code, out, err, _ = _query(store, capsys, "SELECT 1", *args)
    assert code == ExitCode.USAGE and out == ""
    assert _one_line(err).startswith(named)


def test_the_defaults_protect_a_laptop_and_the_library_query_is_bounded_too(store, monkeypatch):
    limits = query_limits(environ={})
    assert (limits.timeout_s, limits.memory_text) == (DEFAULT_TIMEOUT_S, DEFAULT_MEMORY) == (60.0, "2GB")
    monkeypatch.setenv("TRB_QUERY_MEMORY_LIMIT", "64MB")
    with pytest.raises(ResultsError, match="memory limit of 64MB .set by TRB_QUERY_MEMORY_LIMIT"):
        ResultsStore(store).query(STRING_AGG)
    assert ResultsStore(store).query("SELECT count(*) FROM runs") == (["count_star()"], [(1,)])
