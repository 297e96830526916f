"""Releases under faults: a version is cut once per corpus whatever --out says; a killed, failed or concurrent
release leaves nothing any command reads and the next one cleans up; each failure is one line, never a traceback.

Real processes and real signals: `trb-corpus release` runs as a subprocess and is SIGKILLed at random
delays; the full disk is a real tmpfs (skipped, saying why, where this machine cannot mount one).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from corpus import ledger
from corpus.errors import CorpusBusy, ExitCode, InvalidReleases, ReleaseRefused, UsageError
from corpus.ingest import ingest
from corpus.release import cut_release, list_releases
from corpus.store import Corpus, init_corpus
from corpus.verify import verify_release
from factories import session, small_corpus, write_jsonl
from tests_paths import ROOT
from toolkit.locking import FileLock

# cuts many releases, one or more per test
pytestmark = pytest.mark.slow

CLI = "from corpus.cli import main; raise SystemExit(main())"


def _corpus(tmp_path: Path, records: list | None = None, name: str = "corpus") -> Corpus:
    c = Corpus(init_corpus(tmp_path / name))
    ingest(c, [write_jsonl(tmp_path / f"{name}.jsonl", records or small_corpus())], progress=False)
    return c


def _env(**extra) -> dict:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, **extra}


def _release_cli(c: Corpus, *args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CLI, "release", "--corpus", str(c.dir), "--kind", "smoke", *args],
                          capture_output=True, text=True, env=_env(), timeout=600, **kw)


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _leftovers(c: Corpus, *dirs: Path) -> list[str]:
    """Staging directories and release spill folders left behind."""
    out = [p.name for d in (c.dir / "releases", *dirs) if d.is_dir() for p in d.iterdir() if ".tmp-" in p.name]
    return out + [p.name for p in c.dir.glob(".release-*.spill")]


# -- immutability by version, across --out -------------------------------------------------------------


def test_a_version_is_cut_once_per_corpus_whatever_out_says(tmp_path):
    c = _corpus(tmp_path)
    first = cut_release(c, "0.1.0", kind="smoke", progress=False)
    for out in (tmp_path / "elsewhere" / "0.1.0", tmp_path / "other"):
        with pytest.raises(ReleaseRefused) as e:
            cut_release(c, "0.1.0", kind="smoke", out=out, progress=False)
        (g,) = e.value.failed
        assert g.name == "immutability" and str(first.directory) in g.figure and str(out) in g.bar
        assert not out.exists() and not _leftovers(c, out.parent)
    ingest(c, [write_jsonl(tmp_path / "more.jsonl", [session("s9", subject="new")])], progress=False)
    with pytest.raises(ReleaseRefused):  # new content, other place: refused all the same
        cut_release(c, "0.1.0", kind="smoke", out=tmp_path / "third", progress=False)
    assert not (tmp_path / "third").exists()
    # a version first cut elsewhere is the corpus's too: listed, and refused at the default place
    moved = cut_release(c, "0.2.0", kind="smoke", out=tmp_path / "pub" / "0.2.0", progress=False)
    with pytest.raises(ReleaseRefused):
        cut_release(c, "0.2.0", kind="smoke", progress=False)
    assert not (c.dir / "releases" / "0.2.0").exists()
    assert [(r["version"], r["directory"]) for r in list_releases(c)] == [
        ("0.1.0", str(first.directory)), ("0.2.0", str(moved.directory))]
    again = cut_release(c, "0.2.0", kind="smoke", out=tmp_path / "pub" / "0.2.0", progress=False)
    assert again.created is False  # the same content at the same place: a no-op, as before


def test_the_cli_refuses_a_released_version_elsewhere_with_exit_6(tmp_path):
    c = _corpus(tmp_path)
    assert _release_cli(c, "--version", "0.1.0").returncode == 0
    p = _release_cli(c, "--version", "0.1.0", "--out", str(tmp_path / "elsewhere" / "0.1.0"))
    assert p.returncode == ExitCode.GATE_FAILED and "Traceback" not in p.stderr
    assert "gate immutability: FAILED: version 0.1.0 was released by this corpus at" in p.stderr
    assert p.stdout == "" and not (tmp_path / "elsewhere" / "0.1.0").exists()


def test_releases_cut_before_the_ledger_count_as_released(tmp_path):
    c = _corpus(tmp_path)
    cut_release(c, "0.1.0", kind="smoke", progress=False)
    (c.dir / ledger.LEDGER).unlink()
    with pytest.raises(ReleaseRefused):
        cut_release(c, "0.1.0", kind="smoke", out=tmp_path / "x" / "0.1.0", progress=False)


def test_a_release_killed_before_its_rename_claims_nothing_and_one_killed_after_it_is_released(tmp_path):
    """The two ledger lines around the rename: a "cutting" line whose directory holds no such manifest is a release
    that never happened; one whose directory holds it is released (the process died before the second line)."""
    c = _corpus(tmp_path)
    pid = _dead_pid()
    gone = c.dir / "releases" / "0.3.0"
    line = {"version": "0.3.0", "release_sha": "ab" * 32, "directory": str(gone), "state": "cutting", "pid": pid,
            "host": "h", "at": "2026-12-01T00:00:00+00:00"}
    (c.dir / "releases").mkdir(parents=True, exist_ok=True)
    with open(c.dir / ledger.LEDGER, "a") as f:
        f.write(json.dumps(line) + "\n" + '{"version": "0.4.0", "rel')  # and a line torn by a kill mid-append
    assert "0.3.0" not in ledger.released_versions(c.dir)
    made = cut_release(c, "0.3.0", kind="smoke", out=tmp_path / "pub" / "0.3.0", progress=False)
    assert made.created and ledger.released_versions(c.dir)["0.3.0"].directory == made.directory
    lines = (c.dir / ledger.LEDGER).read_text().splitlines()
    assert json.loads(lines[-1])["state"] == "released" and lines[-3].startswith('{"version": "0.4.0", "rel')
    # killed after the rename: only the "cutting" line names 0.3.0 now
    kept = [x for x in lines if not (x.startswith("{") and x.endswith("}") and json.loads(x)["state"] == "released")]
    (c.dir / ledger.LEDGER).write_text("\n".join(kept) + "\n")
    assert ledger.released_versions(c.dir)["0.3.0"].release_sha == made.manifest["release_sha"]
    with pytest.raises(ReleaseRefused):
        cut_release(c, "0.3.0", kind="smoke", progress=False)


# -- what a killed release leaves --------------------------------------------------------------------


def test_a_staging_directory_is_never_listed_and_the_next_release_removes_it(tmp_path, cli):
    c = _corpus(tmp_path)
    r = cut_release(c, "0.1.0", kind="smoke", progress=False)
    pid = _dead_pid()
    stale = c.dir / "releases" / f".0.2.0.tmp-{pid}"
    shutil.copytree(r.directory, stale)  # killed between writing its manifest and the rename: looks whole
    m = json.loads((stale / "manifest.json").read_text())
    m["version"] = "0.2.0"
    (stale / "manifest.json").write_text(json.dumps(m))
    (c.dir / f".release-{pid}.spill").mkdir()
    live = c.dir / "releases" / f".0.9.0.tmp-{os.getpid()}"  # a live process's staging is left alone
    live.mkdir()
    assert [x["version"] for x in list_releases(c)] == ["0.1.0"]
    code, out, _ = cli("releases", "--corpus", c.dir, "--json")
    assert code == 0 and [x["version"] for x in json.loads(out)] == ["0.1.0"]
    assert "0.2.0" not in ledger.released_versions(c.dir)
    cut_release(c, "0.2.0", kind="smoke", progress=False)
    assert not stale.exists() and not (c.dir / f".release-{pid}.spill").exists() and live.is_dir()
    assert [x["version"] for x in list_releases(c)] == ["0.1.0", "0.2.0"]


@pytest.mark.e2e
def test_sigkill_at_random_points_of_a_release_leaves_nothing_half_and_the_next_release_succeeds(tmp_path):
    from corpus.simulate import write_simulation

    write_simulation(tmp_path / "sim.jsonl", n_sessions=60, seed=2, progress=False)
    c = Corpus(init_corpus(tmp_path / "corpus"))
    ingest(c, [tmp_path / "sim.jsonl"], progress=False)
    t0 = time.perf_counter()
    assert _release_cli(c, "--version", "0.0.1").returncode == 0
    full = time.perf_counter() - t0
    seed = int(os.environ.get("TRB_FAULT_SEED", time.time_ns() % 1_000_000))
    rng = random.Random(seed)
    killed = 0
    for k in range(4):
        version = f"0.{k + 1}.0"
        delay = rng.uniform(0.2, full)
        proc = subprocess.Popen([sys.executable, "-c", CLI, "release", "--corpus", str(c.dir), "--version", version,
                                 "--kind", "smoke"], env=_env(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        killed += proc.wait() == -signal.SIGKILL
        where = f"(TRB_FAULT_SEED={seed}, kill {k} after {delay:.2f} s of {full:.2f} s)"
        listed = list_releases(c)  # never a traceback, never a half release
        for r in listed:
            verify_release(r["directory"])
        assert all(not p.name.startswith(".") for p in map(Path, (r["directory"] for r in listed))), where
        done = _release_cli(c, "--version", version)
        assert done.returncode == 0, f"{where}: {done.stderr}"
        assert not _leftovers(c), f"{where}: left {_leftovers(c)}"
        assert version in [r["version"] for r in list_releases(c)], where
        verify_release(c.dir / "releases" / version)
    assert killed >= 1  # at least one kill landed before the release finished


# -- concurrent releases -------------------------------------------------------------------------------


def test_a_second_release_while_one_runs_waits_then_is_told_who_holds_the_corpus(tmp_path):
    c = _corpus(tmp_path)
    (c.dir / "releases").mkdir()
    with FileLock(c.dir / "releases" / ".release.lock", exclusive=True, what="test", busy=CorpusBusy,
                  purpose="trb-corpus release 0.1.0"):
        p = _release_cli(c, "--version", "0.1.0", "--wait", "0.5")
    assert p.returncode == ExitCode.BUSY and "Traceback" not in p.stderr
    assert f"still in use by pid {os.getpid()}" in p.stderr and "trb-corpus release 0.1.0" in p.stderr
    assert not (c.dir / "releases" / "0.1.0").exists()


@pytest.mark.parametrize("wait", ["0", "60"])
def test_two_concurrent_releases_of_one_version_make_one_release_and_no_traceback(tmp_path, wait):
    c = _corpus(tmp_path)
    procs = [subprocess.Popen([sys.executable, "-c", CLI, "release", "--corpus", str(c.dir), "--version", "0.1.0",
                               "--kind", "smoke", "--wait", wait], env=_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    done = [(p.wait(timeout=600), p.stdout.read(), p.stderr.read()) for p in procs]
    codes = sorted(code for code, _, _ in done)
    assert all("Traceback" not in err for _, _, err in done), done
    assert codes in ([0, 0], [0, ExitCode.BUSY]), done
    if codes == [0, 0]:  # the loser waited for the winner, then found the same content released: a no-op
        assert sum("already released with the same content" in err for _, _, err in done) == 1
    else:
        loser = next(err for code, _, err in done if code == ExitCode.BUSY)
        assert "is still in use by pid" in loser and len(loser.strip().splitlines()) <= 2
    assert [r["version"] for r in list_releases(c)] == ["0.1.0"] and not _leftovers(c)
    verify_release(c.dir / "releases" / "0.1.0")


# -- bad places, bad manifests ---------------------------------------------------------------------


def test_out_under_a_file_or_in_proc_is_one_line_and_exit_2(tmp_path):
    c = _corpus(tmp_path)
    (tmp_path / "afile").write_text("x")
    with pytest.raises(UsageError, match="is a file, not a directory"):  # (the CLI's --out says so before it)
        cut_release(c, "0.1.0", kind="smoke", out=tmp_path / "afile", progress=False)
    for out, says in ((tmp_path / "afile" / "0.1.0", "is a file, not a directory"),
                      (Path("/proc/trb-release/0.1.0"), "cannot make a directory there")):
        p = _release_cli(c, "--version", "0.1.0", "--out", str(out))
        assert p.returncode == ExitCode.USAGE, p.stderr
        assert says in p.stderr and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert (tmp_path / "afile").read_text() == "x" and not list_releases(c)


def test_an_invalid_manifest_under_releases_is_one_line_where_releases_are_listed(tmp_path, cli):
    c = _corpus(tmp_path)
    cut_release(c, "0.1.0", kind="smoke", progress=False)
    bad = c.dir / "releases" / "0.2.0"
    bad.mkdir()
    for text, says in (('{"release_sha": "x"}', "not a valid release manifest"), ("{oops", "invalid JSON"),
                       ("[]", "not a JSON object")):
        (bad / "manifest.json").write_text(text)
        with pytest.raises(InvalidReleases) as e:
            list_releases(c)
        (line,) = e.value.lines()
        assert line.startswith(f"{bad}/manifest.json: ") and says in line
        code, out, err = cli("releases", "--corpus", c.dir)
        assert code == ExitCode.BAD_RELEASE and "0.1.0" in out and "0.2.0" not in out
        assert err.strip().splitlines() == [line]
    with pytest.raises(UsageError, match="not a release manifest"):  # its version cannot be cut over it
        cut_release(c, "0.2.0", kind="smoke", progress=False)
    assert cut_release(c, "0.3.0", kind="smoke", progress=False).created  # other versions are unaffected


def test_a_parent_that_differs_from_its_manifest_is_refused(tmp_path):
    c = _corpus(tmp_path)
    p = cut_release(c, "0.1.0", kind="smoke", progress=False).directory
    m = json.loads((p / "manifest.json").read_text())
    m["salt"] = "another"
    (p / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(UsageError, match="--parent .* differs from its manifest"):
        cut_release(c, "0.2.0", kind="smoke", parent=p, progress=False)
    (p / "manifest.json").write_text("{")
    with pytest.raises(UsageError, match="is not a release directory"):
        cut_release(c, "0.2.0", kind="smoke", parent=p, progress=False)


# -- a full disk -----------------------------------------------------------------------------------


@pytest.fixture
def small_tmpfs(tmp_path):
    """A tmpfs of 96 KiB at tmp_path/tmpfs, unmounted afterwards (skipped where this machine cannot mount one)."""
    mnt = tmp_path / "tmpfs"
    mnt.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(mnt)], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): {p.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
        if os.path.ismount(mnt):
            subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_full_disk_during_a_release_is_one_line_and_leaves_nothing(tmp_path, small_tmpfs):
    from corpus.simulate import write_simulation

    write_simulation(tmp_path / "sim.jsonl", n_sessions=40, seed=1, progress=False)
    c = Corpus(init_corpus(tmp_path / "corpus"))
    ingest(c, [tmp_path / "sim.jsonl"], progress=False)
    p = _release_cli(c, "--version", "0.1.0", "--out", str(small_tmpfs / "0.1.0"))
    assert p.returncode == ExitCode.INVALID, p.stderr
    assert "Traceback" not in p.stderr and "is full" in p.stderr and "was not written" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert list(small_tmpfs.iterdir()) == [] and not _leftovers(c)
    assert "0.1.0" not in ledger.released_versions(c.dir)  # a failed release claims no version
    assert cut_release(c, "0.1.0", kind="smoke", progress=False).created
