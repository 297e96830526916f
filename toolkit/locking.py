"""One advisory file lock for every store: exclusive writers, shared readers, a bounded, announced wait.

A store (the corpus, the results store) holds a lock file with ``flock``. An
exclusive holder writes who it is (pid, host, purpose, since) into the file (the
last holder to release it removes it, so no empty lock file stays beside a store); a
process that finds the store held tells ``on_wait`` once who holds it (a
:class:`LockWait`, with the holder as data and the one-line message), waits up to
``wait_seconds``, and then raises the store's own "busy" error naming the holder,
instead of crashing into DuckDB's own file lock.

Each store says what it is called in messages (``what``), what to raise
(``busy``) and how to phrase the holder (``describe``); the wording around them
is shared::

    <what> is in use by <holder>; waiting up to <w> s
    <what> is still in use by <holder> after <w> s; nothing was changed (retry later, or raise TRB_LOCK_WAIT)
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from toolkit.errors import ExitCode, ToolkitError

__all__ = ["DEFAULT_WAIT_SECONDS", "WAIT_ENV", "FileLock", "LockHolder", "LockWait", "WaitSecondsError",
           "check_wait_seconds", "default_wait_seconds", "wait_seconds_callback"]

#: How long a process waits for a store held by another one when neither ``--wait`` nor ``TRB_LOCK_WAIT`` says.
DEFAULT_WAIT_SECONDS = 120.0
#: The environment variable that sets the wait when ``--wait`` is not given.
WAIT_ENV = "TRB_LOCK_WAIT"


class WaitSecondsError(ToolkitError):
    """A wait that is not a number of seconds ≥ 0 (``--wait``, ``TRB_LOCK_WAIT``): a usage error."""

    exit_code = ExitCode.USAGE


def check_wait_seconds(value, source: str = "--wait") -> float:
    """``value`` as a wait in seconds: a number ≥ 0; ``inf`` waits without a limit; 0 does not wait.

    Raises:
        WaitSecondsError: not a number, negative, or NaN; the message names ``source`` (the option or variable).
    """
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = math.nan
    if math.isnan(seconds) or seconds < 0:
        raise WaitSecondsError(f"{source}={value!r}: expected seconds to wait for a store held by another process, "
                               "a number ≥ 0 (0: do not wait; inf: wait without a limit)")
    return seconds


def default_wait_seconds() -> float:
    """The wait when none is given: ``TRB_LOCK_WAIT`` seconds if set, else :data:`DEFAULT_WAIT_SECONDS`.

    Raises:
        WaitSecondsError: ``TRB_LOCK_WAIT`` is set to something that is not a wait (:func:`check_wait_seconds`).
    """
    value = os.environ.get(WAIT_ENV)
    return DEFAULT_WAIT_SECONDS if value is None or not value.strip() else check_wait_seconds(value, WAIT_ENV)


def wait_seconds_callback(ctx, param, value):
    """The click callback of every ``--wait`` option (``trb-corpus``, ``trb-annotate``): a bad value is a usage
    error (exit 2) naming the option; None (not given) is kept, for :func:`default_wait_seconds`."""
    import click

    if value is None:
        return None
    try:
        return check_wait_seconds(value, "--wait")
    except WaitSecondsError as e:
        raise click.BadParameter("expected a number of seconds ≥ 0 (0: do not wait; inf: wait without a limit), "
                                 f"got {value!r}", ctx=ctx, param=param) from e


def _seconds(w: float) -> str:
    return "without a limit" if math.isinf(w) else f"up to {w:g} s"

_POLL_SECONDS = 0.05
#: How long a waiter whose wait ran out keeps trying while the lock file names no holder: an exclusive holder is
#: between taking the flock and writing itself, or between clearing itself and letting go (shared readers,
#: who record nothing, are then named "another process (reading)" after this grace).
_UNNAMED_HOLDER_GRACE = 1.0


@dataclass(frozen=True)
class LockHolder:
    """Who holds a lock, as its last exclusive holder recorded it; no ``pid``: shared readers (they record nothing)."""

    pid: int | None = None
    host: str | None = None
    purpose: str = ""
    since: float | None = None

    @property
    def reading(self) -> bool:
        return self.pid is None

    def describe(self) -> str:
        """``pid 12 on host (purpose, since 10:41:07)``, or ``another process (reading)``."""
        if self.reading:
            return "another process (reading)"
        since = time.strftime("%H:%M:%S", time.localtime(self.since or 0))
        return f"pid {self.pid} on {self.host} ({self.purpose or 'unknown command'}, since {since})"

    @classmethod
    def from_file(cls, path: Path) -> LockHolder:
        try:
            # not strict_json: the lock's own note (pid, host), written by this module; only shown in a message
            info = json.loads(Path(path).read_text(encoding="utf-8") or "{}")
        except (OSError, ValueError):
            info = {}
        if not isinstance(info, dict) or not info.get("pid"):
            return cls()
        return cls(pid=info["pid"], host=info.get("host"), purpose=info.get("purpose") or "", since=info.get("since"))


@dataclass(frozen=True)
class LockWait:
    """What ``on_wait`` is told when a lock is held by another process: ``str()`` of it is the message."""

    holder: LockHolder
    message: str
    wait_seconds: float

    def __str__(self) -> str:
        return self.message


def _stderr(notice: LockWait) -> None:
    print(notice, file=sys.stderr, flush=True)


class FileLock:
    """``with FileLock(path, exclusive=..., what=..., busy=...): ...`` holds ``path`` (flock) for the block.

    Args:
        path: the lock file: created when taken, removed by the last holder to release it (so no empty
            lock file is left beside a store); a waiter whose file was removed re-opens the path.
        exclusive: a writer (exclusive, records itself in the file) or a reader (shared).
        what: the store as messages name it, e.g. ``"corpus /data/c"``.
        busy: makes the exception raised when the wait runs out, from its message.
        describe: phrases the holder in messages (default :meth:`LockHolder.describe`).
        on_wait: told once, when this process has to wait (default: the message on stderr).

    Raises (from ``acquire``/``__enter__``):
        whatever ``busy`` returns: the lock was still held after ``wait_seconds``.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        exclusive: bool,
        what: str,
        busy: Callable[[str], Exception],
        wait_seconds: float | None = None,
        purpose: str = "",
        describe: Callable[[LockHolder], str] = LockHolder.describe,
        on_wait: Callable[[LockWait], None] = _stderr,
    ):
        self.path = Path(path)
        self.exclusive = exclusive
        self.what = what
        self.busy = busy
        self.wait_seconds = default_wait_seconds() if wait_seconds is None else check_wait_seconds(wait_seconds,
                                                                                                   "wait_seconds")
        self.purpose = purpose
        self.describe = describe
        self.on_wait = on_wait
        self._fd: int | None = None

    def holder(self) -> LockHolder:
        """Who holds the lock now, as recorded by the last exclusive holder."""
        return LockHolder.from_file(self.path)

    def acquire(self) -> None:
        deadline = time.monotonic() + self.wait_seconds
        announced = [False]
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                self._wait_for(fd, deadline, announced)
                if not self._current(fd):  # the last holder removed this file while we waited: take the new one
                    os.close(fd)
                    continue
                if self.exclusive:
                    info = {"pid": os.getpid(), "host": socket.gethostname(), "purpose": self.purpose,
                            "since": time.time()}
                    os.ftruncate(fd, 0)
                    try:
                        os.pwrite(fd, json.dumps(info).encode(), 0)
                    except OSError:  # a full disk: the flock is what locks; who holds it is a courtesy
                        pass
            except BaseException:
                os.close(fd)  # closing drops the flock too, if it was taken
                raise
            self._fd = fd
            return

    def _current(self, fd: int) -> bool:
        """Whether ``fd`` is still the file at ``path`` (not one a releasing holder has unlinked)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return False
        mine = os.fstat(fd)
        return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)

    def _wait_for(self, fd: int, deadline: float, announced: list[bool]) -> None:
        mode = fcntl.LOCK_EX if self.exclusive else fcntl.LOCK_SH
        while True:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = self.holder()
                    if holder.reading and time.monotonic() < deadline + _UNNAMED_HOLDER_GRACE:
                        time.sleep(_POLL_SECONDS)
                        continue
                    raise self.busy(
                        f"{self.what} is still in use by {self.describe(holder)} after {self.wait_seconds:g} s; "
                        "nothing was changed (retry later, or raise TRB_LOCK_WAIT)"
                    ) from None
                if not announced[0]:
                    holder = self.holder()
                    message = f"{self.what} is in use by {self.describe(holder)}; waiting {_seconds(self.wait_seconds)}"
                    self.on_wait(LockWait(holder, message, self.wait_seconds))
                    announced[0] = True
                time.sleep(_POLL_SECONDS)

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            if self.exclusive:
                os.ftruncate(fd, 0)
            try:  # the last holder out removes the file (a waiter that opened it re-opens the path: _current)
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pass  # other readers still hold it: the last of them removes it
            else:
                if self._current(fd):
                    os.unlink(self.path)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
