"""The results store on real DuckDB files: round trips, atomic writes, typed errors, the lock."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from tests_paths import ROOT
from trb.results import ITEM_SCHEMA, RESULTS_FORMAT_VERSION, ResultsBusy, ResultsError, ResultsStore

# writes and reads results stores of hundreds of thousands of items
pytestmark = pytest.mark.slow


def item(i: int, **over) -> dict:
    row = {"track": "1", "metric": "tv", "item_id": f"cf{i}", "session_id": f"s{i % 3}", "t": i, "split": "eval",
           "context_id": "ctx", "score": i / 10, "origin": "synthetic" if i % 2 else "paired_session",
           "adversarial": i == 1, "ood": False, "detail": {"tv": 1 - i / 10}}
    row.update(over)
    return row


def run_row(**over) -> dict:
    row = {"release_sha": "a" * 64, "release_version": "0.1.0", "release_kind": "smoke", "smoke_test": True,
           "baseline": "trace-full", "adapter_tier": "native", "adapter_spec": {"kind": "native", "model": "tiny"},
           "seed": 7, "tracks": ["1", "3"], "split": "eval", "synthetic_share": 0.25, "timings": {"wall_s": 1.5}}
    row.update(over)
    return row


def plain(path: Path, sql: str):
    """Read the store with plain DuckDB, not the toolkit."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_a_new_store_has_the_tables_and_the_format_version(tmp_path):
    path = tmp_path / "sub" / "results.duckdb"
    ResultsStore(path)
    tables = {r[0] for r in plain(path, "SELECT table_name FROM information_schema.tables")}
    assert tables == {"meta", "runs", "item_scores", "run_parts"}
    assert plain(path, "SELECT value FROM meta WHERE key = 'results_format_version'") == [(RESULTS_FORMAT_VERSION,)]
    cols = [r[0] for r in plain(path, "SELECT column_name FROM information_schema.columns "
                                      "WHERE table_name = 'item_scores' ORDER BY ordinal_position")]
    assert cols == ITEM_SCHEMA.names
    assert not list(tmp_path.glob("sub/.results.duckdb.init-*"))
    ResultsStore(path)  # reopening an existing store is fine


def test_record_run_round_trips_the_run_and_its_items(tmp_path):
    store = ResultsStore(tmp_path / "r.duckdb")
    items = [item(i) for i in range(5)]
    run_id = store.record_run(run_row(), items)
    assert re.fullmatch(r"[0-9a-f]{32}", run_id)
    [run] = store.runs()
    assert run["run_id"] == run_id and run["baseline"] == "trace-full" and run["tracks"] == ["1", "3"]
    assert run["adapter_spec"] == {"kind": "native", "model": "tiny"} and run["timings"] == {"wall_s": 1.5}
    assert run["n_items"] == 5 and run["smoke_test"] is True and run["seed"] == 7
    assert run["trb_version"] == "0.1" and run["created_at"]
    # the JSON really is stored as JSON text
    assert json.loads(plain(store.path, "SELECT adapter_spec FROM runs")[0][0]) == {"kind": "native", "model": "tiny"}
    got = store.items(run_id).to_pylist()
    assert [r["item_id"] for r in got] == [f"cf{i}" for i in range(5)]
    assert got[3]["score"] == pytest.approx(0.3) and got[3]["session_id"] == "s0" and got[1]["adversarial"] is True
    assert json.loads(got[2]["detail"]) == {"tv": 0.8}
    assert all(r["run_id"] == run_id for r in got)
    assert store.items(run_id).schema == ITEM_SCHEMA


def test_record_run_takes_an_arrow_table_and_keeps_a_given_run_id(tmp_path):
    store = ResultsStore(tmp_path / "r.duckdb")
    table = pa.table({"track": ["3", "3"], "metric": ["attribution"] * 2, "item_id": ["a1", "a2"],
                      "session_id": ["s1", "s2"], "score": [1, 0], "label": ["self", "exogenous"],
                      "predicted": ["self", "self"], "t": pa.array([3, 4], pa.int64())})
    assert store.record_run(run_row(run_id="my-run"), table) == "my-run"
    got = store.items("my-run", track="3")
    assert got.column("score").to_pylist() == [1.0, 0.0] and got.column("t").to_pylist() == [3, 4]
    assert got.column("origin").to_pylist() == [None, None]
    assert store.items("my-run", track="1").num_rows == 0


