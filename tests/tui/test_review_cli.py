"""`trb-review` at the command line: bad input is one line on stderr and an exit code, never a traceback."""

from __future__ import annotations

import subprocess
import sys

from corpus.errors import ExitCode
from tests_paths import ROOT


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tui.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)


def test_help_names_the_options():
    r = _run("--help")
    assert r.returncode == 0
    assert "CORPUS_DIR" in r.stdout and "--results" in r.stdout and "--reviewer" in r.stdout


def test_a_missing_corpus_is_one_line_and_exit_not_found(tmp_path):
    r = _run(str(tmp_path / "nothing"))
    assert r.returncode == ExitCode.NOT_FOUND
    assert r.stderr.strip().startswith(f"no corpus at {tmp_path / 'nothing'}") and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_results_file_that_is_not_a_results_store_is_a_results_error(corpus_dir, tmp_path):
    """The same code as `trb report --results` on that file, with the option named."""
    bad = tmp_path / "results.duckdb"
    bad.write_text("not duckdb")
    r = _run(str(corpus_dir), "--results", str(bad))
    assert r.returncode == ExitCode.RESULTS
    assert r.stderr.startswith(f"--results {bad}: ") and "Traceback" not in r.stderr
