"""Issue 18, points 6-8 (queries, URLs, hung servers), and issue 41, point 1 (a query box that cannot write or run
away): what a user's SQL, a URL with credentials and a server that never answers can still do. Prints a table per
part and the before/after figures of bench/README.md.

    .venv/bin/python bench/hardening_query.py [--hang]      # --hang also waits out the hung-server defaults
    .venv/bin/python bench/hardening_query.py --sql-only    # issue 41's part: the SQL cases and the runaway queries

The runaway queries (a 10^16-row cross join, a string_agg of 10 GB, an aggregate that spills) each run
``trb query`` in a process of its own, with ``TRB_QUERY_TIMEOUT=5`` and ``TRB_QUERY_MEMORY_LIMIT=1GB`` (settings a
toolkit without limits ignores); the bench kills one that runs past 20 s or 3 GB, and lists the store's directory
and the temporary directory before and after each.

Every case runs the real command line in this process (``trb query``, ``trb-annotate push --where``,
``trb-annotate status``, ``trb run --adapter served``), on a real results store, a real corpus, a loopback
HTTP server that counts what reaches it, and a socket that accepts connections and never answers. A case
is *refused* when the command exits non-zero with one line on stderr and nothing it tried happened (no file
read shown, no file written, no request reached the loopback server); *escaped* otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import http.server
import io
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

SECRET_TEXT = "TOPSECRET-FILE-CONTENT"
PASSWORD = "hunter2-pw-0x5eed"
TOKEN = "tok-0123456789abcdef"


class _Counting(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):  # noqa: N802 - http.server's name
        _Counting.hits.append(self.path)
        if self.path.startswith("/v1/models"):
            body = json.dumps({"data": [{"id": "tiny"}]}).encode()
        else:
            body = f"a,b\n{SECRET_TEXT},1\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


@contextlib.contextmanager
def loopback_server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


@contextlib.contextmanager
def hung_server():
    """A socket that accepts connections and never answers."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    held, stop = [], threading.Event()

    def accept():
        s.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(s.accept()[0])
            except OSError:
                pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{s.getsockname()[1]}"
    finally:
        stop.set()
        t.join()
        for c in held:
            c.close()
        s.close()


def dead_url() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}"


def run_cli(main, argv, env=None) -> tuple[int, str, str]:
    saved = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(a) for a in argv])
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return code, out.getvalue(), err.getvalue()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "-"


def one_line(err: str) -> bool:
    lines = [x for x in err.strip().splitlines() if x.strip()]
    return len(lines) == 1 and "Traceback" not in err


def show(err: str) -> str:
    lines = err.strip().splitlines()
    return (lines[-1] if lines else "")[:110]


# -- part 6: SQL ---------------------------------------------------------------------------------------------

def sql_cases(work: Path, url: str) -> list[tuple[str, str, callable]]:
    """(name, SQL, escaped(stdout) -> bool) for trb query."""
    secret = work / "secret.txt"
    other = work / "other.duckdb"
    parquet = work / "secret.parquet"
    hit = lambda: bool(_Counting.hits)  # noqa: E731
    read = lambda out: SECRET_TEXT in out  # noqa: E731
    return [
        ("read_text a file", f"SELECT * FROM read_text('{secret}')", lambda out: read(out)),
        ("read_csv a file", f"SELECT * FROM read_csv('{secret}', header=false)", lambda out: read(out)),
        ("read_blob a file", f"SELECT content::VARCHAR AS c FROM read_blob('{secret}')", lambda out: read(out)),
        ("read_parquet a file", f"SELECT * FROM read_parquet('{parquet}')", lambda out: read(out)),
        ("a file path as a table", f"SELECT * FROM '{work / 'secret.csv'}'", lambda out: read(out)),
        ("sniff_csv a file", f"SELECT Columns::VARCHAR FROM sniff_csv('{secret}')", lambda out: read(out) or "column0" in out),
        ("glob a directory", f"SELECT * FROM glob('{work}/*')", lambda out: "secret.txt" in out),
        ("ATTACH another database", f"ATTACH '{other}' AS o; SELECT * FROM o.loot", lambda out: read(out)),
        ("COPY ... TO a file", f"COPY (SELECT 42 AS x) TO '{work / 'copied.csv'}'",
         lambda out: (work / "copied.csv").exists()),
        ("EXPORT DATABASE", f"EXPORT DATABASE '{work / 'exported'}'", lambda out: (work / "exported").exists()),
        ("read a URL (network)", f"SELECT * FROM read_csv('{url}/data.csv')", lambda out: read(out) or hit()),
        ("INSTALL from a loopback repository", f"INSTALL httpfs FROM '{url}'", lambda out: hit()),
        ("INSTALL httpfs", "INSTALL httpfs", lambda out: False),  # judged by the message below
        ("LOAD httpfs", "LOAD httpfs", lambda out: False),
        ("SET enable_external_access back on, then read",
         f"SET enable_external_access = true; SELECT * FROM read_text('{secret}')", lambda out: read(out)),
        ("RESET enable_external_access, then read",
         f"RESET enable_external_access; SELECT * FROM read_text('{secret}')", lambda out: read(out)),
        ("SET allowed_directories, then read",
         f"SET allowed_directories = ['{work}']; SELECT * FROM read_text('{secret}')", lambda out: read(out)),
        ("SET lock_configuration = false, then read",
         f"SET lock_configuration = false; SET enable_external_access = true; SELECT * FROM read_text('{secret}')",
         lambda out: read(out)),
        # issue 41: DuckDB lets a sandboxed connection write in its temporary directory, <store>.tmp by default
        *[(name, sql, lambda out: False) for name, sql in tmp_dir_cases(work)],
    ]