def test_runs_filter_by_release_and_keep_recording_order(tmp_path):
    store = ResultsStore(tmp_path / "r.duckdb")
    ids = [store.record_run(run_row(release_sha=sha, created_at="2026-08-03T10:00:00+00:00", baseline=b), [item(0)])
           for sha, b in [("x", "b1"), ("y", "b2"), ("x", "b3")]]
    assert [r["run_id"] for r in store.runs()] == ids  # equal timestamps: insertion order
    assert [r["baseline"] for r in store.runs(release_sha="x")] == ["b1", "b3"]
    assert store.runs(release_sha="nope") == []


def test_a_failing_insert_leaves_no_run_row(tmp_path):
    store = ResultsStore(tmp_path / "r.duckdb")
    bad = [item(0), item(1, session_id=None)]  # item_scores.session_id is NOT NULL
    with pytest.raises(ResultsError, match="NOT NULL"):
        store.record_run(run_row(run_id="r1"), bad)
    assert store.runs() == []
    assert plain(store.path, "SELECT count(*) FROM runs") == [(0,)]
    assert plain(store.path, "SELECT count(*) FROM item_scores") == [(0,)]


def test_a_duplicate_item_rolls_back_the_whole_run(tmp_path):
    store = ResultsStore(tmp_path / "r.duckdb")
    with pytest.raises(ResultsError, match="cf1.*appears 2 times"):
        store.record_run(run_row(run_id="r1"), [item(0), item(1), item(1)])
    assert plain(store.path, "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM item_scores)") == [(0, 0)]


def test_a_store_made_by_its_first_run_is_whole_or_absent(tmp_path):
    """``create=False`` (what `trb run` uses): the file appears with the first run in it, or not at all."""
    path = tmp_path / "sub" / "r.duckdb"
    store = ResultsStore(path, create=False)
    assert not path.exists()
    with pytest.raises(ResultsError, match="no results store at"):
        store.runs()
    for bad in ([item(0), item(1, session_id=None)], [item(0), item(1), item(1)]):
        with pytest.raises(ResultsError, match="not stored|appears 2 times"):
            store.record_run(run_row(run_id="r1"), bad)
        assert not path.exists()
        assert [p.name for p in path.parent.iterdir()] in ([], ["r.duckdb.lock"])  # no scratch file left
    store.record_run(run_row(run_id="r1"), [item(0), item(1)])
    assert plain(path, "SELECT run_id, n_items FROM runs") == [("r1", 2)]
    assert plain(path, "SELECT value FROM meta WHERE key = 'results_format_version'") == [(RESULTS_FORMAT_VERSION,)]
    store.record_run(run_row(run_id="r2"), [item(3)])  # the second run goes into the file the first one made
    assert [r["run_id"] for r in ResultsStore(path).runs()] == ["r1", "r2"]


def test_a_duplicate_run_id_is_refused_and_the_first_run_kept(tmp_path):
    store = ResultsStore(tmp_path / "r.duckdb")
    store.record_run(run_row(run_id="r1"), [item(0), item(1)])
    with pytest.raises(ResultsError, match="already stored"):
        store.record_run(run_row(run_id="r1", baseline="other"), [item(5)])
    assert [r["baseline"] for r in store.runs()] == ["trace-full"]
    assert store.items("r1").column("item_id").to_pylist() == ["cf0", "cf1"]


def test_unknown_columns_and_bad_types_are_results_errors(tmp_path):
    store = ResultsStore(tmp_path / "r.duckdb")
    with pytest.raises(ResultsError, match="no column.*colour"):
        store.record_run(run_row(), [item(0, colour="red")])
    with pytest.raises(ResultsError, match="no column.*flavour"):
        store.record_run(run_row(flavour="x"), [item(0)])
    with pytest.raises(ResultsError, match="score"):
        store.record_run(run_row(), pa.table({"track": ["1"], "metric": ["tv"], "item_id": ["i"],
                                              "session_id": ["s"], "score": ["high"]}))
    assert store.runs() == []


def test_items_of_an_unknown_run_is_an_error(tmp_path):
    store = ResultsStore(tmp_path / "r.duckdb")
    with pytest.raises(ResultsError, match="no run 'nope'"):
        store.items("nope")


