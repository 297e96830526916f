"""The command lines share one exit-code table: docs/reference/exit-codes.md lists it, and a typed error gives its code
and one clean line on stderr, never a traceback, in every tool."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest

from tests_paths import ROOT
from toolkit.errors import ExitCode

CLIS = {"trb-corpus", "trb-annotate", "trb", "trb-review", "trb-demo"}


def _docs_table() -> dict[int, tuple[str, str]]:
    section = (ROOT / "docs" / "reference" / "exit-codes.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| `([A-Z_]+)` \| [^|]+ \| ([^|]+) \|$", section, re.M)
    assert len(rows) == len(re.findall(r"^\| \d", section, re.M)), "a row of the table does not parse"
    return {int(code): (name, who.strip()) for code, name, who in rows}


def test_the_docs_list_exactly_the_codes_of_the_enum():
    table = _docs_table()
    assert {code: name for code, (name, _) in table.items()} == {int(c): c.name for c in ExitCode}
    for code, (_, who) in table.items():
        named = {w.strip(" `") for w in who.split(",")}
        assert who == "all" or (named and named <= CLIS), f"exit {code}: {who!r} names no known CLI"


def _one_clean_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_trb_corpus_on_a_missing_corpus_is_not_found(cli, tmp_path):
    code, out, err = cli("stats", "--corpus", tmp_path / "nothing")
    assert code == ExitCode.NOT_FOUND and out == ""
    assert _one_clean_line(err).startswith(f"no corpus at {tmp_path / 'nothing'}")


def test_trb_annotate_without_a_server_setting_is_auth(monkeypatch, capsys):
    from annotate.cli import main

    monkeypatch.delenv("LABEL_STUDIO_URL", raising=False)
    assert main(["status"]) == ExitCode.AUTH
    assert _one_clean_line(capsys.readouterr().err).startswith("LABEL_STUDIO_URL is not set")


def test_trb_annotate_never_shows_the_key_even_in_the_url(monkeypatch, capsys):
    from annotate.cli import main

    monkeypatch.setenv("LABEL_STUDIO_URL", "http://127.0.0.1:1/tok-98765")
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "tok-98765")
    monkeypatch.setenv("TRB_LS_RETRIES", "0")
    assert main(["status"]) == ExitCode.UNREACHABLE
    line = _one_clean_line(capsys.readouterr().err)
    assert "cannot reach Label Studio" in line and "tok-98765" not in line


def test_trb_report_on_a_file_that_is_not_a_results_store_is_results(tmp_path, capsys):
    from trb.cli import main

    bad = tmp_path / "results.duckdb"
    bad.write_text("not duckdb")
    assert main(["report", "--results", str(bad)]) == ExitCode.RESULTS
    assert _one_clean_line(capsys.readouterr().err).startswith(f"{bad} is not a results store")


def test_trb_on_a_directory_without_manifest_is_bad_release(tmp_path, capsys):
    from trb.cli import main

    (tmp_path / "empty").mkdir()
    assert main(["train-reference", "--release", str(tmp_path / "empty"), "--variant", "ablation",
                 "-o", str(tmp_path / "out")]) == ExitCode.BAD_RELEASE
    assert "no manifest.json" in _one_clean_line(capsys.readouterr().err)
    # `trb run` checks the release before it loads any model: BAD_RELEASE, though the model is no model either
    (tmp_path / "model").mkdir()
    assert main(["run", "--release", str(tmp_path / "empty"), "--adapter", "native", "--model", str(tmp_path / "model"),
                 "--baseline", "x", "-q"]) == ExitCode.BAD_RELEASE
    assert "no manifest.json" in _one_clean_line(capsys.readouterr().err)


def test_trb_corpus_verify_on_a_directory_without_manifest_is_bad_release(cli, tmp_path):
    (tmp_path / "empty").mkdir()
    code, _, err = cli("verify", tmp_path / "empty")
    assert code == ExitCode.BAD_RELEASE and "manifest.json: missing" in err and "Traceback" not in err


def test_trb_review_on_a_missing_corpus_is_not_found(tmp_path, capsys):
    from tui.cli import main

    assert main([str(tmp_path / "nothing")]) == ExitCode.NOT_FOUND
    assert _one_clean_line(capsys.readouterr().err).startswith(f"no corpus at {tmp_path / 'nothing'}")


def test_trb_demo_on_a_non_empty_workdir_is_usage(tmp_path, capsys):
    from pipeline.cli import main

    (tmp_path / "mine.txt").write_text("mine")
    assert main(["--workdir", str(tmp_path), "-q"]) == ExitCode.USAGE
    assert "is not empty" in _one_clean_line(capsys.readouterr().err)
    assert [p.name for p in tmp_path.iterdir()] == ["mine.txt"]


# -- busy: a real second process holds the corpus / the results store --------------------------------

HOLD_CORPUS = textwrap.dedent("""
    import sys, time
    from corpus.lock import CorpusLock
    with CorpusLock(sys.argv[1], exclusive=True, purpose="test holder"):
        print("held", flush=True)
        time.sleep(float(sys.argv[2]))
""")


def _hold(code: str, *args: str) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.stdout.readline().strip() == "held"
    return p


def _cli(module: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TRB_LOCK_WAIT": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", module, *map(str, args)], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=120)


def _busy_line(err: str, holder: subprocess.Popen) -> str:
    """The waiting notice may come first; the error is the last line, once, naming the holder."""
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert f"pid {holder.pid}" in last and "nothing was changed" in last and err.count("still in use") == 1
    return last


@pytest.mark.parametrize("module,args", [
    ("corpus.cli", ["stats", "--corpus", "{corpus}"]),
    ("annotate.cli", ["agreement", "--corpus", "{corpus}"]),
])
def test_a_corpus_held_by_another_process_is_busy(corpus_dir, module, args):
    holder = _hold(HOLD_CORPUS, str(corpus_dir), "60")
    try:
        r = _cli(module, *[a.format(corpus=corpus_dir) for a in args])
    finally:
        holder.kill()
        holder.wait()
    assert r.returncode == ExitCode.BUSY, r.stderr
    assert _busy_line(r.stderr, holder).startswith(f"corpus {corpus_dir} is still in use")


def test_a_results_store_held_by_another_process_is_busy(tmp_path):
    from trb.results import ResultsStore

    results = tmp_path / "results.duckdb"
    ResultsStore(results)
    # The store's writers flock <store>.lock and record who they are in it (trb.results).
    hold = textwrap.dedent("""
        import fcntl, json, os, sys, time
        fd = os.open(sys.argv[1] + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, json.dumps({"pid": os.getpid(), "host": "here", "purpose": "test holder"}).encode())
        print("held", flush=True)
        time.sleep(60)
    """)
    holder = _hold(hold, str(results))
    try:
        r = _cli("trb.cli", "query", "SELECT count(*) FROM runs", "--results", results)
    finally:
        holder.kill()
        holder.wait()
    assert r.returncode == ExitCode.BUSY, r.stderr
    assert _busy_line(r.stderr, holder).startswith(f"results store {results} is still in use")

