"""`trb-review` at the command line: bad input is one line on stderr and an exit code, never a traceback.

The help runs the installed entry point in a process of its own; the error cases call the same ``main``
in this process (the rendering is :func:`toolkit.errors.run_cli`'s either way).
"""

from __future__ import annotations

import subprocess
import sys

from corpus.errors import ExitCode
from tests_paths import ROOT
from tui.cli import main


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tui.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)


def test_help_names_the_options():
    r = _run("--help")
    assert r.returncode == 0
    assert "CORPUS_DIR" in r.stdout and "--corpus" in r.stdout and "--results" in r.stdout and "--reviewer" in r.stdout


def test_a_missing_corpus_is_one_line_and_exit_not_found(tmp_path, capsys):
    assert main([str(tmp_path / "nothing")]) == ExitCode.NOT_FOUND
    err = capsys.readouterr().err
    assert err.strip().startswith(f"no corpus at {tmp_path / 'nothing'}") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_a_results_file_that_is_not_a_results_store_is_a_results_error(corpus_dir, tmp_path, capsys):
    """The same code as `trb report --results` on that file, with the option named."""
    bad = tmp_path / "results.duckdb"
    bad.write_text("not duckdb")
    assert main([str(corpus_dir), "--results", str(bad)]) == ExitCode.RESULTS
    err = capsys.readouterr().err
    assert err.startswith(f"--results {bad}: ") and "Traceback" not in err


def test_a_missing_results_store_is_an_error_and_is_not_made(corpus_dir, tmp_path, capsys):
    """A mistyped --results is refused as a bad option value, naming it; no empty store is made there."""
    missing = tmp_path / "typo" / "results.duckdb"
    assert main([str(corpus_dir), "--results", str(missing)]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "'--results'" in err and "does not exist" in err and "Traceback" not in err
    assert not missing.exists() and not missing.parent.exists()


def test_corpus_option_names_the_corpus_as_the_messages_suggest(tmp_path, capsys):
    """The no-corpus message says "pass --corpus": trb-review takes it (and refuses two different corpora)."""
    assert main(["--corpus", str(tmp_path / "nothing")]) == ExitCode.NOT_FOUND
    err = capsys.readouterr().err
    assert err.startswith(f"no corpus at {tmp_path / 'nothing'}") and "pass --corpus" in err
    assert main([str(tmp_path / "a"), "--corpus", str(tmp_path / "b")]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "not both" in err and "Traceback" not in err