def test_items_reads_only_the_columns_asked_for_in_the_order_asked(tmp_path):
    store = ResultsStore(tmp_path / "r.duckdb")
    rid = store.record_run(run_row(), [item(i) for i in range(6)] + [item(9, track="3", metric="attribution")])
    whole = store.items(rid)
    some = store.items(rid, columns=["score", "session_id", "metric"])
    assert some.column_names == ["score", "session_id", "metric"]
    assert some.to_pylist() == whole.select(["score", "session_id", "metric"]).to_pylist()
    assert some.schema == pa.schema([ITEM_SCHEMA.field(c) for c in ["score", "session_id", "metric"]])
    assert store.items(rid, track="3", columns=["item_id"]).to_pylist() == [{"item_id": "cf9"}]
    with pytest.raises(ResultsError, match="no column.*nonsense"):
        store.items(rid, columns=["score", "nonsense"])


def test_items_come_in_the_order_recorded_across_row_groups_runs_and_parts(tmp_path):
    """items() reads without sorting: the order must still be the order the items were recorded in, over many row
    groups (read by DuckDB's threads in parallel), another run's items stored before, between and after, and a run
    stored part by part."""
    import random

    store = ResultsStore(tmp_path / "r.duckdb")
    rng = random.Random(5)

    def table(n: int, prefix: str) -> pa.Table:
        ids = [f"{prefix}{i}" for i in range(n)]
        rng.shuffle(ids)  # neither id nor insertion order is sorted: a reorder by either would show
        tracks = [rng.choice("13") for _ in range(n)]
        return pa.table({"track": tracks, "metric": ["tv" if t == "1" else "attribution" for t in tracks],
                         "item_id": ids, "session_id": [f"s{rng.randrange(5000)}" for _ in range(n)],
                         "score": pa.array([rng.random() for _ in range(n)], pa.float64())})

    before = store.record_run(run_row(), table(1_000, "b"))
    big_table = table(300_000, "x")  # three row groups of 122,880 rows
    big = store.record_run(run_row(), big_table)
    run_id = store.begin_run(run_row())
    parts = [table(n, f"p{k}-") for k, n in enumerate([70_000, 5, 130_000])]
    store.record_parts(run_id, [{"track": "1", "part": 0, "first_key": "s", "n_input": 1, "items": parts[0],
                                 "summary": {}, "timings": {}}])
    store.record_run(run_row(), table(2_000, "m"))  # another run between the parts
    store.finish_run(run_id, timings={}, n_items=sum(p.num_rows for p in parts),
                     parts=[{"track": "1", "part": k, "first_key": "s", "n_input": 1, "items": p, "summary": {},
                             "timings": {}} for k, p in enumerate(parts[1:], start=1)])
    for rid, recorded in [(big, big_table), (run_id, pa.concat_tables(parts)), (before, None)]:
        by_rowid = [r[0] for r in plain(store.path, f"SELECT item_id FROM item_scores WHERE run_id = '{rid}' "
                                                    "ORDER BY rowid")]
        assert store.items(rid, columns=["item_id"]).column(0).to_pylist() == by_rowid
        if recorded is not None:
            assert by_rowid == recorded.column("item_id").to_pylist()
            for track in "13":
                want = [i for i, t in zip(recorded.column("item_id").to_pylist(), recorded.column("track").to_pylist())
                        if t == track]
                got = store.items(rid, track=track, columns=["item_id", "score"])
                assert got.column("item_id").to_pylist() == want

def test_query_returns_columns_and_rows(tmp_path):
    store = ResultsStore(tmp_path / "r.duckdb")
    rid = store.record_run(run_row(), [item(i) for i in range(4)])
    cols, rows = store.query("SELECT session_id, count(*) AS n, sum(score) AS s FROM item_scores "
                             "GROUP BY 1 ORDER BY 1")
    assert cols == ["session_id", "n", "s"]
    assert [(r[0], r[1]) for r in rows] == [("s0", 2), ("s1", 1), ("s2", 1)]
    assert rows[0][2] == pytest.approx(0.3)
    assert store.query(f"SELECT baseline FROM runs WHERE run_id = '{rid}'") == (["baseline"], [("trace-full",)])


