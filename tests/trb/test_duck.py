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