def tmp_dir_cases(work: Path) -> list[tuple[str, str]]:
    """(name, SQL) of issue 41's writes: judged by the listing of the work directory (anything new escaped)."""
    tmp = work / "results.duckdb.tmp"
    return [
        ("EXPORT DATABASE into <store>.tmp", f"EXPORT DATABASE '{tmp}/'"),
        ("COPY TO <store>.tmp (any content)", f"COPY (SELECT 'any content' AS c) TO '{tmp}/x.csv'"),
        ("COPY TO <store>.tmp as parquet", f"COPY (SELECT 42 AS x) TO '{tmp}/x.parquet' (FORMAT parquet)"),
        ("ATTACH a new database in <store>.tmp", f"ATTACH '{tmp}/n.duckdb' AS n"),
        ("COPY TO a relative path", "COPY (SELECT 42 AS x) TO 'relative.csv'"),
        ("SET memory_limit (raise it from inside)", "SET memory_limit = '100GB'"),
        ("PRAGMA memory_limit", "PRAGMA memory_limit = '100GB'"),
        ("SET temp_directory to <store>.tmp", f"SET temp_directory = '{tmp}'"),
    ]


def judge(code: int, out: str, err: str, escaped: bool, sql: str) -> str:
    if escaped or code == 0:
        return "escaped"
    if "Traceback" in err:
        return "traceback"
    policy = ("disabled" in err or "Permission" in err or "locked" in err or "external access" in err
              or "query refused" in err)  # refused by its statement kind, before anything ran
    if not policy and ("install" in err.lower() or "extension" in err.lower()):
        return "tried (offline)"  # it went for the network or the extension directory; only being offline stopped it
    return "refused" if one_line(err) else "refused, not one line"


def part_sql(work: Path) -> dict:
    from trb.cli import main as trb_main
    from trb.results import ResultsStore

    (work / "secret.txt").write_text(SECRET_TEXT + "\n")
    (work / "secret.csv").write_text(f"s\n{SECRET_TEXT}\n")
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"s": [SECRET_TEXT]}), work / "secret.parquet")
    con = duckdb.connect(str(work / "other.duckdb"))
    con.execute(f"CREATE TABLE loot AS SELECT '{SECRET_TEXT}' AS s")
    con.close()
    store = work / "results.duckdb"
    ResultsStore(store)
    before = digest(store)
    rows, tally = [], {"tried": 0, "refused": 0}
    with loopback_server() as url:
        for name, sql, escaped in sql_cases(work, url):
            _Counting.hits.clear()
            listing = sorted(work.rglob("*"))
            cwd = os.getcwd()
            os.chdir(work)  # a relative path lands in the work directory
            try:
                code, out, err = run_cli(trb_main, ["query", sql, "--results", store])
            finally:
                os.chdir(cwd)
            made = sorted(work.rglob("*")) != listing
            verdict = judge(code, out, err, escaped(out) or made, sql)
            tally["tried"] += 1
            tally["refused"] += verdict == "refused"
            rows.append((f"trb query: {name}", verdict, code, show(err)))
    # writes to the store itself (the control: blocked before too)
    for sql in ("CREATE TABLE x AS SELECT 1", "DELETE FROM runs", "DROP TABLE meta", "UPDATE meta SET value = 'x'"):
        code, out, err = run_cli(trb_main, ["query", sql, "--results", store])
        verdict = "refused" if code != 0 and one_line(err) else ("traceback" if code else "escaped")
        tally["tried"] += 1
        tally["refused"] += verdict == "refused"
        rows.append((f"trb query: {sql}", verdict, code, show(err)))
    missing = work / "nowhere" / "results.duckdb"
    code, out, err = run_cli(trb_main, ["query", "SELECT 1", "--results", missing])
    made = missing.exists()
    rows.append(("trb query --results MISSING", "made silently" if made else ("refused" if code else "escaped"),
                 code, show(err)))
    tally["tried"] += 1
    tally["refused"] += (not made) and code != 0
    code, out, err = run_cli(trb_main, ["report", "--results", work / "nowhere2.duckdb"])
    made = (work / "nowhere2.duckdb").exists()
    rows.append(("trb report --results MISSING", "made silently" if made else ("refused" if code else "escaped"),
                 code, show(err)))
    tally["tried"] += 1
    tally["refused"] += (not made) and code != 0
    tally["store_unchanged"] = digest(store) == before
    return {"rows": rows, **tally}


