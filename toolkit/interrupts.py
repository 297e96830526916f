"""SIGTERM handled as Ctrl-C: a command stopped by ``kill``, a scheduler or a container's stop cleans up as it
does on Ctrl-C (its ``finally`` blocks run, nothing half-written stays) and exits with the interrupt code (130),
one line, no traceback."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["sigterm_as_interrupt"]


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While open (in the main thread), SIGTERM raises :class:`KeyboardInterrupt`; the previous handler is put
    back after. Elsewhere (a thread cannot set handlers) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
