"""What goes wrong around an ingest is one line on stderr with its exit code, never a traceback, and the store is
left byte-identical: a corrupt gzip, a corpus.duckdb that is not a corpus store, a bad --max-line-bytes or --wait
(in trb-corpus and trb-annotate alike), a bad $TRB_LOCK_WAIT, and a disk that fills up (on a real tmpfs)."""

from __future__ import annotations

import gzip
import hashlib
import importlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import uuid
import zlib
from pathlib import Path

import duckdb
import pytest

from corpus.errors import CorpusUnreadable, ExitCode, UsageError
from corpus.ingest import ingest
from corpus.store import DB_NAME, Corpus, init_corpus
from factories import small_corpus, store_counts, write_jsonl
from tests_paths import ROOT
from toolkit.locking import WaitSecondsError, check_wait_seconds, default_wait_seconds

# ingests large or faulty inputs, several in worker processes (seconds per test)
pytestmark = pytest.mark.slow

ingest_module = importlib.import_module("corpus.ingest")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _one_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def _records(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "recs.jsonl", small_corpus())


# -- a corrupt gzip --------------------------------------------------------------------------------

def _gzipped() -> bytes:
    text = b"".join(json.dumps(r).encode() + b"\n" for r in small_corpus() * 20)
    return gzip.compress(text, mtime=0)


def _deflate_error(data: bytes) -> bytes:
    """``data`` with one byte changed where zlib (not the gzip trailer) finds the stream invalid."""
    for pos in range(10, len(data) - 8):
        b = bytearray(data)
        b[pos] ^= 0x55
        try:
            gzip.decompress(bytes(b))
        except zlib.error:
            return bytes(b)
        except (OSError, EOFError):
            continue
    raise AssertionError("no position gives a zlib.error")


