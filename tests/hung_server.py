"""A server that accepts connections and never answers: a real listening socket on loopback.

What a hung Label Studio or model server looks like to a client: the TCP connection is made (so
no "connection refused"), the request is sent, and no byte ever comes back.
"""

from __future__ import annotations

import socket
import threading


class HungServer:
    """``with HungServer() as hung:`` ``hung.url`` is a loopback ``http://127.0.0.1:PORT`` that accepts and never
    replies."""

    def __init__(self):
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self._sock.settimeout(0.2)
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    @property
    def connections(self) -> int:
        """Connections accepted so far (each attempt of a client opens one, or reuses a kept-alive one)."""
        return len(self._held)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            self._held.append(conn)  # held open, never read from or written to

    def __enter__(self) -> HungServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        for c in self._held:
            c.close()
        self._sock.close()
