"""`trb query` reaches the results store and nothing else on the machine (issue 18, point 6).

Each attack runs the real command line on a real results store, with real files beside it and a
loopback HTTP server that counts what reaches it: it must exit RESULTS with one line on stderr,
show nothing of the files, write nothing, reach no server, and leave the store byte-identical. A
``SET`` or ``RESET`` in the same SQL cannot lift the sandbox. A missing store is an error for every
command that reads one, and is never made.
"""

from __future__ import annotations

import hashlib
import json

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from counting_server import CountingServer
from toolkit.errors import ExitCode
from trb.cli import main
from trb.results import ResultsError, ResultsStore

SECRET = "TOPSECRET-0c1d2e3f"


@pytest.fixture(scope="module")
def loopback():
    with CountingServer(SECRET) as srv:
        yield srv


@pytest.fixture()
def http_url(loopback):
    loopback.hits.clear()
    return loopback.url


@pytest.fixture()
def work(tmp_path):
    """A results store with one run, and beside it a text file, a CSV, a parquet file and another database."""
    (tmp_path / "secret.txt").write_text(SECRET + "\n")
    (tmp_path / "secret.csv").write_text(f"s\n{SECRET}\n")
    pq.write_table(pa.table({"s": [SECRET]}), tmp_path / "secret.parquet")
    con = duckdb.connect(str(tmp_path / "other.duckdb"))
    con.execute(f"CREATE TABLE loot AS SELECT '{SECRET}' AS s")
    con.close()
    store = ResultsStore(tmp_path / "results.duckdb")
    store.record_run({"run_id": "r1", "baseline": "trace-full", "adapter_spec": {"kind": "toy"}},
                     [{"track": "1", "metric": "m", "item_id": "i1", "session_id": "s1", "score": 0.5}])
    return tmp_path


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# (case, SQL with {d} for the directory and {url} for the loopback server, what must not exist afterwards)
ATTACKS = [
    ("read_text", "SELECT * FROM read_text('{d}/secret.txt')", None),
    ("read_csv", "SELECT * FROM read_csv('{d}/secret.txt', header = false)", None),
    ("read_csv_auto", "SELECT * FROM read_csv_auto('{d}/secret.csv')", None),
    ("read_parquet", "SELECT * FROM read_parquet('{d}/secret.parquet')", None),
    ("read_blob", "SELECT content::VARCHAR FROM read_blob('{d}/secret.txt')", None),
    ("read_json", "SELECT * FROM read_json('{d}/secret.txt')", None),
    ("a path as a table", "SELECT * FROM '{d}/secret.csv'", None),
    ("sniff_csv", "SELECT Columns::VARCHAR FROM sniff_csv('{d}/secret.csv')", None),
    ("glob", "SELECT * FROM glob('{d}/*')", None),
    ("glob of /", "SELECT * FROM glob('/*')", None),
    ("parquet_metadata", "SELECT * FROM parquet_metadata('{d}/secret.parquet')", None),
    ("ATTACH another database", "ATTACH '{d}/other.duckdb' AS o; SELECT * FROM o.loot", None),
    ("ATTACH a new database", "ATTACH '{d}/new.duckdb' AS n", "new.duckdb"),
    ("COPY TO a file", "COPY (SELECT * FROM runs) TO '{d}/copied.csv'", "copied.csv"),
    ("COPY TO parquet", "COPY runs TO '{d}/copied.parquet' (FORMAT parquet)", "copied.parquet"),
    ("COPY FROM a file", "CREATE TEMP TABLE t (s VARCHAR); COPY t FROM '{d}/secret.csv'; SELECT * FROM t", None),
    ("EXPORT DATABASE", "EXPORT DATABASE '{d}/exported'", "exported"),
    ("INSTALL httpfs", "INSTALL httpfs", None),
    ("INSTALL from a loopback repository", "INSTALL httpfs FROM '{url}'", None),
    ("FORCE INSTALL", "FORCE INSTALL json", None),
    ("LOAD httpfs", "LOAD httpfs", None),
    ("LOAD a file", "LOAD '{d}/secret.txt'", None),
    ("a URL in a reader", "SELECT * FROM read_csv('{url}/data.csv')", None),
    ("a URL as a table", "SELECT * FROM '{url}/data.csv'", None),
    ("CREATE SECRET", "CREATE SECRET s (TYPE s3, KEY_ID 'k', SECRET 'v')", None),
    ("SET enable_external_access back on", "SET enable_external_access = true; SELECT * FROM read_text('{d}/secret.txt')",
     None),
    ("RESET enable_external_access", "RESET enable_external_access; SELECT * FROM read_text('{d}/secret.txt')", None),
    ("SET GLOBAL enable_external_access", "SET GLOBAL enable_external_access = true", None),
    ("SET lock_configuration off", "SET lock_configuration = false; SET enable_external_access = true", None),
    ("RESET lock_configuration", "RESET lock_configuration", None),
    ("SET allowed_directories", "SET allowed_directories = ['{d}']; SELECT * FROM read_text('{d}/secret.txt')", None),
    ("SET allowed_paths", "SET allowed_paths = ['{d}/secret.txt']; SELECT * FROM read_text('{d}/secret.txt')", None),
    ("SET autoinstall back on", "SET autoinstall_known_extensions = true", None),
    ("PRAGMA enable_external_access", "PRAGMA enable_external_access = true", None),
    ("SET temp_directory elsewhere", "SET temp_directory = '{d}/spill'", None),
    ("writing the store", "DELETE FROM runs", None),
    ("dropping a table", "DROP TABLE item_scores", None),
    # issue 41: DuckDB lets a sandboxed connection write inside its temporary directory (<store>.tmp by default)
    ("EXPORT DATABASE into <store>.tmp", "EXPORT DATABASE '{d}/results.duckdb.tmp/'", "results.duckdb.tmp"),
    ("COPY TO <store>.tmp", "COPY (SELECT 'any content') TO '{d}/results.duckdb.tmp/x.csv'", "results.duckdb.tmp"),
    ("COPY TO a relative path", "COPY (SELECT 1) TO 'relative.csv'", None),
    ("ATTACH a new file in <store>.tmp", "ATTACH '{d}/results.duckdb.tmp/n.duckdb' AS n", "results.duckdb.tmp"),
    ("SET temp_directory to <store>.tmp", "SET temp_directory = '{d}/results.duckdb.tmp'", "results.duckdb.tmp"),
    ("CREATE TABLE in the store", "CREATE TABLE x AS SELECT 1 AS i", None),
    ("CREATE TEMP TABLE", "CREATE TEMP TABLE x AS SELECT 1 AS i", None),
    ("CREATE VIEW", "CREATE VIEW v AS SELECT 1 AS i", None),
    ("INSERT", "INSERT INTO meta VALUES ('k', 'v')", None),
    ("a SELECT, then EXPORT", "SELECT 1; EXPORT DATABASE '{d}/exported'", "exported"),
    ("PRAGMA memory_limit", "PRAGMA memory_limit = '100GB'", None),
    ("PRAGMA show_tables", "PRAGMA show_tables", None),
    ("SET memory_limit", "SET memory_limit = '100GB'", None),
    ("SET threads", "SET threads = 64", None),
    ("CHECKPOINT", "CHECKPOINT", None),
    ("CALL a table function", "CALL pragma_version()", None),
    ("VACUUM", "VACUUM", None),
    ("USE another catalogue", "USE temp", None),
    ("DETACH the store", "DETACH results", None),
    ("BEGIN", "BEGIN TRANSACTION", None),
]


