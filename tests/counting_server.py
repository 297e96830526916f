"""A loopback HTTP server that answers every GET with a secret and counts what reached it: what a sandboxed
query must never reach (a URL in `trb query` or in `trb-annotate push --where`)."""

from __future__ import annotations

import http.server
import threading


class CountingServer:
    """``with CountingServer(secret) as srv:`` ``srv.url`` answers ``a\\n<secret>\\n``; ``srv.hits`` lists the paths
    requested."""

    def __init__(self, secret: str):
        self.hits: list[str] = []
        hits, body = self.hits, f"a\n{secret}\n".encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                hits.append(self.path)
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self._srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._srv.server_address[1]}"

    def __enter__(self) -> CountingServer:
        threading.Thread(target=self._srv.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._srv.shutdown()
        self._srv.server_close()