def _corruptions(data: bytes) -> dict[str, bytes]:
    crc = bytearray(data)
    crc[-6] ^= 0xFF
    return {"truncated": data[: len(data) // 2], "deflate stream (zlib.error)": _deflate_error(data),
            "crc": bytes(crc), "header only": data[:6], "not gzip at all": b'{"kind": "session"}\n'}


@pytest.mark.parametrize("what", ["truncated", "deflate stream (zlib.error)", "crc", "header only", "not gzip at all"])
def test_a_corrupt_gzip_is_a_located_problem_and_nothing_is_written(corpus_dir, tmp_path, cli, what):
    f = tmp_path / "recs.jsonl.gz"
    f.write_bytes(_corruptions(_gzipped())[what])
    before = _sha(corpus_dir / DB_NAME)
    for command in ("validate", "ingest"):
        code, out, err = cli(command, "--corpus", corpus_dir, "-q", f)
        assert code == ExitCode.INVALID and out == "" and "Traceback" not in err, err
        assert f"{f}:" in err and "cannot read compressed data (a corrupt or truncated gzip file)" in err
        assert err.strip().splitlines()[-1].endswith("nothing was written")
    assert _sha(corpus_dir / DB_NAME) == before


# -- a corpus.duckdb that is not a corpus store -----------------------------------------------------

def _bad_store(kind: str, d: Path, good: Path) -> None:
    db = d / DB_NAME
    if kind == "empty":
        db.write_bytes(b"")
    elif kind == "random bytes":
        db.write_bytes(os.urandom(64 * 1024))
    elif kind == "text":
        db.write_text("this is not a database\n" * 50)
    elif kind == "sqlite":
        con = sqlite3.connect(db)
        con.execute("CREATE TABLE sessions (a)")
        con.commit()
        con.close()
    elif kind == "foreign duckdb":
        con = duckdb.connect(str(db))
        con.execute("CREATE TABLE sessions (a INTEGER)")
        con.close()
    elif kind == "truncated":
        db.write_bytes(good.read_bytes()[: good.stat().st_size // 3])
    elif kind == "checksum":
        b = bytearray(good.read_bytes())
        for i in range(4096 + 100, 4096 + 164):
            b[i] ^= 0xA5
        db.write_bytes(bytes(b))
    elif kind == "newer format":
        shutil.copy(good, db)
        con = duckdb.connect(str(db))
        con.execute("UPDATE meta SET value = '99' WHERE key = 'store_format_version'")
        con.close()
    elif kind == "no format":
        shutil.copy(good, db)
        con = duckdb.connect(str(db))
        con.execute("DELETE FROM meta WHERE key = 'store_format_version'")
        con.close()


STORES = {"empty": "an empty file", "random bytes": "not a DuckDB database", "text": "not a DuckDB database",
          "sqlite": "a SQLite database", "foreign duckdb": "a DuckDB database but not a corpus store",
          "truncated": "is damaged", "checksum": "is damaged", "newer format": "a corpus store of format 99, newer",
          "no format": "states no corpus store format"}


@pytest.fixture(scope="module")
def good_store(tmp_path_factory) -> Path:
    """A real corpus store with records in it, to damage copies of."""
    d = tmp_path_factory.mktemp("good")
    c = Corpus(init_corpus(d / "c"))
    ingest(c, [write_jsonl(d / "r.jsonl", small_corpus())], progress=False)
    return c.db_path


@pytest.mark.parametrize("kind", list(STORES))
def test_a_store_that_is_not_a_corpus_store_is_one_line_exit_5_and_untouched(kind, good_store, tmp_path, cli):
    d = tmp_path / "c"
    d.mkdir()
    _bad_store(kind, d, good_store)
    before = _sha(d / DB_NAME)
    f = _records(tmp_path)
    for args in (("stats",), ("validate", "-q", f), ("ingest", "-q", f), ("synth", "--seed", "1")):
        code, out, err = cli(*args, "--corpus", d)
        line = _one_line(err)
        assert code == ExitCode.NOT_FOUND and out == "", (args, err)
        assert line.startswith(str(d / DB_NAME)) and STORES[kind] in line and "nothing was changed" in line
    assert _sha(d / DB_NAME) == before
    assert sorted(p.name for p in d.iterdir()) == [DB_NAME], "a refused open left a file behind"


def test_the_library_raises_the_typed_error(good_store, tmp_path):
    d = tmp_path / "c"
    d.mkdir()
    _bad_store("foreign duckdb", d, good_store)
    with pytest.raises(CorpusUnreadable, match="not a corpus store"):
        ingest(Corpus(d), [_records(tmp_path)], progress=False)


# -- options ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["0", "-1", "-100"])
def test_max_line_bytes_below_one_is_a_usage_error(corpus_dir, tmp_path, cli, value):
    for command in ("validate", "ingest"):
        code, _, err = cli(command, "--corpus", corpus_dir, "--max-line-bytes", value, _records(tmp_path))
        assert code == ExitCode.USAGE and "Invalid value for '--max-line-bytes'" in err and "Traceback" not in err
    assert store_counts(corpus_dir)["sessions"] == 0
    with pytest.raises(UsageError, match="max_line_bytes"):
        ingest(Corpus(corpus_dir), [_records(tmp_path)], max_line_bytes=0, progress=False)


@pytest.mark.parametrize("value", ["-1", "-0.5", "nan", "NaN", "-inf", "abc"])
def test_a_bad_wait_is_a_usage_error_in_every_command_that_takes_it(corpus_dir, tmp_path, cli, capsys, value):
    from annotate.cli import main as annotate_main

    f = _records(tmp_path)
    for args in (("ingest", "-q", f), ("validate", "-q", f), ("stats",), ("import", "mcq", "-q", f)):
        code, _, err = cli(*args, "--corpus", corpus_dir, "--wait", value)
        assert code == ExitCode.USAGE and "Invalid value for '--wait'" in err and "Traceback" not in err, (args, err)
    for args in (("pull",), ("push", "--kind", "attribution"), ("agreement",), ("adjudicate",)):
        capsys.readouterr()
        assert annotate_main([*args, "--corpus", str(corpus_dir), "--wait", value]) == ExitCode.USAGE, args
        err = capsys.readouterr().err
        assert "Invalid value for '--wait'" in err and "Traceback" not in err
    assert store_counts(corpus_dir)["sessions"] == 0


def test_a_wait_of_zero_or_inf_is_accepted(corpus_dir, tmp_path, cli):
    assert cli("ingest", "--corpus", corpus_dir, "-q", "--wait", "0", _records(tmp_path))[0] == 0
    assert cli("stats", "--corpus", corpus_dir, "--wait", "inf")[0] == 0
    assert check_wait_seconds("inf") == float("inf") and check_wait_seconds(0) == 0
    for bad in (-1, float("nan"), "x", None):
        with pytest.raises(WaitSecondsError):
            check_wait_seconds(bad)


def test_a_bad_trb_lock_wait_is_one_usage_line(corpus_dir, tmp_path, monkeypatch):
    for value in ("abc", "-5", "nan"):
        monkeypatch.setenv("TRB_LOCK_WAIT", value)
        with pytest.raises(WaitSecondsError, match="TRB_LOCK_WAIT"):
            default_wait_seconds()
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        p = subprocess.run([sys.executable, "-m", "corpus.cli", "stats", "--corpus", str(corpus_dir)], env=env,
                           capture_output=True, text=True)
        assert p.returncode == ExitCode.USAGE and p.stdout == ""
        assert _one_line(p.stderr).startswith(f"TRB_LOCK_WAIT={value!r}: expected seconds to wait")
    monkeypatch.setenv("TRB_LOCK_WAIT", "7")
    assert default_wait_seconds() == 7.0


def test_running_out_of_duckdb_memory_is_one_line_naming_the_limit_and_nothing_is_written(corpus_dir, tmp_path):
    """The scale run found it: 1M sessions ran DuckDB out of TRB_DUCKDB_MEMORY at the commit, reported as an
    internal error. A limit too small for the input is one line that names the setting, exit 1, store untouched."""
    from corpus.simulate import write_simulation

    sim = tmp_path / "sim.jsonl"
    write_simulation(sim, n_sessions=3000, seed=1, progress=False)
    before = store_counts(corpus_dir)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRB_DUCKDB_MEMORY": "4MB"}
    p = subprocess.run([sys.executable, "-m", "corpus.cli", "ingest", "--corpus", str(corpus_dir), str(sim), "-q"],
                       env=env, capture_output=True, text=True)
    assert p.returncode == ExitCode.INVALID and p.stdout == "", p.stderr
    line = _one_line(p.stderr)
    assert line.startswith("DuckDB ran out of the memory the corpus store may use (4MB, set by TRB_DUCKDB_MEMORY)")
    assert "nothing was written" in line and "TRB_DUCKDB_MEMORY=4GB" in line
    assert store_counts(corpus_dir) == before
    # with the default limit the same file goes in
    env.pop("TRB_DUCKDB_MEMORY")
    p = subprocess.run([sys.executable, "-m", "corpus.cli", "ingest", "--corpus", str(corpus_dir), str(sim), "-q"],
                       env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert store_counts(corpus_dir)["sessions"] == before["sessions"] + 3000


# -- a full disk, on a real tmpfs ------------------------------------------------------------------

@pytest.fixture
def tmpfs(tmp_path):
    """A mount point for small tmpfs file systems: ``mount(size)`` (re)mounts one there, empty. Skipped where the
    machine does not let this process mount (not root, or no mount namespace rights)."""
    point = tmp_path / f"tmpfs-{uuid.uuid4().hex[:8]}"
    point.mkdir()
    mounted = []

    def mount(size: str) -> Path:
        if mounted:
            subprocess.run(["umount", str(point)], check=True)
            mounted.clear()
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)], capture_output=True,
                           text=True)
        if p.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here (needs root): {p.stderr.strip() or p.returncode}")
        mounted.append(True)
        return point

    yield mount
    if mounted and subprocess.run(["umount", str(point)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(point)], check=False)  # busy: detached now, freed once let go


def _open_under(d: Path) -> list[str]:
    """The files under ``d`` this process holds open (deleted ones too)."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(d)):
            out.append(target)
    return out


def _sim(tmp_path: Path, cli, sessions: int = 30) -> Path:
    f = tmp_path / "sim.jsonl.gz"
    if not f.exists():
        assert cli("simulate", "--sessions", sessions, "--seed", "2", "-o", f, "-q")[0] == 0
    return f


def test_a_full_disk_is_refused_before_anything_is_written(tmpfs, tmp_path, cli):
    f = _sim(tmp_path, cli)
    d = init_corpus(tmpfs("2m") / "c")
    before = _sha(d / DB_NAME)
    code, out, err = cli("ingest", "--corpus", d, "-q", f)
    line = _one_line(err)
    assert code == ExitCode.INVALID and out == ""
    assert line.startswith(f"not enough free space on the disk holding {d} for this ingest: it needs about")
    assert line.endswith("nothing was written (free some space, or ingest fewer records at a time)")
    assert _sha(d / DB_NAME) == before and sorted(p.name for p in d.iterdir()) == [DB_NAME]
    assert cli("stats", "--corpus", d)[0] == 0


@pytest.mark.parametrize("size", ["860k", "900k", "1000k", "1200k", "1500k", "2m", "3m"])
def test_a_disk_that_fills_during_the_commit_leaves_the_store_unchanged_or_complete(tmpfs, tmp_path, cli,
                                                                                      monkeypatch, size):
    """With the free-space check turned off, the disk fills at some point of the commit (the log, or folding it
    into the store file): always one line, and the store is either as it was or has every record, never part."""
    monkeypatch.setattr(ingest_module, "SPACE_PER_BYTE", 0.0)
    monkeypatch.setattr(ingest_module, "SPACE_SLACK_BYTES", 0)
    f = _sim(tmp_path, cli)
    n_sessions = 30
    d = init_corpus(tmpfs(size) / "c")
    before = _sha(d / DB_NAME)
    code, _, err = cli("ingest", "--corpus", d, "-q", f)
    # nothing left open on that disk, not even a deleted staged file (its space held until collected)
    assert _open_under(d.parent) == []
    if code == 0:  # it fitted
        assert "ingested" in err
    else:
        line = _one_line(err)
        assert code == ExitCode.INVALID and f"the disk holding {d} is full" in line, line
        if "nothing was written" in line:
            assert _sha(d / DB_NAME) == before
        else:
            assert "the changes were committed to the store's write-ahead log" in line
    code, out, err = cli("stats", "--corpus", d, "--json")
    assert code == 0, err
    assert json.loads(out)["records"]["session"] in (0, n_sessions)
    assert not list(d.glob(".ingest-*")) and not list(d.glob(".records-*"))
