"""The process's shared DuckDB instance: attached databases are isolated, written out on detach, and fork-safe."""

from __future__ import annotations

import multiprocessing

import duckdb
import pytest

from trb import duck


def test_attached_databases_keep_their_own_tables():
    a, b = duck.attach(), duck.attach()
    try:
        a.execute("CREATE VIEW steps AS SELECT 1 AS x")
        b.execute("CREATE VIEW steps AS SELECT 2 AS x")
        assert a.execute("SELECT x FROM steps").fetchall() == [(1,)]
        assert b.sql("SELECT x FROM steps").fetchall() == [(2,)]
    finally:
        duck.detach(a)
    assert b.execute("SELECT x FROM steps").fetchall() == [(2,)]  # detaching one leaves the other whole
    duck.detach(b)
    with pytest.raises(duckdb.Error):
        b.execute("SELECT 1")  # a detached connection is closed


def test_a_file_is_complete_once_detached(tmp_path):
    path = tmp_path / "o'brien.duckdb"  # a quote in the path is escaped, not SQL
    con = duck.attach(path)
    con.execute("CREATE TABLE t AS SELECT range AS i FROM range(1000)")
    duck.detach(con)
    plain = duckdb.connect(str(path), read_only=True)  # another instance reads it whole
    try:
        assert plain.execute("SELECT count(*), sum(i) FROM t").fetchall() == [(1000, 499500)]
    finally:
        plain.close()


def test_an_error_inside_a_transaction_still_detaches(tmp_path):
    con = duck.attach(tmp_path / "x.duckdb")
    con.execute("BEGIN TRANSACTION")
    con.execute("CREATE TABLE t (i INTEGER NOT NULL)")
    with pytest.raises(duckdb.Error):
        con.execute("INSERT INTO t VALUES (NULL)")
    duck.detach(con)  # rolls the aborted transaction back, then detaches
    (tmp_path / "x.duckdb").unlink()  # nothing holds the file any more
    again = duck.attach(tmp_path / "x.duckdb")
    assert again.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 't'").fetchall() == [(0,)]
    duck.detach(again)


def _child(queue):
    con = duck.attach()
    try:
        queue.put(con.execute("SELECT 40 + 2").fetchone()[0])
    finally:
        duck.detach(con)


def test_a_forked_child_gets_an_instance_of_its_own():
    parent = duck.attach()  # the parent's instance exists before the fork
    try:
        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        proc = ctx.Process(target=_child, args=(queue,))
        proc.start()
        proc.join(60)
        assert proc.exitcode == 0
        assert queue.get(timeout=5) == 42
        assert parent.execute("SELECT 1").fetchone() == (1,)
    finally:
        duck.detach(parent)


_SPILL_PROBE = """
import os, sys
from trb import duck
con = duck.attach()
limit = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
spill = con.execute("SELECT current_setting('temp_directory')").fetchall()[0][0]
# a sort far larger than the limit: DuckDB spills it to the instance's own folder and finishes
n = con.execute("SELECT count(*) FROM (SELECT md5(range::VARCHAR) || repeat('x', 200) AS s FROM range(1000000) "
                "ORDER BY s)").fetchall()[0][0]
print(limit, spill, n, os.path.isdir(spill), sep="|")
duck.detach(con)
"""


def test_the_instance_is_held_to_trb_duckdb_memory_and_spills_to_a_folder_it_removes(tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "TRB_DUCKDB_MEMORY": "128MB", "TMPDIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", _SPILL_PROBE], env=env, capture_output=True, text=True, check=True)
    limit, spill, n, existed = out.stdout.strip().split("|")
    assert limit == "122.0 MiB" and n == "1000000" and existed == "True"  # 128MB; about 230 MB sorted
    assert spill.startswith(str(tmp_path / "trb-duckdb-"))
    assert not list(tmp_path.iterdir())  # the spill folder went with the process


def test_a_bad_trb_duckdb_memory_is_refused_before_the_instance_is_made():
    import os
    import subprocess
    import sys

    probe = ("from toolkit.duck_memory import BadMemorySetting\nfrom trb import duck\ntry:\n    duck.attach()\n"
             "except BadMemorySetting as e:\n    print(int(e.exit_code), e)\n")
    env = {**os.environ, "TRB_DUCKDB_MEMORY": "lots"}
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True).stdout
    assert out.startswith("2 TRB_DUCKDB_MEMORY='lots' is not a memory size"), out


_WORKERS_PROBE = """
import multiprocessing, os
from trb import duck

def work(_):
    con = duck.attach()  # each worker makes its own instance and ends by os._exit, without atexit
    try:
        return con.execute("SELECT sum(range) FROM range(1000)").fetchall()[0][0]
    finally:
        duck.detach(con)

if __name__ == "__main__":
    with multiprocessing.get_context("fork").Pool(2) as pool:
        print(sum(pool.map(work, range(8))))
"""


def test_worker_processes_that_never_spill_leave_no_scratch_folder(tmp_path):
    """A parse or scoring worker ends without running atexit; its instance's scratch folder is made only at a spill
    (before, every worker left an empty ``trb-duckdb-*`` folder in the temp directory)."""
    import os
    import subprocess
    import sys

    script = tmp_path / "probe.py"
    script.write_text(_WORKERS_PROBE)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(8 * 499500)
    assert not list(scratch.iterdir())
