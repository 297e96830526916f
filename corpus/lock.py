"""Who may use a corpus now: a file lock with a bounded, announced wait.

Writers take the lock exclusively, readers shared. A process that finds the corpus
held says who holds it (pid, command, since when) on stderr and waits, up to a
bound, instead of crashing into DuckDB's own file lock.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path

from corpus.errors import CorpusBusy

__all__ = ["DEFAULT_WAIT_SECONDS", "CorpusLock"]

#: How long a process waits for a corpus held by another one.
DEFAULT_WAIT_SECONDS = float(os.environ.get("TRB_LOCK_WAIT", "120"))


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class CorpusLock:
    """``with CorpusLock(dir, exclusive=True): ...`` holds the corpus for the block."""

    def __init__(
        self,
        directory: Path,
        *,
        exclusive: bool,
        wait_seconds: float | None = None,
        purpose: str = "",
        on_wait: Callable[[str], None] = _stderr,
    ):
        self.path = Path(directory) / "corpus.lock"
        self.exclusive = exclusive
        self.wait_seconds = DEFAULT_WAIT_SECONDS if wait_seconds is None else wait_seconds
        self.purpose = purpose or " ".join(Path(a).name if i == 0 else a for i, a in enumerate(sys.argv[:3]))
        self.on_wait = on_wait
        self._fd: int | None = None

    def holder(self) -> str:
        """Who holds the lock, as recorded by the last exclusive holder."""
        try:
            info = json.loads(self.path.read_text(encoding="utf-8") or "{}")
        except (OSError, ValueError):
            info = {}
        if not info:
            return "another process (reading)"
        since = time.strftime("%H:%M:%S", time.localtime(info.get("since", 0)))
        return f"pid {info.get('pid')} on {info.get('host')} ({info.get('purpose') or 'unknown command'}, since {since})"

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        mode = fcntl.LOCK_EX if self.exclusive else fcntl.LOCK_SH
        deadline = time.monotonic() + self.wait_seconds
        announced = False
        while True:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not announced:
                    self.on_wait(f"corpus {self.path.parent} is in use by {self.holder()}; waiting up to {self.wait_seconds:g} s")
                    announced = True
                if time.monotonic() >= deadline:
                    holder = self.holder()
                    os.close(fd)
                    raise CorpusBusy(
                        f"corpus {self.path.parent} is still in use by {holder} after {self.wait_seconds:g} s; "
                        "nothing was changed (retry later, or raise TRB_LOCK_WAIT)"
                    ) from None
                time.sleep(0.05)
        if self.exclusive:
            info = {"pid": os.getpid(), "host": socket.gethostname(), "purpose": self.purpose, "since": time.time()}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        if self.exclusive:
            os.ftruncate(self._fd, 0)
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> "CorpusLock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