def test_a_bad_query_raises_results_error_with_duckdbs_message(tmp_path):
    store = ResultsStore(tmp_path / "r.duckdb")
    sql = "SELECT no_such_column FROM runs"
    con = duckdb.connect(str(store.path), read_only=True)
    try:
        with pytest.raises(duckdb.Error) as direct:
            con.execute(sql)
    finally:
        con.close()
    with pytest.raises(ResultsError) as ours:
        store.query(sql)
    # DuckDB's words on one line (what the CLI prints), without the query it echoes with a caret
    said = str(direct.value).split("\nLINE ")[0]
    assert str(ours.value) == " ".join(x.strip() for x in said.splitlines() if x.strip())
    assert "Candidate bindings" in str(ours.value) and "\n" not in str(ours.value)
    assert ours.value.__cause__ is None and ours.value.__suppress_context__


def test_query_cannot_write_the_store(tmp_path):
    store = ResultsStore(tmp_path / "r.duckdb")
    store.record_run(run_row(), [item(0)])
    for sql, kind in (("DELETE FROM runs", "DELETE"), ("DROP TABLE item_scores", "DROP"),
                      ("CREATE TABLE x (a INT)", "CREATE")):
        with pytest.raises(ResultsError, match=f"query refused: expected one statement that only reads .*got a {kind}"):
            store.query(sql)  # refused before it runs (and the store is opened read-only besides)
    assert len(store.runs()) == 1


def test_a_file_that_is_not_a_results_store_is_refused_untouched(tmp_path):
    text = tmp_path / "notes.duckdb"
    text.write_text("hello", encoding="utf-8")
    with pytest.raises(ResultsError, match="not a results store"):
        ResultsStore(text)
    assert text.read_text(encoding="utf-8") == "hello"
    other = tmp_path / "corpus.duckdb"
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE sessions (id INT)")
    con.close()
    with pytest.raises(ResultsError, match="not a results store"):
        ResultsStore(other)
    assert {r[0] for r in plain(other, "SELECT table_name FROM information_schema.tables")} == {"sessions"}
    with pytest.raises(ResultsError, match="directory"):
        ResultsStore(tmp_path)


def test_a_store_of_another_format_version_is_refused(tmp_path):
    path = tmp_path / "r.duckdb"
    ResultsStore(path)
    con = duckdb.connect(str(path))
    con.execute("UPDATE meta SET value = '99' WHERE key = 'results_format_version'")
    con.close()
    with pytest.raises(ResultsError, match="format 99"):
        ResultsStore(path)


_FORMAT_1 = {
    "runs": "run_id VARCHAR PRIMARY KEY, created_at VARCHAR NOT NULL, trb_version VARCHAR, release_sha VARCHAR, "
            "release_version VARCHAR, release_kind VARCHAR, smoke_test BOOLEAN, baseline VARCHAR, "
            "adapter_tier VARCHAR, adapter_spec VARCHAR, seed BIGINT, tracks VARCHAR[], split VARCHAR, "
            "synthetic_share DOUBLE, timings VARCHAR, toolkit_version VARCHAR, n_items INTEGER",
    "item_scores": "run_id VARCHAR NOT NULL, track VARCHAR NOT NULL, metric VARCHAR NOT NULL, "
                   "item_id VARCHAR NOT NULL, session_id VARCHAR NOT NULL, t INTEGER, split VARCHAR, "
                   "context_id VARCHAR, score DOUBLE, label VARCHAR, predicted VARCHAR, belief DOUBLE, "
                   "origin VARCHAR, adversarial BOOLEAN, ood BOOLEAN, detail VARCHAR",
}


def test_a_format_1_store_is_read_as_it_is_and_upgraded_on_the_next_write(tmp_path):
    """A store written by the previous toolkit (no runs.release_dir) keeps working: read as is, upgraded in place."""
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    for table, cols in _FORMAT_1.items():
        con.execute(f"CREATE TABLE {table} ({cols})")
    con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute("INSERT INTO meta VALUES ('results_format_version', '1')")
    con.execute("INSERT INTO runs (run_id, created_at, baseline, split) VALUES ('old', '2026-11-01', 'b', 'eval')")
    con.execute("INSERT INTO item_scores (run_id, track, metric, item_id, session_id, score) "
                "VALUES ('old', '1', 'tv', 'i1', 's1', 0.25)")
    con.close()
    store = ResultsStore(path)
    assert store.runs()[0]["release_dir"] is None and store.items("old").column("score").to_pylist() == [0.25]
    store.record_run({"run_id": "new", "release_dir": "/r"}, [{"track": "3", "metric": "attribution",
                                                               "item_id": "a", "session_id": "s", "score": 1.0}])
    assert plain(path, "SELECT value FROM meta WHERE key = 'results_format_version'") == [(RESULTS_FORMAT_VERSION,)]
    assert [r["release_dir"] for r in store.runs()] == [None, "/r"]


