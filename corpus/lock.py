"""Who may use a corpus now: ``corpus.lock`` in the corpus directory, held through :mod:`toolkit.locking`.

Writers take the lock exclusively, readers shared. A process that finds the corpus
held says who holds it (pid, command, since when) on stderr and waits, up to a
bound, instead of crashing into DuckDB's own file lock; then it raises CorpusBusy.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from corpus.errors import CorpusBusy
from toolkit.locking import DEFAULT_WAIT_SECONDS, FileLock, LockHolder, LockWait

__all__ = ["DEFAULT_WAIT_SECONDS", "CorpusLock", "LockHolder", "LockWait"]


def _command() -> str:
    """This process's command line, short: ``trb-corpus ingest FILE``."""
    return " ".join(Path(a).name if i == 0 else a for i, a in enumerate(sys.argv[:3]))


class CorpusLock(FileLock):
    """``with CorpusLock(dir, exclusive=True): ...`` holds the corpus for the block.

    ``on_wait`` is told (once, a :class:`LockWait`: the holder as data, ``str()`` the
    message) when this process has to wait; by default the message goes to stderr.

    Raises:
        CorpusBusy: another process held the corpus past ``wait_seconds``.
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        *,
        exclusive: bool,
        wait_seconds: float | None = None,
        purpose: str = "",
        on_wait: Callable[[LockWait], None] | None = None,
    ):
        directory = Path(directory)
        super().__init__(directory / "corpus.lock", exclusive=exclusive, what=f"corpus {directory}", busy=CorpusBusy,
                         wait_seconds=wait_seconds, purpose=purpose or _command(),
                         **({} if on_wait is None else {"on_wait": on_wait}))