@pytest.mark.parametrize("case,sql,made", ATTACKS, ids=[a[0] for a in ATTACKS])
def test_an_escape_from_trb_query_is_refused_in_one_line(work, http_url, loopback, capsys, monkeypatch, case, sql,
                                                         made):
    monkeypatch.chdir(work)  # a relative path lands beside the store
    store = work / "results.duckdb"
    before = _digest(store)
    listing = sorted(work.rglob("*"))
    text = sql.format(d=work, url=http_url)
    capsys.readouterr()
    code = main(["query", text, "--results", str(store)])
    out, err = capsys.readouterr()
    assert sorted(work.rglob("*")) == listing, f"{case} made a file or directory"
    assert code == ExitCode.RESULTS, (case, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert SECRET not in out + err and out == ""
    assert not loopback.hits, f"{case} reached the loopback server: {loopback.hits}"
    if made is not None:
        assert not (work / made).exists()
    assert not (work / "spill").exists()
    assert _digest(store) == before


def test_a_refusal_says_why(work, capsys):
    capsys.readouterr()
    assert main(["query", f"SELECT * FROM read_text('{work}/secret.txt')", "--results", str(work / "results.duckdb")]) \
        == ExitCode.RESULTS
    err = capsys.readouterr().err
    assert "Permission Error" in err and "no files, network or extensions" in err


def test_ordinary_queries_still_work_and_json_columns_decode(work, capsys):
    store = work / "results.duckdb"
    capsys.readouterr()
    assert main(["query", "SELECT run_id, baseline FROM runs", "--results", str(store)]) == 0
    out = capsys.readouterr().out
    assert "r1" in out and "trace-full" in out
    assert main(["query", "SELECT adapter_spec FROM runs", "--results", str(store), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"adapter_spec": {"kind": "toy"}}]
    # the store's own data stays queryable in every way that stays inside it
    rows = ResultsStore(store).query("WITH x AS (SELECT count(*) AS n FROM item_scores) SELECT n FROM x")
    assert rows == (["n"], [(1,)])


def test_the_library_query_is_sandboxed_too(work):
    store = ResultsStore(work / "results.duckdb")
    with pytest.raises(ResultsError, match="Permission Error"):
        store.query(f"SELECT * FROM read_text('{work}/secret.txt')")
    with pytest.raises(ResultsError, match="got a COPY statement"):
        store.query_records(f"COPY runs TO '{work}/x.csv'")
    assert not (work / "x.csv").exists()


@pytest.mark.parametrize("command", [["query", "SELECT 1"], ["report"], ["plan"], ["rerun", "0123456789ab"]])
def test_a_missing_results_store_is_an_error_and_is_not_made(tmp_path, capsys, command):
    missing = tmp_path / "not" / "here.duckdb"
    capsys.readouterr()
    code = main([*command, "--results", str(missing)])
    err = capsys.readouterr().err
    assert code == ExitCode.RESULTS
    assert err.strip().splitlines() == [f"no results store at {missing} (`trb run --results {missing}` makes one)"]
    assert not missing.exists() and not missing.parent.exists()