# -- issue 41: runaway queries ---------------------------------------------------------------------------------

RUNAWAY = [
    ("a cross join of 10^16 rows", "SELECT count(*) FROM range(100000) a, range(100000) b, range(1000000) c"),
    ("a string_agg of 10 GB", "SELECT length(string_agg(repeat('x', 1000), ',')) FROM range(10000000)"),
    ("an aggregate of 60M distinct keys (2.4 GB in memory)",
     "SELECT count(*) FROM (SELECT DISTINCT range FROM range(60000000))"),
    ("20M rows returned", "SELECT range FROM range(20000000)"),
]
CAP_S, CAP_BYTES = 20.0, 3 * 1024 ** 3


def _rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def part_runaway(work: Path) -> dict:
    """Each runaway query in a ``trb query`` process of its own: stopped by the command (one line, its limit), or
    killed by the bench past CAP_S / CAP_BYTES; and the files it left in the store's directory or TMPDIR."""
    store = work / "results.duckdb"
    tmpdir = work / "tmpdir"
    tmpdir.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmpdir), "TRB_QUERY_TIMEOUT": "5",
           "TRB_QUERY_MEMORY_LIMIT": "1GB"}
    rows, tally = [], {"tried": 0, "stopped": 0, "left_files": 0}
    for name, sql in RUNAWAY:
        listing = sorted(work.rglob("*"))
        t0 = time.monotonic()
        p = subprocess.Popen([sys.executable, "-m", "trb.cli", "query", sql, "--results", str(store)], cwd=work,
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        peak, killed = 0, None
        while p.poll() is None:
            peak = max(peak, _rss(p.pid))
            if time.monotonic() - t0 > CAP_S or peak > CAP_BYTES:
                killed = f"killed by the bench at {time.monotonic() - t0:.0f} s, {peak / 1024 ** 3:.1f} GB"
                p.kill()
                break
            time.sleep(0.05)
        err = p.communicate()[1]
        took = time.monotonic() - t0
        # the store's own advisory lock file (<store>.lock, made by the first reader) is not a file the query wrote
        left = [str(x.relative_to(work)) for x in sorted(work.rglob("*")) if x not in listing and x.suffix != ".lock"]
        stopped = killed is None and p.returncode not in (0, 70) and one_line(err) and "limit" in err
        verdict = killed or (f"stopped in {took:.1f} s, peak {peak / 1024 ** 3:.2f} GB" if stopped else
                             f"{'finished' if p.returncode == 0 else 'failed'} in {took:.1f} s, peak "
                             f"{peak / 1024 ** 3:.2f} GB")
        if left:
            verdict += f"; left {len(left)} file(s): {', '.join(left[:3])}"
            for x in sorted(work.rglob("*"), reverse=True):
                if x not in listing and x.suffix != ".lock":
                    x.rmdir() if x.is_dir() else x.unlink()
        tally["tried"] += 1
        tally["stopped"] += stopped
        tally["left_files"] += bool(left)
        rows.append((f"trb query: {name}", verdict, p.returncode, show(err)))
    return {"rows": rows, **tally}


def where_cases(work: Path, url: str, db: Path) -> list[tuple[str, str, callable]]:
    secret = work / "secret.txt"
    before = digest(db)
    hit = lambda: bool(_Counting.hits)  # noqa: E731
    return [
        ("read_text in the filter", f"EXISTS (SELECT 1 FROM read_text('{secret}') WHERE content LIKE '%TOPSECRET%')",
         None),
        ("read_csv in the filter", f"EXISTS (SELECT 1 FROM read_csv('{secret}', header=false))", None),
        ("glob in the filter", f"EXISTS (SELECT 1 FROM glob('{work}/*'))", None),
        ("a URL in the filter", f"EXISTS (SELECT 1 FROM read_csv('{url}/data.csv'))", hit),
        ("COPY TO via a second statement",
         f"true); COPY (SELECT 1) TO '{work / 'where-copy.csv'}'; SELECT item_id, session_id, t FROM "
         "store.attribution WHERE (true", lambda: (work / "where-copy.csv").exists()),
        ("ATTACH via a second statement",
         f"true); ATTACH '{work / 'other.duckdb'}' AS o; SELECT item_id, session_id, t FROM store.attribution "
         "WHERE (true", None),
        ("SET enable_external_access back on",
         f"true); SET enable_external_access = true; SELECT item_id, session_id, t FROM store.attribution "
         f"WHERE (EXISTS (SELECT 1 FROM read_text('{secret}'))", None),
        ("INSTALL from a loopback repository",
         f"true); INSTALL httpfs FROM '{url}'; SELECT item_id, session_id, t FROM store.attribution WHERE (true",
         hit),
        ("DETACH the corpus, ATTACH it read-write, DELETE",
         f"true); DETACH store; ATTACH '{db}' AS store; DELETE FROM store.attribution; SELECT 'x' AS item_id, "
         "'s1' AS session_id, 1 AS t WHERE (true", lambda: digest(db) != before),
    ]


def part_where(work: Path) -> dict:
    from annotate.cli import main as annotate_main
    from corpus import Corpus, ingest, init_corpus
    from factories import attribution, session, write_jsonl

    c = Corpus(init_corpus(work / "corpus"))
    ingest(c, [write_jsonl(work / "in.jsonl", [session("s1"), attribution("A1", "s1", 1, "self")])], progress=False)
    db = c.dir / "corpus.duckdb"
    before = digest(db)
    down = dead_url()
    env = {"LABEL_STUDIO_URL": down, "LABEL_STUDIO_API_KEY": "k" * 24, "TRB_LS_RETRIES": "0"}
    rows, tally = [], {"tried": 0, "refused": 0}
    with loopback_server() as url:
        for name, where, effect in where_cases(work, url, db):
            _Counting.hits.clear()
            code, out, err = run_cli(annotate_main, ["push", "--kind", "attribution", "--corpus", c.dir, "--where",
                                                     where, "-q"], env)
            # the filter ran when push got as far as the (dead) server: exit 8
            ran = code == 8 or (effect is not None and effect())
            verdict = "escaped" if ran else ("refused" if one_line(err) and code else "traceback")
            tally["tried"] += 1
            tally["refused"] += verdict == "refused"
            rows.append((f"push --where: {name}", verdict, code, show(err)))
    tally["store_unchanged"] = digest(db) == before
    return {"rows": rows, **tally}


# -- part 7: URLs with credentials ------------------------------------------------------------------------------

def part_urls(work: Path) -> dict:
    from annotate.cli import main as annotate_main

    down = dead_url()
    host = down.split("://", 1)[1]
    urls = {
        "user:password@": f"http://admin:{PASSWORD}@{host}",
        "?token=": f"{down}/?token={TOKEN}",
        "?access_token=": f"{down}/?access_token={TOKEN}",
        "?key= and user:password@": f"http://admin:{PASSWORD}@{host}/?key={TOKEN}",
    }
    rows, tally = [], {"tried": 0, "leaked": 0}
    for name, url in urls.items():
        for cmd in (["status"], ["push", "--kind", "attribution", "--corpus", work / "corpus", "-q"]):
            code, out, err = run_cli(annotate_main, cmd, {"LABEL_STUDIO_URL": url, "LABEL_STUDIO_API_KEY": "k" * 24,
                                                          "TRB_LS_RETRIES": "0"})
            leaked = PASSWORD in out + err or TOKEN in out + err
            tally["tried"] += 1
            tally["leaked"] += leaked
            rows.append((f"trb-annotate {cmd[0]}, URL with {name}", "LEAKED" if leaked else "clean", code, show(err)))
    # the source name a pull stores in the corpus rows
    from annotate.client import LabelStudioClient, Project
    from annotate.pull import source_name

    for name, url in urls.items():
        stored = source_name(LabelStudioClient(url, "k" * 24), Project(1, "p", "attribution", 1, 0), "now")
        leaked = PASSWORD in stored or TOKEN in stored
        tally["tried"] += 1
        tally["leaked"] += leaked
        rows.append((f"pull's stored source, URL with {name}", "LEAKED" if leaked else "clean", 0, stored[:110]))
    # the served adapter: errors, and the adapter spec a run stores in results.duckdb
    from trb.adapters.registry import load_adapter
    from trb.cli import main as trb_main
    from trb.errors import ToolkitError

    with loopback_server() as url:
        for name, model in (("?api_key=", f"{url}/v1?api_key={TOKEN}"),
                            ("user:password@", url.replace("http://", f"http://u:{PASSWORD}@") + "/v1")):
            try:
                bound = load_adapter("served", model, scaffold="none")
                spec = json.dumps(bound.spec())
                bound.adapter.close()
                msg = ""
            except ToolkitError as e:
                spec, msg = "", e.message
            leaked = TOKEN in spec + msg or PASSWORD in spec + msg
            tally["tried"] += 1
            tally["leaked"] += leaked
            rows.append((f"served adapter spec (stored by trb run), URL with {name}",
                         "LEAKED" if leaked else "clean", 0, (msg or spec)[:110]))
        code, out, err = run_cli(trb_main, ["adapters"])
    return {"rows": rows, **tally}


# -- part 7: a hung server; part 8: settings that used to be tracebacks -----------------------------------------

def part_hang(work: Path, wait_defaults: bool) -> dict:
    from annotate.cli import main as annotate_main
    from trb.adapters.registry import load_adapter
    from trb.errors import ToolkitError

    rows = []
    with hung_server() as url:
        env = {"LABEL_STUDIO_URL": url, "LABEL_STUDIO_API_KEY": "k" * 24, "TRB_LS_DEADLINE": "3"}
        t0 = time.monotonic()
        code, out, err = run_cli(annotate_main, ["status"], env)
        rows.append(("trb-annotate status, hung server, TRB_LS_DEADLINE=3", f"{time.monotonic() - t0:.1f} s", code,
                     show(err)))
        if wait_defaults:
            env.pop("TRB_LS_DEADLINE")
            t0 = time.monotonic()
            code, out, err = run_cli(annotate_main, ["status"], env)
            rows.append(("trb-annotate status, hung server, defaults", f"{time.monotonic() - t0:.1f} s", code,
                         show(err)))
            t0 = time.monotonic()
            try:
                load_adapter("served", url + "/v1")
                msg = "loaded?"
            except ToolkitError as e:
                msg = e.message
            rows.append(("trb run --adapter served (load), hung server, defaults", f"{time.monotonic() - t0:.1f} s",
                         0, msg[:110]))
    return {"rows": rows}


def part_settings(work: Path) -> dict:
    from annotate.cli import main as annotate_main
    ok = {"LABEL_STUDIO_URL": dead_url(), "LABEL_STUDIO_API_KEY": "k" * 24, "TRB_LS_RETRIES": "0"}
    cases = [
        ("LABEL_STUDIO_API_KEY with 'é'", {**ok, "LABEL_STUDIO_API_KEY": "clé-0123456789abcdef"}),
        ("LABEL_STUDIO_API_KEY with a newline", {**ok, "LABEL_STUDIO_API_KEY": "k" * 24 + "\n"}),
        ("TRB_LS_RETRIES=abc", {**ok, "TRB_LS_RETRIES": "abc"}),
        ("TRB_LS_RETRIES=-1", {**ok, "TRB_LS_RETRIES": "-1"}),
        ("TRB_LS_DEADLINE=abc", {**ok, "TRB_LS_DEADLINE": "abc"}),
        ("TRB_LS_DEADLINE=0", {**ok, "TRB_LS_DEADLINE": "0"}),
        ("TRB_LS_DEADLINE=nan", {**ok, "TRB_LS_DEADLINE": "nan"}),
        ("LABEL_STUDIO_URL without a scheme", {**ok, "LABEL_STUDIO_URL": "localhost:8080"}),
        ("LABEL_STUDIO_URL http://[::1", {**ok, "LABEL_STUDIO_URL": "http://[::1"}),
    ]
    rows, tally = [], {"tried": 0, "one_line": 0}
    for name, env in cases:
        code, out, err = run_cli(annotate_main, ["status"], env)
        # a bad setting must be named, on one line, before any request (exit 8 = it went to the network instead)
        good = one_line(err) and code not in (0, 8, 70) and "cannot reach" not in err
        tally["tried"] += 1
        tally["one_line"] += good
        rows.append((f"trb-annotate status, {name}", "one line" if good else ("traceback" if code == 70 else "not named"),
                     code, show(err)))
    from trb.adapters.registry import load_adapter
    from trb.errors import ToolkitError

    for name, key in (("TRB_API_KEY with 'é'", "clé-0123456789abcdef"), ("TRB_API_KEY with a newline", "k" * 20 + "\n")):
        os.environ["TRB_API_KEY"] = key
        try:  # what `trb run --adapter served` does first (the test runs the CLI on a real release)
            load_adapter("served", dead_url() + "/v1", max_attempts=1)
            code, err = 0, ""
        except ToolkitError as e:
            code, err = int(e.exit_code), e.message
        except Exception as e:  # noqa: BLE001 - what the CLI would print as a traceback
            code, err = 70, f"Traceback ... {type(e).__name__}: {e}"
        finally:
            os.environ.pop("TRB_API_KEY", None)
        good = one_line(err) and code not in (0, 70) and "cannot reach" not in err and "failed after" not in err
        tally["tried"] += 1
        tally["one_line"] += good
        rows.append((f"trb run --adapter served, {name}", "one line" if good else ("traceback" if code == 70 else "not named"),
                     code, show(err)))
    return {"rows": rows, **tally}


def _sql_figures(sql: dict, where: dict, runaway: dict) -> None:
    print(f"- SQL escapes refused: trb query {sql['refused']} / {sql['tried']} (store unchanged: "
          f"{sql['store_unchanged']}); push --where {where['refused']} / {where['tried']} (corpus unchanged: "
          f"{where['store_unchanged']})")
    print(f"- runaway queries stopped by the command: {runaway['stopped']} / {runaway['tried']}; "
          f"left files in the store's directory or TMPDIR: {runaway['left_files']} / {runaway['tried']}")


def table(title: str, rows) -> None:
    print(f"\n### {title}\n")
    print("| case | outcome | exit | stderr (last line) |")
    print("|---|---|---:|---|")
    for name, verdict, code, err in rows:
        print(f"| {name} | {verdict} | {code} | {err.replace('|', '/')} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hang", action="store_true", help="also wait out the hung-server defaults (up to minutes)")
    ap.add_argument("--no-hang", action="store_true",
                    help="skip the hung server (the code before issue 18 waits 5 x 120 s whatever TRB_LS_DEADLINE says)")
    ap.add_argument("--sql-only", action="store_true", help="only the SQL cases and the runaway queries (issue 41)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="trb-hardening-query-") as tmp:
        work = Path(tmp)
        os.environ.setdefault("HOME", str(work))
        sql = part_sql(work)
        runaway = part_runaway(work)
        if args.sql_only:
            where = part_where(work)
            table("SQL: trb query", sql["rows"])
            table("SQL: trb-annotate push --where", where["rows"])
            table("Runaway queries (TRB_QUERY_TIMEOUT=5, TRB_QUERY_MEMORY_LIMIT=1GB)", runaway["rows"])
            print("\n### Figures\n")
            _sql_figures(sql, where, runaway)
            return
        where = part_where(work)
        urls = part_urls(work)
        settings = part_settings(work)
        hang = {"rows": []} if args.no_hang else part_hang(work, args.hang)
    table("SQL: trb query", sql["rows"])
    table("SQL: trb-annotate push --where", where["rows"])
    table("URLs with credentials", urls["rows"])
    table("Settings", settings["rows"])
    table("A server that accepts connections and never answers", hang["rows"])
    table("Runaway queries (TRB_QUERY_TIMEOUT=5, TRB_QUERY_MEMORY_LIMIT=1GB)", runaway["rows"])
    print("\n### Figures\n")
    _sql_figures(sql, where, runaway)
    print(f"- credential leaks: {urls['leaked']} / {urls['tried']} outputs")
    print(f"- bad settings reported as one named line: {settings['one_line']} / {settings['tried']}")


if __name__ == "__main__":
    main()
