"""The trb-corpus command line: exit codes, stdout as data, simulate end to end."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import signal
import subprocess
import sys
import time

from corpus.errors import ExitCode
from factories import session, store_counts, write_jsonl


def test_init_refuses_an_existing_corpus(corpus_dir, cli):
    code, out, err = cli("init", corpus_dir)
    assert code == ExitCode.USAGE and out == "" and "already holds a corpus" in err


def test_corpus_defaults_to_the_environment_then_the_cwd(corpus_dir, tmp_path, cli, monkeypatch):
    f = write_jsonl(tmp_path / "a.jsonl", [session()])
    monkeypatch.setenv("TRB_CORPUS", str(corpus_dir))
    assert cli("ingest", "-q", f)[0] == 0
    monkeypatch.delenv("TRB_CORPUS")
    monkeypatch.chdir(corpus_dir)
    code, out, _ = cli("stats", "--json")
    assert code == 0 and json.loads(out)["records"]["session"] == 1


def test_usage_errors_exit_2(cli, tmp_path):
    assert cli("ingest")[0] == ExitCode.USAGE
    assert cli("simulate", "--sessions", "0", "--seed", "1", "-o", tmp_path / "x.jsonl")[0] == ExitCode.USAGE
    assert cli("simulate", "--sessions", "1000001", "--seed", "1", "-o", tmp_path / "x.jsonl")[0] == ExitCode.USAGE
    assert not (tmp_path / "x.jsonl").exists()


def test_a_missing_file_is_named(corpus_dir, tmp_path, cli):
    code, _, err = cli("ingest", "--corpus", corpus_dir, "-q", tmp_path / "nope.jsonl")
    assert code == ExitCode.INVALID and f"{tmp_path / 'nope.jsonl'}: no such file" in err


def test_simulate_is_deterministic_and_ingests_within_the_cap(corpus_dir, tmp_path, cli):
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl.gz", tmp_path / "c.jsonl"
    assert cli("simulate", "--sessions", "60", "--seed", "5", "-o", a, "-q")[0] == 0
    assert cli("simulate", "--sessions", "60", "--seed", "5", "-o", b, "-q")[0] == 0
    assert cli("simulate", "--sessions", "60", "--seed", "6", "-o", c, "-q")[0] == 0
    assert gzip.decompress(b.read_bytes()) == a.read_bytes()  # same seed, same records, gzip or not
    assert hashlib.sha256(a.read_bytes()).digest() != hashlib.sha256(c.read_bytes()).digest()
    code, _, err = cli("ingest", "--corpus", corpus_dir, "-q", b)
    assert code == 0, err
    code, out, _ = cli("stats", "--corpus", corpus_dir, "--json")
    s = json.loads(out)
    recs = [json.loads(line) for line in a.read_text().splitlines()]
    assert s["records"]["session"] == 60 == sum(r["kind"] == "session" for r in recs)
    assert s["sessions_by_source_kind"] == {"simulated": 60}
    assert s["within_synthetic_cap"] and s["records"]["transfer_context"] >= 1
    assert set(s["counterfactuals_by_origin"]) == {"same_session_revision", "paired_session", "synthetic"}
    assert set(s["attribution_by_design_label"]) == {"self", "exogenous"}


def test_a_killed_ingest_leaves_nothing_and_the_next_one_works(corpus_dir, tmp_path, cli):
    """All or nothing even under SIGKILL: the store has every record of the file or none."""
    f = tmp_path / "big.jsonl"
    assert cli("simulate", "--sessions", "4000", "--seed", "2", "-o", f, "-q")[0] == 0
    p = subprocess.Popen([sys.executable, "-m", "corpus.cli", "ingest", "-q", "--corpus", str(corpus_dir), str(f)],
                         stderr=subprocess.DEVNULL, start_new_session=True)
    time.sleep(1.0)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    assert store_counts(corpus_dir)["sessions"] in (0, 4000)
    code, _, err = cli("ingest", "--corpus", corpus_dir, "-q", "--wait", "5", f)
    assert code == 0, err
    assert store_counts(corpus_dir)["sessions"] == 4000
    assert not list(corpus_dir.glob(".ingest-*")), "a dead ingest's scratch space was left behind"
