"""The one advisory lock (toolkit.locking): the holder as data, the store's own error and wording."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests_paths import ROOT
from toolkit.locking import FileLock, LockHolder, LockWait

HOLDER = """
import sys, time
from toolkit.locking import FileLock
with FileLock(sys.argv[1], exclusive=True, what="thing", busy=RuntimeError, purpose="test holder"):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


class Busy(Exception):
    pass


def _hold(path, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), str(seconds)], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_waiter_is_told_the_holder_as_data_then_gets_the_lock(tmp_path):
    path = tmp_path / "x.lock"
    proc = _hold(path, 0.6)
    told: list[LockWait] = []
    try:
        with FileLock(path, exclusive=True, what="store X", busy=Busy, wait_seconds=20, on_wait=told.append) as lock:
            assert lock.holder().pid == os.getpid() and lock.holder().purpose == ""
    finally:
        proc.communicate()
    assert len(told) == 1
    notice = told[0]
    assert notice.holder.pid == proc.pid and notice.holder.purpose == "test holder" and not notice.holder.reading
    assert str(notice) == f"store X is in use by {notice.holder.describe()}; waiting up to 20 s"
    assert f"pid {proc.pid} on " in str(notice) and "(test holder, since " in str(notice)
    assert LockHolder.from_file(path).reading  # released: the record is gone


def test_the_wait_is_bounded_and_raises_the_stores_own_error_in_its_words(tmp_path):
    path = tmp_path / "x.lock"
    proc = _hold(path, 20)
    try:
        with pytest.raises(Busy) as e:
            with FileLock(path, exclusive=False, what="store X", busy=Busy, wait_seconds=0.2,
                          describe=lambda h: f"#{h.pid}", on_wait=lambda _n: None):
                pass
    finally:
        proc.kill()
        proc.communicate()
    assert str(e.value) == (f"store X is still in use by #{proc.pid} after 0.2 s; "
                            "nothing was changed (retry later, or raise TRB_LOCK_WAIT)")


def test_readers_share_and_a_writer_waits_for_them(tmp_path):
    path = tmp_path / "x.lock"
    told: list[LockWait] = []
    with FileLock(path, exclusive=False, what="s", busy=Busy, wait_seconds=0):
        with FileLock(path, exclusive=False, what="s", busy=Busy, wait_seconds=0):
            pass
        with pytest.raises(Busy, match="in use by another process \\(reading\\)"):
            with FileLock(path, exclusive=True, what="s", busy=Busy, wait_seconds=0.1, on_wait=told.append):
                pass
    assert told and told[0].holder.reading
    with FileLock(path, exclusive=True, what="s", busy=Busy, wait_seconds=0):
        pass


def test_the_last_holder_removes_the_lock_file_and_a_waiter_takes_the_path_not_the_removed_file(tmp_path):
    path = tmp_path / "x.lock"
    with FileLock(path, exclusive=True, what="s", busy=Busy, wait_seconds=0):
        assert path.exists()
    assert not path.exists()  # nothing left beside the store
    with FileLock(path, exclusive=False, what="s", busy=Busy, wait_seconds=0):
        with FileLock(path, exclusive=False, what="s", busy=Busy, wait_seconds=0):
            pass
        assert path.exists()  # another reader still holds it
    assert not path.exists()

    # a waiter opened the file before its holder removed it: it must end up holding the path's file, so a
    # third process is kept out (were it holding the removed file, the third would lock a new one and get in)
    proc = _hold(path, 0.6)
    try:
        with FileLock(path, exclusive=True, what="s", busy=Busy, wait_seconds=20, on_wait=lambda _n: None):
            assert path.exists() and LockHolder.from_file(path).pid == os.getpid()
            third = subprocess.run([sys.executable, "-c", (
                "import sys\nfrom toolkit.locking import FileLock\n"
                "try:\n    FileLock(sys.argv[1], exclusive=True, what='s', busy=RuntimeError, wait_seconds=0,"
                " on_wait=lambda n: None).acquire()\nexcept RuntimeError:\n    sys.exit(3)\n"), str(path)],
                cwd=ROOT, capture_output=True, text=True)
            assert third.returncode == 3, third.stderr
    finally:
        proc.communicate()
    assert not path.exists()


SLOW_TO_NAME = """
import fcntl, json, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)  # holds the lock, has not yet written who it is (the window FileLock.acquire has)
print("held", flush=True)
time.sleep(0.3)
os.pwrite(fd, json.dumps({"pid": os.getpid(), "host": "h", "purpose": "slow writer", "since": 0}).encode(), 0)
time.sleep(20)
"""


def test_a_waiter_whose_wait_runs_out_while_a_writer_is_naming_itself_names_the_writer_not_a_reader(tmp_path):
    # the CI failure of two concurrent releases: the loser (--wait 0) read the lock file in the instant between
    # the winner's flock and its record, and blamed "another process (reading)"
    path = tmp_path / "x.lock"
    proc = subprocess.Popen([sys.executable, "-c", SLOW_TO_NAME, str(path)], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(Busy) as e:
            with FileLock(path, exclusive=True, what="s", busy=Busy, wait_seconds=0, on_wait=lambda _n: None):
                pass
    finally:
        proc.kill()
        proc.communicate()
    assert f"still in use by pid {proc.pid} on h (slow writer" in str(e.value)
