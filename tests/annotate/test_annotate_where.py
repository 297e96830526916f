"""`trb-annotate push --where SQL`: the filter reaches the corpus's item table and nothing else (issue 18, point 6).

The filter runs before push talks to Label Studio, so the server here is a port nobody listens on:
a filter that got through would make push go on to it (exit UNREACHABLE). Each attack runs the
real command line on a real corpus, with real files beside it and a loopback HTTP server that
counts what reaches it: it must exit USAGE with one line naming ``--where``, touch no file, reach no
server and leave the corpus byte-identical. The library function the CLI calls
(:func:`annotate.tasks.render_tasks`) is held to the same on an open corpus connection.
"""

from __future__ import annotations

import hashlib

import duckdb
import pytest

from annotate.cli import main
from annotate.tasks import item_targets, render_tasks
from corpus import Corpus, ingest, init_corpus
from corpus.errors import UsageError
from counting_server import CountingServer
from factories import attribution, counterfactual, session, write_jsonl
from ls_server import free_port
from toolkit.errors import ExitCode

SECRET = "TOPSECRET-9a8b7c6d"


@pytest.fixture(scope="module")
def loopback():
    with CountingServer(SECRET) as srv:
        yield srv


@pytest.fixture()
def http_url(loopback):
    loopback.hits.clear()
    return loopback.url


@pytest.fixture()
def corpus(tmp_path):
    (tmp_path / "secret.txt").write_text(SECRET + "\n")
    con = duckdb.connect(str(tmp_path / "other.duckdb"))
    con.execute(f"CREATE TABLE loot AS SELECT '{SECRET}' AS s")
    con.close()
    c = Corpus(init_corpus(tmp_path / "c"))
    recs = [session("s1"), attribution("A1", "s1", 1, "self"), attribution("A2", "s1", 2, "exogenous"),
            counterfactual("s1.t0.cf0", "s1", 0)]
    ingest(c, [write_jsonl(tmp_path / "in.jsonl", recs)], progress=False)
    return c


_ITEMS = "SELECT item_id, session_id, t FROM store.attribution WHERE (true"
# (case, the --where text with {d} the directory, {url} the loopback server, {db} the corpus file; a file that
# must not exist afterwards)
ATTACKS = [
    ("read_text", "EXISTS (SELECT 1 FROM read_text('{d}/secret.txt') WHERE content LIKE '%TOPSECRET%')", None),
    ("read_csv", "EXISTS (SELECT 1 FROM read_csv('{d}/secret.txt', header = false))", None),
    ("read_blob", "EXISTS (SELECT 1 FROM read_blob('{d}/secret.txt'))", None),
    ("glob", "EXISTS (SELECT 1 FROM glob('{d}/*'))", None),
    ("a path as a table", "EXISTS (SELECT 1 FROM '{d}/secret.txt')", None),
    ("a URL", "EXISTS (SELECT 1 FROM read_csv('{url}/data.csv'))", None),
    ("UNION with a file", "true) UNION ALL (SELECT content, content, 0 FROM read_text('{d}/secret.txt')", None),
    ("a second statement: COPY TO", "true); COPY (SELECT 1) TO '{d}/copied.csv'; " + _ITEMS, "copied.csv"),
    ("a second statement: ATTACH", "true); ATTACH '{d}/other.duckdb' AS o; " + _ITEMS, None),
    ("a second statement: EXPORT", "true); EXPORT DATABASE '{d}/exported'; " + _ITEMS, "exported"),
    ("a second statement: INSTALL", "true); INSTALL httpfs FROM '{url}'; " + _ITEMS, None),
    ("a second statement: SET", "true); SET enable_external_access = true; " + _ITEMS, None),
    ("a second statement: RESET", "true); RESET lock_configuration; " + _ITEMS, None),
    ("DETACH, ATTACH read-write, DELETE",
     "true); DETACH store; ATTACH '{db}' AS store; DELETE FROM store.attribution; " + _ITEMS, None),
    ("a statement after a comment", "true) -- \n; DELETE FROM store.attribution; " + _ITEMS, None),
]


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("case,where,made", ATTACKS, ids=[a[0] for a in ATTACKS])
def test_an_escape_through_push_where_is_refused_before_any_server_call(corpus, http_url, loopback, capsys,
                                                                        monkeypatch, case, where, made):
    d = corpus.dir.parent
    db = corpus.dir / "corpus.duckdb"
    before = _digest(db)
    monkeypatch.setenv("LABEL_STUDIO_URL", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "k" * 24)
    monkeypatch.setenv("TRB_LS_RETRIES", "0")
    text = where.format(d=d, url=http_url, db=db)
    capsys.readouterr()
    code = main(["push", "--kind", "attribution", "--corpus", str(corpus.dir), "--where", text, "-q"])
    out, err = capsys.readouterr()
    assert code == ExitCode.USAGE, (case, err)  # not UNREACHABLE: push never got as far as the server
    assert len(err.strip().splitlines()) == 1 and err.startswith("--where ") and "Traceback" not in err
    assert SECRET not in err.replace(text, "") and out == ""
    assert not loopback.hits, f"{case} reached the loopback server"
    if made is not None:
        assert not (d / made).exists()
    assert _digest(db) == before