_HOLDER = """
import sys, time
sys.path.insert(0, {root!r})
from pathlib import Path
from trb.results import _locked
with _locked(Path({path!r}), exclusive=True, wait_seconds=5, purpose="test holder"):
    print("held", flush=True)
    time.sleep(float(sys.argv[1]))
"""


def _hold(path: Path, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER.format(root=str(ROOT), path=str(path)), str(seconds)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_busy_store_names_its_holder_and_gives_up_after_the_bound(tmp_path):
    store = ResultsStore(tmp_path / "r.duckdb", wait_seconds=0.3)
    proc = _hold(store.path, 5)
    try:
        t0 = time.monotonic()
        with pytest.raises(ResultsBusy, match=rf"pid {proc.pid} .*test holder.*nothing was changed"):
            store.record_run(run_row(), [item(0)])
        assert time.monotonic() - t0 < 3
    finally:
        proc.kill()
        proc.communicate()
    assert store.runs() == []


def test_a_writer_waits_for_the_holder_then_proceeds(tmp_path, capfd):
    store = ResultsStore(tmp_path / "r.duckdb", wait_seconds=20)
    proc = _hold(store.path, 0.6)
    try:
        store.record_run(run_row(), [item(0)])
    finally:
        proc.communicate()
    assert len(store.runs()) == 1
    assert f"in use by pid {proc.pid}" in capfd.readouterr().err


def test_a_bulk_insert_of_many_items_stores_every_one(tmp_path):
    # (its speed is measured in bench/engine.py, not asserted here)
    store = ResultsStore(tmp_path / "r.duckdb")
    n = 200_000
    table = pa.table({"track": pa.array(["1"] * n), "metric": pa.array(["tv"] * n),
                      "item_id": pa.array([f"i{i}" for i in range(n)]),
                      "session_id": pa.array([f"s{i % 997}" for i in range(n)]),
                      "score": pa.array([(i % 100) / 100 for i in range(n)], pa.float64())})
    rid = store.record_run(run_row(), table)
    assert plain(store.path, "SELECT count(*), count(DISTINCT session_id) FROM item_scores") == [(n, 997)]
    assert store.items(rid).num_rows == n
    assert os.path.getsize(store.path) > 0


def test_item_rows_become_the_table_a_row_by_row_reading_gives(tmp_path):
    from trb.results import _items_table

    rows = [item(0), item(1, detail='{"already": "text"}'), item(2, detail=None),
            {"track": "3", "metric": "attribution", "item_id": "a0", "session_id": "s0", "label": "self",
             "predicted": "missing", "belief": None, "score": 0},  # columns left out: NULL
            item(3, run_id="someone-else's")]  # a row's run_id is replaced by the run's
    table = _items_table(rows, "r1")
    want = {name: [r.get(name) for r in rows] for name in ITEM_SCHEMA.names}
    want["run_id"] = ["r1"] * len(rows)
    want["detail"] = [v if v is None or isinstance(v, str) else json.dumps(v, sort_keys=True) for v in want["detail"]]
    want["score"] = [float(v) for v in want["score"]]
    assert table.schema == ITEM_SCHEMA and table.to_pydict() == want
    # one track's part: every row leaves out the other tracks' columns, which are NULL all the way down
    one_track = [item(i) for i in range(3)]
    assert not {"label", "predicted", "belief"} & set().union(*one_track)
    table = _items_table(one_track, "r1")
    assert table.schema == ITEM_SCHEMA
    assert table.to_pydict() == {name: ["r1"] * 3 if name == "run_id" else
                                 [r.get(name) if name != "detail" or r.get(name) is None or isinstance(r[name], str)
                                  else json.dumps(r[name], sort_keys=True) for r in one_track]
                                 for name in ITEM_SCHEMA.names}
    with pytest.raises(ResultsError, match=r"column t \(int32\)"):
        _items_table([item(0), item(1, t="late")], "r1")
