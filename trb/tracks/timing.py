"""Time spent inside adapter calls, so engine overhead can be told apart from the model's own time."""

from __future__ import annotations

import time
from contextlib import contextmanager


class AdapterTimer:
    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0

    @contextmanager
    def timed(self, n: int = 1):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.seconds += time.perf_counter() - t0
            self.calls += n