def test_the_library_filter_is_sandboxed_and_the_connection_stays_usable(corpus):
    d = corpus.dir.parent
    with corpus.open(write=False) as con:
        with pytest.raises(UsageError, match="Permission Error"):
            render_tasks(con, "attribution", where=f"EXISTS (SELECT 1 FROM read_text('{d}/secret.txt'))")
        with pytest.raises(UsageError, match="SQL statements of one"):
            render_tasks(con, "attribution", where="true); DETACH store; SELECT 1, 2, 3 WHERE (true")
        # an ordinary filter on the same connection works, and so does what push does next
        tasks = render_tasks(con, "attribution", where="item_id = 'A2'")
        assert len(tasks) == 1 and tasks[0]["step"] == 3
        assert len(render_tasks(con, "continuation", where="origin = 'same_session_revision'")) == 1
        assert set(item_targets(con, "attribution")) >= {t["trb_item_id"] for t in tasks}
    with corpus.open(write=True) as con:  # the next connection is not sandboxed: the sandbox ended with it
        assert con.execute("SELECT count(*) FROM store.attribution").fetchone() == (2,)


@pytest.mark.parametrize("env,where,said", [
    ({"TRB_QUERY_TIMEOUT": "0.5"},
     "EXISTS (SELECT 1 FROM range(100000) a, range(100000) b, range(1000000) c WHERE a.range + b.range + c.range < 0)",
     "stopped at its time limit of 0.5 s (set by TRB_QUERY_TIMEOUT"),
    ({"TRB_QUERY_MEMORY_LIMIT": "64MB"},
     "(SELECT length(string_agg(repeat('x', 1000), ',')) FROM range(10000000)) > 0",
     "stopped: it needed more than its memory limit of 64MB (set by TRB_QUERY_MEMORY_LIMIT"),
    ({"TRB_QUERY_MEMORY_LIMIT": "64MB"},  # an aggregate that would spill to disk: stopped instead, nothing written
     "(SELECT count(*) FROM (SELECT DISTINCT range FROM range(20000000))) > 0",
     "memory limit of 64MB"),
], ids=["a cross join of 1e16 rows", "string_agg", "an aggregate that would spill"])
def test_a_runaway_filter_stops_at_its_limit_in_one_line_and_writes_nothing(corpus, capsys, monkeypatch, tmp_path,
                                                                            env, where, said):
    monkeypatch.chdir(tmp_path)  # an in-memory DuckDB spills to ./.tmp by default
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("LABEL_STUDIO_URL", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "k" * 24)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    listing = sorted(tmp_path.rglob("*"))
    capsys.readouterr()
    code = main(["push", "--kind", "attribution", "--corpus", str(corpus.dir), "--where", where, "-q"])
    out, err = capsys.readouterr()
    assert code == ExitCode.USAGE, err
    assert len(err.strip().splitlines()) == 1 and err.startswith(f"--where {where!r} stopped") and said in err and out == ""
    assert sorted(p for p in tmp_path.rglob("*") if not p.name.endswith(".lock")) == \
        [p for p in listing if not p.name.endswith(".lock")]
